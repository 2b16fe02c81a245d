"""Seed 002's planar three-link solve, with its slips fixed."""
import math

import numpy as np
import pytest

from blender_ik_addon.solver import SolverInputError, solve_planar_three_link, wrap_angle


def forward(l0, l1, l2, q0, q1, q2):
    x = l0 * np.cos(q0) + l1 * np.cos(q0 + q1) + l2 * np.cos(q0 + q1 + q2)
    y = l0 * np.sin(q0) + l1 * np.sin(q0 + q1) + l2 * np.sin(q0 + q1 + q2)
    return x, y


@pytest.mark.parametrize("bend_positive", [True, False])
def test_end_lands_on_target_with_the_requested_angle(bend_positive):
    rng = np.random.default_rng(7)
    n = 20000
    l0, l1, l2 = rng.uniform(0.05, 2.0, (3, n))
    x, y = rng.uniform(-5, 5, (2, n))
    phi = rng.uniform(-4, 4, n)
    q0, q1, q2, reachable = solve_planar_three_link(l0, l1, l2, x, y, phi, bend_positive)
    # q0 + q1 + q2 ≡ φ always, reached or not.
    np.testing.assert_allclose(wrap_angle(q0 + q1 + q2 - phi), 0.0, atol=1e-12)
    assert np.all(q1 >= 0) if bend_positive else np.all(q1 <= 0)
    assert np.all(np.abs(q2) <= math.pi)
    end_x, end_y = forward(l0, l1, l2, q0, q1, q2)
    error = np.hypot(end_x - x, end_y - y)
    assert reachable.sum() > 2000 and (~reachable).sum() > 2000
    assert np.all(error[reachable] < 1e-12 * (l0 + l1 + l2 + np.hypot(x, y))[reachable])
    # Out of reach: the wrist is as close as the ring allows; the last link keeps its angle.
    wrist = np.hypot(x - l2 * np.cos(phi), y - l2 * np.sin(phi))
    gap = np.maximum.reduce([wrist - (l0 + l1), np.abs(l0 - l1) - wrist, np.zeros(n)])
    np.testing.assert_allclose(error, gap, atol=1e-11)


def test_matches_seed_002_formula_with_its_slips_fixed():
    # q1 = acos((x'² + y'² - l0² - l1²) / (2 l0 l1));  q0 = atan2(y', x') - atan2(l1 sin q1, l0 + l1 cos q1)
    rng = np.random.default_rng(3)
    for _ in range(500):
        l0, l1, l2 = rng.uniform(0.3, 1.5, 3)
        q = rng.uniform(-math.pi, math.pi, 3)
        x, y = forward(l0, l1, l2, *q)
        phi = q.sum()
        xp, yp = x - l2 * math.cos(phi), y - l2 * math.sin(phi)
        for sign in (1.0, -1.0):
            c = np.clip((xp * xp + yp * yp - l0 * l0 - l1 * l1) / (2 * l0 * l1), -1, 1)
            q1 = sign * math.acos(c)
            q0 = math.atan2(yp, xp) - math.atan2(l1 * math.sin(q1), l0 + l1 * math.cos(q1))
            got = solve_planar_three_link(l0, l1, l2, x, y, phi, sign > 0)
            assert got[3]
            assert got[1] == pytest.approx(q1, abs=1e-9)
            assert wrap_angle(got[0] - q0) == pytest.approx(0.0, abs=1e-9)


def test_zero_length_links_and_scalars():
    q0, q1, q2, reachable = solve_planar_three_link(1.0, 0.0, 0.5, 1.0, 0.5, math.pi / 2)
    assert reachable and q1 == 0.0
    assert np.ndim(q0) == 0
    x, y = forward(1.0, 0.0, 0.5, q0, q1, q2)
    assert math.hypot(x - 1.0, y - 0.5) < 1e-12


def test_invalid_input():
    with pytest.raises(SolverInputError, match="negative"):
        solve_planar_three_link(1.0, 1.0, -0.1, 1, 1, 0)
    with pytest.raises(SolverInputError, match="finite"):
        solve_planar_three_link(1.0, 1.0, 1.0, 1, 1, float("nan"))
