"""Review 57: undo, redo and files with today's features (an animator who presses Ctrl+Z a lot and saves often),
judged by what Blender evaluates."""
import pytest

from blender_ik_addon import runtime

from test_review53 import _arm_length, _figure_keyed_in_fk, _tips_off


@pytest.mark.parametrize("reload", ["open", "revert"])
def test_a_file_opened_with_live_keyed_chains_shows_them_on_their_targets(blender, tmp_path, reload):
    """Live on, the chains keyed by Solve with Auto Keying and their targets dragged off the keys: saved and opened
    again (or reverted), the hand and foot showed their keys, a few centimetres off their targets, until something
    moved or the frame changed: the file's first evaluation calls no update handler, so Live never solved. Live now
    solves its chains when a file is loaded, on the pose Blender plays."""
    bpy = blender
    obj, targets = _figure_keyed_in_fk(bpy)
    bpy.context.scene.frame_set(10)
    for target in targets.values():
        target.location.z += 0.02  # dragged: the keys' in-between no longer reaches it
    assert max(_tips_off(bpy, obj, targets).values()) < 1e-5 * _arm_length(obj)
    names, tips = obj.name, {tip: target.name for tip, target in targets.items()}
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "shot.blend"))
    if reload == "open":
        bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "shot.blend"))
    else:
        bpy.data.objects[tips["hand.L"]].location.x += 0.1  # an edit the animator throws away
        bpy.ops.wm.revert_mainfile()
    obj = bpy.data.objects[names]
    off = _tips_off(bpy, obj, {tip: bpy.data.objects[name] for tip, name in tips.items()})
    assert max(off.values()) < 1e-5 * _arm_length(obj), off
    for chain in obj.blender_ik.chains:
        assert runtime.readout(obj, chain.name).status == runtime.REACHED
