#!/usr/bin/env python3
"""Live with many chains on a character: Rigify's human metarig, against as many IK constraints.

    python scripts/bench_live_chains.py [--updates 60] [--rounds 5] [--grid 200]

Chains from Selected on up to 27 tips of the metarig (spine and neck, face, arms, fingers, legs), each target
parented to its chain's parent bone (so it moves with the body, as an animator sets targets up). For 1, 8 and 27 chains,
alternating in one run, Blender's IK constraints (chain length 3, the same targets) against Live:
- one leaf target moved per update (a foot: nothing hangs below it), which shows what idle chains cost;
- the spine's target moved (every chain above the legs hangs below it and is re-solved, in four levels);
- every target moved.
Then the left hand's chain and its five fingers' below it, the finger controls under the hand's control: the hand's
control dragged, without a mesh and with a --grid² vertex mesh the armature deforms (each evaluation deforms it again;
Live evaluates once an update where it can tell the fingers' bases from the hand's pose).
Each update is timed as ``view_layer.update()`` after the move; for Live a second update too (the one showing the
pose, as bench_interactive counts it). Prints medians per update (ms), the best of the rounds, and their ratios.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _blender_script import leave, sandbox_user_files  # noqa: E402

sandbox_user_files("blender_ik_bench_")  # before bpy is imported: Blender's user files stay out of home

import bpy  # noqa: E402
import addon_utils  # noqa: E402  (Blender's, importable once bpy is)
import numpy as np  # noqa: E402

import blender_ik_addon  # noqa: E402
from blender_ik_addon import runtime  # noqa: E402
from blender_ik_addon.keys import is_pose_bone_selected, set_pose_bone_selected  # noqa: E402

# In Chains from Selected's order of the metarig's bones; the first 1 and 8 are the smaller cases.
TIPS = ("spine.003", "spine.006", "nose.004", "chin.001", "ear.L.004", "ear.R.004", "brow.B.L.003", "lid.B.L.003",
        "brow.B.R.003", "lid.B.R.003", "brow.T.L.003", "brow.T.R.003", "tongue.002", "hand.L", "f_index.03.L",
        "thumb.03.L", "f_middle.03.L", "f_ring.03.L", "f_pinky.03.L", "hand.R", "f_index.03.R", "thumb.03.R",
        "f_middle.03.R", "f_ring.03.R", "f_pinky.03.R", "foot.L", "foot.R")
COUNTS = (1, 8, 27)


def character(count):
    """A new metarig with ``count`` chains (targets parented to the chains' parent bones). Returns (armature, chain
    settings)."""
    for obj in list(bpy.data.objects):  # the last count's character and targets
        bpy.data.objects.remove(obj)
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.view_layer.objects.active
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in obj.pose.bones:
        set_pose_bone_selected(pose_bone, pose_bone.name in TIPS[:count])
    assert sum(is_pose_bone_selected(pose_bone) for pose_bone in obj.pose.bones) == count
    bpy.ops.blender_ik.chains_from_selected()
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    for chain in obj.blender_ik.chains:
        target, parent = chain.target, obj.pose.bones[chain.tip_bone].parent.parent.parent
        if parent is not None:
            world = target.matrix_world.copy()
            target.parent, target.parent_type, target.parent_bone = obj, "BONE", parent.name
            bpy.context.view_layer.update()
            target.matrix_world = world
    bpy.context.view_layer.update()
    return obj, list(obj.blender_ik.chains)


def use(method, obj, goals):
    """Set the character up for ``method`` (``goals``: each chain's (tip bone, target)): an IK constraint per chain on
    its target ('ik'), with the add-on not registered (its handler's idle cost, 5-10 µs an update, is not Blender's),
    or the add-on registered and the chains live. The constraints are removed for Live, not disabled: a disabled
    constraint still makes its target a dependency of the armature's pose, so moving a target would re-evaluate the
    armature (and make Live re-read it for every chain), which a character animated with Live, which has no IK
    constraints, does not pay (1.4 against 2.8 ms a leaf target's move, 27 chains)."""
    if hasattr(obj, "blender_ik"):
        for chain in obj.blender_ik.chains:
            chain.live = False
    for tip, target in goals:
        pose_bone = obj.pose.bones[tip]
        for constraint in [constraint for constraint in pose_bone.constraints if constraint.type == "IK"]:
            pose_bone.constraints.remove(constraint)
        if method == "ik":
            constraint = pose_bone.constraints.new("IK")
            constraint.target, constraint.chain_count = target, 3
    bpy.context.view_layer.update()
    registered = hasattr(obj, "blender_ik")
    if method == "ik" and registered:
        blender_ik_addon.unregister()
    elif method == "live":
        if not registered:
            blender_ik_addon.register()
        for chain in obj.blender_ik.chains:  # (read again: the items of a collection may move when it is registered)
            chain.live = True
    bpy.context.view_layer.update()


def measure(method, targets, updates):
    update = bpy.context.view_layer.update
    times = np.empty(updates)
    for index in range(updates):
        for target in targets:
            target.location.x += 0.002 if index % 2 else -0.002
        start = time.perf_counter()
        update()
        if method == "live":
            update()
        times[index] = time.perf_counter() - start
    return float(np.median(times))


def check(obj, chains):
    """(farthest tip of a chain whose read-out says 'reached', how many are out of reach) after the last update."""
    bpy.context.view_layer.update()
    farthest, out = 0.0, 0
    for chain in chains:
        if runtime.readout(obj, chain.name).status != "REACHED":
            out += 1
            continue
        tip = obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail
        farthest = max(farthest, (tip - chain.target.matrix_world.translation).length)
    return farthest, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=60, help="target moves per measurement (60)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; the best median counts (5)")
    parser.add_argument("--grid", type=int, default=200,
                        help="the hand's case: a mesh of GRID x GRID vertices the armature deforms (200; 0: skip it)")
    args = parser.parse_args()
    print(f"bpy {bpy.app.version_string}; Rigify's human metarig; median per update (ms), best of {args.rounds} "
          "alternating rounds")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon_utils.enable("rigify", default_set=True)
    for count in COUNTS:
        if not hasattr(bpy.types.Object, "blender_ik"):
            blender_ik_addon.register()
        obj, chains = character(count)
        goals = [(chain.tip_bone, chain.target) for chain in chains]
        moves = {"a leaf target": [goals[-1][1]], "the spine's target": [goals[0][1]],
                 "every target": [target for _, target in goals]}
        best = {}
        for method in ("ik", "live"):  # untimed: first calls set up what later calls reuse
            use(method, obj, goals)
            measure(method, moves["every target"], 5)
        for _ in range(args.rounds):
            for method in ("ik", "live"):
                use(method, obj, goals)
                for what, targets in moves.items():
                    median = measure(method, targets, args.updates)
                    best[method, what] = min(best.get((method, what), float("inf")), median)
        use("live", obj, goals)
        off, out = check(obj, list(obj.blender_ik.chains))
        for what in moves:
            if count == 1 and what != "a leaf target":
                continue  # one chain: all three are the same move
            ik, live = best["ik", what], best["live", what]
            print(f"  {count:2d} chains, {what:19s} IK {ik * 1e3:6.2f}  Live {live * 1e3:6.2f}  {live / ik:5.1f}x")
        print(f"  {count:2d} chains: with Live, the farthest tip said to reach its target is {off:.1e} from it; "
              f"{out} out of reach (a straight limb's target at its tip, moved outward)")
    if args.grid:
        hand_rows(args)
    blender_ik_addon.unregister()


HAND = ("hand.L", "f_index.03.L", "thumb.03.L", "f_middle.03.L", "f_ring.03.L", "f_pinky.03.L")


def hand_rows(args):
    """The left hand's chain and its five fingers' below it, the finger controls under the hand's control (as an IK
    rig has them), the hand's control dragged: Live solves the fingers on bases told from the hand's pose and Blender
    evaluates once an update (the IK constraints: once). Without a mesh, and with a grid of ``args.grid``² vertices
    the armature deforms (envelopes), which every evaluation deforms again."""
    for grid in (0, args.grid):
        if not hasattr(bpy.types.Object, "blender_ik"):
            blender_ik_addon.register()
        global TIPS
        tips, TIPS = TIPS, HAND
        try:
            obj, chains = character(len(HAND))
        finally:
            TIPS = tips
        hand = chains[0].target
        for chain in chains[1:]:
            target = chain.target
            world = target.matrix_world.copy()
            target.parent, target.parent_type = hand, "OBJECT"
            target.matrix_world = world
        if grid:
            bpy.ops.mesh.primitive_grid_add(x_subdivisions=grid, y_subdivisions=grid, size=2.0, location=(0.5, 0, 1.3))
            modifier = bpy.context.active_object.modifiers.new("Armature", "ARMATURE")
            modifier.object, modifier.use_vertex_groups, modifier.use_bone_envelopes = obj, False, True
            bpy.context.view_layer.objects.active = obj
        bpy.context.view_layer.update()
        goals = [(chain.tip_bone, chain.target) for chain in chains]
        best = {}
        for _ in range(args.rounds):
            for method in ("ik", "live"):
                use(method, obj, goals)
                best[method] = min(best.get(method, float("inf")), measure(method, [hand], args.updates))
        what = f"a {grid * grid:,}-vertex mesh deformed" if grid else "no mesh"
        print(f"  the hand and five fingers below it, {what}: IK {best['ik'] * 1e3:6.2f}  Live "
              f"{best['live'] * 1e3:6.2f}  {best['live'] / best['ik']:5.1f}x")


if __name__ == "__main__":
    main()
    leave(0)
