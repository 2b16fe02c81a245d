#!/usr/bin/env python3
"""A figure walks: four limbs set up with Chains from Selected, baked in one call, played back and rendered.

    python scripts/demo.py [--output-dir out/demo] [--frames 120] [--quick]
    blender -b -P scripts/demo.py -- [--output-dir out/demo] [--frames 120] [--quick]

The figure (scripts/scenes.py) gets one chain per hand and foot, each with its own target Empty; the
targets walk two cycles in place (feet stepping, hands swinging), and at the front of each swing a hand
reaches a little beyond the arm. The keys are played back with no solver in the loop and every frame is
measured by what Blender shows: the tip of each limb against its target, the last bone against the
target's Z axis. Writes into the output folder:
  demo.png            the figure at six moments of a cycle (a limb out of reach in red, targets in orange)
  demo_plot.png       per limb and frame: tip error and angle error (out-of-reach frames shaded)
  demo_baked.blend    the baked scene: open it and press play
"""
import argparse
import math
import os
import sys
import time

PROG = "demo.py"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # inside Blender (-P) it is not on the path

from _blender_script import (UserError, blender_message, blender_quiet, in_blender, leave,  # noqa: E402
                             sandbox_user_files, script_arguments)

CYCLES = 2  # walk cycles in the animation
FULL = {"scene": (960, 540, 16), "plot": (1280, 720)}  # (width, height[, Cycles samples])
QUICK = {"scene": (320, 180, 4), "plot": (480, 270)}
BODY, IN_REACH, OUT_OF_REACH, TARGET = (0.36, 0.42, 0.5), (0.18, 0.62, 0.36), (0.85, 0.25, 0.17), (0.95, 0.65, 0.09)


def at_least_20(text):
    if not text.isdigit() or int(text) < 20:
        raise argparse.ArgumentTypeError(f"must be 20 or more, for two walk cycles (got '{text}')")
    return int(text)


def make_parser():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=os.path.join("out", "demo"), metavar="DIR",
                        help="where to write the pictures and demo_baked.blend (default: out/demo)")
    parser.add_argument("--frames", type=at_least_20, default=120, metavar="N", help="frames, 20 or more (120)")
    parser.add_argument("--quick", action="store_true", help="tiny, fast pictures (for tests)")
    return parser


def set_up(bpy, scenes, frames):
    """The figure, a chain and a target per hand and foot (Chains from Selected), the targets walking."""
    from blender_ik_addon.keys import set_pose_bone_selected  # PoseBone.select or Bone.select, by version

    figure = scenes.build_figure()
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in figure.pose.bones:
        set_pose_bone_selected(pose_bone, pose_bone.name in scenes.FIGURE_TIPS)
    with blender_quiet():
        bpy.ops.blender_ik.chains_from_selected()
    bpy.ops.object.mode_set(mode="OBJECT")
    targets = {chain.tip_bone: chain.target for chain in figure.blender_ik.chains}
    scenes.animate_walk(figure, targets, frames, CYCLES)
    return figure, targets


def measure(scene, figure, targets, frames):
    """Play the keys back: per limb and frame, the tip's distance to the target and the angle between
    the last bone and the target's Z axis, from Blender's evaluated pose. Returns ({tip: array} x 2)."""
    import numpy as np

    error, angle = ({tip: np.zeros(len(frames)) for tip in targets} for _ in range(2))
    for index, frame in enumerate(frames):
        scene.frame_set(int(frame))
        for tip, target in targets.items():
            bone = figure.pose.bones[tip]
            head, tail = (np.array(figure.matrix_world @ point) for point in (bone.head, bone.tail))
            up = np.array(target.matrix_world.col[2][:3])
            error[tip][index] = np.linalg.norm(tail - np.array(target.matrix_world.translation))
            angle[tip][index] = math.atan2(np.linalg.norm(np.cross(tail - head, up)), np.dot(tail - head, up))
    return error, angle


