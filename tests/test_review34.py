"""Review 34: an animator's own keys around a bake (a shot that is already half animated). Judged by what Blender
plays (frame_set): frames outside the baked range play as before, the baked ones on target."""
import numpy as np
import pytest

from rigs import arm_with_chain


def _key_rotations(obj, bones=("b1", "b2"), frames=(1, 20, 40)):
    """Quaternion keys on ``bones`` at ``frames`` (Bezier, as Insert Keyframe makes them)."""
    turns = ((1.0, 0.0, 0.0, 0.0), (0.95, 0.3, 0.0, 0.0), (0.9, 0.1, 0.4, 0.0))
    for name in bones:
        pose_bone = obj.pose.bones[name]
        for frame, turn in zip(frames, turns):
            pose_bone.rotation_quaternion = turn
            pose_bone.keyframe_insert("rotation_quaternion", frame=frame)


def _move_target(target, frames=(1, 40)):
    for frame, x in zip(frames, (0.9, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)


def _played(bpy, obj, frames, bones=("b1", "b2", "b3")):
    scene = bpy.context.scene
    played = []
    for frame in frames:
        scene.frame_set(frame)
        played.append([np.array(obj.pose.bones[name].matrix) for name in bones])
    return np.array(played)


def _tip_off(bpy, obj, target, frames):
    scene = bpy.context.scene
    off = []
    for frame in frames:
        scene.frame_set(frame)
        off.append((obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length)
    return max(off)


def _push_down(obj, strip_settings):
    """The armature's action pushed down into an NLA strip 'Pushed' (no action left), with ``strip_settings``."""
    animation = obj.animation_data
    strip = animation.nla_tracks.new().strips.new("Pushed", 1, animation.action)
    strip.name = "Pushed"
    animation.action = None
    for name, value in strip_settings.items():
        setattr(strip, name, value)


@pytest.mark.parametrize("strip_settings", [{}, {"extrapolation": "HOLD_FORWARD"}, {"blend_type": "ADD"},
                                            {"repeat": 2.0}], ids=["hold", "hold_forward", "add", "repeat"])
@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_rotations_an_nla_strip_plays_are_not_silenced_outside_the_range(blender, strip_settings, output):
    """The chain's rotations keyed in an action the animator pushed down to the NLA: the bake's new keys in a new
    action played over the strip on every frame (an action's F-curve holds its first and last keys beyond them), so
    the strip's animation of the chain was gone outside frames 10-30 too (b1 and b2 off by up to 1.67 at frames 1-9
    and 31-59), and the bake reported success. It must refuse, changing nothing, or keep those frames as they were."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, chain = arm_with_chain(bpy)
    _move_target(chain.target)
    _key_rotations(obj)
    _push_down(obj, strip_settings)
    scene = bpy.context.scene
    outside = [*range(1, 10), *range(31, 60)]
    before = _played(bpy, obj, outside, ("b1", "b2"))
    try:
        bake_armature(scene, obj, frame_start=10, frame_end=30, output=output)
    except ChainError as error:
        assert "NLA strip 'Pushed'" in error.message and "outside the baked range" in error.message
        assert obj.animation_data.action is None
    else:
        assert _tip_off(bpy, obj, chain.target, range(10, 31)) < 1e-5
    change = float(np.abs(_played(bpy, obj, outside, ("b1", "b2")) - before).max())
    assert change < 1e-6, f"the strip's animation of the chain changed outside the range by up to {change:.3g}"


def test_a_channel_the_action_keys_already_is_baked_over_a_strip(blender):
    """Where the action keys the chain's rotations already, it plays over the strip on every frame anyway: the bake
    goes ahead, keeps the action's key outside the range and plays on target inside it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    _move_target(chain.target)
    _key_rotations(obj)
    _push_down(obj, {})
    obj.animation_data.action = obj.animation_data.nla_tracks[0].strips[0].action.copy()
    outside = [1]  # its key there is kept; frames 2-19 lead to the first new key
    before = _played(bpy, obj, outside, ("b1", "b2"))
    assert bpy.ops.blender_ik.bake(frame_start=20, frame_end=40) == {"FINISHED"}
    assert _tip_off(bpy, obj, chain.target, range(20, 41)) < 1e-5
    assert float(np.abs(_played(bpy, obj, outside, ("b1", "b2")) - before).max()) < 1e-6
