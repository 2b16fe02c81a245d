#!/usr/bin/env python3
"""Bake the analytic IK of three-bone chains to rotation keys in .blend files, without the UI.

    python scripts/bake_ik.py INPUT.blend [MORE.blend ...] [--armature NAME] [--chain NAME ...] [options]
    blender -b INPUT.blend -P scripts/bake_ik.py -- [options]

Each input is opened, every enabled chain of every armature that has chains (``Object.blender_ik.chains``;
or the armature and chains named) is baked toward its target over the range (``--target`` describes one
chain on the command line instead, for files set up without the panel), and the result is saved as a new file (``NAME_baked.blend``
next to the input unless told otherwise). The input is never written.

``--snap-targets`` goes the other way (FK to IK): the bones keep their animation, and each chain's target (a Pole
chain's pole too) is keyed where Snap Target puts it, on every ``--step``-th frame of the range and its last, so that
solving follows the bones; the result is ``NAME_snapped.blend``. Several inputs are baked in
parallel, one process each; one file's failure does not stop the others, and the exit code is 0 only
when every file was baked. User mistakes end in one ``bake_ik.py: error: ...`` line on stderr.

No path the script writes (an output, the report, a temporary file) may be an input or another of them,
however it is spelled; that is checked before anything runs. Every file is written whole under a temporary
name next to it, then renamed: an interrupted run (SIGINT, SIGTERM, SIGHUP) leaves no half-written file,
no temporary file or folder and no worker process behind, and ends with status 128 + the signal's number
(130 for Ctrl-C, 143 for kill's default).
"""
import argparse
import concurrent.futures
import contextlib
import errno
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata

PROG = "bake_ik.py"
SCRIPT = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(SCRIPT))  # inside Blender (-P), the script's folder is not on the path

from _blender_script import (Interrupted, UserError, blender_message, blender_quiet,  # noqa: E402
                             catching_signals, check_interrupted, forget_temporary, in_blender,
                             interruption_handled, leave, new_temporary, remove_temporaries, replacing,
                             sandbox_user_files, script_arguments, signals_deferred)

UP_AXES = ("X", "Y", "Z", "-X", "-Y", "-Z")
# Plain, zstd (Blender 3.0+) and gzip (older) .blend files.
BLEND_MAGIC = (b"BLENDER", b"\x28\xb5\x2f\xfd", b"\x1f\x8b")
USAGE = (f"{PROG} INPUT.blend [MORE.blend ...] [--scene NAME] [--view-layer NAME] [--armature NAME] [--chain NAME ...] "
         "[--target NAME [--tip-bone NAME] [--up-axis {X,Y,Z,-X,-Y,-Z}]] [--start N] [--end N] [--step N] "
         "[--snap-targets] [--interpolation {bezier,linear,constant}] [--bake-output {keys,samples}] [--shared-action] "
         "[--output OUT.blend | --output-dir DIR] [--jobs N] [--report REPORT.json]")
EXIT_FAILED, EXIT_USAGE = 1, 2
# How long the workers of an interrupted run get to clean up after themselves before they are killed (the
# parent then removes their temporary files itself).
WORKER_GRACE_SECONDS = 30


def _join_negative_axes(arguments):
    """``--up-axis -Z`` -> ``--up-axis=-Z``: argparse would take ``-Z`` for an option."""
    joined, index = [], 0
    while index < len(arguments):
        if arguments[index] == "--up-axis" and index + 1 < len(arguments) and arguments[index + 1] in UP_AXES:
            joined.append(f"--up-axis={arguments[index + 1]}")
            index += 2
        else:
            joined.append(arguments[index])
            index += 1
    return joined


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more (got {value})")
    return value


class _Parser(argparse.ArgumentParser):
    """Command-line mistakes become one error line like any other, not argparse's usage block."""

    def error(self, message):
        raise UserError(message)


