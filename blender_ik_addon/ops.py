"""Operators: read the settings into chain descriptions, call the logic, report. Settings side effects
(pinning a chain's tip bone, turning Live off after a bake) happen here and nowhere below."""

import ast

import bpy
import numpy as np
from mathutils import Matrix, Vector

from . import bake, keys, native_rig, props, runtime, snap
from .chain import (ANGLE_TOLERANCE, AXES, BONE_FRAME, ChainError, ChainSpec, CouplingReader, GoalMoved,
                    bone_path, chain_names, check_armature_scale, check_goals_evaluated,
                    check_posable, check_target, enabled_collections, evaluate_now, followed_targets,
                    goal_constraint_targets, goal_label, goal_world, hangs_below, pose_chain,
                    posers, posers_read_once, prepare, read_chain, rotation_values, rotation_path, set_rotation,
                    shows_pose, solve_current, verify_goals, verify_pose, write_rotations)
from .report import distance_text
from .sampling import check_no_animated_posers

CHAINS_ITEMS = [("ALL", "All", "Every enabled chain of the armature"),
                ("ACTIVE", "Active", "The active chain of the list")]


_LINKED = ("Armature '{name}' is linked from a library and cannot be posed, keyed or set up here; make a library "
           "override of it first")


def _active_object(context):
    """The active object: the context's, or where a context has no screen (a script's timer, a window-less override),
    which gives it none, the view layer's, as Blender shows it active."""
    obj = getattr(context, "active_object", None)
    return context.view_layer.objects.active if obj is None and not hasattr(context, "active_object") else obj


def _objects_in_mode(context, armature):
    """The objects sharing the armature's mode (Pose Mode on several armatures), with or without a screen."""
    objects = getattr(context, "objects_in_mode", None)
    if objects is None:
        objects = [obj for obj in context.view_layer.objects if obj.mode == armature.mode]
    return objects


class _ArmatureOperator:
    """Shared by every operator here: poll for an armature in Object or Pose mode, move a 0.1 file's
    settings into the chain list, turn ChainError into an error report with nothing changed."""

    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = _active_object(context)
        if obj is None or obj.type != "ARMATURE":
            cls.poll_message_set("The active object must be an armature")
            return False
        if obj.mode not in {"OBJECT", "POSE"}:
            cls.poll_message_set("Switch to Object or Pose mode")
            return False
        if obj.library is not None:  # the buttons grey out, saying why (execute() refuses it too)
            cls.poll_message_set(_LINKED.format(name=obj.name))
            return False
        return True

    def execute(self, context):
        armature = _active_object(context)
        props.migrate_legacy(armature)
        props.follow_renames(props.bone_datas(armature), moved=False)  # a script may rename bones, then call us
        try:
            if armature.library is not None:
                raise ChainError(_LINKED.format(name=armature.name))
            return self.run(context, armature)
        except ChainError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        finally:  # bones a rig added or removed here are no renames for a script's next call
            props.follow_renames(props.bone_datas(armature), moved=False)


class _FrameRange:
    """The frames to key: every ``step``-th of a range (and its last), the scene's (or preview) range unless given.
    SKIP_SAVE: a new call offers the scene's range, not the last call's."""

    frame_start: bpy.props.IntProperty(name="Start Frame", soft_min=-1048574, soft_max=1048574, options={"SKIP_SAVE"},
                                       description="First frame (default: the scene or preview range)")
    frame_end: bpy.props.IntProperty(name="End Frame", soft_min=-1048574, soft_max=1048574, options={"SKIP_SAVE"},
                                     description="Last frame (default: the scene or preview range)")
    step: bpy.props.IntProperty(name="Frame Step", default=1, min=1, max=1000,
                                description="Key every n-th frame (and the last)")

    def _fill_range(self, context):
        start, end = bake.scene_range(context.scene)
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = end


def _check_unique_names(armature):
    duplicate = props.duplicate_name(armature)
    if duplicate is not None:
        raise ChainError(f"Two chains of armature '{armature.name}' are named '{duplicate}': rename one (a chain's "
                         "name keys its rig, its Live state and its read-out)")


def _chain_settings(armature, which, posing=True):
    _check_unique_names(armature)
    chosen = props.selected_chains(armature, which)
    if not chosen:
        if which == "ACTIVE" or not len(armature.blender_ik.chains):
            raise ChainError(f"Armature '{armature.name}' has no chains: add one (Add Chain, or Chains from "
                             "Selected)")
        raise ChainError(f"Armature '{armature.name}' has no enabled chain: enable one in the list")
    if which == "ACTIVE" and posing:  # (Remove Rig poses nothing)
        _check_shared_bones(armature, chosen[0])
    return chosen


def _check_shared_bones(armature, active):
    """The active chain may not have bones another enabled chain has (an empty Tip Bone is the active bone, which can
    be another chain's): acting on it alone would pose and key that chain's bones, and pin its tip onto them. Chains
    acted on together are checked as they are ordered (chain.order)."""
    try:
        names = chain_names(armature, active.tip_bone)
    except ChainError:
        return  # validation names the cause
    for chain_settings in props.selected_chains(armature):
        if chain_settings == active:
            continue
        try:
            shared = next((name for name in chain_names(armature, chain_settings.tip_bone) if name in names), None)
        except ChainError:
            continue
        if shared is not None:
            labels = (props.chain_spec(chain_settings).label, active.name or active.tip_bone or names[2])
            raise ChainError(f"Chains '{labels[0]}' and '{labels[1]}' share bone '{shared}'; a bone can belong to one "
                             "chain only: change the tip bone of one of them")


def pin_tip_bones(chosen, tips):
    """An empty Tip Bone means "the active bone", which changes with every click: once a chain has been
    solved, baked or set live, name its tip bone so it stays that chain. ``tips``: {spec: tip bone}."""
    for chain_settings in chosen:
        if not chain_settings.tip_bone:
            spec = props.chain_spec(chain_settings)
            if spec in tips:
                chain_settings.tip_bone = tips[spec]
                if not chain_settings.name:
                    chain_settings.name = tips[spec]


def solve_chains(armature, specs):
    """Pose ``specs`` for the current frame, each level on the pose of the levels before it, and check that
    Blender shows the result. Returns ``[(spec, chain, solve)]`` in solve order; on any error the pose is
    put back as it was and ChainError raised."""
    evaluate_now()
    check_posable(armature)
    # Validated without reading the goals' matrices: each solve reads them once, as the levels above have posed.
    levels = prepare(armature, specs, now=False)
    check_armature_scale(armature)
    for spec, _ in (pair for level in levels for pair in level):
        try:
            check_goals_evaluated(spec)
        except ChainError as error:
            raise error.for_chain(spec.label) from None
    bones = [pose_bone for level in levels for _, chain in level for pose_bone in chain.pose_bones]
    before = [rotation_values(pose_bone) for pose_bone in bones]
    solved = []
    with runtime.paused():
        try:
            for depth, level in enumerate(levels):
                if depth:
                    evaluate_now()
                writes = {}
                for spec, chain in level:
                    try:
                        solve = solve_current(chain, spec, validated=True)  # prepare() validated it
                    except ChainError as error:
                        raise error.for_chain(spec.label) from None
                    pose_chain(chain, solve.rotations[0], writes)
                    solved.append((spec, chain, solve))
                write_rotations(armature, writes)  # the level's chains at once
            evaluate_now()
            _verify_solved(armature, solved)
        except ChainError:
            for pose_bone, values in zip(bones, before):
                set_rotation(pose_bone, values)
            evaluate_now()
            raise
    return solved


def _verify_solved(armature, solved):
    """The self-check of :func:`solve_chains` (``solved``: its ``[(spec, chain, solve)]``, updated in place), once
    Blender shows the pose. A chain whose goal moved, among several, is solved again on the pose Blender shows: posing
    another chain may have moved it through geometry, which the order of chains does not follow (a target hung from a
    vertex of a cuff that a Hook on the other hand shapes), and so is a chain whose pose that moved (a finger below
    that hand). Again while that settles, for as many rounds as there are chains (one may follow another's cuff);
    a goal that keeps moving (on the chain's own skin) is then refused, as it is for one chain alone."""
    for attempt in range(len(solved) + 1):
        moved = []
        for index, (spec, chain, solve) in enumerate(solved):
            try:
                verify_pose(chain, solve.solution)
            except ChainError as error:
                if not attempt:
                    raise error.for_chain(spec.label) from None
                moved.append((index, error))
                continue
            try:
                verify_goals(chain, spec, solve.solution, solve.goals)
            except GoalMoved as error:  # (what else it refuses, it refuses at once)
                if len(solved) == 1:
                    raise error.for_chain(spec.label) from None
                moved.append((index, error))
        if not moved:
            return
        if attempt == len(solved):
            index, error = moved[0]
            raise error.for_chain(solved[index][0].label)
        writes = {}
        for index, _ in moved:
            spec, chain, _ = solved[index]
            try:
                solved[index] = spec, chain, solve_current(chain, spec, validated=True)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
            pose_chain(chain, solved[index][2].rotations[0], writes)
        write_rotations(armature, writes)
        evaluate_now()


def auto_key(context, pose_bones):
    """With Auto Keying on, key the rotation channels of ``pose_bones`` at the current frame (its subframe included),
    as Blender's own pose operators do (its mode, Add & Replace or Replace, its keyframe type and the preferences Only
    Insert Available and Only Insert Needed). Returns how many bones were keyed, or None with Auto Keying off. Nothing
    is keyed, and RuntimeError says why, where the keys would not be kept or not play as the pose is (a locked, muted
    or modified F-curve: Blender would key the other bones only, and the chain would play broken there; with
    cycle-aware keying, a cyclic F-curve's Cycles modifier is keyed through), or where Blender refuses them (a linked
    action)."""
    if not context.scene.tool_settings.use_keyframe_insert_auto or not pose_bones:
        return None
    entries = [(pose_bone, rotation_path(pose_bone.rotation_mode), pose_bone.name, f"bone '{pose_bone.name}'")
               for pose_bone in pose_bones]
    _check_keyable(context, pose_bones[0].id_data, entries)
    return sum(_insert_key(context, *entry[:3]) for entry in entries)


