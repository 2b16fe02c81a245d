"""Analytic three-link IK for Blender: exact poses, live follow and fast baking to keyframes.

The math lives in ``solver`` (numpy only, importable without Blender). The Blender layer is the
modules below, registered in this order and unregistered in reverse. They are imported on
``register()`` so that ``blender_ik_addon.solver`` stays importable where there is no ``bpy``.
"""
import importlib
import os
import sys

_MODULES = ("props", "ops", "ui", "live")
# The submodules' files as they were when loaded (module name -> os.stat's mtime and size); kept when Blender reloads
# this package (its namespace stays): on Reload Scripts, and when a newer build is installed over a disabled one.
_loaded = globals().get("_loaded", {})


def _modules():
    return [importlib.import_module(f".{name}", __package__) for name in _MODULES]


def _stamp(module):
    try:
        stat = os.stat(module.__file__)
    except (OSError, TypeError):
        return None
    return stat.st_mtime_ns, stat.st_size


def _drop_changed():
    """Forget every submodule when the file of one changed since it was loaded, so that register() imports them
    afresh. Blender re-imports only the package itself when a newer build is installed over a disabled one (or a
    disabled one is uninstalled and the newer installed), and on Reload Scripts: the old submodules would run under the
    new version until Blender restarts. All of them, since each holds names imported from the others."""
    loaded = [(name, module) for name, module in list(sys.modules.items()) if name.startswith(f"{__name__}.")]
    if any(name in _loaded and _loaded[name] != _stamp(module) for name, module in loaded):
        for name, _ in loaded:
            del sys.modules[name]
        _loaded.clear()


def register():
    _drop_changed()
    modules = _modules()
    _loaded.update((name, _stamp(module)) for name, module in list(sys.modules.items())
                   if name.startswith(f"{__name__}."))
    for module in modules:
        module.register()


def unregister():
    for module in reversed(_modules()):
        module.unregister()
