#!/usr/bin/env python3
"""Memory and time of a long bake, and the speed of its two Blender-facing steps against Blender's own way.

    python scripts/bench_memory.py [--frames 100000] [--timing-frames 3000] [--repeat 5] [--quick]

Memory: each measurement runs in a fresh Python process (peak RSS only ever grows), on bench_bake.py's
light scene (the three-bone arm, a target keyed every 10 frames), and reports how much the peak resident
memory grew during the call:

  bake      ops.bake_armature (the Bake operator's function) over all the frames
  keys      keys.write_keys of the same keys alone, then the scene evaluated to show them: what Blender itself
            needs for the baked keys, the floor under any bake. A key takes 72 bytes, and the evaluated scene
            holds a second copy of the action (the depsgraph's copy-on-evaluation), so 1.2 million keys
            (100,000 frames of three quaternion bones) cost about 166 MiB before the bake spends anything.
  samples   the bake with output='SAMPLES': one 16-byte sample per frame and channel instead of a key
  sampled   keys.write_samples of the same values alone, then evaluated: the floor under a bake to samples

Timing, per 1000 frames, best of --repeat, each pair alternating on the same data:

  sampling   fcurves.evaluate_many on the target's six F-curves, against FCurve.evaluate frame by frame
  keys       keys.write_keys on twelve channels, against keyframe_points.insert key by key

Target: a 100,000-frame bake adds less than 100 MiB; the keys' floor puts that out of reach for three
quaternion bones, so the line that matters for keys is the bake's own share above it; the bake to samples is
the one that can meet it. Prints, never asserts.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _blender_script import ROOT, leave, sandbox_user_files  # noqa: E402

sandbox_user_files("blender_ik_bench_")  # before bpy is imported: Blender's user files stay out of home
sys.path.insert(0, os.path.join(ROOT, "tests"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import blender_ik_addon  # noqa: E402
from blender_ik_addon import fcurves, keys  # noqa: E402
from blender_ik_addon.ops import bake_armature  # noqa: E402
from bench_bake import build_scene  # noqa: E402

TARGET_MIB = 100
CHANNELS = [(f'pose.bones["b{bone}"].rotation_quaternion', index, f"b{bone}") for bone in (1, 2, 3)
            for index in range(4)]
MARK = "bench_memory:"


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def child(kind, frames):
    """Run in a fresh process: build the scene, then measure one call. Prints one marked JSON line."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    scene, armature, target = build_scene(frames, heavy=False)
    settings = armature.blender_ik
    settings.tip_bone, settings.target = "b3", target
    values = np.random.default_rng(0).normal(size=(frames, len(CHANNELS)))
    frame_numbers = np.arange(1.0, frames + 1.0)
    before = peak_mib()
    start = time.perf_counter()
    if kind in ("bake", "samples"):
        bake_armature(scene, armature, "ALL", 1, frames, output="SAMPLES" if kind == "samples" else "KEYS")
    elif kind == "sampled":
        keys.write_samples(armature, CHANNELS, 1, values)
        armature.update_tag(refresh={"TIME"})
        bpy.context.view_layer.update()
    else:
        keys.write_keys(armature, CHANNELS, frame_numbers, values)
        armature.update_tag(refresh={"TIME"})  # as the bake ends: the pose shows the new keys
        bpy.context.view_layer.update()
    seconds = time.perf_counter() - start
    print(MARK + json.dumps({"mib": peak_mib() - before, "seconds": seconds}), flush=True)
    blender_ik_addon.unregister()


