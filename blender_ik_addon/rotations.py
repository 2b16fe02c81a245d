"""Rotation matrices to Blender's rotation channels, vectorised (numpy only, no bpy).

Blender's conventions: quaternions are ``(w, x, y, z)``; Euler order ``'XYZ'`` means X is applied first,
so ``R = Rz·Ry·Rx``; axis-angle is ``(angle, x, y, z)``. The Euler conversion is Blender's own
``mat3_normalized_to_eulO`` (both of its solutions), written for arrays of matrices.

Continuity for keys: quaternions keep the hemisphere of their predecessor; Euler triples take, of the
two equivalent solutions, the one nearest the previous key, each angle within π of it; axis-angle values keep the
sign of their predecessor's axis, the angle within π of it.
"""
import math

import numpy as np

EULER_ORDERS = ("XYZ", "XZY", "YXZ", "YZX", "ZXY", "ZYX")
# Blender's RotOrderInfo: the axes (i, j, k) and the parity of each order.
_EULER_AXES = {"XYZ": (0, 1, 2, False), "XZY": (0, 2, 1, True), "YXZ": (1, 0, 2, True),
               "YZX": (1, 2, 0, False), "ZXY": (2, 0, 1, False), "ZYX": (2, 1, 0, True)}
_GIMBAL = 16.0 * np.finfo(np.float32).eps


def channel_count(mode):
    return 3 if mode in EULER_ORDERS else 4


def matrix_to_quaternion(matrix):
    """(..., 3, 3) rotation matrices -> (..., 4) unit quaternions (w, x, y, z), w >= 0."""
    m = np.asarray(matrix, dtype=np.float64)
    shape = m.shape[:-2]
    m00, m01, m02, m10, m11, m12, m20, m21, m22 = np.ascontiguousarray(m.reshape(-1, 9).T)  # each entry contiguous
    count = len(m00)
    # Shepperd: row b of this symmetric matrix is 4·q_b·q; take the row of the largest q_b² (its diagonal)
    # for accuracy everywhere. Stored entry by entry ((4, 4, N)), so each is written in one contiguous pass.
    k = np.empty((4, 4, count))
    k[0, 0] = 1.0 + m00 + m11 + m22
    k[1, 1] = 1.0 + m00 - m11 - m22
    k[2, 2] = 1.0 - m00 + m11 - m22
    k[3, 3] = 1.0 - m00 - m11 + m22
    k[0, 1] = k[1, 0] = m21 - m12
    k[0, 2] = k[2, 0] = m02 - m20
    k[0, 3] = k[3, 0] = m10 - m01
    k[1, 2] = k[2, 1] = m01 + m10
    k[1, 3] = k[3, 1] = m02 + m20
    k[2, 3] = k[3, 2] = m12 + m21
    diagonal = k[(0, 1, 2, 3), (0, 1, 2, 3)]
    q = k[np.argmax(diagonal, axis=0), :, np.arange(count)]  # (N, 4): each sample's chosen row
    q /= np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]
    q *= np.where(q[..., :1] < 0.0, -1.0, 1.0)  # w >= 0 (x·-1 is exactly -x)
    return q.reshape(shape + (4,))


def matrix_to_euler_pair(matrix, order):
    """(..., 3, 3) -> the two equivalent Euler triples (..., 3) of Blender's mat3_normalized_to_eulO."""
    i, j, k, parity = _EULER_AXES[order]
    m = np.asarray(matrix, dtype=np.float64)

    def c(col, row):  # Blender indexes mat[col][row]
        return m[..., row, col]

    cy = np.hypot(c(i, i), c(i, j))
    regular = cy > _GIMBAL
    first = np.empty(m.shape[:-2] + (3,))
    second = np.empty_like(first)
    first[..., i] = np.where(regular, np.arctan2(c(j, k), c(k, k)), np.arctan2(-c(k, j), c(j, j)))
    first[..., j] = np.arctan2(-c(i, k), cy)
    first[..., k] = np.where(regular, np.arctan2(c(i, j), c(i, i)), 0.0)
    second[..., i] = np.where(regular, np.arctan2(-c(j, k), -c(k, k)), first[..., i])
    second[..., j] = np.where(regular, np.arctan2(-c(i, k), -cy), first[..., j])
    second[..., k] = np.where(regular, np.arctan2(-c(i, j), -c(i, i)), first[..., k])
    if parity:
        first, second = -first, -second
    return first, second


