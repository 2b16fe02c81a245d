"""Live mode: re-solve each live chain whenever what it depends on changes.

``depsgraph_update_post`` and ``frame_change_post`` call :func:`follow`. A chain is re-solved only when
its *inputs* changed: the target's, the pole's and the armature's world matrices (or the target and
pole bones' poses), the pose of the chain's parent bone, the frame and the chain's settings. Posing the
chain changes none of those, so the update that posing triggers finds nothing to do: no feedback loop,
and no cost when nothing relevant moved. A chain below another live chain (or whose target or pole is) is
solved after it, in the same update, whenever that one is: its new pose is evaluated inside Live's own paused
section, which no later update shows.

Each chain is solved on its own: an error on one (shown in its read-out) does not stop the others.

Which armatures have live chains is cached by name and rebuilt from ``bpy.data`` whenever it may be
stale: after a file load, an undo or redo, a toggle of the setting, a rename (a name no longer found),
an update that shows a live armature not in the cache (a duplicate, an append), or the first update of a view layer
(a scene made by Full Copy: its first evaluation calls no handler, so no update lists its armatures). ``register()``
touches no ``bpy.data`` (Blender restricts it while add-ons register); the first update builds the cache
(and moves a 0.1 file's settings into the chain list). The handlers are ``@persistent`` and
``unregister()`` removes every one of them.
"""
import contextlib
import math
import operator

import bpy
from bpy.app.handlers import persistent
from bpy.types import Armature, Object

from . import keys, native_rig, props, runtime
from .chain import (ChainError, CouplingReader, base_rows, bone_path, chain_names, chain_path, check_armature_scale,
                    check_evaluated, check_posable, check_target, evaluate_now, followed_targets, forget_read_chains,
                    goal_constraint_targets, goal_matrix, hangs_below, order, pose_chain, posed_matrices,
                    posers_read_once, predicted_base, read_chain, rendering, rotation_path, rotation_values,
                    set_rotation, solve_current, told_goal, verify_goals, verify_pose, with_armature, write_rotations)

# Runtime state only (nothing here is saved).
_live = set()  # names of armature objects with a live chain
_found = {}  # name -> the object of _live found under it last (see _in_scene)
_stale = [True]  # _live must be rebuilt before use
_last_inputs = {}  # (armature name, chain name) -> the inputs of its last live solve
_validated = {}  # (armature name, chain name) -> its Chain, validated (goals too) with the inputs above
_armature_read = {}  # (armature name, chain name) -> ((pauses, tip bone, object) when read, _armature_inputs)
_bases = {}  # (armature name, chain name) -> (its parent bone's matrix, chain.base_rows read with it)
# (armature name, chain name) -> its validation inputs (_inputs) when Blender showed another base, or moved its goals,
# than Live told from the pose above it (_as_predicted): its level is solved level by level while they hold, rather
# than told, put back and solved again on every update (a finger's target on a cuff the hand's Hook shapes).
_untold = {}
_view_layers = set()  # (scene's session_uid, view layer name) of the view layers followed since a load or undo
_looped = {}  # (armature name, chain name) -> why: chains hanging from each other in a loop across armatures (_loops)
_posed = {}  # (armature name, chain name) -> {bone name: the rotation its last live solve wrote} (_replayed)
_moved_kept = {}  # armature name -> what _moved_by found last, and when
# Frame changes seen: each evaluates the animation again, keys on the chain's bones included (a chain baked and then
# made live again), even to the same frame (set twice, or a subframe: motion blur), so each one re-solves.
_frame_changes = [0]
# Set by solve_live when a goal of a chain it posed is no longer where it was read: another add-on's handler, run
# before Live's in the same update, moved it (snapped a target to a grid), which Blender evaluates calling no handler;
# or posing the chain moved it (it follows the chain: refused when validated again).
_goals_moved = [False]


def _exact(matrix):
    """A matrix, copied (Blender's own are live views), with its location as floats: mathutils takes matrices one
    float32 step apart as equal, and 10,000 units from the origin that step (1/1024) is the smallest move there is."""
    return matrix.copy(), matrix.translation[:]


def _matrix(obj, bone_name=""):
    """An object's (or its bone's) evaluated matrix, as :func:`_exact` compares it."""
    if obj is None:
        return None
    if bone_name and obj.type == "ARMATURE" and bone_name in obj.pose.bones:
        return _exact(obj.matrix_world), _exact(obj.pose.bones[bone_name].matrix)
    return _exact(obj.matrix_world)


def _constraints(owner):
    return tuple((c.name, c.type, getattr(c, "enabled", not c.mute), c.influence,
                  getattr(c, "target", None) and c.target.name, getattr(c, "subtarget", ""))
                 for c in owner.constraints)


def _drivers(obj):
    data = obj.animation_data if obj is not None else None
    return tuple((d.data_path, d.array_index, d.mute) for d in data.drivers) if data is not None else ()


def _coupling(obj, bone_name=""):
    """What could couple a goal to a chain: its constraints and drivers, and its parents' and parent bones'."""
    coupling = []
    owner = obj
    while owner is not None:
        coupling.append((_constraints(owner), _drivers(owner), owner.parent_type, owner.parent_bone))
        owner = owner.parent
    if bone_name and obj is not None and obj.type == "ARMATURE" and bone_name in obj.pose.bones:
        bone = obj.pose.bones[bone_name]
        while bone is not None:
            coupling.append(_constraints(bone))
            bone = bone.parent
    return tuple(coupling)


