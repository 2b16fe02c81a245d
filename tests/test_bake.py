"""Bake: replay the keys with no solver in the loop and judge Blender's evaluated pose."""
import math

import numpy as np
import pytest

from rigs import add_empty, angle_between, axis_of, build_arm, chain_length_world, tip_and_direction

POSITION_TOLERANCE = 1e-5
ANGLE_TOLERANCE = 2e-5


def animate_target(target, frames=range(1, 61, 10), seed=0):
    """Keys on location and rotation along a wandering path the arm mostly reaches."""
    rng = np.random.default_rng(seed)
    for frame in frames:
        angle = frame * 0.15
        target.location = (0.8 * math.cos(angle), 0.8 * math.sin(angle), 1.0 + 0.3 * math.sin(2 * angle))
        target.rotation_euler = tuple(rng.uniform(-1.2, 1.2, 3))
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)


def setup(bpy, modes=("QUATERNION",) * 3, **arm):
    obj = build_arm(modes=modes, **arm)
    target = add_empty()
    animate_target(target)
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    obj.blender_ik.target = target
    return obj, target


def replay_errors(bpy, obj, target, frames, up_axis="Z"):
    """Clear the IK settings and play the keys back: per frame, tip distance and direction angle."""
    obj.blender_ik.target = None
    errors = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        tip, direction = tip_and_direction(obj)
        errors.append((np.linalg.norm(tip - np.array(target.matrix_world.translation)),
                       angle_between(direction, axis_of(target, up_axis))))
    return np.array(errors)


def check_replay(bpy, obj, target, result, up_axis="Z"):
    reachable = [f for f in result.frames if f not in set(result.unreachable)]
    assert len(reachable) > 0.5 * len(result.frames)
    errors = replay_errors(bpy, obj, target, reachable, up_axis)
    assert errors[:, 0].max() < POSITION_TOLERANCE * chain_length_world(obj)
    assert errors[:, 1].max() < ANGLE_TOLERANCE


def rotation_keys(obj, bone, path, samples=False):
    """Per channel, the (frame, value) of every key (or sample) of a bone's rotation F-curves."""
    from blender_ik_addon import keys
    data_path = f'pose.bones["{bone}"].{path}'
    curves = [c for c in keys.object_fcurves(obj) if c.data_path == data_path]
    curves.sort(key=lambda c: c.array_index)
    for c in curves:  # one or the other, never both
        assert not len(c.sampled_points if not samples else c.keyframe_points)
    return [np.array([tuple(k.co) for k in (c.sampled_points if samples else c.keyframe_points)]) for c in curves]


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_animated_empty_bakes_exactly_through_the_direct_path(blender, output):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    bpy.context.scene.frame_set(17)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60, output=output)
    assert result.direct and len(result.frames) == 60
    assert bpy.context.scene.frame_current == 17  # restored
    tip, _ = tip_and_direction(obj)  # and the pose already shows the new keys there
    assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < POSITION_TOLERANCE * 2.2
    check_replay(bpy, obj, target, result)
    q = np.stack([k[:, 1] for k in rotation_keys(obj, "b1", "rotation_quaternion", output == "SAMPLES")], -1)
    assert q.shape == (60, 4)
    assert np.all(np.einsum("ij,ij->i", q[1:], q[:-1]) > 0)  # one hemisphere throughout


@pytest.mark.parametrize("modes", [("XYZ", "ZXY", "YZX"), ("AXIS_ANGLE", "XZY", "QUATERNION")])
def test_euler_and_axis_angle_bones_bake_without_jumps(blender, modes):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy, modes=modes)
    # Spin the target twice around so the angles wind past ±π.
    for frame in range(1, 61, 5):
        target.rotation_euler = (0.3, 0.2, frame * 0.25)
        target.keyframe_insert("rotation_euler", frame=frame)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60)
    check_replay(bpy, obj, target, result)
    for bone, mode in zip(("b1", "b2", "b3"), modes):
        if mode in ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX"):
            values = np.stack([k[:, 1] for k in rotation_keys(obj, bone, "rotation_euler")], -1)
            assert np.abs(np.diff(values, axis=0)).max() < 1.0, bone


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_constrained_target_with_an_animated_parent_uses_the_per_frame_path(blender, output):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    holder = add_empty("Holder")
    holder.keyframe_insert("location", frame=1)
    holder.location = (0.1, -0.2, 0.15)
    holder.keyframe_insert("location", frame=60)
    target.parent = holder
    constraint = target.constraints.new("LIMIT_LOCATION")
    constraint.use_max_z, constraint.max_z = True, 1.15
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60, output=output)
    assert not result.direct and any("constraints" in reason for reason in result.reasons)
    check_replay(bpy, obj, target, result)


