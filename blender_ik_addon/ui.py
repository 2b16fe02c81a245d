"""The sidebar panel: View3D > Sidebar > IK. A list of the armature's chains, the active chain's settings
and read-out below it, and the Bake sub-panel."""
import math

import bpy

from . import runtime
from .bake import scene_range
from .chain import ChainError, chain_path, shows_solve
from .ops import rig_state
from .props import chain_spec
from .report import distance_text, frame_span

STATUS_ICONS = {runtime.REACHED: "CHECKMARK", runtime.OUT_OF_REACH: "ORIENTATION_GLOBAL", runtime.ERROR: "ERROR"}
RIG_ICONS = {"BUILT": "CONSTRAINT_BONE", "STALE": "ERROR", "MUTED": "HIDE_ON", "GONE": "ERROR"}
RIG_TEXT = {"BUILT": "Rig built: Blender evaluates this chain by itself",
            "STALE": "Rig out of date (a setting or the rest pose changed): Build Rig again",
            "MUTED": "Rig muted after a bake (the keys drive the chain): Build Rig to use it again",
            "GONE": "Rig's constraints are gone (the armature was re-generated?): Build Rig again, or Remove Rig"}
ANGLE_LABELS = ("Yaw θy", "θ0", "θ1", "Wrist θ2", "Roll β")
PAST_ICON = "FILE_REFRESH"  # a read-out Blender no longer shows


def _shown(armature, chain_settings, result):
    """Whether Blender still shows the solve a read-out describes (an error describes no pose)."""
    return result.status == runtime.ERROR or not result.shown or shows_solve(armature, chain_spec(chain_settings),
                                                                             result.shown)


class BLENDER_IK_UL_chains(bpy.types.UIList):
    """The armature's chains: enable checkbox, name, status of the last solve, Live toggle."""

    def draw_item(self, context, layout, data, item, icon, active_data, active_property, index=0, flt_flag=0):
        armature = data.id_data
        row = layout.row(align=True)
        row.prop(item, "enabled", text="")
        row.prop(item, "name", text="", emboss=False, icon="BONE_DATA")
        result = runtime.readout(armature, item.name or item.tip_bone)
        if result is None:
            row.label(text="", icon="BLANK1")
        else:
            row.label(text="", icon=STATUS_ICONS[result.status] if _shown(armature, item, result) else PAST_ICON)
        rig = rig_state(armature, item)
        row.label(text="", icon=RIG_ICONS.get(rig, "BLANK1"))
        row.prop(item, "live", text="", emboss=False, icon="PAUSE" if item.live else "PLAY")


def _goal(layout, chain_settings, role):
    layout.prop(chain_settings, role)
    obj = getattr(chain_settings, role)
    if obj is not None and obj.type == "ARMATURE":
        layout.prop_search(chain_settings, f"{role}_bone", obj.data, "bones", text="Bone")
    elif getattr(chain_settings, f"{role}_bone"):  # left from an armature: Solve and Bake ask to clear it here
        row = layout.row()
        row.alert = True
        row.prop(chain_settings, f"{role}_bone", text="Bone")


