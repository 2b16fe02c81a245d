"""Write keyframes in bulk, and the one place where Blender's animation API versions differ.

- 4.2: an Action holds its F-curves directly (``action.fcurves``).
- 4.4+: actions are layered: F-curves live in a channelbag per slot, inside a keyframe strip of a
  layer, and an object is animated only by the slot assigned to it (``animation_data.action_slot``).
  Creating F-curves through the legacy ``action.fcurves.new()`` on 4.4/4.5 makes a slot that is
  never assigned, so nothing animates; this module always works through the assigned slot.
- 5.0: ``action.fcurves`` and ``Bone.select`` are gone (selection is ``PoseBone.select``).

Features are detected, not version numbers compared.
"""
import contextlib
import math

import bpy
import numpy as np

_LAYERED = "slots" in bpy.types.Action.bl_rna.properties
_POSE_BONE_SELECT = "select" in bpy.types.PoseBone.bl_rna.properties
# 5.0+: a channelbag's fcurves.new() puts the F-curve in its group, found or made by name (measured: 12 F-curves made
# in 30 µs, against 50 µs made, then grouped; the same F-curves and groups).
_CHANNELBAG_FCURVES = getattr(bpy.types, "ActionChannelbagFCurves", None)
_NEW_IN_GROUP = (_CHANNELBAG_FCURVES is not None
                 and "group_name" in _CHANNELBAG_FCURVES.bl_rna.functions["new"].parameters)
# 5.0 moved Pose Mode's hide flag to the pose bone; Bone.hide is Edit Mode's there.
_POSE_BONE_HIDE = "hide" in bpy.types.PoseBone.bl_rna.properties

# Keyframe attributes copied for the keys that are kept: name -> (values per key, numpy dtype).
# The dtypes are those Blender stores, so foreach_get/set copy raw memory (enums are bytes; an int32
# buffer works too but is an order of magnitude slower). co_ui is left out: it is a view of co.
KEY_ATTRIBUTES = {
    "co": (2, np.float32),
    "handle_left": (2, np.float32),
    "handle_right": (2, np.float32),
    "handle_left_type": (1, np.uint8),
    "handle_right_type": (1, np.uint8),
    "interpolation": (1, np.uint8),
    "easing": (1, np.uint8),
    "type": (1, np.uint8),
    "back": (1, np.float32),
    "amplitude": (1, np.float32),
    "period": (1, np.float32),
    "select_control_point": (1, bool),
    "select_left_handle": (1, bool),
    "select_right_handle": (1, bool),
}
# What keyframe_points.add() does not already set as keyframe_insert would (it leaves back, amplitude
# and period at 0; handle types AUTO_CLAMPED, easing AUTO, type KEYFRAME and selected are its defaults,
# and fcurve.update() computes the automatic handles from co). Interpolation only when not BEZIER.
_SET_ON_NEW_KEYS = ("co", "interpolation", "back", "amplitude", "period")


def _enum_value(attribute, name):
    return bpy.types.Keyframe.bl_rna.properties[attribute].enum_items[name].value


# The interpolation keyframe_points.add() gives new keys, whatever the user's preferences.
_ADDED_INTERPOLATION = _enum_value("interpolation", "BEZIER")


# Every interpolation a key can have, by name.
_INTERPOLATION_VALUES = {item.identifier: item.value
                         for item in bpy.types.Keyframe.bl_rna.properties["interpolation"].enum_items}
# A new key's attributes other than co, handles and interpolation, as ``keyframe_insert`` sets them.
_NEW_KEY_DEFAULTS = {
    "handle_left_type": _enum_value("handle_left_type", "AUTO_CLAMPED"),
    "handle_right_type": _enum_value("handle_right_type", "AUTO_CLAMPED"),
    "easing": _enum_value("easing", "AUTO"),
    "type": _enum_value("type", "KEYFRAME"),
    "back": 1.70158,
    "amplitude": 0.8,
    "period": 4.1,
    "select_control_point": True,
    "select_left_handle": True,
    "select_right_handle": True,
}


def ensure_action(obj, name=None):
    """Return the action animating ``obj``, creating and assigning one if there is none.

    A new action is named ``name``, by default ``f"{obj.name}Action"``; an existing one is returned as is.

    On 4.4+ also make sure a slot is assigned: without one the action animates nothing. A new slot
    is created for the object rather than reusing an unassigned one, which may belong to another ID.
    """
    # animation_data_create() makes Blender rebuild the scene's dependency relations at the next update even when
    # the animation data exists (measured: 16 ms on a generated Rigify human, against 3 ms for the update itself).
    anim_data = obj.animation_data
    if anim_data is None:
        anim_data = obj.animation_data_create()
    action = anim_data.action
    if action is None:
        action = bpy.data.actions.new(name or f"{obj.name}Action")
        anim_data.action = action  # on 4.4+ this may already assign a matching slot
    if _LAYERED and anim_data.action_slot is None:
        anim_data.action_slot = action.slots.new(obj.id_type, obj.name)
    return action


def _assigned_channelbags(obj):
    """The channelbags of ``obj``'s assigned slot, in all layers and strips (4.4+)."""
    anim_data = obj.animation_data
    if anim_data is None or anim_data.action is None or anim_data.action_slot is None:
        return []
    bags = []
    for layer in anim_data.action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(anim_data.action_slot)
            if bag is not None:
                bags.append(bag)
    return bags


def _action_fcurve_lists(obj):
    """The F-curve collections through which ``obj``'s assigned action animates it: its slot's channelbags (4.4+), or
    the action's F-curves."""
    if _LAYERED:
        return [bag.fcurves for bag in _assigned_channelbags(obj)]
    anim_data = obj.animation_data
    return [] if anim_data is None or anim_data.action is None else [anim_data.action.fcurves]


def object_fcurves(obj):
    """The F-curves that animate ``obj`` itself through its assigned action (a list, maybe empty)."""
    return [fcurve for fcurves in _action_fcurve_lists(obj) for fcurve in fcurves]


def action_fcurves(action):
    """Every F-curve of ``action`` (of all its slots, layers and strips), in an order its copy
    (``action.copy()``) repeats."""
    if not _LAYERED:
        return list(action.fcurves)
    return [fcurve for layer in action.layers for strip in layer.strips for bag in strip.channelbags
            for fcurve in bag.fcurves]