def _auto_key_goals(context, goals):
    """:func:`auto_key` of the location and rotation of ``goals`` (``(object, bone name)`` pairs): how many goals
    were keyed, or None with Auto Keying off."""
    if not context.scene.tool_settings.use_keyframe_insert_auto:
        return None
    keyed = []
    for obj, bone_name in goals:
        owner = snap.goal_owner(obj, bone_name)
        group, name = (bone_name, f"bone '{bone_name}' of '{obj.name}'") if bone_name else ("Object Transforms",
                                                                                             f"'{obj.name}'")
        keyed.append([(owner, path, group, name) for path in ("location", rotation_path(owner.rotation_mode))])
        _check_keyable(context, obj, keyed[-1])
    return sum(any([_insert_key(context, *entry[:3]) for entry in entries]) for entries in keyed)


def _check_keyable(context, id_data, entries):
    """Refuse (RuntimeError) keys on ``entries`` (``(struct, path, group, name)``: channels of ``id_data`` and how to
    name their owner) that Blender would not keep or that would not play as keyed: see :func:`keys.channel_problems`."""
    names = {(bone_path(struct.name, path) if isinstance(struct, bpy.types.PoseBone) else path): name
             for struct, path, _, name in entries}
    for path, index, reason in keys.channel_problems(id_data, names,
                                                     cycle_aware=context.scene.tool_settings.use_keyframe_cycle_aware,
                                                     one_frame=True):
        raise RuntimeError(f"the F-curve {path.rsplit('.', 1)[-1]}[{index}] of {names[path]} {reason}")


def _insert_key(context, struct, path, group):
    """Key ``struct``'s ``path`` at the current frame (its subframe included) with Auto Keying's settings."""
    settings, edit = context.scene.tool_settings, context.preferences.edit
    options = {option for option, on in (("INSERTKEY_REPLACE", settings.auto_keying_mode == "REPLACE_KEYS"),
                                         ("INSERTKEY_AVAILABLE", edit.use_keyframe_insert_available),
                                         ("INSERTKEY_NEEDED", edit.use_auto_keyframe_insert_needed),
                                         ("INSERTKEY_CYCLE_AWARE", settings.use_keyframe_cycle_aware)) if on}
    return bool(struct.keyframe_insert(path, frame=context.scene.frame_current_final, group=group, options=options,
                                       keytype=settings.keyframe_type))


def _auto_key_limits(context):
    """The Auto Keying settings that are on and leave bones unkeyed (on 5.2 Only Insert Available is on by default):
    the report names those, not the ones that are off."""
    edit, settings = context.preferences.edit, context.scene.tool_settings
    limits = [name for name, on in (("Replace", settings.auto_keying_mode == "REPLACE_KEYS"),
                                    ("Only Insert Available", edit.use_keyframe_insert_available),
                                    ("Only Insert Needed", edit.use_auto_keyframe_insert_needed)) if on]
    return limits or ["Replace", "Only Insert Available", "Only Insert Needed"]


def _others_in_pose_mode(context, armature, chains="ALL", done="solved", operator="Solve"):
    """A report's note of the other armatures in Pose Mode whose enabled chains were left as they were (Solve and Bake
    act on the active armature, whose chains the panel shows), or ''. ``chains``: the operator's (the active chain is
    the active armature's)."""
    if armature.mode != "POSE" or chains != "ALL":
        return ""
    others = [obj.name for obj in _objects_in_mode(context, armature)
              if obj != armature and obj.type == "ARMATURE" and props.selected_chains(obj, "ALL")]
    if not others:
        return ""
    names = ", ".join(map(repr, others))
    return (f"; {names} (also in Pose Mode) {'were' if len(others) > 1 else 'was'} not {done}: {operator} acts on "
            f"the active armature, make it active to {operator.lower()} its chains")


class BLENDER_IK_OT_solve(_ArmatureOperator, bpy.types.Operator):
    """Pose the chains so each tip reaches its target and each last bone points along the target's up axis"""

    bl_idname = "blender_ik.solve"
    bl_label = "Solve"

    chains: bpy.props.EnumProperty(name="Chains", items=CHAINS_ITEMS, default="ALL",
                                   description="Which chains to solve")

    def run(self, context, armature):
        chosen = _chain_settings(armature, self.chains)
        built = [c for c in _built_settings(armature, chosen) if rig_state(armature, c) not in ("MUTED", "GONE")]
        if built and (self.chains == "ACTIVE" or len(built) == len(chosen)):
            names = [c.name for c in built]
            raise ChainError(f"Chain{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))} "
                             f"{'have' if len(names) > 1 else 'has'} a built rig, which solves by itself; remove "
                             "the rig to pose with Solve")
        # Solve All leaves a built chain to its rig, which poses it as Blender evaluates (the legs built, the arms not).
        chosen = [c for c in chosen if c not in built]
        solved = solve_chains(armature, [props.chain_spec(c) for c in chosen])
        pin_tip_bones(chosen, {spec: chain.names[2] for spec, chain, _ in solved})
        # A chain of the active bone is named after it now: its read-out and the report go by that name.
        solved = [(spec if spec.label else spec._replace(name=chain.names[2]), chain, solve)
                  for spec, chain, solve in solved]
        for spec, chain, solve in solved:
            runtime.store_solution(armature, spec.label, solve.solution, goals=solve.goals)
        left = (f"; {len(built)} chain{'s' if len(built) > 1 else ''} with a built rig left to it"
                f"{'' if len(built) > 1 else ' (' + repr(built[0].name) + ')'}" if built else "")
        left += _others_in_pose_mode(context, armature, self.chains)
        try:
            keyed = auto_key(context, [pose_bone for _, chain, _ in solved for pose_bone in chain.pose_bones])
        except RuntimeError as error:  # posed as Blender shows it; the keys are what it refused
            keyed = None
            self.report({"WARNING"}, f"Auto Keying: the solved bones were not keyed: {error}")
        if keyed is not None:
            count = sum(len(chain.pose_bones) for _, chain, _ in solved)
            frame = f"at frame {context.scene.frame_current_final:g}"
            left += (f"; Auto Keying keyed {keyed} bone{'' if keyed == 1 else 's'} {frame}" if keyed == count else
                     f"; Auto Keying keyed {keyed} of {count} bones {frame} (its settings leave the others: "
                     f"{', '.join(_auto_key_limits(context))})")
        missed = [(spec, float(solve.solution.miss[0])) for spec, _, solve in solved
                  if not solve.solution.reachable[0]]
        if len(solved) == 1 and not left:
            spec = solved[0][0]
            if not missed:
                self.report({"INFO"}, f"Solved '{spec.label}': the tip is on the target")
            else:
                miss = distance_text(context.scene, armature, missed[0][1])
                self.report({"WARNING"}, f"Chain '{spec.label}': target out of reach by {miss}; the chain takes the "
                                         "closest pose")
        elif not missed:
            plural = "chains: every tip is" if len(solved) > 1 else "chain: its tip is"
            self.report({"INFO"}, f"Solved {len(solved)} {plural} on its target{left}")
        else:
            out = ", ".join(f"{spec.label} by {distance_text(context.scene, armature, miss)}" for spec, miss in missed)
            self.report({"WARNING"}, f"Solved {len(solved)} chain{'s' if len(solved) > 1 else ''}; out of reach "
                                     f"(closest pose): {out}{left}")
        return {"FINISHED"}


def _up_to_bone_matrix(up_axis, roll_axis):
    """The rotation taking the Empty's up axis onto a bone's +Y and its roll axis (or another) onto +Z."""
    column, sign = AXES[up_axis]
    up = np.zeros(3)
    up[column] = sign
    if roll_axis != "NONE" and AXES[roll_axis][0] != column:
        roll_column, roll_sign = AXES[roll_axis]
    else:
        roll_column, roll_sign = (column + 1) % 3, 1.0
    second = np.zeros(3)
    second[roll_column] = roll_sign
    empty_frame = np.stack([up, second, np.cross(up, second)], -1)
    return empty_frame @ BONE_FRAME.T


def _target_collection(context):
    """The collection the user is working in (the Outliner's active one), if it can take new objects and Blender
    evaluates them there (in one excluded or disabled in viewports, a new target would be out of sight, and its place
    unknown to Solve and Live)."""
    collection = context.collection
    if (collection is None or collection.library is not None or collection.override_library is not None
            or collection.as_pointer() not in enabled_collections(context.view_layer)):
        collection = context.scene.collection
    return collection


def tip_target_matrix(armature, tip_name, up_axis, roll_axis):
    """World matrix of a target at the tip of ``tip_name``, its up axis along the bone (solving right after
    leaves a planar chain as it is)."""
    tip = armature.pose.bones[tip_name]
    rotation = np.array(armature.matrix_world.to_3x3().normalized() @ tip.matrix.to_3x3().normalized())
    rotation = rotation @ _up_to_bone_matrix(up_axis, roll_axis).T
    matrix = Matrix(rotation.tolist()).to_4x4()
    matrix.translation = armature.matrix_world @ tip.tail
    return matrix


def new_empty(context, name, matrix, size, display="SINGLE_ARROW"):
    empty = bpy.data.objects.new(name, None)
    empty.empty_display_type = display
    empty.empty_display_size = max(size, 1e-3)
    _target_collection(context).objects.link(empty)
    empty.matrix_world = matrix
    try:
        empty.select_set(True)
    except RuntimeError:  # the collection is excluded from the view layer: nothing to select there
        pass
    return empty


