"""Phase 8 of :func:`~placer.solver.core.decide`: an engine's assignment becomes a :class:`Decision`.

Placements down to GPU indices and TPU chips, evictions with their grace period and the work they lose,
and for every job left pending *why*: not considered in time, unsatisfiable, over a budget, or the
capacity reasons of :mod:`placer.solver.explain` — computed from the same candidates the engines used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime

from placer.solver.admission import Admission
from placer.solver.apart import kept_apart
from placer.solver.assignment import Assignment
from placer.solver.budgets import (
    Budgets,
    job_groups,
    remaining_cohort_room,
    remaining_cost_room,
    remaining_room,
)
from placer.solver.candidates import UnitCandidates
from placer.solver.decision import (
    Decision,
    Eviction,
    JobPlacement,
    PendingJob,
    Reason,
    RejectedJob,
    ReplicaPlacement,
)
from placer.solver.demand import JobPlan
from placer.solver.explain import (
    affinity_reason,
    cost_budget,
    group_gpus,
    kept_apart_reason,
    licenses,
    not_considered,
    owners_of,
    pending_reasons,
    queue_budget,
    queue_flavors,
    queue_resources,
    spread_reason,
    throttle,
)
from placer.solver.objective.cost import Pricing
from placer.solver.preempt import evict_rank, job_rank, lost_gpu_seconds
from placer.solver.problem import Problem
from placer.solver.skew import spread_pairs
from placer.solver.snapshot import Snapshot

__all__ = ["answer", "emit_placements"]


def answer(problem: Problem, assignment: Assignment, admission: Admission, time_limit_s: float) -> Decision:
    """The decision ``assignment`` stands for (``stats`` are the caller's)."""
    plans = problem.plans
    out = Decision(rejected=list(admission.rejected), pending=list(admission.pending))
    emit_placements(out, assignment, plans, problem.snap)
    _emit_evictions(out, assignment, problem.snap, problem.now)
    owners = owners_of(assignment, plans)
    ranks = _Ranks({p.id: p for p in plans})
    memo: dict = {}  # pending jobs that could use the same nodes share who took them
    grouped = problem.budgets.throttle_max or problem.budgets.group_gpu_max
    started = _started_by_group(assignment, plans) if grouped else ({}, {})
    skipped: Reason | None = None  # one reason object for every job the deadline left unexamined
    apart = kept_apart(plans, problem.candidates)
    spread = spread_pairs(plans, problem.candidates)
    # Pod-affinity groups a placed job starts (at most one a group: apart.one_of_each), by group.
    starters = {plans[q].starts: plans[q].id for q in assignment.placed if plans[q].starts is not None}
    for plan in plans:
        if plan.idx in assignment.placed:
            continue
        if plan.idx in problem.rejected:
            out.rejected.append(RejectedJob(job=plan.id, errors=[problem.rejected[plan.idx]]))
            continue
        if plan.idx in problem.skipped:
            skipped = skipped or not_considered(time_limit_s)
            reasons = [skipped]
        elif plan.idx in problem.unsat:
            reasons = [problem.unsat[plan.idx]]
        else:
            cands = problem.candidates[plan.idx]
            partners = sorted(plans[q].id for q in apart.get(plan.idx, ()) if q in assignment.placed)
            reasons = [kept_apart_reason(plan, partners)] if partners else []
            counted = sorted(plans[q].id for q in spread.get(plan.idx, ()) if q in assignment.placed)
            reasons = reasons or ([spread_reason(counted, [])] if counted else [])
            starter = starters.get(plan.starts) if plan.starts is not None else None
            reasons = reasons or ([affinity_reason(plan.job, starter, plans)] if starter else [])
            reasons = reasons or _budget_reasons(
                plan, assignment, problem.budgets, plans, problem.pricing, cands, started, problem.snap
            )
            reasons = reasons or pending_reasons(
                plan,
                cands,
                assignment,
                plans,
                problem.snap,
                owners,
                ranks,
                memo,
                problem.anti.get(plan.idx),
                problem.affinity.get(plan.idx),
                problem.spread.get(plan.idx),
            )
        notes = list(plan.notes)
        if not plan.job.may_preempt and problem.victims:
            notes.append(NO_PREEMPT_NOTE)
        out.pending.append(PendingJob(job=plan.id, reasons=reasons, notes=notes))
    return out


#: The note of a waiting job that does not preempt, where running jobs could have been evicted for others.
NO_PREEMPT_NOTE = (
    "does not preempt (preemptionPolicy: Never): it waits for free room and evicts no running job"
)


class _Ranks(Mapping[str, int]):
    """Job id -> priority rank, each computed when first read: pending reasons read the ranks of the few
    jobs that took a waiting job's nodes, and ranking a batch of thousands up front cost scenario L a
    twentieth of a 0.2 s limit."""

    def __init__(self, plans: dict[str, JobPlan]) -> None:
        self._plans = plans
        self._ranks: dict[str, int] = {}

    def __getitem__(self, job_id: str) -> int:
        hit = self._ranks.get(job_id)
        if hit is None:
            hit = self._ranks[job_id] = job_rank(self._plans[job_id].job)
        return hit

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._plans

    def __iter__(self) -> Iterator[str]:
        return iter(self._plans)

    def __len__(self) -> int:
        return len(self._plans)


def _emit_evictions(decision: Decision, assignment: Assignment, snap: Snapshot, now: datetime) -> None:
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


def emit_placements(decision: Decision, assignment: Assignment, plans: list[JobPlan], snap: Snapshot) -> None:
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
                        extra=dict(need.extra),
                        task_group=r.unit.group,
                    )
                )
        decision.placements.append(
            JobPlacement(
                job=plan.id,
                replicas=reps,
                priority_class=plan.job.priority_class.value,
                notes=[*plan.notes, *_range_notes(plan)],
            )
        )


