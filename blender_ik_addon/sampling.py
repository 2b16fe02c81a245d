"""World matrices of the target, the pole, the armature, and the chain's base, for a list of frames.

Two ways, giving the same matrices:

- **Direct**: when an object's world matrix depends only on its own F-curves (no constraints,
  drivers, NLA, rigid body, and a parent, if any, that is itself of that kind), its transform
  channels are evaluated from the F-curves and composed as Blender does
  (``parent · parent_inverse · T(loc + Δloc) · ΔR · R · S(scale · Δscale)``). The scene's frame
  never changes, so the cost does not depend on how heavy the rest of the scene is.
- **Per frame**: otherwise, ``scene.frame_set`` on each frame and read what Blender evaluated.

The chain's base ``A₁`` (armature space) is constant unless something animates the bones above the
chain or the first bone's location/scale, or constraints or drivers could; then it is read per frame.
"""
import re
from dataclasses import dataclass

import numpy as np
from bpy.utils import escape_identifier

from . import fcurves, keys, rotations
from .chain import (BONE_OF_PATH, ChainError, affine_inverse, base_matrix, bone_path, check_evaluated, driven_through,
                    goal_label, goal_world, matrix_array, posers, rotation_path, through_at_rest, through_label,
                    uniform_scale)
from .report import compact_frames


def _is_muted(fcurve):
    return keys.is_muted(fcurve)


def nla_plays(animation):
    """Whether Blender plays ``animation`` (an AnimData) through its NLA rather than its action alone: a track that is
    not muted, a solo track (muted or not, the action does not play beside it), or a strip in tweak mode (its action
    plays in the strip's time, not the scene's)."""
    return animation.use_tweak_mode or any(not track.mute or track.is_solo for track in animation.nla_tracks)


def direct_reason(obj, scene):
    """Why ``obj``'s world matrix cannot be read straight from its F-curves, or None if it can."""
    if scene.render.frame_map_old != scene.render.frame_map_new:
        return "the scene remaps time"
    while obj is not None:
        if len(obj.constraints):
            return f"'{obj.name}' has constraints"
        if obj.rigid_body is not None:
            return f"'{obj.name}' is a rigid body"
        animation = obj.animation_data
        if animation is not None:
            driven = _driven(obj, _TRANSFORM_DRIVEN)
            if driven:
                return f"'{obj.name}' has a driver on its {driven}"
            if nla_plays(animation):
                return f"'{obj.name}' has NLA tracks"
            for fcurve, where in keys.played_channels(obj, _PARENTING):
                if not _is_muted(fcurve):
                    return f"'{obj.name}' has its {fcurve.data_path} animated{where}"
            if animation.action is not None and (
                    animation.action_influence != 1.0 or animation.action_blend_type != "REPLACE"
                    or getattr(animation.action, "use_frame_range", False)):
                return f"'{obj.name}' blends or loops its action"
        if obj.parent is not None and obj.parent_type == "BONE" and obj.parent.type == "ARMATURE":
            bone = obj.parent.data.bones.get(obj.parent_bone)
            reason = ("it names no bone" if bone is None else "its bone has Relative Parenting"
                      if bone.use_relative_parent else bone_reason(obj.parent, obj.parent_bone, scene))
            if reason is not None:
                return f"'{obj.name}' hangs from bone '{obj.parent_bone}' of '{obj.parent.name}': {reason}"
            return None  # bone_reason read the armature and what it hangs from
        if obj.parent is not None and obj.parent_type != "OBJECT":
            return f"'{obj.name}' has a {obj.parent_type.lower()} parent"
        if obj.parent is not None and obj.parent.type == "CURVE" and obj.parent.data.use_path:
            return f"'{obj.name}' follows the path of curve '{obj.parent.name}'"
        obj = obj.parent
    return None


# What a driver changes an object's world matrix through (its bones' drivers do not; nor do those of custom properties,
# which only a constraint or another driver reads: a constrained object is read frame by frame, and that driver is
# counted where it drives).
_TRANSFORM_DRIVEN = ("location", "rotation_euler", "rotation_quaternion", "rotation_axis_angle", "rotation_mode",
                     "scale", "delta_location", "delta_rotation_euler", "delta_rotation_quaternion", "delta_scale")
# How an object hangs from its parent (data path, channels), which Blender plays keyed or driven as any property (a
# script's space switch keys the parent inverse); direct_world_matrices composes the parenting it has now.
_PARENTING = [("matrix_parent_inverse", index) for index in range(16)] + [("parent_type", 0)]


def _driven(obj, paths, prefixes=()):
    """The data path of a driver of ``obj`` (muted or not: its mute may be keyed) that is one of ``paths`` or starts
    with one of ``prefixes``, or None."""
    animation = obj.animation_data
    for driver in animation.drivers if animation is not None else ():
        if driver.data_path in paths or (prefixes and driver.data_path.startswith(prefixes)):
            return driver.data_path
    return None


def _channel(obj, curves, path, frames):
    """(F, n) values of one transform property: its sampled F-curves where animated, the stored value elsewhere.
    ``curves`` maps (data path, index) to an (F,) column of samples."""
    static = np.array(tuple(getattr(obj, path)), dtype=np.float64)
    values = np.tile(static, (len(frames), 1))
    for index in range(len(static)):
        column = curves.get((path, index))
        if column is not None:
            values[:, index] = column
    return values


# Below this many frames, FCurve.evaluate per frame costs less than fcurves.evaluate_many's copy of the
# action (measured on six curves: about 60 µs, against 0.3 µs per curve and frame); both give the same values.
_EVALUATE_EACH_BELOW = 40
_TRANSFORM_PATHS = ("location", "delta_location", "scale", "delta_scale", "delta_rotation_quaternion",
                    "delta_rotation_euler")


def _animated(obj):
    """The F-curves Blender plays on ``obj``'s transform (an armature's bone curves are not read); muted and
    empty ones leave the stored value, as in Blender."""
    paths = set(_TRANSFORM_PATHS) | {rotation_path(obj.rotation_mode)}
    return [fcurve for fcurve in keys.object_fcurves(obj) if fcurve.data_path in paths
            and not _is_muted(fcurve) and not fcurves.is_empty(fcurve)]


