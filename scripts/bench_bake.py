#!/usr/bin/env python3
"""Bake speed: our bake against Blender's own (an IK constraint baked by nla.bake with visual keying).

    python scripts/bench_bake.py [--frames-light 3000] [--frames-heavy 150] [--repeat 3] [--quick]

Blender's way sets every frame, which evaluates the whole scene, and reads the constrained pose back;
ours samples the target and solves all frames at once. Each scenario builds the same rig and animated
target from scratch for each method, so both start equal:

  light  the rig and the target only
  heavy  the same plus a time-dependent mesh (a subdivided grid with a Wave modifier), which every
         frame change has to re-evaluate

Only the bake call is timed. Prints the times, the ratios against the targets (never asserts them),
that both bakes keyed the three bones on every frame, and how close the baked tip gets to the target.
Targets: at least 10x (light) and 30x (heavy) faster than the native bake; aim for 20x and 100x.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _blender_script import leave, sandbox_user_files  # noqa: E402

sandbox_user_files("blender_ik_bench_")  # before bpy is imported: Blender's user files stay out of home

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_ik_addon  # noqa: E402
from blender_ik_addon import chain, keys  # noqa: E402
from scenes import add_empty, build_arm  # noqa: E402  (scripts/scenes.py)

LENGTHS = (1.0, 0.8, 0.4)
CHAIN = ("b1", "b2", "b3")
KEY_EVERY = 10
# Heavy mesh: a 100x100 grid, subdivided twice (about 160,000 vertices), then waved.
GRID_SUBDIVISIONS = 100
SUBSURF_LEVELS = 2
ACCURACY_SAMPLES = 60
TARGETS = {"light": (10.0, 20.0), "heavy": (30.0, 100.0)}  # (at least, aim for)


def build_scene(frames, heavy):
    """A fresh file: the armature (root > b1 > b2 > b3), an animated target Empty, maybe the heavy mesh."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    scene.frame_set(1)
    armature = build_arm(LENGTHS, name="Arm")
    target = add_empty("Target")
    animate_target(target, frames)
    if heavy:
        add_heavy_mesh()
    scene.frame_set(1)
    bpy.context.view_layer.objects.active = armature
    return scene, armature, target


def animate_target(target, frames):
    """Keys every KEY_EVERY frames, mostly within reach of the chain, now and then far out of it."""
    rng = np.random.default_rng(7)
    last = frames + KEY_EVERY
    for index, frame in enumerate(range(1, last + 1, KEY_EVERY)):
        direction = rng.normal(size=3)
        direction[2] = abs(direction[2])  # stay above the base, like an arm reaching forward and up
        direction /= np.linalg.norm(direction)
        distance = 2.6 if index % 17 == 16 else rng.uniform(0.8, 1.3)
        target.location = tuple(direction * distance)
        target.rotation_euler = tuple(rng.uniform(-math.pi, math.pi, 3))
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)


def add_heavy_mesh():
    """A mesh that costs tens of milliseconds per frame: Wave is time-dependent, so every frame
    change re-evaluates the whole modifier stack."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=GRID_SUBDIVISIONS, y_subdivisions=GRID_SUBDIVISIONS,
                                    size=6.0, location=(0.0, 0.0, -1.0))
    mesh = bpy.context.active_object
    subsurf = mesh.modifiers.new("Subdivision", "SUBSURF")
    subsurf.levels = subsurf.render_levels = SUBSURF_LEVELS
    mesh.modifiers.new("Wave", "WAVE")
    return mesh


def bake_native(scene, armature, target, frames):
    """Blender's way: an IK constraint on the tip, nla.bake with visual keying. Returns seconds."""
    constraint = armature.pose.bones["b3"].constraints.new("IK")
    constraint.target = target
    constraint.chain_count = 3
    constraint.use_rotation = True
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in armature.pose.bones:
        keys.set_pose_bone_selected(pose_bone, pose_bone.name in CHAIN)
    start = time.perf_counter()
    result = bpy.ops.nla.bake(frame_start=1, frame_end=frames, step=1, only_selected=True, visual_keying=True,
                              clear_constraints=False, bake_types={"POSE"})
    seconds = time.perf_counter() - start
    if result != {"FINISHED"}:
        raise RuntimeError(f"nla.bake returned {result}")
    bpy.ops.object.mode_set(mode="OBJECT")
    # From here on only the baked keys may move the bones.
    armature.pose.bones["b3"].constraints.remove(constraint)
    return seconds


def bake_ours(scene, armature, target, frames):
    """Our way: a chain in the add-on's settings and its bake operator. Returns seconds."""
    settings = armature.blender_ik.chains.add()
    settings.name = settings.tip_bone = "b3"
    settings.target = target
    settings.up_axis = "Z"
    bpy.context.view_layer.objects.active = armature
    armature.select_set(True)
    start = time.perf_counter()
    result = bpy.ops.blender_ik.bake(frame_start=1, frame_end=frames, step=1, chains="ALL")
    seconds = time.perf_counter() - start
    if result != {"FINISHED"}:
        raise RuntimeError(f"blender_ik.bake returned {result}")
    return seconds


def key_counts(armature):
    """Per chain bone, the fewest keys on any of its rotation F-curves (0 if it has none)."""
    counts = {}
    for name in CHAIN:
        path = chain.bone_path(name, chain.rotation_path(armature.pose.bones[name].rotation_mode))
        curves = [fcurve for fcurve in keys.object_fcurves(armature) if fcurve.data_path == path]
        counts[name] = min((len(fcurve.keyframe_points) for fcurve in curves), default=0)
    return counts


