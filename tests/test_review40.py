"""Review 40: an animator posing in Pose Mode, live, with the targets bones of a control armature, on Blender 5.0."""
import pytest

from rigs import add_empty, build_arm, pose_snapshot, readout
from scenes import add_bone, new_armature

from mathutils import Vector  # noqa: E402 (after bpy: rigs imports it)


def _prop_on_the_elbow(bpy, obj):
    """A prop Empty hanging from the chain's elbow bone b2 (parented to it)."""
    prop = add_empty("Prop")
    prop.parent, prop.parent_type, prop.parent_bone = obj, "BONE", "b2"
    return prop


def _helper_copying_the_elbow(bpy, obj):
    """A helper Empty that copies the chain's elbow bone b2 by a Copy Location."""
    helper = add_empty("Helper")
    constraint = helper.constraints.new("COPY_LOCATION")
    constraint.target, constraint.subtarget = obj, "b2"
    return helper


@pytest.mark.parametrize("followed", [_prop_on_the_elbow, _helper_copying_the_elbow], ids=["parented", "copied"])
def test_a_control_bone_pinned_by_child_of_to_what_the_chain_moves_is_refused(blender, followed):
    """The hand's control bone (of a control armature) is pinned by a Child Of to an Empty that moves with the arm's
    own elbow (parented to it, or copying it). Posing the arm moves its own target: Solve reported 'Target reached'
    while Blender showed the hand off the control, and Live chased it, update after update, never on it. A Child Of
    straight to the elbow bone was refused ('moves with the chain'); one step further was not seen."""
    bpy = blender
    obj = build_arm()
    controls = new_armature("Controls")
    add_bone(controls.data, "hand_ctl", Vector((0.9, 0.3, 1.1)), Vector((0.9, 0.3, 1.3)))
    bpy.ops.object.mode_set(mode="OBJECT")
    pinned = controls.pose.bones["hand_ctl"].constraints.new("CHILD_OF")
    pinned.target = followed(bpy, obj)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target, chain.target_bone = "arm", "b3", controls, "hand_ctl"
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    pose = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=r"The target 'Controls' bone 'hand_ctl' moves with the chain: .*'b2'"):
        bpy.ops.blender_ik.solve(chains="ALL")
    assert pose_snapshot(obj) == pose
    chain.live = True
    controls.pose.bones["hand_ctl"].location.x += 0.05
    bpy.context.view_layer.update()
    assert readout(obj, "arm").status == "ERROR"
    assert "moves with the chain" in readout(obj, "arm").message
    assert pose_snapshot(obj) == pose
