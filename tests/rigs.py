"""Blender-judged checks shared by the Blender-level tests (what Blender evaluates: pose bones' heads and
tails, world matrices), and the scene builders from scripts/scenes.py, re-exported for the tests."""
import math

import bpy
import numpy as np

from scenes import (ROTATION_MODES, add_empty, build_arm, random_direction, random_rig,  # noqa: F401
                    reachable_target)


def arm_with_chain(bpy, name="arm", rotation=(0.0, 0.0, 0.0)):
    """The arm (scenes.build_arm), active, with its chain ``name`` on b3 reaching for an Empty (turned by ``rotation``),
    as Blender has evaluated it. Returns (object, chain settings)."""
    obj = build_arm()
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = name, "b3", add_empty(location=(0.9, 0.3, 1.1), rotation=rotation)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, chain


def key_x(obj, keys):
    """Key ``obj``'s X location at ``keys``, ``(frame, x)`` pairs."""
    for frame, x in keys:
        obj.location.x = x
        obj.keyframe_insert("location", frame=frame)


def bone_chain(edit_bones, parent, prefix, directions, head=None):
    """In Edit Mode: bones ``prefix``1, 2, ... from ``head`` (default: the tail of ``parent``, an edit bone, connected
    to it), each along its direction from the last one's tail, parented in a row below ``parent``."""
    from mathutils import Vector
    start = Vector(parent.tail if head is None else head)
    for index, direction in enumerate(directions):
        bone = edit_bones.new(f"{prefix}{index + 1}")
        bone.head, bone.tail = start, start + Vector(direction)
        bone.parent, bone.use_connect = parent, index > 0 or head is None
        parent, start = bone, bone.tail.copy()


def arm_and_chain_beside(bpy, loose=()):
    """The arm's chain 'A' (b1 > b2 > b3) and a chain 'B' (c1 > c2 > c3) on a bone P beside it, hanging from the root,
    neither below the other, each reaching for its Empty (TA, TB), as Blender has evaluated it; ``loose``: more bones,
    ``(name, head, tail)``, with no parent. Returns (object, (TA, TB))."""
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    parent = edit_bones.new("P")
    parent.head, parent.tail, parent.parent = (1.0, 1.0, 0.0), (1.0, 1.0, 0.3), edit_bones["root"]
    for name, head, tail in loose:
        bone = edit_bones.new(name)
        bone.head, bone.tail = head, tail
    bone_chain(edit_bones, parent, "c", [(0.0, 0.0, 0.5), (0.3, 0.0, 0.4), (0.3, 0.0, 0.0)])
    bpy.ops.object.mode_set(mode="OBJECT")
    targets = add_empty("TA", location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1)), \
        add_empty("TB", location=(1.5, 1.2, 1.0), rotation=(0.1, 0.3, 0.2))
    for name, tip, target in zip("AB", ("b3", "c3"), targets):
        chain = obj.blender_ik.chains.add()
        chain.name, chain.tip_bone, chain.target = name, tip, target
    bpy.context.view_layer.update()
    return obj, targets


def tips_off(bpy, obj, targets, tips=("b3", "c3")):
    """How far each tip is from its target, as Blender evaluates them (after an update)."""
    bpy.context.view_layer.update()
    return [(obj.matrix_world @ obj.pose.bones[tip].tail - target.matrix_world.translation).length
            for tip, target in zip(tips, targets)]


def drag_first_target(bpy, obj, targets, mode, step, moves=3):
    """Move the first target along X by ``step``, ``moves`` times, with every chain live (``mode`` "live") or solving
    them all after each move ("solve"); yields after each move, for the caller to judge the pose Blender shows."""
    if mode == "live":
        for chain in obj.blender_ik.chains:
            chain.live = True
    for _ in range(moves):
        targets[0].location.x += step
        if mode == "solve":
            bpy.context.view_layer.update()
            assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
        yield


def bake_first_target_moving(bpy, obj, targets, keys, frames):
    """Key the first target's X at ``keys`` ((frame, x) pairs), bake ``frames`` (first, last) and yield each baked
    frame, set, for the caller to judge the pose Blender plays."""
    for frame, x in keys:
        targets[0].location.x = x
        targets[0].keyframe_insert("location", frame=frame)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.bake(frame_start=frames[0], frame_end=frames[1]) == {"FINISHED"}
    for frame in range(frames[0], frames[1] + 1):
        bpy.context.scene.frame_set(frame)
        yield frame


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


