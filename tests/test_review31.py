"""Review 31: a long session (an animator who keeps Blender open all day, a farm that runs for weeks): state the add-on
keeps between calls must not outlive what it describes, nor grow with every armature or chain ever made."""
import pytest

from rigs import arm_with_chain, readout


@pytest.mark.parametrize("last", ["solved", "error"])
def test_a_chain_added_again_under_a_removed_ones_name_is_not_solved_yet(blender, last):
    """Remove a chain and add one on the same bone: the panel showed the removed chain's read-out for the new one (its
    error message, or "Last solve: target reached" for a chain never solved), since read-outs are kept by chain name."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    if last == "error":
        chain.target = None
        chain.live = True  # its read-out: "Set the target"
    else:
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert readout(obj, "arm") is not None
    assert bpy.ops.blender_ik.chain_remove() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="POSE")
    obj.data.bones.active = obj.data.bones["b3"]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    obj.blender_ik.chains[0].name = "arm"
    assert readout(obj, obj.blender_ik.chains[0].name) is None


@pytest.mark.parametrize("gone", ["armature deleted", "chain renamed"])
def test_state_of_what_is_gone_does_not_pile_up(blender, gone):
    """An armature made, solved and deleted (or a chain renamed and solved) 600 times in one session: the add-on kept
    the read-out (3.7 kB) of each one for the whole session."""
    bpy = blender
    from blender_ik_addon import runtime
    obj, chain = arm_with_chain(bpy)
    for index in range(600):
        if gone == "chain renamed":
            chain.name = f"arm{index}"
        else:
            obj, chain = arm_with_chain(bpy)
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        assert readout(obj, chain.name).status == "REACHED"
        if gone == "armature deleted":
            target, data = chain.target, obj.data
            bpy.data.objects.remove(obj)
            bpy.data.armatures.remove(data)
            bpy.data.objects.remove(target)
    assert len(runtime._readouts) <= 300
