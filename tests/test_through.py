"""Chains that pass through a bone at a joint: a bone whose head is, at rest, where the head of the bone below it is
adds no link (a joint helper: Rigify's MCH-hand_fk.L between forearm_fk.L and hand_fk.L, which keeps the hand's
scale its own). The chain is the tip and its two nearest ancestors that are joints of their own, and takes the bones
between at rest. Every result is judged where Blender shows the tip."""
import contextlib
import io
import math

import numpy as np
import pytest

from rigs import add_empty, angle_between, axis_of, build_arm, pose_snapshot, reachable_target, tip_and_direction

# How each helper hangs: plainly, or as Rigify makes its MCH-hand_fk.L (no inherited scale, the arm's copied back).
STYLES = ("plain", "rigify", "two at the joint")


def arm_through(bpy, style="plain", at="b3"):
    """The arm (root > b1 > b2 > b3) with a helper 'H' at the head of bone ``at``, between it and its parent ('H2' below
    it too for "two at the joint"), turned otherwise than that bone at rest; a chain on b3 reaching for an Empty.
    Returns (object, target)."""
    from mathutils import Vector
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    child = edit_bones[at]
    parent = child.parent
    for name in ("H", "H2") if style == "two at the joint" else ("H",):
        helper = edit_bones.new(name)
        helper.head = child.head
        helper.tail = child.head + Vector((0.05, 0.1, -0.04)) if name == "H" else child.head + Vector((0.0, -0.1, 0.0))
        helper.roll = 0.7
        helper.parent, helper.use_connect = parent, parent.tail == child.head
        helper.inherit_scale = "NONE" if style == "rigify" else "FULL"
        parent = helper
    child.use_connect, child.parent = False, parent
    bpy.ops.object.mode_set(mode="OBJECT")
    if style == "rigify":
        constraint = obj.pose.bones["H"].constraints.new("COPY_SCALE")
        constraint.target, constraint.subtarget, constraint.use_make_uniform = obj, "root", True
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.update()
    return obj, target


def tip_off(obj, target):
    """How far Blender shows the tip from the target, and the last bone's angle to its up axis (Z)."""
    tip, direction = tip_and_direction(obj)
    return np.linalg.norm(tip - np.array(target.matrix_world.translation)), angle_between(direction, axis_of(target))


def on_target(obj, target):
    distance, angle = tip_off(obj, target)
    return distance < 1e-5 and angle < 1e-4


@pytest.mark.parametrize("at", ("b3", "b2"))
@pytest.mark.parametrize("style", STYLES)
def test_solve_passes_through_a_bone_at_a_joint(blender, style, at):
    """The chain is b1 > b2 > b3 through the helper(s), for Solve and the panel; each solve puts the tip on its target
    as Blender shows it, the helpers untouched."""
    bpy = blender
    from blender_ik_addon.chain import chain_path
    from test_panel import draw_panels
    obj, target = arm_through(bpy, style, at)
    through = ("H", "H2") if style == "two at the joint" else ("H",)
    assert chain_path(obj, "b3") == (("b1", "b2", "b3"), through)
    assert ("label", f"through {', '.join(through)}") in draw_panels(bpy, obj)
    helpers = {name: pose_snapshot(obj)[name] for name in through}
    rng = np.random.default_rng(7)
    for _ in range(5):
        target.location, target.rotation_euler = reachable_target(rng, obj)
        bpy.context.view_layer.update()
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        assert on_target(obj, target), tip_off(obj, target)
    assert {name: pose_snapshot(obj)[name] for name in through} == helpers


@pytest.mark.parametrize("style", STYLES)
def test_live_bake_and_a_built_rig_pass_through_it(blender, style):
    """Live follows a dragged target, the bake's keys play back on the target on every frame, and a built rig follows
    it by itself: judged where Blender shows the tip."""
    bpy = blender
    obj, target = arm_through(bpy, style)
    chain = obj.blender_ik.chains[0]
    rng = np.random.default_rng(11)
    chain.live = True
    for _ in range(3):
        target.location, target.rotation_euler = reachable_target(rng, obj)
        bpy.context.view_layer.update()
        assert on_target(obj, target), tip_off(obj, target)
    chain.live = False
    scene = bpy.context.scene
    start = np.array(target.location)
    for frame in (1, 6, 12):  # near the last one: in reach on every frame between
        target.location = start + rng.normal(scale=0.03, size=3)
        target.keyframe_insert("location", frame=frame)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=12) == {"FINISHED"}
    for frame in range(1, 13):
        scene.frame_set(frame)
        assert on_target(obj, target), (frame, tip_off(obj, target))
    obj.animation_data.action = None
    target.animation_data_clear()
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    for _ in range(3):
        target.location, target.rotation_euler = reachable_target(rng, obj)
        bpy.context.view_layer.update()
        assert on_target(obj, target), tip_off(obj, target)