def _armature_inputs(armature, tip_bone):
    """What a live solve reads of the armature itself: for validation (the chain's bones, their flags and
    constraints, the pose of those it passes through, their rest geometry and their parent bone's, the mode, Rest
    Position, drivers) and for the solve (its matrix, the chain's parent bone's)."""
    try:
        names, through = chain_path(armature, tip_bone)
    except ChainError:
        names = None
    pose_bones, bones = armature.pose.bones, armature.data.bones
    if names is not None and not all(name in pose_bones for name in names + through):
        names = None  # Edit Mode: a renamed edit bone renames its pose bone at once, its bone only on leaving
    chain, parent = None, None
    if names is not None:
        read = []
        for name in names:
            pose_bone, bone = pose_bones[name], bones[name]
            # The rest geometry too: another Armature datablock, or an edit through another object that shares
            # this one, changes the bones and keeps their names.
            read.append((pose_bone.scale[:], pose_bone.location[:], bone.use_inherit_rotation, bone.inherit_scale,
                         bone.use_connect, bone.use_local_location, pose_bone.rotation_mode,
                         _constraints(pose_bone), bone.length, bone.matrix_local.copy()))
        # The bones it passes through, which it takes at rest: their pose too (validation refuses them posed).
        read += [(rotation_values(pose_bone), pose_bone.scale[:], pose_bone.location[:], pose_bone.rotation_mode,
                  pose_bone.bone.use_inherit_rotation, _constraints(pose_bone))
                 for pose_bone in (pose_bones[name] for name in through)]
        parent = pose_bones[names[0]].parent
        # The parent bone's rest too: the base is its pose times its rest inverted, and a parent a constraint places
        # keeps its pose when its rest changes (through an object sharing the data, or another datablock swapped in).
        chain = (names, tuple(read), parent and (parent.name, parent.bone.matrix_local.copy()))
        parent = _exact(parent.matrix) if parent is not None else None
    # The object itself too: Live's state is keyed by the armature's name, which a replacement may take (the character
    # removed and appended again by a script), reading the same as the one solved last.
    state = (armature.session_uid, armature.mode, armature.data.pose_position, _drivers(armature))
    return (chain, state), (_matrix(armature), parent)


def _inputs(armature, spec, scene, armature_inputs):
    """Everything a live solve of one chain reads or validates, as comparable plain values, in two parts:
    what validation reads (a change re-validates: a constraint muted, a bone flag, Rest Position) and what
    only moves the goals (the matrices and the frame: a change re-solves a validated chain).
    ``armature_inputs``: :func:`_armature_inputs` of the chain's armature."""
    (chain, state), (armature_matrix, parent) = armature_inputs
    poled = spec.plane == "POLE"
    validation = (chain, state, spec, _coupling(spec.target, spec.target_bone),
                  _coupling(spec.pole, spec.pole_bone) if poled else None)
    motion = (armature_matrix, parent, _matrix(spec.target, spec.target_bone),
              _matrix(spec.pole, spec.pole_bone) if poled else None, scene.frame_current, _frame_changes[0])
    return validation, motion


def _read_armature(key, armature, tip_bone, updated):
    """:func:`_armature_inputs`, or the ones read at the last update when nothing can have changed them since:
    the depsgraph update at hand (``updated``: the pointers of the IDs it lists; None when unknown) does not
    list the armature or its data, and no paused section (an operator's) ended since, which could have
    changed them out of the handler's sight."""
    known, when = _armature_read.get(key), (runtime.pauses(), tip_bone, armature.session_uid)
    if (updated is not None and known is not None and known[0] == when
            and armature.as_pointer() not in updated and armature.data.as_pointer() not in updated):
        return known[1]
    read = _armature_inputs(armature, tip_bone)
    _armature_read[key] = when, read
    return read


def _replayed(armature, key, updated):
    """Whether Blender played the chain's keys again since its last live solve, with no frame change: a key of the
    armature edited (the spine's, in the Graph Editor or the Dope Sheet) evaluates its whole action again, which puts
    keyed chain bones back on their keys (Solve with Auto Keying keys them) while no input Live compares changed. Read
    only when the update lists the armature (``updated``: see :func:`_read_armature`). A bone turned by hand has no
    keys to replay unless it is keyed; then it is solved again, as at a frame change."""
    if updated is not None and armature.as_pointer() not in updated:
        return False
    posed = _posed.get(key)
    chain = _validated.get(key)
    if posed is None or chain is None:
        return False
    chain = with_armature(chain, armature)
    if all(name in posed and _holds(rotation_values(pose_bone), posed[name])
           for name, pose_bone in zip(chain.names, chain.pose_bones)):
        return False
    return any(not keys.is_muted(fcurve) for pose_bone in chain.pose_bones
               for index in range(len(rotation_values(pose_bone))) for fcurve, _ in keys.played_channel(
                   armature, bone_path(pose_bone.name, rotation_path(pose_bone.rotation_mode)), index))


def _holds(values, written):
    """Whether a bone's rotation ``values`` (as Blender stores them) are the ``written`` ones (mathutils values, float32
    like Blender's, or an axis-angle's angle in float64, which Blender rounds to float32)."""
    return len(values) == len(written) and all(abs(a - b) <= 1e-6 * max(1.0, abs(b)) for a, b in zip(values, written))


def _live_chains(armature):
    settings = getattr(armature, "blender_ik", None)
    if settings is None:
        return []
    return [chain_settings for chain_settings in settings.chains if chain_settings.live and chain_settings.enabled]


