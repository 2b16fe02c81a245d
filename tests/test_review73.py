"""Review 73: a rigger's big production rig meets Build Rig's check for goals that follow geometry the armature
deforms, judged by what Blender evaluates."""
import pytest

from rigs import add_empty, arm_with_chain, build_rig_refused, frames_a_bake_sets, hang_on_vertex, skin_patch


def _empties_behind(bpy, goal, count, how):
    """``count`` Empties, each placing the one before it (``goal`` first) by parenting or a Copy Rotation; returns the
    last."""
    for index in range(count):
        empty = bpy.data.objects.new(f"Follow{index}", None)
        bpy.context.scene.collection.objects.link(empty)
        if how == "parent":
            goal.parent = empty
        else:
            goal.constraints.new("COPY_ROTATION").target = empty
        goal = empty
    bpy.context.view_layer.update()
    return goal


@pytest.mark.parametrize("how", ["parent", "constraint"])
@pytest.mark.parametrize("deformed", [False, True])
def test_a_goal_behind_a_long_line_of_empties(blender, how, deformed):
    """A goal that follows a line of 1,200 Empties (a layout's nested offsets): Build Rig raised a RecursionError (or a
    MemoryError) from its check that the goal follows nothing the armature deforms, however the line ends."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    last = _empties_behind(bpy, chain.target, 1200, how)
    if deformed:  # the line ends on the character's skin: refused as a dependency cycle, naming the skin
        skin = skin_patch(bpy)
        skin.modifiers.new("Armature", "ARMATURE").object = obj
        hang_on_vertex(bpy, last, skin)
        build_rig_refused(bpy, obj, "follows the geometry of 'Skin', which armature 'Arm' deforms")
        return
    assert bpy.ops.blender_ik.build_rig(chains="ALL") == {"FINISHED"}
    bpy.context.view_layer.update()
    tip = obj.matrix_world @ obj.pose.bones["b3"].tail
    assert (tip - chain.target.matrix_world.translation).length < 1e-4


@pytest.mark.parametrize("shown", [False, True])
def test_particles_switched_off_are_no_simulation_to_step_through(blender, shown):
    """A crowd shot's emitter with its Particle System modifier switched off in the viewport (a heavy effect the TD
    hides while animating), which Blender does not step: a bake of frames 200-210 whose target is read frame by frame
    stepped the scene through frames 1-210 for it, as for cloth or soft bodies switched off it does not. Shown, it is
    stepped from its start."""
    bpy = blender
    obj, chain = arm_with_chain(bpy)
    chain.target.constraints.new("COPY_ROTATION").target = add_empty("Turn", rotation=(0.2, 0.1, 0.0))
    bpy.ops.mesh.primitive_plane_add(location=(3.0, 0.0, 0.0))
    bpy.context.active_object.modifiers.new("Sparks", "PARTICLE_SYSTEM").show_viewport = shown
    scene = bpy.context.scene
    scene.frame_end = 250
    scene.frame_set(205)
    assert min(frames_a_bake_sets(bpy, obj, chain.target, 200, 210)) == (1 if shown else 200)
