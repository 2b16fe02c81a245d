"""Build / remove a rig that evaluates a chain's exact solve in the depsgraph, without Python.

The rig is made of helper bones (non-deforming, in a hidden bone collection of their own), Blender's
tracking and copy constraints, and drivers whose expressions are *simple expressions* (evaluated
natively, allowed in files whose scripts are not trusted). It reproduces ``solve_chain`` (rig.py).
Helper bones are named ``IKR-<chain>-<role>``:

``base``    a copy of the first bone (same parent, rest, inheritance; its pose location driven from the
            first bone's) with no rotation of its own: its pose is ``A₁``, its head the base ``O``.
``target``  child of ``base``: the target's location and rotation (not its scale) with ``A₁``'s scale;
            ``goal``, its child, sits ``l3`` back along the up axis: the wrist ``P_T = E - l3·û``.
``aim``     child of ``base``: Damped Track Y at ``goal`` (``a``), then Locked Track turns Z to the
            middle joint's side ``b``: toward the target (plane TARGET: ``E - O`` rejected from ``a`` is
            ``l3·û`` rejected from ``a``) or the pole (POLE), or turns X to the first bone's rest bend
            normal ``N`` carried by ``base`` (PARENT, through the ``normal`` helper), which puts Z on the
            rest side ``N × a``. So X = ``n``, Y = ``a``.
``side``    PARENT with bend TOWARD or AWAY only: child of ``aim``, turned 180° about ``a`` (``n`` and
            ``b`` flip, as the solver's ``bend_toward=False``) by a driver on the sign of ``û·b``, which
            ``probe`` (another child of ``aim``, on the target's head) reads as its local Z: the solve's
            ``(N × (P_T - O))·û >= 0``. The solve holds its previous plane within 5° of ``N``; the rig
            holds no state and keeps following ``N`` made ⟂ ``a`` there (the solve without that cone).
``upper``   child of ``side`` (or ``aim``), turned by ``θ0`` about ``n`` (a driver: the law of cosines on
            ``|P_T - O|``; clamped, it gives seed 001's closest pose out of reach).
``lower``   child of ``upper`` at the middle joint, turned by ``-θ1``; ``wrist``, its child, sits where the
            chain's wrist is, its tail along ``n``.
``hand``    child of ``target`` with Y = ``û`` (and Z = the roll axis), moved to ``wrist``; without a roll
            axis, Locked Track turns its X to ``n`` made ⟂ ``û``; ``tip`` is its child.

The solved frames ``[dᵢ, n, dᵢ × n]`` are ``[Y, X, -Z]`` of the helpers with X = ``n``, Y = ``dᵢ``; each
chain bone's rotation maps its rest frame onto them (rig.py), a constant rotation ``Cᵢ`` built into the
rest orientation of ``upper``, ``lower`` (which turn about ``Cᵢᵀ·X`` to stay hinges about ``n``) and
``tip``. The chain's bones Copy Transforms (pose space) from ``upper``, ``lower`` and ``tip`` (or
``hand`` with a roll axis: its frame is the solve's own).

What was added is recorded, per chain, in a JSON custom property of the armature object, so
:func:`remove` deletes exactly that and nothing else.
"""
import copy
import json
import math
import re

import bpy
import numpy as np
from mathutils import Matrix

from .chain import (AXES, ChainError, CouplingReader, bone_path, followed_targets, frames, goal_label, hangs_below,
                    matrix_array, own_constraint_targets)

# The body-following plane (the rest plane carried by the chain's parent) is 'PARENT' here, 'NORMAL' in the solver.
BODY_FOLLOWING = ("PARENT", "NORMAL")
PLANES = ("TARGET", "POLE") + BODY_FOLLOWING
RECORD = "blender_ik_rig"  # custom property on the armature object: JSON {chain name: what its rig added}
COLLECTION = "IK Rig Helpers"
PREFIX = "IKR"  # helper bones "IKR-<chain>-<role>", constraints "IKR <role>"
# The solved frame [d, n, d × n] is [Y, X, -Z] of a helper whose X = n, Y = d.
_HELPER_TO_SOLVED = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
# Guards inside driver expressions: a division by zero or acos out of range would disable the driver.
_TINY = 1e-30
# The probe's reading of l3·(û·b) that still counts as û's side (a tie), relative to the chain's length.
_SIDE_BIAS = 1e-6
_MAX_NAME = 63  # Blender's limit on bone and constraint names (bytes)


def _number(value):
    return repr(float(value))


def _record(armature, to_change=False):
    """What each chain's rig added; empty when there is none, or when someone damaged the property (nothing
    can be trusted in it then, and drawing the panel must not fail over it). Read-only, unless ``to_change``: a
    record is parsed once per text and shared (Live asks whether a chain's rig is active on every update, and the
    panel on every redraw: parsing eight rigs' record took 35 µs each time)."""
    text = armature.get(RECORD)
    if not isinstance(text, str):
        return {}
    record = _parsed.get(text)
    if record is None:
        try:
            record = json.loads(text)
        except ValueError:
            record = {}
        if not isinstance(record, dict) or not all(map(_well_formed, record.values())):
            record = {}  # edited by hand: readers and removal index its entries as a build wrote them
        if len(_parsed) >= 16:
            _parsed.clear()
        _parsed[text] = record
    return copy.deepcopy(record) if to_change else record


