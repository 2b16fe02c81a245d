"""Evaluate many F-curves at many whole frames at once, exactly as ``FCurve.evaluate`` does.

Blender evaluates an F-curve in float32 C code (bezier root finding, the easing equations,
modifiers) whose last bits a numpy re-implementation cannot promise to match. So Blender's own code
does it: the F-curves are copied, and ``convert_to_samples`` evaluates each copy over the frame span in one
C loop (the same ``evaluate_fcurve`` as ``FCurve.evaluate``); the samples are read back in bulk. The copy is
of the whole action, made by Blender in C (keys, extrapolation and modifiers exactly, for a few µs), unless
the action holds many keys; then each curve's keys, extrapolation and modifiers are copied onto a throwaway
F-curve, one curve at a time. The user's F-curves are only read. A curve whose copy could
not be made faithfully (see :func:`_copy_modifiers`), or frames that are not whole or too sparse for
sampling their span to pay, fall back to ``FCurve.evaluate`` per frame.
"""
import bpy
import numpy as np

from . import keys

# What decides a key's segment of the curve. Handle types only steer handle recalculation, which
# the copy never runs, and selection is UI state.
_SHAPE = {name: keys.KEY_ATTRIBUTES[name]
          for name in ("co", "handle_left", "handle_right", "interpolation", "easing", "back", "amplitude", "period")}
# Modifier properties that do not change what the modifier computes.
_NOT_COPIED = {"rna_type", "name", "type", "is_valid", "active", "show_expanded", "control_points"}
# Modifiers that give an F-curve without keys a value (Blender's FMI_TYPE_GENERATE_CURVE).
_GENERATORS = {"GENERATOR", "FNGENERATOR"}
# Sampling every frame of the span costs about a fifth of an ``evaluate`` call per frame: it pays
# unless the frames asked for are sparser than this within their span.
_SPARSEST = 4
_MIN_SPAN = 256
# An action is copied whole when it holds at most this many keys (about 1.4 MB of them, 72 bytes each); a larger
# one curve by curve, one at a time, so what the sampling holds at once stays that of one curve (measured: a
# 100,000-frame bake's peak grows by 8 MiB when its target's 60,000 keys are copied at once, block after block).
# Samples (Keys to Samples, a bake to samples) are copied too, 16 bytes each, and count at that size: a re-bake of
# four chains x 100,000 frames to samples on a moving armature copied 58 MB of them per block otherwise.
_WHOLE_ACTION_KEYS = 20_000
_KEY_BYTES, _SAMPLE_BYTES = 72, 16  # a key (BezTriple), a sample (FPoint)


def is_empty(fcurve):
    """Whether Blender's animation system skips ``fcurve``, leaving the property as it is stored
    (``BKE_fcurve_is_empty``): no keys, no samples, no driver and no generator modifier."""
    return (not len(fcurve.keyframe_points) and not len(fcurve.sampled_points) and fcurve.driver is None
            and not any(modifier.type in _GENERATORS for modifier in fcurve.modifiers))


def evaluate_many(fcurves, frames, dtype=np.float64):
    """``fcurve.evaluate(frame)`` for every F-curve and frame, as an (F, len(fcurves)) array.

    Equal bit for bit (as float32) to calling ``evaluate`` per frame: the same C code computes it, in
    float32, so a float32 ``dtype`` loses nothing and halves the memory of a long range.
    Nothing of the F-curves changes; the throwaway data is gone from ``bpy.data`` afterwards (or at the end of an
    active ``keys.removals_deferred()``).
    """
    fcurves = list(fcurves)
    frames = np.asarray(frames)
    values = np.empty((len(frames), len(fcurves)), dtype=dtype)
    if not len(frames) or not fcurves:
        return values
    span = _sample_span(frames)
    if span is None:
        for column, fcurve in enumerate(fcurves):
            values[:, column] = _evaluate_each(fcurve, frames)
        return values
    first, last = span
    offsets = (frames - first).astype(np.intp)
    by_action, alone = {}, []
    for column, fcurve in enumerate(fcurves):
        if not len(fcurve.keyframe_points) or len(fcurve.sampled_points):  # nothing Blender can sample
            values[:, column] = _evaluate_each(fcurve, frames)
        elif isinstance(fcurve.id_data, bpy.types.Action):
            by_action.setdefault(fcurve.id_data.as_pointer(), []).append(column)
        else:
            alone.append(column)
    for columns in by_action.values():
        action = fcurves[columns[0]].id_data
        every = keys.action_fcurves(action)
        held = sum(_KEY_BYTES * len(fcurve.keyframe_points) + _SAMPLE_BYTES * len(fcurve.sampled_points)
                   for fcurve in every)
        if held > _KEY_BYTES * _WHOLE_ACTION_KEYS:
            alone += columns
            continue
        position = {fcurve.as_pointer(): index for index, fcurve in enumerate(every)}
        copy = action.copy()
        try:
            copied = keys.action_fcurves(copy)
            for column in columns:
                sampled = _samples(copied[position[fcurves[column].as_pointer()]], first, last)
                values[:, column] = _evaluate_each(fcurves[column], frames) if sampled is None else sampled[offsets]
        finally:
            keys.discard_copy(copy, held)
    if alone:
        with keys.scratch_fcurves() as scratch:
            for column in sorted(alone):
                sampled = _sample(fcurves[column], first, last, scratch)
                values[:, column] = _evaluate_each(fcurves[column], frames) if sampled is None else sampled[offsets]
    return values


