"""A bake reads a keyed body under the chain from its keys (sampling.direct_base): the base it composes must be the
one Blender poses on every frame, and where Blender poses the bones above the chain in a way the keys alone do not
tell (another inheritance, a keyed rotation mode...), the bake reads it frame by frame as before."""
import math

import numpy as np
import pytest

from rigs import add_empty, chain_length_world, tip_and_direction
from scenes import add_bone, new_armature

from mathutils import Quaternion, Vector  # noqa: E402 (after bpy: rigs imports it)

FRAMES = list(range(1, 25))


def _body(bpy, rng, modes=("QUATERNION", "ZXY", "AXIS_ANGLE"), sway=1.0):
    """An armature: hips (a root, away from the origin) > spine (connected) > shoulder (a gap, rolled) > b1 > b2 > b3,
    the three bones above the chain keyed on frames 1, 9 and 24 (location, rotation in ``modes``, a non-uniform scale;
    ``sway`` scales how far they move from rest) with Bezier keys, some channels posed and not keyed. Returns the
    object, active, in Object Mode."""
    obj = new_armature("Body")
    data = obj.data
    hips = add_bone(data, "hips", (0.2, -0.1, 1.0), (0.2, -0.1, 1.3))
    spine = add_bone(data, "spine", hips.tail, (0.25, -0.05, 1.7), hips, connect=True)
    shoulder = add_bone(data, "shoulder", (0.35, 0.0, 1.75), (0.55, 0.05, 1.8), spine, roll=0.7)
    parent = shoulder
    for name, tail in (("b1", (0.9, 0.1, 1.6)), ("b2", (1.3, 0.4, 1.5)), ("b3", (1.45, 0.5, 1.45))):
        parent = add_bone(data, name, parent.tail, tail, parent, connect=True)
    # The other arm, on the same spine: c1 > c2 > c3 under shoulder2.
    parent = add_bone(data, "shoulder2", (0.15, 0.0, 1.75), (-0.05, 0.05, 1.8), spine, roll=-0.4)
    for name, tail in (("c1", (-0.5, 0.1, 1.6)), ("c2", (-0.9, 0.4, 1.5)), ("c3", (-1.05, 0.5, 1.45))):
        parent = add_bone(data, name, parent.tail, tail, parent, connect=True)
    bpy.ops.object.mode_set(mode="OBJECT")
    for name, mode in zip(("hips", "spine", "shoulder", "shoulder2"), modes + modes[:1]):
        pose_bone = obj.pose.bones[name]
        pose_bone.rotation_mode = mode
        for frame in (1, 9, 24):
            pose_bone.location = tuple(rng.normal(scale=0.2 * sway, size=3))
            # A bake refuses a non-uniform scale above the chain (the bones would shear): a sway scales uniformly.
            pose_bone.scale = tuple(1.0 + rng.uniform(-0.3, 0.3, 1 if sway < 1.0 else 3) * sway * np.ones(3))
            angle, axis = rng.uniform(-2.0, 2.0) * sway, Vector(tuple(rng.normal(size=3))).normalized()
            if mode == "QUATERNION":
                pose_bone.rotation_quaternion = Quaternion(axis, angle) * (1.0 + rng.uniform(-0.2, 0.2))  # unnormalised
            elif mode == "AXIS_ANGLE":
                pose_bone.rotation_axis_angle = (angle, *(axis * rng.uniform(0.5, 2.0)))
            else:
                pose_bone.rotation_euler = tuple(rng.uniform(-1.5, 1.5, 3) * sway)
            for path in ("location", "scale", {"QUATERNION": "rotation_quaternion",
                                                "AXIS_ANGLE": "rotation_axis_angle"}.get(mode, "rotation_euler")):
                # Channel 1 of the hips' location is left unkeyed: its posed value counts on every frame.
                for index in range(4 if path.startswith("rotation_") and mode in ("QUATERNION", "AXIS_ANGLE") else 3):
                    if not (name == "hips" and path == "location" and index == 1):
                        pose_bone.keyframe_insert(path, index=index, frame=frame)
    bpy.context.view_layer.objects.active = obj
    return obj


def _chain(obj, tip="b3"):
    from blender_ik_addon.chain import read_chain
    return read_chain(obj, tip)


def _bases_frame_by_frame(bpy, obj, tip="b3"):
    from blender_ik_addon.chain import base_matrix
    scene = bpy.context.scene
    bases = []
    for frame in FRAMES:
        scene.frame_set(frame)
        bases.append(base_matrix(_chain(obj, tip)))
    scene.frame_set(1)
    return np.array(bases)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("modes", [("QUATERNION", "ZXY", "AXIS_ANGLE"), ("XYZ", "QUATERNION", "YZX")])