def find_fcurve(obj, data_path, index):
    """The F-curve of ``obj``'s own animation for ``data_path[index]``, or None."""
    for fcurve in object_fcurves(obj):
        if fcurve.data_path == data_path and fcurve.array_index == index:
            return fcurve
    return None


def _fcurve_maker(obj, action):
    """A function ``(data_path, index, group_name)`` that creates an F-curve in the animation
    ``ensure_action`` set up, grouped under ``group_name`` (the layer, strip, channelbag and groups are looked
    up once, not per F-curve)."""
    if not _LAYERED:
        return lambda data_path, index, group_name: action.fcurves.new(data_path, index=index,
                                                                       action_group=group_name)
    found = {}

    def new(data_path, index, group_name):
        if not found:
            layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
            strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type='KEYFRAME')
            found["bag"] = bag = strip.channelbag(obj.animation_data.action_slot, ensure=True)
            found["groups"] = groups = {}
            for group in bag.groups:
                groups.setdefault(group.name, group)
        bag, groups = found["bag"], found["groups"]
        if group_name and _NEW_IN_GROUP:  # made in its group, found or made by name, in one call
            return bag.fcurves.new(data_path, index=index, group_name=group_name)
        # 4.4/4.5 have no group_name argument here, so the group is assigned afterwards.
        fcurve = bag.fcurves.new(data_path, index=index)
        if group_name:
            group = groups.get(group_name)
            if group is None:
                group = groups[group_name] = bag.groups.new(group_name)
            fcurve.group = group
        return fcurve

    return new


class _Scratch:
    """F-curves in a throwaway action; see :func:`scratch_fcurves`."""

    def __init__(self, fcurves):
        self._fcurves = fcurves
        self._made = 0

    def new(self):
        # Each under its own index: an action refuses two F-curves with the same path and index.
        self._made += 1
        return self._fcurves.new("blender_ik_scratch", index=self._made)

    def remove(self, fcurve):
        """Free an F-curve (and whatever samples it holds) before the action goes."""
        self._fcurves.remove(fcurve)


@contextlib.contextmanager
def scratch_fcurves():
    """A throwaway action that animates nothing: yields an object whose ``new()`` makes an F-curve in it
    and ``remove(fcurve)`` frees one. The action is removed from ``bpy.data`` on the way out, whatever
    happens."""
    action = bpy.data.actions.new("blender_ik scratch")
    try:
        if _LAYERED:
            slot = action.slots.new('OBJECT', "Scratch")
            strip = action.layers.new("Layer").strips.new(type='KEYFRAME')
            fcurves = strip.channelbag(slot, ensure=True).fcurves
        else:
            fcurves = action.fcurves
        yield _Scratch(fcurves)
    finally:
        bpy.data.actions.remove(action)


# Throwaway copies of actions (made in C by action.copy(), which only bpy.data can hold) are removed by discard_copy;
# while removals_deferred() is active, they wait until it ends, up to this many bytes of keys and samples (a bake of
# many blocks copies its targets' actions once a block; past this, each is removed at once, as without deferral).
_DEFERRED_BYTES = 8 << 20


class _Held:
    """The copies one removals_deferred() holds, and their bytes (compared by identity, not contents)."""

    def __init__(self):
        self.copies, self.size = [], 0


_deferred = []  # per active removals_deferred(), innermost last


@contextlib.contextmanager
def removals_deferred():
    """Hold the throwaway action copies that :func:`discard_copy` is given until the block ends, then remove them;
    yields ``flush()``, which removes them at once. Removing a datablock makes Blender rebuild the scene's dependency
    relations at the next update (14 ms with a generated Rigify human in the scene): a caller that samples, then
    updates the scene, then removes a copy of its own (the bake, whose snapshot outlives its last update) pays one
    rebuild instead of two; when its update rebuilds them anyway (it created F-curves), it flushes before it."""
    held = _Held()

    def flush():
        """Remove what is held now: for an update that rebuilds the relations anyway (new F-curves)."""
        while held.copies:
            bpy.data.actions.remove(held.copies.pop())
        held.size = 0

    _deferred.append(held)
    try:
        yield flush
    finally:
        _deferred.remove(held)
        flush()


def discard_copy(copy, size=0):
    """Remove a throwaway copy of an action now, or at the end of the active :func:`removals_deferred` (``size``:
    the bytes its keys and samples take, at most _DEFERRED_BYTES held in all)."""
    if _deferred and _deferred[-1].size + size <= _DEFERRED_BYTES:
        _deferred[-1].copies.append(copy)
        _deferred[-1].size += size
    else:
        bpy.data.actions.remove(copy)


def _read_keys(keyframe_points, attributes):
    """The given attributes of all keys, as numpy arrays keyed by attribute name (co as (n, 2))."""
    count = len(keyframe_points)
    keys = {}
    for attribute in attributes:
        width, dtype = KEY_ATTRIBUTES[attribute]
        buffer = np.empty(count * width, dtype=dtype)
        keyframe_points.foreach_get(attribute, buffer)
        keys[attribute] = buffer.reshape(count, width) if width > 1 else buffer
    return keys


# The interpolation FCurve.convert_to_keyframes gives the keys it makes.
_CONVERTED_INTERPOLATION = _enum_value("interpolation", "LINEAR")


def _through_samples(frames):
    """Whether new keys at ``frames`` (sorted float64) can be made through samples: written as samples, whose co
    takes one raw copy (a key's co is not contiguous in memory: RNA sets it key by key, ten times slower), then
    turned into keys by ``convert_to_keyframes``, which computes their automatic handles as handles_recalc does.
    Measured on 4.2 to 5.2: the same keys, bit for bit, in about four fifths of the time (test_keys.py holds it).
    It takes a key per sample in order, so the frames must be whole (a sample's frame is a float like a key's,
    but the conversion starts from a whole frame) and fit in the frames samples can have."""
    return (frames[0] >= SAMPLE_FRAMES[0] and frames[0] + len(frames) <= SAMPLE_FRAMES[1]
            and bool((frames == np.floor(frames)).all()))


