"""Review 24: a studio moving from Blender 4.2 LTS to 5.2 LTS (layered actions and slots from 4.4)."""
import numpy as np
import pytest

from rigs import add_empty, arm_with_chain, build_arm, tip_and_direction

try:
    import bpy
    LAYERED = "action_slot" in bpy.types.AnimData.bl_rna.properties
except ImportError:  # pragma: no cover
    LAYERED = False


@pytest.mark.skipif(not LAYERED, reason="slots exist from Blender 4.4")
@pytest.mark.parametrize("how", ["action", "nla strip"])
def test_bake_an_action_assigned_without_a_slot_that_another_armature_also_has_without_one(blender, how):
    """An action made for one character ('Hero', its slot OBHero) assigned to two others: Blender assigns them no
    slot, so neither plays anything of it. Baking one of them must key it in a slot of its own (as Blender's own
    keying does: keyframe_insert makes one), not be refused because the other 'plays' the action too: it plays
    nothing of it, before or after."""
    bpy = blender
    hero = build_arm(name="Hero")
    hero.pose.bones["root"].keyframe_insert("location", frame=1)
    action = hero.animation_data.action
    other = build_arm(name="Villain2")
    if how == "action":
        other.animation_data_create().action = action
        assert other.animation_data.action_slot is None
    else:
        strip = other.animation_data_create().nla_tracks.new().strips.new("walk", 1, action)
        strip.action_slot = None  # the strip took Hero's slot; its slot menu left empty
        assert strip.action_slot is None
    obj, chain = arm_with_chain(bpy)
    obj.animation_data_create().action = action
    assert obj.animation_data.action_slot is None  # the action's only slot is Hero's
    target = chain.target
    for frame, x in ((1, 0.9), (10, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    other_pose = {pb.name: tuple(pb.matrix) for pb in other.pose.bones}

    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}

    slot = obj.animation_data.action_slot
    assert slot is not None and slot != hero.animation_data.action_slot
    assert obj.animation_data.action == action
    for frame in (1, 5, 10):
        bpy.context.scene.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5
        assert {pb.name: tuple(pb.matrix) for pb in other.pose.bones} == other_pose
    slots = [other.animation_data.action_slot] if how == "action" else \
        [strip.action_slot for track in other.animation_data.nla_tracks for strip in track.strips]
    assert slots == [None]