def make_parser():
    parser = _Parser(
        prog=PROG, usage=USAGE,
        description="Bake the analytic IK of three-bone chains to rotation keys, or with --snap-targets key their "
                    "targets to follow the bones' animation, and save the result as a new .blend file (the input is "
                    "never written). Several inputs are done in parallel.",
        epilog="Inside Blender: blender -b INPUT.blend -P scripts/bake_ik.py -- [options] "
               "(the open file is the input unless files are given after --). "
               "Exit status: 0 when every file was baked, 1 when any failed, 2 for a bad command line.")
    parser.add_argument("inputs", nargs="*", metavar="INPUT.blend", help="the files to bake")
    parser.add_argument("--scene", metavar="NAME",
                        help="bake this scene (default: the one the file was saved showing); the baked file still "
                             "opens on that one")
    parser.add_argument("--view-layer", metavar="NAME",
                        help="evaluate the scene on this view layer (default: the one the window shows, or the one "
                             "named as the view layer it showed); the baked file still opens on the input's")
    parser.add_argument("--armature", metavar="NAME",
                        help="bake this armature only (default: every armature in the scene that has IK chains)")
    parser.add_argument("--chain", action="append", metavar="NAME",
                        help="bake this chain only (repeat for several; default: every enabled chain)")
    parser.add_argument("--target", metavar="NAME",
                        help="describe one chain on the command line instead: the object its tip reaches for "
                             "(needs --armature; for files set up without the panel)")
    parser.add_argument("--tip-bone", metavar="NAME",
                        help="with --target: the chain's last bone (default: the armature's active chain's)")
    parser.add_argument("--up-axis", choices=UP_AXES,
                        help="with --target: the target's axis the last bone points along (default: the active "
                             "chain's, Z if unset)")
    parser.add_argument("--start", type=int, metavar="N", help="first frame (default: the scene's start)")
    parser.add_argument("--end", type=int, metavar="N", help="last frame (default: the scene's end)")
    parser.add_argument("--step", type=_positive, default=1, metavar="N", help="key every N-th frame (default: 1)")
    parser.add_argument("--snap-targets", action="store_true",
                        help="instead of baking the bones, key each chain's target (and a Pole chain's pole) where "
                             "its tip is on every frame keyed: the bones' animation (FK, mocap) handed to the targets "
                             "(IK); saved as NAME_snapped.blend by default")
    parser.add_argument("--interpolation", choices=("bezier", "linear", "constant"),
                        help="interpolation of the new keys (default: linear for a bake, as the Bake button's; "
                             "bezier with --snap-targets, as Blender's keying)")
    # Not --output, which names the baked file.
    parser.add_argument("--bake-output", choices=("keys", "samples"), default="keys",
                        help="write rotation keys (default), or samples: one per frame, played linearly between "
                             "frames, in a quarter of the memory (step 1 only; refused on F-curves with keys "
                             "outside the range)")
    parser.add_argument("--shared-action", action="store_true",
                        help="key an armature's action even when other objects play it too (their animation changes "
                             "with it); by default such a bake is refused")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--output", metavar="OUT.blend", help="the baked file (one input only)")
    where.add_argument("--output-dir", metavar="DIR",
                       help="write each NAME_baked.blend into DIR (default: next to each input)")
    parser.add_argument("--jobs", type=_positive, metavar="N",
                        help="files baked at once (default: the number of cores)")
    parser.add_argument("--report", metavar="REPORT.json", help="also write every file's summary as JSON")
    # A worker's record for its parent, and the temporary file (made by the parent) the worker saves to.
    parser.add_argument("--summary-file", help=argparse.SUPPRESS)
    parser.add_argument("--save-via", help=argparse.SUPPRESS)
    return parser


# -- Planning: which file goes where; everything that can be checked without Blender ----------------------

def default_output(path, output_dir=None, snap=False):
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.join(output_dir if output_dir is not None else os.path.dirname(path),
                        f"{stem}_{'snapped' if snap else 'baked'}.blend")


def same_file(a, b):
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)  # hard links
    except OSError:
        return False


def _folder_and_name(path):
    """The folder ``path`` names a file in, as (device, inode) so that any spelling of it is the same
    (symlinks, ``..``, bind mounts, letter case), and the file's name there, symlinks followed."""
    folder, name = os.path.split(os.path.realpath(path))
    status = os.stat(folder)
    return (status.st_dev, status.st_ino), name


def _fold(name):
    return unicodedata.normalize("NFC", name).casefold()


def _ignores_case(folder):
    """Whether the disk under ``folder`` ignores letter case in names: make a file there and look for it under
    other letters. The disk decides, not the platform (macOS, Windows and Linux disks can be either)."""
    probe = new_temporary(os.path.join(folder, "Case"), suffix=".Probe")
    try:
        head, name = os.path.split(probe)
        return os.path.exists(os.path.join(head, name.swapcase()))
    finally:
        forget_temporary(probe)


def same_target(a, b, probed):
    """Whether writing ``a`` would write the file ``b`` names; ``probed`` remembers which folders ignore case."""
    try:
        folder, name = _folder_and_name(a)
        other_folder, other_name = _folder_and_name(b)
    except OSError:  # a folder that does not exist holds no file
        return False
    if (folder, name) == (other_folder, other_name):
        return True
    exist = os.path.exists(a), os.path.exists(b)
    if all(exist):
        return os.path.samefile(a, b)  # hard links; and other letters where the disk ignores case
    if any(exist) or folder != other_folder or _fold(name) != _fold(other_name):
        return False  # where the disk ignores case, the one that exists would be found under the other's name
    if folder not in probed:
        probed[folder] = _ignores_case(os.path.dirname(os.path.realpath(a)))
    return probed[folder]


