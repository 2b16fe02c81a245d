"""The settings at ``Object.blender_ik`` (on the armature object): a list of chains and the bake range.

Settings are read in one place, :func:`chain_spec`, into a plain :class:`chain.ChainSpec`; everything
below the operators takes that. The 0.1 single-chain API (``Object.blender_ik.tip_bone`` and friends)
is kept as a shorthand for the active chain, and files saved by 0.1 are moved into ``chains[0]``.
"""
import bpy
import numpy as np
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

from .chain import ChainSpec

AXIS_ITEMS = [
    ("X", "X", "The target's local +X axis"),
    ("Y", "Y", "The target's local +Y axis"),
    ("Z", "Z", "The target's local +Z axis"),
    ("-X", "-X", "The target's local -X axis"),
    ("-Y", "-Y", "The target's local -Y axis"),
    ("-Z", "-Z", "The target's local -Z axis"),
]
# Explicit numbers: files store the number, and PARENT came after TARGET and POLE.
PLANE_ITEMS = [
    ("PARENT", "Follow Parent", "The rest bend plane, carried by the chain's parent bone: hips turn, knees turn "
                                "with them, and the foot's direction never flips the knee", 2),
    ("TARGET", "Target Axis", "The bend plane contains the target's up axis: all three bones in one plane "
                              "(seed 000's roll)", 0),
    ("POLE", "Pole", "The bend plane goes through a pole object or bone; the last bone still follows the up axis",
     1),
]
# What a bake writes (bake.OUTPUTS), for the Bake panel and operator. Explicit numbers: files store the number.
OUTPUT_ITEMS = [
    ("KEYS", "Keys", "Rotation keyframes, editable", 0),
    ("SAMPLES", "Samples", "One sample per frame, played linearly between frames, in a quarter of the memory of "
                           "keys; not editable until Graph Editor > Channel > Samples to Keys (step 1 and Linear "
                           "only; refused on F-curves with keys outside the range)", 1),
]
BEND_ITEMS = [
    ("REST", "As Rest Pose", "Bend to the side the chain bends to in its rest pose (Follow Parent: that side of "
                             "the carried plane; Target Axis: relative to where the last bone points; Pole: toward "
                             "the pole)"),
    ("TOWARD", "Toward", "The middle joint goes to the side the up axis (or the pole) is on"),
    ("AWAY", "Away", "The middle joint goes to the other side"),
]
ROLL_ITEMS = [("NONE", "Keep Rest Roll", "Each bone keeps its rest roll relative to the bend plane")] + [
    (identifier, f"Target {name}", f"The last bone's local Z turns toward the target's {name} axis, so it "
                                   "follows the target's full rotation")
    for identifier, name, _ in AXIS_ITEMS]

# A library override of the armature keeps its own IK settings.
_OVERRIDABLE = {"LIBRARY_OVERRIDABLE"}
# The chain settings a ChainSpec carries: its fields but the last, name (chain_spec gives it the tip bone's if empty).
SPEC_FIELDS = ChainSpec._fields[:-1]


# Called with the armature and the chain when a chain's Live setting changes. live.py, above this module, adds its
# handler on register(), so this module imports nothing above it.
live_listeners = []


def _live_changed(chain_settings, context):
    for listener in live_listeners:
        listener(chain_settings.id_data, chain_settings)


def _enabled_changed(chain_settings, context):
    if chain_settings.live:  # a live chain starts (or stops) following as when its Live is switched
        _live_changed(chain_settings, context)


def _setting_changed(chain_settings, context):
    """A live chain's setting changed: have Blender update the armature, so that Live sees it. Without an update
    callback, a script's change tagged nothing (Blender tags the ID for a property edited in the UI only): a script that
    retargeted a live chain, or changed its up axis, left the chain where it was until something else moved. With one,
    Blender itself tags the owner for a full update on every set, from the UI or a script (rna_property_update does so
    for every ID property: measured on 4.2, 5.0 and 5.2), so a set-up's first update evaluates the armature; the tag
    here says what this callback is for, and holds should Blender stop doing it."""
    if chain_settings.live and chain_settings.enabled:
        chain_settings.id_data.update_tag(refresh={"OBJECT"})


def _goal_is_armature(obj):
    return obj is not None and obj.type == "ARMATURE"