def _range_notes(plan: JobPlan) -> list[str]:
    """For each task group with a count range (Flux ``count: {min, max}``, Kueue partial admission) that
    runs fewer replicas than its range allows, how many (the count greedy resolved, which CP-SAT keeps): a
    backend scales the job to that count."""
    out = []
    resolved = {u.group: u.replicas for u in plan.units}
    for g in plan.job.tasks:
        r = g.count_range
        n = resolved.get(g.name, g.count)
        if r is not None and (r.max is None or n < r.max):
            upto = "" if r.max is None else str(r.max)
            out.append(
                f"task group {g.name!r} runs {n} replicas of its range {r.min}..{upto}, the most that fit"
            )
    return out


def _over_budget(plan: JobPlan, assignment: Assignment, budgets: Budgets, plans: list[JobPlan]) -> bool:
    """Whether the job would take its queue over its GPU budget given what this answer placed and
    evicted."""
    if not budgets.active or not plan.job.total_gpu_milli:
        return False
    rank = evict_rank(plan.job)
    room_gpus, room_jobs = remaining_room(plan.job.queue, assignment, budgets, plans, rank)
    gpus = plan.job.total_gpu_milli / 1000
    cohort = remaining_cohort_room(plan.job.queue, assignment, budgets, plans, rank)
    return (
        (room_gpus is not None and gpus > room_gpus + 1e-9)
        or (room_jobs is not None and room_jobs < 1)
        or (cohort is not None and gpus > cohort + 1e-9)
    )


def _started_by_group(
    assignment: Assignment, plans: list[JobPlan]
) -> tuple[dict[str, int], dict[str, float]]:
    """Jobs, and GPUs, the answer starts per group (throttle, group limits; counted once, not per waiting
    job)."""
    jobs: dict[str, int] = {}
    gpus: dict[str, float] = {}
    for i in assignment.placed:
        job = plans[i].job
        for g, _, _ in job_groups(job):
            jobs[g] = jobs.get(g, 0) + 1
            gpus[g] = gpus.get(g, 0.0) + job.total_gpu_milli / 1000
    return jobs, gpus


def _budget_reasons(
    plan: JobPlan,
    assignment: Assignment,
    budgets: Budgets,
    plans: list[JobPlan],
    pricing: Pricing,
    cands: list[UnitCandidates],
    started: tuple[Mapping[str, int], Mapping[str, float]],
    snap: Snapshot,
) -> list[Reason]:
    """The budgets a pending job would break given this answer: its throttle group (``THROTTLE``), its
    queue's GPU budget (``QUEUE_BUDGET``),
    its queue's and its tenant's dollar budgets (``COST_BUDGET``: where greedy tried to put it and what was
    left then, else at its cheapest against what this answer leaves). Empty when none is in the way."""
    if not budgets.active:
        return []
    out: list[Reason] = []
    for name, room in budgets.license_rooms(plan.job).items():
        taken = sum(plans[i].job.licenses.get(name, 0) for i in assignment.placed)
        if taken + plan.job.licenses[name] > room:
            held = budgets.license_used.get(name, 0)
            total = budgets.license_max[name] if name in budgets.license_defined else None
            out.append(licenses(name, total, held, taken, plan.job.licenses[name]))
    jobs, gpus = started
    for group, room in budgets.throttle_rooms(plan.job).items():
        if jobs.get(group, 0) >= room:
            running = budgets.throttle_used.get(group, 0)
            out.append(throttle(group, budgets.throttle_max[group], running, jobs.get(group, 0)))
    need = plan.job.total_gpu_milli / 1000
    for group, gpu_room in budgets.gpu_rooms(plan.job).items():
        if gpus.get(group, 0.0) + need > gpu_room + 1e-9:
            held_gpus = budgets.group_gpu_used.get(group, 0.0)
            out.append(group_gpus(group, budgets.group_gpu_max[group], held_gpus, gpus.get(group, 0.0), need))
    resources = queue_resources(plan, assignment, budgets, plans) if budgets.resources else None
    flavors = (
        queue_flavors(plan, assignment, budgets, plans, cands, snap)
        if budgets.flavored(plan.job.queue)
        else None
    )
    over_gpus = _over_budget(plan, assignment, budgets, plans)
    if (
        flavors is not None
        and flavors.details.get("cohort_only")
        and (over_gpus if flavors.details.get("resource") == "gpus" else resources is not None)
    ):
        flavors = None  # the cohort's totals per flavor, and its total over them says it already
    # A GPU flavor's reason before the queue's GPU budget (as it was alone); a CPU, memory or pods
    # flavor's after the queue's own budget of that resource, which is the wider reason when both hold.
    gpu_flavor = flavors is not None and flavors.details.get("resource") == "gpus"
    if flavors is not None and gpu_flavor:
        out.append(flavors)
    gpu_only = (
        not budgets.money
        and resources is None
        and flavors is None
        and plan.idx in assignment.over_budget
        and plan.job.total_gpu_milli > 0
    )
    if gpu_only or over_gpus:
        out.append(queue_budget(plan, assignment, budgets, plans))
    if resources is not None:
        out.append(resources)
    if flavors is not None and not gpu_flavor:
        out.append(flavors)
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
