"""Issue 10: never report success for a pose Blender won't show; never lose data. Judged by Blender's evaluated
pose, the keys read back attribute for attribute, and the refusal's message."""
import importlib
import math

import numpy as np
import pytest

from rigs import add_empty, angle_between, axis_of, build_arm, pose_snapshot, readout, tip_and_direction

POSITION_TOLERANCE = 1e-5  # of the chain's length
ANGLE_TOLERANCE = 2e-5


def arm_with_target(bpy, location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1), **arm):
    obj = build_arm(**arm)
    target = add_empty(location=location, rotation=rotation)
    bpy.context.view_layer.objects.active = obj
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.update()
    return obj, target


def all_keys(obj):
    """Every F-curve of the object's own animation with every attribute of every key and every sample, to show
    nothing changed."""
    from blender_ik_addon import keys
    def attributes(fcurve):
        read = keys._read_keys(fcurve.keyframe_points, keys.KEY_ATTRIBUTES)
        found = {name: values.tolist() for name, values in read.items()}
        found["samples"] = [(tuple(point.co), point.select) for point in fcurve.sampled_points]
        return found
    return {(fcurve.data_path, fcurve.array_index): attributes(fcurve) for fcurve in keys.object_fcurves(obj)}


def key_b1(obj, frames=(1, 30), value=(0.9, 0.3, 0.0, 0.1)):
    """Existing keys on the chain's first bone, the user's work the bake must not lose."""
    pose_bone = obj.pose.bones["b1"]
    pose_bone.rotation_quaternion = value
    for frame in frames:
        pose_bone.keyframe_insert("rotation_quaternion", frame=frame)


def on_target(obj, target):
    tip, direction = tip_and_direction(obj)
    return (np.linalg.norm(tip - np.array(target.matrix_world.translation)) < POSITION_TOLERANCE * 2.2
            and angle_between(direction, axis_of(target)) < ANGLE_TOLERANCE)


def b1_fcurve(obj, index=0):
    from blender_ik_addon import keys
    return keys.find_fcurve(obj, 'pose.bones["b1"].rotation_quaternion', index)


def link_action_from_library(bpy, tmp_path, obj):
    """Save the arm's action in a library file and give the arm that action, linked from there."""
    from blender_ik_addon import keys
    path = str(tmp_path / "actions.blend")
    action = obj.animation_data.action
    action.name = "Walk"
    action.use_fake_user = True
    bpy.data.libraries.write(path, {action}, fake_user=True)
    with bpy.data.libraries.load(path, link=True) as (data_from, data_to):
        data_to.actions = ["Walk"]
    linked = data_to.actions[0]
    obj.animation_data.action = linked
    if keys._LAYERED and obj.animation_data.action_slot is None:
        obj.animation_data.action_slot = linked.slots[0]
    assert linked.library is not None


def share_action(bpy, obj):
    """A second armature playing the same action (and slot) as the arm."""
    other = build_arm(name="Twin")
    other.animation_data_create().action = obj.animation_data.action
    from blender_ik_addon import keys
    if keys._LAYERED:
        other.animation_data.action_slot = obj.animation_data.action_slot
    bpy.context.view_layer.objects.active = obj
    return other


def share_action_in_a_strip(bpy, obj):
    """A second armature playing the arm's action (and slot) in an NLA strip, and a fake user on the action."""
    other = build_arm(name="Twin")
    strip = other.animation_data_create().nla_tracks.new().strips.new("walk", 1, obj.animation_data.action)
    from blender_ik_addon import keys
    if keys._LAYERED:
        strip.action_slot = obj.animation_data.action_slot
    obj.animation_data.action.use_fake_user = True
    bpy.context.view_layer.objects.active = obj
    return other


def tweak_mode(bpy, obj):
    """Push the action into an NLA strip that starts at frame 11 and edit it in tweak mode."""
    data = obj.animation_data
    action = data.action
    track = data.nla_tracks.new()
    strip = track.strips.new("strip", 11, action)
    data.action = None
    strip.select = True
    track.select = True
    data.use_tweak_mode = True
    assert data.use_tweak_mode


def blend_over_nla(bpy, obj):
    data = obj.animation_data
    track = data.nla_tracks.new()
    other = bpy.data.actions.new("Base")
    track.strips.new("base", 1, other)
    data.action_influence = 0.5


