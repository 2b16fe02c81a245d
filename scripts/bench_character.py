#!/usr/bin/env python3
"""Bake speed on a real character's scene: where a bake's fixed costs are Blender's own.

    python scripts/bench_character.py [--frames 100] [--repeat 3] [--keyed-body | --generated]

The scene: Rigify's human metarig and the rig Rigify generates from it (about 700 bones, 500 constraints, 100
drivers), built once and saved to a scratch file that every run opens afresh. The metarig's left arm
(upper_arm.L > forearm.L > hand.L) follows an Empty keyed every 10 frames near the hand. With --keyed-body, every
other bone of the metarig is keyed every 10 frames too (location, rotation and scale; the torso and shoulders sway),
as a character animated in FK with an IK arm: the arm's base moves on every frame. Timed, alternating:

  ours      the add-on's Bake operator, a first bake (it creates the F-curves) and a re-bake over its own keys
  IK        an IK constraint on hand.L (chain of 3) baked by nla.bake with visual keying, as bench_bake.py does
            (the rotations only, as ours)

With --generated, the chains are on the generated rig itself, as an animator baking IK to its FK controls: the left
arm (hand_fk.L, through the wrist's MCH helper) and three fingers (f_index/f_middle/f_ring.03.L, through the MCH
bones their curl drivers turn), each following its own Empty keyed every 10 frames near its tip. The IK side puts an
IK constraint on each of the four tips, long enough to reach the same first bone (the helpers it passes count in
its chain length), and nla.bake keys those bones (the helpers too, which its IK turns).

Blender rebuilds the scene's dependency relations at the next update whenever F-curves are created or a datablock
is removed: a first bake (either way) creates its F-curves and pays one rebuild; a re-bake of this length creates
and removes nothing (the add-on reads the old keys for its exact undo and evaluates the target frame by frame rather
than sampling a throwaway copy of its action). Also printed: what an operator's undo step and one rebuild cost here
alone. Prints the best of --repeat, never asserts.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _blender_script import leave, sandbox_user_files  # noqa: E402

sandbox_user_files("blender_ik_bench_")  # before bpy is imported: Blender's user files stay out of home

import bpy  # noqa: E402
import addon_utils  # noqa: E402  (Blender's, importable once bpy is)
import numpy as np  # noqa: E402

import blender_ik_addon  # noqa: E402
from blender_ik_addon import keys  # noqa: E402
from blender_ik_addon.chain import chain_names, chain_path  # noqa: E402
from scenes import add_empty  # noqa: E402  (scripts/scenes.py)

TIP = "hand.L"
KEY_EVERY = 10
# --generated: chains on the generated rig's FK controls.
GENERATED_TIPS = ("hand_fk.L", "f_index.03.L", "f_middle.03.L", "f_ring.03.L")


def build(path, frames, keyed_body=False, generated_chains=False):
    """The metarig, its generated rig and the keyed target (and with ``keyed_body`` the metarig's other bones keyed;
    with ``generated_chains`` a keyed target near each of GENERATED_TIPS of the generated rig), saved to ``path``."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    # Rigify stays enabled for the whole run, as for a user of the generated rig: its handlers read its properties.
    addon_utils.enable("rigify", default_set=True)
    bpy.ops.object.armature_human_metarig_add()
    metarig = bpy.context.object
    metarig.name = "metarig"
    bpy.ops.pose.rigify_generate()
    bpy.ops.object.mode_set(mode="OBJECT")
    generated = [obj for obj in bpy.data.objects if obj.type == "ARMATURE" and obj is not metarig][0]
    stats = (len(generated.pose.bones), sum(len(bone.constraints) for bone in generated.pose.bones),
             len(generated.animation_data.drivers) if generated.animation_data else 0)
    generated.name = "rig"
    target = add_empty("Target")
    hand = np.array(metarig.matrix_world @ metarig.pose.bones[TIP].tail)
    rng = np.random.default_rng(1)
    for tip in GENERATED_TIPS if generated_chains else ():
        # Along the bone at rest (Up Axis Y), near its tip, and within the chain's reach on every frame: keys land on
        # the targets, which the playback check below shows.
        empty = add_empty(f"Target {tip}")
        empty.matrix_world = generated.matrix_world @ generated.pose.bones[tip].matrix
        bones = [generated.pose.bones[name] for name in chain_names(generated, tip)]
        (l1, l2, l3), base = (bone.length for bone in bones), np.array(bones[0].head)
        along, tail = np.array(empty.matrix_world.col[1][:3]), np.array(bones[2].tail)
        for frame in range(1, frames + KEY_EVERY + 1, KEY_EVERY):
            while True:
                location = tail + rng.normal(0.0, 0.1 * (l1 + l2 + l3), 3)
                if abs(l1 - l2) * 1.1 < np.linalg.norm(location - l3 * along - base) < 0.95 * (l1 + l2):
                    break
            empty.location = location
            empty.keyframe_insert("location", frame=frame)
    for frame in range(1, frames + KEY_EVERY + 1, KEY_EVERY):
        target.location = hand + rng.normal(0.0, 0.1, 3)
        target.keyframe_insert("location", frame=frame)
    if keyed_body:
        chain = {TIP, metarig.pose.bones[TIP].parent.name, metarig.pose.bones[TIP].parent.parent.name}
        for frame in range(1, frames + KEY_EVERY + 1, KEY_EVERY):
            for pose_bone in metarig.pose.bones:
                if pose_bone.name in chain:
                    continue
                pose_bone.rotation_mode = "QUATERNION"
                sway = 0.04 if pose_bone.name.startswith(("spine", "shoulder")) else 0.0
                pose_bone.rotation_quaternion = (1.0, *rng.normal(0.0, sway, 3))
                for path_name in ("location", "rotation_quaternion", "scale"):
                    pose_bone.keyframe_insert(path_name, frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=path)
    return stats


