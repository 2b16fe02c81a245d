"""Snap Target: move chains' goals onto the chains as they are posed, so that a pose made by turning the bones (FK) is
taken over by the goals (IK), at the current frame or keyed over a frame range. Reads no settings: ops.py passes the
chain descriptions and reports."""
import math

import bpy
import numpy as np
from mathutils import Matrix, Vector

from . import keys, rotations
from .chain import (ANGLE_TOLERANCE, AXES, POSE_TOLERANCE, ChainError, bone_path, channel_rotation, evaluate_now,
                    goal_label, goal_world, hangs_below, moving_constraints, rotation_path, shows_pose, solve_current)
from .report import compact_frames, distance_text, frame_span


# The channels that place a goal. Snap Target sets the location and rotation (the scale is kept); all are put back as
# they were when a snap is refused.
GOAL_CHANNELS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def goal_owner(obj, bone_name):
    """The struct whose channels place a goal: the object, or its pose bone."""
    return obj.pose.bones[bone_name] if bone_name else obj


def saved_channels(owner):
    """The values of ``owner``'s channels that place it (GOAL_CHANNELS), for :func:`put_back`."""
    return {path: getattr(owner, path)[:] for path in GOAL_CHANNELS}


def put_back(owner, saved):
    """Set ``owner``'s channels back to :func:`saved_channels`' values."""
    for path, value in saved.items():
        setattr(owner, path, value)


def placing_depths(goals):
    """For each goal (``(object, bone name)``), how many of the others it hangs from: goals are placed by increasing
    depth, each level once Blender has evaluated the one before (placed earlier, a goal below another would be carried
    off its place when that one moves)."""
    return [sum(hangs_from(*goal, other) for other in goals if other != goal) for goal in goals]


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
    turned = role != "pole"  # a pole is only moved
    locked = [f"{what} {axis}" for what, flags in (("location", owner.lock_location), ("rotation", owner.lock_rotation))
              for axis, flag in zip("XYZ", flags) if flag and (turned or what == "location")]
    if (turned and owner.rotation_mode in ("QUATERNION", "AXIS_ANGLE") and owner.lock_rotations_4d
            and owner.lock_rotation_w):
        locked.append("rotation W")
    if locked:
        them = "them" if len(locked) > 1 else "it"
        return (f"The {role} '{label}' has its {', '.join(locked)} locked; unlock {them} to snap it (the snap "
                f"{'moves and turns' if turned else 'moves'} it)")
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
    owner = goal_owner(obj, bone_name)
    scale = owner.scale.copy()
    if bone_name:
        obj.pose.bones[bone_name].matrix = obj.matrix_world.inverted_safe() @ world
    elif obj.parent is not None and obj.parent_type in ("VERTEX", "VERTEX_3"):
        # Setting matrix_world needs the parent's evaluated mesh, which the original object does not hold ("Evaluated
        # mesh is needed to solve parenting"): what it hangs from is read from where Blender shows it instead.
        obj.matrix_basis = (obj.matrix_world @ obj.matrix_basis.inverted_safe()).inverted_safe() @ world
    else:
        obj.matrix_world = world
    # Blender stores a matrix that mirrors with every scale negative (-1, 1, 1 becomes -1, -1, -1 and half a turn):
    # the goal's own scale is put back, its rotation turned back to go with it (the same matrix).
    flips = [-1.0 if (new < 0.0) != (old < 0.0) else 1.0 for new, old in zip(owner.scale, scale)]
    if flips != [1.0, 1.0, 1.0]:
        path = rotation_path(owner.rotation_mode)
        rotation = np.array(channel_rotation(owner) @ Matrix.Diagonal(flips))
        setattr(owner, path, tuple(rotations.matrices_to_channels(rotation[None], owner.rotation_mode,
                                                                  np.array(getattr(owner, path)))[0]))
        owner.scale = scale


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


