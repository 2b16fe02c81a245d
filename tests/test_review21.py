"""Review 21: undo and redo (an animator who presses Ctrl+Z a lot), judged by what Blender evaluates after the undo.

Operators are called as the interface calls them, pushing their undo step (``bpy.ops.blender_ik.solve("EXEC_DEFAULT",
True)``: called plainly from Python, an operator pushes none)."""
import pytest

from rigs import add_empty, arm_with_chain


def _ui_push(message):
    """Push an undo step as Blender's interface does after an edit in the Properties editor or the Outliner (or an
    operator such as leaving Edit Mode): before the depsgraph update that runs the add-on's handlers.
    ``bpy.ops.ed.undo_push`` updates the view layer first, which the interface does not; bpy 5.2 has no other way to
    call it from Python."""
    from _bpy import ops
    if not hasattr(ops, "call"):
        pytest.skip("bpy 5.2 updates the view layer before every operator called from Python")
    ops.call("ed.undo_push", {"message": message})


def _bone_owner(bpy, which):
    """The arm, its chain on b3 (reaching for an Empty, or for bone 'ctrl' of a control armature), and the armature
    whose bone ``which`` ('tip', 'target') names."""
    obj, chain = arm_with_chain(bpy)
    if which == "tip":
        return obj, obj, "b3"
    from scenes import add_bone, new_armature
    control = new_armature("Controls")
    add_bone(control.data, "ctrl", (0.9, 0.3, 1.1), (0.9, 0.3, 1.3))
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    chain.target, chain.target_bone = control, "ctrl"
    bpy.context.view_layer.update()
    return obj, control, "ctrl"


@pytest.mark.parametrize("which", ["tip", "target"])
@pytest.mark.parametrize("back_to_rename", ["undo", "redo"])
def test_undo_or_redo_back_to_a_bone_rename_keeps_the_chain_on_the_bone(blender, which, back_to_rename):
    """The interface pushes a rename's undo step before the update in which the chain's bone setting follows it, so
    that step has the bone renamed and the setting on the old name. Undone to (from a later step) or redone, it left the
    chain naming a bone that is gone: Solve refused it ("has no bone named 'b3'"), Live stopped."""
    bpy = blender
    obj, owner, bone = _bone_owner(bpy, which)
    attribute, owner_name = f"{which}_bone", owner.name
    _ui_push("before the rename")
    owner.data.bones[bone].name = "renamed"
    _ui_push("rename")
    bpy.context.view_layer.update()
    assert getattr(bpy.data.objects["Arm"].blender_ik.chains[0], attribute) == "renamed"
    bpy.data.objects["Target"].location.x -= 0.1  # something else, its own step
    _ui_push("move")
    bpy.context.view_layer.update()
    bpy.ops.ed.undo()
    if back_to_rename == "redo":
        bpy.ops.ed.undo()
        bpy.context.view_layer.update()
        bpy.ops.ed.redo()
    bpy.context.view_layer.update()
    obj = bpy.data.objects["Arm"]
    assert "renamed" in bpy.data.objects[owner_name].data.bones
    assert getattr(obj.blender_ik.chains[0], attribute) == "renamed"
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.solve("EXEC_DEFAULT", True) == {"FINISHED"}
    goal = bpy.data.objects[owner_name]
    goal = goal.matrix_world @ goal.pose.bones["renamed"].head if which == "target" else \
        bpy.data.objects["Target"].matrix_world.translation
    bpy.context.view_layer.update()
    assert (obj.matrix_world @ obj.pose.bones["renamed" if which == "tip" else "b3"].tail - goal).length < 1e-5
