"""Test setup: keep Blender's user files out of the developer's home, before bpy is ever imported."""
import os
import sys
import tempfile

_SANDBOX = tempfile.mkdtemp(prefix="blender_ik_tests_")
os.environ["BLENDER_USER_RESOURCES"] = os.path.join(_SANDBOX, "blender")
os.environ["XDG_CACHE_HOME"] = os.path.join(_SANDBOX, "cache")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.append(os.path.join(ROOT, "scripts"))  # scenes.py: the scene builders shared with scripts

import pytest  # noqa: E402

_EXIT_STATUS = [0]


@pytest.fixture
def blender():
    """An empty Blender file with the add-on registered; unregistered again afterwards."""
    import bpy

    import blender_ik_addon

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blender_ik_addon.register()
    try:
        yield bpy
    finally:
        blender_ik_addon.unregister()


def python_handlers():
    """Every Python function in bpy.app.handlers, as (handler list name, function)."""
    bpy = sys.modules.get("bpy")
    if bpy is None:
        return []
    found = []
    for name in dir(bpy.app.handlers):
        handlers = getattr(bpy.app.handlers, name)
        if isinstance(handlers, list):
            found += [(name, handler) for handler in handlers if callable(handler)]
    return found


def _python_handlers():
    """The add-on's own handlers."""
    return [(name, handler) for name, handler in python_handlers()
            if getattr(handler, "__module__", "").startswith(("blender_ik_addon", "bl_ext."))]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """None of the add-on's handlers may stay in bpy.app.handlers at exit: bpy 4.2 crashes and 4.5 hangs
    on a Python handler left there (Blender's own startup handlers are Blender's to remove)."""
    leftovers = _python_handlers()
    if leftovers:
        bpy = sys.modules["bpy"]
        for name, handler in leftovers:
            getattr(bpy.app.handlers, name).remove(handler)
        print(f"\nERROR: handlers left in bpy.app.handlers: {[(n, getattr(h, '__name__', h)) for n, h in leftovers]}")
        session.exitstatus = 1
    _EXIT_STATUS[0] = int(session.exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """bpy 4.2 (the module, not Blender itself) segfaults in its C++ shutdown, after Python is gone,
    once any property with a Python update or poll callback was ever registered, even after it was
    unregistered; other bpy-module projects report the same. Once pytest has printed everything,
    leave with the session's own status instead of running that shutdown."""
    bpy = sys.modules.get("bpy")
    if bpy is not None and bpy.app.version < (5, 0, 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_STATUS[0])
