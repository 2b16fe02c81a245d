"""Review 33: today's changes as a pipeline TD and an animator would meet them: bake_ik.py --scene, Live on an armature
disabled in viewports, read-outs of removed chains, bone renames on shared and swapped Armature datablocks."""
import pytest

from test_bake_ik_script import replay, sources, work  # noqa: F401 (fixtures)


def test_the_baked_file_opens_on_its_inputs_view_layer(blender, work):
    """A layout scene shown on its view layer 'Main' (it has another, 'ViewLayer', as the shot scene's): --scene
    bakes the shot, and the baked file opened on the layout's 'ViewLayer' (the window, sent back to the layout, took
    the view layer named as the shot's), another set of collections and selections than the input showed."""
    bpy = blender
    path = work.folder / "views.blend"
    bpy.ops.wm.open_mainfile(filepath=str(work.folder / "layout.blend"))  # the arm in 'Scene', shown: 'Layout'
    layout = bpy.data.scenes["Layout"]
    layout.view_layers[0].name = "Main"
    layout.view_layers.new("ViewLayer")
    bpy.context.window.view_layer = layout.view_layers["Main"]
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    done = work.run("views.blend", "--scene", "Scene", "--end", 20, "--target", "Target", "--armature", "Arm")
    assert done.returncode == 0, done.stderr
    bpy.ops.wm.open_mainfile(filepath=str(work.folder / "views_baked.blend"))
    window = bpy.context.window
    assert (window.scene.name, window.view_layer.name) == ("Layout", "Main")
    replay(bpy, work.folder / "views_baked.blend", range(1, 21))