class BLENDER_IK_PG_chain(bpy.types.PropertyGroup):
    """One chain: a tip bone and its two ancestors, reaching for a target. ``name`` (the list's label)
    defaults to the tip bone's name."""

    enabled: BoolProperty(override=_OVERRIDABLE, name="Enabled", default=True, update=_enabled_changed,
                          description="Solve and bake this chain with the others ('All' chains)")
    # Each setting Live reads tells Live when a script changes it (see _setting_changed).
    tip_bone: StringProperty(
        override=_OVERRIDABLE, name="Tip Bone", update=_setting_changed,
        description="The last bone of the chain; the chain is this bone, its parent and its grandparent (passing "
                    "through a bone whose head is where the one below starts, a joint helper). Empty: the active bone")
    target: PointerProperty(
        override=_OVERRIDABLE, name="Target", type=bpy.types.Object, update=_setting_changed,
        description="The object (normally an Empty, or an armature with a Target Bone) the tip reaches for")
    target_bone: StringProperty(
        override=_OVERRIDABLE, name="Target Bone", update=_setting_changed,
        description="When the target is an armature: the bone whose head the tip reaches for and whose axes "
                    "give the up axis (a control bone of this armature, or of another)")
    up_axis: EnumProperty(override=_OVERRIDABLE, name="Up Axis", items=AXIS_ITEMS, default="Z", update=_setting_changed,
                          description="The target's axis that the last bone points along")
    plane: EnumProperty(override=_OVERRIDABLE, name="Bend Plane", default="PARENT", items=PLANE_ITEMS,
                        update=_setting_changed, description="How the plane the chain bends in is chosen")
    pole: PointerProperty(override=_OVERRIDABLE, name="Pole", type=bpy.types.Object, update=_setting_changed,
                          description="The object the middle joint points toward (Pole bend plane)")
    pole_bone: StringProperty(override=_OVERRIDABLE, name="Pole Bone", update=_setting_changed,
                              description="When the pole is an armature: the bone whose head is the pole")
    bend: EnumProperty(override=_OVERRIDABLE, name="Bend", default="REST", items=BEND_ITEMS, update=_setting_changed,
                       description="Which side the middle joint bends to")
    roll_axis: EnumProperty(override=_OVERRIDABLE, name="Roll", default="NONE", items=ROLL_ITEMS,
                            update=_setting_changed, description="How the last bone rolls about its own length")
    live: BoolProperty(override=_OVERRIDABLE, name="Live", default=False, update=_live_changed,
                       description="Re-solve this chain whenever its target, pole, armature or the frame changes")
    rig_signature: StringProperty(options={"HIDDEN"}, override=_OVERRIDABLE,
                                  description="What the chain's built rig encodes, to tell when it is out of date")
    rig_name: StringProperty(options={"HIDDEN"}, override=_OVERRIDABLE,
                             description="The key of the chain's built rig: its name when it was built, so that "
                                         "renaming the chain does not lose its rig")


def _active(settings):
    """The active chain's settings, or None when there are no chains."""
    chains = settings.chains
    if not len(chains):
        return None
    return chains[min(max(settings.active_chain_index, 0), len(chains) - 1)]


def _shorthand(attribute, empty):
    """A 0.1 setting as a Python property that reads and writes the active chain (creating the first)."""
    def get(settings):
        chain_settings = _active(settings)
        return empty if chain_settings is None else getattr(chain_settings, attribute)

    def set(settings, value):
        chain_settings = _active(settings)
        if chain_settings is None:
            chain_settings = settings.chains.add()
            settings.active_chain_index = 0
        setattr(chain_settings, attribute, value)
        if attribute == "tip_bone" and not chain_settings.name:
            chain_settings.name = value

    return property(get, set, doc=f"The active chain's {attribute} (the 0.1 single-chain shorthand)")


