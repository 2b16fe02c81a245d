"""Review of "a re-bake leaves Blender no dependency relations to rebuild": the snapshot that reads keys into arrays
(up to keys._SNAPSHOT_READ_POINTS) puts them back exactly on either side of its limit; the target sampled frame by
frame (sampling.sample's keep_data) gives the same keys as the sampling of action copies; a chain below another that
fails after the upper chain's keys are written leaves keys, pose and bpy.data as they were."""
import numpy as np
import pytest

from rigs import add_empty, build_arm, pose_snapshot
from test_chains import build_body
from test_safety import all_keys


def _keyed_arm(bpy, points):
    """The arm with ``points`` keys on its chain's rotation channels, most outside the baked range 10-20, every
    attribute varied (interpolation, easing, handle types, key types, handles, back/amplitude/period, selection)."""
    from blender_ik_addon import keys
    obj = build_arm(modes=("QUATERNION", "XYZ", "AXIS_ANGLE"))
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    channels = [('pose.bones["b1"].rotation_quaternion', 4), ('pose.bones["b2"].rotation_euler', 3),
                ('pose.bones["b3"].rotation_axis_angle', 4)]
    curves = [(path, index) for path, size in channels for index in range(size)]
    counts = np.full(len(curves), points // len(curves))
    counts[: points - counts.sum()] += 1
    rng = np.random.default_rng(11)
    for (path, index), count in zip(curves, counts):
        obj.keyframe_insert(path, index=index, frame=-5000)
        fcurve = keys.find_fcurve(obj, path, index)
        points_ = fcurve.keyframe_points
        points_.add(int(count) - 1)
        frames = np.sort(rng.choice(np.arange(-4000, 6000), int(count), replace=False)).astype(np.float32) * 0.5
        co = np.column_stack((frames, rng.normal(size=count))).astype(np.float32)
        attributes = {"co": co, "handle_left": co - rng.uniform(0.05, 1.0, (count, 2)),
                      "handle_right": co + rng.uniform(0.05, 1.0, (count, 2))}
        for name in ("handle_left_type", "handle_right_type", "interpolation", "easing", "type"):
            items = len(bpy.types.Keyframe.bl_rna.properties[name].enum_items)
            attributes[name] = rng.integers(0, items, count)
        for name in ("back", "amplitude", "period"):
            attributes[name] = rng.uniform(0, 3, count)
        for name in ("select_control_point", "select_left_handle", "select_right_handle"):
            attributes[name] = rng.integers(0, 2, count).astype(bool)
        for name, values in attributes.items():
            width, dtype = keys.KEY_ATTRIBUTES[name]
            points_.foreach_set(name, np.asarray(values, dtype=dtype).ravel())
    bpy.context.scene.frame_set(15)
    return obj


@pytest.mark.parametrize("points", [20_000, 20_001], ids=["read", "copied"])
@pytest.mark.parametrize("failure", ["error_in_the_check", "interrupt_after_the_keys"])
def test_the_keys_come_back_exactly_on_either_side_of_the_snapshot_limit(blender, monkeypatch, points, failure):
    bpy = blender
    from blender_ik_addon import bake, keys
    from blender_ik_addon.ops import bake_armature
    assert keys._SNAPSHOT_READ_POINTS == 20_000
    obj = _keyed_arm(bpy, points)
    snapshots = []
    snapshot_channels = keys.snapshot_channels

    def watched(*args):
        snapshots.append(snapshot_channels(*args))
        return snapshots[-1]

    monkeypatch.setattr(keys, "snapshot_channels", watched)
    if failure == "error_in_the_check":
        def crash(*_args):
            raise RuntimeError("unexpected")
        monkeypatch.setattr(bake, "_verify", crash)
        expected = RuntimeError
    else:
        write_keys = keys.write_keys

        def interrupted(*args, **kwargs):
            write_keys(*args, **kwargs)
            raise KeyboardInterrupt
        monkeypatch.setattr(keys, "write_keys", interrupted)
        expected = KeyboardInterrupt
    before, pose, actions = all_keys(obj), pose_snapshot(obj), set(bpy.data.actions)
    with pytest.raises(expected):
        bake_armature(bpy.context.scene, obj, "ALL", 10, 20)
    assert bool(snapshots[0]["saved"]) == (points <= 20_000)
    assert all_keys(obj) == before and pose_snapshot(obj) == pose
    assert set(bpy.data.actions) == actions


def _animate(obj, rng, frames, interpolations):
    from blender_ik_addon import keys
    for frame in frames:
        obj.location = tuple(np.array(obj.location) * 0.5 + rng.normal(scale=0.3, size=3))
        obj.rotation_euler = tuple(rng.uniform(-1, 1, 3))
        obj.keyframe_insert("location", frame=frame)
        obj.keyframe_insert("rotation_euler", frame=frame)
    for column, fcurve in enumerate(keys.object_fcurves(obj)):
        for row, key in enumerate(fcurve.keyframe_points):
            key.interpolation = interpolations[(column + row) % len(interpolations)]
            key.easing = ("EASE_IN", "EASE_OUT", "EASE_IN_OUT", "AUTO")[(3 * column + row) % 4]


def _parented_target_scene(bpy):
    """An arm whose target hangs from an animated parent under an animated grandparent, with F-curve modifiers
    (noise, cycles, stepped, limits, generator, envelope, a restricted noise) on target and parent."""
    from blender_ik_addon import keys
    rng = np.random.default_rng(7)
    obj = build_arm(modes=("XYZ", "QUATERNION", "AXIS_ANGLE"))
    target = add_empty(location=(0.9, 0.3, 1.1))
    _animate(target, rng, (-40, -10, 5, 17, 30, 44, 61, 80),
             ["BEZIER", "ELASTIC", "BACK", "BOUNCE", "SINE", "CONSTANT", "LINEAR", "EXPO", "CIRC", "QUAD"])
    curves = keys.object_fcurves(target)
    curves[0].modifiers.new("NOISE")
    curves[1].modifiers.new("CYCLES")
    curves[2].modifiers.new("STEPPED").frame_step = 3.5
    limits = curves[3].modifiers.new("LIMITS")
    limits.use_max_y, limits.max_y = True, 0.2
    curves[4].modifiers.new("GENERATOR").use_additive = True
    curves[5].modifiers.new("ENVELOPE")
    noise = curves[5].modifiers.new("NOISE")
    noise.use_restricted_range, noise.frame_start, noise.frame_end, noise.blend_in = True, 3, 20, 2
    parent = add_empty("Parent", location=(0.2, -0.1, 0.3), rotation=(0.1, 0.2, 0.3))
    parent.scale = (1.2, 0.9, 1.1)
    _animate(parent, rng, (-30, 0, 22, 50, 70), ["QUINT", "BEZIER", "BACK"])
    keys.object_fcurves(parent)[0].modifiers.new("NOISE")
    grandparent = add_empty("Grandparent", location=(0.0, 0.1, -0.2))
    _animate(grandparent, rng, (-50, 15, 45), ["BEZIER", "LINEAR"])
    parent.parent = grandparent
    target.parent = parent
    target.matrix_parent_inverse = parent.matrix_world.inverted()
    bpy.context.view_layer.objects.active = obj
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.update()
    return obj


@pytest.mark.parametrize("start, end, step, output", [(1, 60, 1, "KEYS"), (0, 40, 1, "SAMPLES"),
                                                      (-20, 100, 2, "KEYS"), (5, 200, 3, "KEYS")])
def test_a_target_evaluated_frame_by_frame_gives_the_same_keys(blender, monkeypatch, start, end, step, output):
    """sampling.sample(keep_data=True) (a re-bake that creates no F-curve) evaluates the target and its animated
    parents frame by frame instead of sampling copies of their actions: the keys are the same, bit for bit."""
    bpy = blender
    from blender_ik_addon import fcurves, sampling
    from blender_ik_addon.ops import bake_armature
    copied = []
    evaluate_many = fcurves.evaluate_many

    def watched(*args, **kwargs):
        copied.append(True)
        return evaluate_many(*args, **kwargs)

    monkeypatch.setattr(fcurves, "evaluate_many", watched)
    found = []
    for limit in (sampling._KEEP_DATA_EVALUATIONS, 0):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        obj = _parented_target_scene(bpy)
        bake_armature(bpy.context.scene, obj, "ALL", start, end, step=step, output=output)
        monkeypatch.setattr(sampling, "_KEEP_DATA_EVALUATIONS", limit)
        copied.clear()
        bake_armature(bpy.context.scene, obj, "ALL", start, end, step=step, output=output)
        monkeypatch.undo()
        monkeypatch.setattr(fcurves, "evaluate_many", watched)
        assert bool(copied) == (limit == 0)  # frame by frame, or sampled from copies
        found.append(all_keys(obj))
    assert found[0] == found[1]


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
@pytest.mark.parametrize("limits", ["default", "zero"])
@pytest.mark.parametrize("rebake", [False, True], ids=["first_bake", "rebake"])
@pytest.mark.parametrize("failure", [RuntimeError, KeyboardInterrupt])
def test_a_failing_chain_below_another_leaves_everything_as_it_was(blender, monkeypatch, output, limits, rebake,
                                                                   failure):
    """The finger chain (below the arm chain, baked after it) fails while sampled, after the arm's keys are written:
    the arm's and finger's keys and the pose come back, and no throwaway copy (the snapshot's, the targets') stays
    in bpy.data, whether the keys were read or the action copied and the targets evaluated or copied."""
    bpy = blender
    from blender_ik_addon import keys, sampling
    from blender_ik_addon.ops import bake_armature
    obj = build_body(bpy, fingers=True)
    rng = np.random.default_rng(5)
    for tip in ("finger3.L", "hand.L"):
        chain = obj.blender_ik.chains.add()
        chain.name, chain.tip_bone = tip, tip
        goal = chain.target = add_empty(f"{tip}_goal")
        base = np.array([0.3, -0.25, 1.0]) if tip == "hand.L" else np.array([0.32, -0.3, 0.85])
        for frame in (1, 20, 45, 70):
            goal.location = tuple(base + rng.normal(scale=0.05, size=3))
            goal.rotation_euler = tuple(rng.uniform(-0.5, 0.5, 3))
            goal.keyframe_insert("location", frame=frame)
            goal.keyframe_insert("rotation_euler", frame=frame)
    for name in ("upper_arm.L", "forearm.L", "hand.L", "finger1.L", "finger2.L", "finger3.L"):
        obj.pose.bones[name].rotation_mode = "XYZ"
    for frame in (2, 30, 60):  # the finger has keys; the arm none before the first bake
        obj.pose.bones["finger1.L"].rotation_euler = tuple(rng.uniform(-0.3, 0.3, 3))
        obj.pose.bones["finger1.L"].keyframe_insert("rotation_euler", frame=frame)
    bpy.context.view_layer.objects.active = obj
    bpy.context.scene.frame_set(1)
    if rebake:
        bake_armature(bpy.context.scene, obj, "ALL", 1, 80, output=output)
    if limits == "zero":
        monkeypatch.setattr(keys, "_SNAPSHOT_READ_POINTS", 0)
        monkeypatch.setattr(sampling, "_KEEP_DATA_EVALUATIONS", 0)
    sample = sampling.sample
    calls = []

    def second_level_fails(*args, **kwargs):
        calls.append(True)
        if len(calls) == 2:
            raise failure("the finger chain failed")
        return sample(*args, **kwargs)

    monkeypatch.setattr(sampling, "sample", second_level_fails)
    before, pose, actions = all_keys(obj), pose_snapshot(obj), {action.name for action in bpy.data.actions}
    with pytest.raises(failure):
        bake_armature(bpy.context.scene, obj, "ALL", 1, 80, output=output)
    assert len(calls) == 2
    assert all_keys(obj) == before and pose_snapshot(obj) == pose
    assert {action.name for action in bpy.data.actions} == actions


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_the_action_a_first_bake_creates_is_named_as_blender_names_it(blender, output):
    """The armature's new action gets the name Blender gives it when nothing else is around ('ArmAction.001' when
    the target already plays an action named 'ArmAction'), not the next one: the throwaway copy of the target's
    action ('ArmAction.001') was still in bpy.data, waiting for the end of the bake, when the action was made."""
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj = build_arm()
    target = add_empty(location=(0.9, 0.3, 1.1))
    for frame, x in ((1, 0.9), (50, 0.6), (120, 0.8)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    target.animation_data.action.name = "ArmAction"
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.objects.active = obj
    bake_armature(bpy.context.scene, obj, "ALL", 1, 100, output=output)  # 100 frames: the target's action is copied
    assert obj.animation_data.action.name == "ArmAction.001"
    assert sorted(action.name for action in bpy.data.actions) == ["ArmAction", "ArmAction.001"]