def pole_point(chain):
    """Where Place Pole puts a pole, armature space: where it keeps the current bend plane and side, the middle joint
    pushed out from the base→wrist line to about the chain's length (for a straight chain, toward the side it would
    bend to as posed now)."""
    heads = np.array([tuple(pose_bone.head) for pose_bone in chain.pose_bones])
    length = chain.floats.size
    axis = heads[2] - heads[0]
    axis_length = np.linalg.norm(axis)
    if axis_length > 1e-9 * length:
        axis = axis / axis_length
    else:
        axis = np.array(chain.links[0]) / np.linalg.norm(chain.links[0])
    middle = heads[1] - heads[0]
    side = middle - axis * np.dot(middle, axis)
    if np.linalg.norm(side) <= 1e-6 * length:
        # Straight: no middle joint to go by, but each bone carries its rest bend-plane normal, so the first bone's
        # pose gives the plane it is in now (a Target Axis plane, an Away bend's flipped one), not the rest plane.
        first_rotation = np.array(chain.pose_bones[0].matrix.to_3x3().normalized())
        normal = first_rotation @ chain.rest_normals[0]
        side = np.cross(normal, axis)
    side /= np.linalg.norm(side)
    return heads[0] + axis * np.dot(middle, axis) + side * length


# What a range snap keys on an object goal goes in this group, as Blender's own keying of an object's transforms.
_OBJECT_GROUP = "Object Transforms"


class _Goal:
    """One goal a range snap keys: a chain's target (moved and turned) or its pole (moved)."""

    def __init__(self, role, obj, bone_name, spec, chain):
        self.role, self.obj, self.bone_name, self.spec, self.chain = role, obj, bone_name, spec, chain
        self.owner = goal_owner(obj, bone_name)
        self.mode = self.owner.rotation_mode
        paths = ["location"] + ([rotation_path(self.mode)] if role == "target" else [])
        prefix = bone_path(bone_name, "") if bone_name else ""
        self.paths = [prefix + path for path in paths]
        group = bone_name or _OBJECT_GROUP
        self.channels = [(prefix + path, index, group) for path in paths
                         for index in range(3 if path == "location" or self.mode not in ("QUATERNION", "AXIS_ANGLE")
                                            else 4)]
        self.label = goal_label(obj, bone_name)
        self.placed = []  # the world matrix placed on each frame
        self.values = []  # and the channels' values it took there (see read)

    def read(self):
        """The channels' values as placed: location, and a target's rotation in its mode."""
        values = tuple(self.owner.location)
        return values + tuple(getattr(self.owner, rotation_path(self.mode))) if self.role == "target" else values


def range_problems(scene, goals):
    """Why keys of ``goals`` (``(object, [data paths])``) over a frame range would not be kept or would not play as
    written, as sentences (see keys.py); the first is the one to refuse with."""
    problems = []
    if scene.render.frame_map_old != scene.render.frame_map_new:
        problems.append(f"The scene remaps time (Time Stretching {scene.render.frame_map_old} -> "
                        f"{scene.render.frame_map_new}), so keys would play at other frames than they were made for; "
                        "set Time Stretching Old and New to the same value (Output properties)")
    for obj, paths, frame_range in goals:
        name = f"'{obj.name}'"
        problems += [f"{name}: {problem}" for problem in keys.playback_problems(obj)]
        problem = keys.action_problem(obj) or keys.span_problem(obj, paths, frame_range)
        if problem:
            problems.append(f"{name}: {problem}")
        others = keys.other_users(obj)
        if others:
            problems.append(f"The action '{obj.animation_data.action.name}' of {name} is also played by "
                            f"{', '.join(map(repr, others))}, whose animation the new keys would change too; give "
                            f"{name} its own action")
        problems += [f"{name}: the F-curve {path.rsplit('.', 1)[-1]} {reason}"
                     for path, reason in keys.mode_problems(obj, paths, frame_range)]
        problems += [f"The F-curve {path}[{index}] of {name} {reason}"
                     for path, index, reason in keys.channel_problems(obj, paths)
                     + keys.output_problems(obj, paths, False, frame_range)]
    return problems


def _pole_world(armature, chain, world):
    """Where Place Pole puts a pole whose world matrix is ``world`` for the chain as posed now: moved, not turned."""
    moved = world.copy()
    moved.translation = armature.matrix_world @ Vector(pole_point(chain).tolist())
    return moved


def _turned_like(reference, world):
    """``world``'s position and scale, with the rotation of ``reference`` (the goal as placed on the frame before): a
    target's twist about its up axis then follows the bone from frame to frame instead of flipping where the bone
    points against the goal's unkeyed orientation."""
    rotation = reference.to_quaternion().to_matrix()  # (one that mirrors: with to_scale's signs, all negative)
    scaled = rotation @ Matrix.Diagonal(world.to_3x3().to_scale())
    matrix = scaled.to_4x4()
    matrix.translation = world.translation
    return matrix