def _new_target(context, armature, tip_name, up_axis, roll_axis):
    size = armature.pose.bones[tip_name].length * armature.matrix_world.median_scale * 0.5
    return new_empty(context, f"{tip_name}_target", tip_target_matrix(armature, tip_name, up_axis, roll_axis), size)


def _check_free(armature, names, label=None, what=None, ignore=None):
    """Refuse a new chain on ``names`` when one of the armature's chains already has one of its bones. ``label``: the
    chain the user acted on, if any (the new chain does not exist yet, so it cannot be the message's subject);
    ``what``: how to call the new chain."""
    for chain_settings in armature.blender_ik.chains:
        if chain_settings == ignore:
            continue
        try:
            other = chain_names(armature, chain_settings.tip_bone) if chain_settings.tip_bone else ()
        except ChainError:
            continue
        shared = next((name for name in names if name in other), None)
        if shared is not None:
            what = what or f"a chain on '{names[2]}'"
            owner = chain_settings.name or chain_settings.tip_bone
            raise ChainError(f"Bone '{shared}' already belongs to chain '{owner}'; {what} cannot have it too (a bone "
                             "can belong to one chain only)", label)


def _add_chain(armature, tip_name, name=None, **values):
    settings = armature.blender_ik
    chain_settings = settings.chains.add()
    chain_settings.name = props.unique_chain_name(armature, name or tip_name)
    runtime.forget(armature, chain_settings.name)  # a removed chain's, of the same name: this one is not solved yet
    chain_settings.tip_bone = tip_name
    for key, value in values.items():
        setattr(chain_settings, key, value)
    settings.active_chain_index = len(settings.chains) - 1
    return chain_settings


def _check_active_bone(armature, what):
    """With no chain to name a tip bone, the operators that make one take the active bone."""
    if armature.data.bones.active is None:
        raise ChainError(f"Armature '{armature.name}' has no active bone: click the tip bone of the chain in Pose Mode "
                         f"(the last bone of the limb), then {what} (the chain is it and its two ancestors)")


class BLENDER_IK_OT_add_target(_ArmatureOperator, bpy.types.Operator):
    """Create an Empty at the tip of the active chain, its up axis along the last bone, and use it as the
    chain's target (with no chains yet: a chain for the active bone)"""

    bl_idname = "blender_ik.add_target"
    bl_label = "Add Target"

    def run(self, context, armature):
        evaluate_now()
        chain_settings = armature.blender_ik.active_chain
        if chain_settings is None:
            _check_active_bone(armature, "Add Target")
        names = _read_own_chain(armature, chain_settings).names
        if chain_settings is None:
            chain_settings = _add_chain(armature, names[2])
        empty = _new_target(context, armature, names[2], chain_settings.up_axis, chain_settings.roll_axis)
        if not chain_settings.tip_bone:
            chain_settings.tip_bone = names[2]
        chain_settings.target, chain_settings.target_bone = empty, ""
        self.report({"INFO"}, f"Added target '{empty.name}' at the tip of '{names[2]}'")
        return {"FINISHED"}


def _chosen_settings(armature, which, names=None, posing=True):
    """The chains' settings named in ``names`` (enabled or not: they were asked for), else ``which``'s ('ALL' enabled,
    or 'ACTIVE')."""
    if isinstance(names, str):  # one chain's name, not its letters
        names = [names]
    if not names:
        if which not in ("ALL", "ACTIVE"):
            raise ChainError(f"which must be 'ALL' or 'ACTIVE' (got {which!r})")
        return _chain_settings(armature, which, posing)
    _check_unique_names(armature)
    by_name = {chain_settings.name: chain_settings for chain_settings in armature.blender_ik.chains}
    missing = [name for name in names if name not in by_name]
    if missing:
        known = ", ".join(sorted(by_name)) or "none"
        raise ChainError(f"Armature '{armature.name}' has no chain named {', '.join(map(repr, missing))} "
                         f"(its chains: {known})")
    return [by_name[name] for name in names]


def _snaps(armature, chosen, specs=None, ranged=False):
    """The chains to snap, ``[(spec, chain)]``, their goals' users ``{(object pointer, bone name): (chain label,
    role)}``, and the list's chains they are: the settings ``chosen``, or chains described directly (``specs``), which
    take over the list's chains on their bones (whose rigs decide whether a rig is built). Over a range a Pole chain's pole is snapped too. Refused (ChainError) where a chain
    has a built rig, a goal cannot be moved, or two chains share one."""
    taken = chosen if specs is None else _listed_on(armature, specs)
    if specs is None:
        specs = [props.chain_spec(chain_settings) for chain_settings in chosen]
    built = [c.name for c in taken if rig_state(armature, c) in ("BUILT", "STALE")]
    if built:
        raise ChainError(f"Chain{'s' if len(built) > 1 else ''} {', '.join(map(repr, built))} "
                         f"{'have' if len(built) > 1 else 'has'} a built rig, which poses the chain from its "
                         "target: remove the rig to snap the target to a pose of the bones")
    snaps, owners = [], {}
    for index, spec in enumerate(specs):
        if chosen:
            chain = _read_own_chain(armature, chosen[index])
        else:
            try:
                chain = read_chain(armature, spec.tip_bone)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
        try:
            check_target(chain, spec)
        except ChainError as error:
            raise error.for_chain(spec.label) from None
        for role, obj, bone_name in spec.goals()[:2 if ranged else 1]:
            goal = (obj.as_pointer(), bone_name)
            if goal in owners:
                raise ChainError(f"Chains '{owners[goal][0]}' and '{spec.label}' have the same "
                                 f"{'target' if role == owners[goal][1] == 'target' else 'goal'} "
                                 f"'{goal_label(obj, bone_name)}', which cannot be at both "
                                 f"{'tips' if role == owners[goal][1] == 'target' else 'places'}")
            owners[goal] = spec.label, role
            problem = snap.snap_problem(obj, bone_name, role)
            if problem is not None:
                raise ChainError(problem, spec.label)
        snaps.append((spec, chain))
    return snaps, owners, taken


def snap_armature(scene, armature, which="ALL", frame_start=None, frame_end=None, step=1, interpolation="BEZIER",
                  progress=None, names=None, specs=None):
    """Snap Target over a frame range, as scripts call it: key the goals of the armature's chains (``which``: 'ALL'
    enabled or 'ACTIVE'; ``names``: only those chains; ``specs``: chains described directly instead of the settings)
    where Snap Target puts them, on every ``step``-th frame of the range (default: the scene's or preview range) and
    its last; see :func:`snap.snap_range`. Returns the snap.RangeSnap; ChainError, with nothing changed, where
    refused."""
    bake.check_armature(armature)
    bake.check_scene(scene)
    if armature.library is not None:
        raise ChainError(_LINKED.format(name=armature.name))
    props.migrate_legacy(armature)
    props.follow_renames(props.bone_datas(armature), moved=False)
    evaluate_now()
    if specs is not None:
        specs = [specs] if isinstance(specs, ChainSpec) else list(specs)  # one ChainSpec is that chain, as for a bake
        bake.check_specs(specs, "snap")
        if not specs:
            raise ChainError(f"No chain of armature '{armature.name}' to snap: describe one (or leave specs out to "
                             "snap the list's chains)")
    chosen = [] if specs is not None else _chosen_settings(armature, which, names, posing=False)
    snaps, owners, taken = _snaps(armature, chosen, specs, ranged=True)
    _check_goals_not_live(scene, armature, [spec for spec, _ in snaps], "snap")
    start, end = bake.scene_range(scene, frame_start, frame_end)
    bake.check_frames(start, end, step, interpolation)
    bake.check_frame_limits(scene, start, end, "snap")
    # A goal another chain reaches for too would move that chain's tip or bend plane with the keys. A chain described
    # directly (the command line's --target) takes over the list's chains on its bones, as it takes over their rigs.
    for owner in [armature] + [obj for obj in scene.objects if obj != armature and obj.type == "ARMATURE"
                               and obj.library is None and len(obj.blender_ik.chains)]:
        for chain_settings in owner.blender_ik.chains:
            if owner == armature and chain_settings in taken:
                continue
            spec = props.chain_spec(chain_settings)
            for role, obj, bone_name in spec.goals():
                user = None if obj is None else owners.get((obj.as_pointer(), bone_name))
                if user is not None:
                    raise ChainError(f"The {user[1]} '{goal_label(obj, bone_name)}' is also the {role} of chain "
                                     f"'{spec.label}'{'' if owner == armature else f' of {owner.name!r}'}, which "
                                     "its keys would move too; give each chain its own", user[0])
    with runtime.paused():  # Live solves from the keyed goals afterwards, not halfway through
        return snap.snap_range(scene, armature, snaps, bake.keyed_frames(start, end, step), interpolation, progress)


