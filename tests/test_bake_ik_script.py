"""scripts/bake_ik.py as a command: run it on .blend files made here, then open what it saved and let
Blender replay the keys. Inputs must come out byte for byte unchanged, with nothing written next to them."""
import hashlib
import importlib.util
import json
import pathlib
import os
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest

from rigs import add_empty, build_arm
from test_bake import animate_target, check_replay, rotation_keys
from test_chains import LIMBS, body_held_by_lead, build_body, fk_goal, limb_length, select_tips, tip_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "bake_ik.py")


def _build(bpy, path, tip_bone="b3", seed=0, frame_end=60, armature_name="Arm", shown=None):
    """The arm and its keyed target in the scene 'Scene'; with ``shown``, the file is saved showing a new, empty
    scene of that name."""
    import blender_ik_addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        obj = build_arm(name=armature_name)
        animate_target(add_empty("Target"), seed=seed)
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, frame_end
        obj.blender_ik.tip_bone = tip_bone
        if shown is not None:
            # The arm moves to a new scene named 'Scene' and the window's scene is renamed: the window is not switched
            # to a new scene, which now and then crashed bpy 4.2 in the suite (a segfault in the assignment).
            shot = bpy.data.scenes.new("Shot")
            for thing in (obj, bpy.data.objects["Target"]):
                shot.collection.objects.link(thing)
                scene.collection.objects.unlink(thing)
            shot.frame_start, shot.frame_end = 1, frame_end
            scene.name, shot.name = shown, "Scene"
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        blender_ik_addon.unregister()


BODY_FRAMES = 12


def _build_body(bpy, path):
    """A body with a chain per limb (Chains from Selected) whose targets are keyed on every frame within reach."""
    import blender_ik_addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        obj = build_body(bpy)
        select_tips(bpy, obj, LIMBS)
        bpy.ops.blender_ik.chains_from_selected()
        rng = np.random.default_rng(11)
        for frame in range(1, BODY_FRAMES + 1):
            for chain in obj.blender_ik.chains:
                chain.target.matrix_world = fk_goal(bpy, obj, chain.tip_bone, rng)
                chain.target.keyframe_insert("location", frame=frame)
                chain.target.keyframe_insert("rotation_euler", frame=frame)
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, BODY_FRAMES
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        blender_ik_addon.unregister()


def replay_body(bpy, path, tips):
    """Open a baked body and check, frame by frame, the named limbs' tips on their targets, the others unkeyed."""
    from blender_ik_addon import keys
    bpy.ops.wm.open_mainfile(filepath=str(path))
    obj = bpy.data.objects["Body"]
    keyed = {curve.data_path.split('"')[1] for curve in keys.object_fcurves(obj)}
    assert keyed == {name for tip in tips for name in LIMBS[tip]}
    for frame in range(1, BODY_FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        for tip in tips:
            distance, angle = tip_error(bpy, obj, tip, bpy.data.objects[f"{tip}_target"])
            assert distance < 1e-5 * limb_length(obj, tip) and angle < 2e-5, (frame, tip)


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """The input files, made once: two rigs, a file without the armature, and a text file named .blend."""
    import bpy

    folder = tmp_path_factory.mktemp("sources")
    _build(bpy, folder / "walk.blend")  # tip bone set in the file, scene range 1-60
    _build(bpy, folder / "reach.blend", tip_bone="", seed=1, frame_end=40)  # no tip bone set
    _build(bpy, folder / "other_rig.blend", armature_name="Rig")
    _build(bpy, folder / "layout.blend", shown="Layout")  # the arm in 'Scene', saved showing 'Layout'
    _build_body(bpy, folder / "body.blend")
    (folder / "notes.blend").write_text("not a blend file\n")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return folder


@pytest.fixture
def work(tmp_path, sources):
    """A folder with copies of the inputs, and a way to run the script there."""
    return script_in(tmp_path, sources)


def script_in(tmp_path, sources):
    """Copies of the files of ``sources`` in ``tmp_path``/in, and ``run(*arguments)``: the script run there, with its
    own user folders and temporary folder (``scratch``)."""
    folder = tmp_path / "in"
    shutil.copytree(sources, folder)
    scratch = tmp_path / "scratch"  # the runs' temporary folder, to see that they leave nothing there
    scratch.mkdir()
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               TMPDIR=str(scratch))

    def run(*arguments):
        return subprocess.run([sys.executable, SCRIPT, *map(str, arguments)], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=120)

    return SimpleNamespace(folder=folder, run=run, env=env, scratch=scratch)


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder):
    return {path.name: digest(path) for path in folder.iterdir()}


