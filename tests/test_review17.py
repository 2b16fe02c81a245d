"""Review 17: the panel's read-out against what Blender shows (Solve with Live off, then a change), judged by the pose
Blender evaluates."""
import math

import pytest

from rigs import add_empty, build_arm, pose_snapshot
from test_panel import draw_panels


def _solved_arm(bpy, scale=1.0):
    """The arm (its object scaled by ``scale``) solved once for a turned Empty, Live off. Returns (object, target)."""
    obj = build_arm()
    obj.scale = (scale,) * 3
    bpy.context.view_layer.objects.active = obj
    settings = obj.blender_ik
    settings.tip_bone = "b3"
    bpy.context.view_layer.update()
    settings.target = target = add_empty(location=obj.matrix_world @ __import__("mathutils").Vector((0.8, 0.2, 1.0)),
                                         rotation=(0.3, 0.2, 0.1))
    bpy.context.view_layer.update()
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    return obj, target


def _labels(bpy, obj):
    return " ".join(name for kind, name in draw_panels(bpy, obj) if kind == "label")


@pytest.mark.parametrize("setting, value", [("up_axis", "X"), ("roll_axis", "X"), ("bend", "AWAY"),
                                            ("plane", "TARGET")])
def test_a_setting_changed_with_live_off_makes_the_read_out_a_past_one(blender, setting, value):
    """After Solve, changing the Up Axis (or another setting of the solve) with Live off left the read-out 'Target
    reached' with its check mark, while Blender showed the last bone 90° off the new up axis: Solve then moved it."""
    bpy = blender
    obj, target = _solved_arm(bpy)
    setattr(obj.blender_ik.active_chain, setting, value)
    bpy.context.view_layer.update()
    labels = _labels(bpy, obj)
    before = pose_snapshot(obj)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert pose_snapshot(obj) != before  # the pose Blender showed was not this chain's solve
    assert "Changed since the last solve" in labels and "Last solve: target reached" in labels


@pytest.mark.parametrize("scale", [0.01, 100.0, 1000.0])
def test_a_target_turned_on_a_scaled_armature_makes_the_read_out_a_past_one(blender, scale):
    """An armature scaled ×100 (an FBX import in centimetres): a target turned by half a degree left the read-out
    'Target reached', the last bone half a degree off its up axis, as Blender showed it; the target's rows, 1/100 in
    the armature's space, were compared with an absolute tolerance."""
    bpy = blender
    obj, target = _solved_arm(bpy, scale)
    assert "Target reached" in _labels(bpy, obj).split("Yaw")[0]  # unchanged: current
    target.rotation_euler.x += math.radians(0.5)
    bpy.context.view_layer.update()
    pose_bone = obj.pose.bones["b3"]
    along = (obj.matrix_world @ pose_bone.tail - obj.matrix_world @ pose_bone.head).normalized()
    assert math.degrees(along.angle(target.matrix_world.col[2].to_3d().normalized())) > 0.45  # what Blender shows
    labels = _labels(bpy, obj)
    assert "Changed since the last solve" in labels and "Last solve: target reached" in labels


@pytest.mark.parametrize("scale", [(1.0, 1.0, 0.0), (0.0, 0.0, 0.0)])
def test_the_panel_draws_after_the_armature_is_scaled_to_zero(blender, scale):
    """Scaling a solved character to zero (to hide it) made the panel's draw raise ZeroDivisionError (the armature's
    inverse, for the read-out's goals): the sidebar broke. The read-out is now a past one."""
    bpy = blender
    obj, target = _solved_arm(bpy)
    obj.scale = scale
    bpy.context.view_layer.update()
    labels = _labels(bpy, obj)
    assert "Changed since the last solve" in labels


def test_a_built_rig_s_read_out_does_not_ask_for_what_is_refused(blender):
    """Solve, Build Rig, then the target moved: the rig follows it (as Blender shows), and the read-out said 'Changed
    since the last solve: Solve again, or turn Live on', both of which a built rig refuses."""
    bpy = blender
    obj, target = _solved_arm(bpy)
    assert bpy.ops.blender_ik.build_rig(chains="ACTIVE") == {"FINISHED"}
    target.location.x += 0.05
    bpy.context.view_layer.update()
    assert (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-4
    labels = _labels(bpy, obj)
    with pytest.raises(RuntimeError, match="built rig"):
        bpy.ops.blender_ik.solve()
    assert "Changed since the last solve: the built rig poses the chain" in labels
    assert "Solve again" not in labels


@pytest.mark.parametrize("operator", ["solve", "bake"])
def test_a_chain_of_the_active_bone_keeps_its_read_out_and_is_named_in_the_report(blender, capfd, operator):
    """A chain set up through the 0.1 shorthand (``settings.target = ...``: no tip bone, the active bone's) and solved:
    the report said "Solved ''", and the read-out "Not solved yet" once the chain took its tip bone's name."""
    bpy = blender
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    obj.data.bones.active = obj.data.bones["b3"]
    settings = obj.blender_ik
    settings.target = target = add_empty(location=(0.8, 0.2, 1.0), rotation=(0.3, 0.2, 0.1))
    bpy.context.view_layer.update()
    capfd.readouterr()
    if operator == "solve":
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    else:
        assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=2) == {"FINISHED"}
    report = capfd.readouterr().out
    assert (settings.active_chain.name, settings.active_chain.tip_bone) == ("b3", "b3")
    assert (obj.matrix_world @ obj.pose.bones["b3"].tail - target.matrix_world.translation).length < 1e-4
    assert "''" not in report
    if operator == "solve":
        assert "'b3'" in report
        labels = _labels(bpy, obj)
        assert "Target reached" in labels and "Not solved yet" not in labels
