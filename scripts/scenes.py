"""Scene builders shared by the tests, the benchmarks and the demo: armatures, target Empties and their
animation, built through ``bpy.data`` in the current file. Nothing here checks anything.

A three-bone arm (``build_arm``, ``random_rig``) for the add-on's own tests and benchmarks, and a simple
figure with two arms and two legs (``build_figure``, ``animate_walk``) for the demo, and for any test
that wants a character. Import it after the caller has set up Blender's user files (it imports bpy).
"""
import math

import bmesh
import bpy
import numpy as np
from mathutils import Euler, Matrix, Vector

ROTATION_MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


def random_direction(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def add_bone(data, name, head, tail, parent=None, connect=False, roll=0.0):
    """A new edit bone (the armature must be in Edit mode)."""
    bone = data.edit_bones.new(name)
    bone.head, bone.tail, bone.roll = Vector(head), Vector(tail), roll
    if parent is not None:
        bone.parent = parent
        bone.use_connect = connect and (bone.head - parent.tail).length < 1e-9
    return bone


def new_armature(name):
    """An empty armature object, linked to the scene, active and in Edit mode."""
    obj = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    return obj


def build_arm(lengths=(1.0, 0.8, 0.4), directions=None, rolls=(0.0, 0.0, 0.0), modes=("QUATERNION",) * 3,
              root=True, connected=True, name="Arm", base=(0.0, 0.0, 0.0)):
    """An armature with an optional root bone and the chain b1 > b2 > b3; returns the object (in Object mode)."""
    if directions is None:  # a planar rest bend in XZ, like an arm bent at the elbow
        directions = [(0.0, 0.0, 1.0), (0.6, 0.0, 0.8), (1.0, 0.0, 0.0)]
    obj = new_armature(name)
    parent = None
    if root:
        parent = add_bone(obj.data, "root", Vector(base) - Vector((0.0, 0.0, 0.5)), base)
    head = Vector(base)
    gap = Vector((0.0, 0.0, 0.0)) if connected else Vector((0.05, -0.03, 0.02))
    for index, (length, direction, roll) in enumerate(zip(lengths, directions, rolls)):
        start = head + (gap if index else Vector())
        parent = add_bone(obj.data, f"b{index + 1}", start, start + Vector(direction).normalized() * length, parent,
                          connect=connected and (index > 0 or root), roll=roll)
        head = parent.tail
    bpy.ops.object.mode_set(mode="OBJECT")
    for index, mode in enumerate(modes):
        obj.pose.bones[f"b{index + 1}"].rotation_mode = mode
    return obj


def add_empty(name="Target", location=(0.0, 0.0, 0.0), rotation=(0.0, 0.0, 0.0)):
    empty = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(empty)
    empty.location = location
    empty.rotation_euler = rotation
    return empty


def random_rig(rng, name="Arm"):
    """Random lengths, rest bends, rolls, rotation modes, a posed root, a moved/rotated/scaled object."""
    lengths = rng.uniform(0.3, 1.5, 3)
    first = random_direction(rng)
    directions = [first]
    for _ in range(2):
        d = directions[-1] + rng.normal(scale=0.8, size=3)
        directions.append(d / np.linalg.norm(d))
    obj = build_arm(lengths, [tuple(d) for d in directions], tuple(rng.uniform(-math.pi, math.pi, 3)),
                    tuple(rng.choice(ROTATION_MODES, 3)), name=name, base=tuple(rng.normal(size=3)))
    obj.location = tuple(rng.normal(scale=2.0, size=3))
    obj.rotation_euler = tuple(rng.uniform(-math.pi, math.pi, 3))
    obj.scale = (float(rng.uniform(0.5, 2.0)),) * 3
    root = obj.pose.bones["root"]
    root.rotation_mode = "XYZ"
    root.rotation_euler = tuple(rng.uniform(-1.0, 1.0, 3))
    root.location = tuple(rng.normal(scale=0.2, size=3))
    return obj


def reachable_target(rng, obj, margin=0.9, up_axis="Z"):
    """A random target location and rotation the chain b1 > b2 > b3 can reach (wrist well inside its ring)."""
    bpy.context.view_layer.update()
    scale = obj.matrix_world.median_scale
    l1, l2, l3 = (obj.data.bones[f"b{i}"].length * scale for i in (1, 2, 3))
    base = np.array(obj.matrix_world @ obj.pose.bones["b1"].head)
    rotation = Euler(tuple(rng.uniform(-math.pi, math.pi, 3))).to_matrix()
    up = np.array(rotation.col["XYZ".index(up_axis[-1])]) * (-1.0 if up_axis.startswith("-") else 1.0)
    low, high = abs(l1 - l2), l1 + l2
    distance = rng.uniform(low + (1 - margin) * (high - low), low + margin * (high - low))
    wrist = base + random_direction(rng) * distance
    return tuple(wrist + l3 * up), rotation.to_euler()


# -- The figure ---------------------------------------------------------------------------------------------
# Facing -Y, Z up, left side (.L) at +X, like Blender's own metarigs; in metres. Elbows bend back and knees
# forward a little at rest, so each limb's bend side is defined. The limbs hang from pelvis and shoulder
# bones rather than straight from the hips and chest: Blender computes a bone's rest matrix from its
# direction in its parent's frame in float32, and for a bone pointing almost opposite to its parent (a
# thigh below an upward hips bone) that matrix comes out sheared by about 4e-5, more than the add-on's
# uniform-scale check allows.
FIGURE_BODY = {  # name: (head, tail, parent)
    "hips": ((0.0, 0.0, 0.95), (0.0, 0.0, 1.1), None),
    "spine": ((0.0, 0.0, 1.1), (0.0, 0.0, 1.3), "hips"),
    "chest": ((0.0, 0.0, 1.3), (0.0, 0.0, 1.5), "spine"),
    "head": ((0.0, 0.0, 1.56), (0.0, 0.0, 1.8), "chest"),
}
FIGURE_LIMBS = {  # the left side; the right side is its mirror image. name: (head, tail, parent)
    "shoulder.L": ((0.03, 0.0, 1.47), (0.19, 0.0, 1.47), "chest"),
    "upper_arm.L": ((0.19, 0.0, 1.47), (0.21, 0.05, 1.19), "shoulder.L"),
    "forearm.L": ((0.21, 0.05, 1.19), (0.22, 0.0, 0.93), "upper_arm.L"),
    "hand.L": ((0.22, 0.0, 0.93), (0.22, -0.05, 0.85), "forearm.L"),
    "pelvis.L": ((0.0, 0.0, 1.02), (0.1, 0.0, 0.93), "hips"),
    "thigh.L": ((0.1, 0.0, 0.93), (0.1, -0.04, 0.52), "pelvis.L"),
    "shin.L": ((0.1, -0.04, 0.52), (0.1, 0.0, 0.1), "thigh.L"),
    "foot.L": ((0.1, 0.0, 0.1), (0.1, -0.15, 0.02), "shin.L"),
}
FIGURE_TIPS = ("hand.L", "hand.R", "foot.L", "foot.R")


def build_figure(name="Figure"):
    """A simple human-like armature: hips > spine > chest > head, arms (chest >) shoulder > upper_arm >
    forearm > hand and legs (hips >) pelvis > thigh > shin > foot on both sides (.L at +X, .R at -X:
    names ``bpy.utils.flip_name`` mirrors). Returns the object, in Object mode."""
    obj = new_armature(name)
    bones = {}
    mirrored = {bpy.utils.flip_name(bone): ((-h[0], h[1], h[2]), (-t[0], t[1], t[2]), parent and
                                            bpy.utils.flip_name(parent))
                for bone, (h, t, parent) in FIGURE_LIMBS.items()}
    for bone, (head, tail, parent) in {**FIGURE_BODY, **FIGURE_LIMBS, **mirrored}.items():
        bones[bone] = add_bone(obj.data, bone, head, tail, bones.get(parent), connect=True)
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def walk_matrix(rest, pivot, phase, limb):
    """The world matrix of a limb's target at ``phase`` (radians) of a walk cycle, from its ``rest`` matrix
    (at the tip of the limb in the rest pose): it swings about the X axis through ``pivot`` (the hip or
    shoulder); a foot lifts while it swings forward, a hand reaches a little beyond the arm's length at the
    front of its swing (those frames are out of reach)."""
    rest, pivot = Matrix(rest), Vector(pivot)
    if limb == "foot":
        swing = -0.42 * math.sin(phase)  # forward (about -X) while the foot is off the ground
        reach = 0.96 - 0.1 * max(0.0, math.cos(phase))
    else:
        swing = -0.5 * math.sin(phase)  # forward with the other side's foot
        reach = 1.0 + 0.05 * max(0.0, math.sin(phase)) ** 8
    turn = Matrix.Rotation(swing, 4, "X")
    matrix = turn @ rest
    matrix.translation = pivot + reach * (turn.to_3x3() @ (rest.translation - pivot))
    return matrix


def animate_walk(armature, targets, frames, cycles=2):
    """Key the four targets (``{tip bone: Empty}``, the Empties at the tips of ``FIGURE_TIPS``) on every frame
    1..``frames`` for ``cycles`` walk cycles in place: feet stepping, hands swinging against the feet."""
    bpy.context.view_layer.update()
    rests = {tip: target.matrix_world.copy() for tip, target in targets.items()}
    for frame in range(1, frames + 1):
        phase = 2.0 * math.pi * cycles * (frame - 1) / frames
        for tip, target in targets.items():
            limb = tip.split(".")[0]
            first = armature.pose.bones[tip].parent.parent  # the thigh or upper arm
            side = math.pi if (tip.endswith(".R")) == (limb == "foot") else 0.0  # left foot with right hand
            target.matrix_world = walk_matrix(rests[tip], armature.matrix_world @ first.head, phase + side, limb)
            target.keyframe_insert("location", frame=frame)
            target.keyframe_insert("rotation_euler", frame=frame)


# -- Pictures: Cycles renders meshes, not bones or Empties -------------------------------------------------

def material(name, srgb, roughness=0.5):
    """A Principled material of an sRGB colour (0-1 channels)."""
    mat = bpy.data.materials.new(name)
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in srgb] + [1.0]
    mat.diffuse_color = linear  # the viewport's solid colour
    if mat.node_tree is None:  # bpy < 5.0 makes materials without nodes
        mat.use_nodes = True
    bsdf = next(node for node in mat.node_tree.nodes if node.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = linear
    bsdf.inputs["Roughness"].default_value = roughness
    return mat


def mesh_object(name, mat, rods=(), balls=(), segments=16):
    """A smooth-shaded mesh of tapered rods ``(from, to, radius_from, radius_to)`` and balls ``(center,
    radius)``, linked to the scene."""
    bm = bmesh.new()
    for start, end, radius_start, radius_end in rods:
        start, end = Vector(start), Vector(end)
        matrix = Matrix.Translation((start + end) / 2.0) @ (end - start).to_track_quat("Z", "Y").to_matrix().to_4x4()
        bmesh.ops.create_cone(bm, cap_ends=True, segments=segments, radius1=radius_start, radius2=radius_end,
                              depth=(end - start).length, matrix=matrix)
    for center, radius in balls:
        bmesh.ops.create_uvsphere(bm, u_segments=segments, v_segments=segments // 2, radius=radius,
                                  matrix=Matrix.Translation(Vector(center)))
    for face in bm.faces:
        face.smooth = True
    mesh = bpy.data.meshes.new(name)
    bm.to_mesh(mesh)
    bm.free()
    mesh.materials.append(mat)
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def set_sky(scene, srgb, strength=1.0):
    """A plain-coloured world lighting ``scene``."""
    world = bpy.data.worlds.new("Sky")
    if world.node_tree is None:  # bpy < 5.0
        world.use_nodes = True
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in srgb]
    background = next(node for node in world.node_tree.nodes if node.type == "BACKGROUND")
    background.inputs["Color"].default_value = linear + [1.0]
    background.inputs["Strength"].default_value = strength
    world.color = linear
    scene.world = world