def replay(bpy, path, frames, unreachable=(), up_axis="Z", samples=False, scene="Scene"):
    """Open a baked file and check that its keys (or samples) put the chain's tip on the target on reachable
    frames (played in ``scene``)."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    if bpy.context.scene.name != scene:
        bpy.context.window.scene = bpy.data.scenes[scene]
        bpy.context.view_layer.update()  # bpy 4.2 evaluates a scene newly shown at the next update, not at frame_set
    obj, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    keyed = rotation_keys(obj, "b1", "rotation_quaternion", samples)[0][:, 0]
    assert list(keyed) == list(frames)
    check_replay(bpy, obj, target, SimpleNamespace(frames=np.array(frames), unreachable=list(unreachable)), up_axis)


def test_default_output_next_to_the_input_over_the_scene_range(blender, work):
    before = snapshot(work.folder)
    done = work.run("walk.blend", "--armature", "Arm", "--target", "Target", "--report", "../report.json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith("walk.blend -> walk_baked.blend: Baked 60 frames (1-60)")
    assert len(done.stdout.splitlines()) == 1
    after = snapshot(work.folder)
    assert set(after) == set(before) | {"walk_baked.blend"}  # no .blend1, nothing else
    assert all(after[name] == before[name] for name in before)
    assert os.listdir(work.scratch) == []  # not even Blender's session folder, that bpy 4.x leaves at os._exit
    record, = json.loads((work.folder.parent / "report.json").read_text())["files"]
    assert record["chains"][0]["tip_bone"] == "b3" and record["chains"][0]["up_axis"] == "Z"  # the file's settings
    umask = os.umask(0o022)
    os.umask(umask)
    for written in (work.folder / "walk_baked.blend", work.folder.parent / "report.json"):
        assert written.stat().st_mode & 0o777 == 0o666 & ~umask  # as open() makes them, not mkstemp's 0600
    replay(blender, work.folder / "walk_baked.blend", range(1, 61), record["unreachable"])


def test_range_step_up_axis_tip_bone_and_output(blender, work):
    before = snapshot(work.folder)
    output = work.folder.parent / "out" / "reach_keys.blend"
    output.parent.mkdir()
    done = work.run("reach.blend", "--armature", "Arm", "--target", "Target", "--tip-bone", "b3", "--up-axis", "-Y",
                    "--start", 5, "--end", 45, "--step", 4, "--output", output, "--report", "../report.json")
    assert done.returncode == 0, done.stderr
    assert "Baked 11 frames (5-45)" in done.stdout
    assert snapshot(work.folder) == before
    record, = json.loads((work.folder.parent / "report.json").read_text())["files"]
    assert (record["frame_start"], record["frame_end"], record["step"], record["chains"][0]["up_axis"]) == (5, 45, 4, "-Y")
    replay(blender, output, range(5, 46, 4), record["unreachable"], up_axis="-Y")


@pytest.mark.parametrize("bake_output", ["keys", "samples"])
def test_two_inputs_bake_in_parallel_with_a_report(blender, work, bake_output):
    out = work.folder.parent / "baked"
    out.mkdir()
    before = snapshot(work.folder)
    done = work.run("walk.blend", "reach.blend", "--armature", "Arm", "--target", "Target", "--tip-bone", "b3",
                    "--output-dir", out, "--jobs", 2, "--report", out / "report.json", "--bake-output", bake_output)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert sorted(line.split(" -> ")[0] for line in done.stdout.splitlines()) == ["reach.blend", "walk.blend"]
    assert snapshot(work.folder) == before
    report = json.loads((out / "report.json").read_text())
    assert report["ok"] is True
    walk, reach = report["files"]  # in the order given
    for record, name, frames in ((walk, "walk", 60), (reach, "reach", 40)):
        assert record["ok"] and record["error"] is None
        assert record["input"] == str(work.folder / f"{name}.blend")
        assert record["output"] == str(out / f"{name}_baked.blend")
        assert (record["frames"], record["frame_start"], record["frame_end"]) == (frames, 1, frames)
        assert record["summary"].startswith(f"Baked {frames} frames (1-{frames})" +
                                            (" to samples" if bake_output == "samples" else ""))
        assert record["bake_output"] == bake_output
        assert all(isinstance(frame, int) for frame in record["unreachable"])
        assert record["seconds"] > 0
        replay(blender, record["output"], range(1, frames + 1), record["unreachable"],
               samples=bake_output == "samples")


def test_one_bad_input_does_not_stop_the_others(work):
    before = snapshot(work.folder)
    done = work.run("walk.blend", "other_rig.blend", "reach.blend", "--armature", "Arm", "--target", "Target",
                    "--tip-bone", "b3", "--jobs", 2, "--report", "../report.json")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        "bake_ik.py: error: other_rig.blend: no armature named 'Arm' (armatures: Rig)",
        "bake_ik.py: error: 1 of 3 files failed"]
    after = snapshot(work.folder)
    assert set(after) == set(before) | {"walk_baked.blend", "reach_baked.blend"}
    assert all(after[name] == before[name] for name in before)
    assert os.listdir(work.scratch) == []  # the workers' records, the parent's run folder
    report = json.loads((work.folder.parent / "report.json").read_text())
    assert report["ok"] is False
    assert [record["ok"] for record in report["files"]] == [True, False, True]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_scene_not_shown_is_baked_with_scene(blender, work, jobs):
    """A file saved showing its layout scene: --scene bakes the shot's; the baked file still opens on the layout."""
    inputs = ["layout.blend"] + (["walk.blend"] if jobs > 1 else [])  # two inputs run in worker processes
    done = work.run(*inputs, "--scene", "Scene", "--armature", "Arm", "--target", "Target", "--end", 20,
                    "--report", "../report.json")
    assert done.returncode == 0, done.stderr
    records = json.loads((work.folder.parent / "report.json").read_text())["files"]
    assert [record["scene"] for record in records] == ["Scene"] * jobs
    for name in inputs:
        baked = work.folder / name.replace(".blend", "_baked.blend")
        blender.ops.wm.open_mainfile(filepath=str(baked))
        assert blender.context.scene.name == ("Layout" if name == "layout.blend" else "Scene")
        replay(blender, baked, range(1, 21))


