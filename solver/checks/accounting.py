"""Rule 1, accounting: every input job is answered exactly once, and evictions name running jobs.

Why first: a backend maps the decision back to its queue by job id; a job missing from the answer would
wait forever, one answered twice would run twice, and an id the batch never had is a solver bug.

>>> from placer.solver.decision import Decision, PendingJob
>>> from placer.solver.jobs.model import Job
>>> from placer.topology import cluster_of, cpu_nodes
>>> from placer.solver.checks.context import build_context
>>> ctx = build_context(Decision(), [Job(id="a")], cluster_of(cpu_nodes(1)))
>>> [v.rule for v in check_accounting(ctx)]
['accounting']
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from placer.solver.checks.context import Context
from placer.solver.checks.violation import Violation

__all__ = ["check_accounting"]


def check_accounting(ctx: Context, rejected_ids: Collection[str] = ()) -> Iterator[Violation]:
    """Each job of ``ctx.jobs`` once across placements, pending and rejected; ``rejected_ids`` (jobs the
    readers refused) must be in ``rejected``; nothing else may appear; evictions name running jobs."""
    d = ctx.decision
    seen: dict[str, list[str]] = {}
    for section, entries in (("placements", d.placements), ("pending", d.pending), ("rejected", d.rejected)):
        for entry in entries:
            seen.setdefault(entry.job, []).append(section)
    refused = set(rejected_ids)
    for job_id in ctx.jobs:
        where = seen.get(job_id, [])
        if not where:
            yield Violation(
                "accounting", job_id, "the job is in the input but neither placed, pending nor rejected"
            )
        elif len(where) > 1:
            yield Violation(
                "accounting", job_id, f"the job is answered {len(where)} times: {', '.join(where)}"
            )
    for job_id in sorted(refused - set(ctx.jobs)):
        where = seen.get(job_id, [])
        if where != ["rejected"]:
            got = ", ".join(where) or "nowhere"
            yield Violation(
                "accounting", job_id, f"the job failed validation, so it belongs in rejected (found: {got})"
            )
    for job_id, where in seen.items():
        if job_id not in ctx.jobs and job_id not in refused:
            yield Violation(
                "accounting", job_id, f"the decision names a job that is not in the input ({where[0]})"
            )
    for p in d.placements:
        if ctx.running_job(p.job) is not None or p.job in ctx.evicted:
            yield Violation("accounting", p.job, "the job is placed but already running on the cluster")
    running = {rj.job for rj in ctx.cluster.running_jobs()} | ctx.evicted
    counted: set[str] = set()
    for e in d.preemptions:
        if e.job not in running:
            yield Violation("eviction", e.job, "the decision evicts a job that is not running on the cluster")
        elif e.job in counted:
            yield Violation("eviction", e.job, "the decision evicts the same running job twice")
        counted.add(e.job)
