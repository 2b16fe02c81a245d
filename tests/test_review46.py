"""Review 46: the panel, the menus and every operator's availability (an artist clicking everything, in every mode)."""
import pytest

from rigs import arm_with_chain


@pytest.mark.parametrize("direction", ["UP", "DOWN"])
def test_the_arrows_move_the_chain_the_panel_shows_as_active_when_the_index_is_past_the_end(blender, direction):
    """A script that removes the last chains (``chains.remove(i)``) leaves the list's index past the end; the panel then
    shows the last chain's settings as the active chain's, and Remove Chain removes that one, but the up arrow did
    nothing (it moved from the index, not from the chain the panel shows)."""
    bpy = blender
    obj, _ = arm_with_chain(bpy)
    chains = obj.blender_ik.chains
    for name in ("second", "third", "fourth"):
        chains.add().name = name
    chains.remove(3)  # a script's clean-up: the index stays where it was
    obj.blender_ik.active_chain_index = 3
    assert obj.blender_ik.active_chain.name == "third"
    result = bpy.ops.blender_ik.chain_move(direction=direction)
    names = [chain.name for chain in chains]
    if direction == "UP":
        assert result == {"FINISHED"} and names == ["arm", "third", "second"]
        assert obj.blender_ik.active_chain.name == "third"
    else:  # the last chain: nowhere to go, as in Blender's own lists
        assert result == {"CANCELLED"} and names == ["arm", "second", "third"]
