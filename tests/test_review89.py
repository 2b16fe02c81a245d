"""Review 89: Snap Target (FK to IK) as an animator and a TD meet it. Judged by where Blender shows the targets and
the tips."""
import numpy as np
import pytest

from rigs import arm_and_chain_beside


def _bend_both(bpy, obj):
    """Turn both chains' bones by hand (an FK pose of each)."""
    for name in ("b1", "c1", "b2", "c2"):
        pose_bone = obj.pose.bones[name]
        pose_bone.rotation_mode = "XYZ"
        pose_bone.rotation_euler = (0.3, 0.0, 0.2)
    bpy.context.view_layer.update()


def _nested_objects(bpy, obj, targets):
    """B's target Empty hangs from A's (a finger's control under the hand's)."""
    world = targets[1].matrix_world.copy()
    targets[1].parent = targets[0]
    bpy.context.view_layer.update()
    targets[1].matrix_world = world
    return targets


def _nested_bones(bpy, obj, targets):
    """The targets are control bones of the chains' own armature, B's under A's."""
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    hand = edit_bones.new("ctl_A")
    hand.head, hand.tail, hand.parent = (2.0, 0.0, 0.0), (2.0, 0.0, 0.3), edit_bones["root"]
    finger = edit_bones.new("ctl_B")
    finger.head, finger.tail, finger.parent = (2.5, 0.0, 0.0), (2.5, 0.0, 0.3), hand
    bpy.ops.object.mode_set(mode="OBJECT")
    for chain, bone in zip(obj.blender_ik.chains, ("ctl_A", "ctl_B")):
        chain.target, chain.target_bone = obj, bone
    return [obj.pose.bones["ctl_A"], obj.pose.bones["ctl_B"]]


def _empty_under_bone(bpy, obj, targets):
    """A's target is a control bone of the chains' armature; B's target Empty hangs from that bone."""
    bones = _nested_bones(bpy, obj, targets)
    chain = obj.blender_ik.chains[1]
    chain.target, chain.target_bone = targets[1], ""
    bpy.context.view_layer.update()
    world = targets[1].matrix_world.copy()
    targets[1].parent, targets[1].parent_type, targets[1].parent_bone = obj, "BONE", "ctl_A"
    bpy.context.view_layer.update()
    targets[1].matrix_world = world
    return [bones[0], targets[1]]


def _goals_off(bpy, obj, goals):
    """How far Blender shows each goal (a pose bone's head, an object) from its chain's tip."""
    bpy.context.view_layer.update()
    return [(obj.matrix_world @ obj.pose.bones[tip].tail - (obj.matrix_world @ goal.head if hasattr(goal, "head")
             else goal.matrix_world.translation)).length for tip, goal in zip(("b3", "c3"), goals)]


@pytest.mark.parametrize("first", ("A", "B"))
@pytest.mark.parametrize("nest", (_nested_objects, _nested_bones, _empty_under_bone),
                         ids=("objects", "bones", "empty under bone"))
def test_snap_all_with_a_target_hanging_from_another_snapped_target(blender, nest, first):
    """Snap All where one chain's target hangs from another's (in either order in the list): each target lands on
    its tip, as Blender shows it, instead of the whole snap being refused as 'sheared by what it hangs from'."""
    bpy = blender
    obj, targets = arm_and_chain_beside(bpy)
    bpy.context.view_layer.objects.active = obj
    goals = nest(bpy, obj, targets)
    if first == "B":
        obj.blender_ik.chains.move(1, 0)
    _bend_both(bpy, obj)
    assert bpy.ops.blender_ik.snap_target(chains="ALL") == {"FINISHED"}
    off = _goals_off(bpy, obj, goals)
    assert np.max(off) < 1e-6, off


def _keyed_target(bpy, rotation_frame=1):
    """The arm with its target keyed on frames 1 and 10 (its rotation on ``rotation_frame``), at frame 5, and the arm
    turned by hand; Auto Keying on. Returns (object, chain)."""
    from rigs import arm_with_chain
    from test_snap_target import _fk_pose
    obj, chain = arm_with_chain(bpy)
    scene, target = bpy.context.scene, chain.target
    for frame in (1, 10):
        target.keyframe_insert("location", frame=frame)
    target.keyframe_insert("rotation_euler", frame=rotation_frame)
    scene.frame_set(5)
    _fk_pose(bpy, obj)
    scene.tool_settings.use_keyframe_insert_auto = True
    return obj, chain


