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