def _posed(bpy, obj):
    obj.pose.bones["H"].rotation_quaternion = (0.99, 0.1, 0.0, 0.0)


def _moved(bpy, obj):
    bpy.ops.object.mode_set(mode="EDIT")  # (a connected bone's location counts for nothing)
    obj.data.edit_bones["H"].use_connect = False
    bpy.ops.object.mode_set(mode="OBJECT")
    obj.pose.bones["H"].location = (0.0, 0.01, 0.0)


def _turning_constraint(bpy, obj):
    constraint = obj.pose.bones["H"].constraints.new("COPY_ROTATION")
    constraint.target = add_empty("Turner", rotation=(0.3, 0.0, 0.0))


def _not_inheriting(bpy, obj):
    obj.data.bones["H"].use_inherit_rotation = False


REFUSED = {
    "posed": (_posed, "is posed; the chain takes it at rest"),
    "moved": (_moved, "is posed; the chain takes it at rest"),
    "turning constraint": (_turning_constraint, "has constraints (Copy Rotation)"),
    "not inheriting rotation": (_not_inheriting, "does not inherit rotation"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_a_bone_passed_through_that_would_not_keep_the_chain_is_refused(blender, case):
    """A helper the chain cannot take at rest is refused by name, before anything changes: Solve, Live and the bake."""
    bpy = blender
    obj, target = arm_through(bpy, "rigify")
    make, message = REFUSED[case]
    make(bpy, obj)
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    expected = f"Bone 'H', which the chain passes through at the joint of 'b3', {message}"
    for call in (bpy.ops.blender_ik.solve, lambda: bpy.ops.blender_ik.bake(frame_start=1, frame_end=3)):
        with pytest.raises(RuntimeError, match="Chain 'arm': " + expected.replace("(", r"\(").replace(")", r"\)")):
            call()
        assert pose_snapshot(obj) == before
    obj.blender_ik.chains[0].live = True
    from rigs import readout
    status = readout(obj, "arm")
    assert status.status == "ERROR" and expected in status.message
    assert pose_snapshot(obj) == before


def _limit_scale(bpy, obj):
    constraint = obj.pose.bones["H"].constraints.new("LIMIT_SCALE")
    constraint.use_max_y, constraint.max_y = True, 0.5


def _copy_scale(bpy, obj):
    constraint = obj.pose.bones["H"].constraints.new("COPY_SCALE")
    constraint.target = add_empty("Scaled")
    constraint.target.scale = (1.5, 1.5, 1.5)


@pytest.mark.parametrize("scale", (_limit_scale, _copy_scale))
def test_a_bone_passed_through_that_its_constraints_scale_is_named(blender, scale):
    """A scale-only constraint is allowed on a helper (Rigify's Copy Scale keeps the arm's scale); one that scales it
    otherwise than the bone it hangs from moves the tip: Solve puts the pose back and says which bone, and why."""
    bpy = blender
    obj, target = arm_through(bpy, "plain")
    scale(bpy, obj)
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match="bone 'H', which the chain passes through, is scaled otherwise than the "
                                           "bone it hangs from"):
        bpy.ops.blender_ik.solve()
    assert pose_snapshot(obj) == before


def test_a_connected_bone_passed_through_ignores_its_location(blender):
    """Blender ignores a connected bone's location; so does the check that the helper is at rest."""
    bpy = blender
    obj, target = arm_through(bpy, "plain", at="b3")
    assert obj.data.bones["H"].use_connect
    obj.pose.bones["H"].location = (0.3, 0.0, 0.0)
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert on_target(obj, target), tip_off(obj, target)


@pytest.mark.parametrize("expression", ("0.0", "0.1 if frame > 4 else 0.0"))
def test_a_bone_passed_through_that_a_driver_poses_is_taken_where_it_rests(blender, expression):
    """A driver on the helper (Rigify's finger curl, at rest while its master control is): Solve and Live take the pose
    it gives now; the bake checks every frame as Blender plays it, keys the range where the driver keeps it at rest,
    and refuses one where it does not, naming the frames, before changing anything."""
    bpy = blender
    obj, target = arm_through(bpy, "plain")
    obj.pose.bones["H"].driver_add("rotation_quaternion", 1).driver.expression = expression
    bpy.context.scene.frame_set(1)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert on_target(obj, target), tip_off(obj, target)
    start = np.array(target.location)
    for frame, step in ((1, 0.0), (8, 0.05)):
        target.location = start + step
        target.keyframe_insert("location", frame=frame)
    if expression == "0.0":  # it holds still: the bake reads the target from its keys, the scene's frame unchanged
        from blender_ik_addon.ops import bake_armature
        assert bake_armature(bpy.context.scene, obj, frame_start=1, frame_end=8).direct
        for frame in range(1, 9):
            bpy.context.scene.frame_set(frame)
            assert on_target(obj, target), (frame, tip_off(obj, target))
        return
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=r"Chain 'arm': Bone 'H', which the chain passes through at the joint of "
                                           r"'b3', leaves its rest at frames 5-8 \(its driver on "
                                           r"'rotation_quaternion'"):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=8)
    assert pose_snapshot(obj) == before and obj.animation_data.action is None
    obj.blender_ik.chains[0].live = True
    bpy.context.scene.frame_set(6)
    from rigs import readout
    status = readout(obj, "arm")
    assert status.status == "ERROR" and "is posed by its driver on 'rotation_quaternion'; the chain takes it at " \
                                        "rest" in status.message