def _replace_nothing(bpy, scene):
    """Auto Keying in Replace mode, with no key of the target at the frame: nothing is keyed."""
    scene.tool_settings.auto_keying_mode = "REPLACE_KEYS"


def _replace_location_only(bpy, scene):
    """Replace mode with the location keyed at the frame, the rotation not: the location is keyed, not the rotation."""
    scene.tool_settings.auto_keying_mode = "REPLACE_KEYS"
    scene.objects["Target"].keyframe_insert("location", frame=5)


@pytest.mark.parametrize("setting", (_replace_nothing, _replace_location_only),
                         ids=lambda setting: setting.__name__.strip("_"))
def test_auto_keying_that_leaves_a_keyed_target_unkeyed_is_warned_of(blender, capfd, setting):
    """Auto Keying's settings (Replace: only channels keyed at the frame) leave some of a keyed target's channels
    unkeyed: played back, the target is off the tip; the report says so, as it does with Auto Keying off, instead of
    reporting a clean snap."""
    from test_snap_target import goal_off_tip
    bpy = blender
    obj, chain = _keyed_target(bpy)
    scene = bpy.context.scene
    setting(bpy, scene)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    out = capfd.readouterr().out
    scene.frame_set(1)
    scene.frame_set(5)
    assert max(goal_off_tip(bpy, obj, chain)) > 1e-3  # the keys put it back
    assert "'Target' is keyed: the keys put it back at the next frame change unless you key it (Auto Keying's Replace" \
        in out, out


def test_a_target_keyed_as_snapped_is_not_warned_of(blender, capfd):
    """With Only Insert Needed, snapping a target that was snapped and keyed already keys nothing (nothing changed):
    its keys hold it at the tip, and nothing is said about them."""
    bpy = blender
    obj, chain = _keyed_target(bpy, rotation_frame=5)
    edit = bpy.context.preferences.edit
    was, edit.use_auto_keyframe_insert_needed = edit.use_auto_keyframe_insert_needed, True
    try:
        assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
        capfd.readouterr()
        assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
        out = capfd.readouterr().out
    finally:
        edit.use_auto_keyframe_insert_needed = was
    assert "put it back" not in out, out


@pytest.mark.parametrize("parent_type", ("VERTEX", "VERTEX_3"))
def test_a_target_hanging_from_vertices_lands_on_the_tip(blender, parent_type):
    """A target parented to a vertex (or three) of a mesh, a prop on the skin, turned and moved: the snap puts it at
    the tip, its up axis along the last bone, as Blender shows it, instead of refusing it as 'sheared by what it hangs
    from' (Blender printing 'Evaluated mesh is needed to solve parenting')."""
    from rigs import arm_with_chain, skin_patch
    from test_snap_target import _fk_pose, goal_off_tip
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    skin = skin_patch(bpy)
    skin.location, skin.rotation_euler = (0.1, -0.2, 0.3), (0.3, 0.2, 0.6)
    target = chain.target
    target.parent, target.parent_type = skin, parent_type
    target.parent_vertices = (0, 1, 2) if parent_type == "VERTEX_3" else (1, 0, 0)
    bpy.context.view_layer.update()
    _fk_pose(bpy, obj)
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    distance, angle = goal_off_tip(bpy, obj, chain)
    assert distance < 1e-6 and angle < 1e-5, (distance, angle)


def test_a_connected_target_bone_is_refused_for_what_it_is(blender):
    """A control bone connected to its parent cannot move (its parent's tail holds its head): the snap is refused
    naming that, and nothing moves, instead of blaming an unevenly scaled parent."""
    import re

    from rigs import arm_with_chain, pose_snapshot
    from test_snap_target import _fk_pose
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    parent = edit_bones.new("ctl_parent")
    parent.head, parent.tail, parent.parent = (2.0, 0.0, 0.0), (2.0, 0.0, 0.3), edit_bones["root"]
    control = edit_bones.new("ctl")
    control.head, control.tail, control.parent, control.use_connect = (2.0, 0.0, 0.3), (2.0, 0.2, 0.5), parent, True
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.data.objects.remove(chain.target)
    chain.target, chain.target_bone = obj, "ctl"
    _fk_pose(bpy, obj)
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=re.escape("The target 'Arm' bone 'ctl' is connected to its parent "
                                                     "'ctl_parent', whose tail holds its head")):
        bpy.ops.blender_ik.snap_target()
    assert pose_snapshot(obj) == before
