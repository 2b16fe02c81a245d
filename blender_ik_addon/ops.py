"""Operators: thin. Validate, call rig/bake, report."""

import bpy
import numpy as np
from mathutils import Matrix

from . import bake, rig


def _armature_poll(cls, context):
    obj = context.active_object
    if obj is None or obj.type != "ARMATURE":
        cls.poll_message_set("The active object must be an armature")
        return False
    if obj.mode not in {"OBJECT", "POSE"}:
        cls.poll_message_set("Switch to Object or Pose mode")
        return False
    return True


def distance_text(context, armature, distance):
    """An armature-space distance in the scene's units, as the user sees it in the world."""
    return bpy.utils.units.to_string(context.scene.unit_settings.system, "LENGTH",
                                     distance * armature.matrix_world.median_scale)


def store_result(settings, solution, index):
    """Keep the last solve for the panel's read-out."""
    settings.has_result = True
    settings.result_reachable = bool(solution.reachable[index])
    settings.result_miss = float(solution.miss[index])
    settings.result_angles = [float(getattr(solution, name)[index])
                              for name in ("yaw", "theta0", "theta1", "theta2", "roll")]
    settings.result_message = ""


class BLENDER_IK_OT_solve(bpy.types.Operator):
    """Pose the chain so its tip reaches the target and its last bone points along the target's up axis"""

    bl_idname = "blender_ik.solve"
    bl_label = "Solve"
    bl_options = {"REGISTER", "UNDO"}

    poll = classmethod(_armature_poll)

    def execute(self, context):
        armature = context.active_object
        settings = armature.blender_ik
        rig.evaluate_now()
        try:
            chain, solve = rig.solve_current(armature, settings)
        except ValueError as error:  # RigError, and anything numeric the checks did not foresee
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        rig.pose_chain(chain, solve.rotations[0])
        store_result(settings, solve.solution, 0)
        rig.pin_tip_bone(settings, chain.names)
        if solve.solution.reachable[0]:
            self.report({"INFO"}, f"Solved '{chain.names[2]}': the tip is on the target")
        else:
            miss = distance_text(context, armature, float(solve.solution.miss[0]))
            self.report({"WARNING"}, f"Target out of reach by {miss}; the chain takes the closest pose")
        return {"FINISHED"}


def _up_to_bone_matrix(up_axis, roll_axis):
    """The rotation taking the Empty's up axis onto a bone's +Y and its roll axis (or another) onto +Z."""
    column, sign = rig.AXES[up_axis]
    up = np.zeros(3)
    up[column] = sign
    if roll_axis != "NONE" and rig.AXES[roll_axis][0] != column:
        roll_column, roll_sign = rig.AXES[roll_axis]
    else:
        roll_column, roll_sign = (column + 1) % 3, 1.0
    second = np.zeros(3)
    second[roll_column] = roll_sign
    empty_frame = np.stack([up, second, np.cross(up, second)], -1)
    return empty_frame @ rig.BONE_FRAME.T


class BLENDER_IK_OT_add_target(bpy.types.Operator):
    """Create an Empty at the tip of the chain, its up axis along the last bone, and use it as the target"""

    bl_idname = "blender_ik.add_target"
    bl_label = "Add Target"
    bl_options = {"REGISTER", "UNDO"}

    poll = classmethod(_armature_poll)

    def execute(self, context):
        armature = context.active_object
        settings = armature.blender_ik
        rig.evaluate_now()
        try:
            names = rig.read_chain(armature, settings.tip_bone).names
        except rig.RigError as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        tip = armature.pose.bones[names[2]]
        rotation = np.array(armature.matrix_world.to_3x3().normalized() @ tip.matrix.to_3x3().normalized())
        rotation = rotation @ _up_to_bone_matrix(settings.up_axis, settings.roll_axis).T
        matrix = Matrix(rotation.tolist()).to_4x4()
        matrix.translation = armature.matrix_world @ tip.tail

        empty = bpy.data.objects.new(f"{names[2]}_target", None)
        empty.empty_display_type = "SINGLE_ARROW"
        empty.empty_display_size = max(tip.length * armature.matrix_world.median_scale * 0.5, 1e-3)
        # The collection the user is working in (the Outliner's active one), if it can take new objects.
        collection = context.collection
        if collection is None or collection.library is not None or collection.override_library is not None:
            collection = context.scene.collection
        collection.objects.link(empty)
        empty.matrix_world = matrix
        try:
            empty.select_set(True)
        except RuntimeError:  # the collection is excluded from the view layer: nothing to select there
            pass
        settings.tip_bone = names[2]
        settings.target = empty
        self.report({"INFO"}, f"Added target '{empty.name}' at the tip of '{names[2]}'")
        return {"FINISHED"}


class BLENDER_IK_OT_bake(bpy.types.Operator):
    """Bake the chain's IK to rotation keyframes over a frame range (keys outside the range are kept)"""

    bl_idname = "blender_ik.bake"
    bl_label = "Bake IK"
    bl_options = {"REGISTER", "UNDO"}

    # SKIP_SAVE: a new bake offers the scene's range, not the last bake's.
    frame_start: bpy.props.IntProperty(name="Start Frame", min=-1048574, max=1048574, options={"SKIP_SAVE"},
                                       description="First frame to bake (default: the scene or preview range)")
    frame_end: bpy.props.IntProperty(name="End Frame", min=-1048574, max=1048574, options={"SKIP_SAVE"},
                                     description="Last frame to bake (default: the scene or preview range)")
    step: bpy.props.IntProperty(name="Frame Step", default=1, min=1, max=1000, description="Key every n-th frame")
    interpolation: bpy.props.EnumProperty(
        name="Interpolation", default="LINEAR",
        items=[("LINEAR", "Linear", "Straight lines between the baked keys"),
               ("BEZIER", "Bezier", "Smooth curves through the baked keys"),
               ("CONSTANT", "Constant", "Hold each key until the next")],
        description="Interpolation of the new keys")

    poll = classmethod(_armature_poll)

    def _fill_range(self, context):
        start, end = bake.scene_range(context.scene)
        if not self.properties.is_property_set("frame_start"):
            self.frame_start = start
        if not self.properties.is_property_set("frame_end"):
            self.frame_end = end

    def invoke(self, context, event):
        self._fill_range(context)
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        self._fill_range(context)
        armature = context.active_object
        window_manager = context.window_manager
        window_manager.progress_begin(0, 100)
        try:
            result = bake.bake_chain(context.scene, armature, self.frame_start, self.frame_end, self.step,
                                     self.interpolation,
                                     progress=lambda done, total: window_manager.progress_update(100 * done / total))
        except ValueError as error:  # RigError, and anything numeric the checks did not foresee
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        finally:
            window_manager.progress_end()
        self.report({"INFO"}, result.summary())
        return {"FINISHED"}


classes = (BLENDER_IK_OT_solve, BLENDER_IK_OT_add_target, BLENDER_IK_OT_bake)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register():
    _register_classes()


def unregister():
    _unregister_classes()
