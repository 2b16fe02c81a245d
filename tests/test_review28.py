"""Review 28: the bake's options (an animator who bakes and then keeps animating on top), judged by the keys played
back with frame_set."""
import pytest

from rigs import arm_with_chain


@pytest.mark.parametrize("interpolation", ["LINEAR", "BEZIER", "CONSTANT"])
@pytest.mark.parametrize("after", [False, True])
def test_a_stepped_bake_keys_the_last_frame_of_its_range(blender, interpolation, after):
    """Frames 1-20 with step 3 keyed 1, 4, ... 19 only and removed any key at 20: the range's last frame played the
    pose of 19 (or a blend toward the animator's next key), its tip off the moving target."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    for frame, x in ((1, 0.9), (20, 0.5)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    if after:  # the animator's own key past the range, and one at its end that the bake replaces
        for frame in (20, 30):
            obj.pose.bones["b2"].keyframe_insert("rotation_quaternion", frame=frame)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=20, step=3, interpolation=interpolation) == {"FINISHED"}
    bpy.context.scene.frame_set(20)
    tip = obj.matrix_world @ obj.pose.bones["b3"].tail
    assert (tip - target.matrix_world.translation).length < 1e-5 * 2.2
