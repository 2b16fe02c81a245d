"""Bake chains' IK to rotation keys: validate every chain, sample once, solve each chain in one call,
write all keys in bulk.

The operator (ops.py) and the command-line script (scripts/bake_ik.py, through ops.run_bake) call
:func:`bake_chains`. It takes plain chain descriptions and changes no settings.
"""
import functools
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import keys, native_rig, rotations, runtime, sampling
from .chain import (AXES, ChainError, ChainSpec, GoalMoved, bone_path, evaluate_now, moves_with_chain, posers_read_once,
                    prepare, rotation_path, rotation_values, set_rotation, solve_chain, verify_goals, verify_pose)
from .report import compact_frames, frame_span

INTERPOLATIONS = ("LINEAR", "BEZIER", "CONSTANT")
# What the bake writes: keys, or samples (one 16-byte point a frame, played linearly between frames; see keys.py).
OUTPUTS = ("KEYS", "SAMPLES")
# What one frame of one chain costs while baking, almost all of it Blender's own keys and their evaluated
# copy: 1.8 KB at peak, measured (100,000 frames of one quaternion chain, bpy 5.0; the bake works in blocks,
# see BLOCK_FRAMES), with a margin.
# A bake larger than the budget is refused with its estimate.
BYTES_PER_CHAIN_FRAME = 4096
# The same for a bake to samples (a sample takes 16 bytes against a key's 72): 0.44 KB at peak, measured the same
# way (scripts/bench_memory.py), with a margin.
BYTES_PER_SAMPLED_CHAIN_FRAME = 1024
MEMORY_BUDGET = 2 << 30
# Frames sampled, solved and converted at a time: the float64 arrays of a block stay a few MiB whatever the
# range; only the keys' float32 values span it.
BLOCK_FRAMES = 8192


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
    rigs_linked: bool = False  # those rigs' bones are a library's: Build Rig unmutes them, cannot rebuild them
    # Chains not baked that follow the baked ones: (armature name, or None for the baked one's; chain name) (see ops)
    left_following: list = field(default_factory=list)
    output: str = "KEYS"  # what was written: one of OUTPUTS

    @property
    def unreachable(self):
        """Frames where any chain was out of reach."""
        return sorted({frame for chain in self.chains for frame in chain.unreachable})

    def summary(self):
        first, last = int(self.frames[0]), int(self.frames[-1])
        count = len(self.frames)
        text = f"Baked {count} frame{'' if count == 1 else 's'} ({frame_span(first, last)})"
        if self.output == "SAMPLES":
            text += " to samples"
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
        if self.left_following:  # their keys were solved on the baked chains' old pose
            one = len(self.left_following) == 1
            names = [name if owner is None else f"{name} (armature '{owner}')" for owner, name in self.left_following]
            text += (f"; {', '.join(names)} follow{'s' if one else ''} the baked chains and "
                     f"{'was' if one else 'were'} not baked: bake {'it' if one else 'them'} too, or "
                     f"{'its' if one else 'their'} keys play off {'its' if one else 'their'} goals")
        if self.rigs_muted:
            how = ("Build Rig unmutes it; the rig is the library's" if self.rigs_linked else "Build Rig unmutes")
            text += f"; the built rig of {', '.join(self.rigs_muted)} muted so the keys show ({how})"
        return text


def _previous_values(fcurves, pose_bone, frame):
    """The value the first new key should be continuous with: the bone's existing animation at the
    first baked frame, or its current value when it has none. ``fcurves``: the armature's F-curves by
    (data path, index)."""
    path = bone_path(pose_bone.name, rotation_path(pose_bone.rotation_mode))
    current = rotation_values(pose_bone)
    curves = [fcurves.get((path, index)) for index in range(len(current))]
    if all(curve is not None and (len(curve.keyframe_points) or keys.has_samples(curve)) for curve in curves):
        return np.array([curve.evaluate(frame) for curve in curves]), path
    return current, path


