"""Seed 001's two-bone solve: forward kinematics back onto the target, the reach flag, bend side,
closest pose out of reach, every quadrant, zero-length bones, the origin, broadcasting; the 3D solve's
shortcut for a target on the x axis."""
import math

import numpy as np
import pytest

from blender_ik_addon.solver import SolverInputError, _ops, solve_two_bone
from blender_ik_addon.solver.two_bone import hinge_core, two_bone_core

RNG_SEED = 20261121


def forward(l1, l2, angle1, angle2):
    x = l1 * np.cos(angle1) + l2 * np.cos(angle1 + angle2)
    y = l1 * np.sin(angle1) + l2 * np.sin(angle1 + angle2)
    return x, y


def annulus_gap(l1, l2, distance):
    """How far a point at ``distance`` from the origin is from the reachable ring."""
    return np.maximum.reduce([distance - (l1 + l2), np.abs(l1 - l2) - distance, np.zeros_like(distance)])


@pytest.fixture
def random_problem():
    rng = np.random.default_rng(RNG_SEED)
    n = 20000
    l1 = rng.uniform(0.0, 3.0, n)
    l2 = rng.uniform(0.0, 3.0, n)
    x = rng.uniform(-7.0, 7.0, n)
    y = rng.uniform(-7.0, 7.0, n)
    return l1, l2, x, y


@pytest.mark.parametrize("bend_positive", [True, False])
def test_reached_targets_are_hit_and_the_rest_get_the_closest_pose(random_problem, bend_positive):
    l1, l2, x, y = random_problem
    angle1, angle2, reachable = solve_two_bone(l1, l2, x, y, bend_positive)
    distance = np.hypot(x, y)
    gap = annulus_gap(l1, l2, distance)
    end_x, end_y = forward(l1, l2, angle1, angle2)
    error = np.hypot(end_x - x, end_y - y)
    scale = l1 + l2 + distance
    assert reachable.sum() > 1000 and (~reachable).sum() > 1000
    np.testing.assert_array_equal(reachable, gap <= 1e-10 * (l1 + l2))
    # Reached: on the target. Not reached: exactly as far as the target is from the reachable ring.
    assert np.all(error[reachable] <= 1e-12 * scale[reachable])
    np.testing.assert_allclose(error, gap, rtol=0, atol=1e-12 * scale.max())
    if bend_positive:
        assert np.all(angle2 >= 0.0)
    else:
        assert np.all(angle2 <= 0.0)
    assert np.all(np.abs(angle2) <= math.pi) and np.all(np.abs(angle1) <= math.pi)


def test_closest_pose_is_no_worse_than_any_pose_on_a_grid():
    # An independent check of "closest": brute force over both joint angles.
    grid = np.linspace(-math.pi, math.pi, 721)
    a1, a2 = np.meshgrid(grid, grid)
    for l1, l2, x, y in [(1.0, 0.5, 3.0, 1.0), (1.0, 0.4, 0.1, -0.2), (0.3, 1.0, -0.1, 0.05), (1.0, 1.0, -5, -5)]:
        angle1, angle2, reachable = solve_two_bone(l1, l2, x, y)
        assert not reachable
        ex, ey = forward(l1, l2, angle1, angle2)
        gx, gy = forward(l1, l2, a1, a2)
        assert math.hypot(ex - x, ey - y) <= np.hypot(gx - x, gy - y).min() + 1e-12


@pytest.mark.parametrize("l1, l2", [(2.0, 1.0), (1.0, 2.0), (1.5, 1.5)])
def test_reach_flag_is_right_at_both_edges_of_the_ring(l1, l2):
    angles = np.linspace(-math.pi, math.pi, 64)
    outer, inner = l1 + l2, abs(l1 - l2)
    on_outer = solve_two_bone(l1, l2, outer * np.cos(angles), outer * np.sin(angles))[2]
    past_outer = solve_two_bone(l1, l2, outer * (1 + 1e-8) * np.cos(angles), outer * (1 + 1e-8) * np.sin(angles))[2]
    on_inner = solve_two_bone(l1, l2, inner * np.cos(angles), inner * np.sin(angles))[2]
    assert on_outer.all() and not past_outer.any() and on_inner.all()
    if inner > 0:
        inside = solve_two_bone(l1, l2, inner * (1 - 1e-8) * np.cos(angles), inner * (1 - 1e-8) * np.sin(angles))[2]
        assert not inside.any()


