"""Snap Target over a frame range: the targets keyed where the chains' tips are on each frame, following the bones'
animation (FK to IK), a Pole chain's pole too. Judged by what Blender plays: the keyed targets on the tips frame by
frame, and a bake from them giving the bones' animation back."""
import math
import re

import numpy as np
import pytest

from rigs import add_empty, arm_and_chain_beside, arm_with_chain, reachable_target, tip_and_direction
from test_snap_target import _control_bone, goal_off_tip
from test_snap_target import _sheared as shear

FRAMES = 12


def animated_in_fk(bpy, plane="PARENT", hang="alone", mode="XYZ", seed=5):
    """The arm's chain animated by turning its bones (its rotations keyed on frames 1-FRAMES, made by baking a target
    keyed every 3 frames to places it reaches), then its target (and pole) left unkeyed somewhere else, as an
    animator's FK animation whose IK controls are elsewhere. Returns (object, chain, {frame: {bone: quaternion}})."""
    from mathutils import Matrix
    obj, chain = arm_with_chain(bpy)
    chain.plane = plane
    if plane == "POLE":
        assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    rng = np.random.default_rng(seed)
    target = chain.target
    for frame in range(1, FRAMES + 1, 3):
        location, rotation = reachable_target(rng, obj, margin=0.7)
        target.matrix_world = Matrix.LocRotScale(location, rotation.to_quaternion(), (1.0, 1.0, 1.0))
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
        if plane == "POLE":
            chain.pole.location.z += 0.1
            chain.pole.keyframe_insert("location", frame=frame)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    fk = played_pose(bpy, obj)
    for goal in chain.target, chain.pole:
        if goal is not None:
            goal.animation_data_clear()
    target.location, target.rotation_euler = (0.4, -0.5, 0.3), (0.3, 0.2, 0.1)
    if hang == "own bone":  # a control bone of the chain's own armature (keyed in the armature's action)
        _control_bone(bpy, obj, "ctl", parent="root")
        bpy.data.objects.remove(target)
        chain.target, chain.target_bone = obj, "ctl"
    goal = chain.target.pose.bones[chain.target_bone] if chain.target_bone else chain.target
    goal.rotation_mode = mode
    bpy.context.view_layer.objects.active = obj
    bpy.context.scene.frame_set(3)
    return obj, chain, fk


def played_pose(bpy, obj):
    """{frame: {bone: rotation quaternion}} of the chain's bones as Blender plays them."""
    played = {}
    for frame in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        played[frame] = {name: obj.pose.bones[name].matrix_basis.to_quaternion() for name in ("b1", "b2", "b3")}
    return played


def largest_turn(before, after):
    angles = [before[frame][name].rotation_difference(after[frame][name]).angle
              for frame in before for name in before[frame]]
    return max(min(angle, 2.0 * math.pi - angle) for angle in angles)


def key_frames(obj, prefix=""):
    action = obj.animation_data.action if obj.animation_data else None
    if action is None:
        return {}
    from blender_ik_addon import keys
    return {(fcurve.data_path, fcurve.array_index): [tuple(point.co) for point in fcurve.keyframe_points]
            for fcurve in keys.action_fcurves(action) if fcurve.data_path.startswith(prefix)}


@pytest.mark.parametrize("mode", ("XYZ", "QUATERNION"))
@pytest.mark.parametrize("hang", ("alone", "own bone"))
@pytest.mark.parametrize("plane", ("PARENT", "TARGET", "POLE"))
def test_the_keyed_targets_give_the_animation_back(blender, capfd, plane, hang, mode):
    """Keyed over the range, the target is on the tip on every frame as Blender plays it, its up axis along the last
    bone; the report says solving keeps the pose; and a bake from the keyed target (and, for a Pole chain, the keyed
    pole) gives back the bones' animation."""
    bpy = blender
    obj, chain, fk = animated_in_fk(bpy, plane, hang, mode)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    out = capfd.readouterr().out
    assert f"on frames 1-{FRAMES} ({FRAMES} keys): solving keeps the pose on every frame" in out, out
    assert bpy.context.scene.frame_current == 3  # back where the user was
    reach = sum(obj.data.bones[f"b{i}"].length for i in (1, 2, 3))
    for frame in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        distance, angle = goal_off_tip(bpy, obj, chain)
        assert distance < 1e-6 * reach and angle < 1e-5, (frame, distance, angle)
    prefix = f'pose.bones["{chain.target_bone}"]' if chain.target_bone else ""
    keyed = key_frames(chain.target, prefix)
    rotation = "rotation_quaternion" if mode == "QUATERNION" else "rotation_euler"
    assert {path.rsplit(".", 1)[-1] for path, _ in keyed} == {"location", rotation}
    assert all([frame for frame, _ in points] == list(range(1, FRAMES + 1)) for points in keyed.values())
    if plane == "POLE":
        assert [frame for frame, _ in key_frames(chain.pole)[("location", 0)]] == list(range(1, FRAMES + 1))
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert largest_turn(fk, played_pose(bpy, obj)) < 1e-5