class _Reach:
    """What posing chains moves, for :func:`_moved_by`: whether a bone (or an object, through its parents) is at or
    below one of the chains' first bones (``roots``); ``reader`` (chain.CouplingReader) tells what constraints and
    drivers follow. Each bone is read once per update: the idle chains of a character share the bones above them, and
    walking up from each of them, once per moving chain, cost 0.65 of 1.8 ms per update with 27 chains of Rigify's
    human metarig live and a foot's target moved (0.38 ms this way)."""

    def __init__(self, armature, roots, reader=None):
        self.armature, self.roots = armature, set(roots)
        self._below, self.reader = {}, CouplingReader() if reader is None else reader

    def add_roots(self, roots):
        self.roots.update(roots)
        self._below.clear()  # a bone that did not move may now

    def bone_moves(self, bone_name):
        path, moves = [], False
        bone = self.armature.data.bones.get(bone_name)
        while bone is not None:
            name = bone.name
            if name in self._below:
                moves = self._below[name]
                break
            path.append(name)
            if name in self.roots:
                moves = True
                break
            bone = bone.parent
        self._below.update((name, moves) for name in path)
        return moves

    def moves(self, obj, bone_name=""):
        """Whether ``obj`` (or its bone ``bone_name``) hangs from a bone at or below a root (chain.moves_with_chain)."""
        if obj is None:
            return False
        if obj == self.armature and bone_name:
            return self.bone_moves(bone_name)
        while obj is not None:
            if obj.parent == self.armature and obj.parent_type == "BONE" and self.bone_moves(obj.parent_bone):
                return True
            obj = obj.parent
        return False


def _moved_by(armature, moving, idle, updated):
    """The chains of ``idle`` (``(spec, key, inputs)``: validated, inputs unchanged) that hang below a chain of
    ``moving`` (about to be posed), or follow it through constraints or drivers above them (chain.followed_targets), or
    whose target or pole does (hanging below it, or pinned to it by a constraint: chain.goal_constraint_targets),
    through any number of chains: their inputs change only once that chain is posed, which happens inside Live's own
    paused section, so no later update would show it. As ``solve_live``'s ``read`` entries, validated.

    The answer is kept for the next updates that move the same chains among the same idle ones (an animator dragging a
    hand: 54 of 274 µs of a Live update of a four-chain figure), when it rests on bones and parents alone: the bones and
    objects it read have no constraint (active or not) and no driver, whose influence, muting or targets keys or drivers
    change unseen. The goals' parents are the idle chains' validation, which must stay as it was (the same validated
    chains); the bones' parents and anything else of the armature, which an update that lists it may have changed
    (``updated``: see :func:`_read_armature`; None: not known), as may a paused section."""
    roots = frozenset(chain.names[0] for chain in moving)
    when = runtime.pauses(), armature.session_uid, roots, tuple(key for _, key, _ in idle)
    chains = [_validated[key] for _, key, _ in idle]
    known = _moved_kept.get(armature.name)
    if (updated is not None and known is not None and known[0] == when and all(map(operator.is_, known[1], chains))
            and armature.as_pointer() not in updated and armature.data.as_pointer() not in updated):
        return [(spec, with_armature(_validated[key], armature), inputs, True) for spec, key, inputs in idle
                if key in known[2]]
    found, coupled = _find_moved(armature, roots, idle)
    if coupled:
        _moved_kept.pop(armature.name, None)
    else:
        _moved_kept[armature.name] = when, chains, {key for _, key, _, _ in found}
    return [(spec, chain, inputs, True) for spec, _, inputs, chain in found]


def _find_moved(armature, roots, idle):
    """:func:`_moved_by`, worked out: ``([(spec, key, inputs, chain)], whether what it read has constraints or
    drivers)``."""
    found, waiting = [], list(idle)
    reach = _Reach(armature, roots)
    while waiting:
        moved = []
        for spec, key, inputs in waiting:
            chain = with_armature(_validated[key], armature)
            if (reach.moves(armature, chain.names[0])
                    or any(reach.moves(obj, bone_name) for _, obj, bone_name in spec.goals())
                    or any(reach.moves(target, bone_name) for target, bone_name in followed_targets(
                        reach.reader.bone_targets(armature, chain.names[0])
                        + goal_constraint_targets(spec, reach.reader), reach.reader))):
                moved.append((spec, key, inputs, chain))
        if not moved:
            break
        found += moved
        reach.add_roots(chain.names[0] for _, _, _, chain in moved)
        waiting = [entry for entry in waiting if all(entry[0] is not spec for spec, _, _, _ in moved)]
    return found, reach.reader.coupled


def _base(armature, spec, chain, inputs, validated, depth):
    """The chain's base (chain.base_rows): the one read at an earlier update while the chain is validated and its parent
    bone is where it was then (it depends on nothing else Live does not validate). Not below another chain posed in this
    update (``depth``): the parent's matrix in ``inputs`` was read before that one moved."""
    key, parent = (armature.name, spec.label), inputs[1][1]
    known = _bases.get(key)
    if not depth and validated and known is not None and known[0] == parent:
        return known[1]
    base = base_rows(chain)
    if depth:
        _bases.pop(key, None)
    else:
        _bases[key] = parent, base
    return base


_ENTRIES = operator.itemgetter(1)  # a group's (depth, entries) -> its entries
_NOT_HELD = contextlib.nullcontext()