def test_animated_armature_and_parent_bone(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    obj.location = (0.0, 0.0, 0.0)
    obj.keyframe_insert("location", frame=1)
    obj.rotation_euler = (0.0, 0.0, 0.4)
    obj.location = (0.2, 0.1, -0.1)
    obj.keyframe_insert("location", frame=60)
    obj.keyframe_insert("rotation_euler", frame=60)
    root = obj.pose.bones["root"]
    root.rotation_mode = "XYZ"
    root.keyframe_insert("rotation_euler", frame=1)
    root.rotation_euler = (0.3, -0.2, 0.25)
    root.keyframe_insert("rotation_euler", frame=60)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60)
    assert result.direct and not result.reasons  # the keyed root is read from its keys, as the keyed armature is
    check_replay(bpy, obj, target, result)


def test_step_keys_every_nth_frame(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    result = bake_armature(bpy.context.scene, obj, "ALL", 5, 45, step=4)
    assert list(result.frames) == list(range(5, 46, 4))
    frames = rotation_keys(obj, "b2", "rotation_quaternion")[0][:, 0]
    assert list(frames) == list(range(5, 46, 4))
    check_replay(bpy, obj, target, result)


def test_keys_outside_the_range_and_other_channels_are_kept(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    b1, b2 = obj.pose.bones["b1"], obj.pose.bones["b2"]
    b1.rotation_quaternion = (0.9, 0.3, 0.0, 0.1)
    b1.keyframe_insert("rotation_quaternion", frame=1)
    b1.keyframe_insert("rotation_quaternion", frame=100)
    b1.keyframe_insert("rotation_quaternion", frame=30)  # inside: replaced
    b2.location = (0.0, 0.1, 0.0)
    b2.keyframe_insert("location", frame=20)
    before_location = rotation_keys(obj, "b2", "location")
    result = bake_armature(bpy.context.scene, obj, "ALL", 10, 50)
    keyed = rotation_keys(obj, "b1", "rotation_quaternion")
    frames = list(keyed[0][:, 0])
    assert frames == [1.0] + list(range(10, 51)) + [100.0]
    for index, value in enumerate((0.9, 0.3, 0.0, 0.1)):  # the kept keys at 1 and 100, untouched
        np.testing.assert_allclose(keyed[index][[0, -1], 1], [value, value], atol=1e-7)
    after_location = rotation_keys(obj, "b2", "location")
    for a, b in zip(before_location, after_location):
        np.testing.assert_array_equal(a, b)
    check_replay(bpy, obj, target, result)


def test_operator_reports_once_with_out_of_reach_frames(blender, capfd):
    bpy = blender
    obj, target = setup(bpy)
    target.keyframe_insert("location", frame=69)  # where frame 51 left it: in reach
    target.location = (5.0, 0.0, 1.0)  # far away from frame 70 on
    target.keyframe_insert("location", frame=70)
    target.keyframe_insert("location", frame=80)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 80
    capfd.readouterr()
    assert bpy.ops.blender_ik.bake() == {"FINISHED"}  # the scene's range by default
    out = capfd.readouterr().out
    assert out.count("Baked 80 frames") == 1
    assert "11 out of reach (70-80)" in out


@pytest.mark.parametrize("case, message", [
    ("empty_range", "frame range is empty"),
    ("no_target", "Set the target"),
    ("bad_chain", "needs two ancestors"),
])
def test_bad_bakes_are_refused_and_change_nothing(blender, case, message):
    bpy = blender
    obj, target = setup(bpy)
    obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=3)
    arguments = dict(frame_start=1, frame_end=20)
    if case == "empty_range":
        arguments = dict(frame_start=20, frame_end=10)
    elif case == "no_target":
        obj.blender_ik.target = None
    elif case == "bad_chain":
        obj.blender_ik.tip_bone = "b1"
    before = rotation_keys(obj, "b1", "rotation_quaternion")
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.blender_ik.bake(**arguments)
    after = rotation_keys(obj, "b1", "rotation_quaternion")
    assert len(after) == len(before) == 4
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert rotation_keys(obj, "b2", "rotation_quaternion") == []


def test_direct_and_per_frame_sampling_agree(blender):
    bpy = blender
    from blender_ik_addon import chain as rig, sampling
    scene = bpy.context.scene
    parent = add_empty("Parent")
    parent.rotation_mode = "QUATERNION"
    parent.delta_location = (0.1, 0.2, 0.3)
    for frame, (loc, rot, scale) in enumerate([((0, 0, 0), (1, 0, 0, 0), (1, 1, 1)),
                                              ((1, 2, 0), (0.8, 0.2, 0.5, 0.1), (1.5, 1.5, 1.5)),
                                              ((-1, 0.5, 2), (0.3, -0.6, 0.2, 0.7), (0.7, 1.2, 0.9))]):
        parent.location, parent.rotation_quaternion, parent.scale = loc, rot, scale
        for path in ("location", "rotation_quaternion", "scale"):
            parent.keyframe_insert(path, frame=1 + 20 * frame)
    results = {}
    for mode in ("XYZ", "ZYX", "QUATERNION", "AXIS_ANGLE"):
        child = add_empty(f"Child_{mode}")
        child.rotation_mode = mode
        child.delta_scale = (1.0, 2.0, 1.0)
        if mode != "AXIS_ANGLE":
            child.delta_rotation_euler = (0.1, 0.2, -0.3)
            child.delta_rotation_quaternion = (0.9, 0.1, -0.2, 0.3)
        child.parent = parent
        child.matrix_parent_inverse = parent.matrix_world.inverted()
        for frame in (1, 25, 41):
            child.location = (frame * 0.01, -0.3, 0.2)
            if mode == "QUATERNION":
                child.rotation_quaternion = (1.0, frame * 0.01, 0.2, -0.1)
            elif mode == "AXIS_ANGLE":
                child.rotation_axis_angle = (frame * 0.05, 0.3, 1.0, 0.2)
            else:
                child.rotation_euler = (frame * 0.05, -0.4, 0.3)
            for path in ("location", __import__("blender_ik_addon.chain").chain.rotation_path(mode)):
                child.keyframe_insert(path, frame=frame)
        assert sampling.direct_reason(child, scene) is None
        results[mode] = child
    frames = np.arange(-5, 50)
    for mode, child in results.items():
        direct = sampling.direct_world_matrices(child, frames)
        per_frame = []
        for frame in frames:
            scene.frame_set(int(frame))
            per_frame.append(rig.matrix_array(child.matrix_world))
        np.testing.assert_allclose(direct, np.array(per_frame), atol=2e-6, err_msg=mode)


def test_animated_scale_on_a_chain_bone_is_refused(blender):
    bpy = blender
    obj, target = setup(bpy)
    obj.pose.bones["b1"].keyframe_insert("scale", frame=1)
    obj.pose.bones["b1"].scale = (1.0, 1.1, 1.0)  # (keys that only hold the current scale are no animation)
    obj.pose.bones["b1"].keyframe_insert("scale", frame=10)
    obj.pose.bones["b1"].scale = (1.0, 1.0, 1.0)
    with pytest.raises(RuntimeError, match="Bone 'b1' has an animated scale"):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=20)
    assert rotation_keys(obj, "b2", "rotation_quaternion") == []