def animate_a_constraint(bpy, obj):
    """A constraint on a chain bone that is off now and on later: validation now cannot see it act."""
    constraint = obj.pose.bones["b2"].constraints.new("COPY_ROTATION")
    constraint.influence = 0.0
    constraint.keyframe_insert("influence", frame=1)
    constraint.influence = 1.0
    constraint.keyframe_insert("influence", frame=30)
    bpy.context.scene.frame_set(1)


KEY_CASES = {
    "locked": (lambda bpy, obj, tmp: setattr(b1_fcurve(obj, 2), "lock", True),
               r"Chain 'arm': The F-curve rotation_quaternion\[2\] of bone 'b1' is locked"),
    "muted": (lambda bpy, obj, tmp: setattr(b1_fcurve(obj, 1), "mute", True),
              r"rotation_quaternion\[1\] of bone 'b1' is muted \(or its group is\), so its keys would not play"),
    "modifier": (lambda bpy, obj, tmp: b1_fcurve(obj, 0).modifiers.new("CYCLES"),
                 r"rotation_quaternion\[0\] of bone 'b1' has modifiers \(Cycles\)"),
    "linked_action": (lambda bpy, obj, tmp: link_action_from_library(bpy, tmp, obj),
                      r"action 'Walk' is linked from library .*lost on reload"),
    "shared_action": (lambda bpy, obj, tmp: share_action(bpy, obj),
                      r"action '.*' is also played by 'Twin'"),
    "shared_in_a_strip": (lambda bpy, obj, tmp: share_action_in_a_strip(bpy, obj),
                          r"action '.*' is also played by 'Twin'"),
    "tweak_mode": (lambda bpy, obj, tmp: tweak_mode(bpy, obj), r"NLA is in tweak mode"),
    "blended_action": (lambda bpy, obj, tmp: blend_over_nla(bpy, obj),
                       r"blended over its NLA tracks \(influence 0.5, blend Replace\)"),
    "time_remap": (lambda bpy, obj, tmp: setattr(bpy.context.scene.render, "frame_map_new", 200),
                   r"The scene remaps time \(Time Stretching 100 -> 200\)"),
    "animated_constraint": (lambda bpy, obj, tmp: animate_a_constraint(bpy, obj),
                            r"Bone 'b2' has an animated constraint \(constraints\[\"Copy Rotation\"\].influence\)"),
    "beyond_frame_limit": (None, r"Frames 1048500-1048600 go beyond Blender's frame limits"),
    "huge_range": (None, r"Baking 2000001 frames × 1 chain\(s\) would need about 7.6 GB .*or to samples$"),
}


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
@pytest.mark.parametrize("case", KEY_CASES)
def test_keys_that_are_not_the_users_to_change_are_refused_and_kept(blender, tmp_path, monkeypatch, case, output):
    bpy = blender
    from blender_ik_addon import bake
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    key_b1(obj)
    make, message = KEY_CASES[case]
    if case == "huge_range" and output == "SAMPLES":
        # Samples take a quarter of the memory: within the frame limits one chain's always fits 2 GB.
        monkeypatch.setattr(bake, "MEMORY_BUDGET", 1 << 30)
        message = r"Baking 2000001 frames × 1 chain\(s\) would need about 1.9 GB of memory \(more than 1 GB\)"
    if make is not None:
        make(bpy, obj, tmp_path)
    start, end = {"beyond_frame_limit": (1048500, 1048600), "huge_range": (-1000000, 1000000)}.get(case, (1, 40))
    bpy.context.view_layer.update()
    before, pose = all_keys(obj), pose_snapshot(obj)
    action = obj.animation_data.action
    with pytest.raises(ChainError, match=message):
        bake_armature(bpy.context.scene, obj, frame_start=start, frame_end=end, output=output)
    assert all_keys(obj) == before and pose_snapshot(obj) == pose
    assert obj.animation_data.action == action
    if case in ("shared_action", "shared_in_a_strip"):
        # Asked for, the shared action is keyed: both armatures now play the bake.
        bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=40, allow_shared=True, output=output)
        bpy.context.scene.frame_set(20)
        twin = bpy.data.objects["Twin"]
        assert on_target(obj, target)
        assert twin.pose.bones["b2"].rotation_quaternion == obj.pose.bones["b2"].rotation_quaternion