def test_the_base_composed_from_the_keys_is_the_one_blender_poses(blender, seed, modes):
    from blender_ik_addon import sampling
    bpy = blender
    obj = _body(bpy, np.random.default_rng(seed), modes)
    assert sampling.base_reason(_chain(obj)) == sampling.ANIMATED_ABOVE
    direct = sampling.direct_base(_chain(obj), np.array(FRAMES, dtype=float), bpy.context.scene)
    assert direct is not None
    blender_bases = _bases_frame_by_frame(bpy, obj)
    assert np.abs(direct - blender_bases).max() < 2e-6  # Blender poses in float32


def test_two_arms_on_one_keyed_spine_each_get_the_base_blender_poses(blender):
    """The second chain reuses the spine's poses the first one composed (sampling.sample's memo): each arm's base is
    still Blender's on every frame."""
    from blender_ik_addon import sampling
    from blender_ik_addon.chain import ChainSpec
    bpy = blender
    obj = _body(bpy, np.random.default_rng(7))
    target = add_empty("T", location=(1.0, 0.0, 1.0))
    chains = [(ChainSpec(tip_bone=tip, target=target, name=tip), _chain(obj, tip)) for tip in ("b3", "c3")]
    samples = sampling.sample(bpy.context.scene, obj, chains, np.array(FRAMES, dtype=float))
    assert samples.direct
    for (_, chain), base in zip(chains, samples.bases):
        assert np.abs(base - _bases_frame_by_frame(bpy, obj, chain.names[2])).max() < 2e-6, chain.names


def _inherit_aligned(obj):
    obj.data.bones["spine"].inherit_scale = "ALIGNED"


def _no_inherit_rotation(obj):
    obj.data.bones["shoulder"].use_inherit_rotation = False


def _global_location(obj):
    obj.data.bones["shoulder"].use_local_location = False


def _keyed_rotation_mode(obj):
    obj.pose.bones["spine"].keyframe_insert("rotation_mode", frame=1)


def _keyed_bbone_curve(obj):
    obj.pose.bones["hips"].keyframe_insert("bbone_curveinx", frame=1)


def _blended_action(obj):
    obj.animation_data.action_influence = 0.5


@pytest.mark.parametrize("change", [_inherit_aligned, _no_inherit_rotation, _global_location, _keyed_rotation_mode,
                                    _keyed_bbone_curve, _blended_action])
def test_what_the_keys_alone_do_not_tell_is_read_frame_by_frame(blender, change):
    """Inheritance other than full, a keyed rotation mode or another bone setting, an action blended: direct_base
    declines (None), and the bake reads the base from what Blender evaluates on each frame."""
    from blender_ik_addon import sampling
    bpy = blender
    obj = _body(bpy, np.random.default_rng(5))
    change(obj)
    assert sampling.direct_base(_chain(obj), np.array(FRAMES, dtype=float), bpy.context.scene) is None


def _bake_counting_frame_changes(bpy, **options):
    """Bake frames 1-24 from frame 1 (``options``: more of the operator's); returns the frames set meanwhile (a
    frame_change_post handler counts them)."""
    seen = []

    def handler(scene, *_):
        seen.append(scene.frame_current)
    bpy.context.scene.frame_set(1)
    bpy.app.handlers.frame_change_post.append(handler)
    try:
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=24, **options) == {"FINISHED"}
    finally:
        bpy.app.handlers.frame_change_post.remove(handler)
    return seen


def swaying_body_reaching(bpy):
    """:func:`_body` swaying a little (uniform scales), its arm's chain 'arm' reaching for an Empty 'Hand' keyed
    moving and turning over frames 1-24. Returns (object, chain settings, target)."""
    obj = _body(bpy, np.random.default_rng(11), sway=0.1)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone = "arm", "b3"
    target = chain.target = add_empty("Hand", location=(1.2, 0.3, 1.5))
    for frame, x in ((1, 1.2), (24, 1.0)):
        target.location.x = x
        target.rotation_euler.z = 0.3 * x
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    return obj, chain, target


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_a_bake_under_a_keyed_body_plays_on_target_without_stepping_through_the_frames(blender, output):
    """The hand's target moves while the hips, spine and shoulder sway, keyed: the bake reads the body from its keys
    (the scene's frame is not stepped through: it used to evaluate the whole scene on every frame) and every frame
    plays with the tip on the target and along its up axis."""
    bpy = blender
    obj, chain, target = swaying_body_reaching(bpy)
    scene = bpy.context.scene
    seen = _bake_counting_frame_changes(bpy, output=output)
    assert len(seen) <= 2, seen  # the bake's own self-check and the frame put back, not one per frame
    plays_on_target(scene, obj, target, FRAMES)


