"""Seed 000's 3D three-link solve: tip on target, last link along û, bend plane (target axis, pole or
carried normal), both bends, closest pose, degenerate and near-singular planes, batch == single calls,
the seed's angles, bad input."""
import math

import numpy as np
import pytest

from blender_ik_addon.solver import (SolverInputError, plane_tolerance, solve_floats, solve_one,
                                     solve_planar_three_link, solve_three_link, wrap_angle)

N = 5000
ANGLES = ("yaw", "elevation", "theta0", "theta1", "theta2", "roll")
MODES = ("TARGET", "POLE", "NORMAL")


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def rotate(v, axis, angle):
    """Rodrigues: ``v`` turned by ``angle`` about the unit ``axis``."""
    c, s = np.cos(angle)[..., None], np.sin(angle)[..., None]
    return v * c + np.cross(axis, v) * s + axis * dot(axis, v)[..., None] * (1 - c)


@pytest.fixture
def problem():
    rng = np.random.default_rng(11)
    base = rng.normal(0, 2, (N, 3))
    lengths = rng.uniform(0.1, 2.0, (N, 3))
    target = base + rng.normal(0, 1.5, (N, 3))
    up = rng.normal(0, 1, (N, 3)) * rng.uniform(0.2, 3.0, (N, 1))  # not unit on purpose
    return base, lengths, target, up


def plane_case(mode, base, up, seed=5):
    """The solver's plane arguments for ``mode``, and ``side(axis)``: the side the middle joint goes to
    with bend_toward=True (its part perpendicular to the base→wrist axis is what counts)."""
    rng = np.random.default_rng(seed)
    shape = np.shape(base)
    if mode == "TARGET":
        return {}, lambda axis: unit(up)
    if mode == "POLE":
        pole = base + rng.normal(0, 3, shape)
        return dict(plane="POLE", pole=pole), lambda axis: pole - base
    # A carried hinge normal, not unit on purpose; the middle joint goes to n × a.
    carried = rng.normal(0, 1, shape) * rng.uniform(0.2, 3.0, shape[:-1] + (1,))
    return dict(plane="NORMAL", normal=carried), lambda axis: np.cross(carried, axis)


def reference_of(mode, kwargs, base, up):
    """The vector whose angle to the base→wrist line decides whether the plane is defined."""
    return {"TARGET": lambda: up, "POLE": lambda: kwargs.get("pole", base) - base,
            "NORMAL": lambda: kwargs.get("normal")}[mode]()