def _invalid_samples(spec, target, pole):
    """Which samples have a non-finite target (or pole) or a zero-scale up (or roll) axis."""
    def not_finite(matrices, axes):  # sample by sample only when some value is not finite (rare)
        finite = np.isfinite(matrices)
        return np.zeros(len(matrices), dtype=bool) if finite.all() else ~finite.all(axis=axes)

    bad = not_finite(target, (1, 2))
    if pole is not None:
        bad |= not_finite(pole, 1)
    for axis in (spec.up_axis, spec.roll_axis):
        if axis != "NONE":
            # np.linalg.norm's sum, term by term in its order: its reduction over an axis of 3 strided by a matrix
            # row costs 0.1 ms at 3,000 frames (the matrices frame by frame, as sampled), this 15 µs.
            x, y, z = (target[:, row, AXES[axis][0]] for row in range(3))
            bad |= np.sqrt(x * x + y * y + z * z) < 1e-12
    return bad


def check_frame_order(frame_start, frame_end):
    """Refuse a range whose start is after its end."""
    if frame_end < frame_start:
        raise ChainError(f"The frame range is empty: start {frame_start} is after end {frame_end}")


def check_frame_limits(scene, frame_start, frame_end, verb="bake"):
    """Refuse frames Blender cannot show (it would clamp them onto its last frame); ``verb``: what the message asks to
    do with a range inside them."""
    limits = scene.bl_rna.properties["frame_current"]
    if frame_start < limits.hard_min or frame_end > limits.hard_max:
        raise ChainError(f"Frames {frame_span(frame_start, frame_end)} go beyond Blender's frame limits "
                         f"({limits.hard_min} to {limits.hard_max}); {verb} a range inside them")


def keyed_frames(frame_start, frame_end, step):
    """Every ``step``-th frame of the range, and its last (its old keys go too, and nothing else would pose it)."""
    frames = np.arange(frame_start, frame_end + 1, step)
    return frames if frames[-1] == frame_end else np.append(frames, frame_end)


