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


def _copies(owner, target, subtarget=""):
    """``owner`` copies the location of ``target`` (its bone ``subtarget``) by a Copy Location."""
    constraint = owner.constraints.new("COPY_LOCATION")
    constraint.target, constraint.subtarget = target, subtarget
    return constraint


def _pin_helper_to_the_elbow(bpy, obj, helper, middle):
    _copies(helper, obj, "b2")


def _parent_helper_to_the_elbow(bpy, obj, helper, middle):
    helper.parent, helper.parent_type, helper.parent_bone = obj, "BONE", "b2"


@pytest.mark.parametrize("coupling", [_pin_helper_to_the_elbow, _parent_helper_to_the_elbow],
                         ids=["constraint-added", "reparented"])
def test_live_notices_a_goal_coupled_to_the_chain_two_steps_away_after_it_validated(blender, coupling):
    """The target copies an Empty (Copy Location), which copies a helper Empty: Live validates the chain and follows.
    Then the helper, two steps away, is pinned to the chain's own elbow (a Copy Location added to it) or parented to
    it: the target now moves with the chain. Live kept the chain validated (it compared the target's own constraints
    and parents only) and chased the target, update after update, reporting it reached; Solve refused it."""
    from rigs import add_empty, arm_with_chain, pose_snapshot
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    far, middle = add_empty("Far", location=target.location), add_empty("Middle", location=target.location)
    _copies(middle, far)
    _copies(target, middle)
    chain.live = True
    far.location.x += 0.02
    bpy.context.view_layer.update()
    assert readout(obj, "arm").status == "REACHED"
    coupling(bpy, obj, far, middle)
    bpy.context.view_layer.update()
    pose = pose_snapshot(obj)
    for step in range(3):
        bpy.context.view_layer.update()
        far.location.x += 0.01
        bpy.context.view_layer.update()
        status = readout(obj, "arm")
        assert status.status == "ERROR" and "moves with the chain" in status.message, (step, status)
    assert pose_snapshot(obj) == pose
    with pytest.raises(RuntimeError, match="moves with the chain"):
        bpy.ops.blender_ik.solve(chains="ALL")
