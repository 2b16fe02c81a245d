"""Read and validate a chain and its target; turn solver output into local bone rotations.

Everything is in the armature object's space (the space of ``PoseBone.matrix``), with the bones' rest
lengths. Blender poses a bone as ``M = A · R · S``, where ``A`` (the bone's frame before its own
rotation and scale) depends only on its parent's pose, its rest data and its location. So for the
chain's first bone ``A₁`` is read from Blender (``M₁ · (R₁S₁)⁻¹``), which covers any parent and any
inheritance mode; for the
next two it is ``M_parent · K`` with a constant offset ``K`` from the rest data.

Bone rotations map each bone's rest frame (its link direction, and the rest bend-plane normal) onto
its solved frame (solved direction, solved normal): each bone keeps its roll relative to the bend
plane, the middle joint is a pure hinge, and no twist is added (DESIGN.md).
"""
import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from bpy.utils import escape_identifier
from mathutils import Matrix, Vector

from . import rotations
from .report import compact_frames
from .solver import SolverInputError, _ops, solve_three_link
from .solver._ops import (add, any_perpendicular, combine, cross, dot, normalize_or, reject, scale, select,
                          sub)

AXES = {"X": (0, 1.0), "Y": (1, 1.0), "Z": (2, 1.0), "-X": (0, -1.0), "-Y": (1, -1.0), "-Z": (2, -1.0)}
# Blender's own rest and pose matrices are float32 and carry non-orthonormal noise of a few 1e-5 (Rigify's
# horse tail: 5e-5 on the Gram matrix); 1e-3 accepts that noise and refuses any scale a user would make
# (1.001 on one axis is 2e-3). The base is made a rotation before use (_nearest_rotation), so the noise goes no further.
_SCALE_TOLERANCE = 1e-3
# The self-check after posing: Blender stores poses in float32, so allow a few ulps of the chain's size.
POSE_TOLERANCE = 1e-4
ANGLE_TOLERANCE = 1e-3
# "PARENT": within this angle of the carried hinge axis the plane would spin (it turns up to 1/sin δ as fast
# as the wrist direction); there the previous sample's plane is kept instead.
PARENT_SINGULAR_TOLERANCE = math.radians(5.0)
# A bone's own axes as frames() orders them: Y along the bone, Z toward the roll axis, Y × Z = X.
BONE_FRAME = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # columns Y, Z, X


class ChainError(ValueError):
    """A chain, target or setting the add-on cannot solve, with a message that says how to fix it.

    ``chain`` names the chain it is about (STYLE 15); :meth:`for_chain` adds it where it becomes known."""

    def __init__(self, message, chain=None):
        self.message, self.chain = message, chain
        super().__init__(f"Chain '{chain}': {message}" if chain else message)

    def for_chain(self, chain):
        return self if self.chain is not None or not chain else ChainError(self.message, chain)


@dataclass(frozen=True)
class ChainSpec:
    """One chain's settings in plain form (props.py builds it from a chain's property group; scripts and
    tests may build it directly). Everything below the operators takes this, never a property group."""

    tip_bone: str = ""  # the chain is this bone and its two ancestors; empty: the active bone
    target: object = None  # an Object
    target_bone: str = ""  # when the target is an armature: one of its bones (its head and axes)
    up_axis: str = "Z"  # the target's axis the last bone points along
    plane: str = "PARENT"  # "PARENT" (follows the parent bone), "TARGET" (seed 000's roll) or "POLE"
    pole: object = None  # an Object, for plane "POLE"
    pole_bone: str = ""  # when the pole is an armature: one of its bones (its head)
    bend: str = "REST"  # "REST", "TOWARD" or "AWAY"
    roll_axis: str = "NONE"  # or one of AXES: the target axis the last bone's local Z turns toward
    name: str = ""  # the chain's name, for messages and read-outs

    @property
    def label(self):
        return self.name or self.tip_bone


@dataclass(frozen=True)
class Chain:
    """A validated three-bone chain and its constant rest geometry (numpy, bone-local frames)."""

    armature: object
    names: tuple  # first, middle, tip
    offsets: np.ndarray  # (2, 4, 4): K₂, K₃, each bone's frame in its parent's posed frame
    links: np.ndarray  # (3, 3): link vectors, bone i's head to the next head (tip: to the tail)
    rest_normals: np.ndarray  # (3, 3): the rest bend-plane normal, in each bone's own frame
    rest_toward: bool  # at rest, the middle joint is on the side the last bone points to
    rest_frames: np.ndarray = None  # (3, 3, 3): each bone's rest frame [direction, normal, d × n] (columns)

    @property
    def lengths(self):
        """The three links' rest lengths."""
        return np.linalg.norm(self.links, axis=-1)

    @property
    def pose_bones(self):
        return [self.armature.pose.bones[name] for name in self.names]


def matrix_array(m):
    """A mathutils Matrix (or any nested rows) as a float64 numpy array."""
    return np.array([list(row) for row in m], dtype=np.float64)


