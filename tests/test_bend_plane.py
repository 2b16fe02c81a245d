"""The default bend plane follows the body (issue 9): on a leg, an arm and a quadruped hind leg, poses made by
forward kinematics are solved with the middle joint on the FK pose's side, limb swings bake without jumps,
and Place Pole switches to Pole mode without moving the chain. Judged by Blender's evaluated pose."""
import math

import numpy as np
import pytest

from rigs import add_empty, build_arm

# name: (lengths, rest directions of the three bones); -Y is the front, +Z up, the parent bone points up.
LIMBS = {
    "leg": ((0.45, 0.42, 0.15), [(0, -0.1, -1), (0, 0.1, -1), (0, -1, -0.3)]),  # knee forward, foot forward
    "arm": ((0.30, 0.27, 0.10), [(0, 0.05, -1), (0, -0.3, -1), (0, -0.2, -1)]),  # hanging, elbow bends forward
    "hind_leg": ((0.30, 0.35, 0.12), [(0, 0.3, -1), (0, -0.3, -1), (0, -0.5, -0.3)]),  # middle joint points back
}


def limb(bpy, kind):
    lengths, directions = LIMBS[kind]
    obj = build_arm(lengths, directions, modes=("XYZ",) * 3, name=kind)
    for name in ("root", "b1", "b2", "b3"):
        obj.pose.bones[name].rotation_mode = "XYZ"
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj


def heads(obj):
    bpy_heads = [obj.pose.bones[name].head for name in ("b1", "b2", "b3")]
    return [np.array(tuple(head)) for head in bpy_heads]


def middle_side(obj):
    """The middle joint's offset from the base→wrist line, as Blender evaluated it (armature space)."""
    base, middle, wrist = heads(obj)
    axis = (wrist - base) / np.linalg.norm(wrist - base)
    offset = middle - base
    return offset - axis * np.dot(offset, axis)