class BLENDER_IK_OT_snap_target(_ArmatureOperator, _FrameRange, bpy.types.Operator):
    """Move the chain's target to its tip, its up axis along the last bone, so that solving leaves the chain as it is
    posed now: a pose made by turning the bones (FK), taken over by the target (IK). With Auto Keying on, key it"""

    bl_idname = "blender_ik.snap_target"
    bl_label = "Snap Target"

    chains: bpy.props.EnumProperty(name="Chains", items=CHAINS_ITEMS, default="ACTIVE",
                                   description="Which chains' targets to snap")
    # SKIP_SAVE: the panel's Snap Target snaps the current frame whatever the last call did.
    frames: bpy.props.EnumProperty(
        name="Frames", default="CURRENT", options={"SKIP_SAVE"},
        items=[("CURRENT", "Current Frame", "Move the target to the tip at the current frame"),
               ("RANGE", "Frame Range", "Key the target at the tip on every frame of a range, following the bones' "
                                        "animation (FK to IK); a Pole chain's pole too")],
        description="Snap the current frame, or key a frame range")
    interpolation: bpy.props.EnumProperty(
        name="Interpolation", default="BEZIER",
        items=[("BEZIER", "Bezier", "Smooth curves through the keys, as Blender's own keying makes them"),
               ("LINEAR", "Linear", "Straight lines between the keys"),
               ("CONSTANT", "Constant", "Hold each key until the next")],
        description="Interpolation of the new keys")

    def invoke(self, context, event):
        if self.frames != "RANGE":
            return self.execute(context)
        self._fill_range(context)
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.prop(self, "frames")
        ranged = layout.column()
        ranged.active = self.frames == "RANGE"
        for name in ("frame_start", "frame_end", "step", "interpolation"):
            ranged.prop(self, name)
        layout.prop(self, "chains")

    def run(self, context, armature):
        if self.frames == "RANGE":
            self._fill_range(context)
            window_manager = context.window_manager
            window_manager.progress_begin(0, 100)
            try:
                result = snap_armature(context.scene, armature, self.chains, self.frame_start, self.frame_end,
                                       self.step, self.interpolation,
                                       lambda done, total: window_manager.progress_update(100 * done / total))
            finally:
                window_manager.progress_end()
            self.report({"WARNING" if result.turned else "INFO"}, result.summary())
            return {"FINISHED"}
        evaluate_now()
        snaps, _, _ = _snaps(armature, _chain_settings(armature, self.chains, posing=False))
        before = [snap.saved_channels(snap.goal_owner(spec.target, spec.target_bone)) for spec, _ in snaps]
        solves = []
        with runtime.paused():  # Live solves from the snapped target after the operator, not halfway through it
            try:
                worlds = [snap.snapped_world(armature, chain.names[2],
                                             Matrix(goal_world(spec.target, spec.target_bone)), spec.up_axis,
                                             spec.roll_axis) for spec, chain in snaps]
                # A goal that hangs from another snapped goal (a finger's control under the hand's) is placed once that
                # one has moved and Blender has evaluated it: placed before, it would be carried off its tip.
                goals = [(spec.target, spec.target_bone) for spec, _ in snaps]
                depths = snap.placing_depths(goals)
                for depth in sorted(set(depths)):
                    for goal, world, at in zip(goals, worlds, depths):
                        if at == depth:
                            snap.place_goal(*goal, world)
                    evaluate_now()
                for spec, chain in snaps:
                    solve = solve_current(chain, spec)
                    distance, angle, shown = shows_pose(chain, solve.solution)
                    if not shown:
                        where = snap.off_the_tip(context.scene, armature, chain, distance, angle,
                                                 f"the tip of '{chain.names[2]}'")
                        raise ChainError(f"Blender shows the target '{goal_label(spec.target, spec.target_bone)}' "
                                         f"{where} after the snap: what it hangs from turns or scales it unevenly; "
                                         "nothing was changed", spec.label)
                    solves.append(solve)
            except ChainError:
                for (spec, _), saved in zip(snaps, before):
                    snap.put_back(snap.goal_owner(spec.target, spec.target_bone), saved)
                evaluate_now()
                raise
        self._report(context, snaps, solves)
        return {"FINISHED"}

    def _report(self, context, snaps, solves):
        notes, warn = [], False
        for (spec, chain), solve in zip(snaps, solves):
            turns = snap.solve_turns(chain, solve)
            if max(angle for _, angle in turns) > ANGLE_TOLERANCE:
                notes.append(f"chain '{spec.label}': {snap.turn_hint(chain, spec, solve, turns)}")
                warn = True
        try:
            keyed = _auto_key_goals(context, [(spec.target, spec.target_bone) for spec, _ in snaps])
        except RuntimeError as error:
            keyed, warn = None, True
            notes.append(f"Auto Keying: {'the targets were' if len(snaps) > 1 else 'the target was'} not keyed: "
                         f"{error}")
        if keyed:
            notes.append(f"Auto Keying keyed {keyed} target{'s' if keyed > 1 else ''} at frame "
                         f"{context.scene.frame_current_final:g}")
        # Keyed with Auto Keying off, or where its settings (Replace: the channels keyed at the frame) left channels
        # unkeyed: the keys put the target back.
        frame = None if keyed is None else context.scene.frame_current_final
        kept = [f"'{goal_label(spec.target, spec.target_bone)}'" for spec, _ in snaps
                if snap.held_by_keys(spec.target, spec.target_bone, frame)]
        if kept:
            warn = True
            why = ("or snap with Auto Keying on" if not context.scene.tool_settings.use_keyframe_insert_auto else
                   f"Auto Keying's {', '.join(_auto_key_limits(context))} left it unkeyed" if keyed is not None else
                   "")
            notes.append(f"{', '.join(kept)} {'are' if len(kept) > 1 else 'is'} keyed: the keys put "
                         f"it back at the next frame change unless you key it{f' ({why})' if why else ''}")
        spec, chain = snaps[0]
        done = (f"Snapped target '{goal_label(spec.target, spec.target_bone)}' to the tip of '{chain.names[2]}'"
                if len(snaps) == 1 else f"Snapped the targets of {len(snaps)} chains to their tips")
        if not warn:
            done += ": solving keeps the pose" if len(snaps) == 1 else ": solving keeps their pose"
        self.report({"WARNING" if warn else "INFO"}, "; ".join([done] + notes))


class BLENDER_IK_OT_chain_add(_ArmatureOperator, bpy.types.Operator):
    """Add a chain whose tip is the active bone (the chain is it and its two ancestors)"""

    bl_idname = "blender_ik.chain_add"
    bl_label = "Add Chain"

    def run(self, context, armature):
        _check_active_bone(armature, "Add Chain")
        names = chain_names(armature, "")
        _check_free(armature, names)
        _add_chain(armature, names[2])
        self.report({"INFO"}, f"Added chain '{armature.blender_ik.active_chain.name}' ({' > '.join(names)})")
        return {"FINISHED"}


def _from_library(armature, name, done):
    return (f"Chain '{name}' comes from the library that armature '{armature.name}' overrides, so it cannot be {done} "
            "here (an override can only add chains of its own); change it in the library file, or uncheck it in the "
            "list to leave it out")


class BLENDER_IK_OT_chain_remove(_ArmatureOperator, bpy.types.Operator):
    """Remove the active chain from the list (its bones keep their pose and keys; its target stays)"""

    bl_idname = "blender_ik.chain_remove"
    bl_label = "Remove Chain"

    def run(self, context, armature):
        settings = armature.blender_ik
        chain_settings = settings.active_chain
        if chain_settings is None:
            raise ChainError("There is no chain to remove")
        name = chain_settings.name or chain_settings.tip_bone
        with runtime.paused():  # no rig left that nothing can remove; it refuses before changing anything
            native_rig.remove(armature, props.rig_key(chain_settings))
        live = chain_settings.live
        chain_settings.live = False  # stop following before the settings go
        try:
            settings.chains.remove(settings.chains.values().index(chain_settings))
        except TypeError:  # a library override keeps its library's chains (it can only add its own)
            with runtime.paused():
                chain_settings.live = live
            raise ChainError(_from_library(armature, name, "removed")) from None
        settings.active_chain_index = max(0, min(settings.active_chain_index, len(settings.chains) - 1))
        runtime.forget(armature, name)
        self.report({"INFO"}, f"Removed chain '{name}'" if name else "Removed the unnamed chain (it had no tip bone)")
        return {"FINISHED"}


class BLENDER_IK_OT_chain_move(_ArmatureOperator, bpy.types.Operator):
    """Move the active chain up or down the list"""

    bl_idname = "blender_ik.chain_move"
    bl_label = "Move Chain"

    direction: bpy.props.EnumProperty(name="Direction", items=[("UP", "Up", ""), ("DOWN", "Down", "")])

    def run(self, context, armature):
        settings = armature.blender_ik
        if settings.active_chain is None:
            return {"CANCELLED"}
        # The chain the panel shows as active: a script's chains.remove() can leave the index past the end.
        index = min(settings.active_chain_index, len(settings.chains) - 1)
        other = index - 1 if self.direction == "UP" else index + 1
        if not 0 <= other < len(settings.chains):
            return {"CANCELLED"}
        try:
            settings.chains.move(index, other)
        except TypeError:  # a library override's own chain may move past the library's: the same swap
            try:
                settings.chains.move(other, index)
            except TypeError:
                raise ChainError(_from_library(armature, settings.active_chain.name, "moved")) from None
        settings.active_chain_index = other
        return {"FINISHED"}


def _selected_pose_bones(armature):
    from .keys import is_pose_bone_selected, is_pose_bone_visible
    return [pose_bone for pose_bone in armature.pose.bones
            if is_pose_bone_selected(pose_bone) and is_pose_bone_visible(pose_bone)]


