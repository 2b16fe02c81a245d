"""Review 43: the baked keys played between the baked frames (motion blur's subframes, a bake on 2s or 3s, Bezier keys,
the range's edges), judged by what Blender plays."""
import math

import numpy as np
import pytest

from rigs import arm_with_chain


def tip_to_target(bpy, obj, target, frame):
    """How far the tip is from its target at ``frame`` (a subframe too), as Blender plays them."""
    whole = math.floor(frame)
    bpy.context.scene.frame_set(whole, subframe=frame - whole)
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


@pytest.mark.parametrize("frames", [(-10, 10), (-10, -1), (-1, 5)])
def test_samples_of_negative_frames_are_refused_as_blender_plays_them_a_frame_off(blender, frames):
    """Samples baked over negative frames (a shot's pre-roll) played between frames the next frame's pose (at -5.5 the
    pose of -4.5, at -0.5 that of 0.5: Blender truncates the time toward zero to find the sample), and between the last
    two of a range ending at 0 or before it read past the F-curve's end (a quaternion halved, an Euler angle halved):
    motion blur showed the hand off its target, where keys of the same bake play it on. Refused, with nothing changed;
    keys of that range play between frames as Linear keys do."""
    bpy = blender
    from blender_ik_addon import keys
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    for frame, x in ((frames[0], 0.3), (frames[1], 1.4)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    obj.pose.bones["b1"].rotation_mode = "XYZ"
    reach = sum(obj.data.bones[name].length for name in ("b1", "b2", "b3"))
    between = min(frames[1], 0) - 0.5  # between the last two negative frames (and 0) of the range
    try:
        bake_armature(bpy.context.scene, obj, "ALL", *frames, output="SAMPLES")
    except ChainError as error:
        assert "Blender plays samples between negative frames a frame off" in str(error)
        assert not keys.object_fcurves(obj)
    else:  # samples written: they must play the hand on its target, between frames as Linear keys do
        assert tip_to_target(bpy, obj, target, between) < 0.01 * reach
    bake_armature(bpy.context.scene, obj, "ALL", *frames)  # keys: the way out the message gives
    assert max(tip_to_target(bpy, obj, target, frame) for frame in (between - 0.5, between + 0.5)) < 1e-5 * reach
    assert tip_to_target(bpy, obj, target, between) < 0.01 * reach