def _strings(values, width=None):
    return isinstance(values, list) and all(
        isinstance(value, str) if width is None else
        isinstance(value, list) and len(value) == width and isinstance(value[0], str) for value in values)


def _well_formed(entry):
    """An entry of the record has what a build writes, of the types its readers take (else they raise)."""
    return (isinstance(entry, dict) and _strings(entry.get("bones")) and _strings(entry.get("constraints"), 2)
            and all(isinstance(name, str) for _, name in entry["constraints"])
            and _strings(entry.get("drivers"), 2) and all(type(index) is int for _, index in entry["drivers"])
            and isinstance(entry.get("collection"), str) and isinstance(entry.get("animation_data"), bool)
            and type(entry.get("collection_active_index", 0)) is int)


_parsed = {}  # a record's JSON text -> what it says (never changed: _record's to_change callers get a copy)


def _write_record(armature, record):
    if record:
        armature[RECORD] = json.dumps(record, sort_keys=True)
    elif RECORD in armature:
        del armature[RECORD]


def is_built(armature, chain_name):
    return chain_name in _record(armature)


def built_chains(armature):
    """The names of the chains with a built rig on ``armature``."""
    return sorted(_record(armature))


def rig_constraints(armature, chain_name):
    """The rig's constraints on the chain's own bones, as ``(pose bone, constraint)`` pairs (to mute
    the rig, e.g. before a bake with the Python solve)."""
    entry = _record(armature).get(chain_name)
    if entry is None:
        return []
    found = []
    for bone_name, constraint_name in entry["constraints"]:
        pose_bone = armature.pose.bones.get(bone_name)
        constraint = pose_bone.constraints.get(constraint_name) if pose_bone else None
        if constraint is None:
            break
        found.append((pose_bone, constraint))
    else:
        return found
    # A chain bone was renamed since the build (Blender renames bones in constraints, not in the record):
    # the rig's constraints are those of its names that follow its helper bones.
    helpers, names = set(entry["bones"]), {name for _, name in entry["constraints"]}
    return [(pose_bone, constraint) for pose_bone in armature.pose.bones for constraint in pose_bone.constraints
            if constraint.name in names and getattr(constraint, "subtarget", "") in helpers
            and getattr(constraint, "target", None) == armature]


def helper_bones(armature, chain_name):
    """The names of the helper bones of the chain's rig (empty without one)."""
    return set(_record(armature).get(chain_name, {}).get("bones", ()))


def is_active(armature, chain_name):
    """The chain has a rig, and it drives the chain's bones (not muted after a bake)."""
    return is_built(armature, chain_name) and not all(c.mute for _, c in rig_constraints(armature, chain_name))


def goals(armature, chain_name):
    """What the built rig follows, as its constraints point at it: ((target, bone), (pole, bone)); the pole is
    (None, "") unless its bend plane goes through one. Objects, not names: a renamed goal is still followed."""
    entry = _record(armature).get(chain_name)
    bones = armature.pose.bones
    found = []
    for role, constraint_role in (("target", "target location"), ("aim", "bend plane")):
        # Blender numbers a helper whose name was taken ('IKR-arm-target.001': built again on an Alt+D duplicate,
        # beside the helpers the other object's rig still uses).
        name = next((bone for bone in (entry or {}).get("bones", ())
                     if re.fullmatch(rf".*-{role}(\.\d+)?", bone, re.DOTALL)), "")
        constraint = bones[name].constraints.get(f"{PREFIX} {constraint_role}") if name in bones else None
        target = getattr(constraint, "target", None)
        if role == "aim" and target == armature:  # the plane follows the rig's own helpers, not a pole
            target = None
        found.append((target, getattr(constraint, "subtarget", "") if target is not None else ""))
    return tuple(found)


def set_muted(armature, chain_name, muted):
    """Mute (or unmute) the rig of a chain: its chain bones go back to their own channels."""
    for _, constraint in rig_constraints(armature, chain_name):
        constraint.mute = muted