def affine_inverse(matrices):
    """The inverse of (..., 4, 4) affine matrices (last row 0, 0, 0, 1), in closed form: numpy's LAPACK
    inverse of a 4×4, threaded, costs tens of µs under load (issue 11), and this is exact float64 too."""
    m = np.asarray(matrices, dtype=np.float64)
    if m.ndim == 2:  # one matrix: plain floats beat numpy's per-call overhead
        (a, b, c, x), (d, e, f, y), (g, h, i, z), _ = m.tolist()
        rows = [[e * i - f * h, c * h - b * i, b * f - c * e], [f * g - d * i, a * i - c * g, c * d - a * f],
                [d * h - e * g, b * g - a * h, a * e - b * d]]
        inverse_det = 1.0 / (a * rows[0][0] + b * rows[1][0] + c * rows[2][0])
        rows = [[value * inverse_det for value in row] for row in rows]
        return np.array([row + [-(row[0] * x + row[1] * y + row[2] * z)] for row in rows] + [[0.0, 0.0, 0.0, 1.0]])
    a, b, c = m[..., 0, 0], m[..., 0, 1], m[..., 0, 2]
    d, e, f = m[..., 1, 0], m[..., 1, 1], m[..., 1, 2]
    g, h, i = m[..., 2, 0], m[..., 2, 1], m[..., 2, 2]
    out = np.zeros(m.shape)
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = e * i - f * h, c * h - b * i, b * f - c * e
    out[..., 1, 0], out[..., 1, 1], out[..., 1, 2] = f * g - d * i, a * i - c * g, c * d - a * f
    out[..., 2, 0], out[..., 2, 1], out[..., 2, 2] = d * h - e * g, b * g - a * h, a * e - b * d
    out[..., :3, :3] /= (a * out[..., 0, 0] + b * out[..., 1, 0] + c * out[..., 2, 0])[..., None, None]
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", out[..., :3, :3], m[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def _unit(v, fallback=None):
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = length > 1e-12
    out = v / np.where(ok, length, 1.0)
    if fallback is not None:
        out = np.where(ok, out, fallback)
    return out


def _perpendicular(v):
    """Some unit vector perpendicular to each unit ``v`` (..., 3)."""
    near_x = np.abs(v[..., :1]) > 0.9
    other = np.where(near_x, [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])
    return _unit(np.cross(v, other))


def _reject(v, unit):
    return v - unit * np.einsum("...i,...i->...", v, unit)[..., None]


def frames(direction, normal):
    """Orthonormal frames (..., 3, 3) with columns [d, n', d × n'], n' = normal made ⟂ to d."""
    direction = _unit(direction)
    normal = _unit(_reject(normal, direction), _perpendicular(direction))
    return np.stack([direction, normal, np.cross(direction, normal)], -1)


def _scale_deviation(matrices3):
    """Per matrix (N, 3, 3): its uniform scale, and whether it is zero, invalid, non-uniform or sheared."""
    gram = np.einsum("...ji,...jk->...ik", matrices3, matrices3)
    scale_squared = np.trace(gram, axis1=-2, axis2=-1) / 3.0
    with np.errstate(invalid="ignore", divide="ignore"):
        deviation = np.abs(gram / scale_squared[..., None, None] - np.eye(3)).max(axis=(-2, -1))
    degenerate = ~np.isfinite(deviation) | (scale_squared <= 1e-30)
    return np.sqrt(scale_squared), degenerate, degenerate | (deviation > _SCALE_TOLERANCE)


def uniform_scale(matrices3, what, fix, frames=None):
    """The uniform scale of each of (N, 3, 3) matrices, or ChainError when one is zero, invalid,
    non-uniform or sheared; given the samples' frame numbers, the message names the frames."""
    scale, degenerate, bad = _scale_deviation(matrices3)
    if bad.any():
        if frames is not None:
            raise ChainError(f"{what} has a zero, non-uniform or sheared scale at frames "
                           f"{compact_frames(frames[bad])}; {fix}")
        if degenerate.any():
            raise ChainError(f"{what} has a zero or invalid scale; {fix}")
        raise ChainError(f"{what} has a non-uniform scale or shear; {fix}")
    return scale


def _scaled_ancestor(chain):
    """The bone above the chain that gives it a non-uniform or negative scale in the current pose, and how."""
    bone = chain.pose_bones[0].parent
    found = None
    while bone is not None:  # the topmost culprit: the ones below it only inherit its scale
        matrix = matrix_array(bone.matrix)[None, :3, :3]
        if np.linalg.det(matrix[0]) < 0:
            found = bone.name, "a negative (mirroring)"
        elif _scale_deviation(matrix)[2][0]:
            found = bone.name, "a non-uniform"
        bone = bone.parent
    return found


def check_base(chain, base, frames=None):
    """The uniform scale of each sample's base ``A₁`` (N, 4, 4), or ChainError naming the bone above the chain
    that scales it non-uniformly or negatively (and the frames, when given)."""
    scale, _, bad = _scale_deviation(base[:, :3, :3])
    bad |= np.linalg.det(base[:, :3, :3]) < 0
    if bad.any():
        when = f" at frames {compact_frames(frames[bad])}" if frames is not None else ""
        culprit = _scaled_ancestor(chain)
        first = chain.armature.data.bones[chain.names[0]]
        if culprit is not None:
            who = f"Bone '{culprit[0]}' above the chain has {culprit[1]} scale in the pose{when}"
        elif _scale_deviation(matrix_array(first.matrix_local)[None, :3, :3])[2][0]:
            who = f"The rest matrix of bone '{first.name}' is sheared or scaled; re-create the bone in Edit Mode"
        else:
            who = f"A bone above the chain gives bone '{first.name}' a non-uniform or negative scale{when}"
        raise ChainError(f"{who}; the chain's parent bones need a uniform, positive scale (clear it with Alt+S)")
    return scale


