"""The packaged extension: the zip holds the add-on and nothing else, and it installs, enables,
registers its operators, panel and settings, and unregisters them again in a real Blender.

The install runs in a separate Python process with its own empty Blender user folders: the
``blender`` fixture registers ``blender_ik_addon`` under that name in this process, and the
extension (``bl_ext.user_default.analytic_ik``) would register the same class names.
"""
import json
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "blender_ik_addon")
MANIFEST = os.path.join(ROOT, "blender_manifest.toml")

REPO = "user_default"
MODULE = f"bl_ext.{REPO}.analytic_ik"
TYPES = ("BLENDER_IK_OT_solve", "BLENDER_IK_OT_add_target", "BLENDER_IK_OT_bake", "VIEW3D_PT_blender_ik")


# Runs in a fresh process: install the zip into the user repository, enable it, look, disable it, look.
# Writes what it saw as JSON; the assertions are made in the test, where failures read well.
INSTALL_AND_REGISTER = r"""
import json
import os
import sys

import bpy

zip_path, report_path, repo, module, type_names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]


def python_handlers():
    found = []
    for name in dir(bpy.app.handlers):
        handlers = getattr(bpy.app.handlers, name)
        if isinstance(handlers, list):
            found += [(name, handler) for handler in handlers if callable(handler)]
    return found


def registered():
    return {
        "enabled": module in bpy.context.preferences.addons,
        "types": [name for name in type_names if hasattr(bpy.types, name)],
        "property": hasattr(bpy.types.Object, "blender_ik"),
    }


def run(operator, **kwargs):
    try:
        return sorted(operator(**kwargs))
    except RuntimeError as error:  # an operator's error report, e.g. an exception in register()
        return str(error).strip()


report = {}
handlers_before = python_handlers()
repo_dir = next(item.directory for item in bpy.context.preferences.extensions.repos if item.module == repo)
report["install"] = run(bpy.ops.extensions.package_install_files,
                        filepath=zip_path, repo=repo, enable_on_install=True)
report["installed_files"] = sorted(
    os.path.relpath(os.path.join(folder, name), repo_dir)
    for folder, _, names in os.walk(repo_dir) for name in names if "__pycache__" not in folder)
report["after_enable"] = registered()
report["disable"] = run(bpy.ops.preferences.addon_disable, module=module)
report["after_disable"] = registered()

# bpy 4.2 crashes at exit on a Python function left in bpy.app.handlers: report it, then remove it.
leftovers = [(name, handler) for name, handler in python_handlers()
             if not any(handler is known for _, known in handlers_before)]
report["leftover_handlers"] = [f"{name}: {getattr(handler, '__qualname__', handler)}" for name, handler in leftovers]
for name, handler in leftovers:
    getattr(bpy.app.handlers, name).remove(handler)

with open(report_path, "w") as file:
    json.dump(report, file)
"""


def package_files():
    """The add-on's files as the zip should hold them: relative to the package, no caches."""
    files = set()
    for folder, dirs, names in os.walk(PACKAGE_DIR):
        dirs[:] = [name for name in dirs if name != "__pycache__" and not name.startswith(".")]
        for name in names:
            if not name.endswith(".pyc") and not name.startswith("."):
                files.add(os.path.relpath(os.path.join(folder, name), PACKAGE_DIR).replace(os.sep, "/"))
    return files


@pytest.fixture(scope="module")
def extension_zip(tmp_path_factory):
    work = tmp_path_factory.mktemp("extension")
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "build_extension.py"),
         "--output-dir", str(work / "dist"), "--staging-dir", str(work / "staging")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"build failed: {result.stderr.strip()}"
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and lines[0].endswith(".zip"), f"expected the zip's path, got {result.stdout!r}"
    assert os.path.isfile(lines[0])
    assert os.path.dirname(lines[0]) == str(work / "dist")
    return lines[0]


def test_zip_holds_the_manifest_and_the_add_on_at_its_root_and_nothing_else(extension_zip):
    with zipfile.ZipFile(extension_zip) as archive:
        names = {name for name in archive.namelist() if not name.endswith("/")}
        manifest = archive.read("blender_manifest.toml")
    assert "blender_manifest.toml" in names
    assert "__init__.py" in names
    assert "solver/__init__.py" in names
    assert not [name for name in names if name.split("/")[0] in ("tests", "scripts", "blender_ik_addon")]
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
    assert names == package_files() | {"blender_manifest.toml"}
    with open(MANIFEST, "rb") as file:
        assert manifest == file.read()


def test_extension_installs_registers_and_unregisters(extension_zip, tmp_path):
    report_path = tmp_path / "report.json"
    env = dict(os.environ,
               BLENDER_USER_RESOURCES=str(tmp_path / "blender"),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    # Run from an empty folder, so that the repository's own blender_ik_addon is not importable.
    result = subprocess.run(
        [sys.executable, "-c", INSTALL_AND_REGISTER, extension_zip, str(report_path), REPO, MODULE, *TYPES],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"Blender exited with {result.returncode}:\n{result.stderr[-3000:]}"
    report = json.loads(report_path.read_text())

    assert "analytic_ik/__init__.py" in report["installed_files"]
    assert "analytic_ik/blender_manifest.toml" in report["installed_files"]
    assert report["install"] == ["FINISHED"], f"install or enable failed: {report['install']}"
    assert report["after_enable"] == {"enabled": True, "types": list(TYPES), "property": True}

    assert report["disable"] == ["FINISHED"], f"disable failed: {report['disable']}"
    assert report["after_disable"] == {"enabled": False, "types": [], "property": False}
    assert report["leftover_handlers"] == []
