"""Seed 000: the three-link solve in 3D, in the armature's space (Blender: z up, bones along +Y).

For a chain based at ``O`` with lengths ``l1, l2, l3``, a target ``E`` and a unit up vector ``û`` that
the last link must point along:

1. Wrist: ``P_T = E - l3·û`` (seed 000). The last link then runs from ``P_T`` to ``E`` along ``û``.
2. Bend plane through ``O`` and ``P_T``. Seed 000 picks it in two steps, a yaw ``θy`` about the up
   axis and a roll ``β``; the roll has to turn about the base→wrist line, or the wrist leaves its
   target (seeds/README.md), so here the plane is built directly: its in-plane axes are
   ``a = (P_T - O)/|P_T - O|`` and ``b`` ⟂ ``a``, the side the middle joint goes to, with normal
   ``n = a × b``. ``'TARGET'``: ``b`` is ``û``'s part perpendicular to ``a`` (so ``û`` lies in the plane
   and all three links are coplanar); ``'POLE'``: the same with ``pole - O``; ``'NORMAL'`` (a plane that
   follows the body): ``n`` is the given ``normal`` (the rest bend-plane normal carried by the chain's
   parent) made perpendicular to ``a``, and ``b = n × a``, so the carried normal keeps its orientation.
   ``bend_toward=False`` flips ``b`` (the middle joint goes to the other side; ``n`` flips with it).
3. Seed 001 in that plane with the target at ``(|P_T - O|, 0)``: ``θ0`` from ``a`` toward ``b``, the
   elbow's exterior angle ``θ1``; the closest pose when out of reach.
4. The wrist angle ``θ2`` is the turn from link 2 to ``û``, in the same sense as ``θ1``.

When the plane is undefined (``û``, the pole or the carried normal along the base→wrist line or zero, or the
wrist on the base) the caller's ``fallback_normal`` (the previous sample's ``normal``, or the rest
pose's) is used, made perpendicular to ``a``; the answer is always finite. Near those directions the
plane is defined but ill-conditioned: within an angle ``δ`` of the line, a change ``ε`` in the wrist's
direction turns the plane by up to ``ε/δ``, so sampling noise or a target passing close by spins the
middle joint about the line. ``singular_tolerance=δ`` counts such samples as undefined too (fallback
used, ``degenerate`` set), so a caller that passes the previous sample's plane as the fallback holds
the plane through the cone instead of following the spin. For display, ``yaw`` is the azimuth of ``a``
about +Z (from +X toward +Y), ``elevation`` its angle above the XY plane and ``roll`` (``β``) the turn
about ``a`` from the vertical plane through ``a`` to the bend plane.
"""
import math
from typing import NamedTuple

import numpy as np

from . import _ops
from ._ops import add, combine, cross, dot, norm, normalize_or, reject, scale, sub
from ._validate import as_float_array
from .errors import SolverInputError
from .two_bone import hinge_core

PLANES = ("TARGET", "POLE", "NORMAL")
# |P_T - O| at or below this fraction of the chain's size counts as "the wrist is on the base".
_AXIS_TOLERANCE = 1e-12
# A reference (û, the pole, the carried normal) within this angle (radians; its sine, really) of the
# base→wrist line leaves the plane undefined, whatever the caller's singular_tolerance.
_PLANE_TOLERANCE = 1e-9
# Samples per pass in a batch: each temporary array stays in the CPU cache.
_CHUNK = 8192


class ThreeLinkSolution(NamedTuple):
    """The solved chain; leading dimensions are the samples' (none for a single sample)."""

    directions: np.ndarray  # (..., 3, 3): unit direction of links 1, 2, 3
    joints: np.ndarray  # (..., 4, 3): base O, middle joint, wrist, tip
    normal: np.ndarray  # (..., 3): bend-plane normal n = a × b
    reachable: np.ndarray  # (...): the tip reached the target
    miss: np.ndarray  # (...): distance from the tip to the target (0 where reachable)
    degenerate: np.ndarray  # (...): the plane was undefined and the fallback normal was used
    yaw: np.ndarray  # θy
    elevation: np.ndarray
    theta0: np.ndarray  # θ0: link 1 from the base→wrist line, toward the middle joint's side
    theta1: np.ndarray  # θ1: exterior angle at the middle joint (0 = straight)
    theta2: np.ndarray  # θ2: wrist angle, link 2 to link 3, same sense as θ1
    roll: np.ndarray  # β