def bone_path(bone_name, attribute):
    """The RNA path of a pose bone's property, as F-curves and drivers name it."""
    return f'pose.bones["{escape_identifier(bone_name)}"].{attribute}'


def _constraint_active(constraint):
    enabled = getattr(constraint, "enabled", None)
    if enabled is None:
        enabled = not constraint.mute
    return enabled and constraint.influence > 0.0


def _below(armature, bone_name, roots):
    """The first of ``roots`` (bone names) that bone ``bone_name`` is or hangs from, or None."""
    bone = armature.data.bones.get(bone_name)
    while bone is not None:
        if bone.name in roots:
            return bone.name
        bone = bone.parent
    return None


def moves_with_chain(chain, obj, bone_name=""):
    """The chain bone that ``obj`` (or its bone ``bone_name``) hangs from, through any parents, or None.

    Anything below the chain's first bone moves when the chain is posed."""
    armature = chain.armature
    roots = set(chain.names[:1])
    if obj == armature and bone_name:
        return _below(armature, bone_name, roots)
    while obj is not None:
        if obj.parent == armature and obj.parent_type == "BONE":
            found = _below(armature, obj.parent_bone, roots)
            if found is not None:
                return obj.parent_bone
        obj = obj.parent
    return None


def chain_names(armature, tip_name):
    """The chain's bone names (first, middle, tip), or ChainError."""
    if armature is None or armature.type != "ARMATURE":
        raise ChainError("The active object must be an armature")
    if not tip_name:
        active = armature.data.bones.active
        if active is None:
            raise ChainError("Choose the chain's tip bone (or make it the active bone)")
        tip_name = active.name
    tip = armature.data.bones.get(tip_name)
    if tip is None:
        raise ChainError(f"Armature '{armature.name}' has no bone named '{tip_name}'")
    if tip.parent is None or tip.parent.parent is None:
        raise ChainError(f"Bone '{tip_name}' needs two ancestors: the chain is the tip bone, its parent and "
                       "its grandparent")
    return tip.parent.parent.name, tip.parent.name, tip.name


def read_chain(armature, tip_name, now=True):
    """Validate the chain of ``tip_name`` (or the active bone) and read its rest geometry.

    ``now=False`` leaves out what may differ from frame to frame (the armature's scale): a bake checks
    that on every baked frame instead."""
    if armature is not None and armature.library is not None:
        raise ChainError(f"Armature '{armature.name}' is linked from a library and cannot be posed or keyed here; "
                       "make a library override of it first")
    if armature is not None and armature.type == "ARMATURE" and armature.mode == "EDIT":
        raise ChainError(f"Armature '{armature.name}' is in Edit Mode: its bone edits are not applied to its bones "
                         "yet; leave Edit Mode (Tab) first")
    names = chain_names(armature, tip_name)
    if armature.data.pose_position == "REST":
        raise ChainError(f"Armature '{armature.name}' shows its Rest Position, so no pose would show; switch it to "
                         "Pose Position (Armature properties > Pose Position)")
    if now:
        check_armature_scale(armature)
    key = (armature.as_pointer(), names)
    signature = _signature(armature, names)
    cached = _read_chains.get(key)
    if cached is not None and cached[0] == signature:
        # The same geometry; the object is this one (a removed armature's memory may have been reused).
        return dataclasses.replace(cached[1], armature=armature)
    chain = _read_chain(armature, names)
    _read_chains[key] = (signature, chain)
    return chain


def check_armature_scale(armature):
    """Refuse an armature whose scale is zero, non-uniform or sheared (as last evaluated)."""
    world = matrix_array(armature.matrix_world)[None]
    if _single_scale(world) is None:
        uniform_scale(world[:, :3, :3], f"Armature '{armature.name}'",
                      "apply its scale (Ctrl+A > Scale) or give it a uniform scale")


def _signature(armature, names):
    """Everything :func:`_read_chain` reads, as comparable values: while it is the same, so is the chain."""
    pose_bones, bones = armature.pose.bones, armature.data.bones
    drivers = armature.animation_data.drivers if armature.animation_data else ()
    return (tuple((driver.data_path, driver.mute) for driver in drivers),
            tuple((tuple(pose_bone.scale), tuple(pose_bone.location),
                   tuple((c.name, c.mute, getattr(c, "enabled", True), c.influence) for c in pose_bone.constraints),
                   bone.use_inherit_rotation, bone.use_connect, bone.use_local_location, bone.length,
                   bone.matrix_local.copy())
                  for pose_bone, bone in ((pose_bones[name], bones[name]) for name in names)))


# Chains read and validated before, with their signature (runtime only; cleared on load, undo and redo,
# when the objects they name may be gone).
_read_chains = {}


def forget_read_chains():
    _read_chains.clear()