def test_an_armature_keyed_to_zero_scale_is_a_clear_error(blender):
    bpy = blender
    obj, target = setup(bpy)
    obj.keyframe_insert("scale", frame=1)
    obj.scale = (0.0, 0.0, 0.0)
    obj.keyframe_insert("scale", frame=20)
    bpy.context.scene.frame_set(1)
    with pytest.raises(RuntimeError, match="zero, non-uniform or sheared scale at frames 20"):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=20)
    assert rotation_keys(obj, "b2", "rotation_quaternion") == []


def test_a_target_following_a_curve_path_is_sampled_per_frame(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    target.animation_data_clear()
    curve = bpy.data.curves.new("Path", "CURVE")
    spline = curve.splines.new("POLY")
    spline.points.add(2)
    for point, co in zip(spline.points, [(0.8, -0.5, 1.0, 1), (0.6, 0.0, 1.3, 1), (0.8, 0.5, 1.0, 1)]):
        point.co = co
    curve.use_path = True
    curve.path_duration = 30
    path = bpy.data.objects.new("Path", curve)
    bpy.context.scene.collection.objects.link(path)
    target.location = (0.0, 0.0, 0.0)
    target.parent = path
    curve.eval_time = 0.0
    curve.keyframe_insert("eval_time", frame=1)
    curve.eval_time = 30.0
    curve.keyframe_insert("eval_time", frame=30)
    positions = []
    for frame in (1, 15, 30):
        bpy.context.scene.frame_set(frame)
        positions.append(np.array(target.matrix_world.translation))
    assert np.linalg.norm(positions[0] - positions[2]) > 0.5  # it really travels
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 30)
    assert not result.direct and any("follows the path" in reason for reason in result.reasons)
    check_replay(bpy, obj, target, result)


