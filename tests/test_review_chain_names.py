"""Adversarial review: a chain's name is the key of its built rig, its Live state and its read-out, but the
list lets the user rename a chain (double-click) to anything, a duplicate included. These tests are
expected to FAIL on the reviewed code: each is a minimal reproduction of a real bug."""
import json

import numpy as np
import bpy  # noqa: F401  (mathutils comes with bpy)
from mathutils import Vector

from test_chains import body_with_chains



def tip_miss(bpy, obj, tip, goal):
    bpy.context.view_layer.update()
    tail = obj.matrix_world @ obj.pose.bones[tip].tail
    return float(np.linalg.norm(np.array(tail - goal.matrix_world.translation)))


def helper_leftovers(obj):
    bones = [bone.name for bone in obj.data.bones if bone.name.startswith("IKR-")]
    constraints = [(pb.name, c.name) for pb in obj.pose.bones for c in pb.constraints if c.name.startswith("IKR")]
    return bones, constraints


def test_review_renaming_a_chain_with_a_built_rig_keeps_remove_rig_working(blender):
    """README: the name is editable ('double-click to rename'), and 'Remove Rig deletes every bone,
    constraint, driver and property it added'. After a rename, the rig is keyed by the old name
    (native_rig RECORD, ops.rig_state/_built_settings by chain_settings.name): the panel shows no rig,
    Remove Rig says there is none, and Solve / Build Rig refuse the rig's own constraints."""
    bpy = blender
    obj = body_with_chains(bpy, ("hand.L",))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    obj.blender_ik.chains[0].name = "Left Arm"
    from blender_ik_addon.ops import rig_state
    assert rig_state(obj, obj.blender_ik.chains[0]) != "NONE", "the panel no longer shows the chain's rig"
    assert bpy.ops.blender_ik.remove_rig(chains="ALL") == {"FINISHED"}
    assert helper_leftovers(obj) == ([], [])


def test_review_renaming_a_chain_with_a_built_rig_lets_it_be_rebuilt(blender):
    bpy = blender
    obj = body_with_chains(bpy, ("hand.L",))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    obj.blender_ik.chains[0].name = "Left Arm"
    # Refused today: "Bone 'upper_arm.L' has constraints (IKR hand.L) ... (this add-on replaces an IK constraint)"
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}


def test_review_two_chains_with_one_name_both_get_a_rig(blender):
    """Two chains renamed to the same name: Build Rig reports 'Built the rig of hand.L, hand.L', but the
    second build removes the first (native_rig.remove(armature, spec.label) in ops.build_rig), so the arm
    no longer follows its target while the panel shows it as built."""
    bpy = blender
    obj = body_with_chains(bpy)
    obj.blender_ik.chains[1].name = obj.blender_ik.chains[0].name
    result = None
    try:
        result = bpy.ops.blender_ik.build_rig(chains="ALL")
    except RuntimeError:
        pass  # a clear refusal of the duplicate name would be acceptable
    if result == {"FINISHED"}:
        hand, foot = bpy.data.objects["hand.L_target"], bpy.data.objects["foot.L_target"]
        hand.location += Vector((0.0, -0.1, 0.1))
        foot.location += Vector((0.0, -0.1, 0.1))
        assert tip_miss(bpy, obj, "foot.L", foot) < 1e-5
        assert tip_miss(bpy, obj, "hand.L", hand) < 1e-5, "the first chain's rig was silently replaced"
    else:
        assert helper_leftovers(obj) == ([], [])


def test_review_two_live_chains_with_one_name_do_not_resolve_on_every_update(blender):
    """Live keys its cache by (armature name, chain name) (live._last_inputs): two chains with one name
    overwrite each other's inputs, so every depsgraph update re-solves and re-poses both; in the UI the
    update that posing triggers runs the handler again: a loop that never settles. The read-out of one
    chain shows the other's angles."""
    bpy = blender
    from blender_ik_addon import live
    obj = body_with_chains(bpy)
    obj.blender_ik.chains[1].name = obj.blender_ik.chains[0].name
    for chain_settings in obj.blender_ik.chains:
        chain_settings.live = True
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    solves = []
    original = live.solve_current
    live.solve_current = lambda *args, **kwargs: solves.append(1) or original(*args, **kwargs)
    try:
        for _ in range(5):
            obj.pose.bones["hips"].location.x += 0.0  # an update that moves nothing
            bpy.context.view_layer.update()
    finally:
        live.solve_current = original
    assert not solves, f"{len(solves)} solves in 5 updates where nothing moved"


def test_review_rebuilding_a_stale_rig_after_a_chain_bone_rename(blender):
    """The panel says 'Rig out of date ...: Build Rig again' after a chain bone is renamed, but Build Rig
    then refuses the rig's own constraints (the record holds the old bone name, so _MutedRigs does not mute
    them), with a message that blames an IK constraint instead of pointing at Remove Rig."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    obj = body_with_chains(bpy, ("hand.L",))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    obj.data.bones["forearm.L"].name = "lowerarm.L"
    # A rename does not make the rig out of date (README); rebuilding it still works.
    assert rig_state(obj, obj.blender_ik.chains[0]) == "BUILT"
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    hand = bpy.data.objects["hand.L_target"]
    hand.location += Vector((0.0, -0.1, 0.1))
    assert tip_miss(bpy, obj, "hand.L", hand) < 1e-5
    record = json.loads(obj["blender_ik_rig"])
    assert list(record) == ["hand.L"]


def test_review_removing_a_chain_with_a_built_rig_leaves_no_orphan_rig(blender):
    """README: '-' removes the active chain (its bones keep their pose and keys, its target stays). With a
    built rig, chain_remove drops the settings but not the rig (ops.BLENDER_IK_OT_chain_remove never calls
    native_rig.remove): the helper bones and Copy Transforms stay, no chain in the list owns them, and
    Remove Rig cannot reach them."""
    bpy = blender
    obj = body_with_chains(bpy, ("hand.L", "foot.L"))
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    obj.blender_ik.active_chain_index = 0
    assert bpy.ops.blender_ik.chain_remove() == {"FINISHED"}
    assert bpy.ops.blender_ik.remove_rig(chains="ALL") == {"FINISHED"}
    assert helper_leftovers(obj) == ([], []), "the removed chain's rig is left driving its bones"