def _read_chain(armature, names):
    bones = [armature.data.bones[name] for name in names]
    pose_bones = [armature.pose.bones[name] for name in names]
    for bone, pose_bone in zip(bones, pose_bones):
        if not np.allclose(tuple(pose_bone.scale), 1.0, atol=1e-6):
            raise ChainError(f"Bone '{bone.name}' is scaled in the pose; the IK chain needs unit pose scale "
                           "(clear it with Alt+S)")
    for pose_bone in pose_bones:
        active = [c.name for c in pose_bone.constraints if _constraint_active(c)]
        if active:
            raise ChainError(f"Bone '{pose_bone.name}' has constraints ({', '.join(active)}) that would change the "
                           "solved pose; mute or remove them (this add-on replaces an IK constraint)")
    drivers = armature.animation_data.drivers if armature.animation_data else ()
    for driver in drivers:
        for name in names:
            if driver.data_path.startswith(bone_path(name, "")) and not driver.mute:
                raise ChainError(f"Bone '{name}' has a driver on '{driver.data_path.rsplit('.', 1)[-1]}' that "
                               "would change the solved pose; remove or mute it")
    for bone in bones[1:]:
        if not bone.use_inherit_rotation:
            raise ChainError(f"Bone '{bone.name}' does not inherit rotation; turn on Inherit Rotation "
                           "(Bone properties > Relations) to use it in the IK chain")

    offsets = []
    for parent, child, pose_child in zip(bones, bones[1:], pose_bones[1:]):
        offset = affine_inverse(matrix_array(parent.matrix_local)) @ matrix_array(child.matrix_local)
        if not child.use_connect:  # a connected bone ignores its pose location
            location = np.array(tuple(pose_child.location))
            # Local Location off: the location moves the bone along its parent's axes, not its own.
            offset[:3, 3] += offset[:3, :3] @ location if child.use_local_location else location
        offsets.append(offset)
    offsets = np.array(offsets)
    links = np.array([offsets[0][:3, 3], offsets[1][:3, 3], [0.0, bones[2].length, 0.0]])
    for name, link in zip(names, links):
        if np.linalg.norm(link) < 1e-6:
            raise ChainError(f"Bone '{name}' has a zero-length link to the next joint; the chain cannot bend there")

    # The rest chain in the first bone's frame: heads h₁ = 0, h₂, h₃ and the last bone's direction.
    rotation2, rotation3 = offsets[0][:3, :3], offsets[0][:3, :3] @ offsets[1][:3, :3]
    elbow = links[0]
    wrist = links[0] + rotation2 @ links[1]
    last = rotation3 @ np.array([0.0, 1.0, 0.0])
    axis = _unit(wrist)
    bend = _reject(elbow, axis)
    if np.linalg.norm(bend) > 1e-6 * np.linalg.norm(elbow):
        normal = _unit(np.cross(axis, bend))
    else:  # a straight chain bends about its first bone's X axis, as Blender's own IK does
        normal = _unit(_reject(np.array([1.0, 0.0, 0.0]), axis), _perpendicular(axis))
    rest_toward = float(np.dot(bend, _reject(last, axis))) >= 0.0
    rest_normals = np.array([normal, rotation2.T @ normal, rotation3.T @ normal])
    return Chain(armature, names, offsets, links, rest_normals, rest_toward, frames(links, rest_normals))


def goal_matrix(armature, obj, bone_name, role, read=True):
    """The armature-space matrix (4, 4) of ``obj``, or of its pose bone ``bone_name`` (the bone's head and
    axes, as Blender's constraints take a bone target), as last evaluated; checked. ``read=False``: only
    check that there is such an object (and bone)."""
    if obj is None:
        raise ChainError(f"Set the {role}")
    if bone_name:
        if obj.type != "ARMATURE":
            raise ChainError(f"The {role} '{obj.name}' is not an armature, so it has no bone '{bone_name}'; "
                             f"clear the {role}'s bone")
        pose_bone = obj.pose.bones.get(bone_name)
        if pose_bone is None:
            raise ChainError(f"The {role} armature '{obj.name}' has no bone named '{bone_name}'")
    elif obj == armature:
        raise ChainError(f"The {role} cannot be the armature itself; choose one of its bones, or use an Empty")
    if not read:
        return None
    matrix = affine_inverse(matrix_array(armature.matrix_world)) @ goal_world(obj, bone_name)
    if not np.all(np.isfinite(matrix)):
        raise ChainError(f"The {role} '{obj.name}' has an invalid (non-finite) transform")
    return matrix


def goal_world(obj, bone_name=""):
    """The world matrix of ``obj``, or of its pose bone ``bone_name``, as last evaluated (unchecked)."""
    if bone_name:
        return matrix_array(obj.matrix_world) @ matrix_array(obj.pose.bones[bone_name].matrix)
    return matrix_array(obj.matrix_world)


def goal_label(obj, bone_name):
    return f"{obj.name}' bone '{bone_name}" if bone_name else obj.name


def _bone_of_path(data_path):
    """The bone a ``pose.bones["name"]...`` RNA path (of a driver or a driver variable) is about, or None."""
    prefix = 'pose.bones["'
    if not data_path.startswith(prefix):
        return None
    end = data_path.find('"]', len(prefix))
    return None if end < 0 else data_path[len(prefix):end].replace('\\"', '"').replace("\\\\", "\\")