def _predicted_bases(armature, level, poses, solved, inputs_of, reader):
    """Each chain of ``level``'s base (chain.predicted_base), and its goals that move with the chains ``solved`` above
    it in this update (chain.told_goal), on the bones ``poses`` of those, posed and not yet evaluated; None unless every
    one of them can be told so: its first bone hangs below them through bones Blender poses plainly, and its goals do
    not move with them, or hang from such bones (not through constraints or drivers). ``reader``: the update's
    CouplingReader (every level's reads the same bones). Call with the armature's IK held (posers_read_once)."""
    if any(_untold.get((armature.name, spec.label), ()) == inputs_of[spec][0] for spec, _ in level):
        return None
    reach = _Reach(armature, (chain.names[0] for _, chain, *_ in solved), reader)
    bases = {}
    for spec, chain in level:
        base = _predicted_base(armature, reach, spec, chain, poses)
        if base is None:
            return None
        bases[spec] = base
    return bases


def _predicted_base(armature, reach, spec, chain, poses):
    """:func:`_predicted_bases` of one chain: its base, and {role: matrix} of its goals that move with the chains above
    (chain.told_goal: a control parented to a body bone), or None."""
    told = {}
    for role, obj, bone_name in spec.goals():
        if reach.moves(obj, bone_name):
            told[role] = told_goal(armature, obj, bone_name, poses, reach.reader.driven(armature))
            if told[role] is None:
                return None
    if any(reach.moves(target, bone_name) for target, bone_name in followed_targets(
            reach.reader.bone_targets(armature, chain.names[0]) + goal_constraint_targets(spec, reach.reader),
            reach.reader)):
        return None
    base = predicted_base(chain, poses, reach.reader.driven(armature))
    return None if base is None else (base, told)


def _as_predicted(entries, inputs_of):
    """Whether chains solved on predicted bases (``solve_live``'s entries) were solved on what Blender shows: their
    bases as predicted (to its float32 rounding), their goals where they were read (one on geometry a chain above
    deforms moved with it), their bend planes defined (an undefined one keeps the plane the chain had, read before the
    chain above moved). The self-check follows, as for any chain (:func:`_settle`)."""
    for spec, chain, solve, _, _, base, told in entries:
        if solve is None or solve.solution.degenerate[0]:
            return False
        motion = inputs_of[spec][1]
        armature = chain.armature
        reach = chain.floats.size * math.sqrt(sum(row[0] * row[0] for row in base[:3]))  # (scaled as the base is)
        if (not _told_as_shown(base_rows(chain), base, reach)
                or any(not _told_as_shown(goal_matrix(armature, obj, bone_name, role), told[role], reach)
                       if role in told else _matrix(obj, bone_name) != motion[2 if role == "target" else 3]
                       for role, obj, bone_name in spec.goals())):
            _untold[(armature.name, spec.label)] = inputs_of[spec][0]  # (what follows will again)
            return False
    return True


def _told_as_shown(actual, told, reach):
    """Whether a matrix Blender evaluated (rows) is the one told, to its float32 rounding: each axis within 1e-6 of
    its length, the point within 1e-6 of its distance from the armature's origin and the chain's ``reach``."""
    (a0, a1, a2), (t0, t1, t2) = actual[:3], told[:3]
    for column in range(3):
        x, y, z = a0[column], a1[column], a2[column]
        limit = 1e-6 * math.sqrt(x * x + y * y + z * z)
        if abs(x - t0[column]) > limit or abs(y - t1[column]) > limit or abs(z - t2[column]) > limit:
            return False
    room = 1e-6 * (reach + max(abs(a0[3]), abs(a1[3]), abs(a2[3])))
    return abs(a0[3] - t0[3]) <= room and abs(a1[3] - t1[3]) <= room and abs(a2[3] - t2[3]) <= room


def _settle(armature, entries, depth, inputs_of):
    """The self-check of chains ``solve_live`` posed (its ``entries``, of level ``depth``), once Blender evaluated
    them: keep and record each one Blender shows as solved, put back and report the others. Returns (whether one was
    put back, how many were kept)."""
    refused, goals_moved, kept = False, [], 0
    for spec, chain, solve, before, own, *_ in entries:
        key = (armature.name, spec.label)
        _last_inputs[key] = inputs_of[spec]  # a refusal is not retried until an input changes
        motion = inputs_of[spec][1]
        goals = _matrix(spec.target, spec.target_bone), _matrix(spec.pole, spec.pole_bone)
        moved = goals[0] != motion[2] or motion[3] is not None and goals[1] != motion[3]
        try:
            verify_pose(chain, solve.solution)
            if moved:  # (only then can posing the chain have moved a goal: this update's cost is Live's own)
                try:
                    verify_goals(chain, spec, solve.solution, solve.goals)
                except ChainError:
                    goals_moved.append((spec, key, goals))  # by the chain, or by what moved it with the pose
                    raise
        except ChainError as error:
            refused = True
            for pose_bone, values in zip(chain.pose_bones, before):
                set_rotation(pose_bone, values)
            _validated.pop(key, None)
            runtime.store_error(armature, spec.label,
                                str(error).replace("nothing was changed", "the pose was put back"))
            continue
        runtime.store_solution(armature, spec.label, solve.solution, goals=solve.goals)
        _validated[key] = chain
        _posed[key] = {name: value for values in own.values() for name, value in values}  # as written
        kept += 1
        if not depth and moved:
            _goals_moved[0] = True
            # Validated again at the next pass: the goal may follow the chain through something validation read
            # before it did (a Copy Location added to a helper two steps away, an Empty between parented to the
            # elbow), which would be chased, update after update.
            _validated.pop(key, None)
    if refused:
        evaluate_now()
    for spec, key, goals in goals_moved:
        if (_matrix(spec.target, spec.target_bone), _matrix(spec.pole, spec.pole_bone)) == goals:
            # The pose put back, the goals stay where they moved: another add-on's handler, run before Live's,
            # moved them (a grid snapper), which Blender evaluated with the pose. Not refused: read again at the
            # next pass, as a goal a handler moved is (_goals_moved).
            _last_inputs.pop(key, None)
            _goals_moved[0] = True
    return refused, kept