def matrix_to_euler(matrix, order):
    """Blender's choice of the two: the one with the smaller sum of absolute angles."""
    first, second = matrix_to_euler_pair(matrix, order)
    take_second = np.abs(second).sum(-1) < np.abs(first).sum(-1)
    return np.where(take_second[..., None], second, first)


def quaternion_to_axis_angle(q):
    """(..., 4) -> (..., 4) as (angle, x, y, z); the identity gives (0, 0, 1, 0) like Blender."""
    q = np.asarray(q, dtype=np.float64)
    sin_half = np.linalg.norm(q[..., 1:], axis=-1)
    angle = 2.0 * np.arctan2(sin_half, q[..., 0])
    safe = np.where(sin_half > 1e-12, sin_half, 1.0)
    axis = np.where((sin_half > 1e-12)[..., None], q[..., 1:] / safe[..., None], [0.0, 1.0, 0.0])
    return np.concatenate([angle[..., None], axis], -1)


def continuous_quaternions(q, previous=None):
    """Flip signs so each quaternion is in the hemisphere of the one before (the first: of ``previous``).
    ``q``: (F, ..., 4), continuous over F (the other axes are independent sequences, e.g. bones);
    ``previous``: (..., 4) or None."""
    q = np.asarray(q, dtype=np.float64)
    if len(q) == 0:
        return q.copy()
    steps = np.einsum("...i,...i->...", q[1:], q[:-1])
    first = np.ones(q.shape[1:-1])
    if previous is not None:
        first = np.where(np.einsum("...i,...i->...", q[0], np.asarray(previous, dtype=np.float64)) >= 0.0, 1.0, -1.0)
    signs = np.cumprod(np.concatenate([first[None], np.where(steps < 0.0, -1.0, 1.0)]), axis=0)
    return q * signs[..., None]


def continuous_axis_angles(q, previous=None):
    """(F, ..., 4) quaternions -> (F, ..., 4) axis-angle values (angle, x, y, z) continuous over F.

    ``(θ, a)`` and ``(-θ, -a)`` are one rotation: each axis takes the sign nearest the last defined one before it
    (the first: ``previous``'s), so a hinge that turns through its rest angle (the axis of ``v`` reverses as ``v``
    passes through zero) keeps its axis and its angle goes through zero, instead of the axis flipping between two
    keys, which Blender would interpolate through a swing of the whole bone. The angle is then brought within π of
    the one before (a turn of 2π about one axis changes nothing), the first within π of ``previous``'s. An identity
    keeps the axis before it (or ``previous``'s if it has one, else Y)."""
    q = np.asarray(q, dtype=np.float64)
    if len(q) == 0:
        return np.empty(q.shape)
    v = q[..., 1:]
    length = np.linalg.norm(v, axis=-1)
    defined = length > 1e-12
    unit = v / np.where(defined, length, 1.0)[..., None]
    unit[~defined] = 0.0
    # The axis of the last defined frame before each frame (the first: previous's), to take each sign against.
    positions = np.arange(len(q)).reshape((-1,) + (1,) * (q.ndim - 2))
    last = np.maximum.accumulate(np.where(defined, positions, -1), axis=0)
    before = np.concatenate([np.full((1,) + last.shape[1:], -1), last[:-1]])
    start = np.zeros(q.shape[1:-1] + (3,)) if previous is None else np.asarray(previous, dtype=np.float64)[..., 1:]
    reference = np.where((before >= 0)[..., None],
                         np.take_along_axis(unit, np.maximum(before, 0)[..., None], axis=0), start)
    steps = np.where(defined & (np.einsum("...i,...i->...", unit, reference) < 0.0), -1.0, 1.0)
    signs = np.cumprod(steps, axis=0)
    angle = 2.0 * np.arctan2(length * signs, q[..., 0])
    axis = unit * signs[..., None]
    # (A zero axis, which Blender plays as no rotation, is not kept: Y, as Blender's identity has.)
    fallback = np.where((np.linalg.norm(start, axis=-1) > 1e-12)[..., None], start, [0.0, 1.0, 0.0])
    filled = np.take_along_axis(axis, np.maximum(last, 0)[..., None], axis=0)
    axis = np.where(defined[..., None], axis, np.where((last >= 0)[..., None], filled, fallback))
    if previous is not None:
        angle = np.unwrap(np.concatenate([np.asarray(previous, dtype=np.float64)[..., :1][None][..., 0], angle]),
                          axis=0)[1:]
    else:
        angle = np.unwrap(angle, axis=0)
    return np.concatenate([angle[..., None], axis], -1)