def _check_writable(label, path):
    folder = os.path.dirname(path) or "."
    if not os.path.exists(folder):
        raise UserError(f"cannot write {label}: no such directory {folder}")
    if not os.path.isdir(folder):
        raise UserError(f"cannot write {label}: {folder} is not a directory")
    if os.path.isdir(path):
        raise UserError(f"cannot write {label}: it is a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"cannot write {label}: no permission to write in {folder}")


def plan(args):
    """[(input, output)] for the command line; UserError when the options do not fit together, or when a
    path the run would write is an input or another path it writes, however it is spelled."""
    if args.output is not None and len(args.inputs) > 1:
        raise UserError("--output takes one input; use --output-dir (or the default next to each input) for several")
    if args.output_dir is not None:
        if not os.path.exists(args.output_dir):
            raise UserError(f"--output-dir {args.output_dir}: no such directory")
        if not os.path.isdir(args.output_dir):
            raise UserError(f"--output-dir {args.output_dir}: not a directory")
    if args.target is None and (args.tip_bone is not None or args.up_axis is not None):
        raise UserError("--tip-bone and --up-axis describe a chain together with --target; without --target the "
                        "file's chains are baked with their own settings")
    if args.target is not None and args.chain:
        raise UserError("--chain picks chains set up in the file; --target describes one on the command line: "
                        "give one or the other")
    if args.snap_targets and (args.bake_output != "keys" or args.shared_action):
        option = "--shared-action" if args.shared_action else f"--bake-output {args.bake_output}"
        raise UserError(f"{option} is for baking the bones; --snap-targets keys the targets: give one or the other")
    if args.bake_output == "samples" and args.interpolation is not None:
        raise UserError(f"--bake-output samples are played linearly: drop --interpolation {args.interpolation}")
    if args.bake_output == "samples" and args.step != 1:
        raise UserError(f"--bake-output samples writes one sample per frame: drop --step {args.step}, or bake keys")
    if args.start is not None and args.end is not None and args.end < args.start:
        raise UserError(f"the frame range is empty: --start {args.start} is after --end {args.end}")
    if args.output is not None:
        pairs = [(args.inputs[0], args.output)]
    else:
        pairs = [(path, default_output(path, args.output_dir, args.snap_targets)) for path in args.inputs]
    writes = [("output", output) for _, output in pairs]
    writes += [(f"--{option.replace('_', '-')}", getattr(args, option))
               for option in ("report", "summary_file", "save_via") if getattr(args, option) is not None]
    probed = {}
    for index, (role, path) in enumerate(writes):
        label = f"the {role} {path}" if role == "output" else f"{role} {path}"
        _check_writable(label, path)
        for other in args.inputs:
            if same_target(path, other, probed):
                raise UserError(f"{label} is the input file {other}; it is never written over")
        for other_role, other in writes[:index]:
            if not same_target(path, other, probed):
                continue
            if role == other_role == "output":
                raise UserError(f"two inputs would be baked to the same file {path}" if other == path else
                                f"two inputs would be baked to the same file: {other} and {path}")
            raise UserError(f"{label} is also the {other_role} {other}; give each its own file")
    return pairs


def check_input(path):
    """The input exists, is readable and looks like a .blend file (Blender is not needed for that)."""
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UserError(f"{path}: is a directory, not a .blend file")
    try:
        with open(path, "rb") as stream:
            head = stream.read(8)
    except OSError as error:
        raise UserError(f"{path}: cannot read: {error.strerror or error}") from None
    if not head.startswith(BLEND_MAGIC):
        raise UserError(f"{path}: not a .blend file")


# The version of Blender that saved a .blend file, in its header: "BLENDER-v402" (4.x: pointer size, endianness,
# major and minor) or, from 5.0, "BLENDER17-01v0502" (header size, format, major and minor).
_HEADER_VERSION = re.compile(rb"BLENDER(?:[_-][vV](\d)(\d\d)|\d\d-\d\d[vV](\d\d)(\d\d))")


def saved_by(path):
    """(major, minor) of the Blender that saved the .blend file ``path``, read from its header (zstd-compressed
    too, where the zstandard module that comes with bpy is there), or None when that cannot be told."""
    try:
        import zstandard
        unreadable = (OSError, zstandard.ZstdError)
    except ImportError:
        zstandard, unreadable = None, OSError
    try:
        with open(path, "rb") as stream:
            head = stream.read(32)
            if head.startswith(b"\x28\xb5\x2f\xfd") and zstandard is not None:
                stream.seek(0)
                head = zstandard.ZstdDecompressor().stream_reader(stream).read(32)
    except unreadable:
        return None
    match = _HEADER_VERSION.match(head)
    if match is None:
        return None
    major, minor = match.group(1, 2) if match.group(1) else match.group(3, 4)
    return int(major), int(minor)


def _newer_file(bpy, path, version=None):
    """"saved by Blender 5.2, newer than this Blender 4.2.23 LTS" when ``path`` (or ``version``, the file's
    (major, minor[, subversion])) is newer than the files this Blender writes, else ""."""
    version = version or saved_by(path)
    if version is None or tuple(version) <= tuple(bpy.app.version_file):
        return ""
    return f"saved by Blender {'.'.join(map(str, version[:2]))}, newer than this Blender {bpy.app.version_string}"


# -- Baking one file in this process -----------------------------------------------------------------------

def _register_addon(bpy, addon):
    """Register the add-on; inside a Blender that already has it (as an installed extension), go on with
    the settings that are there. Returns whether this script must unregister it. A signal waits until the
    caller knows that, and its next check_interrupted(): left registered, the add-on's handlers make bpy
    crash or hang at exit."""
    try:
        with signals_deferred(raise_after=False), blender_quiet():
            # "registered before, unregistering previous" when the extension is enabled
            addon.register()
        return True
    except (ValueError, RuntimeError) as error:
        with contextlib.suppress(Exception):
            addon.unregister()
        if hasattr(bpy.types.Object, "blender_ik"):
            return False
        raise UserError(f"cannot register the add-on: {blender_message(error)}") from None


def _find_object(bpy, scene, name, path, role):
    obj = bpy.data.objects.get(name)
    if obj is None or (role == "armature" and obj.type != "ARMATURE"):
        if role == "armature":
            names = sorted(o.name for o in bpy.data.objects if o.type == "ARMATURE")
            known = f" (armatures: {', '.join(names)})" if names else " (it has no armatures)"
            if obj is not None:
                raise UserError(f"{path}: '{name}' is not an armature (its type is {obj.type}){known}")
            raise UserError(f"{path}: no armature named '{name}'{known}")
        raise UserError(f"{path}: no {role} object named '{name}'")
    if scene.objects.get(name) is None:
        raise UserError(f"{path}: the {role} '{name}' is not in the scene '{scene.name}' (the scene baked; --scene "
                        "names another)")
    return obj


@contextlib.contextmanager
def _showing(bpy, name, layer_name, path):
    """The scene named ``name`` (None: the one the file opened on), on its view layer ``layer_name`` (None: the one the
    window picks, named as the one it showed, or the first), made the window's: the scene and view layer Blender
    evaluates, and so the only ones a bake can read frame by frame. The file's own are put back afterwards, so that the
    baked file opens as its input did."""
    window = bpy.context.window or next(iter(bpy.context.window_manager.windows), None)
    if window is None:
        if (name or bpy.context.scene.name) != bpy.context.scene.name or \
                (layer_name or bpy.context.view_layer.name) != bpy.context.view_layer.name:
            raise UserError(f"{path}: cannot show another scene or view layer here (no window): bake it in a file "
                            "saved showing it")
        yield bpy.context.scene
        return
    scene = window.scene if name is None else bpy.data.scenes.get(name)
    if scene is None:
        raise UserError(f"{path}: no scene named '{name}' (scenes: {', '.join(sorted(s.name for s in bpy.data.scenes))})")
    if scene.library is not None:
        raise UserError(f"{path}: the scene '{name}' is linked from a library; bake it in its own file")
    layer = None if layer_name is None else scene.view_layers.get(layer_name)
    if layer_name is not None and layer is None:
        raise UserError(f"{path}: the scene '{scene.name}' has no view layer named '{layer_name}' (view layers: "
                        f"{', '.join(sorted(v.name for v in scene.view_layers))})")
    # The view layer too: going back, the window picks the scene's view layer named as the one last shown.
    opened, opened_layer = window.scene, window.view_layer
    window.scene = scene
    if layer is not None:
        window.view_layer = layer
    try:
        if bpy.context.scene != scene or (layer is not None and bpy.context.view_layer != layer):
            # Blender did not follow (a build whose context keeps the file's scene)
            raise UserError(f"{path}: cannot show the scene '{scene.name}' here: bake it in a file saved showing it")
        yield scene
    finally:
        window.scene = opened
        window.view_layer = opened_layer


def _pause_for_tests(point, **facts):
    """For the tests only: with BAKE_IK_TEST_PAUSE=POINT, stop at that point, say so in a file in the folder
    BAKE_IK_TEST_PAUSED (with this process's id and ``facts``) and wait there for a signal, so that a test
    interrupts the script at a known moment instead of guessing one."""
    if os.environ.get("BAKE_IK_TEST_PAUSE") != point:
        return
    folder = os.environ["BAKE_IK_TEST_PAUSED"]
    note = os.path.join(folder, f"{point}.{os.getpid()}.json")
    with open(note + ".part", "w", encoding="utf-8") as stream:
        json.dump(dict(facts, point=point, pid=os.getpid()), stream)
    os.replace(note + ".part", note)
    while True:  # in short naps: a signal that one of Blender's threads took does not end a long one
        time.sleep(0.05)


def _leave_edit_mode(bpy):
    """A file saved in Edit Mode opens in it, where a bake refuses an armature (its bone edits may not be applied yet).
    Saving wrote the edits to the bones, so leaving Edit Mode changes only the mode; a farm has no Tab key."""
    active = bpy.context.view_layer.objects.active
    if active is not None and active.mode == "EDIT":
        with contextlib.suppress(RuntimeError), blender_quiet():  # else the bake says why it refuses
            bpy.ops.object.mode_set(mode="OBJECT")


def _save_copy(bpy, output, temporary=None):
    """Save the open file as ``output``, whole or not at all, leaving the open file (the input) as it is, and
    no ``.blend1``. Blender saves to a temporary name next to ``output`` (so that relative paths stay right),
    which is then renamed onto it."""
    preferences = bpy.context.preferences
    try:
        with replacing(output, temporary, suffix=".blend") as temporary:
            versions, dirty = preferences.filepaths.save_version, preferences.is_dirty
            preferences.filepaths.save_version = 0
            try:
                with blender_quiet():
                    bpy.ops.wm.save_as_mainfile(filepath=temporary, copy=True)
            except RuntimeError as error:
                raise UserError(f"cannot write {output}: {blender_message(error)}") from None
            finally:
                preferences.filepaths.save_version = versions
                preferences.is_dirty = dirty
            check_interrupted()
            _pause_for_tests("save", temporary=temporary)
    except OSError as error:  # the folder went away or became read-only since the checks
        raise UserError(f"cannot write {output}: {error.strerror or error}") from None


def _cli_chain(bpy, scene, args, path):
    """The one chain ``--target`` (with ``--tip-bone``, ``--up-axis``) describes on the command line, for files
    set up without the panel: [(armature, [ChainSpec])]. Unset options come from the armature's active chain."""
    from blender_ik_addon.chain import ChainSpec
    from blender_ik_addon.props import chain_spec

    if args.armature is None:
        raise UserError("--target describes one chain: give its --armature too")
    armature = _find_object(bpy, scene, args.armature, path, "armature")
    target = _find_object(bpy, scene, args.target, path, "target")
    active = armature.blender_ik.active_chain
    base = chain_spec(active) if active is not None else ChainSpec()
    tip_bone = args.tip_bone or base.tip_bone
    if not tip_bone:
        raise UserError(f"{path}: the armature '{armature.name}' has no tip bone set; pass --tip-bone NAME")
    spec = ChainSpec(tip_bone=tip_bone, target=target, up_axis=args.up_axis or base.up_axis, plane=base.plane,
                     pole=base.pole, pole_bone=base.pole_bone, bend=base.bend, roll_axis=base.roll_axis,
                     name=base.name if base.tip_bone == tip_bone and base.name else tip_bone)
    return [(armature, [spec])]


def _file_chains(bpy, scene, args, path):
    """The armatures to bake and their chains' names: every enabled chain of every armature that has chains
    (or of ``--armature``), or the chains named with ``--chain``: [(armature, names or None)]."""
    if args.armature is not None:
        armatures = [_find_object(bpy, scene, args.armature, path, "armature")]
    else:
        armatures = [obj for obj in scene.objects
                     if obj.type == "ARMATURE" and obj.library is None and len(obj.blender_ik.chains)]
        if not armatures:
            raise UserError(f"{path}: no armature in the scene '{scene.name}' has IK chains; set them up in the "
                            "panel, or describe one with --armature, --target and --tip-bone")
        if not args.chain:  # an armature whose chains are all unchecked in the list has nothing to bake by default
            armatures = [obj for obj in armatures if any(c.enabled for c in obj.blender_ik.chains)]
            if not armatures:
                raise UserError(f"{path}: every IK chain in the scene '{scene.name}' is disabled; enable them in the "
                                "panel's list, or name them with --chain")
    if not args.chain:
        return [(armature, None) for armature in armatures]
    wanted, found = list(dict.fromkeys(args.chain)), []
    for armature in armatures:
        names = [name for name in wanted if name in {c.name for c in armature.blender_ik.chains}]
        if names:
            found.append((armature, names))
    missing = [name for name in wanted if not any(name in names for _, names in found)]
    if missing:
        known = sorted({f"{c.name}" for armature in armatures for c in armature.blender_ik.chains})
        raise UserError(f"{path}: no chain named {', '.join(repr(name) for name in missing)} "
                        f"(chains: {', '.join(known) or 'none'})")
    return found


def _in_dependency_order(jobs, snapping=False):
    """The jobs ``(armature, names, specs)`` with an armature whose chains, targets or poles hang from another
    armature's baked chains, or follow them through constraints or drivers, after that one (a prop rig held in a
    character's hand): its bake reads the other's pose as keyed, which must be the new keys. ``snapping``: a snap moves
    the other armature's goals instead, not its bones, so what hangs from or follows those goals (a prop's target hung
    from the hand's target) is snapped after them. Otherwise (and in a loop) as given."""
    from blender_ik_addon.chain import ChainError, CouplingReader, chain_names, followed_targets, hangs_below
    from blender_ik_addon.props import chain_spec, selected_chains
    from blender_ik_addon.snap import hangs_from

    def specs_of(armature, names, specs):
        if specs is not None:
            return specs
        chains = armature.blender_ik.chains
        return [chain_spec(c) for c in (selected_chains(armature) if names is None else
                                        [c for c in chains if c.name in names])]

    firsts, goals, moved, reader = [], [], [], CouplingReader()
    for armature, names, specs in jobs:
        described = specs_of(armature, names, specs)
        goals.append([(obj, bone) for spec in described for _, obj, bone in spec.goals() if obj is not None])
        heads = []
        for spec in described:
            try:
                heads.append(chain_names(armature, spec.tip_bone)[0])
            except ChainError:
                pass  # refused by its own bake
        firsts.append(heads)
        seeds = [(armature, "")] + [(obj, bone) for spec in described for _, obj, bone in spec.goals()
                                    if obj is not None]
        # What those follow through constraints and drivers too (a prop's target pinned to a hand by a Child Of).
        seeds += [(armature, head) for head in heads]
        moved.append(followed_targets(seeds, reader))

    def needs(index, other):
        if snapping:
            return other != index and any(obj is not None and ((obj, bone) == goal or hangs_from(obj, bone, goal))
                                          for goal in goals[other] for obj, bone in moved[index])
        return other != index and any(obj is not None and hangs_below(jobs[other][0], head, obj, bone) is not None
                                      for head in firsts[other] for obj, bone in moved[index])

    ordered, left = [], list(range(len(jobs)))
    while left:
        ready = [index for index in left if not any(needs(index, other) for other in left)] or left
        ordered.append(ready[0])
        left.remove(ready[0])
    return [jobs[index] for index in ordered]


def _chain_record(armature, chain, result):
    spec = chain.spec
    return {"armature": armature.name, "chain": chain.name, "tip_bone": chain.bones[2],
            "target": spec.target.name, "target_bone": spec.target_bone, "up_axis": spec.up_axis,
            "plane": spec.plane, "frames": len(result.frames), "unreachable": [int(f) for f in chain.unreachable],
            "degenerate": [int(f) for f in chain.degenerate]}


def _jobs(bpy, scene, args, path):
    """The armatures ``args`` name in ``scene`` and their chains: [(armature, chain names or None, specs or None)]."""
    if args.target is not None:
        return [(armature, None, specs) for armature, specs in _cli_chain(bpy, scene, args, path)]
    return _in_dependency_order([(armature, names, None) for armature, names in _file_chains(bpy, scene, args, path)],
                                args.snap_targets)


def _refused(bpy, scene, path, armature, error):
    """The UserError for a bake or snap of ``armature`` that the add-on refused (ChainError ``error``)."""
    # The operator's option is this command's --shared-action.
    error = str(error).replace("bake with Key Shared Action on", "bake with --shared-action")
    where = (f" (view layer '{bpy.context.view_layer.name}' of scene '{scene.name}'; --view-layer names "
             "another)" if "view layer" in str(error) else "")
    return UserError(f"{path}: armature '{armature.name}': {error}{where}")


def _frame_range(scene, args):
    return (scene.frame_start if args.start is None else args.start,
            scene.frame_end if args.end is None else args.end)


def _interpolation(args):
    """The new keys' interpolation: --interpolation's, else a bake's Linear (the Bake button's) or a snap's Bezier
    (Blender's keying's)."""
    return args.interpolation or ("bezier" if args.snap_targets else "linear")


def _run_scene(bpy, scene, args, path):
    """Bake the chains ``args`` name in ``scene``, or with --snap-targets key their goals to follow the bones:
    (start, end, [(armature, bake.BakeResult or snap.RangeSnap)], seconds). Each armature's bake or snap checks
    everything before it changes anything; a refusal after another armature's leaves that one done, and the file
    is not saved."""
    from blender_ik_addon import ops
    from blender_ik_addon.chain import ChainError

    jobs = _jobs(bpy, scene, args, path)
    start, end = _frame_range(scene, args)
    interpolation = _interpolation(args).upper()
    results, began = [], time.perf_counter()
    for armature, names, specs in jobs:
        try:
            if args.snap_targets:
                result = ops.snap_armature(scene, armature, "ALL", start, end, args.step, interpolation, names=names,
                                           specs=specs)
            else:
                result = ops.bake_armature(scene, armature, "ALL", start, end, args.step, interpolation, names=names,
                                           specs=specs, output=args.bake_output.upper(),
                                           allow_shared=args.shared_action)
        except ChainError as error:
            raise _refused(bpy, scene, path, armature, error) from None
        results.append((armature, result))
    if not args.snap_targets:
        # A chain of another armature that follows a baked one is named by that bake unless this run baked it too
        # (after it: _in_dependency_order).
        baked = {(armature.name, chain.name) for armature, result in results for chain in result.chains}
        for _, result in results:
            result.left_following = [(owner, name) for owner, name in result.left_following
                                     if owner is None or (owner, name) not in baked]
    return start, end, results, time.perf_counter() - began


def _snap_record(armature, result):
    """A snapped chain's record per chain of ``result`` (snap.RangeSnap)."""
    turned = {label: (at, worst, frame, why) for label, at, worst, frame, why in result.turned}
    records = {}
    for goal in result.goals:
        spec = goal.spec
        record = records.setdefault(spec.label, {
            "armature": armature.name, "chain": spec.label, "tip_bone": goal.chain.names[2],
            "target": spec.target.name, "target_bone": spec.target_bone, "up_axis": spec.up_axis,
            "plane": spec.plane, "pole": None, "pole_bone": "", "frames": len(result.frames),
            "turned": [], "worst_turn_degrees": 0.0, "worst_frame": None, "why": None})
        if goal.role == "pole":
            record["pole"], record["pole_bone"] = spec.pole.name, spec.pole_bone
        if spec.label in turned:
            at, worst, frame, why = turned[spec.label]
            record.update(turned=[int(f) for f in at], worst_turn_degrees=round(math.degrees(worst), 6),
                          worst_frame=int(frame), why=why)
    return list(records.values())


def bake_file(path, output, args):
    """Open ``path``, bake, save ``output``; returns the file's record. UserError for user mistakes."""
    began = time.perf_counter()
    check_input(path)
    if same_file(path, output):
        raise UserError(f"the output {output} is the input file; it is never written over")
    sandbox_user_files("bake_ik_")
    try:
        import bpy
    except ImportError:
        raise UserError(f"this Python ({sys.executable}) has no bpy module: install it (pip install bpy) or run "
                        "the script inside Blender (blender -b INPUT.blend -P scripts/bake_ik.py -- ...)") from None

    import blender_ik_addon
    from blender_ik_addon import props

    # Registered before the file is read: Blender drops a library override's changes to properties it does not
    # know while it loads the file (an overridden character's chain targets would revert to the library's).
    must_unregister = _register_addon(bpy, blender_ik_addon)
    try:
        # Inside Blender the file given to `-b` is open already (and anything run before this script has acted
        # on it), unless the add-on was not enabled when it was read and the file has overrides: read it again.
        already_open = bpy.data.filepath and same_file(bpy.data.filepath, path)
        if not already_open or (must_unregister and any(obj.override_library for obj in bpy.data.objects)):
            try:
                with blender_quiet():
                    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(path))
            except RuntimeError as error:
                newer = _newer_file(bpy, path)
                raise UserError(f"{path}: cannot open: {blender_message(error)}"
                                + (f" ({newer}, which cannot read it: bake it with that version or a later one)"
                                   if newer else "")) from None
        # Blender opens a file saved by a newer version with only a warning that data may be lost; the baked file,
        # saved by this version, would lose it too.
        newer = _newer_file(bpy, path, tuple(bpy.data.version))
        check_interrupted()
        _pause_for_tests("bake")
        props.migrate_all()  # a file saved by 0.1 holds its chain in the old place
        _leave_edit_mode(bpy)
        with _showing(bpy, args.scene, args.view_layer, path) as scene:
            start, end, results, seconds = _run_scene(bpy, scene, args, path)
            view_layer = bpy.context.view_layer.name
        check_interrupted()
        _save_copy(bpy, os.path.abspath(output), args.save_via)
        summaries = [result.summary() if len(results) == 1 else f"{armature.name}: {result.summary()}"
                     for armature, result in results]
        record = {
            "input": os.path.abspath(path), "output": os.path.abspath(output), "ok": True, "error": None,
            "mode": _mode(args), "scene": scene.name, "view_layer": view_layer,
            "frame_start": start, "frame_end": end, "step": args.step,
            "interpolation": _interpolation(args),
            "frames": len(results[0][1].frames), "summary": "; ".join(summaries),
            "warnings": [f"{path}: {newer}: Blender warns that what it cannot read is lost, so the "
                         f"{'snapped' if args.snap_targets else 'baked'} file may lack it; "
                         f"{'snap' if args.snap_targets else 'bake'} with that version to keep everything"]
            if newer else [],
        }
        if args.snap_targets:
            chains = [chain for armature, result in results for chain in _snap_record(armature, result)]
            record.update(chains=chains, turned=sorted({frame for chain in chains for frame in chain["turned"]}),
                          snap_seconds=round(seconds, 4))
        else:
            chains = [_chain_record(armature, chain, result) for armature, result in results
                      for chain in result.chains]
            record.update(bake_output=args.bake_output, chains=chains,
                          unreachable=sorted({frame for chain in chains for frame in chain["unreachable"]}),
                          direct=all(result.direct for _, result in results),
                          bake_seconds=round(sum(result.seconds for _, result in results), 4))
        record["seconds"] = round(time.perf_counter() - began, 4)
        return record
    finally:
        if must_unregister:  # a Python handler left in bpy.app.handlers crashes bpy 4.2 at exit
            blender_ik_addon.unregister()


