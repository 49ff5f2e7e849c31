"""Phases 2-4 of :func:`~placer.solver.core.decide`: the :class:`Problem` both engines solve, built once.

2. **snapshot** — the solver's flat view of the cluster (:mod:`placer.solver.snapshot`), prices of a
   replica on every node (:mod:`placer.solver.objective.cost`), budgets, and the running jobs that may
   be evicted (:mod:`placer.solver.preempt`);
3. **demand** — each eligible job as placement units (:mod:`placer.solver.demand`), weighted by the
   policy;
4. **candidates** — per unit, the nodes its hard constraints allow (:mod:`placer.solver.candidates`), its
   preference scores and anti-affinity mask; a job no state of the cluster could hold is
   ``UNSATISFIABLE`` (:mod:`placer.solver.impossible`).

Why one object: greedy, CP-SAT, the bounds and the explanations must all see the same units, candidates
and prices — a second copy of any of them is a second chance to disagree.

Candidates are computed in priority order under the deadline: when greedy could not be expected to reach a
job in time, the rest are ``skipped`` (pending with ``NOT_CONSIDERED``, for the next cycle).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from placer.solver.affinity import group_key, required_affinity
from placer.solver.budgets import Budgets
from placer.solver.candidates import (
    NodeArrays,
    UnitCandidates,
    anti_affinity_mask,
    batch_keys,
    unit_candidates,
)
from placer.solver.decision import Reason
from placer.solver.demand import JobPlan, demand_units, expand, unexpanded
from placer.solver.domains import honour_domains
from placer.solver.explain import affinity_reason, spread_reason, unavailable, unsatisfiable
from placer.solver.greedy import priority_key, priority_order
from placer.solver.impossible import impossible_topology, split_kept_apart, unsatisfiable_why
from placer.solver.jobs.model import Job, SpotPreference
from placer.solver.jobs.queues import QueueConfig
from placer.solver.objective.cost import Pricing
from placer.solver.objective.fragmentation import (
    BatchShapes,
    Shape,
    Targets,
    batch_shapes,
    running_shapes,
    shape_of,
    target_workload,
)
from placer.solver.objective.preferences import preference_scores, running_beside
from placer.solver.policy import Policy
from placer.solver.preempt import Victim, victims
from placer.solver.prepared import Prepared
from placer.solver.prices import PriceCatalog
from placer.solver.skew import spread_kept
from placer.solver.snapshot import Snapshot, max_gpus_by_type
from placer.topology import Cluster, RunningJob, canonical_gpu_type

__all__ = [
    "ALWAYS_CONSIDERED",
    "GREEDY_PER_CANDIDATE_S",
    "Problem",
    "biggest_node_gpus",
    "build_problem",
    "problem_targets",
]

#: Greedy's time on a job, as a multiple of the time its candidates took. Under a tight limit the candidate
#: phase stops considering jobs once greedy could not be expected to reach them: candidates greedy never
#: reaches are computed for nothing, and greedy's time, not the candidates', is what places work. Over a
#: whole batch greedy takes 2.7x (scenario M) to 3.8-4.8x (L) its candidates' time, but much less for the
#: first, highest-priority jobs (cold candidate caches, an emptier cluster): at 3 greedy stopped with a
#: third of a 1 s limit unused on L, at 2 it reaches nearly all it was given. Without time pressure every
#: job is considered long before this matters.
GREEDY_PER_CANDIDATE_S = 2.0


@dataclass(eq=False)
class Problem:
    """One batch on one cluster, as both engines see it. Indexed by plan index (``plans[i].idx == i``)."""

    now: datetime
    snap: Snapshot
    arrays: NodeArrays
    plans: list[JobPlan]
    prices: PriceCatalog
    pricing: Pricing
    budgets: Budgets
    #: Running jobs that may be evicted (empty without preemption).
    victims: list[Victim]
    #: Per considered job: its units' candidates, preference scores, anti-affinity mask, spot permission.
    candidates: dict[int, list[UnitCandidates]] = field(default_factory=dict)
    prefs: dict[int, list[np.ndarray]] = field(default_factory=dict)
    anti: dict[int, np.ndarray] = field(default_factory=dict)
    spot_ok: dict[int, bool] = field(default_factory=dict)
    #: Per considered job with required pod affinity: the nodes it keeps it off (also in ``anti``, which
    #: the engines read; kept apart for its pending reasons).
    affinity: dict[int, np.ndarray] = field(default_factory=dict)
    #: Per considered job with topology spread constraints: the nodes they keep it off (also in ``anti``).
    spread: dict[int, np.ndarray] = field(default_factory=dict)
    #: Jobs no state of the cluster could hold, or that wait for another to run first, with the reason.
    unsat: dict[int, Reason] = field(default_factory=dict)
    #: Jobs the cluster must reject (a TPU topology no pod can provide, OJS ML §3.3), with the error.
    rejected: dict[int, dict[str, str]] = field(default_factory=dict)
    #: Jobs not considered before the deadline.
    skipped: set[int] = field(default_factory=set)
    #: Whether the deadline stopped the candidate phase (some jobs were never considered).
    cut: bool = False
    #: Replicas of the considered jobs (the answer's building time grows with them).
    considered: int = 0
    #: The target workload fragmentation is measured against (None: no fragmentation key).
    targets: Targets | None = None
    #: ``Policy.preferred_affinity``: what a preferred (anti-)affinity rule's weight is multiplied by.
    preferred_affinity: int = 1
    build_s: float = 0.0

    def greedy_order(self) -> list[int]:
        """Greedy's order of the jobs it may place (those with candidates): priority first, then the most
        constrained jobs (fewest nodes they could ever use), then bigger demand
        (:func:`~placer.solver.greedy.priority_order`). The others keep the reason they have — a job no
        node can run stays ``UNSATISFIABLE`` when the deadline stops greedy before its turn."""
        flexibility = {
            i: min((int(c.static.sum()) for c in cands if c.unit.tpu is None), default=0)
            for i, cands in self.candidates.items()
        }
        return priority_order([self.plans[i] for i in self.candidates], flexibility)


def build_problem(
    eligible: list[Job],
    cluster: Cluster,
    policy: Policy,
    *,
    now: datetime,
    queues: Mapping[str, QueueConfig] | None,
    until: Callable[[int], float],
    prepared: Prepared | None = None,
) -> Problem:
    """Phases 2-4 for the eligible jobs (in job-id order). ``until(replicas)`` is when the answer must be in
    hand given the replicas considered so far: it decides when to stop considering jobs. ``prepared``: the
    snapshot, arrays and running shapes kept for this very cluster (:mod:`placer.solver.prepared`)."""
    t_build = time.perf_counter()
    if prepared is not None and prepared.cluster is not cluster:
        prepared = None
    # 2. snapshot
    snap = prepared.snapshot() if prepared is not None else Snapshot.of(cluster)
    prices = policy.prices or PriceCatalog.default()
    # 3. demand
    max_gpus = prepared.max_gpus_by_type() if prepared is not None else max_gpus_by_type(snap)
    slots: list[JobPlan | None] = [None] * len(eligible)
    variants: dict[int, list[JobPlan]] = {}
    order = sorted(range(len(eligible)), key=lambda i: priority_key(eligible[i], demand_units(eligible[i])))
    stop = until(0)
    unexamined: list[int] = []
    for k, i in enumerate(order):
        # Expanding a job costs ~25 us (scenario L: 5,000 of them, 0.13 s): in priority order, and only
        # while the answer's deadline is ahead; past it the rest wait unexamined, as the candidate phase
        # below would leave them, without paying for their demand first.
        if k >= ALWAYS_CONSIDERED and k % 16 == 0 and time.perf_counter() > stop:
            unexamined = order[k:]
            break
        job = eligible[i]
        shapes = []
        for v in job.variants():
            plan = expand(v, i, max_node_gpus=biggest_node_gpus(v, max_gpus))
            plan.weight = policy.job_weight(v.priority_class.value, v.priority, plan.demand_units)
            shapes.append(plan)
        slots[i] = shapes[0]
        if len(shapes) > 1:
            variants[i] = shapes
    for i in unexamined:
        stub = slots[i] = unexpanded(eligible[i], i)
        stub.weight = policy.job_weight(
            eligible[i].priority_class.value, eligible[i].priority, stub.demand_units
        )
    plans: list[JobPlan] = slots  # type: ignore[assignment]  # every slot is filled
    every = plans + [p for shapes in variants.values() for p in shapes[1:]]
    keys = batch_keys([u for p in every for u in p.units], [p.scope for p in every])
    arrays = prepared.arrays(keys) if prepared is not None else NodeArrays.of(snap, keys)
    for plan in every:
        honour_domains(plan, arrays)
    problem = Problem(
        now=now,
        snap=snap,
        arrays=arrays,
        plans=plans,
        prices=prices,
        pricing=Pricing(snap, prices, cache=arrays._static_cache if prepared is not None else None),
        budgets=Budgets.of(queues or {}, _running(cluster), cluster=cluster, prices=prices, jobs=eligible),
        victims=victims(snap, now, policy.restart_penalty_s) if policy.preemption else [],
        preferred_affinity=policy.preferred_affinity,
    )
    if unexamined:
        problem.skipped.update(unexamined)
        problem.cut = True
    # 4. candidates
    for i, shapes in variants.items():
        problem.plans[i] = _shape(shapes, [a.label for a in eligible[i].alternatives], problem)
    # The candidates' order is the one the demand was expanded in, unless a job runs in another of its
    # node shapes, whose size may differ.
    _candidates(problem, policy, until, None if variants else order)
    problem.targets = problem_targets(problem, policy, cluster, prepared)
    problem.build_s = time.perf_counter() - t_build
    return problem


def _running(cluster: Cluster) -> Iterator[RunningJob]:
    """The running jobs, listed only when read (budgets read them only when some queue has one)."""
    yield from cluster.running_jobs()


def _shape(shapes: list[JobPlan], labels: list[str], problem: Problem) -> JobPlan:
    """The shape a job with alternatives (SSS ``Or`` of node shapes) runs in: the first, in the
    document's order, whose every unit has a node it fits now; else the first the cluster could ever
    hold; else the first (its reason says why it cannot run). The decision's notes say which."""
    could: JobPlan | None = None
    for plan in shapes:
        ok = plan.job.placement.spot_preference is not SpotPreference.ON_DEMAND_ONLY
        cands = [unit_candidates(u, problem.arrays, nvlink=plan.nvlink, spot_ok=ok) for u in plan.units]
        if impossible_topology(plan, problem.snap, ok, problem.arrays) is not None:
            continue
        if unsatisfiable_why(plan, cands, problem.snap, ok, problem.arrays) is not None:
            continue
        could = could or plan
        if all(c.now.any() for c in cands if c.unit.tpu is None):
            could = plan
            break
    chosen = could or shapes[0]
    k = shapes.index(chosen)
    label = f": {labels[k - 1]}" if k and len(labels) >= k else ""
    chosen.notes.append(f"runs in its node shape {k + 1} of {len(shapes)} (SSS Or alternatives){label}")
    return chosen