def solve_live(armature, scene, force=False, updated=None, live_chains=None):
    """Re-solve the live chains of one armature whose inputs changed; errors go to each chain's read-out,
    never raise. Returns how many chains were posed. ``updated``: see :func:`_read_armature`; ``live_chains``:
    :func:`_live_chains` of the armature, when the caller has read them."""
    errors, read, idle = {}, [], []
    duplicate = props.duplicate_name(armature)
    for chain_settings in _live_chains(armature) if live_chains is None else live_chains:
        spec = props.chain_spec(chain_settings)
        key = (armature.name, spec.label)
        if spec.label == duplicate:  # names key Live's state: two chains of one name would overwrite each other
            errors[spec] = f"Two chains are named '{duplicate}': rename one"
            continue
        if key in _looped:
            errors[spec] = _looped[key]
            continue
        inputs = _inputs(armature, spec, scene, _read_armature(key, armature, spec.tip_bone, updated))
        last = _last_inputs.get(key)
        same_validation = last is not None and last[0] == inputs[0]  # compared once: it holds the chain's bones
        if not force and same_validation and last[1] == inputs[1] and not _replayed(armature, key, updated):
            if key in _validated:
                idle.append((spec, key, inputs))
            continue
        if native_rig.built_chains(armature) and native_rig.is_active(armature, props.rig_key(chain_settings)):
            errors[spec] = "It has a built rig, which follows the target by itself: turn Live off, or remove the rig"
            continue
        validated = not force and same_validation and key in _validated
        try:
            # Read at every solve: an override made a system one again (Outliner: Library Override > Clear) changes
            # nothing Live compares, and Blender ignores the write that poses it.
            check_posable(armature)
            if validated:  # nothing validation reads changed: the chain read then is still the chain
                if inputs[1][0] != last[1][0]:  # the armature's matrix is a "motion" input
                    check_armature_scale(armature)
                chain = with_armature(_validated[key], armature)
            else:
                chain = read_chain(armature, spec.tip_bone)
                check_target(chain, spec)
        except ChainError as error:
            errors[spec] = str(error)
            continue
        read.append((spec, chain, inputs, validated))
    if read and idle:
        read += _moved_by(armature, [chain for _, chain, _, _ in read], idle, updated)
    inputs_of = {spec: inputs for spec, _, inputs, _ in read}
    validated_of = {spec: validated for spec, _, _, validated in read}
    posed = 0
    levels = order(armature, [(spec, chain) for spec, chain, _, _ in read], errors)

    def solve_level(level, depth, writes, bases=None):
        """Solve and pose (into ``writes``) the level's chains; ``bases``: predicted ones (:func:`_predicted_bases`)."""
        solved = []
        for spec, chain in level:
            told = None
            if bases is not None:  # below a chain posed in this update, as _base forgets it: its parent moved
                _bases.pop((armature.name, spec.label), None)
                base, told = bases[spec]
            try:
                if bases is None:
                    base = _base(armature, spec, chain, inputs_of[spec], validated_of[spec], depth)
                solve = solve_current(chain, spec, validated=validated_of[spec], base=base, told=told)
            except ChainError as error:
                if bases is not None:  # solved again on what Blender evaluates, which says what is wrong
                    solved.append((spec, chain, None, None, None, None, None))
                else:
                    errors[spec] = str(error)
                continue
            own = {}
            before = pose_chain(chain, solve.rotations[0], own)
            for attribute, values in own.items():
                writes.setdefault(attribute, []).extend(values)
            solved.append((spec, chain, solve, before, own, base, told))
        return solved

    reader = CouplingReader() if len(levels) > 1 else None  # (what the levels below read of the bones, once)
    with posers_read_once(armature) if reader is not None else _NOT_HELD:
        depth = 0
        while depth < len(levels):
            if depth:
                evaluate_now()  # the chains below see the pose the ones above just got (nothing to do when it shows it)
            writes = {}
            group = [(depth, solve_level(levels[depth], depth, writes))]
            # The levels below, while Live can tell their chains' bases (and goals) from the poses just solved (a finger
            # chain below the hand's, through the palm), are solved on those before Blender evaluates anything: one
            # evaluation for all of them instead of one per level, each of which re-evaluates what the armature deforms
            # (a hand's and its five fingers' chains on Rigify's metarig deforming a 40,000-vertex mesh: 70.6 ms an
            # update, now 37.2, against 34.4-34.7 for Blender's IK constraints).
            poses = {}
            while group[-1][1] and group[-1][0] + 1 < len(levels):
                for _, chain, solve, _, own, base, _ in group[-1][1]:
                    if solve is not None:
                        poses.update(posed_matrices(chain, base, own))
                below = group[-1][0] + 1
                above = [entry for _, entries in group for entry in entries]
                bases = _predicted_bases(armature, levels[below], poses, above, inputs_of, reader)
                if bases is None:
                    break
                group.append((below, solve_level(levels[below], below, writes, bases)))
            if not any(map(_ENTRIES, group)):
                depth = group[-1][0] + 1
                continue
            write_rotations(armature, writes)  # the levels' chains at once
            # The self-check, as Solve does it: the pose Blender evaluates must be the solved one. This
            # evaluation is the one Blender would run anyway after this handler to show the new pose.
            evaluate_now()
            again = None if len(group) == 1 else next(
                (level_depth for level_depth, entries in group[1:] if not _as_predicted(entries, inputs_of)), None)
            for index, (level_depth, entries) in enumerate(group):
                if again is not None and level_depth >= again:
                    break
                refused, count = _settle(armature, entries, level_depth, inputs_of)
                posed += count
                if refused and index + 1 < len(group):  # the levels below were solved on the pose put back
                    again = group[index + 1][0] if again is None else min(again, group[index + 1][0])
            if again is not None:
                # Solved again, level by level as Blender evaluates them: put back, as they were before this update.
                for level_depth, entries in group:
                    if level_depth >= again:
                        for _, chain, _, before, *_ in entries:
                            for pose_bone, values in zip(chain.pose_bones, before or ()):
                                set_rotation(pose_bone, values)
                evaluate_now()
                depth = again
            else:
                depth = group[-1][0] + 1
    if posed and idle and not _goals_moved[0]:
        # An idle chain's goal that moved while Live posed: one on geometry a posed chain shapes (hung from a vertex of
        # a cuff a Hook on the hand moves), which _moved_by does not follow. Read again at the next pass, as a goal a
        # handler moved is; left, it stayed off its goal until the next update, its read-out saying reached.
        in_read = {spec for spec, _, _, _ in read}
        _goals_moved[0] = any(
            _matrix(spec.target, spec.target_bone) != inputs[1][2]
            or inputs[1][3] is not None and _matrix(spec.pole, spec.pole_bone) != inputs[1][3]
            for spec, _, inputs in idle if spec not in in_read)
    for spec, message in errors.items():
        key = (armature.name, spec.label)
        _last_inputs.pop(key, None)  # fixing the cause (Alt+S, a setting) retries at once
        _validated.pop(key, None)
        runtime.store_error(armature, spec.label, message)
    return posed


