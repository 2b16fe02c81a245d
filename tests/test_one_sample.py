"""One sample (Live, Solve: chain.solve_one, on Python floats) and a batch (a bake: chain.solve_chain, numpy) are two
code paths over the same math; they must give the same rotations and solution, to float64 rounding."""
import itertools

import numpy as np
import pytest

from rigs import add_empty, build_arm, chain_length_world, random_rig, reachable_target

SAMPLES = 6


def _batch_and_singles(chain_module, chain, spec, bases, targets, poles):
    batch = chain_module.solve_chain(chain, bases, targets, spec, poles, carry_plane=False)
    singles = [chain_module.solve_one(chain, bases[i].tolist(), targets[i].tolist(), spec,
                                      None if poles is None else poles[i].tolist()) for i in range(len(bases))]
    return batch, singles


@pytest.mark.parametrize("seed, plane, bend, roll_axis", [
    (seed, *case) for seed, case in enumerate(itertools.product(
        ("PARENT", "TARGET", "POLE"), ("REST", "TOWARD", "AWAY"), ("NONE", "X")))])
def test_one_sample_equals_the_batch(blender, seed, plane, bend, roll_axis):
    bpy = blender
    from blender_ik_addon import chain as chain_module
    from blender_ik_addon.chain import ChainSpec

    rng = np.random.default_rng(seed)
    obj = random_rig(rng)
    target, pole = add_empty(), add_empty("Pole")
    spec = ChainSpec(tip_bone="b3", target=target, plane=plane, pole=pole if plane == "POLE" else None,
                     bend=bend, roll_axis=roll_axis)
    bpy.context.view_layer.update()
    chain = chain_module.read_chain(obj, "b3")
    base = chain_module.base_matrix(chain)
    targets, poles = [], []
    head = np.array(obj.matrix_world @ obj.pose.bones["b1"].head)
    for index in range(SAMPLES):
        location, target.rotation_euler = reachable_target(rng, obj)
        if index % 2:  # out of reach: three chain lengths away, in the same direction
            away = np.array(location) - head
            location = head + away / np.linalg.norm(away) * 3.0 * chain_length_world(obj)
        target.location = tuple(location)
        pole.location = tuple(rng.normal(scale=3.0, size=3))
        bpy.context.view_layer.update()
        goal, pole_matrix = chain_module.check_target(chain, spec)
        targets.append(goal)
        poles.append(np.array([row[3] for row in pole_matrix[:3]]) if pole_matrix is not None else None)
    bases = np.broadcast_to(base, (SAMPLES, 4, 4))
    targets = np.array(targets)
    poles = np.array(poles) if plane == "POLE" else None

    batch, singles = _batch_and_singles(chain_module, chain, spec, bases, targets, poles)
    assert not batch.solution.reachable.all() and batch.solution.reachable.any()  # both kinds of sample
    for index, single in enumerate(singles):
        np.testing.assert_allclose(np.array(single.rotations[0]), batch.rotations[index], rtol=0, atol=1e-12)
        for name, field in zip(single.solution._fields, single.solution):
            np.testing.assert_allclose(np.array(field[0], dtype=np.float64),
                                       np.array(getattr(batch.solution, name)[index], dtype=np.float64),
                                       rtol=0, atol=1e-12, err_msg=name)


def test_one_sample_through_solve_chain_comes_back_as_arrays(blender):
    """solve_chain of one sample goes through solve_one and keeps solve_chain's array contract."""
    bpy = blender
    from blender_ik_addon import chain as chain_module
    from blender_ik_addon.chain import ChainSpec

    rng = np.random.default_rng(5)
    obj = random_rig(rng)
    target = add_empty()
    target.location, target.rotation_euler = reachable_target(rng, obj)
    bpy.context.view_layer.update()
    spec = ChainSpec(tip_bone="b3", target=target)
    chain = chain_module.read_chain(obj, "b3")
    goal, _ = chain_module.check_target(chain, spec)
    one = chain_module.solve_chain(chain, chain_module.base_matrix(chain)[None], np.array(goal)[None], spec)
    assert one.rotations.shape == (1, 3, 3, 3)
    assert one.solution.joints.shape == (1, 4, 3) and one.solution.reachable.shape == (1,)
    current = chain_module.solve_current(chain, spec)
    np.testing.assert_allclose(one.rotations[0], np.array(current.rotations[0]), rtol=0, atol=1e-12)


