"""Review 59: a pipeline TD whose studio runs 4.2 LTS, 4.5 LTS and 5.2 side by side, baking studio-shaped actions
(shared, with slots, NLA, groups) from the panel and from scripts/bake_ik.py, judged by what Blender plays."""
import os
import subprocess
import sys

import pytest

from rigs import add_empty, build_arm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "bake_ik.py")


def _two_armatures_sharing_an_action(bpy, path):
    """Arm (a chain on b3 reaching for a keyed Empty) and Twin, playing the same action (on 4.4+ the same slot of it),
    saved as ``path``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)  # the add-on stays registered (the blender fixture's)
    arm, twin = build_arm(name="Arm"), build_arm(name="Twin", base=(3.0, 0.0, 0.0))
    target = add_empty("Target", location=(0.9, 0.3, 1.1))
    target.keyframe_insert("location", frame=1)
    target.location.x = 0.6
    target.keyframe_insert("location", frame=5)
    chain = arm.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    arm.pose.bones["root"].keyframe_insert("location", frame=1)
    twin.animation_data_create()
    twin.animation_data.action = arm.animation_data.action
    if hasattr(arm.animation_data, "action_slot"):
        twin.animation_data.action_slot = arm.animation_data.action_slot
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)


def test_bake_ik_keys_a_shared_action_when_asked_as_its_message_says(blender, tmp_path):
    """bake_ik.py refused an action two characters play with "bake with Key Shared Action on", an option of the
    panel's dialog that the command line did not have: a TD could not bake such a file headless at all. The command
    has --shared-action now, and its message names it; with it, both armatures play the bake."""
    bpy = blender
    from mathutils import Vector
    source, baked = tmp_path / "shared.blend", tmp_path / "shared_baked.blend"
    _two_armatures_sharing_an_action(bpy, source)
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))

    def run(*arguments):
        return subprocess.run([sys.executable, SCRIPT, str(source), "--output", str(baked), "--start", "1", "--end",
                               "5", *arguments], env=env, capture_output=True, text=True, timeout=120)

    refused = run()
    assert refused.returncode == 1 and not baked.exists()
    assert "also played by 'Twin'" in refused.stderr and "bake with --shared-action" in refused.stderr, refused.stderr
    assert "Key Shared Action" not in refused.stderr
    done = run("--shared-action")
    assert done.returncode == 0, done.stderr
    bpy.ops.wm.open_mainfile(filepath=str(baked))
    arm, twin, target = (bpy.data.objects[name] for name in ("Arm", "Twin", "Target"))
    for frame in range(1, 6):
        bpy.context.scene.frame_set(frame)
        assert (arm.matrix_world @ arm.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-5
        # The twin plays the same keys: its hand where the arm's is, 3 along X (its rest pose is the arm's, moved).
        twin_tip = twin.matrix_world @ twin.pose.bones["b3"].tail
        assert (twin_tip - arm.matrix_world @ arm.pose.bones["b3"].tail - Vector((3.0, 0.0, 0.0))).length < 1e-5


@pytest.mark.parametrize("setting, keyed_before, expected", [
    ("available", (), "keyed 0 of 3 bones at frame 7 (its settings leave the others: Only Insert Available)"),
    ("available", ("b1", "b2"), "keyed 2 of 3 bones at frame 7 (its settings leave the others: Only Insert Available)"),
    ("replace", ("b1",), "keyed 0 of 3 bones at frame 7 (its settings leave the others: Replace)"),
])
def test_solve_with_auto_keying_names_the_setting_that_left_bones_unkeyed(blender, capfd, setting, keyed_before,
                                                                          expected):
    """Solve with Auto Keying on Blender 5.2's defaults (Only Insert Available on) on an arm keyed in part said "Auto
    Keying keyed 0 bones at frame 7 of 3 (its settings leave the others: Replace, Only Insert Available, Only Insert
    Needed)": three settings named, two of them off, and "frame 7 of 3". It names the ones that are on, and the bones."""
    bpy = blender
    from rigs import arm_with_chain
    obj, chain = arm_with_chain(bpy)
    scene, edit = bpy.context.scene, bpy.context.preferences.edit
    before = edit.use_keyframe_insert_available, edit.use_auto_keyframe_insert_needed
    for bone in keyed_before:
        obj.pose.bones[bone].keyframe_insert("rotation_quaternion", frame=1)
    scene.tool_settings.use_keyframe_insert_auto = True
    scene.tool_settings.auto_keying_mode = "REPLACE_KEYS" if setting == "replace" else "ADD_REPLACE_KEYS"
    edit.use_keyframe_insert_available, edit.use_auto_keyframe_insert_needed = setting == "available", False
    try:
        scene.frame_set(7)
        capfd.readouterr()
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    finally:
        edit.use_keyframe_insert_available, edit.use_auto_keyframe_insert_needed = before
    report = capfd.readouterr().out
    assert f"Auto Keying {expected}" in report, report
    from blender_ik_addon import keys
    keyed = {fcurve.data_path.split('"')[1] for fcurve in keys.object_fcurves(obj)
             if any(point.co[0] == 7 for point in fcurve.keyframe_points)}
    assert len(keyed) == int(expected.split()[1])  # what the report counts is what Blender holds