def _wrapped_distance(a, b):
    """Sum over the three angles of |a - b| taken modulo 2π into [-π, π]."""
    return np.abs((a - b + math.pi) % (2.0 * math.pi) - math.pi).sum(-1)


def continuous_eulers(matrices, order, previous=None):
    """(F, ..., 3, 3) -> (F, ..., 3) Euler triples, each the solution nearest its predecessor over F (no ±2π
    jumps); the other axes are independent sequences.

    The first key is matched to ``previous`` when given (e.g. the bone's current rotation). Of the two
    equivalent triples per frame, the second is the first mapped by ``(x+π, π-y, z+π)``, which keeps
    wrapped distances; so "stay on the same branch as the previous key" depends only on neighbouring
    frames, and the sequential choice becomes a cumulative parity. ``np.unwrap`` then brings each angle
    within π of the one before.
    """
    first, second = matrix_to_euler_pair(matrices, order)
    if len(first) == 0:
        return first
    if previous is None:
        previous = matrix_to_euler(matrices[:1], order)[0]
    previous = np.asarray(previous, dtype=np.float64)
    start_second = _wrapped_distance(second[0], previous) < _wrapped_distance(first[0], previous)
    flips = _wrapped_distance(first[1:], second[:-1]) < _wrapped_distance(first[1:], first[:-1])
    on_second = np.cumsum(np.concatenate([np.asarray(start_second)[None], flips]), axis=0) % 2 == 1
    chosen = np.where(on_second[..., None], second, first)
    return np.unwrap(np.concatenate([previous[None], chosen]), axis=0)[1:]


def matrices_to_channels(matrices, mode, previous=None):
    """(F, ..., 3, 3) rotations -> (F, ..., channels) values for a bone's ``rotation_mode``, continuous over F.

    ``previous`` (..., channels) is the value the first key should be continuous with (or None)."""
    if mode in EULER_ORDERS:
        return continuous_eulers(matrices, mode, previous)
    if mode == "AXIS_ANGLE":
        previous_q = None
        if previous is not None:
            previous = np.asarray(previous, dtype=np.float64)
            half = 0.5 * previous[..., :1]
            previous_q = np.concatenate([np.cos(half), np.sin(half) * previous[..., 1:]], -1)
        return continuous_axis_angles(continuous_quaternions(matrix_to_quaternion(matrices), previous_q), previous)
    if mode == "QUATERNION":
        return continuous_quaternions(matrix_to_quaternion(matrices), previous)
    raise ValueError(f"unknown rotation mode {mode!r}")


# Rotations bones_to_channels converts at a time (frames × bones): a chunk's temporaries stay small enough for the
# allocator to hand the same memory back chunk after chunk, where whole-range temporaries would be fresh memory,
# page-faulted in on every bake (a millisecond at 3,000 frames; issue 11), and for the caches to hold them.
CHUNK_ROTATIONS = 1536


