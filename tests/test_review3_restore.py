"""Adversarial review 3 (issue 11's faster bake): a bake whose self-check fails puts every key back, in states
the snapshot's shortcuts (no copy without keys to put back, empty F-curves emptied again, no scan for other
players of an unshared action) have to get right: mixed keyed and empty channels, two levels of chains, a
shared action (in a strip, or another slot of it), the armature's data animated too."""
import numpy as np
import pytest

from rigs import add_empty, build_arm, pose_snapshot
from test_safety import FOUR_BONES, all_keys, arm_with_target, b1_fcurve, ik_below_the_chain, key_b1


def every_key(bpy):
    """all_keys of every object and armature of the file, and of every action's every F-curve (other slots too)."""
    from blender_ik_addon import keys
    found = {("object", obj.name): all_keys(obj) for obj in bpy.data.objects}
    for action in bpy.data.actions:
        curves = keys.action_fcurves(action)
        found[("action", action.name)] = sorted(
            (fcurve.data_path, fcurve.array_index, tuple(tuple(point.co) for point in fcurve.keyframe_points),
             tuple(tuple(point.handle_left) for point in fcurve.keyframe_points),
             tuple(tuple(point.co) for point in fcurve.sampled_points)) for fcurve in curves)
    return found


def mixed(bpy, obj):  # b1 keyed, b2's F-curves there but empty, b3 without any
    key_b1(obj, frames=(1, 12, 30))
    b2 = obj.pose.bones["b2"]
    b2.keyframe_insert("rotation_quaternion", frame=3)
    from blender_ik_addon import keys
    for index in range(4):
        keys.find_fcurve(obj, 'pose.bones["b2"].rotation_quaternion', index).keyframe_points.clear()


def empty_only_and_others(bpy, obj):  # the chain's F-curves empty, other keys on other bones and the object
    key_b1(obj, frames=(1, 12, 30))
    for index in range(4):
        b1_fcurve(obj, index).keyframe_points.clear()
    obj.pose.bones["b4"].keyframe_insert("location", frame=3)
    obj.keyframe_insert("location", frame=5)


def shared_in_a_strip(bpy, obj):
    key_b1(obj, frames=(1, 12, 30))
    other = build_arm(name="Twin", **FOUR_BONES)
    strip = other.animation_data_create().nla_tracks.new().strips.new("walk", 1, obj.animation_data.action)
    from blender_ik_addon import keys
    if keys._LAYERED:
        strip.action_slot = obj.animation_data.action_slot
    bpy.context.view_layer.objects.active = obj


def other_slot(bpy, obj):  # 4.4+: another object plays another slot of the same action; on 4.2 the same action
    from blender_ik_addon import keys
    key_b1(obj, frames=(1, 12, 30))
    other = build_arm(name="Twin", **FOUR_BONES)
    other.pose.bones["b1"].rotation_quaternion = (0.5, 0.5, 0.5, 0.5)
    other.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=20)
    if keys._LAYERED:
        twin_action = other.animation_data.action
        slot = obj.animation_data.action.slots.new(id_type="OBJECT", name="Twin")
        channelbag = obj.animation_data.action.layers[0].strips[0].channelbag(slot, ensure=True)
        for fcurve in keys.object_fcurves(other):
            copy = channelbag.fcurves.new(fcurve.data_path, index=fcurve.array_index)
            for point in fcurve.keyframe_points:
                copy.keyframe_points.insert(point.co[0], point.co[1])
        other.animation_data.action = obj.animation_data.action
        other.animation_data.action_slot = slot
        bpy.data.actions.remove(twin_action)
    bpy.context.view_layer.objects.active = obj


def armature_data_animated(bpy, obj):  # the armature's data has its own animation data 
    key_b1(obj, frames=(1, 12, 30))
    obj.data.bones["b4"].bbone_segments = 2
    obj.data.keyframe_insert('bones["b4"].bbone_segments', frame=4)


def empty_action(bpy, obj):  # an action without keys (on 4.4+ without layers or a slot) assigned
    obj.animation_data_create().action = bpy.data.actions.new("Empty")


STATES = {"empty_action": empty_action, "mixed": mixed, "empty_only_and_others": empty_only_and_others, "shared_in_a_strip": shared_in_a_strip,
          "other_slot": other_slot, "armature_data_animated": armature_data_animated}


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
@pytest.mark.parametrize("state", STATES)
def test_a_failed_self_check_puts_every_key_back(blender, state, output):
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy, **FOUR_BONES)
    STATES[state](bpy, obj)
    if output == "SAMPLES" and state != "empty_only_and_others":
        for index in range(4):  # a bake to samples refuses keys outside its range
            curve = b1_fcurve(obj, index)
            if curve is not None:
                for point in list(curve.keyframe_points)[::-1]:
                    if not 10 <= point.co[0] <= 20:
                        curve.keyframe_points.remove(point)
    ik_below_the_chain(obj)
    bpy.context.scene.frame_set(15)
    before, pose = every_key(bpy), pose_snapshot(obj)
    actions = set(bpy.data.actions)
    with pytest.raises(ChainError, match="the keys were put back as they were"):
        bake_armature(bpy.context.scene, obj, frame_start=10, frame_end=20, output=output,
                      allow_shared=state in ("shared_in_a_strip", "other_slot"))
    assert every_key(bpy) == before and pose_snapshot(obj) == pose
    assert set(bpy.data.actions) == actions


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
@pytest.mark.parametrize("failing", ["finger3.L", "hand.L"])
def test_a_failed_check_of_either_level_puts_both_levels_back(blender, monkeypatch, failing, output):
    """A finger chain below an arm chain: the arm's keys are written before the finger's level is sampled.
    Whichever chain's check fails, both levels' keys (here the first on the bones' channels) are taken away
    again, and the F-curves of other channels are kept."""
    bpy = blender
    from test_chains import build_body
    from blender_ik_addon import bake
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj = build_body(bpy, fingers=True)
    for tip in ("finger3.L", "hand.L"):
        chain = obj.blender_ik.chains.add()
        chain.name, chain.tip_bone = tip, tip
        chain.target = add_empty(f"{tip}_goal", location=(0.3, -0.3, 1.0))
        chain.target.keyframe_insert("location", frame=1)
        chain.target.location.z = 1.1
        chain.target.keyframe_insert("location", frame=30)
    obj.pose.bones["hips"].keyframe_insert("location", frame=4)  # an action, nothing of the chains' in it
    bpy.context.view_layer.objects.active = obj
    real = bake.verify_pose

    def verify(chain, solution, index):
        if chain.names[-1] == failing:
            raise ChainError("Blender shows another pose; nothing was changed")
        return real(chain, solution, index)

    monkeypatch.setattr(bake, "verify_pose", verify)
    before, pose = every_key(bpy), pose_snapshot(obj)
    with pytest.raises(ChainError, match="the keys were put back as they were"):
        bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=30, output=output)
    assert every_key(bpy) == before and pose_snapshot(obj) == pose
