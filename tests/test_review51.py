"""Review 51: cleaning up motion capture (every bone keyed on every frame, an armature scaled to centimetres, feet
locked with IK), judged by what Blender plays back."""
import math

import numpy as np
import pytest

from rigs import add_empty, build_arm, chain_length_world

FRAMES = range(1, 31)


def _keyed_like_mocap(bpy, obj, noise):
    """Key every chain bone's location, rotation and scale on every frame, as an FBX import does: the rotation moving,
    the location and scale holding their rest values plus ``noise`` (the float32 rounding an FBX round trip leaves:
    a scale of 1.0000001192, a location of 1e-7)."""
    rng = np.random.default_rng(51)
    for frame in FRAMES:
        for name in ("b1", "b2", "b3"):
            pose_bone = obj.pose.bones[name]
            pose_bone.rotation_quaternion = (1.0, 0.05 * math.sin(frame / 5.0), 0.1 * math.cos(frame / 7.0), 0.0)
            pose_bone.scale = tuple(np.float32(1.0) + np.float32(noise) * rng.integers(-2, 3, 3)
                                    * np.finfo(np.float32).eps)
            pose_bone.location = tuple(noise * rng.uniform(-1e-7, 1e-7, 3))
            for path in ("location", "rotation_quaternion", "scale"):
                pose_bone.keyframe_insert(path, frame=frame)


def _played_off(bpy, obj, target, frames):
    """The farthest the tip gets from its target over ``frames``, played back, over the chain's length."""
    scene = bpy.context.scene
    worst = 0.0
    for frame in frames:
        scene.frame_set(frame)
        tip = obj.matrix_world @ obj.pose.bones["b3"].tail
        worst = max(worst, (tip - target.matrix_world.translation).length)
    return worst / chain_length_world(obj)


def _arm_on_mocap(bpy, noise, scale):
    """An unconnected arm (its first bone's location counts) scaled ``scale``, keyed as mocap, with a chain on b3
    reaching for a target keyed across the take."""
    obj = build_arm(connected=False)
    obj.scale = (scale,) * 3
    bpy.context.view_layer.objects.active = obj
    _keyed_like_mocap(bpy, obj, noise)
    target = add_empty(location=(0.9 * scale, 0.3 * scale, 1.1 * scale), rotation=(0.2, 0.4, 0.1))
    for frame, x in ((1, 0.9), (30, 0.6)):
        target.location.x = x * scale
        target.keyframe_insert("location", frame=frame)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.scene.frame_set(1)
    return obj, target


@pytest.mark.parametrize("scale", [1.0, 0.01])
@pytest.mark.parametrize("noise", [0.0, 1.0])
def test_mocap_keyed_scale_and_location_with_float32_noise_bakes(blender, noise, scale):
    """An FBX take (Blender's own FBX export read back in) keys every bone's scale at 1.0 or 1.0000001 (1-2 float32
    ulps) and its location at a few 1e-8: the bake refused it ("Bone 'foot.L' has an animated scale; ... remove those
    keys"), though Solve takes that scale as 1 and the tip lands within 1e-6 of the chain with it."""
    bpy = blender
    obj, target = _arm_on_mocap(bpy, noise, scale)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30) == {"FINISHED"}
    assert _played_off(bpy, obj, target, FRAMES) < 1e-5


def test_mocap_keyed_scale_that_changes_is_still_refused(blender):
    """A scale that does change (by a thousandth) is animation: still refused."""
    bpy = blender
    obj, _ = _arm_on_mocap(bpy, 0.0, 1.0)
    obj.pose.bones["b2"].scale = (1.001, 1.0, 1.0)
    obj.pose.bones["b2"].keyframe_insert("scale", frame=15)
    bpy.context.scene.frame_set(1)
    with pytest.raises(RuntimeError, match="animated scale"):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=30)


def test_an_fbx_take_bakes(blender, tmp_path):
    """The same, met as a user meets it: an arm keyed in Blender, exported to FBX and imported back."""
    bpy = blender
    bpy.ops.preferences.addon_enable(module="io_scene_fbx")
    obj = build_arm(connected=False)
    bpy.context.view_layer.objects.active = obj
    _keyed_like_mocap(bpy, obj, 0.0)
    path = str(tmp_path / "take.fbx")
    bpy.ops.export_scene.fbx(filepath=path, bake_anim=True, add_leaf_bones=False)
    bpy.data.objects.remove(obj)
    bpy.ops.import_scene.fbx(filepath=path)
    obj = next(o for o in bpy.context.scene.objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = obj
    target = add_empty(location=obj.matrix_world @ obj.pose.bones["b3"].tail, rotation=(0.2, 0.4, 0.1))
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30) == {"FINISHED"}
    assert _played_off(bpy, obj, target, FRAMES) < 1e-5
