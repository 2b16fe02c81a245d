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


@pytest.mark.parametrize("goal", ["control bone", "empty on a bone"])
@pytest.mark.parametrize("then", ["rebuild", "bake"])
def test_a_built_chain_whose_target_is_on_its_own_armature_rebuilds_and_bakes(blender, goal, then):
    """hand.L reaches for a control bone of its own armature (or an Empty parented to its hips bone), its rig built.
    Rebuild Rig and Bake were refused ('The target 'Body' bone 'hand_ctrl.L' moves with the chain: the driver on
    'pose.bones["IKR-hand.L-base"].location' of 'Body' reads chain bone 'upper_arm.L''): the check of what moves a goal
    took every driver of the armature object, its bones' included, for drivers of the object, so the rig's own drivers
    counted as moving the hips and the control bone. Now the bones' drivers count for the goal's bone, its parent bones
    and the bone an object hangs from, and both work."""
    from blender_ik_addon.ops import rig_state
    from test_chains import build_body, select_tips
    bpy = blender
    obj = build_body(bpy, control=True)
    select_tips(bpy, obj, ["hand.L"])
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chain = obj.blender_ik.chains["hand.L"]
    if goal == "control bone":
        chain.target, chain.target_bone = obj, "hand_ctrl.L"
        mover, path = obj.pose.bones["hand_ctrl.L"], "location"
    else:
        empty = chain.target
        world = empty.matrix_world.copy()
        empty.parent, empty.parent_type, empty.parent_bone = obj, "BONE", "hips"
        bpy.context.view_layer.update()
        empty.matrix_world = world
        mover, path = empty, "location"
    bpy.context.view_layer.update()

    def goal_point():
        bpy.context.view_layer.update()
        return (obj.matrix_world @ obj.pose.bones["hand_ctrl.L"].head if goal == "control bone"
                else chain.target.matrix_world.translation.copy())

    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    if then == "rebuild":
        chain.roll_axis = "X"
        assert rig_state(obj, chain) == "STALE"
        assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
        assert rig_state(obj, chain) == "BUILT"
        getattr(mover, path)[1] += 0.05
        assert _tip_to(bpy, obj, "hand.L", goal_point()) < 1e-5
        return
    mover.keyframe_insert(path, frame=1)
    getattr(mover, path)[1] += 0.05
    mover.keyframe_insert(path, frame=10)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    assert rig_state(obj, chain) == "MUTED"
    for frame in (1, 4, 10):
        bpy.context.scene.frame_set(frame)
        assert _tip_to(bpy, obj, "hand.L", goal_point()) < 1e-5
