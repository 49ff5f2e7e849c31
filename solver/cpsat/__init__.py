"""The CP-SAT engine, as its pipeline: reduce (classes, types, patterns) -> build (the model) -> hint
(greedy's answer) -> search (one solve per objective level) -> realize (back to nodes and devices).

* :mod:`~placer.solver.cpsat.reduce` — :class:`~placer.solver.cpsat.reduce.Builder`;
* :mod:`~placer.solver.cpsat.model` — :class:`~placer.solver.cpsat.model.Model`, the algebra;
* :mod:`~placer.solver.cpsat.hint`, :mod:`~placer.solver.cpsat.search`,
  :mod:`~placer.solver.cpsat.realize`;
* :mod:`~placer.solver.cpsat.classes`, :mod:`~placer.solver.cpsat.patterns`,
  :mod:`~placer.solver.cpsat.parts`.
"""

from __future__ import annotations

import time

import numpy as np

from placer.solver.assignment import Assignment
from placer.solver.budgets import Budgets
from placer.solver.candidates import NodeArrays, UnitCandidates
from placer.solver.cpsat.parts import CpsatResult, Deadline, TooBig
from placer.solver.cpsat.reduce import Builder
from placer.solver.demand import JobPlan
from placer.solver.objective.cost import Pricing
from placer.solver.policy import Policy
from placer.solver.preempt import Victim

__all__ = ["CpsatResult", "solve"]


def solve(
    plans: list[JobPlan],
    candidates: dict[int, list[UnitCandidates]],
    prefs: dict[int, list[np.ndarray]],
    anti: dict[int, np.ndarray],
    arrays: NodeArrays,
    spot_ok: dict[int, bool],
    hint: Assignment,
    policy: Policy,
    *,
    deadline: float,
    victims: list[Victim] | None = None,
    budgets: Budgets | None = None,
    pricing: Pricing | None = None,
) -> CpsatResult:
    """Build and solve the model; ``deadline`` is an absolute ``time.perf_counter()`` value. ``victims``
    are running jobs the model may evict (strictly lower priority only; :mod:`placer.solver.preempt`).
    ``pricing`` brings the cost term and dollar budgets."""
    t0 = time.perf_counter()
    try:
        built = Builder(
            plans,
            candidates,
            prefs,
            anti,
            arrays,
            spot_ok,
            hint,
            policy,
            deadline,
            victims or [],
            budgets,
            pricing,
        ).build()
    except Deadline:
        return CpsatResult(None, "BUILD_TIMEOUT", build_s=time.perf_counter() - t0)
    except TooBig as big:
        return CpsatResult(None, "TOO_BIG", build_s=time.perf_counter() - t0, classes=big.classes)
    build_s = time.perf_counter() - t0
    return built.run(build_s)
