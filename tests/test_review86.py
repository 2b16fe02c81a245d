"""Review 86: chains that pass through a joint helper on the rig Rigify generates (MCH-hand_fk.L between forearm_fk.L
and hand_fk.L), as an animator and a TD use them. Judged where Blender shows the tip."""
import math
import re

import numpy as np
import pytest

from rigs import angle_between, axis_of, pose_snapshot, readout
from test_through import rigify_rig  # noqa: F401 (a fixture: Rigify's basic human, generated)

HELPER, TIP = "MCH-hand_fk.L", "hand_fk.L"


def hand_chain(bpy, rig):
    """A chain on the FK hand with a target at its tip (Add Target), as the panel makes them."""
    rig.data.bones.active = rig.data.bones[TIP]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    return rig.blender_ik.active_chain


def tip_off(rig, chain):
    """How far Blender shows the tip from the target, and the last bone's angle (degrees) to the target's up axis."""
    pose_bone = rig.pose.bones[chain.tip_bone]
    tail, head = rig.matrix_world @ pose_bone.tail, rig.matrix_world @ pose_bone.head
    return ((tail - chain.target.matrix_world.translation).length,
            math.degrees(angle_between(np.array(tail - head), axis_of(chain.target, chain.up_axis))))


def _follow_switch(bpy, rig, kind):
    """A TD's switch on the helper, as Rigify's own FK Limb Follow is made on MCH-upper_arm_parent.L: a constraint
    whose influence a driver reads from a custom property of the hand control, off (0) for now."""
    constraint = rig.pose.bones[HELPER].constraints.new(kind)
    constraint.target, constraint.subtarget = rig, "root"
    if kind == "CHILD_OF":
        constraint.set_inverse_pending = False  # (no inverse: it hangs the helper from the root control's pose)
    control = rig.pose.bones[TIP]
    control["hand_follow"] = 0.0
    driver = constraint.driver_add("influence").driver
    driver.type = "AVERAGE"
    variable = driver.variables.new()
    variable.targets[0].id = rig
    variable.targets[0].data_path = f'pose.bones["{TIP}"]["hand_follow"]'
    return control


@pytest.mark.parametrize("kind", ("COPY_ROTATION", "CHILD_OF"))
def test_a_helper_whose_constraint_a_driver_turns_on_is_refused_where_it_acts(blender, rigify_rig, kind):  # noqa: F811
    """A driven constraint on the helper, off on the frame validated, turns the hand on the frames where the animator
    keyed the switch on: the bake reported every frame in reach, and Blender played the hand up to 6 cm and 44° off
    its target. Solve and Live pose the frame where it is off, as Blender shows it, and refuse it where it acts; the
    bake refuses before changing anything, naming the frames where it acts."""
    bpy = blender
    rig = rigify_rig
    chain = hand_chain(bpy, rig)
    rig.pose.bones["root"].rotation_quaternion = (0.9, 0.1, 0.3, 0.2)  # where "follow root" turns the hand
    control = _follow_switch(bpy, rig, kind)
    control.keyframe_insert('["hand_follow"]', frame=1)
    control["hand_follow"] = 1.0
    control.keyframe_insert('["hand_follow"]', frame=8)
    scene = bpy.context.scene
    scene.frame_set(1)
    constraint = rig.pose.bones[HELPER].constraints[-1]
    assert constraint.influence == 0.0
    chain.target.location.z -= 0.02
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    distance, angle = tip_off(rig, chain)
    assert distance < 1e-5 and angle < 1e-3
    before, actions = pose_snapshot(rig), set(bpy.data.actions)
    expected = (f"Bone '{HELPER}', which the chain passes through at the joint of '{TIP}', leaves its rest at frames "
                f"2-8 (its driver on 'constraints[\"{constraint.name}\"].influence', or a constraint it drives)")
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=8)
    assert pose_snapshot(rig) == before and set(bpy.data.actions) == actions
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=1) == {"FINISHED"}  # where it rests
    chain.live = True
    assert readout(rig, chain.name).status == "REACHED"
    scene.frame_set(5)
    status = readout(rig, chain.name)
    assert status.status == "ERROR" and f"has constraints ({constraint.name})" in status.message


def _unmuted(rig, helper):
    helper.constraints["Turn"].mute = False


