"""Review 33: today's changes as a pipeline TD and an animator would meet them: bake_ik.py --scene, Live on an armature
disabled in viewports, read-outs of removed chains, bone renames on shared and swapped Armature datablocks."""
import numpy as np
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


@pytest.mark.parametrize("live_first", [True, False])
@pytest.mark.parametrize("disabled", ["object", "collection"])
def test_an_armature_disabled_in_viewports_but_rendered_is_posed_by_live_in_renders(blender, tmp_path, disabled,
                                                                                     live_first):
    """A heavy character disabled in viewports (its screen icon, or its collection's) but not in renders, as a lighter
    keeps one: Blender renders it, so Live must pose it in each rendered frame. Every frame rendered the arm in the
    pose it was left in: Live refused it by its viewport settings in renders too (since today whenever it was disabled;
    before, when it was disabled before Live was turned on, or a setting changed)."""
    from test_review14 import _arm_rendered_from_the_front
    bpy = blender
    obj, chain, render = _arm_rendered_from_the_front(bpy, tmp_path, (1, 4))
    chain.live = live_first
    if disabled == "object":
        obj.hide_viewport = True
    else:
        collection = bpy.data.collections.new("Characters")
        bpy.context.scene.collection.children.link(collection)
        collection.objects.link(obj)
        bpy.context.scene.collection.objects.unlink(obj)
        collection.hide_viewport = True
    chain.live = True
    live = render("live")
    if disabled == "object":
        obj.hide_viewport = False
    else:
        collection.hide_viewport = False
    assert bpy.ops.blender_ik.bake(frame_start=1, frame_end=4) == {"FINISHED"}
    baked = render("baked")
    assert np.abs(np.diff(baked[:, 0])).min() > 3.0  # the hand moves on every frame
    assert np.abs(live - baked).max() < 0.05, (live, baked)
