"""Review 36: the features together on one character (a rigger and an animator using everything): Chains from
Selected, Mirror Chain, Place Pole, Live, Build Rig, Bake and undo, judged by what Blender evaluates."""
import pytest

from test_chains import body_with_chains


def _activate(obj, name):
    obj.blender_ik.active_chain_index = [chain.name for chain in obj.blender_ik.chains].index(name)


def _tip_to(bpy, obj, tip, goal):
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones[tip].tail - goal).length


@pytest.mark.parametrize("rebuild", ["ALL", "ACTIVE"])
def test_build_rig_keeps_the_rig_whose_helper_bone_another_chain_targets(blender, rebuild):
    """foot.R reaches for a helper bone of foot.L's built rig (IKR-foot.L-tip, where the rig puts the foot's tip).
    Build Rig on every chain removed foot.L's rig (its helpers, constraints and drivers), then refused ('The target
    'Body' has no bone named 'IKR-foot.L-tip''): the working rig lost. Rebuilding foot.L alone with foot.R's rig built
    reported success, and foot.R's rig followed nothing (Blender clears a constraint's deleted bone). Both are refused
    now, before anything changes."""
    from blender_ik_addon import native_rig
    from blender_ik_addon.ops import rig_state
    bpy = blender
    obj = body_with_chains(bpy, ("foot.L", "foot.R"))
    chains = obj.blender_ik.chains
    _activate(obj, "foot.L")
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    chains["foot.R"].target, chains["foot.R"].target_bone = obj, "IKR-foot.L-tip"
    if rebuild == "ACTIVE":  # foot.R's rig follows the helper; foot.L's is rebuilt alone
        _activate(obj, "foot.R")
        assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
        _activate(obj, "foot.L")
    states = [rig_state(obj, chain) for chain in chains]
    helpers = native_rig.helper_bones(obj, "foot.L")
    with pytest.raises(RuntimeError, match="'IKR-foot.L-tip' is a helper bone of the rig of chain 'foot.L'"):
        bpy.ops.blender_ik.build_rig(chains=rebuild)
    assert [rig_state(obj, chain) for chain in chains] == states
    assert helpers <= set(obj.data.bones.keys())
    target = chains["foot.L"].target
    target.location.z += 0.05
    target.location.y -= 0.05
    assert _tip_to(bpy, obj, "foot.L", target.matrix_world.translation) < 1e-5  # foot.L's rig still poses it
    if rebuild == "ACTIVE":  # and foot.R's still follows the helper
        assert _tip_to(bpy, obj, "foot.R", obj.matrix_world @ obj.pose.bones["IKR-foot.L-tip"].head) < 1e-5
