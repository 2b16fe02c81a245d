#!/usr/bin/env python3
"""Solves per second of the 3D three-link solver, single and batched.

    python scripts/bench_solver.py [--batch 100000] [--repeat 7]

Prints the best of several runs (the machine is shared; the best run is the least disturbed).
Targets: a single solve under 50 µs; at least 2 M solves/s batched.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from blender_ik_addon.solver import solve_three_link  # noqa: E402


def best_time(function, repeat):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n = args.batch
    base = rng.normal(size=(n, 3))
    lengths = rng.uniform(0.1, 2.0, (n, 3))
    target = base + rng.normal(size=(n, 3))
    up = rng.normal(size=(n, 3))

    singles = 2000
    single = best_time(lambda: [solve_three_link(base[i], lengths[i], target[i], up[i]) for i in range(singles)],
                       args.repeat) / singles
    batch = best_time(lambda: solve_three_link(base, lengths, target, up), args.repeat)
    print(f"single solve (N=1):      {single * 1e6:8.1f} µs   ({1 / single:,.0f} solves/s)   target < 50 µs")
    print(f"batched solve (N={n:,}): {batch * 1e3:8.1f} ms   ({n / batch:,.0f} solves/s)   target >= 2,000,000/s")


if __name__ == "__main__":
    main()