# With keep_data, frame by frame up to this many evaluations (about 0.3 µs each, so 3.6 ms): the copies
# evaluate_many samples would make Blender rebuild the scene's dependency relations once they are removed, which
# costs more on a character's rig (14 ms with a generated Rigify human in the scene), and a re-bake makes no other.
_KEEP_DATA_EVALUATIONS = 12_000


def _evaluate(animated, frames, keep_data=False):
    if len(frames) >= _EVALUATE_EACH_BELOW and not (
            keep_data and len(frames) * len(animated) <= _KEEP_DATA_EVALUATIONS):
        return fcurves.evaluate_many(animated, frames)
    samples = np.empty((len(frames), len(animated)))
    values = frames.tolist()
    for column, fcurve in enumerate(animated):
        evaluate = fcurve.evaluate
        samples[:, column] = [evaluate(frame) for frame in values]
    return samples


def _basis_matrices(obj, frames, animated, keep_data=False):
    mode = obj.rotation_mode
    samples = _evaluate(animated, frames, keep_data)
    curves = {(fcurve.data_path, fcurve.array_index): samples[:, column] for column, fcurve in enumerate(animated)}
    # A delta that is not animated and is the identity changes nothing (x + 0 and x·1 are exact): skipped.
    animated_paths = {path for path, _ in curves}
    location = _channel(obj, curves, "location", frames)
    if "delta_location" in animated_paths or any(obj.delta_location):
        location = location + _channel(obj, curves, "delta_location", frames)
    # A unit scale that is not animated is skipped the same way (x·1 is exact): most targets have one.
    scale = None
    if "scale" in animated_paths or tuple(obj.scale) != (1.0, 1.0, 1.0):
        scale = _channel(obj, curves, "scale", frames)
    if "delta_scale" in animated_paths or tuple(obj.delta_scale) != (1.0, 1.0, 1.0):
        delta_scale = _channel(obj, curves, "delta_scale", frames)
        scale = delta_scale if scale is None else scale * delta_scale
    rotation = rotations.channels_to_matrix(
        _channel(obj, curves, rotation_path(mode), frames), mode)
    if mode == "QUATERNION":
        if ("delta_rotation_quaternion" in animated_paths
                or tuple(obj.delta_rotation_quaternion) != (1.0, 0.0, 0.0, 0.0)):
            rotation = rotations.channels_to_matrix(_channel(obj, curves, "delta_rotation_quaternion", frames),
                                                    mode) @ rotation
    elif mode != "AXIS_ANGLE":  # axis-angle has no delta rotation that Python can set
        if "delta_rotation_euler" in animated_paths or any(obj.delta_rotation_euler):
            rotation = rotations.channels_to_matrix(_channel(obj, curves, "delta_rotation_euler", frames),
                                                    mode) @ rotation
    matrices = np.zeros((len(frames), 4, 4))
    matrices[:, :3, :3] = rotation if scale is None else rotation * scale[:, None, :]
    matrices[:, :3, 3] = location
    matrices[:, 3, 3] = 1.0
    return matrices


def _static(obj):
    while obj is not None:
        if _animated(obj) or (obj.parent is not None and obj.parent_type == "BONE"):  # a bone may be keyed
            return False
        obj = obj.parent
    return True


def _unturned_basis(obj):
    """The (4, 4) basis of an object that nothing animates, without a parent, turned by no rotation (an armature at
    the origin, as characters mostly are): its location and scale, on floats, as :func:`_basis_matrices` composes them
    (x·1 and x + 0 are exact); None when it is turned. Its numpy calls cost ~0.1 ms for one matrix (issue 11: a short
    bake's fixed cost)."""
    mode = obj.rotation_mode
    if mode == "QUATERNION":
        turned = (tuple(obj.rotation_quaternion) != (1.0, 0.0, 0.0, 0.0)
                  or tuple(obj.delta_rotation_quaternion) != (1.0, 0.0, 0.0, 0.0))
    elif mode == "AXIS_ANGLE":  # (no delta rotation, as _basis_matrices)
        turned = obj.rotation_axis_angle[0] != 0.0
    else:
        turned = any(obj.rotation_euler) or any(obj.delta_rotation_euler)
    if turned:
        return None
    location, delta = list(obj.location), tuple(obj.delta_location)
    if any(delta):
        location = [value + change for value, change in zip(location, delta)]
    scale, delta = list(obj.scale), tuple(obj.delta_scale)
    if delta != (1.0, 1.0, 1.0):
        scale = [value * change for value, change in zip(scale, delta)]
    return np.array([[scale[0], 0.0, 0.0, location[0]], [0.0, scale[1], 0.0, location[1]],
                     [0.0, 0.0, scale[2], location[2]], [0.0, 0.0, 0.0, 1.0]])


def direct_world_matrices(obj, frames, keep_data=False, poses=None, animated=None):
    """(F, 4, 4) world matrices from the object's (and its parents') F-curves, and a parent bone's keys; see
    direct_reason(). When nothing is animated, one frame's matrix, broadcast (read-only). ``keep_data``: see
    :func:`sample`; ``poses``: see :func:`bone_poses`; ``animated``: :func:`_animated` of ``obj``, when known."""
    frames = np.asarray(frames, dtype=np.float64)
    animated = _animated(obj) if animated is None else animated
    parented = obj.parent is not None
    if len(frames) > 1 and not animated and not (parented and obj.parent_type == "BONE") and _static(obj.parent):
        basis = None if parented else _unturned_basis(obj)
        if basis is not None:
            return np.broadcast_to(basis, (len(frames), 4, 4))
        return np.broadcast_to(direct_world_matrices(obj, frames[:1], animated=animated), (len(frames), 4, 4))
    matrices = _basis_matrices(obj, frames, animated, keep_data)
    if obj.parent is not None:
        parent_inverse = matrix_array(obj.matrix_parent_inverse)
        parent = direct_world_matrices(obj.parent, frames, keep_data, poses)
        if obj.parent_type == "BONE":  # the bone's pose, moved to its tail (Blender's parent matrix of a bone child)
            bone = obj.parent.data.bones[obj.parent_bone]
            tail = np.eye(4)
            tail[1, 3] = bone.length
            parent = _products(parent, bone_poses(obj.parent, obj.parent_bone, frames, keep_data, poses) @ tail)
        matrices = parent @ parent_inverse @ matrices
    return matrices