def _reads_chain(chain, obj, bone_name):
    """What makes ``obj`` (or its bone ``bone_name``) follow the chain through a constraint or a driver (on it,
    its parents or its parent bones): a description, or None. Posing the chain would move such a goal."""
    armature = chain.armature
    roots = set(chain.names[:1])

    def chain_bone(target, subtarget):
        return target == armature and subtarget and _below(armature, subtarget, roots) is not None

    def from_constraints(owner, constraints):
        for constraint in constraints:
            if not _constraint_active(constraint):
                continue
            pairs = [(getattr(constraint, "target", None), getattr(constraint, "subtarget", ""))]
            pairs += [(getattr(constraint, "pole_target", None), getattr(constraint, "pole_subtarget", ""))]
            pairs += [(t.target, t.subtarget) for t in getattr(constraint, "targets", ())]
            for target, subtarget in pairs:
                if chain_bone(target, subtarget):
                    return f"constraint '{constraint.name}' of {owner} follows chain bone '{subtarget}'"
        return None

    def from_drivers(owner, animated, path_prefix=""):
        drivers = animated.animation_data.drivers if animated.animation_data else ()
        for driver in drivers:
            if driver.mute or not driver.data_path.startswith(path_prefix):
                continue
            for variable in driver.driver.variables:
                for target in variable.targets:
                    bone = target.bone_target or _bone_of_path(target.data_path or "")
                    if chain_bone(target.id, bone):
                        return f"the driver on '{driver.data_path}' of {owner} reads chain bone '{bone}'"
        return None

    if bone_name and obj is not None and obj.type == "ARMATURE":
        bone = obj.pose.bones.get(bone_name)
        while bone is not None:
            found = (from_constraints(f"bone '{bone.name}'", bone.constraints)
                     or from_drivers(f"bone '{bone.name}'", obj, bone_path(bone.name, "")))
            if found:
                return found
            bone = bone.parent
    while obj is not None:
        found = from_constraints(f"'{obj.name}'", obj.constraints) or from_drivers(f"'{obj.name}'", obj)
        if found:
            return found
        obj = obj.parent
    return None


def check_target(chain, spec, now=True):
    """Validate the chain's target and pole; returns their armature-space matrices (pole: None unless
    the plane is "POLE"). ``now=False`` leaves out what may differ from frame to frame (the matrices' values;
    a bake checks those on every baked frame) and returns None, None."""
    roles = [("target", spec.target, spec.target_bone)]
    if spec.plane == "POLE":
        roles.append(("pole", spec.pole, spec.pole_bone))
    for role, obj, bone_name in roles:
        if not now:  # the same checks on the objects and bones, without reading their matrices
            goal_matrix(chain.armature, obj, bone_name, role, read=False)
        bone = moves_with_chain(chain, obj, bone_name)
        if bone is not None:
            raise ChainError(f"The {role} '{goal_label(obj, bone_name)}' hangs from the chain (through '{bone}') and "
                             "would move with it; parent it elsewhere")
        coupled = _reads_chain(chain, obj, bone_name)
        if coupled is not None:
            raise ChainError(f"The {role} '{goal_label(obj, bone_name)}' moves with the chain: {coupled}; "
                             "remove or mute that, or point it elsewhere")
    if not now:
        return None, None
    return goal_matrices(chain, spec)


def goal_matrices(chain, spec):
    """The target's and (plane "POLE") the pole's armature-space matrices as last evaluated, for a chain and
    goals :func:`check_target` has validated."""
    matrix = goal_matrix(chain.armature, spec.target, spec.target_bone, "target")
    column, _ = AXES[spec.up_axis]
    if np.linalg.norm(matrix[:3, column]) < 1e-12:
        raise ChainError(f"The target '{goal_label(spec.target, spec.target_bone)}' has zero scale on its "
                         f"{spec.up_axis.lstrip('-')} axis")
    pole_matrix = None
    if spec.plane == "POLE":
        pole_matrix = goal_matrix(chain.armature, spec.pole, spec.pole_bone, "pole")
    return matrix, pole_matrix


def base_matrix(chain):
    """``A₁``: the first bone's frame before its own rotation and scale, from the current pose (4, 4).

    ``M₁ = A₁ · R₁ · S₁``; ``A₁`` keeps the bone's pose location (a connected bone has none that counts)."""
    pose_bone = chain.pose_bones[0]
    rotation_scale = matrix_array(pose_bone.matrix_basis)
    rotation_scale[:3, 3] = 0.0
    return matrix_array(pose_bone.matrix) @ affine_inverse(rotation_scale)


def current_normal(chain):
    """The bend-plane normal of the chain as posed now (armature space), or None if it is straight."""
    base, middle, wrist = (pose_bone.head for pose_bone in chain.pose_bones)
    axis, bend = wrist - base, middle - base
    normal = axis.cross(bend)
    size = axis.length * bend.length
    if not math.isfinite(size) or normal.length <= 1e-6 * size:
        return None
    return np.array(normal.normalized())


def bend_toward(chain, spec):
    """The solver's ``bend_toward`` for "TARGET" and "POLE" (toward the up axis or the pole); see
    :func:`solve_chain` for "PARENT"."""
    if spec.bend == "TOWARD":
        return True
    if spec.bend == "AWAY":
        return False
    return True if spec.plane == "POLE" else chain.rest_toward


@dataclass
class ChainSolve:
    rotations: np.ndarray  # (N, 3, 3, 3): each bone's local rotation (its basis rotation)
    solution: object  # the solver's ThreeLinkSolution, in armature space


def _columns(matrices3, single):
    """(N, 3, 3) matrices as their three columns, each a component tuple: floats for one sample (the float
    backend of solver/_ops), (N,) arrays for a batch."""
    if single:
        m = matrices3[0].tolist()
        return tuple((m[0][j], m[1][j], m[2][j]) for j in range(3))
    return tuple((matrices3[:, 0, j], matrices3[:, 1, j], matrices3[:, 2, j]) for j in range(3))