def test_keys_outside_the_range_are_kept_and_the_step_is_followed(blender):
    """The target's keys inside the range are replaced, those outside kept as they were; every n-th frame is keyed,
    and the last."""
    bpy = blender
    obj, chain, _ = animated_in_fk(bpy)
    target = chain.target
    for frame, x in ((-5, 0.1), (6, 0.2), (30, 0.3)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    before = key_frames(target)
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=2, frame_end=11, step=4) == {"FINISHED"}
    after = key_frames(target)
    for index in range(3):
        frames = [frame for frame, _ in after[("location", index)]]
        assert frames == [-5, 2, 6, 10, 11, 30], frames
        assert after[("location", index)][0] == before[("location", index)][0]
        assert after[("location", index)][-1] == before[("location", index)][-1]
    for frame in (2, 6, 10, 11):
        bpy.context.scene.frame_set(frame)
        assert goal_off_tip(bpy, obj, chain)[0] < 1e-6


def test_the_target_turns_no_more_than_the_bone(blender):
    """Without a Roll axis only the up axis is the pose's: from frame to frame the keyed target turns by no more than
    the last bone's direction does (its twist carried along from the frame before), even where the bone points against
    the way the target's old key turns it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.target.rotation_mode = "XYZ"
    from mathutils import Matrix, Vector
    # The whole arm turned so that its last bone goes round a cone about -Z, the way the unkeyed target's up axis (Z)
    # points against: the least turn from that orientation spins the target about the bone a full turn a loop.
    down = Vector((math.sin(0.35), 0.0, -math.cos(0.35)))
    tilt = Vector(tip_and_direction(obj)[1].tolist()).rotation_difference(down).to_matrix()
    chain.target.keyframe_insert("rotation_euler", frame=1)  # its old key puts it back on every frame
    obj.rotation_mode = "QUATERNION"
    for frame in range(1, 25):
        obj.rotation_quaternion = (Matrix.Rotation(2.0 * math.pi * (frame - 1) / 23, 3, "Z") @ tilt).to_quaternion()
        obj.keyframe_insert("rotation_quaternion", frame=frame)
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=24) == {"FINISHED"}
    last = None
    for frame in range(1, 25):
        bpy.context.scene.frame_set(frame)
        rotation = chain.target.matrix_world.to_quaternion()
        direction = tip_and_direction(obj)[1]
        if last is not None:
            bone_turn = math.acos(min(1.0, float(np.dot(direction, last[1]))))
            turn = last[0].rotation_difference(rotation).angle
            assert min(turn, 2.0 * math.pi - turn) <= bone_turn + 1e-4, frame
        last = rotation, direction
        assert goal_off_tip(bpy, obj, chain)[0] < 1e-6
    keyed = key_frames(chain.target)
    for index in range(3):  # continuous Euler keys: no jump of a turn or more between frames
        values = [value for _, value in keyed[("rotation_euler", index)]]
        assert max(abs(b - a) for a, b in zip(values, values[1:])) < 1.0, (index, values)


def test_a_pose_a_solve_changes_is_named_with_its_frames(blender, capfd):
    """An FK pose the chain's settings cannot make (the arm bent out of the plane its parent carries) on some frames:
    the keys are made all the same (the target is on the tip), and the report names those frames and why."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    first = obj.pose.bones["b1"]
    first.rotation_mode = "XYZ"
    for frame, turn in ((1, 0.0), (4, 0.0), (8, 0.7), (12, 0.7)):
        first.rotation_euler = (turn, 0.0, 0.0)
        first.keyframe_insert("rotation_euler", frame=frame)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=12) == {"FINISHED"}
    out = capfd.readouterr().out
    assert out.startswith("Warning: Keyed target 'Target' on frames 1-12 (12 keys); chain 'arm': a solve turns the "
                          "pose on frames 5-12, most at frame"), out
    assert "Place Pole keeps this bend" in out


def _shared_action(bpy, obj, chain):
    chain.target.keyframe_insert("location", frame=1)
    other = add_empty("Other")
    other.animation_data_create()
    other.animation_data.action = chain.target.animation_data.action
    if hasattr(other.animation_data, "action_slot"):
        other.animation_data.action_slot = chain.target.animation_data.action_slot