def _sample_span(frames):
    """(first, last) frame to sample when the frames are whole, in Blender's frame range and dense
    enough within their span; else None."""
    if frames.dtype.kind not in "iuf" or frames.ndim != 1:
        return None
    if frames.dtype.kind == "f" and not (np.isfinite(frames).all() and (frames == np.floor(frames)).all()):
        return None
    first, last = int(frames.min()), int(frames.max())
    if first < keys.SAMPLE_FRAMES[0] or last + 1 > keys.SAMPLE_FRAMES[1]:
        return None
    if last - first + 1 > _SPARSEST * len(frames) + _MIN_SPAN:
        return None
    return first, last


def _evaluate_each(fcurve, frames):
    evaluate = fcurve.evaluate
    return np.fromiter((evaluate(frame) for frame in frames.tolist()), dtype=np.float64, count=len(frames))


def _sample(fcurve, first, last, scratch):
    """float32 values of ``fcurve`` at ``first..last``, computed on a copy; None when no faithful copy
    can be sampled (no keys, baked samples, or a modifier setting the copy did not take)."""
    count = len(fcurve.keyframe_points)
    if not count or len(fcurve.sampled_points):
        return None
    copy = scratch.new()
    try:
        # Extrapolation and modifiers first: setting them recalculates the handles of the keys there are,
        # which would turn the copied ones into automatic ones.
        copy.extrapolation = fcurve.extrapolation
        if not _copy_modifiers(fcurve, copy):
            return None
        source, target = fcurve.keyframe_points, copy.keyframe_points
        target.add(count)
        for attribute, (width, dtype) in _SHAPE.items():
            buffer = np.empty(count * width, dtype=dtype)
            source.foreach_get(attribute, buffer)
            target.foreach_set(attribute, buffer)
        return _samples(copy, first, last)
    finally:
        scratch.remove(copy)


def _samples(copy, first, last):
    """float32 values of the F-curve ``copy`` (a throwaway copy: its keys become samples) at ``first..last``,
    or None when Blender refuses."""
    # The end frame is exclusive (on every version from 4.2 to 5.2); checked below all the same.
    try:
        copy.convert_to_samples(first, last + 1)
    except RuntimeError:  # Blender refused (it reports why); evaluate frame by frame instead
        return None
    points = copy.sampled_points
    samples = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", samples)
    samples = samples.reshape(-1, 2)
    if len(samples) != last - first + 1 or samples[0, 0] != first or samples[-1, 0] != last:
        return None
    return samples[:, 1]


def _settings(modifier):
    """A modifier's settings, by property name, as plain values (arrays as tuples)."""
    found = {}
    for prop in modifier.bl_rna.properties:
        name = prop.identifier
        if name in _NOT_COPIED or prop.is_readonly:
            continue
        value = getattr(modifier, name)
        found[name] = tuple(value) if getattr(prop, "is_array", False) else value
    return found


def _control_points(modifier):
    if modifier.type != "ENVELOPE":
        return []
    return [(point.frame, point.min, point.max) for point in modifier.control_points]


def _copy_modifiers(source, target):
    """Copy the modifier stack of ``source`` onto ``target``; False if the copy differs in any setting.

    Settings are assigned twice because some clamp against each other (a restricted range's start
    against its end, a generator's coefficients against its order)."""
    for modifier in source.modifiers:
        copy = target.modifiers.new(modifier.type)
        settings = _settings(modifier)
        for _ in range(2):
            for name, value in settings.items():
                try:
                    setattr(copy, name, value)
                except (AttributeError, TypeError, ValueError):
                    return False
        # Only added, never edited: setting an envelope point's min, max or frame from Python corrupts
        # memory (and soon crashes) on 4.2 to 5.0. Points whose min and max are not those of a new point
        # make the comparison below fail, and the curve is evaluated frame by frame instead.
        for frame, _, _ in _control_points(modifier):
            copy.control_points.add(frame)
        if _settings(copy) != settings or _control_points(copy) != _control_points(modifier):
            return False
    return True
