"""Scene builders and Blender-judged checks shared by the Blender-level tests."""
import math

import bpy
import numpy as np
from mathutils import Euler, Vector

ROTATION_MODES = ("QUATERNION", "XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX", "AXIS_ANGLE")


def random_direction(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def build_arm(lengths=(1.0, 0.8, 0.4), directions=None, rolls=(0.0, 0.0, 0.0), modes=("QUATERNION",) * 3,
              root=True, connected=True, name="Arm", base=(0.0, 0.0, 0.0)):
    """An armature with an optional root bone and the chain b1 > b2 > b3; returns the object (in Object mode)."""
    if directions is None:  # a planar rest bend in XZ, like an arm bent at the elbow
        directions = [(0.0, 0.0, 1.0), (0.6, 0.0, 0.8), (1.0, 0.0, 0.0)]
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    parent = None
    if root:
        parent = data.edit_bones.new("root")
        parent.head = Vector(base) - Vector((0.0, 0.0, 0.5))
        parent.tail = Vector(base)
    head = Vector(base)
    gap = Vector((0.0, 0.0, 0.0)) if connected else Vector((0.05, -0.03, 0.02))
    for index, (length, direction, roll) in enumerate(zip(lengths, directions, rolls)):
        bone = data.edit_bones.new(f"b{index + 1}")
        bone.head = head + (gap if index else Vector())
        bone.tail = bone.head + Vector(direction).normalized() * length
        bone.roll = roll
        if parent is not None:
            bone.parent = parent
            bone.use_connect = connected and (index > 0 or root) and (bone.head - parent.tail).length < 1e-9
        parent, head = bone, bone.tail
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


def chain_length_world(obj):
    return sum(obj.data.bones[f"b{i}"].length for i in (1, 2, 3)) * obj.matrix_world.median_scale


def tip_and_direction(obj, tip="b3"):
    """The tip bone's world tail and unit direction, as Blender evaluates them."""
    bpy.context.view_layer.update()
    pose_bone = obj.pose.bones[tip]
    head = obj.matrix_world @ pose_bone.head
    tail = obj.matrix_world @ pose_bone.tail
    return np.array(tail), np.array((tail - head).normalized())


def axis_of(obj, axis="Z"):
    column = "XYZ".index(axis[-1])
    v = np.array(obj.matrix_world.to_3x3().col[column])
    v /= np.linalg.norm(v)
    return -v if axis.startswith("-") else v


def angle_between(a, b):
    return math.atan2(np.linalg.norm(np.cross(a, b)), float(np.dot(a, b)))


def pose_snapshot(obj):
    """Every pose bone's rotation channels and location, to show nothing changed."""
    return {pb.name: (tuple(pb.rotation_quaternion), tuple(pb.rotation_euler), tuple(pb.rotation_axis_angle),
                      tuple(pb.location), tuple(pb.scale)) for pb in obj.pose.bones}


def reachable_target(rng, obj, margin=0.9, up_axis="Z"):
    """A random target location and rotation the chain can reach (wrist well inside its ring)."""
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



def readout(obj, chain=None):
    """The read-out of a chain (by name; default: the active chain) from its last solve in this session."""
    from blender_ik_addon import runtime
    settings = obj.blender_ik
    if chain is None:
        chain = settings.active_chain.name or settings.active_chain.tip_bone
    return runtime.readout(obj.name, chain)
