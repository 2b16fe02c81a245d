"""Adversarial review 2: an F-curve whose only sample is at Blender's last frame (a bake to samples of that one
frame). Dropping its samples asked convert_to_keyframes for the frames from there to one past the last, which
Blender clamps to an empty range and refuses ("Invalid frame range"): baking that frame again, or restoring keys
over it, ended in a RuntimeError (a traceback from the Bake operator) instead of replacing the samples."""
import numpy as np
import pytest

from test_keys import QUAT, empty_file, evaluated, make_rig, quaternion_channels, random_quaternions  # noqa: F401


@pytest.mark.parametrize("then", ["samples_again", "restore_keys"])
def test_review2_a_single_sample_at_the_last_frame_can_be_replaced(empty_file, then):  # noqa: F811
    import bpy
    from blender_ik_addon import keys
    last = bpy.types.Scene.bl_rna.properties["frame_current"].hard_max
    rig = make_rig()
    keys.write_keys(rig, quaternion_channels(), [float(last)], random_quaternions(1, seed=1))
    snapshot = keys.snapshot_channels(rig, [QUAT])
    keys.write_samples(rig, quaternion_channels(), last, random_quaternions(1, seed=2))
    try:
        if then == "samples_again":
            values = random_quaternions(1, seed=3)
            keys.write_samples(rig, quaternion_channels(), last, values)
            np.testing.assert_allclose(evaluated(rig, QUAT, last, 4), values[0], atol=1e-7)
            assert all(len(f.sampled_points) == 1 for f in keys.object_fcurves(rig))
        else:
            keys.restore_channels(rig, snapshot)
            assert all((len(f.keyframe_points), len(f.sampled_points)) == (1, 0) for f in keys.object_fcurves(rig))
    finally:
        keys.discard_snapshot(snapshot)
