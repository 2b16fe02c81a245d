"""Snap Target: the chain's target moved to its tip, its up axis along the last bone, so that solving leaves the chain
as it is posed (a pose made by turning the bones, taken over by the target). Judged by where Blender shows the target
and, after a solve, the chain."""
import math
import re

import numpy as np
import pytest

from rigs import add_empty, arm_and_chain_beside, arm_with_chain, reachable_target, tip_and_direction
from rigs import pose_snapshot as _snapshot

# How the target hangs: alone; parented to a turned, scaled Empty; a bone of another armature; a bone of the chain's
# own armature, beside the chain.
HANGS = ("alone", "parented", "bone", "own bone")


def _goal_world(bpy, chain):
    from mathutils import Matrix
    bpy.context.view_layer.update()
    target = chain.target
    if chain.target_bone:
        return target.matrix_world @ target.pose.bones[chain.target_bone].matrix
    return Matrix(target.matrix_world)


def _place(bpy, chain, world):
    if chain.target_bone:
        chain.target.pose.bones[chain.target_bone].matrix = chain.target.matrix_world.inverted() @ world
    else:
        chain.target.matrix_world = world
    bpy.context.view_layer.update()


def _control_bone(bpy, obj, name, parent=None):
    """A bone ``name`` of ``obj`` away from everything, below ``parent`` if given; back in Object Mode."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    bone = obj.data.edit_bones.new(name)
    bone.head, bone.tail = (2.0, 0.0, 0.0), (2.0, 0.0, 0.3)
    if parent is not None:
        bone.parent = obj.data.edit_bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")


def arm_posed_elsewhere(bpy, hang="alone", roll_axis="NONE", plane="PARENT", seed=3):
    """The arm's chain posed by a solve (a pose its settings reach), then its target moved and turned away from the
    tip, as an animator's pose of the bones whose IK control is elsewhere. Returns (object, chain, pose)."""
    from mathutils import Euler, Matrix
    obj, chain = arm_with_chain(bpy)
    chain.roll_axis, chain.plane = roll_axis, plane
    if plane == "POLE":  # a pole where the middle joint is at rest
        assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    if hang == "parented":
        parent = add_empty("Parent", location=(0.3, -0.2, 0.5), rotation=(0.5, 0.1, 0.9))
        parent.scale = (1.5, 1.5, 1.5)
        chain.target.parent = parent
    elif hang == "bone":
        control = bpy.data.objects.new("Controls", bpy.data.armatures.new("Controls"))
        bpy.context.scene.collection.objects.link(control)
        control.location, control.rotation_euler = (0.2, 0.1, -0.3), (0.0, 0.3, 0.4)
        _control_bone(bpy, control, "ctl")
        chain.target, chain.target_bone = control, "ctl"
    elif hang == "own bone":
        _control_bone(bpy, obj, "ctl", parent="root")
        bpy.data.objects.remove(chain.target)
        chain.target, chain.target_bone = obj, "ctl"
    bpy.context.view_layer.objects.active = obj
    location, rotation = reachable_target(np.random.default_rng(seed), obj)
    world = Matrix.LocRotScale(location, rotation.to_quaternion(), (1.0, 1.0, 1.0))
    _place(bpy, chain, world)
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    bpy.context.view_layer.update()
    pose = pose_snapshot(obj)
    _place(bpy, chain, Matrix.Translation((0.3, -0.2, 0.25)) @ world @ Euler((0.4, -0.3, 0.8)).to_matrix().to_4x4())
    return obj, chain, pose


def pose_snapshot(obj):
    """The chain bones' channels (a target bone of the armature moves with the snap)."""
    return {name: value for name, value in _snapshot(obj).items() if name in ("b1", "b2", "b3", "c1", "c2", "c3")}


def goal_off_tip(bpy, obj, chain):
    """How far Blender shows the target from the tip, and its up axis' angle to the last bone."""
    tip, direction = tip_and_direction(obj)
    world = _goal_world(bpy, chain)
    column = "XYZ".index(chain.up_axis[-1])
    up = np.array(world.col[column][:3]) * (-1.0 if chain.up_axis.startswith("-") else 1.0)
    up /= np.linalg.norm(up)
    return (float(np.linalg.norm(np.array(world.translation) - tip)),
            math.atan2(np.linalg.norm(np.cross(up, direction)), float(np.dot(up, direction))))


def largest_change(before, after):
    return max(abs(a - b) for name in before for old, new in zip(before[name], after[name]) for a, b in zip(old, new))