def _switched_on(rig, helper):
    helper.constraints["Turn"].influence = 1.0


def _not_inheriting(rig, helper):
    rig.data.bones[HELPER].use_inherit_rotation = False


def _turned(rig, helper):
    helper.rotation_quaternion = (0.98, 0.0, 0.2, 0.0)


CHANGED = {
    "constraint unmuted": (_unmuted, "has constraints (Turn)"),
    "constraint's influence set": (_switched_on, "has constraints (Turn)"),
    "inherit rotation off": (_not_inheriting, "does not inherit rotation"),
    "turned": (_turned, "is posed; the chain takes it at rest"),
}


@pytest.mark.parametrize("how", ("solve", "live"))
@pytest.mark.parametrize("change", CHANGED)
def test_a_helper_changed_after_a_solve_is_refused_by_name(blender, rigify_rig, change, how):  # noqa: F811
    """The helper is changed once the chain was solved (or while it is live): a TD's Copy Rotation on it unmuted or
    switched on, its Inherit Rotation turned off, the bone turned. Solve and Live refused it with "Blender shows the
    tip of 'hand_fk.L' 5.6 cm from where the solve put it ...: something in the scene changes the result in a way the
    add-on cannot follow", naming nothing, where a chain set up after the change is refused naming the helper: they
    used what they had validated before the change. The refusal names the helper, and the hand stays as it was."""
    bpy = blender
    rig = rigify_rig
    chain = hand_chain(bpy, rig)
    helper = rig.pose.bones[HELPER]
    turn = helper.constraints.new("COPY_ROTATION")
    turn.name, turn.target, turn.subtarget, turn.mute = "Turn", rig, "root", True
    if change == "constraint's influence set":
        turn.mute, turn.influence = False, 0.0
    rig.pose.bones["root"].rotation_quaternion = (0.9, 0.1, 0.3, 0.2)
    chain.target.location.z -= 0.02
    bpy.context.view_layer.update()
    if how == "live":
        chain.live = True
        bpy.context.view_layer.update()
        assert readout(rig, chain.name).status == "REACHED"
    else:
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert tip_off(rig, chain)[0] < 1e-5
    make, message = CHANGED[change]
    expected = f"Bone '{HELPER}', which the chain passes through at the joint of '{TIP}', {message}"
    make(rig, helper)
    chain.target.location.z -= 0.01  # the animator drags the target on
    bpy.context.view_layer.update()
    before = pose_snapshot(rig)
    if how == "live":
        status = readout(rig, chain.name)
        assert status.status == "ERROR" and expected in status.message, status.message
    else:
        with pytest.raises(RuntimeError, match=re.escape(expected)):
            bpy.ops.blender_ik.solve()
    bpy.context.view_layer.update()
    assert pose_snapshot(rig) == before


def test_chains_from_selected_names_the_selected_bone_whose_chain_it_refuses(blender, rigify_rig):  # noqa: F811
    """The animator selects the FK hand and toe controls and clicks Chains from Selected; the toe's chain passes
    through MCH-foot_fk.L, to which a TD added a Copy Rotation. The refusal read "Bone 'MCH-foot_fk.L', which the chain
    passes through at the joint of 'foot_fk.L', has constraints ...": which chain, of two selected bones, neither of
    them foot_fk.L? It names the selected bone's chain, as Solve names a chain, and nothing is added."""
    bpy = blender
    rig = rigify_rig
    from blender_ik_addon import keys
    for pose_bone in rig.pose.bones:
        keys.set_pose_bone_selected(pose_bone, pose_bone.name in ("hand_fk.L", "toe_fk.L"))
    helper = rig.pose.bones["MCH-foot_fk.L"]
    turn = helper.constraints.new("COPY_ROTATION")
    turn.target, turn.subtarget = rig, "root"
    objects = set(bpy.data.objects)
    refusal = ("Chain 'toe_fk.L': Bone 'MCH-foot_fk.L', which the chain passes through at the joint of 'foot_fk.L', "
               "has constraints (Copy Rotation)")
    with pytest.raises(RuntimeError, match=re.escape(refusal)):
        bpy.ops.blender_ik.chains_from_selected()
    assert len(rig.blender_ik.chains) == 0 and set(bpy.data.objects) == objects
