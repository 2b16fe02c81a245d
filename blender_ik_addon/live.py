"""Live mode: re-solve a chain whenever what it depends on changes.

``depsgraph_update_post`` and ``frame_change_post`` call :func:`follow`. A chain is re-solved only when
its *inputs* changed: the target's, the pole's and the armature's world matrices, the pose of the
chain's parent bone, the frame and the settings. Posing the chain changes none of those, so the update
that posing triggers finds nothing to do: no feedback loop, and no cost when nothing relevant moved.

Which armatures are live is cached by name and rebuilt from ``bpy.data`` whenever it may be stale:
after a file load, an undo or redo, a toggle of the setting, a rename (a name no longer found), or an
update that shows a live armature not in the cache (a duplicate, an append). ``register()`` touches no
``bpy.data`` (Blender restricts it while add-ons register); the first update builds the cache. The
handlers are ``@persistent`` and ``unregister()`` removes every one of them.
"""
import contextlib

import bpy
from bpy.app.handlers import persistent

from . import ops, rig

# Runtime state only (nothing here is saved).
_live = set()  # names of armature objects with live on
_stale = True  # _live must be rebuilt before use
_last_inputs = {}  # armature name -> the inputs of its last successful live solve
_busy = False


def _inputs(armature, settings, scene):
    """Everything a live solve reads, as comparable plain values."""
    def matrix(obj):
        return None if obj is None else tuple(map(tuple, obj.matrix_world))

    chain = None
    try:
        names = rig.chain_names(armature, settings.tip_bone)
    except rig.RigError:
        names = None
    if names is not None:
        first = armature.pose.bones[names[0]]
        # What validation reads too, so that breaking or fixing it alone (Alt+S, Inherit Rotation) counts.
        bones = tuple((tuple(armature.pose.bones[name].scale), tuple(armature.pose.bones[name].location),
                       armature.data.bones[name].use_inherit_rotation, armature.data.bones[name].inherit_scale)
                      for name in names)
        chain = (names, tuple(map(tuple, first.parent.matrix)) if first.parent else None, bones)
    return (matrix(armature), matrix(settings.target), matrix(settings.pole) if settings.plane == "POLE" else None,
            chain, scene.frame_current, settings.up_axis, settings.plane, settings.bend, settings.roll_axis)


def _show_error(settings, message):
    """Show a live-mode error in the read-out, writing only what changes (a write triggers an update)."""
    if settings.result_message != message:
        settings.result_message = message
    if settings.has_result:
        settings.has_result = False


def solve_live(armature, scene, force=False):
    """Re-solve one live armature if its inputs changed; errors go to the read-out, never raise."""
    settings = armature.blender_ik
    inputs = _inputs(armature, settings, scene)
    if not force and _last_inputs.get(armature.name) == inputs:
        return False
    try:
        chain, solve = rig.solve_current(armature, settings)
    except rig.RigError as error:
        _last_inputs.pop(armature.name, None)  # fixing the cause (Alt+S, a setting) retries at once
        _show_error(settings, str(error))
        return False
    _last_inputs[armature.name] = inputs
    rig.pose_chain(chain, solve.rotations[0])
    ops.store_result(settings, solve.solution, 0)
    return True


def _is_live(obj):
    settings = getattr(obj, "blender_ik", None)
    return obj.type == "ARMATURE" and settings is not None and settings.live


def rescan():
    """Rebuild the set of live armatures from ``bpy.data``."""
    global _stale
    _live.clear()
    _live.update(obj.name for obj in bpy.data.objects if _is_live(obj) and obj.library is None)
    for name in list(_last_inputs):
        if name not in _live:
            del _last_inputs[name]
    _stale = False


def _notice_new(depsgraph):
    """An update that shows a live armature the cache does not know (duplicated, appended, renamed)."""
    global _stale
    for update in depsgraph.updates:
        obj = getattr(update.id, "original", update.id)
        if isinstance(obj, bpy.types.Object) and obj.name not in _live and _is_live(obj):
            _stale = True
            return


def follow(scene, depsgraph=None):
    global _busy, _stale
    if _busy:
        return
    if depsgraph is not None and not _stale:
        _notice_new(depsgraph)
    if _stale:
        rescan()
    if not _live:
        return
    _busy = True
    try:
        for name in list(_live):
            armature = bpy.data.objects.get(name)
            if armature is None or not _is_live(armature):
                _stale = True  # renamed, deleted or switched off: rebuild on the next update
                continue
            if name in scene.objects:
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
    follow(scene, depsgraph)


@persistent
def on_frame_change(scene, depsgraph=None):
    follow(scene)


@persistent
def on_data_replaced(*_args):
    """After a file load, an undo or a redo, every cached name and input may be wrong."""
    global _stale
    _stale = True
    _last_inputs.clear()


def live_changed(armature):
    """The ``live`` setting's update callback: start following (solving at once) or stop."""
    global _stale
    _stale = True
    _last_inputs.pop(armature.name, None)
    settings = armature.blender_ik
    if settings.live:
        with contextlib.suppress(rig.RigError):
            rig.pin_tip_bone(settings, rig.chain_names(armature, settings.tip_bone))
        scene = bpy.context.scene
        if scene is not None and armature.name in scene.objects:
            solve_live(armature, scene, force=True)


_HANDLERS = (
    (bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
    (bpy.app.handlers.frame_change_post, on_frame_change),
    (bpy.app.handlers.load_post, on_data_replaced),
    (bpy.app.handlers.undo_post, on_data_replaced),
    (bpy.app.handlers.redo_post, on_data_replaced),
)


def register():
    global _stale
    for handlers, handler in _HANDLERS:
        if handler not in handlers:
            handlers.append(handler)
    _stale = True


def unregister():
    for handlers, handler in _HANDLERS:
        while handler in handlers:
            handlers.remove(handler)
    _live.clear()
    _last_inputs.clear()
