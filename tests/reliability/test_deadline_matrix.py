"""Deadline guarantee: scenarios S, M and L under short limits return in time with a valid, non-empty answer.

``docs/solver.md`` "Deadline": "The whole call, model building included, returns within
``policy.time_limit_s`` plus a small overhead ... the tests assert wall time <= limit + 0.5 s". This is the
matrix that holds placer to it: sizes up to scenario L (10,000 GPU nodes, 5,000 pending jobs) x limits of
0.2 s and 1 s x both engine settings (``greedy``, and ``auto``, which runs CP-SAT when time is left), plus
L at a mid-range 2 s with ``auto`` (:data:`MID_RANGE`), a limit at which the call used to take 3.2-3.8 s:
greedy stopped early and left time, and the LP bound, which then had no deadline, took 2-3 s of it
(``solver/bound.py``). Each cell is measured with ``time.perf_counter`` around
:func:`placer.solver.engine.place`,
its decision re-checked by the independent checker, and must place at least one job (every scenario has
placeable work: S places dozens of jobs with greedy in milliseconds).

L is built once per module (~3 s). Nothing is marked slow or skipped: a cell that misses the bound is a
finding. :data:`MATRIX` and :func:`measure` are reused by ``benchmarks/reliability_numbers.py``.

The cells run in a process of their own (:func:`worker`), as a service's ``place`` runs in its own, not
in the test run's: there every earlier test has left its heap (about half a GB), and the same call on
scenario L at 0.2 s measured 0.74-0.92 s there against 0.41-0.66 s in a process of its own (2026-11-29,
2-core machine) — time the harness costs, not ``place``. What is measured is the same call, timed the
same way, against the same bound.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from placer.scenarios.synthetic import Scenario, scenario_l, scenario_m, scenario_s
from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.solver.engine import place
from placer.solver.policy import Policy
from tests.solver.conftest import HANG_GUARD_S, no_hang

#: The documented overhead beyond the time limit (docs/solver.md, "Deadline").
OVERHEAD_S = 0.5
SIZES = ("s", "m", "l")
LIMITS = (0.2, 1.0)
ENGINES = ("greedy", "auto")
#: Cells beyond the grid: L at a limit where the engine gets past greedy (one cell: L calls cost seconds).
MID_RANGE = [("l", 2.0, "auto")]
MATRIX = [(size, limit, engine) for size in SIZES for limit in LIMITS for engine in ENGINES] + MID_RANGE
_BUILDERS = {"s": scenario_s, "m": scenario_m, "l": scenario_l}


@functools.cache
def scenario(size: str) -> Scenario:
    """Scenario ``size`` with seed 0, built once per process (L takes seconds)."""
    return _BUILDERS[size](0)


@dataclass(frozen=True)
class Cell:
    """One measured call: wall seconds, how far past the limit, the decision, what the checker found."""

    size: str
    limit: float
    engine: str
    wall_s: float
    decision: Decision
    violations: tuple[str, ...]

    @property
    def overshoot_s(self) -> float:
        return self.wall_s - self.limit


def measure(size: str, limit: float, engine: str) -> Cell:
    """Time one ``place`` call on scenario ``size`` and check its decision."""
    sc = scenario(size)
    jobs = list(sc.jobs)
    policy = Policy(engine=engine, time_limit_s=limit)  # type: ignore[arg-type]
    # place() pauses the cyclic collector and turns it back on as it returns. In CI's fresh run this cell
    # measured 1.571 s while place()'s own stats said 1.017 s: the rest was spent as the collector came back,
    # walking the heap every earlier test left behind. Collect first, so a cell pays for its own garbage.
    gc.collect()
    with no_hang(limit + HANG_GUARD_S):
        t0 = time.perf_counter()
        decision = place(jobs, sc.cluster, policy, now=sc.now)
        wall = time.perf_counter() - t0
    violations = tuple(str(v) for v in check(decision, jobs, sc.cluster, now=sc.now))
    return Cell(size, limit, engine, wall, decision, violations)


def warm() -> None:
    """Build the scenarios and import the solver's lazily imported parts before any cell is timed: a
    service calls ``place`` many times, and a first-call import would be measured as solver time."""
    for size in SIZES:
        scenario(size)
    place(list(scenario("s").jobs)[:3], scenario("s").cluster, Policy(engine="auto", time_limit_s=0.5))


def measured(size: str, limit: float, engine: str) -> tuple[float, dict[str, Any], tuple[str, ...]]:
    """:func:`measure` in the worker: the wall time, the decision as JSON and the checker's findings."""
    cell = measure(size, limit, engine)
    return cell.wall_s, cell.decision.to_json(), cell.violations


@pytest.fixture(scope="module")
def worker() -> Iterator[ProcessPoolExecutor]:
    """One fresh process (spawned, so it inherits nothing of this one's heap) that builds the scenarios
    once, warms up and measures every cell; stopped when the module is done."""
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(warm).result()
        yield pool


@pytest.mark.parametrize(("size", "limit", "engine"), MATRIX, ids=[f"{s}-{t:g}s-{e}" for s, t, e in MATRIX])
def test_deadline_is_met_with_a_valid_nonempty_decision(
    worker: ProcessPoolExecutor, size: str, limit: float, engine: str
) -> None:
    wall, decision, violations = worker.submit(measured, size, limit, engine).result()
    cell = Cell(size, limit, engine, wall, Decision.model_validate(decision), violations)
    s = cell.decision.stats
    assert cell.wall_s <= limit + OVERHEAD_S, (
        f"scenario {size} with time_limit_s={limit}: place() took {cell.wall_s:.3f} s, "
        f"{cell.overshoot_s:.3f} s past the limit (documented overhead {OVERHEAD_S} s); "
        # Where the time went, by place()'s own account (a gap to wall_s is time outside it: the caller's).
        f"stats: wall {s.wall_s:.3f} s, build {s.build_s:.3f} s, solve {s.solve_s:.3f} s, cut by {s.cut_by}"
    )
    assert cell.violations == (), "\n".join(cell.violations)
    assert cell.decision.placements, f"scenario {size} at {limit} s placed nothing"
    answered = len(cell.decision.placements) + len(cell.decision.pending) + len(cell.decision.rejected)
    assert answered == len(scenario(size).jobs)


def test_scenarios_have_the_documented_sizes() -> None:
    # The matrix is only evidence if L really is the big one: scenarios-synthetic.md / standard.py table.
    assert (len(scenario("s").cluster.nodes), len(scenario("s").jobs)) == (40, 60)
    assert (sum(1 for n in scenario("m").cluster.nodes if n.gpu_count), len(scenario("m").jobs)) == (
        1000,
        1000,
    )
    assert (sum(1 for n in scenario("l").cluster.nodes if n.gpu_count), len(scenario("l").jobs)) == (
        10000,
        5000,
    )