#: Past the deadline, jobs are still considered until one has candidates, but at most this many.
ALWAYS_CONSIDERED = 16


def _candidates(
    problem: Problem, policy: Policy, until: Callable[[int], float], order: list[int] | None = None
) -> None:
    """Candidates, preferences and anti-affinity per job, in priority order (``order``, when the caller
    has it), so that if the deadline comes first the jobs left unconsidered are the least important ones.
    Jobs already skipped (left unexamined by the demand phase) are not looked at."""
    plans, arrays = problem.plans, problem.arrays
    order = [i for i in (order if order is not None else priority_order(plans)) if i not in problem.skipped]
    needed: set[str] = set()  # running jobs a job with required pod affinity or spread needs: not evicted
    greedy_s = 0.0  # greedy's expected time on the considered jobs: GREEDY_PER_CANDIDATE_S x candidates'
    for k, i in enumerate(order):
        plan = plans[i]
        t_job = time.perf_counter()
        # A job is considered only while greedy can still be expected to reach it in time; past that,
        # only until one job has candidates (some progress beats none), and never beyond the first
        # ``ALWAYS_CONSIDERED`` jobs however many of them cannot run. On scenario L each job considered
        # costs ~2 ms here and ~4 ms in greedy: when the snapshot alone outlasts the limit, considering a
        # fixed 16, as before, cost ~0.1 s past it.
        if (
            k
            and (problem.candidates or k >= ALWAYS_CONSIDERED)
            and t_job + greedy_s > until(problem.considered)
        ):
            problem.skipped.update(order[k:])
            problem.cut = True
            break
        ok = plan.job.placement.spot_preference is not SpotPreference.ON_DEMAND_ONLY
        problem.spot_ok[plan.idx] = ok
        cands = [unit_candidates(u, arrays, nvlink=plan.nvlink, spot_ok=ok) for u in plan.units]
        refused = impossible_topology(plan, problem.snap, ok, arrays) or split_kept_apart(plan)
        if refused is not None:
            problem.rejected[plan.idx] = refused
            continue
        why = unsatisfiable_why(plan, cands, problem.snap, ok, arrays)
        if why is not None:
            problem.unsat[plan.idx] = _cannot_run(plan, cands, why, problem, ok)
            continue
        anti = anti_affinity_mask(plan.anti, arrays, plan.labels, plan.anti_domains)
        if plan.job.placement.affinity_required:  # before its preferences: it may have nothing to join
            blocked, anchors, starts = required_affinity(plan.job, arrays, may_start=True)
            if blocked.all():
                problem.unsat[plan.idx] = affinity_reason(plan.job, None, plans)
                continue
            plan.starts = group_key(plan.job) if starts else None  # one starter placed a decision: apart.py
            needed |= anchors
            problem.affinity[plan.idx] = blocked
            anti = anti | blocked
        if plan.job.placement.spread_required:  # pairs that count each other: solver/apart.py
            blocked, counted, facts = spread_kept(plan, arrays)
            if not any((c.static & ~blocked).any() for c in cands):  # no node it may ever use is left
                problem.unsat[plan.idx] = spread_reason(None, facts)
                continue
            needed |= counted
            problem.spread[plan.idx] = blocked
            anti = anti | blocked
        problem.candidates[plan.idx] = cands
        prefs = [preference_scores(plan, u, arrays, policy) for u in plan.units]
        beside = running_beside(plan, arrays, policy)
        problem.prefs[plan.idx] = prefs if beside is None else [p + beside for p in prefs]
        problem.anti[plan.idx] = anti
        problem.considered += plan.replicas
        greedy_s += GREEDY_PER_CANDIDATE_S * (time.perf_counter() - t_job)
    if needed:
        problem.victims = [v for v in problem.victims if v.job.job not in needed]


