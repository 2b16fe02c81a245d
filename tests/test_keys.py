"""Blender tests for keys.py: the keys written are judged by what Blender evaluates, on every bpy version."""
import math

import bpy
import numpy as np
import pytest
from conftest import python_handlers

from blender_ik_addon import keys

LAYERED = "action_slot" in bpy.types.AnimData.bl_rna.properties
QUAT = 'pose.bones["B"].rotation_quaternion'
EULER = 'pose.bones["B"].rotation_euler'
LOCATION = 'pose.bones["B"].location'


@pytest.fixture
def empty_file():
    """An empty Blender file; keys.py needs nothing of the rest of the add-on."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy


def make_rig(name="Rig", bone_name="B"):
    armature = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, armature)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode='EDIT')
    bone = armature.edit_bones.new(bone_name)
    bone.head = (0.0, 0.0, 0.0)
    bone.tail = (0.0, 1.0, 0.0)
    bpy.ops.object.mode_set(mode='OBJECT')
    return obj


def make_empty(name="Empty"):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def random_quaternions(count, seed=0):
    q = np.random.default_rng(seed).normal(size=(count, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q[q[:, 0] < 0] *= -1
    return q


def quaternion_channels(group="B"):
    return [(QUAT, i, group) for i in range(4)]


def evaluated(obj, path, frame, size):
    """The value Blender evaluates for ``obj.path`` at ``frame`` (a subframe is allowed)."""
    whole = math.floor(frame)
    bpy.context.scene.frame_set(whole, subframe=frame - whole)
    return np.array(obj.path_resolve(path)[:size])


def key_snapshot(fcurve):
    """Every key of ``fcurve`` as plain Python values, read one by one (independent of keys.py)."""
    return [
        {
            "co": tuple(k.co), "handle_left": tuple(k.handle_left), "handle_right": tuple(k.handle_right),
            "handle_left_type": k.handle_left_type, "handle_right_type": k.handle_right_type,
            "interpolation": k.interpolation, "easing": k.easing, "type": k.type,
            "back": k.back, "amplitude": k.amplitude, "period": k.period,
        }
        for k in fcurve.keyframe_points
    ]


def test_write_keys_creates_an_action_that_animates_the_bone(empty_file):
    rig = make_rig()
    frames = np.arange(1.0, 11.0)
    values = random_quaternions(len(frames))

    keys.write_keys(rig, quaternion_channels(), frames, values)

    anim_data = rig.animation_data
    assert anim_data.action is not None and anim_data.action.name == "RigAction"
    if LAYERED:
        assert anim_data.action_slot is not None
    for frame, expected in zip(frames, values):
        np.testing.assert_allclose(evaluated(rig, QUAT, frame, 4), expected, atol=1e-6)
    # LINEAR by default: halfway between two keys is the average.
    np.testing.assert_allclose(evaluated(rig, QUAT, 3.5, 4), (values[2] + values[3]) / 2, atol=1e-5)

    fcurves = keys.object_fcurves(rig)
    assert sorted((f.data_path, f.array_index) for f in fcurves) == [(QUAT, i) for i in range(4)]
    for fcurve in fcurves:
        assert fcurve.group is not None and fcurve.group.name == "B"
        assert len(fcurve.keyframe_points) == len(frames)
        for key in fcurve.keyframe_points:
            assert key.interpolation == 'LINEAR'
            assert (key.handle_left_type, key.handle_right_type) == ('AUTO_CLAMPED', 'AUTO_CLAMPED')
            assert key.type == 'KEYFRAME'


def test_interpolation_argument(empty_file):
    rig = make_rig()
    values = random_quaternions(3)
    keys.write_keys(rig, quaternion_channels(), [1.0, 5.0, 9.0], values, interpolation="CONSTANT")
    np.testing.assert_allclose(evaluated(rig, QUAT, 4.9, 4), values[0], atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, QUAT, 5.0, 4), values[1], atol=1e-6)

    keys.write_keys(rig, quaternion_channels(), [1.0, 5.0, 9.0], values, interpolation="BEZIER")
    # Auto-clamped handles were recalculated: the curve passes smoothly through the keys, not flat at 0.
    fcurve = keys.find_fcurve(rig, QUAT, 0)
    middle = fcurve.keyframe_points[1]
    assert middle.interpolation == 'BEZIER'
    assert middle.handle_left[0] < middle.co[0] < middle.handle_right[0]
    np.testing.assert_allclose(evaluated(rig, QUAT, 5.0, 4), values[1], atol=1e-6)


def test_keys_outside_the_range_are_kept_and_inside_replaced(empty_file):
    rig = make_rig()
    bone = rig.pose.bones["B"]
    for frame in (1, 5, 20, 30):
        bone.rotation_quaternion = (1.0, 0.1 * frame, 0.0, 0.0)
        rig.keyframe_insert(QUAT, frame=frame, group="B")
        bone.location = (0.0, 0.0, float(frame))
        rig.keyframe_insert(LOCATION, index=2, frame=frame, group="B")
    w = keys.find_fcurve(rig, QUAT, 0)
    first, last = w.keyframe_points[0], w.keyframe_points[3]
    first.interpolation = 'CONSTANT'
    first.type = 'BREAKDOWN'
    first.handle_left_type = first.handle_right_type = 'FREE'
    first.handle_left = (0.25, 0.5)
    first.handle_right = (2.5, 3.0)
    last.interpolation = 'ELASTIC'
    last.easing = 'EASE_IN'
    last.amplitude = 2.0
    last.type = 'EXTREME'
    last.handle_left_type = last.handle_right_type = 'FREE'
    last.handle_left = (28.0, -1.0)
    last.handle_right = (33.0, 4.0)
    location_before = key_snapshot(keys.find_fcurve(rig, LOCATION, 2))
    location_at_12 = evaluated(rig, LOCATION, 12.0, 3)
    kept_before = [key_snapshot(keys.find_fcurve(rig, QUAT, i)) for i in range(4)]

    frames = np.arange(5.0, 21.0)
    values = random_quaternions(len(frames))
    keys.write_keys(rig, quaternion_channels(), frames, values)

    def without_handles(key):
        # Automatic handles of kept keys are recalculated for their new neighbours, as in Blender.
        return {name: value for name, value in key.items() if name not in ("handle_left", "handle_right")}

    for index in range(4):
        after = key_snapshot(keys.find_fcurve(rig, QUAT, index))
        assert [k["co"][0] for k in after] == [1.0, *frames, 30.0]
        assert without_handles(after[0]) == without_handles(kept_before[index][0])
        assert without_handles(after[-1]) == without_handles(kept_before[index][-1])
    # The edited keys on W keep every attribute, handles included (FREE handles are never recalculated).
    after_w = key_snapshot(w)
    assert after_w[0] == kept_before[0][0]
    assert after_w[-1] == kept_before[0][-1]
    assert after_w[-1]["interpolation"] == 'ELASTIC' and after_w[-1]["easing"] == 'EASE_IN'
    # The other channel of the same bone and group is untouched.
    assert key_snapshot(keys.find_fcurve(rig, LOCATION, 2)) == location_before
    assert len(keys.object_fcurves(rig)) == 5

    for frame, expected in zip(frames, values):
        np.testing.assert_allclose(evaluated(rig, QUAT, frame, 4), expected, atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, QUAT, 1.0, 4), (1.0, 0.1, 0.0, 0.0), atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, QUAT, 30.0, 4), (1.0, 3.0, 0.0, 0.0), atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, LOCATION, 12.0, 3), location_at_12, atol=1e-6)


def test_second_bake_over_a_sub_range(empty_file):
    rig = make_rig()
    frames = np.arange(1.0, 31.0)
    first = random_quaternions(len(frames), seed=1)
    keys.write_keys(rig, quaternion_channels(), frames, first)
    inner = (frames >= 10) & (frames <= 20)
    second = random_quaternions(int(inner.sum()), seed=2)
    # A frame a hair off the stored one still counts as inside the range.
    keys.write_keys(rig, quaternion_channels(), frames[inner] + np.r_[-1e-5, np.zeros(inner.sum() - 1)], second)

    expected = first.copy()
    expected[inner] = second
    for frame, value in zip(frames, expected):
        np.testing.assert_allclose(evaluated(rig, QUAT, frame, 4), value, atol=1e-5)
    assert all(len(f.keyframe_points) == len(frames) for f in keys.object_fcurves(rig))
    assert len(keys.object_fcurves(rig)) == 4
    assert len(bpy.data.actions) == 1


def test_euler_channels(empty_file):
    rig = make_rig()
    rig.pose.bones["B"].rotation_mode = 'XYZ'
    frames = np.array([1.0, 2.0, 4.0, 8.0])
    values = np.random.default_rng(3).uniform(-3.0, 3.0, size=(len(frames), 3))
    keys.write_keys(rig, [(EULER, i, "B") for i in range(3)], frames, values)
    for frame, expected in zip(frames, values):
        np.testing.assert_allclose(evaluated(rig, EULER, frame, 3), expected, atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, EULER, 3.0, 3), (values[1] + values[2]) / 2, atol=1e-5)


def test_object_fcurves_and_find_fcurve_read_keyframe_insert_animation(empty_file):
    empty = make_empty()
    for frame, x in ((1, 0.0), (10, 2.0)):
        empty.location = (x, 2 * x, 3 * x)
        empty.keyframe_insert("location", frame=frame)

    fcurves = keys.object_fcurves(empty)
    assert sorted((f.data_path, f.array_index) for f in fcurves) == [("location", i) for i in range(3)]
    y = keys.find_fcurve(empty, "location", 1)
    assert y is not None and y.array_index == 1
    assert y.evaluate(10.0) == pytest.approx(4.0)
    assert keys.find_fcurve(empty, "location", 3) is None
    assert keys.find_fcurve(empty, "rotation_euler", 0) is None


def test_unanimated_objects_have_no_fcurves(empty_file):
    empty = make_empty()
    assert keys.object_fcurves(empty) == []
    assert keys.find_fcurve(empty, "location", 0) is None
    empty.animation_data_create()
    assert keys.object_fcurves(empty) == []
    keys.ensure_action(empty)
    assert keys.object_fcurves(empty) == []


def test_ensure_action(empty_file):
    empty = make_empty("Target")
    action = keys.ensure_action(empty)
    assert action.name == "TargetAction"
    assert empty.animation_data.action == action
    if LAYERED:
        assert empty.animation_data.action_slot is not None
        assert len(action.slots) == 1
    assert keys.ensure_action(empty, name="Other") == action
    if LAYERED:
        assert len(action.slots) == 1

    other = make_empty("Other")
    assert keys.ensure_action(other, name="Custom").name == "Custom"


def test_ensure_action_leaves_existing_animation_data_alone(empty_file):
    """An object that has animation data is not sent through animation_data_create(), which makes Blender rebuild
    every dependency relation of the scene at the next update (16 ms on a generated Rigify human) even when the
    data exists: each re-bake would pay it. The object stands behind a proxy that fails on that call."""
    empty = make_empty("Target")
    action = keys.ensure_action(empty)

    class Proxy:
        animation_data = empty.animation_data
        id_type, name = empty.id_type, empty.name

        def animation_data_create(self):
            raise AssertionError("animation_data_create() called on an object that has animation data")

    assert keys.ensure_action(Proxy()) == action
    empty.animation_data.action = None
    made = keys.ensure_action(Proxy())
    assert made not in (None, action) and empty.animation_data.action == made


@pytest.mark.skipif(not LAYERED, reason="slots exist from Blender 4.4")
def test_each_object_sees_only_its_own_slot_of_a_shared_action(empty_file):
    a, b = make_empty("A"), make_empty("B")
    keys.write_keys(a, [("location", 0, "")], [1.0, 2.0], [[1.0], [2.0]])
    b.animation_data_create().action = a.animation_data.action
    action = keys.ensure_action(b)
    assert action == a.animation_data.action
    assert b.animation_data.action_slot is not None
    assert b.animation_data.action_slot != a.animation_data.action_slot
    keys.write_keys(b, [("scale", 2, "")], [1.0, 2.0], [[5.0], [6.0]])

    assert [(f.data_path, f.array_index) for f in keys.object_fcurves(a)] == [("location", 0)]
    assert [(f.data_path, f.array_index) for f in keys.object_fcurves(b)] == [("scale", 2)]
    bpy.context.scene.frame_set(2)
    assert a.location[0] == pytest.approx(2.0) and a.scale[2] == pytest.approx(1.0)
    assert b.scale[2] == pytest.approx(6.0) and b.location[0] == pytest.approx(0.0)


def test_bad_shapes_are_refused_before_anything_changes(empty_file):
    rig = make_rig()
    with pytest.raises(ValueError):
        keys.write_keys(rig, quaternion_channels(), [1.0, 2.0], np.zeros((2, 3)))
    with pytest.raises(ValueError):
        keys.write_keys(rig, quaternion_channels(), [2.0, 1.0], np.zeros((2, 4)))
    with pytest.raises(ValueError):
        keys.write_keys(rig, quaternion_channels(), [1.0, 2.0], np.zeros((2, 4)), interpolation="SMOOTH")
    assert rig.animation_data is None
    assert len(bpy.data.actions) == 0


def test_selection_helpers_round_trip(empty_file):
    rig = make_rig()
    bone = rig.pose.bones["B"]
    for selected in (True, False, True):
        keys.set_pose_bone_selected(bone, selected)
        assert keys.is_pose_bone_selected(bone) is selected




def test_no_handlers_are_added(empty_file):
    # Blender's own startup scripts have handlers of their own: compare with what was there before.
    before = python_handlers()
    rig = make_rig()
    keys.write_keys(rig, quaternion_channels(), [1.0, 2.0], random_quaternions(2))
    keys.set_pose_bone_selected(rig.pose.bones["B"], True)
    assert python_handlers() == before


KEY_ATTRIBUTES = ("co", "handle_left", "handle_right", "handle_left_type", "handle_right_type", "interpolation",
                  "easing", "type", "back", "amplitude", "period", "select_control_point", "select_left_handle",
                  "select_right_handle")


def every_attribute(fcurve):
    """Every attribute of every key, as Python values (floats exactly as stored)."""
    return [{name: tuple(value) if name in ("co", "handle_left", "handle_right") else value
             for name in KEY_ATTRIBUTES for value in (getattr(key, name),)} for key in fcurve.keyframe_points]


@pytest.mark.parametrize("frames", ["whole", "fractional", "one"], ids=["whole frames", "a fractional frame", "one frame"])
@pytest.mark.parametrize("kept", [False, True], ids=["alone", "between kept keys"])
@pytest.mark.parametrize("interpolation", ["LINEAR", "BEZIER", "CONSTANT"])
def test_bulk_keys_equal_keys_inserted_one_by_one(empty_file, interpolation, kept, frames):
    """write_keys gives every new key, its handles included, bit for bit what keyframe_insert gives (then the
    interpolation set on each new key, as a user would: keyframe_insert from Python ignores the preference for
    it); the old keys on both sides stay exactly as they were, handles included (keyframe_insert would move
    their automatic handles, and with them the animation outside the range). Whole frames with nothing kept take
    the way through samples (keys._through_samples), the others keyframe_points.add: both give these keys. A lone
    key gets the handles keyframe_insert gives it (no neighbours to compute them from)."""
    rng = np.random.default_rng(5)
    kind = frames
    frames = np.array([7.0] if kind == "one" else [3.0, 4.0, 5.0, 7.0, 8.0, 12.0, 13.0, 14.0, 20.0])
    if kind == "fractional":
        frames[4] = 8.5
    assert keys._through_samples(frames) == (kind != "fractional")
    values = rng.normal(size=(len(frames), 3))
    if len(frames) > 3:
        values[3] = values[2]  # a flat stretch, where auto-clamped handles flatten
    old = [(-4.0, (0.5, -1.0, 2.0)), (1.0, (0.2, 0.3, -0.4)), (25.0, (-0.3, 0.8, 0.1)), (31.0, (1.0, 1.0, 1.0))]
    # Replaced by the bulk write: one between the new frames, one on the last.
    inside = [(7.0, (9.0, 9.0, 9.0))] if kind == "one" else [(6.0, (9.0, 9.0, 9.0)), (20.0, (-9.0, 0.0, 9.0))]
    one_by_one, bulk = make_empty("OneByOne"), make_empty("Bulk")
    for obj, extra in ((one_by_one, []), (bulk, inside)):
        for frame, value in sorted((old if kept else []) + extra):
            obj.location = value
            obj.keyframe_insert("location", frame=frame)
    for frame, value in zip(frames, values):
        one_by_one.location = value
        one_by_one.keyframe_insert("location", frame=frame)
        for index in range(3):
            key = next(k for k in keys.find_fcurve(one_by_one, "location", index).keyframe_points if k.co[0] == frame)
            key.interpolation = interpolation
    outside = [[key for key in every_attribute(keys.find_fcurve(bulk, "location", index))
                if not frames[0] <= key["co"][0] <= frames[-1]] for index in range(3)]
    keys.write_keys(bulk, [("location", index, "") for index in range(3)], frames, values, interpolation,
                    replace=(frames[0], frames[-1]))

    for index in range(3):
        inserted = every_attribute(keys.find_fcurve(one_by_one, "location", index))
        written = every_attribute(keys.find_fcurve(bulk, "location", index))
        assert len(written) == len(inserted) == len(frames) + (len(old) if kept else 0)
        inside_range = [key for key in written if frames[0] <= key["co"][0] <= frames[-1]]
        assert inside_range == [key for key in inserted if frames[0] <= key["co"][0] <= frames[-1]]
        assert [key for key in written if not frames[0] <= key["co"][0] <= frames[-1]] == outside[index]


def test_float32_values_key_the_same_as_float64(empty_file):
    a, b = make_empty("A"), make_empty("B")
    frames = np.arange(1.0, 20.0)
    values = np.random.default_rng(6).normal(size=(len(frames), 3))
    channels = [("location", index, "") for index in range(3)]
    keys.write_keys(a, channels, frames, values)
    keys.write_keys(b, channels, frames, values.astype(np.float32))
    for index in range(3):
        assert key_snapshot(keys.find_fcurve(a, "location", index)) == key_snapshot(keys.find_fcurve(b, "location", index))


def samples_of(fcurve):
    """Every sample of ``fcurve``: (frame, value) pairs and selection, read one by one (independent of keys.py)."""
    return [(tuple(point.co), point.select) for point in fcurve.sampled_points]


@pytest.mark.parametrize("values_dtype", [np.float64, np.float32])
def test_write_samples_creates_samples_that_play_linearly(empty_file, values_dtype):
    rig = make_rig()
    values = random_quaternions(10).astype(values_dtype)

    keys.write_samples(rig, quaternion_channels(), 3, values)

    fcurves = keys.object_fcurves(rig)
    assert sorted((f.data_path, f.array_index) for f in fcurves) == [(QUAT, i) for i in range(4)]
    for fcurve in fcurves:
        assert fcurve.group is not None and fcurve.group.name == "B"
        assert len(fcurve.keyframe_points) == 0
        column = values[:, fcurve.array_index]
        assert [co for co, _ in samples_of(fcurve)] == [
            (float(frame), float(np.float32(value))) for frame, value in zip(range(3, 13), column)]
    for frame, expected in zip(range(3, 13), values):
        np.testing.assert_array_equal(evaluated(rig, QUAT, frame, 4), expected.astype(np.float32))
    # Linear between frames, as LINEAR keys on every frame play; held beyond the last.
    np.testing.assert_allclose(evaluated(rig, QUAT, 5.25, 4), 0.75 * values[2] + 0.25 * values[3], atol=1e-6)
    np.testing.assert_allclose(evaluated(rig, QUAT, 40, 4), values[-1], atol=1e-7)


def test_write_samples_replaces_keys_and_samples_inside_the_frames(empty_file):
    rig = make_rig()
    bone = rig.pose.bones["B"]
    for frame in (2, 6):
        bone.keyframe_insert("rotation_quaternion", frame=frame)
    first, second = random_quaternions(5, seed=1), random_quaternions(7, seed=2)
    keys.write_samples(rig, quaternion_channels(), 2, first)  # keys at 2 and 6: inside 2-6
    keys.write_samples(rig, quaternion_channels(), 1, second)  # samples 2-6 inside 1-7
    for fcurve in keys.object_fcurves(rig):
        assert len(fcurve.keyframe_points) == 0
        assert [co[0] for co, _ in samples_of(fcurve)] == list(map(float, range(1, 8)))
    for frame, expected in zip(range(1, 8), second):
        np.testing.assert_allclose(evaluated(rig, QUAT, frame, 4), expected, atol=1e-7)


@pytest.mark.parametrize("existing", ["keys", "samples"])
def test_write_samples_refuses_a_curve_with_points_outside_the_frames(empty_file, existing):
    rig = make_rig()
    bone = rig.pose.bones["B"]
    for frame in (1, 20):
        bone.keyframe_insert("rotation_quaternion", frame=frame)
    if existing == "samples":
        for fcurve in keys.object_fcurves(rig):
            fcurve.convert_to_samples(1, 21)
    before = {fcurve.array_index: (key_snapshot(fcurve), samples_of(fcurve)) for fcurve in keys.object_fcurves(rig)}
    outside = 2 if existing == "keys" else 10  # the keys at 1 and 20; the samples 1-4 and 15-20
    with pytest.raises(ValueError, match=rf"rotation_quaternion\[0\] has {existing} outside frames 5-14 "
                                         rf"\({outside} of them, frames 1 to 20\)"):
        keys.write_samples(rig, quaternion_channels(), 5, random_quaternions(10))
    assert before == {f.array_index: (key_snapshot(f), samples_of(f)) for f in keys.object_fcurves(rig)}


def test_write_keys_refuses_a_sampled_curve(empty_file):
    rig = make_rig()
    keys.write_samples(rig, quaternion_channels(), 1, random_quaternions(5))
    before = {f.array_index: samples_of(f) for f in keys.object_fcurves(rig)}
    with pytest.raises(ValueError, match=r"rotation_quaternion\[0\] holds samples, which take no keys"):
        keys.write_keys(rig, quaternion_channels(), [1.0, 2.0], random_quaternions(2))
    assert before == {f.array_index: samples_of(f) for f in keys.object_fcurves(rig)}
    assert all(len(f.keyframe_points) == 0 for f in keys.object_fcurves(rig))


@pytest.mark.parametrize("before", ["keys", "samples", "nothing"])
@pytest.mark.parametrize("bake", ["keys", "samples"])
def test_restore_channels_puts_keys_and_samples_back_exactly(empty_file, before, bake):
    rig = make_rig()
    if before != "nothing":
        keys.write_keys(rig, quaternion_channels(), [4.0, 9.0, 15.0], random_quaternions(3, seed=3))
        if before == "samples":
            for fcurve in keys.object_fcurves(rig):
                fcurve.convert_to_samples(4, 16)
                fcurve.sampled_points[2].select = True  # the selection comes back too
    saved = {f.array_index: (key_snapshot(f), samples_of(f)) for f in keys.object_fcurves(rig)}
    expected = {frame: evaluated(rig, QUAT, frame, 4) for frame in (4, 6.5, 15)}
    actions = set(bpy.data.actions)
    snapshot = keys.snapshot_channels(rig, [QUAT])
    if bake == "samples":
        keys.write_samples(rig, quaternion_channels(), 1, random_quaternions(20, seed=4))
    elif before != "samples":  # keys are never written over samples
        keys.write_keys(rig, quaternion_channels(), np.arange(1.0, 21.0), random_quaternions(20, seed=4))
    keys.restore_channels(rig, snapshot)
    keys.discard_snapshot(snapshot)
    assert saved == {f.array_index: (key_snapshot(f), samples_of(f)) for f in keys.object_fcurves(rig)}
    assert set(bpy.data.actions) == actions
    if before != "nothing":  # and Blender plays them, not a stale evaluated copy
        for frame, values in expected.items():
            np.testing.assert_array_equal(evaluated(rig, QUAT, frame, 4), values)


def test_samples_reach_blenders_last_frame(empty_file):
    """convert_to_samples excludes its end and takes no end past Blender's last frame: the samples are still
    made up to it."""
    rig = make_rig()
    last = bpy.types.Scene.bl_rna.properties["frame_current"].hard_max
    values = random_quaternions(5, seed=5)
    keys.write_samples(rig, quaternion_channels(), last - 4, values)
    for fcurve in keys.object_fcurves(rig):
        assert [co[0] for co, _ in samples_of(fcurve)] == list(map(float, range(last - 4, last + 1)))
    np.testing.assert_allclose(evaluated(rig, QUAT, last, 4), values[-1], atol=1e-7)
    with pytest.raises(ValueError, match=rf"at most {keys.MAX_SAMPLES} fit in one F-curve"):
        keys.write_samples(make_rig("Other"), quaternion_channels(), -last, np.zeros((keys.MAX_SAMPLES + 1, 4)))


def _linear(fcurve):
    for key in fcurve.keyframe_points:
        key.interpolation = "LINEAR"


def _prior_animation(rig, prior):
    """Give ``rig`` the animation state ``prior`` before the bake's keys (see the test below)."""
    bone = rig.pose.bones["B"]
    if prior in ("action on the object", "action cleared"):
        for frame, x in ((1, 0.0), (10, 2.0)):
            rig.location.x = x
            rig.keyframe_insert("location", index=0, frame=frame)
        _linear(keys.find_fcurve(rig, "location", 0))
        if prior == "action cleared":
            rig.animation_data.action = None
    elif prior in ("action on the bone's location", "NLA only"):
        for frame, y in ((1, 0.0), (10, 0.5)):
            bone.location.y = y
            bone.keyframe_insert("location", index=1, frame=frame)
        _linear(keys.find_fcurve(rig, LOCATION, 1))
        if prior == "NLA only":
            anim_data = rig.animation_data
            anim_data.nla_tracks.new().strips.new("Walk", 1, anim_data.action)
            anim_data.action = None
    elif prior == "animation data only":
        rig.animation_data_create()
    elif prior == "action without a slot":
        rig.animation_data_create().action = bpy.data.actions.new("Bare")


