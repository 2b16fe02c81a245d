"""Leaf: runtime state that is not file data (STYLE 14): per-chain read-outs and the live-mode pause.

Read-outs are keyed by armature and chain name; they are lost on reload, as a read-out should be.
"""
import contextlib
from dataclasses import dataclass

# Status of a chain's last solve, as the panel shows it.
REACHED, OUT_OF_REACH, ERROR = "REACHED", "OUT_OF_REACH", "ERROR"
ANGLE_NAMES = ("yaw", "theta0", "theta1", "theta2", "roll")  # Readout.angles, in this order


@dataclass(frozen=True)
class Readout:
    status: str
    miss: float = 0.0  # armature-space distance from the tip to the target
    angles: tuple = ()  # the seed's angles (radians): yaw θy, θ0, θ1, wrist θ2, roll β
    message: str = ""  # the error, when status is ERROR


_readouts = {}  # (armature name, chain name) -> Readout
_paused = [False]
# Counts the paused sections that ended: what they changed was evaluated while live solving was paused, so a
# later depsgraph update does not list it (live.py re-reads everything after one).
_pauses = [0]


def store_solution(armature_name, chain_name, solution, index=0):
    """Keep a solve's result (sample ``index`` of a solver solution) for the read-out."""
    _readouts[(armature_name, chain_name)] = Readout(
        REACHED if solution.reachable[index] else OUT_OF_REACH, float(solution.miss[index]),
        (float(solution.yaw[index]), float(solution.theta0[index]), float(solution.theta1[index]),
         float(solution.theta2[index]), float(solution.roll[index])))


def store_error(armature_name, chain_name, message):
    _readouts[(armature_name, chain_name)] = Readout(ERROR, message=message)


def readout(armature_name, chain_name):
    """The chain's last result, or None when it was not solved in this session."""
    return _readouts.get((armature_name, chain_name))


def forget(armature_name=None):
    """Drop the read-outs of one armature, or all of them (a new file)."""
    if armature_name is None:
        _readouts.clear()
    else:
        for key in [key for key in _readouts if key[0] == armature_name]:
            del _readouts[key]


def is_paused():
    return _paused[0]


def pauses():
    """How many paused sections have ended (see :func:`paused`)."""
    return _pauses[0]


@contextlib.contextmanager
def paused(counted=True):
    """No live solving inside (a bake steps through frames and writes its own keys; a solve poses).
    ``counted=False``: live solving's own section, which changes only what it solves (see :func:`pauses`)."""
    was_paused, _paused[0] = _paused[0], True
    try:
        yield
    finally:
        _paused[0] = was_paused
        _pauses[0] += counted