def _check_range(scene, frame_start, frame_end, step, chains, output="KEYS"):
    """Refuse frames Blender cannot show and a bake too large to hold in memory."""
    check_frame_limits(scene, frame_start, frame_end)
    if output == "SAMPLES" and frame_end - frame_start + 1 > keys.MAX_SAMPLES:
        raise ChainError(f"Frames {frame_span(frame_start, frame_end)} are more than an F-curve of samples holds "
                         f"({keys.MAX_SAMPLES}); bake a shorter range, or bake keys")
    per_chain_frame = BYTES_PER_SAMPLED_CHAIN_FRAME if output == "SAMPLES" else BYTES_PER_CHAIN_FRAME
    estimate = ((frame_end - frame_start) // step + 1) * chains * per_chain_frame
    if estimate > MEMORY_BUDGET:
        way_out = ("a shorter range or fewer chains at a time" if output == "SAMPLES"
                   else "a shorter range, a larger step, fewer chains at a time, or to samples")
        raise ChainError(f"Baking {(frame_end - frame_start) // step + 1} frames × {chains} chain(s) would need about "
                         f"{estimate / (1 << 30):.1f} GB of memory (more than {MEMORY_BUDGET / (1 << 30):.0f} GB); "
                         f"bake {way_out}")


def _check_keys(scene, armature, levels, allow_shared, output="KEYS", frame_range=None):
    """Refuse keys that would not be kept, or would not play back as written (see keys.py), and keys or samples
    the ``output`` over ``frame_range`` would lose, before any change. Returns the rotation paths the bake writes."""
    name = f"Armature '{armature.name}'"
    if scene.render.frame_map_old != scene.render.frame_map_new:
        raise ChainError(f"The scene remaps time (Time Stretching {scene.render.frame_map_old} -> "
                         f"{scene.render.frame_map_new}), so keys would play at other frames than they were baked "
                         "for; set Time Stretching Old and New to the same value (Output properties)")
    for problem in keys.playback_problems(armature):
        raise ChainError(f"{name}: {problem}")
    problem = keys.action_problem(armature)
    if problem:
        raise ChainError(f"{name}: {problem}")
    others = keys.other_users(armature)
    if others and not allow_shared:
        action = armature.animation_data.action
        raise ChainError(f"The action '{action.name}' of armature '{armature.name}' is also played by "
                         f"{', '.join(map(repr, others))}, whose "
                         "animation the new keys would change too; give the armature its own action (or bake "
                         "with Key Shared Action on)")
    bones = {}
    for level in levels:
        for spec, chain in level:
            for pose_bone in chain.pose_bones:
                bones[bone_path(pose_bone.name, rotation_path(pose_bone.rotation_mode))] = (spec, pose_bone.name)
    problem = frame_range and keys.span_problem(armature, bones, frame_range)
    if problem:
        raise ChainError(f"{name}: {problem}")
    for path, reason in frame_range and keys.mode_problems(armature, bones, frame_range) or ():
        spec, bone_name = bones[path]
        raise ChainError(f"Bone '{bone_name}' {reason}", spec.label)
    problems = keys.channel_problems(armature, bones)
    problems += keys.output_problems(armature, bones, output == "SAMPLES", frame_range)
    for path, index, reason in problems:
        spec, bone_name = bones[path]
        raise ChainError(f"The F-curve {path.rsplit('.', 1)[-1]}[{index}] of bone '{bone_name}' {reason}",
                         spec.label)
    return list(bones)


# Up to this many frames, a list of floats costs less than numpy's calls (issue 11: a short bake's fixed cost).
_FEW_FRAMES = 32


def _check_frame(scene, frames):
    """The index of the baked frame to check the result at: the current frame if it was baked, else the
    nearest baked frame."""
    current = scene.frame_current + scene.frame_subframe
    if len(frames) <= _FEW_FRAMES:  # the same distances and the same first nearest, without numpy's cost per call
        distances = [abs(frame - current) for frame in frames.tolist()]
        return distances.index(min(distances))
    return int(np.argmin(np.abs(frames - current)))


def _verify(scene, armature, checks, frames, index):
    """The self-check: read back the pose Blender evaluates from the new keys at one baked frame, ``frames[index]``
    (:func:`_check_frame`'s), and compare it with the solve. At the current frame only the armature was re-evaluated;
    another frame is set and set back, through every frame from a simulation's start (the new keys may have reset its
    cache: a cape the body deforms)."""
    frame = int(frames[index])
    elsewhere = frame != scene.frame_current or scene.frame_subframe != 0.0
    current, subframe = scene.frame_current, scene.frame_subframe
    try:
        if elsewhere:
            # Only goals read frame by frame can follow a simulation (those read from their keys follow nothing):
            # otherwise no look through the scene's objects for one (1 ms among 3,000 objects).
            stepped = ([frame] if all(goals is None for *_, goals in checks)
                       else sampling.sweep(scene, [frame]))
            with runtime.paused():
                for value in stepped:
                    scene.frame_set(value)
        for spec, chain, solution, goals in checks:
            try:
                verify_pose(chain, solution, 0)
                if goals is not None:
                    verify_goals(chain, spec, solution, goals)
            except ChainError as error:
                message = error.message
                early = [start for start, _ in sampling.simulations(scene) if start < 0]
                if early and isinstance(error, GoalMoved):
                    # Blender does not replay a simulation from before frame 0 the same way once the keys are
                    # written: the goal that follows it moved, not one that follows the chain.
                    moved, _, rest = message.partition(": it follows ")
                    message = (f"{moved}: the scene simulates from frame {min(early)}, before frame 0, with no bake, "
                               "which Blender does not replay the same way once the keys are written (bake it first: "
                               "Bake All Dynamics, in the Rigid Body World's or the physics' Cache); or it follows "
                               f"{rest}")
                raise type(error)(f"At frame {frame}: {message}".replace("nothing was changed",
                                                                         "the keys were put back as they were"),
                                  spec.label) from None
    finally:
        if elsewhere:
            with runtime.paused():
                sampling.set_frame(scene, current, subframe)


def _verify_settled(scene, armature, levels, checks, frames, index, baked, bake_level, followers=()):
    """:func:`_verify`; a chain whose goal moved, among several, is baked again after the others (``bake_level(depth,
    level)`` bakes a level, adding to ``checks`` and ``baked``), its goals then read frame by frame on their keys:
    another chain's pose may move it through geometry, which the order of chains does not follow (a target hung from a
    cuff that a Hook on the other hand shapes), with the chains of the levels after its own (a finger below that hand
    was baked on its old keys). ``followers``: the chains whose goal follows geometry the armature deforms
    (:func:`_geometry_followers`), which the first pass baked after the others of their level: baked again so, one
    round fewer than there are of them, before the check (the check's one frame may show another chain's keys where
    its old pose was, a Solve at that frame, the other frames not). Then, once per chain, a goal the check finds moved
    is baked again the same way; one that moves again (on the chain's own skin) is refused."""
    retried, first = set(), list(levels)

    def bake_again(label):
        depth = next(depth for depth, level in enumerate(first) for spec, _ in level if spec.label == label)
        again = [[pair for pair in first[depth] if pair[0].label == label], *first[depth + 1:]]
        labels = {spec.label for level in again for spec, _ in level}
        checks[:] = [check for check in checks if check[0].label not in labels]
        baked[:] = [bake for bake in baked if bake.spec.label not in labels]
        for level in again:
            levels.append(level)
            bake_level(len(levels) - 1, level)

    # One follower may follow another's cuff (C's goal on B's, B's on A's), baked before it in the list: each round
    # after the first pass settles one more link of that, whatever the list's order; and one more when the first pass
    # baked another chain after a follower, which may move its goal (a finger on the other hand hooking its cuff).
    for _ in range(len(followers) - 1 + _baked_after_followers(first, followers)):
        for label in followers:
            bake_again(label)
    while True:
        try:
            _verify(scene, armature, checks, frames, index)
            return
        except GoalMoved as error:
            known = any(spec.label == error.chain for level in first for spec, _ in level)
            if not known or error.chain in retried or sum(map(len, first)) == 1:
                raise
            retried.add(error.chain)
            bake_again(error.chain)


def _geometry_followers(armature, levels):
    """The labels of the chains of a bake of several (``levels``: :func:`chain.order`'s) whose target or pole follows
    geometry the armature deforms (native_rig.deformed_source, with every chain's first bone: a cage or hook whose
    handle another chain's hand carries counts too, which makes no loop for a rig), in list order. The chains' order
    follows bones, parents, constraints and drivers, not geometry: another chain's pose may move such a goal."""
    pairs = [pair for level in levels for pair in level]
    if len(pairs) < 2:
        return []
    posed = {chain.names[0] for _, chain in pairs}
    return [spec.label for spec, chain in pairs
            if any(native_rig.deformed_source(armature, obj, chain.names[0], bone_name, posed) is not None
                   for _, obj, bone_name in spec.goals())]


def _followers_last(levels, followers):
    """``levels`` with each level's ``followers`` baked after the level's other chains, one level each (their goals
    then read frame by frame on the keys before them), and before the levels below."""
    if not followers:
        return levels
    split = []
    for level in levels:
        split += [part for part in [[pair for pair in level if pair[0].label not in followers]] if part]
        split += [[pair] for pair in level if pair[0].label in followers]
    return split


def _baked_after_followers(levels, followers):
    """Whether ``levels`` (:func:`_followers_last`'s) bake after a follower a chain that is no follower and hangs below
    none of them, nor its goals (a finger on another chain's hand, in a level below the follower's): its pose may move
    the follower's goal through geometry, read on its old keys. Chains below a follower are baked again with it."""
    pairs = [pair for level in levels for pair in level]
    first = next((place for place, (spec, _) in enumerate(pairs) if spec.label in followers), len(pairs))
    ahead = [chain for spec, chain in pairs[:first + 1] if spec.label in followers]
    for spec, chain in pairs[first + 1:]:
        if spec.label in followers:
            ahead.append(chain)
        elif not any(moves_with_chain(follower, obj, bone_name) is not None for follower in ahead
                     for obj, bone_name in [(chain.armature, chain.names[0])]
                     + [(obj, bone_name) for _, obj, bone_name in spec.goals()]):
            return True
    return False


def _show_keys(armature):
    """Let the pose show the new keys: re-evaluate the armature's animation only (a frame_set would
    re-evaluate the whole scene, which in a heavy scene costs more than the bake)."""
    armature.update_tag(refresh={"TIME"})
    with runtime.paused():
        bpy.context.view_layer.update()


def _blocks(count):
    return [slice(start, min(start + BLOCK_FRAMES, count)) for start in range(0, count, BLOCK_FRAMES)]


def _bake_level(scene, armature, level, frames, check_index, depth, progress, baked, known_fcurves=None):
    """Sample, solve and convert one level of chains block by block. Returns the channels, their (F, channels)
    float32 values, whether the sampling was direct, why not, and what the self-check needs. ``known_fcurves``:
    the (data path, index) of the F-curves the armature had, when the bake removes no datablock of its own: then,
    if the level's channels are all among them (no F-curve to create), the sampling makes no datablock either, and
    the bake leaves Blender no dependency relations to rebuild.

    Each block continues the one before exactly as one whole-range pass would: each bone's last channel
    values are the next block's ``previous`` and each chain's last defined bend plane its
    ``fallback_normal``. Invalid samples of every block are collected and refused before any key is written."""
    count = len(frames)
    moving = {index: "it hangs below a chain baked before it" for index in range(len(level))} if depth else None
    layout, previous, width = [], [], 0  # per chain: per bone, (first column, channel count)
    channels = []
    fcurves = {}
    for fcurve in keys.object_fcurves(armature):  # the first of each, as keys.find_fcurve finds it
        fcurves.setdefault((fcurve.data_path, fcurve.array_index), fcurve)
    for spec, chain in level:
        columns = []
        for pose_bone in chain.pose_bones:
            before, path = _previous_values(fcurves, pose_bone, float(frames[0]))
            size = rotations.channel_count(pose_bone.rotation_mode)
            channels += [(path, index, pose_bone.name) for index in range(size)]
            columns.append((width, size))
            previous.append(before)
            width += size
        layout.append(columns)
    values = np.empty((count, width), dtype=np.float32)
    keep_data = known_fcurves is not None and all((path, index) in known_fcurves for path, index, _ in channels)
    fallback = [None] * len(level)
    unreachable = [[] for _ in level]
    degenerate = [[] for _ in level]
    bad = [[] for _ in level]
    checks = [None] * len(level)
    direct, reasons = True, []
    for block in _blocks(count):
        block_frames = frames[block]
        report = None if progress is None else (
            lambda done, _total, offset=block.start: progress(offset + done, count))
        with runtime.paused():
            samples = sampling.sample(scene, armature, level, block_frames, report, moving, keep_data)
        direct &= samples.direct
        reasons += [reason for reason in samples.reasons if reason not in reasons]
        for position, ((spec, chain), target, pole) in enumerate(zip(level, samples.targets, samples.poles)):
            invalid = _invalid_samples(spec, target, pole)
            if invalid.any():
                bad[position].append(block_frames[invalid])
        if any(bad):
            continue  # refused below; the later blocks only add to the frames named
        bone = 0
        for position, ((spec, chain), target, pole, base) in enumerate(
                zip(level, samples.targets, samples.poles, samples.bases)):
            if block.start <= check_index < block.stop:
                local = check_index - block.start
                # Goals read frame by frame may follow what the chain moves (a mesh it deforms): the self-check finds
                # them where they were read. Those read from their keys follow nothing (a key edited and not keyed
                # yet shows its edit until the frame changes, where the bake reads the key).
                goals = None if samples.direct else (target[local].tolist(),
                                                     None if pole is None else pole[local].tolist())
            try:
                solve = solve_chain(chain, base, target, spec, pole, fallback_normal=fallback[position],
                                    sample_frames=block_frames)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
            del target, pole, base
            solution = solve.solution
            defined = np.flatnonzero(~solution.degenerate)
            if len(defined):
                fallback[position] = solution.normal[defined[-1]].copy()
            unreachable[position] += block_frames[~solution.reachable].tolist()
            degenerate[position] += block_frames[solution.degenerate].tolist()
            if block.start <= check_index < block.stop:
                checks[position] = (spec, chain, type(solution)(*(field[local:local + 1] for field in solution)), goals)
            modes = [pose_bone.rotation_mode for pose_bone in chain.pose_bones]
            converted = rotations.bones_to_channels(solve.rotations, modes, previous[bone:bone + len(modes)])
            for bone_values, (column, size) in zip(converted, layout[position]):
                values[block, column:column + size] = bone_values
                previous[bone] = bone_values[-1].copy()
                bone += 1
            del solve, solution
        del samples
    for (spec, _), frames_bad in zip(level, bad):
        if frames_bad:
            axes = "up axis" if spec.roll_axis == "NONE" else "up or roll axis"
            raise ChainError(f"The target (or pole) has an invalid transform or a zero-scale {axes} at frames "
                             f"{compact_frames(np.concatenate(frames_bad), 60)}", spec.label)
    for (spec, chain), lost, flat in zip(level, unreachable, degenerate):
        baked.append(ChainBake(spec, chain.names, lost, flat))
    return channels, values, direct, reasons, checks


def check_scene(scene):
    """A bake reads and checks what Blender evaluates, which is the window's scene (its view layer) only: another
    scene's frame changes move nothing the bake reads, so its goals would be read where they stand."""
    current = bpy.context.scene
    if scene != current:
        raise ChainError(f"Scene '{scene.name}' is not the scene Blender evaluates ('{current.name}'), so a bake "
                         f"cannot read it frame by frame: make it the window's scene first (window.scene = "
                         f"bpy.data.scenes['{scene.name}']), or bake the scene '{current.name}'")


def check_armature(armature):
    """A script's bake is of an armature object (a mesh, or a chain list, would fail deep inside with a traceback)."""
    if not isinstance(armature, bpy.types.Object) or armature.type != "ARMATURE":
        name = getattr(armature, "name", None)
        raise ChainError(f"{repr(name) if isinstance(name, str) else repr(armature)} is not an armature object: bake "
                         "the armature whose chains these are")


def check_specs(specs, verb="bake"):
    """Refuse chains a script describes as anything but ChainSpec values (a bake's, or with ``verb`` 'snap' a range
    Snap Target's)."""
    if not all(isinstance(spec, ChainSpec) for spec in specs):
        raise ChainError(f"Chains to {verb} are given as ChainSpec values: props.chain_spec(chain_settings) makes one "
                         f"from a chain of the armature's list (or {verb} the list itself with ops.{verb}_armature)")


def _check_whole(what, value):
    """Keys go on whole frames: a script's 1.5 would otherwise reach the key writing (subframe keys, or an internal
    error), and NaN the frame arithmetic."""
    try:
        whole = not isinstance(value, bool) and float(value).is_integer()
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise ChainError(f"The {what} must be a whole number of frames (got {value!r})")


def _reading_posers_once(bake):
    """Run a bake with the armature's IK constraints read once (see chain.posers_read_once)."""
    @functools.wraps(bake)
    def baking(scene, armature, *args, **kwargs):
        check_armature(armature)
        with posers_read_once(armature):
            return bake(scene, armature, *args, **kwargs)
    return baking


def check_frames(frame_start, frame_end, step, interpolation):
    """Refuse a range, step or interpolation a script gives that keys cannot be made on (Bake's and the range Snap
    Target's)."""
    for what, value in (("start frame", frame_start), ("end frame", frame_end), ("step", step)):
        _check_whole(what, value)
    if step < 1:
        raise ChainError(f"Step must be 1 or more (got {step})")
    check_frame_order(frame_start, frame_end)
    if interpolation not in INTERPOLATIONS:
        raise ChainError(f"Interpolation must be one of {', '.join(INTERPOLATIONS)}")


@_reading_posers_once
def bake_chains(scene, armature, specs, frame_start, frame_end, step=1, interpolation="LINEAR", progress=None,
                allow_shared=False, output="KEYS"):
    """Key the chains ``specs`` (ChainSpec values, or one ChainSpec) of ``armature`` on every ``step``-th frame of the
    range.

    Validates every chain first and raises :class:`chain.ChainError` (naming the chain) with nothing
    changed. Each chain's rotation keys in ``[frame_start, frame_end]`` are replaced; keys outside the
    range, and other channels and bones, are kept. Chains below other chains' bones are baked after
    them, on the pose their keys give. ``progress(done, total)`` is called while sampling frame by frame.

    Keys that would not be kept or not play as written are refused (a locked, muted or modified F-curve,
    a linked action, NLA tweak mode, a blended action, remapped time); an action (or slot) that other
    IDs play too only with ``allow_shared``. After writing, the pose Blender evaluates from the keys is
    compared with the solve at the current frame (or the nearest baked one); if something in the scene
    changes it, the keys and the pose are put back exactly as they were and ChainError says so; any other error
    once keys are written puts them back too, then propagates.

    ``output`` 'SAMPLES' writes samples instead of keys (a quarter of the memory; see keys.write_samples): one per
    frame, played linearly between frames, so only with step 1 and 'LINEAR' interpolation. Each channel's F-curve
    then holds the samples and nothing else: a channel with keys or samples outside the range is refused."""
    began = time.perf_counter()
    # One ChainSpec is that chain (a named tuple: list() made its fields the chains, refused as not ChainSpec values).
    specs = [specs] if isinstance(specs, ChainSpec) else list(specs or ())
    check_specs(specs)
    check_frames(frame_start, frame_end, step, interpolation)
    if output not in OUTPUTS:
        raise ChainError(f"Output must be one of {', '.join(OUTPUTS)}")
    if output == "SAMPLES" and step != 1:
        raise ChainError(f"Samples are one per frame: bake them with step 1 (got {step}), or bake keys")
    if output == "SAMPLES" and interpolation != "LINEAR":
        raise ChainError(f"Samples play linearly between frames: bake them with Linear interpolation (got "
                         f"{interpolation.title()}), or bake keys")
    if not specs:
        raise ChainError(f"Armature '{armature.name}' has no chain to bake: add one (or enable one)")
    check_scene(scene)
    _check_range(scene, frame_start, frame_end, step, len(specs), output)
    if output == "SAMPLES" and frame_start < 0:
        # Blender finds the sample before a time by truncating it toward zero: between negative frames it plays the
        # next frame's samples (at -5.5 the pose of -4.5), and between the last two of a range ending at 0 or before
        # it reads past the F-curve's end.
        raise ChainError(f"Blender plays samples between negative frames a frame off (frames "
                         f"{frame_span(frame_start, min(frame_end, 0))}: motion blur and subframes show the next frame's "
                         "pose): bake keys, or samples from frame 0 on")
    evaluate_now()
    # What changes from frame to frame (the target's scale, the armature's) is checked on the baked frames.
    levels = prepare(armature, specs, now=False)
    followers = _geometry_followers(armature, levels)
    levels = _followers_last(levels, followers)
    curves, still = sampling.PlayedCurves(armature), set()
    for level in levels:
        for spec, chain in level:
            try:
                sampling.check_chain_not_animated(chain, curves)
                sampling.check_rotation_modes_still(spec, chain, still)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
    paths = _check_keys(scene, armature, levels, allow_shared, output, (frame_start, frame_end))
    frames = keyed_frames(frame_start, frame_end, step)

    bones = [pose_bone for level in levels for _, chain in level for pose_bone in chain.pose_bones]
    pose_before = [rotation_values(pose_bone) for pose_bone in bones]
    written = False
    baked, direct, reasons, checks = [], True, [], []
    check_index = _check_frame(scene, frames)
    # Removing a datablock makes Blender rebuild the scene's dependency relations at the next update: the
    # throwaway action copies (the sampling's and the snapshot's) go after the last one, together.
    with keys.removals_deferred() as remove_held:
        snapshot = keys.snapshot_channels(armature, paths)  # its copy, if any, is discarded below whatever happens
        def bake_level(depth, level):
            nonlocal direct, written
            channels, values, level_direct, level_reasons, level_checks = _bake_level(
                scene, armature, level, frames, check_index, depth, progress, baked,
                snapshot["fcurves"] if snapshot["copy"] is None else None)
            direct &= level_direct
            reasons.extend(reason for reason in level_reasons if reason not in reasons)
            checks.extend(level_checks)
            written = True
            if any((path, index) not in snapshot["fcurves"] for path, index, _ in channels):
                # New F-curves: the next update rebuilds the relations anyway. Before the keys, so an action
                # the bake creates is named as if no copy had been made (a copy of a target's action named like
                # it would take its name).
                remove_held()
            if output == "SAMPLES":  # one F-curve at a time: no keys for the whole level at once
                keys.write_samples(armature, channels, frame_start, values)
            else:
                keys.write_keys(armature, channels, frames.astype(np.float64), values, interpolation,
                                replace=(frame_start, frame_end))
            del values
            _show_keys(armature)

        try:
            for depth, level in enumerate(levels):
                bake_level(depth, level)
            _verify_settled(scene, armature, levels, checks, frames, check_index, baked, bake_level, followers)
        except BaseException:  # a refusal, or anything else once keys are written (an interrupt too): put them back
            if written:
                keys.restore_channels(armature, snapshot)
                for pose_bone, values in zip(bones, pose_before):
                    set_rotation(pose_bone, values)
                _show_keys(armature)
            raise
        finally:
            keys.discard_snapshot(snapshot)

    return BakeResult(frames, baked, direct, reasons, time.perf_counter() - began, output=output)


def scene_range(scene, frame_start=None, frame_end=None):
    """The preview range when it is on, else the scene's range; ``frame_start`` and ``frame_end`` where given."""
    start, end = ((scene.frame_preview_start, scene.frame_preview_end) if scene.use_preview_range else
                  (scene.frame_start, scene.frame_end))
    return start if frame_start is None else frame_start, end if frame_end is None else frame_end
