"""Phases 0-1 of :func:`~placer.solver.core.decide`: which jobs of the batch may be considered at all.

0. **admit** — jobs the readers refused, duplicated ids and jobs naming a reservation that does not exist
   in this call are rejected, with structured errors;
1. **eligibility** — jobs waiting for a dependency or a ``not_before`` time stay pending with the reason
   (rule 14 of ``docs/placement-rules.md``); the rest are *eligible*, in job-id order (a batch's order
   never matters), at their escalated class where OJS ML §8.4 escalation applies.

>>> from datetime import UTC, datetime
>>> from placer.solver.jobs.model import Job
>>> from placer.topology import cluster_of, cpu_nodes
>>> a = admit([Job(id="b"), Job(id="a"), Job(id="a")], cluster_of(cpu_nodes(1)), datetime.now(UTC))
>>> [j.id for j in a.eligible], [r.job for r in a.rejected]
(['b'], ['a'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from placer.solver.decision import PendingJob, Reason, RejectedJob
from placer.solver.jobs.model import DependencyCondition, Job, ReadResult
from placer.solver.preempt import escalated
from placer.solver.rules import holds, job_labels
from placer.topology import Cluster

__all__ = ["Admission", "admit", "merge_rejected"]


@dataclass
class Admission:
    """What phases 0-1 decided: ``rejected`` and ``pending`` go into the decision as they are; ``admitted``
    (valid, unique, known reservation) is what the checker judges placements against; ``eligible`` is
    what the engines consider."""

    rejected: list[RejectedJob] = field(default_factory=list)
    pending: list[PendingJob] = field(default_factory=list)
    admitted: list[Job] = field(default_factory=list)
    eligible: list[Job] = field(default_factory=list)


def _apart_unsupported(job: Job) -> str | None:
    """Why the job's anti-affinity on a zone or rack cannot be kept, or None: its own replicas kept apart
    by it (more than one, and its rule matches its own labels: each in a domain of its own, which the
    engines do not model), or TPU work (a slice is not placed node by node)."""
    rules = job.placement.anti_affinity_domains
    if not rules:
        return None
    if any(g.tpu is not None for g in job.tasks):
        return "anti-affinity on a zone or rack is kept for work on nodes only, not for TPU slices"
    if sum(g.count for g in job.tasks) > 1 and any(holds(d.rule, job_labels(job)) for d in rules):
        return (
            "its own replicas would each need a zone or rack of their own (its rule matches its own labels): "
            "not represented; submit them as jobs of one replica each"
        )
    return None


def admit(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    now: datetime,
    reserved_ok: frozenset[str] = frozenset(),
) -> Admission:
    """Phases 0 and 1 for ``jobs`` (see the module docstring)."""
    out = Admission()
    # 0. admit
    valid: list[Job] = []
    seen: dict[str, int] = {}
    for item in jobs:
        if isinstance(item, ReadResult):
            if not item.ok or item.job is None:
                out.rejected.append(RejectedJob(job=item.id, errors=[e.model_dump() for e in item.errors]))
                continue
            item = item.job
        seen[item.id] = seen.get(item.id, 0) + 1
        valid.append(item)
    admitted = out.admitted
    duplicate_reported: set[str] = set()
    for job in valid:
        if seen[job.id] > 1:
            if job.id in duplicate_reported:
                continue
            duplicate_reported.add(job.id)
            out.rejected.append(
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
            out.rejected.append(
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
        elif (why := _apart_unsupported(job)) is not None:
            out.rejected.append(
                RejectedJob(
                    job=job.id,
                    errors=[
                        {"code": "unsupported", "path": "placement.anti_affinity_domains", "message": why}
                    ],
                )
            )
        else:
            admitted.append(job)

    # 1. eligibility
    # Every id the batch names counts: a dependency on a job rejected here (duplicate, unknown
    # reservation, invalid) is unmet too — that job will not run.
    batch_ids = {j.id for j in valid} | {r.job for r in out.rejected}
    # Running ids matter only to dependencies (a one-job decision on a busy cluster need not list them).
    running_ids = {r.job for r in cluster.running_jobs()} if any(j.dependencies for j in admitted) else set()
    eligible: list[Job] = []
    for job in admitted:
        reason = _ineligible(job, batch_ids, running_ids, now)
        if reason is not None:
            out.pending.append(PendingJob(job=job.id, reasons=[reason]))
        else:
            eligible.append(job)

    # The batch's order must not matter: plans are built in job-id order. Jobs count at their escalated
    # class where OJS ML §8.4 escalation applies.
    out.eligible = sorted((escalated(j, now) for j in eligible), key=lambda j: j.id)
    return out


def merge_rejected(rejected: list[RejectedJob]) -> list[RejectedJob]:
    """One entry per job id (copies of a duplicated id arrive separately), errors de-duplicated, by id."""
    merged: dict[str, list[dict[str, object]]] = {}
    for r in rejected:
        errs = merged.setdefault(r.job, [])
        errs.extend(e for e in r.errors if e not in errs)
    return [RejectedJob(job=j, errors=e) for j, e in sorted(merged.items())]


def _ineligible(job: Job, batch: set[str], running: set[str], now: datetime) -> Reason | None:
    if job.gates:
        return Reason(
            code="SCHEDULING_GATED",
            message=f"not schedulable until its scheduling gates are removed: {', '.join(job.gates)}",
            details={"gates": list(job.gates)},
        )
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
