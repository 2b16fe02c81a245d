"""scripts/bake_ik.py --snap-targets: FK to IK without the UI. The files made here have an arm animated bone by bone
and its target standing elsewhere; the script keys the target, and what it saved is opened and played by Blender."""
import json
import shutil

import numpy as np
import pytest

from rigs import add_empty, build_arm
from test_bake import animate_target, rotation_keys
from test_bake_ik_script import digest, script_in
from test_chains import tip_error

FRAMES = 40
BONES = ("b1", "b2", "b3")


def _build_fk(bpy, path, chain=True, locked=False):
    """The arm, its bones keyed on every frame (a bake of a wandering target), and the Empty 'Target' left standing
    away from the hand, unkeyed; with ``chain``, the arm's chain 'hand' reaches for it (else the file has none)."""
    import blender_ik_addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        obj = build_arm(name="Arm")
        target = add_empty("Target")
        animate_target(target, frames=range(1, FRAMES + 1, 8), seed=3)
        settings = obj.blender_ik.chains.add()
        settings.name, settings.tip_bone, settings.target = "hand", "b3", target
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, FRAMES
        bpy.context.view_layer.objects.active = obj
        obj.select_set(True)
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES, chains="ALL", interpolation="BEZIER") == {
            "FINISHED"}
        target.animation_data_clear()
        target.location, target.rotation_euler = (4.0, -3.0, 2.0), (0.4, -0.2, 1.0)
        target.lock_location[1] = locked
        if not chain:
            obj.blender_ik.chains.remove(0)
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        blender_ik_addon.unregister()


@pytest.fixture(scope="module")
def fk_sources(tmp_path_factory):
    import bpy

    folder = tmp_path_factory.mktemp("fk")
    _build_fk(bpy, folder / "fk.blend")
    _build_fk(bpy, folder / "plain.blend", chain=False)
    _build_fk(bpy, folder / "locked.blend", locked=True)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return folder


@pytest.fixture
def fk(tmp_path, fk_sources):
    return script_in(tmp_path, fk_sources)


def bone_keys(bpy, path):
    """Every chain bone's rotation keys in the file, per bone and channel."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Arm"]
    return {bone: rotation_keys(obj, bone, "rotation_quaternion") for bone in BONES}


def check_snapped(bpy, path, frames, interpolation):
    """Open a snapped file: the target's location and rotation are keyed on ``frames`` with ``interpolation``, and
    on each frame Blender plays it on the hand's tip, its Z along the hand."""
    from blender_ik_addon import keys

    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    curves = sorted(keys.object_fcurves(target), key=lambda c: (c.data_path, c.array_index))
    assert [(c.data_path, c.array_index) for c in curves] == [("location", i) for i in range(3)] + [
        ("rotation_euler", i) for i in range(3)]
    for curve in curves:
        assert [k.co[0] for k in curve.keyframe_points] == list(frames)
        assert {k.interpolation for k in curve.keyframe_points} == {interpolation}
    reach = sum(bone.length for bone in obj.data.bones)
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        distance, angle = tip_error(bpy, obj, "b3", target)
        assert distance < 1e-6 * reach and angle < 1e-5, (frame, distance, angle)


@pytest.mark.parametrize("options, frames, interpolation", [
    ((), range(1, FRAMES + 1), "BEZIER"),
    (("--start", 5, "--end", 30, "--step", 4, "--interpolation", "linear"), [5, 9, 13, 17, 21, 25, 29, 30], "LINEAR"),
])
def test_snap_targets_keys_the_target_on_the_tip_and_leaves_the_bones(blender, fk, options, frames, interpolation):
    bpy = blender
    source, output, report = fk.folder / "fk.blend", fk.folder / "fk_snapped.blend", fk.folder / "report.json"
    before = digest(source)
    bones_before = bone_keys(bpy, source)
    done = fk.run("fk.blend", "--snap-targets", "--report", "report.json", *options)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("fk.blend -> fk_snapped.blend: Keyed target 'Target' on frames ")
    assert f"({len(frames)} keys): solving keeps the pose on every frame" in done.stdout
    assert digest(source) == before and not (fk.folder / "fk_baked.blend").exists()
    record = json.loads(report.read_text())["files"][0]
    assert (record["mode"], record["interpolation"], record["frames"], record["turned"]) == (
        "snap-targets", interpolation.lower(), len(frames), [])
    assert [(c["armature"], c["chain"], c["tip_bone"], c["target"], c["turned"]) for c in record["chains"]] == [
        ("Arm", "hand", "b3", "Target", [])]
    check_snapped(bpy, output, frames, interpolation)
    for bone, channels in bone_keys(bpy, output).items():
        for kept, channel in zip(bones_before[bone], channels):
            np.testing.assert_array_equal(channel, kept)