def plays_on_target(scene, obj, target, frames):
    """Played back at each of ``frames``, the arm's tip is on the target and its last bone along the target's Z."""
    reach = chain_length_world(obj)
    for frame in frames:
        scene.frame_set(frame)
        tip, direction = tip_and_direction(obj)
        world = target.matrix_world
        assert (Vector(tip) - world.translation).length < 1e-5 * reach, frame
        assert math.degrees(Vector(direction).angle(world.to_3x3() @ Vector((0.0, 0.0, 1.0)))) < 1e-3, frame


def _controls(bpy, rng):
    """A control armature, away from the origin and keyed itself: root_ctl > hand_ctl (a gap), both keyed on frames 1,
    9 and 24 (location, rotation, scale, in two rotation modes), and an Empty 'Prop' parented to bone hand_ctl (a
    prop in the hand). Returns (armature, prop)."""
    controls = new_armature("Controls")
    root = add_bone(controls.data, "root_ctl", (0.5, 0.2, 0.9), (0.5, 0.2, 1.1))
    add_bone(controls.data, "hand_ctl", (1.0, 0.3, 1.3), (1.0, 0.5, 1.35), root, roll=0.3)
    bpy.ops.object.mode_set(mode="OBJECT")
    controls.location = (0.1, -0.2, 0.05)
    for frame in (1, 24):
        controls.rotation_euler.z = 0.05 * frame / 24
        controls.keyframe_insert("rotation_euler", frame=frame)
    for name, mode in (("root_ctl", "XZY"), ("hand_ctl", "QUATERNION")):
        pose_bone = controls.pose.bones[name]
        pose_bone.rotation_mode = mode
        for frame in (1, 9, 24):
            pose_bone.location = tuple(rng.normal(scale=0.05, size=3))
            pose_bone.scale = (1.0 + rng.uniform(-0.1, 0.1),) * 3
            if mode == "QUATERNION":
                pose_bone.rotation_quaternion = Quaternion(Vector(tuple(rng.normal(size=3))), rng.uniform(-0.3, 0.3))
            else:
                pose_bone.rotation_euler = tuple(rng.uniform(-0.2, 0.2, 3))
            for path in ("location", "scale", "rotation_quaternion" if mode == "QUATERNION" else "rotation_euler"):
                pose_bone.keyframe_insert(path, frame=frame)
    prop = add_empty("Prop", location=(0.0, 0.1, 0.0))
    prop.parent, prop.parent_type, prop.parent_bone = controls, "BONE", "hand_ctl"
    return controls, prop


def test_a_keyed_control_bone_and_a_prop_it_holds_are_read_from_the_keys_as_blender_poses_them(blender):
    from blender_ik_addon import sampling
    bpy = blender
    controls, prop = _controls(bpy, np.random.default_rng(3))
    scene = bpy.context.scene
    frames = np.array(FRAMES, dtype=float)
    assert sampling.bone_reason(controls, "hand_ctl", scene) is None and sampling.direct_reason(prop, scene) is None
    bone = sampling.bone_poses(controls, "hand_ctl", frames)
    held = sampling.direct_world_matrices(prop, frames)
    blender_bone, blender_held = [], []
    for frame in FRAMES:
        scene.frame_set(frame)
        blender_bone.append(np.array(controls.pose.bones["hand_ctl"].matrix))
        blender_held.append(np.array(prop.matrix_world))
    assert np.abs(bone - np.array(blender_bone)).max() < 2e-6
    assert np.abs(held - np.array(blender_held)).max() < 2e-6


def _constrained_root(controls, prop):
    controls.pose.bones["root_ctl"].constraints.new("COPY_ROTATION")


def _relative_parent(controls, prop):
    controls.data.bones["hand_ctl"].use_relative_parent = True


def _posed_by_ik(controls, prop):
    import bpy
    bpy.context.view_layer.objects.active = controls
    bpy.ops.object.mode_set(mode="EDIT")
    tip = add_bone(controls.data, "finger_ctl", (1.0, 0.5, 1.35), (1.0, 0.6, 1.4), controls.data.edit_bones["hand_ctl"])
    tip.use_connect = True
    bpy.ops.object.mode_set(mode="OBJECT")
    ik = controls.pose.bones["finger_ctl"].constraints.new("IK")
    ik.target, ik.chain_count, ik.mute = controls, 2, True


def _rest_position(controls, prop):
    controls.data.pose_position = "REST"


@pytest.mark.parametrize("change", [_constrained_root, _relative_parent, _posed_by_ik, _rest_position])
def test_a_control_bone_posed_by_more_than_its_keys_is_read_frame_by_frame(blender, change):
    from blender_ik_addon import sampling
    bpy = blender
    controls, prop = _controls(bpy, np.random.default_rng(3))
    change(controls, prop)
    scene = bpy.context.scene
    assert sampling.direct_reason(prop, scene) is not None
    if change is not _relative_parent:  # Relative Parenting changes what the bone's children follow, not the bone
        assert sampling.bone_reason(controls, "hand_ctl", scene) is not None