def open_scene(path, generated_chains=False):
    """The armature the chains are on (the metarig, or with ``generated_chains`` the generated rig), active and
    selected, and {tip: its target}."""
    bpy.ops.wm.open_mainfile(filepath=path)
    armature = bpy.data.objects["rig" if generated_chains else "metarig"]
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    if generated_chains:
        return armature, {tip: bpy.data.objects[f"Target {tip}"] for tip in GENERATED_TIPS}
    return armature, {TIP: bpy.data.objects["Target"]}


def timed(call):
    start = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - start
    if result != {"FINISHED"}:
        raise RuntimeError(f"{call} returned {result}")
    return seconds


def bake_ours(path, frames, generated_chains=False):
    """A first bake and a re-bake with the add-on. Returns (first, again) seconds."""
    armature, targets = open_scene(path, generated_chains)
    blender_ik_addon.register()
    try:
        for tip, target in targets.items():
            settings = armature.blender_ik.chains.add()
            settings.name = settings.tip_bone = tip
            settings.target = target
            settings.up_axis = "Y"
        # Evaluated before the bake, as when a user presses Bake: Blender updates the armature for a setting changed
        # (the nla.bake side's set-up is evaluated by its mode_set).
        bpy.context.view_layer.update()
        first = timed(lambda: bpy.ops.blender_ik.bake(frame_start=1, frame_end=frames, step=1, chains="ALL"))
        again = timed(lambda: bpy.ops.blender_ik.bake(frame_start=1, frame_end=frames, step=1, chains="ALL"))
        _farthest["ours"] = max(_farthest.get("ours", 0.0), farthest_tip(armature, targets, frames))
    finally:
        blender_ik_addon.unregister()
    return first, again


# The farthest a baked tip got from its target, played back, per method, over every run.
_farthest = {}


def farthest_tip(armature, targets, frames):
    """The largest distance from a tip to its target over the frames, as Blender plays the keys back."""
    scene, farthest = bpy.context.scene, 0.0
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
        for tip, target in targets.items():
            tail = armature.matrix_world @ armature.pose.bones[tip].tail
            farthest = max(farthest, (tail - target.matrix_world.translation).length)
    return farthest


