"""Bake chains' IK to rotation keys: validate every chain, sample once, solve each chain in one call,
write all keys in bulk.

The operator (ops.py) and the command-line script (scripts/bake_ik.py, through ops.run_bake) call
:func:`bake_chains`. It takes plain chain descriptions and changes no settings.
"""
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import keys, rotations, runtime, sampling
from .chain import AXES, ChainError, bone_path, evaluate_now, prepare, rotation_path, rotation_values, solve_chain
from .report import compact_frames

INTERPOLATIONS = ("LINEAR", "BEZIER", "CONSTANT")


@dataclass
class ChainBake:
    """What one chain's bake did."""

    spec: object  # the ChainSpec baked
    bones: tuple  # first, middle, tip
    unreachable: list  # frames where the target was out of reach (the chain took the closest pose)
    degenerate: list  # frames whose bend plane was undefined (the previous frame's plane was kept)

    @property
    def name(self):
        return self.spec.label


@dataclass
class BakeResult:
    frames: np.ndarray  # the keyed frames
    chains: list  # ChainBake per chain, in solve order
    direct: bool  # sampled from F-curves without changing the scene's frame
    reasons: list = field(default_factory=list)  # why something was sampled per frame
    seconds: float = 0.0
    live_turned_off: list = field(default_factory=list)  # chains whose Live the operator turned off
    rigs_muted: list = field(default_factory=list)  # chains whose built rig the operator muted

    @property
    def unreachable(self):
        """Frames where any chain was out of reach."""
        return sorted({frame for chain in self.chains for frame in chain.unreachable})

    def summary(self):
        first, last = int(self.frames[0]), int(self.frames[-1])
        text = f"Baked {len(self.frames)} frames ({first}-{last})"
        if len(self.chains) > 1:
            text += f" × {len(self.chains)} chains"
        notes = []
        for chain in self.chains:
            who = f"{chain.name} " if len(self.chains) > 1 else ""
            if chain.unreachable:
                notes.append(f"{who}{len(chain.unreachable)} out of reach ({compact_frames(chain.unreachable, 60)})")
            if chain.degenerate:
                notes.append(f"{who}{len(chain.degenerate)} with an undefined bend plane, kept from the frame "
                             f"before ({compact_frames(chain.degenerate, 60)})")
        text += "; " + "; ".join(notes) if notes else ", all in reach"
        if self.live_turned_off:
            text += f"; Live turned off on {', '.join(self.live_turned_off)} so the keys drive the pose"
        if self.rigs_muted:
            text += f"; the built rig of {', '.join(self.rigs_muted)} muted so the keys show (Build Rig unmutes)"
        return text


def _previous_values(armature, pose_bone, frame):
    """The value the first new key should be continuous with: the bone's existing animation at the
    first baked frame, or its current value when it has none."""
    path = bone_path(pose_bone.name, rotation_path(pose_bone.rotation_mode))
    current = rotation_values(pose_bone)
    curves = [keys.find_fcurve(armature, path, index) for index in range(len(current))]
    if all(curve is not None and len(curve.keyframe_points) for curve in curves):
        return np.array([curve.evaluate(frame) for curve in curves]), path
    return current, path


def _check_samples(spec, frames, target, pole):
    bad = ~np.isfinite(target).all(axis=(1, 2))
    if pole is not None:
        bad |= ~np.isfinite(pole).all(axis=1)
    column, _ = AXES[spec.up_axis]
    bad |= np.linalg.norm(target[:, :3, column], axis=-1) < 1e-12
    if bad.any():
        raise ChainError(f"The target (or pole) has an invalid transform or a zero-scale up axis at frames "
                         f"{compact_frames(frames[bad], 60)}", spec.label)


def bake_chains(scene, armature, specs, frame_start, frame_end, step=1, interpolation="LINEAR", progress=None):
    """Key the chains ``specs`` (ChainSpec) of ``armature`` on every ``step``-th frame of the range.

    Validates every chain first and raises :class:`chain.ChainError` (naming the chain) with nothing
    changed. Each chain's rotation keys in ``[frame_start, frame_end]`` are replaced; keys outside the
    range, and other channels and bones, are kept. Chains below other chains' bones are baked after
    them, on the pose their keys give. ``progress(done, total)`` is called while sampling frame by frame."""
    began = time.perf_counter()
    if step < 1:
        raise ChainError(f"Step must be 1 or more (got {step})")
    if frame_end < frame_start:
        raise ChainError(f"The frame range is empty: start {frame_start} is after end {frame_end}")
    if interpolation not in INTERPOLATIONS:
        raise ChainError(f"Interpolation must be one of {', '.join(INTERPOLATIONS)}")
    if not specs:
        raise ChainError(f"Armature '{armature.name}' has no chain to bake: add one (or enable one)")
    evaluate_now()
    levels = prepare(armature, specs)
    for level in levels:
        for spec, chain in level:
            try:
                sampling.check_chain_not_animated(chain)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
    frames = np.arange(frame_start, frame_end + 1, step)

    baked, direct, reasons = [], True, []
    for depth, level in enumerate(levels):
        moving = {index: "it hangs below a chain baked before it" for index in range(len(level))} if depth else None
        with runtime.paused():
            samples = sampling.sample(scene, armature, level, frames, progress, moving)
        direct &= samples.direct
        reasons += [reason for reason in samples.reasons if reason not in reasons]
        solves = []
        for (spec, chain), target, pole, base in zip(level, samples.targets, samples.poles, samples.bases):
            _check_samples(spec, frames, target, pole)
            try:
                solves.append(solve_chain(chain, base, target, spec, pole))
            except ChainError as error:
                raise error.for_chain(spec.label) from None

        channels, values = [], []
        for (spec, chain), solve in zip(level, solves):
            for pose_bone, local in zip(chain.pose_bones, np.moveaxis(solve.rotations, 1, 0)):
                previous, path = _previous_values(armature, pose_bone, float(frames[0]))
                channel_values = rotations.matrices_to_channels(local, pose_bone.rotation_mode, previous)
                channels += [(path, index, pose_bone.name) for index in range(channel_values.shape[1])]
                values.append(channel_values)
            solution = solve.solution
            baked.append(ChainBake(spec, chain.names, frames[~solution.reachable].tolist(),
                                   frames[solution.degenerate].tolist()))
        keys.write_keys(armature, channels, frames.astype(np.float64), np.concatenate(values, axis=1),
                        interpolation, replace=(frame_start, frame_end))
        # Let the pose show the new keys: re-evaluate the armature's animation only (a frame_set would
        # re-evaluate the whole scene, which in a heavy scene costs more than the bake).
        armature.update_tag(refresh={"TIME"})
        with runtime.paused():
            bpy.context.view_layer.update()

    return BakeResult(frames, baked, direct, reasons, time.perf_counter() - began)


def scene_range(scene):
    """The preview range when it is on, else the scene's range."""
    if scene.use_preview_range:
        return scene.frame_preview_start, scene.frame_preview_end
    return scene.frame_start, scene.frame_end
