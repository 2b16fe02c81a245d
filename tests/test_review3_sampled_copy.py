"""Adversarial review 3 (issue 11): the sampling copies an action whole only while it is small (about 1.4 MB of
keys), so what it holds at once stays bounded. Samples (Keys to Samples, or an earlier bake to samples) are
points of the action too: an action of few keys and millions of samples was copied whole on every block of the
bake (a re-bake of four chains × 100,000 frames to samples on a moving armature: +59 MiB at peak and 40% slower
than before the change)."""
import numpy as np
import pytest

from rigs import build_arm

KEY_BYTES, SAMPLE_BYTES = 72, 16  # a BezTriple, an FPoint
BOUND = 1.5e6  # "about 1.4 MB of them" (fcurves.py), with a margin


def held_bytes(action):
    from blender_ik_addon import keys
    curves = keys.action_fcurves(action)
    return sum(KEY_BYTES * len(fcurve.keyframe_points) + SAMPLE_BYTES * len(fcurve.sampled_points) for fcurve in curves)


@pytest.mark.parametrize("sampled_curves, samples", [(0, 0), (4, 1000), (24, 10_000)])
def test_the_sampling_never_copies_a_large_action_of_samples_whole(blender, monkeypatch, sampled_curves, samples):
    bpy = blender
    from blender_ik_addon import fcurves, keys, sampling
    obj = build_arm()
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.3, -0.2, 0.1)
    obj.keyframe_insert("location", frame=900)
    for index in range(sampled_curves):  # other channels as samples, as Keys to Samples leaves them
        name = f"prop{index}"
        obj.pose.bones["root"][name] = float(index)
        obj.pose.bones["root"].keyframe_insert(f'["{name}"]', frame=1)
        keys.find_fcurve(obj, f'pose.bones["root"]["{name}"]', 0).convert_to_samples(1, 1 + samples)
    held = []
    sample_copy = fcurves._samples

    def watched(copy, first, last):
        held.append(held_bytes(copy.id_data))
        return sample_copy(copy, first, last)

    monkeypatch.setattr(fcurves, "_samples", watched)
    animated = sampling._animated(obj)
    frames = np.arange(1, 1001)
    values = fcurves.evaluate_many(animated, frames)
    assert held, "sampled through a copy"
    assert max(held) <= BOUND
    expected = np.array([[fcurve.evaluate(frame) for fcurve in animated] for frame in frames.tolist()])
    assert np.array_equal(values, expected)
