"""Adversarial review: README (Baking) 'keys outside the range, however close to it, and other channels and
bones, are kept exactly as they were'. Blender recomputes Auto / Auto Clamped handles (its default) from a
key's neighbours whenever a curve changes, so replacing the keys inside the range moves the handles of the
keys outside it, and the animation played back outside the range changes too (here frames 2-4, with the
range 10-30). Expected to FAIL on the reviewed code."""
import bpy  # noqa: F401
import numpy as np

from test_chains import body_with_chains


def test_review_animation_outside_the_baked_range_plays_as_before(blender):
    bpy = blender
    from blender_ik_addon import keys
    obj = body_with_chains(bpy, ["hand.L"])
    forearm = obj.pose.bones["forearm.L"]
    for frame, rotation in ((1, (1.0, 0.0, 0.0, 0.0)), (5, (0.95, 0.3, 0.0, 0.0)), (20, (0.9, 0.3, 0.1, 0.0)),
                            (40, (0.8, 0.1, 0.5, 0.2))):
        forearm.rotation_quaternion = rotation
        forearm.keyframe_insert("rotation_quaternion", frame=frame)
    curves = [fcurve for fcurve in keys.object_fcurves(obj) if "forearm.L" in fcurve.data_path]
    outside = (2, 3, 4)  # between two keys that are both outside the range (1 and 5)

    def played():
        return np.array([[fcurve.evaluate(frame) for fcurve in curves] for frame in outside])

    def outside_keys():
        return [(tuple(k.co), tuple(k.handle_left), tuple(k.handle_right)) for fcurve in curves
                for k in fcurve.keyframe_points if not 10 <= k.co.x <= 30]

    before_keys, before = outside_keys(), played()
    assert bpy.ops.blender_ik.bake(frame_start=10, frame_end=30) == {"FINISHED"}
    change = float(np.abs(played() - before).max())
    assert change < 1e-6, f"the animation outside the range changed by up to {change:.3g}"
    assert outside_keys() == before_keys, "the handles of keys outside the range moved"
