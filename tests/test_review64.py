"""Review 64: the goals read again once Blender shows the pose (chain.verify_goals), Build Rig's refusal of goals on
deformed geometry, the per-frame sweep through simulations; as an animator, a rigger and a TD would meet them."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from rigs import arm_with_chain, readout


def _tip_off(bpy, obj, target):
    """How far the chain's tip is from its target, as Blender evaluates them."""
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


@pytest.mark.parametrize("handlers", ["depsgraph_update_post", "frame_change_post"])
def test_live_follows_a_target_another_handler_snaps_without_an_error(blender, handlers):
    """Another add-on's handler, run before Live's, snaps the target to a 10 cm grid: Blender evaluates that move with
    the pose Live makes, so the target moved while Live posed the chain, but not because of the chain. Live refused it as
    'moves when the chain is posed' (a target on the skin), put the pose back and left the tip 20 cm off the snapped
    target with that error in the read-out; it must follow the target there, as it did before the goals were read
    again."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target

    def snap(scene, depsgraph=None):
        snapped = tuple(round(value * 10.0) / 10.0 for value in target.location)
        if tuple(target.location) != snapped:
            target.location = snapped

    handler_list = getattr(bpy.app.handlers, handlers)
    handler_list.insert(0, snap)
    try:
        chain.live = True
        bpy.context.view_layer.update()
        for step in range(3):
            target.location.x += 0.233
            if handlers == "frame_change_post":
                bpy.context.scene.frame_set(step + 2)
            else:
                bpy.context.view_layer.update()
            assert target.matrix_world.translation.x == pytest.approx(0.9 + 0.2 * (step + 1), abs=1e-6)
            assert readout(obj).status != "ERROR", readout(obj).message
            assert _tip_off(bpy, obj, target) < 1e-5, step
    finally:
        handler_list.remove(snap)
