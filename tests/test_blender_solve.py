"""The solve operator in Blender, judged by Blender's evaluated pose."""
import math

import numpy as np
import pytest

from rigs import (add_empty, angle_between, axis_of, build_arm, chain_length_world, link_from_library, pose_snapshot,
                  random_rig, reachable_target, readout, tip_and_direction)

POSITION_TOLERANCE = 1e-5  # of the chain's length
ANGLE_TOLERANCE = 2e-5  # radians


def setup(bpy, obj, target, **settings):
    bpy.context.view_layer.objects.active = obj
    ik = obj.blender_ik
    ik.tip_bone = "b3"
    ik.target = target
    for key, value in settings.items():
        setattr(ik, key, value)
    return ik


@pytest.mark.parametrize("seed", range(12))
def test_random_rigs_reach_random_targets(blender, seed):
    bpy = blender
    rng = np.random.default_rng(seed)
    obj = random_rig(rng)
    up_axis = str(rng.choice(["X", "Y", "Z", "-X", "-Y", "-Z"]))
    target = add_empty()
    setup(bpy, obj, target, up_axis=up_axis)
    for _ in range(4):
        location, rotation = reachable_target(rng, obj, up_axis=up_axis)
        target.location, target.rotation_euler = location, rotation
        target.scale = tuple(rng.uniform(0.3, 3.0, 3))  # the axis is a direction: scale must not matter
        bpy.context.view_layer.update()
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        tip, direction = tip_and_direction(obj)
        error = np.linalg.norm(tip - np.array(target.matrix_world.translation))
        assert error < POSITION_TOLERANCE * chain_length_world(obj)
        assert angle_between(direction, axis_of(target, up_axis)) < ANGLE_TOLERANCE
        assert readout(obj).status == "REACHED"


@pytest.mark.parametrize("seed", range(6))
def test_pole_mode_puts_the_middle_joint_in_the_poles_plane(blender, seed):
    bpy = blender
    rng = np.random.default_rng(100 + seed)
    obj = random_rig(rng)
    target, pole = add_empty(), add_empty("Pole", tuple(rng.normal(scale=3.0, size=3)))
    setup(bpy, obj, target, plane="POLE", pole=pole)
    target.location, target.rotation_euler = reachable_target(rng, obj)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    length = chain_length_world(obj)
    assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < POSITION_TOLERANCE * length
    assert angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE
    base, elbow, wrist = (np.array(obj.matrix_world @ obj.pose.bones[b].head) for b in ("b1", "b2", "b3"))
    pole_point = np.array(pole.matrix_world.translation)
    normal = np.cross(wrist - base, pole_point - base)
    normal /= np.linalg.norm(normal)
    assert abs(np.dot(elbow - base, normal)) < POSITION_TOLERANCE * length
    axis = (wrist - base) / np.linalg.norm(wrist - base)
    side = (pole_point - base) - axis * np.dot(pole_point - base, axis)
    assert np.dot(elbow - base, side) > 0  # on the pole's side


def test_bones_keep_their_rest_roll_relative_to_the_bend_plane(blender):
    bpy = blender
    obj = build_arm(rolls=(0.4, -1.1, 2.0), modes=("XYZ", "QUATERNION", "ZXY"))
    target = add_empty(location=(0.9, 0.4, 1.1), rotation=(0.3, -0.6, 0.2))
    setup(bpy, obj, target)
    bpy.context.view_layer.update()

    def rolls():
        heads = [np.array(obj.pose.bones[b].head) for b in ("b1", "b2", "b3")]
        normal = np.cross(heads[2] - heads[0], heads[1] - heads[0])
        normal /= np.linalg.norm(normal)
        return [float(np.dot(np.array(obj.pose.bones[b].matrix.to_3x3().col[0]), normal)) for b in ("b1", "b2")]

    before = rolls()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    np.testing.assert_allclose(rolls(), before, atol=1e-5)
    # The middle joint is a pure hinge: b2 turns relative to b1 about the bend-plane normal only.
    from mathutils import Vector
    relative = obj.pose.bones["b1"].matrix.to_3x3().inverted() @ obj.pose.bones["b2"].matrix.to_3x3()
    rest = obj.data.bones["b1"].matrix_local.to_3x3().inverted() @ obj.data.bones["b2"].matrix_local.to_3x3()
    hinge = (rest.inverted() @ relative).to_quaternion()
    heads = [np.array(obj.data.bones[b].head_local) for b in ("b1", "b2", "b3")]
    rest_normal = Vector(np.cross(heads[2] - heads[0], heads[1] - heads[0]).tolist()).normalized()
    normal_in_b2 = obj.data.bones["b2"].matrix_local.to_3x3().inverted() @ rest_normal
    assert hinge.angle > 0.1
    assert abs(abs(hinge.axis.dot(normal_in_b2)) - 1.0) < 1e-5


