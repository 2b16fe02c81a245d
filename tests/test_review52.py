"""Review 52: a whole shot, end to end (an animator's day of bakes, then the TD's batch bake), judged by what Blender
plays back."""
import pytest

from rigs import arm_and_chain_beside, tips_off

from mathutils import Vector  # noqa: E402 (after bpy: rigs imports it)


def prop_in_a_hand(bpy):
    """rigs.arm_and_chain_beside, chain A solved onto its target, and B's target made a prop held in A's hand (an Empty
    parented to A's tip bone b3, beside A's target); A's target keyed moving over frames 1-20. Returns (object, A's
    target, the prop)."""
    obj, (target_a, prop) = arm_and_chain_beside(bpy)
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}  # A's hand on its target, where B reaches
    world = prop.matrix_world.copy()
    world.translation = target_a.location + Vector((0.1, 0.1, 0.0))
    prop.parent, prop.parent_type, prop.parent_bone = obj, "BONE", "b3"
    prop.matrix_world = world
    for frame, x in ((1, 0.9), (20, 0.8)):
        target_a.location.x = x
        target_a.keyframe_insert("location", frame=frame)
    return obj, target_a, prop


@pytest.mark.parametrize("how", ["active", "named"])
def test_a_bake_that_leaves_out_a_chain_reaching_for_a_prop_in_the_baked_hand_names_it(blender, how):
    """Chain B reaches for a prop held in chain A's hand (an Empty parented to A's tip). The animator tweaks A's target
    and bakes A alone (Bake Active, or ``bake_ik.py --chain A``): A's new keys carry the prop away, and B's keys, solved
    on A's old pose, play off it. The bake's report said nothing of B; it now names it."""
    from blender_ik_addon.ops import bake_armature
    bpy = blender
    obj, target_a, prop = prop_in_a_hand(bpy)
    scene = bpy.context.scene
    assert bake_armature(scene, obj, "ALL", 1, 20).summary().endswith("all in reach")
    assert max(tips_off(bpy, obj, (target_a, prop))) < 1e-6
    target_a.location.x = 0.7
    target_a.keyframe_insert("location", frame=20)
    result = (bake_armature(scene, obj, "ACTIVE", 1, 20) if how == "active"
              else bake_armature(scene, obj, "ALL", 1, 20, names=["A"]))
    scene.frame_set(20)
    assert tips_off(bpy, obj, (target_a, prop))[1] > 1e-3  # what Blender plays: B off the prop
    assert "B follows the baked chains and was not baked" in result.summary(), result.summary()
