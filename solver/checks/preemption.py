"""Preemption rules: an eviction is legal only for strictly higher-priority work that uses its room.

Independent of the solver (it re-derives priorities and preemptibility from the inputs, OJS ML §8):

* ``eviction-forbidden`` — the evicted job is ``reserved``, or not preemptible (its explicit flag, else
  the class default: only ``spot`` is preemptible);
* ``eviction-priority`` — a job the eviction is "for" is not placed by this decision, or is not of strictly
  higher priority (class ``reserved`` > ``on-demand`` > ``spot``, then numeric priority; a ``spot`` job
  whose escalation time has passed counts as its target class, §8.4);
* ``eviction-unused`` — none of the jobs it is "for" has a replica on a node or TPU pod the evicted job
  held: the eviction made room nobody uses.

>>> rank_of("reserved", 0) > rank_of("on-demand", 50) > rank_of("spot", 99)
True
"""

from __future__ import annotations

from collections.abc import Iterator

from solver.checks.context import Context
from solver.checks.violation import Violation
from solver.jobs.model import Job
from topology import Cluster

_CLASS = {"spot": 0, "on-demand": 1, "reserved": 2}


def rank_of(priority_class: str, priority: int) -> tuple[int, int]:
    """Sortable priority: class first, then numeric priority."""
    return (_CLASS.get(priority_class, 0), priority)


def _job_rank(job: Job, ctx: Context) -> tuple[int, int]:
    cls = job.priority_class.value
    esc = job.escalation
    if (
        cls == "spot"
        and esc.enabled
        and esc.target_class is not None
        and job.submit_time is not None
        and (ctx.now - job.submit_time).total_seconds() > esc.after_s
    ):
        cls = esc.target_class.value
    return rank_of(cls, job.priority)


def check_preemption(ctx: Context, before: Cluster) -> Iterator[Violation]:
    """Every eviction of ``ctx.decision`` against the running jobs of ``before`` (the cluster as given)."""
    running = {rj.job: rj for rj in before.running_jobs()}
    placed = {p.job: (p, job) for p, job in ctx.placed}
    for e in ctx.decision.preemptions:
        rj = running.get(e.job)
        if rj is None:
            continue  # reported by the accounting rule
        preemptible = rj.priority_class != "reserved" and (
            rj.preemptible if rj.preemptible is not None else rj.priority_class == "spot"
        )
        if not preemptible:
            yield Violation(
                "eviction-forbidden",
                e.job,
                f"a {rj.priority_class} job that is not preemptible is evicted",
            )
        victim = rank_of(rj.priority_class, rj.priority)
        if not e.for_:
            yield Violation("eviction-priority", e.job, "the eviction names no job it makes room for")
        for j in e.for_:
            if j not in placed:
                yield Violation(
                    "eviction-priority", e.job, f"it is evicted for {j}, which this decision does not place"
                )
            elif _job_rank(placed[j][1], ctx) <= victim:
                yield Violation(
                    "eviction-priority",
                    e.job,
                    f"it is evicted for {j}, which does not have strictly higher priority",
                )
        held = {r.node for r in rj.replicas if r.node} | {r.tpu_pod for r in rj.replicas if r.tpu_pod}
        uses = any(
            (r.tpu_pod if r.tpu_pod else r.node) in held
            for j in e.for_
            if j in placed
            for r in placed[j][0].replicas
        )
        if e.for_ and not uses:
            yield Violation(
                "eviction-unused",
                e.job,
                "none of the jobs it is evicted for runs where it ran: the eviction frees room nobody uses",
            )
