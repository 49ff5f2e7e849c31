"""The express lane of a :class:`~placer.solver.session.Session`: one plain job, decided without building
the whole problem.

Why it exists: a backend calls placer for every arrival, and most arrivals are one job of one replica with
no rule that reaches past its own node. For those, :func:`~placer.solver.engine.place` spends most of its
time on machinery the job does not use — the problem's phases for a batch (demand units, budgets,
victims, candidates, preferences and anti-affinity for every job, priority order), greedy's loop over
jobs and its bookkeeping for later ones, the bounds and CP-SAT's checks. The lane does what those phases
do *for this job*, with the same functions where they decide anything: the candidate masks and preference
scores of :mod:`placer.solver.candidates` and :mod:`placer.solver.objective.preferences` (kept per kind
of job, so an arrival of a kind seen before reads them), the running jobs' anti-affinity mask, the target
workload of :func:`~placer.solver.problem.problem_targets` (which learns the arrival as ``place()``'s
does), greedy's node choice for one replica (:func:`~placer.solver.greedy.place_alone`: the same levels,
FGD measure and caches, the same GPUs), phase 8's emitter, or for a job that waits the same
:func:`~placer.solver.answer.answer` on fresh candidates, the relaxation bound ``place()`` reports and the
same pricing.

Its decision is ``place()``'s, field for field (``tests/solver/test_express.py`` compares them on random
sequences; ``tests/solver/test_session.py`` compares every session decision with ``place()``;
``tests/placer/service/test_state.py`` on stored clusters' versions). When anything about the call or the
job is outside what it handles — a gang, a TPU slice, a Flux shape or domain, an exclusive node, the job's
own anti-affinity or preferred rules on other jobs, a budget, throttle or licence, a reservation, the
``cpsat`` engine or a baseline scorer, a job that fits only by evicting, or one that must wait while
planning or preemption hints are on (they look at the whole cluster) — it answers None and the caller
calls ``place()``; nothing was changed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import datetime

import numpy as np

from placer.solver.admission import admit
from placer.solver.answer import answer, emit_placements
from placer.solver.assignment import Assignment
from placer.solver.bound import relaxation
from placer.solver.budgets import Budgets
from placer.solver.candidates import (
    NodeArrays,
    UnitCandidates,
    anti_affinity_mask,
    batch_keys,
    unit_candidates,
)
from placer.solver.core import bound_fields
from placer.solver.decision import Decision, Stats
from placer.solver.demand import JobPlan, Unit, expand
from placer.solver.engine import holds_whole, with_read_warnings
from placer.solver.greedy import place_alone
from placer.solver.impossible import impossible_topology, unsatisfiable_why
from placer.solver.jobs.model import Job, ReadResult, SpotPreference
from placer.solver.jobs.queues import QueueConfig
from placer.solver.objective.cost import Pricing
from placer.solver.objective.fragmentation import BatchShapes, batch_shapes
from placer.solver.objective.preferences import beside_rules, preference_scores
from placer.solver.planning import jobs_by_id
from placer.solver.policy import Policy
from placer.solver.prepared import Prepared
from placer.solver.prices import PriceCatalog, price_decision
from placer.solver.problem import Problem, biggest_node_gpus, problem_targets
from placer.solver.structure import shaped

__all__ = ["Express"]


@dataclass(frozen=True, eq=False)
class _Kind:
    """What the lane keeps per kind of job (its content but its id and submit time): the job's plan as
    ``expand`` made it, the label keys it reads, and whether it may run on spot nodes."""

    plan: JobPlan
    keys: frozenset[str]
    spot_ok: bool


class Express:
    """The lane's memory: per kind of job, its plan (:class:`_Kind`), or None when the kind is not one the
    lane handles. Node facts per kind (candidate mask, preference scores) are kept in the arrays' static
    answers, so a node going down or up, joining or leaving drops them as it drops the general path's.
    One lane may serve several clusters (the service's stored ones) and threads: its memory is read and
    replaced, never cleared under a reader.

    >>> from datetime import UTC, datetime
    >>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    >>> from placer.topology import cluster_of, dgx_h100
    >>> lane, prepared, now = Express(), Prepared(cluster_of(dgx_h100(1))), datetime(2026, 1, 1, tzinfo=UTC)
    >>> def decide(job):
    ...     return lane.decide([job], prepared, Policy(), now=now, queues={}, reservations=(), prices=None)
    >>> decide(Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=2))])).placements[0].replicas[0].gpus
    [0, 1]
    >>> decide(Job(id="g", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=4))])) is None  # two replicas
    True
    """

    #: Kinds kept before the memory starts over (a service seeing ever new kinds of jobs).
    MAX_KINDS = 4096

    def __init__(self) -> None:
        self._kinds: dict[tuple[bytes, int], _Kind | None] = {}

    def decide(
        self,
        items: Sequence[Job | ReadResult],
        prepared: Prepared,
        policy: Policy,
        *,
        now: datetime,
        queues: Mapping[str, QueueConfig] | None,
        reservations: Sequence[object] | None,
        prices: PriceCatalog | None,
    ) -> Decision | None:
        """``place()``'s decision on ``prepared.cluster`` when the lane handles the call, else None (and
        nothing changed)."""
        t0 = time.perf_counter()
        if (
            len(items) != 1
            or reservations
            or policy.engine not in ("auto", "greedy")
            or policy.scorer != "placer"
        ):
            return None
        cluster = prepared.cluster
        admission = admit(items, cluster, now)
        if len(admission.eligible) != 1:
            return None  # rejected or waiting: the general path says why
        job = admission.eligible[0]
        catalog = (prices if prices is not None else policy.prices) or PriceCatalog.default()
        # A queue or tenant budget counts what runs: place() does. Without queues, only a tenant's dollar
        # budget can be one (the batch's throttles and licences are the kind's: _judge).
        if (queues or catalog.budgets.tenants) and Budgets.of(
            queues or {}, (), cluster=cluster, prices=catalog
        ).active:
            return None
        kind = self._kind(job, prepared)
        if kind is None:
            return None
        plan = _for(kind.plan, job, policy)
        arrays = prepared.arrays(kind.keys)
        static = _static(plan, kind, arrays, policy)
        if static is None:
            return None
        cand, pref, ranked, shapes = static
        anti = anti_affinity_mask(plan.anti, arrays, plan.labels, plan.anti_domains)
        unit = plan.units[0]
        now_mask = cand.static & arrays.fits(unit.need)
        fits = bool((now_mask & ~anti).any())
        if not fits and (policy.plan or policy.preemption):
            return None  # waiting: planning and what-if hints are place()'s
        if fits:  # the static answer with what fits now (all greedy reads of a job it places)
            cands = replace(cand, unit=unit, now=now_mask, blocked={})
        else:  # what blocks it now, for its reasons
            cands = unit_candidates(unit, arrays, nvlink=plan.nvlink, spot_ok=kind.spot_ok)
        # From here the decision is made: what a decision learns (the arrivals seen) moves on with it.
        problem = Problem(
            now=now,
            snap=arrays.snap,
            arrays=arrays,
            plans=[plan],
            prices=catalog,
            pricing=Pricing(arrays.snap, catalog, cache=arrays._static_cache),
            budgets=Budgets(),
            victims=[],
            candidates={0: [cands]},
            prefs={0: [pref]},
            anti={0: anti},
            spot_ok={0: kind.spot_ok},
            considered=1,
            preferred_affinity=policy.preferred_affinity,
        )
        problem.targets = problem_targets(problem, policy, cluster, prepared, batch=shapes)
        problem.build_s = time.perf_counter() - t0
        if fits:  # answer() for a placed job alone is its placement (no reasons, no evictions)
            replica = place_alone(
                plan,
                cands,
                ranked,
                anti,
                arrays,
                pricing=problem.pricing,
                targets=problem.targets,
                fits=now_mask,
            )
            assert replica is not None  # a node it fits is there: greedy places the replica
            # core._relaxation: greedy placed every job with candidates, so the bound is their weight.
            decision = Decision(stats=_stats(policy, plan.weight, float(plan.weight), problem.build_s))
            emit_placements(decision, Assignment(placed={0: [replica]}), problem.plans, problem.snap)
        else:
            decision = answer(problem, Assignment(), admission, policy.time_limit_s)
            decision.stats = _stats(policy, 0, relaxation(problem), problem.build_s)
        decision._weights = {plan.id: plan.weight}
        decision._levels_of = frozenset(p.job for p in decision.placements)
        decision.now = now
        hints = jobs_by_id(items, now)
        decision.stats.cost_per_hour = price_decision(
            decision, cluster, prices or PriceCatalog.default(), whole=holds_whole(hints)
        )
        with_read_warnings(decision, items)
        decision.stats.wall_s = round(time.perf_counter() - t0, 6)
        return decision

    def _kind(self, job: Job, prepared: Prepared) -> _Kind | None:
        """The kind of ``job`` on this cluster (made and judged the first time it is seen): its content,
        and the GPU count of the biggest node of its GPU types, which its plan's split depends on (nodes
        join and leave; several clusters may share one lane)."""
        cap = biggest_node_gpus(job, prepared.max_gpus_by_type())
        key = (_SERIALIZE(job, exclude=_NOT_KIND), cap)
        hit = self._kinds.get(key, _UNSEEN)
        if hit is not _UNSEEN:
            return hit  # type: ignore[return-value]
        if len(self._kinds) >= self.MAX_KINDS:
            self._kinds = {}
        kind = self._kinds[key] = _judge(job, prepared, cap)
        return kind


def _stats(policy: Policy, objective: int, bound: float, build_s: float) -> Stats:
    """The stats ``core.decide`` reports for greedy's answer alone: its objective, the relaxation's bound."""
    return Stats(
        engine="greedy",
        status="FEASIBLE",
        seed=policy.seed,
        deterministic=True,
        greedy_objective=float(objective),
        objective=float(objective),
        build_s=round(build_s, 6),
        **bound_fields(float(objective), [(bound, "relaxation")]),
    )


#: What tells two arrivals of one kind apart and no decision reads (the batch's order aside).
_NOT_KIND = {"id", "submit_time"}  # a set: pydantic reads a frozenset slower
_SERIALIZE = Job.__pydantic_serializer__.to_json
_UNSEEN = object()


def _judge(job: Job, prepared: Prepared, cap: int) -> _Kind | None:
    """The kind of ``job`` when the lane handles it: one node replica, placed alone, whose only ties to
    the rest of the cluster are the ones the lane computes (running jobs' anti-affinity, the target
    workload); None otherwise."""
    if (
        len(job.variants()) != 1
        or job.placement.node_count is not None
        or beside_rules(job)
        or job.placement.affinity_required  # it needs running jobs, found and kept by place()
        or job.placement.spread_required  # it counts running jobs, kept by place()
    ):
        return None
    if Budgets.of({}, (), cluster=prepared.cluster, jobs=[job]).active:  # a throttle, group limit, licence
        return None
    plan = expand(job, 0, max_node_gpus=cap)
    if plan.scope is not None or plan.anti or plan.anti_domains or len(plan.units) != 1:
        return None
    u = plan.units[0]
    if (
        u.replicas != 1
        or u.tpu is not None
        or u.count_range is not None
        or u.domains
        or u.slices
        or u.exclusive
        or shaped(u.structure, u.need.milli)
    ):
        return None
    keys = frozenset(batch_keys(plan.units, [plan.scope]))
    spot_ok = job.placement.spot_preference is not SpotPreference.ON_DEMAND_ONLY
    return _Kind(plan=plan, keys=keys, spot_ok=spot_ok)


def _for(template: JobPlan, job: Job, policy: Policy) -> JobPlan:
    """The kind's plan for this arrival: its job, its unit named for it, its weight under ``policy``."""
    plan = object.__new__(JobPlan)  # copy.copy(template), without the pickling protocol's detour
    plan.__dict__.update(template.__dict__)
    plan.job, plan.notes = job, list(template.notes)
    plan.units = [_named(u, job.id) for u in template.units]
    plan.weight = policy.job_weight(job.priority_class.value, job.priority, plan.demand_units)
    return plan


