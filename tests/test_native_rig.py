"""The native rig (constraints and simple-expression drivers), judged by Blender's evaluated pose against
the Python solve of the same chain, posed by Blender with the rig muted."""
import math
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest

from blender_ik_addon import chain as rig, native_rig
from blender_ik_addon.chain import ChainSpec
from rigs import (add_empty, build_arm, chain_length_world, random_direction, random_rig, reachable_target)

POSITION_TOLERANCE = 1e-5  # of the chain's length
ANGLE_TOLERANCE = 2e-5  # radians
UP_AXES = ("X", "Y", "Z", "-X", "-Y", "-Z")


def make_spec(target, name="arm", **settings):
    """A chain's settings in plain form, as the operators will pass them."""
    values = dict(name=name, target=target, target_bone="", up_axis="Z", plane="TARGET", pole=None, pole_bone="",
                  bend="REST", roll_axis="NONE")
    values.update(settings)
    return SimpleNamespace(**values)


def solve_options(spec):
    """The add-on's settings for ``spec``, as the Python solve takes them."""
    return ChainSpec(tip_bone="b3", target=spec.target, target_bone=spec.target_bone, up_axis=spec.up_axis,
                     plane=spec.plane, pole=spec.pole, pole_bone=spec.pole_bone, bend=spec.bend,
                     roll_axis=spec.roll_axis, name=spec.name)


def build(bpy, obj, spec, tip="b3"):
    bpy.context.view_layer.update()
    chain = rig.read_chain(obj, tip)
    native_rig.build(obj, chain, spec)
    return chain


def goal_matrix(obj, target, bone_name):
    """The goal's armature-space matrix as Blender evaluated it: an object, or one of its bones."""
    world = rig.matrix_array(target.matrix_world)
    if bone_name:
        world = world @ rig.matrix_array(target.pose.bones[bone_name].matrix)
    return np.linalg.inv(rig.matrix_array(obj.matrix_world)) @ world


def bone_frames(obj, names):
    """Each bone's world head, tail and rotation (scale removed), as Blender evaluated them."""
    out = []
    for name in names:
        pose_bone = obj.pose.bones[name]
        matrix = np.array(obj.matrix_world @ pose_bone.matrix)
        rotation = matrix[:3, :3] / np.linalg.norm(matrix[:3, :3], axis=0)
        out.append((np.array(obj.matrix_world @ pose_bone.head), np.array(obj.matrix_world @ pose_bone.tail),
                    rotation))
    return out


def add_on_solve(chain, options):
    """The add-on's own solve of the chain as posed now (its live mode's and Solve's call)."""
    return rig.solve_current(chain, options)


def python_pose(bpy, obj, spec):
    """Mute the rig, pose the chain with the add-on's Python solve, read Blender's pose, unmute: the expected
    pose, and the add-on's solution (``degenerate``: it took its fallback plane)."""
    native_rig.set_muted(obj, spec.name, True)
    bpy.context.view_layer.update()
    chain = rig.read_chain(obj, "b3")
    options = solve_options(spec)
    solve = add_on_solve(chain, options)
    found = solve.solution
    if spec.plane == "PARENT" and found.degenerate[0]:
        # Near the carried normal the add-on holds the previous plane; the rig, which has no state, keeps
        # following the carried normal there: the same solve without that cone.
        with mock.patch.object(rig, "PARENT_SINGULAR_TOLERANCE", 0.0):
            solve = add_on_solve(chain, options)
    rig.pose_chain(chain, solve.rotations[0])
    bpy.context.view_layer.update()
    expected = bone_frames(obj, chain.names)
    native_rig.set_muted(obj, spec.name, False)
    return expected, found


def rotation_angle(turn):
    """The angle of a rotation matrix, well conditioned near zero (acos of the trace is not)."""
    axis = np.array([turn[2, 1] - turn[1, 2], turn[0, 2] - turn[2, 0], turn[1, 0] - turn[0, 1]]) / 2.0
    return math.atan2(np.linalg.norm(axis), (np.trace(turn) - 1.0) / 2.0)


