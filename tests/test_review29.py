"""Review 29: Live beside other tools (another add-on's handlers, habits of an animator)."""
import pytest

from rigs import arm_with_chain


def _tip_off(bpy, obj, target):
    """How far the chain's tip is from its target, as Blender evaluates them."""
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


@pytest.mark.parametrize("handlers", ["depsgraph_update_post", "frame_change_post"])
def test_live_follows_a_target_another_handler_moved_before_it(blender, handlers):
    """Another add-on's handler, run before Live's, moves the target (snaps it to a grid; places it for the frame):
    Blender evaluates that move inside the same update, calling no handler again, so Live must follow it there."""
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
        for step in range(3):
            target.location.x += 0.033
            if handlers == "frame_change_post":
                bpy.context.scene.frame_set(step + 2)
            else:
                bpy.context.view_layer.update()
            assert tuple(target.matrix_world.translation) == pytest.approx((0.9, 0.3, 1.1), abs=1e-6)
            assert _tip_off(bpy, obj, target) < 1e-5, step
    finally:
        handler_list.remove(snap)