class BLENDER_IK_OT_chains_from_selected(_ArmatureOperator, bpy.types.Operator):
    """One chain per selected bone (the bone is the chain's tip), each with a new target Empty at its tip:
    the one-click set-up for a character (for every armature in Pose Mode)"""

    bl_idname = "blender_ik.chains_from_selected"
    bl_label = "Chains from Selected"

    def run(self, context, armature):
        evaluate_now()
        # Pose Mode on several armatures at once shows (and selects) the bones of each.
        armatures = [armature] + [obj for obj in (_objects_in_mode(context, armature) if armature.mode == "POSE" else ())
                                  if obj.type == "ARMATURE" and obj != armature]
        tips = [(obj, pose_bone.name) for obj in armatures for pose_bone in _selected_pose_bones(obj)]
        if not tips:
            from .keys import is_pose_bone_selected
            hidden = [pose_bone.name for obj in armatures for pose_bone in obj.pose.bones
                      if is_pose_bone_selected(pose_bone)]
            if hidden:  # selected, but hidden or in hidden bone collections (Rigify's ORG, DEF and MCH bones)
                shown = ", ".join(f"'{name}'" for name in hidden[:3]) + (" ..." if len(hidden) > 3 else "")
                raise ChainError(f"The selected bones ({shown}) are hidden, or in hidden bone collections; show them, "
                                 "or select the tip bones of the chains to add among the bones Pose Mode shows")
            raise ChainError("Select the tip bones of the chains to add (in Pose Mode)")
        for obj in {obj for obj, _ in tips} - {armature}:  # the active one was checked and updated by execute()
            if obj.library is not None:
                raise ChainError(f"Armature '{obj.name}' is linked from a library and cannot be set up here; make a "
                                 "library override of it first, or leave Pose Mode on it")
            props.migrate_legacy(obj)
            props.follow_renames(props.bone_datas(obj), moved=False)
        planned = []
        for obj, tip in tips:  # everything is checked before anything is added
            try:
                names = read_chain(obj, tip).names
            except ChainError as error:  # which of the selected bones (a bone it names may be none of them)
                raise error.for_chain(tip) from None
            _check_free(obj, names)
            for other, other_tip, other_names in planned:
                shared = next((name for name in names if name in other_names), None)
                if other == obj and shared is not None:
                    raise ChainError(f"Selected bones '{other_tip}' and '{tip}' would both have bone '{shared}' in "
                                     "their chains; select only the last bone of each limb")
            planned.append((obj, tip, names))
        for obj, tip, _ in planned:
            chain_settings = _add_chain(obj, tip)
            chain_settings.target = _new_target(context, obj, tip, chain_settings.up_axis, chain_settings.roll_axis)
        several = len({obj for obj, _ in tips}) > 1
        added = ", ".join(f"{tip} ({obj.name})" if several else tip for obj, tip, _ in planned)
        self.report({"INFO"}, f"Added {len(planned)} chain{'s' if len(planned) > 1 else ''} with targets: {added}")
        return {"FINISHED"}


def _mirror_matrix(armature, matrix, up_axis, roll_axis):
    """``matrix`` (world) mirrored across the armature's local YZ plane, keeping a proper rotation whose
    up axis (and roll axis) are the mirror images of the original's."""
    to_local = np.array(armature.matrix_world.inverted())
    flip = np.diag([-1.0, 1.0, 1.0, 1.0])
    mirrored = np.array(armature.matrix_world) @ flip @ to_local @ np.array(matrix)
    up_column = AXES[up_axis][0]
    keep = AXES[roll_axis][0] if roll_axis != "NONE" and AXES[roll_axis][0] != up_column else (up_column + 1) % 3
    third = 3 - up_column - keep
    # Reflecting makes a left-handed frame; turn the third axis around to make it a rotation again.
    mirrored[:3, third] *= -1.0
    return Matrix(mirrored.tolist())


def _mirror_parent(source, mirrored, matrix, counterparts):
    """Hang the mirrored goal where the source hangs: from the other side's counterpart of its parent (object,
    or bone) when there is one, else from the same parent; it stays where it was put. ``counterparts``: the goals
    mirrored so far, source -> mirror (a pole hanging from the chain's target hangs from the mirrored target, whatever
    its name)."""
    parent = source.parent
    if parent is None:
        return
    mirrored.parent = counterparts.get(parent) or bpy.data.objects.get(bpy.utils.flip_name(parent.name), parent)
    mirrored.parent_type = source.parent_type
    if source.parent_type == "BONE":
        flipped = bpy.utils.flip_name(source.parent_bone)
        bones = mirrored.parent.data.bones if mirrored.parent.type == "ARMATURE" else {}
        mirrored.parent_bone = flipped if flipped in bones else source.parent_bone
    mirrored.matrix_world = matrix


_FLIPPED_X = {"X": "-X", "-X": "X"}


def _asymmetry(armature, names, mirrored_names):
    """The bones of ``mirrored_names`` whose rest head or tail is not the mirror image (across the armature's X = 0)
    of its counterpart's in ``names``: name -> how far off (armature space). Float32 noise (Symmetrize's) is not."""
    bones = armature.data.bones
    flip = np.array([-1.0, 1.0, 1.0])
    tolerance = 1e-5 * sum(bones[name].length for name in names)
    off = {}
    for name, mirror in zip(names, mirrored_names):
        distance = max(np.linalg.norm(flip * np.array(getattr(bones[name], end))
                                      - np.array(getattr(bones[mirror], end))) for end in ("head_local", "tail_local"))
        if distance > tolerance:
            off[mirror] = distance
    return off


def _mirror_name(name, source_tip, tip):
    """``name``'s counterpart on the other side, for a chain mirrored from ``source_tip`` onto ``tip``: a name made
    from the tip's, as the add-on makes them (``hand.L``, ``hand.L_target``, ``hand.L_pole``), takes the mirror tip's
    (``flip_name`` may turn another part around: ``Left_hand.L_target``); any other, ``flip_name``'s."""
    if name == source_tip or name.startswith(source_tip + "_"):
        return tip + name[len(source_tip):]
    return bpy.utils.flip_name(name)


class BLENDER_IK_OT_chain_mirror(_ArmatureOperator, bpy.types.Operator):
    """Add the mirror image of the active chain on the other side (.L/.R, _L/_R, Left/Right), with mirrored
    target and pole Empties and the same settings"""

    bl_idname = "blender_ik.chain_mirror"
    bl_label = "Mirror Chain"

    def run(self, context, armature):
        evaluate_now()
        source = armature.blender_ik.active_chain
        if source is None:
            raise ChainError("There is no chain to mirror")
        names = _read_own_chain(armature, source).names
        tip = bpy.utils.flip_name(names[2])
        if tip == names[2]:
            raise ChainError(f"Bone '{names[2]}' has no side in its name (.L/.R, _L/_R, Left/Right...), so it has "
                             "no mirror", source.name)
        if tip not in armature.data.bones:
            raise ChainError(f"Armature '{armature.name}' has no bone '{tip}' to mirror '{names[2]}' onto",
                             source.name)
        mirrored_names = read_chain(armature, tip).names
        _check_free(armature, mirrored_names, source.name or source.tip_bone, f"its mirror on '{tip}'")
        goals = {}
        for role, obj, bone_name in (("target", source.target, source.target_bone),
                                     ("pole", source.pole, source.pole_bone)):
            if obj is None:
                continue
            if bone_name:  # a control bone: its mirror bone, if the armature has one
                flipped = bpy.utils.flip_name(bone_name)
                if obj.type != "ARMATURE" or flipped not in obj.data.bones:
                    raise ChainError(f"The {role} bone '{bone_name}' has no mirror bone '{flipped}'", source.name)
                goals[role] = (obj, flipped)
            else:
                goals[role] = obj
        values = {key: getattr(source, key) for key in ("enabled", "up_axis", "plane", "bend", "roll_axis")}
        if isinstance(goals.get("target"), tuple):
            # Blender mirrors a bone (Symmetrize, X-Axis Mirror, Paste Flipped) with its X axis turned around, unlike
            # the Empties made below: the mirror bone's X is the opposite of the source's mirror image.
            for key in ("up_axis", "roll_axis"):
                values[key] = _FLIPPED_X.get(values[key], values[key])
        counterparts = {}

        def hangs_from(obj, other):
            while obj.parent is not None:
                obj = obj.parent
                if obj == other:
                    return True
            return False

        # A goal that hangs from the other one (a target below its pole) is mirrored after it, to hang from its mirror.
        roles = sorted(goals, key=lambda role: any(
            not isinstance(goals[role], tuple) and not isinstance(other, tuple) and hangs_from(goals[role], other)
            for other in goals.values()))
        for role in roles:
            goal = goals[role]
            if isinstance(goal, tuple):
                continue
            if goal in counterparts:  # the target is the pole too: one mirror for both
                goals[role] = counterparts[goal]
                continue
            name = _mirror_name(goal.name, names[2], tip)
            if name == goal.name:
                name = f"{tip}_{role}"
            matrix = _mirror_matrix(armature, goal.matrix_world, source.up_axis,
                                    source.roll_axis if role == "target" else "NONE")
            mirrored = new_empty(context, name, matrix, goal.empty_display_size if goal.type == "EMPTY" else 0.1,
                                 goal.empty_display_type if goal.type == "EMPTY" else "PLAIN_AXES")
            _mirror_parent(goal, mirrored, matrix, counterparts)
            goals[role] = counterparts[goal] = mirrored
        name = _mirror_name(source.name, names[2], tip)  # the studio's chain names: arm.L's mirror is arm.R
        label = source.name or source.tip_bone
        # Adding to the list may move its items in memory: ``source`` is not read after this.
        chain_settings = _add_chain(armature, tip, name if name != source.name else None, **values)
        for role, goal in goals.items():
            obj, bone_name = goal if isinstance(goal, tuple) else (goal, "")
            setattr(chain_settings, role, obj)
            setattr(chain_settings, f"{role}_bone", bone_name)
        done = f"Mirrored chain '{label}' to '{chain_settings.name}'"
        off = _asymmetry(armature, names, mirrored_names)
        if off:
            bones = ", ".join(f"'{name}'" for name in off)
            distance = distance_text(context.scene, armature, max(off.values()))
            self.report({"WARNING"}, f"{done}, but at rest {bones} {'is' if len(off) == 1 else 'are'} not the mirror "
                                     f"image of the bones of chain '{label}' (up to {distance} "
                                     "off): the two limbs will not pose as exact mirror images (Symmetrize the "
                                     "armature to make them so)")
        else:
            self.report({"INFO"}, done)
        return {"FINISHED"}


def _refers_to(owner, obj, rig_bones=()):
    """Whether the object ``owner`` points at ``obj`` other than through its chains and the helper bones
    ``rig_bones``: as its parent, a constraint's target (on the object or a bone), or a driver's."""
    if owner.parent == obj:
        return True
    constraints = list(owner.constraints)
    if owner.pose is not None:
        constraints += [constraint for pose_bone in owner.pose.bones if pose_bone.name not in rig_bones
                        for constraint in pose_bone.constraints]
    for constraint in constraints:
        targets = [getattr(constraint, "target", None), getattr(constraint, "pole_target", None)]
        targets += [target.target for target in getattr(constraint, "targets", ())]
        if obj in targets:
            return True
    for data in (owner, owner.data):
        anim_data = getattr(data, "animation_data", None)
        if anim_data is not None and any(target.id == obj for fcurve in anim_data.drivers
                                         for variable in fcurve.driver.variables for target in variable.targets):
            return True
    return False