def check(armature, chain, spec, replaced=()):
    """The rig's own refusals (the solver's are the caller's: read_chain and check_target first); ``replaced``: the
    names of the rigs the caller removes before building (a rebuild checks every chain before removing any)."""
    name = spec.name
    if not name:
        raise ChainError("The chain needs a name to build a rig for it")
    if is_built(armature, name) and name not in replaced:
        raise ChainError(f"Chain '{name}' already has a rig; remove it first")
    if armature.data.library is not None or armature.data.override_library is not None:
        raise ChainError(f"Armature '{armature.name}' uses bones linked from a library; build the rig in the "
                       "library file, where its bones can be edited")
    _check_editable(armature)
    if np.linalg.det(matrix_array(armature.matrix_world)[:3, :3]) < 0.0:
        # Locked Track builds a right-handed frame in world space: under a mirroring object it flips the bones.
        raise ChainError(f"Armature '{armature.name}' has a negative (mirroring) scale, which the rig's tracking "
                       "constraints do not support; give it a positive scale")
    if spec.plane not in PLANES:
        raise ChainError(f"Unknown plane '{spec.plane}'")
    if spec.plane == "POLE" and spec.pole is None:
        raise ChainError("Set the pole")
    if spec.target is None:
        raise ChainError("Set the target")
    target = matrix_array(spec.target.matrix_world)
    if spec.target_bone and spec.target_bone in getattr(spec.target.pose, "bones", ()):
        target = target @ matrix_array(spec.target.pose.bones[spec.target_bone].matrix)
    if np.linalg.det(target[:3, :3]) < 0.0:
        # Copy Rotation takes no rotation a solve would agree with out of a mirroring matrix.
        raise ChainError(f"The target '{spec.target.name}' has a negative (mirroring) scale, which the rig's Copy "
                       "Rotation cannot follow; give it a positive scale")
    _check_target_axes(spec, target[:3, :3])
    for role, obj, bone_name in (("target", spec.target, spec.target_bone),
                                 ("pole", spec.pole if spec.plane == "POLE" else None, spec.pole_bone)):
        if obj is not None and bone_name and (obj.type != "ARMATURE" or bone_name not in obj.data.bones):
            raise ChainError(f"The {role} '{obj.name}' has no bone named '{bone_name}'")
        if obj == armature and bone_name:
            bone = armature.data.bones[bone_name]
            if bone.name in chain.names or chain.names[0] in [parent.name for parent in bone.parent_recursive]:
                raise ChainError(f"The {role} '{bone_name}' hangs from the chain and would move with it (a "
                               "dependency cycle in the rig); choose a bone outside the chain")
        deformed = deformed_source(armature, obj, chain.names[0], bone_name)
        if deformed is not None:
            raise ChainError(f"The {role} '{goal_label(obj, bone_name)}' follows the geometry of '{deformed.name}', "
                             f"which armature '{armature.name}' deforms: the rig would loop through it (a dependency "
                             "cycle, which Blender evaluates in no fixed order); hang it from something the armature "
                             "does not deform, or pose the chain with Solve, Live or Bake")
    if not getattr(bpy.context, "view_layer", None) or armature.name not in bpy.context.view_layer.objects:
        raise ChainError(f"Armature '{armature.name}' is not in the current view layer; its bones cannot be edited")


# Constraints that read their target's geometry (a surface, a curve's path) rather than its transform; any
# constraint does with a vertex group as its subtarget.
_GEOMETRY_CONSTRAINTS = ("SHRINKWRAP", "FOLLOW_PATH", "CLAMP_TO", "SPLINE_IK")


def deformed_source(armature, obj, first_bone, bone_name="", posed=()):
    """The object whose geometry, deformed by ``armature`` (an Armature modifier, or armature parenting; a cage or hook
    hung from the chain, whose first bone is ``first_bone``), ``obj`` (or its bone ``bone_name``, or a bone above it)
    or an object or bone it hangs from or its constraints follow follows (a vertex parent, Shrinkwrap, Follow Path, a
    vertex group subtarget), or None. Blender's dependency graph then loops through the rig: the pose deforms the mesh,
    which places the goal, which poses the chain. Followed step by step, not by recursion: a goal may follow a chain of
    thousands of Empties. ``posed``: more bones (other chains' first bones) whose pose counts through a cage or hook
    whose object hangs from or follows them (a hook's handle parented to the other hand), as Bake needs: no loop for
    the rig, but geometry another chain's pose moves."""
    seen, waiting = set(), [(obj, bone_name)]
    while waiting:
        obj, bone_name = waiting.pop()
        if obj is None or (obj.name_full, bone_name) in seen:
            continue
        seen.add((obj.name_full, bone_name))
        pose_bone = getattr(obj.pose, "bones", {}).get(bone_name) if bone_name else None
        owners = ([pose_bone, *pose_bone.parent_recursive] if pose_bone is not None else []) + [obj]
        sources = [obj.parent] if obj.parent is not None and obj.parent_type in ("VERTEX", "VERTEX_3") else []
        for constraint in [constraint for owner in owners for constraint in owner.constraints]:
            target = getattr(constraint, "target", None)
            if target is not None and not constraint.mute and (
                    constraint.type in _GEOMETRY_CONSTRAINTS or getattr(constraint, "subtarget", "")
                    and target.type != "ARMATURE"):
                sources.append(target)
        for source in sources:
            if _deforms(armature, source, set(), first_bone, posed):
                return source
        # What places it in turn: its parent (or parent bone), and what its constraints follow (a Child Of to a cup).
        followed = [(obj.parent, obj.parent_bone if obj.parent_type == "BONE" else "")]
        followed += [pair for owner in owners for pair in own_constraint_targets(owner)]
        waiting += reversed(followed)  # (the first one next)
    return None


