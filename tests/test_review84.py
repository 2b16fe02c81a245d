"""Review 84: Live on chains below chains across two live armatures (a character's hand and fingers, a prop rig it
holds with a chain below a chain of its own), judged by what Blender shows. No defect found; kept as a regression test
of the levels told from the poses above (tests/test_live_levels.py) meeting the passes across armatures."""
import pytest

from rigs import bone_chain, readout
from test_chains import select_tips
from test_live_levels import FINGERS, _drag, _free, _hand_and_fingers


def _prop_in_hand(bpy, obj, how):
    """A prop armature at the hand, parented to it (``how`` "parent") or held by a Child Of ("child of"), with live
    chains p1-p3 and q1-q3 below p3 (Chains from Selected), each target drawn a tenth of the way in toward its base, q's
    under p's."""
    prop = bpy.data.objects.new("Prop", bpy.data.armatures.new("Prop"))
    bpy.context.scene.collection.objects.link(prop)
    bpy.context.view_layer.objects.active = prop
    bpy.ops.object.mode_set(mode="EDIT")
    bones = prop.data.edit_bones
    root = bones.new("root")
    root.head, root.tail = (0.0, 0.0, 0.0), (0.0, 0.0, 0.05)
    bone_chain(bones, root, "p", [(0.05, 0.0, 0.02), (0.05, 0.0, -0.02), (0.04, 0.0, 0.01)])
    bone_chain(bones, bones["p3"], "q", [(0.0, 0.04, 0.01), (0.0, 0.04, -0.01), (0.0, 0.03, 0.01)])
    bpy.ops.object.mode_set(mode="OBJECT")
    prop.matrix_world = obj.matrix_world @ obj.pose.bones["hand.L"].matrix
    bpy.context.view_layer.update()
    if how == "parent":
        world = prop.matrix_world.copy()
        prop.parent, prop.parent_type, prop.parent_bone = obj, "BONE", "hand.L"
        prop.matrix_world = world
    else:
        constraint = prop.constraints.new("CHILD_OF")
        constraint.target, constraint.subtarget = obj, "hand.L"
    bpy.context.view_layer.update()
    select_tips(bpy, prop, ["p3", "q3"])
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    chains = {chain.tip_bone: chain for chain in prop.blender_ik.chains}
    for chain in chains.values():
        base, target = prop.matrix_world @ prop.pose.bones[chain.tip_bone].parent.parent.head, chain.target
        target.location = target.location + 0.1 * (base - target.matrix_world.translation)
    bpy.context.view_layer.update()
    chains["q3"].target.parent = chains["p3"].target
    chains["q3"].target.matrix_parent_inverse = chains["p3"].target.matrix_world.inverted()
    for chain in chains.values():
        chain.live = True
    bpy.context.view_layer.update()
    bpy.context.view_layer.objects.active = obj
    return prop, chains


def _on_targets(obj, chains):
    """Each tip where Blender shows it is where its read-out says: on its target (reached), or as far off as it reads
    (out of reach; the armatures here are unscaled, so armature-space and world distances agree)."""
    for chain in chains.values():
        miss = ((obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail) - chain.target.matrix_world.translation).length
        state = readout(obj, chain.name)
        told = {"REACHED": 0.0, "OUT_OF_REACH": state.miss}.get(state.status)
        assert told is not None and abs(miss - told) < 1e-5, (obj.name, chain.tip_bone, miss, state)


@pytest.mark.parametrize("finger_on_prop", [False, True])
@pytest.mark.parametrize("how", ["parent", "child of"])
def test_a_prop_rig_held_in_a_live_hand_keeps_every_chain_on_its_target(blender, how, finger_on_prop):
    """The hand's target dragged: the fingers follow it (bases told from the hand's pose), the prop moves with the hand
    and its two chains, one below the other, are solved again in the next pass; with ``finger_on_prop``, the index's
    target hangs from the prop's q2 (moved by the prop's pose: its level is not told; the prop's chain takes it a little
    out of reach). Every tip on its target, or as far off it as its read-out says."""
    bpy = blender
    obj, chains = _hand_and_fingers(bpy, _free)
    prop, prop_chains = _prop_in_hand(bpy, obj, how)
    if finger_on_prop:
        target = chains[FINGERS[0]].target
        world = target.matrix_world.copy()
        target.parent, target.parent_type, target.parent_bone = prop, "BONE", "q2"
        target.matrix_world = world
        bpy.context.view_layer.update()
    for step in range(4):
        _drag(bpy, chains, step)
        prop_chains["p3"].target.location.y += 0.005
        bpy.context.view_layer.update()
        _on_targets(obj, chains)
        _on_targets(prop, prop_chains)
