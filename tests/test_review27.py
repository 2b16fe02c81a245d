"""Review 27: every kind of target (cameras, lights, meshes, constrained, driven, NLA, every rotation mode...)."""
import numpy as np
import pytest
from blender_ik_addon import keys

from rigs import angle_between, arm_with_chain, axis_of, chain_length_world, tip_and_direction


@pytest.mark.parametrize("w_last", [-1.0, 0.0])
def test_bake_follows_a_quaternion_target_through_its_zero_quaternion(blender, w_last):
    """A quaternion target keyed (1, 0, 0, 0) then (-1, 0, 0, 0) (the same orientation from the other hemisphere, as an
    import or a typed W gives), Linear: halfway its channels are all zero, and Blender shows it turned half a turn about
    X there (its normalisation of a zero quaternion), as Solve follows. The bake read its F-curves as the identity on
    that frame and keyed the last bone against the target's Z, reporting success."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    target.location = (0.9, 0.3, 0.3)  # in reach with its Z up and with its Z down
    target.rotation_mode = "QUATERNION"
    for frame, w in ((1, 1.0), (21, w_last)):
        target.rotation_quaternion = (w, 0.0, 0.0, 0.0)
        target.keyframe_insert("rotation_quaternion", frame=frame)
    for fcurve in keys.object_fcurves(target):
        for key in fcurve.keyframe_points:
            key.interpolation = "LINEAR"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=21) == {"FINISHED"}
    length = chain_length_world(obj)
    for frame in range(1, 22):
        bpy.context.scene.frame_set(frame)
        tip, direction = tip_and_direction(obj)
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5 * length, frame
        assert angle_between(direction, axis_of(target, "Z")) < 2e-5, frame