# Modifiers that shape their object by another object's geometry (a cage, a lattice, a curve, a surface).
_CAGE_MODIFIERS = ("LATTICE", "CURVE", "MESH_DEFORM", "SURFACE_DEFORM", "SHRINKWRAP")


def _deforms(armature, source, seen, first_bone, posed=()):
    """Whether ``armature`` deforms ``source``'s geometry: an Armature or Hook modifier on it, armature parenting, or
    a Lattice, Curve, Mesh Deform, Surface Deform, Shrinkwrap or Hook modifier on geometry it deforms (a lattice on the
    arm) or that hangs from the chain (first bone ``first_bone``: a cuff's lattice or hook parented to the hand), or
    (see :func:`deformed_source`) whose object hangs from or follows a bone of ``posed``."""
    if source is None or source.name_full in seen:
        return False
    seen.add(source.name_full)
    if source.parent == armature and source.parent_type == "ARMATURE" or (
            hangs_below(armature, first_bone, source) is not None):
        return True
    for modifier in getattr(source, "modifiers", ()):
        if not modifier.show_viewport:
            continue
        shaper = getattr(modifier, "object", None) or getattr(modifier, "target", None)
        if modifier.type in ("ARMATURE", "HOOK") and shaper == armature or (
                modifier.type in _CAGE_MODIFIERS + ("HOOK",) and (_deforms(armature, shaper, seen, first_bone, posed)
                                                                  or _follows_bones(armature, shaper, posed))):
            return True
    return False


def _follows_bones(armature, obj, roots):
    """Whether ``obj`` hangs from a bone of ``armature`` at or below one of ``roots`` (bone names), or follows one by
    its constraints or drivers, through any steps (a handle parented to a hand, or pinned to it by a Child Of)."""
    if obj is None or not roots:
        return False
    followed = [(obj, ""), *followed_targets(CouplingReader().followed_by(obj))]
    return any(hangs_below(armature, root, item, bone_name) is not None
               for root in roots for item, bone_name in followed)


# Sheared target axes the rig refuses: a tenth of the self-check's angle (a rotation's float32 noise is ~1e-7).
_SHEAR_TOLERANCE = 1e-4


def _check_target_axes(spec, axes):
    """Refuse a target (world 3×3 ``axes``) whose rotation the rig's Copy Rotation does not take as the solve does:
    Blender makes a target's axes perpendicular first, keeping its Y (and its X and Z then differ from the
    columns the solve reads as the up and roll axes), and takes no rotation from an axis scaled to zero."""
    lengths = np.linalg.norm(axes, axis=0)
    name = spec.target.name + (f"' bone '{spec.target_bone}" if spec.target_bone else "")
    if lengths.min() < 1e-12:
        raise ChainError(f"The target '{name}' has zero scale on its {'XYZ'[int(np.argmin(lengths))]} axis, from "
                         "which the rig's Copy Rotation takes no rotation; give it a scale on every axis")
    units = axes / lengths
    cosines = np.abs(units.T @ units - np.eye(3))
    shear = math.degrees(math.asin(min(1.0, float(cosines.max()))))
    if math.radians(shear) > _SHEAR_TOLERANCE and (AXES[spec.up_axis][0] != 1 or spec.roll_axis != "NONE"):
        raise ChainError(f"The target '{name}' is sheared (its parents scale it unevenly and turn it: two of its axes "
                         f"are {shear:.3g}° from perpendicular); the rig's Copy Rotation makes them perpendicular "
                         "about its Y axis, so only an up axis along Y without a roll axis follows it. Give its "
                         "parents a uniform scale (Solve, Live and Bake follow the sheared axes)")


def _rest_geometry(chain, spec):
    """Everything the helpers' rest pose needs, from the chain's rest data (armature space, numpy)."""
    bone = chain.armature.data.bones[chain.names[0]]
    rest = matrix_array(bone.matrix_local)
    rotation, head = rest[:3, :3], rest[:3, 3]
    lengths = np.linalg.norm(chain.links, axis=-1)
    rest_frames = frames(chain.links, chain.rest_normals)  # (3, 3, 3): each bone's rest frame, bone-local
    offsets = _HELPER_TO_SOLVED @ np.swapaxes(rest_frames, -1, -2)  # Cᵢ
    column, sign = AXES[spec.up_axis]
    up = np.zeros(3)
    up[column] = sign
    roll = None
    if spec.roll_axis != "NONE":
        roll_column, roll_sign = AXES[spec.roll_axis]
        if roll_column != column:  # the solve ignores a roll axis along the up axis
            roll = np.zeros(3)
            roll[roll_column] = roll_sign
    # The hand's rest orientation in the target helper's frame: Y = the up axis, Z = the roll axis (or any ⟂).
    z_axis = roll if roll is not None else np.roll(up, 1)
    hand = np.stack([np.cross(up, z_axis), up, z_axis], -1)
    return dict(rotation=rotation, head=head, lengths=lengths, offsets=offsets, up=up, hand=hand,
                rolled=roll is not None, rest_normal=rotation @ chain.rest_normals[0])


def _matrix(rotation, head):
    m = np.eye(4)
    m[:3, :3], m[:3, 3] = rotation, head
    return Matrix(m.tolist())


