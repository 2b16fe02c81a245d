"""Adversarial review 2: the Bake panel's buttons run the operator with the properties the button sets; Blender
fills every other one (not SKIP_SAVE) with its value from the operator's last run (WM_operator_last_properties_init),
as it does for any button. Interpolation is not in the panel: after one bake with Bezier keys (F3 > Bake IK), the
panel's bake to samples was refused ("Samples play linearly between frames ... got Bezier") with no setting in the
panel to change it. The buttons must carry what a bake to samples needs."""
import types

import pytest

from rigs import add_empty, build_arm
from test_panel import FakeLayout


@pytest.mark.parametrize("remembered", ["BEZIER", "CONSTANT"])
def test_review2_the_panels_samples_bake_ignores_a_remembered_interpolation(blender, monkeypatch, remembered):
    bpy = blender
    from blender_ik_addon import keys, ui
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    settings = obj.blender_ik
    settings.tip_bone, settings.target = "b3", add_empty(location=(0.8, 0.2, 1.0))
    settings.bake_use_scene_range, settings.bake_frame_start, settings.bake_frame_end = False, 1, 9
    settings.bake_output = "SAMPLES"
    buttons = []
    make = FakeLayout.operator

    def record(self, idname, **kwargs):
        properties = make(self, idname, **kwargs)
        buttons.append(properties)
        return properties

    monkeypatch.setattr(FakeLayout, "operator", record)
    ui.VIEW3D_PT_blender_ik_bake.draw(types.SimpleNamespace(layout=FakeLayout(bpy, [])),
                                      types.SimpleNamespace(active_object=obj, scene=bpy.context.scene))
    button = buttons[0]  # Bake All
    # What Blender runs: the button's properties, the last run's for the ones it leaves unset.
    last_run = {"interpolation": remembered, "step": 3, "shared_action": False}
    given = {name: value for name, value in vars(button).items() if name != "rna"}
    assert bpy.ops.blender_ik.bake(**{**last_run, **given}) == {"FINISHED"}
    curve = keys.find_fcurve(obj, 'pose.bones["b1"].rotation_quaternion', 0)
    assert [point.co[0] for point in curve.sampled_points] == list(range(1, 10))