def off_the_tip(scene, armature, chain, distance, angle, tip="the tip"):
    """Where Blender shows a snapped target against ``tip``, from ``distance`` and its up axis' ``angle`` to the last
    bone: 'on the tip but its up axis 12° off the bone' when only the angle is out (a distance of a few nm would read
    as the cause), else the distance, and the angle where it is out too."""
    turned = f"its up axis {math.degrees(angle):.3g}° off the bone"
    if distance <= POSE_TOLERANCE * chain.floats.size:
        return f"on {tip} but {turned}"
    away = f"{distance_text(scene, armature, distance)} from {tip}"
    return f"{away} ({turned})" if angle > ANGLE_TOLERANCE else away


class RangeSnap:
    """What a range snap did: the goals keyed, the frames keyed, and per chain ``(label, frames a solve turns the pose,
    worst turn in radians, its frame, why)`` for those whose pose a solve does not keep."""

    def __init__(self, goals, frames):
        self.goals, self.frames, self.turned = goals, [int(frame) for frame in frames], []

    def summary(self):
        """One line for a report: what was keyed, and whether solving keeps the pose on every frame (else where not)."""
        labels = [f"'{goal.label}'" for goal in self.goals]  # (a bone's label holds quotes: no repr)
        chains = len({goal.spec.label for goal in self.goals})
        what = (f"{'target' if len(labels) == 1 else 'goals'} {', '.join(labels)}" if len(labels) <= 3 else
                f"the goals of {chains} chains")
        count = len(self.frames)
        done = (f"Keyed {what} on frame{'s' * (count > 1)} {frame_span(self.frames[0], self.frames[-1])} ({count} "
                f"key{'s' * (count > 1)})")
        if not self.turned:
            return f"{done}: solving keeps the pose{' on every frame' * (count > 1)}"
        notes = [f"chain '{label}': a solve turns the pose on frame {at[0]} ({why})" if len(at) == 1 else
                 f"chain '{label}': a solve turns the pose on frames {compact_frames(at, 40)}, most at frame "
                 f"{worst_frame} ({why})" for label, at, _, worst_frame, why in self.turned]
        return "; ".join([done] + notes)


def snap_range(scene, armature, snaps, frames, interpolation="BEZIER", progress=None):
    """Key the goals of ``snaps`` (``[(spec, chain)]``, validated, their goals free to move: see :func:`snap_problem`)
    on each of ``frames`` (whole, increasing; the range they span is replaced) where Snap Target puts them on that
    frame: each target at its chain's tip as Blender plays the chain there, its up axis along the last bone (its twist
    the least turn from the frame before, or toward the bone's Z with a Roll axis); a Pole chain's pole where Place
    Pole puts it, moved only. Keys of those channels outside the range are kept, and the goals' other channels too.

    Then plays every keyed frame and checks that Blender shows each target on its tip and each pole where it was put;
    where not, every key and channel is put back as it was and ChainError says where. Returns a :class:`RangeSnap`."""
    goals = []
    for spec, chain in snaps:
        goals.append(_Goal("target", spec.target, spec.target_bone, spec, chain))
        if spec.plane == "POLE":
            goals.append(_Goal("pole", spec.pole, spec.pole_bone, spec, chain))
    depths = placing_depths([(goal.obj, goal.bone_name) for goal in goals])
    by_object = {}
    for goal in goals:
        by_object.setdefault(goal.obj.as_pointer(), []).append(goal)
    frame_range = (int(frames[0]), int(frames[-1]))
    problems = range_problems(scene, [(group[0].obj, [path for goal in group for path in goal.paths], frame_range)
                                      for group in by_object.values()])
    if problems:
        raise ChainError(problems[0])
    current = scene.frame_current, scene.frame_subframe
    before = [saved_channels(goal.owner) for goal in goals]
    total = 2 * len(frames)
    snapshots, written = {}, False
    try:
        for index, frame in enumerate(frames):
            scene.frame_set(int(frame))
            for depth in sorted(set(depths)):
                for goal, at in zip(goals, depths):
                    if at != depth:
                        continue
                    world = Matrix(goal_world(goal.obj, goal.bone_name))
                    if goal.role == "pole":
                        world = _pole_world(armature, goal.chain, world)
                    else:
                        if goal.placed:
                            world = _turned_like(goal.placed[-1], world)
                        world = snapped_world(armature, goal.chain.names[2], world, goal.spec.up_axis,
                                              goal.spec.roll_axis)
                    place_goal(goal.obj, goal.bone_name, world)
                    goal.placed.append(world)
                evaluate_now()
                for goal, at in zip(goals, depths):
                    if at == depth:
                        goal.values.append(goal.read())
            if progress is not None:
                progress(index + 1, total)
        for goal, saved in zip(goals, before):
            put_back(goal.owner, saved)
        keyed_frames = np.asarray(frames, dtype=np.float64)
        for group in by_object.values():
            obj = group[0].obj
            snapshots[obj.as_pointer()] = obj, keys.snapshot_channels(obj, [path for goal in group
                                                                            for path in goal.paths])
        for group in by_object.values():
            channels, columns = [], []
            for goal in group:
                table = np.array(goal.values, dtype=np.float64)
                if goal.role == "target":  # continuous over the frames: no Euler jump, one quaternion hemisphere
                    rotation = table[:, 3:]
                    table[:, 3:] = rotations.matrices_to_channels(rotations.channels_to_matrix(rotation, goal.mode),
                                                                  goal.mode, rotation[0])
                channels += goal.channels
                columns.append(table)
            written = True
            keys.write_keys(group[0].obj, channels, keyed_frames, np.concatenate(columns, axis=1), interpolation,
                            replace=frame_range)
        result = RangeSnap(goals, frames)
        _check_played(scene, armature, goals, frames, result, progress, total)
        return result
    except BaseException:
        if written:
            for obj, snapshot in snapshots.values():
                keys.restore_channels(obj, snapshot)
        for goal, saved in zip(goals, before):
            put_back(goal.owner, saved)
        raise
    finally:
        for _, snapshot in snapshots.values():
            keys.discard_snapshot(snapshot)
        scene.frame_set(current[0], subframe=current[1])


