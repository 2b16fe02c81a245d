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