@pytest.mark.parametrize("plane", ("PARENT", "TARGET", "POLE"))
@pytest.mark.parametrize("roll_axis", ("NONE", "X", "-Y"))
@pytest.mark.parametrize("hang", HANGS)
def test_a_solve_after_the_snap_keeps_the_pose(blender, capfd, hang, roll_axis, plane):
    """The target lands on the tip, its up axis along the last bone (and its roll axis, when the chain has one, as
    the bone's Z: the hand's roll is the pose's), wherever it hangs from; the report says a solve keeps the pose, and
    a solve does, as Blender shows it."""
    bpy = blender
    obj, chain, pose = arm_posed_elsewhere(bpy, hang, roll_axis, plane)
    scale = tuple(_goal_world(bpy, chain).to_scale())
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    assert "solving keeps the pose" in capfd.readouterr().out
    distance, angle = goal_off_tip(bpy, obj, chain)
    assert distance < 1e-6 and angle < 1e-5, (distance, angle)
    assert np.allclose(_goal_world(bpy, chain).to_scale(), scale, atol=1e-6)  # turned and moved only
    assert pose_snapshot(obj) == pose  # the snap poses nothing
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    bpy.context.view_layer.update()
    assert largest_change(pose, pose_snapshot(obj)) < 1e-5


def test_without_a_roll_axis_the_target_turns_the_least(blender):
    """With Keep Rest Roll, only the up axis is the pose's: the target turns by the angle between its up axis and the
    last bone, no more, so its twist about that axis (which an animator set) stays."""
    bpy = blender
    obj, chain, _ = arm_posed_elsewhere(bpy)
    before = _goal_world(bpy, chain).to_quaternion()
    _, angle_before = goal_off_tip(bpy, obj, chain)
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    turned = before.rotation_difference(_goal_world(bpy, chain).to_quaternion()).angle
    assert abs(turned - angle_before) < 1e-5, (turned, angle_before)


def _fk_pose(bpy, obj, twist=0.0):
    """Turn the arm's bones by hand (as FK): b1 out of the rest bend plane, and turned by ``twist`` about its length."""
    from mathutils import Euler
    for name, euler in (("b1", (0.3, twist, 0.5)), ("b2", (0.6, 0.0, 0.2)), ("b3", (0.2, 0.0, 0.1))):
        pose_bone = obj.pose.bones[name]
        pose_bone.rotation_mode = "XYZ"
        pose_bone.rotation_euler = Euler(euler)
    bpy.context.view_layer.update()


def test_a_pose_the_chain_cannot_reach_by_its_settings_is_named(blender, capfd):
    """A pose made by turning the bones out of the chain's bend plane: the snap warns that a solve would move the
    middle joint, and how far, and points to Place Pole; after Place Pole, a twist of the first bone about its length
    (which no solve makes) is named, by the angle a solve then turns it."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    _fk_pose(bpy, obj, twist=0.6)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    out = capfd.readouterr().out
    assert out.startswith("Warning: Snapped target 'Target' to the tip of 'b3'; chain 'arm': it bends outside the "
                          "plane the chain's parent carries"), out
    assert "Place Pole keeps this bend" in out
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    out = capfd.readouterr().out
    said = re.search(r"a solve would turn 'b1' by ([0-9.]+)° about its length", out)
    assert said, out
    turned_from = obj.pose.bones["b1"].matrix_basis.to_quaternion()
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}
    turned = turned_from.rotation_difference(obj.pose.bones["b1"].matrix_basis.to_quaternion()).angle
    assert abs(math.degrees(turned) - float(said.group(1))) < 0.05, (turned, out)


def _constrained(bpy, chain):
    constraint = chain.target.constraints.new("COPY_LOCATION")
    constraint.target = add_empty("Elsewhere", location=(0.5, 0.5, 0.5))


def _driven(bpy, chain):
    chain.target.driver_add("location", 1).driver.expression = "0.4"


def _locked(bpy, chain):
    chain.target.lock_rotation[2] = True


def _sheared(bpy, chain):
    parent = add_empty("Squashed", rotation=(0.3, 0.7, 0.2))
    parent.scale = (1.0, 3.0, 0.2)
    chain.target.parent = parent


def _no_target(bpy, chain):
    chain.target = None


def _on_the_chain(bpy, chain):
    chain.target.parent, chain.target.parent_type, chain.target.parent_bone = bpy.data.objects["Arm"], "BONE", "b2"


REFUSED = {
    _constrained: "The target 'Target' is placed by its constraints (Copy Location), which would take it off the tip "
                  "again",
    _driven: "The target 'Target' has drivers on its location, which would put it back",
    _locked: "The target 'Target' has its rotation Z locked; unlock it to snap it",
    _sheared: "Blender shows the target 'Target'",
    _no_target: "Set the target",
    _on_the_chain: "hangs from the chain (through 'b2')",
}


@pytest.mark.parametrize("spoil", REFUSED, ids=lambda spoil: spoil.__name__.strip("_"))
def test_a_target_that_would_not_stay_at_the_tip_is_refused(blender, spoil):
    """A target its constraints or drivers place, whose rotation is locked, that an unevenly scaled parent shears
    (Blender cannot put it at the tip along the bone), that is not set, or that hangs from the chain: refused with a
    message naming why, the target and pose as they were."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    _fk_pose(bpy, obj)
    spoil(bpy, chain)
    bpy.context.view_layer.update()
    target = chain.target
    before = pose_snapshot(obj), target and (tuple(target.location), tuple(target.rotation_euler), tuple(target.scale))
    with pytest.raises(RuntimeError, match=re.escape(REFUSED[spoil])):
        bpy.ops.blender_ik.snap_target()
    assert (pose_snapshot(obj), target and (tuple(target.location), tuple(target.rotation_euler),
                                            tuple(target.scale))) == before


