"""Review 32: the add-on from Python, as a TD scripts it (timers, handlers, overrides, other add-ons calling it)."""
import pytest

from rigs import arm_with_chain


def _tip_off(bpy, obj, target):
    """How far the chain's tip is from its target, as Blender evaluates them."""
    bpy.context.view_layer.update()
    return (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length


def _no_screen(bpy):
    """The context a script's bpy.app.timers callback runs in: no window, so no screen and no active_object."""
    return bpy.context.temp_override(window=None)


@pytest.mark.parametrize("operator", ["solve", "bake", "build_rig"])
def test_operators_pose_the_chain_from_a_context_without_a_window(blender, operator):
    """A timer (or a window-less override) calling an operator on the armature active in the view layer: the poll read
    context.active_object, which such a context lacks, so it raised AttributeError (a traceback in the console) and
    bpy.ops said the context was incorrect; Build Rig's Edit Mode switch then failed the same way."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    assert _tip_off(bpy, obj, target) > 0.1
    with _no_screen(bpy):
        assert not hasattr(bpy.context, "active_object")
        kwargs = {"frame_start": 1, "frame_end": 3} if operator == "bake" else {}
        assert getattr(bpy.ops.blender_ik, operator)(**kwargs) == {"FINISHED"}
    if operator == "bake":
        bpy.context.scene.frame_set(2)
    assert _tip_off(bpy, obj, target) < 1e-5
    assert obj.mode == "OBJECT" and bpy.context.view_layer.objects.active == obj


def test_chains_from_selected_from_a_context_without_a_window(blender):
    """Chains from Selected reads the armatures in Pose Mode from context.objects_in_mode, which a timer's context
    lacks too."""
    from blender_ik_addon.keys import set_pose_bone_selected
    bpy = blender
    obj, _ = arm_with_chain(bpy)
    obj.blender_ik.chains.clear()
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in obj.pose.bones:
        set_pose_bone_selected(pose_bone, pose_bone.name == "b3")
    with _no_screen(bpy):
        assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    assert [chain.tip_bone for chain in obj.blender_ik.chains] == ["b3"]
    assert bpy.data.objects["b3_target"] == obj.blender_ik.chains[0].target


@pytest.mark.parametrize("operator", ["build_rig", "remove_rig"])
def test_build_and_remove_rig_leave_another_armature_in_edit_mode(blender, operator):
    """A script makes another armature's Edit Mode session, then builds (or removes) a rig on this one, in Object Mode:
    leaving the Edit Mode the rig's bones are added in took every armature out of Edit Mode, the other one's session
    ended behind the script's back. It is refused now, saying so, with nothing changed."""
    from rigs import build_arm
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    view_layer = bpy.context.view_layer
    if operator == "remove_rig":
        assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    bones = sorted(obj.data.bones.keys())
    other = build_arm()
    view_layer.objects.active = other
    bpy.ops.object.mode_set(mode="EDIT")
    view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match="'Arm.001' is in Edit Mode"):
        getattr(bpy.ops.blender_ik, operator)()
    assert other.mode == "EDIT" and obj.mode == "OBJECT"
    assert sorted(obj.data.bones.keys()) == bones
    assert bool(chain.rig_name) == (operator == "remove_rig")