def _products(a, b):
    """``a @ b`` for (F, 4, 4) stacks (either may be one matrix broadcast), frame by frame without BLAS: numpy's
    stacked matmul calls it once per frame."""
    return np.einsum("...ij,...jk->...ik", a, b)


# Settings of the Armature datablock that change where its bones are posed (B-Bone and display settings do not).
_POSING_BONE_SETTINGS = ("use_inherit_rotation", "inherit_scale", "use_local_location", "use_relative_parent",
                         "use_connect")


def animated_bone_settings(armature, names):
    """The Armature datablock's animated or driven settings (keys, NLA strips that play, drivers) that change how the
    bones ``names`` are posed, or whether any pose shows (Pose/Rest Position): ``(data path, where)`` pairs."""
    data = armature.data
    if data.animation_data is None:
        return []
    paths = {"pose_position"} | {f'bones["{escape_identifier(name)}"].{setting}' for name in names
                                 for setting in _POSING_BONE_SETTINGS}
    return [(fcurve.data_path, where) for fcurve, where in keys.played_fcurves(data)
            if fcurve.data_path in paths and not _is_muted(fcurve)]


def base_reason(chain, curves=None):
    """Why the chain's base A₁ may change from frame to frame, or None when it is constant. ``curves``: the
    armature's :class:`PlayedCurves`, when the caller has them."""
    armature = chain.armature
    pose_bone = chain.pose_bones[0]
    ancestors = []
    parent = pose_bone.parent
    while parent is not None:
        ancestors.append(parent)
        parent = parent.parent
    driven = _driven(armature, (), tuple(bone_path(bone.name, "") for bone in ancestors))
    if driven is not None:
        return f"'{armature.name}' has a driver on {driven}"
    if armature.animation_data is not None and nla_plays(armature.animation_data):
        return f"'{armature.name}' has NLA tracks"
    for bone in ancestors:  # (read_chain refuses constraints on the chain's own bones)
        if len(bone.constraints):
            return f"bone '{bone.name}' has constraints"
    for path, _ in animated_bone_settings(armature, [bone.name for bone in ancestors]):
        return f"the armature's {path} is animated or driven"
    for owner, constraint, bone_name in posers(armature, {bone.name for bone in ancestors}):
        return (f"bone '{bone_name}' above the chain is posed by the {constraint.type.replace('_', ' ')} constraint of "
                f"bone '{owner.name}'")
    curves = PlayedCurves(armature) if curves is None else curves
    for fcurve, _ in curves.of_bones([bone.name for bone in ancestors], action_only=True):
        if not _is_muted(fcurve):
            return ANIMATED_ABOVE
    return None


ANIMATED_ABOVE = "a bone above the chain is animated"  # base_reason's reason that direct_base may read from the keys


def _bone_and_parents(armature, bone_name):
    """Pose bone ``bone_name`` and its parents, from the root down."""
    bones, pose_bone = [], armature.pose.bones[bone_name]
    while pose_bone is not None:
        bones.append(pose_bone)
        pose_bone = pose_bone.parent
    return bones[::-1]


def _inherits_fully(bone):
    """Whether the bone takes all of its parent's transform (Inherit Rotation, Inherit Scale Full): its pose is its
    parent's times its own, a plain product."""
    return bone.inherit_scale == "FULL" and bone.use_inherit_rotation


def _keys_posing(armature, bones, curves=None):
    """What of ``armature``'s keys poses ``bones`` (a bone and its parents, from the root down), as ``(F-curves,
    {(bone name, attribute, index): column})``: their location, rotation (in the bone's mode) and scale; or why
    Blender's pose of them is more than the product of those keys (a string): a bone that does not inherit fully from
    its parent (Inherit Rotation, Inherit Scale Full, Local Location), another of their settings keyed (a rotation
    mode, a B-Bone setting), an action that blends or loops. Constraints, drivers, NLA and other bones' IK are
    :func:`bone_reason`'s and :func:`base_reason`'s. ``curves``: the armature's :class:`PlayedCurves`, when the caller
    has them."""
    animation = armature.animation_data
    if animation is not None and animation.action is not None and (
            animation.action_influence != 1.0 or animation.action_blend_type != "REPLACE"
            or getattr(animation.action, "use_frame_range", False)):
        return f"'{armature.name}' blends or loops its action"
    for pose_bone in bones:  # a root bone without Local Location moves along the armature's axes, not its own
        bone = pose_bone.bone
        if not bone.use_local_location or bone.parent is not None and not _inherits_fully(bone):
            return (f"bone '{bone.name}' does not inherit all of its parent's transform, or moves along the armature's "
                    "axes (Inherit Rotation, Inherit Scale Full, Local Location)")
    modes = {pose_bone.name: pose_bone.rotation_mode for pose_bone in bones}
    animated, columns = [], {}
    curves = PlayedCurves(armature) if curves is None else curves
    for fcurve, _, name in curves.of_bones(modes, action_only=True, named=True):
        if _is_muted(fcurve) or fcurves.is_empty(fcurve):
            continue
        path = fcurve.data_path
        attribute = path[len(bone_path(name, "")):]
        if attribute in ("location", "scale", rotation_path(modes[name])):
            columns[(name, attribute, fcurve.array_index)] = len(animated)
            animated.append(fcurve)
        elif attribute not in keys.ROTATION_PATHS:  # another mode's rotation plays no part; anything else may
            return f"the armature's {path} is keyed"
    return animated, columns


