"""The sidebar panels draw every setting they name, for every state of the settings, without error.

There is no UI headless, so a stand-in layout records the calls and checks each named property and
operator exists (a typo would otherwise only show in a running Blender)."""
import types

import pytest

from rigs import add_empty, build_arm


class FakeOperatorProperties:
    def __init__(self, bpy, idname):
        category, name = idname.split(".")
        self.rna = getattr(getattr(bpy.ops, category), name).get_rna_type()

    def __setattr__(self, key, value):
        if key != "rna":
            assert key in self.rna.properties, key
        object.__setattr__(self, key, value)


class FakeLayout:
    def __init__(self, bpy, log):
        self.bpy, self.log = bpy, log
        self.use_property_split = self.use_property_decorate = self.enabled = False
        self.operator_context = "INVOKE_DEFAULT"

    def _sub(self, *args, **kwargs):
        return FakeLayout(self.bpy, self.log)

    row = column = box = grid_flow = _sub

    def separator(self, **kwargs):
        pass

    def _icon(self, kwargs):
        if "icon" in kwargs:
            self.log.append(("icon", kwargs["icon"]))

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, name
        self.log.append(("prop", name))
        self._icon(kwargs)

    def template_list(self, list_type, list_id, data, name, active_data, active_name, **kwargs):
        assert list_type in dir(self.bpy.types), list_type
        assert name in data.bl_rna.properties and active_name in active_data.bl_rna.properties
        self.log.append(("prop", name))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        assert name in data.bl_rna.properties and search_name in search_data.bl_rna.properties
        self.log.append(("prop_search", name))

    def label(self, text="", **kwargs):
        self.log.append(("label", text))
        self._icon(kwargs)

    def operator(self, idname, **kwargs):
        self.log.append(("operator", idname))
        self._icon(kwargs)
        return FakeOperatorProperties(self.bpy, idname)


def draw_panels(bpy, obj):
    """Draw the panels and the chain list of armature ``obj`` on stand-in layouts: what they drew, as (kind, name)."""
    from blender_ik_addon import ui
    settings = obj.blender_ik
    context = types.SimpleNamespace(active_object=obj, scene=bpy.context.scene)
    assert ui.VIEW3D_PT_blender_ik.poll(context)
    log = []
    for panel in (ui.VIEW3D_PT_blender_ik, ui.VIEW3D_PT_blender_ik_bake):
        fake = types.SimpleNamespace(layout=FakeLayout(bpy, log))
        panel.draw(fake, context)
    for index, item in enumerate(settings.chains):
        ui.BLENDER_IK_UL_chains.draw_item(None, context, FakeLayout(bpy, log), settings, item, 0, settings,
                                          "active_chain_index", index)
    return log


def arm_for_the_bake_panel(bpy, output="KEYS"):
    """The arm, active, its chain reaching for an Empty; the Bake panel set to frames 1-9, step 2, ``output``."""
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    settings = obj.blender_ik
    settings.tip_bone, settings.target = "b3", add_empty(location=(0.8, 0.2, 1.0))
    settings.bake_use_scene_range, settings.bake_frame_start, settings.bake_frame_end = False, 1, 9
    settings.bake_step, settings.bake_output = 2, output
    return obj


def panel_buttons(bpy, monkeypatch, obj, *panels):
    """The operator buttons ``panels`` draw for armature ``obj``, in order: (idname, the properties the button sets)."""
    buttons = []
    make = FakeLayout.operator
    monkeypatch.setattr(FakeLayout, "operator", lambda self, idname, **kwargs: buttons.append(
        (idname, make(self, idname, **kwargs))) or buttons[-1][1])
    context = types.SimpleNamespace(active_object=obj, scene=bpy.context.scene)
    for panel in panels:
        panel.draw(types.SimpleNamespace(layout=FakeLayout(bpy, [])), context)
    return buttons


ALL_OPERATORS = {"blender_ik.solve", "blender_ik.add_target", "blender_ik.bake", "blender_ik.chain_add",
                 "blender_ik.chain_remove", "blender_ik.chain_move", "blender_ik.chains_from_selected",
                 "blender_ik.chain_mirror", "blender_ik.place_pole", "blender_ik.snap_target", "blender_ik.build_rig"}
CHAIN_SETTINGS = {"tip_bone", "target", "up_axis", "plane", "bend", "roll_axis", "live"}


@pytest.mark.parametrize("state", ["no_chains", "fresh", "pole_solved", "bone_target", "out_of_reach", "error",
                                   "rig_built", "rig_stale", "roll_along_up"])
