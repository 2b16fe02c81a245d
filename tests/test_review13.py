"""Review 13: the file's life (a rigger and a pipeline TD): chains set up on a character, then the file is saved and
reopened, the armature duplicated or copied to other scenes, renamed, appended, linked and overridden, baked from the
command line; judged by what Blender evaluates."""
import pytest

from rigs import arm_with_chain, readout, tips_off


@pytest.mark.parametrize("move", ["drag", "frame"])
def test_live_follows_in_a_scene_made_by_full_copy(blender, move):
    """Scene > New > Full Copy copies the character: the copy's chain reaches for the copied Empty, Live on, as
    Blender's own IK constraint follows the copied Empty. The new scene's first evaluation calls no update handler, so
    no update listed the copied armature and Live never learned it was there: dragging the copied target (or playing
    its keys) left the copy's tip 0.2 behind, with no read-out."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.live = True
    target = chain.target
    if move == "frame":
        target.keyframe_insert("location", frame=1)
        target.location.x -= 0.2
        target.keyframe_insert("location", frame=5)
        bpy.context.scene.frame_set(1)
    assert bpy.ops.scene.new(type="FULL_COPY") == {"FINISHED"}
    copy = next(each for each in bpy.context.scene.objects if each.type == "ARMATURE")
    copied_target = copy.blender_ik.chains[0].target
    assert copy != obj and copied_target not in (None, target)
    if move == "drag":
        copied_target.location.x -= 0.2
        bpy.context.view_layer.update()
    else:
        bpy.context.scene.frame_set(5)
    assert tips_off(bpy, copy, [copied_target], ["b3"])[0] < 1e-5
    assert readout(copy, "arm").status == "REACHED"


@pytest.mark.parametrize("live_on", ["original", "both"])
def test_renaming_a_chain_bone_in_edit_mode_of_a_linked_duplicate(blender, capfd, live_on):
    """An Alt+D duplicate shares the Armature datablock: renaming a chain bone in Edit Mode of the duplicate renames
    the original's pose bone at once, its bone only on leaving Edit Mode. Live on the original (in Object Mode) read
    the chain by the old name and raised KeyError from the update handler on every update ('key "b3" not found'), its
    read-out still 'reached'. It waits for Edit Mode to end, as it does on the armature being edited, and says why."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.live = True
    for each in bpy.context.view_layer.objects:
        each.select_set(each == obj)
    assert bpy.ops.object.duplicate(linked=True) == {"FINISHED"}
    copy = bpy.context.active_object
    assert copy != obj and copy.data == obj.data
    copy.blender_ik.chains[0].live = live_on == "both"
    copy.location.y += 0.5
    bpy.context.view_layer.update()
    capfd.readouterr()
    bpy.ops.object.mode_set(mode="EDIT")
    copy.data.edit_bones["b3"].name = "hand"
    chain.target.location.x -= 0.2
    bpy.context.view_layer.update()
    assert "Traceback" not in capfd.readouterr().err
    assert readout(obj, "arm").status == "ERROR" and "Edit Mode" in readout(obj, "arm").message
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    assert "Traceback" not in capfd.readouterr().err
    assert obj.blender_ik.chains[0].tip_bone == copy.blender_ik.chains[0].tip_bone == "hand"
    assert tips_off(bpy, obj, [chain.target], ["hand"])[0] < 1e-5
    assert readout(obj, "arm").status == "REACHED"


@pytest.mark.parametrize("old", ["removed", "renamed"])
def test_live_solves_a_character_replaced_by_one_of_the_same_name(blender, tmp_path, old):
    """A pipeline script updates the character in a shot: the live armature 'Arm' is removed (or renamed out of the
    way), the library's 'Arm' is appended in its place, its chain pointed at the shot's target. Live kept what it knew
    by the armature's name: the new armature's chain read exactly as the old one's last solve (same bones, settings,
    target and matrices), so it was taken as solved and left in the library's pose, 0.62 from the target, until the
    target moved."""
    from blender_ik_addon import runtime
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    with runtime.paused():
        chain.live = True
        library = tmp_path / "character.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(library), copy=True)  # Live on, in its rest pose
    chain.live = False
    chain.live = True  # solves at once
    assert tips_off(bpy, obj, [target], ["b3"])[0] < 1e-5
    if old == "removed":
        bpy.data.objects.remove(obj)
    else:
        obj.name = "Arm_old"
    with bpy.data.libraries.load(str(library)) as (_, appended):
        appended.objects = ["Arm"]
    new = appended.objects[0]
    bpy.context.scene.collection.objects.link(new)
    new.blender_ik.chains[0].target = target
    assert new.name == "Arm" and new.blender_ik.chains[0].live
    bpy.context.view_layer.update()
    assert tips_off(bpy, new, [target], ["b3"])[0] < 1e-5
    assert readout(new, "arm").status == "REACHED"


@pytest.mark.parametrize("how", ["rebuilt", "removed_and_built"])
def test_a_rig_built_again_on_a_linked_duplicate(blender, how):
    """An Alt+D duplicate of a built character shares its bones. Building the copy's rig again (Rebuild after a new
    target, or Remove Rig then Build Rig) makes new helper bones beside the ones the original's rig still uses, and
    Blender numbers their names ('IKR-arm-target.001'). The rig state looked its helpers up by the name's end: it
    raised TypeError, so the panel's chain list failed to draw and Solve raised it instead of its refusal."""
    from blender_ik_addon.ops import rig_state
    from rigs import add_empty
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    for each in bpy.context.view_layer.objects:
        each.select_set(each == obj)
    assert bpy.ops.object.duplicate(linked=True) == {"FINISHED"}
    copy = bpy.context.active_object
    copy.location.y += 1.0
    copy_chain = copy.blender_ik.chains[0]
    if how == "rebuilt":
        copy_chain.target = add_empty("T2", location=(0.6, 1.4, 1.2), rotation=(0.3, 0.2, 0.1))
    else:
        assert bpy.ops.blender_ik.remove_rig(chains="ALL") == {"FINISHED"}
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    assert rig_state(copy, copy_chain) == rig_state(obj, chain) == "BUILT"
    with pytest.raises(RuntimeError, match="has a built rig"):
        bpy.ops.blender_ik.solve(chains="ALL")
    for goal in (target, copy_chain.target):
        goal.location.x -= 0.1
    assert max(tips_off(bpy, obj, [target], ["b3"]) + tips_off(bpy, copy, [copy_chain.target], ["b3"])) < 1e-5
    assert bpy.ops.blender_ik.remove_rig(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.remove_rig(chains="ALL") == {"FINISHED"}
    assert [bone.name for bone in obj.data.bones] == ["root", "b1", "b2", "b3"]