def _bone_name(chain_name, role):
    name = f"{PREFIX}-{chain_name}-{role}"
    # Keep the role: it is what tells the helpers apart. And room for the '.001' Blender adds to a name taken (two
    # chains whose names differ only past the cut): it would cut the role to fit ('IKR-...-ta.001').
    while len(name.encode()) > _MAX_NAME - len(".001"):
        chain_name = chain_name[:-1]
        name = f"{PREFIX}-{chain_name}-{role}"
    return name


def _on(armature):
    """A context whose active object is ``armature``, for mode_set: a context without a screen (a script's timer) has
    no active object of its own."""
    return bpy.context.temp_override(active_object=armature, object=armature)


def _check_editable(armature):
    """Refuse, before anything is changed, an armature whose bones Edit Mode cannot reach (disabled in viewports, or
    outside the view layer): what :class:`_EditMode` would refuse halfway through a removal, after the rig's
    constraints and drivers had gone."""
    view_layer = bpy.context.view_layer
    active = view_layer.objects.active
    try:
        view_layer.objects.active = armature
    except (RuntimeError, ValueError):  # not in the view layer
        editable, reason = False, "it is not in the current view layer"
    else:
        with _on(armature):
            editable, reason = bpy.ops.object.mode_set.poll(), "Blender cannot put it in Edit Mode"
        view_layer.objects.active = active
    if not editable:
        raise ChainError(f"Cannot edit the bones of '{armature.name}' (is it hidden?): {reason}; enable it in "
                         "viewports and in the view layer first")
    # Leaving Edit Mode takes every armature of the view layer out of it, another one's edit session too.
    editing = next((obj.name for obj in view_layer.objects
                    if obj.type == "ARMATURE" and obj.mode == "EDIT" and obj != armature), None)
    if editing is not None:
        raise ChainError(f"Armature '{editing}' is in Edit Mode: the rig's bones are added and removed in Edit Mode of "
                         f"'{armature.name}', and leaving it would take '{editing}' out of Edit Mode too; leave Edit "
                         "Mode on it first")


class _EditMode:
    """Edit the armature's bones, then restore the active object, its mode and the active bone."""

    def __init__(self, armature):
        self.armature = armature

    def __enter__(self):
        view_layer = bpy.context.view_layer
        self.active = view_layer.objects.active
        self.mode = self.armature.mode
        self.active_bone = self.armature.data.bones.active.name if self.armature.data.bones.active else None
        view_layer.objects.active = self.armature
        try:
            with _on(self.armature):
                bpy.ops.object.mode_set(mode="EDIT")
        except RuntimeError as error:
            view_layer.objects.active = self.active
            raise ChainError(f"Cannot edit the bones of '{self.armature.name}' (is it hidden?): {error}") from None
        return self.armature.data.edit_bones

    def __exit__(self, *exc):
        with _on(self.armature):
            bpy.ops.object.mode_set(mode=self.mode if self.mode in ("POSE", "OBJECT") else "OBJECT")
        bones = self.armature.data.bones
        bones.active = bones.get(self.active_bone) if self.active_bone else None
        bpy.context.view_layer.objects.active = self.active
        return False


def _layout(chain, spec, geometry):
    """The helper bones to add: role -> (rest rotation, rest head, length, parent role, mirrors the first bone)."""
    rotation, head = geometry["rotation"], geometry["head"]
    l1, l2, l3 = geometry["lengths"]
    size = float(l1 + l2 + l3)
    y_axis = rotation[:, 1]
    quarter = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # Rz(-90°): Y onto X
    identity = np.eye(3)
    # role: (rest rotation, rest head, length, parent role, mirrors the first bone's parent and flags)
    layout = {
        "base": (rotation, head, None, None, True),
        "aim": (rotation, head, 0.25 * size, "base", False),
        "upper": (rotation @ geometry["offsets"][0], head, l1, "aim", False),
        "lower": (rotation @ geometry["offsets"][1], head + l1 * y_axis, l2, "upper", False),
        "wrist": (rotation @ quarter, head + (l1 + l2) * y_axis, 0.1 * size, "lower", False),
        "target": (identity, head, 0.25 * size, "base", False),
        "goal": (identity, head - l3 * geometry["up"], 0.1 * size, "target", False),
        "hand": (geometry["hand"], head, l3, "target", False),
    }
    if not geometry["rolled"]:
        layout["tip"] = (geometry["hand"] @ geometry["offsets"][2], head, l3, "hand", False)
    if spec.plane in BODY_FOLLOWING:
        layout["normal"] = (rotation, head + geometry["rest_normal"] * 0.25 * size, 0.1 * size, "base", False)
        if spec.bend != "REST":  # the side is chosen per evaluation: a probe of û's side, a turn about a
            layout["probe"] = (rotation, head, 0.1 * size, "aim", False)
            layout["side"] = (rotation, head, 0.25 * size, "aim", False)
            layout["upper"] = layout["upper"][:3] + ("side", False)
    return layout