def bones_to_channels(matrices, modes, previous):
    """(F, B, 3, 3) rotations of B bones -> per bone, (F, channels) values in its rotation mode (``modes``),
    continuous over F from its ``previous`` value. Bones of the same mode are converted together, CHUNK_ROTATIONS
    rotations at a time, each chunk continuous from the last values of the one before (as one whole pass would
    be)."""
    converted = [None] * len(modes)
    count = len(matrices)
    for mode in dict.fromkeys(modes):
        group = [index for index, other in enumerate(modes) if other == mode]
        values = np.empty((count, len(group), channel_count(mode)))
        last = np.stack([previous[index] for index in group])
        frames = max(1, CHUNK_ROTATIONS // len(group))
        for start in range(0, count, frames):
            chunk = matrices[start:start + frames]
            # All bones in one mode (the usual case): the matrices as they are, not a copy of them.
            values[start:start + len(chunk)] = matrices_to_channels(
                chunk if len(group) == len(modes) else chunk[:, group], mode, last)
            last = values[start + len(chunk) - 1]
        for column, index in enumerate(group):
            converted[index] = values[:, column]
    return converted


# Closed forms, entry by entry: a few elementwise operations on (...,) arrays instead of stacking and
# multiplying (..., 3, 3) arrays, which costs more than the arithmetic on the few frames of a short bake.
# Entries that are 0 or 1 are the Python ints, so products skip them exactly (x·1 = x, x + 0 = x).

def _axis_entries(axis, c, s):
    if axis == "X":
        return [[1, 0, 0], [0, c, -s], [0, s, c]]
    if axis == "Y":
        return [[c, 0, s], [0, 1, 0], [-s, 0, c]]
    return [[c, -s, 0], [s, c, 0], [0, 0, 1]]


def _product(a, b):
    """a·b of 3×3 nested lists whose entries are arrays or the ints 0 and 1."""
    result = []
    for row in a:
        entries = []
        for column in range(3):
            total = 0
            for k in range(3):
                x, y = row[k], b[k][column]
                if isinstance(x, int) and x == 0 or isinstance(y, int) and y == 0:
                    continue
                term = y if isinstance(x, int) else x if isinstance(y, int) else x * y
                total = term if isinstance(total, int) and total == 0 else total + term
            entries.append(total)
        result.append(entries)
    return result


def _fill(shape, entries):
    out = np.empty(shape + (3, 3))
    for i in range(3):
        for j in range(3):
            out[..., i, j] = entries[i][j]
    return out


def euler_to_matrix(angles, order="XYZ"):
    """(..., 3) Euler angles (x, y, z) -> (..., 3, 3); order 'XYZ' applies X first: R = Rz·Ry·Rx."""
    angles = np.asarray(angles, dtype=np.float64)
    result = None
    for axis in order:
        angle = angles[..., "XYZ".index(axis)]
        rotation = _axis_entries(axis, np.cos(angle), np.sin(angle))
        result = rotation if result is None else _product(rotation, result)
    return _fill(angles.shape[:-1], result)


def quaternion_to_matrix(q):
    """(..., 4) quaternions (w, x, y, z), normalised first as Blender does -> (..., 3, 3). A zero quaternion (its
    length zero in float32, as Blender computes it) is Blender's (0, 1, 0, 0), half a turn about X, not the identity."""
    q = np.asarray(q, dtype=np.float64)
    length = np.sqrt(np.einsum("...i,...i->...", q, q))[..., None]
    q32 = q.astype(np.float32)
    zero = (np.einsum("...i,...i->...", q32, q32) == 0.0)[..., None]
    q = np.where(zero, [0.0, 1.0, 0.0, 0.0], q / np.where(zero | (length == 0.0), 1.0, length))
    w, x, y, z = np.moveaxis(q, -1, 0)
    xx, yy, zz, xy, xz, yz, xw, yw, zw = x * x, y * y, z * z, x * y, x * z, y * z, x * w, y * w, z * w
    return _fill(q.shape[:-1], [[1 - 2 * (yy + zz), 2 * (xy - zw), 2 * (xz + yw)],
                                [2 * (xy + zw), 1 - 2 * (xx + zz), 2 * (yz - xw)],
                                [2 * (xz - yw), 2 * (yz + xw), 1 - 2 * (xx + yy)]])


def axis_angle_to_matrix(values):
    """(..., 4) as (angle, x, y, z) -> (..., 3, 3); a zero axis is the identity."""
    values = np.asarray(values, dtype=np.float64)
    half = 0.5 * values[..., 0]
    axis = values[..., 1:]
    length = np.linalg.norm(axis, axis=-1, keepdims=True)
    unit = np.where(length > 0.0, axis / np.where(length > 0.0, length, 1.0), 0.0)
    q = np.concatenate([np.where(length[..., 0] > 0.0, np.cos(half), 1.0)[..., None], unit * np.sin(half)[..., None]], -1)
    return quaternion_to_matrix(q)


def channels_to_matrix(values, mode):
    """Channel values of a rotation mode -> (..., 3, 3)."""
    if mode in EULER_ORDERS:
        return euler_to_matrix(values, mode)
    if mode == "AXIS_ANGLE":
        return axis_angle_to_matrix(values)
    return quaternion_to_matrix(values)