def _core(ops, base, l1, l2, l3, target, up, plane, reference, reference_length, sign, fallback,
          plane_tolerance=_PLANE_TOLERANCE, carry=None):
    """The solve, on component tuples (see _ops). ``sign`` is +1 toward the reference, -1 away.

    ``reference`` (of length ``reference_length``; ``up`` itself for ``'TARGET'``) is a vector whose
    part perpendicular to ``a`` gives the side ``b``, or for ``'NORMAL'`` a carried normal ``N``: then
    ``b ∥ N × a`` (that is ``reject(N, a) × a``), so ``n = a × b`` is ``N`` made perpendicular to ``a``.
    Either way the plane is undefined where the reference is within ``plane_tolerance`` (a sine) of the
    line. ``up`` is unit; ``fallback`` is non-zero, normalised only if some sample needs it. ``carry``
    (a batch that is a sequence; see :func:`_carrier`) turns the fallback of each sample whose plane is undefined
    into the normal of the last sample before it whose plane is defined.

    In a batch every arithmetic operation here is one numpy pass over a chunk, so the formulas are the
    closed forms with the fewest operations (see the comments); both backends run them.
    """
    wrist_target = sub(target, scale(up, l3))
    base_to_wrist = sub(wrist_target, base)
    distance_squared = dot(base_to_wrist, base_to_wrist)
    distance = ops.sqrt(distance_squared)
    size = l1 + l2 + l3 + distance

    def unit_fallback():
        return scale(fallback, 1.0 / norm(ops, fallback))

    def in_fallback_plane():
        """The wrist on the base: lay the line along û within the fallback plane."""
        unit = unit_fallback()
        return normalize_or(ops, reject(up, unit), lambda: _ops.any_perpendicular(ops, unit))[0]

    axis, has_axis = normalize_or(ops, base_to_wrist, in_fallback_plane, size, _AXIS_TOLERANCE, distance)

    # The side b, unit and signed in one scaling; n = a × b and b itself is n × a.
    if plane == "NORMAL":
        side = cross(reference, axis)
    else:
        reference_along = dot(reference, axis)
        side = sub(reference, scale(axis, reference_along))
    side_length = norm(ops, side)
    has_plane = (side_length > plane_tolerance * reference_length) & has_axis
    up_in_plane = None  # (û·a, û·b), for θ2
    if ops.all_true(has_plane):
        in_plane = scale(side, sign / side_length)
        normal = cross(axis, in_plane)
        if plane == "TARGET":  # û·a is at hand, and û·b = sign·|reject(û, a)|²/|reject(û, a)|
            up_in_plane = reference_along, sign * side_length
        if carry is not None:  # the next chunk's undefined planes keep this chunk's last one
            carry.note(normal)
    else:
        in_plane = scale(side, sign / ops.where(has_plane, side_length, 1.0))
        defined_normal = cross(axis, in_plane)
        if carry is not None:
            fallback = carry(has_plane, defined_normal, fallback)
            if not ops.all_true(has_axis):  # a wrist on the base lies in the plane it keeps
                axis, _ = normalize_or(ops, base_to_wrist, in_fallback_plane, size, _AXIS_TOLERANCE, distance)
        fallback_normal, _ = normalize_or(ops, reject(unit_fallback(), axis),
                                          lambda: _ops.any_perpendicular(ops, axis))
        normal = _ops.select(ops, has_plane, defined_normal, fallback_normal)
        in_plane = _ops.select(ops, has_plane, in_plane, cross(normal, axis))

    # Seed 001 with the target on +a and the middle joint on +b.
    theta0, theta1, reachable, (cos1, sin1), (cos2, sin2) = hinge_core(ops, l1, l2, distance, distance_squared)
    link1 = combine(axis, cos1, in_plane, sin1)
    cos12, sin12 = cos1 * cos2 - sin1 * sin2, sin1 * cos2 + cos1 * sin2
    link2 = combine(axis, cos12, in_plane, sin12)
    elbow = add(base, scale(link1, l1))
    wrist = add(elbow, scale(link2, l2))
    tip = add(wrist, scale(up, l3))
    miss = norm(ops, sub(tip, target))

    # θ2 = atan2((û × link2)·n, link2·û); with link2 = cos12·a + sin12·b, (û × link2)·n = û·(link2 × n)
    # and link2 × n = sin12·a - cos12·b.
    up_a, up_b = up_in_plane or (dot(up, axis), dot(up, in_plane))
    theta2 = ops.atan2(sin12 * up_a - cos12 * up_b, cos12 * up_a + sin12 * up_b)
    # β = atan2((v × n)·a, v·n) = atan2(v·b, v·n), v = (a_y, -a_x, 0) the vertical plane's normal (its
    # length, the horizontal part of a, cancels in atan2), or any perpendicular when a is vertical.
    horizontal = ops.sqrt(axis[0] * axis[0] + axis[1] * axis[1])
    vertical = horizontal > 1e-9
    if ops.all_true(vertical):
        roll = ops.atan2(axis[1] * in_plane[0] - axis[0] * in_plane[1], axis[1] * normal[0] - axis[0] * normal[1])
    else:
        vertical_normal = _ops.select(ops, vertical, (axis[1], -axis[0], axis[2] * 0.0),
                                      _ops.any_perpendicular(ops, axis))
        roll = ops.atan2(dot(vertical_normal, in_plane), dot(vertical_normal, normal))
    angles = (ops.atan2(axis[1], axis[0]), ops.atan2(axis[2], horizontal), theta0, theta1, theta2, roll)
    return (link1, link2, up), (base, elbow, wrist, tip), normal, reachable, miss, ops.logical_not(has_plane), angles


