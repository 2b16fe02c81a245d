"""Review 18: the batch bake, as a pipeline TD meets it (scripts/bake_ik.py on a farm, bake_armature from scripts).
Judged by what Blender plays back: the baked file opened, its keys played with frame_set."""
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest

from rigs import add_empty, build_arm, tip_and_direction
from test_bake import animate_target

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "bake_ik.py")


def _run_script(folder, *arguments):
    """scripts/bake_ik.py run in ``folder``, as on a farm, with Blender's user files and temporary files kept there."""
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(folder / "blender"), XDG_CACHE_HOME=str(folder / "cache"))
    return subprocess.run([sys.executable, SCRIPT, *map(str, arguments)], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=120)


def _rig(bpy, name, target_name, base=(0.0, 0.0, 0.0), seed=0):
    """The arm ``name`` with a chain 'b3' reaching for an animated Empty ``target_name``."""
    obj = build_arm(name=name, base=base)
    target = add_empty(target_name, location=base)
    animate_target(target, seed=seed)
    chain = obj.blender_ik.chains.add()
    chain.name = chain.tip_bone = "b3"
    chain.target = target
    return obj, chain


def _tip_misses(bpy, obj, target, frames):
    """Per frame played back, how far the tip is from the target, as Blender evaluates them."""
    misses = []
    for frame in frames:
        bpy.context.scene.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        misses.append(np.linalg.norm(tip - np.array(target.matrix_world.translation)))
    return np.array(misses)


@pytest.mark.parametrize("in_both", [True, False], ids=["armature-in-both-scenes", "armature-in-the-other-scene"])
def test_review_a_bake_of_a_scene_blender_does_not_evaluate(blender, in_both):
    """A script that bakes every scene of a shot file (``bake_armature(scene, armature)`` for each) got, for a scene
    that is not the window's, either "Baked 40 frames, all in reach" with keys that missed the target by up to 1.6
    (the bake stepped that scene's frames, which moves nothing Blender evaluates) or a refusal saying to enable the
    armature in viewports. It names the scene now, and bakes it once it is the window's scene."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    first = bpy.context.scene
    shot = bpy.data.scenes.new("Shot2")
    bpy.context.window.scene = shot
    obj = build_arm()
    lead = add_empty("Lead")
    animate_target(lead)
    target = add_empty("Target")  # follows the lead through a constraint: the bake steps through the frames
    target.constraints.new("COPY_TRANSFORMS").target = lead
    chain = obj.blender_ik.chains.add()
    chain.name = chain.tip_bone = "b3"
    chain.target = target
    if in_both:
        for member in (obj, lead, target):
            first.collection.objects.link(member)
    bpy.context.window.scene = first
    with pytest.raises(ChainError, match="Scene 'Shot2' is not the scene Blender evaluates"):
        bake_armature(shot, obj, "ALL", 1, 40)
    assert obj.animation_data is None or obj.animation_data.action is None  # nothing keyed
    bpy.context.window.scene = shot  # as the message says
    bake_armature(shot, obj, "ALL", 1, 40)
    for frame in range(1, 41):
        shot.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5 * 2.2, frame


@pytest.mark.parametrize("others_enabled", [True, False], ids=["another-armature-enabled", "every-chain-disabled"])
def test_review_the_script_skips_an_armature_whose_chains_are_all_disabled(blender, tmp_path, others_enabled):
    """A shot with the character's chain enabled and a prop rig whose only chain the animator unchecked in the list:
    bake_ik.py (by default "every enabled chain of every armature that has chains") failed the whole file with
    "armature 'Prop': Armature 'Prop' has no enabled chain", and wrote nothing. The prop is left as it is now; a file
    whose chains are all disabled is one error line."""
    bpy = blender
    arm, chain = _rig(bpy, "Arm", "Target")
    _rig(bpy, "Prop", "PropTarget", base=(3.0, 0.0, 0.0), seed=1)[1].enabled = False
    chain.enabled = others_enabled
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 30
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot), copy=True)
    before = hashlib.sha256(shot.read_bytes()).hexdigest()
    done = _run_script(tmp_path, "shot.blend")
    assert hashlib.sha256(shot.read_bytes()).hexdigest() == before
    assert "Traceback" not in done.stderr
    if not others_enabled:
        assert done.returncode == 1
        assert done.stderr.splitlines() == ["bake_ik.py: error: shot.blend: every IK chain in the scene 'Scene' is "
                                            "disabled; enable them in the panel's list, or name them with --chain"]
        assert not (tmp_path / "shot_baked.blend").exists()
        return
    assert done.returncode == 0, done.stderr
    assert "Baked 30 frames (1-30)" in done.stdout
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot_baked.blend"))
    prop = bpy.data.objects["Prop"]
    assert prop.animation_data is None  # not keyed: its chain is off
    misses = _tip_misses(bpy, bpy.data.objects["Arm"], bpy.data.objects["Target"], range(1, 31))
    assert misses.max() < 1e-5 * 2.2


@pytest.mark.parametrize("tip_bone", [(), ("--tip-bone", "b3")], ids=["active-chain", "tip-bone-given"])
def test_review_target_on_the_command_line_over_a_chain_with_a_built_rig(blender, tmp_path, tip_bone):
    """``bake_ik.py --armature Arm --target Other`` retargets the active chain for the bake (what the command line does
    not give comes from it). On a chain with a built rig it was refused: "Bone 'b1' has constraints (IKR b3) that would
    change the solved pose; mute or remove them (this add-on replaces an IK constraint)", where the panel's bake of the
    same chain mutes its rig. The rig on the described chain's bones is muted as for the chain's own bake."""
    bpy = blender
    arm, _ = _rig(bpy, "Arm", "Target")
    animate_target(add_empty("Other"), seed=3)
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 30
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"), copy=True)
    done = _run_script(tmp_path, "shot.blend", "--armature", "Arm", "--target", "Other", *tip_bone)
    assert done.returncode == 0, done.stderr
    assert "all in reach" in done.stdout and "the built rig of b3 muted so the keys show" in done.stdout
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot_baked.blend"))
    misses = _tip_misses(bpy, bpy.data.objects["Arm"], bpy.data.objects["Other"], range(1, 31))
    assert misses.max() < 1e-5 * 2.2


def test_review_the_script_bakes_a_file_saved_in_edit_mode(blender, tmp_path):
    """A shot saved with the armature in Edit Mode opens in Edit Mode, and bake_ik.py answered "Armature 'Arm' is in
    Edit Mode: its bone edits are not applied to its bones yet; leave Edit Mode (Tab) first": on a farm, with nothing
    to press. Saving wrote the edits to the bones; the script leaves Edit Mode and bakes."""
    bpy = blender
    arm, _ = _rig(bpy, "Arm", "Target")
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 30
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    arm.data.edit_bones["b3"].tail.y += 0.2  # an edit made in this session: saved with the file
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot), copy=True)
    bpy.ops.object.mode_set(mode="OBJECT")
    before = hashlib.sha256(shot.read_bytes()).hexdigest()
    done = _run_script(tmp_path, "shot.blend")
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256(shot.read_bytes()).hexdigest() == before
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot_baked.blend"))
    arm = bpy.data.objects["Arm"]
    assert abs(arm.data.bones["b3"].tail_local.y - 0.2) < 1e-6  # the edit is there
    misses = _tip_misses(bpy, arm, bpy.data.objects["Target"], range(1, 31))
    assert misses.max() < 1e-5 * 2.2