def test_a_stepped_bake_replaces_every_key_in_its_range(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    for frame in (1, 10, 12):
        obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=frame)
    bake_armature(bpy.context.scene, obj, "ALL", 1, 10, step=4)
    frames = list(rotation_keys(obj, "b1", "rotation_quaternion")[0][:, 0])
    assert frames == [1.0, 5.0, 9.0, 10.0, 12.0]  # the old key at 10 replaced (the range's end), the one at 12 kept


def test_bake_turns_live_off_and_pins_the_tip_bone(blender, capfd):
    bpy = blender
    obj, target = setup(bpy)
    obj.blender_ik.tip_bone = ""
    obj.data.bones.active = obj.data.bones["b3"]
    obj.blender_ik.live = True
    capfd.readouterr()
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30) == {"FINISHED"}
    assert "Live turned off" in capfd.readouterr().out
    assert not obj.blender_ik.live and obj.blender_ik.tip_bone == "b3"
    # Edited keys now show: nothing re-solves over them.
    for curve in [c for c in __import__("blender_ik_addon").keys.object_fcurves(obj)
                  if c.data_path == 'pose.bones["b1"].rotation_quaternion']:
        for key in curve.keyframe_points:
            key.co[1] = 1.0 if curve.array_index == 0 else 0.0
        curve.update()
    obj.update_tag(refresh={"TIME"})
    bpy.context.scene.frame_set(10)
    assert tuple(obj.pose.bones["b1"].rotation_quaternion) == pytest.approx((1.0, 0.0, 0.0, 0.0))


def all_rotation_keys(obj):
    """Every key of the chain bones' rotation F-curves: {(data path, index): (K, 2) frame and value}."""
    from blender_ik_addon import keys
    found = {}
    for curve in keys.object_fcurves(obj):
        if curve.data_path.endswith(("rotation_quaternion", "rotation_euler", "rotation_axis_angle")):
            co = np.empty(2 * len(curve.keyframe_points), dtype=np.float32)
            curve.keyframe_points.foreach_get("co", co)
            found[(curve.data_path, curve.array_index)] = co.reshape(-1, 2)
    return found


@pytest.mark.parametrize("path", ["direct", "per_frame"])
@pytest.mark.parametrize("modes", [("QUATERNION",) * 3, ("XYZ", "AXIS_ANGLE", "ZXY")])
def test_a_bake_in_blocks_keys_what_one_pass_keys(blender, monkeypatch, modes, path):
    """Blocks of 7 frames, with undefined bend planes (frames 27-30) across a block boundary, give the keys,
    the out-of-reach and undefined-plane frames of one pass over the range, and report progress over it."""
    bpy = blender
    from blender_ik_addon import bake
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy, modes=modes)
    for frame in (27, 30):  # the wrist on the rest hinge axis (Follow Parent): no bend plane
        target.location, target.rotation_euler = (0.0, 1.9, 0.0), (-math.pi / 2, 0.0, 0.0)
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    target.location = (2.5, 0.0, 0.5)  # out of reach
    target.keyframe_insert("location", frame=45)
    if path == "per_frame":
        target.constraints.new("LIMIT_SCALE")
    from blender_ik_addon.chain import rotation_values, set_rotation
    pose = {name: rotation_values(obj.pose.bones[name]) for name in ("b1", "b2", "b3")}
    outcomes = []
    for block in (bake.BLOCK_FRAMES, 7):
        obj.animation_data_clear()
        for name, values in pose.items():
            set_rotation(obj.pose.bones[name], values)
        monkeypatch.setattr(bake, "BLOCK_FRAMES", block)
        calls = []
        result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60,
                               progress=lambda done, total: calls.append((done, total)))
        assert result.direct == (path == "direct")
        assert calls == ([] if path == "direct" else [(done, 60) for done in range(1, 61)])
        outcomes.append((all_rotation_keys(obj), result.chains[0].unreachable, result.chains[0].degenerate))
    (whole, unreachable, degenerate), (blocked, *lists) = outcomes
    assert 28 in degenerate and 29 in degenerate and 45 in unreachable
    assert lists == [unreachable, degenerate]
    assert whole.keys() == blocked.keys() and len(whole) == sum(4 if m in ("QUATERNION", "AXIS_ANGLE") else 3
                                                                for m in modes)
    for channel, co in whole.items():
        np.testing.assert_array_equal(blocked[channel], co)


