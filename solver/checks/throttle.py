"""Rule 20, throttles: at most ``max_running`` jobs of a throttle group run at once (a Slurm job array's
``%N``, ``Job.throttle``). Re-derived from the inputs, independently of the solver.

After the decision a group holds its running jobs (``RunningJob.throttle_group``) that the decision does
not evict, plus its placed jobs. The limit is the smallest ``max_running`` the input's jobs of the group
state. As with budgets (rule 17), the rule is broken only by a decision that *places* a job of a group
that ends over its limit: running jobs alone over it (the limit was lowered) are not the decision's doing.

A planned start (a hold of kind ``plan`` or ``workflow``, rule 18) of a job of a group counts too: at its
``start``, the group's running jobs not evicted and not yet at their ``expected_end``, its placements not
yet at their end (``now`` + duration; never without one) and its plans alive then (its own included)
number at most the limit.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import Job, Throttle
>>> from placer.topology import cluster_of, cpu_nodes
>>> task = lambda i: Job(id=f"6_{i}", throttle=Throttle(group="6", max_running=1))
>>> on = lambda i, n: JobPlacement(job=f"6_{i}", replicas=[ReplicaPlacement(node=n)])
>>> d = Decision(placements=[on(0, "cpu-1"), on(1, "cpu-2")])
>>> [v.rule for v in check_throttles(d, [task(0), task(1)], cluster_of(cpu_nodes(2)))]
['throttle']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta

from placer.solver.checks.plans import PLAN_KINDS
from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["check_throttles"]


def check_throttles(
    decision: Decision, jobs: Iterable[Job], cluster: Cluster, now: datetime | None = None
) -> Iterator[Violation]:
    """A ``throttle`` violation per group the decision places jobs of and leaves over its limit, named on
    the group's last placed job in decision order; and one per planned start of a group's job at which
    the group is over its limit. ``now`` (default: ``decision.now``, else the current time) dates the
    placements' ends."""
    limit: dict[str, int] = {}
    group_of: dict[str, str] = {}
    by_id: dict[str, Job] = {}
    for job in jobs:
        by_id[job.id] = job
        if job.throttle is not None:
            g = job.throttle.group
            limit[g] = min(limit.get(g, job.throttle.max_running), job.throttle.max_running)
            group_of[job.id] = g
    if not limit:
        return
    evicted = {e.job for e in decision.preemptions}
    running: dict[str, int] = {}
    staying = [rj for rj in cluster.running_jobs() if rj.throttle_group in limit and rj.job not in evicted]
    for rj in staying:
        running[rj.throttle_group] = running.get(rj.throttle_group, 0) + 1  # type: ignore[index]
    placed: dict[str, list[str]] = {}
    for p in decision.placements:
        g = group_of.get(p.job)
        if g is not None:
            placed.setdefault(g, []).append(p.job)
    for g, ids in placed.items():
        total = running.get(g, 0) + len(ids)
        if total > limit[g]:
            yield Violation(
                "throttle",
                ids[-1],
                f"throttle group {g} lets {limit[g]} run at once: {running.get(g, 0)} run and the decision "
                f"starts {len(ids)} ({', '.join(ids)})",
            )
    yield from _planned(decision, by_id, group_of, limit, staying, now or decision.now or datetime.now(UTC))


def _planned(
    decision: Decision,
    jobs: dict[str, Job],
    group_of: dict[str, str],
    limit: dict[str, int],
    staying: list,  # type: ignore[type-arg]
    now: datetime,
) -> Iterator[Violation]:
    """Planned starts of throttled jobs at which their group is over its limit."""
    spans: dict[str, list[tuple[datetime, datetime | None]]] = {}  # group -> (start, end) of each member
    for rj in staying:
        spans.setdefault(rj.throttle_group, []).append((now, rj.expected_end))
    for p in decision.placements:
        g = group_of.get(p.job)
        if g is not None:
            d = jobs[p.job].duration_s
            spans.setdefault(g, []).append((now, None if d is None else now + timedelta(seconds=d)))
    plans = [h for h in decision.reservations if h.kind in PLAN_KINDS and h.job in group_of]
    for h in plans:
        spans.setdefault(group_of[h.job], []).append((h.start, h.end))  # type: ignore[index, arg-type]
    for h in plans:
        g = group_of[h.job]  # type: ignore[index]
        at = h.start
        if at is None:
            continue
        alive = sum(1 for s, e in spans[g] if s <= at and (e is None or e > at))
        if alive > limit[g]:
            yield Violation(
                "throttle",
                h.job or "?",
                f"planned to start at {at.isoformat()} while throttle group {g} (at most {limit[g]} at once) "
                f"has {alive} running then, this plan included",
            )