def _loops(armatures):
    """The live chains (``(armature name, chain name)`` -> why) of ``armatures`` (``(armature, live chains)``) that hang
    from each other's bones or goals in a loop that crosses armatures (a handshake: each hand's target on the other
    figure's hand), as chain.order refuses such a loop within one armature: posing one moves the other's goal and back,
    so no order solves them. Read only while such a loop may be there (see :func:`follow`)."""
    reader, nodes = CouplingReader(), []
    for armature, live_chains in armatures:
        for chain_settings in live_chains:
            spec = props.chain_spec(chain_settings)
            try:
                first = chain_names(armature, spec.tip_bone)[0]
            except ChainError:
                continue  # refused by its own solve
            moved = [(armature, first)] + [(obj, bone_name) for _, obj, bone_name in spec.goals() if obj is not None]
            moved += followed_targets(reader.bone_targets(armature, first) + goal_constraint_targets(spec, reader),
                                      reader)
            nodes.append((armature, spec.label, first, moved))
    follows = [{other for other, (armature, _, first, _) in enumerate(nodes) if other != index and any(
        hangs_below(armature, first, obj, bone_name) is not None for obj, bone_name in node[3])}
        for index, node in enumerate(nodes)]
    reach = []
    for index in range(len(nodes)):
        seen, waiting = set(), list(follows[index])
        while waiting:
            other = waiting.pop()
            if other not in seen:
                seen.add(other)
                waiting += follows[other]
        reach.append(seen)
    looped = {}
    for index, (armature, label, _, _) in enumerate(nodes):
        loop = sorted((other for other in reach[index] if index in reach[other]),
                      key=lambda other: (nodes[other][0].name, nodes[other][1]))
        if any(nodes[other][0] != armature for other in loop):
            names = ", ".join(f"'{nodes[other][1]}' of '{nodes[other][0].name}'" for other in loop)
            looped[(armature.name, label)] = (
                f"Chains {names} hang from each other's bones or targets in a loop across armatures; none can be "
                "solved first: turn Live off on one of them, or hang its target elsewhere")
    return looped


def _has_live(obj):
    return obj.type == "ARMATURE" and bool(_live_chains(obj))


def rescan():
    """Rebuild the set of live armatures from ``bpy.data`` (moving 0.1 settings into chain lists first)."""
    props.migrate_all()
    props.follow_renames()
    _live.clear()
    live_chains = {(obj.name, chain_settings.name or chain_settings.tip_bone)
                   for obj in bpy.data.objects if obj.library is None and obj.type == "ARMATURE"
                   for chain_settings in _live_chains(obj)}
    _live.update(name for name, _ in live_chains)
    for cache in (_found, _moved_kept):
        for name in [name for name in cache if name not in _live]:
            del cache[name]
    # Every per-chain cache, to the live chains there are: a character deleted kept its 27 validated chains and bases
    # (7 kB a chain) for the session, a live chain renamed its entries under the old name.
    for cache in (_last_inputs, _validated, _armature_read, _bases, _posed, _untold):
        for key in [key for key in cache if key not in live_chains]:
            del cache[key]
    _stale[0] = False