class VIEW3D_PT_blender_ik(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "IK"
    bl_label = "Analytic Three-Link IK"

    @classmethod
    def poll(cls, context):
        return context.active_object is not None and context.active_object.type == "ARMATURE"

    def draw(self, context):
        layout = self.layout
        armature = context.active_object
        settings = armature.blender_ik

        row = layout.row()
        row.template_list("BLENDER_IK_UL_chains", "", settings, "chains", settings, "active_chain_index", rows=3)
        column = row.column(align=True)
        column.operator("blender_ik.chain_add", icon="ADD", text="")
        column.operator("blender_ik.chain_remove", icon="REMOVE", text="")
        column.separator()
        column.operator("blender_ik.chain_move", icon="TRIA_UP", text="").direction = "UP"
        column.operator("blender_ik.chain_move", icon="TRIA_DOWN", text="").direction = "DOWN"
        row = layout.row(align=True)
        row.operator("blender_ik.chains_from_selected", icon="GROUP_BONE")
        row.operator("blender_ik.chain_mirror", icon="MOD_MIRROR")

        row = layout.row(align=True)
        row.operator("blender_ik.solve", icon="CON_KINEMATIC", text="Solve All").chains = "ALL"
        row.operator("blender_ik.solve", text="Active").chains = "ACTIVE"

        chain_settings = settings.active_chain
        if chain_settings is None:
            layout.label(text="Add a chain for the active bone, or one per selected bone", icon="INFO")
            return
        layout.use_property_split = True
        layout.use_property_decorate = False
        layout.prop_search(chain_settings, "tip_bone", armature.data, "bones", icon="BONE_DATA")
        try:
            names, through = chain_path(armature, chain_settings.tip_bone)
            layout.label(text=" > ".join(names), icon="LINKED")
            if through:  # joint helpers (Rigify's MCH-hand_fk.L): the chain takes them at rest
                layout.label(text=f"through {', '.join(through)}", icon="BLANK1")
        except ChainError as error:
            layout.label(text=str(error), icon="ERROR")
        _goal(layout, chain_settings, "target")
        layout.prop(chain_settings, "up_axis", expand=True)
        layout.prop(chain_settings, "plane")
        if chain_settings.plane == "POLE":
            _goal(layout, chain_settings, "pole")
        layout.operator("blender_ik.place_pole", icon="PIVOT_CURSOR")
        layout.prop(chain_settings, "bend")
        layout.prop(chain_settings, "roll_axis")
        if chain_settings.roll_axis.lstrip("-") == chain_settings.up_axis.lstrip("-"):
            layout.label(text="The last bone points along this axis already: pick another one to roll it", icon="ERROR")
        row = layout.row(align=True)
        row.operator("blender_ik.add_target", icon="EMPTY_SINGLE_ARROW")
        # The chain's own: not the last run's choice, which the Bake panel's Snap Targets may have made All.
        row.operator("blender_ik.snap_target", icon="SNAP_ON").chains = "ACTIVE"
        row.prop(chain_settings, "live", toggle=True, icon="PAUSE" if chain_settings.live else "PLAY")
        rig = rig_state(armature, chain_settings)
        row = layout.row(align=True)
        row.operator("blender_ik.build_rig", icon="CONSTRAINT_BONE",
                     text="Rebuild Rig" if rig != "NONE" else "Build Rig").chains = "ACTIVE"
        if rig != "NONE":
            row.operator("blender_ik.remove_rig", icon="X", text="Remove Rig").chains = "ACTIVE"
            layout.label(text=RIG_TEXT[rig], icon=RIG_ICONS[rig])

        box = layout.box()
        result = runtime.readout(armature, chain_settings.name or chain_settings.tip_bone)
        if result is None:
            box.label(text="Not solved yet")
        elif result.status == runtime.ERROR:
            box.label(text=result.message, icon="ERROR")
        else:
            past = not _shown(armature, chain_settings, result)
            if past:  # a built rig refuses Solve and Live: it poses the chain itself
                advice = ("the built rig poses the chain" if rig in ("BUILT", "STALE")
                          else "Solve again, or turn Live on")
                box.label(text=f"Changed since the last solve: {advice}", icon=PAST_ICON)
            text = ("Target reached" if result.status == runtime.REACHED
                    else f"Out of reach by {distance_text(context.scene, armature, result.miss)}")
            box.label(text=f"Last solve: {text.lower()}" if past else text, icon=STATUS_ICONS[result.status])
            grid = box.grid_flow(columns=2, even_columns=True)
            for name, angle in zip(ANGLE_LABELS, result.angles):
                grid.label(text=name)
                grid.label(text=f"{math.degrees(angle):.2f}°")


class VIEW3D_PT_blender_ik_bake(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "IK"
    bl_label = "Bake"
    bl_parent_id = "VIEW3D_PT_blender_ik"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = context.active_object.blender_ik
        layout.prop(settings, "bake_use_scene_range")
        column = layout.column(align=True)
        column.enabled = not settings.bake_use_scene_range
        column.prop(settings, "bake_frame_start")
        column.prop(settings, "bake_frame_end")
        layout.prop(settings, "bake_output")
        samples = settings.bake_output == "SAMPLES"
        row = layout.row()
        row.enabled = not samples  # samples are one per frame
        row.prop(settings, "bake_step")
        start, end = (scene_range(context.scene) if settings.bake_use_scene_range
                      else (settings.bake_frame_start, settings.bake_frame_end))
        layout.operator_context = "EXEC_DEFAULT"
        step = 1 if samples else settings.bake_step
        for operator in _range_buttons(layout, "blender_ik.bake", "Bake All", "KEYINGSET", start, end, step):
            operator.output = settings.bake_output
            if samples:  # else Blender gives the button the last run's interpolation, which samples may refuse
                operator.interpolation = "LINEAR"
        # The other way: the targets keyed where the chains' tips are, following the bones' animation (FK to IK).
        for operator in _range_buttons(layout, "blender_ik.snap_target", "Snap Targets", "SNAP_ON", start, end, step):
            operator.frames = "RANGE"


def _range_buttons(layout, idname, label, icon, start, end, step):
    """A row of two ``idname`` buttons over frames ``start``-``end`` every ``step``-th: All (``label`` and the range)
    and Active. Yields each button's properties, its range, step and chains set."""
    row = layout.row(align=True)
    for which, text in (("ALL", f"{label} {frame_span(start, end)}"), ("ACTIVE", "Active")):
        operator = row.operator(idname, icon=icon if which == "ALL" else "NONE", text=text)
        operator.frame_start, operator.frame_end, operator.step, operator.chains = start, end, step, which
        yield operator


classes = (BLENDER_IK_UL_chains, VIEW3D_PT_blender_ik, VIEW3D_PT_blender_ik_bake)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
