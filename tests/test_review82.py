"""Review 82: a TD who installs the add-on as an extension and keeps Blender open all day (Reload Scripts, disable and
enable, uninstall and install a newer build), with Live on. Each day runs in a fresh process with its own empty user
folders, as tests/test_extension.py installs the extension."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from test_extension import MODULE, REPO, ROOT

NEW_LABEL = "Analytic Three-Link IK (newer build)"

# Installs the old build, sets up a live chain, takes ``route`` to the newer build and reports what Blender shows.
DAY = r"""
import json
import os
import sys

import bpy

sys.path.append(sys.argv[5])
from scenes import add_empty, build_arm

old_zip, new_zip, repo, module, _, route, report_path = sys.argv[1:8]
repo_index = [item.module for item in bpy.context.preferences.extensions.repos].index(repo)


def install(path):
    assert bpy.ops.extensions.package_install_files(filepath=path, repo=repo, enable_on_install=True) == {"FINISHED"}


install(old_zip)
arm = build_arm()
chain = arm.blender_ik.chains.add()
chain.name, chain.tip_bone, chain.target = "arm", "b3", add_empty(location=(0.9, 0.3, 1.1))
bpy.context.view_layer.objects.active = arm
bpy.context.view_layer.update()
chain.live = True
target = chain.target

bpy.ops.preferences.addon_disable(module=module)
if route == "uninstall":
    assert bpy.ops.extensions.package_uninstall(repo_index=repo_index, pkg_id="analytic_ik") == {"FINISHED"}
install(new_zip)
if route == "reload":
    bpy.ops.script.reload()

target.location.x += 0.05
bpy.context.view_layer.update()
tip = arm.matrix_world @ arm.pose.bones["b3"].tail
live = [handler for name in dir(bpy.app.handlers) if isinstance(getattr(bpy.app.handlers, name), list)
        for handler in getattr(bpy.app.handlers, name) if getattr(handler, "__module__", "").startswith(module)]
with open(report_path, "w") as file:
    json.dump({"label": bpy.types.VIEW3D_PT_blender_ik.bl_label, "miss": (tip - target.location).length,
               "handlers": len(live),
               "current": all(sys.modules[handler.__module__].__dict__.get(handler.__name__) is handler
                              for handler in live)}, file)
# The bpy module's exit once modules were imported again, after Reload Scripts even with no add-on installed:
# 4.2 crashes, 4.5 hangs (a bare `bpy.ops.script.reload()` does both). The report is written: leave at once.
sys.stdout.flush()
os._exit(0)
"""


def build(source_root, output_dir):
    result = subprocess.run(
        [sys.executable, os.path.join(source_root, "scripts", "build_extension.py"),
         "--output-dir", str(output_dir / "dist"), "--staging-dir", str(output_dir / "staging")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """The add-on's zip, and a newer build of it (version 0.2.1-like, its panel labelled NEW_LABEL)."""
    work = tmp_path_factory.mktemp("builds")
    newer = work / "newer"
    shutil.copytree(os.path.join(ROOT, "blender_ik_addon"), newer / "blender_ik_addon",
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(newer / "scripts")
    shutil.copy(os.path.join(ROOT, "scripts", "build_extension.py"), newer / "scripts")
    manifest = open(os.path.join(ROOT, "blender_manifest.toml")).read()
    version = re.search(r'^version = "(\d+)\.(\d+)\.(\d+)"', manifest, re.M)
    bumped = f'version = "{version[1]}.{version[2]}.{int(version[3]) + 1}"'
    (newer / "blender_manifest.toml").write_text(manifest.replace(version[0], bumped, 1))
    ui = newer / "blender_ik_addon" / "ui.py"
    ui.write_text(ui.read_text().replace('bl_label = "Analytic Three-Link IK"', f'bl_label = "{NEW_LABEL}"', 1))
    return build(ROOT, work / "old"), build(str(newer), work / "new")


@pytest.mark.parametrize("route", ["over", "uninstall", "reload"])
def test_a_newer_build_installed_after_disabling_the_old_one_is_the_one_that_runs(builds, tmp_path, route):
    """The TD disables the add-on, installs a newer build (over the old one, or after uninstalling it; then maybe
    Reload Scripts): Preferences listed the new version while the panel, operators and Live handlers were the old
    build's, until Blender restarted (Blender re-imports only the package, whose submodules stayed loaded)."""
    old_zip, new_zip = builds
    report_path = tmp_path / "report.json"
    env = dict(os.environ, BLENDER_USER_RESOURCES=str(tmp_path / "blender"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, "-c", DAY, old_zip, new_zip, REPO, MODULE, os.path.join(ROOT, "scripts"), route,
         str(report_path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["label"] == NEW_LABEL, "the old build's panel is still the one Blender shows"
    assert report["handlers"] == 5 and report["current"]
    assert report["miss"] < 1e-5, "Live no longer follows the target"