def _updated(depsgraph):
    """The pointers of the (original) IDs a depsgraph update lists, the Armature datablocks among them and the armature
    objects with chains; marks the cache stale when one is a live armature the cache does not know (duplicated,
    appended, renamed)."""
    updated, armature_datas, chained = set(), [], []
    for update in depsgraph.updates:  # (an idle update's whole cost to a scene without live chains: kept lean)
        original = update.id.original
        updated.add(original.as_pointer())
        if isinstance(original, Object):
            if original.type == "ARMATURE" and len(original.blender_ik.chains):
                chained.append(original)
                # (a linked one is never live here: rescan leaves it out, and would be asked for again and again)
                if not _stale[0] and original.library is None and original.name not in _live and _has_live(original):
                    _stale[0] = True
        elif isinstance(original, Armature):
            armature_datas.append(original)
    return updated, armature_datas, chained


def _in_scene(name, scene, view_layer):
    """The local object named ``name`` and where it is: "shown" (``view_layer`` shows it, so evaluates it), "view layer"
    (in ``view_layer``, the depsgraph's in a handler), "scene" (in ``scene`` but not in the view layer: an excluded
    collection) or None. The object found last under that
    name is asked first whether the view layer shows it (``visible_get``: Blender finds an object's base in a view layer
    by a hash), so a visible armature costs no lookup by name: ``view_layer.objects``, ``bpy.data.objects`` and
    ``scene.objects`` all look a name up one object at a time (73, 143 and 185 µs for the last of 3,000), which every
    update of a big scene would pay for each live armature. A hidden, excluded, renamed or deleted one is looked up."""
    known = _found.get(name)
    if known is not None and view_layer is not None:
        try:
            if known.name == name and known.library is None and known.visible_get(view_layer=view_layer):
                return known, "shown"
        except ReferenceError:  # deleted
            pass
    found, where = _looked_up(name, scene, view_layer)
    if found is None:
        _found.pop(name, None)
    else:
        _found[name] = found
    return found, where


def _looked_up(name, scene, view_layer):
    """:func:`_in_scene`, by name: in the view layer first, then (only an object outside it: excluded, another
    scene's, renamed or deleted) in ``bpy.data.objects``."""
    in_view_layer = view_layer.objects.get(name) if view_layer is not None else None
    if in_view_layer is not None and in_view_layer.library is None:
        return in_view_layer, "view layer"
    found = bpy.data.objects.get((name, None))  # the local one: a linked object may have its name
    if found is None:
        return None, None
    # The view layer gave a linked object of that name (a Rigify character's "rig", linked in before the local
    # one): whether the local one is there too is found object by object, in this rare case only.
    if in_view_layer is not None:
        if any(obj == found for obj in view_layer.objects):
            return found, "view layer"
        return found, "scene" if any(obj == found for obj in scene.objects) else None
    return found, "scene" if name in scene.objects else None


def _not_evaluated(armature, live_chains):
    """Live chains of an armature the view layer does not evaluate (an excluded collection, or one disabled in
    viewports) are not solved; their read-outs say why, and they are validated again once it is back. True if so."""
    try:
        check_evaluated(armature, f"Armature '{armature.name}'")
    except ChainError as error:
        message = str(error)
    else:
        return False
    for chain_settings in live_chains:
        label = props.chain_spec(chain_settings).label
        _last_inputs.pop((armature.name, label), None)
        _validated.pop((armature.name, label), None)
        runtime.store_error(armature, label, message)
    return True


def follow(scene, depsgraph=None, view_layer=None, render=False):
    """Re-solve what moved. ``depsgraph``: the update's (its updates tell what moved); ``view_layer``: the one being
    evaluated, when there is no depsgraph to tell it; ``render``: a render's frame change (:func:`on_frame_change`)."""
    if runtime.is_paused():
        return
    if depsgraph is not None:
        view_layer = depsgraph.view_layer
    if view_layer is not None and (scene.session_uid, view_layer.name) not in _view_layers:
        # A view layer new to Live (a scene made by Full Copy) may hold live armatures no update listed: its first
        # evaluation calls no handler.
        _view_layers.add((scene.session_uid, view_layer.name))
        _stale[0] = True
    updated, armature_datas, chained = _updated(depsgraph) if depsgraph is not None else (None, (), ())
    if _stale[0]:
        with runtime.paused():
            rescan()
    elif armature_datas or chained:  # bones renamed: the chains' bone settings follow
        with runtime.paused():
            props.follow_renames(props.unseen_datas(chained))  # chains set up (or given new goals) by a script
            props.follow_renames(armature_datas, seen_only=True)
    if not _live:
        return
    armatures = []
    for name in list(_live):
        armature, where = _in_scene(name, scene, view_layer)
        live_chains = _live_chains(armature) if armature is not None and armature.type == "ARMATURE" else None
        if not live_chains:
            _stale[0] = True  # renamed, deleted or switched off: rebuild on the next update
        elif where == "shown" and not render:  # (a render evaluates what its own settings enable)
            armatures.append((armature, live_chains))
        elif where in ("view layer", "shown") or (where == "scene" and view_layer is None):
            # In the view layer, but maybe in a collection disabled in viewports: Blender would show none of it.
            if not _not_evaluated(armature, live_chains):
                armatures.append((armature, live_chains))
        elif where == "scene":
            _not_evaluated(armature, live_chains)
    if _looped:  # a loop found before: is it still there (a target hung elsewhere, a Live turned off)?
        _looped.clear()
        if len(armatures) > 1:
            _looped.update(_loops(armatures))
    with runtime.paused(counted=False):
        if render and armatures:
            evaluate_now()  # the goals and parent bones Live reads show this frame, not the last rendered one
        # A pose Live makes is evaluated in this section, so no later update lists what it moved. Within one
        # armature, solve_live solves the chains below a posed chain with it (_moved_by); an armature whose goal
        # or parent is another live armature's bone would stay behind. So while something was posed and two or
        # more armatures are live, every live armature is read again, whole; at most one pass per live armature,
        # so armatures that follow each other in a loop stop. So is one whose goal another handler moved before
        # this one (_goals_moved), once: Blender evaluates that move after the handlers, calling none of them again.
        for _ in range(max(len(armatures), 2)):
            _goals_moved[0] = False
            posed = sum(solve_live(armature, scene, updated=updated, live_chains=live_chains)
                        for armature, live_chains in armatures)
            if not _goals_moved[0] and (not posed or len(armatures) < 2):
                break
            updated = None
        else:
            # Every pass posed something: armatures may follow each other in a loop, which no number of passes settles.
            # Its chains are refused from now on, while it lasts; the others were solved.
            if len(armatures) > 1:
                _looped.update(_loops(armatures))
                for (name, label), message in _looped.items():
                    armature = next(armature for armature, _ in armatures if armature.name == name)
                    _last_inputs.pop((name, label), None)
                    _validated.pop((name, label), None)
                    runtime.store_error(armature, label, message)


