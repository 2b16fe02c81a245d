"""Snap Target: move chains' goals onto the chains as they are posed, so that a pose made by turning the bones (FK) is
taken over by the goals (IK), at the current frame or keyed over a frame range. Reads no settings: ops.py passes the
chain descriptions and reports."""
import math

import bpy
import numpy as np
from mathutils import Matrix

from . import keys
from .chain import (AXES, POSE_TOLERANCE, bone_path, channel_rotation, goal_label, hangs_below, moving_constraints,
                    rotation_path)
from .report import distance_text


# The channels that place a goal. Snap Target sets the location and rotation (the scale is kept); all are put back as
# they were when a snap is refused.
GOAL_CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def goal_owner(obj, bone_name):
    """The struct whose channels place a goal: the object, or its pose bone."""
    return obj.pose.bones[bone_name] if bone_name else obj


def goal_channels(obj, bone_name):
    """The ``(RNA path, index)`` of each of the goal's location and rotation channels, as ``obj``'s F-curves name
    them."""
    prefix = bone_path(bone_name, "") if bone_name else ""
    mode = goal_owner(obj, bone_name).rotation_mode
    return [(prefix + path, index) for path, count in (("location", 3), (rotation_path(mode), 4))
            for index in range(count)]


def snap_problem(obj, bone_name, role="target"):
    """Why Snap Target cannot move the goal and have it stay where it is put, or None."""
    label = goal_label(obj, bone_name)
    if obj.library is not None:
        return f"The {role} '{label}' is linked from a library: a move would be lost on reload (make it local)"
    owner = goal_owner(obj, bone_name)
    placing = moving_constraints(owner)
    if placing:
        return (f"The {role} '{label}' is placed by its constraints ({', '.join(placing)}), which would take it off "
                "the tip again; mute them, or snap what they follow")
    locked = [f"{what} {axis}" for what, flags in (("location", owner.lock_location), ("rotation", owner.lock_rotation))
              for axis, flag in zip("XYZ", flags) if flag]
    if owner.rotation_mode in ("QUATERNION", "AXIS_ANGLE") and owner.lock_rotations_4d and owner.lock_rotation_w:
        locked.append("rotation W")
    if locked:
        return (f"The {role} '{label}' has its {', '.join(locked)} locked; unlock them to snap it (the snap moves and "
                "turns it)")
    bone = obj.data.bones[bone_name] if bone_name else None
    if bone is not None and bone.use_connect and bone.parent is not None:
        return (f"The {role} '{label}' is connected to its parent '{bone.parent.name}', whose tail holds its head: it "
                "cannot move to the tip (disconnect it in Edit Mode: Alt+P, Disconnect Bone)")
    played = keys.played_channels(obj, goal_channels(obj, bone_name))
    driven = sorted({fcurve.data_path.rsplit(".", 1)[-1] for fcurve, where in played
                     if where == keys.DRIVEN and not fcurve.mute})
    if driven:
        return (f"The {role} '{label}' has drivers on its {' and '.join(driven)}, which would put it back; remove them "
                "to snap it")
    return None


def snapped_world(armature, tip_name, world, up_axis, roll_axis):
    """Where Snap Target puts a goal whose world matrix is ``world``: at the tip of ``tip_name``, its up axis along
    the bone; its roll axis (if the chain has one) toward the bone's Z, as Add Target makes one; with none, turned the
    least from where it is (its twist about the up axis kept). Its scale is kept: only turned and moved."""
    pose = armature.matrix_world @ armature.pose.bones[tip_name].matrix
    along = pose.col[1].to_3d().normalized()
    column, sign = AXES[up_axis]
    turned = (world.col[column].to_3d() * sign).rotation_difference(along).to_matrix() @ world.to_3x3()
    if roll_axis != "NONE" and AXES[roll_axis][0] != column:
        roll_column, roll_sign = AXES[roll_axis]
        now = turned.col[roll_column] * roll_sign
        wanted = pose.col[2].to_3d()
        now, wanted = now - along * now.dot(along), wanted - along * wanted.dot(along)  # about the up axis
        if now.length > 1e-6 * turned.col[roll_column].length:  # (else the target's roll axis is its up axis)
            turned = now.rotation_difference(wanted).to_matrix() @ turned
    matrix = turned.to_4x4()
    matrix.translation = armature.matrix_world @ armature.pose.bones[tip_name].tail
    return matrix


def hangs_from(obj, bone_name, goal):
    """Whether ``obj`` (or its bone ``bone_name``) hangs from ``goal`` (an ``(object, bone name)`` pair, another goal)
    through any parents: moving the goal moves it."""
    parent, parent_bone = goal
    if parent_bone:
        return hangs_below(parent, parent_bone, obj, bone_name) is not None
    ancestor = obj if bone_name else obj.parent
    while ancestor is not None and ancestor != parent:
        ancestor = ancestor.parent
    return ancestor is not None