def _add_bones(armature, edit_bones, chain, spec, layout, entry):
    """The helper bones of ``layout``, inside an edit session of the armature; records their names in ``entry``."""
    data = armature.data
    source = edit_bones[chain.names[0]]
    names = {}
    for role, (bone_rotation, bone_head, length, parent, mirror) in layout.items():
        bone = edit_bones.new(_bone_name(spec.name, role))
        names[role] = bone.name
        entry["bones"].append(bone.name)
        bone.head = (0.0, 0.0, 0.0)
        bone.tail = (0.0, float(length if length else source.length), 0.0)
        bone.matrix = _matrix(bone_rotation, bone_head)
        if mirror:  # B's pose must be A₁: the first bone's parent, rest and inheritance, no own rotation
            bone.parent = source.parent
            bone.tail, bone.roll = source.tail, source.roll
            for flag in ("use_connect", "use_inherit_rotation", "inherit_scale", "use_local_location",
                         "use_relative_parent"):
                setattr(bone, flag, getattr(source, flag))
        bone.use_deform = False
        for collection in list(bone.collections):  # new bones join the active collection
            collection.unassign(bone)
    for role, (_, _, _, parent, mirror) in layout.items():  # all made first: "upper" may hang from "side"
        if not mirror:
            edit_bones[names[role]].parent = edit_bones[names[parent]]
    collection = data.collections.get(entry["collection"])
    for name in names.values():
        collection.assign(edit_bones[name])
    return names


def _constraint(pose_bone, kind, role, entry=None, **settings):
    constraint = pose_bone.constraints.new(kind)
    constraint.name = f"{PREFIX} {role}"
    for key in sorted(settings, key=lambda key: key not in ("target", "subtarget")):  # spaces need the target
        setattr(constraint, key, settings[key])
    if entry is not None:
        entry["constraints"].append([pose_bone.name, constraint.name])
    return constraint


def _driver(entry, pose_bone, attribute, index, expression, variables):
    fcurve = pose_bone.driver_add(attribute, index)
    entry["drivers"].append([fcurve.data_path, index])
    driver = fcurve.driver
    driver.type = "SCRIPTED"
    for name, kind, targets in variables:
        variable = driver.variables.new()
        variable.name, variable.type = name, kind
        for target, settings in zip(variable.targets, targets):
            for key, value in settings.items():
                setattr(target, key, value)
    driver.expression = expression
    return fcurve


def _add_side(entry, armature, helper, names, spec, geometry):
    """PARENT with bend TOWARD or AWAY: the solve bends toward the side of the carried plane that û is on
    (``(N × (P_T - O))·û >= 0``), or away from it. ``aim`` has X = ``n``, Y = ``a``, Z = ``b`` on the rest
    side; ``probe`` (its child, on the target's head) reads ``(E - O)·b = l3·(û·b)`` in aim's frame, as
    ``P_T - O`` is along ``a``. ``side`` turns 180° about ``a`` when the solve takes the other side: ``n``
    and ``b`` flip together, as the solver's ``bend_toward=False`` does."""
    _constraint(helper["probe"], "COPY_LOCATION", "target side", target=armature, subtarget=names["target"])
    side = helper["side"]
    side.rotation_mode = "AXIS_ANGLE"
    side.rotation_axis_angle = (0.0, 0.0, 1.0, 0.0)
    # A tie (û in the plane of n and a, e.g. along a) counts as û's side in the solve: the bias, far above
    # float32 noise and far below any real side (in the probe's rest units), keeps it so in the rig.
    bias = _number(_SIDE_BIAS * float(np.sum(geometry["lengths"])))
    flip = f"side<-{bias}" if spec.bend == "TOWARD" else f"side>=-{bias}"
    _driver(entry, side, "rotation_axis_angle", 0, f"{_number(math.pi)}*({flip})", [
        ("side", "TRANSFORMS", [dict(id=armature, bone_target=names["probe"], transform_type="LOC_Z",
                                     transform_space="LOCAL_SPACE")])])


