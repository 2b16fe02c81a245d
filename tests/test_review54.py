"""Review 54: an animator with Live on all day, and a TD baking some chains of a character, judged by what Blender
shows and plays back."""
import pytest

from blender_ik_addon import keys

from rigs import add_empty, build_arm, chain_length_world

FRAMES = range(1, 31)


def _played_off(bpy, obj, target, frames=FRAMES, tip="b3"):
    """The farthest the tip gets from its target over ``frames``, played back, over the chain's length."""
    scene = bpy.context.scene
    worst = 0.0
    for frame in frames:
        scene.frame_set(frame)
        worst = max(worst, (obj.matrix_world @ obj.pose.bones[tip].tail - target.matrix_world.translation).length)
    return worst / chain_length_world(obj)


@pytest.mark.parametrize("attribute", ["scale", "location"])
@pytest.mark.parametrize("interpolation", ["ELASTIC", "BACK", "BEZIER"])
def test_held_keys_that_play_elastic_are_not_held(blender, attribute, interpolation):
    """Insert Keyframe keys location, rotation and scale; the animator made every key Elastic (a bouncy body). Between
    two keys of one value, an Elastic segment plays a swing of its own amplitude (a scale from 0.45 to 1.27), not the
    value: the bake took such keys as holding the value, reported 'all in reach' and played the hand a whole arm off
    its target. Such keys are animation: refused as any keys that change the channel."""
    bpy = blender
    obj = build_arm(connected=False)
    bpy.context.view_layer.objects.active = obj
    target = add_empty(location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
    for frame, x in ((1, 0.9), (30, 0.6)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    for name in ("b1", "b2", "b3"):
        for frame in (1, 30):
            obj.pose.bones[name].keyframe_insert(attribute, frame=frame)
            for index in range(3):
                for point in keys.find_fcurve(obj, f'pose.bones["{name}"].{attribute}', index).keyframe_points:
                    point.interpolation = interpolation
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.scene.frame_set(1)
    if interpolation == "ELASTIC":
        with pytest.raises(RuntimeError, match=f"animated {attribute}"):
            bpy.ops.blender_ik.bake(frame_start=1, frame_end=30)
        return
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=30) == {"FINISHED"}
    assert _played_off(bpy, obj, target) < 1e-5
