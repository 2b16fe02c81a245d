"""Adversarial review: operators on a chain whose rig is built. Expected to FAIL on the reviewed code: Mirror
Chain, Place Pole and Add Target read the chain with read_chain, which refuses the rig's own Copy Transforms
constraints with the message meant for a leftover IK constraint (chain._read_chain: 'mute or remove them
(this add-on replaces an IK constraint)'), without the chain's name and without pointing at Remove Rig."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import numpy as np
import pytest

from test_chains import body_with_chains


def built_arm(bpy):
    obj = body_with_chains(bpy, ["hand.L"])
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    return obj


@pytest.mark.parametrize("operator", ["chain_mirror", "place_pole", "add_target"])
def test_review_set_up_operators_work_on_a_chain_with_a_built_rig(blender, operator):
    """A rigger builds the left arm's rig, then mirrors it (or places its pole, or gives it a new target)."""
    bpy = blender
    built_arm(bpy)
    try:
        result = getattr(bpy.ops.blender_ik, operator)()
    except RuntimeError as error:
        message = str(error)
        assert "Chain 'hand.L'" in message and "Remove Rig" in message, f"refusal without the chain or the fix: {message}"
        return
    assert result == {"FINISHED"}


def test_review_place_pole_on_a_built_chain_keeps_the_arm_still(blender):
    """README: Place Pole '... switches the chain to Pole mode: the chain does not move' (here, once rebuilt)."""
    bpy = blender
    obj = built_arm(bpy)
    target = bpy.data.objects["hand.L_target"]
    target.location.y -= 0.1
    target.location.z += 0.1
    bpy.context.view_layer.update()
    before = [np.array(obj.matrix_world @ obj.pose.bones[name].head) for name in ("upper_arm.L", "forearm.L", "hand.L")]
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    bpy.context.view_layer.update()
    after = [np.array(obj.matrix_world @ obj.pose.bones[name].head) for name in ("upper_arm.L", "forearm.L", "hand.L")]
    assert max(np.linalg.norm(a - b) for a, b in zip(after, before)) < 1e-5
