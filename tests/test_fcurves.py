"""fcurves.evaluate_many against Blender's own FCurve.evaluate: equal bit for bit, and nothing of the user's data
changes."""
import bpy
import numpy as np
import pytest

from blender_ik_addon import fcurves, keys

INTERPOLATIONS = [item.identifier for item in bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items]
EASINGS = [item.identifier for item in bpy.types.Keyframe.bl_rna.properties["easing"].enum_items]
HANDLE_TYPES = [item.identifier for item in bpy.types.Keyframe.bl_rna.properties["handle_left_type"].enum_items]
FUNCTIONS = [item.identifier for item in bpy.types.FModifierFunctionGenerator.bl_rna.properties["function_type"]
             .enum_items]
CYCLE_MODES = [item.identifier for item in bpy.types.FModifierCycles.bl_rna.properties["mode_before"].enum_items]
NOISE_BLENDS = [item.identifier for item in bpy.types.FModifierNoise.bl_rna.properties["blend_type"].enum_items]
KEY_ATTRIBUTES = ("co", "handle_left", "handle_right", "handle_left_type", "handle_right_type", "interpolation",
                  "easing", "type", "back", "amplitude", "period", "select_control_point", "select_left_handle",
                  "select_right_handle")
FRAME_SETS = {
    "every frame": np.arange(-30, 91),
    "a step of 3": np.arange(-25, 80, 3),
    "as floats": np.arange(-10.0, 40.0),
    "one frame": np.array([7]),
    "sparse": np.array([-100000, 3, 100000]),
}


@pytest.fixture
def empty_file():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    yield bpy


COPY_MODES = ("whole action", "curve by curve")


@pytest.fixture(params=COPY_MODES)
def copy_mode(request, monkeypatch):
    """Both ways of copying the curves to sample: the whole action at once, or (for an action holding many
    keys) each curve onto a throwaway one. Counts the curves copied one by one."""
    if request.param == "curve by curve":
        monkeypatch.setattr(fcurves, "_WHOLE_ACTION_KEYS", 0)
    one_by_one = []
    sample = fcurves._sample

    def counted(fcurve, *args):
        one_by_one.append(fcurve)
        return sample(fcurve, *args)

    monkeypatch.setattr(fcurves, "_sample", counted)
    yield request.param, one_by_one


def make_empty(name="Holder"):
    obj = bpy.data.objects.new(name, None)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def random_settings(rng, modifier):
    """Random settings for every modifier type, a restricted range and an influence now and then."""
    kind = modifier.type
    if kind == "CYCLES":
        modifier.mode_before, modifier.mode_after = rng.choice(CYCLE_MODES, 2)
        modifier.cycles_before, modifier.cycles_after = (int(n) for n in rng.integers(0, 4, 2))
    elif kind == "NOISE":
        modifier.blend_type = rng.choice(NOISE_BLENDS)
        modifier.scale, modifier.strength = rng.uniform(0.5, 5.0, 2)
        modifier.phase, modifier.offset = rng.uniform(-3.0, 3.0, 2)
        modifier.depth = int(rng.integers(0, 4))
    elif kind == "GENERATOR":
        modifier.poly_order = int(rng.integers(1, 4))
        modifier.mode = rng.choice(["POLYNOMIAL", "POLYNOMIAL_FACTORISED"])
        modifier.use_additive = bool(rng.integers(2))
        modifier.coefficients = tuple(rng.uniform(-0.2, 0.2, len(modifier.coefficients)))
    elif kind == "FNGENERATOR":
        modifier.function_type = rng.choice(FUNCTIONS)
        modifier.amplitude, modifier.phase_multiplier = rng.uniform(0.2, 2.0, 2)
        modifier.phase_offset, modifier.value_offset = rng.uniform(-1.0, 1.0, 2)
        modifier.use_additive = bool(rng.integers(2))
    elif kind == "ENVELOPE":
        modifier.reference_value, modifier.default_min, modifier.default_max = rng.uniform(-1.0, 1.0, 3)
        # Points keep the min and max they are made with: setting those from Python crashes Blender.
        for frame in np.sort(rng.uniform(-20.0, 60.0, int(rng.integers(1, 4)))):
            modifier.control_points.add(float(frame))
    elif kind == "LIMITS":
        modifier.use_min_y = modifier.use_max_y = True
        modifier.min_y, modifier.max_y = np.sort(rng.normal(size=2))
        modifier.use_min_x = bool(rng.integers(2))
        modifier.min_x = float(rng.uniform(-10.0, 10.0))
    elif kind == "STEPPED":
        modifier.frame_step = float(rng.uniform(1.0, 6.0))
        modifier.frame_offset = float(rng.uniform(-2.0, 2.0))
    if kind != "STEPPED" and rng.random() < 0.3:  # (Stepped's own frame_start/end hide the restricted range)
        modifier.use_restricted_range = True
        modifier.frame_end, modifier.frame_start = sorted(rng.uniform(-10.0, 50.0, 2), reverse=True)
        modifier.blend_in, modifier.blend_out = rng.uniform(0.0, 5.0, 2)
    if rng.random() < 0.3:
        modifier.use_influence = True
        modifier.influence = float(rng.uniform(0.0, 1.0))