def test_panels_draw(blender, state):
    bpy = blender
    from blender_ik_addon import runtime, ui
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    settings = obj.blender_ik
    if state != "no_chains":
        settings.tip_bone = "b3"
    if state not in ("fresh", "no_chains"):
        settings.target = add_empty(location=(0.8, 0.2, 1.0) if state != "out_of_reach" else (9.0, 0.0, 0.0))
    if state == "pole_solved":
        settings.plane, settings.pole = "POLE", add_empty("Pole", (0, 2, 1))
    if state == "bone_target":
        settings.target, settings.target_bone = obj, "root"
    if state == "roll_along_up":  # Roll "Target -Z" with Up Axis Z: the last bone already points along it
        settings.roll_axis = "-Z"
    if state in ("pole_solved", "out_of_reach"):
        bpy.ops.blender_ik.solve()
    if state == "error":
        settings.tip_bone = "b1"
        runtime.store_error(obj, settings.active_chain.name, "something to fix")
    if state.startswith("rig_"):
        settings.target = add_empty(location=(0.8, 0.2, 1.0))
        assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
        if state == "rig_stale":
            settings.up_axis = "X"
    log = draw_panels(bpy, obj)
    drawn = {name for kind, name in log if kind in ("prop", "prop_search")}
    assert {"bake_step", "bake_output", "chains"} <= drawn
    assert (CHAIN_SETTINGS <= drawn) == (state != "no_chains")
    assert ("pole" in drawn) == (state == "pole_solved")
    assert ("target_bone" in drawn) == (state == "bone_target")
    operators = {name for kind, name in log if kind == "operator"}
    expected = ALL_OPERATORS | ({"blender_ik.remove_rig"} if state.startswith("rig_") else set())
    # (the Bake panel's Snap Targets is there with no chain too, as its Bake All is)
    assert operators == expected - ({"blender_ik.add_target", "blender_ik.place_pole", "blender_ik.build_rig"}
                                    if state == "no_chains" else set())
    labels = " ".join(name for kind, name in log if kind == "label")
    icons = {icon for kind, icon in log if kind == "icon"}
    if state == "pole_solved":
        assert "Target reached" in labels and "Roll β" in labels and "CHECKMARK" in icons
    if state == "out_of_reach":
        assert "Out of reach by" in labels and ui.STATUS_ICONS["OUT_OF_REACH"] in icons
    if state == "error":
        assert "needs two ancestors" in labels and "something to fix" in labels and "ERROR" in icons
    if state == "no_chains":
        assert "Add a chain" in labels
    if state == "rig_built":
        assert "Rig built" in labels and "CONSTRAINT_BONE" in icons
    if state == "rig_stale":
        assert "Rig out of date" in labels
    assert ("points along this axis already" in labels) == (state == "roll_along_up")
    empty = add_empty("NotAnArmature")
    assert not ui.VIEW3D_PT_blender_ik.poll(types.SimpleNamespace(active_object=empty))


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
@pytest.mark.parametrize("remembered", ["LINEAR", "BEZIER", "CONSTANT"])
def test_the_bake_panel_bakes_what_it_shows(blender, monkeypatch, output, remembered):
    """The panel's Bake buttons carry its settings: Output, and Step (greyed out for samples, one per frame).
    Blender fills what a button leaves unset from the operator's last run (WM_operator_last_properties_init):
    after a Bezier bake through F3, the panel's bake to samples must not take Bezier (the panel has no
    Interpolation to change it)."""
    bpy = blender
    from blender_ik_addon import keys, ui
    obj = arm_for_the_bake_panel(bpy, output)
    button = panel_buttons(bpy, monkeypatch, obj, ui.VIEW3D_PT_blender_ik_bake)[0][1]  # Bake All
    assert (button.output, button.step) == (output, 1 if output == "SAMPLES" else 2)
    # What Blender runs: the button's properties, the last run's for the ones it leaves unset.
    last_run = {"interpolation": remembered, "step": 3, "shared_action": False}
    given = {name: value for name, value in vars(button).items() if name != "rna"}
    assert bpy.ops.blender_ik.bake(**{**last_run, **given}) == {"FINISHED"}
    curve = keys.find_fcurve(obj, 'pose.bones["b1"].rotation_quaternion', 0)
    points = curve.sampled_points if output == "SAMPLES" else curve.keyframe_points
    assert [point.co[0] for point in points] == list(range(1, 10, button.step))


def test_the_snap_target_buttons_snap_what_they_show(blender, monkeypatch):
    """The Bake panel's Snap Targets keys the targets over the panel's range and step, whatever the last run left; the
    chain's own Snap Target snaps the active chain at the current frame, even after Snap Targets ran on All."""
    bpy = blender
    from blender_ik_addon import keys, ui
    obj = arm_for_the_bake_panel(bpy)
    settings = obj.blender_ik
    buttons = panel_buttons(bpy, monkeypatch, obj, ui.VIEW3D_PT_blender_ik_bake, ui.VIEW3D_PT_blender_ik)
    snaps = [vars(button) for idname, button in buttons if idname == "blender_ik.snap_target"]
    assert [button["chains"] for button in snaps] == ["ALL", "ACTIVE", "ACTIVE"]
    ranged, own = snaps[0], snaps[2]
    assert (ranged["frames"], ranged["frame_start"], ranged["frame_end"], ranged["step"]) == ("RANGE", 1, 9, 2)
    assert "frames" not in own  # its default, the current frame (never the last run's: SKIP_SAVE)
    given = {name: value for name, value in ranged.items() if name != "rna"}
    assert bpy.ops.blender_ik.snap_target(**{"interpolation": "CONSTANT", "step": 3, **given}) == {"FINISHED"}
    keyed = keys.find_fcurve(settings.target, "location", 0).keyframe_points
    assert [point.co[0] for point in keyed] == [1, 3, 5, 7, 9]
    settings.target.animation_data_clear()
    settings.target.location = (0.5, 0.5, 0.5)
    assert bpy.ops.blender_ik.snap_target(**{name: value for name, value in own.items() if name != "rna"}) == {
        "FINISHED"}
    assert settings.target.animation_data is None  # one frame, Auto Keying off: no keys
    assert (settings.target.matrix_world.translation - obj.matrix_world @ obj.pose.bones["b3"].tail).length < 1e-6