def test_the_operator_refuses_frames_beyond_the_limit_instead_of_clamping(blender):
    bpy = blender
    obj, target = arm_with_target(bpy)
    limit = bpy.context.scene.bl_rna.properties["frame_current"].hard_max
    obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=limit)  # a real key at the last frame
    before = all_keys(obj)
    with pytest.raises(RuntimeError, match="beyond Blender's frame limits"):
        bpy.ops.blender_ik.bake(frame_start=limit + 10, frame_end=limit + 20)
    assert all_keys(obj) == before


def test_the_range_boundary_is_exact(blender):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    obj.pose.bones["b1"].keyframe_insert("rotation_quaternion", frame=10)
    points = b1_fcurve(obj, 1).keyframe_points  # keyframe_insert would merge keys this close: add them directly
    points.add(3)
    for point, (frame, value) in zip(points, ((9.9995, 0.1), (10.0, 0.2), (20.0, 0.3), (20.0005, 0.4))):
        point.co = point.handle_left = point.handle_right = (frame, value)
    points.handles_recalc()  # (not fcurve.update(): it merges keys this close)
    before = all_keys(obj)[('pose.bones["b1"].rotation_quaternion', 1)]
    bake_armature(bpy.context.scene, obj, frame_start=10, frame_end=20)
    after = all_keys(obj)[('pose.bones["b1"].rotation_quaternion', 1)]
    frames = [co[0] for co in after["co"]]
    assert frames == [before["co"][0][0]] + list(range(10, 21)) + [before["co"][-1][0]]
    for name, values in before.items():  # the keys just outside, attribute for attribute
        if name not in ("handle_left", "handle_right", "samples"):  # their neighbours changed: auto handles follow
            assert (after[name][0], after[name][-1]) == (values[0], values[-1]), name


def scale_parent(obj, scale):
    obj.pose.bones["root"].scale = scale


def child_of_chain(bpy, obj, target):
    constraint = target.constraints.new("CHILD_OF")
    constraint.target, constraint.subtarget = obj, "b2"


def driven_by_chain(bpy, obj, target):
    driver = target.driver_add("location", 0).driver
    variable = driver.variables.new()
    variable.type = "TRANSFORMS"
    variable.targets[0].id, variable.targets[0].bone_target = obj, "b3"
    variable.targets[0].transform_type = "ROT_Y"
    driver.expression = "var + 0.9"


def pole_copies_chain(bpy, obj, target):
    pole = add_empty("Pole", (0.0, 2.0, 1.0))
    holder = add_empty("Holder")
    constraint = holder.constraints.new("COPY_LOCATION")
    constraint.target, constraint.subtarget = obj, "b3"
    pole.parent = holder
    chain = obj.blender_ik.chains[0]
    chain.plane, chain.pole = "POLE", pole


def edit_mode(bpy, obj, target):
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    obj.data.edit_bones["b2"].tail.x += 0.3  # an edit not flushed to the bones yet


STATE_CASES = {
    "rest_position": (lambda bpy, obj, target: setattr(obj.data, "pose_position", "REST"),
                      r"Armature 'Arm' shows its Rest Position"),
    "edit_mode": (edit_mode, r"Armature 'Arm' is in Edit Mode"),
    "negative_parent_scale": (lambda bpy, obj, target: scale_parent(obj, (-1.0, -1.0, -1.0)),
                              r"Bone 'root' above the chain has a negative \(mirroring\) scale in the pose"),
    "non_uniform_parent_scale": (lambda bpy, obj, target: scale_parent(obj, (1.0, 1.3, 1.0)),
                                 r"Bone 'root' above the chain has a non-uniform scale in the pose"),
    "child_of_constraint": (child_of_chain, r"The target 'Target' moves with the chain: constraint 'Child Of' of "
                                            r"'Target' follows chain bone 'b2'"),
    "driver": (driven_by_chain, r"the driver on 'location' of 'Target' reads chain bone 'b3'"),
    "pole_through_parent": (pole_copies_chain,
                            r"The pole 'Pole' moves with the chain: constraint 'Copy Location' of 'Holder'"),
}


def solve_api(bpy, obj):
    from blender_ik_addon import props
    from blender_ik_addon.ops import solve_chains
    solve_chains(obj, [props.chain_spec(c) for c in obj.blender_ik.chains])


