"""What the headless scripts share: running under Python with the bpy module or inside Blender, keeping
Blender's user files and chatter out of the way, and leaving the process cleanly."""
import contextlib
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # the add-on package, without PYTHONPATH
    sys.path.insert(0, ROOT)

_scratch_dirs = []  # removed by leave()


class UserError(Exception):
    """A mistake the user can fix; its message is the whole error line."""


def in_blender():
    """Run by the Blender executable (``blender -b ... -P script.py -- ...``), not by Python with the bpy
    module. Blender imports bpy before it runs the script; under Python, bpy is not imported yet."""
    bpy = sys.modules.get("bpy")
    return bpy is not None and bool(getattr(bpy.app, "binary_path", ""))


def script_arguments(argv, blender):
    """The script's own arguments: everything after ``--`` inside Blender, else argv[1:]."""
    if blender:
        return argv[argv.index("--") + 1:] if "--" in argv else []
    return argv[1:]


def sandbox_user_files(prefix):
    """For the bpy module: keep Blender's user files in a temporary directory unless the caller chose.

    Must run before bpy is imported; child processes inherit it; leave() removes it."""
    missing = [name for name in ("BLENDER_USER_RESOURCES", "XDG_CACHE_HOME") if not os.environ.get(name)]
    if not missing or "bpy" in sys.modules:
        return
    sandbox = tempfile.mkdtemp(prefix=prefix)
    _scratch_dirs.append(sandbox)
    for name in missing:
        os.environ[name] = os.path.join(sandbox, name.lower())


def _flush_c_streams():
    try:
        import ctypes
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass


@contextlib.contextmanager
def blender_quiet():
    """Keep Blender's own chatter ("Read blend: ...", "Info: Saved ...", render progress) out of the
    script's output: the script reports success and failure itself."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    _flush_c_streams()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                for stream in (sys.stdout, sys.stderr):
                    stream.flush()
                _flush_c_streams()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


def blender_message(error):
    """The useful line of an error raised by ``bpy.ops`` (``Error: ...`` without the prefix)."""
    lines = str(error).strip().splitlines()
    text = lines[-1] if lines else type(error).__name__
    return text.split(": ", 1)[1] if text.startswith(("Error: ", "Warning: ")) else text


def leave(status):
    """End the process with ``status``; inside Blender, return on success and let Blender finish."""
    blender = in_blender()
    for folder in _scratch_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    bpy = sys.modules.get("bpy")
    if not blender and bpy is not None and bpy.app.version < (5, 0, 0):
        # bpy 4.x as a module segfaults in its C++ shutdown, after Python is gone, once a property with a
        # Python poll or update callback has been registered (the add-on's settings have both), even
        # after it was unregistered (seen on 4.2.23; real Blender is fine). Everything is written and
        # reported by now: leave without that shutdown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    if status or not blender:
        sys.exit(status)
