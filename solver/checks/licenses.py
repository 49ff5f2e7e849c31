"""Rule 22, cluster-wide licences: the seats of a licence held at once stay within the cluster's pool
(``Inventory.licenses``; Slurm's ``Licenses=``, a job's ``--licenses``). Re-derived from the inputs,
independently of the solver.

After the decision a licence is held by the running jobs (``RunningJob.licenses``) — evicted ones too: a
victim gives its seats back once it has stopped, which is after this decision — plus the placed jobs that
ask for it (``Job.licenses``). A licence the cluster does not define has no seat. As with budgets (rule 17),
the rule is broken only by a decision that *places* a job asking for a licence that ends over its pool:
running jobs alone over it (the pool shrank) are not the decision's doing.

A planned start (a hold of kind ``plan`` or ``workflow``, rule 18) of a job asking for licences counts
too: at its ``start``, the running jobs not yet at their ``expected_end`` (evicted ones are gone by then),
the placements not yet at their end (``now`` + duration; never without one) and the plans alive then (its
own included) hold at most the pool.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import Job
>>> from placer.topology import Inventory, cluster_of, cpu_nodes
>>> cluster = cluster_of(cpu_nodes(2), Inventory(licenses={"matlab": 2}))
>>> jobs = [Job(id=f"m{i}", licenses={"matlab": 1}) for i in range(3)]
>>> on = lambda i, n: JobPlacement(job=f"m{i}", replicas=[ReplicaPlacement(node=n)])
>>> d = Decision(placements=[on(0, "cpu-1"), on(1, "cpu-1"), on(2, "cpu-2")])
>>> [(v.rule, v.job) for v in check_licenses(d, jobs, cluster)]
[('licenses', 'm2')]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

from placer.solver.checks.plans import PLAN_KINDS
from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["check_licenses"]


def check_licenses(
    decision: Decision, jobs: Iterable[Job], cluster: Cluster, now: datetime | None = None
) -> Iterator[Violation]:
    """A ``licenses`` violation per licence the decision's placements leave over its pool, named on the
    last placed job asking for it in decision order; and one per planned start at which a licence the job
    asks for is over its pool. ``now`` (default: ``decision.now``, else the current time) dates the
    placements' ends."""
    by_id = {job.id: job for job in jobs}
    if not any(job.licenses for job in by_id.values()):
        return
    pool = cluster.licenses
    running = cluster.running_jobs()
    held: dict[str, int] = {}
    for rj in running:
        for name, seats in rj.licenses.items():
            held[name] = held.get(name, 0) + seats
    started: dict[str, list[tuple[str, int]]] = {}
    for p in decision.placements:
        job = by_id.get(p.job)
        for name, seats in (job.licenses if job is not None else {}).items():
            started.setdefault(name, []).append((p.job, seats))
    for name, takers in started.items():
        total, have = pool.get(name, 0), held.get(name, 0)
        adds = sum(s for _, s in takers)
        if have + adds > total:
            ids = [j for j, _ in takers]
            yield Violation(
                "licenses",
                ids[-1],
                f"licence {name} has {total} seats: running jobs hold {have} and the decision starts "
                f"{len(ids)} ({', '.join(ids)}) holding {adds}",
            )
    yield from _planned(decision, by_id, cluster, now or decision.now or datetime.now(UTC))


def _planned(
    decision: Decision, jobs: dict[str, Job], cluster: Cluster, now: datetime
) -> Iterator[Violation]:
    """Planned starts of jobs asking for licences at which one of those licences is over its pool."""
    plans = [
        h
        for h in decision.reservations
        if h.kind in PLAN_KINDS and h.job is not None and h.job in jobs and jobs[h.job].licenses and h.start
    ]
    if not plans:
        return
    evicted = {e.job for e in decision.preemptions}
    # (start, end, seats by licence) of everything holding seats at some time from now on
    spans: list[tuple[datetime, datetime | None, dict[str, int]]] = [
        (now, rj.expected_end, rj.licenses)
        for rj in cluster.running_jobs()
        if rj.licenses and rj.job not in evicted
    ]
    for p in decision.placements:
        job = jobs.get(p.job)
        if job is not None and job.licenses:
            end = None if job.duration_s is None else now + timedelta(seconds=job.duration_s)
            spans.append((now, end, job.licenses))
    spans += [(h.start, h.end, jobs[h.job].licenses) for h in plans]  # type: ignore[index, misc]
    pool = cluster.licenses
    for h in plans:
        at = h.start
        assert at is not None and h.job is not None
        for name in jobs[h.job].licenses:
            alive = sum(s.get(name, 0) for b, e, s in spans if b <= at and (e is None or e > at))
            if alive > pool.get(name, 0):
                yield Violation(
                    "licenses",
                    h.job,
                    f"planned to start at {at.isoformat()} while licence {name} ({pool.get(name, 0)} seats) "
                    f"would be held {alive} times then, this plan included",
                )
