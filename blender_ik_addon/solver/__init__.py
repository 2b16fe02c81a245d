"""Pure analytic IK math: numpy only, no bpy, vectorised over samples (seeds 000, 001, 002)."""
from .errors import SolverInputError
from .planar import solve_planar_three_link, wrap_angle
from .three_link import PLANES, ThreeLinkSolution, plane_tolerance, solve_floats, solve_one, solve_three_link
from .two_bone import solve_two_bone

__all__ = ["SolverInputError", "solve_two_bone", "solve_planar_three_link", "solve_three_link",
           "ThreeLinkSolution", "PLANES", "wrap_angle", "solve_one", "solve_floats", "plane_tolerance"]
