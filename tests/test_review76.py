"""Review 76: an animator dragging one hand of a character with several live chains, whose other chains follow it."""
import bpy  # noqa: F401  (mathutils comes with bpy)

from rigs import beside_on_cuff, readout, tips_off


def test_a_live_chain_whose_target_hangs_on_skin_the_dragged_hand_shapes_follows_it(blender):
    """B's target hung from a vertex of a cuff that the arm's hand bone b3 shapes (a Hook modifier on b3): dragging the
    arm's target moves B's target once the arm is posed, inside Live's own update. B was left behind
    every other update, 1.9 cm off its target while its read-out said reached: Live solved with a dragged chain the idle
    chains hanging below it or following it by constraints and drivers, not those following it through geometry."""
    bpy = blender
    obj, targets = beside_on_cuff(bpy)
    for chain in obj.blender_ik.chains:
        chain.live = True
    bpy.context.view_layer.update()
    start = targets[1].matrix_world.translation.copy()
    for step in range(4):
        targets[0].location.x -= 0.02
        bpy.context.view_layer.update()
        off = tips_off(bpy, obj, targets)
        assert max(off) < 1e-5, (step, off, readout(obj, "B"))
        assert readout(obj, "B").status == "REACHED"
    assert (targets[1].matrix_world.translation - start).length > 0.01  # the cuff moved B's target
