"""Rules 14 and 15: dependencies and start times are met, and reservations exist.

Why: Flux RFC 26 and SSS dependencies say when a job may start; a dependency naming a job of this batch
is unmet (that job has not run yet, whatever this decision does with it); one naming a running job is
met only for condition ``start`` (RFC 26 ``after``: the other job has started; ``afterok``/``afterany``
need it finished); one naming neither is taken as met (it finished earlier: a backend submits what
became eligible). A job whose ``not_before`` lies after ``now`` may not start, nor one that still has
scheduling gates (Kubernetes ``spec.schedulingGates``). OJS ML §8.3: a job with
``ext_ml_reservation_id`` "MUST NOT [be dispatched] to a worker outside the reserved capacity pool", so
without that reservation declared to the checker it may not be placed at all.

>>> from datetime import UTC, datetime
>>> from placer.solver.jobs.model import Dependency, Job
>>> from placer.topology import cluster_of, cpu_nodes
>>> from placer.solver.checks.context import build_context
>>> from placer.solver.decision import Decision
>>> a, b = Job(id="a"), Job(id="b", dependencies=[Dependency(job="a")])
>>> ctx = build_context(Decision(), [a, b], cluster_of(cpu_nodes(1)), now=datetime(2025, 1, 1, tzinfo=UTC))
>>> [v.rule for v in check_timing(ctx, b)]
['dependency']
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC

from placer.solver.checks.context import Context
from placer.solver.checks.violation import Violation
from placer.solver.jobs.model import DependencyCondition, Job

__all__ = ["check_timing"]


def check_timing(ctx: Context, job: Job) -> Iterator[Violation]:
    """Rules 14 and 15 for one placed job."""
    for dep in job.dependencies:
        cond = dep.condition.value
        if dep.job in ctx.jobs:
            yield Violation(
                "dependency",
                job.id,
                f"the job depends on {dep.job} ({dep.scheme or cond}), which is in this batch and has "
                "not run yet",
            )
        elif (
            ctx.running_job(dep.job) is not None or dep.job in ctx.evicted
        ) and dep.condition is not DependencyCondition.START:
            yield Violation(
                "dependency",
                job.id,
                f"the job depends on {dep.job} ({dep.scheme or cond}), which is still running",
            )
    if job.gates:
        yield Violation(
            "gated",
            job.id,
            f"the job still has scheduling gates ({', '.join(job.gates)}): it may not run anywhere yet",
        )
    now = ctx.now if ctx.now.tzinfo is not None else ctx.now.replace(tzinfo=UTC)
    if job.not_before is not None and job.not_before > now:
        yield Violation(
            "not-before",
            job.id,
            f"the job may not start before {job.not_before.isoformat()}; now is {now.isoformat()}",
        )
    if job.reservation is not None and job.reservation.id not in ctx.reservations:
        yield Violation(
            "reservation",
            job.id,
            f"the job runs under reservation {job.reservation.id!r}, which the decision input does "
            "not declare",
        )