@pytest.mark.parametrize("pole", [False, True])
def test_a_bake_reaching_for_a_keyed_control_bone_plays_on_target_without_stepping_through_the_frames(blender, pole):
    """The arm reaches for bone hand_ctl of a keyed control armature (and, with a pole, bends toward the prop the
    control holds): the bake reads both from the keys, never stepping the scene through the frames, and every frame
    plays with the tip on the control bone's head, along its Y axis."""
    bpy = blender
    from rigs import build_arm
    controls, prop = _controls(bpy, np.random.default_rng(3))
    obj = build_arm()
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target, chain.target_bone, chain.up_axis = "arm", "b3", controls, "hand_ctl", "Y"
    if pole:
        chain.plane, chain.pole = "POLE", prop
    bpy.context.view_layer.objects.active = obj
    scene = bpy.context.scene
    seen = _bake_counting_frame_changes(bpy)
    assert len(seen) <= 2, seen
    reach = chain_length_world(obj)
    for frame in FRAMES:
        scene.frame_set(frame)
        tip, direction = tip_and_direction(obj)
        goal = controls.matrix_world @ controls.pose.bones["hand_ctl"].matrix
        assert (Vector(tip) - goal.translation).length < 1e-5 * reach, frame
        assert math.degrees(Vector(direction).angle(goal.to_3x3() @ Vector((0.0, 1.0, 0.0)))) < 1e-3, frame


@pytest.mark.parametrize("driven", ["another bone", "the spine"])
def test_a_driver_counts_only_where_it_drives_the_body_under_the_chain(blender, driven):
    """A character's rig has drivers (a corrective bone, a custom property): one on a bone that is not above the chain
    leaves the body read from its keys (the scene is not stepped through); one on the spine above the arm makes the
    bake read the base frame by frame. Either way every frame plays on target."""
    from blender_ik_addon import sampling
    bpy = blender
    obj, chain, target = swaying_body_reaching(bpy)
    bone = "c2" if driven == "another bone" else "spine"
    obj.pose.bones[bone].rotation_mode = "XYZ"
    driver = obj.pose.bones[bone].driver_add("rotation_euler", 0).driver
    driver.type, driver.expression = "SCRIPTED", "0.01"  # constant: valid without auto-run of Python scripts too
    target["weight"] = 0.0  # a driven custom property moves nothing by itself
    target.driver_add('["weight"]').driver.expression = "1.0"
    assert (sampling.base_reason(_chain(obj)) == sampling.ANIMATED_ABOVE) == (driven == "another bone")
    scene = bpy.context.scene
    seen = _bake_counting_frame_changes(bpy)
    assert (len(seen) <= 2) == (driven == "another bone"), seen
    reach = chain_length_world(obj)
    for frame in FRAMES:
        scene.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        assert (Vector(tip) - target.matrix_world.translation).length < 1e-5 * reach, frame



# Names whose RNA paths escape them: a quote, a backslash, and what ends a bone's name in a path.
_ODD_NAMES = {"hips": 'hips"]', "spine": 'spine"]x', "shoulder": 'sh\\oul"der'}


@pytest.mark.parametrize("scaled", [False, True])
def test_bones_whose_paths_escape_their_names_are_found_by_their_keys(blender, scaled):
    """The bake finds each bone's F-curves by the name its path escapes (sampling.PlayedCurves): a body whose bones
    are named with quotes and backslashes is still read from its keys (no frame stepped through) and the arm plays on
    target; a keyed scale on the chain's first bone so named is still refused."""
    from blender_ik_addon import keys
    bpy = blender
    obj, _, target = swaying_body_reaching(bpy)
    for old, new in _ODD_NAMES.items():
        obj.data.bones[old].name = new
    assert any(fcurve.data_path.startswith('pose.bones["spine\\"]x"].') for fcurve in keys.object_fcurves(obj))
    if scaled:
        first = obj.pose.bones["b1"]
        first.name = 'b1 "upper"'
        for frame, size in ((24, 1.2), (1, 1.0)):  # posed at 1, as frame 1 plays it
            first.scale = (size,) * 3
            first.keyframe_insert("scale", frame=frame)
        with pytest.raises(RuntimeError, match=r"Bone 'b1 \"upper\"' has an animated scale"):
            bpy.ops.blender_ik.bake(frame_start=1, frame_end=24)
        return
    seen = _bake_counting_frame_changes(bpy)
    assert len(seen) <= 2, seen
    plays_on_target(bpy.context.scene, obj, target, FRAMES)
