"""Adversarial review 2: undo and redo of a bake to samples in the same session (Blender's memfile undo, which runs
headless once a step is pushed). Undo gives back the keys the bake replaced, playing as before; redo the samples;
the bake leaves no copy of the action behind for undo to keep."""
import pytest

B1 = 'pose.bones["b1"].rotation_quaternion'


def _points(bpy, keys):
    fcurve = keys.find_fcurve(bpy.data.objects["Arm"], B1, 0)
    return None if fcurve is None else (len(fcurve.keyframe_points), len(fcurve.sampled_points))


def _played(bpy, frame):
    bpy.context.scene.frame_set(frame)
    return tuple(round(value, 6) for value in bpy.data.objects["Arm"].pose.bones["b1"].rotation_quaternion)


@pytest.mark.parametrize("keyed", [True, False])
def test_review2_undo_and_redo_of_a_bake_to_samples(blender, keyed):
    bpy = blender
    from blender_ik_addon import keys
    from test_bake import setup
    obj, _ = setup(bpy)
    if keyed:
        pose_bone = obj.pose.bones["b1"]
        for frame, value in ((5, (0.9, 0.1, 0.2, 0.0)), (50, (0.8, 0.3, 0.2, 0.0))):
            pose_bone.rotation_quaternion = value
            pose_bone.keyframe_insert("rotation_quaternion", frame=frame)
    actions = {action.name for action in bpy.data.actions}
    before = _points(bpy, keys), _played(bpy, 20)
    bpy.ops.ed.undo_push(message="before the bake")
    bpy.context.view_layer.objects.active = obj
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=60, output="SAMPLES") == {"FINISHED"}
    new_actions = {action.name for action in bpy.data.actions} - actions
    assert len(new_actions) == (0 if keyed else 1), new_actions  # the snapshot's copy is gone
    baked = _points(bpy, keys), _played(bpy, 20)
    assert baked[0] == (0, 60)
    bpy.ops.ed.undo_push(message="the bake")
    bpy.ops.ed.undo()
    assert (_points(bpy, keys), _played(bpy, 20)) == before
    bpy.ops.ed.redo()
    assert (_points(bpy, keys), _played(bpy, 20)) == baked
