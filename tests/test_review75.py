"""Review 75: an animator, a rigger and a TD using Live and Solve after Live was made faster (ChainSpec a named tuple,
the read-out made when first read, the self-check on floats, a shown armature not asked again whether it is
evaluated), judged by what Blender evaluates."""
import pytest

from rigs import angle_between, arm_with_chain, axis_of, key_x, tip_and_direction


@pytest.mark.parametrize("given", ["one ChainSpec", "a list of one ChainSpec"])
def test_a_script_bakes_one_chain_given_as_its_chain_spec(blender, given):
    """A TD's ``bake.bake_chains(scene, armature, spec, ...)`` with one chain's ChainSpec: since ChainSpec is a named
    tuple, the bake took its fields for the chains and refused with "Chains to bake are given as ChainSpec values",
    which is what it was given. One ChainSpec is that chain (as one name is for ``bake_armature``): its keys play the
    tip onto the moving target on every baked frame."""
    bpy = blender
    from blender_ik_addon import bake, props
    obj, chain = arm_with_chain(bpy)
    target, scene = chain.target, bpy.context.scene
    key_x(target, ((1, 0.9), (5, 0.7)))
    spec = props.chain_spec(chain)
    result = bake.bake_chains(scene, obj, spec if given == "one ChainSpec" else [spec], 1, 5)
    assert [baked.spec.label for baked in result.chains] == ["arm"]
    for frame in range(1, 6):
        scene.frame_set(frame)
        tip, direction = tip_and_direction(obj)
        assert ((tip - target.matrix_world.translation) ** 2).sum() ** 0.5 < 1e-5
        assert angle_between(direction, axis_of(target)) < 1e-4
