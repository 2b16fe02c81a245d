"""Adversarial review: smaller inconsistencies. Expected to FAIL on the reviewed code."""
import types

import bpy  # noqa: F401
import pytest

from test_chains import body_with_chains


def test_review_bake_named_chains_does_not_depend_on_other_chains_being_enabled(blender):
    """bake_armature(names=[...]) (and bake_ik.py --chain) bakes a disabled chain when it is named, as long as
    some other chain is enabled; once none is, the same call is refused with 'has no enabled chain'
    (ops.bake_armature calls _chain_settings(armature, which) before looking at names)."""
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj = body_with_chains(bpy)
    chains = obj.blender_ik.chains
    chains["foot.L"].enabled = False
    assert bake_armature(bpy.context.scene, obj, names=["foot.L"], frame_start=1, frame_end=3).chains
    chains["hand.L"].enabled = False
    assert bake_armature(bpy.context.scene, obj, names=["foot.L"], frame_start=1, frame_end=3).chains


class _Layout:
    """Stands in for a UILayout: accepts every call, returns another stand-in."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: _Layout()


@pytest.mark.parametrize("record", ["not json", "[1, 2]", 5])
def test_review_panel_draws_with_a_damaged_rig_record(blender, record):
    """The built rig's record is a plain custom property of the object (Object > Custom Properties), which a
    user or a pipeline tool can edit. native_rig._record does json.loads on it unguarded, so the panel's
    draw, the list's rows (ops.rig_state) and every operator raise."""
    bpy = blender
    from blender_ik_addon import ui
    obj = body_with_chains(bpy, ("hand.L",))
    obj["blender_ik_rig"] = record
    context = bpy.context
    ui.VIEW3D_PT_blender_ik.draw(types.SimpleNamespace(layout=_Layout()), context)
    ui.BLENDER_IK_UL_chains.draw_item(None, context, _Layout(), obj.blender_ik, obj.blender_ik.chains[0], 0,
                                      obj.blender_ik, "active_chain_index", 0)
    try:
        bpy.ops.blender_ik.solve()
    except RuntimeError as error:
        assert "Traceback" not in str(error), str(error)


@pytest.mark.parametrize("rename", ["target", "armature"])
def test_review_renaming_the_target_or_armature_does_not_make_the_rig_out_of_date(blender, rename):
    """ops.rig_signature records the goals by object name, so renaming the target Empty makes the panel say
    'Rig out of date ...: Build Rig again' although the rig's constraints follow the object, not its name.
    (Renaming the armature is fine: it passes.)"""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj = body_with_chains(bpy, ("hand.L",))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    chain_settings = obj.blender_ik.chains[0]
    assert rig_state(obj, chain_settings) == "BUILT"
    (chain_settings.target if rename == "target" else obj).name = "Renamed"
    assert rig_state(obj, chain_settings) == "BUILT"