@pytest.mark.parametrize("keys", ("turning", "held"))
def test_the_bake_refuses_a_bone_passed_through_that_its_keys_turn(blender, keys):
    """Keys that turn the helper on some frames are refused; keys that hold it at rest (Insert Keyframe on every bone)
    are not animation."""
    bpy = blender
    obj, target = arm_through(bpy, "plain")
    helper = obj.pose.bones["H"]
    helper.keyframe_insert("rotation_quaternion", frame=1)
    if keys == "turning":
        helper.rotation_quaternion = (0.98, 0.0, 0.2, 0.0)
    helper.keyframe_insert("rotation_quaternion", frame=10)
    helper.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
    bpy.context.scene.frame_set(1)
    if keys == "turning":
        with pytest.raises(RuntimeError, match="Bone 'H', which the chain passes through, has an animated "
                                               r"rotation_quaternion; the chain takes it at rest on every frame"):
            bpy.ops.blender_ik.bake(frame_start=1, frame_end=10)
    else:
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
        for frame in (1, 5, 10):
            bpy.context.scene.frame_set(frame)
            assert on_target(obj, target), frame


def test_a_tip_whose_ancestors_are_all_at_its_joint_says_so(blender):
    """The refusal names the bone passed through, which counted as no ancestor."""
    bpy = blender
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    helper = edit_bones.new("helper")
    helper.head, helper.tail = (2.0, 0.0, 0.0), (2.0, 0.2, 0.0)
    lone = edit_bones.new("lone")
    lone.head, lone.tail, lone.parent = (2.0, 0.0, 0.0), (2.0, 0.0, 0.5), helper
    bpy.ops.object.mode_set(mode="OBJECT")
    from blender_ik_addon.chain import ChainError, chain_path
    with pytest.raises(ChainError, match=r"Bone 'lone' needs two ancestors: .* \(it passes through 'helper', which "
                                         r"starts where the bone below starts\)"):
        chain_path(obj, "lone")


def test_a_chain_below_the_tip_of_one_through_a_helper_follows_it_live(blender):
    """A finger chain hangs from the tip of a chain that passes through a helper: Live solves it on the pose Blender
    shows (its base is not told from the chain above, whose tip hangs from a helper), both tips on their targets."""
    bpy = blender
    from rigs import bone_chain
    obj, target = arm_through(bpy, "rigify")
    bpy.ops.object.mode_set(mode="EDIT")
    bone_chain(obj.data.edit_bones, obj.data.edit_bones["b3"], "c", [(0.1, 0.0, 0.0), (0.1, 0.0, -0.03),
                                                                      (0.05, 0.0, -0.04)])
    bpy.ops.object.mode_set(mode="OBJECT")
    from blender_ik_addon.ops import tip_target_matrix
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    finger_target = add_empty("Finger")
    finger_target.matrix_world = tip_target_matrix(obj, "c3", "Z", "NONE")
    finger_target.parent = target  # it moves with the hand's target, where the finger reaches as it is now
    finger_target.matrix_parent_inverse = target.matrix_world.inverted()
    finger = obj.blender_ik.chains.add()
    finger.name, finger.tip_bone, finger.target = "finger", "c3", finger_target
    bpy.context.view_layer.update()
    for chain in obj.blender_ik.chains:
        chain.live = True
    rng = np.random.default_rng(3)
    for _ in range(3):
        target.location = np.array(target.location) + rng.normal(scale=0.03, size=3)
        bpy.context.view_layer.update()
        assert on_target(obj, target), tip_off(obj, target)
        tip = np.array(obj.matrix_world @ obj.pose.bones["c3"].tail)
        assert np.linalg.norm(tip - np.array(finger_target.matrix_world.translation)) < 1e-5


