"""``place(jobs, cluster, policy) -> Decision``: the function a backend calls.

Around the core decision (:func:`placer.solver.core.decide`, phases 0-8) it adds what spans more than one
batch and one instant:

* **reservations** — with declared reservations, the core runs in phases: members inside their
  reservation, everyone else outside held capacity (:mod:`placer.solver.holds`);
* **time planning** — jobs that cannot start now get a planned start from the running jobs' end times,
  and backfill keeps later work off their capacity (:mod:`placer.solver.planning`);
* **what-if hints** — what would let a pending job run (:mod:`placer.solver.what_if`);
* **prices** — ``stats.cost_per_hour`` of the whole decision (:mod:`placer.solver.prices`).

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.jobs.model import Job, TaskGroup, GpuDemand
>>> d = place([Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=4))])], cluster_of(dgx_h100(1)),
...           Policy(engine="greedy"))
>>> d.placements[0].replicas[0].gpus
[0, 1, 2, 3]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from placer.solver.core import decide
from placer.solver.decision import Decision, JobPlacement, PendingJob
from placer.solver.gc_pause import paused_gc
from placer.solver.holds import place_with_reservations
from placer.solver.jobs.model import GpuAffinity, Job, ReadResult
from placer.solver.jobs.queues import QueueConfig
from placer.solver.planning import jobs_by_id, with_plans
from placer.solver.policy import Policy
from placer.solver.prepared import Prepared
from placer.solver.prices import PriceCatalog, price_decision
from placer.solver.reservations import Reservation
from placer.solver.what_if import add_preemptible_hints
from placer.topology import Cluster

__all__ = ["holds_whole", "place", "with_read_warnings"]


def place(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy | None = None,
    *,
    now: datetime | None = None,
    queues: Mapping[str, QueueConfig] | None = None,
    reservations: Sequence[Reservation] | None = None,
    prices: PriceCatalog | None = None,
    prepared: Prepared | None = None,
) -> Decision:
    """Decide where the batch runs. Pure: the same inputs and ``policy.seed`` give the same decision (with
    ``policy.reproducible``, also under a wall-clock limit; see ``docs/solver.md``).

    ``queues`` (OJS §10 configurations by queue name) bring GPU budgets: a job that would take its queue
    over ``max_total_gpus`` or ``max_concurrent_gpu_jobs`` (running jobs included) stays pending with
    ``QUEUE_BUDGET``. ``reservations`` declare held capacity (:mod:`placer.solver.reservations`): jobs naming
    one
    run only inside it, other jobs never use it while it is held; a job naming an unknown reservation is
    rejected. ``prices`` (default: :meth:`PriceCatalog.default`) price each placement
    (``cost_per_hour``) and the decision (``stats.cost_per_hour``). ``prepared``: the pieces a
    :class:`~placer.solver.session.Session` keeps for ``cluster`` between calls (same decision, less
    time)."""
    t0 = time.perf_counter()
    policy = policy or Policy()
    if prices is not None:  # prices and dollar budgets reach every core decision with the policy
        policy = policy.model_copy(update={"prices": prices})
    now = now or datetime.now(UTC)

    def core(batch: Sequence[Job | ReadResult], limit_s: float, engine: str | None = None) -> Decision:
        within = policy.model_copy(update={"time_limit_s": limit_s, **({"engine": engine} if engine else {})})
        if reservations:
            return place_with_reservations(
                batch, cluster, within, now=now, queues=queues, reservations=reservations
            )
        return decide(batch, cluster, within, now=now, queues=queues, prepared=prepared)

    with paused_gc():  # a full collection over a big snapshot would eat the deadline (solver/gc_pause.py)
        if policy.plan and _may_plan(jobs, cluster, reservations or (), now):
            decision = with_plans(core, jobs, cluster, policy, now=now, reservations=reservations or ())
        else:
            decision = core(jobs, policy.time_limit_s)
        decision.now = now
        decision._greedy_answer = None  # planning's alone: it holds the whole problem
        # What would change the outcome, in the time left (solver/what_if.py).
        deadline = t0 + policy.time_limit_s
        # A session's pool, read only if a hint needs it (built on first read, then kept moving).
        kept = prepared.shielded if prepared is not None and prepared.cluster is cluster else None
        hints = jobs_by_id(jobs, now)
        if add_preemptible_hints(decision, hints, cluster, policy, now=now, deadline=deadline, shielded=kept):
            decision.stats.cut_by.append("hints")
            decision.stats.deterministic = False
        decision.stats.cost_per_hour = price_decision(
            decision, cluster, prices or PriceCatalog.default(), whole=holds_whole(hints)
        )
        with_read_warnings(decision, jobs)
        # The whole call, hints and pricing included (docs/decision.md): the core decisions set their own.
        # Set before the collector runs again: the first allocation after that may start a full collection
        # of the caller's whole heap (0.5 s in the test suite's process), which is the caller's, not ours.
        decision.stats.wall_s = round(time.perf_counter() - t0, 6)
    return decision


def with_read_warnings(decision: Decision, jobs: Sequence[Job | ReadResult]) -> None:
    """The readers' warnings of each placed or pending job, as its notes (``warning: <path>: <message>
    [<code>]``): what a reader read past (a preferred pod-affinity term, a partition QOS without its table)
    is said where the job's outcome is, not only by ``placer validate``."""
    said = {
        r.id: [f"warning: {w.path + ': ' if w.path else ''}{w.message} [{w.code}]" for w in r.warnings]
        for r in jobs
        if isinstance(r, ReadResult) and r.ok and r.warnings
    }
    if not said:
        return
    outcomes: list[JobPlacement | PendingJob] = [*decision.placements, *decision.pending]
    for p in outcomes:
        for note in said.get(p.job, ()):
            if note not in p.notes:
                p.notes.append(note)


def holds_whole(jobs: Mapping[str, Job]) -> Callable[[str, str | None], bool]:
    """Whether a job's replica of a task group holds its node exclusively, and so pays all of it:
    ``exclusive_nodes``, ``gpu_affinity: dedicated`` (MLX §7.1), or an exclusive group (Flux slots)."""

    def whole(job_id: str, group: str | None) -> bool:
        job = jobs.get(job_id)
        if job is None:
            return False
        if job.placement.exclusive_nodes or job.placement.gpu_affinity is GpuAffinity.DEDICATED:
            return True
        return any(g.exclusive for g in job.tasks if g.name == group)

    return whole


def _may_plan(
    jobs: Sequence[Job | ReadResult], cluster: Cluster, reservations: Sequence[Reservation], now: datetime
) -> bool:
    """Whether any plan could exist: something on the timeline ends, some job waits for a time or a
    workflow step, or a reservation starts later (work started now must not run into it). Without any,
    planning is skipped and the core decision gets the whole time limit."""
    if any(r.start is not None and r.start > now for r in reservations):
        return True
    for item in jobs:
        job = item.job if isinstance(item, ReadResult) else item
        if job is not None and (job.duration_s is not None or job.not_before is not None or job.dependencies):
            return True
    return any(r.expected_end is not None for r in cluster.running_jobs())
