"""Review 72: scripts/bake_ik.py as a pipeline TD runs it overnight, judged by what Blender plays back."""
import os
import subprocess
import sys

import pytest

from rigs import add_empty, build_arm, frames_a_bake_sets

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "bake_ik.py")


def _cape_file(bpy, path):
    """The arm reaching for an Empty on a vertex of a cloth cape that only the root bone
    deforms (the chain does not move it), the file saved at frame 1."""
    import blender_ik_addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        obj = build_arm()
        obj.blender_ik.tip_bone = "b3"
        scene = bpy.context.scene
        scene.frame_start, scene.frame_end = 1, 40
        scene.gravity = (0.0, 0.0, -0.3)  # the cape sinks slowly, within reach
        bpy.ops.mesh.primitive_plane_add(size=0.6, location=(0.9, 0.3, 1.3))
        cape = bpy.context.active_object
        cape.name = "Cape"
        cape.vertex_groups.new(name="root").add([0, 1, 2, 3], 1.0, "REPLACE")
        cape.modifiers.new("Armature", "ARMATURE").object = obj
        cape.modifiers.new("Cloth", "CLOTH")
        target = add_empty("Target")
        target.parent, target.parent_type, target.parent_vertices = cape, "VERTEX", (0, 0, 0)
        obj.blender_ik.active_chain.target = target
        bpy.context.view_layer.objects.active = obj
        bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    finally:
        blender_ik_addon.unregister()


def test_a_range_after_the_simulations_start_bakes_a_target_on_it(tmp_path):
    """A re-bake of frames 20-40 of a shot whose target rides a cape the character's root deforms: the self-check jumped
    to frame 20 after the new keys had reset the cape's cache, read the cape where it was at frame 1 and refused the
    target as 'moves when the chain is posed', while the whole range baked and played on target."""
    import bpy

    _cape_file(bpy, tmp_path / "cape.blend")
    bpy.ops.wm.read_factory_settings(use_empty=True)
    run = subprocess.run([sys.executable, SCRIPT, "cape.blend", "--start", "20", "--end", "40"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert run.returncode == 0, run.stderr
    assert "all in reach" in run.stdout
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "cape_baked.blend"))
    scene, obj, target = bpy.context.scene, bpy.data.objects["Arm"], bpy.data.objects["Target"]
    heights = []
    for frame in range(1, 41):  # played through from the simulation's start, as Blender plays it
        scene.frame_set(frame)
        heights.append(target.matrix_world.translation.z)
        if frame >= 20:
            tip = obj.matrix_world @ obj.pose.bones["b3"].tail
            assert (tip - target.matrix_world.translation).length < 1e-4, frame
    assert heights[0] - heights[19] > 0.02, heights  # the cape did sink: frame 20 is not where frame 1 left it
    bpy.ops.wm.read_factory_settings(use_empty=True)


@pytest.mark.parametrize("dynamics", [False, True])
def test_static_hair_is_no_simulation_to_step_through(blender, dynamics):
    """A furry character (a hair particle system without dynamics, which Blender poses at any frame) made a bake of
    frames 200-210 whose target is read frame by frame step the scene through frames 1-210: twenty times the frames
    for nothing, with no word of why. Hair dynamics is a simulation, stepped from its start (its cache's, here 190)."""
    bpy = blender
    obj = build_arm()
    obj.blender_ik.tip_bone = "b3"
    target = add_empty("Target", location=(0.9, 0.3, 1.1))
    obj.blender_ik.active_chain.target = target
    target.constraints.new("COPY_ROTATION").target = add_empty("Turn", rotation=(0.2, 0.1, 0.0))  # read per frame
    bpy.ops.mesh.primitive_plane_add(location=(3.0, 0.0, 0.0))
    bpy.context.active_object.modifiers.new("Fur", "PARTICLE_SYSTEM")
    system = bpy.context.active_object.particle_systems[0]
    system.settings.type, system.use_hair_dynamics = "HAIR", dynamics
    system.point_cache.frame_start = 190  # hair dynamics is stepped from there (from frame 1 it took 9 s of the suite)
    scene = bpy.context.scene
    scene.frame_end = 250
    scene.frame_set(205)  # the bake sets it back
    assert min(frames_a_bake_sets(bpy, obj, target, 200, 210)) == (190 if dynamics else 200)