def _movable_pole(armature, chain_settings, pole):
    """Whether Place Pole may move the chain's pole object rather than make a new one: a local object (a linked one
    would lose the move on reload), not a bone, that nothing else moves (keys, drivers, constraints would put it
    back or elsewhere) and nothing else uses (no chain's target nor another chain's pole, of any armature; no parent
    of other objects; no constraint's or driver's target): moving it would move what they do."""
    if pole is None or chain_settings.pole_bone or pole == armature or pole.library is not None:
        return False
    anim_data = pole.animation_data
    if len(pole.constraints) or anim_data is not None and (anim_data.action is not None or len(anim_data.drivers)
                                                           or len(anim_data.nla_tracks)):
        return False
    # Any other datablock that points at it (another armature's chain, a child, a constraint, a driver, a modifier...)
    # would move with it; collections and scenes only hold it.
    for user in bpy.data.user_map(subset=[pole])[pole]:
        if user != armature and not isinstance(user, (bpy.types.Collection, bpy.types.Scene)):
            return False
    for other in armature.blender_ik.chains:
        if other.target == pole or (other != chain_settings and other.pole == pole):
            return False
    # The chain's own rig follows the pole wherever it goes.
    return not _refers_to(armature, pole, native_rig.helper_bones(armature, props.rig_key(chain_settings)))


class BLENDER_IK_OT_place_pole(_ArmatureOperator, bpy.types.Operator):
    """Put the active chain's pole where its middle joint is now, pushed out from the base-wrist line by about
    the chain's length, and switch the chain to Pole mode, so that switching does not move the chain"""

    bl_idname = "blender_ik.place_pole"
    bl_label = "Place Pole"

    def run(self, context, armature):
        evaluate_now()
        chain_settings = armature.blender_ik.active_chain
        if chain_settings is None:
            raise ChainError("There is no chain to place a pole for")
        chain = _read_own_chain(armature, chain_settings)
        world = np.array(armature.matrix_world)
        matrix = Matrix.Translation(tuple(world[:3, :3] @ snap.pole_point(chain) + world[:3, 3]))
        pole = chain_settings.pole
        if not _movable_pole(armature, chain_settings, pole):
            size = chain.floats.size * armature.matrix_world.median_scale * 0.1
            pole = new_empty(context, f"{chain.names[2]}_pole", matrix, size, "SPHERE")
        else:  # move the existing pole object, keeping its rotation and scale
            moved = pole.matrix_world.copy()
            moved.translation = matrix.translation
            pole.matrix_world = moved
        chain_settings.pole, chain_settings.pole_bone, chain_settings.plane = pole, "", "POLE"
        if chain_settings.bend == "AWAY":  # the pole sits on the middle joint's side now
            chain_settings.bend = "TOWARD"
        label = chain_settings.name or chain_settings.tip_bone
        self.report({"INFO"}, f"Placed pole '{pole.name}' for chain '{label}'; it bends toward it now")
        return {"FINISHED"}


def _rig_values(armature, chain_settings):
    """What a built rig encodes: the chain's settings and its bones' rest geometry (:func:`rig_signature` unwritten)."""
    spec = props.chain_spec(chain_settings)
    bones = []
    try:
        names = chain_names(armature, spec.tip_bone)
        bones = [(name, [round(v, 5) for row in armature.data.bones[name].matrix_local for v in row],
                  round(armature.data.bones[name].length, 5)) for name in names]
    except ChainError:
        pass
    # The goals are not in it: the rig follows objects, not names (see rig_state).
    return (spec.tip_bone, spec.target_bone, spec.pole_bone, spec.up_axis, spec.plane, spec.bend, spec.roll_axis,
            bones)


def rig_signature(armature, chain_settings):
    """What a built rig encodes, as text (kept in the chain's settings). A rig built from other values is out of
    date."""
    return repr(_rig_values(armature, chain_settings))


def _unnamed(values):
    """A rig signature's values without their bone names: renaming the chain's bones or the goals' bones does not make
    a rig out of date (the rig's constraints follow the rename, as the chain does; which bones it is on is checked
    apart)."""
    _, _, _, *settings, bones = values
    return settings, [bone[1:] for bone in bones]


# A rig signature's text -> _unnamed of what it says (or the text, when it says nothing readable). The panel compares
# every built chain's on each redraw of its list: parsing them cost 0.8 ms a chain, 22 ms a redraw with 27.
_stored_signatures = {}


def _stored_unnamed(signature):
    known = _stored_signatures.get(signature)
    if known is None:
        try:
            known = _unnamed(ast.literal_eval(signature))
        except (ValueError, SyntaxError, TypeError, IndexError):
            known = signature
        if len(_stored_signatures) >= 1024:
            _stored_signatures.clear()
        _stored_signatures[signature] = known
    return known


def rig_state(armature, chain_settings):
    """'NONE', 'BUILT', 'MUTED' (after a bake: the keys drive the chain), 'GONE' (its record is left, its
    constraints are not: Rigify's re-generate rebuilt every bone) or 'STALE' (a setting or the rest pose changed since
    it was built)."""
    name = props.rig_key(chain_settings)
    if not native_rig.is_built(armature, name):
        return "NONE"
    if not native_rig.is_active(armature, name):
        return "MUTED" if native_rig.rig_constraints(armature, name) else "GONE"
    pole = (chain_settings.pole, chain_settings.pole_bone) if chain_settings.plane == "POLE" else (None, "")
    # A deleted goal leaves the rig's constraints and the settings pointing at nothing alike: the rig solves nothing.
    goals_set = chain_settings.target is not None and (chain_settings.plane != "POLE" or pole[0] is not None)
    same_goals = native_rig.goals(armature, name) == ((chain_settings.target, chain_settings.target_bone), pole)
    current = _stored_unnamed(chain_settings.rig_signature) == _unnamed(_rig_values(armature, chain_settings))
    try:
        on_chain = ({pose_bone.name for pose_bone, _ in native_rig.rig_constraints(armature, name)}
                    == set(chain_names(armature, props.chain_spec(chain_settings).tip_bone)))
    except ChainError:
        on_chain = False
    current = current and on_chain
    return "BUILT" if current and same_goals and goals_set else "STALE"


def _built_settings(armature, chosen):
    return [chain_settings for chain_settings in chosen
            if native_rig.is_built(armature, props.rig_key(chain_settings))]


class _MutedRigs:
    """Mute the built rigs of some chains (their chain bones go back to their own channels), and put them
    back on leaving unless told to keep them muted."""

    def __init__(self, armature, chosen):
        self.armature = armature
        self.names = [props.rig_key(c) for c in _built_settings(armature, chosen)]
        self.muted = {}
        self.keep = False

    def __enter__(self):
        for name in self.names:
            self.muted[name] = [constraint.mute for _, constraint in native_rig.rig_constraints(self.armature, name)]
            native_rig.set_muted(self.armature, name, True)
        return self

    def __exit__(self, *exc):
        if not self.keep:
            for name, states in self.muted.items():
                for (_, constraint), mute in zip(native_rig.rig_constraints(self.armature, name), states):
                    constraint.mute = mute
        return False


def _read_own_chain(armature, chain_settings):
    """Read and validate a chain of the list (or, with none, the active bone's), its own built rig aside: the
    rig's constraints are the add-on's, not one of the constraints the solve refuses."""
    if chain_settings is None:
        return read_chain(armature, "")
    with _MutedRigs(armature, [chain_settings]):
        try:
            return read_chain(armature, chain_settings.tip_bone)
        except ChainError as error:
            raise error.for_chain(chain_settings.name or chain_settings.tip_bone) from None


def _live_off(names):
    """What Build Rig says of the chains whose Live it turned off (a bake says so too): once the rig is removed, they
    stay where it left them until Live is turned on again."""
    return f"; Live turned off on {', '.join(names)} (the rig follows the target)" if names else ""


def _verify_rigs(levels):
    """The self-check, as Solve's, of rigs just built and evaluated: the pose Blender evaluates with them on must be the
    solve of the goals and of the chain's parent as evaluated (a chain below another one moves with that one's rig), the
    middle joint too where the bend plane is defined (where it is not, the rig's tracking picks a plane of its own)."""
    for level in levels:
        for spec, chain in level:
            solution = solve_current(chain, spec, validated=True).solution
            try:
                verify_pose(chain, solution, middle=not solution.degenerate[0])
            except ChainError as error:
                raise (_far_from_origin(chain, solution) or error).for_chain(spec.label) from None


def _far_from_origin(chain, solution):
    """Why a rig is refused when float32 world space is the cause, as a ChainError, or None: a rig's constraints and
    drivers work in world space, where Blender stores a position x to within about |x|·6e-8 (1/1024 at 10,000 units),
    and a step of them more than 1e-5 of the chain's length can put its tip beyond what the self-check allows."""
    world = chain.armature.matrix_world
    joints = [world @ Vector(joint) for joint in solution.joints[0]]
    reach = sum((joints[link + 1] - joints[link]).length for link in range(3))
    where = max(joint.length for joint in joints)
    step = where * 2.0 ** -23
    if not step > 1e-5 * reach:
        return None
    armature, scale = chain.armature, world.median_scale
    return ChainError(f"the chain is {distance_text(bpy.context.scene, armature, where / scale)} from the world's "
                      "origin, where Blender's constraints (which work in world space, in float32) place it to within "
                      f"about {distance_text(bpy.context.scene, armature, step / scale)} only, {step / reach:.1g} of its "
                      "length: build the rig nearer the origin, or pose it with Live or Bake, which solve in the "
                      "armature's space; nothing was changed")


