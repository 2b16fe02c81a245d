"""Review 65: re-baking part of a shot, as an animator polishing a walk would (bake, change the target's keys over
part of the shot, re-bake that range, again), judged by what Blender plays on every frame."""
import bpy  # noqa: F401  (mathutils comes with bpy)
import pytest

from blender_ik_addon import keys
from rigs import arm_with_chain


def _tip_off(bpy, obj, target, frame):
    """How far the chain's tip is from its target at ``frame``, as Blender plays them."""
    bpy.context.scene.frame_set(frame)
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


def _walk(bpy, frames=(1, 40), mode="QUATERNION"):
    """The arm's chain, its bones in rotation ``mode``, baked over ``frames`` while its target moves along X (a walk's
    hand). Returns (object, target)."""
    obj, chain = arm_with_chain(bpy)
    for pose_bone in obj.pose.bones:
        pose_bone.rotation_mode = mode
    target = chain.target
    for frame, x in zip(frames, (0.9, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    assert bpy.ops.blender_ik.bake(frame_start=frames[0], frame_end=frames[1]) == {"FINISHED"}
    return obj, target


def _all_keys(obj):
    return {(fcurve.data_path, fcurve.array_index): [tuple(key.co) for key in fcurve.keyframe_points]
            for fcurve in keys.object_fcurves(obj)}


@pytest.mark.parametrize("before, after", [("QUATERNION", "XYZ"), ("QUATERNION", "AXIS_ANGLE"), ("XYZ", "QUATERNION")])
def test_a_rebake_of_part_of_the_shot_after_a_rotation_mode_change_leaves_no_frame_off_the_target(blender, before,
                                                                                                     after):
    """Bake 1-40, switch the elbow's rotation mode (the Bone properties' Mode menu), re-bake 10-20: the re-bake
    reported done while Blender played the elbow's new-mode keys held flat on frames 1-9 and 21-40 (its old keys are in
    the other mode's channels, which it no longer plays), the hand 3.5 cm off at frame 1 and 10.8 cm at 40. It is
    refused, with nothing changed, naming the bone and the way out; baking all the old keys' frames plays on target."""
    bpy = blender
    obj, target = _walk(bpy, mode=before)
    bpy.context.scene.frame_set(15)
    obj.pose.bones["b2"].rotation_mode = after
    target.location.x = 0.8  # the tweak: a new key of the target in the middle of the shot
    target.keyframe_insert("location", frame=15)
    kept = _all_keys(obj)
    with pytest.raises(RuntimeError, match=r"Bone 'b2' has .* keys .* no longer plays.*bake frames 1-40"):
        bpy.ops.blender_ik.bake(frame_start=10, frame_end=20)
    assert _all_keys(obj) == kept
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=40) == {"FINISHED"}
    assert max(_tip_off(bpy, obj, target, frame) for frame in range(1, 41)) < 1e-5
