"""Review 30: chains whose bones are not plain (a rigger's skeleton with Blender's bone options)."""
import math

import pytest

from rigs import add_empty, build_arm


def _chain(bpy, target, rotation=(0.0, 0.0, 0.0), **arm):
    """build_arm(**arm) with its chain 'arm' on b3 reaching for an Empty at ``target``, active, evaluated."""
    obj = build_arm(**arm)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", add_empty(location=target, rotation=rotation)
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, chain


def _tip_off(bpy, obj, target):
    """How far the chain's tip is from its target, and the last bone's angle to the target's Z, as Blender shows them."""
    bpy.context.view_layer.update()
    tip = obj.pose.bones["b3"]
    up = target.matrix_world.to_3x3().col[2]
    return ((obj.matrix_world @ tip.tail - target.matrix_world.translation).length,
            (obj.matrix_world.to_3x3() @ tip.matrix.to_3x3().col[1]).angle(up))


@pytest.mark.parametrize("offset, rotation", [((0.6, 0.2, 0.9), (0.3, 1.2, -0.5)), ((0.3, -0.4, 1.2), (2.0, -0.7, 0.4)),
                                              ((0.8, 0.1, 0.5), (-1.1, 0.2, 2.5))])
@pytest.mark.parametrize("tip_length, base", [(1e-5, (0.0, 0.0, 0.0)), (1e-4, (0.0, 0.0, 10.0))])
def test_a_tiny_last_bone_is_solved_not_refused(blender, tip_length, base, offset, rotation):
    """A last bone of 0.01 mm (a finger's end, a marker bone), or of 0.1 mm ten units from the armature's origin: its
    head and tail are stored in float32, a few 1e-7 from where they would be exactly, which turns the direction from
    one to the other by a tenth of a degree. The self-check measured the last bone's direction that way and refused the
    solve ("something in the scene changes the result"), with nothing in the scene but the chain."""
    bpy = blender
    target = tuple(b + o for b, o in zip(base, offset))
    obj, chain = _chain(bpy, target, rotation, lengths=(1.0, 0.8, tip_length), base=base)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    distance, angle = _tip_off(bpy, obj, chain.target)
    assert distance < 1e-5 and angle < 1e-4


def _stretched_parent(obj, volume):
    """A Stretch To on the chain's parent bone 'root' (0.5 long at rest), toward an Empty 0.8 from its head."""
    constraint = obj.pose.bones["root"].constraints.new("STRETCH_TO")
    constraint.target, constraint.volume, constraint.rest_length = add_empty("Stretch", (0.0, 0.0, 0.3)), volume, 0.5


@pytest.mark.parametrize("volume", ["VOLUME_XZX", "NO_VOLUME"])
def test_a_parent_stretched_by_a_constraint_is_refused_with_a_fix_that_works(blender, volume):
    """The chain hangs from a bone a Stretch To stretches (a spine's squash and stretch). Its pose scale is 1, so the
    refusal's only advice, "clear it with Alt+S", did nothing; what does is to stop the chain inheriting that scale
    (Inherit Scale None or Average on its first bone), or to mute the constraint. The message names the constraint and
    both fixes, and the first of them then solves exactly."""
    bpy = blender
    obj, chain = _chain(bpy, (0.5, 0.3, 1.2), (0.2, 0.4, 0.1))
    _stretched_parent(obj, volume)
    bpy.context.view_layer.update()
    before = [tuple(pose_bone.matrix_basis.col[i]) for pose_bone in obj.pose.bones for i in range(4)]
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.blender_ik.solve()
    message = str(refused.value)
    assert "'root'" in message and "Stretch To" in message and "Inherit Scale" in message and "'b1'" in message
    assert "Alt+S" not in message  # its pose scale is 1: there is nothing to clear
    assert [tuple(pose_bone.matrix_basis.col[i]) for pose_bone in obj.pose.bones for i in range(4)] == before
    for inherit_scale in ("NONE", "AVERAGE"):
        obj.data.bones["b1"].inherit_scale = inherit_scale
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        distance, angle = _tip_off(bpy, obj, chain.target)
        assert distance < 1e-5 and angle < 1e-4


def test_a_parent_scaled_by_hand_is_refused_with_both_fixes(blender):
    """A parent bone scaled non-uniformly by hand: Alt+S clears it, and Inherit Scale None or Average on the chain's
    first bone keeps it from the chain; the message gives both."""
    bpy = blender
    obj, _ = _chain(bpy, (0.5, 0.3, 1.2))
    obj.pose.bones["root"].scale = (1.3, 1.0, 0.8)
    with pytest.raises(RuntimeError, match=r"Bone 'root' above the chain .*Alt\+S.*Inherit Scale of bone 'b1'"):
        bpy.ops.blender_ik.solve()


@pytest.mark.parametrize("connected", [True, False])
def test_a_bake_takes_location_and_scale_keyed_as_they_are(blender, connected):
    """An animator blocks the arm in FK and presses I: Blender's Insert Keyframe keys location, rotation and scale by
    default, so every chain bone got scale keys of 1 (and location keys of 0). The bake refused them as "an animated
    scale", though they hold the value the bake takes on every frame; a scale that changes is still refused."""
    bpy = blender
    obj, chain = _chain(bpy, (0.8, 0.2, 1.0), connected=connected)
    target = chain.target
    for frame in (1, 10):
        target.location = (0.8 + 0.02 * frame, 0.2, 1.0 - 0.02 * frame)
        target.keyframe_insert("location", frame=frame)
        for name in ("b1", "b2", "b3"):
            for path in ("location", "rotation_quaternion", "scale"):
                obj.pose.bones[name].keyframe_insert(path, frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(1)
    assert bpy.ops.blender_ik.bake() == {"FINISHED"}
    for frame in range(1, 11):
        scene.frame_set(frame)
        distance, angle = _tip_off(bpy, obj, target)
        assert distance < 1e-5 and angle < 1e-4, frame
    obj.pose.bones["b2"].scale = (1.0, 1.2, 1.0)
    obj.pose.bones["b2"].keyframe_insert("scale", frame=5)
    obj.pose.bones["b2"].scale = (1.0, 1.0, 1.0)
    with pytest.raises(RuntimeError, match="Bone 'b2' has an animated scale"):
        bpy.ops.blender_ik.bake()


def test_constant_keys_whose_bezier_segment_bends_are_refused(blender):
    """Keys that all hold the value, the first Bezier, the last Constant with its left handle raised by hand: the
    segment between them bends through that handle (a Bezier segment uses the next key's left handle whatever that
    key's own interpolation), so the scale changes between them and the bake refuses it."""
    bpy = blender
    obj, chain = _chain(bpy, (0.8, 0.2, 1.0), connected=True)
    pose_bone = obj.pose.bones["b2"]
    for frame in (1, 10):
        pose_bone.keyframe_insert("scale", frame=frame)
    from blender_ik_addon import keys
    fcurve = next(f for f in keys.object_fcurves(obj) if f.data_path.endswith("scale") and f.array_index == 1)
    first, last = fcurve.keyframe_points
    first.interpolation, last.interpolation = "BEZIER", "CONSTANT"
    last.handle_left_type = "FREE"
    last.handle_left = (last.handle_left[0], 1.5)
    fcurve.update()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 10
    scene.frame_set(5)
    assert pose_bone.scale[1] != 1.0  # Blender plays a scale that changes
    scene.frame_set(1)
    with pytest.raises(RuntimeError, match="Bone 'b2' has an animated scale"):
        bpy.ops.blender_ik.bake()
