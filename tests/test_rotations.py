"""Vectorised rotation conversions against mathutils (Blender's own), and key continuity."""
import math

import numpy as np
import pytest

from blender_ik_addon import rotations


def random_matrices(n, seed=1):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], -2)


@pytest.fixture(scope="module")
def mathutils():
    import bpy  # noqa: F401  (mathutils comes with the bpy module)
    import mathutils
    return mathutils


def test_quaternions_match_mathutils(mathutils):
    matrices = random_matrices(500)
    ours = rotations.matrix_to_quaternion(matrices)
    for matrix, q in zip(matrices, ours):
        theirs = np.array(mathutils.Matrix(matrix.tolist()).to_quaternion())
        assert min(np.abs(q - theirs).max(), np.abs(q + theirs).max()) < 1e-6  # mathutils is float32
        np.testing.assert_allclose(mathutils.Quaternion(q.tolist()).to_matrix(), matrix, atol=1e-6)


@pytest.mark.parametrize("order", rotations.EULER_ORDERS)
def test_eulers_match_mathutils_in_every_order(mathutils, order):
    matrices = random_matrices(300, seed=hash(order) % 1000)
    first, second = rotations.matrix_to_euler_pair(matrices, order)
    chosen = rotations.matrix_to_euler(matrices, order)
    for matrix, a, b, c in zip(matrices, first, second, chosen):
        for euler in (a, b):
            back = np.array(mathutils.Euler(euler.tolist(), order).to_matrix())
            np.testing.assert_allclose(back, matrix, atol=1e-6)
        theirs = np.array(mathutils.Matrix(matrix.tolist()).to_euler(order))
        np.testing.assert_allclose(c, theirs, atol=1e-5)


def test_axis_angle_round_trip(mathutils):
    matrices = random_matrices(200)
    # 200 bones of one frame each: as a sequence of keys, unrelated rotations would take angles continuous with
    # one another, beyond what float32 mathutils rebuilds to 1e-6.
    values = rotations.matrices_to_channels(matrices[None], "AXIS_ANGLE")[0]
    for matrix, (angle, *axis) in zip(matrices, values):
        back = np.array(mathutils.Matrix.Rotation(angle, 3, mathutils.Vector(axis)))
        np.testing.assert_allclose(back, matrix, atol=1e-6)
    identity = rotations.matrices_to_channels(np.eye(3)[None], "AXIS_ANGLE")[0]
    np.testing.assert_allclose(identity, [0.0, 0.0, 1.0, 0.0])


def spin(angles, axis):
    c, s = np.cos(angles), np.sin(angles)
    z, o = np.zeros_like(angles), np.ones_like(angles)
    if axis == "Z":
        return np.stack([np.stack([c, -s, z], -1), np.stack([s, c, z], -1), np.stack([z, z, o], -1)], -2)
    return np.stack([np.stack([o, z, z], -1), np.stack([z, c, -s], -1), np.stack([z, s, c], -1)], -2)


def test_quaternion_keys_stay_in_one_hemisphere():
    matrices = spin(np.linspace(0, 6 * math.pi, 400), "Z")
    q = rotations.matrices_to_channels(matrices, "QUATERNION")
    assert np.all(np.einsum("ij,ij->i", q[1:], q[:-1]) > 0)
    flipped = rotations.matrices_to_channels(matrices[:5], "QUATERNION", previous=-q[0])
    assert np.dot(flipped[0], -q[0]) > 0


@pytest.mark.parametrize("order", rotations.EULER_ORDERS)
def test_euler_keys_have_no_jumps(order):
    angles = np.linspace(0, 6 * math.pi, 400)
    matrices = np.einsum("nij,njk->nik", spin(angles, "Z"), spin(0.3 * angles, "X"))
    values = rotations.matrices_to_channels(matrices, order)
    assert np.abs(np.diff(values, axis=0)).max() < 0.5
    # Still the same rotations.
    import mathutils
    for matrix, euler in zip(matrices[::37], values[::37]):
        np.testing.assert_allclose(np.array(mathutils.Euler(euler.tolist(), order).to_matrix()), matrix, atol=1e-6)
    # Continuous with the bone's current value: a previous angle near 2π keeps the keys near 2π.
    shifted = rotations.matrices_to_channels(matrices[:3], order, previous=values[0] + 2 * math.pi)
    np.testing.assert_allclose(shifted[0], values[0] + 2 * math.pi, atol=1e-9)


