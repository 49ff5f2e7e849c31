"""Rule 18, plans (conservative backfill): every planned start is sound, and nothing delays it.

A hold of kind ``plan`` or ``workflow`` says "this pending job starts at ``start`` on these resources".
Re-derived from the inputs, independently of the planner (:mod:`placer.solver.backfill`):

* ``plan-job``: the hold is for a job of the batch that is pending (not placed, not rejected), at most
  one hold per job;
* ``plan-time``: ``start`` is after ``now`` and not before the job's ``not_before``; ``end`` is ``start``
  plus the job's duration (none without one); every dependency is met by then — a running job's
  ``expected_end``, a placed job's ``now + duration``, a planned job's ``end`` (``start`` for the
  ``start`` condition); a ``failure`` dependency cannot be planned;
* ``plan-placement``: the held replicas are a valid placement of the job (rules 2-13, checked by this
  checker on the cluster without running work, so only the job's own constraints count);
* ``plan-capacity``: at every planned start, what is running then (running jobs not evicted and not yet
  at their ``expected_end``, placements not yet at their end) and every plan alive then fit the cluster
  together: no GPU or TPU chip twice, no CPU or memory over-committed. A placement that breaks this is
  lower-priority work delaying a planned start, which conservative backfill forbids.

Why check at planned starts only: work starts only now (rules 5-6 check that) or at a planned start, so
use peaks there.

>>> from placer.solver.decision import Decision
>>> from placer.topology import cluster_of, cpu_nodes
>>> list(check_plans(Decision(), {}, cluster_of(cpu_nodes(1)), None))
[]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision, Hold, JobPlacement, as_running
from placer.solver.jobs.model import DependencyCondition, Job
from placer.topology import Cluster, RunningJob, TopologyError

__all__ = ["PLAN_KINDS", "check_plans"]

PLAN_KINDS = ("plan", "workflow")


def _end(start: datetime, job: Job) -> datetime | None:
    return None if job.duration_s is None else start + timedelta(seconds=job.duration_s)


def check_plans(
    decision: Decision, jobs: Mapping[str, Job], cluster: Cluster, now: datetime | None
) -> Iterator[Violation]:
    """Violations of rule 18 (see the module docstring)."""
    now = now or datetime.now(UTC)
    holds = [h for h in decision.reservations if h.kind in PLAN_KINDS]
    if not holds:
        return
    pending = {p.job for p in decision.pending}
    placed = {p.job: p for p in decision.placements}
    held: dict[str, Hold] = {}
    rejected = frozenset(r.job for r in decision.rejected)
    for h in holds:
        job = jobs.get(h.job or "")
        if job is None or h.job not in pending or h.job in held:
            why = "twice" if h.job in held else "for a job that is not pending in this decision"
            yield Violation("plan-job", h.job or "?", f"a plan is held {why}")
            continue
        held[job.id] = h
    for job_id, h in held.items():
        yield from _timing(jobs[job_id], h, jobs, cluster, placed, held, now, rejected)
        yield from _placement(jobs[job_id], h, cluster)
    yield from _capacity(decision, jobs, cluster, held, now)


def _timing(
    job: Job,
    h: Hold,
    jobs: Mapping[str, Job],
    cluster: Cluster,
    placed: Mapping[str, JobPlacement],
    held: Mapping[str, Hold],
    now: datetime,
    rejected: frozenset[str] = frozenset(),
) -> Iterator[Violation]:
    if h.start is None or h.start <= now:
        yield Violation("plan-time", job.id, f"planned start {h.start} is not after now ({now.isoformat()})")
        return
    if job.gates:
        yield Violation("gated", job.id, "a job with scheduling gates has no start time to plan")
    if job.not_before is not None and h.start < job.not_before:
        yield Violation("plan-time", job.id, f"planned start {h.start} is before not_before {job.not_before}")
    if h.end != _end(h.start, job):
        yield Violation(
            "plan-time", job.id, f"plan ends at {h.end}, not start + duration ({job.duration_s} s)"
        )
    running = {r.job: r for r in cluster.running_jobs()}
    for dep in job.dependencies:
        ready: datetime | None
        if dep.condition is DependencyCondition.FAILURE:
            yield Violation("plan-time", job.id, f"waits for {dep.job!r} to fail, which cannot be planned")
            continue
        start_only = dep.condition is DependencyCondition.START
        if dep.job in running:
            ready = now if start_only else running[dep.job].expected_end
        elif dep.job in placed:
            ready = now if start_only else _end(now, jobs[dep.job])
        elif dep.job in held:
            other = held[dep.job]
            ready = other.start if start_only else other.end
        elif dep.job in jobs or dep.job in rejected:
            yield Violation("plan-time", job.id, f"waits for {dep.job!r}, which has no place and no plan")
            continue
        else:
            continue  # neither running nor in the batch: it already ran
        if ready is None or h.start < ready:
            yield Violation(
                "plan-time",
                job.id,
                f"planned start {h.start} is before its dependency {dep.job!r} is met ({ready})",
            )


def _placement(job: Job, h: Hold, cluster: Cluster) -> Iterator[Violation]:
    from placer.solver.checks import check

    # What the job needs of running work (its dependencies, the jobs its required pod affinity joins, the
    # running jobs its topology spread counts) is judged when the plan starts; here only its own
    # constraints, on the cluster without running work.
    placement = job.placement.model_copy(update={"affinity_required": [], "spread_required": []})
    probe = job.model_copy(update={"dependencies": [], "not_before": None, "placement": placement})
    as_placed = Decision(placements=[JobPlacement(job=job.id, replicas=h.replicas)])
    for v in check(as_placed, [probe], cluster.without_allocations()):
        yield Violation(
            "plan-placement", job.id, f"the held resources are not a valid placement: {v}", v.node
        )


def _capacity(
    decision: Decision, jobs: Mapping[str, Job], cluster: Cluster, held: Mapping[str, Hold], now: datetime
) -> Iterator[Violation]:
    evicted = {e.job for e in decision.preemptions}
    for t in sorted({h.start for h in held.values() if h.start is not None and h.start > now}):
        gone = [
            r.job
            for r in cluster.running_jobs()
            if r.job in evicted or (r.expected_end and r.expected_end <= t)
        ]
        base = cluster.release(*gone) if gone else cluster
        alive: list[RunningJob] = []
        for p in decision.placements:
            job = jobs.get(p.job)
            end = _end(now, job) if job is not None else None
            if end is None or end > t:
                alive.append(as_running(f"placed:{p.job}", p.replicas))
        for job_id, h in held.items():
            if h.start is not None and h.start <= t and (h.end is None or h.end > t):
                alive.append(as_running(f"plan:{job_id}", h.replicas))
        try:
            base.with_allocations(alive)
        except TopologyError as e:
            starting = sorted(j for j, h in held.items() if h.start == t)
            for job_id in starting:
                yield Violation(
                    "plan-capacity",
                    job_id,
                    f"at its planned start {t.isoformat()} the cluster is over-committed "
                    f"(work started now would delay it, or plans overlap): {e}"[:600],
                )