@pytest.mark.parametrize("view_layer", [None, "Anim"])
def test_view_layer_names_the_one_evaluated(blender, work, view_layer):
    """A scene shown on a view layer that excludes the rig (a render layer for the background), the rig in its other
    one: without --view-layer the bake says which view layer it read, and --view-layer bakes on the other; the baked
    file still opens on the input's."""
    bpy = blender
    bpy.ops.wm.open_mainfile(filepath=str(work.folder / "walk.blend"))
    scene, arm = bpy.context.scene, bpy.data.objects["Arm"]
    rig = bpy.data.collections.new("Rig")
    scene.collection.children.link(rig)
    rig.objects.link(arm)
    scene.collection.objects.unlink(arm)
    scene.view_layers[0].name = "Shown"
    scene.view_layers.new("Anim")
    scene.view_layers["Shown"].layer_collection.children["Rig"].exclude = True
    bpy.context.window.view_layer = scene.view_layers["Shown"]
    bpy.ops.wm.save_as_mainfile(filepath=str(work.folder / "layers.blend"), copy=True)
    layer = ["--view-layer", view_layer] if view_layer else []
    done = work.run("layers.blend", *layer, "--armature", "Arm", "--target", "Target", "--end", 20,
                    "--report", "../report.json")
    if view_layer is None:
        assert done.returncode == 1
        line, = done.stderr.splitlines()
        assert "view layer 'Shown' of scene 'Scene'; --view-layer names another" in line, line
        assert not (work.folder / "layers_baked.blend").exists()
        return
    assert done.returncode == 0, done.stderr
    record, = json.loads((work.folder.parent / "report.json").read_text())["files"]
    assert (record["scene"], record["view_layer"]) == ("Scene", "Anim")
    bpy.ops.wm.open_mainfile(filepath=str(work.folder / "layers_baked.blend"))
    assert bpy.context.view_layer.name == "Shown"
    bpy.context.window.view_layer = bpy.context.scene.view_layers["Anim"]
    bpy.context.view_layer.update()
    obj, target = bpy.data.objects["Arm"], bpy.data.objects["Target"]
    check_replay(bpy, obj, target, SimpleNamespace(frames=np.arange(1, 21), unreachable=[]))


