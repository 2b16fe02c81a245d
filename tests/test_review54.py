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


def _prop_rig_reaching_for_the_hand(bpy):
    """'Arm' (chain A) holds a prop (an Empty parented to its hand, b3) that chain X of a second armature, 'Other',
    reaches for; both baked over 1-20 with A's target moving, then A's target keyed further at frame 20. Returns
    (arm, other, the prop)."""
    from mathutils import Vector

    from blender_ik_addon.ops import bake_armature
    from rigs import arm_with_chain
    arm, chain_a = arm_with_chain(bpy, name="A")
    other = build_arm(name="Other", base=(1.5, 1.0, 0.0))
    target = chain_a.target
    bpy.context.view_layer.objects.active = arm
    assert bpy.ops.blender_ik.solve(chains="ALL") == {"FINISHED"}
    prop = add_empty("Prop", location=target.location + Vector((0.1, 0.1, 0.0)))
    bpy.context.view_layer.update()
    world = prop.matrix_world.copy()
    prop.parent, prop.parent_type, prop.parent_bone = arm, "BONE", "b3"
    bpy.context.view_layer.update()
    prop.matrix_world = world
    chain_x = other.blender_ik.chains.add()
    chain_x.name, chain_x.tip_bone, chain_x.target = "X", "b3", prop
    for frame, x in ((1, 0.9), (20, 0.8)):
        target.location.x = x
        target.keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 20
    for obj in (arm, other):
        assert ", all in reach" in bake_armature(scene, obj).summary()
    target.location.x = 0.7
    target.keyframe_insert("location", frame=20)
    return arm, other, prop


def test_a_bake_that_leaves_out_another_armatures_chain_reaching_for_the_baked_hand_names_it(blender, capfd):
    """A prop rig (another armature) reaches for a prop held in the character's hand. The animator moves the hand's
    target and bakes the character (Bake All, the character active): its new keys carry the prop away, and the prop
    rig's keys, solved on the hand's old pose, play off it. The report said 'all in reach' (it named such chains of
    the baked armature only); it names the other armature's chain now."""
    bpy = blender
    arm, other, prop = _prop_rig_reaching_for_the_hand(bpy)
    bpy.context.view_layer.objects.active = arm
    capfd.readouterr()
    assert bpy.ops.blender_ik.bake(chains="ALL", frame_start=1, frame_end=20) == {"FINISHED"}
    out = capfd.readouterr().out
    bpy.context.scene.frame_set(20)
    assert (other.matrix_world @ other.pose.bones["b3"].tail - prop.matrix_world.translation).length > 1e-3
    assert "X (armature 'Other') follows the baked chains and was not baked" in out, out


@pytest.mark.parametrize("armature", [None, "Arm"])
def test_bake_ik_script_names_another_armatures_following_chain_only_when_it_left_it(blender, tmp_path, armature):
    """The same file baked with ``bake_ik.py``: all of it (the prop rig is baked after the character, on its new
    keys: nothing to name), or ``--armature Arm`` alone (the prop rig is left out: named)."""
    import json
    import os
    import subprocess
    import sys
    bpy = blender
    _prop_rig_reaching_for_the_hand(bpy)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "prop.blend"), copy=True)
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "bake_ik.py")
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, script, str(tmp_path / "prop.blend"), "--report", str(tmp_path / "r.json")]
                          + (["--armature", armature] if armature else []),
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "r.json").read_text())["files"][0]["summary"]
    named = "X (armature 'Other') follows the baked chains" in summary
    assert named == (armature is not None), summary
