"""Review 38: this afternoon's changes tried as an animator, a rigger and a TD would meet them. Judged by what Blender
evaluates (frame_set, pose bones' tails, world matrices)."""
import numpy as np
import pytest

from rigs import arm_with_chain
from test_review34 import _played, _tip_off


@pytest.mark.parametrize("shot, start, refused", [
    ({"use_frame_range": True, "frame_start": 1, "frame_end": 60}, 10, True),
    ({"use_frame_range": True, "frame_start": 25, "frame_end": 35}, 22, False),
    ({"cycles": True}, 10, False),
], ids=["manual_range_wider", "manual_range_narrower", "cycles_modifier"])
def test_the_action_track_plays_over_its_keys_range(blender, shot, start, refused):
    """NLA below an action keying the root at 20-40, the action track's Extrapolation Hold Forward: Blender plays the
    action from its first key (20) on, whatever the action's manual Frame Range says, and from the start of time when
    an F-curve has a modifier (a Cycles on the root's bob). The bake read the action's Frame Range: with a manual one
    of 1-60 it baked 10-30, widening the action, and reported success with the root off the strip's at 10-19 and the
    tip 0.3 off its target; with a manual 25-35 a bake of 22-30, inside what plays, was refused ('from frame 25 on');
    with a Cycles modifier a bake of 10-30 was refused though the action plays there already."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.keys import object_fcurves
    from blender_ik_addon.ops import bake_armature
    obj, chain = arm_with_chain(bpy)
    for frame, x in ((1, 0.9), (40, 0.6)):
        chain.target.location.x = x
        chain.target.keyframe_insert("location", frame=frame)
    root = obj.pose.bones["root"]
    for frame, z in ((1, 0.3), (60, 0.3)):  # the strip: the root raised
        root.location.z = z
        root.keyframe_insert("location", frame=frame)
    animation = obj.animation_data
    animation.nla_tracks.new().strips.new("Pushed", 1, animation.action)
    animation.action = bpy.data.actions.new("Shot")
    for frame in (20, 40):  # the action: the root back down over 20-40
        root.location.z = 0.0
        root.keyframe_insert("location", frame=frame)
    animation.action_extrapolation = "HOLD_FORWARD"
    if shot.pop("cycles", False):
        object_fcurves(obj)[2].modifiers.new("CYCLES")
    for name, value in shot.items():
        setattr(animation.action, name, value)
    scene = bpy.context.scene
    frames = range(1, 61)
    before = _played(bpy, obj, frames, ("root",))
    scene.frame_set(25)
    if refused:
        with pytest.raises(ChainError, match="from frame 20 on only"):
            bake_armature(scene, obj, frame_start=start, frame_end=30)
    else:
        bake_armature(scene, obj, frame_start=start, frame_end=30)
        assert _tip_off(bpy, obj, chain.target, range(start, 31)) < 1e-5
    changed = [frame for frame, was, now in zip(frames, before, _played(bpy, obj, frames, ("root",)))
               if np.abs(was - now).max() > 1e-6]
    assert not changed, f"the root played otherwise at frames {changed}"