@pytest.mark.parametrize("picked", [(), ("hand.L", "foot.R")])
def test_every_enabled_chain_by_default_or_those_named(blender, work, picked):
    chosen = [argument for tip in picked for argument in ("--chain", tip)]
    done = work.run("body.blend", *chosen, "--report", "../report.json")
    assert done.returncode == 0, done.stderr
    tips = picked or tuple(LIMBS)
    assert f"Baked {BODY_FRAMES} frames (1-{BODY_FRAMES})" + (f" × {len(tips)} chains" if len(tips) > 1 else "") \
        in done.stdout
    record, = json.loads((work.folder.parent / "report.json").read_text())["files"]
    assert sorted(chain["chain"] for chain in record["chains"]) == sorted(tips)
    assert all(chain["armature"] == "Body" and chain["frames"] == BODY_FRAMES for chain in record["chains"])
    replay_body(blender, work.folder / "body_baked.blend", tips)


@pytest.mark.parametrize("arguments, message", [
    (["body.blend", "--chain", "tail"], "no chain named 'tail' (chains: foot.L, foot.R, hand.L, hand.R)"),
    (["body.blend", "--tip-bone", "hand.L"], "--tip-bone and --up-axis describe a chain together with --target"),
    (["walk.blend", "--target", "Target"], "--target describes one chain: give its --armature too"),
    (["other_rig.blend"], "other_rig.blend: armature 'Rig': Chain 'b3': Set the target"),
    (["walk.blend", "--armature", "Rig", "--target", "Target"], "no armature named 'Rig' (armatures: Arm)"),
    (["walk.blend", "--armature", "Arm", "--target", "Goal"], "no target object named 'Goal'"),
    (["gone.blend", "--armature", "Arm", "--target", "Target"], "gone.blend: no such file"),
    (["notes.blend", "--armature", "Arm", "--target", "Target"], "notes.blend: not a .blend file"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--start", 20, "--end", 10], "frame range is empty"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--end", -5], "start 1 is after end -5"),
    (["reach.blend", "--armature", "Arm", "--target", "Target"], "pass --tip-bone"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--tip-bone", "b9"], "no bone named 'b9'"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--output", "walk.blend"], "never written over"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--output", "./../in/walk.blend"], "never written over"),
    (["walk.blend", "--armature", "Arm", "--target", "Target", "--bake-output", "samples", "--step", 2],
     "--bake-output samples writes one sample per frame: drop --step 2, or bake keys"),
    (["layout.blend", "--armature", "Arm", "--target", "Target"],
     "the armature 'Arm' is not in the scene 'Layout' (the scene baked; --scene names another)"),
    (["layout.blend", "--scene", "Shot", "--armature", "Arm", "--target", "Target"],
     "layout.blend: no scene named 'Shot' (scenes: Layout, Scene)"),
    (["layout.blend", "--scene", "Scene", "--view-layer", "Main", "--armature", "Arm", "--target", "Target"],
     "layout.blend: the scene 'Scene' has no view layer named 'Main' (view layers: ViewLayer)"),
])
def test_bad_input_is_one_line_and_writes_nothing(work, arguments, message):
    before = snapshot(work.folder)
    done = work.run(*arguments)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    line, = done.stderr.splitlines()
    assert line.startswith("bake_ik.py: error: ") and message in line, line
    assert done.stdout == ""
    assert snapshot(work.folder) == before


# `blender -b INPUT.blend -P bake_ik.py -- ...` without a Blender executable: open the file as `-b` would,
# give the script Blender's argv, and tell it it runs inside Blender (the bpy module has no binary_path).
AS_IF_IN_BLENDER = r"""
import importlib.util, os, sys
import bpy
script_path, blend, *rest = sys.argv[1:]
bpy.ops.wm.open_mainfile(filepath=blend)
loads = []

@bpy.app.handlers.persistent
def count_load(*_):
    loads.append(1)

bpy.app.handlers.load_pre.append(count_load)
spec = importlib.util.spec_from_file_location("bake_ik", script_path)
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
script.in_blender = lambda: True
sys.argv = ["blender", "-b", blend, "-P", script_path, "--", *rest]
status = script.run()
bpy.app.handlers.load_pre.remove(count_load)
print(f"status {status}, loads {len(loads)}")
sys.stdout.flush()
import shutil; shutil.rmtree(bpy.app.tempdir)  # as Blender does at exit
os._exit(status)  # bpy 4.2 as a module may crash at exit (see the script's leave())
"""