def _write_channel(fcurve, frames, co, new_keys, replace):
    """Replace the keys of ``fcurve`` inside ``replace`` (first, last frame) by the new ones, keep the rest.
    ``co``: the new keys' (F, 2) float32 co; ``new_keys``: the other attributes of new keys as :func:`write_keys`
    makes them (the F-length arrays of what keyframe_points.add() does not already give, and one value per
    attribute for the rest)."""
    keyframe_points = fcurve.keyframe_points
    count = len(frames)
    kept = 0
    if len(keyframe_points):
        old = _read_keys(keyframe_points, ("co",))
        old_frames = old["co"][:, 0]
        # The range boundary is exact: a key at start or end is replaced, one just outside is kept however close.
        before = old_frames < replace[0]
        after = old_frames > replace[1]
        kept = int(before.sum()) + int(after.sum())
    through_samples = not kept and new_keys["through_samples"]
    if not kept:
        # Nothing to restore: the keys made either way already have the right values for the rest.
        if through_samples:  # the fast way (see _through_samples): the keys come with their handles computed
            _set_samples(fcurve, co)
            fcurve.convert_to_keyframes(int(co[0, 0]), int(co[0, 0]) + count)
        else:
            keyframe_points.clear()
            keyframe_points.add(count)
            keyframe_points.foreach_set("co", co.ravel())
        for attribute, inserted in new_keys["added"].items():
            keyframe_points.foreach_set(attribute, inserted)
    else:
        old.update(_read_keys(keyframe_points, tuple(KEY_ATTRIBUTES)[1:]))
        new = dict(new_keys["values"], co=co, handle_left=co, handle_right=co)
        keyframe_points.clear()
        keyframe_points.add(kept + count)
        for attribute, (width, dtype) in KEY_ATTRIBUTES.items():
            shape = (count, width) if width > 1 else (count,)
            inserted = np.broadcast_to(np.asarray(new[attribute], dtype=dtype), shape)
            inserted = np.concatenate((old[attribute][before], inserted, old[attribute][after]))
            keyframe_points.foreach_set(attribute, inserted.ravel())
    # Recalculates the automatic handles of the new keys (already sorted). Not fcurve.update(): it also
    # merges keys closer than 0.01 frames, deleting a kept key next to the range.
    if not through_samples:
        keyframe_points.handles_recalc()
    if kept + count == 1:
        # A lone key has no neighbours to compute handles from (Blender's recalculation leaves it alone): it gets
        # what keyframe_insert gives one, a frame either side at its value (both ways above left them at 0, 0).
        key = keyframe_points[0]
        frame, value = key.co
        key.handle_left, key.handle_right = (frame - 1.0, value), (frame + 1.0, value)
    if kept:
        # The recalculation moves the automatic handles of the kept keys next to the range too, which would
        # change how the animation outside the range plays: those keys get their own handles back.
        start = int(before.sum())
        for attribute in ("handle_left", "handle_right"):
            handles = np.empty((kept + count) * 2, dtype=np.float32)
            keyframe_points.foreach_get(attribute, handles)
            handles = handles.reshape(-1, 2)
            handles[:start] = old[attribute][before]
            handles[start + count:] = old[attribute][after]
            keyframe_points.foreach_set(attribute, handles.ravel())


def write_keys(obj, channels, frames, values, interpolation="LINEAR", replace=None):
    """Key ``values`` at ``frames`` on ``channels`` of ``obj``, in bulk.

    ``channels`` is a list of ``(data_path, array_index, group_name)``; ``frames`` a sorted 1-D array of F
    frame numbers; ``values`` an (F, len(channels)) array (float32 saves memory on long bakes). The action, slot
    and F-curves are created as needed. On each channel the keys within ``replace`` (a (first, last) frame pair;
    by default ``(frames[0], frames[-1])``, widen it when keying every n-th frame of a range) are replaced; keys
    outside that range and other channels are kept as they were. New keys get AUTO_CLAMPED handles and the given
    ``interpolation`` (a Keyframe interpolation enum name such as 'LINEAR', 'BEZIER', 'CONSTANT').
    """
    frames = np.asarray(frames, dtype=np.float64)
    values = np.asarray(values)
    if values.dtype != np.float32:  # float32 is taken as is (keys store float32): no float64 copy of a long bake
        values = values.astype(np.float64, copy=False)
    if frames.ndim != 1:
        raise ValueError(f"frames must be a 1-D array, got shape {frames.shape}")
    if values.shape != (len(frames), len(channels)):
        raise ValueError(f"values must have shape {(len(frames), len(channels))}, got {values.shape}")
    if len(frames) == 0 or len(channels) == 0:
        return
    if np.any(np.diff(frames) <= 0):
        raise ValueError("frames must be strictly increasing")
    interpolation_value = _INTERPOLATION_VALUES.get(interpolation)
    if interpolation_value is None:
        raise ValueError(f"unknown keyframe interpolation {interpolation!r}")

    replace = (float(frames[0]), float(frames[-1])) if replace is None else (float(replace[0]), float(replace[1]))
    if replace[0] > frames[0] or replace[1] < frames[-1]:
        raise ValueError(f"the replaced range {replace} must hold every new key")

    action = ensure_action(obj)
    existing = {(fcurve.data_path, fcurve.array_index): fcurve for fcurve in object_fcurves(obj)}
    for data_path, index, _ in channels:
        if (data_path, index) in existing and has_samples(existing[(data_path, index)]):
            raise ValueError(f"the F-curve {data_path}[{index}] holds samples, which take no keys (Graph Editor > "
                             "Channel > Samples to Keys turns them into keys)")
    new_fcurve = _fcurve_maker(obj, action)
    count = len(frames)
    # Made once for every channel: the new keys' attributes, and co, whose frame column is the same on all.
    values_of_new = dict(_NEW_KEY_DEFAULTS, interpolation=interpolation_value)
    through_samples = _through_samples(frames)
    given = _CONVERTED_INTERPOLATION if through_samples else _ADDED_INTERPOLATION
    added = {name: np.full(count, values_of_new[name], dtype=KEY_ATTRIBUTES[name][1])
             for name in _SET_ON_NEW_KEYS if name != "co" and (name != "interpolation" or interpolation_value != given)}
    new_keys = {"values": values_of_new, "added": added, "through_samples": through_samples}
    co = np.empty((count, 2), dtype=np.float32)
    co[:, 0] = frames
    for column, fcurve in _channel_fcurves(channels, existing, new_fcurve):
        co[:, 1] = values[:, column]
        _write_channel(fcurve, frames, co, new_keys, replace)


def _channel_fcurves(channels, existing, new_fcurve):
    """Each channel's column and F-curve: the one in ``existing`` ({(data_path, index): F-curve}), or one made by
    ``new_fcurve`` (see _fcurve_maker)."""
    for column, (data_path, index, group_name) in enumerate(channels):
        fcurve = existing.get((data_path, index))
        if fcurve is None:
            fcurve = existing[(data_path, index)] = new_fcurve(data_path, index, group_name)
        yield column, fcurve


