"""The sidebar panel: View3D > Sidebar > IK."""
import math

import bpy

from . import rig
from .ops import distance_text


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
        layout.use_property_split = True
        layout.use_property_decorate = False
        armature = context.active_object
        settings = armature.blender_ik

        layout.prop_search(settings, "tip_bone", armature.data, "bones", icon="BONE_DATA")
        try:
            names = rig.chain_names(armature, settings.tip_bone)
            layout.label(text=" > ".join(names), icon="LINKED")
        except rig.RigError as error:
            layout.label(text=str(error), icon="ERROR")
        layout.prop(settings, "target")
        layout.prop(settings, "up_axis", expand=True)
        layout.prop(settings, "plane")
        if settings.plane == "POLE":
            layout.prop(settings, "pole")
        layout.prop(settings, "bend")
        layout.prop(settings, "roll_axis")

        row = layout.row(align=True)
        row.operator("blender_ik.solve", icon="CON_KINEMATIC")
        row.operator("blender_ik.add_target", icon="EMPTY_SINGLE_ARROW")
        layout.prop(settings, "live", toggle=True, icon="PLAY" if not settings.live else "PAUSE")

        box = layout.box()
        if settings.result_message:
            box.label(text=settings.result_message, icon="ERROR")
        if settings.has_result:
            if settings.result_reachable:
                box.label(text="Target reached", icon="CHECKMARK")
            else:
                miss = distance_text(context, armature, settings.result_miss)
                box.label(text=f"Out of reach by {miss}", icon="ERROR")
            names = ("Yaw θy", "θ0", "θ1", "Wrist θ2", "Roll β")
            grid = box.grid_flow(columns=2, even_columns=True)
            for name, angle in zip(names, settings.result_angles):
                grid.label(text=name)
                grid.label(text=f"{math.degrees(angle):.2f}°")
        else:
            box.label(text="Not solved yet")


class VIEW3D_PT_blender_ik_bake(bpy.types.Panel):
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "IK"
    bl_label = "Bake"
    bl_parent_id = "VIEW3D_PT_blender_ik"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        from .bake import scene_range
        layout = self.layout
        layout.use_property_split = True
        layout.use_property_decorate = False
        settings = context.active_object.blender_ik
        layout.prop(settings, "bake_use_scene_range")
        column = layout.column(align=True)
        column.enabled = not settings.bake_use_scene_range
        column.prop(settings, "bake_frame_start")
        column.prop(settings, "bake_frame_end")
        layout.prop(settings, "bake_step")
        start, end = (scene_range(context.scene) if settings.bake_use_scene_range
                      else (settings.bake_frame_start, settings.bake_frame_end))
        layout.operator_context = "EXEC_DEFAULT"
        operator = layout.operator("blender_ik.bake", icon="KEYINGSET", text=f"Bake Frames {start}-{end}")
        operator.frame_start, operator.frame_end, operator.step = start, end, settings.bake_step


classes = (VIEW3D_PT_blender_ik, VIEW3D_PT_blender_ik_bake)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