def bake_api(bpy, obj):
    from blender_ik_addon.ops import bake_armature
    bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=10)


@pytest.mark.parametrize("call", [solve_api, bake_api], ids=["solve", "bake"])
@pytest.mark.parametrize("case", STATE_CASES)
def test_states_that_change_what_the_bones_do_are_refused(blender, case, call):
    bpy = blender
    from blender_ik_addon.chain import ChainError
    obj, target = arm_with_target(bpy)
    key_b1(obj)
    make, message = STATE_CASES[case]
    make(bpy, obj, target)
    if obj.mode != "EDIT":
        bpy.context.view_layer.update()
    before, pose = all_keys(obj), pose_snapshot(obj)
    with pytest.raises(ChainError, match=message):
        call(bpy, obj)
    assert all_keys(obj) == before and pose_snapshot(obj) == pose


@pytest.mark.parametrize("local_location", [True, False])
def test_unconnected_bones_moved_in_the_pose_solve_exactly(blender, local_location):
    bpy = blender
    obj, target = arm_with_target(bpy, connected=False, directions=[(0, 0, 1), (0.5, 0.2, 0.8), (1, 0, 0.2)],
                                  location=(0.7, 0.3, 1.2), rotation=(0.5, 0.2, -0.4))
    for name in ("b2", "b3"):
        obj.data.bones[name].use_local_location = local_location
        obj.pose.bones[name].location = (0.04, -0.03, 0.05)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert on_target(obj, target)


def test_checks_happen_at_the_baked_frames_not_the_current_one(blender):
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    target.keyframe_insert("scale", frame=1)
    target.scale = (1.0, 1.0, 0.0)  # flat from frame 30 on
    target.keyframe_insert("scale", frame=30)
    bpy.context.scene.frame_set(40)  # the current frame is outside the range and flat there
    result = bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=10)
    assert len(result.frames) == 10
    bpy.context.scene.frame_set(5)
    assert on_target(obj, target)
    with pytest.raises(ChainError, match="zero-scale up axis at frames 30-35"):
        bake_armature(bpy.context.scene, obj, frame_start=20, frame_end=35)


# Frames 4-6 leave the plane undefined: Target Axis with the target straight above the base, its Z up along
# the arm; Follow Parent with the wrist along the rest hinge axis (the arm's rest bend is in XZ: sideways, +Y).
UNDEFINED = {"TARGET": ((0.0, 0.0, 1.8), (0.0, 0.0, 0.0)), "PARENT": ((0.0, 1.9, 0.0), (-math.pi / 2, 0.0, 0.0))}


@pytest.mark.parametrize("plane", sorted(UNDEFINED))
def test_frames_with_an_undefined_bend_plane_are_reported(blender, plane):
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    obj.blender_ik.plane = plane
    undefined_location, undefined_rotation = UNDEFINED[plane]
    for frame in (1, 4, 6, 9):
        target.location = undefined_location if frame in (4, 6) else (0.9, 0.3, 1.1)
        target.rotation_euler = undefined_rotation if frame in (4, 6) else (0.2, 0.4, 0.1)
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    result = bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=9)
    assert result.chains[0].degenerate == [4, 5, 6]
    assert "3 with an undefined bend plane, kept from the frame before (4-6)" in result.summary()
    bpy.context.scene.frame_set(5)
    assert np.all(np.isfinite(tip_and_direction(obj)[0])) and on_target(obj, target)


FOUR_BONES = dict(lengths=(1.0, 0.8, 0.4, 0.3), rolls=(0.0,) * 4,
                  directions=[(0, 0, 1), (0.6, 0, 0.8), (1, 0, 0), (1, 0, -0.3)])


def ik_below_the_chain(obj, influence=1.0):
    """A leftover IK constraint on the bone below the chain whose chain reaches up into it: it moves the chain's
    bones, and nothing but the self-check looks below the chain."""
    goal = add_empty("Leftover", (0.2, -0.5, 0.4))
    constraint = obj.pose.bones["b4"].constraints.new("IK")
    constraint.target, constraint.chain_count, constraint.influence = goal, 3, influence
    return constraint