def _check_played(scene, armature, goals, frames, result, progress, total):
    """Play each keyed frame: refuse (ChainError) where Blender does not show a target on its tip or a pole where it
    was put; note in ``result.turned`` the chains whose pose a solve would not keep, and on which frames."""
    chains = {}
    for goal in goals:
        chains.setdefault(goal.spec, goal.chain)
    missed, turned = {}, {spec: [] for spec in chains}
    worst = {}
    for index, frame in enumerate(frames):
        scene.frame_set(int(frame))
        for goal in goals:
            if goal.role != "pole":
                continue
            world = Matrix(goal_world(goal.obj, goal.bone_name))
            off = (world.translation - goal.placed[index].translation).length / armature.matrix_world.median_scale
            if off > POSE_TOLERANCE * goal.chain.floats.size:
                entry = missed.setdefault(goal.label, ["pole", goal.spec, 0.0, 0.0, []])
                entry[2] = max(entry[2], off)
                entry[4].append(frame)
        for spec, chain in chains.items():
            solve = solve_current(chain, spec)
            distance, angle, shown = shows_pose(chain, solve.solution)
            if not shown:
                entry = missed.setdefault(goal_label(spec.target, spec.target_bone), ["target", spec, 0.0, 0.0, []])
                entry[2], entry[3] = max(entry[2], distance), max(entry[3], angle)
                entry[4].append(frame)
                continue
            turns = solve_turns(chain, solve)
            name, angle = max(turns, key=lambda turn: turn[1])
            if angle > ANGLE_TOLERANCE:
                turned[spec].append(frame)
                if angle > worst.get(spec, (0.0,))[0]:
                    worst[spec] = angle, frame, turn_hint(chain, spec, solve, turns)
        if progress is not None:
            progress(len(frames) + index + 1, total)
    for label, (role, spec, distance, angle, at) in missed.items():
        what = (off_the_tip(scene, armature, chains[spec], distance, angle) if role == "target" else
                f"{distance_text(scene, armature, distance)} from where it was put")
        frames_text = f"frame {at[0]}" if len(at) == 1 else f"frames {compact_frames(at, 60)}"
        raise ChainError(f"Blender plays the keyed {role} '{label}' {what} on {frames_text}: what it "
                         "hangs from turns or scales it unevenly, or other keys play over it; nothing was changed",
                         spec.label)
    result.turned = [(spec.label, turned[spec], *worst[spec]) for spec in chains if turned[spec]]
