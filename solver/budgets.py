"""Queue GPU budgets (OJS ML resources §10.3): how much room each queue has left in this decision.

``max_total_gpus`` bounds the GPUs held by a queue's active jobs, ``max_concurrent_gpu_jobs`` the number of
its active GPU jobs; active means running (and not evicted by this decision) or placed by it. A job over
budget is never rejected: it stays pending with ``QUEUE_BUDGET`` (§10.3: "MUST NOT reject budget-exceeded
jobs; MUST queue them").

>>> from solver.jobs.queues import QueueConfig
>>> cfg = {"queue": "train", "config": {"ml_limits": {"max_total_gpus": 16}}}
>>> q = {"train": QueueConfig.model_validate(cfg)}
>>> b = Budgets.of(q, running=[])
>>> b.room("train"), b.room("other")
((16.0, None), (None, None))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from solver.jobs.queues import QueueConfig
from topology import RunningJob


def running_gpus(rj: RunningJob) -> float:
    """GPUs a running job holds (shares as fractions); TPU chips and CPU are not GPU budget."""
    return sum(
        (r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus))
        for r in rj.replicas
        if r.node is not None
    )


@dataclass
class Budgets:
    """Per-queue limits and what running jobs already use of them."""

    max_gpus: dict[str, float] = field(default_factory=dict)
    max_jobs: dict[str, int] = field(default_factory=dict)
    used_gpus: dict[str, float] = field(default_factory=dict)
    used_jobs: dict[str, int] = field(default_factory=dict)
    #: Running jobs' (queue, GPUs) by id, so that evictions give budget back.
    running: dict[str, tuple[str, float]] = field(default_factory=dict)

    @staticmethod
    def of(queues: Mapping[str, QueueConfig], running: Iterable[RunningJob]) -> Budgets:
        b = Budgets()
        if not queues:
            return b  # no budgets: nothing to count (10,000 running jobs would cost a tenth of a second)
        for name, qc in queues.items():
            lim = qc.config.ml_limits
            if lim.max_total_gpus is not None:
                b.max_gpus[name] = float(lim.max_total_gpus)
            if lim.max_concurrent_gpu_jobs is not None:
                b.max_jobs[name] = lim.max_concurrent_gpu_jobs
        for rj in running:
            gpus = running_gpus(rj)
            if rj.queue is None or gpus <= 0:
                continue
            b.running[rj.job] = (rj.queue, gpus)
            b.used_gpus[rj.queue] = b.used_gpus.get(rj.queue, 0.0) + gpus
            b.used_jobs[rj.queue] = b.used_jobs.get(rj.queue, 0) + 1
        return b

    @property
    def active(self) -> bool:
        """Whether any queue has a budget at all."""
        return bool(self.max_gpus or self.max_jobs)

    def room(self, queue: str | None, evicted: Iterable[str] = ()) -> tuple[float | None, int | None]:
        """(GPUs, GPU jobs) the queue may still add, or None where it has no limit; evicted running jobs
        give their share back."""
        if queue is None:
            return (None, None)
        back_gpus = 0.0
        back_jobs = 0
        for job in evicted:
            q, g = self.running.get(job, (None, 0.0))
            if q == queue:
                back_gpus += g
                back_jobs += 1
        gpus = None
        if queue in self.max_gpus:
            gpus = self.max_gpus[queue] - self.used_gpus.get(queue, 0.0) + back_gpus
        jobs = None
        if queue in self.max_jobs:
            jobs = self.max_jobs[queue] - self.used_jobs.get(queue, 0) + back_jobs
        return (gpus, jobs)


def remaining_room(
    queue: str | None, assignment: object, budgets: Budgets, plans: list
) -> tuple[float | None, int | None]:
    """A queue's budget room left after an answer: its limits, minus running jobs (not evicted), minus what
    the answer placed in that queue."""
    room_gpus, room_jobs = budgets.room(queue, getattr(assignment, "evictions", {}))
    for i, reps in getattr(assignment, "placed", {}).items():
        if plans[i].job.queue != queue:
            continue
        gpus = sum(r.unit.need.gpus + r.unit.need.milli / 1000 for r in reps if r.node is not None)
        if gpus <= 0:
            continue
        if room_gpus is not None:
            room_gpus -= gpus
        if room_jobs is not None:
            room_jobs -= 1
    return room_gpus, room_jobs