def random_curve(rng, obj, index, key_count, modifier_types=()):
    """An F-curve on ``obj`` with random keys, interpolations, easings, handles, extrapolation, modifiers."""
    path = f'["curve_{index}"]'
    frames = np.unique(np.round(rng.uniform(-20.0, 60.0, key_count) * 2) / 2)  # some keys on half frames
    # (An F-curve without keys: write one and delete it.)
    keys.write_keys(obj, [(path, 0, "")], frames if len(frames) else [0.0], rng.normal(size=(max(len(frames), 1), 1)),
                    "BEZIER")
    fcurve = keys.find_fcurve(obj, path, 0)
    if not len(frames):
        fcurve.keyframe_points.clear()
    for key in fcurve.keyframe_points:
        key.interpolation = rng.choice(INTERPOLATIONS)
        key.easing = rng.choice(EASINGS)
        key.back, key.amplitude, key.period = rng.uniform(0.0, 3.0), rng.uniform(0.0, 2.0), rng.uniform(0.5, 6.0)
        key.handle_left_type, key.handle_right_type = rng.choice(HANDLE_TYPES, 2)
    fcurve.update()  # automatic and vector handles as Blender computes them
    for key in fcurve.keyframe_points:
        # Free handles anywhere, even past the neighbouring key (Blender corrects such segments as it evaluates).
        if key.handle_left_type == "FREE":
            key.handle_left = np.array(key.co) + rng.normal(scale=(3.0, 1.0), size=2) - (1.5, 0.0)
        if key.handle_right_type == "FREE":
            key.handle_right = np.array(key.co) + rng.normal(scale=(3.0, 1.0), size=2) + (1.5, 0.0)
    fcurve.extrapolation = rng.choice(["CONSTANT", "LINEAR"])
    for kind in modifier_types:
        random_settings(rng, fcurve.modifiers.new(kind))
    return fcurve


def random_curves(seed=0):
    rng = np.random.default_rng(seed)
    obj = make_empty()
    kinds = ["CYCLES", "NOISE", "GENERATOR", "FNGENERATOR", "ENVELOPE", "LIMITS", "STEPPED"]
    curves = []
    for index in range(80):
        key_count = (0, 1, 2)[index] if index < 3 else int(rng.integers(1, 12))
        stack = () if index < 40 else rng.choice(kinds, int(rng.integers(1, 3)), replace=False)
        stack = sorted(stack, key=lambda kind: kind != "CYCLES")  # Blender takes Cycles first only
        if 20 <= index < 40:
            stack = ("CYCLES",)  # alone, so it comes first, as cycle-aware curves have it
        curves.append(random_curve(rng, obj, index, key_count, stack))
    curves.append(random_curve(rng, obj, 80, 0, ("GENERATOR",)))  # no keys but a value
    curves.append(random_curve(rng, obj, 81, 0, ("FNGENERATOR", "NOISE")))
    return obj, curves


