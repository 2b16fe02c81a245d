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
        assert "NLA strip 'Pushed'" in error.message and "outside the range too" in error.message
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


@pytest.mark.parametrize("extrapolation", ["HOLD_FORWARD", "NOTHING", "HOLD"])
def test_an_action_played_over_its_span_only_is_not_widened(blender, extrapolation):
    """NLA tracks below an action keying the root's location at 20-40 only, its action track's Extrapolation Hold
    Forward or Nothing: Blender plays the action over 20-40 (Nothing) or from 20 on, the strip elsewhere. A bake of
    10-30 widened the action to 10, so on 10-19 the root played the action's held location over the strip's: the self-
    check blamed "something in the scene", and a bone beside the chain would have changed with nothing to say so. The
    bake refuses it, naming the extrapolation; with Hold the action plays everywhere already, and the bake goes on."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, chain = arm_with_chain(bpy)
    _move_target(chain.target)
    root = obj.pose.bones["root"]
    for frame, z in ((1, 0.3), (60, 0.3)):  # the strip: the root raised
        root.location.z = z
        root.keyframe_insert("location", frame=frame)
    _push_down(obj, {})
    obj.animation_data.action = bpy.data.actions.new("Shot")
    for frame in (20, 40):  # the action: the root back down over 20-40
        root.location.z = 0.0
        root.keyframe_insert("location", frame=frame)
    obj.animation_data.action_extrapolation = extrapolation
    scene = bpy.context.scene
    outside = [*range(1, 10), *range(31, 60)]
    before = _played(bpy, obj, outside, ("root",))
    scene.frame_set(25)
    if extrapolation == "HOLD":
        bake_armature(scene, obj, frame_start=10, frame_end=30)
        assert _tip_off(bpy, obj, chain.target, range(10, 31)) < 1e-5
    else:
        with pytest.raises(ChainError, match=f"Extrapolation is {extrapolation.replace('_', ' ').title()}"):
            bake_armature(scene, obj, frame_start=10, frame_end=30)
        from blender_ik_addon.keys import object_fcurves
        assert [curve.data_path for curve in object_fcurves(obj)] == ['pose.bones["root"].location'] * 3
    assert float(np.abs(_played(bpy, obj, outside, ("root",)) - before).max()) < 1e-6
