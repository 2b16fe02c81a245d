"""Review 9: an animator's and a pipeline TD's set-ups (NLA, shared actions, rotation modes, undo, files), judged by
what Blender plays back with frame_set."""
import numpy as np
import pytest

from rigs import add_empty, angle_between, axis_of, build_arm, pose_snapshot, tip_and_direction

POSITION_TOLERANCE = 1e-5  # of the chain's length (2.2 for build_arm)
ANGLE_TOLERANCE = 2e-5


def _arm(bpy, location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1), **arm):
    """build_arm's arm, active, with its chain 'arm' on b3 reaching for an Empty."""
    obj = build_arm(**arm)
    target = add_empty(location=location, rotation=rotation)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, target


def _frames_off_target(bpy, obj, target, frames, tip="b3"):
    """The frames where the pose Blender plays misses the target (position or the last bone's direction)."""
    off = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        position, direction = tip_and_direction(obj, tip)
        if (np.linalg.norm(position - np.array(target.matrix_world.translation)) > POSITION_TOLERANCE * 2.2
                or angle_between(direction, axis_of(target)) > ANGLE_TOLERANCE):
            off.append(frame)
    return off


def _all_keys(obj):
    from blender_ik_addon import keys
    return {(fcurve.data_path, fcurve.array_index): [tuple(point.co) for point in fcurve.keyframe_points]
            for fcurve in keys.object_fcurves(obj)}


def _ik_below_the_chain(bpy, obj):
    """A bone 'b4' below the chain whose IK constraint (Chain Length 0: up to the root) reaches into it, off at
    frame 1 and on at frame 10 (an IK/FK switch)."""
    from mathutils import Vector
    bpy.ops.object.mode_set(mode="EDIT")
    b3 = obj.data.edit_bones["b3"]
    b4 = obj.data.edit_bones.new("b4")
    b4.head, b4.tail, b4.parent, b4.use_connect = b3.tail, b3.tail + Vector((0, 0, 0.3)), b3, True
    bpy.ops.object.mode_set(mode="OBJECT")
    constraint = obj.pose.bones["b4"].constraints.new("IK")
    constraint.target, constraint.chain_count = add_empty("IK goal", location=(1.5, 0.0, 0.2)), 0
    for frame, influence in ((1, 0.0), (10, 1.0)):
        constraint.influence = influence
        constraint.keyframe_insert("influence", frame=frame)


def _scale_a_chain_bone(bpy, obj):
    pose_bone = obj.pose.bones["b2"]
    for frame, scale in ((1, 1.0), (10, 1.3)):
        pose_bone.scale = (scale,) * 3
        pose_bone.keyframe_insert("scale", frame=frame)


def _constraint_on_a_chain_bone(bpy, obj):
    constraint = obj.pose.bones["b2"].constraints.new("COPY_ROTATION")
    constraint.target = add_empty("Turned", rotation=(0.7, 0.2, 0.3))
    for frame, influence in ((1, 0.0), (10, 1.0)):
        constraint.influence = influence
        constraint.keyframe_insert("influence", frame=frame)


def _push_down(bpy, obj):
    """The armature's action moved into an NLA strip 'Switch' (the NLA editor's Push Down): no action left."""
    animation = obj.animation_data
    strip = animation.nla_tracks.new().strips.new("Switch", 1, animation.action)
    strip.name = "Switch"  # bpy 4.5 names a new strip after its action
    animation.action = None


@pytest.mark.parametrize("make", [_ik_below_the_chain, _scale_a_chain_bone, _constraint_on_a_chain_bone])
def test_what_an_nla_strip_animates_is_checked_as_the_action_is(blender, make):
    """An IK/FK switch, a squash or a constraint blend keyed in an action the animator pushed down to the NLA plays
    on every frame as if it were the active action: off at the current frame, it passed the checks, then moved the
    baked chain off its target on the frames where it is on (0.72 at frame 5 and 1.39 at frame 10 for the IK). The
    bake must either refuse, changing nothing, or play back on target on every frame."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = _arm(bpy)
    make(bpy, obj)
    _push_down(bpy, obj)
    scene = bpy.context.scene
    scene.frame_set(1)
    pose, keys_before = pose_snapshot(obj), _all_keys(obj)
    try:
        bake_armature(scene, obj, frame_start=1, frame_end=10)
    except ChainError as error:
        assert "NLA strip 'Switch'" in error.message
        scene.frame_set(1)
        assert pose_snapshot(obj) == pose and _all_keys(obj) == keys_before
    else:
        assert _frames_off_target(bpy, obj, target, range(1, 11)) == []


def _elbow(bpy, obj):
    """The angle between the chain's first two bones, as Blender evaluates them."""
    bpy.context.view_layer.update()
    first, second = obj.pose.bones["b1"], obj.pose.bones["b2"]
    return (first.tail - first.head).angle(second.tail - second.head)