def _posed(armature, bones, frames, keyed, keep_data, poses):
    """(F, 4, 4) pose of the last of ``bones`` (see :func:`_keys_posing`, which gave ``keyed``) over ``frames``:
    each bone's pose is its parent's times its rest relative to the parent's, times ``T(location) · R · S`` of its
    channels (a connected bone's location does not count). ``poses``: {(armature, bone name): pose} of bones posed
    before over the same frames, which this adds to."""
    animated, columns = keyed
    pointer, count = armature.as_pointer(), len(frames)
    known = max((index for index, pose_bone in enumerate(bones) if (pointer, pose_bone.name) in poses), default=-1)
    needed = {pose_bone.name for pose_bone in bones[known + 1:]}
    used = [column for (name, _, _), column in columns.items() if name in needed]
    # Curves that _prefetch_poses sampled for all the chains of a bake are not sampled again: each sampling of an
    # action's curves copies the whole action (fcurves.evaluate_many), so one per chain grows with chains × keys.
    sampled = poses.get(("curves", pointer), {})
    unsampled = [column for column in used if animated[column].as_pointer() not in sampled]
    samples = (_evaluate([animated[column] for column in unsampled], np.asarray(frames, dtype=np.float64), keep_data)
               if unsampled else None)
    where = {column: index for index, column in enumerate(unsampled)}

    def channel(pose_bone, attribute):
        values = np.tile(np.array(tuple(getattr(pose_bone, attribute)), dtype=np.float64), (count, 1))
        for index in range(values.shape[1]):
            column = columns.get((pose_bone.name, attribute, index))
            if column is not None:
                values[:, index] = (samples[:, where[column]] if column in where
                                    else sampled[animated[column].as_pointer()])
        return values

    pose = poses[(pointer, bones[known].name)] if known >= 0 else None
    parent_rest = matrix_array(bones[known].bone.matrix_local) if known >= 0 else None
    for pose_bone in bones[known + 1:]:
        rest = matrix_array(pose_bone.bone.matrix_local)
        offset = rest if parent_rest is None else affine_inverse(parent_rest) @ rest
        basis = np.zeros((count, 4, 4))
        basis[:, 3, 3] = 1.0
        mode = pose_bone.rotation_mode
        basis[:, :3, :3] = rotations.channels_to_matrix(channel(pose_bone, rotation_path(mode)), mode) \
            * channel(pose_bone, "scale")[:, None, :]
        if not pose_bone.bone.use_connect:
            basis[:, :3, 3] = channel(pose_bone, "location")
        # The frames' matrices times one matrix in one product (numpy's stacked matmul calls BLAS once per frame).
        pose = _products(offset if pose is None else (pose.reshape(-1, 4) @ offset).reshape(count, 4, 4), basis)
        poses[(pointer, pose_bone.name)] = pose
        parent_rest = rest
    return pose


def bone_reason(armature, bone_name, scene):
    """Why the world matrix of bone ``bone_name`` of ``armature`` cannot be composed from the keys (see
    :func:`bone_poses`), or None if it can: the armature's own (:func:`direct_reason`), Rest Position, constraints on
    the bone or a bone above it, their posing settings keyed or driven, another bone's IK reaching into them, or what
    :func:`_keys_posing` finds."""
    reason = direct_reason(armature, scene)
    if reason is not None:
        return reason
    if armature.data.pose_position == "REST":
        return f"'{armature.name}' shows its Rest Position"
    bones = _bone_and_parents(armature, bone_name)
    driven = _driven(armature, (), tuple(bone_path(pose_bone.name, "") for pose_bone in bones))
    if driven is not None:
        return f"'{armature.name}' has a driver on {driven}"
    for pose_bone in bones:
        if len(pose_bone.constraints):
            return f"bone '{pose_bone.name}' has constraints"
    names = [pose_bone.name for pose_bone in bones]
    for path, _ in animated_bone_settings(armature, names):
        return f"the armature's {path} is animated or driven"
    for owner, constraint, name in posers(armature, set(names)):
        return f"bone '{name}' is posed by the {constraint.type.replace('_', ' ')} constraint of bone '{owner.name}'"
    keyed = _keys_posing(armature, bones)
    return keyed if isinstance(keyed, str) else None


def bone_poses(armature, bone_name, frames, keep_data=False, poses=None):
    """(F, 4, 4) pose (armature space, ``PoseBone.matrix``) of bone ``bone_name`` over ``frames``, composed from the
    armature's keys as Blender poses bones that inherit fully; only where :func:`bone_reason` finds nothing against it.
    ``poses``: see :func:`_posed` (a dict the chains of one bake share: the limbs of a body share its spine)."""
    bones = _bone_and_parents(armature, bone_name)
    return _posed(armature, bones, frames, _keys_posing(armature, bones), keep_data, {} if poses is None else poses)


def direct_base(chain, frames, scene, curves=None, keep_data=False, poses=None):
    """(F, 4, 4) ``A₁`` (see chain.base_rows) over ``frames``, composed from the keys of the bones above the chain
    (:func:`bone_poses`): the parent's pose times the first bone's rest relative to it, times its location. For
    :func:`base_reason`'s ``ANIMATED_ABOVE`` only, where nothing but the action's keys poses those bones. None where
    Blender would do more (see :func:`_keys_posing`; an Inherit Scale other than Full on the first bone, a remapped
    scene): read frame by frame then. ``curves``: the armature's :class:`PlayedCurves`; ``keep_data``: see
    :func:`sample`; ``poses``: see :func:`_posed`. The scene's frame never changes: a keyed body under a character's
    limbs costs what its keys cost, not a scene evaluation per frame."""
    armature = chain.armature
    if scene.render.frame_map_old != scene.render.frame_map_new:
        return None
    first = chain.pose_bones[0]
    bone = first.bone
    if not _inherits_fully(bone) or not bone.use_local_location:
        return None
    bones = _bone_and_parents(armature, first.parent.name)
    keyed = _keys_posing(armature, bones, curves)
    if isinstance(keyed, str):
        return None
    parent = _posed(armature, bones, frames, keyed, keep_data, {} if poses is None else poses)
    rest = matrix_array(bone.matrix_local)
    offset = affine_inverse(matrix_array(bones[-1].bone.matrix_local)) @ rest
    if not bone.use_connect:  # A₁: the first bone's location only (its rotation and scale are the solve's)
        location = np.eye(4)
        location[:3, 3] = tuple(first.location)
        offset = offset @ location
    return (parent.reshape(-1, 4) @ offset).reshape(len(frames), 4, 4)


