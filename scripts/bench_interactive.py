#!/usr/bin/env python3
"""Interactive cost of one chain: a Live re-solve and a Solve call, against Blender's IK constraint.

    python scripts/bench_interactive.py [--updates 400] [--rounds 5]

Each round measures, alternating, on fresh scenes of the same three-bone arm:
- Blender's IK constraint: move the target, ``view_layer.update()`` (the pose is evaluated there); the same with
  ``use_rotation`` (the last bone follows the target's rotation too: the result closest to ours, a second reference
  as bench_bake.py prints; its iterations may leave the tip off the target, which is printed, not refused); and the
  IK constraint with the add-on registered and no chain, which is what the add-on costs every update of a scene it
  does not pose;
- Live: move the target, ``view_layer.update()`` (the handler solves and poses), and the update that
  evaluates the new pose, which is what it costs to see the solved pose;
- Solve: ``bpy.ops.blender_ik.solve()`` and the update that shows the pose;
- and the floor of each, what Blender's own calls cost any add-on that poses the chain this way, with nothing read,
  solved or checked: for Live, a depsgraph handler that writes the three bones' rotations, and the update that
  shows them; for Solve, an operator (with undo, as Solve's) that writes them, and the update.
Blender's own (the IK constraint, the floors) runs without the add-on registered; Live and Solve must leave the tip on
the target after every update, as Blender shows it. Prints medians per update (µs) and their ratios to the IK
constraint (position only: the targets are against it). Target: Live and Solve at most 3×; what the floor leaves of
that is the budget of Python's own work.

Then, for a character (no target): a figure with four chains (hands and feet, scenes.build_figure), four IK constraints
against four live chains, moving one target per update (an animator dragging a hand) and all four. And a crowded scene
(no target): the arm among --crowd other objects (3,000 Empties, a set-dressed shot), the IK constraint against Live,
where Blender's own cost of an update grows with the scene.
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
from scenes import FIGURE_TIPS, add_empty, build_arm, build_figure  # noqa: E402


# Two poses the floors write in turn (quaternions of the three bones), so every update changes the pose.
_FLOOR_POSES = (((1.0, 0.0, 0.0, 0.0),) * 3, ((0.98, 0.2, 0.0, 0.0), (0.98, 0.0, 0.2, 0.0), (0.98, 0.0, 0.0, 0.2)))
_floor = {"calls": 0, "armature": None}


def _write_floor_pose(armature, index):
    """The cheapest way Blender has (the add-on's too): the values in bulk, and a transform update of the armature
    (a rotation property's setter asks for a geometry update, which costs more)."""
    bones = armature.pose.bones
    values = np.empty(len(bones) * 4, dtype=np.float32)
    bones.foreach_get("rotation_quaternion", values)
    for name, value in zip(("b1", "b2", "b3"), _FLOOR_POSES[index % 2]):
        start = bones.find(name) * 4
        values[start:start + 4] = value
    bones.foreach_set("rotation_quaternion", values)
    armature.update_tag(refresh={"OBJECT"})


def _floor_handler(scene, depsgraph):
    """Live's floor: on the update a target move causes, write the pose (the next update shows it and calls this
    again, which then does nothing, as Live's own handler does nothing for its own update)."""
    _floor["calls"] += 1
    if _floor["calls"] % 2:
        _write_floor_pose(_floor["armature"], _floor["calls"] // 2)


class BENCH_OT_pose_floor(bpy.types.Operator):
    """Solve's floor: an operator that writes the pose, nothing else."""

    bl_idname = "bench.pose_floor"
    bl_label = "Pose floor"
    bl_options = {"REGISTER", "UNDO"}  # as Solve's

    def execute(self, context):
        _floor["calls"] += 1
        _write_floor_pose(context.active_object, _floor["calls"])
        return {"FINISHED"}


def ours(method):
    """Whether ``method`` is the add-on's: Blender's own ('ik', the floors) run without the add-on registered, whose
    depsgraph handler would otherwise add its idle cost (about 10 µs an update) to the reference."""
    return method in ("live", "solve", "ik, add-on idle")


def scene(method, crowd=0):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if ours(method):
        blender_ik_addon.register()
    for index in range(crowd):
        bpy.context.scene.collection.objects.link(bpy.data.objects.new(f"Crowd {index:05d}", None))
    obj = build_arm()
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    bpy.context.view_layer.objects.active = obj
    if method.startswith("ik"):
        constraint = obj.pose.bones["b3"].constraints.new("IK")
        constraint.target, constraint.chain_count = target, 3
        constraint.use_rotation = method == "ik+rot"
    elif method.startswith("floor"):
        _floor.update(calls=0, armature=obj)
    else:
        obj.blender_ik.tip_bone, obj.blender_ik.target = "b3", target
        obj.blender_ik.live = method == "live"
    bpy.context.view_layer.update()
    return obj, target


# The farthest the tip ended from its target, per method, over every measurement.
_farthest = {}


def measure(method, updates, crowd=0):
    obj, target = scene(method, crowd)
    update = bpy.context.view_layer.update
    solve = bpy.ops.bench.pose_floor if method == "floor solve" else bpy.ops.blender_ik.solve
    if method == "floor live":
        bpy.app.handlers.depsgraph_update_post.append(_floor_handler)
    times = np.empty(updates)
    off = 0.0
    for index in range(updates):
        target.location.x = 0.9 + 0.1 * math.sin(index * 0.1)
        target.rotation_euler.z = 0.1 + 0.2 * math.cos(index * 0.13)
        start = time.perf_counter()
        if method in ("solve", "floor solve"):
            solve()
            update()
        else:
            update()
            if method in ("live", "floor live"):
                update()
        times[index] = time.perf_counter() - start
        if not method.startswith("floor"):  # as Blender shows it: the tip on the target (the floors pose no target)
            off = max(off, ((obj.matrix_world @ obj.pose.bones["b3"].tail) - target.matrix_world.translation).length)
    if method == "floor live":
        bpy.app.handlers.depsgraph_update_post.remove(_floor_handler)
    if ours(method):
        blender_ik_addon.unregister()
    _farthest[method] = max(_farthest.get(method, 0.0), off)
    if off > 1e-4 and method != "ik+rot":  # (an iterative solve of position and rotation may trade one for the other)
        raise RuntimeError(f"{method}: the tip ended {off:.1e} from the target")
    return float(np.median(times))


def figure_scene(method):
    """The figure with a target Empty at each of its four tips: four IK constraints, or four live chains."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    if method == "live":
        blender_ik_addon.register()
    obj = build_figure()
    bpy.context.view_layer.update()
    targets = []
    for tip in FIGURE_TIPS:
        # At the tip bone, drawn in toward the limb's root so the (straight) limb bends and every target move stays
        # within reach of both.
        target = add_empty(f"{tip} target")
        matrix = obj.matrix_world @ obj.pose.bones[tip].matrix
        root = obj.matrix_world @ obj.pose.bones[tip].parent.parent.head
        tail = obj.matrix_world @ obj.pose.bones[tip].tail
        matrix.translation = root + 0.85 * (tail - root)
        target.matrix_world = matrix
        targets.append(target)
    bpy.context.view_layer.objects.active = obj
    for tip, target in zip(FIGURE_TIPS, targets):
        if method == "ik":
            constraint = obj.pose.bones[tip].constraints.new("IK")
            constraint.target, constraint.chain_count = target, 3
        else:
            chain = obj.blender_ik.chains.add()
            chain.name = chain.tip_bone = tip
            chain.target, chain.up_axis = target, "Y"  # the target sits on the tip bone, its Y along the bone
            chain.live = True
    bpy.context.view_layer.update()
    return obj, targets


def _farthest_tip(obj):
    """How far the farthest of the four tips is from its target, as Blender shows them."""
    targets = {chain.tip_bone: chain.target for chain in obj.blender_ik.chains} if hasattr(obj, "blender_ik") else {}
    targets.update({tip: obj.pose.bones[tip].constraints[0].target for tip in FIGURE_TIPS
                    if obj.pose.bones[tip].constraints})
    return max(((obj.matrix_world @ obj.pose.bones[tip].tail) - targets[tip].matrix_world.translation).length
               for tip in FIGURE_TIPS)


def measure_figure(method, moved, updates):
    """Median cost of one update moving ``moved`` of the figure's four targets (and, for Live, the update showing
    the pose)."""
    obj, targets = figure_scene(method)
    targets = targets[:moved]
    rests = [(target.location.copy(), target.rotation_euler.copy()) for target in targets]
    update = bpy.context.view_layer.update
    times = np.empty(updates)
    for index in range(updates):
        for target, (location, rotation) in zip(targets, rests):
            target.location.z = location.z + 0.05 * math.sin(index * 0.1)
            target.rotation_euler.x = rotation.x + 0.1 * math.cos(index * 0.13)
        start = time.perf_counter()
        update()
        if method == "live":
            update()
        times[index] = time.perf_counter() - start
    farthest = _farthest_tip(obj)
    if method == "live":
        blender_ik_addon.unregister()
    return float(np.median(times)), farthest


def figure_rows(updates, rounds):
    cases = [(method, moved) for moved in (1, len(FIGURE_TIPS)) for method in ("ik", "live")]
    for method, moved in cases:  # untimed, as above
        measure_figure(method, moved, 20)
    best = {case: float("inf") for case in cases}
    farthest = {method: 0.0 for method in ("ik", "live")}
    for _ in range(rounds):
        for case in cases:
            median, off = measure_figure(*case, updates)
            best[case] = min(best[case], median)
            farthest[case[0]] = max(farthest[case[0]], off)
    print(f"A figure with four chains (hands, feet); median per update, best of {rounds} alternating rounds")
    for moved in (1, len(FIGURE_TIPS)):
        ik, live = best[("ik", moved)], best[("live", moved)]
        what = "one target moved" if moved == 1 else "all four targets moved"
        print(f"  {what:24s} four IK constraints {ik * 1e6:7.1f} µs; four live chains {live * 1e6:7.1f} µs  "
              f"{live / ik:4.1f}x")
    print(f"  after the last update the farthest tip is {farthest['live']:.1e} from its target with Live, "
          f"{farthest['ik']:.1e} with the IK constraints")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=400, help="target moves per measurement (400)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best median counts (5)")
    parser.add_argument("--crowd", type=int, default=3000, help="other objects in the crowded scene (3000; 0: skip it)")
    args = parser.parse_args()
    bpy.utils.register_class(BENCH_OT_pose_floor)
    methods = ("ik", "ik, add-on idle", "ik+rot", "live", "floor live", "solve", "floor solve")
    for method in methods:  # untimed: first calls import and set up what later calls reuse
        measure(method, 20)
    best = {method: float("inf") for method in methods}
    for _ in range(args.rounds):
        for method in methods:
            best[method] = min(best[method], measure(method, args.updates))
    print(f"bpy {bpy.app.version_string}; median per target move, best of {args.rounds} alternating rounds")
    labels = {"ik": "Blender's IK constraint", "ik+rot": "  the IK with use_rotation (nearest ours)",
              "ik, add-on idle": "  the same, the add-on registered, no chain",
              "live": "Live re-solve (+ the update showing it)",
              "floor live": "  its floor (handler writes the pose)", "solve": "Solve operator (+ the update showing it)",
              "floor solve": "  its floor (operator writes the pose)"}
    for method in methods:
        ratio = best[method] / best["ik"]
        if method == "ik":
            verdict = ""
        elif method == "ik+rot":  # a second reference, as bench_bake.py prints: the targets are against the IK's
            verdict = (f"  {ratio:5.2f}x  Live {best['live'] / best[method]:.1f}x of it, Solve "
                       f"{best['solve'] / best[method]:.1f}x; its tip ends up to {_farthest[method]:.1e} off target")
        elif method == "ik, add-on idle":  # what the add-on costs every update of a scene it does not pose
            verdict = f"  {ratio:5.2f}x  the add-on's idle cost: {(best[method] - best['ik']) * 1e6:.1f} µs an update"
        elif method.startswith("floor"):
            budget = 3 * best["ik"] - best[method]
            verdict = f"  {ratio:5.1f}x  leaves {budget * 1e6:.0f} µs of Python within 3x"
        else:
            verdict = f"  {ratio:5.1f}x  {'target met' if ratio <= 3 else 'above 3x target'}"
        print(f"{labels[method]:42s} {best[method] * 1e6:8.1f} µs{verdict}")
    figure_rows(args.updates, args.rounds)
    if args.crowd:
        crowd_rows(args.crowd, args.rounds)


def crowd_rows(crowd, rounds, updates=60):
    best = {method: float("inf") for method in ("ik", "live")}
    for _ in range(rounds):
        for method in best:
            best[method] = min(best[method], measure(method, updates, crowd))
    print(f"The arm among {crowd:,} other objects; median per target move, best of {rounds} alternating rounds")
    print(f"  IK constraint {best['ik'] * 1e6:8.1f} µs; Live {best['live'] * 1e6:8.1f} µs  "
          f"{best['live'] / best['ik']:4.1f}x")


if __name__ == "__main__":
    main()
    leave(0)