def _plane_tolerance(singular_tolerance):
    """The sine threshold for ``_core`` from the caller's angle, checked."""
    try:
        angle = float(singular_tolerance)
    except (TypeError, ValueError):
        raise SolverInputError(f"singular_tolerance must be an angle in radians, not {singular_tolerance!r}") from None
    if not 0.0 <= angle <= math.pi / 2:
        raise SolverInputError(f"singular_tolerance must be between 0 and pi/2 radians (got {angle:g})")
    return max(math.sin(angle), _PLANE_TOLERANCE)


def _check(lengths_finite, lengths_min, points_finite, up_length, fallback_length):
    """The shared verdict on validated quantities (floats or numpy reductions)."""
    if not lengths_finite:
        raise SolverInputError("link lengths must be finite")
    if lengths_min < 0.0:
        raise SolverInputError(f"link lengths must not be negative (got {lengths_min:g})")
    for name, finite in points_finite.items():
        if not finite:
            raise SolverInputError(f"{name} must be finite (got NaN or infinity)")
    if not up_length > 0.0:
        raise SolverInputError("the up vector is zero: give the target a non-zero scale on its up axis")
    if not fallback_length > 0.0:
        raise SolverInputError("the fallback normal is zero")


def solve_three_link(base, lengths, target, up, *, plane="TARGET", pole=None, normal=None, bend_toward=True,
                     fallback_normal=(1.0, 0.0, 0.0), singular_tolerance=0.0, carry_plane=False):
    """Solve a three-link chain so its tip reaches ``target`` and its last link points along ``up``.

    ``base``, ``target``, ``up``, ``pole``, ``normal`` and ``fallback_normal`` are points/vectors of
    shape ``(..., 3)``; ``lengths`` is ``(..., 3)`` (``l1, l2, l3``); ``bend_toward`` is a bool (or
    array): the middle joint goes to the side of the base→wrist line that ``up`` (``'TARGET'``) or the
    pole (``'POLE'``) is on, or for ``'NORMAL'`` to the side ``n × a`` (``n``: the carried hinge normal
    ``normal`` made perpendicular to the base→wrist axis ``a``); with False, to the other side.
    ``singular_tolerance`` (radians): a plane reference within this angle of the base→wrist line counts
    as undefined, so ``fallback_normal`` is used and ``degenerate`` set (see the module's docstring).
    Everything broadcasts over the leading dimensions. ``up`` need not be unit length, nor ``normal``.
    ``carry_plane``: the samples are a sequence (one leading dimension, frames in order): a sample whose plane is
    undefined keeps the plane of the last sample before it whose plane is defined (its ``normal``, taken as the
    fallback), and the samples before the first defined one take ``fallback_normal``; the same, bit for bit, as
    solving those samples again with that normal as their fallback.
    Raises :class:`SolverInputError` on invalid input.
    """
    tolerance = _plane_tolerance(singular_tolerance)
    points = {name: as_float_array(value, name)
              for name, value in _points(plane, base, target, up, pole, normal, fallback_normal).items()}
    lengths = as_float_array(lengths, "lengths")
    for name, array in list(points.items()) + [("lengths", lengths)]:
        if array.ndim == 0 or array.shape[-1] != 3:
            raise SolverInputError(f"{name} must have 3 components (shape (..., 3)); got shape {array.shape}")
    bend = np.asarray(bend_toward, dtype=bool)
    batch = np.broadcast_shapes(bend.shape, lengths.shape[:-1], *(array.shape[:-1] for array in points.values()))
    if batch == ():
        solution = _solve_one(plane, *lengths.tolist(), {name: tuple(array.tolist()) for name, array in points.items()},
                              bool(bend), tolerance)
        return ThreeLinkSolution(*(np.array(field) if isinstance(field, tuple) else np.float64(field)
                                   if isinstance(field, float) else np.bool_(field) for field in solution))
    if carry_plane and len(batch) != 1:
        raise SolverInputError(f"carry_plane needs a sequence of samples (shape (N, 3)); got batch shape {batch}")
    return _solve_batch(plane, lengths, points, bend, batch, tolerance, carry_plane)


