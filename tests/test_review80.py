"""Review 80: an animator and a TD baking characters whose chains' goals follow geometry the rig deforms, after Bake
All began baking such chains after the others of their level (commit 4b7537e)."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import add_empty, arm_and_chain_beside, bone_chain, hang_on_hooked_cuff, key_x, tips_off


def beside_with_finger(bpy):
    """rigs.arm_and_chain_beside with a finger chain 'F' (F1 > F2 > F3) below A's hand b3, reaching for a still Empty
    TF. Returns (object, (TA, TB, TF))."""
    from mathutils import Vector
    obj, targets = arm_and_chain_beside(bpy)
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    bone_chain(edit_bones, edit_bones["b3"], "F", [(0.0, 0.0, 0.12), (0.06, 0.0, 0.08), (0.06, 0.0, 0.0)])
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.blender_ik.active_chain_index = obj.blender_ik.chains.find("A")
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    tip = obj.matrix_world @ obj.pose.bones["F3"].tail
    finger_target = add_empty("TF", location=tip + Vector((0.03, 0.02, -0.05)))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "F", "F3", finger_target
    bpy.context.view_layer.update()
    return obj, (*targets, finger_target)


@pytest.mark.parametrize("listed", ["ABF", "BFA", "FBA"])
@pytest.mark.parametrize("current", [1, 10])
def test_bake_all_plays_a_chain_on_a_cuff_a_finger_below_the_other_hand_shapes(blender, current, listed):
    """B's target hangs from a cuff that a Hook on the finger F3 shapes, F being a chain below A's hand: after Solve
    All, Bake All said "all in reach" while B played up to 25 cm off its target. B, whose goal follows geometry the
    armature deforms, is baked after the others of its level (A), but F comes in the level below, after it: B's goal
    was read on F's old keys, and with no round after the first pass (one such chain), the self-check's frame, where
    F's new keys are its solved pose, showed nothing. Every frame now plays the three tips on their targets."""
    bpy = blender
    obj, targets = beside_with_finger(bpy)
    chains, scene = obj.blender_ik.chains, bpy.context.scene
    for place, name in enumerate(listed):
        chains.move(chains.find(name), place)
    key_x(targets[0], ((1, 0.9), (10, 0.75)))
    hang_on_hooked_cuff(bpy, obj, targets[1], "F3")
    scene.frame_set(current)
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    moved = []
    for frame in range(1, 11):
        scene.frame_set(frame)
        off = tips_off(bpy, obj, targets, ("b3", "c3", "F3"))
        assert max(off) < 1e-5, (frame, off)
        moved.append(targets[1].matrix_world.translation.copy())
    assert (moved[0] - moved[-1]).length > 0.05  # the cuff carried B's target
