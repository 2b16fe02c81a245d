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
import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import bpy
import numpy as np
from bpy.utils import escape_identifier, unescape_identifier
from mathutils import Matrix, Quaternion, Vector

from . import rotations
from .report import compact_frames, distance_text
from .solver import SolverInputError, _ops, plane_tolerance, solve_floats, solve_three_link
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
# "TARGET" and "POLE": the up axis or the pole put on the base-wrist line (the README's degenerate input, which keeps
# the previous plane) reaches the solver a few 1e-8 off it, Blender storing goals and poses in float32, and would pick
# a plane at any angle from that noise; within this angle of the line the previous plane is kept.
GOAL_SINGULAR_TOLERANCE = math.radians(0.01)
# A tip this close to its target, relative to the chain's reach, counts as on it: Blender stores the target's place and
# the bones' lengths in float32 (7 digits), so a target put at the tip of a straight chain (Add Target) lands a few
# 1e-9 beyond its reach, which the solver's own slack (1e-10) calls out of reach, "by 0 m".
REACH_RESOLUTION = 1e-6
# The solver's plane tolerance for each singular angle a plane setting gives it, worked out once.
_PLANE_TOLERANCES = {angle: plane_tolerance(angle)
                     for angle in (0.0, GOAL_SINGULAR_TOLERANCE, PARENT_SINGULAR_TOLERANCE)}
# A bone's own axes as frames() orders them: Y along the bone, Z toward the roll axis, Y × Z = X.
BONE_FRAME = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])  # columns Y, Z, X
_BONE_FRAME_ROWS = tuple(map(tuple, BONE_FRAME.tolist()))


class ChainError(ValueError):
    """A chain, target or setting the add-on cannot solve, with a message that says how to fix it.

    ``chain`` names the chain it is about (STYLE 15); :meth:`for_chain` adds it where it becomes known."""

    def __init__(self, message, chain=None):
        self.message, self.chain = message, chain
        super().__init__(f"Chain '{chain}': {message}" if chain else message)

    def for_chain(self, chain):
        return self if self.chain is not None or not chain else type(self)(self.message, chain)


class GoalMoved(ChainError):
    """:func:`verify_goals`' refusal: a goal moved once Blender showed the pose. Among several chains, another chain's
    pose may have moved it through geometry, which :func:`order` does not follow: Solve and Bake try that chain again
    after the others before refusing it."""


class ChainSpec(NamedTuple):
    """One chain's settings in plain form (props.py builds it from a chain's property group; scripts and
    tests may build it directly). Everything below the operators takes this, never a property group.

    A named tuple, immutable as a frozen dataclass is, but made and hashed by C code: Live builds one per chain and
    update and keys several dicts by it (a frozen dataclass cost ~5 µs of a 140 µs Live update; issue 11). Change one
    with ``_replace``."""

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

    def goals(self):
        """What the chain reaches for: ``[(role, object, bone name)]``, the target, and the pole when the plane
        goes through one."""
        goals = [("target", self.target, self.target_bone)]
        if self.plane == "POLE":
            goals.append(("pole", self.pole, self.pole_bone))
        return goals


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
    # The same constants as plain floats, for the math on component tuples (solve_chain, solve_one): a solve of
    # one sample would otherwise convert them on every call (issue 11). Built by _read_chain.
    floats: "ChainFloats" = None
    # The bones the chain passes through at a joint (see chain_path), top down: at rest, each hangs between two of
    # its bones (Rigify's MCH-hand_fk.L between forearm_fk.L and hand_fk.L).
    through: tuple = ()

    @property
    def lengths(self):
        """The three links' rest lengths."""
        return np.linalg.norm(self.links, axis=-1)

    @property
    def pose_bones(self):
        return [self.armature.pose.bones[name] for name in self.names]

    @property
    def spanned(self):
        """The names of every bone whose pose shapes the chain: its three and those it passes through."""
        return self.names + self.through


@dataclass(frozen=True)
class ChainFloats:
    """A Chain's rest constants as Python floats and tuples."""

    lengths: tuple  # l1, l2, l3
    size: float  # l1 + l2 + l3
    rest_normal: tuple  # the rest bend-plane normal in the first bone's frame
    rest_frames: list  # per bone, the rows of its rest frame
    # The middle bone's local rotation is L₂ = c·C + s·S + E at a middle joint turned by (cos c, sin s) about the
    # bend-plane normal: per entry of L₂ (by rows), its (C, S, E) entries. Built from the rest geometry.
    middle_terms: tuple
    # U = K₃ᵀ R₂ (K₃: the last bone's offset, R₂: the middle bone's rest frame), by rows: L₃ = U F₂ᵀ Q₃.
    last_offset: tuple


def matrix_array(m):
    """A mathutils Matrix (or any nested rows) as a float64 numpy array."""
    return np.array([list(row) for row in m], dtype=np.float64)


def rows_of(matrix):
    """A mathutils Matrix as rows of Python floats (exact: the float32 values, widened)."""
    return [row[:] for row in matrix]


def inverse_rows(rows):
    """The inverse of one affine 4×4 (rows of floats; last row 0, 0, 0, 1), in closed form on plain floats."""
    (a, b, c, x), (d, e, f, y), (g, h, i, z) = rows[0], rows[1], rows[2]
    rows = [[e * i - f * h, c * h - b * i, b * f - c * e], [f * g - d * i, a * i - c * g, c * d - a * f],
            [d * h - e * g, b * g - a * h, a * e - b * d]]
    inverse_det = 1.0 / (a * rows[0][0] + b * rows[1][0] + c * rows[2][0])
    rows = [[value * inverse_det for value in row] for row in rows]
    return [row + [-(row[0] * x + row[1] * y + row[2] * z)] for row in rows] + [[0.0, 0.0, 0.0, 1.0]]


def product_rows(left, right):
    """``left @ right`` for 4×4 rows of floats."""
    r0, r1, r2, r3 = right
    return [[a * p + b * q + c * r + d * s for p, q, r, s in zip(r0, r1, r2, r3)] for a, b, c, d in left]


def affine_inverse(matrices):
    """The inverse of (..., 4, 4) affine matrices (last row 0, 0, 0, 1), in closed form: numpy's LAPACK
    inverse of a 4×4, threaded, costs tens of µs under load (issue 11), and this is exact float64 too."""
    m = np.asarray(matrices, dtype=np.float64)
    if m.ndim == 2:  # one matrix: plain floats beat numpy's per-call overhead
        return np.array(inverse_rows(m.tolist()))
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


def _one_scale_deviation(matrix3):
    """:func:`_scale_deviation` of one 3×3 (nested floats), on floats: numpy's dozen calls cost ~90 µs a bake for the
    one matrix of a constant armature (issue 11: a short bake's fixed cost). The same tests, the same tolerances."""
    columns = list(zip(*matrix3))
    gram = [[sum(a * b for a, b in zip(left, right)) for right in columns] for left in columns]
    scale_squared = (gram[0][0] + gram[1][1] + gram[2][2]) / 3.0
    if not (math.isfinite(scale_squared) and scale_squared > 1e-30):  # NaN fails both
        return math.sqrt(scale_squared) if scale_squared >= 0.0 else math.nan, True, True
    deviation = max(abs(gram[i][k] / scale_squared - (i == k)) for i in range(3) for k in range(3))
    return math.sqrt(scale_squared), False, not deviation <= _SCALE_TOLERANCE  # (NaN: not within)


def _scale_deviation(matrices3):
    """Per matrix (N, 3, 3): its uniform scale, and whether it is zero, invalid, non-uniform or sheared."""
    if len(matrices3) == 1:
        scale, degenerate, bad = _one_scale_deviation(np.asarray(matrices3[0], dtype=np.float64).tolist())
        return np.array([scale]), np.array([degenerate]), np.array([bad])
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
        fix = "clear it with Alt+S"
        if culprit is not None:
            who = f"Bone '{culprit[0]}' above the chain has {culprit[1]} scale in the pose{when}"
            pose_bone = chain.armature.pose.bones[culprit[0]]
            constraints = [c.name for c in pose_bone.constraints if _constraint_active(c)]
            if constraints and not _scale_deviation(np.diag(pose_bone.scale)[None])[2][0] and min(pose_bone.scale) > 0:
                # Its own scale is 1 (or uniform): a Stretch To, a Transformation... gives it; Alt+S would change nothing.
                who += f", from its constraints ({', '.join(constraints)})"
                fix = "mute them"
        elif _scale_deviation(matrix_array(first.matrix_local)[None, :3, :3])[2][0]:
            who = f"The rest matrix of bone '{first.name}' is sheared or scaled; re-create the bone in Edit Mode"
        else:
            who = f"A bone above the chain gives bone '{first.name}' a non-uniform or negative scale{when}"
        if culprit is not None and culprit[1] == "a non-uniform":
            # Blender takes the parent's scale out of (None), or averages it into a uniform one (Average), before it
            # places the first bone: both give the chain a uniform base, which it solves exactly.
            fix += (f", or set the Inherit Scale of bone '{first.name}' to None or Average (Bone properties > "
                    "Relations) to keep it from the chain")
        raise ChainError(f"{who}; the chain's parent bones need a uniform, positive scale: {fix}")
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


def _roots_above(armature, roots, obj, bone_name=""):
    """The bones of ``roots`` (names) of ``armature`` that ``obj`` (or its bone ``bone_name``) is or hangs from, through
    any parents: every one of them, where :func:`hangs_below` stops at the first."""
    found = set()

    def walk(name):
        bone = armature.data.bones.get(name)
        while bone is not None:
            if bone.name in roots:
                found.add(bone.name)
            bone = bone.parent

    if obj is None:
        return found
    if obj == armature and bone_name:
        walk(bone_name)
        return found
    while obj is not None:
        if obj.parent == armature and obj.parent_type == "BONE":
            walk(obj.parent_bone)
        obj = obj.parent
    return found


def moves_with_chain(chain, obj, bone_name=""):
    """The chain bone that ``obj`` (or its bone ``bone_name``) hangs from, through any parents, or None.

    Anything below the chain's first bone moves when the chain is posed."""
    return hangs_below(chain.armature, chain.names[0], obj, bone_name)


def hangs_below(armature, first_bone, obj, bone_name=""):
    """The bone of ``armature`` at or below ``first_bone`` that ``obj`` (or its bone ``bone_name``) hangs from,
    through any parents, or None."""
    roots = {first_bone}
    if obj == armature and bone_name:
        return _below(armature, bone_name, roots)
    while obj is not None:
        if obj.parent == armature and obj.parent_type == "BONE":
            found = _below(armature, obj.parent_bone, roots)
            if found is not None:
                return obj.parent_bone
        obj = obj.parent
    return None


def constraint_targets(armature, bone_name):
    """What the active constraints and drivers of bone ``bone_name`` of ``armature`` and of the bones above it follow
    (read), as ``(object, bone name)`` pairs: what moves the bone other than its parents (see :func:`order`)."""
    return CouplingReader().bone_targets(armature, bone_name)