def solve_one(base, lengths, target, up, *, plane="TARGET", pole=None, normal=None, bend_toward=True,
              fallback_normal=(1.0, 0.0, 0.0), singular_tolerance=0.0):
    """:func:`solve_three_link` for one sample on plain Python floats: 3-sequences in, a ThreeLinkSolution
    of plain values out (vectors as tuples, ``directions`` and ``joints`` as tuples of them).

    The same math and the same checks as a single sample of :func:`solve_three_link`, without numpy: a
    live solve pays for every array it builds (issue 11)."""
    tolerance = _plane_tolerance(singular_tolerance)
    try:
        vectors = {name: tuple(map(float, value))
                   for name, value in _points(plane, base, target, up, pole, normal, fallback_normal).items()}
        l1, l2, l3 = map(float, lengths)
    except (TypeError, ValueError) as error:
        raise SolverInputError(f"the inputs must be numbers ({error})") from None
    if any(len(vector) != 3 for vector in vectors.values()):
        raise SolverInputError("points and vectors must have 3 components")
    return _solve_one(plane, l1, l2, l3, vectors, bool(bend_toward), tolerance)


def solve_floats(base, lengths, target, up, *, plane, pole=None, normal=None, bend_toward=True, fallback_normal,
                 tolerance):
    """:func:`solve_one` for a caller whose inputs are Python floats already (3-tuples, ``lengths`` three floats,
    ``bend_toward`` a bool): the same checks of their values, without converting them again (a live solve's
    inputs come from Blender as floats; issue 11). ``tolerance``: :func:`plane_tolerance` of the singular angle."""
    l1, l2, l3 = lengths
    return _solve_one(plane, l1, l2, l3, _points(plane, base, target, up, pole, normal, fallback_normal), bend_toward,
                      tolerance)


def plane_tolerance(singular_tolerance):
    """:func:`solve_floats`' ``tolerance`` for a ``singular_tolerance`` in radians (see :func:`solve_three_link`)."""
    return _plane_tolerance(singular_tolerance)


def _points(plane, base, target, up, pole, normal, fallback_normal):
    """The point and vector inputs by name, after checking the plane has what it needs."""
    if plane not in PLANES:
        raise SolverInputError(f"plane must be one of {PLANES}, not {plane!r}")
    if plane == "POLE" and pole is None:
        raise SolverInputError("plane 'POLE' needs a pole point")
    if plane == "NORMAL" and normal is None:
        raise SolverInputError("plane 'NORMAL' needs a normal (the carried hinge normal)")
    points = {"base": base, "target": target, "up vector": up, "fallback normal": fallback_normal}
    if plane == "POLE":
        points["pole"] = pole
    if plane == "NORMAL":
        points["normal"] = normal
    return points


def _reference(ops, plane, rows, base, up):
    """The plane's reference vector for ``_core`` and its length."""
    if plane == "POLE":
        pole = sub(rows["pole"], base)
        return pole, norm(ops, pole)
    if plane == "NORMAL":
        return rows["normal"], norm(ops, rows["normal"])
    return up, 1.0


def _solve_one(plane, l1, l2, l3, vectors, bend, tolerance):
    """One sample: plain floats through the same math (see _ops); vectors by name, as float 3-tuples."""
    up, fallback = vectors["up vector"], vectors["fallback normal"]
    up_length, fallback_length = math.sqrt(dot(up, up)), math.sqrt(dot(fallback, fallback))
    # One sum is finite when every component is (or, rarely, overflows from huge finite ones: then each is looked at).
    finite = math.isfinite(sum(map(sum, vectors.values())))
    _check(math.isfinite(l1 + l2 + l3), min(l1, l2, l3),
           {} if finite else {name: all(map(math.isfinite, vector)) for name, vector in vectors.items()}, up_length,
           fallback_length)
    base = vectors["base"]
    up = scale(up, 1.0 / up_length)
    reference, reference_length = _reference(_ops.FLOAT, plane, vectors, base, up)
    links, joints, normal, reachable, miss, degenerate, angles = _core(
        _ops.FLOAT, base, l1, l2, l3, vectors["target"], up, plane, reference, reference_length,
        1.0 if bend else -1.0, fallback, tolerance)
    return ThreeLinkSolution(links, joints, normal, bool(reachable), float(miss), bool(degenerate), *angles)