def check_chain(solution, base, lengths, target, up):
    """What holds for every answer, reached or not."""
    directions, joints = solution.directions, solution.joints
    np.testing.assert_allclose(np.linalg.norm(directions, axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(directions[..., 2, :], unit(up), atol=1e-12)  # last link along û, always
    np.testing.assert_allclose(joints[..., 0, :], base, atol=1e-12)
    for i in range(3):
        np.testing.assert_allclose(joints[..., i + 1, :] - joints[..., i, :],
                                   directions[..., i, :] * lengths[..., i, None], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(solution.normal, axis=-1), 1.0, atol=1e-12)
    # Links 1 and 2 (the hinge) always lie in the bend plane.
    assert np.abs(dot(directions[..., :2, :], solution.normal[..., None, :])).max() < 1e-12
    np.testing.assert_allclose(solution.miss, np.linalg.norm(joints[..., 3, :] - target, axis=-1), atol=1e-12)
    for field in solution:
        assert np.all(np.isfinite(field))


@pytest.mark.parametrize("bend_toward", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_tip_on_target_hinge_in_the_plane_middle_joint_on_its_side(problem, mode, bend_toward):
    base, lengths, target, up = problem
    kwargs, side = plane_case(mode, base, up)
    solution = solve_three_link(base, lengths, target, up, bend_toward=bend_toward, **kwargs)
    check_chain(solution, base, lengths, target, up)
    reached = solution.reachable
    assert reached.sum() > N // 4 and (~reached).sum() > N // 10
    scale = lengths.sum(-1) + np.linalg.norm(target - base, axis=-1)
    assert np.all(solution.miss[reached] < 1e-12 * scale[reached])
    assert not solution.degenerate.any()  # random references are never on the line
    # The plane: normal = a × b with b the reference's side of the base→wrist line a, flipped when
    # bending away. So û ('TARGET') or the pole ('POLE') lies in it, and for 'NORMAL' the normal is the
    # carried one made perpendicular to a, keeping its orientation when bending toward.
    wrist = target - unit(up) * lengths[:, 2:3]
    axis = unit(wrist - base)
    reference_side = side(axis)
    reference_side = reference_side - axis * dot(reference_side, axis)[:, None]
    sign = 1.0 if bend_toward else -1.0
    np.testing.assert_allclose(solution.normal, sign * unit(np.cross(axis, reference_side)), atol=1e-9)
    if mode == "NORMAL":
        carried = kwargs["normal"]
        made_perpendicular = unit(carried - axis * dot(carried, axis)[:, None])
        np.testing.assert_allclose(solution.normal, sign * made_perpendicular, atol=1e-9)
    # Base, middle joint and wrist in that plane (and for 'TARGET' the tip too: û is in it).
    offsets = solution.joints - base[:, None, :]
    in_plane = 4 if mode == "TARGET" else 3
    assert np.abs(dot(offsets[:, :in_plane], solution.normal[:, None, :])).max() < 1e-11
    # Bend side: the middle joint on the reference's side of the base→wrist line (or the other side).
    elbow_side = dot(offsets[:, 1], reference_side)
    bent = lengths[:, 0] * np.sin(solution.theta0) > 1e-6  # the middle joint off the base→wrist line
    assert bent.sum() > N // 5
    assert np.all((elbow_side[bent] > 0) == bend_toward)


def test_reach_flag_and_closest_pose(problem):
    base, lengths, target, up = problem
    solution = solve_three_link(base, lengths, target, up)
    wrist = target - unit(up) * lengths[:, 2:3]
    distance = np.linalg.norm(wrist - base, axis=-1)
    l1, l2 = lengths[:, 0], lengths[:, 1]
    gap = np.maximum.reduce([distance - (l1 + l2), np.abs(l1 - l2) - distance, np.zeros(N)])
    np.testing.assert_array_equal(solution.reachable, gap <= 1e-10 * (l1 + l2))
    # The last link keeps û, so the best the tip can do is the wrist's gap to its ring.
    np.testing.assert_allclose(solution.miss, gap, atol=1e-11)


def test_pole_plane_puts_the_middle_joint_on_the_pole_side(problem):
    base, lengths, target, up = problem
    rng = np.random.default_rng(5)
    pole = base + rng.normal(0, 3, (N, 3))
    solution = solve_three_link(base, lengths, target, up, plane="POLE", pole=pole)
    check_chain(solution, base, lengths, target, up)
    reached = solution.reachable
    assert np.all(solution.miss[reached] < 1e-11)
    # Base, middle joint, wrist and pole in one plane; the middle joint on the pole's side.
    wrist = solution.joints[:, 2]
    assert np.abs(dot(pole - base, solution.normal)).max() < 1e-11
    axis = unit(wrist - base)
    pole_side = (pole - base) - axis * dot(pole - base, axis)[:, None]
    bent = lengths[:, 0] * np.sin(solution.theta0) > 1e-6
    assert np.all(dot(solution.joints[bent, 1] - base[bent], pole_side[bent]) > 0)
    away = solve_three_link(base, lengths, target, up, plane="POLE", pole=pole, bend_toward=False)
    assert np.all(dot(away.joints[bent, 1] - base[bent], pole_side[bent]) < 0)


def test_in_the_bend_plane_it_is_seed_002(problem):
    """Seeds 000 and 002 agree: the 3D answer, in plane coordinates, is the planar answer."""
    base, lengths, target, up = problem
    s = solve_three_link(base, lengths, target, up)
    axis = unit(s.joints[:, 2] - base)
    side = np.cross(s.normal, axis)
    local = target - base
    phi = np.arctan2(dot(unit(up), side), dot(unit(up), axis))
    q0, q1, q2, reachable = solve_planar_three_link(*lengths.T, dot(local, axis), dot(local, side), phi, False)
    np.testing.assert_array_equal(reachable, s.reachable)
    ok = s.reachable
    np.testing.assert_allclose(wrap_angle(q0 - s.theta0)[ok], 0.0, atol=1e-9)
    np.testing.assert_allclose(wrap_angle(q1 + s.theta1)[ok], 0.0, atol=1e-9)
    np.testing.assert_allclose(wrap_angle(q2 + s.theta2)[ok], 0.0, atol=1e-9)


@pytest.mark.parametrize("mode", MODES)
def test_the_seeds_angles_rebuild_the_chain(problem, mode):
    """Yaw, elevation and roll place the bend plane; θ0, θ1, θ2 turn the links within it (seed 000's order).

    ``θ2`` turns link 2 to û's projection on the bend plane, which is û itself where û lies in the plane
    ('TARGET').
    """
    base, lengths, target, up = problem
    kwargs, _ = plane_case(mode, base, up)
    s = solve_three_link(base, lengths, target, up, **kwargs)
    axis = np.stack([np.cos(s.elevation) * np.cos(s.yaw), np.cos(s.elevation) * np.sin(s.yaw),
                     np.sin(s.elevation)], -1)
    np.testing.assert_allclose(axis, unit(s.joints[:, 2] - base), atol=1e-9)
    vertical_normal = unit(np.stack([np.sin(s.yaw), -np.cos(s.yaw), np.zeros(N)], -1))
    normal = rotate(vertical_normal, axis, s.roll)
    np.testing.assert_allclose(normal, s.normal, atol=1e-9)
    link1 = rotate(axis, normal, s.theta0)
    link2 = rotate(link1, normal, -s.theta1)
    np.testing.assert_allclose(link1, s.directions[:, 0], atol=1e-9)
    np.testing.assert_allclose(link2, s.directions[:, 1], atol=1e-9)
    link3 = s.directions[:, 2]
    np.testing.assert_allclose(rotate(link2, normal, -s.theta2), unit(link3 - normal * dot(link3, normal)[:, None]),
                               atol=1e-9)


def test_degenerate_planes_use_the_fallback_and_stay_finite():
    base = np.zeros(3)
    lengths = np.array([1.0, 1.0, 0.5])
    fallback = np.array([0.3, 0.0, 1.0])
    up = np.array([1.0, 0.0, 0.0])
    # û along the base→wrist line.
    along = solve_three_link(base, lengths, [2.0, 0.0, 0.0], up, fallback_normal=fallback)
    assert along.degenerate and along.reachable and along.miss < 1e-12
    np.testing.assert_allclose(along.normal, [0.0, 0.0, 1.0], atol=1e-12)  # fallback made ⟂ to the line
    # Fallback itself along the line: any perpendicular, still finite.
    worst = solve_three_link(base, lengths, [2.0, 0.0, 0.0], up, fallback_normal=up)
    assert worst.degenerate and worst.reachable and abs(dot(worst.normal, up)) < 1e-12
    # The wrist on the base (target one l3 along û from it): folded, on target, finite.
    on_base = solve_three_link(base, lengths, [0.5, 0.0, 0.0], up, fallback_normal=fallback)
    assert on_base.degenerate and on_base.reachable and on_base.miss < 1e-12
    # The wrist on the base with û along a short fallback: any line perpendicular to it.
    nowhere = solve_three_link(base, lengths, [0.5, 0.0, 0.0], up, fallback_normal=[0.25, 0.0, 0.0])
    assert nowhere.degenerate and nowhere.reachable and nowhere.miss < 1e-12
    np.testing.assert_allclose(nowhere.normal, [1.0, 0.0, 0.0], atol=1e-12)
    # Pole on the line.
    pole = solve_three_link(base, lengths, [1.0, 1.0, 0.0], [0, 0, 1.0], plane="POLE", pole=[2, 2, -1.0],
                            fallback_normal=fallback)
    assert pole.degenerate and pole.reachable and pole.miss < 1e-12
    # Carried normal on the line (either way), zero, or with the wrist on the base.
    carried = [solve_three_link(base, lengths, [1.0, 1.0, 0.0], [0, 0, 1.0], plane="NORMAL", normal=normal,
                                fallback_normal=fallback) for normal in ([3, 3, -1.5], [-1, -1, 0.5], [0, 0, 0])]
    carried.append(solve_three_link(base, lengths, [0.0, 0.0, 0.5], [0, 0, 1.0], plane="NORMAL",
                                    normal=[0, 1.0, 0], fallback_normal=fallback))
    for solution in carried:
        assert solution.degenerate and solution.reachable and solution.miss < 1e-12
    line = np.array([2.0, 2.0, -1.0]) / 3.0  # the wrist is at (1, 1, -0.5)
    np.testing.assert_allclose(carried[0].normal, unit(fallback - line * dot(fallback, line)), atol=1e-12)
    # Unequal lengths with the wrist on the base: out of reach, closest pose, finite.
    short = solve_three_link(base, [1.0, 0.4, 0.5], [0.0, 0.0, 0.5], [0, 0, 1.0])
    assert not short.reachable and short.miss == pytest.approx(0.6)
    for solution in [along, worst, on_base, nowhere, pole, short] + carried:
        for field in solution:
            assert np.all(np.isfinite(field))


@pytest.mark.parametrize("mode", MODES)
def test_batch_equals_single_calls_and_broadcasts(problem, mode):
    base, lengths, target, up = (a[:200].copy() for a in problem)
    kwargs, _ = plane_case(mode, base, up)
    # Some degenerate planes in the mix: the reference along the base→wrist line.
    wrist = target - unit(up) * lengths[:, 2:3]
    if mode == "TARGET":
        up[::10] = target[::10] - base[::10]
    elif mode == "POLE":
        kwargs["pole"][::10] = base[::10] + 2.0 * (wrist[::10] - base[::10])
    else:
        kwargs["normal"][::10] = base[::10] - wrist[::10]
    bend = np.arange(200) % 3 == 0
    fallback = np.tile([0.0, 1.0, 0.0], (200, 1))
    batch = solve_three_link(base, lengths, target, up, bend_toward=bend, fallback_normal=fallback, **kwargs)
    assert batch.degenerate[::10].all() and batch.degenerate.sum() == 20
    for i in range(200):
        single = solve_three_link(base[i], lengths[i], target[i], up[i], bend_toward=bool(bend[i]),
                                  fallback_normal=fallback[i], **{k: v[i] if k != "plane" else v
                                                                  for k, v in kwargs.items()})
        for name, a, b in zip(single._fields, single, batch):
            if name in ANGLES:  # ±π is the same angle
                a, b = wrap_angle(a - b[i]), 0.0
            else:
                b = b[i]
            np.testing.assert_allclose(a, b, atol=1e-12, err_msg=name)
    # One base, one set of lengths and one plane reference for many targets.
    one = {k: v[0] if k != "plane" else v for k, v in kwargs.items()}
    shared = solve_three_link(base[0], lengths[0], target, up, **one)
    assert shared.directions.shape == (200, 3, 3) and shared.joints.shape == (200, 4, 3)
    grid = solve_three_link(base[0], lengths[0], target.reshape(20, 10, 3), up.reshape(20, 10, 3), **one)
    assert grid.directions.shape == (20, 10, 3, 3) and grid.reachable.shape == (20, 10)
    np.testing.assert_allclose(grid.directions.reshape(200, 3, 3), shared.directions, atol=0)


INVALID = [
    (dict(up=[0.0, 0.0, 0.0]), "up vector is zero"),
    (dict(target=[float("nan"), 0, 0]), "target must be finite"),
    (dict(base=[0, float("inf"), 0]), "base must be finite"),
    (dict(lengths=[1.0, -1.0, 1.0]), "negative"),
    (dict(lengths=[1.0, float("nan"), 1.0]), "finite"),
    (dict(lengths=[1.0, 1.0]), "3 components"),
    (dict(plane="SIDE"), "plane must be one of"),
    (dict(plane="POLE"), "needs a pole"),
    (dict(plane="POLE", pole=[0, 0, float("nan")]), "pole must be finite"),
    (dict(fallback_normal=[0.0, 0.0, 0.0]), "fallback normal is zero"),
    (dict(plane="NORMAL"), "needs a normal"),
    (dict(plane="NORMAL", normal=[0, float("nan"), 0]), "normal must be finite"),
    (dict(plane="NORMAL", normal=[1.0, 1.0]), "3 components"),
    (dict(singular_tolerance=-0.1), "singular_tolerance must be between"),
    (dict(singular_tolerance=2.0), "singular_tolerance must be between"),
    (dict(singular_tolerance="small"), "singular_tolerance must be an angle"),
]


@pytest.mark.parametrize("kwargs, message", INVALID)
@pytest.mark.parametrize("batched", [False, True])
def test_invalid_input_is_refused_with_a_clear_message(kwargs, message, batched):
    arguments = dict(base=[0.0, 0.0, 0.0], lengths=[1.0, 1.0, 1.0], target=[1.0, 1.0, 1.0], up=[0.0, 0.0, 1.0])
    arguments.update(kwargs)
    if batched:
        arguments = {k: (np.tile(v, (4, 1)) if k in ("base", "target", "up", "lengths", "pole", "normal") else v)
                     for k, v in arguments.items()}
    with pytest.raises(SolverInputError, match=message):
        solve_three_link(arguments.pop("base"), arguments.pop("lengths"), arguments.pop("target"),
                         arguments.pop("up"), **arguments)


@pytest.mark.parametrize("kwargs, message", [case for case in INVALID if case[1] != "3 components"])
def test_solve_floats_refuses_the_same_values(kwargs, message):
    """solve_floats (the add-on's one-sample path: inputs already floats) checks every value solve_one checks."""
    arguments = dict(base=(0.0, 0.0, 0.0), lengths=(1.0, 1.0, 1.0), target=(1.0, 1.0, 1.0), up=(0.0, 0.0, 1.0),
                     plane="TARGET", fallback_normal=(1.0, 0.0, 0.0))
    arguments.update(kwargs)
    with pytest.raises(SolverInputError, match=message):
        arguments["tolerance"] = plane_tolerance(arguments.pop("singular_tolerance", 0.0))
        solve_floats(arguments.pop("base"), arguments.pop("lengths"), arguments.pop("target"), arguments.pop("up"),
                     **arguments)


@pytest.mark.parametrize("mode", MODES)
def test_solve_floats_equals_solve_one(problem, mode):
    base, lengths, target, up = problem
    kwargs, _ = plane_case(mode, base, up)
    for index in range(20):
        one = {name: tuple(value[index].tolist()) if isinstance(value, np.ndarray) and value.ndim == 2 else value
               for name, value in kwargs.items()}
        one.setdefault("plane", "TARGET")
        tolerance = plane_tolerance(one.pop("singular_tolerance", 0.0))
        vectors = [tuple(array[index].tolist()) for array in (base, lengths, target, up)]
        floats = solve_floats(*vectors, tolerance=tolerance, fallback_normal=(1.0, 0.0, 0.0), **one)
        reference = solve_one(*vectors, fallback_normal=(1.0, 0.0, 0.0), **one)
        assert floats == reference  # bit for bit: the same math after the same checks


@pytest.mark.parametrize("mode", MODES)
def test_near_singular_planes_count_as_undefined_within_the_tolerance(problem, mode):
    """References within ``singular_tolerance`` of the base→wrist line use the fallback, the rest do not."""
    base, lengths, target, up = problem
    kwargs, _ = plane_case(mode, base, up)
    wrist = target - unit(up) * lengths[:, 2:3]
    axis = unit(wrist - base)
    # Tilt every reference to a random angle from the line (0 to 10°), about a random perpendicular.
    rng = np.random.default_rng(3)
    angle = rng.uniform(0.0, math.radians(10.0), N)
    turn = unit(np.cross(axis, rng.normal(size=(N, 3))))
    direction = rotate(axis, turn, angle) * np.where(rng.random(N) < 0.5, 1.0, -1.0)[:, None]
    reference = direction * rng.uniform(0.5, 2.0, (N, 1))
    if mode == "TARGET":
        # û itself moves the wrist; the target follows so the wrist stays put.
        up = reference
        target = wrist + unit(up) * lengths[:, 2:3]
    elif mode == "POLE":
        kwargs["pole"] = base + reference
    else:
        kwargs["normal"] = reference
    fallback = rng.normal(size=(N, 3))
    tolerance = math.radians(5.0)
    loose = solve_three_link(base, lengths, target, up, fallback_normal=fallback, **kwargs)
    strict = solve_three_link(base, lengths, target, up, fallback_normal=fallback, singular_tolerance=tolerance,
                              **kwargs)
    assert not loose.degenerate.any()
    clear = np.abs(angle - tolerance) > 1e-9
    np.testing.assert_array_equal(strict.degenerate[clear], (angle < tolerance)[clear])
    assert 0.3 * N < strict.degenerate.sum() < 0.7 * N
    held = strict.degenerate
    np.testing.assert_allclose(strict.normal[held], unit(fallback - axis * dot(fallback, axis)[:, None])[held],
                               atol=1e-9)
    for name in ("reachable", "miss", "yaw", "elevation", "theta0", "theta1"):  # the plane turns, the reach stays
        np.testing.assert_allclose(getattr(strict, name), getattr(loose, name), atol=1e-9, err_msg=name)
    for solution in (loose, strict):
        check_chain(solution, base, lengths, target, up)


# Undefined planes (and, among them, wrists on the base) in 40 samples. "after defined chunks": with chunks of 5,
# undefined runs that start a chunk right after chunks whose planes are all defined (0-4, 25-29), and one that
# fills a chunk (30-34) and is carried into the next.
UNDEFINED_LAYOUTS = {"runs": ([0, 1, 7, 8, 9, 10, 11, 23, 38, 39], [1, 9, 39]),
                     "after defined chunks": ([5, 6, 20, 30, 31, 32, 33, 34, 35, 39], [5, 30, 35])}


@pytest.mark.parametrize("layout", UNDEFINED_LAYOUTS)
@pytest.mark.parametrize("chunk", [8192, 5], ids=["one chunk", "chunks of 5"])
@pytest.mark.parametrize("mode", MODES)
def test_carried_planes_equal_solving_again_with_the_last_defined_normal(problem, mode, chunk, layout, monkeypatch):
    """carry_plane keeps, where a plane is undefined, the last defined one before it (the fallback before the
    first), in the one pass: bit for bit what solving those samples again with that normal as their fallback
    gives. Undefined runs at the start, in the middle, across chunk boundaries (after chunks with undefined
    planes and after chunks without) and at the end; some with the wrist on the base, which then lies in the
    kept plane."""
    from blender_ik_addon.solver import three_link
    monkeypatch.setattr(three_link, "_CHUNK", chunk)
    base, lengths, target, up = (a[:40].copy() for a in problem)
    kwargs, _ = plane_case(mode, base, up)
    undefined, on_base = UNDEFINED_LAYOUTS[layout]
    wrist = target - unit(up) * lengths[:, 2:3]
    for i in undefined:
        if i in on_base:  # the target one l3 along û from the base
            target[i] = base[i] + unit(up[i]) * lengths[i, 2]
        elif mode == "TARGET":
            up[i] = target[i] - base[i]
        elif mode == "POLE":
            kwargs["pole"][i] = base[i] + 2.0 * (wrist[i] - base[i])
        else:
            kwargs["normal"][i] = base[i] - wrist[i]
    fallback = np.random.default_rng(3).normal(size=(40, 3))
    carried = solve_three_link(base, lengths, target, up, fallback_normal=fallback, carry_plane=True, **kwargs)
    assert np.flatnonzero(carried.degenerate).tolist() == undefined

    first = solve_three_link(base, lengths, target, up, fallback_normal=fallback, **kwargs)
    last_defined = np.maximum.accumulate(np.where(first.degenerate, -1, np.arange(40)))
    kept = np.where((last_defined >= 0)[:, None], first.normal[np.maximum(last_defined, 0)], fallback)
    again = solve_three_link(base, lengths, target, up, fallback_normal=kept, **kwargs)
    expected = [np.where(first.degenerate.reshape((-1,) + (1,) * (np.ndim(a) - 1)), b, a)
                for a, b in zip(first, again)]
    for name, a, b in zip(carried._fields, carried, expected):
        assert np.array_equal(a, b), name
    with pytest.raises(SolverInputError, match="carry_plane needs a sequence"):
        solve_three_link(base[:4].reshape(2, 2, 3), lengths[0], target[:4].reshape(2, 2, 3), up[:4].reshape(2, 2, 3),
                         carry_plane=True)
