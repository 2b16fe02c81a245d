"""Review 20: Build Rig on real characters, as a rigger hands the rig over to animators, judged by what Blender
evaluates and keys."""
import numpy as np
import pytest

from rigs import arm_with_chain, tip_and_direction


def _key_whole_character(bpy, obj):
    """Insert Keyframe with the Whole Character keying set in Pose Mode, as an animator blocks a shot: the keying set
    keys every bone whose name Rigify's prefixes (DEF, MCH, ORG...) do not mark as machinery, selected or not, shown
    or hidden. Returns the keyed bones' names."""
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="POSE")
    window = bpy.context.window_manager.windows[0]
    area = window.screen.areas[0]
    area.type = "VIEW_3D"
    region = next(region for region in area.regions if region.type == "WINDOW")
    with bpy.context.temp_override(window=window, screen=window.screen, area=area, region=region):
        assert bpy.ops.anim.keyframe_insert_by_name(type="WholeCharacter") == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    action = obj.animation_data.action
    channels = action.layers[0].strips[0].channelbag(obj.animation_data.action_slot).fcurves \
        if hasattr(action, "layers") and action.layers else action.fcurves
    return {fcurve.data_path.split('"')[1] for fcurve in channels if fcurve.data_path.startswith("pose.bones[")}


@pytest.mark.parametrize("plane, bend, roll", [("TARGET", "REST", "NONE"), ("PARENT", "TOWARD", "X")])
def test_whole_character_keys_no_helper_bone(blender, plane, bend, roll):
    """Blocking a shot with the Whole Character keying set keyed every hidden helper bone of a built rig (about 100
    channels per chain, in the animator's action and Dope Sheet), and Remove Rig then left those F-curves pointing at
    bones that no longer exist. The helpers' channels are the rig's, not the animator's: they are locked, which the
    keying set respects, and the rig still follows its target."""
    bpy = blender
    from blender_ik_addon import native_rig
    obj, chain = arm_with_chain(bpy)
    chain.plane, chain.bend, chain.roll_axis = plane, bend, roll
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    helpers = native_rig.helper_bones(obj, chain.name)
    keyed = _key_whole_character(bpy, obj)
    assert {"b1", "b2", "b3"} <= keyed  # the animator's bones are keyed
    assert not keyed & helpers
    chain.target.location.x -= 0.2
    tip, _ = tip_and_direction(obj)
    assert np.linalg.norm(tip - np.array(chain.target.matrix_world.translation)) < 1e-5


def _rigify_rig_re_generated(bpy):
    """Rigify's basic human, generated; a chain with a built rig on the generated rig; then Rigify's re-generate.
    Returns (generated rig, chain settings)."""
    from blender_ik_addon import native_rig
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_basic_human_metarig_add()
    metarig = bpy.context.object
    assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    rig = bpy.context.view_layer.objects.active
    rig.data.bones.active = rig.data.bones["foot_heel_ik.L"]  # the one limb-like chain of Rigify's without constraints
    assert bpy.ops.blender_ik.chain_add() == {"FINISHED"}
    assert bpy.ops.blender_ik.add_target() == {"FINISHED"}
    chain = rig.blender_ik.active_chain
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    bpy.context.view_layer.objects.active = metarig
    assert bpy.ops.pose.rigify_generate() == {"FINISHED"}
    assert not native_rig.helper_bones(rig, chain.name) & set(rig.data.bones.keys())  # Rigify dropped the helpers
    bpy.context.view_layer.objects.active = rig
    return rig, chain


def test_a_rig_rigify_re_generated_is_not_called_muted(blender):
    """Rigify's re-generate rebuilds every bone of the generated rig: a built rig's helpers, constraints and drivers
    went, its record stayed, and the panel said "Rig muted after a bake (the keys drive the chain)" where no key and no
    rig drove the chain. It says the rig is gone now; Solve poses the chain, and Build Rig rebuilds the rig."""
    bpy = blender
    from blender_ik_addon.ops import rig_state
    from test_panel import draw_panels
    rig, chain = _rigify_rig_re_generated(bpy)
    assert rig_state(rig, chain) == "GONE"
    labels = " ".join(name for kind, name in draw_panels(bpy, rig) if kind == "label")
    assert "muted" not in labels and "Build Rig again" in labels
    assert bpy.ops.blender_ik.solve(chains="ACTIVE") == {"FINISHED"}  # nothing else poses the chain
    assert bpy.ops.blender_ik.build_rig() == {"FINISHED"}
    assert rig_state(rig, chain) == "BUILT"
    chain.target.location.z += 0.05
    tip, _ = tip_and_direction(rig, chain.tip_bone)
    assert np.linalg.norm(tip - np.array(chain.target.matrix_world.translation)) < 1e-5


def test_a_bake_of_a_chain_whose_rig_is_gone_does_not_say_it_muted_it(blender, capfd):
    """Baking the chain after Rigify's re-generate reported "the built rig of foot_heel_ik.L muted so the keys show
    (Build Rig unmutes)": there was no rig left to mute."""
    bpy = blender
    rig, chain = _rigify_rig_re_generated(bpy)
    capfd.readouterr()
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=3) == {"FINISHED"}
    assert "muted" not in capfd.readouterr().out
