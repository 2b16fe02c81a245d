#!/usr/bin/env python3
"""Draw docs/bend_sides.png: where each Bend setting puts a knee, in each Bend Plane mode (README).

    python scripts/bend_sides.py [OUTPUT.png]

A leg seen from its side (forward is to the right), its rest knee bending forward, reaching for a foot
target whose up axis (the arrow) points forward-down or back-down. The poses are the solver's, with the
settings mapped as the add-on maps them (blender_ik_addon/chain.py).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from blender_ik_addon.solver import solve_three_link  # noqa: E402

BASE = np.array([0.0, 1.0, 0.0])  # (forward, up, sideways)
LENGTHS = np.array([0.45, 0.42, 0.15])
HINGE = np.array([0.0, 0.0, 1.0])  # the rest hinge axis: the knee bends forward in the page's plane
POLE = np.array([-0.6, 0.55, 0.0])  # behind the leg
STYLES = {"REST": ("#1b9e77", "-"), "TOWARD": ("#d95f02", "--"), "AWAY": ("#7570b3", ":")}


def solve(mode, bend, target, up):
    if mode == "PARENT":  # chain.solve_chain: the carried normal; Toward/Away by the side the up axis is on
        wrist = target - LENGTHS[2] * up
        up_side = float(np.dot(np.cross(HINGE, wrist - BASE), up)) >= 0.0
        toward = {"REST": True, "TOWARD": up_side, "AWAY": not up_side}[bend]
        return solve_three_link(BASE, LENGTHS, target, up, plane="NORMAL", normal=HINGE, bend_toward=toward)
    if mode == "POLE":
        return solve_three_link(BASE, LENGTHS, target, up, plane="POLE", pole=POLE, bend_toward=bend != "AWAY")
    # Target Axis: this leg's rest knee is on the side its foot points to, so As Rest Pose means Toward.
    return solve_three_link(BASE, LENGTHS, target, up, plane="TARGET", bend_toward=bend != "AWAY")


def main(output):
    cases = [("forward", np.array([0.15, 0.3, 0.0]), np.array([0.8, -0.6, 0.0])),
             ("back", np.array([0.0, 0.3, 0.0]), np.array([-0.8, -0.6, 0.0]))]
    modes = [("PARENT", "Follow Parent"), ("TARGET", "Target Axis"), ("POLE", "Pole")]
    figure, axes = plt.subplots(len(cases), len(modes), figsize=(9, 6), sharex=True, sharey=True)
    for row, (pointing, target, up) in enumerate(cases):
        up = up / np.linalg.norm(up)
        for column, (mode, title) in enumerate(modes):
            ax = axes[row, column]
            for bend, (colour, line) in STYLES.items():
                joints = solve(mode, bend, target, up).joints
                ax.plot(joints[:, 0], joints[:, 1], line, color=colour, lw=2.5, marker="o", ms=4,
                        label={"REST": "As Rest Pose", "TOWARD": "Toward", "AWAY": "Away"}[bend])
            ax.annotate("", xy=target[:2] + 0.18 * up[:2], xytext=target[:2],
                        arrowprops=dict(arrowstyle="->", color="black", lw=1.5))
            ax.plot(*target[:2], "kx", ms=8)
            if mode == "POLE":
                ax.plot(*POLE[:2], "o", mfc="none", mec="black", ms=9)
                ax.annotate("pole", POLE[:2], xytext=(6, 4), textcoords="offset points", fontsize=8)
            ax.set_title(f"{title}, foot points {pointing}", fontsize=10)
            ax.set_aspect("equal")
            ax.set_xlim(-0.75, 0.75)
            ax.set_ylim(0.1, 1.1)
            ax.set_xticks([])
            ax.set_yticks([])
    axes[0, 0].legend(loc="upper left", fontsize=8, title="Bend", title_fontsize=8)
    figure.suptitle("A leg seen from its side (forward →); the arrow is the target's up axis", fontsize=11)
    figure.tight_layout()
    os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    figure.savefig(output, dpi=90)
    print(output)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "docs", "bend_sides.png"))