def place_goal(obj, bone_name, world):
    if bone_name:
        obj.pose.bones[bone_name].matrix = obj.matrix_world.inverted_safe() @ world
    elif obj.parent is not None and obj.parent_type in ("VERTEX", "VERTEX_3"):
        # Setting matrix_world needs the parent's evaluated mesh, which the original object does not hold ("Evaluated
        # mesh is needed to solve parenting"): what it hangs from is read from where Blender shows it instead.
        obj.matrix_basis = (obj.matrix_world @ obj.matrix_basis.inverted_safe()).inverted_safe() @ world
    else:
        obj.matrix_world = world


def solve_turns(chain, solve):
    """How far a solve for the goals as they are would turn each chain bone from its pose now: [(bone, radians)]."""
    turns = []
    for pose_bone, rotation in zip(chain.pose_bones, solve.rotations[0]):
        difference = (Matrix(rotation).transposed() @ channel_rotation(pose_bone)).to_quaternion()
        turns.append((pose_bone.name, min(difference.angle, 2.0 * math.pi - difference.angle)))
    return turns


def turn_hint(chain, spec, solve, turns):
    """Why a solve would turn the chain from the pose its target was snapped to, and what keeps the pose."""
    name, angle = max(turns, key=lambda turn: turn[1])
    joints = solve.solution.joints[0]
    off = math.dist(chain.pose_bones[1].head, joints[1])
    reach = sum(math.dist(joints[i], joints[i + 1]) for i in range(3))
    scene = bpy.context.scene
    if off > POSE_TOLERANCE * reach:
        where = {"PARENT": "outside the plane the chain's parent carries (Bend Plane: Follow Parent)",
                 "TARGET": "outside the target's up axis' plane (Bend Plane: Target Axis)",
                 "POLE": "toward another side than the pole"}[spec.plane]
        keep = "Place Pole" + (" again" if spec.plane == "POLE" else "")
        return (f"it bends {where} or to the other side than its Bend setting, and a solve would move the middle "
                f"joint by {distance_text(scene, chain.armature, off)}: {keep} keeps this bend")
    last = name == chain.names[2]
    keep = ("; set Roll to a target axis to keep the last bone's" if last and spec.roll_axis == "NONE" else "")
    return (f"a solve would turn '{name}' by {math.degrees(angle):.3g}° about its length (each bone keeps its rest "
            f"roll about the bend plane{keep})")


def held_by_keys(obj, bone_name, frame=None):
    """Whether keys (of the action or an NLA strip) place the goal: a move is lost at the next frame change.
    ``frame`` (scene time; after Auto Keying keyed the goal there): only the action's keys that play another value
    there than the goal has count."""
    owner = goal_owner(obj, bone_name)
    if frame is not None and obj.animation_data is not None and obj.animation_data.use_tweak_mode:
        # The tweaked strip's action plays in the strip's time.
        frame = obj.animation_data.nla_tweak_strip_time_to_scene(frame, invert=True)
    return any(where != keys.DRIVEN and not keys.is_muted(fcurve) and keys.has_points(fcurve)
               and (frame is None or not where and not math.isclose(
                   fcurve.evaluate(frame), getattr(owner, fcurve.data_path.rsplit(".", 1)[-1])[fcurve.array_index],
                   rel_tol=1e-5, abs_tol=1e-6))
               for fcurve, where in keys.played_channels(obj, goal_channels(obj, bone_name)))


def pole_offset(chain, heads, length):
    """From the chain's base, where a pole keeps the current bend plane and side: the middle joint pushed out
    from the base→wrist line to about the chain's length (for a straight chain, toward the side it would bend
    to as posed now)."""
    axis = heads[2] - heads[0]
    axis_length = np.linalg.norm(axis)
    axis = axis / axis_length if axis_length > 1e-9 * length else np.array(chain.links[0]) / np.linalg.norm(chain.links[0])
    middle = heads[1] - heads[0]
    side = middle - axis * np.dot(middle, axis)
    if np.linalg.norm(side) <= 1e-6 * length:
        # Straight: no middle joint to go by, but each bone carries its rest bend-plane normal, so the first bone's
        # pose gives the plane it is in now (a Target Axis plane, an Away bend's flipped one), not the rest plane.
        first_rotation = np.array(chain.pose_bones[0].matrix.to_3x3().normalized())
        normal = first_rotation @ chain.rest_normals[0]
        side = np.cross(normal, axis)
    side /= np.linalg.norm(side)
    return axis * np.dot(middle, axis) + side * length
