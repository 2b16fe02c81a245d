"""One implementation of the math, two backends.

The solvers are written on plain arithmetic over *component tuples* ``(x, y, z)`` whose components are
either Python floats (a single sample: a live solve) or numpy arrays (a batch: a bake). Arithmetic
operators work on both; the few functions that differ (``sqrt``, ``atan2``, ``where``...) come from
an ops namespace. Every division is guarded, so neither backend ever meets a zero divisor or a NaN.

A single 3D solve through numpy would spend ~100 µs in ufunc call overhead on 1-element arrays; the
float backend runs the very same code in a few µs.
"""
import math
from types import SimpleNamespace

import numpy as np

NUMPY = SimpleNamespace(
    sqrt=np.sqrt,
    atan2=np.arctan2,
    acos=np.arccos,
    sin=np.sin,
    cos=np.cos,
    abs=np.abs,
    where=np.where,
    maximum=np.maximum,
    minimum=np.minimum,
    logical_not=np.logical_not,
    all_true=lambda condition: bool(np.all(condition)),
)


def _where(condition, if_true, if_false):
    return if_true if condition else if_false


def _abs(value):
    return value if value >= 0.0 else -value


FLOAT = SimpleNamespace(
    sqrt=math.sqrt,
    atan2=math.atan2,
    acos=math.acos,
    sin=math.sin,
    cos=math.cos,
    abs=_abs,
    where=_where,
    maximum=max,
    minimum=min,
    logical_not=lambda value: not value,
    all_true=bool,
)


def clip(ops, value, low, high):
    return ops.minimum(ops.maximum(value, low), high)


def dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def sub(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def scale(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


def combine(a, sa, b, sb):
    """``a·sa + b·sb``."""
    return (a[0] * sa + b[0] * sb, a[1] * sa + b[1] * sb, a[2] * sa + b[2] * sb)


def norm(ops, a):
    return ops.sqrt(dot(a, a))


def select(ops, condition, a, b):
    return (ops.where(condition, a[0], b[0]), ops.where(condition, a[1], b[1]), ops.where(condition, a[2], b[2]))


def choose(ops, ok, value, make_fallback):
    """``value`` where ``ok``, else ``make_fallback()``, which is only built if some sample needs it."""
    if ops.all_true(ok):
        return value
    return select(ops, ok, value, make_fallback())


def reject(a, unit):
    """The part of ``a`` perpendicular to the unit vector ``unit``."""
    return sub(a, scale(unit, dot(a, unit)))


def any_perpendicular(ops, unit):
    """A unit vector perpendicular to ``unit``: ``unit × X``, or ``unit × Y`` when ``unit`` is near X."""
    near_x = ops.abs(unit[0]) > 0.9
    zero = unit[0] * 0.0
    candidate = select(ops, near_x, (-unit[2], zero, unit[0]), (zero, unit[2], -unit[1]))
    return scale(candidate, 1.0 / norm(ops, candidate))


def normalize_or(ops, a, make_fallback, relative_to=1.0, tolerance=1e-9, length=None):
    """``a / |a|``, or the unit vector ``make_fallback()`` where ``|a| <= tolerance·relative_to``.

    Returns ``(unit, ok)``; ``ok`` is False where the fallback was taken. ``length``: ``|a|``, when
    the caller has it already.
    """
    if length is None:
        length = norm(ops, a)
    ok = length > tolerance * relative_to
    if ops.all_true(ok):
        return (a[0] / length, a[1] / length, a[2] / length), ok
    safe = ops.where(ok, length, 1.0)
    return select(ops, ok, scale(a, 1.0 / safe), make_fallback()), ok