def measure(kind, frames):
    result = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kind, "--frames", str(frames)],
                            capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith(MARK)]
    if result.returncode != 0 or not lines:
        raise RuntimeError(f"the {kind} measurement failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return json.loads(lines[-1][len(MARK):])


def best_pair(first, second, repeat):
    """Best seconds of each, alternating (the machine is shared; the best run is the least disturbed)."""
    best = [float("inf"), float("inf")]
    for _ in range(repeat):
        for index, function in enumerate((first, second)):
            start = time.perf_counter()
            function()
            best[index] = min(best[index], time.perf_counter() - start)
    return best


def timings(frames, repeat):
    """(ours, Blender's) seconds per 1000 frames for sampling and for key writing."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        _, armature, target = build_scene(frames, heavy=False)
        curves = keys.object_fcurves(target)
        frame_numbers = np.arange(1, frames + 1)

        def sample_ours():
            return fcurves.evaluate_many(curves, frame_numbers)

        def sample_blender():
            return np.array([[fcurve.evaluate(frame) for fcurve in curves] for frame in frame_numbers.tolist()])

        if not np.array_equal(sample_ours(), sample_blender()):
            raise RuntimeError("evaluate_many differs from FCurve.evaluate")
        sampling = best_pair(sample_ours, sample_blender, repeat)

        values = np.random.default_rng(1).normal(size=(frames, len(CHANNELS)))

        def write_ours():
            keys.write_keys(armature, CHANNELS, frame_numbers.astype(np.float64), values)

        def write_blender():
            for column, (path, index, _) in enumerate(CHANNELS):
                fcurve = keys.find_fcurve(armature, path, index)
                fcurve.keyframe_points.clear()
                insert = fcurve.keyframe_points.insert
                for frame, value in zip(frame_numbers.tolist(), values[:, column].tolist()):
                    insert(frame, value, options={"FAST"}).interpolation = "LINEAR"
                fcurve.update()

        write_ours()  # creates the F-curves both then reuse
        writing = best_pair(write_ours, write_blender, repeat)
    finally:
        blender_ik_addon.unregister()
    per_1000 = 1000.0 / frames
    return {"sampling": [s * per_1000 for s in sampling], "keys": [s * per_1000 for s in writing]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100000, help="frames of the long bake (100000)")
    parser.add_argument("--timing-frames", type=int, default=3000, help="frames for the timings (3000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many timings each way (5)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 10000 and 300 frames, twice")
    parser.add_argument("--child", choices=("bake", "keys", "samples", "sampled"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.frames)
        return
    if args.quick:
        args.frames, args.timing_frames, args.repeat = 10000, 300, 2
    if min(args.frames, args.timing_frames) < 2 or args.repeat < 1:
        parser.error("need at least 2 frames and 1 repeat")

    print(f"bpy {bpy.app.version_string}")
    for output, floor, what in (("bake", "keys", "keys"), ("samples", "sampled", "samples")):
        bake_run, floor_run = measure(output, args.frames), measure(floor, args.frames)
        verdict = "target met" if bake_run["mib"] < TARGET_MIB else "above target"
        label = "bake" if output == "bake" else "bake to samples"
        print(f"{args.frames}-frame {label}: {bake_run['mib']:.1f} MiB added, {bake_run['seconds']:.2f} s "
              f"(target < {TARGET_MIB} MiB: {verdict})")
        print(f"  floor: Blender's own storage of the {args.frames * len(CHANNELS)} {what}, evaluated: "
              f"{floor_run['mib']:.1f} MiB ({floor_run['seconds']:.2f} s)")
        print(f"  the bake's own share above the floor: {bake_run['mib'] - floor_run['mib']:.1f} MiB")

    timed = timings(args.timing_frames, args.repeat)
    print(f"\nper 1000 frames, best of {args.repeat} ({args.timing_frames} frames):")
    print(f"{'step':26s} {'ours ms':>8s} {'Blender ms':>11s} {'ratio':>7s}")
    for label, (ours, blender) in (("sampling (6 F-curves)", timed["sampling"]),
                                   ("key writing (12 channels)", timed["keys"])):
        print(f"{label:26s} {ours * 1e3:8.2f} {blender * 1e3:11.2f} {blender / ours:6.1f}x")


if __name__ == "__main__":
    main()
    leave(0)
