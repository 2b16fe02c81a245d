"""Review 55: the README's sentences of the day, done as written and judged by what Blender shows."""
import pytest

from rigs import arm_and_chain_beside, tips_off

from mathutils import Vector  # noqa: E402 (after bpy: rigs imports it)


@pytest.mark.parametrize("how", ["active", "named"])
def test_a_bake_that_leaves_out_a_live_chain_following_the_baked_hand_does_not_name_it(blender, how):
    """Chain B, live, reaches for a prop held in chain A's hand. Bake Active (or ``--chain A``) bakes A alone: Blender
    plays B on its prop on every frame (Live solves it after A's keys play) and B has no keys, yet the report said 'B
    follows the baked chains and was not baked: bake it too, or its keys play off its goals'. A live chain is left
    out of that note."""
    from blender_ik_addon.ops import bake_armature
    bpy = blender
    obj, (target_a, prop) = arm_and_chain_beside(bpy)
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    world = prop.matrix_world.copy()
    world.translation = target_a.location + Vector((0.1, 0.1, 0.0))
    prop.parent, prop.parent_type, prop.parent_bone = obj, "BONE", "b3"
    prop.matrix_world = world
    for frame, x in ((1, 0.9), (20, 0.8)):
        target_a.location.x = x
        target_a.keyframe_insert("location", frame=frame)
    obj.blender_ik.chains["B"].live = True
    scene = bpy.context.scene
    result = (bake_armature(scene, obj, "ACTIVE", 1, 20) if how == "active"
              else bake_armature(scene, obj, "ALL", 1, 20, names=["A"]))
    for frame in (1, 10, 20):
        scene.frame_set(frame)
        assert max(tips_off(bpy, obj, (target_a, prop))) < 1e-6, frame  # what Blender plays: both on their goals
    assert result.summary() == "Baked 20 frames (1-20), all in reach", result.summary()
