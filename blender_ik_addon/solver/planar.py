"""Seed 002: the planar three-link solve with an end-effector angle φ.

The last link must point at angle φ, so its base (the wrist) is fixed first:

    p2 = (x - l2·cos φ,  y - l2·sin φ)

then seed 001 solves links 0 and 1 onto ``p2`` (this is seed 002's ``atan(x'/y')`` done right, as
``atan2(y', x')``, with the bend sign carried by θ2's sign), and the last joint makes up the rest:

    q2 = φ - q0 - q1     (wrapped into [-π, π])

so ``q0 + q1 + q2 ≡ φ`` always, even when the wrist is out of reach.
"""
import numpy as np

from . import _ops
from ._validate import as_float_array, check_finite, check_lengths
from .two_bone import two_bone_core


def wrap_angle(angle):
    """Wrap into [-π, π]."""
    return np.arctan2(np.sin(angle), np.cos(angle))


def solve_planar_three_link(l0, l1, l2, x, y, phi, bend_positive=True):
    """Joint angles that put the chain's end at ``(x, y)`` with the last link at angle ``phi``.

    Arguments broadcast like numpy. Returns ``(q0, q1, q2, reachable)``: ``q1`` is in [-π, π] and
    ≥ 0 where ``bend_positive``; ``q0 + q1 + q2 ≡ phi`` (mod 2π); ``reachable`` is False where the
    wrist is out of reach of links 0 and 1, which then take the closest pose.
    """
    l0, l1, l2 = check_lengths(l0, l1, l2, names=["length 0", "length 1", "length 2"])
    x, y, phi = check_finite("target", as_float_array(x), as_float_array(y), as_float_array(phi))
    sign = np.where(np.asarray(bend_positive, dtype=bool), 1.0, -1.0)
    wrist_x = x - l2 * np.cos(phi)
    wrist_y = y - l2 * np.sin(phi)
    q0, q1, reachable, _, _ = two_bone_core(_ops.NUMPY, l0, l1, wrist_x, wrist_y, sign)
    q2 = wrap_angle(phi - q0 - q1)
    shape = np.broadcast_shapes(q0.shape, q1.shape, q2.shape, np.shape(reachable))
    return tuple(np.broadcast_to(value, shape)[()] for value in (q0, q1, q2, reachable))