def set_pose_bone_selected(pose_bone, selected):
    """Select or deselect a pose bone (``PoseBone.select`` on 5.0, ``Bone.select`` before)."""
    if _POSE_BONE_SELECT:
        pose_bone.select = selected
    else:
        pose_bone.bone.select = selected


def is_pose_bone_selected(pose_bone):
    """Whether a pose bone is selected (``PoseBone.select`` on 5.0, ``Bone.select`` before)."""
    return bool(pose_bone.select if _POSE_BONE_SELECT else pose_bone.bone.select)


def is_pose_bone_visible(pose_bone):
    """Whether Pose Mode shows the bone, as Blender decides what is selected (``ANIM_bone_is_visible``): not
    hidden there, and in no bone collection or in one that is effectively visible. Hiding a collection keeps its
    bones' selection flags."""
    if pose_bone.hide if _POSE_BONE_HIDE else pose_bone.bone.hide:
        return False
    collections = pose_bone.bone.collections
    return not len(collections) or any(collection.is_visible_effectively for collection in collections)


# Inspection and undo for the bake's safety checks (appended; nothing above depends on them).

def playback_problems(obj):
    """Why ``obj``'s own action would not play keys back as they are written, as a list of sentences
    (empty when it would): NLA tweak mode (the action's time is not the scene's, and the tracks above it
    play over it), a solo NLA track (it plays alone), or an action blended over NLA tracks with an influence below 1
    or a blend mode other than Replace. Without NLA tracks Blender plays the action as it is, whatever those two
    say."""
    anim_data = obj.animation_data
    if anim_data is None:
        return []
    problems = []
    if anim_data.use_tweak_mode:
        problems.append("its NLA is in tweak mode (the keys would land in the strip's time, under the tracks "
                        "above it): exit tweak mode in the NLA editor (Tab)")
    solo = next((track for track in anim_data.nla_tracks if track.is_solo), None)
    if solo is not None and anim_data.use_nla and not anim_data.use_tweak_mode:
        # Blender plays a solo track alone: the action is left out (unless it is the solo track's tweaked strip).
        problems.append(f"its NLA track '{solo.name}' is solo, so its action does not play: turn Solo off (the star "
                        "in the NLA editor)")
    tracks = [track for track in anim_data.nla_tracks if not track.mute and len(track.strips)]
    if tracks and anim_data.action is not None and (
            anim_data.action_influence < 1.0 or anim_data.action_blend_type != "REPLACE"):
        problems.append(f"its action is blended over its NLA tracks (influence {anim_data.action_influence:g}, "
                        f"blend {anim_data.action_blend_type.title()}): set the influence to 1 and the blend to "
                        "Replace in the NLA editor's action track")
    return problems


def span_problem(obj, data_paths, frame_range):
    """Why keys over ``frame_range`` would change what ``obj`` plays outside it in channels other than ``data_paths``,
    or None: with NLA tracks, an action track whose Extrapolation is not Hold plays its action only over the action's
    frame range (Nothing), or from its start on (Hold Forward); keys beyond that range widen it, and the action's other
    channels (held past their keys) then play over the NLA's on frames they did not before."""
    anim_data = obj.animation_data
    if (anim_data is None or anim_data.action is None or anim_data.action_extrapolation == "HOLD"
            or not anim_data.use_nla or not any(not track.mute and len(track.strips) for track in anim_data.nla_tracks)):
        return None
    first, last = _played_range(anim_data.action)
    start, end = frame_range
    widened = start < first or (end > last and anim_data.action_extrapolation == "NOTHING")
    wanted = set(data_paths)
    others = [fcurve for fcurve in object_fcurves(obj) if fcurve.data_path not in wanted]
    if not widened or not others:
        return None
    extrapolation = anim_data.action_extrapolation.replace("_", " ").title()
    return (f"its action plays over its NLA tracks from frame {first:g} {'to' if extrapolation == 'Nothing' else 'on'}"
            f"{f' {last:g}' if extrapolation == 'Nothing' else ''} only (the action track's Extrapolation is "
            f"{extrapolation}); keys from {start:g} to {end:g} would widen that, and its other channels ("
            f"'{others[0].data_path}'...) would play over the NLA's on the frames added, outside the range too: set "
            "the Extrapolation to Hold (NLA editor, the action track's sidebar), or bake within the action's range")


def _played_range(action):
    """The frames over which Blender plays ``action`` as an action track (its extent, as BKE_action_frame_range_calc
    with modifiers): its keys' and samples' of every slot, whatever its manual Frame Range says; an F-curve's last
    modifier, muted or not, widens it (Cycles on the sides it repeats, Limits to its frame limits, any other forever)."""
    first, last = math.inf, -math.inf
    for fcurve in action_fcurves(action):
        if has_points(fcurve):
            low, high = fcurve.range()
            first, last = min(first, low), max(last, high)
        if len(fcurve.modifiers):
            modifier = fcurve.modifiers[-1]
            if modifier.type == "CYCLES":
                first = -math.inf if modifier.mode_before != "NONE" else first
                last = math.inf if modifier.mode_after != "NONE" else last
            elif modifier.type == "LIMITS":
                first = min(first, modifier.min_x) if modifier.use_min_x else first
                last = max(last, modifier.max_x) if modifier.use_max_x else last
            else:
                first, last = -math.inf, math.inf
    if first > last:
        first = last = 0.0
    return first, (last if last > first else first + 1.0)


def _nla_fcurve_lists(obj):
    """The F-curve collections of the actions that ``obj``'s NLA strips play on it, as ``(fcurves, strip name)``
    pairs: those of every strip that plays (not muted, on a track that is not muted, or on the solo track, muted or not,
    when one is solo; a meta strip's inner strips), each through its own slot on 4.4+."""
    anim_data = obj.animation_data
    if anim_data is None or not anim_data.use_nla:  # the NLA editor's "Include in NLA evaluation" off: none plays
        return []
    # A solo track plays alone, muted or not (Blender: "mute doesn't matter" for it); otherwise the unmuted ones.
    tracks = [track for track in anim_data.nla_tracks if track.is_solo]
    if not tracks:
        tracks = [track for track in anim_data.nla_tracks if not track.mute]
    found = []

    def visit(strips):
        for strip in strips:
            if strip.mute:
                continue
            if strip.type == "META":
                visit(strip.strips)
            elif strip.action is not None:
                if _LAYERED:
                    slot = strip.action_slot
                    found.extend((bag.fcurves, strip.name) for layer in strip.action.layers
                                 for keyframe_strip in layer.strips for bag in [keyframe_strip.channelbag(slot)]
                                 if slot is not None and bag is not None)
                else:
                    found.append((strip.action.fcurves, strip.name))

    for track in tracks:
        visit(track.strips)
    return found


