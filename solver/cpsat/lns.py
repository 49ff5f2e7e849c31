"""Large-neighbourhood search: CP-SAT on a few nodes at a time, the rest of the answer held fixed.

Why: on a real cluster the joint model of a whole batch does not fit in a backend's latency (scenario M,
1,000 nodes and 1,000 pending jobs: the model takes most of 2 s to build and finds nothing in the rest),
so the answer that counts is greedy's. A neighbourhood is small enough to solve exactly in a fraction of a
second: free the nodes around a job greedy left pending, take every job placed there off them, re-solve
those jobs together with the pending jobs that could use those nodes, and keep the result when the whole
answer scores higher on the one objective (:func:`~placer.solver.objective.score.score`). Repeat until
the deadline.

A neighbourhood is closed, so the sub-problem is the real problem restricted to it: every job placed on
one of its nodes is in it with all its replicas (their other nodes join), and so is every running job greedy
evicted there (its other nodes join); the jobs outside keep their nodes, which the neighbourhood does not
contain, so anti-affinity, exclusivity and gang scopes between the inside and the outside cannot interact.
The free amounts of the neighbourhood's nodes are then the cluster's own (nothing fixed sits on them), and
the sub-problem is an ordinary call of :func:`~placer.solver.cpsat.solve` with candidates masked to it.
Queue and dollar budgets span the whole answer, so batches under budgets are not searched this way.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from placer.solver.assignment import Assignment
from placer.solver.cancel import cancelled
from placer.solver.candidates import NodeArrays, UnitCandidates
from placer.solver.demand import JobPlan
from placer.solver.objective.cost import Pricing
from placer.solver.policy import Policy
from placer.solver.preempt import Victim

__all__ = ["LnsResult", "improve"]

#: Nodes a neighbourhood starts from (its closure may add a few).
NODES = 24
#: At most this many nodes after closure: a bigger neighbourhood is skipped.
MAX_NODES = 64
#: Pending jobs that join a neighbourhood, besides the jobs placed on its nodes.
PENDING = 24
#: Seconds one round needs at least; the search stops when less is left.
MIN_ROUND_S = 0.12
#: Share of the time left that one round may take.
ROUND_SHARE = 0.25
#: Under ``Policy.reproducible``, the time limit each round's solve gets, which its deterministic budget is
#: a fixed share of (``DET_SHARE``: 0.1 deterministic seconds), whatever the call's own limit: a round's work
#: is then the same on any machine, and the rounds a call runs follow its limit (``core.py``).
REPRODUCIBLE_ROUND_S = 0.2


#: A round's statuses that only a wall clock gives (the model not built, or no time left to solve it).
_CUT = frozenset({"BUILD_TIMEOUT", "NO_TIME"})


@dataclass
class LnsResult:
    """The best answer found, and what the search did."""

    assignment: Assignment
    rounds: int = 0
    accepted: int = 0
    #: Whether the wall clock (not the round count) ended the search, or stopped one of its rounds.
    cut: bool = False
    #: ``score_of`` the answer found, and of the answer the search started from.
    score: Any = None
    start_score: Any = None


def _placed_on(a: Assignment) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for p, reps in a.placed.items():
        for r in reps:
            if r.node is not None:
                out.setdefault(r.node, set()).add(p)
    return out


def _closure(
    seed_nodes: set[int], a: Assignment, on: dict[int, set[int]], evicted: dict[str, Victim]
) -> tuple[set[int], set[int], list[Victim]] | None:
    """The neighbourhood around ``seed_nodes``: its nodes, the placed jobs on them (whole), the victims
    evicted on them (whole); None when it grows past :data:`MAX_NODES` or holds TPU replicas."""
    nodes = set(seed_nodes)
    jobs: set[int] = set()
    vics: dict[str, Victim] = {}
    frontier = set(nodes)
    while frontier:
        added: set[int] = set()
        for n in frontier:
            for p in on.get(n, ()):
                if p in jobs:
                    continue
                jobs.add(p)
                for r in a.placed[p]:
                    if r.node is None:
                        return None  # a TPU replica: slices are not part of a node neighbourhood
                    if r.node not in nodes:
                        added.add(r.node)
            for v in evicted.values():
                if v.id not in vics and n in v.nodes:
                    if v.pods:
                        return None
                    vics[v.id] = v
                    added |= set(v.nodes) - nodes
        nodes |= added
        if len(nodes) > MAX_NODES:
            return None
        frontier = added
    return nodes, jobs, sorted(vics.values(), key=lambda v: v.id)


def improve(
    plans: list[JobPlan],
    candidates: dict[int, list[UnitCandidates]],
    prefs: dict[int, list[np.ndarray]],
    anti: dict[int, np.ndarray],
    arrays: NodeArrays,
    spot_ok: dict[int, bool],
    start: Assignment,
    policy: Policy,
    score_of: Callable[[Assignment], Any],
    *,
    deadline: float,
    victims: list[Victim],
    pricing: Pricing | None = None,
    max_rounds: int | None = None,
    bound: float | None = None,
) -> LnsResult:
    """Improve ``start`` neighbourhood by neighbourhood until ``deadline`` (``time.perf_counter()``) or
    ``max_rounds``; ``score_of(answer)`` is an answer's comparable score (higher is better). Deterministic
    for a seed when the rounds, not the clock, end it (``LnsResult.cut`` says which). The search stops early
    when the answer's level 1 reaches ``bound`` (a proven upper bound): its rounds aim at pending jobs."""
    from placer.solver.cpsat import solve  # the package imports this module's neighbours

    rng = random.Random(policy.seed)
    best, best_score = start, score_of(start)
    out = LnsResult(best, score=best_score, start_score=best_score)
    by_id = {v.id: v for v in victims}
    node_units = {p: [c for c in cands if c.unit.tpu is None] for p, cands in candidates.items()}
    # Seeds: jobs greedy left pending that could run on some node now or after evictions, highest
    # priority first (the objective's first level weighs them most).
    pending = [
        p
        for p in sorted(candidates, key=lambda p: (-plans[p].weight, p))
        if p not in start.placed
        and node_units[p]
        and len(node_units[p]) == len(candidates[p])
        and any(c.static.any() for c in node_units[p])
    ]
    if not pending:
        return out
    # Who sits where, and whom the answer evicts: they change only when a round's answer is kept.
    on = _placed_on(best)
    evicted = {v: by_id[v] for v in best.evictions if v in by_id}
    k = 0
    while max_rounds is None or out.rounds < max_rounds:
        left = deadline - time.perf_counter()
        if left < MIN_ROUND_S or cancelled():
            out.cut = max_rounds is None or out.rounds < max_rounds
            break
        still = [p for p in pending if p not in best.placed]
        if not still or (bound is not None and best.placed_weight(plans) >= bound - 1e-6):
            break
        s = still[k % len(still)]
        k += 1
        out.rounds += 1
        mask = np.zeros(len(arrays.snap.nodes), dtype=bool)
        for c in node_units[s]:
            mask |= c.static
        pool = np.flatnonzero(mask)
        if pool.size == 0:
            continue
        seed_nodes = {int(n) for n in rng.sample(list(pool), min(NODES, pool.size))}
        hood = _closure(seed_nodes, best, on, evicted)
        if hood is None:
            continue
        nodes, inside, sub_victims = hood
        in_hood = np.zeros(len(arrays.snap.nodes), dtype=bool)
        in_hood[list(nodes)] = True
        joining = [
            p for p in still if any((c.static & in_hood).any() for c in node_units[p]) and p not in inside
        ][:PENDING]
        jobs = sorted(inside | set(joining) | {s})
        sub_cands = {
            p: [
                UnitCandidates(c.unit, c.static & in_hood, c.now & in_hood, c.eliminated, c.blocked)
                for c in candidates[p]
            ]
            for p in jobs
        }
        vic_ids = {v.id for v in sub_victims}
        # Victims wholly inside may be evicted for jobs here; the rest stay where they are.
        free_vics = [v for v in victims if set(v.nodes) <= nodes and not v.pods]
        hint = Assignment(
            placed={p: best.placed[p] for p in inside},
            evictions={v: ids for v, ids in best.evictions.items() if v in vic_ids},
        )
        # Counted rounds (reproducible) each get a fixed deterministic budget, and only the call's deadline
        # as a wall-clock safety net: a round of its own wall deadline would stop wherever the machine's
        # load left it. Otherwise a share of the time left, on the wall clock.
        if max_rounds:
            budget, round_deadline = REPRODUCIBLE_ROUND_S, deadline
        else:
            budget = max(MIN_ROUND_S, ROUND_SHARE * left)
            round_deadline = time.perf_counter() + budget
        sub_policy = policy.model_copy(update={"time_limit_s": budget, "lns_above_size": 0})
        res = solve(
            plans,
            sub_cands,
            {p: prefs[p] for p in jobs},
            {p: anti[p] for p in jobs},
            arrays,
            {p: spot_ok[p] for p in jobs},
            hint,
            sub_policy,
            deadline=min(round_deadline, deadline),
            victims=free_vics,
            budgets=None,
            pricing=pricing,
        )
        if max_rounds and (not res.deterministic or res.status in _CUT):
            out.cut = True  # the safety net stopped this round: what it found depends on the machine
        if res.assignment is None:
            continue
        merged = Assignment(engine="cpsat")
        merged.placed = {p: r for p, r in best.placed.items() if p not in inside}
        merged.placed.update(res.assignment.placed)
        merged.evictions = {v: ids for v, ids in best.evictions.items() if v not in vic_ids}
        merged.evictions.update(res.assignment.evictions)
        merged_score = score_of(merged)
        if merged_score > best_score:
            best, best_score = merged, merged_score
            out.accepted += 1
            on = _placed_on(best)
            evicted = {v: by_id[v] for v in best.evictions if v in by_id}
    out.assignment, out.score = best, best_score
    return out