def assert_rig_matches_solve(bpy, obj, spec):
    """Blender's pose of the chain with the rig is the add-on's solve; returns the add-on's solution."""
    expected, found = python_pose(bpy, obj, spec)
    bpy.context.view_layer.update()  # one update after the change: no lag
    actual = bone_frames(obj, ("b1", "b2", "b3"))
    length = chain_length_world(obj)
    for name, (head, tail, rotation), (want_head, want_tail, want_rotation) in zip(("b1", "b2", "b3"), actual,
                                                                                    expected):
        assert np.linalg.norm(head - want_head) < POSITION_TOLERANCE * length, name
        assert np.linalg.norm(tail - want_tail) < POSITION_TOLERANCE * length, name
        assert rotation_angle(rotation.T @ want_rotation) < ANGLE_TOLERANCE, name
    assert_drivers_alive(obj)
    return found


def assert_drivers_alive(obj):
    drivers = obj.animation_data.drivers
    assert len(drivers) > 0
    for fcurve in drivers:
        assert fcurve.driver.is_simple_expression, fcurve.driver.expression
        assert fcurve.driver.is_valid and fcurve.is_valid, fcurve.data_path
        assert len(fcurve.driver.expression) <= 255


def target_cases(rng, obj, up_axis):
    """Reachable targets, then a wrist beyond reach and one inside the inner radius (closest poses)."""
    for _ in range(3):
        yield reachable_target(rng, obj, up_axis=up_axis)
    scale = obj.matrix_world.median_scale * obj.pose.bones["root"].scale[0]
    l1, l2, l3 = (obj.data.bones[f"b{i}"].length * scale for i in (1, 2, 3))
    base = np.array(obj.matrix_world @ obj.pose.bones["b1"].head)
    # Inside the inner radius only when it is not tiny: with the wrist at d from the base, float32
    # positions (~1e-7 of their size) already turn the base→wrist line by ~1e-7·size/d.
    distances = [1.4 * (l1 + l2)] + ([0.5 * abs(l1 - l2)] if abs(l1 - l2) > 0.2 * (l1 + l2) else [])
    for distance in distances:
        location, rotation = reachable_target(rng, obj, up_axis=up_axis)
        up = np.array(rotation.to_matrix().col["XYZ".index(up_axis[-1])]) * (-1.0 if up_axis[0] == "-" else 1.0)
        yield tuple(base + random_direction(rng) * distance + l3 * up), rotation


@pytest.mark.parametrize("plane", ["TARGET", "POLE", "PARENT"])
@pytest.mark.parametrize("seed", range(6))
def test_random_rigs_match_the_python_solve(blender, seed, plane):
    bpy = blender
    rng = np.random.default_rng(1000 + seed)
    obj = random_rig(rng)
    if seed % 2:  # the chain's parent scaled: lengths and distances in its units
        obj.pose.bones["root"].scale = (float(rng.uniform(0.5, 2.0)),) * 3
    up_axis = UP_AXES[seed]
    target = add_empty()
    pole = add_empty("Pole", tuple(rng.normal(scale=3.0, size=3))) if plane == "POLE" else None
    spec = make_spec(target, up_axis=up_axis, plane=plane, pole=pole,
                     bend=("REST", "TOWARD", "AWAY")[seed % 3],
                     roll_axis=("NONE", "X", "NONE", "-Z", "NONE", "Z")[seed])  # the last: along the up axis
    target.location, target.rotation_euler = reachable_target(rng, obj, up_axis=up_axis)
    build(bpy, obj, spec)
    for location, rotation in target_cases(rng, obj, up_axis):
        target.location, target.rotation_euler = location, rotation
        target.scale = tuple(rng.uniform(0.3, 3.0, 3))  # the Empty's scale must not leak into the chain
        assert_rig_matches_solve(bpy, obj, spec)
    # The chain's parent moves: the base, the carried plane and the scale follow.
    obj.pose.bones["root"].rotation_euler = tuple(rng.uniform(-1.0, 1.0, 3))
    assert_rig_matches_solve(bpy, obj, spec)


def carried_plane(bpy, obj):
    """Before the build: the base O and the rest hinge normal N carried by the chain's parent (armature space)."""
    bpy.context.view_layer.update()
    chain = rig.read_chain(obj, "b3")
    base = rig.base_matrix(chain)
    return base[:3, 3], base[:3, :3] @ chain.rest_normals[0] / np.linalg.norm(base[:3, 0]), chain