def nla_fcurves(obj):
    """The F-curves that ``obj``'s NLA strips play on it, as ``(fcurve, strip name)`` pairs: those of the actions of
    every strip that plays (see :func:`_nla_fcurve_lists`). They play below the action, in the channels it does not
    key."""
    return [(fcurve, strip) for fcurves, strip in _nla_fcurve_lists(obj) for fcurve in fcurves]


# How played_fcurves names a driver's F-curve.
DRIVEN = " (driven)"


def played_fcurves(id_data):
    """Every F-curve that can change ``id_data`` as Blender plays it, as ``(fcurve, where)`` pairs (``where``: how to
    name it in a message, empty for the action's): its action's (on 4.4+ its slot's), its NLA strips' that play, and
    its drivers. Muted ones included (see :func:`is_muted`)."""
    anim_data = id_data.animation_data
    if anim_data is None:
        return []
    played = [(fcurve, "") for fcurve in object_fcurves(id_data)]
    played += [(fcurve, f" (keyed in NLA strip '{strip}')") for fcurve, strip in nla_fcurves(id_data)]
    played += [(driver, DRIVEN) for driver in anim_data.drivers]
    return played


def played_channel(id_data, data_path, index=0):
    """The F-curves that can change ``id_data``'s ``data_path[index]`` as Blender plays it, as :func:`played_fcurves`
    gives them, found by Blender's own lookup: a character's action holds thousands of F-curves, which listing costs
    milliseconds."""
    return played_channels(id_data, [(data_path, index)])


def played_channels(id_data, channels):
    """:func:`played_channel` of each ``(data_path, index)`` of ``channels``, together (the F-curve collections are
    found once)."""
    anim_data = id_data.animation_data
    if anim_data is None:
        return []
    lists = [(fcurves, "") for fcurves in _action_fcurve_lists(id_data)]
    lists += [(fcurves, f" (keyed in NLA strip '{strip}')") for fcurves, strip in _nla_fcurve_lists(id_data)]
    lists.append((anim_data.drivers, DRIVEN))
    return [(fcurve, where) for fcurves, where in lists if len(fcurves) for data_path, index in channels
            for fcurve in [fcurves.find(data_path, index=index)] if fcurve is not None]


def is_muted(fcurve):
    """Whether Blender's evaluation skips ``fcurve``: its own mute, or on 4.2 its group's (measured: with 4.4+
    layered actions a muted group still plays its F-curves)."""
    return fcurve.mute or (not _LAYERED and fcurve.group is not None and fcurve.group.mute)


def action_problem(obj):
    """Why the keys of ``obj``'s action cannot be changed and kept, or None: an action linked from a library
    would change only until the file is reloaded; a library override of one takes no new keys."""
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    if action is not None and action.library is not None:
        return (f"its action '{action.name}' is linked from library '{action.library.filepath}', so new keys "
                "would be lost on reload: make the action local (or override it and give it a local action)")
    if action is not None and action.override_library is not None:
        # Its keys are the library's: new ones do not play (4.4+: Blender's own keying refuses them) or are lost on
        # reload (4.2).
        return (f"its action '{action.name}' is a library override, whose keys are the library's: new keys would "
                "not play, or be lost on reload; make the action local, or give the armature a local action")
    return None


def other_users(obj):
    """The other IDs that the keys of ``obj``'s own animation would change as well: IDs that play the same
    action (on 4.4+, the same slot of it), directly or in an NLA strip. A list of names."""
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    if action is None:
        return []
    # Whatever plays the action (an ID's animation, an NLA strip) is one of its users: with none besides this
    # object's (and a fake user), no ID of the file needs looking at.
    if action.users - int(action.use_fake_user) <= 1:
        return []
    slot = anim_data.action_slot if _LAYERED else None
    if _LAYERED and slot is None:
        # No slot assigned: the keys go to a new slot of its own (ensure_action), which nothing else plays, as
        # Blender's own keying does. The other IDs with the action and no slot play nothing of it.
        return []

    def same(other_action, other_slot):
        return other_action == action and (not _LAYERED or other_slot == slot)

    found = []
    for collection in (bpy.data.objects, bpy.data.armatures, bpy.data.meshes, bpy.data.cameras, bpy.data.lights):
        for other in collection:
            other_data = getattr(other, "animation_data", None)
            if other == obj or other_data is None:
                continue
            uses = same(other_data.action, getattr(other_data, "action_slot", None))
            uses = uses or any(same(strip.action, getattr(strip, "action_slot", None))
                               for track in other_data.nla_tracks for strip in track.strips)
            if uses:
                found.append(other.name)
    return found


def _fcurves_of(obj, data_paths):
    """The F-curves of ``data_paths`` in ``obj``'s own animation, each with its (data_path, array_index)."""
    wanted = set(data_paths)
    for fcurve in object_fcurves(obj):
        if fcurve.data_path in wanted:
            yield fcurve, (fcurve.data_path, fcurve.array_index)


def _cycles_keyed_through(fcurve):
    """Whether Blender's cycle-aware keying keys ``fcurve`` inside its cycle: its first modifier a Cycles modifier that
    repeats (with or without offset) forever on both sides, over the whole curve at full influence (Blender's
    BKE_fcurve_is_cyclic)."""
    modifier = fcurve.modifiers[0] if len(fcurve.modifiers) else None
    return (modifier is not None and modifier.type == "CYCLES" and not modifier.mute
            and not modifier.use_restricted_range and not modifier.use_influence
            and modifier.cycles_before == 0 and modifier.cycles_after == 0
            and {modifier.mode_before, modifier.mode_after} <= {"REPEAT", "REPEAT_OFFSET"})