class BLENDER_IK_PG_settings(bpy.types.PropertyGroup):
    chains: CollectionProperty(type=BLENDER_IK_PG_chain, override={"LIBRARY_OVERRIDABLE", "USE_INSERTION"},
                               name="Chains", description="The IK chains of this armature")
    active_chain_index: IntProperty(override=_OVERRIDABLE, name="Active Chain", default=0, min=0)

    # The Bake sub-panel's range (the names and meanings of 0.1, so 0.1 files keep theirs).
    bake_use_scene_range: BoolProperty(override=_OVERRIDABLE, name="Scene Range", default=True,
                                       description="Bake the scene's frame range (or its preview range when on)")
    bake_frame_start: IntProperty(override=_OVERRIDABLE, name="Start", default=1, min=-1048574, max=1048574,
                                  description="First frame to bake")
    bake_frame_end: IntProperty(override=_OVERRIDABLE, name="End", default=250, min=-1048574, max=1048574,
                                description="Last frame to bake")
    bake_step: IntProperty(override=_OVERRIDABLE, name="Step", default=1, min=1, max=1000,
                           description="Key every n-th frame")
    bake_output: EnumProperty(override=_OVERRIDABLE, name="Output", items=OUTPUT_ITEMS, default="KEYS",
                              description="What the bake writes")

    # The 0.1 single-chain API: the active chain's settings.
    tip_bone = _shorthand("tip_bone", "")
    target = _shorthand("target", None)
    target_bone = _shorthand("target_bone", "")
    up_axis = _shorthand("up_axis", "Z")
    plane = _shorthand("plane", "PARENT")
    pole = _shorthand("pole", None)
    pole_bone = _shorthand("pole_bone", "")
    bend = _shorthand("bend", "REST")
    roll_axis = _shorthand("roll_axis", "NONE")
    live = _shorthand("live", False)

    @property
    def active_chain(self):
        return _active(self)


def chain_spec(chain_settings):
    """The plain description of one chain's settings (the one place settings are read)."""
    values = [getattr(chain_settings, field) for field in SPEC_FIELDS]
    return ChainSpec(*values, chain_settings.name or values[0])


def rig_key(chain_settings):
    """The key of the chain's built rig in native_rig's record (or the key its rig would get); "" when the chain's
    name is the key another chain's rig was built under (that chain was renamed since, or this one named like it):
    that rig is the other chain's."""
    if chain_settings.rig_name:
        return chain_settings.rig_name
    name = chain_settings.name or chain_settings.tip_bone
    if any(other.rig_name == name for other in chain_settings.id_data.blender_ik.chains):
        return ""
    return name


def duplicate_name(armature):
    """A chain name two of the armature's chains share, or None. Names key each chain's rig, Live state and
    read-out, so they must be unique."""
    chains = armature.blender_ik.chains
    if len(chains) < 2:
        return None
    seen = set()
    for chain_settings in chains:
        name = chain_settings.name or chain_settings.tip_bone
        if name in seen:
            return name
        seen.add(name)
    return None


def selected_chains(armature, which="ALL"):
    """The chain settings an operator acts on: every enabled chain (``'ALL'``) or the active one."""
    settings = armature.blender_ik
    if which == "ACTIVE":
        active = _active(settings)
        return [] if active is None else [active]
    return [chain_settings for chain_settings in settings.chains if chain_settings.enabled]


def unique_chain_name(armature, name):
    names = {chain_settings.name for chain_settings in armature.blender_ik.chains}
    if name not in names:
        return name
    number = 1
    while f"{name}.{number:03d}" in names:
        number += 1
    return f"{name}.{number:03d}"


# -- Files saved by 0.1 ---------------------------------------------------------------------------------
# 0.1 kept one chain's settings directly in Object.blender_ik. Blender keeps such values as raw ID
# properties under the same keys when the properties are no longer declared; enums as item indices.
_LEGACY_AXES = ("X", "Y", "Z", "-X", "-Y", "-Z")
_LEGACY_ENUMS = {"up_axis": _LEGACY_AXES, "plane": ("TARGET", "POLE"), "bend": ("REST", "TOWARD", "AWAY"),
                 "roll_axis": ("NONE",) + _LEGACY_AXES}
_LEGACY_CHAIN_KEYS = ("tip_bone", "target", "up_axis", "plane", "pole", "bend", "roll_axis", "live")
_LEGACY_READOUT_KEYS = ("has_result", "result_reachable", "result_miss", "result_angles", "result_message")


def _legacy_value(key, raw):
    if key in _LEGACY_ENUMS:
        items = _LEGACY_ENUMS[key]
        return items[raw] if isinstance(raw, int) and 0 <= raw < len(items) else None
    if key == "live":
        return bool(raw)
    return raw