def key_fk_made_goals(bpy, rig, chain, names, rng, frames, spread):
    """Key the chain's target, on each of ``frames``, where the tip goes when the controls ``names`` (quaternions) are
    turned at random by up to ``spread``; then put them back at rest."""
    from blender_ik_addon.ops import tip_target_matrix
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        for name in names:
            rig.pose.bones[name].rotation_quaternion = (1.0, *rng.uniform(-spread, spread, 3))
        bpy.context.view_layer.update()
        chain.target.matrix_world = tip_target_matrix(rig, names[2], chain.up_axis, chain.roll_axis)
        chain.target.keyframe_insert("location", frame=frame)
        chain.target.keyframe_insert("rotation_euler", frame=frame)
    for name in names:
        rig.pose.bones[name].rotation_quaternion = (1.0, 0.0, 0.0, 0.0)


@pytest.fixture
def rigify_rig(blender):
    """Rigify's basic human, generated: its FK limbs pass through MCH bones at the wrist, the ankle and the toe."""
    bpy = blender
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_basic_human_metarig_add()
    with contextlib.redirect_stdout(io.StringIO()):  # its timings
        assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    rig = bpy.context.view_layer.objects.active
    bpy.ops.object.mode_set(mode="POSE")
    return rig


@pytest.mark.parametrize("tip, through", [("hand_fk.L", ("MCH-hand_fk.L",)),
                                          ("toe_fk.R", ("MCH-foot_fk.R", "MCH-toe_fk.R"))])
def test_rigify_fk_limbs_of_a_generated_rig_are_chains(blender, rigify_rig, tip, through):
    """An animator picks the FK hand (or toe) control of a generated Rigify rig: the chain is the FK limb, through the
    MCH bones between; Solve reaches poses made by turning the controls, and a bake's keys play back on the target."""
    bpy = blender
    from blender_ik_addon.chain import chain_path
    rig = rigify_rig
    rig.data.bones.active = rig.data.bones[tip]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    chain = rig.blender_ik.active_chain
    names, passed = chain_path(rig, tip)
    assert passed == through and names[2] == tip and all(name.endswith("_fk" + tip[-2:]) for name in names)
    goal = chain.target
    length = sum(rig.data.bones[name].length for name in names)
    key_fk_made_goals(bpy, rig, chain, names, np.random.default_rng(5), (1, 8), 0.3)
    scene = bpy.context.scene
    scene.frame_set(8)
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}

    def off():
        pose_bone = rig.pose.bones[tip]
        tail = rig.matrix_world @ pose_bone.tail
        return ((tail - goal.matrix_world.translation).length,
                math.degrees(angle_between(np.array(tail - rig.matrix_world @ pose_bone.head),
                                           axis_of(goal, chain.up_axis))))
    distance, angle = off()
    assert distance < 1e-5 * length and angle < 1e-3
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=8, chains="ACTIVE") == {"FINISHED"}
    for frame in (1, 8):  # (between them the target may pass out of the arm's reach)
        scene.frame_set(frame)
        distance, angle = off()
        assert distance < 1e-5 * length and angle < 1e-3, frame
    # Live, then a built rig, on the pose the keys left, the target nudged.
    goal.animation_data_clear()
    rig.animation_data.action = None
    for step, how in enumerate(("live", "rig")):
        if how == "live":
            chain.live = True
        else:
            chain.live = False
            assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
        goal.location.z += 0.01 * (-1) ** step
        bpy.context.view_layer.update()
        distance, angle = off()
        assert distance < 1e-5 * length and angle < 1e-3, how