def aim_target(target, wrist, up, l3):
    """Put the target where the wrist is ``wrist`` and its Z axis (the up axis) is ``up``."""
    from mathutils import Vector  # with bpy loaded (the blender fixture)
    target.location = tuple(wrist + l3 * up)
    target.rotation_euler = Vector(tuple(up)).to_track_quat("Z", "Y").to_euler()


def middle_joint_side(obj, origin, side):
    """Which side of the line (+1: toward ``side``) Blender shows the middle joint on."""
    return 1 if float(np.dot(np.array(obj.pose.bones["b2"].head) - origin, side)) > 0.0 else -1


@pytest.mark.parametrize("bend", ["REST", "TOWARD", "AWAY"])
def test_parent_plane_bends_toward_or_away_from_the_up_axis(blender, bend):
    """PARENT: the carried plane, and per evaluation the side of it the target's up axis is on (TOWARD),
    the other side (AWAY) or the rest side (REST), as the add-on's solve picks it."""
    bpy = blender
    obj = build_arm(lengths=(1.0, 0.8, 0.4), rolls=(0.3, -0.5, 1.1))
    obj.pose.bones["root"].rotation_euler = (0.3, -0.2, 0.4)  # the carried plane is not the rest one
    origin, normal, _ = carried_plane(bpy, obj)
    target = add_empty()
    spec = make_spec(target, plane="PARENT", bend=bend)
    wrist = origin + 1.2 * np.array([0.5, 0.3, 0.8]) / np.linalg.norm([0.5, 0.3, 0.8])
    axis = (wrist - origin) / np.linalg.norm(wrist - origin)
    rest_side = np.cross(normal, axis) / np.linalg.norm(np.cross(normal, axis))  # b = n × a
    in_plane_normal = np.cross(axis, rest_side)
    aim_target(target, wrist, rest_side, 0.4)
    build(bpy, obj, spec)
    sides, expected = [], []
    for angle in (0.3, 1.2, 2.0, 2.9, 3.6, 4.4, 5.3, 6.0):  # û around a, on both sides of the carried plane
        up = math.cos(angle) * rest_side + math.sin(angle) * in_plane_normal + 0.3 * axis
        aim_target(target, wrist, up / np.linalg.norm(up), 0.4)
        found = assert_rig_matches_solve(bpy, obj, spec)
        assert not found.degenerate[0]
        sides.append(middle_joint_side(obj, origin, rest_side))
        up_side = 1 if math.cos(angle) > 0.0 else -1
        expected.append({"REST": 1, "TOWARD": up_side, "AWAY": -up_side}[bend])
    assert sides == expected


@pytest.mark.parametrize("bend", ["REST", "TOWARD", "AWAY"])
def test_parent_plane_near_the_carried_normal_follows_it(blender, bend):
    """Within the add-on's 5° cone about the carried normal its solve holds the previous plane; the rig,
    which holds no state, keeps following the carried normal (python_pose compares with that solve)."""
    bpy = blender
    obj = build_arm(lengths=(1.0, 0.8, 0.4))
    origin, normal, _ = carried_plane(bpy, obj)
    target = add_empty()
    spec = make_spec(target, plane="PARENT", bend=bend)
    other = np.cross(normal, [0.0, 0.0, 1.0])
    other /= np.linalg.norm(other)
    aim_target(target, origin + 1.2 * other, np.array([0.0, 0.0, 1.0]), 0.4)
    build(bpy, obj, spec)
    for degrees, up in ((2.0, (0.3, 0.2, 0.9)), (4.0, (-0.4, 0.1, -0.9)), (1.0, (0.8, -0.5, 0.2))):
        turn = math.radians(degrees)
        axis = math.cos(turn) * normal + math.sin(turn) * other
        up = np.array(up) / np.linalg.norm(up)
        aim_target(target, origin + 1.2 * axis, up, 0.4)
        found = assert_rig_matches_solve(bpy, obj, spec)
        assert found.degenerate[0]  # the add-on's solve took its fallback (held) plane here


