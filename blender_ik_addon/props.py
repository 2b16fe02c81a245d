"""The settings PropertyGroup at ``Object.blender_ik`` (on the armature object)."""
import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty, PointerProperty, \
    StringProperty

AXIS_ITEMS = [
    ("X", "X", "The target's local +X axis"),
    ("Y", "Y", "The target's local +Y axis"),
    ("Z", "Z", "The target's local +Z axis"),
    ("-X", "-X", "The target's local -X axis"),
    ("-Y", "-Y", "The target's local -Y axis"),
    ("-Z", "-Z", "The target's local -Z axis"),
]


# A library override of the armature keeps its own IK settings.
_OVERRIDABLE = {"LIBRARY_OVERRIDABLE"}


def _not_self(settings, obj):
    return obj != settings.id_data


def _live_changed(settings, context):
    from . import live
    live.live_changed(settings.id_data)


class BLENDER_IK_PG_settings(bpy.types.PropertyGroup):
    tip_bone: StringProperty(
        override=_OVERRIDABLE, name="Tip Bone",
        description="The last bone of the chain; the chain is this bone, its parent and its grandparent. "
                    "Empty: the active bone")
    target: PointerProperty(
        override=_OVERRIDABLE, name="Target", type=bpy.types.Object, poll=_not_self,
        description="The object (normally an Empty) the tip of the chain reaches for")
    up_axis: EnumProperty(
        override=_OVERRIDABLE, name="Up Axis", items=AXIS_ITEMS, default="Z",
        description="The target's axis that the last bone points along")
    plane: EnumProperty(
        override=_OVERRIDABLE, name="Bend Plane", default="TARGET",
        items=[("TARGET", "Target Axis", "The bend plane contains the target's up axis: all three bones in one plane"),
               ("POLE", "Pole", "The bend plane goes through a pole object; the last bone still follows the up axis")],
        description="How the plane the chain bends in is chosen")
    pole: PointerProperty(
        override=_OVERRIDABLE, name="Pole", type=bpy.types.Object, poll=_not_self,
        description="The object the middle joint points toward (Pole bend plane)")
    bend: EnumProperty(
        override=_OVERRIDABLE, name="Bend", default="REST",
        items=[("REST", "As Rest Pose", "Bend to the side the chain bends to in its rest pose (toward the pole "
                                        "in Pole mode)"),
               ("TOWARD", "Toward", "The middle joint goes to the side the up axis (or the pole) is on"),
               ("AWAY", "Away", "The middle joint goes to the other side")],
        description="Which side the middle joint bends to")
    roll_axis: EnumProperty(
        override=_OVERRIDABLE, name="Roll", default="NONE",
        items=[("NONE", "Keep Rest Roll", "Each bone keeps its rest roll relative to the bend plane")] + [
            (identifier, f"Target {name}", f"The last bone's local Z turns toward the target's {name} axis, so it "
                                           "follows the target's full rotation")
            for identifier, name, _ in AXIS_ITEMS],
        description="How the last bone rolls about its own length")
    live: BoolProperty(
        override=_OVERRIDABLE, name="Live", default=False, update=_live_changed,
        description="Re-solve whenever the target, the pole, the armature or the frame changes")

    # The Bake sub-panel's range.
    bake_use_scene_range: BoolProperty(override=_OVERRIDABLE, name="Scene Range", default=True,
                                       description="Bake the scene's frame range (or its preview range when on)")
    bake_frame_start: IntProperty(override=_OVERRIDABLE, name="Start", default=1, min=-1048574, max=1048574,
                                  description="First frame to bake")
    bake_frame_end: IntProperty(override=_OVERRIDABLE, name="End", default=250, min=-1048574, max=1048574, description="Last frame to bake")
    bake_step: IntProperty(override=_OVERRIDABLE, name="Step", default=1, min=1, max=1000, description="Key every n-th frame")

    # The last solve, for the read-out.
    has_result: BoolProperty(options={"HIDDEN"})
    result_reachable: BoolProperty(options={"HIDDEN"})
    result_miss: FloatProperty(options={"HIDDEN"}, subtype="DISTANCE")
    result_angles: FloatVectorProperty(options={"HIDDEN"}, size=5, subtype="NONE")  # yaw, θ0, θ1, θ2, β (radians)
    result_message: StringProperty(options={"HIDDEN"})


classes = (BLENDER_IK_PG_settings,)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()
    bpy.types.Object.blender_ik = PointerProperty(type=BLENDER_IK_PG_settings, override=_OVERRIDABLE)


def unregister():
    del bpy.types.Object.blender_ik
    _unregister_classes()