def build_picture(bpy, scenes, scene, figure, targets, shown, unreachable, size):
    """The figure as Blender poses it at each ``shown`` frame, each a step further on: the body grey, a
    limb green (red when out of reach), each target a ball with an arrow along its Z axis."""
    from mathutils import Vector

    colours = {key: scenes.material(key, rgb) for key, rgb in
               (("body", BODY), ("in", IN_REACH), ("out", OUT_OF_REACH), ("target", TARGET))}
    limb_of = {name: tip for tip in targets for name in (tip, figure.data.bones[tip].parent.name,
                                                          figure.data.bones[tip].parent.parent.name)}
    points = []
    for place, frame in enumerate(shown):
        scene.frame_set(frame)
        offset = Vector((0.0, -0.8 * place, 0.0))
        bones = [(figure.matrix_world @ b.head + offset, figure.matrix_world @ b.tail + offset,
                  "body" if b.name not in limb_of else "out" if frame in unreachable[limb_of[b.name]] else "in")
                 for b in figure.pose.bones]
        points += [point for head, tail, _ in bones for point in (head, tail)]
        for part in ("body", "in", "out"):
            rods = [(head, tail, 0.035, 0.02) for head, tail, kind in bones if kind == part]
            scenes.mesh_object(f"{part} at {frame}", colours[part], rods, balls=[(rod[0], 0.035) for rod in rods])
        goals = [(t.matrix_world.translation + offset, t.matrix_world.col[2].to_3d()) for t in targets.values()]
        scenes.mesh_object(f"targets at {frame}", colours["target"], balls=[(at, 0.03) for at, _ in goals],
                           rods=[(at, at + 0.12 * up, 0.008, 0.008) for at, up in goals])
    scenes.add_stage(scene, sum(points, Vector()) / len(points))
    scenes.ortho_camera(scene, points, (1.0, 0.45, -0.35), size)  # from the figure's front right, above


def plot(path, size, frames, chains, error, angle):
    """Per limb, per frame: the tip's distance to its target and the last bone's angle to the target's Z."""
    import numpy as np
    from matplotlib.figure import Figure  # no pyplot: no GUI backend, renders with Agg

    figure = Figure(figsize=(12.8, 7.2), dpi=size[0] / 12.8, layout="constrained")
    axes = figure.subplots(2, 2, sharex=True, sharey=True).ravel()
    floor = 1e-6  # exact zeros, drawn on the bottom of the log scale
    for ax, chain in zip(axes, chains):
        tip = chain.bones[2]
        for frame in chain.unreachable:
            ax.axvspan(frame - 0.5, frame + 0.5, color="#fbe3df", linewidth=0)
        ax.semilogy(frames, np.maximum(error[tip] * 1e3, floor), ".-", color="#2e7d4f", label="tip to target (mm)")
        ax.semilogy(frames, np.maximum(angle[tip] * 1e6, floor), ".-", color="#4f6d8f",
                    label="last bone to the target's Z (µrad)")
        ax.set_title(f"{chain.name}: {len(chain.unreachable)} of {len(frames)} frames out of reach (shaded)")
        ax.grid(True, which="major", color="#dcdfe4")
    axes[0].legend(loc="upper right")
    for ax in (axes[0], axes[2]):
        ax.set_ylabel("error (exactly 0 drawn at 1e-6)")
    for ax in (axes[2], axes[3]):
        ax.set_xlabel("frame")
    figure.suptitle("Baked keys played back by Blender, no solver in the loop")
    figure.savefig(path)