def own_constraint_targets(owner):
    """What the active constraints of one object or pose bone follow, as ``(object, bone name)`` pairs: their target,
    pole target and (an Armature constraint's) targets."""
    found = []
    for constraint in owner.constraints:
        if not _constraint_active(constraint):
            continue
        pairs = [(getattr(constraint, "target", None), getattr(constraint, "subtarget", "")),
                 (getattr(constraint, "pole_target", None), getattr(constraint, "pole_subtarget", ""))]
        pairs += [(target.target, target.subtarget) for target in getattr(constraint, "targets", ())]
        found += [(target, subtarget or "") for target, subtarget in pairs if target is not None]
    return found


def _driver_reads(driver):
    """The objects (and bones) the variables of an F-curve's driver read, as ``(object, bone name)`` pairs."""
    if driver.mute:
        return []
    found = []
    for variable in driver.driver.variables:
        for target in variable.targets:
            if target.id is not None and getattr(target, "id_type", "OBJECT") == "OBJECT":
                found.append((target.id, target.bone_target or _bone_of_path(target.data_path or "") or ""))
    return found


def driver_targets(obj):
    """What the drivers of ``obj`` read: ``({bone name: [(object, bone name)]}, [(object, bone name)])``, for the
    drivers of each of its bones and for those of the object itself (a bone whose rotation a driver takes from another
    chain's bone moves when that chain is posed, as one that copies it by a constraint)."""
    bones, own = {}, []
    data = obj.animation_data
    for driver in data.drivers if data is not None else ():
        bone = _bone_of_path(driver.data_path)
        (own if bone is None else bones.setdefault(bone, [])).extend(_driver_reads(driver))
    return bones, own


class CouplingReader:
    """What constraints and drivers follow (:func:`constraint_targets`, :func:`goal_constraint_targets`,
    :func:`followed_targets`), each bone, object and driver list read once: for one ordering or one Live update, not
    longer (nothing here tells when they change). The bones of a character share the bones above them, and a Rigify
    rig's bones follow each other through hundreds of constraints and drivers."""

    def __init__(self):
        self._bones, self._drivers, self._objects = {}, {}, {}
        self.coupled = False  # some owner read has a constraint (active or not) or some object read has drivers

    def bone_targets(self, armature, bone_name):
        """:func:`constraint_targets` (a list shared with later calls: kept as is)."""
        pointer = armature.as_pointer()
        path, found = [], []
        pose_bone = armature.pose.bones.get(bone_name)
        while pose_bone is not None:
            known = self._bones.get((pointer, pose_bone.name))
            if known is not None:
                found = known
                break
            path.append(pose_bone)
            pose_bone = pose_bone.parent
        drivers = self._driver_targets(armature)[0] if path else None
        for pose_bone in reversed(path):  # from the top down: a bone's own constraints and drivers, then its parents'
            self.coupled = self.coupled or bool(len(pose_bone.constraints))
            found = own_constraint_targets(pose_bone) + drivers.get(pose_bone.name, []) + found
            self._bones[pointer, pose_bone.name] = found
        return found

    def driven(self, armature):
        """The names of ``armature``'s bones that have a driver (muted ones too), as read here once."""
        return self._driver_targets(armature)[0].keys()

    def _driver_targets(self, obj):
        pointer = obj.as_pointer()
        if pointer not in self._drivers:
            data = obj.animation_data
            self.coupled = self.coupled or data is not None and bool(len(data.drivers))
            self._drivers[pointer] = driver_targets(obj)
        return self._drivers[pointer]

    def object_targets(self, obj):
        """What the active constraints and the drivers of ``obj`` itself follow."""
        pointer = obj.as_pointer()
        if pointer not in self._objects:
            self.coupled = self.coupled or bool(len(obj.constraints))
            self._objects[pointer] = own_constraint_targets(obj) + self._driver_targets(obj)[1]
        return self._objects[pointer]

    def followed_by(self, obj, bone_name=""):
        """What the active constraints and drivers that move ``obj`` (or its bone ``bone_name``) follow: those of the
        bone and the bones above it, of the object and its parent objects, and of the bones those are parented to and
        the bones above them."""
        found = []
        if bone_name and obj.type == "ARMATURE":
            found += self.bone_targets(obj, bone_name)
        while obj is not None:
            found += self.object_targets(obj)
            if obj.parent is not None and obj.parent_type == "BONE" and obj.parent.type == "ARMATURE":
                found += self.bone_targets(obj.parent, obj.parent_bone)
            obj = obj.parent
        return found


def goal_constraint_targets(spec, reader=None):
    """What the active constraints and drivers of a chain's goals follow, as :func:`constraint_targets` does for its
    bones: those of each goal object and its parent objects, of the bones they are parented to and the bones above
    those, and of a goal bone and the bones above it. A goal pinned to another chain's bone by a Child Of moves when
    that chain is posed, as one parented below it does (see :func:`order`). ``reader``: a :class:`CouplingReader`."""
    reader = reader or CouplingReader()
    found = []
    for _, obj, bone_name in spec.goals():
        if obj is not None:
            found += reader.followed_by(obj, bone_name)
    return found


def followed_targets(targets, reader=None):
    """``targets`` (``(object, bone name)`` pairs a constraint or driver follows) and, through any number of steps, what
    the constraints and drivers that move those follow in turn (a shoulder that copies a helper bone that copies a spine
    bone, as Rigify's MCH bones do), each once. ``reader``: a :class:`CouplingReader`."""
    reader = reader or CouplingReader()
    found, seen, waiting = [], set(), list(targets)
    while waiting:
        obj, bone_name = waiting.pop()
        key = (obj.as_pointer(), bone_name)
        if key in seen:
            continue
        seen.add(key)
        found.append((obj, bone_name))
        waiting += reader.followed_by(obj, bone_name)
    return found


def _ik_constraints(armature):
    """The armature's IK and Spline IK constraints, as ``(owner pose bone, constraint)``."""
    return [(pose_bone, constraint) for pose_bone in armature.pose.bones for constraint in pose_bone.constraints
            if constraint.type in ("IK", "SPLINE_IK")]


_iks_held = {}  # armature pointer -> its _ik_constraints, while posers_read_once holds them


@contextmanager
def posers_read_once(armature):
    """Within: :func:`posers` reads the armature's IK and Spline IK constraints once. A bake asks for each chain twice,
    and looking through a character's hundreds of bones costs 0.1-0.5 ms each time; nothing a bake does adds, removes or
    retargets such a constraint."""
    key = armature.as_pointer()
    held = key in _iks_held
    if not held:
        _iks_held[key] = _ik_constraints(armature)
    try:
        yield
    finally:
        if not held:
            del _iks_held[key]


def posers(armature, names):
    """Other bones' IK and Spline IK constraints whose chain reaches a bone of ``names`` (they pose the bones of their
    chain, not only their owner: a head's look-at IK through the chest, a finger's IK of Chain Length 0 up to the
    root), as ``(owner pose bone, constraint, reached bone name)``. Muted ones too: their influence may be keyed.
    Conservative: the owner counts as part of its chain."""
    if not names:
        return
    iks = _iks_held.get(armature.as_pointer())
    for pose_bone, constraint in _ik_constraints(armature) if iks is None else iks:
        bone, left = pose_bone, constraint.chain_count  # IK's 0: up to the root
        if left and constraint.type == "IK" and not constraint.use_tail:
            left += 1  # the chain starts at the owner's parent
        while bone is not None:
            if bone.name in names:
                yield pose_bone, constraint, bone.name
                break
            if left:
                left -= 1
                if not left:
                    break
            bone = bone.parent


def chain_names(armature, tip_name):
    """The chain's bone names (first, middle, tip), or ChainError (see :func:`chain_path`)."""
    return chain_path(armature, tip_name)[0]


# How close (armature units) the heads of a bone and its parent are at rest for the parent to be no link of its own,
# but a bone the chain passes through: the length below which a link counts as zero (see _read_chain). In chain_path,
# times the head's distance from the armature's origin where that is more than 1: Blender stores heads in float32, a
# few steps of it apart when one was snapped onto the other through the 3D cursor (a skeleton in centimetres, its
# object scaled 0.01 and 2 m from the origin: 1.5e-5 at 120 cm, which made the wrist's twist bone a link of the arm).
_SAME_JOINT = 1e-6


def chain_path(armature, tip_name):
    """The chain of ``tip_name`` (or the active bone): its bone names (first, middle, tip) and the names of the bones it
    passes through (top down), or ChainError.

    The chain is the tip bone and its two nearest ancestors that are joints of their own. A bone whose head is, at
    rest, where the head of the bone below it is adds no link: the chain passes through it, as through a joint helper
    (Rigify's MCH-hand_fk.L, between forearm_fk.L and hand_fk.L, which keeps the hand's scale its own). It must stay at
    rest and follow plainly (:func:`_check_through`)."""
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
    links, through, below = [tip], [], tip
    while len(links) < 3:
        parent = below.parent
        if parent is None:
            passed = ", ".join(f"'{bone.name}'" for bone in reversed(through))
            raise ChainError(f"Bone '{tip_name}' needs two ancestors: the chain is the tip bone, its parent and its "
                             "grandparent" + (f" (it passes through {passed}, which start{'s' * (len(through) == 1)} "
                                              "where the bone below starts)" if through else ""))
        if (parent.head_local - below.head_local).length <= _SAME_JOINT * max(1.0, below.head_local.length):
            through.append(parent)
        else:
            links.append(parent)
        below = parent
    return (links[2].name, links[1].name, tip.name), tuple(bone.name for bone in reversed(through))


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
    names, through = chain_path(armature, tip_name)
    missing = next((name for name in names + through if name not in armature.pose.bones), None)
    if missing is not None:
        # Another object sharing the Armature datablock (an Alt+D duplicate) is in Edit Mode: a bone renamed there is
        # renamed in this one's pose at once, in its bones only on leaving Edit Mode.
        raise ChainError(f"Bone '{missing}' of armature '{armature.name}' is being edited in Edit Mode (of an object "
                         "sharing its bones); leave Edit Mode (Tab) first")
    check_evaluated(armature, f"Armature '{armature.name}'")
    if armature.data.pose_position == "REST":
        raise ChainError(f"Armature '{armature.name}' shows its Rest Position, so no pose would show; switch it to "
                         "Pose Position (Armature properties > Pose Position)")
    if now:
        check_armature_scale(armature)
    key = (armature.as_pointer(), names, through)
    signature = _signature(armature, names, through)
    cached = _read_chains.get(key)
    if cached is not None and cached[0] == signature:
        # The same geometry; the object is this one (a removed armature's memory may have been reused).
        return with_armature(cached[1], armature)
    chain = _read_chain(armature, names, through)
    _read_chains[key] = (signature, chain)
    return chain


def with_armature(chain, armature):
    """``chain`` for the armature object ``armature``: a chain cached before holds the Python object it was read
    with, which Blender keeps for as long as the object lives (then it is this one) and invalidates with it."""
    return chain if chain.armature is armature else dataclasses.replace(chain, armature=armature)