@pytest.mark.parametrize("current", [15, 40], ids=["current_frame_baked", "current_frame_outside"])
@pytest.mark.parametrize("existing, output", [("keys", "KEYS"), ("no_animation", "KEYS"), ("keys", "SAMPLES"),
                                              ("samples", "SAMPLES"), ("no_animation", "SAMPLES"),
                                              ("other_channels", "KEYS"), ("empty_curves", "KEYS"),
                                              ("other_channels", "SAMPLES"), ("empty_curves", "SAMPLES")])
@pytest.mark.parametrize("failure", ["self_check", "unexpected"])
@pytest.mark.parametrize("kept", ["read", "copied"])
def test_the_bake_checks_what_blender_shows_and_puts_everything_back(blender, monkeypatch, existing, output, current,
                                                                    failure, kept):
    """The self-check refuses a pose Blender does not show; that, or any error after the keys are written (here
    the check itself failing), puts keys, pose, actions and slots back exactly, whether the snapshot read the keys
    (a few) or copied the action (many: here forced)."""
    bpy = blender
    from blender_ik_addon import bake, keys
    if kept == "copied":
        monkeypatch.setattr(keys, "_SNAPSHOT_READ_POINTS", 0)
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy, **FOUR_BONES)
    if existing == "keys":  # for samples, inside the range: keys outside it are refused before any change
        key_b1(obj, frames=(1, 12, 30) if output == "KEYS" else (10, 12, 20))
    elif existing == "samples":
        key_b1(obj, frames=(10, 13, 20), value=(0.8, 0.1, 0.4, 0.2))
        for index in range(4):
            b1_fcurve(obj, index).convert_to_samples(10, 21)
        b1_fcurve(obj, 0).sampled_points[3].select = True
    elif existing == "other_channels":  # an action, but nothing on the chain's channels to put back
        obj.pose.bones["b4"].keyframe_insert("location", frame=3)
        obj.keyframe_insert("location", frame=5)
    elif existing == "empty_curves":  # the chain's F-curves are there, without keys
        key_b1(obj, frames=(1, 12, 30))
        for index in range(4):
            b1_fcurve(obj, index).keyframe_points.clear()
    if failure == "self_check":
        ik_below_the_chain(obj)
    else:
        def crash(*_args):
            raise RuntimeError("unexpected")
        monkeypatch.setattr(bake, "_verify", crash)
    # Something is kept only when the chain's channels have keys (or samples) to put back.
    snapshot = keys.snapshot_channels(obj, [f'pose.bones["{name}"].rotation_quaternion' for name in ("b1", "b2", "b3")])
    held = existing in ("keys", "samples")
    assert (snapshot["copy"] is not None, bool(snapshot["saved"])) == (held and kept == "copied", held and kept == "read")
    keys.discard_snapshot(snapshot)
    bpy.context.scene.frame_set(current)
    before, pose = all_keys(obj), pose_snapshot(obj)
    actions = set(bpy.data.actions)
    data = obj.animation_data
    slots = [slot.handle for slot in data.action.slots] if keys._LAYERED and data and data.action else None
    checked = min(current, 20)
    expected = (pytest.raises(ChainError, match=rf"At frame {checked}: Blender shows the tip of 'b3' .* the keys "
                                                "were put back as they were")
                if failure == "self_check" else pytest.raises(RuntimeError, match="unexpected"))
    with expected:
        bake_armature(bpy.context.scene, obj, frame_start=10, frame_end=20, output=output)
    assert all_keys(obj) == before and pose_snapshot(obj) == pose
    assert set(bpy.data.actions) == actions and bpy.context.scene.frame_current == current
    if slots is not None:
        assert [slot.handle for slot in obj.animation_data.action.slots] == slots


@pytest.mark.parametrize("units, shown", [("NONE", r"\d+(\.\d+)?"), ("METRIC", r"\d+(\.\d+)? cm")])
def test_solve_checks_what_blender_shows(blender, units, shown):
    """The refusal says how far off Blender shows the tip in the scene's units, as the read-out does (a scene in
    centimetres, Unit Scale 0.01: cm; it gave a bare armature-space number)."""
    bpy = blender
    obj, target = arm_with_target(bpy, **FOUR_BONES)
    bpy.context.scene.unit_settings.system = units
    bpy.context.scene.unit_settings.scale_length = 0.01
    ik_below_the_chain(obj)
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=f"Blender shows the tip of 'b3' {shown} from where the solve put it .* "
                                           "the IK constraint '.*' of bone 'b4' poses the chain's bones .*; nothing "
                                           "was changed"):
        bpy.ops.blender_ik.solve()
    assert pose_snapshot(obj) == before


