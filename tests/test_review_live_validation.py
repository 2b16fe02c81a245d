"""Adversarial review: Live re-validates a chain only when what live._inputs calls 'validation' changes; the
armature's world matrix is in 'motion', so scaling the armature non-uniformly while Live is on skips
read_chain's armature-scale refusal (README: 'A non-uniformly scaled armature ... Refused'). Live keeps
posing, the read-out says 'out of reach' with a miss that is not the one Blender shows, and Solve on the
same state refuses. Expected to FAIL on the reviewed code."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest
from mathutils import Vector

from rigs import readout
from test_chains import body_with_chains


@pytest.mark.parametrize("scale", [(1.3, 1.3, 1.6), (0.0, 0.0, 0.0)])
def test_review_live_refuses_a_non_uniformly_scaled_armature_as_solve_does(blender, scale):
    bpy = blender
    obj = body_with_chains(bpy, ["hand.L"])
    chain_settings = obj.blender_ik.chains[0]
    chain_settings.live = True
    chain_settings.target.location += Vector((0.0, -0.02, 0.02))
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert readout(obj, "hand.L").status == "REACHED"
    obj.scale = scale
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    status = readout(obj, "hand.L")
    assert status.status == "ERROR" and "scale" in status.message, status
