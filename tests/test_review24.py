"""Review 24: a studio moving from Blender 4.2 LTS to 5.2 LTS (layered actions and slots from 4.4)."""
import numpy as np
import pytest

from rigs import add_empty, arm_with_chain, build_arm, tip_and_direction

try:
    import bpy
    LAYERED = "action_slot" in bpy.types.AnimData.bl_rna.properties
except ImportError:  # pragma: no cover
    LAYERED = False


@pytest.mark.skipif(not LAYERED, reason="slots exist from Blender 4.4")
@pytest.mark.parametrize("how", ["action", "nla strip"])
def test_bake_an_action_assigned_without_a_slot_that_another_armature_also_has_without_one(blender, how):
    """An action made for one character ('Hero', its slot OBHero) assigned to two others: Blender assigns them no
    slot, so neither plays anything of it. Baking one of them must key it in a slot of its own (as Blender's own
    keying does: keyframe_insert makes one), not be refused because the other 'plays' the action too: it plays
    nothing of it, before or after."""
    bpy = blender
    hero = build_arm(name="Hero")
    hero.pose.bones["root"].keyframe_insert("location", frame=1)
    action = hero.animation_data.action
    other = build_arm(name="Villain2")
    if how == "action":
        other.animation_data_create().action = action
        assert other.animation_data.action_slot is None
    else:
        strip = other.animation_data_create().nla_tracks.new().strips.new("walk", 1, action)
        strip.action_slot = None  # the strip took Hero's slot; its slot menu left empty
        assert strip.action_slot is None
    obj, chain = arm_with_chain(bpy)
    obj.animation_data_create().action = action
    assert obj.animation_data.action_slot is None  # the action's only slot is Hero's
    target = chain.target
    for frame, x in ((1, 0.9), (10, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    other_pose = {pb.name: tuple(pb.matrix) for pb in other.pose.bones}

    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}

    slot = obj.animation_data.action_slot
    assert slot is not None and slot != hero.animation_data.action_slot
    assert obj.animation_data.action == action
    for frame in (1, 5, 10):
        bpy.context.scene.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5
        assert {pb.name: tuple(pb.matrix) for pb in other.pose.bones} == other_pose
    slots = [other.animation_data.action_slot] if how == "action" else \
        [strip.action_slot for track in other.animation_data.nla_tracks for strip in track.strips]
    assert slots == [None]


def _newer_than_this_blender(bpy, source, path, readable):
    """``source`` as a file of a newer Blender: its header says minor version 99 (``readable``: this Blender opens
    it, warning that data may be lost, as it opens a file of the next version) or, unreadable, a header format of
    the future (as Blender 4.2 sees every file saved by 5.0 and later: it cannot read their header)."""
    import re
    if not readable:
        path.write_bytes(b"BLENDER18-01v0599REND" + bytes(64))
        return
    bpy.ops.wm.open_mainfile(filepath=str(source))
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True, compress=False)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    header = re.compile(rb"^(BLENDER(?:[_-][vV]\d|\d\d-\d\d[vV]\d\d))\d\d")
    data = path.read_bytes()
    assert header.match(data), data[:17]
    path.write_bytes(header.sub(rb"\g<1>99", data, count=1))


@pytest.mark.parametrize("readable", [True, False])
def test_bake_ik_says_when_a_file_was_saved_by_a_newer_blender(tmp_path, readable):
    """A studio's farm on an older Blender than the artists': a file Blender cannot read was refused as "not a blend
    file" (4.2 on a 5.x file), and one it reads with a warning ("File written by newer Blender binary, expect loss of
    data!", 5.0 on a 5.2 file) was baked and saved by the older Blender without a word, the warning swallowed with
    Blender's other output. Both now say which Blender saved the file."""
    import json
    import os
    import subprocess
    import sys

    import bpy

    from test_bake_ik_script import SCRIPT, _build
    major, minor = bpy.app.version[:2]
    newer = f"saved by Blender {major if readable else 5}.99, newer than this Blender {bpy.app.version_string}"
    _build(bpy, tmp_path / "walk.blend")
    _newer_than_this_blender(bpy, tmp_path / "walk.blend", tmp_path / "shot.blend", readable)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, SCRIPT, "shot.blend", "--armature", "Arm", "--target", "Target",
                           "--report", "report.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    if readable:
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "shot_baked.blend").exists()
        assert f"bake_ik.py: warning: shot.blend: {newer}: " in done.stderr
        assert json.loads((tmp_path / "report.json").read_text())["files"][0]["warnings"]
    else:
        assert done.returncode == 1
        assert not (tmp_path / "shot_baked.blend").exists()
        assert f"({newer}, which cannot read it" in done.stderr, done.stderr