def test_invalid_frames_of_every_block_are_named_and_nothing_is_keyed(blender, monkeypatch):
    bpy = blender
    from blender_ik_addon import bake
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    for frame, flat in ((4, False), (5, True), (6, True), (7, False), (20, False), (21, True), (23, True),
                        (24, False)):
        target.scale = (1.0, 1.0, 0.0 if flat else 1.0)
        target.keyframe_insert("scale", frame=frame)
    from blender_ik_addon import keys
    for curve in keys.object_fcurves(target):
        if curve.data_path == "scale":
            for key in curve.keyframe_points:
                key.interpolation = "CONSTANT"
    monkeypatch.setattr(bake, "BLOCK_FRAMES", 7)
    with pytest.raises(ChainError, match=r"zero-scale up axis at frames 5-6, 21-23$"):
        bake_armature(bpy.context.scene, obj, "ALL", 1, 30)
    assert all_rotation_keys(obj) == {}


def rotations_played(bpy, obj, frames):
    """The chain bones' quaternions Blender evaluates at ``frames`` (subframes allowed): (frames, 3, 4)."""
    played = []
    for frame in frames:
        whole = math.floor(frame)
        bpy.context.scene.frame_set(whole, subframe=frame - whole)
        played.append([tuple(obj.pose.bones[name].rotation_quaternion) for name in ("b1", "b2", "b3")])
    return np.array(played)


def test_samples_play_what_linear_keys_play(blender):
    """At every baked frame the samples give the keys' pose, to float32; between frames they interpolate linearly,
    as the LINEAR keys do."""
    bpy = blender
    from blender_ik_addon import keys
    from blender_ik_addon.ops import bake_armature
    from blender_ik_addon.chain import rotation_values, set_rotation
    obj, target = setup(bpy)
    pose = {name: rotation_values(obj.pose.bones[name]) for name in ("b1", "b2", "b3")}
    whole, between = np.arange(1, 41), np.arange(1, 40) + 0.3
    bake_armature(bpy.context.scene, obj, "ALL", 1, 40)
    keyed = rotations_played(bpy, obj, np.concatenate([whole, between]))
    obj.animation_data_clear()
    for name, values in pose.items():  # the same start as the keys' bake (the pose the first values continue)
        set_rotation(obj.pose.bones[name], values)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 40, output="SAMPLES")
    assert result.output == "SAMPLES" and "to samples" in result.summary()
    assert all(len(curve.keyframe_points) == 0 and len(curve.sampled_points) == 40
               for curve in keys.object_fcurves(obj))
    sampled = rotations_played(bpy, obj, np.concatenate([whole, between]))
    np.testing.assert_array_equal(sampled[:40].astype(np.float32), keyed[:40].astype(np.float32))
    np.testing.assert_allclose(sampled[40:], 0.7 * sampled[:39] + 0.3 * sampled[1:40], atol=1e-6)
    np.testing.assert_allclose(sampled[40:], keyed[40:], atol=1e-6)
    check_replay(bpy, obj, target, result)


def test_the_operator_bakes_samples(blender, capfd):
    bpy = blender
    from blender_ik_addon import keys
    obj, target = setup(bpy)
    capfd.readouterr()
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30, output="SAMPLES") == {"FINISHED"}
    assert "Baked 30 frames (1-30) to samples" in capfd.readouterr().out
    curves = [curve for curve in keys.object_fcurves(obj) if curve.data_path.startswith("pose.bones")]
    assert len(curves) == 12 and all(len(curve.sampled_points) == 30 for curve in curves)


