#!/usr/bin/env python3
"""Build the installable extension zip with Blender's own extension tooling.

    python scripts/build_extension.py [--output-dir DIR] [--staging-dir DIR]

The manifest sits at the repository's top level, but an extension zip needs it next to the
add-on's ``__init__.py``: the manifest and the contents of ``blender_ik_addon/`` (no caches) are
copied into a staging folder, which ``blender_ext.py validate`` checks and ``blender_ext.py build``
packs. ``blender_ext.py`` is the command-line tool behind ``blender --command extension``; it is
found inside the installed ``bpy`` package, so no Blender executable is needed. Tags are checked
against the list Blender ships, as ``blender --command extension build`` does.

Prints the path of the zip on success.
"""
import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIR = os.path.join(ROOT, "blender_ik_addon")
MANIFEST = os.path.join(ROOT, "blender_manifest.toml")
MANIFEST_NAME = "blender_manifest.toml"

# Relative to bpy/<version>/ inside the bpy package.
TOOL_PATH = ("scripts", "addons_core", "bl_pkg", "cli", "blender_ext.py")
TAGS_PATH = ("scripts", "modules", "_bpy_internal", "extensions", "tags.py")


class BuildError(Exception):
    """A failure the user can act on: reported as one line, without a traceback."""


def _version_key(path):
    return tuple(int(part) for part in re.findall(r"\d+", os.path.basename(path)))


def find_blender_ext():
    """``bpy/<version>/scripts/addons_core/bl_pkg/cli/blender_ext.py`` and the tags list next to it.

    Located through ``find_spec`` so that bpy (about a second to import) is never imported.
    """
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError(f"the bpy package is not installed for {sys.executable} (try `make extension`)")
    candidates = [version_dir
                  for location in spec.submodule_search_locations
                  for version_dir in glob.glob(os.path.join(location, "*"))
                  if os.path.isfile(os.path.join(version_dir, *TOOL_PATH))]
    if not candidates:
        raise BuildError(f"Blender's extension tool (bpy/*/{'/'.join(TOOL_PATH)}) is missing from the bpy package")
    version_dir = max(candidates, key=_version_key)
    tags = os.path.join(version_dir, *TAGS_PATH)
    return os.path.join(version_dir, *TOOL_PATH), (tags if os.path.isfile(tags) else None)


def _within(path, folder):
    return os.path.commonpath([path, folder]) == folder


def stage(staging_dir):
    """A fresh folder holding the manifest and the add-on package's files, and nothing else."""
    for path in (MANIFEST, os.path.join(PACKAGE_DIR, "__init__.py")):
        if not os.path.isfile(path):
            raise BuildError(f"{path} not found")
    staging = os.path.realpath(staging_dir)
    if _within(os.path.realpath(ROOT), staging) or _within(staging, os.path.realpath(PACKAGE_DIR)):
        # The repository's top level holds a manifest too, so the check below would clear it.
        raise BuildError(f"refusing to use {staging_dir} as the staging folder: it holds the repository "
                         "(clearing it would delete the sources) or lies inside the add-on package (the next zip would "
                         "pack it); give a folder of its own (default: build/extension/)")
    if os.path.lexists(staging_dir):
        # Only ever wipe a folder this script made: it holds a manifest (or nothing at all).
        if not os.path.isdir(staging_dir) or (
                os.listdir(staging_dir) and not os.path.isfile(os.path.join(staging_dir, MANIFEST_NAME))):
            raise BuildError(f"refusing to clear {staging_dir}: it is not a staging folder from a previous build")
        shutil.rmtree(staging_dir)
    shutil.copytree(PACKAGE_DIR, staging_dir, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    shutil.copy2(MANIFEST, os.path.join(staging_dir, MANIFEST_NAME))


def run_tool(tool, args, staging_dir):
    """Run ``blender_ext.py`` with JSON output; its messages, or a BuildError with them on one line."""
    result = subprocess.run([sys.executable, tool, *args, "--output-type", "JSON"],
                            capture_output=True, text=True)
    messages = []
    for line in result.stdout.splitlines():
        try:
            kind, text = json.loads(line)
        except (ValueError, TypeError):  # not a [kind, message] pair: keep the line as it is
            kind, text = "STATUS", line
        if text:
            # Point at the file to edit, not at its staged copy.
            text = str(text).replace(os.path.join(staging_dir, MANIFEST_NAME), MANIFEST)
            messages.append((kind, re.sub(r"\s*\n\s*", " ", text.strip())))
    if result.returncode != 0:
        details = [text for _, text in messages] or result.stderr.strip().splitlines()[-1:]
        raise BuildError(f"blender_ext.py {args[0]} failed: {': '.join(details) or f'exit status {result.returncode}'}")
    return messages


def build(output_dir, staging_dir):
    tool, tags = find_blender_ext()
    tag_args = ["--valid-tags", tags] if tags else []
    stage(staging_dir)
    run_tool(tool, ["validate", *tag_args, staging_dir], staging_dir)
    os.makedirs(output_dir, exist_ok=True)
    messages = run_tool(tool, ["build", *tag_args, "--source-dir", staging_dir, "--output-dir", output_dir],
                        staging_dir)
    zips = [match.group(1) for _, text in messages if (match := re.match(r'created: "(.*)"', text))]
    if not zips:
        raise BuildError(f"blender_ext.py build reported no zip: {': '.join(text for _, text in messages)}")
    return zips


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default=os.path.join(ROOT, "dist"),
                        help="where the zip goes (default: dist/ in the repository)")
    parser.add_argument("--staging-dir", default=os.path.join(ROOT, "build", "extension"),
                        help="the folder the zip is built from, cleared first (default: build/extension/ "
                             "in the repository)")
    args = parser.parse_args()
    try:
        zips = build(os.path.abspath(args.output_dir), os.path.abspath(args.staging_dir))
    except (BuildError, OSError) as error:
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    for path in zips:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