def test_live_checks_what_blender_shows(blender):
    bpy = blender
    obj, target = arm_with_target(bpy, **FOUR_BONES)
    constraint = ik_below_the_chain(obj, influence=0.0)
    obj.blender_ik.chains[0].live = True
    assert readout(obj, "arm").status == "REACHED" and on_target(obj, target)
    constraint.influence = 1.0
    target.location.x -= 0.1  # an input changes: Live solves, and Blender does not show that solve
    bpy.context.view_layer.update()
    status = readout(obj, "arm")
    assert status.status == "ERROR" and "of bone 'b4' poses the chain's bones" in status.message
    assert "pose was put back" in status.message
    before = pose_snapshot(obj)
    for _ in range(3):  # refused once, not again on every update
        bpy.context.view_layer.update()
    assert pose_snapshot(obj) == before


LIVE_CHANGES = {
    "constraint_unmuted": lambda bpy, obj, target: setattr(obj.pose.bones["b2"].constraints[0], "mute", False),
    "constraint_influence": lambda bpy, obj, target: setattr(obj.pose.bones["b2"].constraints[0], "influence", 0.5),
    "rest_position": lambda bpy, obj, target: setattr(obj.data, "pose_position", "REST"),
    "target_child_of": lambda bpy, obj, target: child_of_chain(bpy, obj, target),
}


@pytest.mark.parametrize("change", LIVE_CHANGES)
def test_live_watches_everything_the_solve_validates(blender, change):
    bpy = blender
    obj, target = arm_with_target(bpy)
    if change.startswith("constraint"):  # there from the start, but doing nothing until the change
        constraint = obj.pose.bones["b2"].constraints.new("COPY_ROTATION")
        constraint.target = add_empty("Other", rotation=(0.3, 0.2, 0.1))
        constraint.mute = change == "constraint_unmuted"
        constraint.influence = 0.0 if change == "constraint_influence" else 1.0
    obj.blender_ik.chains[0].live = True
    assert readout(obj, "arm").status == "REACHED" and on_target(obj, target)
    LIVE_CHANGES[change](bpy, obj, target)
    bpy.context.view_layer.update()
    status = readout(obj, "arm")
    assert status.status == "ERROR", status
    # Solve refuses the same, for the same reason.
    with pytest.raises(RuntimeError) as refusal:
        bpy.ops.blender_ik.solve()
    assert status.message.split(": ", 1)[-1][:40] in str(refusal.value)


# Rigify's metarigs ship with Blender: real rigs, with Blender's own float32 noise in their rest matrices
# (a few 1e-5: the horse's tail was refused at rest for a parent scale that isn't there).
METARIGS = {
    "human": ("hand.L", "foot.R", "f_index.03.R", "thumb.03.L"),
    "Animals.horse": ("tail.003", "tail.004", "tail.005", "f_hoof.L", "r_hoof.R"),
    "Animals.cat": ("tail.004", "hand.L", "foot.R", "f_index.002.R"),
    "Animals.bird": ("foot.L", "toe.R", "t_thumb.002.L"),
    "Animals.shark": ("side_fin.L.001", "chest_fin.Bot.R", "top_fin.001"),
    "Animals.wolf": ("front_toe.L", "toe.R", "f_index.03.L"),
}