def _trial_build(armature, chosen, specs, read, levels):
    """Before a rebuild removes any rig: build the new rigs beside the old ones (muted meanwhile), under trial names,
    and check them as the build itself is checked; then remove them and put the old ones back as they were. A
    rebuild the self-check refuses so changes nothing (removing the old rigs first lost them), and one it accepts
    is built again under the chains' own names: the same rigs on the same scene."""
    trials = [spec._replace(name=f"{spec.name}~trial") for spec in specs]
    with _MutedRigs(armature, chosen):
        native_rig.build_many(armature, [(read[spec], trial) for spec, trial in zip(specs, trials)])
        try:
            evaluate_now()
            _verify_rigs(levels)
        finally:
            native_rig.remove_many(armature, [trial.name for trial in trials])
    evaluate_now()


def _check_helpers_kept(armature, chosen, replaced):
    """A rebuild deletes the helper bones of the rigs it replaces and adds new ones: a rig built in this call (checked
    before they exist) or one left built (Blender clears its constraints' bone) whose target or pole is one of them
    would lose it, so refuse before anything changes. A chain that only solves (Solve, Live, Bake) finds the new helper
    under the same name."""
    helpers = {bone: name for name in replaced for bone in native_rig.helper_bones(armature, name)}
    for chain_settings in armature.blender_ik.chains:
        if chain_settings not in chosen and not native_rig.is_built(armature, props.rig_key(chain_settings)):
            continue
        spec = props.chain_spec(chain_settings)
        for role, obj, bone in (("target", spec.target, spec.target_bone),
                                ("pole", spec.pole if spec.plane == "POLE" else None, spec.pole_bone)):
            if obj is not None and obj.type == "ARMATURE" and obj.data == armature.data and bone in helpers:
                raise ChainError(f"The {role} '{bone}' is a helper bone of the rig of chain '{helpers[bone]}', which "
                                 "this Build Rig deletes and makes anew, and this chain's rig would lose it: give the "
                                 "chain a bone of the character instead; nothing was changed", spec.label)


class BLENDER_IK_OT_build_rig(_ArmatureOperator, bpy.types.Operator):
    """Build the chains as constraints and drivers Blender evaluates by itself: renders, playback, files opened
    without the add-on or with scripts disabled, and overridden rigs show the solved pose (rebuilds a rig
    that is already built)"""

    bl_idname = "blender_ik.build_rig"
    bl_label = "Build Rig"

    chains: bpy.props.EnumProperty(name="Chains", items=CHAINS_ITEMS, default="ALL",
                                   description="Which chains to build a rig for")

    def run(self, context, armature):
        # Live must not pose a chain while its rig is muted or removed here: a refused build would leave its channels
        # changed, and a built one has them under its rig.
        with runtime.paused():
            return self._build(armature)

    def _build(self, armature):
        chosen = _chain_settings(armature, self.chains)
        if armature.data.library is not None or armature.data.override_library is not None:
            # A bake of some chains (Bake Active) muted theirs; the others' rigs, up to date, stay as they are.
            states = [rig_state(armature, chain_settings) for chain_settings in chosen]
            if "MUTED" in states and set(states) <= {"MUTED", "BUILT"}:
                return self._unmute(armature, [c for c, state in zip(chosen, states) if state == "MUTED"])
        specs = [props.chain_spec(chain_settings) for chain_settings in chosen]
        # A chain's own rig is not one of the constraints it refuses.
        with _MutedRigs(armature, chosen), posers_read_once(armature):
            evaluate_now()
            levels = prepare(armature, specs)  # every refusal of the solve applies before anything is built
            for spec, chain in (pair for level in levels for pair in level):
                try:  # the refusals that come with the solve itself: the scale above the chain, and inherited
                    solve_current(chain, spec, validated=True)
                except ChainError as error:
                    raise error.for_chain(spec.label) from None
                # Solve's self-check finds another bone's IK that poses the chain after the fact; a rig has none, and
                # plays every frame (an influence of 0 now may be keyed).
                for owner, constraint, bone_name in posers(armature, set(chain.spanned)):
                    if owner.name not in chain.spanned and not constraint.mute:
                        raise ChainError(f"Bone '{bone_name}' is posed by the {constraint.type.replace('_', ' ')} "
                                         f"constraint '{constraint.name}' of bone '{owner.name}', whose chain reaches "
                                         "into this chain; mute or remove it, or shorten its Chain Length so that it "
                                         "stops below the chain", spec.label)
                try:  # a muted one keyed or driven acts on other frames (an IK/FK switch)
                    check_no_animated_posers(chain)
                except ChainError as error:
                    raise error.for_chain(spec.label) from None
        read = {spec: chain for level in levels for spec, chain in level}
        # The rig's own refusals too, before any rig is removed: a rebuild refused halfway would lose working rigs.
        replaced = {props.rig_key(chain_settings) for chain_settings in chosen}
        for chain_settings, spec in zip(chosen, specs):
            holder = next((other for other in armature.blender_ik.chains
                           if other != chain_settings and other.rig_name == spec.label), None)
            if holder is not None:
                raise ChainError(f"Chain '{holder.name or holder.tip_bone}' keeps its rig under the name "
                                 f"'{spec.label}' it was built with; rename this chain, or rebuild that one on its own "
                                 "first (its rig then takes its new name)", spec.label)
        for spec in specs:
            try:
                native_rig.check(armature, read[spec], spec, replaced)
            except ChainError as error:
                raise error.for_chain(spec.label) from None
        _check_helpers_kept(armature, chosen, replaced)
        if _built_settings(armature, chosen):  # a rebuild: the rigs it replaces stay until the new ones pass
            _trial_build(armature, chosen, specs, read, levels)
        native_rig.remove_many(armature, [props.rig_key(chain_settings) for chain_settings in chosen])
        for chain_settings in chosen:
            chain_settings.rig_name = chain_settings.rig_signature = ""
        native_rig.build_many(armature, [(read[spec], spec) for spec in specs])  # all or nothing
        for chain_settings, spec in zip(chosen, specs):
            chain_settings.rig_name = spec.label
        evaluate_now()
        try:
            _verify_rigs(levels)
        except ChainError as error:
            native_rig.remove_many(armature, [spec.label for spec in specs])
            for chain_settings in chosen:
                chain_settings.rig_name = ""
            evaluate_now()
            raise ChainError(error.message.replace("nothing was changed", "the rig was removed"), error.chain) from None
        was_live = [chain_settings.name or chain_settings.tip_bone for chain_settings in chosen if chain_settings.live]
        for chain_settings, spec in zip(chosen, specs):
            if not chain_settings.name:  # named once built: a refused build changes nothing
                chain_settings.name = chain_settings.tip_bone
            chain_settings.rig_signature = rig_signature(armature, chain_settings)
            chain_settings.live = False  # the rig follows the target now
        self.report({"INFO"}, f"Built the rig of {', '.join(spec.label for spec in specs)}: Blender evaluates "
                              f"{'them' if len(specs) > 1 else 'it'} without the add-on{_live_off(was_live)}")
        return {"FINISHED"}


    def _unmute(self, armature, chosen):
        """The rigs of a character whose bones are a library's (linked and overridden), muted by a bake here: Build Rig
        cannot build them here, but unmutes them, as a rebuild would, once they are up to date and pose each chain as
        Solve would (checked as a build is); otherwise they stay muted, and the message says why."""
        names = [props.rig_key(chain_settings) for chain_settings in chosen]
        specs = [props.chain_spec(chain_settings) for chain_settings in chosen]
        with posers_read_once(armature):
            evaluate_now()
            levels = prepare(armature, specs)  # the rigs muted: their constraints are not the chain's own
        try:
            for name in names:
                native_rig.set_muted(armature, name, False)
            stale = [chain_settings.name for chain_settings in chosen if rig_state(armature, chain_settings) != "BUILT"]
            if stale:
                raise ChainError(f"The rig of {', '.join(map(repr, stale))} is out of date (a setting or the rest pose "
                                 "changed since it was built), and its bones are the library's: rebuild it in the library "
                                 "file; it stays muted")
            evaluate_now()
            _verify_rigs(levels)
        except ChainError as error:
            for name in names:
                native_rig.set_muted(armature, name, True)
            evaluate_now()
            raise ChainError(error.message.replace("nothing was changed", "the rig stays muted"), error.chain) from None
        was_live = [chain_settings.name for chain_settings in chosen if chain_settings.live]
        for chain_settings in chosen:
            chain_settings.live = False  # the rig follows the target again
        self.report({"INFO"}, f"Unmuted the rig of {', '.join(spec.label for spec in specs)} (built in the library "
                              f"file): {'they pose' if len(specs) > 1 else 'it poses'} the chain again"
                              f"{_live_off(was_live)}")
        return {"FINISHED"}


class BLENDER_IK_OT_remove_rig(_ArmatureOperator, bpy.types.Operator):
    """Remove the chains' built rigs: every bone, constraint, driver and property they added"""

    bl_idname = "blender_ik.remove_rig"
    bl_label = "Remove Rig"

    chains: bpy.props.EnumProperty(name="Chains", items=CHAINS_ITEMS, default="ALL",
                                   description="Which chains' rigs to remove")

    def run(self, context, armature):
        chosen = _built_settings(armature, _chain_settings(armature, self.chains, posing=False))
        if not chosen:
            raise ChainError("None of these chains has a built rig")
        native_rig.remove_many(armature, [props.rig_key(chain_settings) for chain_settings in chosen])
        for chain_settings in chosen:
            chain_settings.rig_signature = chain_settings.rig_name = ""
        self.report({"INFO"}, f"Removed the rig of {', '.join(c.name or c.tip_bone for c in chosen)}")
        return {"FINISHED"}


def _tip(armature, tip_bone):
    try:
        return chain_names(armature, tip_bone)
    except ChainError:
        return None  # not a chain: the bake refuses it with the reason, Live does not pose it