def migrate_legacy(obj):
    """Move a 0.1 chain stored on ``obj`` into ``chains[0]``; returns whether there was one."""
    settings = getattr(obj, "blender_ik", None)
    if settings is None or obj.library is not None:
        return False
    stored = settings.keys()  # read once: every operator call starts here
    if not stored:
        return False
    present = [key for key in _LEGACY_CHAIN_KEYS + _LEGACY_READOUT_KEYS if key in stored]
    if not present:
        return False
    values = {key: _legacy_value(key, settings[key]) for key in _LEGACY_CHAIN_KEYS if key in stored}
    for key in present:
        del settings[key]
    if any(value not in (None, "", False) for value in values.values()) and not len(settings.chains):
        chain_settings = settings.chains.add()
        settings.active_chain_index = 0
        chain_settings.plane = "TARGET"  # 0.1's default, whatever the default of new chains is
        live = values.pop("live", False)
        for key, value in values.items():
            if value is not None:
                setattr(chain_settings, key, value)
        chain_settings.name = chain_settings.tip_bone
        chain_settings.live = live
    return True


def migrate_all():
    """Move the 0.1 settings of every local object (after loading a file)."""
    return sum(migrate_legacy(obj) for obj in bpy.data.objects if obj.type == "ARMATURE")


# -- Bone renames ----------------------------------------------------------------------------------------
# Blender renames a bone in constraints, drivers and vertex groups, not in an add-on's settings. The chains' bone
# settings (tip, target and pole bones) follow a rename: each Armature datablock a chain names bones of is remembered as
# its bone names and their rest heads and tails (a rename keeps them to the bit, in Object and Pose Mode as through
# Edit Mode); a name whose bone is no longer where it was moves to the one name now there (see _renames). Anything less
# clear changes nothing, and the chain names the bone it no longer finds.
# Armature datablock session_uid (never reused in a session, as a freed datablock's memory address is) -> (bone names,
# {name: head and tail}, in Edit Mode then)
_bones_seen = {}
# Armature datablock session_uid (which undo keeps) -> {old name: (new name, the bone's head and tail)} of every rename
# followed in this session. The interface pushes a rename's undo step before the update that follows it, so that step
# (undone to, or redone) has the bone renamed and the settings still on the old name; the first look after an undo
# follows these renames again.
_renamed = {}
_BONE_SETTINGS = (("tip_bone", None), ("target_bone", "target"), ("pole_bone", "pole"))


def _bone_ends(data, names):
    bones = data.bones
    ends = np.empty((2, len(names) * 3), dtype=np.float32)
    bones.foreach_get("head_local", ends[0])
    bones.foreach_get("tail_local", ends[1])
    return dict(zip(names, map(tuple, np.hstack((ends[0].reshape(-1, 3), ends[1].reshape(-1, 3))).tolist())))


def _renames(before, now):
    """{old name: new name} of the bones renamed between two looks at an Armature datablock.

    A name whose bone is no longer where it was (gone, or now on another bone: names swapped, as Flip Names does
    in one go) pairs with the one name that now has that bone's head and tail. A name that now has another bone's
    place is taken only when its own bone went somewhere too (else that bone was moved, and the name stays its).
    Every new name must be on a bone some name was on: one that is not is an added bone, or a renamed one moved
    aside, and then a copy left at the old place would be taken for the renamed bone, so nothing is followed."""
    (old_names, old_ends, _), (names, ends, _) = before, now
    new = [name for name in names if name not in old_ends]
    shuffled = [name for name in names if name in old_ends and ends[name] != old_ends[name]]
    sources = [name for name in old_names if name not in ends] + shuffled
    left = {old_ends[name] for name in sources}
    if any(ends[name] not in left for name in new):
        return {}
    found = {name: [other for other in new + shuffled if ends[other] == old_ends[name]] for name in sources}
    renames = {name: others[0] for name, others in found.items()
               if len(others) == 1 and (others[0] not in old_ends or found[others[0]])}
    return renames if len(set(renames.values())) == len(renames) else {}


def bone_datas(armature):
    """The Armature datablocks the chains of ``armature`` name bones of: its own, and its goal armatures'."""
    datas = {armature.data.as_pointer(): armature.data} if armature.type == "ARMATURE" else {}
    settings = getattr(armature, "blender_ik", None)
    for chain_settings in settings.chains if settings is not None else ():
        for _, role in _BONE_SETTINGS[1:]:
            goal = getattr(chain_settings, role)
            if goal is not None and goal.type == "ARMATURE":
                datas[goal.data.as_pointer()] = goal.data
    return list(datas.values())