def _named(unit: Unit, job_id: str) -> Unit:
    """``replace(unit, job_id=job_id)``, field by field in order (``replace`` makes a keyword per field:
    twice the time, for the lane's one unit per arrival)."""
    return Unit(unit.job_idx, job_id, *[getattr(unit, f) for f in _UNIT_REST])


#: The fields of :class:`Unit` after ``job_idx`` and ``job_id``, in order.
_UNIT_REST = tuple(f.name for f in fields(Unit))[2:]


def _static(
    plan: JobPlan, kind: _Kind, arrays: NodeArrays, policy: Policy
) -> tuple[UnitCandidates, np.ndarray, np.ndarray | None, BatchShapes] | None:
    """The unit's static candidates and preference scores on ``arrays``, the scores again or None when
    they are the same on every node (node choice then skips the level), and the arrival as the target
    workload counts it (:func:`batch_shapes`: its shape and the nodes it may use, the same for every
    arrival of the kind) (kept in its static answers with the candidate masks, so they go when nodes go
    down or up); None when the job can never run there or asks for what the cluster cannot provide (the
    general path explains it)."""
    key = ("__static__", "__express__", id(kind))
    hit = arrays._static_cache.get(key)
    if hit is not None:
        return hit[1]
    unit = plan.units[0]
    cand = unit_candidates(unit, arrays, nvlink=plan.nvlink, spot_ok=kind.spot_ok)
    made: tuple[UnitCandidates, np.ndarray, np.ndarray | None, BatchShapes] | None = None
    if (
        impossible_topology(plan, arrays.snap, kind.spot_ok, arrays) is None
        and unsatisfiable_why(plan, [cand], arrays.snap, kind.spot_ok, arrays) is None
    ):
        pref = preference_scores(plan, unit, arrays, policy)
        ranked = None if pref.min(initial=0) == pref.max(initial=0) else pref
        made = (cand, pref, ranked, batch_shapes([plan], {plan.idx: [cand]}))
    # The kind object is kept alive with its answer: its id stays its own while the answer is kept.
    arrays._static_cache[key] = (kind, made)
    return made
