"""Review 15: the add-on as a newcomer clicks it (every button of the panel in every state) and as a TD packages it."""
import os
import shutil
import subprocess
import sys

import pytest

from rigs import arm_and_chain_beside, link_from_library


def _overridden_arm_with_a_local_chain(bpy, tmp_path):
    """The arm with chains 'A' and 'B' saved as a library, linked into a shot and overridden there, where the
    animator adds a chain 'C' of the override's own (on A's bones, which do not matter here). Returns the override."""
    arm_and_chain_beside(bpy)
    arm = link_from_library(bpy, tmp_path / "character.blend", "Arm").override_create(remap_local_usages=True)
    bpy.context.view_layer.objects.active = arm
    local = arm.blender_ik.chains.add()
    local.name = "C"
    return arm


@pytest.mark.parametrize("action, active, expected", [
    ("remove", 0, None), ("remove", 2, ["A", "B"]),
    ("down", 0, None), ("down", 1, ["A", "C", "B"]), ("up", 2, ["A", "C", "B"])])
def test_review_remove_and_move_chains_of_a_library_override(blender, tmp_path, action, active, expected):
    """A library override can add chains but Blender refuses to remove or reorder the library's own (a TypeError
    from the collection). Remove Chain and the list's arrows raised it as a Python traceback, after Remove Chain had
    turned the chain's Live off. Now the library's chains are refused with a message that names the chain and says
    what to do, nothing changed; the override's own chain is removed, and moved past the library's."""
    bpy = blender
    arm = _overridden_arm_with_a_local_chain(bpy, tmp_path)
    chains = arm.blender_ik.chains
    chains[0].live = True
    arm.blender_ik.active_chain_index = active
    call = (bpy.ops.blender_ik.chain_remove if action == "remove"
            else lambda: bpy.ops.blender_ik.chain_move(direction=action.upper()))
    if expected is None:
        with pytest.raises(RuntimeError) as raised:
            call()
        message = str(raised.value)
        assert "Traceback" not in message
        assert "Chain 'A' comes from the library" in message and "library file" in message
        assert [chain.name for chain in chains] == ["A", "B", "C"] and chains[0].live
    else:
        assert call() == {"FINISHED"}
        assert [chain.name for chain in chains] == expected


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("staging", [".", "blender_ik_addon/stage"])
def test_review_build_extension_refuses_to_stage_in_the_sources(tmp_path, staging):
    """``build_extension.py --staging-dir .`` (a TD building "here", in the repository) deleted the whole repository:
    the staging folder is cleared first when it holds a manifest, and the repository's top level holds one. A staging
    folder inside the package would be packed into the next zip. Both are refused, in one line, nothing deleted.
    Run on a copy of the repository."""
    copy = tmp_path / "repo"
    copy.mkdir()
    shutil.copy2(os.path.join(ROOT, "blender_manifest.toml"), copy)
    shutil.copytree(os.path.join(ROOT, "scripts"), copy / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(ROOT, "blender_ik_addon"), copy / "blender_ik_addon",
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(str(path.relative_to(copy)) for path in copy.rglob("*"))
    result = subprocess.run([sys.executable, os.path.join("scripts", "build_extension.py"), "--staging-dir", staging,
                             "--output-dir", str(tmp_path / "dist")],
                            cwd=copy, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "refusing to use" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert sorted(str(path.relative_to(copy)) for path in copy.rglob("*")) == before


@pytest.mark.parametrize("active_selects", [True, False])
def test_review_chains_from_selected_on_every_armature_in_pose_mode(blender, active_selects):
    """Pose Mode on two characters at once (both selected, Ctrl+Tab) shows and selects the bones of each. Chains from
    Selected added chains for the active armature's selected bones only and reported success ('Added 1 chain'), the
    other character's selected hand left without a chain; with only the other's bones selected it said 'Select the
    tip bones'. Now each armature in Pose Mode gets a chain per selected bone, its target at that bone's tip as
    Blender shows it."""
    bpy = blender
    from rigs import build_arm
    first, second = build_arm(name="First"), build_arm(name="Second", base=(3.0, 1.0, 0.0))
    second.rotation_euler.z = 0.7
    for obj in (first, second):
        obj.select_set(True)
    bpy.context.view_layer.objects.active = first
    bpy.ops.object.mode_set(mode="POSE")
    from blender_ik_addon.keys import set_pose_bone_selected
    for obj, selected in ((first, active_selects), (second, True)):
        for pose_bone in obj.pose.bones:
            set_pose_bone_selected(pose_bone, selected and pose_bone.name == "b3")
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    bpy.context.view_layer.update()
    for obj, selected in ((first, active_selects), (second, True)):
        chains = obj.blender_ik.chains
        assert [chain.tip_bone for chain in chains] == (["b3"] if selected else [])
        for chain in chains:
            tip = obj.matrix_world @ obj.pose.bones["b3"].tail
            assert (chain.target.matrix_world.translation - tip).length < 1e-6


PANEL_OPERATORS = ("solve", "add_target", "bake", "chain_add", "chain_remove", "chain_move", "chains_from_selected",
                   "chain_mirror", "place_pole", "build_rig", "remove_rig")


def test_review_a_linked_armatures_buttons_grey_out_saying_why(blender, tmp_path):
    """An armature linked from a library (not overridden) has its panel drawn, and every button of it was active,
    each click answering with the same refusal. The buttons now grey out (poll), their tooltip saying why and what
    to do, as Blender's own do."""
    bpy = blender
    from rigs import arm_with_chain
    arm_with_chain(bpy)
    bpy.context.view_layer.objects.active = link_from_library(bpy, tmp_path / "character.blend", "Arm")
    for name in PANEL_OPERATORS:
        operator = getattr(bpy.ops.blender_ik, name)
        assert not operator.poll(), name
        with pytest.raises(RuntimeError, match="poll.*linked from a library.*make a library override"):
            operator()


@pytest.mark.parametrize("live_first", [True, False])
def test_review_a_live_chain_follows_once_enabled_again(blender, live_first):
    """Live follows enabled chains only. Unchecking a live chain in the list and checking it again left it where it
    was until its target next moved; and a chain whose Live was switched on while it was unchecked never followed
    once checked (its target moved, the tip stayed 0.62 away), the Live toggle showing on. Checking a live chain now
    starts Live on it as switching Live on does: solved at once, then following."""
    bpy = blender
    from rigs import arm_with_chain, tips_off
    obj, chain = arm_with_chain(bpy)
    if live_first:
        chain.live = True
        chain.enabled = False
    else:
        chain.enabled = False
        chain.live = True
    chain.target.location.x -= 0.1
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] > 0.05  # an unchecked chain is not followed
    chain.enabled = True
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-6
    chain.target.location.x -= 0.1
    assert tips_off(bpy, obj, [chain.target], ("b3",))[0] < 1e-6


@pytest.mark.parametrize("operator", ["chain_add", "add_target"])
def test_review_adding_a_chain_with_no_active_bone_says_what_to_click(blender, operator):
    """A new armature (or one whose active bone was deleted) has no active bone. Add Chain (the list's +), and Add
    Target with no chain yet, answered "Choose the chain's tip bone (or make it the active bone)": there is no chain
    whose tip bone to choose. They now say what to click, and nothing is added."""
    bpy = blender
    from rigs import build_arm
    obj = build_arm()
    bpy.context.view_layer.objects.active = obj
    obj.data.bones.active = None
    objects = len(bpy.data.objects)
    with pytest.raises(RuntimeError, match="has no active bone: click the tip bone of the chain in Pose Mode"):
        getattr(bpy.ops.blender_ik, operator)()
    assert not len(obj.blender_ik.chains) and len(bpy.data.objects) == objects