def _carrier():
    """``_core``'s ``carry`` for the chunks of one sequence, in order: a sample whose plane is undefined takes the
    normal of the last sample before it, in this chunk or an earlier one, whose plane is defined, as its fallback.
    A chunk whose planes are all defined calls ``carry.note`` instead (it needs no fallback), or the chunk after it
    would carry an older normal."""
    last = [None]  # the last defined normal of the chunks so far, as 3 floats

    def carry(has_plane, normals, fallback):
        count = len(has_plane)
        index = np.maximum.accumulate(np.where(has_plane, np.arange(count), -1))
        before = index < 0  # no defined plane yet in this chunk: an earlier chunk's, else the sample's own fallback
        taken = np.maximum(index, 0)
        carried = tuple(np.where(before, component if last[0] is None else last[0][axis], normal[taken])
                        for axis, (component, normal) in enumerate(zip(fallback, normals)))
        if index[-1] >= 0:
            last[0] = tuple(float(normal[index[-1]]) for normal in normals)
        return carried

    def note(normals):
        """A chunk whose planes are all defined: its last normal is the one carried on."""
        last[0] = tuple(float(normal[-1]) for normal in normals)

    carry.note = note
    return carry


def _solve_batch(plane, lengths, points, bend, batch, tolerance, carry_plane=False):
    """A batch, in chunks that stay in the CPU cache: each chunk's inputs are copied into contiguous
    component rows, solved, and written straight into the outputs (whole-batch temporaries would each
    be a fresh, page-faulting allocation, and whole-batch transposes memory-bound copies)."""
    count = math.prod(batch)
    names = ["base", "target", "up vector"] + {"POLE": ["pole"], "NORMAL": ["normal"]}.get(plane, [])
    flat = {name: np.broadcast_to(points[name], batch + (3,)).reshape(count, 3) for name in names}
    flat["lengths"] = np.broadcast_to(lengths, batch + (3,)).reshape(count, 3)
    fallback = points["fallback normal"]
    fallback_components = np.moveaxis(fallback, -1, 0)
    _check(bool(np.isfinite(flat["lengths"]).all()), flat["lengths"].min(initial=0.0),
           {name: bool(np.isfinite(points[name]).all()) for name in names + ["fallback normal"]}, 1.0,
           dot(fallback_components, fallback_components).min())
    # Only degenerate samples read the fallback: strided views, never copied.
    fallback = np.broadcast_to(fallback, batch + (3,)).reshape(count, 3)
    sign = 1.0 if bend.all() else -1.0 if not bend.any() else np.broadcast_to(
        np.where(bend, 1.0, -1.0), batch).reshape(count)

    directions = np.empty((count, 3, 3))
    joints = np.empty((count, 4, 3))
    normals = np.empty((count, 3))
    reachable = np.empty(count, dtype=bool)
    degenerate = np.empty(count, dtype=bool)
    scalars = np.empty((7, count))  # miss and the six angles
    carry = _carrier() if carry_plane else None
    for start in range(0, count, _CHUNK):
        part = slice(start, min(start + _CHUNK, count))
        rows = {name: tuple(np.ascontiguousarray(flat[name][part].T)) for name in flat}
        up = rows["up vector"]
        up_length = np.sqrt(dot(up, up))
        _check(True, 0.0, {}, up_length.min(), 1.0)
        up = scale(up, 1.0 / up_length)
        base = rows["base"]
        reference, reference_length = _reference(_ops.NUMPY, plane, rows, base, up)
        links, chain_joints, normal, reachable[part], miss, degenerate[part], angles = _core(
            _ops.NUMPY, base, *rows["lengths"], rows["target"], up, plane, reference, reference_length,
            sign if isinstance(sign, float) else sign[part], tuple(fallback[part].T), tolerance, carry)
        for axis in range(3):
            for index, vector in enumerate(links):
                directions[part, index, axis] = vector[axis]
            for index, vector in enumerate(chain_joints):
                joints[part, index, axis] = vector[axis]
            normals[part, axis] = normal[axis]
        for index, value in enumerate((miss,) + angles):
            scalars[index, part] = value

    return ThreeLinkSolution(
        directions.reshape(batch + (3, 3)), joints.reshape(batch + (4, 3)), normals.reshape(batch + (3,)),
        reachable.reshape(batch), scalars[0].reshape(batch), degenerate.reshape(batch),
        *(row.reshape(batch) for row in scalars[1:]))
