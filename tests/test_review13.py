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
