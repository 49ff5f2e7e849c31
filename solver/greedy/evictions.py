"""Greedy's evictions: place a job that does not fit by evicting cheaper, strictly lower-priority jobs.

Greedy calls this for each job, in priority order, right after the job failed to fit in free capacity —
as kube-scheduler's DefaultPreemption does — so that lower-priority jobs never take room a higher-priority
job would then have to evict for. It follows Kueue's "snapshot and simulate":

1. tentatively evict every preemptible running job of strictly lower priority that sits on a node (or TPU
   pod) the job could use, and try to place the job, choosing nodes by eviction cost first (a node that
   needs no eviction costs nothing);
2. roll back, and keep only the victims the placement needs: on the nodes and pods it used, drop victims
   most costly first while the job still fits without them;
3. evict those for real and place the job again; if anything fails, nothing changes.

Victims are evicted whole (gangs), never for a job of equal or lower priority, never when ``reserved``
or not preemptible (:mod:`placer.solver.preempt`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from placer.solver.assignment import ReplicaAt
from placer.solver.demand import JobPlan
from placer.solver.preempt import Victim, evict_rank
from placer.solver.structure import match

if TYPE_CHECKING:  # greedy imports this module; State is only needed for annotations here
    from placer.solver.greedy.state import State

__all__ = ["MAX_VICTIMS_PER_JOB", "place_with_evictions"]


#: At most this many eviction candidates are simulated for one job.
MAX_VICTIMS_PER_JOB = 256


def place_with_evictions(
    plan: JobPlan,
    cands: list,
    place_plan: Callable[[JobPlan], list[ReplicaAt] | None],
    state: State,
    victims: list[Victim],
) -> tuple[list[ReplicaAt], list[Victim]] | None:
    """Try to place ``plan`` by evicting strictly lower-priority victims; on success the evictions and the
    placement are applied to ``state`` (not committed) and returned, on failure nothing changes."""
    n_nodes = len(state.snap.nodes)
    mine = evict_rank(plan.job)
    could = np.zeros(n_nodes, dtype=bool)
    for c in cands:
        could |= c.static
    wants_tpu = plan.is_tpu
    # A set of node indices: testing each victim's nodes against it stays in C (indexing the mask one
    # numpy scalar at a time was most of this function's cost on 10,000 nodes).
    could_at = set(np.flatnonzero(could).tolist())
    # Cheapest test first: most victims sit on no node the job could use.
    evicted = state.evicted
    eligible = [
        v
        for v in victims
        if v.rank < mine
        and (not could_at.isdisjoint(v.nodes) or (wants_tpu and v.pods))
        and v.id not in evicted
    ]
    if not eligible:
        return None
    eligible = _useful(plan, could, eligible, state)
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
        return None
    needed = _needed(trial, eligible, state, plan)
    # Place again with only the needed victims gone, steered to the trial's nodes (any other node costs
    # more than every eviction together); if that still fails, evict every candidate on those nodes.
    used = {r.node for r in trial if r.node is not None}
    steer = penalty + (penalty.sum() + 1.0) * ~np.isin(np.arange(n_nodes), list(used))
    for attempt in (needed, [v for v in eligible if any(n in used for n in v.nodes) or v in needed]):
        for v in attempt:
            state.evict(v)
        state.penalty = steer
        placed = place_plan(plan)
        state.penalty = None
        if placed is not None:
            return placed, sorted(attempt, key=lambda v: v.id)
        state.rollback(mark)
    return None


def _useful(plan: JobPlan, could: np.ndarray, eligible: list[Victim], state: State) -> list[Victim]:
    """Bounded effort: the victims on the nodes where evicting can make room for a replica (free plus
    evictable GPUs reach the biggest replica's need), cheapest nodes first, enough nodes for the whole gang
    with room to choose; simulating every candidate is what makes big clusters slow."""
    if len(eligible) <= MAX_VICTIMS_PER_JOB // 4 or plan.is_tpu:
        return eligible
    on: dict[int, list[Victim]] = {}
    for v in eligible:
        for n in v.nodes:
            if could[n]:
                on.setdefault(n, []).append(v)
    biggest = max((u.need.gpus for u in plan.units if u.tpu is None), default=0)
    scored = []
    for n, vs in on.items():
        freed = sum(len(r.gpus) for v in vs for r in v.job.replicas if r.node == state.snap.nodes[n].name)
        if state.gpus[n] + freed >= biggest:
            scored.append((sum(v.cost for v in vs), n))
    scored.sort()
    want = 2 * plan.replicas + 4
    kept: dict[str, Victim] = {}
    for _, n in scored[:want]:
        for v in on[n]:
            kept.setdefault(v.id, v)
        if len(kept) >= MAX_VICTIMS_PER_JOB:
            break
    return sorted(kept.values(), key=lambda v: (v.cost, v.id))


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
            extra: dict[str, float] = {}
            for r in reps:
                for name, amount in r.unit.need.extra:
                    extra[name] = extra.get(name, 0.0) + amount
            if any(state.free_extra(name)[n] < want - eps for name, want in extra.items()):
                return False
            if any(r.unit.exclusive for r in reps) and not state.empty[n]:
                return False
            if not _shapes_fit(n, reps, state):
                return False
        return all(not chips & state.pod_used[p] for p, chips in used_chips.items())
    finally:
        state.rollback(mark)


def _shapes_fit(node: int, reps: list[ReplicaAt], state: State) -> bool:
    """Whether the trial's replicas with a Flux shape on ``node`` fit its sockets together, given the GPUs
    free after the evictions tried (totals alone would drop a victim whose GPU the shape needs, and the
    second placement would then evict every victim on the node)."""
    shaped = [sh for sh in (state.shape_of(node, r.unit) for r in reps) if sh is not None]
    if not shaped:
        return True
    tree = shaped[0][0]
    free = state.free_idx.get(node, state.snap.nodes[node].free_gpus)
    placed = state.shaped_on.get(node, [])
    shapes = [*(s for s, _ in placed), *(shape for _, shape in shaped)]
    held = [*(g for _, g in placed), *(None for _ in shaped)]
    return match(tree, shapes, free, held) is not None
