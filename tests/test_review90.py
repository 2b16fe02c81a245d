"""Review 90: Snap Target over a frame range (FK to IK), as an animator converting an FK arm and a TD scripting it use
it. Judged by what Blender plays: the keyed target on the tip on every frame, and a bake from it."""
import pytest

from test_snap_range import FRAMES, animated_in_fk, largest_turn, played_pose
from test_snap_target import _goal_world, goal_off_tip


@pytest.mark.parametrize("hang, mode, scale", [("alone", "XYZ", (-1.0, 1.0, 1.0)),
                                               ("alone", "QUATERNION", (-1.0, -1.0, -1.0)),
                                               ("own bone", "AXIS_ANGLE", (1.0, -2.0, 1.0)),
                                               ("own bone", "ZXY", (-1.0, 1.0, 1.0))])
def test_a_mirrored_target_is_keyed_on_the_tip(blender, hang, mode, scale):
    """A target Empty mirrored by a negative scale (Ctrl+M, or a scale of -1), which Solve and Snap Target take: over a
    range it was refused, Blender playing it with its up axis half a turn off the bone ("what it hangs from turns or
    scales it unevenly", though it hangs from nothing); a control bone likewise. Blender stores a mirroring matrix
    with every scale negative, so the rotation read after placing it did not go with the scale kept, and the twist
    carried from the frame before lost the mirror. Keyed, it is on the tip on every frame, its scale as it was, and a
    bake gives the FK back."""
    bpy = blender
    obj, chain, fk = animated_in_fk(bpy, hang=hang, mode=mode)
    goal = chain.target.pose.bones[chain.target_bone] if chain.target_bone else chain.target
    goal.scale = scale
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert tuple(goal.scale) == pytest.approx(scale, abs=1e-6)
    reach = sum(obj.data.bones[f"b{i}"].length for i in (1, 2, 3))
    for frame in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        distance, angle = goal_off_tip(bpy, obj, chain)
        assert distance < 1e-6 * reach and angle < 1e-5, (frame, distance, angle)
        assert _goal_world(bpy, chain).to_3x3().determinant() < 0.0  # still mirrored
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert largest_turn(fk, played_pose(bpy, obj)) < 1e-5


def _range(bpy, obj, chain):
    return bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES)


def _keyed_frame(bpy, obj, chain):
    """A snap at the current frame of a keyed control bone with Auto Keying off: its keys put it back."""
    obj.pose.bones["ctl"].keyframe_insert("location", frame=1)
    return bpy.ops.blender_ik.snap_target()


@pytest.mark.parametrize("snap, said", [(_range, f"Keyed target 'Arm' bone 'ctl' on frames 1-{FRAMES} "),
                                        (_keyed_frame, "; 'Arm' bone 'ctl' is keyed: the keys put it back")],
                         ids=("range", "keyed frame"))
def test_a_control_bone_is_named_as_the_other_messages_name_it(blender, capfd, snap, said):
    """A TD's control bone as the target: the report named it "Arm' bone 'ctl" (Python's repr of a label that holds
    quotes), where every other message says 'Arm' bone 'ctl'."""
    bpy = blender
    obj, chain, _ = animated_in_fk(bpy, hang="own bone")
    capfd.readouterr()
    assert snap(bpy, obj, chain) == {"FINISHED"}
    out = capfd.readouterr().out
    assert said in out, out


def test_a_target_keyed_in_an_nla_strip_is_refused_speaking_of_the_target(blender):
    """The target Empty's keys pushed down to an NLA strip: the range snap is refused (keys in its action would
    override the strip outside the range too), but the message told the animator to make the strip's action "the
    armature's action (the bake keeps its keys ...)" for an Empty they are snapping, not baking. Nothing changes."""
    bpy = blender
    obj, chain, _ = animated_in_fk(bpy)
    target = chain.target
    target.keyframe_insert("location", frame=1)
    anim_data = target.animation_data
    strip = anim_data.nla_tracks.new().strips.new("Pushed", 1, anim_data.action)
    anim_data.action = None
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES)
    message = str(refused.value)
    assert f"of 'Target' is keyed in NLA strip '{strip.name}'" in message, message
    assert "make its action the object's action" in message and "armature" not in message and "bake" not in message
    assert anim_data.action is None
