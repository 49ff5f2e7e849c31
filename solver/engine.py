"""``place(jobs, cluster, policy) -> Decision``: the pure function at the heart of placer.

Numbered phases, each in its own module (Kueue's scheduler cycle is the model):

0. admit — split valid jobs from rejected ones (duplicates, unknown reservations);
1. eligibility — dependencies and ``not_before`` (rule 14 of ``docs/placement-rules.md``);
2. snapshot — :mod:`placer.solver.snapshot`; 3. demand — :mod:`placer.solver.demand` (units, splitting,
weights);
4. candidates — :mod:`placer.solver.candidates` (hard constraints, ``UNSATISFIABLE``);
5. greedy — :mod:`placer.solver.greedy`, always; 6. CP-SAT — :mod:`placer.solver.cpsat`, from greedy's hint,
within
   the time left; 7. choose — the better valid answer (checked by :mod:`placer.solver.check` when
   ``policy.verify``); 8. explain — :mod:`placer.solver.explain`.

The whole call returns within ``policy.time_limit_s`` plus a small overhead (``docs/solver.md``): greedy's
time counts against the limit and CP-SAT gets what is left, minus a reserve for building the answer.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.jobs.model import Job, TaskGroup, GpuDemand
>>> d = place([Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=4))])], cluster_of(dgx_h100(1)),
...           Policy(engine="greedy"))
>>> d.placements[0].replicas[0].gpus
[0, 1, 2, 3]
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
from placer.solver.assignment import Assignment, objective
from placer.solver.budgets import Budgets, remaining_cost_room, remaining_room
from placer.solver.candidates import (
    NodeArrays,
    UnitCandidates,
    anti_affinity_mask,
    batch_keys,
    pod_admits,
    unit_candidates,
)
from placer.solver.cost import Pricing
from placer.solver.decision import (
    Decision,
    JobPlacement,
    PendingJob,
    Reason,
    RejectedJob,
    ReplicaPlacement,
    Stats,
)
from placer.solver.demand import JobPlan, Unit, expand
from placer.solver.explain import (
    cost_budget,
    not_considered,
    owners_of,
    pending_reasons,
    queue_budget,
    unsatisfiable,
)
from placer.solver.gc_pause import paused_gc
from placer.solver.greedy import greedy, priority_order
from placer.solver.jobs.model import DependencyCondition, Job, ReadResult, SpotPreference
from placer.solver.jobs.queues import QueueConfig
from placer.solver.policy import Policy
from placer.solver.preempt import escalated, job_rank, victims
from placer.solver.prices import PriceCatalog, price_decision
from placer.solver.reservations import Reservation
from placer.solver.scoring import preference_scores
from placer.solver.snapshot import Snapshot
from placer.solver.tpu_shapes import tpu_shapes
from placer.topology import Cluster, canonical_gpu_type
from placer.topology.tpu import slices_in_pod

__all__ = [
    "CHECK_PER_REPLICA_S",
    "GREEDY_PER_CANDIDATE_S",
    "LP_MIN_LEFT_S",
    "LP_SHARE",
    "RESERVE_PER_REPLICA_S",
    "RESERVE_S",
    "decide",
    "place",
    "probe_fit",
]

#: Seconds kept back from the time limit for turning the answer into a Decision: a fixed part (the
#: relaxation bound, ~0.03 s on 10,000 nodes, and the hints of :mod:`placer.solver.what_if`) and a part per
#: replica of the jobs with candidates (emitting and explaining grow with those, not with the batch: a job
#: never considered costs one fixed reason). Measured on scenario L: ~15 us a replica. Counting every
#: replica of the batch at 0.1 ms, as before, kept 0.65 s back there, and at a 1.5 s limit greedy then saw
#: 16 jobs of 5,000.
RESERVE_S = 0.05
RESERVE_PER_REPLICA_S = 0.00003
#: Kept back as well, per replica, when CP-SAT's answer may have to pass the checker (``policy.verify``):
#: checking scenario L's ~5,500 placed replicas takes 0.3-0.8 s.
CHECK_PER_REPLICA_S = 0.0001
#: Greedy's time on a job, as a multiple of the time its candidates took. Under a tight limit the candidate
#: phase stops considering jobs once greedy could not be expected to reach them: candidates greedy never
#: reaches are computed for nothing, and greedy's time, not the candidates', is what places work. Over a
#: whole batch greedy takes 2.7x (scenario M) to 3.8-4.8x (L) its candidates' time, but much less for the
#: first, highest-priority jobs (cold candidate caches, an emptier cluster): at 3 greedy stopped with a
#: third of a 1 s limit unused on L, at 2 it reaches nearly all it was given. Without time pressure every
#: job is considered long before this matters.
GREEDY_PER_CANDIDATE_S = 2.0
#: At most this share of the time left for CP-SAT goes to the LP bound (:func:`placer.solver.bound.lp_bound`),
#: which only sharpens the reported gap; and only when CP-SAT gets at least ``LP_MIN_LEFT_S``.
LP_SHARE = 0.25
LP_MIN_LEFT_S = 0.3


def place(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy | None = None,
    *,
    now: datetime | None = None,
    queues: Mapping[str, QueueConfig] | None = None,
    reservations: Sequence[Reservation] | None = None,
    prices: PriceCatalog | None = None,
) -> Decision:
    """Decide where the batch runs. Pure: the same inputs and ``policy.seed`` give the same decision (with
    ``policy.reproducible``, also under a wall-clock limit; see ``docs/solver.md``).

    ``queues`` (OJS §10 configurations by queue name) bring GPU budgets: a job that would take its queue
    over ``max_total_gpus`` or ``max_concurrent_gpu_jobs`` (running jobs included) stays pending with
    ``QUEUE_BUDGET``. ``reservations`` declare held capacity (:mod:`placer.solver.reservations`): jobs naming
    one
    run only inside it, other jobs never use it while it is held; a job naming an unknown reservation is
    rejected. ``prices`` (default: :meth:`PriceCatalog.default`) price each placement
    (``cost_per_hour``) and the decision (``stats.cost_per_hour``)."""
    t0 = time.perf_counter()
    policy = policy or Policy()
    if prices is not None:  # prices and dollar budgets reach every core decision with the policy
        policy = policy.model_copy(update={"prices": prices})
    now = now or datetime.now(UTC)

    def core(batch: Sequence[Job | ReadResult], limit_s: float) -> Decision:
        within = policy.model_copy(update={"time_limit_s": limit_s})
        if reservations:
            from placer.solver.reservation_phases import place_with_reservations

            return place_with_reservations(
                batch, cluster, within, now=now, queues=queues, reservations=reservations
            )
        return decide(batch, cluster, within, now=now, queues=queues)

    with paused_gc():  # a full collection over a big snapshot would eat the deadline (solver/gc_pause.py)
        if policy.plan and _may_plan(jobs, cluster, reservations or (), now):
            from placer.solver.planning import with_plans

            decision = with_plans(core, jobs, cluster, policy, now=now, reservations=reservations or ())
        else:
            decision = core(jobs, policy.time_limit_s)
        decision.now = now
        # What would change the outcome, in the time left (solver/what_if.py).
        from placer.solver.planning import jobs_by_id
        from placer.solver.what_if import add_preemptible_hints

        deadline = t0 + policy.time_limit_s
        add_preemptible_hints(decision, jobs_by_id(jobs, now), cluster, policy, deadline=deadline)
        decision.stats.cost_per_hour = price_decision(decision, cluster, prices or PriceCatalog.default())
    # The whole call, hints and pricing included (docs/decision.md): the core decisions set their own.
    decision.stats.wall_s = round(time.perf_counter() - t0, 6)
    return decision


def _may_plan(
    jobs: Sequence[Job | ReadResult], cluster: Cluster, reservations: Sequence[Reservation], now: datetime
) -> bool:
    """Whether any plan could exist: something on the timeline ends, some job waits for a time or a
    workflow step, or a reservation starts later (work started now must not run into it). Without any,
    planning is skipped and the core decision gets the whole time limit."""
    if any(r.start is not None and r.start > now for r in reservations):
        return True
    for item in jobs:
        job = item.job if isinstance(item, ReadResult) else item
        if job is not None and (job.duration_s is not None or job.not_before is not None or job.dependencies):
            return True
    return any(r.expected_end is not None for r in cluster.running_jobs())


def decide(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy | None = None,
    *,
    now: datetime | None = None,
    queues: Mapping[str, QueueConfig] | None = None,
    reserved_ok: frozenset[str] = frozenset(),
) -> Decision:
    """The core of :func:`place`, without reservations: jobs naming a reservation outside ``reserved_ok``
    are rejected (it does not exist for this call). ``policy.prices`` (default catalog when None) prices
    the cost term and the dollar budgets of ``queues`` and of the tenants it names."""
    t0 = time.perf_counter()
    policy = policy or Policy()
    now = now or datetime.now(UTC)
    decision = Decision()

    # 0. admit
    valid: list[Job] = []
    seen: dict[str, int] = {}
    for item in jobs:
        if isinstance(item, ReadResult):
            if not item.ok or item.job is None:
                decision.rejected.append(
                    RejectedJob(job=item.id, errors=[e.model_dump() for e in item.errors])
                )
                continue
            item = item.job
        seen[item.id] = seen.get(item.id, 0) + 1
        valid.append(item)
    admitted: list[Job] = []
    duplicate_reported: set[str] = set()
    for job in valid:
        if seen[job.id] > 1:
            if job.id in duplicate_reported:
                continue
            duplicate_reported.add(job.id)
            decision.rejected.append(
                RejectedJob(
                    job=job.id,
                    errors=[
                        {
                            "code": "duplicate",
                            "path": "id",
                            "message": f"job id {job.id!r} appears more than once",
                        }
                    ],
                )
            )
        elif job.reservation is not None and job.reservation.id not in reserved_ok:
            decision.rejected.append(
                RejectedJob(
                    job=job.id,
                    errors=[
                        {
                            "code": "reservation",
                            "path": "reservation.id",
                            "message": f"reservation {job.reservation.id!r} does not exist in this cluster",
                        }
                    ],
                )
            )
        else:
            admitted.append(job)

    # 1. eligibility
    # Every id the batch names counts: a dependency on a job rejected here (duplicate, unknown
    # reservation, invalid) is unmet too — that job will not run.
    batch_ids = {j.id for j in valid} | {r.job for r in decision.rejected}
    running_ids = {r.job for r in cluster.running_jobs()}
    eligible: list[Job] = []
    for job in admitted:
        reason = _ineligible(job, batch_ids, running_ids, now)
        if reason is not None:
            decision.pending.append(PendingJob(job=job.id, reasons=[reason]))
        else:
            eligible.append(job)

    # The batch's order must not matter: plans are built in job-id order. Jobs count at their escalated
    # class where OJS ML §8.4 escalation applies.
    eligible = sorted((escalated(j, now) for j in eligible), key=lambda j: j.id)

    # 2-3. snapshot and demand
    t_build = time.perf_counter()
    snap = Snapshot.of(cluster)
    prices = policy.prices or PriceCatalog.default()
    pricing = Pricing(snap, prices)
    max_gpus = _max_gpus_by_type(snap)
    plans: list[JobPlan] = []
    for i, job in enumerate(eligible):
        plan = expand(job, i, max_node_gpus=_max_node_gpus(job, max_gpus))
        plan.weight = policy.job_weight(job.priority_class.value, job.priority, plan.demand_units)
        plans.append(plan)

    # 4. candidates
    arrays = NodeArrays.of(snap, batch_keys([u for p in plans for u in p.units], [p.scope for p in plans]))
    candidates: dict[int, list[UnitCandidates]] = {}
    prefs: dict[int, list[np.ndarray]] = {}
    anti: dict[int, np.ndarray] = {}
    spot_ok: dict[int, bool] = {}
    unsat: dict[int, Reason] = {}
    skipped: set[int] = set()
    # In priority order, so that if the deadline comes first, the jobs left unconsidered are the least
    # important ones (they stay pending with NOT_CONSIDERED, for the next cycle).
    order = priority_order(plans)

    def until(replicas: int) -> float:
        """When the answer must be in hand, given the replicas of the jobs considered."""
        return t0 + policy.time_limit_s - RESERVE_S - RESERVE_PER_REPLICA_S * replicas

    considered = 0  # replicas of the jobs with candidates so far
    greedy_s = 0.0  # greedy's expected time on them: GREEDY_PER_CANDIDATE_S x their candidates' time
    for k, i in enumerate(order):
        plan = plans[i]
        t_job = time.perf_counter()
        # The first 16 jobs are always considered: some progress beats none, and it costs milliseconds.
        # Later, a job is considered only while greedy can still be expected to reach it in time.
        if k and k % 16 == 0 and t_job + greedy_s > until(considered):
            skipped.update(order[k:])
            break
        ok = plan.job.placement.spot_preference is not SpotPreference.ON_DEMAND_ONLY
        spot_ok[plan.idx] = ok
        cands = [unit_candidates(u, arrays, nvlink=plan.nvlink, spot_ok=ok) for u in plan.units]
        why = _unsatisfiable_why(plan, cands, snap, ok, arrays)
        if why is not None:
            unsat[plan.idx] = unsatisfiable(plan, cands, why)
            continue
        candidates[plan.idx] = cands
        prefs[plan.idx] = [preference_scores(plan, u, arrays, policy) for u in plan.units]
        anti[plan.idx] = anti_affinity_mask(plan.anti, arrays)
        considered += plan.replicas
        greedy_s += GREEDY_PER_CANDIDATE_S * (time.perf_counter() - t_job)
    build_s = time.perf_counter() - t_build

    # Greedy's order: priority first, then the most constrained jobs (fewest nodes they could ever use).
    flexibility = {
        i: min((int(c.static.sum()) for c in cands if c.unit.tpu is None), default=0)
        for i, cands in candidates.items()
    }
    order = priority_order(plans, flexibility)
    # 5. greedy
    evictable = victims(snap, now, policy.restart_penalty_s) if policy.preemption else []
    budgets = Budgets.of(queues or {}, cluster.running_jobs(), cluster=cluster, prices=prices)
    # Greedy runs on as long as the answer for what was considered can still be built in time.
    deadline = until(considered)
    best = greedy_best = greedy(
        plans,
        candidates,
        prefs,
        anti,
        arrays,
        spot_ok,
        order,
        deadline=deadline,
        victims=evictable,
        budgets=budgets,
        pricing=pricing,
        scorer=policy.scorer,
    )
    skipped |= {i for i in best.skipped if i not in best.placed}
    stats = Stats(engine="greedy", status="FEASIBLE", seed=policy.seed, deterministic=True)
    stats.greedy_objective = float(objective(best, plans))
    stats.objective = stats.greedy_objective
    stats.bound = _relaxation(plans, candidates, arrays, evictable)
    stats.bound_source = "relaxation"
    # CP-SAT's answer must also leave time for the checker.
    cpsat_deadline = deadline - (CHECK_PER_REPLICA_S * considered if policy.verify else 0.0)
    # The LP bound costs ~0.05 s on 1,000 nodes and ~0.6 s on 10,000: worth it when CP-SAT will run, not on
    # the greedy fast path, and only within a share of CP-SAT's time (it sharpens the gap, nothing more).
    left = cpsat_deadline - time.perf_counter()
    if policy.engine != "greedy" and candidates and left > LP_MIN_LEFT_S:
        from placer.solver.bound import lp_bound

        lp_deadline = time.perf_counter() + LP_SHARE * left
        lp = lp_bound(plans, candidates, arrays, victims=evictable, deadline=lp_deadline)
        if lp is not None and lp < stats.bound:
            stats.bound, stats.bound_source = lp, "lp"

    # 6. CP-SAT
    solve_s = 0.0
    if policy.engine != "greedy" and candidates:
        remaining = cpsat_deadline - time.perf_counter()
        if remaining > 0.05:
            from placer.solver.cpsat import solve

            result = solve(
                plans,
                candidates,
                prefs,
                anti,
                arrays,
                spot_ok,
                best,
                policy,
                deadline=cpsat_deadline,
                victims=evictable,
                budgets=budgets,
                pricing=pricing,
            )
            build_s += result.build_s
            solve_s = result.solve_s
            stats.status = result.status
            stats.model_bound = result.bound
            stats.model_exact = result.exact
            stats.model_variables = result.variables
            stats.model_constraints = result.constraints
            stats.node_classes = result.classes
            # Reproducible unless the wall clock, not the deterministic budget, cut the model short.
            stats.deterministic = (
                policy.reproducible and result.deterministic and result.status != "BUILD_TIMEOUT"
            )
            ours = objective(best, plans)
            theirs = None if result.assignment is None else objective(result.assignment, plans)
            # Lexicographic: placed priority, then less work thrown away by evictions, then preferences,
            # dollars per hour and fragmentation (``improves_secondary``).
            ours_cost = sum(v.cost for v in evictable if v.id in best.evictions)
            cheaper = result.eviction_cost < ours_cost - 1e-6
            same_cost = abs(result.eviction_cost - ours_cost) <= 1e-6
            better_tie = cheaper or (same_cost and result.improves_secondary)
            if theirs is not None and (theirs > ours or (theirs == ours and better_tie)):
                best = result.assignment
                stats.engine = "cpsat"
            # CP-SAT's bound is a bound on the real problem only when its model is exact.
            exact_bound = result.exact and result.bound is not None and stats.bound is not None
            if exact_bound and result.bound < stats.bound:  # type: ignore[operator]
                stats.bound, stats.bound_source = result.bound, "cpsat"
    stats.objective = float(objective(best, plans))
    if stats.bound is not None:
        stats.bound = max(stats.bound, stats.objective)
        stats.gap = 0.0 if stats.bound == 0 else (stats.bound - stats.objective) / stats.bound

    # 7. the Decision
    def answer(assignment: Assignment) -> Decision:
        out = Decision(rejected=list(decision.rejected), pending=list(decision.pending))
        _emit(out, assignment, plans, snap)
        _emit_evictions(out, assignment, snap, now)
        owners = owners_of(assignment, plans)
        ranks = {p.id: job_rank(p.job) for p in plans}
        for plan in plans:
            if plan.idx in assignment.placed:
                continue
            if plan.idx in skipped:
                reasons = [not_considered(policy.time_limit_s)]
            elif plan.idx in unsat:
                reasons = [unsat[plan.idx]]
            else:
                reasons = _budget_reasons(plan, assignment, budgets, plans, pricing, candidates[plan.idx])
                reasons = reasons or pending_reasons(
                    plan, candidates[plan.idx], assignment, plans, snap, owners, ranks
                )
            out.pending.append(PendingJob(job=plan.id, reasons=reasons))
        return out

    final = answer(best)
    if policy.verify and stats.engine == "cpsat":
        from placer.solver.check import check

        violations = check(
            final, [*admitted], cluster, now=now, queues=queues, prices=prices, reservations=reserved_ok
        )
        if violations:  # never trust the solver's own word: greedy's answer stands
            final = answer(greedy_best)
            stats.engine = "greedy"
            stats.status = f"CPSAT_REJECTED_BY_CHECKER: {violations[0].message}"[:300]
            stats.objective = stats.greedy_objective
    decision = final
    decision.pending.sort(key=lambda p: p.job)
    decision.rejected = _merge_rejected(decision.rejected)
    stats.build_s = round(build_s, 6)
    stats.solve_s = round(solve_s, 6)
    stats.wall_s = round(time.perf_counter() - t0, 6)
    decision.stats = stats
    return decision


def probe_fit(
    job: Job, cluster: Cluster, policy: Policy, now: datetime, seconds: float
) -> JobPlacement | None:
    """Where ``job`` alone would go on ``cluster`` at ``now``: one greedy decision, no evictions and no
    re-check, within ``seconds`` (at least 0.05). The fit test of time planning and of preemptibility
    hints, which ask it many times per decision."""
    quick = policy.model_copy(
        update={"engine": "greedy", "time_limit_s": max(0.05, seconds), "preemption": False, "verify": False}
    )
    d = decide([job], cluster, quick, now=now)
    return d.placements[0] if d.placements else None


def _emit_evictions(decision: Decision, assignment: Assignment, snap: Snapshot, now: datetime) -> None:
    from placer.solver.decision import Eviction
    from placer.solver.preempt import lost_gpu_seconds

    for job_id in sorted(assignment.evictions):
        rj = snap.cluster.running_job(job_id)
        decision.preemptions.append(
            Eviction(
                job=job_id,
                for_=sorted(set(assignment.evictions[job_id])),
                grace_period_s=rj.grace_period_s,
                checkpoint=rj.checkpoint_on_preempt,
                expected_work_lost_gpu_s=round(lost_gpu_seconds(rj, now), 3),
                nodes=sorted(
                    {r.node for r in rj.replicas if r.node} | {r.tpu_pod for r in rj.replicas if r.tpu_pod}
                ),
            )
        )


def _emit(decision: Decision, assignment: Assignment, plans: list[JobPlan], snap: Snapshot) -> None:
    for i in sorted(assignment.placed, key=lambda k: plans[k].id):
        plan = plans[i]
        reps: list[ReplicaPlacement] = []
        for r in assignment.placed[i]:
            need = r.unit.need
            if r.pod is not None:
                pod = snap.pods[r.pod].pod
                host = pod.host_index(r.chips[0])
                reps.append(
                    ReplicaPlacement(
                        node=f"{pod.name}/host-{host}",
                        tpu_pod=pod.name,
                        tpu_chips=[list(c) for c in r.chips],
                        cpu_cores=need.cpu,
                        memory_gb=need.mem,
                        storage_gb=need.storage,
                        shm_gb=need.shm,
                        task_group=r.unit.group,
                    )
                )
            else:
                assert r.node is not None
                reps.append(
                    ReplicaPlacement(
                        node=snap.nodes[r.node].name,
                        gpus=list(r.gpus),
                        gpu_milli=r.milli,
                        cpu_cores=need.cpu,
                        memory_gb=need.mem,
                        storage_gb=need.storage,
                        shm_gb=need.shm,
                        task_group=r.unit.group,
                    )
                )
        decision.placements.append(
            JobPlacement(job=plan.id, replicas=reps, priority_class=plan.job.priority_class.value)
        )


def _over_budget(plan: JobPlan, assignment: Assignment, budgets: Budgets, plans: list[JobPlan]) -> bool:
    """Whether the job would take its queue over its GPU budget given what this answer placed and
    evicted."""
    if not budgets.active or not plan.job.total_gpu_milli:
        return False
    room_gpus, room_jobs = remaining_room(plan.job.queue, assignment, budgets, plans, job_rank(plan.job))
    gpus = plan.job.total_gpu_milli / 1000
    return (room_gpus is not None and gpus > room_gpus + 1e-9) or (room_jobs is not None and room_jobs < 1)


def _budget_reasons(
    plan: JobPlan,
    assignment: Assignment,
    budgets: Budgets,
    plans: list[JobPlan],
    pricing: Pricing,
    cands: list[UnitCandidates],
) -> list[Reason]:
    """The budgets a pending job would break given this answer: its queue's GPU budget (``QUEUE_BUDGET``),
    its queue's and its tenant's dollar budgets (``COST_BUDGET``: where greedy tried to put it and what was
    left then, else at its cheapest against what this answer leaves). Empty when none is in the way."""
    if not budgets.active:
        return []
    out: list[Reason] = []
    gpu_only = not budgets.money and plan.idx in assignment.over_budget and plan.job.total_gpu_milli > 0
    if gpu_only or _over_budget(plan, assignment, budgets, plans):
        out.append(queue_budget(plan, assignment, budgets, plans))
    job = plan.job
    if budgets.costs(job.queue, job.tenant):
        tried = assignment.over_budget_cost.get(plan.idx)
        if tried is not None:
            cost, q_room, t_room = tried
        else:
            cost = pricing.cheapest(plan, cands)
            q_room, t_room = remaining_cost_room(job, assignment, budgets, plans, pricing)
        if cost > 0 and q_room is not None and cost > q_room:
            assert job.queue is not None
            out.append(cost_budget("queue", job.queue, budgets.max_cost[job.queue], q_room, cost))
        if cost > 0 and t_room is not None and cost > t_room:
            assert job.tenant is not None
            out.append(cost_budget("tenant", job.tenant, budgets.tenant_max_cost[job.tenant], t_room, cost))
    return out


def _merge_rejected(rejected: list[RejectedJob]) -> list[RejectedJob]:
    """One entry per job id (copies of a duplicated id arrive separately), errors de-duplicated, by id."""
    merged: dict[str, list[dict[str, object]]] = {}
    for r in rejected:
        errs = merged.setdefault(r.job, [])
        errs.extend(e for e in r.errors if e not in errs)
    return [RejectedJob(job=j, errors=e) for j, e in sorted(merged.items())]


def _relaxation(
    plans: list[JobPlan], candidates: dict[int, list[UnitCandidates]], arrays: NodeArrays, victims: list
) -> float:
    from placer.solver.bound import evictable, relaxation_bound

    snap = arrays.snap
    ev_whole, ev_shares, ev_cpu, ev_chips = evictable(arrays, victims)
    pool_of: dict[int, str] = {}
    for p in plans:
        if p.idx in candidates:
            pool_of[p.idx] = "gpu" if p.job.total_gpu_milli else "tpu" if p.job.total_tpu_chips else "cpu"
    gpu = sum(
        len(v.free_gpus)
        + sum(m for m in v.milli_free if 0 < m < 1000) / 1000
        + ev_whole[v.idx]
        + ev_shares[v.idx]
        for v in snap.nodes
        if v.usable
    )
    cpu = sum(max(0.0, v.free_cpu) + ev_cpu[v.idx] for v in snap.nodes if v.usable) / 16.0
    tpu = float(sum(p.free_chips for p in snap.pods)) + sum(ev_chips.values())
    return relaxation_bound(plans, {"gpu": gpu, "cpu": cpu, "tpu": tpu}, pool_of)


def _ineligible(job: Job, batch: set[str], running: set[str], now: datetime) -> Reason | None:
    for dep in job.dependencies:
        if dep.job in batch:
            return Reason(
                code="DEPENDENCY_UNMET",
                message=(
                    f"waits for job {dep.job!r} ({dep.condition.value}) of this batch, which has not run yet"
                ),
                details={"job": dep.job, "condition": dep.condition.value},
            )
        if dep.job in running and dep.condition is not DependencyCondition.START:
            return Reason(
                code="DEPENDENCY_UNMET",
                message=f"waits for running job {dep.job!r} to reach {dep.condition.value}",
                details={"job": dep.job, "condition": dep.condition.value},
            )
    if job.not_before is not None and job.not_before > now:
        return Reason(
            code="NOT_BEFORE",
            message=f"may not start before {job.not_before.isoformat()}",
            details={"not_before": job.not_before.isoformat()},
        )
    return None


def _max_gpus_by_type(snap: Snapshot) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in snap.nodes:
        t = v.node.gpu_type
        if t:
            out[t] = max(out.get(t, 0), v.node.gpu_count)
    return out


def _max_node_gpus(job: Job, by_type: dict[str, int]) -> int:
    types: set[str] = set()
    for g in job.tasks:
        if g.gpu is not None:
            types |= {canonical_gpu_type(t) or t for t in g.gpu.types}
    if not types:
        return max(by_type.values(), default=0)
    return max((by_type.get(t, 0) for t in types), default=0)


def _unsatisfiable_why(
    plan: JobPlan, cands: list[UnitCandidates], snap: Snapshot, spot_ok: bool, arrays: NodeArrays
) -> str | None:
    """Why the job could not run even on the empty cluster, or None when it could."""
    biggest = snap.biggest_node_gpus
    for u in plan.units:
        if (
            u.gpu is not None
            and u.tpu is None
            and not u.split
            and u.need.gpus > biggest
            and not plan.job.may_span_nodes()
        ):
            strategy = plan.job.distributed_strategy
            name = strategy.value if strategy else "unset"
            return (
                f"needs {u.need.gpus} GPUs on one node and the biggest node has {biggest}: distributed "
                f"strategy {name!r} keeps a replica on one node (data_parallel, fsdp, deepspeed, "
                "pipeline_parallel or tensor_parallel may span nodes)"
            )
    for u, c in zip(plan.units, cands, strict=True):
        if u.tpu is not None:
            if not _tpu_possible(u, snap, spot_ok, arrays):
                return f"no TPU pod offers a {u.tpu.type or ''} slice of that shape"
            continue
        n = int(c.static.sum())
        if n == 0:
            return f"no node satisfies the constraints of task group {u.group!r}"
        if u.distinct and n < u.replicas:
            return (
                f"task group {u.group!r} needs {u.replicas} distinct nodes; "
                f"only {n} could ever hold one replica"
            )
    node_count = plan.job.placement.node_count
    if node_count is not None:
        least = max((u.replicas for u in plan.units if u.distinct and u.tpu is None), default=1)
        allowed = node_count.values(max(least, 1) + 10_000)
        if not any(v >= least for v in allowed) and least > 0:
            most = max(allowed, default=0)
            return f"its replicas need {least} distinct nodes and its node count allows at most {most}"
    if plan.scope is not None:
        node_units = [(u, c) for u, c in zip(plan.units, cands, strict=True) if u.tpu is None]
        if node_units and not _scope_possible(plan, node_units, snap, arrays):
            what = {"nvlink_domain": "NVLink domain"}.get(
                plan.scope, plan.scope.replace("nvlink_domain+", "NVLink domain and ")
            )
            return f"no single {what} could ever hold the whole gang"
    return None


def _scope_possible(plan: JobPlan, node_units: list, snap: Snapshot, arrays: NodeArrays) -> bool:  # type: ignore[type-arg]
    assert plan.scope is not None
    codes = arrays.scope_codes(plan.scope)
    any_static = np.zeros(len(snap.nodes), dtype=bool)
    for _, c in node_units:
        any_static |= c.static
    any_static &= codes >= 0
    if not any_static.any():
        return False
    sel = codes[any_static]
    gpus = np.bincount(sel, weights=arrays.cap_gpus[any_static])
    nodes = np.bincount(sel)
    need = sum(u.replicas * u.need.gpus for u, _ in node_units)
    need_nodes = max((u.replicas for u, _ in node_units if u.distinct), default=1)
    return bool(((gpus >= need) & (nodes >= need_nodes)).any())


def _tpu_possible(unit: Unit, snap: Snapshot, spot_ok: bool, arrays: NodeArrays) -> bool:
    assert unit.tpu is not None
    for pv in snap.pods:
        pod = pv.pod
        if not pod_admits(unit, pod, spot_ok):
            continue
        for shape in tpu_shapes(unit.tpu, pod):
            key = ("__tpu_empty__", pv.idx, shape)
            if key not in arrays._static_cache:
                arrays._static_cache[key] = bool(slices_in_pod(pod, shape, ()))  # type: ignore[assignment]
            if arrays._static_cache[key]:
                return True
    return False