def test_out_of_reach_takes_the_closest_pose_and_warns(blender, capfd):
    bpy = blender
    obj = build_arm()
    target = add_empty(location=(6.0, 1.0, 2.0), rotation=(0.2, 0.3, 0.1))
    setup(bpy, obj, target)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    out = capfd.readouterr()
    assert "out of reach" in (out.out + out.err)
    tip, direction = tip_and_direction(obj)
    assert angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE  # the last bone still follows
    base = np.array(obj.pose.bones["b1"].head)
    wrist_target = np.array(target.location) - 0.4 * axis_of(target)
    expected_miss = np.linalg.norm(wrist_target - base) - 1.8
    assert np.linalg.norm(tip - np.array(target.location)) == pytest.approx(expected_miss, abs=1e-5)
    assert readout(obj).status == "OUT_OF_REACH"
    assert readout(obj).miss == pytest.approx(expected_miss, abs=1e-5)


@pytest.mark.parametrize("case, message", [
    ("no_target", "Set the target"),
    ("no_tip", "Choose the chain's tip bone"),
    ("short_chain", "needs two ancestors"),
    ("missing_bone", "no bone named"),
    ("non_uniform_scale", "non-uniform scale"),
    ("no_pole", "Set the pole"),
    ("nan_target", "non-finite"),
    ("flat_target", "zero scale on its Z axis"),
    ("scaled_bone", "unit pose scale"),
    ("no_inherit", "does not inherit rotation"),
    ("target_on_chain", "would move with it"),
    ("target_below_chain", "through 'b3'"),
    ("pole_on_chain", "The pole 'Pole' hangs from the chain"),
    ("constraint", "has constraints \\(IK\\)"),
    ("driver", "has a driver"),
    ("inherit_scale", "does not inherit the scale"),
    ("target_is_armature", "cannot be the armature itself"),
])
def test_bad_input_is_refused_and_nothing_changes(blender, case, message):
    bpy = blender
    obj = build_arm()
    target = add_empty(location=(0.9, 0.2, 1.0))
    ik = setup(bpy, obj, target)
    obj.pose.bones["b2"].rotation_quaternion = (0.9, 0.1, 0.3, 0.0)
    if case == "no_target":
        ik.target = None
    elif case == "no_tip":
        ik.tip_bone = ""
        obj.data.bones.active = None
    elif case == "short_chain":
        ik.tip_bone = "b1"
    elif case == "missing_bone":
        ik.tip_bone = "hand"
    elif case == "non_uniform_scale":
        obj.scale = (1.0, 2.0, 1.0)
    elif case == "no_pole":
        ik.plane = "POLE"
    elif case == "nan_target":
        target.location = (float("nan"), 0.0, 0.0)
    elif case == "flat_target":
        target.scale = (1.0, 1.0, 0.0)
    elif case == "scaled_bone":
        obj.pose.bones["b2"].scale = (1.0, 1.5, 1.0)
    elif case == "no_inherit":
        obj.data.bones["b3"].use_inherit_rotation = False
    elif case == "target_is_armature":
        ik.target = obj  # the property's poll only filters the UI's list
    elif case == "target_below_chain":  # through another Empty hanging from the tip bone
        holder = add_empty("Holder")
        holder.parent, holder.parent_type, holder.parent_bone = obj, "BONE", "b3"
        target.parent = holder
    elif case == "pole_on_chain":
        pole = add_empty("Pole")
        pole.parent, pole.parent_type, pole.parent_bone = obj, "BONE", "b1"
        ik.plane, ik.pole = "POLE", pole
    elif case == "constraint":  # an IK constraint left over would fight the solve
        constraint = obj.pose.bones["b3"].constraints.new("IK")
        constraint.name = "IK"
    elif case == "driver":
        obj.pose.bones["b2"].driver_add("rotation_quaternion", 1).driver.expression = "0.1"
    elif case == "inherit_scale":
        obj.pose.bones["root"].scale = (1.5, 1.5, 1.5)
        obj.data.bones["b2"].inherit_scale = "NONE"
    elif case == "target_on_chain":
        target.parent = obj
        target.parent_type = "BONE"
        target.parent_bone = "b2"
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    if case == "driver":  # a driver is evaluated on updates: compare with the pose it produces
        before = pose_snapshot(obj)
    # In background mode bpy.ops raises on an ERROR report; the operator itself returned CANCELLED.
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.blender_ik.solve()
    assert pose_snapshot(obj) == before