def test_inside_blender_the_open_file_is_the_input(blender, work):
    before = snapshot(work.folder)
    done = subprocess.run([sys.executable, "-c", AS_IF_IN_BLENDER, SCRIPT, work.folder / "walk.blend",
                           "--armature", "Arm", "--target", "Target", "--up-axis", "-Z", "--end", "30"],
                          cwd=work.folder, env=work.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "Baked 30 frames (1-30)" in done.stdout
    assert "status 0, loads 0" in done.stdout  # baked the open file without loading it again
    after = snapshot(work.folder)
    assert set(after) == set(before) | {"walk_baked.blend"}
    assert all(after[name] == before[name] for name in before)
    replay(blender, work.folder / "walk_baked.blend", range(1, 31), up_axis="-Z")


def test_arguments_inside_blender_and_negative_axes():
    spec = importlib.util.spec_from_file_location("bake_ik_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    blender_argv = ["blender", "-b", "in.blend", "-P", "scripts/bake_ik.py", "--", "--armature", "Arm"]
    assert script.script_arguments(blender_argv, blender=True) == ["--armature", "Arm"]
    assert script.script_arguments(blender_argv[:5], blender=True) == []
    assert script.script_arguments(["bake_ik.py", "a.blend"], blender=False) == ["a.blend"]
    assert script._join_negative_axes(["--up-axis", "-Z", "a.blend"]) == ["--up-axis=-Z", "a.blend"]
    assert script.default_output("dir/walk.blend") == os.path.join("dir", "walk_baked.blend")
    assert script.default_output("dir/walk.blend", "out") == os.path.join("out", "walk_baked.blend")


# -- Paths: nothing the script writes may be an input or another path it writes, however it is spelled ------

def everything(folder):
    """Every file under ``folder`` (hidden ones too) with its bytes' digest, and every folder; but not the
    Blender user files the runs were told to keep there (BLENDER_USER_RESOURCES, XDG_CACHE_HOME)."""
    found = {}
    for root, folders, files in os.walk(folder):
        if root == str(folder):
            folders[:] = [name for name in folders if name not in ("blender", "cache")]
        for name in folders:
            found[os.path.relpath(os.path.join(root, name), folder)] = "folder"
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = ("link to " + os.readlink(path) if os.path.islink(path)
                                                    else digest(pathlib.Path(path)))
    return found


def _links(folder):
    os.link(folder / "walk.blend", folder / "hard.blend")
    os.symlink("walk.blend", folder / "soft.blend")
    (folder / "sub").mkdir()
    os.symlink(folder / "sub", folder / "sub_link")
    shutil.copy(folder / "reach.blend", folder / "walk_baked.blend")
    shutil.copy(folder / "walk.blend", folder / "sub" / "walk.blend")


@pytest.mark.parametrize("arguments, message", [
    (["walk.blend", "--report", "walk.blend"], "--report walk.blend is the input file walk.blend; it is never written"),
    (["walk.blend", "--report", "hard.blend"], "--report hard.blend is the input file walk.blend"),
    (["walk.blend", "--report", "soft.blend"], "--report soft.blend is the input file walk.blend"),
    (["walk.blend", "--report", "sub/../walk.blend"], "--report sub/../walk.blend is the input file"),
    (["walk.blend", "--report", "sub_link/../sub/../walk.blend"], "is the input file walk.blend"),
    (["walk.blend", "--output", "out.blend", "--report", "out.blend"], "--report out.blend is also the output"),
    (["walk.blend", "--output", "out.blend", "--report", "sub_link/../out.blend"], "is also the output out.blend"),
    (["reach.blend", "walk.blend", "--output-dir", "sub", "--report", "sub/walk_baked.blend"], "is also the output"),
    (["walk.blend", "--output", "o.blend", "--report", "r.json", "--summary-file", "./r.json"],
     "--summary-file ./r.json is also the --report r.json"),
    (["walk.blend", "--output", "hard.blend"], "the output hard.blend is the input file walk.blend"),
    (["walk.blend", "--output", "soft.blend"], "the output soft.blend is the input file walk.blend"),
    (["walk.blend", "--output", "sub_link/../walk.blend"], "is the input file walk.blend; it is never written over"),
    (["walk.blend", "walk_baked.blend", "--tip-bone", "b3"], "the output walk_baked.blend is the input file"),
    (["walk.blend", "sub/walk.blend", "--output-dir", "sub_link"], "two inputs would be baked to the same file"),
    (["walk.blend", "sub/../walk.blend", "--output-dir", "sub"], "two inputs would be baked to the same file "
                                                                 "sub/walk_baked.blend"),
    (["walk.blend", "--output", "walk.blend/out.blend"], "cannot write the output walk.blend/out.blend: walk.blend "
                                                         "is not a directory"),
    (["walk.blend", "--output-dir", "walk.blend"], "--output-dir walk.blend: not a directory"),
    (["walk.blend", "--output-dir", "gone"], "--output-dir gone: no such directory"),
    (["walk.blend", "--output", "sub"], "cannot write the output sub: it is a directory"),
    (["walk.blend", "--report", "sub_link"], "cannot write --report sub_link: it is a directory"),
    (["walk.blend", "--report", "gone/r.json"], "cannot write --report gone/r.json: no such directory gone"),
])
def test_a_written_path_that_is_an_input_or_another_written_path_is_refused(work, arguments, message):
    _links(work.folder)
    before = everything(work.folder.parent)
    done = work.run(*arguments, "--armature", "Arm", "--target", "Target")
    assert done.returncode == 2
    assert done.stdout == ""
    line, = done.stderr.splitlines()
    assert line.startswith("bake_ik.py: error: ") and message in line, line
    assert everything(work.folder.parent) == before  # nothing written, not even a probe or a temporary file


def test_a_symlinked_output_and_report_are_written_through(blender, work):
    """The file a link names is written, as open() would write it, and the link stays."""
    out = work.folder.parent / "out"
    out.mkdir()
    os.symlink(out / "baked.blend", work.folder / "baked.blend")  # a link to a file still to be made
    (out / "report.json").write_text("the last run's report\n")
    os.symlink(out / "report.json", work.folder / "report.json")
    before = everything(work.folder)
    done = work.run("walk.blend", "--armature", "Arm", "--target", "Target", "--output", "baked.blend",
                    "--report", "report.json")
    assert done.returncode == 0, done.stderr
    assert everything(work.folder) == before  # the links too
    assert sorted(os.listdir(out)) == ["baked.blend", "report.json"]
    record, = json.loads((out / "report.json").read_text())["files"]
    replay(blender, out / "baked.blend", range(1, 61), record["unreachable"])


def _disk_ignores_case(folder):
    """Asked of the disk the way a user would, independently of the script."""
    probe = folder / "Case_Probe"
    probe.write_text("")
    try:
        return (folder / "case_probe").exists()
    finally:
        probe.unlink()


def test_names_that_differ_only_in_letter_case(work):
    """Where the disk ignores case, WALK.blend is walk.blend and two outputs that differ only in case are one
    file: refused. Where it does not, they are different files: all baked."""
    (work.folder / "up").mkdir()
    shutil.copy(work.folder / "walk.blend", work.folder / "up" / "Walk.blend")
    out = work.folder.parent / "out"
    out.mkdir()
    before = everything(work.folder.parent)
    one = work.run("walk.blend", "--armature", "Arm", "--target", "Target", "--output", "WALK.blend")
    both = work.run("walk.blend", "up/Walk.blend", "--armature", "Arm", "--target", "Target", "--output-dir", out)
    if _disk_ignores_case(out):
        assert (one.returncode, both.returncode) == (2, 2)
        assert one.stderr == "bake_ik.py: error: the output WALK.blend is the input file walk.blend; it is never " \
                             "written over\n"
        assert both.stderr.startswith("bake_ik.py: error: two inputs would be baked to the same file: ")
        assert everything(work.folder.parent) == before
    else:
        assert (one.returncode, both.returncode) == (0, 0), one.stderr + both.stderr
        after = everything(work.folder.parent)
        assert set(after) == set(before) | {"in/WALK.blend", "out/walk_baked.blend", "out/Walk_baked.blend"}
        assert all(after[name] == before[name] for name in before)


@pytest.mark.parametrize("arguments", [
    ["--jobs", "0"], ["--step", "x"], ["--up-axis", "Q"], ["--start", "1.5"], ["--frobnicate"],
    ["--output", "a.blend", "--output-dir", "."], ["--armature"], ["--bake-output", "curves"],
])
def test_a_command_line_mistake_is_one_line_with_status_2(work, arguments):
    before = everything(work.folder.parent)
    done = work.run("walk.blend", "--armature", "Arm", "--target", "Target", *arguments)
    assert done.returncode == 2
    assert done.stdout == ""
    line, = done.stderr.splitlines()
    assert line.startswith("bake_ik.py: error: ") and "usage" not in line, line
    assert everything(work.folder.parent) == before


def test_no_input_is_one_line_with_status_2(work):
    done = work.run("--armature", "Arm", "--target", "Target")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", "bake_ik.py: error: give at least one INPUT.blend\n")


# `python bake_ik.py` run by an interpreter whose own path is wrong: the workers cannot start.
WITH_A_BAD_INTERPRETER = r"""
import runpy, sys
sys.executable = "/nonexistent/python3"
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("harness, program", [
    (WITH_A_BAD_INTERPRETER, "/nonexistent/python3: No such file or directory"),
    (AS_IF_IN_BLENDER, "(Blender does not know its own path): No such file or directory"),
], ids=["python", "blender"])
def test_a_worker_that_cannot_start_is_one_line_per_file(work, harness, program):
    before = everything(work.folder.parent)
    inputs = ["walk.blend", "reach.blend"]
    if harness is AS_IF_IN_BLENDER:
        inputs = [work.folder / "walk.blend", *inputs]  # the file opened with -b, then the script's own
    done = subprocess.run([sys.executable, "-c", harness, SCRIPT, *map(str, inputs), "--armature", "Arm",
                           "--target", "Target", "--tip-bone", "b3", "--jobs", "2"],
                          cwd=work.folder, env=work.env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert sorted(done.stderr.splitlines()) == [
        "bake_ik.py: error: 2 of 2 files failed",
        f"bake_ik.py: error: reach.blend: cannot start the baking process {program}",
        f"bake_ik.py: error: walk.blend: cannot start the baking process {program}"]
    assert everything(work.folder.parent) == before


# -- Interruptions: SIGINT, SIGTERM or SIGHUP at a known moment leave nothing half done ---------------------

def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def interrupt(work, tmp_path, arguments, point, signum, pauses, group=False, times=1):
    """Run the script, let it (or each of its workers) stop at ``point`` (the script's test hook), send
    ``signum`` ``times`` times to it (or to its whole process group, as Ctrl-C in a terminal does) and wait
    for its end.
    Returns the finished process and the notes the paused processes left."""
    paused = tmp_path / "paused"
    paused.mkdir()
    env = dict(work.env, BAKE_IK_TEST_PAUSE=point, BAKE_IK_TEST_PAUSED=str(paused))
    for name in ("BLENDER_USER_RESOURCES", "XDG_CACHE_HOME"):  # the script's own sandbox must go too
        env.pop(name)
    process = subprocess.Popen([sys.executable, SCRIPT, *map(str, arguments)], cwd=work.folder, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(paused.glob("*.json"))) < pauses:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the script never reached the pause"
            time.sleep(0.02)
        notes = [json.loads(note.read_text()) for note in paused.glob("*.json")]
        for note in notes:
            if "temporary" in note:  # what a save Blender was still writing would leave
                pathlib.Path(note["temporary"] + "@").write_bytes(b"BLENDER-v")
        for _ in range(times):
            if group:
                os.killpg(process.pid, signum)
            else:
                process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert os.listdir(work.scratch) == []  # no run folder, no sandbox for Blender's user files, no session folder
    assert all(_gone(note["pid"]) for note in notes)  # no worker left running
    return SimpleNamespace(returncode=process.returncode, stdout=stdout, stderr=stderr, notes=notes)


SINGLE = ["walk.blend", "--armature", "Arm", "--target", "Target"]
PARALLEL = ["walk.blend", "reach.blend", "--armature", "Arm", "--target", "Target", "--tip-bone", "b3", "--jobs", 2]


@pytest.mark.parametrize("arguments, pauses, group, signum, times", [
    (SINGLE, 1, False, signal.SIGINT, 1), (SINGLE, 1, False, signal.SIGTERM, 1), (SINGLE, 1, False, signal.SIGHUP, 1),
    (PARALLEL, 2, False, signal.SIGINT, 1), (PARALLEL, 2, False, signal.SIGTERM, 1),
    # Ctrl-C, and a terminal closing, signal the whole foreground process group: the workers too.
    (PARALLEL, 2, True, signal.SIGINT, 1), (PARALLEL, 2, True, signal.SIGHUP, 1),
    # An impatient second Ctrl-C must not cut the cleanup short.
    (SINGLE, 1, False, signal.SIGINT, 2), (PARALLEL, 2, True, signal.SIGINT, 2),
], ids=["one file, SIGINT", "one file, SIGTERM", "one file, SIGHUP", "parallel, SIGINT to the parent",
        "parallel, SIGTERM to the parent", "parallel, SIGINT to the group", "parallel, SIGHUP to the group",
        "one file, SIGINT twice", "parallel, SIGINT twice to the group"])
@pytest.mark.parametrize("point", ["bake", "save"])
def test_an_interrupted_run_leaves_nothing_behind(work, tmp_path, arguments, pauses, group, signum, times, point):
    before = everything(work.folder.parent)
    done = interrupt(work, tmp_path, [*arguments, "--report", "../report.json"], point, signum, pauses, group, times)
    assert done.returncode == 128 + signum
    assert done.stderr == f"bake_ik.py: error: interrupted by {signal.Signals(signum).name}\n"
    assert done.stdout == ""
    after = everything(work.folder.parent)
    assert {name for name in after if not name.startswith("paused")} == set(before)
    assert all(after[name] == before[name] for name in before)  # the inputs, byte for byte; no report
    if point == "save":  # the paused workers had their files saved under a temporary name
        assert all(note["temporary"].startswith(str(work.folder)) for note in done.notes)


def test_a_report_interrupted_while_written_is_the_old_one(work, tmp_path):
    """The outputs were written whole before; the report is written whole or not at all."""
    (work.folder.parent / "report.json").write_text("the last run's report\n")
    before = everything(work.folder.parent)
    done = interrupt(work, tmp_path, [*SINGLE, "--report", "../report.json"], "report", signal.SIGTERM, 1)
    assert done.returncode == 143
    assert done.stderr == "bake_ik.py: error: interrupted by SIGTERM\n"
    after = everything(work.folder.parent)
    assert {name for name in after if not name.startswith("paused")} == set(before) | {"in/walk_baked.blend"}
    assert all(after[name] == before[name] for name in before)
    assert (work.folder.parent / "report.json").read_text() == "the last run's report\n"


def test_an_armature_held_by_another_is_baked_after_it(blender, work):
    """'Body' comes first in the scene, but its right hand's target is held by 'Lead''s left hand, whose chain the
    same run bakes: Body's bake must read Lead's new keys, so it runs after Lead's."""
    bpy = blender
    body, lead, held = body_held_by_lead(bpy)
    world = held.matrix_world.copy()
    held.parent, held.parent_type, held.parent_bone = lead, "BONE", "hand.L"
    bpy.context.view_layer.update()
    held.matrix_world = world
    chain = lead.blender_ik.chains[0]
    rng = np.random.default_rng(3)
    for frame in range(1, BODY_FRAMES + 1):
        chain.target.matrix_world = fk_goal(bpy, lead, "hand.L", rng)
        chain.target.keyframe_insert("location", frame=frame)
        chain.target.keyframe_insert("rotation_euler", frame=frame)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, BODY_FRAMES
    assert [obj.name for obj in bpy.context.scene.objects if obj.type == "ARMATURE"] == ["Body", "Lead"]
    bpy.ops.wm.save_as_mainfile(filepath=str(work.folder / "held.blend"), copy=True)
    done = work.run("held.blend")
    assert done.returncode == 0, done.stderr

    def tips(path, bake_first=None):
        """Body's right hand tip on every frame of the file, after baking Lead's chain then Body's if asked."""
        bpy.ops.wm.open_mainfile(filepath=str(path))
        if bake_first:
            from blender_ik_addon.ops import bake_armature
            for name in bake_first:
                bake_armature(bpy.context.scene, bpy.data.objects[name])
        body = bpy.data.objects["Body"]
        found = []
        for frame in range(1, BODY_FRAMES + 1):
            bpy.context.scene.frame_set(frame)
            found.append(np.array(body.matrix_world @ body.pose.bones["hand.R"].tail))
        return np.array(found)

    baked = tips(work.folder / "held_baked.blend")
    expected = tips(work.folder / "held.blend", bake_first=("Lead", "Body"))
    assert np.abs(baked - expected).max() < 1e-6
    assert np.ptp(expected, axis=0).max() > 0.01  # Body's hand did follow Lead's baked hand