@pytest.mark.parametrize("mode", rotations.EULER_ORDERS + ("QUATERNION", "AXIS_ANGLE"))
def test_channels_to_matrix_matches_mathutils(mathutils, mode):
    rng = np.random.default_rng(4)
    for _ in range(50):
        if mode in rotations.EULER_ORDERS:
            values = rng.uniform(-4, 4, 3)
            theirs = mathutils.Euler(values.tolist(), mode).to_matrix()
        elif mode == "QUATERNION":
            values = rng.normal(size=4) * 2.0  # not unit: Blender normalises
            theirs = mathutils.Quaternion(values.tolist()).normalized().to_matrix()
        else:
            values = np.concatenate([[rng.uniform(-4, 4)], rng.normal(size=3)])
            theirs = mathutils.Matrix.Rotation(values[0], 3, mathutils.Vector(values[1:]).normalized())
        np.testing.assert_allclose(rotations.channels_to_matrix(values, mode), np.array(theirs), atol=1e-6)


def sequential_eulers(matrices, order, previous):
    """The plain per-key algorithm: of the two triples, the nearer to the previous key, each angle
    wrapped to within π of it."""
    first, second = rotations.matrix_to_euler_pair(matrices, order)
    reference, out = np.asarray(previous, dtype=float), []
    for a, b in zip(first, second):
        a = a + 2 * math.pi * np.round((reference - a) / (2 * math.pi))
        b = b + 2 * math.pi * np.round((reference - b) / (2 * math.pi))
        reference = b if np.abs(b - reference).sum() < np.abs(a - reference).sum() else a
        out.append(reference)
    return np.array(out)


@pytest.mark.parametrize("order", rotations.EULER_ORDERS)
@pytest.mark.parametrize("jumpy", [False, True])
def test_vectorised_euler_continuity_equals_the_sequential_algorithm(order, jumpy):
    rng = np.random.default_rng(8)
    if jumpy:
        matrices = random_matrices(300, seed=3)
    else:
        angles = np.cumsum(rng.normal(scale=0.2, size=(300, 3)), axis=0)
        matrices = rotations.euler_to_matrix(angles, "XYZ")
    previous = rng.uniform(-7, 7, 3)
    np.testing.assert_allclose(rotations.continuous_eulers(matrices, order, previous),
                               sequential_eulers(matrices, order, previous), atol=1e-9)


@pytest.mark.parametrize("jumpy", [False, True])
def test_bones_convert_chunk_by_chunk_as_in_one_pass(jumpy):
    """bones_to_channels converts CHUNK_ROTATIONS rotations at a time; each chunk continues from the one before, so
    the keys are those of one pass over the whole range: quaternions bit for bit, angles to float64 rounding."""
    modes = ["QUATERNION", "ZXY", "AXIS_ANGLE", "QUATERNION"]
    count = 2 * rotations.CHUNK_ROTATIONS + 37  # several chunks for every mode, the one-bone ones too
    rng = np.random.default_rng(11)
    if jumpy:
        matrices = random_matrices(count * len(modes), seed=4).reshape(count, len(modes), 3, 3)
    else:  # turning steadily through several turns, across the chunk boundaries
        angles = np.cumsum(rng.normal(scale=0.3, size=(count, len(modes), 3)), axis=0)
        matrices = rotations.euler_to_matrix(angles, "XYZ")
    previous = [np.array([-0.5, 0.5, -0.5, 0.5]), rng.uniform(-7, 7, 3), np.array([4.0, 0.0, 0.6, 0.8]),
                np.array([0.0, 0.0, 0.0, -1.0])]
    chunked = rotations.bones_to_channels(matrices, modes, previous)
    for bone, mode in enumerate(modes):
        whole = rotations.matrices_to_channels(matrices[:, bone], mode, previous[bone])
        if mode == "QUATERNION":
            np.testing.assert_array_equal(chunked[bone], whole)
        else:
            np.testing.assert_allclose(chunked[bone], whole, rtol=0, atol=1e-9)