@pytest.mark.parametrize("output", ["KEYS", "SAMPLES"])
def test_bake_dialog_shows_every_setting_and_greys_out_what_samples_ignore(blender, monkeypatch, output):
    """The Bake operator's dialog (and Adjust Last Operation) draws each of its settings once; Step and
    Interpolation are greyed out for samples, which take step 1 and Linear only."""
    bpy = blender
    from blender_ik_addon import ops
    shown = []
    monkeypatch.setattr(FakeLayout, "prop", lambda self, data, name, **kwargs: shown.append(
        (name, getattr(self, "active", True))))
    operator = types.SimpleNamespace(layout=FakeLayout(bpy, []), output=output)
    ops.BLENDER_IK_OT_bake.draw(operator, bpy.context)
    names = [name for name, _ in shown]
    rna = bpy.ops.blender_ik.bake.get_rna_type().properties
    assert sorted(names) == sorted(name for name in rna.keys() if name != "rna_type")
    greyed = {name for name, active in shown if not active}
    assert greyed == ({"step", "interpolation"} if output == "SAMPLES" else set())


@pytest.mark.parametrize("change, past", [
    ("nothing", False), ("target moved", True), ("target turned", True), ("target moved and back", False),
    ("tip bone turned", True), ("parent bone posed", True), ("armature moved", True), ("pole moved", True),
    ("target deleted", True), ("live, target moved", False), ("out of reach, nothing", False),
    ("out of reach, target moved", True)])
def test_a_read_out_blender_no_longer_shows_says_so(blender, change, past):
    """A read-out describes a solve: once Blender shows something else (the target moved with Live off, a bone turned
    by hand, the chain's parent posed) its check mark would claim a pose that is not there. The panel says the result
    is a past one, and the list shows it, until a solve (or Live) makes it current again."""
    bpy = blender
    from blender_ik_addon import ui
    obj = build_arm()
    obj.pose.bones["root"].rotation_mode = "XYZ"
    bpy.context.view_layer.objects.active = obj
    settings = obj.blender_ik
    settings.tip_bone = "b3"
    far = change.startswith("out of reach")
    settings.target = target = add_empty(location=(9.0, 0.0, 0.0) if far else (0.8, 0.2, 1.0))
    settings.plane, settings.pole = "POLE", add_empty("Pole", (0, 2, 1))
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    if change.startswith("live"):
        settings.live = True
        bpy.context.view_layer.update()
    if "target moved" in change:
        target.location.x += 0.05
    if change == "target moved and back":
        bpy.context.view_layer.update()
        target.location.x -= 0.05
    if change == "target turned":
        target.rotation_euler.z += 0.1
    if change == "tip bone turned":
        obj.pose.bones["b3"].rotation_quaternion = (0.99, 0.1, 0.0, 0.0)
    if change == "parent bone posed":
        obj.pose.bones["root"].rotation_euler.x = 0.1
    if change == "armature moved":
        obj.location.y += 0.1
    if change == "pole moved":
        settings.pole.location.x += 0.3
    if change == "target deleted":
        bpy.data.objects.remove(target)
    bpy.context.view_layer.update()
    log = draw_panels(bpy, obj)
    labels = " ".join(name for kind, name in log if kind == "label")
    icons = [icon for kind, icon in log if kind == "icon"]
    status = "out of reach by" if far else "target reached"
    assert ("Changed since the last solve" in labels) == past
    assert (f"Last solve: {status}" in labels) == past
    assert (status.capitalize() in labels) != past
    assert (ui.PAST_ICON in icons) == past
    if not past:  # what the read-out claims is what Blender shows
        tip = obj.matrix_world @ obj.pose.bones["b3"].tail
        assert far or (tip - target.matrix_world.translation).length < 1e-5
    if change == "target deleted":
        with pytest.raises(RuntimeError, match="Set the target"):
            bpy.ops.blender_ik.solve()
    else:  # solved again: current
        assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    labels = " ".join(name for kind, name in draw_panels(bpy, obj) if kind == "label")
    assert ("Changed since the last solve" in labels) == (change == "target deleted")