@persistent
def on_depsgraph_update(scene, depsgraph=None):
    follow(scene, depsgraph)


@persistent
def on_frame_change(scene, depsgraph=None):
    """A render's frame change (``render(animation=True)``, a render farm's ``-a``) comes with the render's own
    depsgraph, which Blender evaluated for the new frame without copying anything back: the objects and bones Live reads
    still show the previous frame (each rendered frame showed the pose of the one before). Blender evaluates the
    render's depsgraph again after this handler, so the pose Live makes here is the one rendered."""
    render = depsgraph is not None and depsgraph.mode == "RENDER"
    _frame_changes[0] += 1
    rendering[0] = depsgraph.view_layer if render else None  # what the render evaluates, Live poses
    try:
        follow(scene, view_layer=depsgraph.view_layer if depsgraph is not None else None, render=render)
    finally:
        rendering[0] = None


@persistent
def on_data_replaced(*_args):
    """After a file load, an undo or a redo, every cached name, input and read-out may be wrong."""
    _stale[0] = True
    _found.clear()  # (Python's references to the file's objects may be stale)
    _last_inputs.clear()
    _validated.clear()
    _posed.clear()
    _bases.clear()
    _untold.clear()
    _armature_read.clear()
    _moved_kept.clear()
    _view_layers.clear()
    _looped.clear()
    forget_read_chains()
    props.forget_bones()


@persistent
def on_load(*_args):
    """A new file: move a 0.1 file's settings into its chain lists now, before anyone reads them."""
    on_data_replaced()
    props.forget_bones(renames=True)
    runtime.forget()
    with runtime.paused():
        props.migrate_all()
        props.follow_renames()
    # The file's first evaluation calls no update handler: a keyed live chain (Solve with Auto Keying keyed it) would
    # show its keys, off its target, until something moved. Evaluated here, it is solved on the pose Blender plays.
    scene = bpy.context.scene
    if scene is not None and any(obj.library is None and _has_live(obj) for obj in scene.objects):
        evaluate_now()
        follow(scene, view_layer=bpy.context.view_layer)


def live_changed(armature, chain_settings=None):
    """A chain's ``live`` setting changed (``chain_settings``; None: any of the armature's): start following (solving
    it at once) or stop. The armature's other live chains are solved only if their inputs changed (or the chain below
    them moves them): forcing them all made a script that turned Live on for each of 200 chains re-solve every live
    chain at each one (6.4 s; 2.4 s this way: each chain's inputs are still read)."""
    if armature.type != "ARMATURE":  # the settings exist on every object; a script may set them on a mesh
        return
    _stale[0] = True
    _looped.clear()  # a loop across armatures is found again, if it is still there
    label = None if chain_settings is None else props.chain_spec(chain_settings).label
    for key in [key for key in _last_inputs if key[0] == armature.name and label in (None, key[1])]:
        del _last_inputs[key]
    for live_chain in _live_chains(armature):
        if not live_chain.tip_bone:
            try:
                live_chain.tip_bone = chain_names(armature, "")[2]
            except ChainError:
                pass
    scene = bpy.context.scene
    if scene is not None and armature.name in scene.objects and not runtime.is_paused():
        with runtime.paused(counted=False):
            solve_live(armature, scene, force=chain_settings is None)


_HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
    (bpy.app.handlers.frame_change_post, on_frame_change),
    (bpy.app.handlers.load_post, on_load),
    (bpy.app.handlers.undo_post, on_data_replaced),
    (bpy.app.handlers.redo_post, on_data_replaced),
)


def register():
    for handlers, handler in _HANDLERS:
        if handler not in handlers:
            handlers.append(handler)
    if live_changed not in props.live_listeners:
        props.live_listeners.append(live_changed)
    _stale[0] = True


def unregister():
    while live_changed in props.live_listeners:
        props.live_listeners.remove(live_changed)
    for handlers, handler in _HANDLERS:
        while handler in handlers:
            handlers.remove(handler)
    _live.clear()
    on_data_replaced()  # every cache it clears
    props.forget_bones(renames=True)