def test_a_bake_to_samples_replaces_keys_and_samples_inside_its_range(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    for frame in (10, 20, 30):
        obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=frame)
    bake_armature(bpy.context.scene, obj, "ALL", 10, 30, output="SAMPLES")
    assert [list(k[:, 0]) for k in rotation_keys(obj, "b1", "rotation_quaternion", True)] == [
        list(range(10, 31))] * 4
    result = bake_armature(bpy.context.scene, obj, "ALL", 5, 50, output="SAMPLES")  # over the samples
    assert [list(k[:, 0]) for k in rotation_keys(obj, "b1", "rotation_quaternion", True)] == [
        list(range(5, 51))] * 4
    check_replay(bpy, obj, target, result)


def sample_b1(bpy, obj, start, end):
    """Samples on the first bone's quaternion over start-end (Graph Editor > Channel > Keys to Samples)."""
    from blender_ik_addon import keys
    obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=start)
    for curve in keys.object_fcurves(obj):
        if curve.data_path == 'pose.bones["b1"].rotation_quaternion':
            curve.convert_to_samples(start, end + 1)


@pytest.mark.parametrize("case, arguments, message", [
    ("none", dict(step=2), r"Samples are one per frame: bake them with step 1 \(got 2\), or bake keys"),
    ("none", dict(interpolation="BEZIER"),
     r"Samples play linearly between frames: bake them with Linear interpolation \(got Bezier\), or bake keys"),
    ("keys", {}, r"Chain 'b3': The F-curve rotation_quaternion\[0\] of bone 'b1' has keys outside frames 10-30 "
                 r"\(2 of them, frames 5 to 40\), which a bake to samples would delete .*: bake to keys \(which "
                 r"keeps them\), or delete them"),
    ("samples", {}, r"rotation_quaternion\[0\] of bone 'b1' has samples outside frames 10-30 \(15 of them, "
                    r"frames 5 to 40\), .*: "
                    r"bake a range that covers them, or turn them into keys \(Graph Editor > Channel > Samples to "
                    r"Keys\) and bake to keys"),
    ("samples", dict(output="KEYS"), r"rotation_quaternion\[0\] of bone 'b1' holds samples \(Keys to Samples\), "
                                     r"which take no keys: bake to samples, or turn them into keys first"),
])
def test_bakes_that_samples_cannot_hold_are_refused_and_change_nothing(blender, case, arguments, message):
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    if case == "keys":
        for frame in (5, 20, 40):
            obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=frame)
    elif case == "samples":
        sample_b1(bpy, obj, 5, 40)
    from blender_ik_addon import keys

    def points():
        return {(curve.data_path, curve.array_index): ([tuple(key.co) for key in curve.keyframe_points],
                                                       [tuple(point.co) for point in curve.sampled_points])
                for curve in keys.object_fcurves(obj)}

    before = points()
    assert len(before) == (4 if case != "none" else 0)
    arguments = dict(dict(output="SAMPLES"), **arguments)
    with pytest.raises(ChainError, match=message):
        bake_armature(bpy.context.scene, obj, "ALL", 10, 30, **arguments)
    assert points() == before


@pytest.mark.parametrize("with_pole", [False, True])
def test_invalid_samples_are_named_frame_by_frame(blender, with_pole):
    """A non-finite target or pole, or a zero-length up axis, marks its own samples and no others (the check
    looks sample by sample only when some value is not finite)."""
    from blender_ik_addon import bake
    from blender_ik_addon.chain import ChainSpec
    target = np.tile(np.eye(4), (8, 1, 1))
    target[2, 0, 3] = np.nan
    target[5, 2, 1] = np.inf
    target[6, :3, 2] = 0.0  # the up axis (Z) has no length
    pole = np.zeros((8, 3)) if with_pole else None
    if with_pole:
        pole[3, 1] = -np.inf
    expected = np.isin(np.arange(8), [2, 5, 6] + ([3] if with_pole else []))
    np.testing.assert_array_equal(bake._invalid_samples(ChainSpec(up_axis="Z"), target, pole), expected)
    fine = np.tile(np.eye(4), (8, 1, 1))
    assert not bake._invalid_samples(ChainSpec(up_axis="-Y"), fine, np.zeros((8, 3)) if with_pole else None).any()


@pytest.mark.parametrize("start, end, step, expected", [
    (1, 30, 1, "Baked 30 frames (1-30)"), (7, 7, 1, "Baked 1 frame (7)"), (-30, -1, 1, "Baked 30 frames (-30 to -1)"),
    (-5, 5, 5, "Baked 3 frames (-5 to 5)")])