def channel_problems(obj, data_paths, cycle_aware=False, one_frame=False):
    """Why keys written to the F-curves of ``data_paths`` (of ``obj``'s own animation) would not be kept or
    would not play as written, as (data_path, index, reason) tuples: a locked F-curve (Blender's own
    keyframe_insert refuses it), a muted F-curve or group, an F-curve modifier, a channel the action does not key yet
    that an NLA strip plays (the new keys would override it outside the range too). ``cycle_aware``: keys go in with
    Blender's cycle-aware keying, which keys a cyclic F-curve's Cycles modifier inside its cycle (which then plays them
    on every cycle), so that modifier alone is no problem. ``one_frame``: the keys are one frame's (Solve's Auto
    Keying), not a bake's range, which the NLA problem's reason says."""
    problems, keyed = [], set()
    for fcurve, where in _fcurves_of(obj, data_paths):
        if has_points(fcurve):
            keyed.add(where)
        if fcurve.lock or (fcurve.group is not None and fcurve.group.lock):
            problems.append(where + ("is locked (unlock it in the Graph Editor)",))
        if is_muted(fcurve):
            problems.append(where + ("is muted (or its group is), so its keys would not play (unmute it)",))
        modifiers = [modifier.type.replace("_", " ").title() for modifier in fcurve.modifiers
                     if not modifier.mute]
        if cycle_aware and modifiers == ["Cycles"] and _cycles_keyed_through(fcurve):
            modifiers = []
        if modifiers:
            problems.append(where + (f"has modifiers ({', '.join(modifiers)}) that change how its keys play "
                                     "(remove or mute them)",))
    # Blender plays the action's F-curve of a channel over its NLA strips' on every frame (held past its keys): the
    # first keys in the action would silence what a strip plays in that channel outside the range as well.
    wanted = set(data_paths)
    for fcurve, strip in nla_fcurves(obj):
        where = (fcurve.data_path, fcurve.array_index)
        if fcurve.data_path in wanted and where not in keyed and not is_muted(fcurve) and has_points(fcurve):
            keyed.add(where)  # named once, by the first strip that plays it
            owner = "armature" if obj.type == "ARMATURE" else "object"  # (a snapped target: an Empty)
            if one_frame:
                problems.append(where + (f"is keyed in NLA strip '{strip}', which a key in the {owner}'s action "
                                         "would override on every frame, not this one only: key the strip's action in "
                                         "its tweak mode (Tab in the NLA Editor), or mute the strip",))
                continue
            problems.append(where + (f"is keyed in NLA strip '{strip}', which the action's new keys would override "
                                     "on every frame, outside the range too: mute the strip, or make its action the "
                                     f"{owner}'s action (its keys outside the range are kept)",))
    return problems


def snapshot_channels(obj, data_paths):
    """Everything :func:`write_keys` may change when it keys ``data_paths`` on ``obj``, for
    :func:`restore_channels`: the action and slot assigned, the F-curves of those paths with all their keys'
    attributes, and which F-curves, groups, layers and strips exist."""
    anim_data = obj.animation_data
    action = anim_data.action if anim_data is not None else None
    paths = set(data_paths)
    fcurves = object_fcurves(obj)
    baked = [fcurve for fcurve in fcurves if fcurve.data_path in paths]
    # F-curves of those paths that hold nothing yet: a restore only empties them again.
    empty = {(fcurve.data_path, fcurve.array_index) for fcurve in baked
             if not len(fcurve.keyframe_points) and not len(fcurve.sampled_points)}
    held = [fcurve for fcurve in baked if (fcurve.data_path, fcurve.array_index) not in empty]
    points = sum(len(fcurve.keyframe_points) + len(fcurve.sampled_points) for fcurve in held)
    # What the restore puts back, only when the paths hold keys or samples: up to _SNAPSHOT_READ_POINTS of them are
    # read into arrays; more, and the whole action is copied in C (reading every attribute of every key would cost
    # more than the bake), a datablock whose removal makes Blender rebuild the scene's dependency relations.
    read = points <= _SNAPSHOT_READ_POINTS
    return {
        "copy": action.copy() if held and not read else None,
        "saved": {(fcurve.data_path, fcurve.array_index): _saved_points(fcurve) for fcurve in held} if read else {},
        "empty": empty,
        "paths": paths,
        "had_animation_data": anim_data is not None,
        "action": action,
        "slot": anim_data.action_slot if _LAYERED and anim_data is not None else None,
        "slots": {slot.handle for slot in action.slots} if _LAYERED and action is not None else set(),
        "layers": len(action.layers) if _LAYERED and action is not None else 0,
        "strips": [len(layer.strips) for layer in action.layers] if _LAYERED and action is not None else [],
        "fcurves": {(fcurve.data_path, fcurve.array_index) for fcurve in fcurves},
        "groups": {group.name for group in _groups(obj)},
    }


def _groups(obj):
    if _LAYERED:
        return [group for bag in _assigned_channelbags(obj) for group in bag.groups]
    anim_data = obj.animation_data
    return list(anim_data.action.groups) if anim_data is not None and anim_data.action is not None else []


def _remove_fcurve(obj, fcurve):
    if not _LAYERED:
        obj.animation_data.action.fcurves.remove(fcurve)
        return
    for bag in _assigned_channelbags(obj):
        if any(other == fcurve for other in bag.fcurves):
            bag.fcurves.remove(fcurve)
            return


# A snapshot reads the keys (or samples) it keeps into arrays up to this many points; reading a key costs about
# 0.12 µs (its frame, value and handles are not contiguous in memory: RNA copies them one by one), so this many take
# about 2.5 ms, which a relations rebuild on a character's rig costs several times over (14 ms on a generated
# Rigify human); beyond, a copy of the action made in C is kept instead.
_SNAPSHOT_READ_POINTS = 20_000


def _saved_points(fcurve):
    """What a restore puts back on ``fcurve``: ("samples", co (n, 2), select) or ("keys", every attribute)."""
    if has_samples(fcurve):
        points = fcurve.sampled_points
        co = np.empty(2 * len(points), dtype=np.float32)
        points.foreach_get("co", co)
        select = np.empty(len(points), dtype=bool)
        points.foreach_get("select", select)
        return "samples", co.reshape(-1, 2), select
    return "keys", _read_keys(fcurve.keyframe_points, KEY_ATTRIBUTES)


