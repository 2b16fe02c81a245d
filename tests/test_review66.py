"""Review 66: what the add-on costs when the user does not ask for anything (a TD profiling a heavy scene: Rigify's
human metarig and its generated rig, several characters, 3,000 other objects, up to 200 chains). Costs are counted,
never timed."""
import ast

import pytest

from rigs import add_empty
from test_panel import draw_panels

TIPS = ("hand.L", "f_index.03.L", "thumb.03.L", "f_middle.03.L", "f_ring.03.L", "f_pinky.03.L", "hand.R", "foot.L",
        "foot.R")


def _metarig_with_chains(bpy, tips=TIPS):
    """Rigify's human metarig, active in Object Mode, with Chains from Selected on ``tips``."""
    from blender_ik_addon.keys import set_pose_bone_selected
    bpy.ops.preferences.addon_enable(module="rigify")
    bpy.ops.object.armature_human_metarig_add()
    obj = bpy.context.object
    bpy.ops.object.mode_set(mode="POSE")
    for pose_bone in obj.pose.bones:
        set_pose_bone_selected(pose_bone, pose_bone.name in tips)
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    assert len(obj.blender_ik.chains) == len(tips)
    return obj


def test_redrawing_built_rigs_parses_no_signature_again(blender, monkeypatch):
    """The panel's list shows each chain's rig state on every redraw (every mouse move over the sidebar). With rigs
    built on 27 chains of the metarig a redraw took 26 ms (1 ms a chain): each row parsed the rig's stored signature and
    a freshly written one back with ast.literal_eval. The state must still follow a setting's change."""
    bpy = blender
    obj = _metarig_with_chains(bpy)
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    parsed = []
    literal_eval = ast.literal_eval
    monkeypatch.setattr(ast, "literal_eval", lambda text: parsed.append(text) or literal_eval(text))
    for _ in range(5):
        log = draw_panels(bpy, obj)
    # Each stored signature is read once at most, whatever the number of redraws.
    assert len(parsed) <= len(TIPS)
    icons = [icon for kind, icon in log if kind == "icon"]
    assert icons.count("CONSTRAINT_BONE") == len(TIPS) + 2  # each row, and the active chain's Build Rig and label
    obj.blender_ik.chains["foot.R"].up_axis = "X"
    obj.blender_ik.active_chain_index = len(TIPS) - 1
    labels = [name for kind, name in draw_panels(bpy, obj) if kind == "label"]
    assert any(label.startswith("Rig out of date") for label in labels)
    icons = [icon for kind, icon in draw_panels(bpy, obj) if kind == "icon"]
    assert icons.count("CONSTRAINT_BONE") == len(TIPS) - 1 + 1  # the other rows, and the Rebuild Rig button


@pytest.mark.parametrize("change", ["deleted", "renamed"])
def test_live_forgets_chains_that_are_gone(blender, change):
    """Live keeps, per live chain, its inputs, its validated chain, its base and its last pose. A character with live
    chains deleted (or a live chain renamed) kept its validated chains and bases for the whole session (7 kB a chain),
    however often Live looked through the file again: only three of the five caches were pruned, and by armature only."""
    bpy = blender
    from blender_ik_addon import live
    obj = _metarig_with_chains(bpy)
    for chain_settings in obj.blender_ik.chains:
        chain_settings.live = True
    for chain_settings in obj.blender_ik.chains:
        chain_settings.target.location.z += 0.01
    bpy.context.view_layer.update()
    caches = (live._last_inputs, live._validated, live._armature_read, live._bases, live._posed)
    assert all(caches)  # (a base only for a chain below no other: the fingers below the hand read theirs anew)
    if change == "deleted":
        bpy.data.objects.remove(obj)
        there = set()
    else:
        for index, chain_settings in enumerate(obj.blender_ik.chains):
            chain_settings.name = f"limb{index}"
        obj.blender_ik.chains["limb0"].live = False  # Live looks through the file again
        there = {(obj.name, f"limb{index}") for index in range(1, len(TIPS))}
    prop = add_empty("Prop")
    for _ in range(2):  # the user goes on working: another object moved
        prop.location.x += 0.1
        bpy.context.view_layer.update()
    for cache in caches:
        assert set(cache) <= there


@pytest.mark.parametrize("change", ["none", "hidden", "excluded", "renamed", "deleted"])
def test_live_finds_a_visible_armature_without_looking_its_name_up(blender, monkeypatch, change):
    """Live found each live armature by name on every update, in the view layer's objects, which Blender searches one
    object at a time (73 µs for the last of 3,000; a shot with 7 live characters paid 0.6-1.7 ms an update). It asks the
    armature it found last whether the view layer shows it (a hashed lookup) and looks the name up only when not: a
    hidden one still follows, an excluded one says why, a renamed one follows under its new name, a deleted one is
    forgotten."""
    from blender_ik_addon import live
    from rigs import arm_with_chain, readout
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.live = True
    bpy.context.view_layer.update()
    looked_up = []
    by_name = live._looked_up

    def counting(name, scene, view_layer):
        looked_up.append(name)
        return by_name(name, scene, view_layer)

    monkeypatch.setattr(live, "_looked_up", counting)
    target = chain.target
    if change == "hidden":
        obj.hide_set(True)
    elif change == "excluded":
        collection = bpy.data.collections.new("Character")
        bpy.context.scene.collection.children.link(collection)
        collection.objects.link(obj)
        bpy.context.scene.collection.objects.unlink(obj)
        bpy.context.view_layer.layer_collection.children["Character"].exclude = True
    elif change == "renamed":
        obj.name = "Hero"
    elif change == "deleted":
        bpy.data.objects.remove(obj)
    for step in range(4):
        target.location.x += 0.01
        bpy.context.view_layer.update()
        bpy.context.view_layer.update()
        if change in ("none", "hidden", "renamed"):
            tip = obj.matrix_world @ obj.pose.bones["b3"].tail
            assert (tip - target.matrix_world.translation).length < 1e-5, step
    if change == "none":
        assert looked_up == []
    elif change == "excluded":
        assert "is in no collection of the view layer that is enabled" in readout(obj).message, readout(obj).message
    elif change == "deleted":
        assert "arm" not in live._found and "Arm" not in live._found
