"""Review 50: a bake reaching for bones of a keyed control armature (or under a keyed body), judged by what Blender
plays: the tip on the goal and the last bone along its up axis on every baked frame."""
import math

import pytest

from rigs import add_empty, build_arm, chain_length_world, tip_and_direction
from scenes import add_bone, new_armature
from test_panel import draw_panels

from mathutils import Vector  # noqa: E402 (after bpy: rigs imports it)

FRAMES = range(1, 25)


def _assert_plays_on_target(bpy, obj, goal_matrix, axis=(0.0, 0.0, 1.0), frames=FRAMES):
    scene = bpy.context.scene
    reach = chain_length_world(obj)
    for frame in frames:
        scene.frame_set(frame)
        tip, direction = tip_and_direction(obj)
        goal = goal_matrix()
        assert (Vector(tip) - goal.translation).length < 1e-5 * reach, frame
        assert math.degrees(Vector(direction).angle(goal.to_3x3() @ Vector(axis))) < 1e-3, frame


@pytest.mark.parametrize("where", ["a control root bone as the target", "the root bone under the chain"])
def test_a_keyed_root_bone_without_local_location_plays_where_blender_poses_it(blender, where):
    """A root bone with Local Location off moves along the armature's axes, not its own: a control bone keyed so (or
    the body's root under the arm) was composed as if it moved along its own axes, and the bake reported all in reach
    with the hand a quarter of the arm's length off its target."""
    bpy = blender
    obj = build_arm()
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone = "arm", "b3"
    if where == "the root bone under the chain":
        moved, bone_name = obj, "root"
        target = chain.target = add_empty("Hand", location=(0.9, 0.3, 1.1), rotation=(0.2, 0.4, 0.1))
        goal = lambda: target.matrix_world  # noqa: E731
        axis = (0.0, 0.0, 1.0)
    else:
        moved, bone_name = new_armature("Controls"), "hand_ctl"
        add_bone(moved.data, bone_name, (1.0, 0.3, 1.3), (1.2, 0.3, 1.35), None, roll=0.5)
        bpy.ops.object.mode_set(mode="OBJECT")
        chain.target, chain.target_bone, chain.up_axis = moved, bone_name, "Y"
        goal = lambda: moved.matrix_world @ moved.pose.bones[bone_name].matrix  # noqa: E731
        axis = (0.0, 1.0, 0.0)
    moved.data.bones[bone_name].use_local_location = False
    pose_bone = moved.pose.bones[bone_name]
    for frame, x in ((1, 0.0), (24, 0.2)):
        pose_bone.location = (x, -x, 0.5 * x)
        pose_bone.keyframe_insert("location", frame=frame)
    bpy.context.view_layer.objects.active = obj
    bpy.context.scene.frame_set(1)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=24) == {"FINISHED"}
    _assert_plays_on_target(bpy, obj, goal, axis)


@pytest.mark.parametrize("role", ["target", "pole"])
def test_a_bone_left_from_a_control_armature_can_be_cleared_in_the_panel(blender, role):
    """The animator picks a control armature's bone as the target (or pole), then switches to an Empty (a prop): the
    panel hid the Bone field, which only shows for an armature, while Solve and Bake refused the chain with "clear the
    target's bone", which nothing in the panel could do. The field shows while it holds a name; cleared there, the
    chain solves."""
    bpy = blender
    controls = new_armature("Controls")
    add_bone(controls.data, "hand_ctl", (0.9, 0.3, 1.1), (0.9, 0.5, 1.1), None)
    bpy.ops.object.mode_set(mode="OBJECT")
    obj = build_arm()
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", add_empty("Hand", location=(0.9, 0.3, 1.1))
    if role == "pole":
        chain.plane = "POLE"
    prop = add_empty("Prop", location=(1.5, 0.0, 1.0) if role == "pole" else (0.9, 0.3, 1.1))
    setattr(chain, role, controls)
    setattr(chain, f"{role}_bone", "hand_ctl")
    setattr(chain, role, prop)  # the panel's field: the Bone field goes, its name stays
    bpy.context.view_layer.objects.active = obj
    with pytest.raises(RuntimeError, match=f"clear the {role}'s bone"):
        bpy.ops.blender_ik.solve()
    drawn = draw_panels(bpy, obj)
    assert any(kind.startswith("prop") and name == f"{role}_bone" for kind, name in drawn), drawn
    setattr(chain, f"{role}_bone", "")  # what the field does
    assert bpy.ops.blender_ik.solve() == {"FINISHED"}
