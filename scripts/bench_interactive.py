#!/usr/bin/env python3
"""Interactive cost of one chain: a Live re-solve and a Solve call, against Blender's IK constraint.

    python scripts/bench_interactive.py [--updates 400] [--rounds 5]

Each round measures, alternating, on fresh scenes of the same three-bone arm:
- Blender's IK constraint: move the target, ``view_layer.update()`` (the pose is evaluated there);
- Live: move the target, ``view_layer.update()`` (the handler solves and poses), and the update that
  evaluates the new pose, which is what it costs to see the solved pose;
- Solve: ``bpy.ops.blender_ik.solve()`` and the update that shows the pose.
Prints medians per update (µs) and their ratios to the IK constraint. Target: Live and Solve at most 3×.
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
from scenes import add_empty, build_arm  # noqa: E402


def scene(method):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    obj = build_arm()
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    if method == "ik":
        constraint = obj.pose.bones["b3"].constraints.new("IK")
        constraint.target, constraint.chain_count = target, 3
    else:
        obj.blender_ik.tip_bone, obj.blender_ik.target = "b3", target
        obj.blender_ik.live = method == "live"
    bpy.context.view_layer.update()
    return obj, target


def measure(method, updates):
    obj, target = scene(method)
    update = bpy.context.view_layer.update
    solve = bpy.ops.blender_ik.solve
    times = np.empty(updates)
    for index in range(updates):
        target.location.x = 0.9 + 0.1 * math.sin(index * 0.1)
        target.rotation_euler.z = 0.1 + 0.2 * math.cos(index * 0.13)
        start = time.perf_counter()
        if method == "solve":
            solve()
            update()
        else:
            update()
            if method == "live":
                update()
        times[index] = time.perf_counter() - start
    blender_ik_addon.unregister()
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=400, help="target moves per measurement (400)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best median counts (5)")
    args = parser.parse_args()
    methods = ("ik", "live", "solve")
    for method in methods:  # untimed: first calls import and set up what later calls reuse
        measure(method, 20)
    best = {method: float("inf") for method in methods}
    for _ in range(args.rounds):
        for method in methods:
            best[method] = min(best[method], measure(method, args.updates))
    print(f"bpy {bpy.app.version_string}; median per target move, best of {args.rounds} alternating rounds")
    labels = {"ik": "Blender's IK constraint", "live": "Live re-solve (+ the update showing it)",
              "solve": "Solve operator (+ the update showing it)"}
    for method in methods:
        ratio = best[method] / best["ik"]
        verdict = "" if method == "ik" else f"  {ratio:5.1f}x  {'target met' if ratio <= 3 else 'above 3x target'}"
        print(f"{labels[method]:42s} {best[method] * 1e6:8.1f} µs{verdict}")


if __name__ == "__main__":
    main()
    leave(0)
