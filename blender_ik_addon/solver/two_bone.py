"""Seed 001: the analytic two-bone solve in 2D.

Bone 1 starts at the origin, bone 2 hangs off its end. For a target ``(x, y)``:

    cos θ2 = (x² + y² - l1² - l2²) / (2·l1·l2),  clamped to [-1, 1]     (law of cosines)
    θ2     = ±acos(cos θ2)                                              (the sign picks the bend side)
    θ1     = atan2(y·(l1 + l2·cos θ2) - x·l2·sin θ2,  x·(l1 + l2·cos θ2) + y·l2·sin θ2)

Clamping the cosine gives the closest pose when the target is out of reach: straight toward it when
too far, folded back when inside the inner radius ``|l1 - l2|``. With a zero-length bone the reachable
set is the circle of radius ``l1 + l2``; θ2 is then 0 and θ1 points at the target. ``atan2(0, 0) = 0``
covers a target on the origin.
"""
import numpy as np

from . import _ops
from ._validate import as_float_array, check_lengths, check_finite

# Reach is decided on distances, with this much slack relative to the chain length, so a target
# exactly on the ring's edge (up to rounding) counts as reached.
REACH_TOLERANCE = 1e-10
# Below this fraction of (l1 + l2)², 2·l1·l2 is treated as zero: a zero-length bone.
_ZERO_PRODUCT = 1e-30


def _reach_and_hinge(ops, l1, l2, distance, distance_squared):
    """Whether a target at ``distance`` is in reach (the ring between |l1 - l2| and l1 + l2, with a float
    slack) and the cosine of the middle joint's angle by the law of cosines, clamped: seed 001's closest
    pose out of reach (1 where a zero-length link leaves no hinge)."""
    total = l1 + l2
    slack = REACH_TOLERANCE * total
    reachable = (distance <= total + slack) & (distance >= ops.abs(l1 - l2) - slack)
    denominator = 2.0 * l1 * l2
    has_hinge = denominator > _ZERO_PRODUCT * total * total
    safe_denominator = ops.where(has_hinge, denominator, 1.0)
    cos2 = _ops.clip(ops, (distance_squared - l1 * l1 - l2 * l2) / safe_denominator, -1.0, 1.0)
    return reachable, ops.where(has_hinge, cos2, 1.0)


def _first_angle(ops, along, across):
    """θ1 = atan2(across, along), with its cosine and sine: (along, across) normalised, where atan2(0, 0) = 0
    gives (1, 0)."""
    radius = ops.sqrt(along * along + across * across)
    has_direction = radius > 0.0
    safe_radius = ops.where(has_direction, radius, 1.0)
    return ops.atan2(across, along), ops.where(has_direction, along / safe_radius, 1.0), across / safe_radius


def two_bone_core(ops, l1, l2, x, y, sign):
    """Shared by every solver: ``sign`` is +1.0 for θ2 ≥ 0, -1.0 for θ2 ≤ 0 (broadcastable).

    Returns ``(angle1, angle2, reachable, (cos1, sin1), (cos2, sin2))``: the 3D solve builds its link
    directions from the cosines and sines, which come free of extra trigonometric calls.
    """
    distance_squared = x * x + y * y
    reachable, cos2 = _reach_and_hinge(ops, l1, l2, ops.sqrt(distance_squared), distance_squared)
    angle2 = sign * ops.acos(cos2)
    sin2 = sign * ops.sqrt(1.0 - cos2 * cos2)

    adjacent = l1 + l2 * cos2
    opposite = l2 * sin2
    along = x * adjacent + y * opposite
    across = y * adjacent - x * opposite
    angle1, cos1, sin1 = _first_angle(ops, along, across)
    return angle1, angle2, reachable, (cos1, sin1), (cos2, sin2)


def hinge_core(ops, l1, l2, distance, distance_squared):
    """``two_bone_core`` for a target on +x at ``distance`` (≥ 0) with the middle joint on +y (sign -1),
    the 3D solve's case: the same formulas with ``y = 0``, without the terms that vanish.

    Returns ``(angle1, exterior, reachable, (cos1, sin1), (cos2, sin2))`` with ``exterior = -angle2 =
    acos(cos2) ≥ 0``; ``distance_squared`` is the caller's (it has it before the square root).
    """
    reachable, cos2 = _reach_and_hinge(ops, l1, l2, distance, distance_squared)
    exterior = ops.acos(cos2)
    bend = ops.sqrt(1.0 - cos2 * cos2)  # -sin2

    # along = x·adjacent + y·opposite, across = y·adjacent - x·opposite, with y = 0 and opposite = -l2·bend.
    along = distance * (l1 + l2 * cos2)
    across = distance * (l2 * bend)
    angle1, cos1, sin1 = _first_angle(ops, along, across)
    return angle1, exterior, reachable, (cos1, sin1), (cos2, -bend)


def solve_two_bone(l1, l2, x, y, bend_positive=True):
    """Angles that put the end of a two-bone chain at ``(x, y)``, or as close as it gets.

    Arguments broadcast like numpy. Returns ``(angle1, angle2, reachable)``: ``angle1`` is bone 1's
    angle from +x, ``angle2`` bone 2's angle relative to bone 1, in [-π, π], ≥ 0 where
    ``bend_positive`` and ≤ 0 elsewhere; ``reachable`` is False where the target is out of reach and
    the angles give the closest pose instead.
    """
    l1, l2 = check_lengths(l1, l2)
    x, y = check_finite("target", as_float_array(x), as_float_array(y))
    sign = np.where(np.asarray(bend_positive, dtype=bool), 1.0, -1.0)
    angle1, angle2, reachable, _, _ = two_bone_core(_ops.NUMPY, l1, l2, x, y, sign)
    shape = np.broadcast_shapes(np.shape(l1), np.shape(l2), np.shape(x), np.shape(y), np.shape(sign))
    return (np.broadcast_to(angle1, shape)[()], np.broadcast_to(angle2, shape)[()],
            np.broadcast_to(reachable, shape)[()])