def test_the_summary_reads_right_for_one_frame_and_negative_frames(blender, start, end, step, expected):
    from blender_ik_addon import report
    from blender_ik_addon.bake import BakeResult
    result = BakeResult(np.arange(start, end + 1, step), [], True)
    assert result.summary().startswith(expected + ","), result.summary()
    assert report.compact_frames([-3, -2, -1, 4, 5, 7]) == "-3 to -1, 4-5, 7"


@pytest.mark.parametrize("size", ["short", "long"])
@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_a_rebake_leaves_blender_no_relations_to_rebuild(blender, monkeypatch, output, size):
    """Removing a datablock, or creating F-curves, makes Blender rebuild the scene's dependency relations at the next
    update (14 ms with a generated Rigify human in the scene, more than a short bake). A first bake creates its
    F-curves, so the update that shows its keys rebuilds them anyway: the target's throwaway action copy is removed
    before it. A short re-bake creates and removes nothing: it reads the old keys for the exact undo and evaluates the
    target frame by frame. A long one ("long": the limits forced to 0) copies both actions, and they wait until after
    its last update, to go together. Nothing is left behind, and the keys play the solve."""
    bpy = blender
    from blender_ik_addon import bake, keys, sampling
    from blender_ik_addon.ops import bake_armature
    obj, target = setup(bpy)
    names = {action.name for action in bpy.data.actions}
    seen = []
    show_keys = bake._show_keys

    def counting(armature):
        seen.append(sorted(action.name for action in bpy.data.actions if action.name not in names))
        show_keys(armature)

    monkeypatch.setattr(bake, "_show_keys", counting)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60, output=output)  # 60 frames: the target is sampled
    first = obj.animation_data.action.name
    assert seen == [[first]]  # the armature's new action only: the target's copy went before the update
    assert len(result.frames) == 60
    if size == "long":
        monkeypatch.setattr(keys, "_SNAPSHOT_READ_POINTS", 0)
        monkeypatch.setattr(sampling, "_KEEP_DATA_EVALUATIONS", 0)
    seen.clear()
    names.add(first)
    result = bake_armature(bpy.context.scene, obj, "ALL", 1, 60, output=output)
    if size == "short":
        assert seen == [[]]
    else:  # the target's copy and the snapshot's, both still there
        assert len(seen) == 1 and {name.rsplit(".", 1)[0] for name in seen[0]} == {target.animation_data.action.name,
                                                                                   first}
    assert {action.name for action in bpy.data.actions} == names
    check_replay(bpy, obj, target, result)


@pytest.mark.parametrize("misuse", ["bake_chains of a mesh", "bake_armature of a mesh", "the chain list as specs",
                                    "one name as a string"])
def test_a_scripts_misuse_of_the_bake_api_is_refused_by_a_chain_error(blender, misuse):
    """A script's mistakes reach the bake as a ChainError with what to do, nothing changed, not as a traceback from deep
    inside (an AttributeError for a mesh, "no attribute 'goals'" for the chain list). One chain's name given as a
    string is that chain, not its letters."""
    bpy = blender
    from blender_ik_addon import bake, ops, props
    from blender_ik_addon.chain import ChainError
    from rigs import arm_with_chain, pose_snapshot
    obj, chain = arm_with_chain(bpy)
    mesh = bpy.data.objects.new("Mesh", bpy.data.meshes.new("Mesh"))
    scene = bpy.context.scene
    scene.collection.objects.link(mesh)
    before = pose_snapshot(obj)
    if misuse == "one name as a string":
        result = ops.bake_armature(scene, obj, names="arm", frame_start=1, frame_end=3)
        assert [baked.spec.label for baked in result.chains] == ["arm"]
        assert obj.animation_data is not None and obj.animation_data.action is not None
        return
    calls = {"bake_chains of a mesh": lambda: bake.bake_chains(scene, mesh, [props.chain_spec(chain)], 1, 5),
             "bake_armature of a mesh": lambda: ops.bake_armature(scene, mesh),
             "the chain list as specs": lambda: bake.bake_chains(scene, obj, obj.blender_ik.chains, 1, 5)}
    with pytest.raises(ChainError, match="is not an armature object|given as ChainSpec values"):
        calls[misuse]()
    assert obj.animation_data is None and mesh.animation_data is None and pose_snapshot(obj) == before
