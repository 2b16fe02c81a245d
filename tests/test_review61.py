"""Review 61: what the bake samples without stepping through the frames (sampling.py) and what it reads frame by
frame, read against how Blender evaluates animation, judged by what Blender plays."""
import pytest

from rigs import add_empty, build_arm


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


@pytest.mark.parametrize("animated", ["keyed", "driven"])
def test_a_bake_follows_a_target_whose_parent_inverse_is_animated(blender, animated):
    """A target whose Parent Inverse matrix is keyed (a space switch a script keys: the parent inverse of frame 1
    holds the target still, the one of frame 10 moves it 0.3 along the parent's X) or driven was read from its
    location keys and the parent inverse it has now: the hand was keyed off the target by up to 0.3 on the frames
    before 10. Blender plays that matrix like any keyed property; the bake reads such a target frame by frame now."""
    bpy = blender
    from mathutils import Matrix
    obj = build_arm()
    parent = add_empty("Parent", location=(0.1, 0.0, 0.0))
    target = add_empty("Target", location=(0.6, 0.3, 1.1))
    target.parent = parent
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    if animated == "keyed":
        target.matrix_parent_inverse = Matrix.Identity(4)
        target.keyframe_insert("matrix_parent_inverse", frame=1)
        target.matrix_parent_inverse = Matrix.Translation((0.3, 0.0, 0.0))
        target.keyframe_insert("matrix_parent_inverse", frame=10)
    else:
        driver = target.driver_add("matrix_parent_inverse", 12).driver  # the 4th column's X (column-major)
        driver.type, driver.expression = "SCRIPTED", "frame / 30"  # a simple expression: no Python needed
    target.keyframe_insert("location", frame=1)
    target.location.z = 1.2
    target.keyframe_insert("location", frame=10)
    bpy.context.view_layer.objects.active = obj
    scene = bpy.context.scene
    scene.frame_set(10)
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=10) == {"FINISHED"}
    for frame in range(1, 11):
        scene.frame_set(frame)
        tip = obj.matrix_world @ obj.pose.bones["b3"].tail
        assert (tip - target.matrix_world.translation).length < 1e-5, frame


def _sinking_mesh(bpy, simulation):
    """A small grid that a simulation moves down over the frames: a cloth falling (no collision), or a geometry nodes
    simulation zone that moves it 0.01 down per frame. Returns it."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=3, y_subdivisions=3, size=0.2, location=(0.9, 0.3, 1.4))
    mesh = bpy.context.active_object
    if simulation == "cloth":
        mesh.modifiers.new("Cloth", "CLOTH").settings.effector_weights.gravity = 0.1  # falls slowly: in reach
        return mesh
    group = bpy.data.node_groups.new("Sink", "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    start, end = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    entry, exit_ = nodes.new("GeometryNodeSimulationInput"), nodes.new("GeometryNodeSimulationOutput")
    entry.pair_with_output(exit_)
    move = nodes.new("GeometryNodeSetPosition")
    move.inputs["Offset"].default_value = (0.0, 0.0, -0.01)
    links.new(start.outputs[0], entry.inputs[0])
    links.new(entry.outputs[1], move.inputs["Geometry"])
    links.new(move.outputs[0], exit_.inputs["Geometry"])
    links.new(exit_.outputs[0], end.inputs[0])
    mesh.modifiers.new("Sink", "NODES").node_group = group
    return mesh


@pytest.mark.parametrize("frame_start, step", [(1, 3), (10, 1)])
@pytest.mark.parametrize("simulation", ["cloth", "simulation zone"])
def test_a_bake_follows_a_target_on_a_simulated_mesh_as_the_simulation_plays_it(blender, simulation, frame_start,
                                                                                step):
    """The rigid body's jumps, for the other simulations Blender steps one frame at a time: a target hanging from a
    vertex of a cloth (a cape's corner, a flag) or of a mesh a geometry nodes simulation zone moves. Each played from
    the start puts the hand on the target on every baked frame."""
    bpy = blender
    obj = build_arm()
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 30
    mesh = _sinking_mesh(bpy, simulation)
    target = add_empty("Target", location=(0.0, 0.0, 0.0))
    target.parent, target.parent_type, target.parent_vertices[0] = mesh, "VERTEX", 4  # the grid's middle vertex
    chain = obj.blender_ik.chains.add()
    chain.name, chain.tip_bone, chain.target = "arm", "b3", target
    bpy.context.view_layer.objects.active = obj
    scene.frame_set(1)
    assert bpy.ops.blender_ik.bake(frame_start=frame_start, frame_end=30, step=step) == {"FINISHED"}
    heights = []
    for frame in range(1, 31):
        scene.frame_set(frame)
        heights.append(target.matrix_world.translation.z)
        if frame >= frame_start and (frame - frame_start) % step == 0 or frame == 30:
            tip = obj.matrix_world @ obj.pose.bones["b3"].tail
            assert (tip - target.matrix_world.translation).length < 1e-5, frame
    assert heights[0] - heights[-1] > 0.1  # the mesh did move down