PRIOR_ANIMATION = ["none", "animation data only", "action on the object", "action on the bone's location",
                   "action cleared", "NLA only"] + (["action without a slot"] if LAYERED else [])


@pytest.mark.parametrize("prior", PRIOR_ANIMATION)
def test_new_fcurves_in_existing_animation_data_play_back(empty_file, prior):
    """Keys on a channel nothing animated before, written into the animation data an object already has, after the
    scene was evaluated with it (ensure_action no longer calls animation_data_create(), whose side effect was a
    rebuild of the dependency relations): played back, the bone turns by the keys, judged by the tail Blender
    evaluates; the animation that was there still plays (the bone's location, the object's)."""
    import mathutils
    rig = make_rig()
    _prior_animation(rig, prior)
    scene = bpy.context.scene
    for frame in (1, 4):  # the dependency relations are built for the animation before the keys
        scene.frame_set(frame)
    frames = np.arange(1.0, 11.0)
    quaternions = random_quaternions(len(frames), seed=3)
    keys.write_keys(rig, quaternion_channels(), frames, quaternions)

    moved = prior in ("action on the bone's location", "NLA only")
    for frame in (2, 5, 9):
        scene.frame_set(frame)
        bone = rig.pose.bones["B"]
        head = mathutils.Vector((0.0, 0.5 * (frame - 1) / 9 if moved else 0.0, 0.0))
        expected = head + mathutils.Quaternion(quaternions[frame - 1]) @ mathutils.Vector((0.0, 1.0, 0.0))
        assert np.allclose(bone.tail, expected, atol=1e-5), (frame, tuple(bone.tail), tuple(expected))
        if prior == "action on the object":
            assert rig.matrix_world.translation.x == pytest.approx(2.0 * (frame - 1) / 9, abs=1e-6)