def _sequence(rng, chain, base, plane, count):
    """``count`` goals (armature space) for a chain on ``base``: in reach, out of reach, and every fourth one on
    the line where ``plane`` is undefined (the up axis along the base-to-goal line for 'TARGET', the wrist along the
    rest hinge axis for 'PARENT'), built in float64 so that line is exact."""
    origin, size = base[:3, 3], sum(chain.floats.lengths)
    hinge = base[:3, :3] @ np.array(chain.floats.rest_normal)
    goals = np.zeros((count, 4, 4))
    goals[:, 3, 3] = 1.0
    for index in range(count):
        rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        rotation *= np.sign(np.linalg.det(rotation))
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        distance = size * (3.0 if index % 3 == 2 else rng.uniform(0.3, 0.8))
        location = origin + distance * direction
        if index % 4 == 3 and plane == "TARGET":  # Z (the up axis) along the line
            rotation[:, 2] = direction
            rotation[:, 0] = np.cross(rotation[:, 1], direction)
            rotation[:, 0] /= np.linalg.norm(rotation[:, 0])
            rotation[:, 1] = np.cross(direction, rotation[:, 0])
        elif index % 4 == 3:  # the wrist on the hinge axis
            location = origin + 0.5 * size * hinge + chain.floats.lengths[2] * rotation[:, 2]
        goals[index, :3, :3], goals[index, :3, 3] = rotation, location
    return goals