def _saved_fcurves(snapshot):
    """What the snapshot keeps of the F-curves of its paths (see _saved_points), by (data path, index)."""
    copy = snapshot["copy"]
    if copy is None:
        return snapshot["saved"]
    if _LAYERED:
        slot = snapshot["slot"]
        copied_slot = next((s for s in copy.slots if slot is not None and s.identifier == slot.identifier), None)
        if copied_slot is None:
            return {}
        fcurves = [fcurve for layer in copy.layers for strip in layer.strips
                   for bag in [strip.channelbag(copied_slot)] if bag is not None for fcurve in bag.fcurves]
    else:
        fcurves = list(copy.fcurves)
    return {(fcurve.data_path, fcurve.array_index): _saved_points(fcurve) for fcurve in fcurves
            if fcurve.data_path in snapshot["paths"]}


def discard_snapshot(snapshot):
    """Remove the snapshot's copy of the action (once the change it guards is kept, or undone)."""
    copy = snapshot.pop("copy", None)
    if copy is not None:
        discard_copy(copy)  # the last thing a bake removes: held only to be removed with the rest


def restore_channels(obj, snapshot):
    """Put ``obj``'s animation back as :func:`snapshot_channels` saw it: the keys of the F-curves that
    existed, byte for byte; the F-curves, groups, slot, layer, strip and action created since removed."""
    anim_data = obj.animation_data
    if anim_data is None:
        return
    action = anim_data.action
    saved_fcurves = _saved_fcurves(snapshot)
    for fcurve in object_fcurves(obj):
        key = (fcurve.data_path, fcurve.array_index)
        if key in snapshot["empty"]:  # nothing to put back: empty it again
            if has_samples(fcurve):  # a bake to samples gave it samples
                _drop_samples(fcurve)
            fcurve.keyframe_points.clear()
        elif key in saved_fcurves and saved_fcurves[key][0] == "samples":
            _, co, select = saved_fcurves[key]
            _set_samples(fcurve, co, select)
            fcurve.id_data.update_tag()
        elif key in saved_fcurves:
            if has_samples(fcurve):  # a bake to samples replaced its keys
                _drop_samples(fcurve)
            saved = saved_fcurves[key][1]
            keyframe_points = fcurve.keyframe_points
            keyframe_points.clear()
            keyframe_points.add(len(saved["co"]))
            for attribute, values in saved.items():
                keyframe_points.foreach_set(attribute, values.ravel())
            # No fcurve.update(): it would recalculate the handles, and they are back as they were.
        elif key not in snapshot["fcurves"]:
            _remove_fcurve(obj, fcurve)
    if _LAYERED:
        for bag in _assigned_channelbags(obj):
            for group in list(bag.groups):
                if group.name not in snapshot["groups"] and not len(group.channels):
                    bag.groups.remove(group)
    elif action is not None:
        for group in list(action.groups):
            if group.name not in snapshot["groups"] and not len(group.channels):
                action.groups.remove(group)
    if action is not None and action != snapshot["action"]:  # created by the bake
        anim_data.action = snapshot["action"]
        if action.users == 0:
            bpy.data.actions.remove(action)
    elif _LAYERED and action is not None:
        slot = anim_data.action_slot
        if slot is not None and slot.handle not in snapshot["slots"]:
            anim_data.action_slot = snapshot["slot"]
            action.slots.remove(slot)
        for layer, strips in zip(list(action.layers), snapshot["strips"]):
            while len(layer.strips) > strips:
                layer.strips.remove(layer.strips[-1])
        while len(action.layers) > snapshot["layers"]:
            action.layers.remove(action.layers[-1])
    if not snapshot["had_animation_data"] and anim_data.action is None and not len(anim_data.drivers):
        obj.animation_data_clear()


# Sampled F-curves, the bake's Samples output (appended; write_keys makes its keys through them). A sample (FPoint)
# holds a frame and a value, 16 bytes against a key's 72, one per integer frame, played linearly between frames: what
# LINEAR keys on every frame play. Measured on 4.2 to 5.2: FCurve.convert_to_samples(start, end) replaces the whole F-curve
# by samples at start, start + 1, ..., end - 1 (end excluded), and convert_to_keyframes(start, end) frees all the
# samples whatever the range. A sampled F-curve takes no keys: keyframe_points.add on one corrupts it (keys and
# samples share one point count), which is why Blender's keyframe_insert refuses it.

_CONVERT = bpy.types.FCurve.bl_rna.functions["convert_to_samples"].parameters
# convert_to_samples takes frames within Blender's limits and excludes its end: its lowest start and highest end
# (looked up once: RNA's introspection costs more than a short sampling), and at most this many samples at once.
SAMPLE_FRAMES = (_CONVERT["start"].hard_min, _CONVERT["end"].hard_max)
MAX_SAMPLES = _CONVERT["end"].hard_max - _CONVERT["end"].hard_min


def has_points(fcurve):
    """The F-curve holds keys or samples."""
    return bool(len(fcurve.keyframe_points)) or has_samples(fcurve)


def has_samples(fcurve):
    """Whether ``fcurve`` holds samples (Graph Editor > Channel > Keys to Samples) rather than keys."""
    return len(fcurve.sampled_points) > 0


def _point_frames(points):
    frames = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", frames)
    return frames[0::2]


def _drop_samples(fcurve):
    """Free the samples of ``fcurve``, leaving it empty (no keys, no samples)."""
    # Any range frees them all; one that ends past Blender's last frame is clamped empty, which it refuses.
    first = min(int(np.floor(fcurve.sampled_points[0].co[0])), SAMPLE_FRAMES[1] - 1)
    fcurve.convert_to_keyframes(first, first + 1)  # frees every sample; leaves one key
    fcurve.keyframe_points.clear()


def _set_samples(fcurve, co, select=None):
    """Make ``fcurve`` hold exactly the samples ``co`` ((n, 2) float32 frame and value, n >= 1) and nothing else:
    its keys, or samples, are dropped."""
    if has_samples(fcurve):
        _drop_samples(fcurve)
    keyframe_points = fcurve.keyframe_points
    keyframe_points.clear()
    # One key is all convert_to_samples needs; the values come after. Writing every key first would need a
    # key array (72 bytes a frame) only to throw it away.
    keyframe_points.add(1)
    # The frames are set with the values, so the samples can be made anywhere: where their end, excluded, is
    # still within Blender's limits (samples up to the last frame need it one past).
    first = min(int(co[0, 0]), SAMPLE_FRAMES[1] - len(co))
    fcurve.convert_to_samples(first, first + len(co))
    fcurve.sampled_points.foreach_set("co", np.ascontiguousarray(co, dtype=np.float32).ravel())
    if select is not None:
        fcurve.sampled_points.foreach_set("select", select)