@pytest.mark.parametrize("quadrant_angle", np.arange(8) * math.pi / 4 + 0.1)
@pytest.mark.parametrize("bend_positive", [True, False])
def test_every_quadrant_and_both_bends(quadrant_angle, bend_positive):
    x, y = 1.7 * math.cos(quadrant_angle), 1.7 * math.sin(quadrant_angle)
    angle1, angle2, reachable = solve_two_bone(1.2, 0.9, x, y, bend_positive)
    assert reachable
    assert (angle2 > 0) == bend_positive
    end = forward(1.2, 0.9, angle1, angle2)
    assert math.hypot(end[0] - x, end[1] - y) < 1e-12
    # The other bend is the mirror image about the line to the target.
    other1, other2, _ = solve_two_bone(1.2, 0.9, x, y, not bend_positive)
    assert other2 == pytest.approx(-angle2, abs=1e-12)
    target_angle = math.atan2(y, x)
    mirrored = math.remainder(2 * target_angle - angle1 - other1, 2 * math.pi)
    assert mirrored == pytest.approx(0.0, abs=1e-12)


def test_zero_length_bones_reach_only_their_circle():
    for l1, l2 in [(0.0, 1.5), (1.5, 0.0)]:
        on = solve_two_bone(l1, l2, 0.0, -1.5)
        off = solve_two_bone(l1, l2, 0.3, 0.4)
        assert on[2] and not off[2]
        assert on[1] == 0.0 and off[1] == 0.0
        end = forward(l1, l2, on[0], on[1])
        assert math.hypot(end[0], end[1] + 1.5) < 1e-12
        end = forward(l1, l2, off[0], off[1])  # closest: toward the target
        assert math.hypot(end[0] - 0.9, end[1] - 1.2) < 1e-12
    angle1, angle2, reachable = solve_two_bone(0.0, 0.0, 1.0, 1.0)
    assert not reachable and np.isfinite([angle1, angle2]).all()
    assert solve_two_bone(0.0, 0.0, 0.0, 0.0)[2]


def test_target_on_the_origin():
    angle1, angle2, reachable = solve_two_bone(1.0, 1.0, 0.0, 0.0)
    assert reachable and abs(angle2) == pytest.approx(math.pi)
    end = forward(1.0, 1.0, angle1, angle2)
    assert math.hypot(*end) < 1e-12
    angle1, angle2, reachable = solve_two_bone(2.0, 0.5, 0.0, 0.0)
    assert not reachable and np.isfinite([angle1, angle2]).all()
    assert math.hypot(*forward(2.0, 0.5, angle1, angle2)) == pytest.approx(1.5)


def test_arguments_broadcast_and_match_scalar_calls(random_problem):
    l1, l2, x, y = (a[:300] for a in random_problem)
    bend = np.arange(300) % 2 == 0
    batch = solve_two_bone(l1[:, None], l2[:, None], x[:, None], y[:, None], bend[:, None])
    assert batch[0].shape == (300, 1)
    for i in range(300):
        single = solve_two_bone(float(l1[i]), float(l2[i]), float(x[i]), float(y[i]), bool(bend[i]))
        assert np.ndim(single[0]) == 0
        assert single[0] == batch[0][i, 0] and single[1] == batch[1][i, 0] and single[2] == batch[2][i, 0]
    fixed_lengths = solve_two_bone(1.0, 2.0, x, y)
    assert fixed_lengths[0].shape == x.shape


@pytest.mark.parametrize("arguments, message", [
    ((-1.0, 1.0, 0.5, 0.5), "negative"),
    ((1.0, float("nan"), 0.5, 0.5), "finite"),
    ((1.0, 1.0, float("inf"), 0.5), "finite"),
    ((1.0, 1.0, "a", 0.5), "number"),
])
def test_invalid_input_raises_the_solvers_own_value_error(arguments, message):
    with pytest.raises(SolverInputError, match=message) as error:
        solve_two_bone(*arguments)
    assert isinstance(error.value, ValueError)


def test_hinge_core_is_the_two_bone_solve_with_the_target_on_the_x_axis():
    """The 3D solve's shortcut (y = 0, middle joint on +y) against the general solve, every case mixed in:
    reachable, too far, too close, zero-length bones, the target on the origin."""
    rng = np.random.default_rng(13)
    n = 20000
    l1, l2 = rng.uniform(0.0, 2.0, (2, n))
    l1[::17], l2[::19] = 0.0, 0.0
    distance = rng.uniform(0.0, 4.5, n)
    distance[::23] = 0.0
    general = two_bone_core(_ops.NUMPY, l1, l2, distance, np.zeros(n), -1.0)
    special = hinge_core(_ops.NUMPY, l1, l2, distance, distance * distance)
    np.testing.assert_allclose(special[0], general[0], atol=1e-12)
    np.testing.assert_allclose(special[1], -general[1], atol=1e-12)
    np.testing.assert_array_equal(special[2], general[2])
    for got, want in zip(special[3] + special[4], general[3] + general[4]):
        np.testing.assert_allclose(got, want, atol=1e-12)
    assert special[2].sum() > n // 5 and (~special[2]).sum() > n // 5