def flex_sign(bpy, obj):
    """The sign of a rotation about b2's local X that bends the middle joint further, as it bends at rest."""
    rest = np.linalg.norm(middle_side(obj))
    obj.pose.bones["b2"].rotation_euler = (0.2, 0.0, 0.0)
    bpy.context.view_layer.update()
    sign = 1.0 if np.linalg.norm(middle_side(obj)) > rest else -1.0
    obj.pose.bones["b2"].rotation_euler = (0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    return sign


def natural_pose(obj, rng, sign):
    """The parent turned, the first bone swung, the middle joint flexed the way it bends at rest, the last
    bone pointing anywhere."""
    bones = obj.pose.bones
    bones["root"].rotation_euler = tuple(rng.uniform(-0.5, 0.5, 3))
    bones["b1"].rotation_euler = (rng.uniform(-1.3, 1.3), 0.0, rng.uniform(-0.5, 0.5))
    bones["b2"].rotation_euler = (sign * rng.uniform(0.0, 1.6), 0.0, 0.0)
    bones["b3"].rotation_euler = tuple(rng.uniform(-1.5, 1.5, 3))


def clear_chain(obj):
    for name in ("b1", "b2", "b3"):
        obj.pose.bones[name].rotation_euler = (0.0, 0.0, 0.0)


@pytest.mark.parametrize("kind", sorted(LIMBS))
def test_default_plane_keeps_the_middle_joint_on_the_fk_side(blender, kind):
    bpy = blender
    from blender_ik_addon.ops import tip_target_matrix
    obj = limb(bpy, kind)
    target = add_empty()
    obj.blender_ik.tip_bone, obj.blender_ik.target = "b3", target
    assert obj.blender_ik.plane == "PARENT" and obj.blender_ik.bend == "REST"  # the defaults
    sign = flex_sign(bpy, obj)
    rng = np.random.default_rng(len(kind))
    for _ in range(40):
        natural_pose(obj, rng, sign)
        bpy.context.view_layer.update()
        fk_side = middle_side(obj)
        target.matrix_world = tip_target_matrix(obj, "b3", "Z", "NONE")
        clear_chain(obj)
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
        bpy.context.view_layer.update()
        tip = np.array(obj.matrix_world @ obj.pose.bones["b3"].tail)
        # Blender's own rest matrices of bones pointing nearly straight down carry ~3e-5 of non-orthonormal
        # float32 noise (its vec_roll_to_mat3), which the pose it evaluates inherits.
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 5e-5
        solved_side = middle_side(obj)
        assert np.dot(solved_side, fk_side) > 0.0, (fk_side, solved_side)


def swing_targets(bpy, obj, target, frames, sign):
    """Key the target on the tip of a limb that swings, a few degrees per frame, from 30° back through
    straight ahead up to overhead and back, its middle joint flexing and its last bone turning."""
    from blender_ik_addon.ops import tip_target_matrix
    swing = np.concatenate([np.linspace(-0.5, math.pi, frames // 2), np.linspace(math.pi, -0.5, frames - frames // 2)])
    bones = obj.pose.bones
    for frame, angle in enumerate(swing, start=1):
        bones["b1"].rotation_euler = (-angle if obj.name != "hind_leg" else -angle, 0.0, 0.15 * math.sin(angle))
        bones["b2"].rotation_euler = (sign * (0.3 + 0.4 * math.sin(frame * 0.1) ** 2), 0.0, 0.0)
        bones["b3"].rotation_euler = (1.2 * math.sin(frame * 0.13), 0.6 * math.cos(frame * 0.07), 0.0)
        bpy.context.view_layer.update()
        target.matrix_world = tip_target_matrix(obj, "b3", "Z", "NONE")
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    clear_chain(obj)
    return np.abs(np.diff(swing)).max()


@pytest.mark.parametrize("kind, plane, jumps", [(kind, "PARENT", False) for kind in sorted(LIMBS)] + [
    ("leg", "TARGET", True)])  # seed 000's roll: the plane follows the foot, and the knee swings across
def test_a_limb_swing_bakes_without_jumps(blender, kind, plane, jumps):
    bpy = blender
    obj = limb(bpy, kind)
    target = add_empty()
    obj.blender_ik.tip_bone, obj.blender_ik.target, obj.blender_ik.plane = "b3", target, plane
    frames = 150
    step = swing_targets(bpy, obj, target, frames, flex_sign(bpy, obj))
    assert math.radians(2) < step < math.radians(6)  # a few degrees per frame
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=frames) == {"FINISHED"}
    previous = None
    worst = 0.0
    for frame in range(1, frames + 1):
        bpy.context.scene.frame_set(frame)
        # The first two bones: where the plane decides the pose (the last one follows the target's turning).
        rotations = [np.array(obj.pose.bones[name].matrix.to_3x3().normalized()) for name in ("b1", "b2")]
        if previous is not None:
            for before, after in zip(previous, rotations):
                cosine = (np.trace(before.T @ after) - 1.0) / 2.0
                worst = max(worst, math.acos(min(1.0, max(-1.0, cosine))))
        previous = rotations
    assert (worst > 3 * step) == jumps, (math.degrees(worst), math.degrees(step))


@pytest.mark.parametrize("plane", ["PARENT", "TARGET"])
def test_place_pole_leaves_the_pose_as_it_is(blender, plane):
    bpy = blender
    obj = limb(bpy, "leg")
    target = add_empty(location=(0.05, -0.25, -0.6), rotation=(1.2, 0.3, 0.2))
    settings = obj.blender_ik
    settings.tip_bone, settings.target, settings.plane, settings.bend = "b3", target, plane, "AWAY"
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    before = {name: obj.pose.bones[name].matrix.copy() for name in ("b1", "b2", "b3")}
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert settings.plane == "POLE" and settings.pole is not None and settings.pole.name == "b3_pole"
    base, middle, wrist = heads(obj)
    pole = np.array(obj.matrix_world.inverted() @ settings.pole.matrix_world.translation)
    length = sum(obj.data.bones[name].length for name in ("b1", "b2", "b3"))
    assert abs(np.linalg.norm(middle_side(obj) / np.linalg.norm(middle_side(obj)) * length
                              - ((pole - base) - (wrist - base) / np.linalg.norm(wrist - base)
                                 * np.dot(pole - base, (wrist - base) / np.linalg.norm(wrist - base))))) < 1e-5
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    bpy.context.view_layer.update()
    for name, matrix in before.items():
        after = obj.pose.bones[name].matrix
        assert max(abs(a - b) for row_a, row_b in zip(after, matrix) for a, b in zip(row_a, row_b)) < 1e-5, name
    # Again: the existing pole object is moved, not replaced.
    pole_object = settings.pole
    assert bpy.ops.blender_ik.place_pole() == {"FINISHED"}
    assert settings.pole == pole_object and len([o for o in bpy.data.objects if o.name.startswith("b3_pole")]) == 1
