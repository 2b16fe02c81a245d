"""Review 61: what the bake samples without stepping through the frames (sampling.py) and what it reads frame by
frame, read against how Blender evaluates animation, judged by what Blender plays."""
import pytest

from rigs import build_arm


def _falling_cube_target(bpy):
    """The arm with its chain reaching for a small cube that falls as an active rigid body (slowly: low gravity, so
    that it stays in reach), the scene at frame 1, the simulation's first frame."""
    obj = build_arm()
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_cube_add(size=0.1, location=(0.9, 0.3, 1.4))
    cube = bpy.context.active_object
    bpy.ops.rigidbody.object_add()
    scene.gravity = (0.0, 0.0, -0.6)
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", cube
    bpy.context.view_layer.objects.active = obj
    scene.frame_set(1)
    return obj, cube


@pytest.mark.parametrize("frame_start, step", [(1, 3), (10, 1)])
def test_a_bake_follows_a_rigid_body_target_as_the_simulation_plays_it(blender, frame_start, step):
    """A hand baked to follow a falling rigid body (a ball it catches, a cube it tracks) with a step, or over a range
    that starts after the simulation does, was keyed reaching for the cube where it hung at the start: the bake read
    the target frame by frame with jumps, and Blender steps a simulation only one frame forward from the frame it
    showed (a jump shows the cube where it last was). The bake reported every frame in reach; played from the start,
    the hand stayed up while the cube fell 0.4 below it. The bake steps through every frame from the simulation's
    start now, reading the frames it bakes."""
    bpy = blender
    obj, cube = _falling_cube_target(bpy)
    assert bpy.ops.blender_ik.bake(frame_start=frame_start, frame_end=30, step=step) == {"FINISHED"}
    scene = bpy.context.scene
    heights = []
    for frame in range(1, 31):  # played from the start, as Blender plays a simulation
        scene.frame_set(frame)
        heights.append(cube.matrix_world.translation.z)
        if frame >= frame_start and (frame - frame_start) % step == 0 or frame == 30:
            tip = obj.matrix_world @ obj.pose.bones["b3"].tail
            assert (tip - cube.matrix_world.translation).length < 1e-5, frame
    assert heights[0] - heights[-1] > 0.3  # the cube did fall