def run(bpy, args, sizes):
    import numpy as np

    import scenes
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature

    output_dir = os.path.abspath(args.output_dir)
    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot create {args.output_dir}: {error.strerror or error}") from None
    paths = {name: os.path.join(output_dir, name) for name in ("demo.png", "demo_plot.png", "demo_baked.blend")}
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, args.frames
    figure, targets = set_up(bpy, scenes, args.frames)

    try:  # every enabled chain in one call: what the Bake button (bpy.ops.blender_ik.bake) runs
        result = bake_armature(scene, figure, frame_start=1, frame_end=args.frames)
    except ChainError as error:
        raise UserError(f"the bake failed: {error}") from None
    frames = result.frames
    tip_error, angle_error = measure(scene, figure, targets, frames)
    scene.frame_set(1)
    try:
        with blender_quiet():
            bpy.ops.wm.save_as_mainfile(filepath=paths["demo_baked.blend"], copy=True)
    except RuntimeError as error:
        raise UserError(f"cannot write {paths['demo_baked.blend']}: {blender_message(error)}") from None

    unreachable = {chain.bones[2]: set(chain.unreachable) for chain in result.chains}
    period = len(frames) / CYCLES  # six moments of the first cycle, two of them a hand at its farthest
    shown = [int(frames[round(period * (1 + 2 * k) / 12)]) for k in range(6)]
    width, height, samples = sizes["scene"]
    build_picture(bpy, scenes, scene, figure, targets, shown, unreachable, (width, height))
    seconds = render(bpy, scene, paths["demo.png"], width, height, samples)
    plot(paths["demo_plot.png"], sizes["plot"], frames, result.chains, tip_error, angle_error)

    print(result.summary() + f", in {result.seconds * 1000:.1f} ms")
    print("Played back by Blender (in reach: tip to target; all frames: last bone to the target's Z):")
    for chain in result.chains:
        tip = chain.bones[2]
        reached = ~np.isin(frames, chain.unreachable)
        line = (f"  {chain.name:7s} {int(reached.sum())} in reach, max tip error "
                f"{tip_error[tip][reached].max(initial=0.0) * 1e3:.2g} mm, "
                f"max angle error {angle_error[tip].max() * 1e6:.2g} µrad")
        if chain.unreachable:
            line += (f"; {len(chain.unreachable)} out of reach, tip up to "
                     f"{tip_error[tip][~reached].max() * 1e3:.0f} mm short")
        print(line)
    print(f"Rendered with Cycles on the CPU: picture {width}x{height} in {seconds:.1f} s; plot by matplotlib")
    for name, what in (("demo.png", f"the figure at frames {', '.join(map(str, shown))}"),
                       ("demo_plot.png", "per limb and frame: tip error and angle error"),
                       ("demo_baked.blend", "the baked scene (open it and press play)")):
        shown_path = os.path.relpath(paths[name])
        print(f"  {shown_path if not shown_path.startswith('..') else paths[name]}   {what}")


def render(bpy, scene, path, width, height, samples):
    """Cycles on the CPU: needs no GPU and no display."""
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples = "CPU", samples
    scene.cycles.use_adaptive_sampling = scene.cycles.use_denoising = False  # the denoiser costs more than it saves
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = width, height, 100
    scene.render.image_settings.file_format = "PNG"
    scene.view_settings.view_transform = "Standard"  # colours as chosen
    scene.render.filepath = path
    began = time.perf_counter()
    try:
        with blender_quiet():
            bpy.ops.render.render(write_still=True)
    except RuntimeError as error:
        raise UserError(f"cannot render {path}: {blender_message(error)}") from None
    return time.perf_counter() - began


def main(argv=None):
    blender = in_blender()
    args = make_parser().parse_args(script_arguments(sys.argv if argv is None else argv, blender))
    sandbox_user_files("blender_ik_demo_")
    import bpy

    import blender_ik_addon

    with blender_quiet():
        bpy.ops.wm.read_factory_settings(use_empty=True)
    try:
        blender_ik_addon.register()
    except (ValueError, RuntimeError) as error:
        print(f"{PROG}: error: cannot register the add-on: {blender_message(error)}", file=sys.stderr)
        return 1
    try:
        run(bpy, args, QUICK if args.quick else FULL)
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 1
    finally:
        blender_ik_addon.unregister()  # a Python handler left in bpy.app.handlers crashes bpy 4.2 at exit
    return 0


if __name__ == "__main__":
    leave(main())