def _listed_on(armature, specs):
    """The list's chains that share bones with the chains ``specs`` describes directly (the command line's --target):
    those take them over, their rigs and their goals."""
    bones = {name for spec in specs for name in _tip(armature, spec.tip_bone) or ()}
    return [chain_settings for chain_settings in armature.blender_ik.chains
            if bones.intersection(_tip(armature, chain_settings.tip_bone) or ())]


def _check_goals_not_live(scene, armature, specs, verb="bake"):
    """Refuse a chain, target or pole that a live chain moves (it hangs from that chain's bones, or follows them through
    constraints or drivers, as chain.order counts them), unless that chain is baked too: Live poses in handlers, which
    a bake pauses, so the bake would follow that chain's keyed pose, and playback, with Live posing it, would show
    another. ``verb`` 'snap': a range Snap Target of ``specs``, which pauses Live likewise."""
    names = {spec: _tip(armature, spec.tip_bone) for spec in specs}
    baked = {(armature.as_pointer(), chain[2]) for chain in names.values() if chain is not None}
    live = []  # (armature, first bone, chain settings) of every live chain not baked here
    for owner in scene.objects:
        if owner.type != "ARMATURE" or not hasattr(owner, "blender_ik"):
            continue
        for chain_settings in owner.blender_ik.chains:
            chain = _tip(owner, chain_settings.tip_bone) if chain_settings.live and chain_settings.enabled else None
            if chain is not None and (owner.as_pointer(), chain[2]) not in baked:
                live.append((owner, chain[0], chain_settings))
    if not live:
        return
    reader = CouplingReader()
    for spec in specs:
        moved, followed = spec.goals(), goal_constraint_targets(spec, reader)
        if names[spec] is not None:  # below a live chain, its keys would turn with Live's pose of that chain
            moved.append(("chain", armature, names[spec][0]))
            followed = reader.bone_targets(armature, names[spec][0]) + followed
        # A goal pinned to a live chain's bone by a Child Of (a bone turned by a driver reading one) moves with it too.
        moved += [("followed", obj, bone_name) for obj, bone_name in followed_targets(followed, reader)]
        for role, obj, bone_name in moved:
            for owner, first, chain_settings in live:
                if obj is not None and hangs_below(owner, first, obj, bone_name) is not None:
                    what = (f"chain's first bone '{bone_name}'" if role == "chain"
                            else f"'{goal_label(obj, bone_name)}', which the chain or its goals follow through a "
                                 "constraint or driver," if role == "followed"
                            else f"{role} '{goal_label(obj, bone_name)}'")
                    both = "bake both together, or that one first" if verb == "bake" else "bake that one first"
                    raise ChainError(f"The {what} moves with chain '{chain_settings.name or chain_settings.tip_bone}' "
                                     f"of armature '{owner.name}', which Live poses: a {verb} follows that chain's "
                                     f"keyed pose, not Live's; {both} (its keys then pose it), or turn its Live off",
                                     spec.label)


def _left_following(scene, armature, specs):
    """The enabled chains not among ``specs`` (those baked) that hang below a baked chain, or whose target or pole does,
    or follows one through constraints or drivers (as chain.order counts them), or follows geometry the armature
    deforms (native_rig.deformed_source: a cuff a Hook on the baked hand shapes), as ``(armature name, chain name)``
    with None for ``armature``'s own: the armature's chains, and the scene's other armatures' (a prop rig reaching for
    the baked hand). Their keys were solved on the baked chains' old pose, so they play off their goals until they are
    baked too. A live chain is not one: Live solves it after the baked chains play, on their new pose."""
    baked = [_tip(armature, spec.tip_bone) for spec in specs]
    firsts = [chain[0] for chain in baked if chain is not None]
    tips = {chain[2] for chain in baked if chain is not None}
    reader, found = CouplingReader(), []
    owners = [armature] + [obj for obj in scene.objects if obj != armature and obj.type == "ARMATURE"
                           and obj.library is None and len(obj.blender_ik.chains)]
    for owner in owners:
        for chain_settings in props.selected_chains(owner):
            chain = _tip(owner, chain_settings.tip_bone)
            if chain is None or (owner == armature and chain[2] in tips) or chain_settings.live:
                continue  # (a live one is solved on the pose played)
            spec = props.chain_spec(chain_settings)
            moved = [(obj, bone_name) for _, obj, bone_name in spec.goals()] + [(owner, chain[0])]
            moved += followed_targets(goal_constraint_targets(spec, reader) + reader.bone_targets(owner, chain[0]),
                                      reader)
            if any(obj is not None and hangs_below(armature, first, obj, bone_name) is not None
                   for obj, bone_name in moved for first in firsts) or any(
                    native_rig.deformed_source(armature, obj, chain[0] if owner == armature else "", bone_name,
                                               firsts) is not None for _, obj, bone_name in spec.goals()):
                found.append((None if owner == armature else owner.name, spec.label))
    return found


def bake_armature(scene, armature, which="ALL", frame_start=None, frame_end=None, step=1, interpolation="LINEAR",
             progress=None, names=None, specs=None, allow_shared=False, output="KEYS"):
    """Bake the armature's chains (``which``: 'ALL' enabled or 'ACTIVE'; ``names``: only those chains;
    ``specs``: chains described directly instead of the settings), then update the settings: pin empty tip
    bones and turn Live off on the baked chains (the keys drive them now). Returns the bake.BakeResult.
    The range defaults to the scene's (or preview) range. ``allow_shared``: key an action (slot) that other
    IDs play too; ``output`` 'SAMPLES': write samples instead of keys (see :func:`bake.bake_chains`)."""
    bake.check_armature(armature)
    bake.check_scene(scene)
    props.migrate_legacy(armature)
    props.follow_renames(props.bone_datas(armature), moved=False)
    start, end = bake.scene_range(scene, frame_start, frame_end)
    chosen = []
    if specs is None:
        chosen = _chosen_settings(armature, which, names)
        specs = [props.chain_spec(chain_settings) for chain_settings in chosen]
    _check_goals_not_live(scene, armature, specs)
    # A chain with a built rig bakes the same pose: the rig is muted so the keys show, and stays muted. Chains described
    # directly (the command line's --target) take over the rigs of the list's chains on their bones the same way.
    rigged = chosen or _listed_on(armature, specs)
    # Live must not pose a chain while its rig is muted here: a refused bake would leave its channels changed.
    with runtime.paused(), _MutedRigs(armature, rigged) as muted:
        result = bake.bake_chains(scene, armature, specs, start, end, step, interpolation, progress, allow_shared,
                                  output)
        muted.keep = True
    result.rigs_muted = [name for name in muted.names if muted.muted[name]]  # a rig whose constraints are gone: none
    result.rigs_linked = armature.data.library is not None or armature.data.override_library is not None
    pin_tip_bones(chosen, {chain.spec: chain.bones[2] for chain in result.chains})
    result.left_following = _left_following(scene, armature, specs)
    bones = {name for chain in result.chains for name in chain.bones}
    for chain_settings in armature.blender_ik.chains:
        if chain_settings.live and chain_settings.tip_bone in bones:
            chain_settings.live = False
            result.live_turned_off.append(chain_settings.name)
    return result


class BLENDER_IK_OT_bake(_ArmatureOperator, _FrameRange, bpy.types.Operator):
    """Bake the chains' IK to rotation keyframes over a frame range (keys outside the range are kept)"""

    bl_idname = "blender_ik.bake"
    bl_label = "Bake IK"

    interpolation: bpy.props.EnumProperty(
        name="Interpolation", default="LINEAR",
        items=[("LINEAR", "Linear", "Straight lines between the baked keys"),
               ("BEZIER", "Bezier", "Smooth curves through the baked keys"),
               ("CONSTANT", "Constant", "Hold each key until the next")],
        description="Interpolation of the new keys")
    output: bpy.props.EnumProperty(name="Output", items=props.OUTPUT_ITEMS, default="KEYS",
                                   description="What the bake writes")
    chains: bpy.props.EnumProperty(name="Chains", items=CHAINS_ITEMS, default="ALL",
                                   description="Which chains to bake")
    shared_action: bpy.props.BoolProperty(
        name="Key Shared Action", default=False, options={"SKIP_SAVE"},
        description="Key the armature's action even when other objects play it too (their animation changes "
                    "with it)")

    def invoke(self, context, event):
        self._fill_range(context)
        return context.window_manager.invoke_props_dialog(self)

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        for name in ("frame_start", "frame_end", "output"):
            layout.prop(self, name)
        keys_only = layout.column()
        keys_only.active = self.output == "KEYS"  # samples: one per frame, played linearly (others are refused)
        keys_only.prop(self, "step")
        keys_only.prop(self, "interpolation")
        layout.prop(self, "chains")
        layout.prop(self, "shared_action")

    def run(self, context, armature):
        self._fill_range(context)
        window_manager = context.window_manager
        window_manager.progress_begin(0, 100)
        try:
            result = bake_armature(
                context.scene, armature, self.chains, self.frame_start, self.frame_end, self.step, self.interpolation,
                progress=lambda done, total: window_manager.progress_update(100 * done / total),
                allow_shared=self.shared_action, output=self.output)
        finally:
            window_manager.progress_end()
        self.report({"INFO"}, result.summary() + _others_in_pose_mode(context, armature, self.chains, "baked", "Bake"))
        return {"FINISHED"}


classes = (BLENDER_IK_OT_solve, BLENDER_IK_OT_add_target, BLENDER_IK_OT_bake, BLENDER_IK_OT_chain_add,
           BLENDER_IK_OT_chain_remove, BLENDER_IK_OT_chain_move, BLENDER_IK_OT_chains_from_selected,
           BLENDER_IK_OT_chain_mirror, BLENDER_IK_OT_place_pole, BLENDER_IK_OT_snap_target, BLENDER_IK_OT_build_rig,
           BLENDER_IK_OT_remove_rig)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