def _cannot_run(plan: JobPlan, cands: list[UnitCandidates], why: str, problem: Problem, ok: bool) -> Reason:
    """Why a job no node can run now: ``NODES_UNAVAILABLE`` when it could run were the nodes that are
    down up (it waits for them), else the fixed ``UNSATISFIABLE``."""
    if any(c.eliminated.get("unavailable") for c in cands if c.unit.tpu is None):
        arrays = problem.arrays
        up = [unit_candidates(u, arrays, nvlink=plan.nvlink, spot_ok=ok, assume_up=True) for u in plan.units]
        if unsatisfiable_why(plan, up, problem.snap, ok, arrays) is None:
            return unavailable(cands, up, problem.snap)
    return unsatisfiable(plan, cands, why)


def problem_targets(
    problem: Problem,
    policy: Policy,
    cluster: Cluster,
    prepared: Prepared | None,
    *,
    batch: BatchShapes | None = None,
) -> Targets | None:
    """The target workload of the fragmentation key: the policy's profile; in a session, the target in
    force of what it has seen arrive (:class:`~placer.solver.objective.fragmentation.Learned`), which then
    learns the batch; else the batch plus the running replicas (``objective/fragmentation.py``). None when
    the policy switches it off (``[]``). ``batch``: :func:`batch_shapes` of the problem's plans, when the
    caller has it (the express lane keeps it per kind of job)."""
    learned = None if prepared is None else prepared.learned
    if learned is not None and policy.target_workload is None:
        assert prepared is not None
        if batch is None:
            batch = batch_shapes(problem.plans, problem.candidates)
        made, reaffirmed = learned.target_for(
            batch,
            lambda: target_workload(
                problem.plans,
                problem.candidates,
                len(problem.snap.nodes),
                learned=learned,
                gpu_count=problem.arrays.cap_gpus,
                batch=batch,
            ),
        )
        prepared.learned = learned.seen(
            problem.plans, problem.candidates, batch=batch, target=made, reaffirmed=reaffirmed
        )
        return made if made.size else None
    if learned is not None:  # a session has now seen these arrive
        assert prepared is not None
        prepared.learned = learned.seen(problem.plans, problem.candidates)
    if policy.target_workload == []:
        return None
    profile: dict[Shape, float] | None = None
    if policy.target_workload is not None:
        profile = {}
        for t in policy.target_workload:
            shape = shape_of(t.cpu_cores, t.gpus, t.gpu_milli)
            profile[shape] = profile.get(shape, 0.0) + t.weight
    if prepared is not None:
        running = prepared.running_shapes()
    else:
        running = running_shapes(r for rj in cluster.running_jobs() for r in rj.replicas)
    targets = target_workload(
        problem.plans,
        problem.candidates,
        len(problem.snap.nodes),
        running=running,
        profile=profile,
        gpu_count=problem.arrays.cap_gpus,
    )
    return targets if targets.size else None


def biggest_node_gpus(job: Job, by_type: dict[str, int]) -> int:
    """The GPU count of the biggest node of any GPU type the job names (of any node when it names none)."""
    types: set[str] = set()
    for g in job.tasks:
        if g.gpu is not None:
            types.update(canonical_gpu_type(t) or t for t in g.gpu.types)
    if not types:
        return max(by_type.values(), default=0)
    return max((by_type.get(t, 0) for t in types), default=0)
