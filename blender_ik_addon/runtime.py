"""Leaf: runtime state that is not file data (STYLE 14): per-chain read-outs and the live-mode pause.

Read-outs are keyed by armature object and chain name; they are lost on reload, as a read-out should be.
"""
from dataclasses import dataclass

import bpy

# Status of a chain's last solve, as the panel shows it.
REACHED, OUT_OF_REACH, ERROR = "REACHED", "OUT_OF_REACH", "ERROR"
ANGLE_NAMES = ("yaw", "theta0", "theta1", "theta2", "roll")  # Readout.angles, in this order


@dataclass(frozen=True)
class Readout:
    status: str
    miss: float = 0.0  # armature-space distance from the tip to the target
    angles: tuple = ()  # the seed's angles (radians): yaw θy, θ0, θ1, wrist θ2, roll β
    message: str = ""  # the error, when status is ERROR
    # What the solve posed and solved for, to tell whether Blender still shows it (chain.shows_solve): the solution, the
    # sample's index in it and the goals it was solved for (chain.ChainSolve.goals); read only when drawn (a Live
    # update would spend 4 µs copying them). Empty when not known.
    shown: tuple = ()


_readouts = {}  # (armature's session_uid, chain name) -> Readout, or what store_solution makes one of
# _readouts may hold this many before the read-outs of chains no longer there are dropped (_drop_gone): an armature
# deleted, a chain renamed or removed by a script. A session kept every one of them (3.7 kB each).
_limit = [256]
_paused = [False]
# Counts the paused sections that ended: what they changed was evaluated while live solving was paused, so a
# later depsgraph update does not list it (live.py re-reads everything after one).
_pauses = [0]


def _owner(armature):
    """The armature object's session identity: a rename keeps it (a name would lose the read-out) and no other object
    has it (one that takes the old name would show this one's read-out); undo keeps it too."""
    return armature.session_uid


def _store(armature, chain_name, result):
    _readouts[(_owner(armature), chain_name)] = result
    if len(_readouts) > _limit[0]:
        _drop_gone()
        _limit[0] = max(256, 2 * len(_readouts))  # looked through once per doubling


def _drop_gone():
    """Drop the read-outs of chains that are no longer there."""
    there = {(obj.session_uid, chain_settings.name or chain_settings.tip_bone) for obj in bpy.data.objects
             if obj.type == "ARMATURE" for chain_settings in obj.blender_ik.chains}
    for key in [key for key in _readouts if key not in there]:
        del _readouts[key]


def store_solution(armature, chain_name, solution, index=0, goals=None):
    """Keep a solve's result (sample ``index`` of a solver solution) for the read-out of ``armature``'s chain.
    ``goals``: the target's armature-space rows, the pole point (or None) and the settings it was solved for
    (chain.ChainSolve.goals), for the read-out to tell when it has become a past one. With ``goals``, the Readout is
    made when first read (:func:`readout`): it holds the solution then anyway, and a Live update would spend 4 µs making
    one that no panel draws (issue 11)."""
    _store(armature, chain_name, (solution, index, goals) if goals is not None else _solved(solution, index, None))


def _solved(solution, index, goals):
    return Readout(
        REACHED if solution.reachable[index] else OUT_OF_REACH, float(solution.miss[index]),
        (float(solution.yaw[index]), float(solution.theta0[index]), float(solution.theta1[index]),
         float(solution.theta2[index]), float(solution.roll[index])),
        shown=() if goals is None else (solution, index, goals))


def store_error(armature, chain_name, message):
    _store(armature, chain_name, Readout(ERROR, message=message))


def readout(armature, chain_name):
    """The last result of ``armature``'s chain, or None when it was not solved in this session."""
    key = (_owner(armature), chain_name)
    found = _readouts.get(key)
    if isinstance(found, tuple):  # stored by store_solution, not read since
        found = _readouts[key] = _solved(*found)
    return found


def forget(armature=None, chain_name=None):
    """Drop the read-outs of one armature object (or only of its chain ``chain_name``: removed, or a new one of that
    name), or all of them (a new file)."""
    if armature is None:
        _readouts.clear()
    else:
        owner = _owner(armature)
        for key in [key for key in _readouts if key[0] == owner and chain_name in (None, key[1])]:
            del _readouts[key]


def is_paused():
    return _paused[0]


def pauses():
    """How many paused sections have ended (see :func:`paused`)."""
    return _pauses[0]


class paused:
    """No live solving inside (a bake steps through frames and writes its own keys; a solve poses).
    ``counted=False``: live solving's own section, which changes only what it solves (see :func:`pauses`).
    A context manager class, not a generator: Live enters one on every update (1.5 µs in situ as a generator)."""

    __slots__ = ("counted", "was")

    def __init__(self, counted=True):
        self.counted = counted

    def __enter__(self):
        self.was, _paused[0] = _paused[0], True

    def __exit__(self, *exc):
        _paused[0] = self.was
        _pauses[0] += self.counted