def _prefetch_poses(armature, chains, frames, curves, keep_data, poses):
    """Sample at once the keys of the bones above ``chains`` (those direct_base composes) into ``poses`` for
    :func:`_posed`: a centipede's hundred legs under one keyed spine sample its action once, not once per leg. Nothing
    where those bones' keys cannot pose them (direct_base finds why, chain by chain)."""
    bones = {}
    for chain in chains:
        above = _bone_and_parents(armature, chain.pose_bones[0].parent.name)
        bones.update((pose_bone.name, pose_bone) for pose_bone in above)
    keyed = _keys_posing(armature, list(bones.values()), curves) if bones else None
    if keyed is None or isinstance(keyed, str) or not keyed[0]:
        return
    animated = keyed[0]
    samples = _evaluate(animated, np.asarray(frames, dtype=np.float64), keep_data)
    poses.setdefault(("curves", armature.as_pointer()), {}).update(
        (fcurve.as_pointer(), samples[:, column]) for column, fcurve in enumerate(animated))




class PlayedCurves:
    """The F-curves that play on an armature (its action's, as keys.object_fcurves lists them, then its NLA strips'),
    each with where it is keyed (for messages), listed once and found by bone: a character's action holds thousands,
    and each chain of a bake looks at a few bones' (a centipede's 200 legs under a keyed spine: each chain went
    through every F-curve of the armature, and a bake grew with the square of its legs, 1.2 s at 200 and 7.6 s at
    400)."""

    def __init__(self, armature):
        self.action = keys.object_fcurves(armature)
        self.played = [(fcurve, "") for fcurve in self.action]
        self.played += [(fcurve, f" (keyed in NLA strip '{strip}')") for fcurve, strip in keys.nla_fcurves(armature)]
        self._by_bone = {}  # the bone's name as paths escape it -> the indices of its F-curves in self.played
        for index, (fcurve, _) in enumerate(self.played):
            path = fcurve.data_path
            match = BONE_OF_PATH.match(path)
            if match is not None and path[match.end():match.end() + 1] == ".":  # a property of the bone's
                self._by_bone.setdefault(match.group(1), []).append(index)

    def of_bones(self, names, action_only=False, named=False):
        """The ``(F-curve, where)`` of :attr:`played` whose paths are the properties of the pose bones ``names``
        (``pose.bones["name"].…``), in their order there; ``action_only``: the action's only; ``named``: each with its
        bone's name after them."""
        end = len(self.action) if action_only else len(self.played)
        found = sorted((index, name) for name in set(names)
                       for index in self._by_bone.get(escape_identifier(name), ()) if index < end)
        return [self.played[index] + (name,) if named else self.played[index] for index, name in found]


def check_no_animated_posers(chain, curves=None):
    """Refuse another bone's IK or Spline IK whose chain reaches into this one (it poses its bones as their own
    constraint would) with keyed or driven settings: it acts on other frames than the one the chain was validated on
    (an IK/FK blend at influence 0, or muted, now). A bake and a built rig play every frame. ``curves``: the
    armature's :class:`PlayedCurves`, when the caller has them."""
    found = [(owner, constraint) for owner, constraint, _ in posers(chain.armature, set(chain.spanned))
             if owner.name not in chain.spanned]
    if not found:
        return
    # Each constraint's path, with its bone's name as the bone has it (a path escapes it, and a name may hold dots).
    posing = {bone_path(owner.name, f'constraints["{escape_identifier(constraint.name)}"]'): owner.name
              for owner, constraint in found}
    played = (PlayedCurves(chain.armature) if curves is None else curves).of_bones(owner.name for owner, _ in found)
    drivers = list(chain.armature.animation_data.drivers) if chain.armature.animation_data else []
    for fcurve, where in played + [(driver, "") for driver in drivers]:
        if fcurve.data_path.startswith(tuple(posing)) and not _is_muted(fcurve):
            name = next(posing[path] for path in posing if fcurve.data_path.startswith(path))
            raise ChainError(f"Bone '{name}' has an animated or driven IK constraint "
                             f"({fcurve.data_path[len(bone_path(name, '')):]}){where} whose chain reaches into "
                             "this chain and would move it on some frames: remove those keys or drivers, or "
                             "shorten its Chain Length so that it stops below the chain")


# How far a location (times the chain's length) or a scale may stray from its current value in keys that still hold
# it: an FBX take (Blender's own FBX export read back in) keys every bone's scale at 1.0 or 1.0000001 (float32 ulps) and
# its location at a few 1e-8. The tip moves by no more than that, times the chain's length (the self-check allows 1e-4).
_HELD_TOLERANCE = 1e-6


def _holds_its_value(fcurve, armature, tolerance=0.0):
    """The F-curve of a location or scale plays the channel's current value on every frame: its keys all hold it
    (within ``tolerance``, with constant extrapolation: a linear one would carry their noise's slope away), with no
    handle off it (a Bezier curve between equal keys bends only through its handles: a segment after a Bezier key uses
    the next key's left handle whatever that key's interpolation, and linear extrapolation the end handles), no
    Elastic segment (it swings by its own amplitude between equal keys: a scale of 1 played from 0.45 to 1.27) and no
    modifier that plays."""
    points = fcurve.keyframe_points
    if not len(points) or any(not modifier.mute for modifier in fcurve.modifiers):
        return False
    if any(point.interpolation == "ELASTIC" for point in list(points)[:-1]):  # the last key's starts no segment
        return False
    try:
        value = armature.path_resolve(fcurve.data_path)[fcurve.array_index]
    except (ValueError, IndexError):
        return False
    if fcurve.extrapolation != "CONSTANT":
        tolerance = 0.0
    return all(abs(point.co[1] - value) <= tolerance and abs(point.handle_left[1] - value) <= tolerance
               and abs(point.handle_right[1] - value) <= tolerance for point in points)