def _add_rig(armature, chain, spec, geometry, names, entry):
    """Constraints and drivers on the helpers and the chain's bones."""
    bones = armature.pose.bones
    helper = {role: bones[name] for role, name in names.items()}
    for pose_bone in helper.values():
        pose_bone.rotation_mode = "QUATERNION"
        # The rig's channels, not the animator's: locked, they are left out by keying sets (Whole Character keys
        # every bone, hidden or not, whose name is not Rigify's DEF-, MCH-, ORG-...) and by the transform tools.
        pose_bone.lock_location = pose_bone.lock_rotation = pose_bone.lock_scale = (True, True, True)
        pose_bone.lock_rotation_w = pose_bone.lock_rotations_4d = True
    first = bones[chain.names[0]]

    if not armature.data.bones[chain.names[0]].use_connect:  # B's head follows the first bone's location
        for index in range(3):
            _driver(entry, helper["base"], "location", index, "location", [
                ("location", "SINGLE_PROP", [dict(id_type="OBJECT", id=armature,
                                                  data_path=f"{bone_path(first.name, 'location')}[{index}]")])])

    target = dict(target=spec.target, subtarget=spec.target_bone or "")
    _constraint(helper["target"], "COPY_LOCATION", "target location", **target)
    _constraint(helper["target"], "COPY_ROTATION", "target rotation", **target)

    own = dict(target=armature)
    _constraint(helper["aim"], "DAMPED_TRACK", "aim", subtarget=names["goal"], track_axis="TRACK_Y", **own)
    if spec.plane in BODY_FOLLOWING:  # X = n, Z = b on the rest side; "side" turns them to the other side
        side = dict(subtarget=names["normal"], track_axis="TRACK_X", **own)
    else:
        toward = spec.bend == "TOWARD" or (spec.bend == "REST" and (spec.plane == "POLE" or chain.rest_toward))
        reference = (dict(target=spec.pole, subtarget=spec.pole_bone or "") if spec.plane == "POLE"
                     else dict(subtarget=names["target"], **own))
        side = dict(track_axis="TRACK_Z" if toward else "TRACK_NEGATIVE_Z", **reference)
    _constraint(helper["aim"], "LOCKED_TRACK", "bend plane", lock_axis="LOCK_Y", **side)
    if "side" in helper:
        _add_side(entry, armature, helper, names, spec, geometry)

    # θ0 and θ1 from the law of cosines on q = |P_T - O| in A₁'s units: the Distance variable is in world
    # space, so q = distance / (world scale of B). Clamped: the closest pose out of reach (seed 001).
    l1, l2, _ = (float(v) for v in geometry["lengths"])
    variables = [
        ("distance", "LOC_DIFF", [dict(id=armature, bone_target=names["base"], transform_space="WORLD_SPACE"),
                                  dict(id=armature, bone_target=names["goal"], transform_space="WORLD_SPACE")]),
        ("scale", "TRANSFORMS", [dict(id=armature, bone_target=names["base"], transform_type="SCALE_AVG",
                                      transform_space="WORLD_SPACE")]),
    ]
    theta0 = (f"acos(clamp((distance*distance+{_number(l1 * l1 - l2 * l2)}*scale*scale)/"
              f"(max(distance*scale,{_number(_TINY)})*{_number(2.0 * l1)}),-1,1))")
    theta1 = (f"-acos(clamp((distance*distance-{_number(l1 * l1 + l2 * l2)}*scale*scale)/"
              f"(max(scale*scale,{_number(_TINY)})*{_number(2.0 * l1 * l2)}),-1,1))")
    for role, offset, expression in (("upper", geometry["offsets"][0], theta0),
                                     ("lower", geometry["offsets"][1], theta1)):
        pose_bone = helper[role]
        pose_bone.rotation_mode = "AXIS_ANGLE"
        pose_bone.rotation_axis_angle = [0.0] + [float(v) for v in offset.T @ np.array([1.0, 0.0, 0.0])]
        _driver(entry, pose_bone, "rotation_axis_angle", 0, expression, variables)

    pose = dict(owner_space="POSE", target_space="POSE", **own)
    _constraint(helper["hand"], "COPY_LOCATION", "wrist", subtarget=names["wrist"], **pose)
    if not geometry["rolled"]:
        _constraint(helper["hand"], "LOCKED_TRACK", "bend normal", subtarget=names["wrist"], head_tail=1.0,
                    lock_axis="LOCK_Y", track_axis="TRACK_X", **own)
    sources = (names["upper"], names["lower"], names["hand"] if geometry["rolled"] else names["tip"])
    for bone_name, source in zip(chain.names, sources):
        _constraint(bones[bone_name], "COPY_TRANSFORMS", f"{spec.name}", entry, subtarget=source, **pose)


def build(armature, chain, spec):
    """Build the rig of one chain. ``chain``: the validated Chain (rig.read_chain; the caller has also
    run the solver's other refusals, check_target); ``spec``: its settings (name, target, target_bone,
    up_axis, plane 'TARGET'/'POLE'/'PARENT', pole, pole_bone, bend, roll_axis). Raises ChainError,
    changing nothing, on a chain the rig cannot be built for."""
    build_many(armature, [(chain, spec)])