def _vectors(vectors, single):
    """(N, 3) vectors as a component tuple (floats for one sample)."""
    if single:
        return tuple(vectors[0].tolist())
    return vectors[:, 0], vectors[:, 1], vectors[:, 2]


def _stacked(vector, single):
    """A component tuple back to (N, 3) (or (3,) for one sample) for the solver."""
    return np.array(vector) if single else np.stack(vector, -1)


def _times(columns, weights):
    """``M @ w``: a matrix (its columns, component tuples) times a constant 3-vector."""
    return add(add(scale(columns[0], weights[0]), scale(columns[1], weights[1])), scale(columns[2], weights[2]))


def _transposed_times(columns, vector):
    """``Mᵀ @ v`` for a matrix given by its columns (component tuples or constants) and a vector."""
    return dot(columns[0], vector), dot(columns[1], vector), dot(columns[2], vector)


def _nearest_rotation(columns):
    """The rotation nearest to a matrix of Blender's float32 noise (the polar factor), by two Newton steps
    ``R ← (R + R⁻ᵀ)/2``, written on columns so one sample and a batch share it (an SVD per frame costs
    more than the whole solve of a sample)."""
    for _ in range(2):
        cofactors = (cross(columns[1], columns[2]), cross(columns[2], columns[0]), cross(columns[0], columns[1]))
        half_inverse_det = 0.5 / dot(columns[0], cofactors[0])  # det > 0: check_base refuses the rest
        columns = tuple(combine(column, 0.5, cofactor, half_inverse_det)
                        for column, cofactor in zip(columns, cofactors))
    return columns


def _single_scale(base):
    """One sample's uniform scale of ``A₁`` (a (1,) array) on plain floats, as check_base judges it, or None
    when check_base must look (a scale it may refuse)."""
    columns = _columns(base[:, :3, :3], True)
    gram = [[dot(a, b) for b in columns] for a in columns]
    scale_squared = (gram[0][0] + gram[1][1] + gram[2][2]) / 3.0
    if not scale_squared > 1e-30 or dot(columns[0], cross(columns[1], columns[2])) <= 0.0:
        return None
    deviation = max(abs(gram[i][j] / scale_squared - (1.0 if i == j else 0.0)) for i in range(3) for j in range(3))
    return np.array([math.sqrt(scale_squared)]) if deviation <= _SCALE_TOLERANCE else None


def _frame(ops, direction, normal):
    """The solved frame [d, n', d × n'] of a link (columns), n' = the normal made ⟂ to d."""
    side, _ = normalize_or(ops, reject(normal, direction), lambda: any_perpendicular(ops, direction), 1.0, 1e-12)
    return direction, side, cross(direction, side)