def check_chain_not_animated(chain, curves=None):
    """The bake keys rotations only and takes the chain's other channels as they are now: refuse an
    animated location (of an unconnected bone), scale or rotation mode on a chain bone, and animated constraints on
    one (off where the chain is validated, they could act on other baked frames). ``curves``: the armature's
    :class:`PlayedCurves`, when the caller has them. The F-curves of its NLA strips count as well: they play in every
    channel the action does not key."""
    curves = PlayedCurves(chain.armature) if curves is None else curves
    check_no_animated_posers(chain, curves)
    for path, where in animated_bone_settings(chain.armature, chain.spanned):
        raise ChainError(f"Armature '{chain.armature.data.name}' has an animated {path}{where}, which changes how the "
                         "chain is posed (or whether a pose shows) on some frames: remove those keys or drivers")
    # The bones passed through, which the chain takes at rest (chain.chain_path) on every frame: each one's
    # (constraints, rotation mode, the channels whose keys may hold it there).
    through = [(name, bone_path(name, "constraints["), bone_path(name, "rotation_mode"),
                {bone_path(name, path) for path in ("location", "scale",
                                                    rotation_path(chain.armature.pose.bones[name].rotation_mode))})
               for name in chain.through]
    for fcurve, where in curves.of_bones(chain.spanned):
        if _is_muted(fcurve):
            continue
        for name, constraints, mode, held in through:
            if (fcurve.data_path.startswith(constraints) or fcurve.data_path == mode or fcurve.data_path in held
                    and not (not where and _holds_its_value(fcurve, chain.armature, _HELD_TOLERANCE))):
                raise ChainError(f"Bone '{name}', which the chain passes through, has an animated "
                                 f"{fcurve.data_path[len(bone_path(name, '')):]}{where}; the chain takes it at rest "
                                 "on every frame: remove those keys")
        for name in chain.names:
            if fcurve.data_path.startswith(bone_path(name, "constraints[")):
                raise ChainError(f"Bone '{name}' has an animated constraint "
                                 f"({fcurve.data_path[len(bone_path(name, '')):]}){where} that would change the solved "
                                 "pose on some frames: remove those keys, or the constraint")
            if fcurve.data_path == bone_path(name, "rotation_mode"):
                raise ChainError(f"Bone '{name}' has an animated rotation mode{where}; the bake keys the channels of "
                                 f"the mode it has now ({chain.armature.pose.bones[name].rotation_mode}), which would "
                                 "not play where another mode is keyed: remove those keys")
            connected = chain.armature.data.bones[name].use_connect
            for attribute in ("scale",) if connected else ("location", "scale"):
                # Keyed as it is (Insert Keyframe keys location, rotation and scale by default) is not animated.
                tolerance = _HELD_TOLERANCE * (float(chain.lengths.sum()) if attribute == "location" else 1.0)
                if fcurve.data_path == bone_path(name, attribute) and not (
                        not where and _holds_its_value(fcurve, chain.armature, tolerance)):
                    raise ChainError(f"Bone '{name}' has an animated {attribute}{where}; the bake keys rotations "
                                     f"only and needs the chain's {attribute} to stay as it is: remove those keys")


def check_rotation_modes_still(spec, chain, checked=None):
    """Refuse an animated or driven rotation mode on the armature, a bone above the chain, a target or pole (or a bone
    of one), or on what they hang from: as Blender plays the mode's change it converts the rotation the object (or
    bone) held on the frame shown before into the new mode, so the frame after the change shows one rotation when
    played from the frame before and another when reached from a later one, and no keys can follow it. ``checked``: a
    set of the (object, path) found still, for the chains of one bake (a centipede's legs share their spine's bones)."""
    checked = set() if checked is None else checked
    first_parent = chain.pose_bones[0].parent
    owners = [(chain.armature, first_parent.name if first_parent is not None else "")]
    owners += [(goal, bone_name) for _, goal, bone_name in spec.goals() if goal is not None]
    for obj, bone_name in owners:
        while obj is not None:
            bones = _bone_and_parents(obj, bone_name) if bone_name and bone_name in obj.pose.bones else []
            for owner, path in [(f"Bone '{bone.name}' of '{obj.name}'", bone_path(bone.name, "rotation_mode"))
                                for bone in reversed(bones)] + [(f"Object '{obj.name}'", "rotation_mode")]:
                if (obj.as_pointer(), path) in checked:
                    continue
                checked.add((obj.as_pointer(), path))
                for fcurve, where in keys.played_channel(obj, path):
                    if not _is_muted(fcurve):
                        raise ChainError(f"{owner} has an animated rotation mode{where}: Blender turns its rotation "
                                         "into the new mode from whichever frame it showed before, so the pose it "
                                         "plays there depends on the frames played before it; remove those keys (key "
                                         "its rotation in one mode)", spec.label)
            bone_name = obj.parent_bone if obj.parent_type == "BONE" else ""
            obj = obj.parent


@dataclass
class Samples:
    """What the solve of several chains reads, per chain (in the order given), over F frames."""

    targets: list  # per chain: (F, 4, 4) the target's matrix in the armature's space (a view: read only)
    poles: list  # per chain: (F, 3) the pole point in the armature's space, or None
    bases: list  # per chain: (F, 4, 4) A₁
    direct: bool  # nothing needed the scene's frame to change
    reasons: list  # why some part was sampled per frame


# A driver variable's path ending in a component (scale.y, location[2]): its property and index, as F-curves have them.
_COMPONENT = re.compile(r"^(.*)(?:\.([xyzw])|\[(\d+)\])$")