def _mode(args):
    return "snap-targets" if args.snap_targets else "bake"


def failed_record(path, output, message, began, args):
    return {"input": os.path.abspath(path), "output": os.path.abspath(output), "ok": False, "error": message,
            "mode": _mode(args), "seconds": round(time.perf_counter() - began, 4)}


def run_here(path, output, args):
    began = time.perf_counter()
    try:
        return bake_file(path, output, args)
    except UserError as error:
        return failed_record(path, output, str(error), began, args)


# -- Several files: one worker process each ---------------------------------------------------------------

def worker_command(path, output, args, summary_file, temporary, blender):
    if blender:
        import bpy
        command = [bpy.app.binary_path, "-b", "--python-exit-code", str(EXIT_FAILED), "-P", SCRIPT, "--"]
    else:
        command = [sys.executable, SCRIPT]
    command += [f"--output={os.path.abspath(output)}", f"--step={args.step}", f"--bake-output={args.bake_output}",
                f"--summary-file={summary_file}", f"--save-via={temporary}"]
    for flag in ("shared_action", "snap_targets"):
        if getattr(args, flag):
            command.append(f"--{flag.replace('_', '-')}")
    for option, value in (("--scene", args.scene), ("--view-layer", args.view_layer), ("--armature", args.armature), ("--target", args.target), ("--tip-bone", args.tip_bone),
                          ("--up-axis", args.up_axis), ("--start", args.start), ("--end", args.end),
                          ("--interpolation", args.interpolation)):
        if value is not None:
            command.append(f"{option}={value}")
    command += [f"--chain={name}" for name in args.chain or ()]
    # The path as given (the worker runs in the same directory), so that its messages name it the same way.
    return command + ["--", path]


