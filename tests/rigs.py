"""Blender-judged checks shared by the Blender-level tests (what Blender evaluates: pose bones' heads and
tails, world matrices), and the scene builders from scripts/scenes.py, re-exported for the tests."""
import math

import bpy
import numpy as np

from scenes import (ROTATION_MODES, add_empty, build_arm, random_direction, random_rig,  # noqa: F401
                    reachable_target)


def arm_with_chain(bpy):
    """The arm (scenes.build_arm), active, with its chain 'arm' on b3 reaching for an Empty, as Blender has evaluated
    it. Returns (object, chain settings)."""
    obj = build_arm()
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", add_empty(location=(0.9, 0.3, 1.1))
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, chain


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


def readout(obj, chain=None):
    """The read-out of a chain (by name; default: the active chain) from its last solve in this session."""
    from blender_ik_addon import runtime
    settings = obj.blender_ik
    if chain is None:
        chain = settings.active_chain.name or settings.active_chain.tip_bone
    return runtime.readout(obj, chain)


def link_from_library(bpy, path, name):
    """Save this file as the library ``path``, start an empty file, and link the object ``name`` from the library
    into its scene; returns the linked object."""
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(path), link=True) as (_, linked):
        linked.objects = [name]
    obj = linked.objects[0]
    bpy.context.scene.collection.objects.link(obj)
    return obj