def _holds_still(driver):
    """Whether the driver (an F-curve of ``animation_data.drivers``) plays the same value on every frame: an expression
    Blender evaluates natively that does not read the frame (or a sum, average, minimum or maximum), each variable a
    single property of an ID that nothing keys or drives (Rigify's finger curl reads its master control's Y scale).
    Its keys and modifiers map the driver's value, not the frame (Blender evaluates them at that value: 4.2's
    driver_add gives each new driver a Generator). Anything else may change: the caller then reads the frames as
    Blender plays them."""
    settings = driver.driver
    if settings.use_self or settings.type == "SCRIPTED" and (not settings.is_simple_expression
                                                              or "frame" in settings.expression):
        return False
    for variable in settings.variables:
        target = variable.targets[0]
        if variable.type != "SINGLE_PROP" or target.id is None or not target.data_path:
            return False
        path, index, match = target.data_path, 0, _COMPONENT.match(target.data_path)
        if match is not None:
            path = match.group(1)
            index = "xyzw".index(match.group(2)) if match.group(2) else int(match.group(3))
        if any(not _is_muted(fcurve) for fcurve, _ in keys.played_channel(target.id, path, index)):
            return False
    return True


def _has_simulation_zone(node_group, seen=None):
    """Whether a geometry node group (or a group inside it) holds a simulation zone."""
    seen = set() if seen is None else seen
    if node_group is None or node_group.name_full in seen:
        return False
    seen.add(node_group.name_full)
    return any(node.bl_idname == "GeometryNodeSimulationOutput"
               or node.type == "GROUP" and _has_simulation_zone(node.node_tree, seen) for node in node_group.nodes)


def simulations(scene):
    """The (start, end) frames of each simulation of ``scene`` that Blender steps frame by frame and has not baked: the
    rigid body world, and its objects' cloth, soft bodies, dynamic paint, particles (their point caches) and geometry
    nodes' simulation zones (the scene's simulation range)."""
    caches, zones = [], False
    world = scene.rigidbody_world
    if world is not None and world.enabled and world.collection is not None and len(world.collection.objects):
        caches.append(world.point_cache)
    for obj in scene.objects:
        for modifier in obj.modifiers:
            if not modifier.show_viewport:
                continue
            if modifier.type in ("CLOTH", "SOFT_BODY"):
                caches.append(modifier.point_cache)
            elif modifier.type == "DYNAMIC_PAINT" and modifier.canvas_settings is not None:
                caches += [surface.point_cache for surface in modifier.canvas_settings.canvas_surfaces]
            elif modifier.type == "NODES":
                zones = zones or _has_simulation_zone(modifier.node_group)
            elif modifier.type == "PARTICLE_SYSTEM":
                # Hair without dynamics is not simulated: Blender poses it at any frame.
                system = modifier.particle_system
                if system.settings.type != "HAIR" or system.use_hair_dynamics:
                    caches.append(system.point_cache)
    ranges = [(cache.frame_start, cache.frame_end) for cache in caches if not cache.is_baked]
    if zones:
        ranges.append((scene.simulation_frame_start, scene.simulation_frame_end) if scene.use_custom_simulation_range
                      else (scene.frame_start, scene.frame_end))
    return ranges


def sweep(scene, wanted):
    """The frames to set, in order, to read the frames ``wanted`` as Blender plays them: those, unless the scene
    simulates (rigid bodies, cloth, soft bodies, particles, simulation zones: :func:`simulations`) without a bake:
    Blender steps a simulation only one frame forward from the frame it showed (a jump leaves its bodies where they
    were), so then also every frame from each simulation's start to the last one wanted (or its end, past which it
    holds), one after the other."""
    last, frames = max(wanted), set(wanted)
    for start, end in simulations(scene):
        frames.update(range(start, min(last, end) + 1))
    return sorted(frames)


_IDENTITY = np.eye(4)


def set_frame(scene, frame, subframe):
    """Set the scene back to ``frame`` and ``subframe`` as read from it. Before frame 0 Blender holds a time with a
    negative subframe (-6.75 is frame -6, subframe -0.75: the Timeline's subframes), which frame_set clamps to 0: that
    time is set as frame -7, subframe 0.25."""
    if subframe < 0.0:
        frame, subframe = frame - 1, subframe + 1.0
    scene.frame_set(frame, subframe=subframe)


