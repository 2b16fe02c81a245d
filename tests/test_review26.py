"""Review 26: a rigger still fixing the skeleton (Edit Mode, Apply Pose as Rest) under chains that are live, built,
baked or just solved."""
import pytest

from rigs import arm_with_chain, tip_and_direction


def tip_off(bpy, obj, chain):
    import numpy as np
    bpy.context.view_layer.update()
    tip, _ = tip_and_direction(obj, chain.tip_bone)
    return float(np.linalg.norm(tip - np.array(chain.target.matrix_world.translation)))


@pytest.mark.parametrize("bone, where", [("b3", "outliner"), ("b3", "edit mode"), ("b1", "outliner"),
                                         ("b2", "edit mode")])
def test_renaming_a_chain_bone_leaves_its_built_rig_up_to_date(blender, bone, where):
    """The README: the panel says a rig is out of date when a setting, a goal or the rest pose changed; 'renaming the
    goals, the chain or its bones does not matter'. A rename of a chain bone said 'Rig out of date' all the same."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj, chain = arm_with_chain(bpy)
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert rig_state(obj, chain) == "BUILT"
    if where == "outliner":
        obj.data.bones[bone].name = "renamed"
    else:
        bpy.ops.object.mode_set(mode="EDIT")
        obj.data.edit_bones[bone].name = "renamed"
        bpy.ops.object.mode_set(mode="OBJECT")
    assert tip_off(bpy, obj, chain) < 1e-6  # Blender still evaluates the rig on the renamed bones
    assert rig_state(obj, chain) == "BUILT"


def test_a_rig_on_other_bones_at_the_same_place_is_out_of_date(blender):
    """The other side of the rename: the chain's tip set to another bone at the very same place (a stacked DEF-
    bone) leaves the rig on the old bones, which is out of date, though the rest geometry is the same."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj, chain = arm_with_chain(bpy)
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    parent = edit_bones["root"]
    for name in ("b1", "b2", "b3"):
        copy = edit_bones.new("DEF-" + name)
        copy.head, copy.tail, copy.roll = edit_bones[name].head, edit_bones[name].tail, edit_bones[name].roll
        copy.parent, copy.use_connect = parent, True
        parent = copy
    bpy.ops.object.mode_set(mode="OBJECT")
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    chain.tip_bone = "DEF-b3"
    assert rig_state(obj, chain) == "STALE"