def snapshot(fcurve):
    """Every key, the extrapolation and the modifiers of ``fcurve``, read one by one (not through fcurves.py)."""
    def plain(value):
        return tuple(value) if hasattr(value, "__len__") and not isinstance(value, str) else value

    modifiers = []
    for modifier in fcurve.modifiers:
        settings = {prop.identifier: plain(getattr(modifier, prop.identifier))
                    for prop in modifier.bl_rna.properties if prop.type != "COLLECTION"}
        if modifier.type == "ENVELOPE":
            settings["points"] = [(p.frame, p.min, p.max) for p in modifier.control_points]
        modifiers.append(settings)
    return {
        "keys": [{name: plain(getattr(key, name)) for name in KEY_ATTRIBUTES} for key in fcurve.keyframe_points],
        "samples": [tuple(point.co) for point in fcurve.sampled_points],
        "extrapolation": fcurve.extrapolation,
        "modifiers": modifiers,
        "path": (fcurve.data_path, fcurve.array_index),
    }


def blender_values(fcurve, frames):
    return np.array([fcurve.evaluate(frame) for frame in frames.tolist()])


@pytest.mark.parametrize("frames", FRAME_SETS.values(), ids=FRAME_SETS.keys())
def test_equal_to_evaluate_bit_for_bit(empty_file, monkeypatch, copy_mode, frames):
    obj, curves = random_curves()
    per_frame = []  # the curves evaluated one frame at a time instead of sampled
    evaluate_each = fcurves._evaluate_each

    def counted(fcurve, frames):
        per_frame.append(fcurve)
        return evaluate_each(fcurve, frames)

    monkeypatch.setattr(fcurves, "_evaluate_each", counted)
    values = fcurves.evaluate_many(curves, frames)
    # Only the curves without keys (which Blender cannot sample), unless the frames are too sparse to sample.
    assert len(per_frame) == (len(curves) if len(frames) == 3 else 3)
    mode, one_by_one = copy_mode
    assert len(one_by_one) == (0 if mode == "whole action" or len(frames) == 3 else len(curves) - 3)
    assert values.shape == (len(frames), len(curves)) and values.dtype == np.float64
    for column, fcurve in enumerate(curves):
        expected = blender_values(fcurve, frames)
        # Exact: NaN where Blender gives NaN (a logarithm of a negative number), the same float32 elsewhere.
        np.testing.assert_array_equal(values[:, column], expected, err_msg=f"curve {column}")
        assert np.array_equal(values[:, column].astype(np.float32), expected.astype(np.float32), equal_nan=True)
    single = fcurves.evaluate_many(curves, frames, dtype=np.float32)
    assert single.dtype == np.float32 and np.array_equal(single, values.astype(np.float32), equal_nan=True)


def test_every_interpolation_and_handle_type_is_covered(empty_file):
    """The random curves really hold every case the equality test claims."""
    _, curves = random_curves()
    seen = {(key.interpolation, key.easing) for fcurve in curves for key in fcurve.keyframe_points}
    assert {interpolation for interpolation, _ in seen} == set(INTERPOLATIONS)
    assert {easing for _, easing in seen} == set(EASINGS)
    handle_types = {key.handle_left_type for fcurve in curves for key in fcurve.keyframe_points}
    assert handle_types == set(HANDLE_TYPES)
    assert {fcurve.extrapolation for fcurve in curves} == {"CONSTANT", "LINEAR"}
    assert {m.type for fcurve in curves for m in fcurve.modifiers} == {
        "CYCLES", "NOISE", "GENERATOR", "FNGENERATOR", "ENVELOPE", "LIMITS", "STEPPED"}
    assert {len(fcurve.keyframe_points) for fcurve in curves} >= {0, 1, 2}


def test_user_data_is_unchanged_and_nothing_is_left_behind(empty_file, copy_mode):
    obj, curves = random_curves(seed=1)
    sampled = random_curve(np.random.default_rng(2), obj, 99, 6)
    sampled.convert_to_samples(0, 30)  # a curve that holds samples instead of keys
    curves.append(sampled)
    before = [snapshot(fcurve) for fcurve in keys.object_fcurves(obj)]
    actions = [(action.name, action.users) for action in bpy.data.actions]
    values = fcurves.evaluate_many(curves, np.arange(-5, 70))
    np.testing.assert_array_equal(values[:, -1], blender_values(sampled, np.arange(-5, 70)))
    assert [snapshot(fcurve) for fcurve in keys.object_fcurves(obj)] == before
    assert [(action.name, action.users) for action in bpy.data.actions] == actions
    assert not any(fcurve.data_path.startswith("blender_ik") for fcurve in keys.object_fcurves(obj))


