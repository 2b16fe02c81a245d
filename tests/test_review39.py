"""Review 39: the README's truth, again: a new user, then a TD, doing what it says on Blender 5.0."""
import pytest

from rigs import arm_and_chain_beside, override_character, tips_off


@pytest.mark.parametrize("chains", ["ALL", "ACTIVE"])
def test_build_rig_unmutes_the_one_rig_a_bake_of_one_chain_muted_on_an_overridden_character(blender, tmp_path,
                                                                                               chains):
    """An overridden character whose arms were built in the library: the animator bakes one arm (Bake Active), which
    mutes its rig, then presses Build Rig (every chain, the default) as the README says to bring the rig back. It was
    refused as a build of the library's bones, because the other arm's rig was not muted."""
    bpy = blender
    from blender_ik_addon import ops
    obj, targets = arm_and_chain_beside(bpy)
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    hero = override_character(bpy, tmp_path / "hero.blend", [obj, *targets])
    hero.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=3, chains="ACTIVE") == {"FINISHED"}
    first, second = hero.blender_ik.chains
    assert (ops.rig_state(hero, first), ops.rig_state(hero, second)) == ("MUTED", "BUILT")
    assert bpy.ops.blender_ik.build_rig(chains=chains) == {"FINISHED"}
    assert (ops.rig_state(hero, first), ops.rig_state(hero, second)) == ("BUILT", "BUILT")
    goals = [first.target, second.target]
    for goal in goals:
        goal.location.x -= 0.1  # both rigs pose their chains, the keys under the first
    assert max(tips_off(bpy, hero, goals)) < 1e-5
