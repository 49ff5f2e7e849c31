"""Greedy's second pass: place what still waits by evicting cheaper, strictly lower-priority running jobs.

The pass follows Kueue's "snapshot and simulate": for each pending job, in priority order,

1. tentatively evict every preemptible running job of strictly lower priority that sits on a node (or TPU
   pod) the job could use, and try to place the job, choosing nodes by eviction cost first (a node that
   needs no eviction costs nothing);
2. roll back, and keep only the victims the placement needs: on the nodes and pods it used, drop victims
   most costly first while the job still fits without them;
3. evict those for real and place the job again; if anything fails, nothing changes.

Victims are evicted whole (gangs), never for a job of equal or lower priority, never when ``reserved``
or not preemptible (:mod:`solver.preempt`).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from solver.assignment import Assignment, ReplicaAt
from solver.budgets import Budgets
from solver.demand import JobPlan
from solver.greedy import State, charge_budget, within_budget
from solver.preempt import Victim, job_rank


def preemption_pass(
    plans: list[JobPlan],
    order: list[int],
    candidates: dict,
    place_plan: Callable[[JobPlan], list[ReplicaAt] | None],
    state: State,
    result: Assignment,
    victims: list[Victim],
    *,
    deadline: float | None = None,
    budgets: Budgets | None = None,
) -> None:
    """Extend ``result`` (greedy's first-pass answer) with placements that need evictions, in place."""
    if not victims:
        return
    n_nodes = len(state.snap.nodes)
    for k, i in enumerate(order):
        if deadline is not None and k and k % 8 == 0 and time.perf_counter() > deadline:
            return
        if i in result.placed or i not in candidates or i in result.over_budget:
            continue
        plan = plans[i]
        mine = job_rank(plan.job)
        could = np.zeros(n_nodes, dtype=bool)
        for c in candidates[i]:
            could |= c.static
        wants_tpu = plan.is_tpu
        eligible = [
            v
            for v in victims
            if v.id not in state.evicted
            and v.rank < mine
            and (any(could[n] for n in v.nodes) or (wants_tpu and v.pods))
        ]
        if not eligible:
            continue
        penalty = np.zeros(n_nodes, dtype=np.float64)
        for v in eligible:
            for n in v.nodes:
                penalty[n] += v.cost
        mark = state.mark()
        for v in eligible:
            state.evict(v)
        state.penalty = penalty
        trial = place_plan(plan)
        state.rollback(mark)
        if trial is None:
            state.penalty = None
            continue
        needed = _needed(trial, eligible, state, plan)
        for v in needed:
            state.evict(v)
        placed = place_plan(plan)
        state.penalty = None
        if placed is not None and not within_budget(plan, placed, state, budgets):
            result.over_budget.add(i)
            placed = None
        if placed is None:
            state.rollback(mark)
            continue
        state.commit()
        result.over_budget.discard(i)
        charge_budget(plan, placed, state)
        result.placed[i] = placed
        for v in needed:
            result.evictions.setdefault(v.id, []).append(plan.id)
        state.note(plan, placed)


def _needed(trial: list[ReplicaAt], eligible: list[Victim], state: State, plan: JobPlan) -> list[Victim]:
    """The victims the trial placement needs: on the nodes/pods it used, drop the costliest victims first
    while what the job takes there still fits without them."""
    used_nodes: dict[int, list[ReplicaAt]] = {}
    used_chips: dict[int, set[tuple[int, ...]]] = {}
    for r in trial:
        if r.node is not None:
            used_nodes.setdefault(r.node, []).append(r)
        elif r.pod is not None:
            used_chips.setdefault(r.pod, set()).update(tuple(c) for c in r.chips)
    on_used = [
        v for v in eligible if any(n in used_nodes for n in v.nodes) or _holds_chips(v, used_chips, state)
    ]
    keep = list(on_used)
    for v in sorted(on_used, key=lambda v: (-v.cost, v.id)):
        rest = [w for w in keep if w is not v]
        if _fits_with(rest, used_nodes, used_chips, state):
            keep = rest
    return sorted(keep, key=lambda v: v.id)


def _holds_chips(v: Victim, used_chips: dict[int, set[tuple[int, ...]]], state: State) -> bool:
    for rep in v.job.replicas:
        if rep.tpu_pod is None:
            continue
        p = state.snap.pod_by_name.get(rep.tpu_pod)
        if p in used_chips and {tuple(c) for c in rep.tpu_chips} & used_chips[p]:
            return True
    return False


def _fits_with(
    evicted: list[Victim],
    used_nodes: dict[int, list[ReplicaAt]],
    used_chips: dict[int, set[tuple[int, ...]]],
    state: State,
) -> bool:
    """Whether the trial's replicas fit their nodes/pods if exactly ``evicted`` were evicted."""
    mark = state.mark()
    try:
        for v in evicted:
            state.evict(v)
        for n, reps in used_nodes.items():
            gpus = sum(r.unit.need.gpus for r in reps)
            cpu = sum(r.unit.need.cpu for r in reps)
            mem = sum(r.unit.need.mem for r in reps)
            sto = sum(r.unit.need.storage for r in reps)
            shm = sum(r.unit.need.shm for r in reps)
            milli = max((r.unit.need.milli for r in reps), default=0)
            eps = 1e-9
            # Conservative where it matters: a wrong "fits" only makes the real placement fail (and the
            # pass skip the job); a wrong "does not fit" keeps one more victim.
            if state.gpus[n] < gpus or (milli and state.milli[n] < milli and state.gpus[n] <= gpus):
                return False
            short = (cpu, state.cpu[n]), (mem, state.mem[n]), (sto, state.storage[n]), (shm, state.shm[n])
            if any(have < want - eps for want, have in short):
                return False
            if any(r.unit.exclusive for r in reps) and not state.empty[n]:
                return False
        return all(not chips & state.pod_used[p] for p, chips in used_chips.items())
    finally:
        state.rollback(mark)