def check_armature_scale(armature):
    """Refuse an armature whose scale is zero, non-uniform or sheared (as last evaluated)."""
    world = armature.matrix_world
    rows = world[0][:3], world[1][:3], world[2][:3]
    if rows in _uniform_worlds:  # an armature that does not move is checked once
        return
    if _float_scale(tuple(zip(*rows))) is None:
        uniform_scale(matrix_array(world)[None, :3, :3], f"Armature '{armature.name}'",
                      "apply its scale (Ctrl+A > Scale) or give it a uniform scale")
    if len(_uniform_worlds) >= 64:
        _uniform_worlds.clear()
    _uniform_worlds.add(rows)


_uniform_worlds = set()  # 3×3 parts of armature matrices (rows) check_armature_scale accepted


def _signature(armature, names, through=()):
    """Everything :func:`_read_chain` reads, as comparable values: while it is the same, so is the chain."""
    pose_bones, bones = armature.pose.bones, armature.data.bones
    drivers = armature.animation_data.drivers if armature.animation_data else ()
    return (tuple((driver.data_path, driver.mute) for driver in drivers),
            tuple((tuple(pose_bone.scale), tuple(pose_bone.location),
                   tuple((c.name, c.mute, getattr(c, "enabled", True), c.influence) for c in pose_bone.constraints),
                   bone.use_inherit_rotation, bone.use_connect, bone.use_local_location, bone.length,
                   bone.matrix_local.copy())
                  for pose_bone, bone in ((pose_bones[name], bones[name]) for name in names)),
            # The bones passed through: all _check_through reads (their constraints' types too: some are allowed).
            tuple((pose_bone.rotation_mode, rotation_values(pose_bone), tuple(pose_bone.location),
                   tuple(pose_bone.scale), pose_bone.bone.use_inherit_rotation,
                   tuple((c.name, c.type, c.mute, getattr(c, "enabled", True), c.influence)
                         for c in pose_bone.constraints))
                  for pose_bone in (pose_bones[name] for name in through)))


# Chains read and validated before, with their signature (runtime only; cleared on load, undo and redo,
# when the objects they name may be gone).
_read_chains = {}


def forget_read_chains():
    _read_chains.clear()


def _read_chain(armature, names, through=()):
    bones = [armature.data.bones[name] for name in names]
    pose_bones = [armature.pose.bones[name] for name in names]
    if through:
        _check_through(armature, names, through)
    for bone, pose_bone in zip(bones, pose_bones):
        if not all(abs(value - 1.0) <= 1e-6 + 1e-5 for value in pose_bone.scale):  # np.allclose's test, on floats
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

    # The rest geometry, on plain floats (numpy's cost per call on 3-vectors made this most of a first read).
    offsets = []
    for parent, child, pose_child in zip(bones, bones[1:], pose_bones[1:]):
        # Through a bone the chain passes through, at rest, as if the child hung from the parent directly.
        to_parent = inverse_rows(rows_of(parent.matrix_local))
        offset = product_rows(to_parent, rows_of(child.matrix_local))
        if not child.use_connect:  # a connected bone ignores its pose location
            location = tuple(pose_child.location)
            # Local Location off: the location moves the bone along its parent's axes, not its own (the axes of the
            # bone it hangs from, which may be one the chain passes through).
            if child.use_local_location:
                location = _row_times(offset, location)
            elif child.parent != parent:
                location = _row_times(product_rows(to_parent, rows_of(child.parent.matrix_local)), location)
            for row, value in zip(offset, location):
                row[3] += value
        offsets.append(offset)
    links = [(offset[0][3], offset[1][3], offset[2][3]) for offset in offsets] + [(0.0, bones[2].length, 0.0)]
    lengths = tuple(math.sqrt(dot(link, link)) for link in links)
    for name, length in zip(names, lengths):
        if length < 1e-6:
            raise ChainError(f"Bone '{name}' has a zero-length link to the next joint; the chain cannot bend there")

    # The rest chain in the first bone's frame: heads h₁ = 0, h₂, h₃ and the last bone's direction.
    rotation2, rotation3 = offsets[0], product_rows(offsets[0], offsets[1])  # (their 3×3 parts are read)
    elbow = links[0]
    wrist = add(links[0], _row_times(rotation2, links[1]))
    last = tuple(row[1] for row in rotation3[:3])  # rotation3 @ (0, 1, 0)
    if math.sqrt(dot(wrist, wrist)) <= 1e-6 * sum(lengths):
        # The wrist on the base at rest (a third bone that starts where the first does): no base-to-wrist line, so no
        # rest bend plane; it bends about the first bone's X axis, as a straight chain does, not about float noise.
        axis, bend, normal = (0.0, 0.0, 0.0), elbow, (1.0, 0.0, 0.0)
    else:
        axis = _float_unit(wrist)
        bend = reject(elbow, axis)
        if math.sqrt(dot(bend, bend)) > 1e-6 * lengths[0]:
            normal = _float_unit(cross(axis, bend))
        else:  # a straight chain bends about its first bone's X axis, as Blender's own IK does
            normal, _ = normalize_or(_ops.FLOAT, reject((1.0, 0.0, 0.0), axis),
                                     lambda: any_perpendicular(_ops.FLOAT, axis), 1.0, 1e-12)
    rest_toward = dot(bend, reject(last, axis)) >= 0.0
    rest_normals = [normal, _column_times(rotation2, normal), _column_times(rotation3, normal)]
    # Each bone's rest frame [direction, normal made ⟂ to it, their cross product], as rows.
    rest_frames = [[list(row) for row in zip(*_frame(_ops.FLOAT, _float_unit(link), rest_normal))]
                   for link, rest_normal in zip(links, rest_normals)]
    floats = ChainFloats(lengths, sum(lengths), tuple(normal), rest_frames, *_link_constants(offsets, rest_frames))
    return Chain(armature, names, np.array(offsets), np.array(links), np.array(rest_normals), rest_toward,
                 np.array(rest_frames), floats, through)


