"""Bake the chain's IK to rotation keys: sample everything, solve all frames at once, write in bulk.

The operator (ops.py) and the command-line script (scripts/bake_ik.py) both call :func:`bake_chain`.
"""
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import keys, live, rig, rotations, sampling

INTERPOLATIONS = ("LINEAR", "BEZIER", "CONSTANT")


def compact_frames(frames):
    """[3, 4, 5, 9, 11, 12] -> '3-5, 9, 11-12'."""
    parts = []
    frames = [int(f) for f in frames]
    start = previous = None
    for frame in frames + [None]:
        if start is not None and (frame is None or frame != previous + 1):
            parts.append(f"{start}" if start == previous else f"{start}-{previous}")
            start = None
        if frame is not None and start is None:
            start = frame
        previous = frame
    return ", ".join(parts)


@dataclass
class BakeResult:
    frames: np.ndarray  # the keyed frames
    unreachable: list  # frames where the target was out of reach (the chain took the closest pose)
    degenerate: int  # frames whose bend plane was undefined and carried over
    direct: bool  # sampled from F-curves without changing the scene's frame
    reasons: list = field(default_factory=list)  # why something was sampled per frame
    seconds: float = 0.0
    live_turned_off: bool = False  # live mode was on; the bake turned it off so the keys show

    def summary(self):
        first, last = int(self.frames[0]), int(self.frames[-1])
        text = f"Baked {len(self.frames)} frames ({first}-{last})"
        if self.unreachable:
            shown = compact_frames(self.unreachable)
            if len(shown) > 60:
                shown = shown[:57].rsplit(",", 1)[0] + ", ..."
            text += f", {len(self.unreachable)} out of reach ({shown})"
        else:
            text += ", all in reach"
        if self.live_turned_off:
            text += "; Live turned off so the keys drive the chain"
        return text


def _previous_values(armature, pose_bone, frame):
    """The value the first new key should be continuous with: the bone's existing animation at the
    first baked frame, or its current value when it has none."""
    path = rig.bone_path(pose_bone.name, rig.rotation_path(pose_bone.rotation_mode))
    current = rig.rotation_values(pose_bone)
    curves = [keys.find_fcurve(armature, path, index) for index in range(len(current))]
    if all(curve is not None and len(curve.keyframe_points) for curve in curves):
        return np.array([curve.evaluate(frame) for curve in curves]), path
    return current, path


def bake_chain(scene, armature, frame_start, frame_end, step=1, interpolation="LINEAR", progress=None):
    """Key the chain of ``armature`` (its ``blender_ik`` settings) on every ``step``-th frame.

    Validates everything first and raises :class:`rig.RigError` with nothing changed. The chain's
    rotation keys in ``[frame_start, frame_end]`` are replaced; keys outside the range, and other
    channels and bones, are kept. Live mode, if on, is turned off (the keys drive the chain now), and
    an empty tip bone setting is pinned to the chain that was baked. ``progress(done, total)`` is called
    while sampling frame by frame."""
    began = time.perf_counter()
    if step < 1:
        raise rig.RigError(f"Step must be 1 or more (got {step})")
    if frame_end < frame_start:
        raise rig.RigError(f"The frame range is empty: start {frame_start} is after end {frame_end}")
    if interpolation not in INTERPOLATIONS:
        raise rig.RigError(f"Interpolation must be one of {', '.join(INTERPOLATIONS)}")
    settings = armature.blender_ik
    options = rig.Options.from_settings(settings)
    rig.evaluate_now()
    chain = rig.read_chain(armature, settings.tip_bone)
    rig.check_target(chain, settings.target, options, settings.pole)
    sampling.check_chain_not_animated(chain)
    frames = np.arange(frame_start, frame_end + 1, step)
    pole = settings.pole if options.plane == "POLE" else None

    with live.paused():
        samples = sampling.sample(scene, chain, settings.target, pole, frames, progress)
    bad = ~np.isfinite(samples.target).all(axis=(1, 2)) | ~np.isfinite(samples.base).all(axis=(1, 2))
    if pole is not None:
        bad |= ~np.isfinite(samples.pole).all(axis=1)
    column, _ = rig.AXES[options.up_axis]
    bad |= np.linalg.norm(samples.target[:, :3, column], axis=-1) < 1e-12
    if bad.any():
        raise rig.RigError(f"The target (or pole) has an invalid transform or a zero-scale up axis at frames "
                           f"{compact_frames(frames[bad])}")
    solve = rig.solve_chain(chain, samples.base, samples.target, options, samples.pole)

    channels, values = [], []
    for pose_bone, local in zip(chain.pose_bones, np.moveaxis(solve.rotations, 1, 0)):
        previous, path = _previous_values(armature, pose_bone, float(frames[0]))
        channel_values = rotations.matrices_to_channels(local, pose_bone.rotation_mode, previous)
        channels += [(path, index, pose_bone.name) for index in range(channel_values.shape[1])]
        values.append(channel_values)
    keys.write_keys(armature, channels, frames.astype(np.float64), np.concatenate(values, axis=1), interpolation,
                    replace=(frame_start, frame_end))
    rig.pin_tip_bone(settings, chain.names)
    live_was_on = settings.live
    if live_was_on:  # the keys drive the chain now; live solving would hide them
        settings.live = False
    # Let the pose show the new keys at the current frame: re-evaluate the armature's animation only
    # (a frame_set would re-evaluate the whole scene, which in a heavy scene costs more than the bake).
    armature.update_tag(refresh={"TIME"})
    with live.paused():
        bpy.context.view_layer.update()

    solution = solve.solution
    return BakeResult(frames, frames[~solution.reachable].tolist(), int(solution.degenerate.sum()),
                      samples.direct, samples.reasons, time.perf_counter() - began, live_was_on)


def scene_range(scene):
    """The preview range when it is on, else the scene's range."""
    if scene.use_preview_range:
        return scene.frame_preview_start, scene.frame_preview_end
    return scene.frame_start, scene.frame_end