def output_problems(obj, data_paths, samples, frame_range):
    """What a bake of ``data_paths`` (of ``obj``'s own animation) over ``frame_range`` (first, last) would lose,
    as (data_path, index, reason) tuples. To keys (``samples`` false): an F-curve that holds samples, which takes
    no keys. To samples: an F-curve with keys or samples outside the range, which the samples would replace
    (a sampled F-curve holds nothing else). Keys and samples inside the range are the bake's to replace."""
    problems = []
    for fcurve, where in _fcurves_of(obj, data_paths):
        sampled = has_samples(fcurve)
        if not samples:
            if sampled:
                problems.append(where + ("holds samples (Keys to Samples), which take no keys: bake to samples, or "
                                         "turn them into keys first (Graph Editor > Channel > Samples to Keys)",))
            continue
        first, last = frame_range
        frames = _point_frames(fcurve.sampled_points if sampled else fcurve.keyframe_points)
        outside = frames[(frames < first) | (frames > last)]
        if len(outside):
            span = (f"at frame {outside[0]:g}" if len(outside) == 1 else
                    f"{len(outside)} of them, frames {outside.min():g} to {outside.max():g}")
            what = "samples" if sampled else "keys"
            way_out = ("bake a range that covers them, or turn them into keys (Graph Editor > Channel > Samples to "
                       "Keys) and bake to keys" if sampled else "bake to keys (which keeps them), or delete them")
            problems.append(where + (f"has {what} outside frames {first}-{last} ({span}), which a bake to samples "
                                     f"would delete (an F-curve of samples holds nothing else): {way_out}",))
    return problems


# A bone's rotation channels in each of its rotation modes: it plays those of its mode now only.
ROTATION_PATHS = {"rotation_quaternion": "Quaternion", "rotation_euler": "Euler", "rotation_axis_angle": "Axis Angle"}


def mode_problems(obj, data_paths, frame_range):
    """Keys a bake of ``data_paths`` (each a bone's rotation channel in its rotation mode now) over ``frame_range``
    (first, last) would leave unplayed, as (data_path, reason) tuples: keys (or samples) of the bone's other rotation
    channels outside the range (the bone was keyed in another mode, which was changed since), before or after it where
    its mode's own channel has none. Blender plays the mode's channel only, so those frames play no keys of the bone:
    a bake of part of them leaves the rest off."""
    first, last = frame_range
    problems = []
    wanted = {f"{data_path.rpartition('.')[0]}.{other}" for data_path in data_paths for other in ROTATION_PATHS}
    played = {}  # the F-curves of those paths, listed once (a character's action holds thousands)
    for fcurve, (path, _) in _fcurves_of(obj, wanted):
        if not is_muted(fcurve):
            played.setdefault(path, []).append(fcurve)
    for data_path in data_paths:
        prefix, _, name = data_path.rpartition(".")
        if name not in ROTATION_PATHS:
            continue
        if not any(f"{prefix}.{other}" in played for other in ROTATION_PATHS if other != name):
            continue  # no other mode's channel keyed (a bone keyed in one mode, or not yet): nothing it leaves unplayed
        sides = {}  # path -> (frames before the range, frames after it)
        for path in [f"{prefix}.{other}" for other in ROTATION_PATHS]:
            frames = [_point_frames(fcurve.sampled_points if has_samples(fcurve) else fcurve.keyframe_points)
                      for fcurve in played.get(path, ())]
            frames = np.concatenate(frames) if frames else np.empty(0, dtype=np.float32)
            sides[path] = (frames[frames < first], frames[frames > last])
        for path, (before, after) in sides.items():
            unplayed = [frames for frames, own in zip((before, after), sides[data_path]) if len(frames)
                        and not len(own)]
            if path == data_path or not unplayed:
                continue
            unplayed = np.concatenate(unplayed)
            low, high = float(min(unplayed.min(), first)), float(max(unplayed.max(), last))
            other = path.rpartition('.')[2]
            problems.append((data_path, (
                f"has {ROTATION_PATHS[other]} keys ({other}) from frame {unplayed.min():g} to {unplayed.max():g}, "
                f"outside frames {first:g}-{last:g}, that it no longer plays: its rotation mode was changed since, and "
                f"the bake keys {name}, so those frames would stay off the target; bake frames {low:g}-{high:g} (all "
                "of them), or set the bone's rotation mode back")))
            break
    return problems


def write_samples(obj, channels, frame_start, values):
    """Sample ``values`` on ``channels`` of ``obj`` at frames ``frame_start``, ``frame_start + 1``, ..., one F-curve
    at a time.

    ``channels`` is a list of ``(data_path, array_index, group_name)``, ``values`` an (F, len(channels)) array; the
    action, slot and F-curves are created as needed. Each channel's F-curve is replaced whole by the F samples,
    which Blender plays linearly between frames; other channels are kept. Raises ValueError, with nothing changed,
    when a channel has keys or samples outside the frames (see :func:`output_problems`)."""
    values = np.asarray(values)
    if values.ndim != 2 or values.shape[1] != len(channels):
        raise ValueError(f"values must have shape (frames, {len(channels)}), got {values.shape}")
    if len(values) == 0 or len(channels) == 0:
        return
    if len(values) > MAX_SAMPLES:
        raise ValueError(f"{len(values)} frames of samples: at most {MAX_SAMPLES} fit in one F-curve")
    frame_start = int(frame_start)
    frame_range = (frame_start, frame_start + len(values) - 1)
    for data_path, index, reason in output_problems(obj, [path for path, _, _ in channels], True, frame_range):
        if any(path == data_path and channel == index for path, channel, _ in channels):
            raise ValueError(f"the F-curve {data_path}[{index}] {reason}")

    action = ensure_action(obj)
    existing = {(fcurve.data_path, fcurve.array_index): fcurve for fcurve in object_fcurves(obj)}
    new_fcurve = _fcurve_maker(obj, action)
    co = np.empty((len(values), 2), dtype=np.float32)
    co[:, 0] = np.arange(frame_range[0], frame_range[1] + 1)
    for column, fcurve in _channel_fcurves(channels, existing, new_fcurve):
        co[:, 1] = values[:, column]
        _set_samples(fcurve, co)
    # Samples set through foreach_set do not tag the action: without this the evaluated copy keeps the old ones
    # (4.2 even through frame_set).
    action.update_tag()
