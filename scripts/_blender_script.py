"""What the headless scripts share: running under Python with the bpy module or inside Blender, keeping
Blender's user files and chatter out of the way, writing files whole or not at all, and leaving the process
cleanly, also when it is interrupted."""
import contextlib
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # the add-on package, without PYTHONPATH
    sys.path.insert(0, ROOT)

_scratch_dirs = []  # removed by leave()


class UserError(Exception):
    """A mistake the user can fix; its message is the whole error line."""


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP arrived. A BaseException, like KeyboardInterrupt, so that no ``except Exception``
    on the way up swallows it; whoever catches it cleans up and leaves with ``status``."""

    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def status(self):
        return 128 + self.signum  # what a shell reports for a process the signal ended


# -- Signals: SIGINT, SIGTERM and SIGHUP become one Interrupted, raised in the main thread --------------------------

_signals = {"received": [], "raised": False, "handled": False, "deferred": 0}
# Ctrl-C, kill's default, and the terminal closing (SIGTERM and SIGHUP do not exist on Windows).
INTERRUPTING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def _on_signal(signum, _frame):
    _signals["received"].append(signum)
    _raise_once()


def _raise_once():
    # Only once: a second Ctrl-C must not break off the cleanup the first one started.
    if _signals["received"] and not _signals["raised"] and not _signals["deferred"]:
        _signals["raised"] = True
        raise Interrupted(_signals["received"][0])


def check_interrupted():
    """Raise Interrupted if a signal came and nobody has handled it. Call it where the script goes on after
    Blender ran Python code of its own (operators, app handlers): Blender prints and swallows any exception
    raised there, the Interrupted too."""
    if _signals["received"] and not _signals["handled"]:
        _signals["raised"] = True
        raise Interrupted(_signals["received"][0])


def interruption_handled():
    """The one who caught Interrupted says so: from now on signals are only noted."""
    _signals["handled"] = True


@contextlib.contextmanager
def catching_signals():
    """Inside: SIGINT, SIGTERM and SIGHUP raise Interrupted in the main thread. The previous handlers come back after
    (inside Blender, the script is a guest), unless a signal came: then the process is on its way out, and
    another signal (Ctrl-C goes to the parent and its workers, then the parent passes it on) must not end it
    before it, and Blender, have removed what they made. They are ignored from then on: Python puts back the
    default action of a signal it had a handler for when it finalizes, before Blender removes its session
    folder, but leaves an ignored one ignored."""
    previous = {signum: signal.signal(signum, _on_signal) for signum in INTERRUPTING}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, signal.SIG_IGN if _signals["received"] else handler)


@contextlib.contextmanager
def signals_deferred(raise_after=True):
    """A signal that arrives inside waits until the end (cleanup must not stop halfway), or, without
    ``raise_after``, until the caller's next check_interrupted(). Python runs signal handlers in the main
    thread only, so other threads have nothing to defer."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _signals["deferred"] += 1
    try:
        yield
    finally:
        _signals["deferred"] -= 1
        if raise_after:
            _raise_once()


# -- Temporary files: every one is known, so that any exit removes it -------------------------------------

_temporaries = set()
_UMASK = os.umask(0o022)  # only readable by setting it: set it back at once
os.umask(_UMASK)
_temporaries_lock = threading.Lock()  # parallel runs make them from several threads


def new_temporary(near, suffix=".tmp"):
    """A new empty file, hidden, in the folder of ``near`` (so that os.replace onto ``near`` is one rename
    on one disk); removed by forget_temporary, remove_temporaries or leave() whatever happens."""
    folder, name = os.path.split(os.path.abspath(near))
    with signals_deferred():
        while True:
            handle, path = tempfile.mkstemp(prefix=f".{name}.", suffix=suffix, dir=folder)
            os.close(handle)
            if not os.path.lexists(path + "@"):  # Blender's save would write it, and forget_temporary remove it
                break
            os.remove(path)
        with _temporaries_lock:
            _temporaries.add(path)
    return path


def forget_temporary(path):
    """Remove a temporary file and the ``@`` file Blender's save writes next to it before renaming."""
    with signals_deferred():
        for leftover in (path, path + "@"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(leftover)
        with _temporaries_lock:
            _temporaries.discard(path)


def remove_temporaries():
    with _temporaries_lock:
        paths = list(_temporaries)
    for path in paths:
        forget_temporary(path)


@contextlib.contextmanager
def replacing(path, temporary=None, suffix=".tmp"):
    """Write ``path`` whole or not at all: yields a temporary name next to it (``temporary`` when the caller
    made one) to write; on success it is renamed onto ``path`` in one step. On any way out the temporary file
    and its ``@`` sibling are gone, and ``path`` is either untouched or complete. A symlink is followed (the
    file it names is written, as open() would, and the link stays): the checks of what a run writes follow
    links too, so that what is checked and what is written are the same file."""
    path = os.path.realpath(path)
    if temporary is None:
        temporary = new_temporary(path, suffix)
    try:
        yield temporary
        check_interrupted()
        # mkstemp makes files only their owner can read: give the file the mode the one it replaces had, or
        # else the mode a plain open() would have given it.
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        forget_temporary(temporary)


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
    remove_temporaries()
    for folder in _scratch_dirs:
        shutil.rmtree(folder, ignore_errors=True)
    bpy = sys.modules.get("bpy")
    if not blender and bpy is not None and bpy.app.version < (5, 0, 0):
        # os._exit skips Blender's own removal of its session folder (bpy.app.tempdir, "blender_" and a random name).
        if bpy.app.tempdir:
            shutil.rmtree(bpy.app.tempdir, ignore_errors=True)
        # bpy 4.x as a module segfaults in its C++ shutdown, after Python is gone, once a property with a
        # Python poll or update callback has been registered (the add-on's settings have both), even
        # after it was unregistered (seen on 4.2.23; real Blender is fine). Everything is written and
        # reported by now: leave without that shutdown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    if status or not blender:
        sys.exit(status)