def accuracy(scene, armature, target, frames):
    """Max distance from b3's world tail to the target over sampled frames the chain can reach whatever
    axis it aligns to (the target within [|l1-l2| + l3, l1 + l2 - l3] of the base); and how many of
    them there were."""
    l1, l2, l3 = LENGTHS
    low, high = abs(l1 - l2) + l3 + 0.05, l1 + l2 - l3 - 0.05
    worst, used = 0.0, 0
    for frame in np.unique(np.linspace(1, frames, ACCURACY_SAMPLES).round().astype(int)):
        scene.frame_set(int(frame))
        world = armature.matrix_world
        base = np.array(world @ armature.pose.bones["b1"].head)
        goal = np.array(target.matrix_world.translation)
        if not low <= np.linalg.norm(goal - base) <= high:
            continue
        tail = np.array(world @ armature.pose.bones["b3"].tail)
        worst = max(worst, float(np.linalg.norm(tail - goal)))
        used += 1
    return worst, used


def run(method, frames, heavy, check=True):
    """Build a fresh scene, bake it one way; check the keys and the accuracy unless told not to."""
    scene, armature, target = build_scene(frames, heavy)
    outcome = {"seconds": method(scene, armature, target, frames)}
    if check:
        outcome["keys"] = key_counts(armature)
        outcome["error"], outcome["samples"] = accuracy(scene, armature, target, frames)
    return outcome


def ours_available():
    return "bake" in dir(bpy.ops.blender_ik)


def run_ours(frames, heavy, check=True):
    """``run`` with the add-on registered around it (as the tests' fixture does); None without its bake."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        if not ours_available():
            return None
        return run(bake_ours, frames, heavy, check)
    finally:
        blender_ik_addon.unregister()


def best_of(repeat, frames, heavy):
    """Both methods, alternating, ``repeat`` times on fresh scenes: the checks of the first runs and the
    best time of each (the machine is shared; the best run is the least disturbed)."""
    native = ours = None
    for index in range(repeat):
        check = index == 0
        outcome = run(bake_native, frames, heavy, check)
        native = outcome if native is None else dict(native, seconds=min(native["seconds"], outcome["seconds"]))
        outcome = run_ours(frames, heavy, check)
        if outcome is not None:
            ours = outcome if ours is None else dict(ours, seconds=min(ours["seconds"], outcome["seconds"]))
    return native, ours


def keys_line(label, outcome, frames):
    counts = "/".join(str(outcome["keys"][name]) for name in CHAIN)
    ok = all(count == frames for count in outcome["keys"].values())
    return f"{label:6s} keys on b1/b2/b3: {counts} of {frames} {'ok' if ok else 'MISSING'}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames-light", type=int, default=3000, help="frames in the light scene (3000)")
    parser.add_argument("--frames-heavy", type=int, default=150, help="frames in the heavy scene (150)")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many bakes each way (3)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 300 light and 30 heavy frames, once")
    args = parser.parse_args()
    if args.quick:
        args.frames_light, args.frames_heavy, args.repeat = 300, 30, 1
    if min(args.frames_light, args.frames_heavy) < 2:
        parser.error("need at least 2 frames per scenario")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    print(f"bpy {bpy.app.version_string}; best of {args.repeat}; heavy mesh: {GRID_SUBDIVISIONS}x{GRID_SUBDIVISIONS} "
          f"grid, subdivision level {SUBSURF_LEVELS}, Wave")
    # Untimed: the first call of each imports and sets up what later calls reuse (nla.bake imports
    # bpy_extras.anim_utils on first use), which neither method should pay inside the timing.
    run(bake_native, 3, False)
    run_ours(3, False)

    rows = []
    for scenario, frames, heavy in (("light", args.frames_light, False), ("heavy", args.frames_heavy, True)):
        native, ours = best_of(args.repeat, frames, heavy)
        rows.append((scenario, frames, native, ours))
        print(f"\n[{scenario}, {frames} frames]")
        print(keys_line("native", native, frames))
        if ours is not None:
            print(keys_line("ours", ours, frames))
        print(f"native tip-to-target max distance: {native['error']:.2e} ({native['samples']} sampled frames "
              "in reach)")
        if ours is not None:
            print(f"ours   tip-to-target max distance: {ours['error']:.2e} ({ours['samples']} sampled frames "
                  "in reach)")

    print(f"\n{'scenario':8s} {'frames':>6s} {'native s':>9s} {'ours s':>8s} {'ratio':>7s}  target (aim)")
    summary = []
    for scenario, frames, native, ours in rows:
        least, aim = TARGETS[scenario]
        if ours is None:
            ours_text, ratio_text, verdict = "-", "-", "not run"
        else:
            ratio = native["seconds"] / ours["seconds"]
            ours_text, ratio_text = f"{ours['seconds']:.3f}", f"{ratio:.1f}x"
            verdict = "aim met" if ratio >= aim else "target met" if ratio >= least else "below target"
        print(f"{scenario:8s} {frames:6d} {native['seconds']:9.3f} {ours_text:>8s} {ratio_text:>7s}  "
              f">= {least:.0f}x ({aim:.0f}x)")
        summary.append(f"{scenario} {ratio_text} ({verdict})")
    if any(ours is None for *_, ours in rows):
        print("\nour bake operator (bpy.ops.blender_ik.bake) is not available: only the native bake was timed")
    print("summary: " + ", ".join(summary))


if __name__ == "__main__":
    main()
    leave(0)
