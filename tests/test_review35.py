"""Review 35: goals that are not plain Empties (an animator uses whatever is in the scene as a target): sheared,
mirrored, tiny or huge, constrained, driven, parented to vertices, bones of other armatures. Judged by what Blender
evaluates (matrix_world, the pose bones)."""
import numpy as np
import pytest

from rigs import arm_with_chain


def _sheared_target(bpy, chain, scale=(1.0, 2.5, 0.7)):
    """The chain's target hung, where it was, under a turned parent scaled unevenly: its world axes are sheared. A
    scale of zero on an axis is the target's own (flattened to a plane)."""
    from mathutils import Vector
    if 0.0 in scale:
        chain.target.scale = scale
        bpy.context.view_layer.update()
        return chain.target
    parent = bpy.data.objects.new("Holder", None)
    bpy.context.scene.collection.objects.link(parent)
    parent.location, parent.rotation_euler, parent.scale = (0.2, 0.1, 0.3), (0.3, 0.5, 0.2), scale
    target = chain.target
    where = Vector(target.location)
    target.rotation_euler = (0.4, -0.3, 0.6)
    target.parent = parent
    bpy.context.view_layer.update()
    target.location = parent.matrix_world.inverted() @ where
    bpy.context.view_layer.update()
    return target


def _world_pose(bpy, obj):
    bpy.context.view_layer.update()
    return np.array([np.array(obj.matrix_world @ obj.pose.bones[name].matrix) for name in ("b1", "b2", "b3")])


@pytest.mark.parametrize("up_axis, roll_axis, scale, refused", [
    ("-Y", "NONE", (1.0, 2.5, 0.7), None),  # Copy Rotation keeps a target's Y: the rig follows it
    ("Z", "NONE", (1.0, 2.5, 0.7), "is sheared"),  # refused, but by the self-check: "something in the scene..."
    ("Y", "Z", (1.0, 2.5, 0.7), "is sheared"),  # built, the hand rolled 12° off the solve's
    ("-Y", "-X", (1.0, 2.5, 0.7), "is sheared"),
    ("Z", "NONE", (0.0, 1.0, 1.0), "zero scale on its X axis"),  # a 23.6° miss blamed on "something in the scene"
])
def test_build_rig_on_a_sheared_target_poses_as_solve_or_says_why(blender, up_axis, roll_axis, scale, refused):
    """A hand's target parented under a prop scaled unevenly and turned: Solve puts the last bone along the target's
    up axis as Blender evaluates it (its sheared matrix_world) and rolls it toward its roll axis there. Build Rig's Copy
    Rotation makes the target's axes perpendicular first, keeping Y: with another up axis its self-check refused the
    rig as 'something in the scene', and with a roll axis it reported success with the hand rolled 12° off Solve's."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.up_axis, chain.roll_axis = up_axis, roll_axis
    target = _sheared_target(bpy, chain, scale)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    solved = _world_pose(bpy, obj)
    tip = solved[2][:3, 3] + solved[2][:3, 1] * obj.data.bones["b3"].length
    assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5
    if refused is None:
        assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
        np.testing.assert_allclose(_world_pose(bpy, obj), solved, atol=1e-5)
        return
    with pytest.raises(RuntimeError, match=refused):
        bpy.ops.blender_ik.build_rig()
    assert not obj.get("blender_ik_rig")
    np.testing.assert_allclose(_world_pose(bpy, obj), solved, atol=1e-6)


@pytest.mark.parametrize("operator", ["solve", "bake"])
def test_a_roll_axis_scaled_to_zero_is_refused(blender, operator):
    """A target flattened to zero along X (a control hidden by scaling it), with Roll 'Target X': Solve reported success
    with the hand rolled 180° from where the same target scaled 1e-9 rolls it (the roll toward an axis of zero length is
    any), while a zero up axis was refused. Now both are, naming the axis; nothing changes."""
    from rigs import pose_snapshot
    bpy = blender
    obj, chain = arm_with_chain(bpy, rotation=(0.2, 0.4, 0.1))
    chain.roll_axis = "X"
    chain.target.scale = (0.0, 1.0, 1.0)
    bpy.context.view_layer.update()
    before = pose_snapshot(obj)
    kwargs = {"frame_start": 1, "frame_end": 3} if operator == "bake" else {}
    with pytest.raises(RuntimeError, match="zero-scale up or roll axis|zero scale on its X axis, its roll axis"):
        getattr(bpy.ops.blender_ik, operator)(**kwargs)
    assert pose_snapshot(obj) == before and obj.animation_data is None