@pytest.mark.parametrize("goal", ["own_bone", "other_armature"])
def test_target_and_pole_can_be_bones(blender, goal):
    bpy = blender
    rng = np.random.default_rng(7)
    obj = build_arm(rolls=(0.4, -1.1, 2.0), modes=("XYZ", "QUATERNION", "ZXY"))
    holder = obj if goal == "own_bone" else build_arm(name="Controls")
    bpy.context.view_layer.objects.active = holder
    bpy.ops.object.mode_set(mode="EDIT")
    for name in ("ctrl", "pole"):
        bone = holder.data.edit_bones.new(name)
        bone.head, bone.tail = (0.0, 0.0, 0.0), (0.0, 0.3, 0.0)
    bpy.ops.object.mode_set(mode="OBJECT")
    if holder is not obj:
        holder.location, holder.rotation_euler, holder.scale = (0.3, -0.2, 0.1), (0.2, 0.1, -0.3), (1.3, 1.3, 1.3)
    spec = make_spec(holder, target_bone="ctrl", plane="POLE", pole=holder, pole_bone="pole", up_axis="-Y")
    holder.pose.bones["pole"].location = (0.0, 0.0, -2.0)  # bones posed in their own rest frames
    build(bpy, obj, spec)
    for _ in range(4):
        location, rotation = reachable_target(rng, obj, up_axis="-Y")
        world = np.array(holder.matrix_world.inverted()) @ np.array([*location, 1.0])
        ctrl = holder.pose.bones["ctrl"]
        ctrl.location = tuple(world[:3])
        ctrl.rotation_mode = "XYZ"
        holder_rotation = holder.matrix_world.to_quaternion().inverted().to_matrix()
        ctrl.rotation_euler = (holder_rotation @ rotation.to_matrix()).to_euler()
        holder.pose.bones["pole"].location = tuple(rng.normal(scale=2.0, size=3))
        assert_rig_matches_solve(bpy, obj, spec)


def test_unconnected_chain_follows_its_first_bones_location(blender):
    bpy = blender
    obj = build_arm(connected=False, directions=[(0, 0, 1), (0.5, 0.2, 0.8), (1, 0, 0.2)])
    obj.pose.bones["b2"].location = (0.02, 0.01, -0.03)
    target = add_empty(location=(0.7, 0.3, 1.2), rotation=(0.5, 0.2, -0.4))
    spec = make_spec(target, roll_axis="X")
    build(bpy, obj, spec)
    assert_rig_matches_solve(bpy, obj, spec)
    obj.pose.bones["b1"].location = (0.1, -0.05, 0.02)  # moved after the build: the rig follows
    assert_rig_matches_solve(bpy, obj, spec)


@pytest.mark.parametrize("case", ["no_parent", "no_inherit_rotation", "aligned_scale", "global_location"])
def test_the_first_bones_inheritance_is_followed(blender, case):
    bpy = blender
    obj = build_arm(root=case != "no_parent", connected=False, rolls=(0.3, -0.4, 1.0))
    bone, root = obj.data.bones["b1"], obj.pose.bones.get("root")
    if root is not None:
        root.rotation_mode = "XYZ"
        root.rotation_euler = (0.3, -0.5, 0.2)
    if case == "no_inherit_rotation":
        bone.use_inherit_rotation = False
    elif case == "aligned_scale":
        bone.inherit_scale = "ALIGNED"
        root.scale = (1.4, 1.4, 1.4)
    elif case == "global_location":
        bone.use_local_location = False
    obj.pose.bones["b1"].location = (0.05, 0.1, -0.02)
    target = add_empty(location=(0.7, 0.3, 1.2), rotation=(0.5, 0.2, -0.4))
    spec = make_spec(target)
    build(bpy, obj, spec)
    assert_rig_matches_solve(bpy, obj, spec)
    obj.pose.bones["b1"].location = (-0.1, 0.05, 0.03)
    if root is not None:
        root.rotation_euler = (-0.2, 0.4, 0.1)
    assert_rig_matches_solve(bpy, obj, spec)


