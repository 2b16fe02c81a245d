"""Review 18: the batch bake, as a pipeline TD meets it (scripts/bake_ik.py on a farm, bake_armature from scripts).
Judged by what Blender plays back: the baked file opened, its keys played with frame_set."""
import numpy as np
import pytest

from rigs import add_empty, build_arm, tip_and_direction
from test_bake import animate_target


@pytest.mark.parametrize("in_both", [True, False], ids=["armature-in-both-scenes", "armature-in-the-other-scene"])
def test_review_a_bake_of_a_scene_blender_does_not_evaluate(blender, in_both):
    """A script that bakes every scene of a shot file (``bake_armature(scene, armature)`` for each) got, for a scene
    that is not the window's, either "Baked 40 frames, all in reach" with keys that missed the target by up to 1.6
    (the bake stepped that scene's frames, which moves nothing Blender evaluates) or a refusal saying to enable the
    armature in viewports. It names the scene now, and bakes it once it is the window's scene."""
    bpy = blender
    from blender_ik_addon.chain import ChainError
    from blender_ik_addon.ops import bake_armature
    first = bpy.context.scene
    shot = bpy.data.scenes.new("Shot2")
    bpy.context.window.scene = shot
    obj = build_arm()
    lead = add_empty("Lead")
    animate_target(lead)
    target = add_empty("Target")  # follows the lead through a constraint: the bake steps through the frames
    target.constraints.new("COPY_TRANSFORMS").target = lead
    chain = obj.blender_ik.chains.add()
    chain.name = chain.tip_bone = "b3"
    chain.target = target
    if in_both:
        for member in (obj, lead, target):
            first.collection.objects.link(member)
    bpy.context.window.scene = first
    with pytest.raises(ChainError, match="Scene 'Shot2' is not the scene Blender evaluates"):
        bake_armature(shot, obj, "ALL", 1, 40)
    assert obj.animation_data is None or obj.animation_data.action is None  # nothing keyed
    bpy.context.window.scene = shot  # as the message says
    bake_armature(shot, obj, "ALL", 1, 40)
    for frame in range(1, 41):
        shot.frame_set(frame)
        tip, _ = tip_and_direction(obj)
        assert np.linalg.norm(tip - np.array(target.matrix_world.translation)) < 1e-5 * 2.2, frame
