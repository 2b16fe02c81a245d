"""Review 37: a studio moving a show from Blender 4.2 LTS to 5.2 LTS (built rigs, overrides, files across versions)."""
import pytest

from rigs import arm_with_chain


@pytest.mark.parametrize("stale", [False, True])
def test_build_rig_unmutes_an_overridden_characters_rig_after_a_bake(blender, tmp_path, stale):
    """A character rigged (Build Rig) in its library file, linked into a shot and overridden: the bake mutes the rig so
    the keys show and said "(Build Rig unmutes)", but Build Rig there was refused (the bones are the library's) and so
    was Remove Rig: nothing in the add-on brought the rig back. Build Rig unmutes it now, checked as a build is, and
    the chain follows its target again; a rig out of date stays muted, saying to rebuild it in the library."""
    bpy = blender
    from blender_ik_addon import ops
    from rigs import override_character, tips_off
    obj, chain = arm_with_chain(bpy)
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    hero = override_character(bpy, tmp_path / "hero.blend", [obj, chain.target])
    result = ops.bake_armature(bpy.context.scene, hero, frame_start=1, frame_end=3)
    assert result.rigs_muted == ["arm"] and "Build Rig unmutes it; the rig is the library's" in result.summary()
    settings = hero.blender_ik.chains[0]
    assert ops.rig_state(hero, settings) == "MUTED"
    target = settings.target
    if stale:
        settings.up_axis = "X"  # the rig encodes the up axis: out of date
        with pytest.raises(RuntimeError, match="out of date .* rebuild it in the library file; it stays muted"):
            bpy.ops.blender_ik.build_rig()
        assert ops.rig_state(hero, settings) == "MUTED"
        return
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert ops.rig_state(hero, settings) == "BUILT"
    target.location.x -= 0.1  # the rig poses the chain, the keys under it
    assert tips_off(bpy, hero, [target], ("b3",))[0] < 1e-5
