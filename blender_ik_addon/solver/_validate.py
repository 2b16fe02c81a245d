"""Input checks shared by the solvers: they raise SolverInputError with a message a user can act on."""
import numpy as np

from .errors import SolverInputError


def as_float_array(value, name="value"):
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise SolverInputError(f"{name} must be a number or an array of numbers ({error})") from None


def check_lengths(*lengths, names=None):
    names = names or [f"length {i + 1}" for i in range(len(lengths))]
    arrays = []
    for name, length in zip(names, lengths):
        array = as_float_array(length, name)
        if not np.all(np.isfinite(array)):
            raise SolverInputError(f"{name} must be finite")
        if np.any(array < 0.0):
            raise SolverInputError(f"{name} must not be negative (got {array.min():g})")
        arrays.append(array)
    return arrays


def check_finite(name, *arrays):
    for array in arrays:
        if not np.all(np.isfinite(array)):
            raise SolverInputError(f"{name} must be finite (got NaN or infinity)")
    return arrays