def _locked_fcurve(bpy, obj, chain):
    chain.target.keyframe_insert("location", frame=1)
    from blender_ik_addon import keys
    keys.find_fcurve(chain.target, "location", 2).lock = True


def _pole_location_locked(bpy, obj, chain):
    chain.plane = "POLE"
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    chain.pole.lock_location[1] = True


def _shared_with_another_chain(bpy, obj, chain):
    other = obj.blender_ik.chains.add()
    other.name, other.tip_bone, other.target, other.enabled = "other", "b3", chain.target, False


def _time_remapped(bpy, obj, chain):
    bpy.context.scene.render.frame_map_new = 200


def _sheared(bpy, obj, chain):
    shear(bpy, chain)


def _sheared_one_frame(bpy, obj, chain):
    _sheared(bpy, obj, chain)
    return {"frame_start": 5, "frame_end": 5}


def _empty_range(bpy, obj, chain):
    return {"frame_start": 9, "frame_end": 3}


REFUSED = {
    _shared_action: "is also played by 'Other'",
    _locked_fcurve: "The F-curve location[2] of 'Target' is locked",
    _pole_location_locked: "The pole 'b3_pole' has its location Y locked; unlock it to snap it (the snap moves it)",
    _shared_with_another_chain: "The target 'Target' is also the target of chain 'other'",
    _time_remapped: "The scene remaps time",
    _sheared: "Blender plays the keyed target 'Target'",
    # On the tip, its up axis off: the message names the angle, not a distance of a few nm (as it did).
    _sheared_one_frame: "'Target' on the tip but its up axis 52.8° off the bone on frame 5: what it hangs from turns",
    _empty_range: "The frame range is empty: start 9 is after end 3",
}


@pytest.mark.parametrize("make", REFUSED, ids=lambda make: make.__name__.strip("_"))
def test_what_cannot_be_keyed_and_played_is_refused_with_nothing_changed(blender, make):
    """Keys that would not be kept, would not play as made, would move another chain's goal, or that Blender plays off
    the tip: refused, saying why, with every goal's channels, keys and the frame as they were."""
    bpy = blender
    obj, chain, _ = animated_in_fk(bpy)
    asked = make(bpy, obj, chain) or {}
    bpy.context.view_layer.update()
    goals = [goal for goal in (chain.target, chain.pole) if goal is not None]
    channels = [(tuple(goal.location), tuple(goal.rotation_euler), tuple(goal.scale)) for goal in goals]
    keyed = [key_frames(goal) for goal in goals]
    arguments = dict(dict(frames="RANGE", frame_start=1, frame_end=FRAMES), **asked)
    with pytest.raises(RuntimeError, match=re.escape(REFUSED[make])):
        bpy.ops.blender_ik.snap_target(**arguments)
    assert [(tuple(goal.location), tuple(goal.rotation_euler), tuple(goal.scale)) for goal in goals] == channels
    assert [key_frames(goal) for goal in goals] == keyed
    assert bpy.context.scene.frame_current == 3


def test_a_pole_is_moved_not_turned(blender):
    """A Pole chain's pole is keyed by its location only: a locked rotation does not stop it, and its rotation stays."""
    bpy = blender
    obj, chain, fk = animated_in_fk(bpy, "POLE")
    chain.pole.rotation_euler = (0.2, 0.4, 0.6)
    chain.pole.lock_rotation = (True, True, True)
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert {path for path, _ in key_frames(chain.pole)} == {"location"}
    assert tuple(chain.pole.rotation_euler) == pytest.approx((0.2, 0.4, 0.6), abs=1e-7)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES) == {"FINISHED"}
    assert largest_turn(fk, played_pose(bpy, obj)) < 1e-5


def test_both_chains_are_keyed_together(blender, capfd):
    """Two chains beside each other, animated in FK: Snap Targets with All keys both targets, each on its tip."""
    bpy = blender
    obj, targets = arm_and_chain_beside(bpy)
    for name in ("b1", "c1"):
        pose_bone = obj.pose.bones[name]
        pose_bone.rotation_mode = "XYZ"
        for frame, turn in ((1, 0.0), (6, 0.4)):
            pose_bone.rotation_euler = (turn, 0.0, 0.0)
            pose_bone.keyframe_insert("rotation_euler", frame=frame)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target(chains="ALL", frames="RANGE", frame_start=1, frame_end=6) == {"FINISHED"}
    assert "Keyed goals 'TA', 'TB' on frames 1-6 (6 keys)" in capfd.readouterr().out
    for frame in range(1, 7):
        bpy.context.scene.frame_set(frame)
        for tip, target in zip(("b3", "c3"), targets):
            assert np.linalg.norm(np.array(target.matrix_world.translation) - tip_and_direction(obj, tip)[0]) < 1e-6
