"""Review 55: the README's sentences of the day, done as written and judged by what Blender shows."""
import pytest

from rigs import tips_off
from test_review52 import prop_in_a_hand


@pytest.mark.parametrize("how", ["active", "named"])
def test_a_bake_that_leaves_out_a_live_chain_following_the_baked_hand_does_not_name_it(blender, how):
    """Chain B, live, reaches for a prop held in chain A's hand. Bake Active (or ``--chain A``) bakes A alone: Blender
    plays B on its prop on every frame (Live solves it after A's keys play) and B has no keys, yet the report said 'B
    follows the baked chains and was not baked: bake it too, or its keys play off its goals'. A live chain is left
    out of that note."""
    from blender_ik_addon.ops import bake_armature
    bpy = blender
    obj, target_a, prop = prop_in_a_hand(bpy)
    obj.blender_ik.chains["B"].live = True
    scene = bpy.context.scene
    result = (bake_armature(scene, obj, "ACTIVE", 1, 20) if how == "active"
              else bake_armature(scene, obj, "ALL", 1, 20, names=["A"]))
    for frame in (1, 10, 20):
        scene.frame_set(frame)
        assert max(tips_off(bpy, obj, (target_a, prop))) < 1e-6, frame  # what Blender plays: both on their goals
    assert result.summary() == "Baked 20 frames (1-20), all in reach", result.summary()