@pytest.mark.parametrize("mode", ["AXIS_ANGLE", "QUATERNION"])  # (Euler channels are no hinge between keys)
def test_a_hinge_that_straightens_past_its_rest_bend_plays_smoothly_between_keys(blender, mode):
    """The middle bone turns about one axis only (a hinge), so between two linear keys its bend is their average.
    An elbow in Axis Angle that straightens past its rest bend turns through the identity: its axis was keyed
    reversed on the far side, and between those two keys Blender swung the elbow back to its rest bend (0.65 rad
    at frame 20 where the keys on either side give 0.90 and 0.63: 0.115 off)."""
    bpy = blender
    from blender_ik_addon import keys
    obj, target = _arm(bpy, modes=("QUATERNION", mode, "QUATERNION"))
    rest = _elbow(bpy, obj)
    for frame, scale in ((1, 0.8), (21, 1.42)):  # from bent to nearly straight, along a line through the base
        target.location = (0.9 * scale, 0.3 * scale, 1.1 * scale)
        target.keyframe_insert("location", frame=frame)
    for fcurve in keys.object_fcurves(target):
        for key in fcurve.keyframe_points:
            key.interpolation = "LINEAR"
    scene = bpy.context.scene
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=21, step=2) == {"FINISHED"}
    bends = []
    for frame in range(1, 22):
        scene.frame_set(frame)
        bends.append(_elbow(bpy, obj))
    assert bends[0] > rest > bends[-1]  # it does straighten past its rest bend
    between = [abs(bends[i] - (bends[i - 1] + bends[i + 1]) / 2) for i in range(1, 21, 2)]
    assert max(between) < 1e-5


def test_a_strip_that_does_not_play_does_not_stop_the_bake(blender):
    """With the NLA off for the armature (the NLA editor's Include in NLA evaluation), or the strip muted, a squash
    keyed in the strip plays nowhere: the bake goes ahead and plays on target."""
    bpy = blender
    from blender_ik_addon.ops import bake_armature
    obj, target = _arm(bpy)
    _scale_a_chain_bone(bpy, obj)
    _push_down(bpy, obj)
    obj.pose.bones["b2"].scale = (1.0, 1.0, 1.0)  # what the bone has where the strip does not play
    scene = bpy.context.scene
    for silence in (lambda: setattr(obj.animation_data, "use_nla", False),
                    lambda: setattr(obj.animation_data.nla_tracks[0].strips[0], "mute", True)):
        obj.animation_data.use_nla = True
        obj.animation_data.nla_tracks[0].strips[0].mute = False
        silence()
        scene.frame_set(1)
        bake_armature(scene, obj, frame_start=1, frame_end=10)
        assert _frames_off_target(bpy, obj, target, range(1, 11)) == []


def test_keys_an_animator_makes_of_successive_solves_turn_an_axis_angle_hinge_smoothly(blender):
    """Solve, key the chain, move the target, Solve, key (Solve then I, frame by frame): an Axis Angle elbow that
    straightens past its rest bend between the two solves was posed with its axis reversed, and between the two
    keys Blender swung it back to the rest bend, as the bake's keys did."""
    bpy = blender
    obj, target = _arm(bpy, modes=("QUATERNION", "AXIS_ANGLE", "QUATERNION"))
    rest = _elbow(bpy, obj)
    scene = bpy.context.scene
    bends = {}
    for frame, scale in ((1, 1.25), (3, 1.42)):  # bent more than at rest, then less
        scene.frame_set(frame)
        target.location = (0.9 * scale, 0.3 * scale, 1.1 * scale)
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        bends[frame] = _elbow(bpy, obj)
        for name in ("b1", "b2", "b3"):
            pose_bone = obj.pose.bones[name]
            path = "rotation_quaternion" if pose_bone.rotation_mode == "QUATERNION" else "rotation_axis_angle"
            pose_bone.keyframe_insert(path, frame=frame)
    assert bends[1] > rest > bends[3]
    scene.frame_set(2)
    assert abs(_elbow(bpy, obj) - (bends[1] + bends[3]) / 2) < 1e-5