def add_stage(scene, center=(0.0, 0.0, 0.0)):
    """A floor around ``center`` (at Z 0), a sun and a pale sky."""
    floor = mesh_object("Floor", material("Floor", (0.9, 0.89, 0.86), 0.9), rods=[((0, 0, -0.02), (0, 0, 0), 30, 30)],
                        segments=64)
    floor.location = (center[0], center[1], 0.0)
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 3.5
    sun.rotation_euler = (math.radians(40.0), 0.0, math.radians(-60.0))
    scene.collection.objects.link(sun)
    set_sky(scene, (0.91, 0.93, 0.96))


def ortho_camera(scene, points, view, size, margin=1.15):
    """An orthographic camera looking along ``view`` that frames ``points`` (world) in a picture of
    ``size`` (width, height) pixels; made the scene's camera."""
    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    camera.data.type = "ORTHO"
    scene.collection.objects.link(camera)
    scene.camera = camera
    view = Vector(view).normalized()
    camera.rotation_euler = (-view).to_track_quat("Z", "Y").to_euler()  # a camera looks along its -Z
    right_up = np.array(camera.rotation_euler.to_matrix())[:, :2]
    flat = np.array([tuple(point) for point in points]) @ right_up  # the points on the picture's plane
    low, high = flat.min(0), flat.max(0)
    camera.data.ortho_scale = margin * max(high[0] - low[0], (high[1] - low[1]) * size[0] / size[1])
    camera.location = Vector(right_up @ ((low + high) / 2.0)) - 10.0 * view
    return camera
