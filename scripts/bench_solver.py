#!/usr/bin/env python3
"""Solves per second of the 3D three-link solver, single (numpy, and on floats) and batched.

    python scripts/bench_solver.py [--batch 100000] [--repeat 9]

Prints the best of several runs (the machine is shared; the best run is the least disturbed), in wall
time and in this process's CPU time (on a busy machine wall time also counts the turns other processes
take on the cores; CPU time is the solver's own cost), and each figure's ratio to its target: a single
solve under 50 µs (the float path, for a live solve); at least 5 M solves/s batched (a bake). There is
no Blender way to compare with: Blender has no analytic three-link solver, and its IK constraint solves
one pose per depsgraph evaluation (see bench_bake.py for the bake against Blender's own).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from blender_ik_addon.solver import solve_one, solve_three_link  # noqa: E402

SINGLE_TARGET = 50e-6  # seconds per single solve
BATCH_TARGET = 5_000_000  # batched solves per second


def best_times(function, repeat):
    """The best wall time and the best CPU time of ``repeat`` runs."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        cpu = min(cpu, time.process_time() - start_cpu)
        wall = min(wall, time.perf_counter() - start)
    return wall, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n = args.batch
    base = rng.normal(size=(n, 3))
    lengths = rng.uniform(0.1, 2.0, (n, 3))
    target = base + rng.normal(size=(n, 3))
    up = rng.normal(size=(n, 3))

    singles = 2000
    single = best_times(lambda: [solve_three_link(base[i], lengths[i], target[i], up[i]) for i in range(singles)],
                        args.repeat)
    rows = [tuple(map(tuple, array[:singles].tolist())) for array in (base, lengths, target, up)]
    floats = best_times(lambda: [solve_one(*sample) for sample in zip(*rows)], args.repeat)
    batch = best_times(lambda: solve_three_link(base, lengths, target, up), args.repeat)
    for clock, index in (("wall", 0), ("CPU", 1)):
        per_single, per_float, rate = single[index] / singles, floats[index] / singles, n / batch[index]
        print(f"[{clock:4s}] single solve (N=1):       {per_single * 1e6:6.1f} µs per solve; "
              f"target < {SINGLE_TARGET * 1e6:.0f} µs: {SINGLE_TARGET / per_single:.2f}x the target's speed")
        print(f"[{clock:4s}] single solve, floats:     {per_float * 1e6:6.1f} µs per solve (solve_one, Live's path)")
        print(f"[{clock:4s}] batched solve (N={n:,}): {rate:12,.0f} solves/s ({batch[index] * 1e3:.1f} ms); "
              f"target >= {BATCH_TARGET:,.0f}/s: {rate / BATCH_TARGET:.2f}x the target")

if __name__ == "__main__":
    main()