def test_an_overridden_action_is_refused_with_the_reason(blender, tmp_path):
    """A character linked into a shot and overridden, its action overridden too: the keys the bake writes there do
    not play (4.4+) or are gone on reload (4.2), as Blender's own keys are. It was refused only by the self-check,
    whose message (the tip 2.23 from the solve: 'something in the scene changes the result') sent the animator
    looking for a constraint. The bake must say it is the action, and change nothing."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    collection = bpy.data.collections.new("Character")
    bpy.context.scene.collection.children.link(collection)
    obj = build_arm()
    for owner in obj.users_collection:
        owner.objects.unlink(obj)
    collection.objects.link(obj)
    obj.blender_ik.chains.add().tip_bone = "b3"
    obj.pose.bones["root"].keyframe_insert("location", frame=1)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "character.blend"), copy=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with bpy.data.libraries.load(str(tmp_path / "character.blend"), link=True) as (_, linked):
        linked.collections = ["Character"]
    instance = bpy.data.objects.new("Character", None)
    instance.instance_type, instance.instance_collection = "COLLECTION", linked.collections[0]
    bpy.context.scene.collection.objects.link(instance)
    bpy.context.view_layer.objects.active = instance
    instance.select_set(True)
    bpy.ops.object.make_override_library()
    armature = next(each for each in bpy.data.objects if each.type == "ARMATURE" and each.override_library)
    armature.animation_data.action.override_create(remap_local_usages=True)
    armature.blender_ik.chains[0].target = add_empty(location=(0.9, 0.3, 1.1))
    bpy.context.view_layer.objects.active = armature
    bpy.context.view_layer.update()
    pose = pose_snapshot(armature)
    with pytest.raises(ChainError, match="its action 'ArmAction' is a library override"):
        bake_armature(bpy.context.scene, armature, frame_start=1, frame_end=10)
    assert pose_snapshot(armature) == pose


def _sequential_axis_angles(matrices, previous):
    """The plain per-key rule: each value the one nearest the key before (the first: ``previous``): the axis on the
    side of the one before, the angle within π of the one before; an identity repeats the key before."""
    import math
    from blender_ik_addon import rotations
    axis, angle, out = np.asarray(previous[1:], dtype=float), float(previous[0]), []
    for matrix in matrices:
        q = rotations.matrix_to_quaternion(matrix)
        length = np.linalg.norm(q[1:])
        if length > 1e-12:
            unit, signed = q[1:] / length, length
            if unit @ axis < 0.0:
                unit, signed = -unit, -signed
            turned = 2.0 * math.atan2(signed, q[0])
            axis, angle = unit, turned + 2.0 * math.pi * round((angle - turned) / (2.0 * math.pi))
        out.append([angle, *axis])
    return np.array(out)


def test_axis_angle_keys_are_the_sequential_nearest_values():
    """rotations' vectorised axis-angle continuity (several bones at once, from each bone's previous value) is the
    key-by-key rule, and the same rotations."""
    from blender_ik_addon import rotations
    rng = np.random.default_rng(3)
    matrices = rotations.euler_to_matrix(np.cumsum(rng.normal(scale=0.15, size=(500, 3, 3)), axis=0), "XYZ")
    previous = np.array([[0.3, 0.0, 1.0, 0.0], [-7.0, 0.6, 0.0, -0.8], [0.0, 0.0, 0.0, 0.0]])
    values = rotations.matrices_to_channels(matrices, "AXIS_ANGLE", previous)
    np.testing.assert_allclose(rotations.channels_to_matrix(values, "AXIS_ANGLE"), matrices, atol=1e-12)
    for bone in range(3):
        np.testing.assert_allclose(values[:, bone], _sequential_axis_angles(matrices[:, bone], previous[bone]),
                                   atol=1e-12)


@pytest.mark.parametrize("nla_on", [True, False])
def test_a_solo_nla_track_is_refused_with_the_reason(blender, nla_on):
    """An animator soloing a track to look at it: Blender then plays that track alone, not the action, so the baked
    keys would not play. It was refused only by the self-check ('the tip of b3 0.618 from where the solve put it:
    something in the scene changes the result'). It must say the track is solo; with the NLA off, nothing is solo
    and the keys play."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = _arm(bpy)
    obj.pose.bones["root"].keyframe_insert("location", frame=1)
    _push_down(bpy, obj)
    obj.animation_data.nla_tracks[0].is_solo = True
    obj.animation_data.use_nla = nla_on
    scene = bpy.context.scene
    scene.frame_set(1)
    pose, keys_before = pose_snapshot(obj), _all_keys(obj)
    if nla_on:
        with pytest.raises(ChainError, match="its NLA track 'NlaTrack' is solo, so its action does not play"):
            bake_armature(scene, obj, frame_start=1, frame_end=10)
        assert pose_snapshot(obj) == pose and _all_keys(obj) == keys_before
        assert obj.animation_data.action is None
    else:
        bake_armature(scene, obj, frame_start=1, frame_end=10)
        assert _frames_off_target(bpy, obj, target, range(1, 11)) == []


def _disable(bpy, obj, how):
    if how == "disabled":
        obj.hide_viewport = True  # the screen icon
    else:  # in a collection excluded from the view layer (the check box)
        collection = bpy.data.collections.new(f"{obj.name} controls")
        bpy.context.scene.collection.children.link(collection)
        for owner in obj.users_collection:
            owner.objects.unlink(obj)
        collection.objects.link(obj)
        bpy.context.view_layer.layer_collection.children[collection.name].exclude = True


@pytest.mark.parametrize("how", ["disabled", "excluded"])
def test_a_target_blender_does_not_evaluate_is_refused_where_its_place_would_be_guessed(blender, how):
    """Control objects put away to declutter the scene (disabled in viewports, or their collection excluded) are not
    evaluated by Blender, so their matrices stay where they last were (or the identity, if they never were). A bake
    that reads such a target frame by frame (it follows a Child Of) keyed the chain reaching for the origin and
    reported success: 1.45 off the target on every frame once it is shown again. Solve posed the chain for where the
    target was before it was moved: 0.30 off. Both must refuse, naming the target, and change nothing; a target read
    straight from its keys needs no evaluation and still bakes."""
    bpy = blender
    obj, target = _arm(bpy)
    mover = add_empty("Mover")
    mover.keyframe_insert("location", frame=1)
    mover.location = (0.2, -0.1, 0.15)
    mover.keyframe_insert("location", frame=30)
    follows = add_empty("Follows", location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    follows.constraints.new("CHILD_OF").target = mover
    obj.blender_ik.chains[0].target = follows
    _disable(bpy, follows, how)
    scene = bpy.context.scene
    scene.frame_set(1)
    pose = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=r"Chain 'arm': 'Follows', which the bake reads frame by frame .* so Blender "
                                           r"does not evaluate it"):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=30)
    assert pose_snapshot(obj) == pose and obj.animation_data is None
    target.location = (0.7, 0.5, 1.0)
    _disable(bpy, target, how)
    obj.blender_ik.chains[0].target = target
    with pytest.raises(RuntimeError, match=r"Chain 'arm': The target 'Target' is .* so Blender does not evaluate it"):
        bpy.ops.blender_ik.solve()
    assert pose_snapshot(obj) == pose
    # Keyed, with no constraint: the bake computes it from its keys, as Blender would once it is enabled.
    target.keyframe_insert("location", frame=1)
    target.location = (0.8, 0.4, 1.2)
    target.keyframe_insert("location", frame=30)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30) == {"FINISHED"}
    target.hide_viewport = False
    if how == "excluded":
        bpy.context.view_layer.layer_collection.children["Target controls"].exclude = False
    assert _frames_off_target(bpy, obj, target, range(1, 31)) == []


