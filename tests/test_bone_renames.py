"""A chain's bone settings (tip, target and pole bones) follow a bone rename, as Blender's own constraints do, judged
by what Blender shows after a Solve; anything less clear than a rename changes nothing."""
import pytest

from rigs import arm_with_chain, build_arm

HOW = ["object_mode", "edit_mode", "script_then_operator"]


def _rename(bpy, obj, old, new, how):
    if how == "edit_mode":
        active = bpy.context.view_layer.objects.active
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        obj.data.edit_bones[old].name = new
        bpy.ops.object.mode_set(mode="OBJECT")
        bpy.context.view_layer.objects.active = active
    else:
        obj.data.bones[old].name = new
    if how != "script_then_operator":  # else the operator is the first to look
        bpy.context.view_layer.update()


def _tip_miss(bpy, obj, chain):
    bpy.context.view_layer.update()
    goal = chain.target.matrix_world
    if chain.target_bone:
        goal = goal @ chain.target.pose.bones[chain.target_bone].matrix
    return (obj.matrix_world @ obj.pose.bones[chain.tip_bone].tail - goal.translation).length


def _arm_with_bone_goals(bpy):
    """The arm, its chain 'arm' on b3 reaching for bone 'ctrl' of a second armature 'Controls', its pole bone 'knob'."""
    obj = build_arm()
    controls = build_arm(name="Controls", lengths=(0.3, 0.3, 0.3))
    for old, new in (("b3", "ctrl"), ("b2", "knob")):
        controls.data.bones[old].name = new
    controls.location = (0.6, 0.4, 0.7)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target, chain.target_bone = "arm", "b3", controls, "ctrl"
    chain.plane, chain.pole, chain.pole_bone = "POLE", controls, "knob"
    bpy.context.view_layer.objects.active = obj
    bpy.context.view_layer.update()
    return obj, controls, chain


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("setting", ["tip_bone", "target_bone", "pole_bone"])
def test_the_chain_follows_a_renamed_bone(blender, how, setting):
    bpy = blender
    obj, controls, chain = _arm_with_bone_goals(bpy)
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}  # Blender has seen the bones as they are
    owner, old = (obj, "b3") if setting == "tip_bone" else (controls, getattr(chain, setting))
    _rename(bpy, owner, old, "renamed.L", how)
    if how != "script_then_operator":
        assert getattr(chain, setting) == "renamed.L"
    controls.location.x += 0.05
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
    assert getattr(chain, setting) == "renamed.L"
    unchanged = {"tip_bone": "b3", "target_bone": "ctrl", "pole_bone": "knob"}
    del unchanged[setting]
    assert {name: getattr(chain, name) for name in unchanged} == unchanged
    assert _tip_miss(bpy, obj, chain) < 1e-5


@pytest.mark.parametrize("case", ["renamed_and_moved", "duplicated_then_renamed", "deleted"])
def test_anything_less_clear_than_a_rename_changes_nothing(blender, case):
    """A bone renamed while it was moved, a duplicate at the same place as the renamed bone, a bone
    deleted: the setting keeps its name (the chain then names the bone it no longer finds, or uses the one of that
    name), never a guess."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    bpy.ops.object.mode_set(mode="EDIT")
    bones = obj.data.edit_bones
    if case == "renamed_and_moved":
        bones["b3"].name = "hand"
        bones["hand"].tail.z += 0.1
    elif case == "duplicated_then_renamed":
        copy = bones.new("copy")
        copy.head, copy.tail, copy.roll = bones["b3"].head, bones["b3"].tail, bones["b3"].roll
        bones["b3"].name = "hand"
    else:
        bones.remove(bones["b3"])
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.update()
    assert chain.tip_bone == "b3"


def test_undo_of_a_rename_leaves_the_chain_on_the_restored_name(blender):
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    bpy.ops.ed.undo_push(message="before the rename")
    obj.data.bones["b3"].name = "hand"
    bpy.context.view_layer.update()
    assert obj.blender_ik.chains[0].tip_bone == "hand"
    bpy.ops.ed.undo_push(message="the rename")
    bpy.ops.ed.undo()
    obj = bpy.data.objects["Arm"]
    assert "b3" in obj.data.bones and obj.blender_ik.chains[0].tip_bone == "b3"
    bpy.context.view_layer.update()
    assert obj.blender_ik.chains[0].tip_bone == "b3"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
