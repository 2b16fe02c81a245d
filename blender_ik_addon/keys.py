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

import bpy
import numpy as np

_LAYERED = "slots" in bpy.types.Action.bl_rna.properties
_POSE_BONE_SELECT = "select" in bpy.types.PoseBone.bl_rna.properties

# A key whose frame is this close to the baked range counts as inside it (co is stored as float32).
FRAME_TOLERANCE = 1e-3

# Keyframe attributes copied for the keys that are kept: name -> (values per key, numpy dtype).
# The dtypes are those Blender stores, so foreach_get/set copy raw memory (enums are bytes; an int32
# buffer works too but is an order of magnitude slower). co_ui is left out: it is a view of co.
_KEY_ATTRIBUTES = {
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


def _new_key_defaults():
    """A new key's attributes other than co, handles and interpolation, as ``keyframe_insert`` sets them."""
    return {
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


def object_fcurves(obj):
    """The F-curves that animate ``obj`` itself through its assigned action (a list, maybe empty)."""
    if _LAYERED:
        return [fcurve for bag in _assigned_channelbags(obj) for fcurve in bag.fcurves]
    anim_data = obj.animation_data
    if anim_data is None or anim_data.action is None:
        return []
    return list(anim_data.action.fcurves)


def find_fcurve(obj, data_path, index):
    """The F-curve of ``obj``'s own animation for ``data_path[index]``, or None."""
    for fcurve in object_fcurves(obj):
        if fcurve.data_path == data_path and fcurve.array_index == index:
            return fcurve
    return None


def _new_fcurve(obj, action, data_path, index, group_name):
    """Create an F-curve in the animation ``ensure_action`` set up, grouped under ``group_name``."""
    if not _LAYERED:
        return action.fcurves.new(data_path, index=index, action_group=group_name)
    layer = action.layers[0] if len(action.layers) else action.layers.new("Layer")
    strip = layer.strips[0] if len(layer.strips) else layer.strips.new(type='KEYFRAME')
    bag = strip.channelbag(obj.animation_data.action_slot, ensure=True)
    # 4.4/4.5 have no group_name argument here, so the group is assigned afterwards.
    fcurve = bag.fcurves.new(data_path, index=index)
    if group_name:
        group = next((g for g in bag.groups if g.name == group_name), None) or bag.groups.new(group_name)
        fcurve.group = group
    return fcurve


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


def _read_keys(keyframe_points, attributes):
    """The given attributes of all keys, as numpy arrays keyed by attribute name (co as (n, 2))."""
    count = len(keyframe_points)
    keys = {}
    for attribute in attributes:
        width, dtype = _KEY_ATTRIBUTES[attribute]
        buffer = np.empty(count * width, dtype=dtype)
        keyframe_points.foreach_get(attribute, buffer)
        keys[attribute] = buffer.reshape(count, width) if width > 1 else buffer
    return keys


def _write_channel(fcurve, frames, channel_values, interpolation_value, defaults, replace):
    """Replace the keys of ``fcurve`` inside ``replace`` (first, last frame) by the new ones, keep the rest."""
    keyframe_points = fcurve.keyframe_points
    old = _read_keys(keyframe_points, ("co",))
    old_frames = old["co"][:, 0]
    before = old_frames < replace[0] - FRAME_TOLERANCE
    after = old_frames > replace[1] + FRAME_TOLERANCE
    kept = int(before.sum()) + int(after.sum())
    if kept:
        attributes = tuple(_KEY_ATTRIBUTES)
        old.update(_read_keys(keyframe_points, attributes[1:]))
    else:
        # Nothing to restore: keyframe_points.add() already gives new keys the right values for the rest.
        attributes = tuple(name for name in _SET_ON_NEW_KEYS
                           if name != "interpolation" or interpolation_value != _ADDED_INTERPOLATION)

    count = len(frames)
    co = np.empty((count, 2), dtype=np.float32)
    co[:, 0], co[:, 1] = frames, channel_values
    new = {"co": co, "handle_left": co, "handle_right": co, "interpolation": interpolation_value}
    new.update(defaults)

    keyframe_points.clear()
    keyframe_points.add(kept + count)
    for attribute in attributes:
        width, dtype = _KEY_ATTRIBUTES[attribute]
        shape = (count, width) if width > 1 else (count,)
        inserted = np.broadcast_to(np.asarray(new[attribute], dtype=dtype), shape)
        if kept:
            inserted = np.concatenate((old[attribute][before], inserted, old[attribute][after]))
        keyframe_points.foreach_set(attribute, inserted.ravel())
    # Sorts (already sorted) and calculates the automatic handles of the new keys and their neighbours,
    # exactly as inserting the keys one by one would.
    fcurve.update()


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
    try:
        interpolation_value = _enum_value("interpolation", interpolation)
    except KeyError:
        raise ValueError(f"unknown keyframe interpolation {interpolation!r}") from None

    replace = (float(frames[0]), float(frames[-1])) if replace is None else (float(replace[0]), float(replace[1]))
    if replace[0] > frames[0] or replace[1] < frames[-1]:
        raise ValueError(f"the replaced range {replace} must hold every new key")

    action = ensure_action(obj)
    existing = {(fcurve.data_path, fcurve.array_index): fcurve for fcurve in object_fcurves(obj)}
    defaults = _new_key_defaults()
    for column, (data_path, index, group_name) in enumerate(channels):
        fcurve = existing.get((data_path, index))
        if fcurve is None:
            fcurve = _new_fcurve(obj, action, data_path, index, group_name)
            existing[(data_path, index)] = fcurve
        _write_channel(fcurve, frames, values[:, column], interpolation_value, defaults, replace)


def set_pose_bone_selected(pose_bone, selected):
    """Select or deselect a pose bone (``PoseBone.select`` on 5.0, ``Bone.select`` before)."""
    if _POSE_BONE_SELECT:
        pose_bone.select = selected
    else:
        pose_bone.bone.select = selected


def is_pose_bone_selected(pose_bone):
    """Whether a pose bone is selected (``PoseBone.select`` on 5.0, ``Bone.select`` before)."""
    return bool(pose_bone.select if _POSE_BONE_SELECT else pose_bone.bone.select)