def test_a_built_rig_and_a_shared_target_are_refused(blender):
    """A chain with a built rig (which poses it from the target) and two chains with one target (which cannot be at
    both tips) are refused, nothing moved."""
    bpy = blender
    obj, (first, second) = arm_and_chain_beside(bpy)
    chains = obj.blender_ik.chains
    chains[1].target = first
    before = tuple(first.matrix_world.translation)
    with pytest.raises(RuntimeError, match="Chains 'A' and 'B' have the same target 'TA', which cannot be at both"):
        bpy.ops.blender_ik.snap_target(chains="ALL")
    chains[1].target = second
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    with pytest.raises(RuntimeError, match="Chain 'A' has a built rig, which poses the chain from its target"):
        bpy.ops.blender_ik.snap_target()
    assert tuple(first.matrix_world.translation) == before


def test_all_chains_snap_together(blender, capfd):
    bpy = blender
    obj, targets = arm_and_chain_beside(bpy)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target(chains="ALL") == {"FINISHED"}
    assert "Snapped the targets of 2 chains to their tips: solving keeps their pose" in capfd.readouterr().out
    for tip, target in zip(("b3", "c3"), targets):
        tail, _ = tip_and_direction(obj, tip)
        assert np.linalg.norm(np.array(target.matrix_world.translation) - tail) < 1e-6


@pytest.mark.parametrize("available", (False, True))
def test_auto_keying_keys_the_target_and_a_keyed_target_is_warned_of(blender, capfd, available):
    """With Auto Keying on, the snap keys the target's location and rotation at the frame (with Only Insert Available,
    on by default from 5.2, the location only, which its keys animate: the rotation stays as snapped): played back, it
    is at the tip. With it off, a keyed target is moved with a warning that its keys put it back at the next frame
    change."""
    bpy = blender
    edit = bpy.context.preferences.edit
    was, edit.use_keyframe_insert_available = edit.use_keyframe_insert_available, available
    try:
        _auto_keying(bpy, capfd, available)
    finally:
        edit.use_keyframe_insert_available = was


def _auto_keying(bpy, capfd, available):
    obj, chain = arm_with_chain(bpy)
    scene = bpy.context.scene
    target = chain.target
    target.keyframe_insert("location", frame=1)
    scene.frame_set(5)
    _fk_pose(bpy, obj)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    assert "'Target' is keyed: the keys put it back at the next frame change" in capfd.readouterr().out
    scene.tool_settings.use_keyframe_insert_auto = True
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    assert "Auto Keying keyed 1 target at frame 5" in capfd.readouterr().out
    scene.frame_set(1)
    scene.frame_set(5)
    distance, angle = goal_off_tip(bpy, obj, chain)
    assert distance < 1e-6 and angle < 1e-5
    from blender_ik_addon import keys
    keyed = {(curve.data_path, curve.array_index) for curve in keys.object_fcurves(target)}
    assert keyed == {("location", index) for index in range(3)} | (
        set() if available else {("rotation_euler", index) for index in range(3)})


def test_live_turned_on_after_the_snap_keeps_the_pose(blender):
    """The way from a pose of the bones to Live: snap, then turn Live on. Live solves the chain at once, from the
    snapped target, and the pose stays as it was; the read-out says the target is reached."""
    bpy = blender
    from rigs import readout
    obj, chain, pose = arm_posed_elsewhere(bpy)
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    chain.live = True
    bpy.context.view_layer.update()
    assert largest_change(pose, pose_snapshot(obj)) < 1e-5
    assert readout(obj).status == "REACHED"


def test_a_target_keyed_in_an_nla_strip_is_not_keyed_over_it(blender, capfd):
    """A target whose keys were pushed down into an NLA strip: Auto Keying would put a key in the object's own
    action, which overrides the strip on every frame. The snap moves it and says so, naming the strip; no key is
    added."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    target.keyframe_insert("location", frame=1)
    animation = target.animation_data
    action = animation.action
    strip = animation.nla_tracks.new().strips.new("Walk", 1, action)  # (4.5 names it after the action)
    animation.action = None
    _fk_pose(bpy, obj)
    bpy.context.scene.tool_settings.use_keyframe_insert_auto = True
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target() == {"FINISHED"}
    out = capfd.readouterr().out
    assert (f"Auto Keying: the target was not keyed: the F-curve location[0] of 'Target' is keyed in NLA strip "
            f"'{strip.name}', which a key in the object's action would override on every frame") in out, out
    assert animation.action is None
