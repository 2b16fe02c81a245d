"""Review 77: an animator and a TD baking IK to keys on characters, with the bake's fixed cost sped up."""
import pytest

from rigs import arm_with_chain


@pytest.mark.parametrize("read", ["from its keys", "frame by frame"])
@pytest.mark.parametrize("frame, subframe", [(-7, 0.25), (3, 0.5)], ids=["negative", "positive"])
def test_a_bake_leaves_the_scene_on_the_subframe_it_was_on(blender, read, frame, subframe):
    """With the Timeline's subframes shown, an animator on frame -6.75 (a pre-roll; Blender holds it as frame -6,
    subframe -0.75) baked: the scene was left on frame -6.0, showing another pose than before, because the frame was
    set back with frame_set(-6, subframe=-0.75), whose subframe Blender clamps to 0."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    target = chain.target
    if read == "frame by frame":  # a constraint: the target is read where Blender evaluates it
        target.constraints.new("LIMIT_LOCATION")
    scene = bpy.context.scene
    for key, x in ((-20, 0.9), (10, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=key)
    scene.frame_set(frame, subframe=subframe)
    before = scene.frame_current_final
    assert before == frame + subframe
    assert bpy.ops.blender_ik.bake(frame_start=-20, frame_end=10) == {"FINISHED"}
    assert scene.frame_current_final == pytest.approx(before, abs=1e-6)
    shown = obj.pose.bones["b3"].tail.copy()
    scene.frame_set(frame, subframe=subframe)  # the pose Blender plays at that time
    assert (obj.pose.bones["b3"].tail - shown).length < 1e-6