def test_rigify_ik_baked_onto_the_fk_controls(blender, rigify_rig):
    """An IK-to-FK bake on a generated Rigify rig: an Empty parented to the IK hand control (Parent > Bone puts it at
    the bone's tail, along it) is the FK chain's target, up axis Y; the bake keys the FK controls so that the FK hand
    is where the IK hand is on every frame, as Blender shows both. Where Rigify's IK stretches the arm beyond its
    length, the FK arm cannot follow: that frame is counted out of reach and gets the closest pose."""
    bpy = blender
    rig = rigify_rig
    ik_hand = rig.pose.bones["hand_ik.L"]
    for frame, location in ((1, (0.0, 0.0, 0.0)), (10, (-0.05, -0.08, 0.06)), (20, (0.03, -0.1, -0.05)),
                            (24, (0.05, -0.15, -0.12))):  # the last one beyond the arm: Rigify's IK stretches
        ik_hand.location = location
        ik_hand.keyframe_insert("location", frame=frame)
    empty = add_empty("IK hand tip")
    empty.parent, empty.parent_type, empty.parent_bone = rig, "BONE", "hand_ik.L"
    rig.data.bones.active = rig.data.bones["hand_fk.L"]
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    chain = rig.blender_ik.active_chain
    chain.target, chain.up_axis = empty, "Y"
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=24, chains="ACTIVE") == {"FINISHED"}
    fk_hand, shoulder = rig.pose.bones["hand_fk.L"], rig.pose.bones["upper_arm_fk.L"]
    reach = shoulder.length + rig.pose.bones["forearm_fk.L"].length
    stretched = []
    for frame in range(1, 25):
        bpy.context.scene.frame_set(frame)
        off = max((fk_hand.head - ik_hand.head).length, (fk_hand.tail - ik_hand.tail).length)
        if (ik_hand.head - shoulder.head).length > reach * (1 + 1e-5):
            stretched.append(frame)
            assert off > 1e-3  # the FK arm does not stretch
        else:
            assert off < 1e-5, frame
    assert stretched and stretched[-1] == 24 and len(stretched) < 12


def test_rigify_finger_controls_of_a_generated_human_are_chains(blender):
    """The FK finger controls of Rigify's full human, generated, pass through the MCH bones whose drivers curl the
    finger from its master control (at rest while the master is): Solve reaches poses made by turning the controls,
    and the bake keys them on target; it reads such a chain frame by frame, to check those bones on each, only where
    something keys or drives what the drivers read."""
    bpy = blender
    from blender_ik_addon.chain import chain_path
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    with contextlib.redirect_stdout(io.StringIO()):
        assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    rig = bpy.context.view_layer.objects.active
    bpy.ops.object.mode_set(mode="POSE")
    rng = np.random.default_rng(2)
    scene = bpy.context.scene
    for tip in ("f_index.03.L", "thumb.03.R"):
        names, through = chain_path(rig, tip)
        stem, side = tip[:-5], tip[-2:]
        assert names == tuple(f"{stem}.0{index}{side}" for index in (1, 2, 3))
        assert through == tuple(f"MCH-{stem}.0{index}_drv{side}" for index in (2, 3))
        rig.data.bones.active = rig.data.bones[tip]
        assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
        assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
        chain = rig.blender_ik.active_chain
        goal = chain.target
        key_fk_made_goals(bpy, rig, chain, names, rng, (1, 6), 0.2)
        length = sum(rig.data.bones[name].length for name in names)

        def off():
            tail = rig.matrix_world @ rig.pose.bones[tip].tail
            return (tail - goal.matrix_world.translation).length
        assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
        assert off() < 1e-5 * length
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=6, chains="ACTIVE") == {"FINISHED"}
        for frame in (1, 6):
            scene.frame_set(frame)
            assert off() < 1e-5 * length, (tip, frame)
    # Nothing keys the masters the curl drivers read: the drivers hold still, and the bake reads no frame for them
    # (Rigify's parent switches above the hand are read frame by frame, for the bases); keyed (at rest), the masters may
    # curl on some frames, and it reads each as Blender plays it, to check.
    from blender_ik_addon.ops import bake_armature

    def curl_read():
        reasons = bake_armature(scene, rig, frame_start=1, frame_end=6).reasons
        return any("MCH-f_index.02_drv.L" in reason for reason in reasons)
    assert not curl_read()
    rig.pose.bones["f_index.01_master.L"].keyframe_insert("scale", frame=1)
    assert curl_read()
