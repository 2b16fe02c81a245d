"""Adversarial review: chain._read_chains caches validated chains by (armature.as_pointer(), bone names) and
is only cleared on load, undo and redo. Delete a character and make (append, import, re-create) one with the
same bones: Blender often reuses the freed memory, the pointer matches, the signature matches, and the cached
Chain still holds the removed object. Expected to FAIL on the reviewed code: Solve raises a Python traceback
(ReferenceError: StructRNA of type Object has been removed) instead of solving."""
import bpy  # noqa: F401

from test_chains import body_with_chains


def test_review_solve_after_deleting_and_recreating_a_character(blender):
    bpy = blender
    seen, reused = set(), 0
    for _ in range(12):
        obj = body_with_chains(bpy, ["hand.L"])
        pointer = obj.as_pointer()
        reused += pointer in seen
        seen.add(pointer)
        try:
            result = bpy.ops.blender_ik.solve()
        except RuntimeError as error:
            assert "Traceback" not in str(error), f"Solve crashed on a re-created armature: {error}"
            raise
        assert result == {"FINISHED"}
        target = obj.blender_ik.chains[0].target
        bpy.data.objects.remove(obj)
        bpy.data.objects.remove(target)
    assert reused, "Blender never reused an address in this run: the test did not exercise the cache"


def test_review_live_after_duplicating_deleting_and_renaming_the_character(blender, capfd):
    """Live keeps validated chains in live._validated by (armature name, chain name). Duplicate a live
    character (its copy shares the targets), delete the original, give the copy the original's name: the
    copy's inputs look validated, the cached Chain holds the removed object, and every update raises
    ReferenceError inside the handler; the copy stops following while its read-out still says reached."""
    bpy = blender
    import numpy as np
    from mathutils import Vector
    obj = body_with_chains(bpy, ["hand.L"])
    target = obj.blender_ik.chains[0].target
    obj.blender_ik.chains[0].live = True
    target.location += Vector((0.0, -0.02, 0.02))
    bpy.context.view_layer.update()
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.ops.object.duplicate()
    copy = bpy.context.active_object
    bpy.context.view_layer.update()
    bpy.data.objects.remove(obj)
    copy.name = "Body"
    bpy.context.view_layer.update()
    capfd.readouterr()
    target.location += Vector((0.0, -0.01, 0.01))
    bpy.context.view_layer.update()
    bpy.context.view_layer.update()
    assert "Traceback" not in capfd.readouterr().err
    tip = copy.matrix_world @ copy.pose.bones["hand.L"].tail
    assert np.linalg.norm(np.array(tip - target.matrix_world.translation)) < 1e-5