@pytest.mark.parametrize("count, plane", [(count, plane) for count in (2, 9, 40) for plane in ("TARGET", "PARENT")])
def test_a_few_samples_on_floats_equal_the_batch(blender, monkeypatch, count, plane):
    """Up to FEW_SAMPLES, solve_chain solves each sample on floats, and a long batch re-solves its few samples with
    an undefined plane the same way, carrying the last defined plane to them: the same rotations, solution and
    carried planes as the numpy batch (FEW_SAMPLES = 0) to float64 rounding."""
    bpy = blender
    from blender_ik_addon import chain as chain_module
    from blender_ik_addon.chain import ChainSpec

    rng = np.random.default_rng(count)
    obj = random_rig(rng)
    spec = ChainSpec(tip_bone="b3", target=add_empty(), plane=plane)
    bpy.context.view_layer.update()
    chain = chain_module.read_chain(obj, "b3")
    base = chain_module.base_matrix(chain)
    targets = _sequence(rng, chain, base, plane, count)
    bases = np.broadcast_to(base, (count, 4, 4))

    floats = chain_module.solve_chain(chain, bases, targets, spec)
    monkeypatch.setattr(chain_module, "FEW_SAMPLES", 0)
    batch = chain_module.solve_chain(chain, bases, targets, spec)

    if count > 2:  # an undefined plane after a defined one: the carried plane is exercised
        first = np.flatnonzero(~batch.solution.degenerate)[0]
        assert batch.solution.degenerate[first + 1:].any()
    np.testing.assert_allclose(floats.rotations, batch.rotations, rtol=0, atol=1e-12)
    for name, field in zip(batch.solution._fields, batch.solution):
        assert getattr(floats.solution, name).dtype == field.dtype and getattr(floats.solution, name).shape == field.shape
        np.testing.assert_allclose(getattr(floats.solution, name).astype(np.float64), field.astype(np.float64),
                                   rtol=0, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("undefined", [(5, 11), (2,)])
def test_a_pole_shared_by_every_sample_equals_it_given_per_sample(blender, undefined):
    """A (3,) pole, shared by every sample of a long batch in which a few samples' wrists lie on the base-to-pole
    line (their plane undefined: solved again, the plane carried to them): the same solve as that pole given per
    sample. Those few samples must not take components of the one pole for their poles."""
    bpy = blender
    from blender_ik_addon import chain as chain_module
    from blender_ik_addon.chain import ChainSpec

    rng = np.random.default_rng(len(undefined))
    obj = random_rig(rng)
    spec = ChainSpec(tip_bone="b3", target=add_empty(), plane="POLE", pole=add_empty("Pole"))
    bpy.context.view_layer.update()
    chain = chain_module.read_chain(obj, "b3")
    base = chain_module.base_matrix(chain)
    count = chain_module.FEW_SAMPLES + 4
    origin, scale = base[:3, 3], np.linalg.norm(base[:3, 0])
    lengths = chain.floats.lengths
    pole = origin + rng.normal(size=3) * scale * sum(lengths)
    toward = (pole - origin) / np.linalg.norm(pole - origin)
    side = np.cross(rng.normal(size=3), toward)
    side /= np.linalg.norm(side)
    targets = np.tile(np.eye(4), (count, 1, 1))
    for index in range(count):
        if index in undefined:  # toward the pole, its Z (the up axis) too: the wrist on the line, in reach
            targets[index, :3, :3] = np.column_stack([side, np.cross(toward, side), toward])
            targets[index, :3, 3] = origin + scale * (max(lengths[:2]) + lengths[2]) * toward
        else:
            targets[index, :3, 3] = origin + rng.normal(size=3) * scale * 0.4 * sum(lengths)
    bases = np.broadcast_to(base, (count, 4, 4))

    per_sample = chain_module.solve_chain(chain, bases, targets, spec, np.broadcast_to(pole, (count, 3)))
    shared = chain_module.solve_chain(chain, bases, targets, spec, pole)

    assert list(np.flatnonzero(per_sample.solution.degenerate)) == list(undefined)
    np.testing.assert_allclose(shared.rotations, per_sample.rotations, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(shared.solution.degenerate, per_sample.solution.degenerate)


@pytest.mark.parametrize("inherit_scale, inherit_rotation, local_location, connected", [
    *[(mode, True, True, False) for mode in ("FULL", "FIX_SHEAR", "AVERAGE", "NONE", "NONE_LEGACY", "ALIGNED")],
    ("FULL", False, True, False), ("FULL", True, False, False), ("NONE", False, False, False),
    ("FULL", True, True, True)])
def test_the_first_bones_base_is_blenders_and_stays_put_while_it_turns(blender, inherit_scale, inherit_rotation,
                                                                       local_location, connected):
    """``base_rows`` (A₁) times the first bone's own rotation is the matrix Blender evaluates for it, whatever the bone
    inherits from a turned, scaled, moved parent; and A₁ does not change to the bit while only that bone turns, so a
    live chain keeps the base rotation it derived from it (Inherit Scale "Aligned" excepted: there Blender applies the
    parent's scale after the bone's own transform)."""
    bpy = blender
    from mathutils import Euler, Matrix
    from blender_ik_addon import chain as chain_module

    obj = build_arm(connected=connected, rolls=(0.3, -0.4, 1.0))
    bone, first, root = obj.data.bones["b1"], obj.pose.bones["b1"], obj.pose.bones["root"]
    bone.inherit_scale, bone.use_inherit_rotation, bone.use_local_location = (inherit_scale, inherit_rotation,
                                                                              local_location)
    assert bone.use_connect == connected
    root.rotation_mode = first.rotation_mode = "XYZ"
    root.rotation_euler, root.location, root.scale = (0.3, -0.5, 0.2), (0.1, 0.2, -0.3), (1.3, 1.3, 1.3)
    first.location = (0.05, 0.1, -0.02)
    bases = []
    rng = np.random.default_rng(3)
    for _ in range(6):
        first.rotation_euler = tuple(rng.uniform(-1.5, 1.5, size=3))
        bpy.context.view_layer.update()
        chain = chain_module.read_chain(obj, "b3")
        base = Matrix(chain_module.base_rows(chain))
        rotation = Euler(first.rotation_euler, "XYZ").to_matrix().to_4x4()
        np.testing.assert_allclose(np.array(base @ rotation), np.array(first.matrix), rtol=0, atol=2e-6)
        bases.append(tuple(map(tuple, base)))
    assert len(set(bases)) == (6 if inherit_scale == "ALIGNED" else 1)


@pytest.mark.parametrize("matrix", [
    np.eye(3), 2.5 * np.eye(3), np.zeros((3, 3)), 1e-20 * np.eye(3), np.full((3, 3), np.nan), np.diag([np.inf, 1.0, 1.0]),
    np.diag([1.0, 1.0, 1.0005]), np.diag([1.0, 1.0, 1.002]), np.diag([1.0, 1.0, -1.0]), [[1.0, 0.01, 0.0], [0.0, 1.0, 0.0],
                                                                                          [0.0, 0.0, 1.0]],
    *np.random.default_rng(3).normal(size=(20, 3, 3))])
def test_one_matrixs_scale_check_on_floats_equals_the_batchs(blender, matrix):
    """A constant armature's scale is checked on floats (chain._one_scale_deviation), a moving one's in numpy: the same
    scale and the same verdicts, zero, NaN, infinite, just within and just past the tolerance alike."""
    from blender_ik_addon import chain as chain_module

    matrix = np.asarray(matrix, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        one = chain_module._scale_deviation(matrix[None])
        batch = chain_module._scale_deviation(np.stack([matrix, np.eye(3)]))
    assert [value.shape for value in one] == [(1,)] * 3
    np.testing.assert_allclose(one[0], batch[0][:1], rtol=1e-15)  # NaN equals NaN here
    assert one[1][0] == batch[1][0] and one[2][0] == batch[2][0]