def _chain_owners():
    """The local armature objects that have chains."""
    return (obj for obj in bpy.data.objects
            if obj.type == "ARMATURE" and obj.library is None and len(obj.blender_ik.chains))


def _named_datas():
    """The Armature datablocks any local chain names bones of."""
    return list({data.as_pointer(): data for obj in _chain_owners() for data in bone_datas(obj)}.values())


def unseen_datas(objects):
    """The Armature datablocks the chains of ``objects`` name bones of that have not been looked at yet."""
    datas = {data.session_uid: data for obj in objects for data in bone_datas(obj)}
    return [data for key, data in datas.items() if key not in _bones_seen]


def follow_renames(datas=None, moved=True, seen_only=False):
    """Look at the Armature datablocks ``datas`` (default: those any chain names bones of), remembering their bones,
    and point the chains' bone settings at the new names of the bones renamed since the last look. Returns how many
    settings changed. ``moved=False``: the bones cannot have moved since the last look unless they were renamed too
    (no depsgraph update in between: an operator's call), so only their names are read. ``seen_only``: leave out the
    datablocks not looked at before (a depsgraph update lists every armature whose pose changed, and a rig no chain
    names bones of needs no look: 0.36 ms on a 700-bone one)."""
    changed = 0
    for data in _named_datas() if datas is None else datas:
        key = data.session_uid
        if data.library is not None or (seen_only and key not in _bones_seen):
            continue
        before, names, editing = _bones_seen.get(key), tuple(data.bones.keys()), data.is_editmode
        # A bone's rest head and tail are read-only outside Edit Mode: with the same names, they can have changed
        # only if Edit Mode was on at this look or the last (every pose change lists the Armature datablock, and
        # reading them all costs 0.3 ms on a 700-bone rig). Ends left stale (Apply Pose as Rest) only make a
        # later rename of a bone moved that way go unfollowed.
        if before is not None and before[0] == names and not (moved and (editing or before[2])):
            continue
        now = _bones_seen[key] = names, _bone_ends(data, names), editing
        if before is None:  # after a load, an undo or a redo
            changed += _point_at(data, _recorded_renames(data, now[1]))
            continue
        if before[0] == names:
            continue
        renames = _renames(before, now)
        if renames:
            _renamed.setdefault(data.session_uid, {}).update((old, (new, now[1][new])) for old, new in renames.items())
            changed += _point_at(data, renames)
    return changed


def _recorded_renames(data, ends):
    """{old name: its name now} for the names gone from ``data`` (``ends``: its bones' heads and tails by name) that
    renames followed earlier in the session lead to a bone it has, where that rename left it: an undo or redo back to a
    rename's own step."""
    recorded, found = _renamed.get(data.session_uid, {}), {}
    for old in recorded:
        name, place, seen = old, None, {old}
        while name not in ends and name in recorded and recorded[name][0] not in seen:
            name, place = recorded[name]
            seen.add(name)
        if old not in ends and name in ends and ends[name] == place:
            found[old] = name
    return found


def _point_at(data, renames):
    """Point the chains' bone settings naming a bone of ``data`` at its new name (``renames``: {old: new}); returns how
    many changed."""
    changed = 0
    if not renames:
        return changed
    for obj in _chain_owners():
        for chain_settings in obj.blender_ik.chains:
            for attribute, role in _BONE_SETTINGS:
                owner = obj if role is None else getattr(chain_settings, role)
                name = getattr(chain_settings, attribute)
                if owner is not None and owner.type == "ARMATURE" and owner.data == data and name in renames:
                    setattr(chain_settings, attribute, renames[name])
                    changed += 1
    return changed


def forget_bones(renames=False):
    """After a file load, an undo or a redo: the remembered bones may be another file's, or the future's. ``renames``:
    the renames followed too (a new file, or unregistering: an undo keeps them, see _renamed)."""
    _bones_seen.clear()
    if renames:
        _renamed.clear()


classes = (BLENDER_IK_PG_chain, BLENDER_IK_PG_settings)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Object.blender_ik = PointerProperty(type=BLENDER_IK_PG_settings, override=_OVERRIDABLE)


def unregister():
    del bpy.types.Object.blender_ik
    _unregister_classes()