def override_character(bpy, path, objects):
    """Save ``objects`` in a collection 'Hero' as the library ``path``, start an empty shot, link the collection into
    it and override it (a character linked into a shot); returns the overridden armature, active."""
    collection = bpy.data.collections.new("Hero")
    bpy.context.scene.collection.children.link(collection)
    for item in objects:
        collection.objects.link(item)
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(path), link=True) as (_, linked):
        linked.collections = ["Hero"]
    overridden = linked.collections[0].override_hierarchy_create(bpy.context.scene, bpy.context.view_layer)
    hero = next(item for item in overridden.all_objects if item.type == "ARMATURE")
    bpy.context.view_layer.objects.active = hero
    return hero


def skin_patch(bpy, name="Skin"):
    """A patch of skin by the arm's hand (scenes.build_arm): a mesh object ``name`` (a triangle and a point), in the
    scene, not yet deformed by anything."""
    import bmesh
    mesh = bpy.data.meshes.new(name)
    shape = bmesh.new()
    for co in [(0.9, 0.3, 1.1), (1.0, 0.3, 1.1), (0.9, 0.4, 1.1), (0.9, 0.3, 1.2)]:
        shape.verts.new(co)
    shape.verts.ensure_lookup_table()
    shape.faces.new(shape.verts[:3])
    shape.to_mesh(mesh)
    skin = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(skin)
    return skin


def hang_on_vertex(bpy, obj, mesh, index=1):
    """Parent ``obj`` to vertex ``index`` of ``mesh`` (a prop snapped to the skin), at the vertex."""
    obj.parent, obj.parent_type, obj.location = mesh, "VERTEX", (0.0, 0.0, 0.0)
    obj.parent_vertices[0] = index
    bpy.context.view_layer.update()


def hang_on_hooked_cuff(bpy, obj, target, bone="b3"):
    """Hang ``target`` from vertex 1 of a skin patch (rigs.skin_patch) moved so that the vertex is where the target is,
    which a Hook modifier on ``obj``'s ``bone`` shapes from then on (its inverse set where the bone is, so nothing moves
    yet): the bone's pose moves the target through geometry."""
    from mathutils import Vector
    skin = skin_patch(bpy)
    skin.location = target.matrix_world.translation - Vector(skin.data.vertices[1].co)
    bpy.context.view_layer.update()
    hook = skin.modifiers.new("Hook", "HOOK")
    hook.object, hook.subtarget = obj, bone
    hook.vertex_indices_set([0, 1, 2, 3])
    hook.matrix_inverse = (obj.matrix_world @ obj.pose.bones[bone].matrix).inverted() @ skin.matrix_world
    hang_on_vertex(bpy, target, skin)
    return skin


def beside_on_cuff(bpy, bone="b3"):
    """rigs.arm_and_chain_beside with the arm's chain A solved on its target, then B's target hung from a cuff that
    ``bone`` shapes (rigs.hang_on_hooked_cuff: the arm's hand b3, or B's own c3). Returns (object, (TA, TB))."""
    obj, targets = arm_and_chain_beside(bpy)
    obj.blender_ik.active_chain_index = obj.blender_ik.chains.find("A")
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    hang_on_hooked_cuff(bpy, obj, targets[1], bone)
    return obj, targets


def prop_armature(bpy, name="Prop"):
    """Another armature (a prop's rig) with one bone 'b3' by the arm's hand; the active object is left as it was."""
    active = bpy.context.view_layer.objects.active
    prop = bpy.data.objects.new(name, bpy.data.armatures.new(name))
    bpy.context.scene.collection.objects.link(prop)
    bpy.context.view_layer.objects.active = prop
    bpy.ops.object.mode_set(mode="EDIT")
    bone = prop.data.edit_bones.new("b3")
    bone.head, bone.tail = (0.9, 0.3, 0.5), (0.9, 0.3, 1.1)
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = active
    return prop


def build_rig_refused(bpy, obj, match):
    """Build Rig of every chain refused with a message matching ``match``, and nothing added to the armature."""
    import pytest
    bones = set(obj.data.bones.keys())
    with pytest.raises(RuntimeError, match=match):
        bpy.ops.blender_ik.build_rig(chains="ALL")
    assert set(obj.data.bones.keys()) == bones
    assert not any(len(pose_bone.constraints) for pose_bone in obj.pose.bones)


def frames_a_bake_sets(bpy, obj, target, start, end):
    """Bake ``obj``'s chains over ``start``-``end`` (every frame in reach), and return the frames the bake set the scene
    to (a frame_change_post handler counts them), once the keys play back with the tip on ``target``."""
    from blender_ik_addon.ops import bake_armature
    scene, shown = bpy.context.scene, []

    def handler(scene, *_):
        shown.append(scene.frame_current)
    bpy.app.handlers.frame_change_post.append(handler)
    try:
        result = bake_armature(scene, obj, "ALL", start, end)
    finally:
        bpy.app.handlers.frame_change_post.remove(handler)
    assert not result.unreachable
    for frame in range(start, end + 1):
        scene.frame_set(frame)
        assert (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-4, frame
    return shown