@pytest.mark.parametrize("where", ["action", "strip"])
def test_a_keyed_rotation_mode_on_a_chain_bone_is_refused(blender, where):
    """Blender keys a bone's rotation mode (Quaternion up to frame 9, XYZ from frame 10): the bake keyed the
    quaternion channels only, which do not play where the mode is XYZ (1.25 off from frame 11 on), and reported
    success. It must refuse, changing nothing."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = _arm(bpy)
    pose_bone = obj.pose.bones["b2"]
    pose_bone.keyframe_insert("rotation_mode", frame=1)
    pose_bone.rotation_mode, pose_bone.rotation_euler = "XYZ", (0.5, 0.0, 0.0)
    pose_bone.keyframe_insert("rotation_mode", frame=10)
    pose_bone.keyframe_insert("rotation_euler", frame=10)
    if where == "strip":
        _push_down(bpy, obj)
    scene = bpy.context.scene
    scene.frame_set(1)
    pose, keys_before = pose_snapshot(obj), _all_keys(obj)
    with pytest.raises(ChainError, match="Bone 'b2' has an animated rotation mode"):
        bake_armature(scene, obj, frame_start=1, frame_end=20)
    assert pose_snapshot(obj) == pose and _all_keys(obj) == keys_before


def _key_inherit_rotation(bpy, obj):
    bone = obj.data.bones["b2"]
    bone.keyframe_insert("use_inherit_rotation", frame=1)
    bone.use_inherit_rotation = False
    bone.keyframe_insert("use_inherit_rotation", frame=10)
    bone.use_inherit_rotation = True


def _drive_inherit_rotation(bpy, obj):
    obj.data.bones["b2"].driver_add("use_inherit_rotation").driver.expression = "frame < 10"


def _key_rest_position(bpy, obj):
    obj.data.keyframe_insert("pose_position", frame=1)
    obj.data.pose_position = "REST"
    obj.data.keyframe_insert("pose_position", frame=10)
    obj.data.pose_position = "POSE"


@pytest.mark.parametrize("make", [_key_inherit_rotation, _drive_inherit_rotation, _key_rest_position])
def test_what_the_armature_datablock_animates_is_checked(blender, make):
    """A bone's Inherit Rotation or the armature's Pose/Rest Position keyed or driven on the Armature datablock (not
    the object) changes the pose on some frames: the bake reported success and played 0.25 off from frame 10 (Inherit
    Rotation off), 0.62 off (Rest Position). It must refuse, naming the setting, and change nothing."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    obj, target = _arm(bpy)
    make(bpy, obj)
    scene = bpy.context.scene
    scene.frame_set(1)
    pose = pose_snapshot(obj)
    with pytest.raises(ChainError, match=r"Armature 'Arm' has an animated (bones\[\"b2\"\].use_inherit_rotation|"
                                         r"pose_position)"):
        bake_armature(scene, obj, frame_start=1, frame_end=20)
    assert pose_snapshot(obj) == pose and obj.animation_data is None