def test_playback_follows_an_animated_target_without_lag(blender):
    bpy = blender
    rng = np.random.default_rng(21)
    obj = random_rig(rng)
    target = add_empty()
    for frame in (1, 11, 21):
        target.location, target.rotation_euler = reachable_target(rng, obj)
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    root = obj.pose.bones["root"]  # the chain's parent animated too
    for frame, angle in ((1, 0.0), (21, 0.6)):
        root.rotation_euler = (angle, -angle, 0.5 * angle)
        root.keyframe_insert("rotation_euler", frame=frame)
    scene = bpy.context.scene
    scene.frame_set(1)
    spec = make_spec(target, plane="PARENT")
    build(bpy, obj, spec)
    for frame in (4, 5, 13, 20, 2):
        scene.frame_set(frame)  # one frame change, as playback does: judged before any other update
        actual = bone_frames(obj, ("b1", "b2", "b3"))
        expected, _ = python_pose(bpy, obj, spec)
        length = chain_length_world(obj)
        for (_, tail, _), (_, want_tail, _) in zip(actual, expected):
            assert np.linalg.norm(tail - want_tail) < POSITION_TOLERANCE * length


@pytest.mark.parametrize("plane", ["TARGET", "POLE", "PARENT"])
def test_degenerate_inputs_keep_drivers_alive_and_the_pose_finite(blender, plane):
    bpy = blender
    obj = build_arm(lengths=(1.0, 1.0, 0.5))
    target, pole = add_empty(), add_empty("Pole", (0.0, 0.0, 3.0))
    spec = make_spec(target, plane=plane, pole=pole if plane == "POLE" else None)
    target.location = (0.8, 0.3, 1.0)
    build(bpy, obj, spec)
    cases = [((0.0, 0.0, 0.5), (0.0, 0.0, 0.0)),  # the wrist on the base
             ((0.0, 0.0, 2.0), (0.0, 0.0, 0.0)),  # the up axis (and the pole) along the base→wrist line
             ((0.0, 0.0, -1.0), (math.pi, 0.0, 0.0)),
             ((0.0, 1.2, 0.5), (0.0, 0.0, 0.0)),  # the wrist along the rest normal (PARENT's reference)
             ((0.0, 0.0, 9.0), (0.0, 0.0, 0.0))]  # out of reach, straight up
    for location, rotation in cases:
        target.location, target.rotation_euler = location, rotation
        bpy.context.view_layer.update()
        for name in ("b1", "b2", "b3"):
            assert np.all(np.isfinite(np.array(obj.pose.bones[name].matrix)))
        assert_drivers_alive(obj)
        tip = np.array(obj.pose.bones["b3"].tail)
        if np.linalg.norm(location) < 2.5:  # reachable: the tip is on the target whatever the plane
            assert np.linalg.norm(tip - np.array(location)) < POSITION_TOLERANCE * 2.5
    target.location, target.rotation_euler = (0.8, 0.3, 1.0), (0.4, 0.2, 0.1)
    assert_rig_matches_solve(bpy, obj, spec)  # no driver was disabled on the way


def test_a_file_opened_without_the_add_on_or_scripts_follows_a_moved_target(blender, tmp_path):
    bpy = blender
    import blender_ik_addon
    rng = np.random.default_rng(3)
    obj = random_rig(rng)
    target = add_empty()
    target.location, target.rotation_euler = reachable_target(rng, obj)
    spec = make_spec(target, roll_axis="Y")
    build(bpy, obj, spec)
    # A control: a Python driver elsewhere in the file.
    probe = add_empty("Probe")
    probe_driver = probe.driver_add("location", 0).driver
    probe_driver.expression = "len('abc') * frame"
    assert not probe_driver.is_simple_expression
    path = str(tmp_path / "rig.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    blender_ik_addon.unregister()
    saved = dict(bpy.app.driver_namespace)
    try:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False, use_scripts=False)
        # The bpy module trusts every file (a Python driver still runs after use_scripts=False), so take
        # Python away from drivers altogether: with an empty namespace, no expression Python evaluates
        # can call anything. The control's driver fails; the rig's, evaluated natively, do not.
        namespace = bpy.app.driver_namespace  # a new one for each file read
        namespace.clear()
        namespace["__builtins__"] = {}
        obj, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
        spec = make_spec(target, roll_axis="Y")
        for _ in range(3):
            target.location, target.rotation_euler = reachable_target(rng, obj)
            assert_rig_matches_solve(bpy, obj, spec)
        bpy.context.scene.frame_set(bpy.context.scene.frame_current + 1)
        assert not bpy.data.objects["Probe"].animation_data.drivers[0].driver.is_valid
        assert_rig_matches_solve(bpy, obj, spec)
    finally:
        bpy.app.driver_namespace.clear()
        bpy.app.driver_namespace.update(saved)
        blender_ik_addon.register()