def test_wrong_active_object_fails_poll(blender):
    bpy = blender
    empty = add_empty()
    bpy.context.view_layer.objects.active = empty
    assert not bpy.ops.blender_ik.solve.poll()
    with pytest.raises(RuntimeError, match="armature"):
        bpy.ops.blender_ik.solve()


@pytest.mark.parametrize("roll_axis", ["NONE", "X"])
@pytest.mark.parametrize("up_axis", ["Z", "-Y", "X"])
def test_add_target_round_trips(blender, up_axis, roll_axis):
    bpy = blender
    obj = build_arm(rolls=(0.3, 0.3, 0.3), modes=("QUATERNION", "XYZ", "AXIS_ANGLE"))
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    obj.blender_ik.plane = "TARGET"  # a planar chain keeps its plane: the target axis is in it
    obj.blender_ik.up_axis = up_axis
    if roll_axis != "NONE" and roll_axis == up_axis.lstrip("-"):
        roll_axis = "Y"
    obj.blender_ik.roll_axis = roll_axis
    obj.pose.bones["b1"].rotation_quaternion = (0.95, 0.0, 0.31, 0.0)  # still one plane, but posed
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    target = obj.blender_ik.target
    assert target is not None and target.type == "EMPTY" and target.select_get()
    assert target.empty_display_type == "SINGLE_ARROW"
    bpy.context.view_layer.update()
    tip, direction = tip_and_direction(obj)
    np.testing.assert_allclose(np.array(target.matrix_world.translation), tip, atol=1e-6)
    assert angle_between(direction, axis_of(target, up_axis)) < ANGLE_TOLERANCE
    matrices = {b: obj.pose.bones[b].matrix.copy() for b in ("b1", "b2", "b3")}
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    for name, before in matrices.items():
        after = obj.pose.bones[name].matrix
        assert max(abs(a - b) for row_a, row_b in zip(after, before) for a, b in zip(row_a, row_b)) < 1e-5, name


def test_degenerate_input_gives_a_finite_pose(blender):
    bpy = blender
    obj = build_arm(lengths=(1.0, 1.0, 0.5))
    target = add_empty()
    setup(bpy, obj, target)
    # The wrist right on the base: target one last-bone length above it, pointing up.
    target.location = (0.0, 0.0, 0.5)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    assert np.all(np.isfinite(tip)) and np.linalg.norm(tip - np.array(target.location)) < 1e-5
    # The up axis along the base->wrist line.
    target.location = (0.0, 0.0, 2.0)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    assert np.linalg.norm(tip - np.array(target.location)) < 1e-5
    assert angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE


def test_unconnected_chain_is_solved_exactly(blender):
    bpy = blender
    obj = build_arm(connected=False, directions=[(0, 0, 1), (0.5, 0.2, 0.8), (1, 0, 0.2)])
    assert not obj.data.bones["b1"].use_connect
    obj.pose.bones["b1"].location = (0.1, -0.05, 0.02)  # an unconnected first bone moved in the pose
    obj.pose.bones["b2"].location = (0.02, 0.01, -0.03)
    target = add_empty(location=(0.7, 0.3, 1.2), rotation=(0.5, 0.2, -0.4))
    setup(bpy, obj, target)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    assert np.linalg.norm(tip - np.array(target.location)) < POSITION_TOLERANCE * 2.0
    assert angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE


def test_bend_side_follows_the_setting(blender):
    bpy = blender
    obj = build_arm()
    target = add_empty(location=(1.0, 0.0, 1.0), rotation=(0.0, math.pi / 2, 0.0))  # up axis along +X
    ik = setup(bpy, obj, target)
    sides = {}
    for bend in ("REST", "TOWARD", "AWAY"):
        ik.bend = bend
        bpy.context.view_layer.update()
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        bpy.context.view_layer.update()
        base, elbow, wrist = (np.array(obj.pose.bones[b].head) for b in ("b1", "b2", "b3"))
        axis = (wrist - base) / np.linalg.norm(wrist - base)
        up_side = axis_of(target) - axis * np.dot(axis_of(target), axis)
        sides[bend] = np.dot(elbow - base, up_side) > 0
    # "As Rest Pose": the side the rest pose bends to, relative to where its last bone points.
    base, elbow, wrist, tail = (np.array(v) for v in (obj.data.bones["b1"].head_local, obj.data.bones["b2"].head_local,
                                                      obj.data.bones["b3"].head_local, obj.data.bones["b3"].tail_local))
    axis = (wrist - base) / np.linalg.norm(wrist - base)
    last = tail - wrist
    rest_side = np.dot(elbow - base - axis * np.dot(elbow - base, axis), last - axis * np.dot(last, axis)) > 0
    assert not rest_side  # this arm's elbow bends away from where its hand points
    assert sides == {"REST": rest_side, "TOWARD": True, "AWAY": False}


def test_solve_sees_pose_changes_a_script_made_without_an_update(blender):
    bpy = blender
    obj = build_arm()
    target = add_empty(location=(0.9, 0.3, 1.0), rotation=(0.2, 0.1, 0.3))
    setup(bpy, obj, target)
    bpy.context.view_layer.update()
    root = obj.pose.bones["root"]
    root.rotation_mode = "XYZ"
    root.rotation_euler = (0.3, -0.2, 0.5)  # no depsgraph update before the solve
    target.location = (0.7, 0.5, 1.1)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < POSITION_TOLERANCE * 2.2
    assert angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE


def link_arm_from_library(bpy, tmp_path):
    """A fresh file with the arm linked from a library file: the linked object, in the scene."""
    build_arm()
    return link_from_library(bpy, tmp_path / "library.blend", "Arm")


def test_linked_armature_is_refused(blender, tmp_path):
    bpy = blender
    obj = link_arm_from_library(bpy, tmp_path)
    bpy.context.view_layer.objects.active = obj
    assert obj.library is not None
    with pytest.raises(RuntimeError, match="linked from a library"):
        bpy.ops.blender_ik.solve()


def test_add_target_when_the_armatures_collection_is_excluded(blender):
    bpy = blender
    obj = build_arm()
    hidden = bpy.data.collections.new("Hidden")
    bpy.context.scene.collection.children.link(hidden)
    hidden.objects.link(obj)  # the armature is in the scene collection and in an excluded one
    bpy.context.view_layer.layer_collection.children["Hidden"].exclude = True
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    target = obj.blender_ik.target
    assert target.name in bpy.context.view_layer.objects and target.select_get()
    assert len([o for o in bpy.data.objects if o.type == "EMPTY"]) == 1


def test_add_target_refused_changes_nothing(blender):
    bpy = blender
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b1"
    with pytest.raises(RuntimeError, match="needs two ancestors"):
        bpy.ops.blender_ik.add_target()
    assert not [o for o in bpy.data.objects if o.type == "EMPTY"]


def test_a_library_override_keeps_its_settings_and_can_be_solved(blender, tmp_path):
    bpy = blender
    obj = link_arm_from_library(bpy, tmp_path).override_create(remap_local_usages=True)
    target = add_empty(location=(0.8, 0.3, 1.0), rotation=(0.3, 0.2, 0.1))
    setup(bpy, obj, target, up_axis="-X", roll_axis="Y")
    shot = str(tmp_path / "shot.blend")
    bpy.ops.wm.save_as_mainfile(filepath=shot)
    bpy.ops.wm.open_mainfile(filepath=shot)
    obj = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o.library is None)
    assert obj.override_library is not None
    settings = obj.blender_ik
    assert (settings.tip_bone, settings.up_axis, settings.roll_axis) == ("b3", "-X", "Y")
    assert settings.target is not None and settings.target.name == "Target"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    tip, direction = tip_and_direction(obj)
    assert np.linalg.norm(tip - np.array(settings.target.matrix_world.translation)) < POSITION_TOLERANCE * 2.2