class Workers:
    """The worker processes running now; once stopped, no new one starts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = set()
        self.stopped = False

    def start(self, command):
        """The started process, or None once stopped; OSError when it cannot start."""
        with self.lock:
            if self.stopped:
                return None
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, errors="replace")
            self.running.add(process)
            return process

    def finished(self, process):
        with self.lock:
            self.running.discard(process)

    def stop(self):
        """No new worker; SIGTERM to the running ones, which clean up after themselves. SIGTERM whatever the
        parent got: Blender in the background takes a first SIGINT for a mere "break" and goes on, until the
        script has put its own handler in place."""
        with self.lock:
            self.stopped = True
            running = list(self.running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()

    def kill(self):
        with self.lock:
            running = list(self.running)
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.kill()


def run_worker(path, output, args, blender, scratch, workers):
    began = time.perf_counter()
    try:
        check_input(path)  # no process for a file that cannot be baked
    except UserError as error:
        return failed_record(path, output, str(error), began, args)
    handle, summary_file = tempfile.mkstemp(suffix=".json", dir=scratch)
    os.close(handle)
    try:  # made here, not by the worker, so that it is removed even if the worker is killed before it could
        temporary = new_temporary(output, suffix=".blend")
    except OSError as error:
        return failed_record(path, output, f"cannot write {output}: {error.strerror or error}", began, args)
    try:
        command = worker_command(path, output, args, summary_file, temporary, blender)
        program = command[0] or f"({'Blender' if blender else 'Python'} does not know its own path)"
        try:
            if not command[0]:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            process = workers.start(command)
        except OSError as error:
            return failed_record(path, output, f"{path}: cannot start the baking process {program}: "
                                               f"{error.strerror or error}", began, args)
        if process is None:
            return failed_record(path, output, f"{path}: not baked: the run was interrupted", began, args)
        try:
            _, stderr = process.communicate()
        finally:
            workers.finished(process)
    finally:
        forget_temporary(temporary)
    record = None
    with contextlib.suppress(OSError, ValueError):
        with open(summary_file, encoding="utf-8") as stream:
            record = json.load(stream)
    if isinstance(record, dict) and "ok" in record:
        record["input"] = os.path.abspath(path)
        if record["ok"] and process.returncode != 0:
            record.update(ok=False, error=f"{path}: the baking process failed at exit (status {process.returncode})")
        return record
    lines = [line for line in stderr.splitlines() if line.strip()]
    detail = f": {lines[-1].strip()}" if lines else ""
    return failed_record(path, output, f"{path}: the baking process failed (status {process.returncode}){detail}",
                         began, args)


def run_parallel(pairs, args, blender, announce):
    jobs = args.jobs
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    records = [None] * len(pairs)
    workers = Workers()
    scratch = tempfile.mkdtemp(prefix="bake_ik_run_")
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(jobs, len(pairs)))
    futures = {}
    try:
        try:
            for index, (path, output) in enumerate(pairs):
                futures[pool.submit(run_worker, path, output, args, blender, scratch, workers)] = index
            waiting = set(futures)
            while waiting:
                # In short waits: Python runs signal handlers in the main thread, which a signal that one of
                # the pool's threads took does not wake from a long one.
                done, waiting = concurrent.futures.wait(waiting, timeout=0.1,
                                                        return_when=concurrent.futures.FIRST_COMPLETED)
                for future in sorted(done, key=futures.get):
                    index = futures[future]
                    records[index] = future.result()
                    announce(pairs[index], records[index])
        except Interrupted as interruption:
            # The workers clean up after themselves on the signal; one that does not in time is killed, and
            # its temporary file is removed here (run_worker's finally) once it is gone.
            workers.stop()
            _, late = concurrent.futures.wait(futures, timeout=WORKER_GRACE_SECONDS)
            if late:
                workers.kill()
            raise
    finally:
        with signals_deferred():
            pool.shutdown(wait=True)
            shutil.rmtree(scratch, ignore_errors=True)
    return records


# -- The command ------------------------------------------------------------------------------------------

def announce(pair, record):
    """One line per file: the summary on stdout, or the error on stderr."""
    path, output = pair
    if record["ok"]:
        print(f"{path} -> {output}: {record['summary']}, {record['seconds']:.2f} s", flush=True)
        for warning in record.get("warnings", ()):
            print(f"{PROG}: warning: {warning}", file=sys.stderr, flush=True)
    else:
        print(f"{PROG}: error: {record['error']}", file=sys.stderr, flush=True)


def write_json(path, data):
    """Write ``path`` whole or not at all (a report cut off halfway is worse than none)."""
    with replacing(path) as temporary:
        with open(temporary, "w", encoding="utf-8") as stream:
            json.dump(data, stream, indent=2)
            stream.write("\n")
        _pause_for_tests("report", temporary=temporary)


def _usage_error(message):
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv=None):
    blender = in_blender()
    try:
        args = make_parser().parse_args(_join_negative_axes(script_arguments(sys.argv if argv is None else argv,
                                                                             blender)))
        if not args.inputs:
            open_file = sys.modules["bpy"].data.filepath if blender else ""
            if not open_file:
                raise UserError("give at least one INPUT.blend" + (
                    " (after --, or open it with blender -b INPUT.blend)" if blender else ""))
            args.inputs = [open_file]
        if args.summary_file is not None and (len(args.inputs) != 1 or args.output is None):
            raise UserError("--summary-file is for one input and its --output")
        pairs = plan(args)  # every path checked before anything runs
    except UserError as error:
        return _usage_error(error)

    if args.summary_file is not None:  # a worker for one file of a parallel run
        record = run_here(*pairs[0], args)
        write_json(args.summary_file, record)
        announce(pairs[0], record)
        return 0 if record["ok"] else EXIT_FAILED

    if len(pairs) == 1:
        records = [run_here(*pairs[0], args)]
        announce(pairs[0], records[0])
    else:
        if not blender:
            sandbox_user_files("bake_ik_")  # shared by the workers, removed at exit
        records = run_parallel(pairs, args, blender, announce)

    failures = sum(not record["ok"] for record in records)
    if len(records) > 1 and failures:
        print(f"{PROG}: error: {failures} of {len(records)} files failed", file=sys.stderr)
    if args.report is not None:
        try:
            write_json(args.report, {"ok": not failures, "files": records})
        except OSError as error:
            print(f"{PROG}: error: cannot write the report {args.report}: {error.strerror or error}", file=sys.stderr)
            return EXIT_FAILED
    return EXIT_FAILED if failures else 0


def run(argv=None):
    """main(), and what an interruption leaves: no temporary file, one error line, status 128 + the signal."""
    with catching_signals():
        try:
            return main(argv)
        except Interrupted as interruption:
            interruption_handled()
            remove_temporaries()
            print(f"{PROG}: error: interrupted by {interruption}", file=sys.stderr, flush=True)
            return interruption.status


if __name__ == "__main__":
    leave(run())
