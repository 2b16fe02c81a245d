"""Adversarial review 2: Live decides which chains to solve before it poses any. A chain that hangs below another
live chain (a finger under a live arm), or whose target does (an Empty held by the other hand), has inputs that
change only once the chain above it is posed; that pose is evaluated inside Live's own paused section, so no later
depsgraph update lists the armature and Live reuses what it read of it before. The lower chain was never re-solved
(before the reuse, one update late): its tip stayed behind while its read-out said "reached"."""
import numpy as np
import pytest

from rigs import add_empty, readout
from test_chains import build_body, tip_error


def _finger_goal(bpy, obj):
    """The finger chain's own target, fixed in the world at the finger's tip: it moves only through the arm."""
    return add_empty("finger_goal"), "finger3.L", ("upper_arm.L", "forearm.L", "hand.L", "finger1.L", "finger2.L",
                                                   "finger3.L")


def _held_by_the_other_hand(bpy, obj):
    """The right hand's target is an Empty the left hand holds (parented to its bone)."""
    held = add_empty("held")
    held.parent, held.parent_type, held.parent_bone = obj, "BONE", "hand.L"
    return held, "hand.R", ("upper_arm.L", "forearm.L", "hand.L", "upper_arm.R", "forearm.R", "hand.R")


@pytest.mark.parametrize("lower", [_finger_goal, _held_by_the_other_hand])
def test_review2_a_live_chain_below_another_follows_it_in_the_same_update(blender, lower):
    bpy = blender
    from blender_ik_addon.ops import tip_target_matrix
    obj = build_body(bpy, fingers=True)
    arm_goal = add_empty("arm_goal")
    goal, tip, posed = lower(bpy, obj)
    rng = np.random.default_rng(7)
    for name in posed:  # a reachable pose of both chains, by forward kinematics
        obj.pose.bones[name].rotation_mode = "XYZ"
        obj.pose.bones[name].rotation_euler = tuple(rng.uniform(-0.4, 0.4, 3))
    bpy.context.view_layer.update()
    arm_goal.matrix_world = tip_target_matrix(obj, "hand.L", "Z", "NONE")
    goal.matrix_world = tip_target_matrix(obj, tip, "Z", "NONE")
    for pose_bone in obj.pose.bones:
        pose_bone.rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    for name, target in ((tip, goal), ("hand.L", arm_goal)):
        chain = obj.blender_ik.chains.add()
        chain.name, chain.tip_bone, chain.target = name, name, target
    bpy.context.view_layer.objects.active = obj
    for chain in obj.blender_ik.chains:
        chain.live = True
    for step in range(3):
        for name, target in ((tip, goal), ("hand.L", arm_goal)):
            miss = tip_error(bpy, obj, name, target)[0]
            assert readout(obj, name).status == "REACHED" and miss < 1e-5, (step, name, miss, readout(obj, name))
        arm_goal.location.y -= 0.01
        arm_goal.location.z += 0.01
        bpy.context.view_layer.update()
