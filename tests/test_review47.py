"""Review 47: the character moves (the armature object keyed, parented, constrained; targets planted or carried)."""
import re

import pytest

from rigs import arm_with_chain, chain_length_world, pose_snapshot, tip_and_direction


def _key_rotation_mode(obj):
    """Key ``obj`` turning in XYZ Euler over frames 1-20, with a quaternion keyed too, and its rotation mode switching
    from XYZ to Quaternion at frame 10 (an animator who changed the mode halfway and keyed it)."""
    from mathutils import Quaternion
    obj.rotation_mode = "XYZ"
    obj.rotation_euler = (0.0, 0.0, 0.0)
    obj.keyframe_insert("rotation_euler", frame=1)
    obj.rotation_euler = (0.0, 0.0, 0.3)
    obj.keyframe_insert("rotation_euler", frame=20)
    obj.rotation_quaternion = Quaternion((0.0, 0.0, 1.0), -0.4)
    obj.keyframe_insert("rotation_quaternion", frame=1)
    obj.keyframe_insert("rotation_mode", frame=1)
    obj.rotation_mode = "QUATERNION"
    obj.keyframe_insert("rotation_mode", frame=10)
    obj.rotation_mode = "XYZ"


def _control_bone_target(bpy, chain):
    """The chain's target made bone 'ctl' of a control armature, where the Empty was; returns the pose bone."""
    from scenes import add_bone, new_armature
    from mathutils import Vector
    obj = bpy.context.view_layer.objects.active
    controls = new_armature("Controls")
    where = Vector(chain.target.location)
    add_bone(controls.data, "ctl", where, where + Vector((0.0, 0.0, 0.2)))
    bpy.ops.object.mode_set(mode="OBJECT")
    bpy.context.view_layer.objects.active = obj
    chain.target, chain.target_bone = controls, "ctl"
    return controls.pose.bones["ctl"]


@pytest.mark.parametrize("keyed", ["armature", "target", "bone above the chain", "target bone"])
def test_bake_refuses_an_animated_rotation_mode(blender, keyed):
    """Blender plays a keyed rotation mode by converting the rotation the object held on the frame shown before into
    the new mode: frame 10 shows one turn after frame 9 and another after frame 15. The bake read the armature's
    rotation in the mode it had at the current frame on every frame and reported the bake all in reach, while the
    tip played back 0.65 (30% of the arm's reach) off its target from frame 10 on. Refused now, naming the object,
    with nothing changed."""
    from mathutils import Vector
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    moved = {"armature": obj, "target": chain.target, "bone above the chain": obj.pose.bones["root"]}.get(keyed)
    if keyed == "target bone":
        moved = _control_bone_target(bpy, chain)
    _key_rotation_mode(moved)
    bpy.context.scene.frame_set(1)
    before = pose_snapshot(obj)
    try:
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=20)
    except RuntimeError as error:
        refusal = str(error)
    else:  # baked: every frame must play with the tip on its target, whichever frame Blender comes from
        reach = chain_length_world(obj)
        for frame in [*range(1, 21), 15, 10]:
            bpy.context.scene.frame_set(frame)
            tip, _ = tip_and_direction(obj)
            goal = chain.target.matrix_world
            if chain.target_bone:
                goal = goal @ chain.target.pose.bones[chain.target_bone].matrix
            assert (Vector(tip) - goal.translation).length < 1e-4 * reach, frame
        return
    owner = (f"Object '{moved.name}'" if keyed in ("armature", "target")
             else f"Bone '{moved.name}' of '{moved.id_data.name}'")
    assert re.search(rf"{owner} has an animated rotation mode: .*remove those keys", refusal), refusal
    assert pose_snapshot(obj) == before
    assert not any(fcurve.data_path.startswith(("pose.bones[\"b1\"]", "pose.bones[\"b2\"]", "pose.bones[\"b3\"]"))
                   for fcurve in _fcurves(obj))  # the chain keyed nothing


@pytest.mark.parametrize("way", ["nla", "muted solo nla", "driver"])
def test_bake_refuses_a_rotation_mode_played_by_an_nla_strip_or_a_driver(blender, way):
    """The armature's keyed rotation mode pushed down to an NLA strip plays as the action's does, and a driver on it
    changes the mode from frame to frame too: refused, naming where it comes from (the check looks the channel up
    instead of listing a character's thousands of F-curves)."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    if way != "driver":
        _key_rotation_mode(obj)
        anim_data = obj.animation_data
        track = anim_data.nla_tracks.new()
        strip = track.strips.new("walk", 1, anim_data.action)
        anim_data.action = None
        # A solo track plays alone even muted (Blender's NLA: "mute doesn't matter" for the solo track).
        track.mute = track.is_solo = way == "muted solo nla"
        where = rf" \(keyed in NLA strip '{strip.name}'\)"  # Blender may name it after the action instead
    else:
        driver = obj.driver_add("rotation_mode").driver
        driver.type, driver.expression = "SCRIPTED", "1 if frame < 10 else 0"
        where = r" \(driven\)"
    bpy.context.scene.frame_set(1)
    before = pose_snapshot(obj)
    with pytest.raises(RuntimeError, match=rf"Object 'Arm' has an animated rotation mode{where}: "):
        bpy.ops.blender_ik.bake(frame_start=1, frame_end=20)
    assert pose_snapshot(obj) == before


def _fcurves(obj):
    from blender_ik_addon import keys
    return keys.object_fcurves(obj) if obj.animation_data else []