def bake_native(path, frames, generated_chains=False):
    """nla.bake of IK constraints, first and again. Returns (first, again) seconds."""
    armature, targets = open_scene(path, generated_chains)
    chains = set()
    for tip, target in targets.items():
        names, through = chain_path(armature, tip)
        constraint = armature.pose.bones[tip].constraints.new("IK")
        constraint.target, constraint.chain_count = target, len(names) + len(through)
        chains.update(names + through)  # (its IK turns the helpers too: keyed, so that its keys play its pose)
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in armature.pose.bones:
        keys.set_pose_bone_selected(pose_bone, pose_bone.name in chains)

    def bake():
        return bpy.ops.nla.bake(frame_start=1, frame_end=frames, step=1, only_selected=True, visual_keying=True,
                                clear_constraints=False, bake_types={"POSE"}, channel_types={"ROTATION"})
    first, again = timed(bake), timed(bake)
    for pose_bone in armature.pose.bones:  # the keys alone, as ours play
        for constraint in pose_bone.constraints:
            if constraint.type == "IK":
                constraint.mute = True
    _farthest["IK"] = max(_farthest.get("IK", 0.0), farthest_tip(armature, targets, frames))
    return first, again


class BENCH_OT_nothing(bpy.types.Operator):
    """An operator that does nothing, with an undo step: what Blender charges any operator here."""

    bl_idname = "bench.nothing"
    bl_label = "Nothing"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        return {"FINISHED"}


def blender_costs(path):
    """(undo step, relations rebuild) seconds: an operator that does nothing, and the update after an action is
    removed less the update after nothing."""
    metarig, _ = open_scene(path)
    undo = timed(bpy.ops.bench.nothing)
    layer = bpy.context.view_layer

    def update_after(change):
        change()
        metarig.update_tag(refresh={"TIME"})
        start = time.perf_counter()
        layer.update()
        return time.perf_counter() - start

    plain = min(update_after(lambda: None) for _ in range(3))
    rebuilt = min(update_after(lambda: bpy.data.actions.remove(bpy.data.actions.new("scratch"))) for _ in range(3))
    return undo, rebuilt - plain


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100, help="frames to bake (100)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs each way (3)")
    parser.add_argument("--keyed-body", action="store_true",
                        help="key the metarig's other bones every 10 frames too (the arm's base moves)")
    parser.add_argument("--generated", action="store_true",
                        help="bake four chains on the generated rig's FK controls (the arm and three fingers)")
    args = parser.parse_args()
    if args.frames < 2 or args.repeat < 1:
        parser.error("need at least 2 frames and 1 repeat")
    if args.generated and args.keyed_body:
        parser.error("--keyed-body keys the metarig, --generated bakes on the generated rig: pick one")
    folder = tempfile.mkdtemp(prefix="blender_ik_bench_character_")
    try:
        run(os.path.join(folder, "character.blend"), args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(scratch, args):
    stats = build(scratch, args.frames, args.keyed_body, args.generated)
    bpy.utils.register_class(BENCH_OT_nothing)
    what = ("four chains on the generated rig's FK controls (" + ", ".join(GENERATED_TIPS) + ")" if args.generated
            else "the metarig's arm" + (" under its keyed body" if args.keyed_body else ""))
    print(f"bpy {bpy.app.version_string}; generated rig: {stats[0]} bones, {stats[1]} constraints, {stats[2]} "
          f"drivers; {args.frames} frames of {what}; best of {args.repeat}")
    best = {}
    for _ in range(args.repeat):
        for name, bake in (("ours", bake_ours), ("IK", bake_native)):
            first, again = bake(scratch, args.frames, args.generated)
            previous = best.get(name, (first, again))
            best[name] = (min(previous[0], first), min(previous[1], again))
        costs = blender_costs(scratch)
        best["costs"] = tuple(min(a, b) for a, b in zip(best.get("costs", costs), costs))
    (ours_first, ours_again), (ik_first, ik_again) = best["ours"], best["IK"]
    undo, rebuild = best["costs"]
    print(f"{'bake':8s} {'first ms':>9s} {'again ms':>9s}")
    print(f"{'IK':8s} {ik_first * 1e3:9.1f} {ik_again * 1e3:9.1f}")
    print(f"{'ours':8s} {ours_first * 1e3:9.1f} {ours_again * 1e3:9.1f}")
    print(f"ratio vs IK: first {ik_first / ours_first:.1f}x, again {ik_again / ours_again:.1f}x")
    if args.generated:  # (the metarig's target is not turned along the hand: ours takes the closest pose there)
        print(f"farthest tip from its target, keys played back: ours {_farthest['ours']:.2e}, IK "
              f"{_farthest['IK']:.2e}")
    print(f"Blender's own costs here: an operator's undo step {undo * 1e3:.1f} ms; a relations rebuild "
          f"{rebuild * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
    leave(0)
