"""Review 91: bake_ik.py --snap-targets as a pipeline TD runs it on a folder of FK-animated shots, headless. Judged by
opening the saved file and playing it (scene.frame_set), never by the script's report."""
import os
import re
import subprocess
import sys

import pytest

from rigs import add_empty, build_arm
from test_bake import animate_target
from test_chains import tip_error
from test_snap_range import animated_in_fk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "bake_ik.py")
FRAMES = 24


def run_script(tmp_path, *arguments):
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, SCRIPT, *map(str, arguments)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


def fk_armature(bpy, name, target_name, seed):
    """An armature ``name`` whose chain 'hand' is animated in FK (its bones keyed on every frame by a bake of a
    wandering target), and its target ``target_name`` left standing away from the hand, unkeyed. Returns (armature,
    target)."""
    obj = build_arm(name=name)
    target = add_empty(target_name)
    animate_target(target, frames=range(1, FRAMES + 1, 6), seed=seed)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "hand", "b3", target
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=FRAMES, chains="ALL") == {"FINISHED"}
    target.animation_data_clear()
    target.location = (3.0, -2.0, 1.0)
    return obj, target


def played_off_tips(bpy, path, chains):
    """Open ``path`` and play it: per ``(armature, target)`` name pair, the largest distance from the tip of 'b3' to
    the target and angle between the hand and the target's Z, over the frames, over the chain's reach."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    worst = {pair: (0.0, 0.0) for pair in chains}
    for frame in range(1, FRAMES + 1):
        bpy.context.scene.frame_set(frame)
        for armature, target in chains:
            obj = bpy.data.objects[armature]
            reach = sum(obj.data.bones[f"b{i}"].length for i in (1, 2, 3)) * obj.matrix_world.median_scale
            distance, angle = tip_error(bpy, obj, "b3", bpy.data.objects[target])
            worst[armature, target] = tuple(map(max, worst[armature, target], (distance / reach, angle)))
    return worst


@pytest.mark.parametrize("hung", ("target", "armature"))
def test_a_prop_hung_from_the_hands_target_is_snapped_after_it(blender, tmp_path, hung):
    """A shot with a character and a prop rig, each animated in FK, the prop's target (or the whole prop rig) hung
    from the character's hand target, the prop first in the scene. The script snapped the prop first, then keyed the
    hand target, which carried the prop's target (or the prop) away: the saved file played the prop's target 4 units
    off its tip while the report said "solving keeps the pose on every frame". The prop is snapped after the hand."""
    bpy = blender
    prop, prop_target = fk_armature(bpy, "Prop", "PropTarget", seed=2)
    _, hand_target = fk_armature(bpy, "Body", "HandTarget", seed=1)
    hanging = prop_target if hung == "target" else prop
    hanging.parent = hand_target
    hanging.matrix_parent_inverse = hand_target.matrix_world.inverted()
    assert [obj.name for obj in bpy.context.scene.objects][0] == "Prop"
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, FRAMES
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    done = run_script(tmp_path, "shot.blend", "--snap-targets")
    assert done.returncode == 0, done.stderr
    for pair, (distance, angle) in played_off_tips(bpy, tmp_path / "shot_snapped.blend",
                                                   [("Body", "HandTarget"), ("Prop", "PropTarget")]).items():
        assert distance < 1e-6 and angle < 1e-5, (pair, distance, angle)


@pytest.mark.parametrize("options, message", [
    ({"step": 0}, "Step must be 1 or more (got 0)"),
    ({"step": 2.5}, "The step must be a whole number of frames (got 2.5)"),
    ({"frame_start": 1.5, "frame_end": 4}, "The start frame must be a whole number of frames (got 1.5)"),
    ({"interpolation": "linear"}, "Interpolation must be one of LINEAR, BEZIER, CONSTANT"),
    ({"specs": []}, "No chain of armature 'Arm' to snap"),
    ({"specs": "arm"}, "Chains to snap are given as ChainSpec values"),
])
def test_snap_armature_refuses_what_a_script_gets_wrong_as_bake_armature_does(blender, options, message):
    """A TD's script calling ops.snap_armature with a step of 0 got a ZeroDivisionError (an IndexError for a negative
    one), a step of 2.5 keys on subframes refused as if the target's parent sheared it, 'linear' a bare ValueError from
    the key writing, and ``specs=[]`` "Keyed goals  on frames 1-12": success for nothing. bake_armature refuses each
    with a ChainError saying what to give; the snap now says the same, and keys nothing."""
    bpy = blender
    from blender_ik_addon import ops
    from blender_ik_addon.chain import ChainError
    obj, chain, _ = animated_in_fk(bpy)
    before = chain.target.matrix_world.copy()
    with pytest.raises(ChainError, match=re.escape(message)):
        ops.snap_armature(bpy.context.scene, obj, **options)
    assert chain.target.animation_data is None and chain.target.matrix_world == before


@pytest.mark.parametrize("how", ("command line", "script"))
def test_a_chain_described_on_the_bones_of_a_listed_chain_is_that_chain(blender, tmp_path, how):
    """A TD snaps the hand's chain described on the command line (--target HandTarget --tip-bone b3) while the
    armature's active chain is another one: refused, "The target 'HandTarget' is also the target of chain 'hand',
    which its keys would move too; give each chain its own", though 'hand' is the chain on those very bones (the
    described chain takes the list's name only from the active chain). A script's ChainSpec for b3 likewise. The
    list's chain on the bones snapped is that chain: the target is keyed on the tip."""
    bpy = blender
    from rigs import bone_chain
    obj, target = fk_armature(bpy, "Body", "HandTarget", seed=1)
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = obj.data.edit_bones
    parent = edit_bones.new("P")
    parent.head, parent.tail, parent.parent = (1.0, 1.0, 0.0), (1.0, 1.0, 0.3), edit_bones["root"]
    bone_chain(edit_bones, parent, "c", [(0.0, 0.0, 0.5), (0.3, 0.0, 0.4), (0.3, 0.0, 0.0)])
    bpy.ops.object.mode_set(mode="OBJECT")
    tail = obj.blender_ik.chains.add()
    tail.name, tail.tip_bone, tail.target = "tail", "c3", add_empty("TailTarget")
    obj.blender_ik.active_chain_index = 1
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, FRAMES
    if how == "command line":
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
        done = run_script(tmp_path, "shot.blend", "--snap-targets", "--armature", "Body", "--target", "HandTarget",
                          "--tip-bone", "b3")
        assert done.returncode == 0, done.stderr
    else:
        from blender_ik_addon import ops
        from blender_ik_addon.chain import ChainSpec
        ops.snap_armature(bpy.context.scene, obj, specs=ChainSpec(tip_bone="b3", target=target))
        bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot_snapped.blend"))
    (distance, angle), = played_off_tips(bpy, tmp_path / "shot_snapped.blend", [("Body", "HandTarget")]).values()
    assert distance < 1e-6 and angle < 1e-5, (distance, angle)


