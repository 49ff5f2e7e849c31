"""Valid upper bounds on the priority-weighted demand any decision could place (for the reported gap).

Why: CP-SAT's own bound is the bound of *its model*, which is restricted (a few patterns per class, a few
classes per unit, demands rounded up on busy clusters), so it is not a bound on the real problem; and under
a short deadline CP-SAT may stop before it has one. This relaxation is always valid: every placed job
consumes exactly its demand units from one pool — whole and fractional GPUs, TPU chips, or CPU cores for
CPU-only work — and pools are disjoint, so filling each pool's free amount fractionally with the best
weight-per-unit jobs bounds what any placement achieves.

>>> from placer.solver.demand import JobPlan
>>> from placer.solver.jobs.model import Job
>>> p = JobPlan(job=Job(id="a"), idx=0, units=[], scope=None, nvlink=False, anti=(), labels={},
...             demand_units=4, weight=40)
>>> relaxation_bound([p], {"gpu": 2.0}, {0: "gpu"})
20.0
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from placer.solver.demand import JobPlan

if TYPE_CHECKING:
    from placer.solver.candidates import NodeArrays, UnitCandidates
    from placer.solver.preempt import Victim
    from placer.solver.problem import Problem

__all__ = ["evictable", "lp_bound", "relaxation", "relaxation_bound"]


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


def evictable(
    arrays: NodeArrays, victims: list[Victim]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, float]]:
    """Per node, what every preemptible running job holds (whole GPUs, shares in GPUs, cores), and per
    TPU generation its chips: capacity a decision may free, which a valid bound must count as available."""
    snap = arrays.snap
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
    candidates: dict[int, list[UnitCandidates]],
    arrays: NodeArrays,
    *,
    victims: list[Victim] | None = None,
    max_terms: int = 300_000,
    deadline: float | None = None,
) -> float | None:
    """A tighter valid bound: the LP relaxation of "each job takes its demand from node groups it may use".

    Pools are the static node groups of :mod:`placer.solver.candidates` (same GPU type, labels that matter,
    ...),
    resource by resource: free whole-GPU capacity for GPU jobs, free CPU for CPU-only jobs, free chips per
    TPU generation for TPU jobs. A job may draw only from groups its hard constraints allow (the union over
    its units' static candidates); fractional, so it is a relaxation of every placement. Solved with GLOP;
    ``None`` when the LP is too large or the solver fails (the caller keeps the cheaper bound).

    ``deadline`` (a ``time.perf_counter()`` value): building stops and ``None`` is returned once it has
    passed, and GLOP gets only the time left. The bound only sharpens the reported gap, so it must never
    cost the caller its own deadline: on 10,000 nodes and 5,000 jobs building alone took seconds.

    >>> lp_bound([], {}, None) == 0.0
    True
    """
    if not plans or not candidates:
        return 0.0
    if deadline is not None and time.perf_counter() >= deadline:
        return None
    from ortools.linear_solver import pywraplp

    groups = arrays.group_members
    # Nodes that are down hold nothing: their capacity counts for no group (a group mixes nodes up and
    # down: static groups do not split on it).
    up = arrays.usable
    nodes = arrays.snap.nodes
    # Whole free GPUs plus every partly free share: never less than what could really be used.
    # ... and whatever evictions could free (preemptible running jobs), or the bound would not be one.
    ev_whole, ev_shares, ev_cpu, ev_chips = evictable(arrays, victims or [])
    gpu_free = (
        np.array([len(v.free_gpus) + sum(m for m in v.milli_free if 0 < m < 1000) / 1000 for v in nodes])
        + ev_whole
        + ev_shares
    ) * up
    gpu_cap = [float(gpu_free[m].sum()) for m in groups]
    cpu_free = (np.maximum(arrays.cpu, 0) + ev_cpu) * up
    cpu_cap = [float(cpu_free[m].sum()) / 16.0 for m in groups]
    tpu_cap: dict[str, float] = dict(ev_chips)
    for pv in arrays.snap.pods:
        tpu_cap[pv.pod.generation] = tpu_cap.get(pv.pod.generation, 0.0) + pv.free_chips
    solver = pywraplp.Solver.CreateSolver("GLOP")
    if solver is None:
        return None
    objective = solver.Objective()
    objective.SetMaximization()
    # pywraplp's rows (the module has no type information).
    gpu_rows: dict[int, Any] = {}
    # Fragmentation cuts: on a node, GPUs taken by replicas whose sizes are all multiples of g add up to a
    # multiple of g, so at most floor(free / g) * g; summed over a group, a valid row per (group, g).
    whole = ((np.array([len(v.free_gpus) for v in nodes]) + ev_whole) * up).astype(np.int64)
    frag_rows: dict[tuple[int, int], Any] = {}
    cpu_rows: dict[int, Any] = {}
    tpu_rows: dict[str, Any] = {}
    # Jobs whose columns are identical (same pool, same usable groups, same demand, same cuts) share one
    # flow variable per group: "sum of their y = sum of the class's flows". This is the same LP (split a
    # class flow among its jobs in proportion to their y), with classes x groups terms instead of jobs x
    # groups: on 10,000 nodes / 5,000 jobs, ~20,000 instead of ~580,000.
    # (pool, its columns: node groups, or TPU generations for "tpu"; demand; fragmentation cuts)
    classes: dict[tuple[str, tuple[Any, ...], float, tuple[int, ...]], list[JobPlan]] = {}
    n_groups = len(groups)
    for p in plans:
        cands = candidates.get(p.idx)
        if cands is None:
            continue
        if deadline is not None and time.perf_counter() >= deadline:
            return None
        if p.job.total_tpu_chips:
            gens = {u.tpu.type for u in p.units if u.tpu is not None and u.tpu.type} or set(tpu_cap)
            classes.setdefault(("tpu", tuple(sorted(gens)), p.demand_units, ()), []).append(p)
            continue
        allowed = np.zeros(len(nodes), dtype=bool)
        for c in cands:
            if c.unit.tpu is None:
                allowed |= c.static
        hit = np.bincount(arrays.group[allowed], minlength=n_groups) if allowed.any() else np.zeros(0)
        gids = tuple(int(g) for g in np.flatnonzero(hit))
        gpu_job = bool(p.job.total_gpu_milli)
        sizes = [u.need.gpus for u in p.units if u.tpu is None and u.need.gpus]
        whole_only = gpu_job and len(sizes) == sum(1 for u in p.units if u.tpu is None)
        step = math.gcd(*sizes) if whole_only and sizes else 0
        ladder = tuple(k for k in (2, 4, 8, 16, 32, 64) if step and step % k == 0)
        classes.setdefault(("gpu" if gpu_job else "cpu", gids, p.demand_units, ladder), []).append(p)
    if sum(len(key[1]) for key in classes) > max_terms:
        return None
    for (pool, columns, demand, ladder), members in classes.items():
        if deadline is not None and time.perf_counter() >= deadline:
            return None
        link = solver.Constraint(0.0, 0.0)  # the class's jobs take exactly what its flows carry
        for p in members:
            y = solver.NumVar(0.0, 1.0, f"y{p.idx}")
            objective.SetCoefficient(y, float(p.weight))
            link.SetCoefficient(y, -1.0)
        for g in columns:
            v = solver.NumVar(0.0, float(len(members)), "")
            link.SetCoefficient(v, 1.0)
            rows: dict[Any, Any]
            if pool == "tpu":
                rows, cap = tpu_rows, tpu_cap.get(g, 0.0)
            else:
                rows, cap = (gpu_rows, gpu_cap[g]) if pool == "gpu" else (cpu_rows, cpu_cap[g])
            if g not in rows:  # not setdefault: its default would add an empty row every call
                rows[g] = solver.Constraint(-solver.infinity(), cap)
            rows[g].SetCoefficient(v, float(demand))
            for k in ladder:
                key = (g, k)
                if key not in frag_rows:
                    frag_rows[key] = solver.Constraint(
                        -solver.infinity(),
                        float((whole[groups[g]] // k * k).sum()),
                    )
                frag_rows[key].SetCoefficient(v, float(demand))
    if deadline is not None:
        left_ms = int((deadline - time.perf_counter()) * 1000)
        if left_ms <= 0:
            return None
        solver.SetTimeLimit(left_ms)  # GLOP stops there and reports no optimum: the bound is skipped
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        return None
    return float(objective.Value())


def relaxation(problem: Problem) -> float:
    """:func:`relaxation_bound` of a problem: the free capacity of each pool (GPU, CPU in 16-core units, TPU
    chips), evictable work included, shared by the jobs that have candidates."""
    plans, candidates, arrays, victims = problem.plans, problem.candidates, problem.arrays, problem.victims
    snap = arrays.snap
    ev_whole, ev_shares, ev_cpu, ev_chips = evictable(arrays, victims)
    pool_of: dict[int, str] = {}
    for p in plans:
        if p.idx in candidates:
            pool_of[p.idx] = "gpu" if p.job.total_gpu_milli else "tpu" if p.job.total_tpu_chips else "cpu"
    u = arrays.usable
    gpu = float(((arrays.gpus + arrays.partial + ev_whole + ev_shares) * u).sum())
    cpu = float(((np.maximum(arrays.cpu, 0.0) + ev_cpu) * u).sum()) / 16.0
    tpu = float(sum(p.free_chips for p in snap.pods)) + sum(ev_chips.values())
    return relaxation_bound(plans, {"gpu": gpu, "cpu": cpu, "tpu": tpu}, pool_of)