@pytest.mark.parametrize("metarig", METARIGS)
def test_rigify_metarig_chains_solve_at_rest_and_posed(blender, metarig):
    bpy = blender
    import addon_utils
    from blender_ik_addon.ops import tip_target_matrix
    addon_utils.enable("rigify", default_set=True)
    try:
        module = importlib.import_module(f"rigify.metarigs.{metarig}")
        data = bpy.data.armatures.new(metarig)
        obj = bpy.data.objects.new(metarig, data)
        bpy.context.scene.collection.objects.link(obj)
        bpy.context.view_layer.objects.active = obj
        module.create(obj)
        bpy.ops.object.mode_set(mode="OBJECT")
    finally:
        addon_utils.disable("rigify", default_set=True)
    rng = np.random.default_rng(len(metarig))
    goal = add_empty("Goal")
    settings = obj.blender_ik.chains.add()
    settings.up_axis, settings.target = "Y", goal
    for tip in METARIGS[metarig]:
        settings.name = settings.tip_bone = tip
        bones = [obj.pose.bones[tip].parent.parent, obj.pose.bones[tip].parent, obj.pose.bones[tip]]
        length = sum(pose_bone.length for pose_bone in bones)
        for spread in (0.0, 0.4):  # at rest (the goal where the tip is), then a pose made by forward kinematics
            for pose_bone in bones:
                pose_bone.rotation_mode = "XYZ"
                pose_bone.rotation_euler = tuple(rng.uniform(-spread, spread, 3))
            bpy.context.view_layer.update()
            goal.matrix_world = tip_target_matrix(obj, tip, "Y", "NONE")
            for pose_bone in bones:
                pose_bone.rotation_euler = (0.0, 0.0, 0.0)
            bpy.context.view_layer.update()
            assert bpy.ops.blender_ik.solve() == {"FINISHED"}, tip
            tail, direction = tip_and_direction(obj, tip)
            assert np.linalg.norm(tail - np.array(goal.matrix_world.translation)) < 1e-4 * length, (tip, spread)
            assert angle_between(direction, axis_of(goal, "Y")) < 1e-4, (tip, spread)


def test_a_muted_group_is_sampled_as_blender_plays_it(blender):
    """4.2 skips the F-curves of a muted group; 4.4+ layered actions play them. Sampling must follow Blender."""
    bpy = blender
    from blender_ik_addon import keys
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    target.keyframe_insert("location", frame=1)
    target.location = (0.5, -0.6, 1.3)
    target.keyframe_insert("location", frame=10)
    curves = keys.object_fcurves(target)
    group = curves[0].group
    if group is None:
        group = target.animation_data.action.groups.new("Moves")
        for fcurve in curves:
            fcurve.group = group
    group.mute = True
    result = bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=10)
    assert result.direct
    for frame in (1, 4, 10):
        bpy.context.scene.frame_set(frame)
        assert on_target(obj, target), frame


@pytest.mark.parametrize("outside", [None, 9.9995, 20.0005])
def test_the_range_boundary_of_a_bake_to_samples_is_exact(blender, outside):
    """Keys at the range's first and last frames are the bake's to replace; one just outside is refused, however
    close, since the samples would delete it."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    key_b1(obj, frames=(10, 20))
    if outside is not None:
        points = b1_fcurve(obj, 1).keyframe_points  # keyframe_insert would merge keys this close: add one directly
        points.add(1)
        points[-1].co = points[-1].handle_left = points[-1].handle_right = (outside, 0.5)
        points.handles_recalc()  # (not fcurve.update(): it merges keys this close)
        before = all_keys(obj)
        with pytest.raises(ChainError, match=rf"rotation_quaternion\[1\] of bone 'b1' has keys outside frames 10-20 "
                                             rf"\(at frame {outside:g}\)"):
            bake_armature(bpy.context.scene, obj, frame_start=10, frame_end=20, output="SAMPLES")
        assert all_keys(obj) == before
        return
    bake_armature(bpy.context.scene, obj, frame_start=10, frame_end=20, output="SAMPLES")
    for index in range(4):
        assert len(b1_fcurve(obj, index).keyframe_points) == 0
        assert [point.co[0] for point in b1_fcurve(obj, index).sampled_points] == list(range(10, 21))
    bpy.context.scene.frame_set(15)
    assert on_target(obj, target)


def test_a_bake_to_samples_reaches_the_last_frame_and_no_further(blender):
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = arm_with_target(bpy)
    limit = bpy.context.scene.bl_rna.properties["frame_current"].hard_max
    bake_armature(bpy.context.scene, obj, frame_start=limit - 10, frame_end=limit, output="SAMPLES")
    assert [point.co[0] for point in b1_fcurve(obj).sampled_points] == list(range(limit - 10, limit + 1))
    bpy.context.scene.frame_set(limit)
    assert on_target(obj, target)
    before = all_keys(obj)
    with pytest.raises(ChainError, match=rf"Frames {-limit} to {limit} are more than an F-curve of samples holds"):
        bake_armature(bpy.context.scene, obj, frame_start=-limit, frame_end=limit, output="SAMPLES")
    assert all_keys(obj) == before