@pytest.mark.parametrize("frames, said", [((5, 5), "Keyed target 'Target' on frame 5 (1 key): solving keeps the pose\n"),
                                          ((2, 4), "Keyed target 'Target' on frames 2-4 (3 keys): solving keeps the "
                                                   "pose on every frame\n")])
def test_one_frame_keyed_is_said_as_one(blender, capfd, frames, said):
    """A snap of one frame (--start 5 --end 5, or the panel's range) said "Keyed target 'Target' on frames 5 (1 key):
    solving keeps the pose on every frame"."""
    bpy = blender
    animated_in_fk(bpy)
    capfd.readouterr()
    assert bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=frames[0], frame_end=frames[1]) == {"FINISHED"}
    out = capfd.readouterr().out
    assert said in out, out


@pytest.mark.parametrize("hung", ("armature", "target"))
def test_a_prop_held_by_a_live_hand_is_refused(blender, hung):
    """The prop rig (or only its target) hangs from the hand of an arm that Live poses from its keyed target. A range
    snap of the prop pauses Live, so it keyed the prop's target where the prop's tip is with the hand where Live last
    left it; played back, Live moves the hand and the target was 1-3.5 units off the prop's tip while the report said
    "solving keeps the pose on every frame". As Bake refuses such a chain, the snap refuses it, naming the live chain,
    and keys nothing."""
    bpy = blender
    prop, prop_target = fk_armature(bpy, "Prop", "PropTarget", seed=2)
    body = build_arm(name="Body")
    hand_target = add_empty("HandTarget")
    animate_target(hand_target, frames=range(1, FRAMES + 1, 6), seed=1)
    chain = body.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", hand_target
    bpy.context.view_layer.objects.active = body
    chain.live = True
    bpy.context.scene.frame_set(1)
    hanging = prop if hung == "armature" else prop_target
    world = hanging.matrix_world.copy()
    hanging.parent, hanging.parent_type, hanging.parent_bone = body, "BONE", "b3"
    bpy.context.view_layer.update()
    hanging.matrix_world = world
    bpy.context.view_layer.objects.active = prop
    with pytest.raises(RuntimeError, match="moves with chain 'arm' of armature 'Body', which Live poses: a snap "
                                           "follows that chain's keyed pose, not Live's; bake that one first"):
        bpy.ops.blender_ik.snap_target(frames="RANGE", frame_start=1, frame_end=FRAMES)
    assert prop_target.animation_data is None