def test_an_animated_setting_of_a_bone_above_the_chain_makes_the_bake_read_the_base_on_every_frame(blender):
    """Inherit Rotation of the bone above the chain switched off from frame 10 (keyed on the Armature datablock)
    moves the chain's base with no key on the object: read once, the base was that of the current frame."""
    bpy = blender
    obj, target = _arm(bpy)
    bpy.ops.object.mode_set(mode="EDIT")
    top = obj.data.edit_bones.new("top")
    top.head, top.tail = (0.0, 0.0, -0.5), (0.0, 0.0, 0.0)
    obj.data.edit_bones["root"].parent = top
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.pose.bones["top"].rotation_quaternion = (0.9, 0.3, 0.2, 0.0)
    root = obj.data.bones["root"]
    root.keyframe_insert("use_inherit_rotation", frame=1)
    root.use_inherit_rotation = False
    root.keyframe_insert("use_inherit_rotation", frame=10)
    root.use_inherit_rotation = True
    bpy.context.scene.frame_set(1)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=20) == {"FINISHED"}
    assert _frames_off_target(bpy, obj, target, range(1, 21)) == []


def test_new_empties_do_not_go_into_a_collection_blender_does_not_evaluate(blender):
    """The Outliner's active collection is one the rigger disabled in viewports (say the collection the old controls
    were put away in): Add Target and Place Pole put their new Empty there, out of sight and never evaluated, so
    Solve could not use it. They go into the scene's collection instead, and Solve works at once."""
    bpy = blender
    obj = build_arm()
    put_away = bpy.data.collections.new("Put away")
    bpy.context.scene.collection.children.link(put_away)
    put_away.hide_viewport = True
    bpy.context.view_layer.active_layer_collection = bpy.context.view_layer.layer_collection.children["Put away"]
    bpy.context.view_layer.objects.active = obj
    obj.blender_ik.tip_bone = "b3"
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    settings = obj.blender_ik
    for made in (settings.target, settings.pole):
        assert [collection.name for collection in made.users_collection] == ["Scene Collection"]
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
