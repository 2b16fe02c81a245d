"""Review 81: a rigger on Rigify's human metarig, Live on several chains, then Build Rig and Remove Rig."""
import pytest

from rigs import tips_off
from test_chains import select_tips


def _live_metarig(bpy, tips=("hand.L", "foot.L")):
    """Rigify's human metarig with Chains from Selected on ``tips``, every chain live and on its target."""
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    select_tips(bpy, obj, list(tips))
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    for chain in obj.blender_ik.chains:
        chain.live = True
    return obj


@pytest.mark.parametrize("which", ["ALL", "ACTIVE"])
def test_build_rig_says_it_turned_live_off(blender, capfd, which):
    """Build Rig turned Live off on the chains it built and said only "Blender evaluates them without the add-on":
    after Remove Rig the chains no longer followed their targets (2.4 cm off after a 2.4 cm move, with no word why).
    The report now names them, as a bake's does."""
    bpy = blender
    obj = _live_metarig(bpy)
    capfd.readouterr()
    assert bpy.ops.blender_ik.build_rig(chains=which) == {"FINISHED"}
    report = capfd.readouterr().out
    built = [chain.name for chain in obj.blender_ik.chains if chain.rig_name]
    assert not any(chain.live for chain in obj.blender_ik.chains if chain.rig_name)
    assert f"Live turned off on {', '.join(built)}" in report
    assert bpy.ops.blender_ik.remove_rig() == {"FINISHED"}
    targets = [chain.target for chain in obj.blender_ik.chains]
    for target in targets:
        target.location.y -= 0.024
    off = tips_off(bpy, obj, targets, [chain.tip_bone for chain in obj.blender_ik.chains])
    live = [chain.live for chain in obj.blender_ik.chains]
    # what the user was told matches what Blender shows: the live chains follow, the others were named
    assert all(distance < 1e-5 for distance, is_live in zip(off, live) if is_live)
    assert [chain.name for chain, is_live in zip(obj.blender_ik.chains, live) if not is_live] == built
