"""Review 62: a fuzzer (a random user let loose on the add-on), its findings shrunk to the fewest steps, judged by what
Blender evaluates."""
import pytest

from rigs import arm_with_chain, pose_snapshot


def test_a_refused_bake_leaves_a_live_chain_with_a_built_rig_as_it_was(blender):
    """A live chain with a built rig, and Bake All refused for another chain: the bake had muted the rig while it
    checked the chains, and Live posed the chain's own channels meanwhile, so after the refusal ('nothing changed')
    its rotations were the solve's and Remove Rig showed the arm posed, not as the user had left it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    chain.live = True
    other = obj.blender_ik.chains.add()  # no target: the bake refuses it
    other.name, other.tip_bone = "other", "b2"
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=3)
    bpy.context.view_layer.update()
    assert pose_snapshot(obj) == before
    obj.blender_ik.chains.remove(1)
    chain.live = False
    assert bpy.ops.blender_ik.remove_rig() == {"FINISHED"}
    bpy.context.view_layer.update()
    assert (obj.pose.bones["b3"].tail - obj.data.bones["b3"].tail_local).length < 1e-6