# Constraints that change a bone's scale only, which a bone the chain passes through may have: at the joint, its scale
# moves no bone below it (Rigify's MCH-hand_fk.L copies the arm's scale, to keep the forearm's stretch off the hand).
# A non-uniform one skews the tip's direction, which the self-check finds.
_SCALE_ONLY = {"COPY_SCALE", "LIMIT_SCALE", "MAINTAIN_VOLUME"}
# The RNA paths of a pose bone's transform and constraints, whose drivers may pose a bone the chain passes through on
# other frames than the one validated (a driven influence turns on a constraint off there: Rigify's FK Limb Follow).
_DRIVEN = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale", "constraints[")


def at_rest(pose_bone, tolerance):
    """Whether ``pose_bone``'s own channels leave it at rest: no location (within ``tolerance``; a connected bone's
    counts for nothing), no rotation (within 1e-6 in each value) and unit scale (as a chain bone's, see
    :func:`_read_chain`)."""
    mode, values = pose_bone.rotation_mode, rotation_values(pose_bone)
    if mode == "QUATERNION":
        turned = any(abs(value) > 1e-6 * abs(values[0]) for value in values[1:]) or not values[0]
    else:
        turned = abs(values[0]) > 1e-6 if mode == "AXIS_ANGLE" else any(abs(value) > 1e-6 for value in values)
    moved = not pose_bone.bone.use_connect and any(abs(value) > tolerance for value in pose_bone.location)
    return not (turned or moved or not all(abs(value - 1.0) <= 1e-6 + 1e-5 for value in pose_bone.scale))


def _check_through(armature, names, through):
    """Refuse a bone the chain passes through (see :func:`chain_path`) that would not keep the chain's shape: one that
    is posed (the chain takes it at rest, as its rest offsets go through it), does not inherit rotation, or has a
    constraint that moves or turns it. What drivers do is read as they have posed it now; a bake, which plays other
    frames, checks it on each of them (:func:`driven_through`)."""
    tolerance = _rest_tolerance(armature, names)
    for name in through:
        pose_bone = armature.pose.bones[name]
        what = through_label(armature, names, through, name)
        if not pose_bone.bone.use_inherit_rotation:
            raise ChainError(f"{what} does not inherit rotation; turn on its Inherit Rotation (Bone properties > "
                             "Relations), or make the chain's tip another bone")
        if not at_rest(pose_bone, tolerance):
            driver = next(iter(_bone_drivers(armature, name, _DRIVEN[:-1])), None)  # (on its transform)
            if driver is not None:  # (clearing its pose would change nothing: Rigify's finger curl, its master's)
                raise ChainError(f"{what} is posed by its driver on '{driver.data_path[len(bone_path(name, '')):]}'"
                                 f"{_driver_inputs(driver)}; the chain takes it at rest: set what the driver reads "
                                 "back to rest on this frame (or go to a frame where it rests), or make the chain's "
                                 "tip another bone")
            raise ChainError(f"{what} is posed; the chain takes it at rest: clear its pose (Alt+G, Alt+R, Alt+S), or "
                             "make the chain's tip another bone")
        active = moving_constraints(pose_bone)
        if active:
            raise ChainError(f"{what} has constraints ({', '.join(active)}) that would change the solved pose; mute "
                             "or remove them, or make the chain's tip another bone")


def _rest_tolerance(armature, names):
    """How far a bone a chain of bones ``names`` passes through may be moved and still count as at rest (a
    millionth of the chain's bones' lengths)."""
    return _SAME_JOINT * sum(armature.data.bones[name].length for name in names)


def moving_constraints(owner):
    """The names of the constraints of ``owner`` (a pose bone or an object) that act and may move or turn it (not
    scale-only ones)."""
    return [c.name for c in owner.constraints if _constraint_active(c) and c.type not in _SCALE_ONLY]


def _bone_drivers(armature, name, paths):
    """The armature's drivers (F-curves) on bone ``name``'s properties ``paths`` (or paths starting with them) that
    are not muted."""
    drivers = armature.animation_data.drivers if armature.animation_data else ()
    prefixes = tuple(bone_path(name, path) for path in paths)
    return [driver for driver in drivers if not driver.mute and driver.data_path.startswith(prefixes)]


def _driver_inputs(driver):
    """What a driver F-curve's variables read, for a message: `` (it reads pose.bones["f_index.01_master.L"].scale.y)``,
    or nothing when they read nothing named."""
    reads = []
    for variable in driver.driver.variables:
        for target in variable.targets:
            if variable.type == "SINGLE_PROP":
                read = target.data_path
            else:
                read = f"bone '{target.bone_target}'" if target.bone_target else ""
            if read and read not in reads:
                reads.append(read)
    return f" (it reads {', '.join(reads)})" if reads else ""


def through_label(armature, names, through, name):
    """How messages name ``name``, one of the bones ``through`` a chain of bones ``names`` passes through."""
    child = next(bone for bone in armature.pose.bones[name].bone.children if bone.name in names + through)
    return f"Bone '{name}', which the chain passes through at the joint of '{child.name}',"


def driven_through(chain):
    """The bones ``chain`` passes through that a driver may pose (on their transform, or on one of their constraints:
    Rigify's finger curl, a follow switch), as ``{bone name: [its drivers (F-curves)]}``: at rest where the chain was
    validated, but perhaps not on other frames."""
    driven = {name: _bone_drivers(chain.armature, name, _DRIVEN) for name in chain.through}
    return {name: drivers for name, drivers in driven.items() if drivers}


def through_at_rest(chain, name):
    """Whether the bone ``name`` that ``chain`` passes through is at rest as Blender has evaluated it now, with no
    constraint that moves it acting (what :func:`_check_through` asks of it)."""
    pose_bone = chain.armature.pose.bones[name]
    return at_rest(pose_bone, _rest_tolerance(chain.armature, chain.names)) and not moving_constraints(pose_bone)


def _row_times(rows, v):
    """``M @ v`` for a matrix as rows of floats (its 3×3 part) and a 3-vector."""
    return tuple(row[0] * v[0] + row[1] * v[1] + row[2] * v[2] for row in rows[:3])


def _column_times(rows, v):
    """``Mᵀ @ v`` for a matrix as rows of floats (its 3×3 part) and a 3-vector."""
    return tuple(rows[0][j] * v[0] + rows[1][j] * v[1] + rows[2][j] * v[2] for j in range(3))


def _matrix_product(a, b):
    """``A @ B`` for 3×3 rows of floats (a chain's constants, once per read). Written out: a sum() of a generator per
    entry cost a third of a chain's first read (issue 11: a bake's fixed cost); the same sums, in the same order, from
    the same 0 (0 + -0.0 is 0.0)."""
    b0, b1, b2 = b
    return [[0.0 + x * p + y * q + z * r for p, q, r in zip(b0, b1, b2)] for x, y, z in a]


def _transposed(a):
    return [list(column) for column in zip(*a)]


# The turn by (c, s) about a frame's second axis, F₁ᵀF₂ = c·_COSINE + s·_SINE + _AXIS (see _link_constants).
_COSINE = [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
_SINE = [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]
_AXIS = [[0.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]


def _link_constants(offsets, rest_frames):
    """ChainFloats' ``middle_terms`` and ``last_offset`` from K₂, K₃ (4×4 rows) and the rest frames (rows).

    L₂ = K₂ᵀ Q₁ᵀ Q₂ with Qᵢ = Fᵢ Rᵢᵀ (Fᵢ: the solved frame [dᵢ, n, dᵢ × n], Rᵢ: the rest frame), so L₂ = M (F₁ᵀF₂) R₂ᵀ
    with M = K₂ᵀ R₁. Both solved frames share the bend-plane normal n (both links lie in the plane), so F₁ᵀF₂ is the
    turn about their second axis, [[c, 0, s], [0, 1, 0], [-s, 0, c]] with c = d₁·d₂ and s = n·(d₁ × d₂): L₂ is linear
    in (c, s), three constant matrices instead of three 3×3 products per solve (issue 11)."""
    k2, k3 = ([row[:3] for row in offset[:3]] for offset in offsets)
    rest1, rest2 = ([list(row) for row in rows] for rows in rest_frames[:2])
    left, right = _matrix_product(_transposed(k2), rest1), _transposed(rest2)
    terms = [_matrix_product(_matrix_product(left, turn), right) for turn in (_COSINE, _SINE, _AXIS)]
    middle_terms = tuple((terms[0][i][j], terms[1][i][j], terms[2][i][j]) for i in range(3) for j in range(3))
    return middle_terms, tuple(map(tuple, _matrix_product(_transposed(k3), rest2)))


def _float_unit(v):
    """:func:`_unit` of one vector, on floats."""
    length = math.sqrt(dot(v, v))
    return scale(v, 1.0 / length) if length > 1e-12 else v


def goal_matrix(armature, obj, bone_name, role, read=True):
    """The armature-space matrix (4×4 rows of floats) of ``obj``, or of its pose bone ``bone_name`` (the bone's head and
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
    inverse, world = _armature_inverse(armature), goal_world(obj, bone_name)
    rows = world if inverse is None else product_rows(inverse, world)
    # The sum is finite when every entry is, but for an overflow of huge finite ones: then look at each.
    if not math.isfinite(sum(map(sum, rows))) and not all(math.isfinite(value) for row in rows for value in row):
        raise ChainError(f"The {role} '{obj.name}' has an invalid (non-finite) transform")
    return rows


# The armature's world matrix (rows) -> its inverse: the armature rarely moves while its targets do.
_armature_inverses = {}


def _armature_inverse(armature):
    """The inverse of the armature's world matrix (rows), or None when that is the identity (an armature object at the
    origin, as characters often are: their root bone moves), which leaves a goal's world matrix as it is, bit for
    bit."""
    world = tuple(rows_of(armature.matrix_world))
    if world == _IDENTITY:
        return None
    inverse = _armature_inverses.get(world)
    if inverse is None:
        if len(_armature_inverses) >= 64:
            _armature_inverses.clear()
        inverse = _armature_inverses[world] = inverse_rows(world)
    return inverse


_IDENTITY = tuple(tuple(float(i == j) for j in range(4)) for i in range(4))


def goal_world(obj, bone_name=""):
    """The world matrix (rows of floats) of ``obj``, or of its pose bone ``bone_name``, as last evaluated
    (unchecked)."""
    world = rows_of(obj.matrix_world)
    if bone_name:
        return product_rows(world, rows_of(obj.pose.bones[bone_name].matrix))
    return world


def goal_label(obj, bone_name):
    return f"{obj.name}' bone '{bone_name}" if bone_name else obj.name


# A pose bone's RNA path: the bone's name as the path escapes it (a quote, a backslash, '"]' are escaped in it).
BONE_OF_PATH = re.compile(r'pose\.bones\["((?:[^"\\]|\\.)*)"\]')


def _bone_of_path(data_path):
    """The bone a ``pose.bones["name"]...`` RNA path (of a driver or a driver variable) is about, or None."""
    match = BONE_OF_PATH.match(data_path)
    return None if match is None else unescape_identifier(match.group(1))


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
            if not path_prefix and driver.data_path.startswith('pose.bones["'):
                continue  # a bone's, which moves the object no more than its other bones do (a built rig's own)
            for variable in driver.driver.variables:
                for target in variable.targets:
                    bone = target.bone_target or _bone_of_path(target.data_path or "")
                    if chain_bone(target.id, bone):
                        return f"the driver on '{driver.data_path}' of {owner} reads chain bone '{bone}'"
        return None

    def from_bones(owner, bone_name):
        bone = owner.pose.bones.get(bone_name) if owner.type == "ARMATURE" else None
        while bone is not None:
            found = (from_constraints(f"bone '{bone.name}'", bone.constraints)
                     or from_drivers(f"bone '{bone.name}'", owner, bone_path(bone.name, "")))
            if found:
                return found
            bone = bone.parent
        return None

    goal = obj
    found = from_bones(obj, bone_name) if bone_name and obj is not None else None
    while obj is not None and not found:
        found = from_constraints(f"'{obj.name}'", obj.constraints) or from_drivers(f"'{obj.name}'", obj)
        if not found and obj.parent is not None and obj.parent_type == "BONE":
            found = from_bones(obj.parent, obj.parent_bone)
        obj = obj.parent
    if not found and goal is not None:
        # Further away: what it follows follows the chain, by its parents or its own constraints and drivers (a control
        # pinned by a Child Of to a prop Empty that hangs from the chain's elbow, or copies it).
        for target, subtarget in followed_targets(CouplingReader().followed_by(goal, bone_name)):
            bone = hangs_below(armature, chain.names[0], target, subtarget)
            if bone is not None:
                if target == armature and subtarget:
                    return f"through constraints or drivers it follows chain bone '{subtarget}'"
                return (f"through constraints or drivers it follows '{goal_label(target, subtarget)}', which hangs "
                        f"from chain bone '{bone}'")
    return found


# While Live poses a render's frame (live.on_frame_change): the view layer the render evaluates. A render evaluates
# what is enabled in renders (the camera icon), whether or not it is enabled in viewports.
rendering = [None]


def not_evaluated(obj):
    """Why Blender's viewport does not evaluate ``obj`` by itself, or None: disabled in viewports (the screen icon), or
    in no collection of the view layer that is enabled (one excluded, or disabled in viewports, or any collection
    above it). Its matrices then stay where they were last evaluated, whatever its animation or constraints say.
    (The eye icon only hides: a hidden object is still evaluated.) In a render (``rendering``), the same in renders."""
    render = rendering[0] is not None
    if not render and obj.visible_get():  # shown, so evaluated (the test below walks every collection: ~3 µs each)
        return None
    if obj.hide_render if render else obj.hide_viewport:
        return "is disabled in renders" if render else "is disabled in viewports"
    enabled = enabled_collections(rendering[0] if render else bpy.context.view_layer, render)
    if not any(collection.as_pointer() in enabled for collection in obj.users_collection):
        return (f"is in no collection of the view layer that is enabled in {'renders' if render else 'viewports'} "
                "(excluded, or disabled)")
    return None


def enabled_collections(view_layer, render=False):
    """The pointers (``as_pointer()``) of the collections whose objects ``view_layer`` evaluates: neither excluded
    nor disabled in viewports (``render``: in renders), nor below one that is."""
    enabled = set()

    def walk(layer_collection):
        collection = layer_collection.collection
        if layer_collection.exclude or (collection.hide_render if render else collection.hide_viewport):
            return
        enabled.add(collection.as_pointer())
        for child in layer_collection.children:
            walk(child)

    walk(view_layer.layer_collection)
    return enabled


def check_posable(armature):
    """Refuse to pose a library override Blender does not let the user edit (a system override: Blender refuses it Pose
    Mode): Blender ignores the bulk write that poses the chain, and the self-check refused the solve as "something in
    the scene changes the result"."""
    override = armature.override_library
    if override is not None and override.is_system_override:
        raise ChainError(f"Armature '{armature.name}' is a library override Blender does not let you edit (a system "
                         "override: it cannot enter Pose Mode either); make it editable (Outliner: right-click it > "
                         "Library Override > Make > Selected), then pose it")


def check_evaluated(obj, what):
    reason = not_evaluated(obj)
    if reason is not None:
        # The object's own screen icon, or its collections' checkbox (Exclude from View Layer) and screen icon.
        fix = ("enable it in renders (the camera icon in the Outliner)" if reason == "is disabled in renders" else
               "enable it in viewports (the screen icon in the Outliner)" if obj.hide_viewport else
               "check its collection's checkbox in the Outliner (include it in the view layer) and enable the "
               "collection in viewports (its screen icon), or link the object into a collection that is")
        raise ChainError(f"{what} {reason}, so Blender does not evaluate it here: it does not update where it is (or "
                         f"how it is posed); {fix}, and hide it with the eye icon instead")


def check_target(chain, spec, now=True):
    """Validate the chain's target and pole; returns their armature-space matrices (pole: None unless
    the plane is "POLE"). ``now=False`` leaves out what may differ from frame to frame (the matrices' values;
    a bake checks those on every baked frame) and returns None, None."""
    check_evaluated(chain.armature, f"Armature '{chain.armature.name}'")
    for role, obj, bone_name in spec.goals():
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
    check_goals_evaluated(spec)
    return goal_matrices(chain, spec)


def check_goals_evaluated(spec):
    """Refuse goals Blender does not evaluate (:func:`not_evaluated`), for a solve of the current frame: their
    matrices are not where they are. (A bake reads them from their keys, or checks what it reads frame by frame:
    see sampling.sample.)"""
    for role, obj, bone_name in spec.goals():
        if obj is not None:
            check_evaluated(obj, f"The {role} '{goal_label(obj, bone_name)}'")


def goal_matrices(chain, spec, told=None):
    """The target's and (plane "POLE") the pole's armature-space matrices (rows of floats) as last evaluated,
    for a chain and goals :func:`check_target` has validated. ``told``: {role: matrix} of goals that are not evaluated
    yet (:func:`told_goal`), used instead."""
    told = told or {}
    matrix = told.get("target") or goal_matrix(chain.armature, spec.target, spec.target_bone, "target")
    for axis, role in ((spec.up_axis, ""), (spec.roll_axis, ", its roll axis: the roll would be any")):
        if axis == "NONE":
            continue
        column = AXES[axis][0]
        x, y, z = matrix[0][column], matrix[1][column], matrix[2][column]
        if x * x + y * y + z * z < 1e-24:  # a length under 1e-12
            raise ChainError(f"The target '{goal_label(spec.target, spec.target_bone)}' has zero scale on its "
                             f"{axis.lstrip('-')} axis{role}")
    pole_matrix = None
    if spec.plane == "POLE":
        pole_matrix = told.get("pole") or goal_matrix(chain.armature, spec.pole, spec.pole_bone, "pole")
    return matrix, pole_matrix


def base_rows(chain):
    """``A₁``: the first bone's frame before its own rotation and scale, from the current pose (4×4 rows).

    ``M₁ = A₁ · R₁ · S₁``; ``A₁`` keeps the bone's pose location (a connected bone has none that counts). Blender
    gives it as the pose-space matrix of a basis that is that location alone: it depends on the parent's pose and
    the rest geometry, not on the bone's own rotation, so it stays the same to the bit while the parent does (a
    live chain's solve keeps the rotation it derives from it, :func:`solve_one`). Inherit Scale "Aligned" applies
    the parent's scale after the bone's own transform, so there it is ``M₁`` times ``(R₁S₁)⁻¹``."""
    pose_bone = chain.armature.pose.bones[chain.names[0]]
    bone = pose_bone.bone
    if bone.inherit_scale != "ALIGNED":
        basis = Matrix.Translation(_ORIGIN if bone.use_connect else pose_bone.location)
        return [row[:] for row in chain.armature.convert_space(pose_bone=pose_bone, matrix=basis, from_space="LOCAL",
                                                                to_space="POSE")]
    (a, b, c, _), (d, e, f, _), (g, h, i, _) = pose_bone.matrix_basis[:3]
    # (R₁S₁)⁻¹ by cofactors, its rows as columns (p, q, r).
    p, q, r = (e * i - f * h, f * g - d * i, d * h - e * g), (c * h - b * i, a * i - c * g, b * g - a * h), \
        (b * f - c * e, c * d - a * f, a * e - b * d)
    inverse_det = 1.0 / (a * p[0] + b * p[1] + c * p[2])
    rows = [[(u * p[0] + v * p[1] + w * p[2]) * inverse_det, (u * q[0] + v * q[1] + w * q[2]) * inverse_det,
             (u * r[0] + v * r[1] + w * r[2]) * inverse_det, x] for u, v, w, x in pose_bone.matrix[:3]]
    return rows + [[0.0, 0.0, 0.0, 1.0]]


_ORIGIN = (0.0, 0.0, 0.0)


def _basis(attribute, value, scale):
    """``R · S`` (a 4×4 Matrix) of a bone whose rotation channels ``attribute`` hold ``value``, as Blender makes its
    basis of them (a quaternion normalised, an axis-angle's axis too; mathutils computes in float32, as Blender)."""
    if attribute == "rotation_quaternion":
        rotation = Quaternion(value).normalized().to_matrix()
    elif attribute == "rotation_euler":
        rotation = value.to_matrix()
    else:
        axis = Vector(value[1:])
        rotation = Matrix.Rotation(value[0], 3, axis.normalized()) if axis.length > 0.0 else Matrix.Identity(3)
    return (rotation @ Matrix.Diagonal(scale)).to_4x4()


def channel_rotation(pose_bone):
    """The rotation ``pose_bone``'s channels hold, as a 3×3 Matrix, as Blender takes it (:func:`_basis`)."""
    attribute = rotation_path(pose_bone.rotation_mode)
    return _basis(attribute, getattr(pose_bone, attribute), (1.0, 1.0, 1.0)).to_3x3()


def posed_matrices(chain, base, written):
    """The pose-space matrices Blender will give the chain's bones once it evaluates the rotations ``written``
    ({attribute: [(bone name, value)]}, as :func:`pose_chain` made them) on the base ``base`` (:func:`base_rows`), by
    bone name, in float32 as Blender computes them: :func:`predicted_base` builds on them before Blender evaluates.
    Those from the first bone the chain passes through down are None (its constraints may scale them): nothing is told
    from them."""
    values = {name: (attribute, value) for attribute, pairs in written.items() for name, value in pairs}
    matrix, posed = Matrix(base), dict.fromkeys(chain.spanned)
    for index, pose_bone in enumerate(chain.pose_bones):
        if index and pose_bone.parent.name != chain.names[index - 1]:
            break
        if index:
            matrix = matrix @ Matrix(chain.offsets[index - 1].tolist())  # K₂, K₃: their locations included
        matrix = matrix @ _basis(*values[pose_bone.name], pose_bone.scale)
        posed[pose_bone.name] = matrix
    return posed


def _follows_plainly(pose_bone, driven):
    """Whether Blender poses ``pose_bone`` as its parent's pose times its rest offset times its own channels, nothing
    else: no constraint, no driver (``driven``: the names of the armature's bones that have one,
    :meth:`CouplingReader.driven`) or inheritance setting that changes the product (another bone's IK reaching it is
    :func:`predicted_base`'s to ask, once for all the bones it walks)."""
    bone = pose_bone.bone
    return not (not bone.use_inherit_rotation or bone.inherit_scale != "FULL" or not bone.use_local_location
                or bone.use_relative_parent or pose_bone.name in driven
                or any(_constraint_active(c) for c in pose_bone.constraints))


def _told_pose(pose_bone, posed, walked, driven):
    """The pose-space Matrix of ``pose_bone`` once Blender evaluates the bones ``posed`` (:func:`posed_matrices`, not
    yet evaluated): one of them, or below one through bones it follows plainly (:func:`_follows_plainly`, itself
    too, ``driven`` as there); None otherwise. The bones walked are added to the set ``walked``, for the caller to ask
    once whether another bone's IK reaches any of them."""
    path, bone = [], pose_bone
    while bone is not None and bone.name not in posed:
        if not _follows_plainly(bone, driven):
            return None
        path.append(bone)
        bone = bone.parent
    if bone is None:
        return None
    matrix, rest = posed[bone.name], bone.bone.matrix_local
    if matrix is None:  # posed, but not told (see posed_matrices)
        return None
    walked.update(pose_bone.name for pose_bone in path)
    for pose_bone in reversed(path):
        basis = pose_bone.matrix_basis.copy()  # (a view of the bone: setting its translation would move it)
        if pose_bone.bone.use_connect:  # a connected bone's location does not count
            basis.translation = _ORIGIN
        matrix = matrix @ (rest.inverted() @ pose_bone.bone.matrix_local) @ basis
        rest = pose_bone.bone.matrix_local
    return matrix


def predicted_base(chain, posed, driven):
    """:func:`base_rows` of ``chain`` once Blender evaluates the bones ``posed`` (:func:`posed_matrices`, not yet
    evaluated), when its first bone hangs below one of them through bones it follows plainly (and follows its parent
    plainly itself; ``driven`` as :func:`_follows_plainly`'s); None otherwise. Equal to what Blender gives within its
    float32 rounding: the caller compares it with Blender's once evaluated."""
    armature, first = chain.armature, chain.pose_bones[0]
    walked = {first.name}
    if first.parent is None or not _follows_plainly(first, driven):
        return None
    parent = _told_pose(first.parent, posed, walked, driven)
    if parent is None or next(posers(armature, walked), None):
        return None
    location = _ORIGIN if first.bone.use_connect else first.location
    return rows_of(parent @ (first.parent.bone.matrix_local.inverted() @ first.bone.matrix_local)
                   @ Matrix.Translation(location))


def told_goal(armature, obj, bone_name, posed, driven):
    """A goal's armature-space matrix (rows, as :func:`goal_matrix` reads it) once Blender evaluates the bones
    ``posed`` (:func:`posed_matrices`): a bone of the armature (:func:`_told_pose`), or an object parented to one with
    nothing else moving it (no constraint, no driver); None otherwise, or when another bone's IK reaches a bone it
    hangs from (``driven`` as :func:`_follows_plainly`'s). Within Blender's float32 rounding of what it shows: the
    caller compares it once evaluated."""
    walked = set()
    if obj == armature and bone_name:
        matrix = _told_pose(armature.pose.bones[bone_name], posed, walked, driven)
    elif (bone_name or obj.parent != armature or obj.parent_type != "BONE" or obj.parent_bone not in armature.pose.bones
          or any(_constraint_active(c) for c in obj.constraints)
          or obj.animation_data is not None and any(not driver.mute for driver in obj.animation_data.drivers)):
        return None
    else:  # Blender's parent matrix of a bone's child: the bone's pose, moved to its tail
        parent = armature.pose.bones[obj.parent_bone]
        matrix = None if parent.bone.use_relative_parent else _told_pose(parent, posed, walked, driven)
        if matrix is not None:
            matrix = (matrix @ Matrix.Translation((0.0, parent.bone.length, 0.0)) @ obj.matrix_parent_inverse
                      @ obj.matrix_basis)
    if matrix is None or next(posers(armature, walked), None):
        return None
    return rows_of(matrix)


def base_matrix(chain):
    """:func:`base_rows` as a (4, 4) array."""
    return np.array(base_rows(chain))


def current_normal(chain):
    """The bend-plane normal of the chain as posed now (armature space), or None if it is straight."""
    base, middle, wrist = (pose_bone.head for pose_bone in chain.pose_bones)
    axis, bend = wrist - base, middle - base
    normal = axis.cross(bend)
    size = axis.length * bend.length
    if not math.isfinite(size) or normal.length <= 1e-6 * size:
        return None
    return normal.normalized()[:]


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
    """A chain's solve, indexed by sample: ``rotations[i]`` (3, 3, 3), each bone's local rotation (its basis
    rotation), and the solver's ``solution`` in armature space. :func:`solve_chain` gives numpy arrays;
    :func:`solve_one` one-element lists of plain values (``solution.directions[0][2]`` reads either)."""

    rotations: object
    solution: object
    # solve_current's: the target's armature-space rows, the pole point (or None) and the settings it solved for
    goals: object = None


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


def _times(columns, weights):
    """``M @ w``: a matrix (its columns, component tuples) times a 3-vector."""
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = columns
    u, v, w = weights
    return ax * u + bx * v + cx * w, ay * u + by * v + cy * w, az * u + bz * v + cz * w


# The 3×3 products below are written out: on one sample's floats, Python's cost is per operation and per
# call, and a generator per product costs as much as its arithmetic (issue 11). Numpy arrays (a batch) go
# through the same expressions.

def _product(a, b):
    """``A @ B`` by columns: A by its columns (component tuples), B by its columns (or constant rows of floats:
    then ``A @ Bᵀ``)."""
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = a
    (u0, v0, w0), (u1, v1, w1), (u2, v2, w2) = b
    return ((ax * u0 + bx * v0 + cx * w0, ay * u0 + by * v0 + cy * w0, az * u0 + bz * v0 + cz * w0),
            (ax * u1 + bx * v1 + cx * w1, ay * u1 + by * v1 + cy * w1, az * u1 + bz * v1 + cz * w1),
            (ax * u2 + bx * v2 + cx * w2, ay * u2 + by * v2 + cy * w2, az * u2 + bz * v2 + cz * w2))


def _transposed_product(a, b, rows=False):
    """``Aᵀ @ B`` (A and B by their columns): entry (i, j) is aᵢ·bⱼ. By columns, or with ``rows`` by rows."""
    (ax, ay, az), (bx, by, bz), (cx, cy, cz) = a
    (u0, v0, w0), (u1, v1, w1), (u2, v2, w2) = b
    a_b0 = ax * u0 + ay * v0 + az * w0, bx * u0 + by * v0 + bz * w0, cx * u0 + cy * v0 + cz * w0
    a_b1 = ax * u1 + ay * v1 + az * w1, bx * u1 + by * v1 + bz * w1, cx * u1 + cy * v1 + cz * w1
    a_b2 = ax * u2 + ay * v2 + az * w2, bx * u2 + by * v2 + bz * w2, cx * u2 + cy * v2 + cz * w2
    if not rows:
        return a_b0, a_b1, a_b2
    return (a_b0[0], a_b1[0], a_b2[0]), (a_b0[1], a_b1[1], a_b2[1]), (a_b0[2], a_b1[2], a_b2[2])


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


def _float_scale(columns):
    """One sample's uniform scale of ``A₁`` (its 3×3 part's float columns), as check_base judges it, or None
    when check_base must look (a scale it may refuse)."""
    gram = [[dot(a, b) for b in columns] for a in columns]
    scale_squared = (gram[0][0] + gram[1][1] + gram[2][2]) / 3.0
    if not scale_squared > 1e-30 or dot(columns[0], cross(columns[1], columns[2])) <= 0.0:
        return None
    deviation = max(abs(gram[i][j] / scale_squared - (1.0 if i == j else 0.0)) for i in range(3) for j in range(3))
    return math.sqrt(scale_squared) if deviation <= _SCALE_TOLERANCE else None


def _check_inherited_scale(chain, scales):
    scaled = abs(scales - 1.0) > 1e-4 if isinstance(scales, float) else np.any(np.abs(scales - 1.0) > 1e-4)
    if scaled:  # above float32 noise (Rigify: 1e-5)
        for name in chain.names[1:]:
            if chain.armature.data.bones[name].inherit_scale in ("NONE", "NONE_LEGACY"):
                raise ChainError(f"Bone '{name}' does not inherit the scale of the chain's scaled parent; set its "
                                 "Inherit Scale to Full, or unscale the parent")


def _frame(ops, direction, normal):
    """The solved frame [d, n', d × n'] of a link (columns), n' = the normal made ⟂ to d."""
    side, _ = normalize_or(ops, reject(normal, direction), lambda: any_perpendicular(ops, direction), 1.0, 1e-12)
    return direction, side, cross(direction, side)


def _plane_arguments(ops, chain, spec, rest_normal, scale_of, origin, end, up):
    """The solver's plane settings for ``spec`` (component tuples): ``(plane, bend_toward, extra keywords)``."""
    if spec.plane != "PARENT":
        return spec.plane, bend_toward(chain, spec), {"singular_tolerance": GOAL_SINGULAR_TOLERANCE}
    # The rest hinge axis, carried by the parent's pose: the knee turns with the hips, and the foot's
    # direction never flips it. "REST" keeps the rest side (the normal's orientation); "TOWARD" and
    # "AWAY" pick, per sample, the side of that plane the up axis is on, or the other.
    extra = {"normal": rest_normal, "singular_tolerance": PARENT_SINGULAR_TOLERANCE}
    if spec.bend == "REST":
        return "NORMAL", True, extra
    up_length = _ops.norm(ops, up)
    wrist_axis = sub(sub(end, scale(up, scale_of * chain.floats.lengths[2] / up_length)), origin)
    up_side = dot(cross(rest_normal, wrist_axis), up) >= 0.0
    return "NORMAL", up_side if spec.bend == "TOWARD" else ops.logical_not(up_side), extra


def _local_rotations(ops, chain, spec, rotation, directions, normal, roll):
    """Each bone's local rotation, as three rows (component tuples), from the solved link directions and
    bend-plane normal; ``roll``: the target's roll axis (a component tuple), or None."""
    # Each bone's armature-space rotation Qᵢ maps its rest frame (rest direction, rest bend-plane normal)
    # onto its solved frame: Qᵢ = Fᵢ · Restᵢᵀ, so column j of Qᵢ is Fᵢ times row j of Restᵢ.
    constants = chain.floats
    first, middle, last = directions
    first_orientation = _product(_frame(ops, first, normal), constants.rest_frames[0])
    last_orientation = _product(_frame(ops, last, normal), constants.rest_frames[2])
    if roll is not None:  # the last bone's local Z turns toward the target's roll axis
        roll_length = _ops.norm(ops, roll)
        ok = _ops.norm(ops, reject(roll, last)) > 1e-6 * ops.maximum(roll_length, 1e-300)
        rolled = _product(_frame(ops, last, roll), _BONE_FRAME_ROWS)
        last_orientation = tuple(select(ops, ok, new, old) for new, old in zip(rolled, last_orientation))
    # L₁ = Aᵀ Q₁; L₂ linear in the middle joint's turn (see _link_constants); L₃ = K₃ᵀ Q₂ᵀ Q₃ = U F₂ᵀ Q₃, by rows.
    c, s = dot(first, middle), dot(normal, cross(first, middle))
    e = [c * cosine + s * sine + axis for cosine, sine, axis in constants.middle_terms]
    middle_frame = (middle, normal, cross(middle, normal))
    return [_transposed_product(rotation, first_orientation, rows=True),
            ((e[0], e[1], e[2]), (e[3], e[4], e[5]), (e[6], e[7], e[8])),
            _transposed_product(constants.last_offset, _transposed_product(middle_frame, last_orientation), rows=True)]


def _roll_axis(spec, column_of):
    """The target's roll axis (``column_of(j)``: the target matrix's column j), or None."""
    if spec.roll_axis == "NONE":
        return None
    roll_column, roll_sign = AXES[spec.roll_axis]
    return scale(column_of(roll_column), roll_sign)


# A₁'s 3×3 part (columns) -> its scale and nearest rotation, a pure function of it: a live chain meets the
# same base on every update until its parent moves, and this is a third of a solve's arithmetic.
_base_rotations = {}


def solve_one(chain, base, target, spec, pole=None, fallback_normal=None):
    """One sample on plain Python floats (a live solve, a Solve): ``base`` ``A₁`` and ``target`` (the target's
    armature-space matrix) as 4×4 rows, ``pole`` a point or None, ``fallback_normal`` the plane to keep where
    it is undefined (default: the rest pose's). The same math as :func:`solve_chain`, without numpy."""
    ops = _ops.FLOAT
    (ax, bx, cx, ox), (ay, by, cy, oy), (az, bz, cz, oz) = base[0], base[1], base[2]
    columns = (ax, ay, az), (bx, by, bz), (cx, cy, cz)
    known = _base_rotations.get(columns)
    if known is None:
        scale_of = _float_scale(columns)
        if scale_of is None:  # the full check names the culprit (or accepts what the quick one doubted)
            scale_of = float(check_base(chain, np.array([base], dtype=np.float64))[0])
        known = scale_of, _nearest_rotation(tuple(scale(column, 1.0 / scale_of) for column in columns))
        if len(_base_rotations) >= 64:
            _base_rotations.clear()
        _base_rotations[columns] = known
    scale_of, rotation = known
    _check_inherited_scale(chain, scale_of)
    origin = ox, oy, oz
    constants = chain.floats
    target_columns = tuple(zip(target[0], target[1], target[2]))  # the target matrix's 4 columns, 3 rows of each
    up_column, up_sign = AXES[spec.up_axis]
    up = scale(target_columns[up_column], up_sign)
    end = target_columns[3]
    rest_normal = _times(rotation, constants.rest_normal)
    plane, toward, extra = _plane_arguments(ops, chain, spec, rest_normal, scale_of, origin, end, up)
    l1, l2, l3 = constants.lengths
    try:
        solution = solve_floats(origin, (l1 * scale_of, l2 * scale_of, l3 * scale_of), end, up, plane=plane,
                                pole=pole, bend_toward=toward,
                                fallback_normal=rest_normal if fallback_normal is None else fallback_normal,
                                normal=extra.get("normal"),
                                tolerance=_PLANE_TOLERANCES[extra.get("singular_tolerance", 0.0)])
    except SolverInputError as error:
        raise ChainError(str(error)) from None
    if not solution.reachable and solution.miss <= REACH_RESOLUTION * scale_of * constants.size:
        solution = solution._replace(reachable=True, miss=0.0)
    local = _local_rotations(ops, chain, spec, rotation, solution.directions, solution.normal,
                             _roll_axis(spec, target_columns.__getitem__))
    return ChainSolve([local], type(solution)(*zip(solution)))  # each field a sample of one (zip: no Python loop)


# Up to this many samples, solve_chain solves each on floats (solve_one, ~25-30 µs a sample): numpy's cost per call
# makes a batched solve cost ~0.45 ms however few its samples (issue 11: a short bake; the frames of a long bake
# whose bend plane is undefined, solved again with the plane carried to them). The two cross at about 15 samples.
FEW_SAMPLES = 12


def _solve_few(chain, base, target, spec, pole, fallback_normal, carry_plane):
    """:func:`solve_chain` of a few samples, one by one through :func:`solve_one`, as arrays: the same result to
    float64 rounding (tests/test_one_sample.py). None when a sample is refused, for the batch to refuse it with its
    frame named."""
    count = len(base)
    fallbacks = (None if fallback_normal is None
                 else np.broadcast_to(np.asarray(fallback_normal, dtype=np.float64), (count, 3)).tolist())
    bases, targets = base.tolist(), target.tolist()
    poles = None if pole is None else np.broadcast_to(pole, (count, 3)).tolist()
    carried = None  # the last defined plane's normal, for the samples after it whose plane is undefined
    solved = []
    try:
        for index in range(count):
            fallback = carried if carried is not None else None if fallbacks is None else fallbacks[index]
            one = solve_one(chain, bases[index], targets[index], spec, None if poles is None else poles[index],
                            fallback)
            if carry_plane and not one.solution.degenerate[0]:
                carried = one.solution.normal[0]
            solved.append(one)
    except ChainError:
        return None
    fields = zip(*(one.solution for one in solved))
    return ChainSolve(np.array([one.rotations[0] for one in solved]),
                      type(solved[0].solution)(*(np.array([value[0] for value in field]) for field in fields)))


def solve_chain(chain, base, target, spec, pole=None, fallback_normal=None, carry_plane=True, sample_frames=None):
    """Solve N samples at once (up to FEW_SAMPLES through :func:`solve_one`; they come back as arrays too).

    ``base``: (N, 4, 4) ``A₁`` per sample; ``target``: (N, 4, 4) the target's armature-space matrix;
    ``pole``: (N, 3), (3,) shared by every sample, or None. ``fallback_normal``: (N, 3) or (3,), the plane to
    keep where it is undefined; by default the rest pose's. With ``carry_plane``, a sample whose plane is undefined
    keeps the previous sample's instead (for a sequence of frames). ``sample_frames``: the samples' frame
    numbers, for messages.
    """
    base = np.asarray(base, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    pole = None if pole is None else np.asarray(pole, dtype=np.float64)
    count = len(base)
    if count <= FEW_SAMPLES:
        few = _solve_few(chain, base, target, spec, pole, fallback_normal, carry_plane)
        if few is not None:
            return few
    ops = _ops.NUMPY
    # A base that is the same on every sample (nothing above the chain moves) is checked and made a rotation
    # once, and enters the math as plain floats, which broadcast against the samples' arrays.
    constant = base.strides[0] == 0 or bool((base == base[:1]).all())
    scales = None
    if constant:
        scale_of = _float_scale(_columns(base[:1, :3, :3], True))
        scales = None if scale_of is None else np.array([scale_of])
    if scales is None:  # a varying base, or one the quick check doubts: the full check names the culprit
        scales = check_base(chain, base, sample_frames)
    _check_inherited_scale(chain, scales)
    if constant:
        scales = scales[:1]
    rotation = _nearest_rotation(_columns(base[:len(scales), :3, :3] / scales[:, None, None], constant))
    scale_of = float(scales[0]) if constant else scales
    origin = _vectors(base[:, :3, 3], constant)
    lengths = np.outer(np.broadcast_to(scales, (count,)), chain.lengths)

    def column_of(j):
        return target[:, 0, j], target[:, 1, j], target[:, 2, j]

    up_column, up_sign = AXES[spec.up_axis]
    up = scale(column_of(up_column), up_sign)
    end = column_of(3)
    rest_normal = _times(rotation, chain.floats.rest_normal)
    if fallback_normal is None:
        fallback = np.stack(np.broadcast_arrays(*rest_normal), -1)
    else:
        fallback = np.broadcast_to(fallback_normal, (count, 3))
    plane, toward, extra = _plane_arguments(ops, chain, spec, rest_normal, scale_of, origin, end, up)
    if "normal" in extra:
        extra["normal"] = np.stack(np.broadcast_arrays(*extra["normal"]), -1)

    try:
        # With carry_plane, an undefined plane keeps the last defined one before it (the fallback's before the first).
        solution = solve_three_link(np.stack(np.broadcast_arrays(*origin), -1), lengths, np.stack(end, -1),
                                    np.stack(up, -1), plane=plane, pole=pole, bend_toward=toward,
                                    fallback_normal=fallback, carry_plane=carry_plane, **extra)
    except SolverInputError as error:
        raise ChainError(str(error)) from None
    on_target = ~solution.reachable & (solution.miss <= REACH_RESOLUTION * scales * chain.floats.size)
    if on_target.any():  # see REACH_RESOLUTION
        solution = solution._replace(reachable=solution.reachable | on_target,
                                     miss=np.where(on_target, 0.0, solution.miss))

    normal = _vectors(solution.normal, False)
    directions = [_vectors(solution.directions[:, link], False) for link in range(3)]
    local = _local_rotations(ops, chain, spec, rotation, directions, normal, _roll_axis(spec, column_of))
    rotations_out = np.empty((count, 3, 3, 3))
    for link, rows in enumerate(local):
        for i, row in enumerate(rows):
            for j in range(3):
                rotations_out[:, link, i, j] = row[j]
    return ChainSolve(rotations_out, solution)


def rotation_values(pose_bone):
    """The pose bone's current value in its own rotation mode (a tuple of floats)."""
    mode = pose_bone.rotation_mode
    if mode == "QUATERNION":
        return pose_bone.rotation_quaternion[:]
    if mode == "AXIS_ANGLE":
        return pose_bone.rotation_axis_angle[:]
    return pose_bone.rotation_euler[:]


def rotation_path(mode):
    if mode == "QUATERNION":
        return "rotation_quaternion"
    if mode == "AXIS_ANGLE":
        return "rotation_axis_angle"
    return "rotation_euler"


def set_rotation(pose_bone, values):
    setattr(pose_bone, rotation_path(pose_bone.rotation_mode), [float(v) for v in values])


def pose_chain(chain, local_rotations, writes=None):
    """Write one sample's rotations (3, 3, 3; an array or nested lists) into the pose, each in its bone's rotation mode and
    continuous with the bone's current value (no Euler jump, same quaternion hemisphere).

    Through mathutils (float32): the channels are stored in float32, and Blender's own conversions are
    those the vectorised ones in rotations.py reproduce (mat3_normalized_to_eulO and its compatible form).
    Returns each bone's value before, as :func:`rotation_values` gives it (read here anyway, for continuity).

    The values go in with ``foreach_set`` and the armature is tagged for a transform update: setting a bone's rotation
    property tags its geometry instead, whose evaluation costs far more for the same pose (Rigify's human metarig:
    1.36 against 0.57 ms; an arm among 3,000 other objects: 14 against 4.5 ms), and evaluates what depends on the
    pose all the same (bones, constraints and drivers that follow them, meshes they deform; tests/test_live.py).

    ``writes``: a dict to add the values to, for one :func:`write_rotations` of several chains of the armature (each
    write reads and sets every bone's channel: 50 µs on Rigify's human metarig, 1.4 ms of a Live update that poses 27
    chains one by one); by default they are written here."""
    before, own = [], {} if writes is None else writes
    for pose_bone, rotation in zip(chain.pose_bones, local_rotations):
        matrix = Matrix(rotation.tolist() if isinstance(rotation, np.ndarray) else rotation)
        mode = pose_bone.rotation_mode
        if mode == "QUATERNION":
            quaternion = matrix.to_quaternion()
            current = pose_bone.rotation_quaternion[:]
            before.append(current)
            if quaternion.dot(current) < 0.0:
                quaternion.negate()
            own.setdefault("rotation_quaternion", []).append((pose_bone.name, quaternion))
        elif mode in rotations.EULER_ORDERS:
            current = pose_bone.rotation_euler
            before.append(current[:])
            own.setdefault("rotation_euler", []).append((pose_bone.name, matrix.to_euler(mode, current)))
        else:
            quaternion = matrix.to_quaternion()
            current = pose_bone.rotation_axis_angle[:]
            before.append(current)
            w, x, y, z = quaternion
            length = math.sqrt(x * x + y * y + z * z)
            if length > 1e-12:
                # Not Quaternion.to_axis_angle: its angle is the arc cosine of w in float32, which is 0 for every turn
                # under 7e-4 rad (w rounds to 1), so a small turn was lost, or rounded to 7e-4 rad.
                axis, angle = Vector((x / length, y / length, z / length)), 2.0 * math.atan2(length, w)
            else:
                axis, angle = quaternion.to_axis_angle()
            # (θ, a) and (-θ, -a), and θ ± 2π, are one rotation: the one nearest the current value, so that keys
            # made of successive solves (a hinge turning through its rest angle) interpolate as the pose turns.
            if axis.dot(current[1:]) < 0.0:
                axis.negate()
                angle = -angle
            angle += 2.0 * math.pi * round((current[0] - angle) / (2.0 * math.pi))
            own.setdefault("rotation_axis_angle", []).append((pose_bone.name, (angle, *axis)))
    if writes is None:
        write_rotations(chain.armature, own)
    return before


def write_rotations(armature, writes):
    """Set pose bones' rotation channels: ``writes`` maps an attribute (``rotation_quaternion``...) to ``(bone name,
    values)`` pairs; then tag the armature for a transform update (see :func:`pose_chain`)."""
    bones = armature.pose.bones
    for attribute, values in writes.items():
        width = 3 if attribute == "rotation_euler" else 4
        size = len(bones) * width
        buffer = _write_buffers.get(size)
        if buffer is None:
            if len(_write_buffers) >= 16:
                _write_buffers.clear()
            buffer = _write_buffers[size] = np.empty(size, dtype=np.float32)
        bones.foreach_get(attribute, buffer)
        for name, value in values:
            index = bones.find(name) * width
            buffer[index:index + width] = value
        bones.foreach_set(attribute, buffer)
    armature.update_tag(refresh=_OBJECT)


# write_rotations' buffers by size, made once: each is filled whole before use (a Live update made a new one).
_write_buffers = {}
_OBJECT = {"OBJECT"}


def evaluate_now():
    """Bring evaluated matrices up to date: a script may have changed a pose or a transform since
    the last evaluation, and ``PoseBone.matrix`` and ``matrix_world`` would still show the old one."""
    import bpy
    bpy.context.view_layer.update()


def solve_current(chain, spec, validated=False, base=None, told=None):
    """Solve a validated chain for the scene as last evaluated. Returns a ChainSolve of one sample;
    changes nothing (pose it with :func:`pose_chain`). Outside a depsgraph handler, call
    :func:`evaluate_now` first. ``validated``: the goals were checked (:func:`check_target`) and nothing
    they depend on changed since; only their matrices are read. ``base``: :func:`base_rows` of the chain, when the
    caller knows it (nothing it depends on changed since it was read); ``told``: goals' matrices (see
    :func:`goal_matrices`), for a chain checked already."""
    target, pole = goal_matrices(chain, spec, told) if validated or told else check_target(chain, spec)
    base, pole = base_rows(chain) if base is None else base, None if pole is None else [row[3] for row in pole[:3]]
    solve = solve_one(chain, base, target, spec, pole)
    if solve.solution.degenerate[0]:  # the plane is undefined: keep the current one rather than the rest pose's
        solve = solve_one(chain, base, target, spec, pole, current_normal(chain))
    solve.goals = target, pole, _solve_settings(spec)
    return solve


def _solve_settings(spec):
    """The settings of ``spec`` a solve depends on besides its goals' matrices and its tip bone (checked by place)."""
    return spec.target_bone, spec.up_axis, spec.plane, spec.pole_bone, spec.bend, spec.roll_axis


def shows_solve(armature, spec, shown):
    """Whether Blender still shows what a read-out describes. ``shown``: :attr:`runtime.Readout.shown` of the solve (its
    solution, the sample's index, the goals it solved for). As last evaluated, the tip bone must be where the solve put
    it (as :func:`verify_pose` checks it) and the goals where they were: a target moved with Live off, a bone turned by
    hand, the parent posed, a frame whose keys pose the chain otherwise all make the read-out a past one, as does a
    setting of the solve changed with Live off (the up axis: the last bone off it). A chain or goal that cannot be read
    now is not shown either."""
    solution, index, (target_was, pole_was, settings_was) = shown
    if _solve_settings(spec) != settings_was:
        return False
    _, _, size = _posed_reach(solution, index)
    try:
        check_armature_scale(armature)  # scaled to zero (a character hidden that way) has no armature space
        tip_bone = armature.pose.bones.get(chain_names(armature, spec.tip_bone)[2])
        target = goal_matrix(armature, spec.target, spec.target_bone, "target")
        pole = goal_matrix(armature, spec.pole, spec.pole_bone, "pole") if spec.plane == "POLE" else None
    except ChainError:
        return False
    if tip_bone is None or (pole is None) != (pole_was is None):
        return False
    reach = POSE_TOLERANCE * size
    distance, angle = _tip_error(tip_bone, solution, index)  # as verify_pose measures it
    if distance > reach or angle > ANGLE_TOLERANCE:
        return False
    # Relative to the target's size in the armature's space: a target of an armature scaled ×100 (an FBX import in
    # centimetres) has axes of 0.01 there, and an absolute tolerance let it turn by 0.5° unseen.
    axes = max(math.hypot(*was[:3]) for was in target_was[:3])
    for row, was in zip(target[:3], target_was):
        if any(abs(value - old) > POSE_TOLERANCE * (axes + abs(old)) for value, old in zip(row[:3], was[:3])):
            return False  # turned or scaled: the up axis, the roll
        if abs(row[3] - was[3]) > reach:
            return False
    return pole is None or all(abs(row[3] - old) <= reach for row, old in zip(pole[:3], pole_was))


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
    another chain's bones (a finger chain under an arm chain), or whose target or pole does, or whose parent bones or
    goals follow that chain through constraints (:func:`followed_targets`, :func:`goal_constraint_targets`), comes in a
    later level, so it is solved on the pose the other one gets.

    Two chains sharing a bone, or chains hanging from each other in a loop, raise ChainError; given an
    ``errors`` dict, those chains are left out instead and their messages go to ``errors[spec]``."""
    def refuse(message, specs):
        if errors is None:
            raise ChainError(message)
        for spec in specs:
            errors[spec] = message

    if len(read) == 1:  # one chain: nothing to share or to wait for
        return [list(read)]
    owner, kept = {}, []
    for spec, chain in read:
        shared = next((name for name in chain.spanned if name in owner), None)
        if shared is not None:
            other = owner[shared]
            refuse(f"Chains '{other.label}' and '{spec.label}' share bone '{shared}'; a bone can belong to one "
                   "chain only: change the tip bone of one of them", (other, spec))
            kept = [(s, c) for s, c in kept if s is not other]
            continue
        owner.update((name, spec) for name in chain.spanned)
        kept.append((spec, chain))
    if errors:
        kept = [(spec, chain) for spec, chain in kept if spec not in errors]

    # before[i]: the chains (indices into kept) that must be solved before chain i. Each walk up the parents finds every
    # chain above at once (their first bones are the roots): asking chain by chain cost O(chains^2 x depth), 5.4 of 11.2
    # ms per Live update with 27 chains of Rigify's human metarig, the spine's target moved (0.6 ms this way).
    roots = {chain.names[0]: index for index, (_, chain) in enumerate(kept)}
    before, reader = [], CouplingReader()
    for index, (spec, chain) in enumerate(kept):
        above = _roots_above(armature, roots, armature, chain.names[0])
        for _, obj, bone_name in spec.goals():
            above |= _roots_above(armature, roots, obj, bone_name)
        for target, bone_name in followed_targets(reader.bone_targets(armature, chain.names[0])
                                                  + goal_constraint_targets(spec, reader), reader):
            above |= _roots_above(armature, roots, target, bone_name)
        before.append({roots[name] for name in above} - {index})
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
    return _tip_error(chain.armature.pose.bones[chain.names[2]], solution, index)


def _tip_error(tip_bone, solution, index):
    """:func:`pose_error` of the chain's tip bone ``tip_bone``. The last bone's direction is its posed Y axis, from which
    Blender places its tail: the head-to-tail difference of a bone of 1e-5 (or of 1e-4 ten units from the armature's
    origin) is float32 noise to a tenth of a degree, which refused a solve Blender showed exactly."""
    matrix = tip_bone.matrix
    direction = matrix[0][1], matrix[1][1], matrix[2][1]  # its Y column
    expected = solution.directions[index][2]
    angle = math.atan2(math.hypot(*cross(direction, expected)), dot(direction, expected))
    return math.dist(tip_bone.tail, solution.joints[index][3]), angle


def _posed_reach(solution, index):
    """The solve's joints (float triples), the chain's reach as posed, and the size the self-check's tolerance is
    relative to: that reach or the tip's distance from the armature's origin, the larger. The reach as posed, not the
    rest lengths: a parent bone scaled 0.01 (a master control sizing the character) makes it a hundredth of them, which
    allowed the tip a hundred times too far off."""
    joints = solution.joints[index]
    reach = math.dist(joints[0], joints[1]) + math.dist(joints[1], joints[2]) + math.dist(joints[2], joints[3])
    return joints, reach, max(reach, math.hypot(*joints[3]))


def _changed_by(chain):
    """What :func:`verify_pose` blames: another bone's IK or Spline IK that poses the chain's bones (a leftover IK of
    Chain Length 0 on a finger, up to the root), when one acts, or something it cannot name."""
    for owner, constraint, _ in posers(chain.armature, set(chain.spanned)):
        if owner.name not in chain.spanned and _constraint_active(constraint):
            return (f"the {constraint.type.replace('_', ' ')} constraint '{constraint.name}' of bone '{owner.name}' "
                    "poses the chain's bones (mute or remove it, or shorten its Chain Length so that it stops below "
                    "the chain)")
    for name in chain.through:  # its scale-only constraints may scale the bones below it otherwise than the chain
        pose_bone = chain.armature.pose.bones[name]
        own, parent = (Vector(matrix.to_scale()) for matrix in (pose_bone.matrix, pose_bone.parent.matrix))
        if (own - parent).length > 1e-5 * parent.length:
            constraints = ", ".join(c.name for c in pose_bone.constraints if _constraint_active(c)) or "none"
            return (f"bone '{name}', which the chain passes through, is scaled otherwise than the bone it hangs from "
                    f"(its scale {tuple(round(v, 4) for v in own)} against {tuple(round(v, 4) for v in parent)}; its "
                    f"constraints: {constraints}), which scales the bones below it and moves the tip: give it its "
                    "parent's scale, or make the chain's tip another bone")
    return "something in the scene changes the result in a way the add-on cannot follow"


def shows_pose(chain, solution, index=0):
    """Whether Blender shows the tip where a solve puts it, as the self-check allows: (tip distance, last bone's angle,
    within the tolerances), armature space."""
    distance, angle = pose_error(chain, solution, index)
    _, _, scale = _posed_reach(solution, index)
    return distance, angle, distance <= POSE_TOLERANCE * scale and angle <= ANGLE_TOLERANCE


def verify_pose(chain, solution, index=0, middle=False):
    """Refuse a pose Blender does not show as solved (something in the scene changes the result in a way
    the add-on cannot follow). Call after the pose was evaluated. ``middle``: the middle joint must be where the
    solve put it too (a built rig: its tracking picks the same plane), unless the wrist is within 1% of the chain's
    reach of the base, where float32 noise in the goal turns the plane anywhere about the base."""
    distance, angle, shown = shows_pose(chain, solution, index)
    if not shown:
        away = distance_text(bpy.context.scene, chain.armature, distance)  # in the scene's units, as Blender shows them
        raise ChainError(f"Blender shows the tip of '{chain.names[2]}' {away} from where the solve put it "
                         f"(and {math.degrees(angle):.3g}° off its direction): {_changed_by(chain)}; nothing was "
                         "changed")
    if not middle:
        return
    joints, reach, scale = _posed_reach(solution, index)
    if math.dist(joints[2], joints[0]) > 0.01 * reach:
        off = math.dist(chain.pose_bones[1].head, joints[1])
        if not off <= POSE_TOLERANCE * scale:
            away = distance_text(bpy.context.scene, chain.armature, off)
            raise ChainError(f"Blender shows the middle joint of '{chain.names[2]}' {away} from where the solve put "
                             "it, with the tip on it: the chain bends in another plane than the solve's; nothing was "
                             "changed")


def verify_goals(chain, spec, solution, goals, index=0):
    """Refuse a solve whose goals posing the chain moved (call after the pose was evaluated, as :func:`verify_pose`):
    Blender shows the tip where the goal was, not where it is now. Parenting, constraints and drivers that follow the
    chain are refused before the solve (:func:`check_target`); geometry the armature deforms is not traced: a target
    hung from a vertex of the character's skin, or shrinkwrapped onto it, moved with the hand it was solved for.
    ``goals``: the target's matrix (rows) and the pole's point (or None) the solve read, as :attr:`ChainSolve.goals`."""
    target_was, pole_was = goals[:2]
    target, pole = goal_matrices(chain, spec)
    _, _, size = _posed_reach(solution, index)
    axes = max(math.hypot(*was[:3]) for was in target_was[:3])  # relative to its size, as shows_solve compares it
    turned = any(abs(value - old) > POSE_TOLERANCE * (axes + abs(old))
                 for row, was in zip(target[:3], target_was) for value, old in zip(row[:3], was[:3]))
    moves = [("target", spec.target, spec.target_bone, [row[3] for row in target[:3]],
              [row[3] for row in target_was[:3]])]
    if pole is not None and pole_was is not None:
        moves.append(("pole", spec.pole, spec.pole_bone, [row[3] for row in pole[:3]], pole_was))
    for role, obj, bone_name, now, was in moves:
        moved = math.dist(now, was)
        if moved > POSE_TOLERANCE * size or (role == "target" and turned):
            check_target(chain, spec, now=False)  # what it names, when it finds the cause (a Live validation is older)
            away = distance_text(bpy.context.scene, chain.armature, moved)
            raise GoalMoved(f"The {role} '{goal_label(obj, bone_name)}' moves when the chain is posed ({away}"
                            f"{', and turns' if role == 'target' and turned else ''}): it follows something the "
                            "chain moves, such as a mesh the armature deforms (a vertex parent, a Shrinkwrap onto "
                            "the character's skin); hang it from something the chain does not move; nothing was "
                            "changed")
