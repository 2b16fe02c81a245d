"""Live mode: re-solve a chain whenever what it depends on changes.

``depsgraph_update_post`` and ``frame_change_post`` call :func:`follow`. A chain is re-solved only when
its *inputs* changed: the target's, the pole's and the armature's world matrices, the pose of the
chain's parent bone, the frame and the settings. Posing the chain changes none of those, so the update
that posing triggers finds nothing to do: no feedback loop, and no cost when nothing relevant moved.
The handlers are ``@persistent`` and stay registered across file loads; ``load_post`` re-reads which
armatures are live. ``unregister()`` removes every handler added here.
"""
import contextlib

import bpy
from bpy.app.handlers import persistent

from . import ops, rig

# Runtime state only (nothing here is saved): armature names with live on, and each one's last inputs.
_live = set()
_last_inputs = {}
_busy = False


def _inputs(armature, settings, scene):
    """Everything a live solve reads, as comparable plain values."""
    def matrix(obj):
        return None if obj is None else tuple(map(tuple, obj.matrix_world))

    chain_parent = None
    tip = armature.data.bones.get(settings.tip_bone) if settings.tip_bone else armature.data.bones.active
    if tip is not None and tip.parent is not None and tip.parent.parent is not None:
        first = armature.pose.bones[tip.parent.parent.name]
        chain_parent = tuple(map(tuple, first.parent.matrix)) if first.parent else None
        chain_parent = (chain_parent, tuple(first.location), tip.name)
    return (matrix(armature), matrix(settings.target), matrix(settings.pole) if settings.plane == "POLE" else None,
            chain_parent, scene.frame_current, settings.up_axis, settings.plane, settings.bend, settings.roll_axis)


def solve_live(armature, scene, force=False):
    """Re-solve one live armature if its inputs changed; errors go to the read-out, never raise."""
    settings = armature.blender_ik
    inputs = _inputs(armature, settings, scene)
    if not force and _last_inputs.get(armature.name) == inputs:
        return False
    _last_inputs[armature.name] = inputs
    try:
        chain, solve = rig.solve_current(armature, settings)
    except rig.RigError as error:
        if settings.result_message != str(error):
            settings.result_message = str(error)
        return False
    rig.pose_chain(chain, solve.rotations[0])
    ops.store_result(settings, solve.solution, 0)
    return True


def follow(scene):
    global _busy
    if _busy or not _live:
        return
    _busy = True
    try:
        for name in list(_live):
            armature = scene.objects.get(name)
            if armature is None or armature.type != "ARMATURE" or not armature.blender_ik.live:
                continue
            solve_live(armature, scene)
    finally:
        _busy = False


@contextlib.contextmanager
def paused():
    """No live solving inside (a bake steps through frames and writes its own keys)."""
    global _busy
    was_busy, _busy = _busy, True
    try:
        yield
    finally:
        _busy = was_busy


@persistent
def on_depsgraph_update(scene, depsgraph=None):
    follow(scene)


@persistent
def on_frame_change(scene, depsgraph=None):
    follow(scene)


@persistent
def on_load_post(*_args):
    rescan()


def rescan():
    """Re-read which armatures are live (after a file load)."""
    _live.clear()
    _last_inputs.clear()
    for obj in bpy.data.objects:
        settings = getattr(obj, "blender_ik", None)
        if obj.type == "ARMATURE" and settings is not None and settings.live:
            _live.add(obj.name)


def live_changed(armature):
    """The ``live`` setting's update callback: start following (solving at once) or stop."""
    if armature.blender_ik.live:
        _live.add(armature.name)
        _last_inputs.pop(armature.name, None)
        scene = bpy.context.scene
        if scene is not None and armature.name in scene.objects:
            solve_live(armature, scene, force=True)
    else:
        _live.discard(armature.name)
        _last_inputs.pop(armature.name, None)


_HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
    (bpy.app.handlers.frame_change_post, on_frame_change),
    (bpy.app.handlers.load_post, on_load_post),
)


def register():
    for handlers, handler in _HANDLERS:
        if handler not in handlers:
            handlers.append(handler)
    rescan()


def unregister():
    for handlers, handler in _HANDLERS:
        while handler in handlers:
            handlers.remove(handler)
    _live.clear()
    _last_inputs.clear()
