"""Review 53: Live and Build Rig on a character animated in FK (the body keyed, IK chains on the limbs): an animator
scrubbing and keying with Live on, judged by what Blender shows."""
import pytest

from blender_ik_addon import keys

from rigs import build_arm  # noqa: F401  (imports bpy, which scenes needs first)
from scenes import build_figure
from test_chains import select_tips

TIPS = ("hand.L", "foot.L")


def _figure_keyed_in_fk(bpy):
    """The figure with its hips and spine keyed at frames 1 and 20, live chains on a hand and a foot (Chains from
    Selected), and the chains' own bones keyed by Solve with Auto Keying at frames 1 and 20, the targets moved
    before each. Returns (figure, {tip: target})."""
    scene = bpy.context.scene
    obj = build_figure()
    for frame, turn in ((1, 0.0), (20, 0.15)):
        for name in ("hips", "spine"):
            pose_bone = obj.pose.bones[name]
            pose_bone.rotation_mode = "XYZ"
            pose_bone.rotation_euler = (turn, 0.0, turn / 2)
            pose_bone.keyframe_insert("rotation_euler", frame=frame)
    scene.frame_set(1)
    select_tips(bpy, obj, TIPS)
    assert bpy.ops.blender_ik.chains_from_selected() == {"FINISHED"}
    targets = {chain.tip_bone: chain.target for chain in obj.blender_ik.chains}
    for chain in obj.blender_ik.chains:
        chain.live = True
    scene.tool_settings.use_keyframe_insert_auto = True
    for frame in (1, 20):
        scene.frame_set(frame)
        for target in targets.values():
            target.location.z += 0.04
        bpy.context.view_layer.update()
        assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    scene.tool_settings.use_keyframe_insert_auto = False
    return obj, targets


def _tips_off(bpy, obj, targets):
    bpy.context.view_layer.update()
    return {tip: (obj.matrix_world @ obj.pose.bones[tip].tail - target.matrix_world.translation).length
            for tip, target in targets.items()}


def _arm_length(obj):
    return sum(obj.data.bones[name].length for name in ("upper_arm.L", "forearm.L", "hand.L"))


@pytest.mark.parametrize("tagged", ["object", "action"])
def test_live_keyed_chain_stays_on_target_when_a_body_key_is_edited(blender, tagged):
    """Live on, the chains keyed by Solve with Auto Keying: an edit of the spine's key at frame 20 (as the Graph Editor
    makes it: the key moved, the animation evaluated again) at frame 10 put the leg back on its keys, off its target,
    until the next frame change: nothing Live compares (targets, the leg's parent, the frame) had changed. Live now
    solves a keyed chain again when Blender played its keys again."""
    bpy = blender
    obj, targets = _figure_keyed_in_fk(bpy)
    scene = bpy.context.scene
    scene.frame_set(10)
    for target in targets.values():
        target.location.z += 0.02  # dragged: the keys' in-between no longer reaches it
    assert max(_tips_off(bpy, obj, targets).values()) < 1e-5 * _arm_length(obj)
    action = obj.animation_data.action
    fcurve = keys.find_fcurve(obj, 'pose.bones["spine"].rotation_euler', 1)
    fcurve.keyframe_points[1].co.y += 0.1
    fcurve.keyframe_points[1].handle_left.y += 0.1
    fcurve.keyframe_points[1].handle_right.y += 0.1
    fcurve.update()
    if tagged == "object":
        obj.update_tag(refresh={"TIME"})
    else:
        action.update_tag()
    off = _tips_off(bpy, obj, targets)
    assert off["foot.L"] < 1e-5 * _arm_length(obj), off  # the leg, below the hips, not the spine
    assert off["hand.L"] < 1e-5 * _arm_length(obj), off
