"""A cheap, valid upper bound on the priority-weighted demand any decision could place.

Why: CP-SAT's own bound is the bound of *its model*, which is restricted (a few patterns per class, a few
classes per unit, demands rounded up on busy clusters), so it is not a bound on the real problem; and under
a short deadline CP-SAT may stop before it has one. This relaxation is always valid: every placed job
consumes exactly its demand units from one pool — whole and fractional GPUs, TPU chips, or CPU cores for
CPU-only work — and pools are disjoint, so filling each pool's free amount fractionally with the best
weight-per-unit jobs bounds what any placement achieves.

>>> from solver.demand import JobPlan
>>> from solver.jobs.model import Job
>>> p = JobPlan(job=Job(id="a"), idx=0, units=[], scope=None, nvlink=False, anti=(), labels={},
...             demand_units=4, weight=40)
>>> relaxation_bound([p], {"gpu": 2.0}, {0: "gpu"})
20.0
"""

from __future__ import annotations

from solver.demand import JobPlan


def relaxation_bound(plans: list[JobPlan], capacity: dict[str, float], pool_of: dict[int, str]) -> float:
    """Fractional-knapsack bound per pool. ``pool_of`` maps plan index to its pool (plans absent from it
    cannot be placed at all and contribute nothing)."""
    total = 0.0
    by_pool: dict[str, list[JobPlan]] = {}
    for p in plans:
        if p.idx in pool_of:
            by_pool.setdefault(pool_of[p.idx], []).append(p)
    for pool, members in by_pool.items():
        left = capacity.get(pool, 0.0)
        for p in sorted(members, key=lambda q: -q.weight / max(q.demand_units, 1e-9)):
            if left <= 0:
                break
            take = min(1.0, left / max(p.demand_units, 1e-9))
            total += take * p.weight
            left -= take * p.demand_units
    return total