def test_nothing_is_left_behind_when_sampling_fails(empty_file, monkeypatch, copy_mode):
    obj, curves = random_curves()
    actions = len(bpy.data.actions)

    def fail(*args):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(fcurves, "_samples", fail)
    with pytest.raises(RuntimeError, match="interrupted"):
        fcurves.evaluate_many(curves[50:], np.arange(10))
    assert len(bpy.data.actions) == actions


def test_throwaway_copies_wait_for_the_end_of_a_deferral(empty_file, copy_mode, monkeypatch):
    """Inside keys.removals_deferred() the whole-action copies stay in bpy.data until the block ends (or flush() is
    called), and past the byte budget go at once: removing a datablock makes Blender rebuild the scene's dependency
    relations at the next update, so the bake removes them after its last one. Curve-by-curve copies live outside
    bpy.data (temp_data) and never reach it."""
    obj, curves = random_curves()
    names = {action.name for action in bpy.data.actions}
    frames = np.arange(-5, 70)
    expected = fcurves.evaluate_many(curves, frames)
    mode, _ = copy_mode
    held = 1 if mode == "whole action" else 0

    def throwaway():
        return [action for action in bpy.data.actions if action.name not in names]

    with keys.removals_deferred() as flush:
        np.testing.assert_array_equal(fcurves.evaluate_many(curves, frames), expected)
        assert len(throwaway()) == held and all(action.users == 0 for action in throwaway())
        np.testing.assert_array_equal(fcurves.evaluate_many(curves, frames), expected)
        assert len(throwaway()) == 2 * held
        flush()
        assert not throwaway()
        fcurves.evaluate_many(curves, frames)
        assert len(throwaway()) == held
    assert not throwaway()
    monkeypatch.setattr(keys, "_DEFERRED_BYTES", 0)  # over budget: removed at once
    with keys.removals_deferred():
        fcurves.evaluate_many(curves, frames)
        assert not throwaway()
    assert {action.name for action in bpy.data.actions} == names


def test_nothing_to_evaluate(empty_file):
    obj, curves = random_curves()
    assert fcurves.evaluate_many(curves, np.arange(0)).shape == (0, len(curves))
    assert fcurves.evaluate_many([], np.arange(5)).shape == (5, 0)
    assert len(bpy.data.actions) == 1


@pytest.mark.parametrize("modifier", [None, "NOISE", "GENERATOR"])
def test_an_fcurve_without_keys_is_skipped_as_blender_skips_it(empty_file, modifier):
    """Blender leaves a property whose F-curve has no keys (and no generator) as it is stored; the direct
    sampling path must do the same, and it agrees with the frame-by-frame path."""
    from blender_ik_addon import chain as rig, sampling
    holder = make_empty("Holder")
    holder.location = (0.7, -0.2, 0.4)
    holder.keyframe_insert("location", frame=1)
    holder.location = (0.9, -0.1, 0.5)
    holder.keyframe_insert("location", frame=20)
    fcurve = keys.find_fcurve(holder, "location", 0)
    fcurve.keyframe_points.clear()
    if modifier is not None:
        random_settings(np.random.default_rng(4), fcurve.modifiers.new(modifier))
    assert fcurves.is_empty(fcurve) == (modifier != "GENERATOR")
    frames = np.arange(0, 25)
    direct = sampling.direct_world_matrices(holder, frames)
    per_frame = []
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        per_frame.append(rig.matrix_array(holder.matrix_world))
    np.testing.assert_allclose(direct, np.array(per_frame), atol=1e-6)
    if modifier != "GENERATOR":
        np.testing.assert_array_equal(direct[:, 0, 3], np.float32(0.9))