def test_a_library_override_of_a_linked_rig_follows(blender, tmp_path):
    bpy = blender
    obj = build_arm(rolls=(0.3, -0.2, 0.5))
    target = add_empty(location=(0.8, 0.3, 1.0), rotation=(0.3, 0.2, 0.1))
    collection = bpy.data.collections.new("Rig")
    bpy.context.scene.collection.children.link(collection)
    for item in (obj, target):
        bpy.context.scene.collection.objects.unlink(item)
        collection.objects.link(item)
    spec = make_spec(target, up_axis="-X")
    build(bpy, obj, spec)
    library = str(tmp_path / "library.blend")
    bpy.ops.wm.save_as_mainfile(filepath=library, copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(library, link=True) as (data_from, data_to):
        data_to.collections = ["Rig"]
    linked = data_to.collections[0]
    bpy.context.scene.collection.children.link(linked)
    linked.override_hierarchy_create(bpy.context.scene, bpy.context.view_layer, do_fully_editable=True)
    obj = next(o for o in bpy.data.objects if o.type == "ARMATURE" and o.library is None)
    target = next(o for o in bpy.data.objects if o.type == "EMPTY" and o.library is None)
    assert obj.override_library is not None and target.override_library is not None
    spec = make_spec(target, up_axis="-X")
    rng = np.random.default_rng(11)
    for _ in range(3):
        target.location, target.rotation_euler = reachable_target(rng, obj, up_axis="-X")
        assert_rig_matches_solve(bpy, obj, spec)
    with pytest.raises(rig.ChainError, match="remove the rig in the library file"):
        native_rig.remove(obj, "arm")  # its bones are the library's
    assert native_rig.is_built(obj, "arm")
    assert_rig_matches_solve(bpy, obj, spec)


def armature_state(obj):
    """Everything build() may touch: bones (rest, hierarchy, flags, collections), pose constraints,
    drivers, bone collections, custom properties."""
    bones = {b.name: (b.parent.name if b.parent else None, b.use_connect, b.use_deform, b.inherit_scale,
                      tuple(np.round(np.array(b.matrix_local), 6).ravel()), round(b.length, 6),
                      tuple(c.name for c in b.collections)) for b in obj.data.bones}
    constraints = {pb.name: [(c.name, c.type, c.mute) for c in pb.constraints] for pb in obj.pose.bones}
    animation = obj.animation_data
    drivers = None if animation is None else [(f.data_path, f.array_index, f.driver.expression)
                                              for f in animation.drivers]
    collections = [(c.name, c.is_visible) for c in obj.data.collections]
    properties = {key: value if isinstance(value, (str, int, float)) else type(value).__name__
                  for key, value in obj.items()}
    return (bones, constraints, drivers, collections, properties, obj.data.bones.active.name
            if obj.data.bones.active else None, getattr(obj.data.collections.active, "name", None), obj.mode)


@pytest.mark.parametrize("existing", [False, True])
def test_remove_restores_the_armature(blender, existing):
    bpy = blender
    obj = build_arm(connected=False)
    targets = [add_empty(f"Target{i}", (0.8, 0.3 * i, 1.0)) for i in range(2)]
    if existing:  # the user's own collections, custom property, driver and muted constraint stay as they are
        obj.data.collections.new("Arm bones").assign(obj.data.bones["b1"])
        obj["note"] = "mine"
        obj.pose.bones["root"].driver_add("location", 2).driver.expression = "0.1"
        obj.pose.bones["b2"].constraints.new("IK").mute = True
        obj.data.bones.active = obj.data.bones["b2"]
    bpy.context.view_layer.update()
    before = armature_state(obj)
    pose_before = {pb.name: np.array(pb.matrix) for pb in obj.pose.bones}
    chain = build(bpy, obj, make_spec(targets[0], name="one"))
    native_rig.set_muted(obj, "one", True)  # a second rig on the same armature (here on the same bones)
    build(bpy, obj, make_spec(targets[1], name="two", plane="PARENT"))
    assert native_rig.built_chains(obj) == ["one", "two"]
    assert armature_state(obj) != before
    obj.data.bones["b2"].name = "elbow"  # renamed after the build: Blender renames it in the rig, not the record
    assert native_rig.remove(obj, "one") and native_rig.remove(obj, "two")
    obj.data.bones["elbow"].name = "b2"
    assert not native_rig.remove(obj, "two")
    assert armature_state(obj) == before
    bpy.context.view_layer.update()
    for name, matrix in pose_before.items():
        np.testing.assert_allclose(np.array(obj.pose.bones[name].matrix), matrix, atol=1e-6)
    assert chain.names == ("b1", "b2", "b3")


@pytest.mark.parametrize("case, message", [
    ("built", "already has a rig"),
    ("no_pole", "Set the pole"),
    ("no_name", "needs a name"),
    ("chain_target", "target 'b2' hangs from the chain"),
    ("below_chain_pole", "pole 'finger' hangs from the chain"),
    ("mirrored", "Armature 'Arm' has a negative \\(mirroring\\) scale"),
    ("mirrored_target", "target 'Target' has a negative \\(mirroring\\) scale"),
])
def test_refused_builds_change_nothing(blender, case, message):
    bpy = blender
    obj = build_arm()
    target = add_empty(location=(0.8, 0.3, 1.0))
    if case == "built":
        build(bpy, obj, make_spec(target))
    settings = {"no_pole": dict(plane="POLE"),
                "no_name": dict(name=""), "chain_target": dict(target=obj, target_bone="b2"),
                "below_chain_pole": dict(plane="POLE", pole=obj, pole_bone="finger")}.get(case, {})
    if case == "below_chain_pole":
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        finger = obj.data.edit_bones.new("finger")
        finger.head, finger.tail, finger.parent = (1.0, 0.0, 1.5), (1.2, 0.0, 1.5), obj.data.edit_bones["b3"]
        bpy.ops.object.mode_set(mode="OBJECT")
    spec = make_spec(settings.pop("target", target), **settings)
    if case == "mirrored":
        obj.scale = (-1.0, -1.0, -1.0)
    elif case == "mirrored_target":  # a mirrored control, as for the other side of a body
        target.scale = (-1.0, 1.0, 1.0)
    bpy.context.view_layer.update()
    chain = rig.read_chain(obj, "b3") if case != "built" else chain_without_rig(obj)
    before = armature_state(obj)
    with pytest.raises(rig.ChainError, match=message):
        native_rig.build(obj, chain, spec)
    assert armature_state(obj) == before


def test_a_build_that_fails_half_way_leaves_nothing_behind(blender, monkeypatch):
    bpy = blender
    obj = build_arm()
    spec = make_spec(add_empty(location=(0.8, 0.3, 1.0)))
    bpy.context.view_layer.update()
    chain = rig.read_chain(obj, "b3")
    before = armature_state(obj)
    real = native_rig._driver
    calls = []

    def failing_driver(*args, **kwargs):  # the second driver fails: bones and constraints already exist
        calls.append(args)
        if len(calls) == 2:
            raise RuntimeError("simulated failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(native_rig, "_driver", failing_driver)
    with pytest.raises(RuntimeError, match="simulated failure"):
        native_rig.build(obj, chain, spec)
    assert armature_state(obj) == before
    assert not native_rig.is_built(obj, "arm")


def chain_without_rig(obj):
    native_rig.set_muted(obj, "arm", True)
    try:
        return rig.read_chain(obj, "b3")
    finally:
        native_rig.set_muted(obj, "arm", False)


def test_a_built_chain_is_refused_by_the_python_solve_until_muted(blender):
    """The rig's constraints count as the chain's constraints for the solve, bake and live mode."""
    bpy = blender
    obj = build_arm()
    build(bpy, obj, make_spec(add_empty(location=(0.8, 0.3, 1.0))))
    with pytest.raises(rig.ChainError, match="has constraints"):
        rig.read_chain(obj, "b3")
    native_rig.set_muted(obj, "arm", True)
    rig.read_chain(obj, "b3")