def test_snap_then_bake_gives_the_bones_back(blender, fk):
    """FK to IK and back: bake the snapped file's chain, and each bone turns as it was keyed (within 1e-5)."""
    bpy = blender
    bones_before = bone_keys(bpy, fk.folder / "fk.blend")
    assert fk.run("fk.blend", "--snap-targets").returncode == 0
    done = fk.run("fk_snapped.blend", "--interpolation", "bezier")
    assert done.returncode == 0, done.stderr
    baked = bone_keys(bpy, fk.folder / "fk_snapped_baked.blend")
    for bone in BONES:
        for kept, channel in zip(bones_before[bone], baked[bone]):
            assert np.allclose(channel, kept, atol=1e-5), bone


def test_snap_targets_of_a_chain_described_on_the_command_line(blender, fk):
    bpy = blender
    done = fk.run("plain.blend", "--snap-targets", "--armature", "Arm", "--target", "Target", "--tip-bone", "b3")
    assert done.returncode == 0, done.stderr
    check_snapped(bpy, fk.folder / "plain_snapped.blend", range(1, FRAMES + 1), "BEZIER")


def test_snap_targets_in_parallel(blender, fk):
    bpy = blender
    shutil.copy(fk.folder / "fk.blend", fk.folder / "fk2.blend")
    done = fk.run("fk.blend", "fk2.blend", "--snap-targets", "--jobs", 2, "--end", 12)
    assert done.returncode == 0, done.stderr
    for name in ("fk_snapped.blend", "fk2_snapped.blend"):
        check_snapped(bpy, fk.folder / name, range(1, 13), "BEZIER")


@pytest.mark.parametrize("options, status, message", [
    (("--bake-output", "samples"), 2, "--bake-output samples is for baking the bones; --snap-targets keys the targets"),
    (("--shared-action",), 2, "--shared-action is for baking the bones; --snap-targets keys the targets"),
    (("--start", 9, "--end", 3), 2, "the frame range is empty"),
])
def test_snap_targets_refuses_options_of_a_bake(fk, options, status, message):
    done = fk.run("fk.blend", "--snap-targets", *options)
    assert done.returncode == status
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert sorted(path.name for path in fk.folder.iterdir()) == ["fk.blend", "locked.blend", "plain.blend"]


def test_samples_take_no_interpolation(fk):
    done = fk.run("fk.blend", "--bake-output", "samples", "--interpolation", "bezier")
    assert done.returncode == 2 and "samples are played linearly: drop --interpolation bezier" in done.stderr


def test_a_refused_snap_saves_nothing(blender, fk):
    """A target whose location is locked cannot follow the hand: one error line naming it, no file written, the
    input unchanged."""
    before = digest(fk.folder / "locked.blend")
    done = fk.run("locked.blend", "--snap-targets", "--report", fk.scratch / "report.json")
    assert done.returncode == 1
    assert done.stderr.startswith("bake_ik.py: error: locked.blend: armature 'Arm': ")
    assert "'Target'" in done.stderr and "lock" in done.stderr.lower() and done.stderr.count("\n") == 1, done.stderr
    assert digest(fk.folder / "locked.blend") == before
    assert not (fk.folder / "locked_snapped.blend").exists()
    record = json.loads((fk.scratch / "report.json").read_text())["files"][0]
    assert (record["ok"], record["mode"]) == (False, "snap-targets") and "'Target'" in record["error"]


@pytest.mark.parametrize("interpolation", [None, "bezier", "constant"])
def test_bake_interpolation(blender, fk, interpolation):
    """--interpolation applies to a bake's keys too (linear by default, as the Bake button's)."""
    bpy = blender
    done = fk.run("fk.blend", "--end", 10, *(("--interpolation", interpolation) if interpolation else ()))
    assert done.returncode == 0, done.stderr
    bpy.ops.wm.open_mainfile(filepath=str(fk.folder / "fk_baked.blend"))
    from blender_ik_addon import keys
    obj = bpy.data.objects["Arm"]
    baked = [k for c in keys.object_fcurves(obj) for k in c.keyframe_points if k.co[0] <= 10]
    assert baked and {k.interpolation for k in baked} == {(interpolation or "linear").upper()}