def solve_chain(chain, base, target, spec, pole=None, fallback_normal=None, carry_plane=True, sample_frames=None):
    """Solve N samples at once (one sample runs the same code on Python floats: a live solve).

    ``base``: (N, 4, 4) ``A₁`` per sample; ``target``: (N, 4, 4) the target's armature-space matrix;
    ``pole``: (N, 3) or None. ``fallback_normal``: (N, 3) or (3,), the plane to keep where it is
    undefined; by default the rest pose's. With ``carry_plane``, a sample whose plane is undefined
    keeps the previous sample's instead (for a sequence of frames). ``sample_frames``: the samples' frame
    numbers, for messages.
    """
    base = np.asarray(base, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    count = len(base)
    single = count == 1
    ops = _ops.FLOAT if single else _ops.NUMPY
    # A base that is the same on every sample (nothing above the chain moves) is checked and made a rotation
    # once, and enters the math as plain floats, which broadcast against the samples' arrays.
    constant = single or base.strides[0] == 0 or bool((base == base[:1]).all())
    scales = _single_scale(base[:1]) if constant else None
    if scales is None:  # a varying base, or one the quick check doubts: the full check names the culprit
        scales = check_base(chain, base, sample_frames)
    if np.any(np.abs(scales - 1.0) > 1e-4):  # above float32 noise (Rigify: 1e-5)
        for name in chain.names[1:]:
            if chain.armature.data.bones[name].inherit_scale in ("NONE", "NONE_LEGACY"):
                raise ChainError(f"Bone '{name}' does not inherit the scale of the chain's scaled parent; set its "
                               "Inherit Scale to Full, or unscale the parent")
    if constant:
        scales = scales[:1]
    rotation = _nearest_rotation(_columns(base[:len(scales), :3, :3] / scales[:, None, None], constant))
    scale_of = float(scales[0]) if constant else scales
    origin = _vectors(base[:, :3, 3], constant)
    lengths = np.outer(np.broadcast_to(scales, (count,)), chain.lengths)
    column, sign = AXES[spec.up_axis]
    up = scale(_vectors(target[:, :3, column], single), sign)
    end = _vectors(target[:, :3, 3], single)
    rest_normal = _times(rotation, chain.rest_normals[0].tolist())
    if fallback_normal is None:
        fallback = _stacked(rest_normal, single)
    else:
        fallback = np.broadcast_to(fallback_normal, (3,) if single else (count, 3))
    plane, extra = spec.plane, {}
    if plane == "PARENT":
        # The rest hinge axis, carried by the parent's pose: the knee turns with the hips, and the foot's
        # direction never flips it. "REST" keeps the rest side (the normal's orientation); "TOWARD" and
        # "AWAY" pick, per sample, the side of that plane the up axis is on, or the other.
        plane = "NORMAL"
        extra = {"normal": _stacked(rest_normal, single), "singular_tolerance": PARENT_SINGULAR_TOLERANCE}
        if spec.bend == "REST":
            toward = True
        else:
            up_length = _ops.norm(ops, up)
            wrist_axis = sub(sub(end, scale(up, scale_of * float(chain.lengths[2]) / up_length)), origin)
            up_side = dot(cross(rest_normal, wrist_axis), up) >= 0.0
            toward = up_side if spec.bend == "TOWARD" else ops.logical_not(up_side)
    else:
        toward = bend_toward(chain, spec)
    arguments = dict(plane=plane, bend_toward=toward, **extra)
    if pole is not None:
        arguments["pole"] = np.asarray(pole, dtype=np.float64)[0] if single else pole

    def solve(fallback):
        try:
            return solve_three_link(_stacked(origin, single), lengths[0] if single else lengths,
                                    _stacked(end, single), _stacked(up, single), fallback_normal=fallback,
                                    **arguments)
        except SolverInputError as error:
            raise ChainError(str(error)) from None

    solution = solve(fallback)
    if single:  # the rest of the add-on reads samples by index
        solution = type(solution)(*(np.asarray(field)[None] for field in solution))
    elif carry_plane and solution.degenerate.any() and not solution.degenerate.all():
        # Undefined planes keep the last defined one before them (the rest pose's before the first).
        index = np.where(~solution.degenerate, np.arange(count), -1)
        index = np.maximum.accumulate(index)
        carried = np.where((index >= 0)[:, None], solution.normal[np.maximum(index, 0)], fallback)
        solution = solve(carried)

    # Each bone's armature-space rotation Qᵢ maps its rest frame (rest direction, rest bend-plane normal)
    # onto its solved frame: Qᵢ = Fᵢ · Restᵢᵀ, so column j of Qᵢ is Fᵢ times row j of Restᵢ.
    normal = _vectors(solution.normal, single)
    directions = [_vectors(solution.directions[:, link], single) for link in range(3)]
    orientation = []
    for link, rest in enumerate(chain.rest_frames.tolist()):
        solved = _frame(ops, directions[link], normal)
        orientation.append(tuple(_times(solved, rest[row]) for row in range(3)))
    if spec.roll_axis != "NONE":  # the last bone's local Z turns toward the target's roll axis
        roll_column, roll_sign = AXES[spec.roll_axis]
        roll = scale(_vectors(target[:, :3, roll_column], single), roll_sign)
        roll_length = _ops.norm(ops, roll)
        ok = _ops.norm(ops, reject(roll, directions[2])) > 1e-6 * ops.maximum(roll_length, 1e-300)
        rolled = _frame(ops, directions[2], roll)
        rolled = tuple(_times(rolled, row) for row in BONE_FRAME.tolist())
        orientation[2] = tuple(select(ops, ok, new, old) for new, old in zip(rolled, orientation[2]))

    # Local rotations: L₁ = Aᵀ Q₁, L₂ = K₂ᵀ Q₁ᵀ Q₂, L₃ = K₃ᵀ Q₂ᵀ Q₃ (K: the constant rest offsets).
    offsets = [tuple(tuple(chain.offsets[index][:3, j].tolist()) for j in range(3)) for index in range(2)]
    local = [tuple(_transposed_times(rotation, q) for q in orientation[0])]
    for link in (1, 2):
        relative = [_transposed_times(orientation[link - 1], q) for q in orientation[link]]
        local.append(tuple(_transposed_times(offsets[link - 1], column_) for column_ in relative))
    if single:
        rotations_out = np.array([[[column_[i] for column_ in columns] for i in range(3)] for columns in local])[None]
    else:
        rotations_out = np.empty((count, 3, 3, 3))
        for link, columns in enumerate(local):
            for j, column_ in enumerate(columns):
                for i in range(3):
                    rotations_out[:, link, i, j] = column_[i]
    return ChainSolve(rotations_out, solution)


def rotation_values(pose_bone):
    """The pose bone's current value in its own rotation mode."""
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        return np.array(tuple(pose_bone.rotation_quaternion))
    if mode == "AXIS_ANGLE":
        return np.array(tuple(pose_bone.rotation_axis_angle))
    return np.array(tuple(pose_bone.rotation_euler))


def rotation_path(mode):
    if mode == "QUATERNION":
        return "rotation_quaternion"
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle"
    return "rotation_euler"


def set_rotation(pose_bone, values):
    setattr(pose_bone, rotation_path(pose_bone.rotation_mode), [float(v) for v in values])


def pose_chain(chain, local_rotations):
    """Write one sample's rotations (3, 3, 3) into the pose, each in its bone's rotation mode and
    continuous with the bone's current value (no Euler jump, same quaternion hemisphere).

    Through mathutils (float32): the channels are stored in float32, and Blender's own conversions are
    those the vectorised ones in rotations.py reproduce (mat3_normalized_to_eulO and its compatible form)."""
    for pose_bone, rotation in zip(chain.pose_bones, local_rotations):
        matrix = Matrix(rotation.tolist())
        mode = pose_bone.rotation_mode
        if mode in rotations.EULER_ORDERS:
            pose_bone.rotation_euler = matrix.to_euler(mode, pose_bone.rotation_euler)
            continue
        quaternion = matrix.to_quaternion()
        if mode == "QUATERNION":
            if quaternion.dot(pose_bone.rotation_quaternion) < 0.0:
                quaternion.negate()
            pose_bone.rotation_quaternion = quaternion
        else:
            axis, angle = quaternion.to_axis_angle()
            pose_bone.rotation_axis_angle = (angle, *axis)


def evaluate_now():
    """Bring evaluated matrices up to date: a script may have changed a pose or a transform since
    the last evaluation, and ``PoseBone.matrix`` and ``matrix_world`` would still show the old one."""
    import bpy
    bpy.context.view_layer.update()


def solve_current(chain, spec, validated=False):
    """Solve a validated chain for the scene as last evaluated. Returns a ChainSolve of one sample;
    changes nothing (pose it with :func:`pose_chain`). Outside a depsgraph handler, call
    :func:`evaluate_now` first. ``validated``: the goals were checked (:func:`check_target`) and nothing
    they depend on changed since; only their matrices are read."""
    target, pole = goal_matrices(chain, spec) if validated else check_target(chain, spec)
    solve = solve_chain(chain, base_matrix(chain)[None], target[None], spec,
                        None if pole is None else pole[None, :3, 3], current_normal(chain))
    return solve


def read_all(armature, specs, now=True):
    """Read and validate each chain of ``specs``: a list of ``(spec, Chain)``; ChainError names the chain.
    ``now=False``: leave the checks of what may differ from frame to frame to the caller (a bake)."""
    read = []
    for spec in specs:
        try:
            chain = read_chain(armature, spec.tip_bone, now)
            check_target(chain, spec, now)
        except ChainError as error:
            raise error.for_chain(spec.label) from None
        read.append((spec, chain))
    return read


def order(armature, read, errors=None):
    """Order validated chains (``(spec, Chain)`` pairs) for solving, as levels: a chain that hangs below
    another chain's bones (a finger chain under an arm chain), or whose target or pole does, comes in a
    later level, so it is solved on the pose the other one gets.

    Two chains sharing a bone, or chains hanging from each other in a loop, raise ChainError; given an
    ``errors`` dict, those chains are left out instead and their messages go to ``errors[spec]``."""
    def refuse(message, specs):
        if errors is None:
            raise ChainError(message)
        for spec in specs:
            errors[spec] = message

    owner, kept = {}, []
    for spec, chain in read:
        shared = next((name for name in chain.names if name in owner), None)
        if shared is not None:
            other = owner[shared]
            refuse(f"Chains '{other.label}' and '{spec.label}' share bone '{shared}'; a bone can belong to one "
                   "chain only: change the tip bone of one of them", (other, spec))
            kept = [(s, c) for s, c in kept if s is not other]
            continue
        owner.update((name, spec) for name in chain.names)
        kept.append((spec, chain))
    if errors:
        kept = [(spec, chain) for spec, chain in kept if spec not in errors]

    # before[i]: the chains (indices into kept) that must be solved before chain i.
    before = []
    for spec, chain in kept:
        needs = set()
        goals = [(spec.target, spec.target_bone)] + ([(spec.pole, spec.pole_bone)] if spec.plane == "POLE" else [])
        for index, (_, other) in enumerate(kept):
            if other is chain:
                continue
            if _below(armature, chain.names[0], set(other.names)) is not None or any(
                    obj is not None and moves_with_chain(other, obj, bone_name) is not None
                    for obj, bone_name in goals):
                needs.add(index)
        before.append(needs)
    levels, placed = [], set()
    while len(placed) < len(kept):
        level = [index for index in range(len(kept)) if index not in placed and before[index] <= placed]
        if not level:
            stuck = [kept[index][0] for index in range(len(kept)) if index not in placed]
            names = ", ".join(f"'{spec.label}'" for spec in stuck)
            refuse(f"Chains {names} hang from each other's bones or targets in a loop; none can be solved first",
                   stuck)
            break
        placed.update(level)
        levels.append([kept[index] for index in level])
    return levels


def prepare(armature, specs, now=True):
    """Read, validate and order every chain of ``specs`` before anything changes (see :func:`order`;
    ``now``: see :func:`read_all`)."""
    return order(armature, read_all(armature, specs, now))


def pose_error(chain, solution, index=0):
    """How far the pose Blender evaluated is from a solve: (tip distance, last bone's angle), armature space."""
    tip_bone = chain.pose_bones[2]
    tip = tip_bone.tail
    direction = tip - tip_bone.head
    expected = Vector(solution.directions[index, 2])
    angle = math.atan2(direction.cross(expected).length, direction.dot(expected))
    return (tip - Vector(solution.joints[index, 3])).length, angle


def verify_pose(chain, solution, index=0):
    """Refuse a pose Blender does not show as solved (something in the scene changes the result in a way
    the add-on cannot follow). Call after the pose was evaluated."""
    distance, angle = pose_error(chain, solution, index)
    length = float(np.sum(np.linalg.norm(chain.links, axis=-1)))
    scale = max(length, float(np.linalg.norm(solution.joints[index, 3])))
    if not (distance <= POSE_TOLERANCE * scale and angle <= ANGLE_TOLERANCE):
        raise ChainError(f"Blender shows the tip of '{chain.names[2]}' {distance:.3g} from where the solve put it "
                         f"(and {math.degrees(angle):.3g}° off its direction): something in the scene changes the "
                         "result in a way the add-on cannot follow; nothing was changed")
