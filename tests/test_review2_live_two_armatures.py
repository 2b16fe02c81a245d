"""Adversarial review 2: Live poses each live armature in turn, and evaluates each pose inside its own paused
section, so no later depsgraph update lists what that pose moved. A live armature that follows another one (its
chain's target is a bone of the other's chain, or the armature itself is parented to such a bone: a prop rig in a
hand, a character riding another) was solved before the one it follows, or on what Live had read of it before:
it stayed behind, however long one waited, while its read-out said "reached"."""
import numpy as np
import pytest

from rigs import add_empty, build_arm, readout


def _target_is_the_others_hand(bpy, leader, follower):
    follower.blender_ik.target, follower.blender_ik.target_bone = leader, "b3"
    return leader, "b3"


def _parented_to_the_others_hand(bpy, leader, follower):
    follower.parent, follower.parent_type, follower.parent_bone = leader, "BONE", "b3"
    bpy.context.view_layer.update()
    from blender_ik_addon.ops import tip_target_matrix
    goal = add_empty("FollowerGoal")  # fixed in the world: the follower's chain reaches it wherever it is carried
    goal.matrix_world = tip_target_matrix(follower, "b3", "Z", "NONE")
    goal.location.x += 0.05
    follower.blender_ik.target = goal
    return goal, ""


def _miss(bpy, obj, goal, bone_name):
    bpy.context.view_layer.update()
    tip = obj.matrix_world @ obj.pose.bones["b3"].tail
    matrix = goal.matrix_world @ goal.pose.bones[bone_name].matrix if bone_name else goal.matrix_world
    return float(np.linalg.norm(np.array(tip - matrix.translation)))


@pytest.mark.parametrize("names", [("Leader", "Follower"), ("Follower", "Leader")])
@pytest.mark.parametrize("follow", [_target_is_the_others_hand, _parented_to_the_others_hand])
def test_review2_a_live_armature_following_another_one_keeps_up(blender, follow, names):
    bpy = blender
    leader = build_arm(name=names[0])
    follower = build_arm(name=names[1], base=(1.5, 0.0, 0.0))
    leader_goal = add_empty("LeaderGoal", location=(0.5, -0.6, 1.3), rotation=(0.2, 0.4, 0.1))
    leader.blender_ik.tip_bone, leader.blender_ik.target = "b3", leader_goal
    follower.blender_ik.tip_bone = "b3"
    bpy.context.view_layer.update()
    leader.blender_ik.live = True
    goal, goal_bone = follow(bpy, leader, follower)  # the follower set up where the live leader put it
    bpy.context.view_layer.update()
    follower.blender_ik.live = True
    bpy.context.view_layer.update()
    for step in range(3):
        assert _miss(bpy, leader, leader_goal, "") < 2e-5 and readout(leader).status == "REACHED"
        miss = _miss(bpy, follower, goal, goal_bone)
        assert miss < 2e-5 and readout(follower).status == "REACHED", (step, miss, readout(follower))
        leader_goal.location.x += 0.03  # one update: the one a drag of the leader's target ends with
        bpy.context.view_layer.update()
