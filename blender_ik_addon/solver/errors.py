"""The solver's own exception: bad input, said so a user can act on it."""


class SolverInputError(ValueError):
    """Invalid solver input (negative or non-finite lengths, non-finite points, a zero up vector)."""
