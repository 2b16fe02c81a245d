#!/usr/bin/env python3
"""Frame-change cost of the native rig against Blender's own IK constraint on the same chain.

    python scripts/bench_native_rig.py [--frames 400] [--repeat 5]

Each method gets a fresh file with the same arm (root > b1 > b2 > b3) and the same animated target
Empty, then plays the frames with ``scene.frame_set``; only that loop is timed. Methods:

  nothing   the arm and the animated target only: what every frame change costs anyway
  rig       the add-on's native rig (plane TARGET, the last bone along the target's Z)
  rig-parent  the same with plane PARENT and bend TOWARD (the most helpers: the side is picked per frame)
  ik        Blender's IK constraint on b3, chain of 3, position only
  ik+rot    the same with Rotation on (the last bone also turns with the target, like the rig)

The methods alternate, ``repeat`` times; each keeps its best time (the machine is shared). Prints the
cost per frame change, the same less the "nothing" baseline (the rig's or the constraint's own cost), and
the ratios rig / ik (target: at most 1). Also how far the rig's tip gets from the target on the frames
it can reach. Never asserts a time.
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _blender_script import ROOT, leave, sandbox_user_files  # noqa: E402

sandbox_user_files("blender_ik_bench_")  # before bpy is imported: Blender's user files stay out of home
sys.path.insert(0, os.path.join(ROOT, "tests"))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

from blender_ik_addon import chain, native_rig  # noqa: E402
from rigs import add_empty, build_arm  # noqa: E402  (tests/rigs.py)

LENGTHS = (1.0, 0.8, 0.4)
KEY_EVERY = 10


def build_scene(frames):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames
    armature = build_arm(LENGTHS, name="Arm")
    target = add_empty("Target")
    rng = np.random.default_rng(7)
    for frame in range(1, frames + KEY_EVERY + 1, KEY_EVERY):
        direction = rng.normal(size=3)
        direction[2] = abs(direction[2])
        target.location = tuple(direction / np.linalg.norm(direction) * rng.uniform(0.8, 1.3))
        target.rotation_euler = tuple(rng.uniform(-math.pi, math.pi, 3))
        target.keyframe_insert("location", frame=frame)
        target.keyframe_insert("rotation_euler", frame=frame)
    scene.frame_set(1)
    return scene, armature, target


def add_rig(armature, target, plane="TARGET", bend="REST"):
    spec = chain.ChainSpec(tip_bone="b3", target=target, up_axis="Z", plane=plane, bend=bend, name="arm")
    bpy.context.view_layer.update()
    native_rig.build(armature, chain.read_chain(armature, "b3"), spec)


def add_ik(armature, target, rotation):
    constraint = armature.pose.bones["b3"].constraints.new("IK")
    constraint.target = target
    constraint.chain_count = 3
    constraint.use_rotation = rotation


METHODS = {
    "nothing": lambda armature, target: None,
    "rig": add_rig,
    "rig-parent": lambda armature, target: add_rig(armature, target, "PARENT", "TOWARD"),
    "ik": lambda armature, target: add_ik(armature, target, False),
    "ik+rot": lambda armature, target: add_ik(armature, target, True),
}


def play(method, frames):
    """Seconds per frame change, playing every frame once (after one warm-up pass)."""
    scene, armature, target = build_scene(frames)
    METHODS[method](armature, target)
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    start = time.perf_counter()
    for frame in range(1, frames + 1):
        scene.frame_set(frame)
    return (time.perf_counter() - start) / frames, (scene, armature, target)


def rig_accuracy(scene, armature, target, frames):
    """The worst tip-to-target distance, relative to the chain's length, over frames within reach."""
    l1, l2, l3 = LENGTHS
    worst, used = 0.0, 0
    for frame in range(1, frames + 1, 7):
        scene.frame_set(frame)
        base = np.array(armature.pose.bones["b1"].head)
        goal = np.array(target.matrix_world.translation)
        wrist = goal - l3 * np.array(target.matrix_world.to_3x3().col[2].normalized())
        if not abs(l1 - l2) + 0.05 < np.linalg.norm(wrist - base) < l1 + l2 - 0.05:
            continue
        worst = max(worst, float(np.linalg.norm(np.array(armature.pose.bones["b3"].tail) - goal)))
        used += 1
    return worst / sum(LENGTHS), used


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    best, accuracy = {}, {}
    for _ in range(args.repeat):
        for method in METHODS:
            seconds, scene = play(method, args.frames)
            best[method] = min(best.get(method, math.inf), seconds)
            if method.startswith("rig"):
                accuracy[method] = rig_accuracy(*scene, args.frames)
    baseline = best["nothing"]
    print(f"bpy {bpy.app.version_string}, {args.frames} frames, best of {args.repeat} (alternating)")
    for method, seconds in best.items():
        print(f"  {method:10s} {seconds * 1e6:8.1f} µs per frame change, {(seconds - baseline) * 1e6:7.1f} µs "
              "more than nothing")
    for method in ("rig", "rig-parent"):
        for other in ("ik", "ik+rot"):
            raw = best[method] / best[other]
            net = (best[method] - baseline) / max(best[other] - baseline, 1e-12)
            print(f"{method} / {other}: {raw:.2f} per frame change, {net:.2f} of the added cost (target: at most 1)")
    for method, (error, used) in accuracy.items():
        print(f"{method} accuracy: tip within {error:.1e} of the chain's length of the target on {used} reachable "
              "frames")


if __name__ == "__main__":
    leave(main(sys.argv[1:]) or 0)
