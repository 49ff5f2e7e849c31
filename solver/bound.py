"""Valid upper bounds on the priority-weighted demand any decision could place (for the reported gap).

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

import math

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


def evictable(arrays: object, victims: list) -> tuple[object, object, object, dict[str, float]]:
    """Per node, what every preemptible running job holds (whole GPUs, shares in GPUs, cores), and per
    TPU generation its chips: capacity a decision may free, which a valid bound must count as available."""
    import numpy as np

    snap = arrays.snap  # type: ignore[attr-defined]
    n = len(snap.nodes)
    whole, shares, cpu = np.zeros(n), np.zeros(n), np.zeros(n)
    chips: dict[str, float] = {}
    for v in victims:
        for r in v.job.replicas:
            if r.node is not None and r.node in snap.by_name:
                i = snap.by_name[r.node]
                if r.gpu_milli is not None:
                    shares[i] += r.gpu_milli / 1000
                else:
                    whole[i] += len(r.gpus)
                cpu[i] += r.cpu_cores
            elif r.tpu_pod is not None and r.tpu_pod in snap.pod_by_name:
                gen = snap.pods[snap.pod_by_name[r.tpu_pod]].pod.generation
                chips[gen] = chips.get(gen, 0.0) + len(r.tpu_chips)
    return whole, shares, cpu, chips


def lp_bound(
    plans: list[JobPlan],
    candidates: dict,
    arrays: object,
    *,
    victims: list | None = None,
    max_terms: int = 300_000,
) -> float | None:
    """A tighter valid bound: the LP relaxation of "each job takes its demand from node groups it may use".

    Pools are the static node groups of :mod:`solver.candidates` (same GPU type, labels that matter, ...),
    resource by resource: free whole-GPU capacity for GPU jobs, free CPU for CPU-only jobs, free chips per
    TPU generation for TPU jobs. A job may draw only from groups its hard constraints allow (the union over
    its units' static candidates); fractional, so it is a relaxation of every placement. Solved with GLOP;
    ``None`` when the LP is too large or the solver fails (the caller keeps the cheaper bound).

    >>> lp_bound([], {}, None) == 0.0
    True
    """
    import numpy as np

    if not plans or not candidates:
        return 0.0
    from ortools.linear_solver import pywraplp

    groups = arrays.group_members  # type: ignore[attr-defined]
    usable = np.array([arrays.snap.nodes[int(m[0])].usable for m in groups]) if groups else np.array([])  # type: ignore[attr-defined]
    nodes = arrays.snap.nodes  # type: ignore[attr-defined]
    # Whole free GPUs plus every partly free share: never less than what could really be used.
    # ... and whatever evictions could free (preemptible running jobs), or the bound would not be one.
    ev_whole, ev_shares, ev_cpu, ev_chips = evictable(arrays, victims or [])
    gpu_free = (
        np.array([len(v.free_gpus) + sum(m for m in v.milli_free if 0 < m < 1000) / 1000 for v in nodes])
        + ev_whole
        + ev_shares
    )  # type: ignore[operator]
    gpu_cap = [float(gpu_free[m].sum()) for m in groups]
    cpu_free = np.maximum(arrays.cpu, 0) + ev_cpu  # type: ignore[attr-defined]
    cpu_cap = [float(cpu_free[m].sum()) / 16.0 for m in groups]
    tpu_cap: dict[str, float] = dict(ev_chips)
    for pv in arrays.snap.pods:  # type: ignore[attr-defined]
        tpu_cap[pv.pod.generation] = tpu_cap.get(pv.pod.generation, 0.0) + pv.free_chips
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return None
    objective = solver.Objective()
    objective.SetMaximization()
    gpu_rows: dict[int, object] = {}
    # Fragmentation cuts: on a node, GPUs taken by replicas whose sizes are all multiples of g add up to a
    # multiple of g, so at most floor(free / g) * g; summed over a group, a valid row per (group, g).
    whole = (np.array([len(v.free_gpus) for v in nodes]) + ev_whole).astype(np.int64)  # type: ignore[operator]
    frag_rows: dict[tuple[int, int], object] = {}
    cpu_rows: dict[int, object] = {}
    tpu_rows: dict[str, object] = {}
    terms = 0
    for p in plans:
        cands = candidates.get(p.idx)
        if cands is None:
            continue
        y = solver.NumVar(0.0, 1.0, f"y{p.idx}")
        objective.SetCoefficient(y, float(p.weight))
        if p.job.total_tpu_chips:
            gens = {u.tpu.type for u in p.units if u.tpu is not None and u.tpu.type} or set(tpu_cap)
            link = solver.Constraint(0.0, 0.0)
            link.SetCoefficient(y, -1.0)
            for g in gens:
                v = solver.NumVar(0.0, 1.0, "")
                link.SetCoefficient(v, 1.0)
                row = tpu_rows.setdefault(g, solver.Constraint(-solver.infinity(), tpu_cap.get(g, 0.0)))
                row.SetCoefficient(v, float(p.demand_units))  # type: ignore[attr-defined]
            continue
        allowed = np.zeros(len(arrays.snap.nodes), dtype=bool)  # type: ignore[attr-defined]
        for c in cands:
            if c.unit.tpu is None:
                allowed |= c.static
        gids = sorted({int(g) for g in np.unique(arrays.group[allowed])} if allowed.any() else set())  # type: ignore[attr-defined]
        terms += len(gids)
        if terms > max_terms:
            return None
        link = solver.Constraint(0.0, 0.0)
        link.SetCoefficient(y, -1.0)
        gpu_job = bool(p.job.total_gpu_milli)
        sizes = [u.need.gpus for u in p.units if u.tpu is None and u.need.gpus]
        whole_only = gpu_job and len(sizes) == sum(1 for u in p.units if u.tpu is None)
        step = math.gcd(*sizes) if whole_only and sizes else 0
        ladder = [k for k in (2, 4, 8, 16, 32, 64) if step and step % k == 0]
        for g in gids:
            if not usable[g]:
                continue
            v = solver.NumVar(0.0, 1.0, "")
            link.SetCoefficient(v, 1.0)
            rows, caps = (gpu_rows, gpu_cap) if gpu_job else (cpu_rows, cpu_cap)
            row = rows.setdefault(g, solver.Constraint(-solver.infinity(), caps[g]))
            row.SetCoefficient(v, float(p.demand_units))  # type: ignore[attr-defined]
            for k in ladder:
                key = (g, k)
                if key not in frag_rows:
                    members = groups[g]
                    frag_rows[key] = solver.Constraint(
                        -solver.infinity(), float((whole[members] // k * k).sum())
                    )
                frag_rows[key].SetCoefficient(v, float(p.demand_units))  # type: ignore[attr-defined]
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(objective.Value())
