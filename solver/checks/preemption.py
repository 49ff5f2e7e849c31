"""Preemption rules: an eviction is legal only for strictly higher-priority work that uses its room.

Independent of the solver (it re-derives priorities and preemptibility from the inputs, OJS ML §8):

* ``eviction-forbidden`` — the evicted job is ``reserved``, or not preemptible (its explicit flag, else
  the class default: only ``spot`` is preemptible);
* ``eviction-priority`` — a job the eviction is "for" is not placed by this decision, or is not of strictly
  higher priority (class ``reserved`` > ``on-demand`` > ``spot``, then numeric priority; a ``spot`` job
  whose escalation time has passed counts as its target class, §8.4);
* ``eviction-unused`` — none of the jobs it is "for" has a replica on a node or TPU pod the evicted job
  held: the eviction made room nobody uses;
* ``eviction-non-preempting`` — a job it is "for" does not preempt (``may_preempt`` false: Kubernetes
  ``preemptionPolicy: Never``): such a job waits for free room and never takes a running job's.

And the directives a backend acts on (:func:`check_directives`), recomputed from the running job as given
(its envelope, read by :mod:`placer.solver.running`), never from the engine's code:

* ``eviction-grace`` — ``grace_period_s`` is the job's own (``ext_ml_preemption_grace_period_s``, else 30);
* ``eviction-checkpoint`` — ``checkpoint`` is the job's checkpoint-on-preempt setting;
* ``eviction-nodes`` — ``nodes`` lists exactly the nodes and TPU pods the job holds: a gang is evicted
  whole, and a node left out would keep a rank running;
* ``eviction-failure`` — ``counts_as_failure`` is false (OJS ML §14.2: a preemption is a scheduling event
  and "MUST NOT" count against ``max_attempts``);
* ``eviction-work-lost`` — ``expected_work_lost_gpu_s`` is the GPU-seconds since the job's last committed
  checkpoint (since its start without one; 0 when it checkpoints on preempt or its start is unknown), at
  the decision's ``now``: whole GPUs count 1, a share ``gpu_milli``/1000, a TPU chip 1, and a CPU-only
  replica ``cpu_cores``/16 (``docs/decision.md``). The restart penalty the solver adds when it *chooses*
  victims is not part of it. Tolerance 0.01 GPU-s (the decision rounds to 3 decimals).

>>> rank_of("reserved", 0) > rank_of("on-demand", 50) > rank_of("spot", 99)
True
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from placer.solver.checks.context import Context
from placer.solver.checks.violation import Violation
from placer.solver.jobs.model import Job
from placer.topology import Cluster, RunningJob

__all__ = ["WORK_TOLERANCE", "check_directives", "check_preemption", "job_rank", "rank_of", "work_lost"]

_CLASS = {"spot": 0, "on-demand": 1, "reserved": 2}


def rank_of(priority_class: str, priority: int) -> tuple[int, int]:
    """Sortable priority: class first, then numeric priority."""
    return (_CLASS.get(priority_class, 0), priority)


def job_rank(job: Job, ctx: Context) -> tuple[int, int]:
    """A placed job's rank at ``ctx.now``: a spot job past its escalation time counts as its target class."""
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
            elif job_rank(placed[j][1], ctx) <= victim:
                yield Violation(
                    "eviction-priority",
                    e.job,
                    f"it is evicted for {j}, which does not have strictly higher priority",
                )
            elif not placed[j][1].may_preempt:
                yield Violation(
                    "eviction-non-preempting",
                    e.job,
                    f"it is evicted for {j}, which does not preempt (preemptionPolicy: Never)",
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


#: Tolerance of ``expected_work_lost_gpu_s``, in GPU-seconds (the decision rounds it to 3 decimals).
WORK_TOLERANCE = 0.01


def work_lost(rj: RunningJob, now: datetime) -> float:
    """GPU-seconds thrown away by stopping ``rj`` at ``now`` (see the module docstring).

    >>> from datetime import timedelta
    >>> t = datetime(2026, 1, 1, tzinfo=UTC)
    >>> work_lost(RunningJob(job="j", started_at=t, replicas=[{"node": "n", "gpus": [0, 1]}]),
    ...           t + timedelta(minutes=10))
    1200.0
    """
    if rj.checkpoint_on_preempt:
        return 0.0
    since = rj.last_checkpoint_at or rj.started_at
    if since is None:
        return 0.0
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    units = 0.0
    for r in rj.replicas:
        if r.gpu_milli is not None:
            units += r.gpu_milli / 1000
        elif r.gpus:
            units += len(r.gpus)
        elif r.tpu_chips:
            units += len(r.tpu_chips)
        else:
            units += r.cpu_cores / 16
    return max(0.0, (now - since).total_seconds()) * units


def check_directives(ctx: Context, before: Cluster) -> Iterator[Violation]:
    """The directives of every eviction of ``ctx.decision`` against the running job it names in
    ``before`` (the cluster as given); evictions naming no running job are the accounting rule's."""
    now = ctx.now if ctx.now.tzinfo is not None else ctx.now.replace(tzinfo=UTC)
    for e in ctx.decision.preemptions:
        try:
            rj = before.running_job(e.job)
        except KeyError:
            continue
        if e.grace_period_s != rj.grace_period_s:
            yield Violation(
                "eviction-grace",
                e.job,
                f"grace_period_s is {e.grace_period_s}; the job's grace period is {rj.grace_period_s} s",
            )
        if e.checkpoint != rj.checkpoint_on_preempt:
            says = "checkpoints" if rj.checkpoint_on_preempt else "does not checkpoint"
            yield Violation(
                "eviction-checkpoint",
                e.job,
                f"checkpoint is {str(e.checkpoint).lower()}; the job {says} on preempt",
            )
        held = {r.node for r in rj.replicas if r.node} | {r.tpu_pod for r in rj.replicas if r.tpu_pod}
        listed = set(e.nodes)
        if listed != held:
            parts = []
            if held - listed:
                parts.append(f"leaves out {', '.join(sorted(held - listed))}")
            if listed - held:
                parts.append(f"names {', '.join(sorted(listed - held))}, where it holds nothing")
            yield Violation(
                "eviction-nodes",
                e.job,
                f"its nodes list {' and '.join(parts)}: an eviction frees every node the job holds "
                f"({', '.join(sorted(held))})",
            )
        if e.counts_as_failure:
            yield Violation(
                "eviction-failure",
                e.job,
                "counts_as_failure is true: a preemption must not count against max_attempts (OJS ML §14.2)",
            )
        lost = work_lost(rj, now)
        if abs(e.expected_work_lost_gpu_s - lost) > WORK_TOLERANCE:
            yield Violation(
                "eviction-work-lost",
                e.job,
                f"expected_work_lost_gpu_s is {e.expected_work_lost_gpu_s:g}; GPU-seconds since its last "
                f"checkpoint (or start) at {now.isoformat()} are {round(lost, 3):g}",
            )
