"""Rule 20, throttles and group limits: at most ``max_running`` jobs of a group run at once, and together
they hold at most ``max_gpus`` GPUs (a Slurm job array's ``%N``, ``Job.throttle``; a Slurm QOS's
``GrpJobs`` and ``GrpTRES=gres/gpu``, per user and per account, ``Job.limits``). Re-derived from the
inputs, independently of the solver.

After the decision a group holds its running jobs (``RunningJob.throttle_group``,
``RunningJob.limit_groups``) that the decision does not evict, plus its placed jobs. Each limit is the
smallest the input's jobs of the group state. As with budgets (rule 17), the rule is broken only by a
decision that *places* a job of a group that ends over a limit: running jobs alone over it (the limit was
lowered) are not the decision's doing.

A planned start (a hold of kind ``plan`` or ``workflow``, rule 18) of a job of a group counts too: at its
``start``, the group's running jobs not evicted and not yet at their ``expected_end``, its placements not
yet at their end (``now`` + duration; never without one) and its plans alive then (its own included)
number at most the job limit and hold at most the GPU limit (a plan holds its job's GPUs).

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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from placer.solver.checks.budgets import _gpus
from placer.solver.checks.plans import PLAN_KINDS
from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster, RunningJob

__all__ = ["check_throttles"]


@dataclass
class _Group:
    """One group's limits (the smallest stated; None: no such limit) and its members among the jobs."""

    jobs: int | None = None
    gpus: float | None = None
    members: set[str] = field(default_factory=set)

    def over(self, count: int, gpus: float) -> bool:
        return (self.jobs is not None and count > self.jobs) or (
            self.gpus is not None and gpus > self.gpus + 1e-9
        )

    def limits(self) -> str:
        parts = ([f"at most {self.jobs} running"] if self.jobs is not None else []) + (
            [f"at most {self.gpus:g} GPUs"] if self.gpus is not None else []
        )
        return " and ".join(parts)


def _smaller(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _groups(jobs: Iterable[Job]) -> dict[str, _Group]:
    out: dict[str, _Group] = {}
    for job in jobs:
        stated: list[tuple[str, int | None, float | None]] = []
        if job.throttle is not None:
            stated.append((job.throttle.group, job.throttle.max_running, None))
        stated += [(lim.group, lim.max_running, lim.max_gpus) for lim in job.limits]
        for g, most, gpus in stated:
            grp = out.setdefault(g, _Group())
            grp.jobs = _smaller(grp.jobs, most)  # type: ignore[assignment]
            grp.gpus = _smaller(grp.gpus, gpus)
            grp.members.add(job.id)
    return out


def _demand(job: Job) -> float:
    """The GPUs a job asks for (its plan holds them): per task group, replicas x GPUs, shares as
    fractions."""
    total = 0.0
    for t in job.tasks:
        if t.gpu is None:
            continue
        per = t.gpu.count if t.gpu.share_milli is None else t.gpu.share_milli / 1000
        total += t.count * per
    return total


def check_throttles(
    decision: Decision, jobs: Iterable[Job], cluster: Cluster, now: datetime | None = None
) -> Iterator[Violation]:
    """A ``throttle`` violation per group the decision places jobs of and leaves over a limit, named on
    the group's last placed job in decision order; and one per planned start of a group's job at which
    the group is over a limit. ``now`` (default: ``decision.now``, else the current time) dates the
    placements' ends."""
    by_id = {job.id: job for job in jobs}
    # A job the decision rejects states no limit: it is not in the queue (the engines read the admitted
    # jobs' groups only). This rule takes the rejections as the decision states them; that a rejection is
    # one the readers or admission make is not re-derived here.
    rejected = {r.job for r in decision.rejected}
    groups = _groups(j for j in by_id.values() if j.id not in rejected)
    if not groups:
        return
    evicted = {e.job for e in decision.preemptions}
    staying: dict[str, list[RunningJob]] = {}
    for rj in cluster.running_jobs():
        if rj.job in evicted:
            continue
        for g in {rj.throttle_group, *rj.limit_groups} - {None}:
            if g in groups:
                staying.setdefault(g, []).append(rj)
    placed: dict[str, list[tuple[str, float]]] = {}
    for p in decision.placements:
        gpus = _gpus(p.replicas)
        for g, grp in groups.items():
            if p.job in grp.members:
                placed.setdefault(g, []).append((p.job, gpus))
    for g, started in placed.items():
        run = staying.get(g, [])
        held, adds = sum(_gpus(rj.replicas) for rj in run), sum(x for _, x in started)
        if groups[g].over(len(run) + len(started), held + adds):
            ids = [j for j, _ in started]
            if groups[g].gpus is None:  # a throttle: jobs only
                what = (
                    f"throttle group {g} lets {groups[g].jobs} run at once: {len(run)} run and the decision "
                    f"starts {len(ids)} ({', '.join(ids)})"
                )
            else:
                what = (
                    f"group {g} lets {groups[g].limits()} at once: {len(run)} run holding {held:g} GPUs and "
                    f"the decision starts {len(ids)} ({', '.join(ids)}) holding {adds:g}"
                )
            yield Violation("throttle", ids[-1], what)
    yield from _planned(decision, by_id, groups, staying, now or decision.now or datetime.now(UTC))


def _planned(
    decision: Decision,
    jobs: dict[str, Job],
    groups: dict[str, _Group],
    staying: dict[str, list[RunningJob]],
    now: datetime,
) -> Iterator[Violation]:
    """Planned starts of grouped jobs at which one of their groups is over a limit."""
    plans = [h for h in decision.reservations if h.kind in PLAN_KINDS and h.job is not None and h.job in jobs]
    plans = [h for h in plans if any(h.job in grp.members for grp in groups.values())]
    if not plans:
        return
    # group -> (start, end, GPUs) of each member alive at some time
    spans: dict[str, list[tuple[datetime, datetime | None, float]]] = {}
    for g, run in staying.items():
        spans[g] = [(now, rj.expected_end, _gpus(rj.replicas)) for rj in run]
    for p in decision.placements:
        d = jobs[p.job].duration_s if p.job in jobs else None
        gpus = _gpus(p.replicas)
        for g, grp in groups.items():
            if p.job in grp.members:
                spans.setdefault(g, []).append((now, None if d is None else now + timedelta(seconds=d), gpus))
    for h in plans:
        for g, grp in groups.items():
            if h.job in grp.members and h.start is not None:  # (a planned start always has one)
                spans.setdefault(g, []).append((h.start, h.end, _demand(jobs[h.job])))
    for h in plans:
        at = h.start
        if at is None:
            continue
        for g, grp in groups.items():
            if h.job not in grp.members:
                continue
            alive = [x for s, e, x in spans[g] if s <= at and (e is None or e > at)]
            if grp.over(len(alive), sum(alive)):
                yield Violation(
                    "throttle",
                    h.job or "?",
                    f"planned to start at {at.isoformat()} while group {g} ({grp.limits()} at once) has "
                    f"{len(alive)} running then holding {sum(alive):g} GPUs, this plan included",
                )
