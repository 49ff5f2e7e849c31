"""The CP-SAT engine: symmetry classes, packing patterns, one model for the batch (see :mod:`.model`)."""

from placer.solver.cpsat.model import CpsatResult, solve

__all__ = ["CpsatResult", "solve"]