def build_many(armature, chains):
    """:func:`build` for several ``(chain, spec)`` pairs, their bones added in one edit session (entering and leaving
    Edit Mode costs tens of ms on a character's armature, each time). All or nothing: on an error, every rig of the
    call is removed."""
    for chain, spec in chains:
        check(armature, chain, spec)
    record = _record(armature, to_change=True)
    data = armature.data
    built = []  # (chain, spec, geometry, layout, entry)
    try:
        for chain, spec in chains:
            entry = {"chain": list(chain.names), "bones": [], "constraints": [], "drivers": [],
                     # whether the armature had animation data before any rig: the last rig removed clears it if not
                     "animation_data": (armature.animation_data is not None
                                        and all(e["animation_data"] for e in record.values()))}
            collection_name = next((e["collection"] for e in record.values() if e["collection"] in data.collections),
                                   None)
            if collection_name is None:
                active_index = data.collections.active_index
                collection = data.collections.new(COLLECTION)
                collection.is_visible = False
                data.collections.active_index = active_index
                collection_name = collection.name
                entry["collection_active_index"] = active_index
            else:  # shared with the chains' rigs built before: whichever is removed last restores the active one
                entry["collection_active_index"] = next(e["collection_active_index"] for e in record.values()
                                                        if e["collection"] == collection_name)
            entry["collection"] = collection_name
            record[spec.name] = entry
            geometry = _rest_geometry(chain, spec)
            built.append((chain, spec, geometry, _layout(chain, spec, geometry), entry))
        with _EditMode(armature) as edit_bones:
            names = [_add_bones(armature, edit_bones, chain, spec, layout, entry)
                     for chain, spec, _, layout, entry in built]
        for (chain, spec, geometry, _, entry), rig_names in zip(built, names):
            _add_rig(armature, chain, spec, geometry, rig_names, entry)
    except BaseException:
        _write_record(armature, record)
        remove_many(armature, [spec.name for _, spec, _, _, _ in built])
        raise
    _write_record(armature, record)
    bpy.context.view_layer.update()


def _used_elsewhere(armature, names):
    """Of the helper bones ``names``, those another object on the same Armature datablock still uses (listed in
    its own rig record, which an Alt+D duplicate copies, or followed by its constraints): bones live in the
    datablock, so deleting them would break that object's rig while it still shows as built."""
    names = set(names)
    if not names or armature.data.users < 2:
        return set()
    used = set()
    for other in bpy.data.objects:
        if other is armature or other.type != "ARMATURE" or other.data != armature.data:
            continue
        for entry in _record(other).values():
            used.update(name for name in entry.get("bones", ()) if name in names)
        for pose_bone in other.pose.bones:
            used.update(constraint.subtarget for constraint in pose_bone.constraints
                        if getattr(constraint, "target", None) == other
                        and getattr(constraint, "subtarget", "") in names)
    return used


def remove(armature, chain_name):
    """Delete every bone, constraint, driver and property the chain's rig added. Returns False when the
    chain has no rig; raises ChainError, changing nothing, when its bones are linked from a library."""
    return bool(remove_many(armature, [chain_name]))


def remove_many(armature, chain_names):
    """:func:`remove` for several chains, their bones deleted in one edit session. Returns how many had a rig."""
    record = _record(armature, to_change=True)
    entries = [(name, record.pop(name)) for name in dict.fromkeys(chain_names) if name in record]
    if not entries:
        return 0
    if armature.data.library is not None or armature.data.override_library is not None:
        raise ChainError(f"Armature '{armature.name}' uses bones linked from a library; remove the rig in the "
                       "library file, or mute it here")
    data = armature.data
    if any(name in data.bones for _, entry in entries for name in entry["bones"]):
        _check_editable(armature)
    deleted = []
    for chain_name, entry in entries:
        doomed = [name for name in entry["bones"] if name in data.bones]
        shared = _used_elsewhere(armature, doomed)
        # By what was recorded, and by what points at the helpers: Blender renames a bone in constraints and
        # driver paths, not in the record.
        helper_paths = tuple(bone_path(name, "") for name in doomed)
        constraints = {(pose_bone.name, constraint.name): (pose_bone, constraint)
                       for pose_bone, constraint in rig_constraints(armature, chain_name)}
        for pose_bone in armature.pose.bones:
            for constraint in pose_bone.constraints:
                if (constraint.name.startswith(PREFIX) and getattr(constraint, "target", None) == armature
                        and getattr(constraint, "subtarget", "") in doomed):
                    constraints[(pose_bone.name, constraint.name)] = (pose_bone, constraint)
        for pose_bone, constraint in constraints.values():
            pose_bone.constraints.remove(constraint)
        animation = armature.animation_data
        if animation is not None:
            for data_path, index in entry["drivers"]:
                fcurve = animation.drivers.find(data_path, index=index)
                if fcurve is not None:
                    animation.drivers.remove(fcurve)
            for fcurve in [f for f in animation.drivers if f.data_path.startswith(helper_paths)]:
                animation.drivers.remove(fcurve)
        for name in shared:  # kept for the other object; this object's constraints on them would have gone with them
            constraints = armature.pose.bones[name].constraints
            for constraint in list(constraints):
                constraints.remove(constraint)
        deleted += [name for name in doomed if name not in shared]
    if deleted:
        with _EditMode(armature) as edit_bones:
            for name in deleted:
                edit_bones.remove(edit_bones[name])
    for _, entry in entries:
        collection = data.collections.get(entry["collection"])
        if (collection is not None and not any(e["collection"] == entry["collection"] for e in record.values())
                and not collection.bones):
            active_index = data.collections.active_index
            data.collections.remove(collection)
            data.collections.active_index = entry.get("collection_active_index", active_index)
    animation = armature.animation_data
    if (not all(entry["animation_data"] for _, entry in entries) and animation is not None
            and animation.action is None and not animation.drivers and not animation.nla_tracks):
        armature.animation_data_clear()
    _write_record(armature, record)
    bpy.context.view_layer.update()
    return len(entries)