def sample(scene, armature, chains, frames, progress=None, moving_bases=None, keep_data=False):
    """Sample everything the solve of ``chains`` (a list of ``(spec, Chain)`` on ``armature``) reads over
    ``frames``, in one pass: a goal (object or bone) shared by several chains is sampled once, and when
    anything needs the scene evaluated, one sweep through the frames reads it all. ``moving_bases``:
    {chain index: reason} for bases that must be read per frame although nothing animates them directly
    (a chain below another chain that was just keyed). ``progress(done, total)`` is called per frame on
    the per-frame path. ``keep_data``: leave ``bpy.data`` as it is where that costs a few ms at most (F-curves
    evaluated frame by frame rather than sampled from a copy of their action; see _KEEP_DATA_EVALUATIONS). Restores
    the scene's frame (and subframe) afterwards."""
    frames = np.asarray(frames)
    count = len(frames)
    goals = {("armature", ""): (armature, "")}  # (object name, bone name) -> (object, bone name)
    users = {}  # (object name, bone name) -> the first chain that reaches for it, to name in a refusal
    for spec, _ in chains:
        goals[(spec.target.name_full, spec.target_bone)] = (spec.target, spec.target_bone)
        users.setdefault((spec.target.name_full, spec.target_bone), spec.label)
        if spec.plane == "POLE":
            goals[(spec.pole.name_full, spec.pole_bone)] = (spec.pole, spec.pole_bone)
            users.setdefault((spec.pole.name_full, spec.pole_bone), spec.label)
    reasons = {}
    world = {}
    poses = {}  # the bones that bone_poses and direct_base composed, for the goals and chains that share them
    for key, (obj, bone_name) in goals.items():
        if bone_name:
            reason = bone_reason(obj, bone_name, scene)
            reason = reason and f"the target or pole is bone '{bone_name}' of '{obj.name}': {reason}"
        else:
            reason = direct_reason(obj, scene)
        if reason is None:
            world[key] = direct_world_matrices(obj, frames, keep_data, poses)
            if bone_name:
                world[key] = _products(world[key], bone_poses(obj, bone_name, frames, keep_data, poses))
        else:
            # Read frame by frame from what Blender evaluates: an object it does not evaluate would give one stale
            # matrix on every frame (read from its F-curves, it needs no evaluation).
            try:
                check_evaluated(obj, f"'{goal_label(obj, bone_name)}', which the bake reads frame by frame ({reason}),")
            except ChainError as error:
                raise error.for_chain(users.get(key)) from None
            reasons[key] = reason
    bases = [None] * len(chains)
    moving_bases = moving_bases or {}
    curves = PlayedCurves(armature)
    base_reasons = [moving_bases.get(index) or base_reason(chain, curves)
                    for index, (_, chain) in enumerate(chains)]
    _prefetch_poses(armature, [chain for (_, chain), reason in zip(chains, base_reasons) if reason == ANIMATED_ABOVE],
                    frames, curves, keep_data, poses)
    for index, (_, chain) in enumerate(chains):
        reason = base_reasons[index]
        if reason is None:
            bases[index] = np.broadcast_to(base_matrix(chain), (count, 4, 4))
            continue
        if reason == ANIMATED_ABOVE:
            bases[index] = direct_base(chain, frames, scene, curves, keep_data, poses)
        if bases[index] is None:
            reasons[("base", index)] = reason
    # Bones a chain passes through that a driver may pose on some frames: the chain takes them at rest, so each frame
    # is checked as Blender plays it (Rigify's finger curl, at rest while its master control is, where that is keyed).
    driven = {}
    for index, (_, chain) in enumerate(chains):
        for name, drivers in driven_through(chain).items():
            moving = next((driver for driver in drivers if not _holds_still(driver)), None)
            if moving is not None:
                driven.setdefault(index, {})[name] = moving.data_path[len(bone_path(name, "")):]
    for index, bones in driven.items():
        name, path = next(iter(bones.items()))
        reasons[("through", index)] = f"bone '{name}', which the chain passes through, has a driver on '{path}'"
    turned = {}  # (chain index, bone name) -> the frames where it was not at rest

    if reasons:
        per_frame = {key: np.empty((count, 4, 4)) for key in reasons if key[0] != "through"}
        frame, subframe = scene.frame_current, scene.frame_subframe
        wanted = {}  # frame -> the indices of the frames read there
        for index, value in enumerate(frames.tolist()):
            wanted.setdefault(int(value), []).append(index)
        try:
            for value in sweep(scene, wanted):
                scene.frame_set(value)
                for index in wanted.get(value, ()):
                    for key, matrices in per_frame.items():
                        if key[0] == "base":
                            matrices[index] = base_matrix(chains[key[1]][1])
                        else:
                            matrices[index] = goal_world(*goals[key])
                    for chain_index, bones in driven.items():
                        for name in bones:
                            if not through_at_rest(chains[chain_index][1], name):
                                turned.setdefault((chain_index, name), []).append(frames[index])
                    if progress is not None:
                        progress(index + 1, count)
        finally:
            set_frame(scene, frame, subframe)
        for (index, name), at in turned.items():
            spec, chain = chains[index]
            raise ChainError(f"{through_label(chain.armature, chain.names, chain.through, name)} leaves its rest at "
                             f"frames {compact_frames(np.array(at))} (its driver on '{driven[index][name]}', or a "
                             "constraint it drives); the chain takes it at rest on every frame: bake a range where it "
                             "rests, or make the chain's tip another bone (muting the driver for the bake would leave "
                             "the keys off where it acts again)", spec.label)
        for key, matrices in per_frame.items():
            if key[0] == "base":
                bases[key[1]] = matrices
            else:
                world[key] = matrices

    armature_world = world[("armature", "")]
    constant = armature_world.strides[0] == 0  # one matrix, broadcast: checked and inverted once
    # A constant armature at the origin (as characters mostly are) leaves the goals' matrices as they are, and its
    # scale is 1: nothing to check.
    identity = constant and (armature_world[0] == _IDENTITY).all()
    what, fix = f"Armature '{armature.name}'", "give it a uniform, non-zero scale on every frame"
    try:
        if not identity:
            uniform_scale(armature_world[:1 if constant else None, :3, :3], what, fix,
                          frames[:1 if constant else None])
    except ChainError:
        uniform_scale(armature_world[:, :3, :3], what, fix, frames)  # names every frame
        raise
    # One matrix: inverted on plain floats (affine_inverse of a 2-D array).
    to_armature = None if identity else affine_inverse(armature_world[0] if constant else armature_world)

    def in_armature_space(matrices):
        if identity:
            return matrices
        if not constant:
            return to_armature @ matrices
        if matrices.strides[0] == 0:  # a goal that does not move: one product
            return np.broadcast_to(to_armature @ matrices[:1], matrices.shape)
        # One matrix times every frame's: one product with the frames' matrices side by side. numpy's stacked
        # matmul makes one BLAS call per frame, which costs three times as much (measured: the same values,
        # bit for bit).
        side_by_side = matrices.transpose(1, 0, 2).reshape(4, 4 * len(matrices))
        return (to_armature @ side_by_side).reshape(4, len(matrices), 4).transpose(1, 0, 2)

    targets, poles = [], []
    for spec, _ in chains:
        targets.append(in_armature_space(world[(spec.target.name_full, spec.target_bone)]))
        poles.append(in_armature_space(world[(spec.pole.name_full, spec.pole_bone)])[:, :3, 3]
                     if spec.plane == "POLE" else None)
    return Samples(targets, poles, [np.asarray(base) for base in bases], not reasons,
                   list(dict.fromkeys(reasons.values())))