def test_a_target_at_the_tip_of_a_straight_chain_is_reached(blender, capfd):
    """Add Target puts the target at the tip, where Blender stores it in float32: for a straight chain that lands a few
    1e-9 beyond the chain's reach, and the read-out, the report and a bake said "out of reach by 0 m" (review 10: 15
    times in 20). A tip within a millionth of the reach counts as on its target."""
    bpy = blender
    from mathutils import Vector

    rng = np.random.default_rng(4)
    for index in range(20):
        direction = Vector(rng.normal(size=3)).normalized()
        obj = build_arm(lengths=tuple(rng.uniform(0.2, 1.5, 3)), directions=[direction] * 3, name=f"Straight {index}",
                        base=tuple(rng.normal(size=3)))
        bpy.context.view_layer.objects.active = obj
        obj.blender_ik.tip_bone = "b3"
        assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        assert readout(obj).status == "REACHED" and readout(obj).miss < 1e-9
        assert "the tip is on the target" in "".join(capfd.readouterr())
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=3) == {"FINISHED"}
        assert "out of reach" not in "".join(capfd.readouterr())


@pytest.fixture
def insert_available(blender):
    """The preference Only Insert Available (on by default from Blender 5.2, off before), put back afterwards."""
    edit = blender.context.preferences.edit
    before = edit.use_keyframe_insert_available
    yield edit
    edit.use_keyframe_insert_available = before


@pytest.mark.parametrize("mode", ["off", "ADD_REPLACE_KEYS", "REPLACE_KEYS", "locked", "available"])
def test_solve_keys_the_chain_with_auto_keying_on(blender, capfd, insert_available, mode):
    """An animator posing with Auto Keying on expects Solve to key what it posed, as Blender's own pose operators do
    (Clear Rotation, Paste Pose): the chain's rotations at the current frame, in Blender's auto-keying mode (Replace
    keys only channels that have a key there). Solve left them unkeyed, so the next frame change took the pose away."""
    bpy = blender
    from blender_ik_addon import keys
    from rigs import arm_with_chain, tips_off
    obj, chain = arm_with_chain(bpy)
    scene = bpy.context.scene
    scene.tool_settings.use_keyframe_insert_auto = mode != "off"
    insert_available.use_keyframe_insert_available = mode == "available"
    if mode != "off":
        scene.tool_settings.auto_keying_mode = "REPLACE_KEYS" if mode == "REPLACE_KEYS" else "ADD_REPLACE_KEYS"
    if mode == "locked":
        obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=1)
        for fcurve in keys.object_fcurves(obj):
            fcurve.lock = True
    scene.frame_set(7)
    capfd.readouterr()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    report = capfd.readouterr().out
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5  # posed, whatever the keys
    keyed = {(curve.data_path, point.co[0]) for curve in keys.object_fcurves(obj) for point in curve.keyframe_points}
    if mode in ("off", "REPLACE_KEYS", "locked", "available"):
        # nothing keyed: off, no key at frame 7 to replace, no F-curve to key, or refused
        assert not any(frame == 7 for _, frame in keyed)
        assert ("Auto Keying" in report) == (mode != "off")
        if mode in ("REPLACE_KEYS", "available"):
            limit = "Replace" if mode == "REPLACE_KEYS" else "Only Insert Available"
            assert f"Auto Keying keyed 0 of 3 bones at frame 7 (its settings leave the others: {limit}" in report
        if mode == "locked":
            assert "the solved bones were not keyed: the F-curve rotation_quaternion[0] of bone 'b1' is locked" in report
        return
    assert "Auto Keying keyed 3 bones at frame 7" in report
    assert {path for path, frame in keyed if frame == 7} == {f'pose.bones["b{i}"].rotation_quaternion' for i in (1, 2, 3)}
    chain.target.location.x += 0.3  # the keys, not the pose left behind, play at frame 7
    scene.frame_set(1)
    scene.frame_set(7)
    chain.target.location.x -= 0.3
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-5
