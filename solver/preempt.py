"""Running jobs as eviction candidates: who may be preempted, for whom, and what it costs.

Rules (OJS ML resources §8.1-8.2, §14.2; ML extensions §7):

* Priority is the class order ``reserved`` > ``on-demand`` > ``spot``, refined by numeric priority.
* A running job is preemptible when it says so; when it does not, only ``spot`` is. ``reserved`` jobs are
  never evicted.
* An eviction is allowed only for work of *strictly* higher priority, and never for a job that does not
  preempt (``Job.may_preempt`` false: Kubernetes ``preemptionPolicy: Never``); :func:`evict_rank` is the
  rank every eviction rule compares, the lowest of all for such a job.
* Its cost is the work thrown away: the GPU-seconds since the job's last committed checkpoint (since its
  start when it has none; none when it checkpoints on preempt), plus a restart penalty per GPU
  (``Policy.restart_penalty_s``). TPU chips count as GPUs here, and 16 CPU cores as one.
* Gangs are evicted whole: an eviction frees every replica of the job, on every node.
* Each PodDisruptionBudget violation the eviction would cause (``RunningJob.disruption_violations``) adds
  :data:`DISRUPTION_PENALTY_S` to its cost: more than any work a job can lose, so the engines evict within
  budgets whenever that makes the room — kube-scheduler's first criterion among victims — and through a
  budget only when nothing else does (a budget never forbids preemption).

>>> from datetime import UTC, datetime, timedelta
>>> from placer.topology import RunningJob
>>> now = datetime(2026, 1, 1, tzinfo=UTC)
>>> rj = RunningJob(job="sweep", priority_class="spot", started_at=now - timedelta(hours=1),
...                 replicas=[{"node": "n1", "gpus": [0, 1]}])
>>> lost_gpu_seconds(rj, now)
7200.0
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from placer.solver.jobs.model import CLASS_RANK, Job, PriorityClass
from placer.solver.snapshot import Snapshot
from placer.topology import RunningJob

__all__ = [
    "DISRUPTION_PENALTY_S",
    "NEVER_EVICTS",
    "Victim",
    "escalated",
    "evict_rank",
    "held_units",
    "is_preemptible",
    "job_rank",
    "lost_gpu_seconds",
    "rank",
    "victims",
]

#: Cost of one PodDisruptionBudget violation, in GPU-seconds of lost work: a thousand GPU-years, above what
#: any eviction can lose, and small enough to keep CP-SAT's eviction-cost level in 64-bit integers.
DISRUPTION_PENALTY_S = 3.0e10

#: Numeric priorities are clamped to this magnitude when folded into one sortable rank: 2^32, so every
#: Kubernetes priority (int32; PriorityClass values up to 2,000,001,000) and every Slurm one (uint32) keeps
#: its order. (It was 1,000,000: a 3,000,000 job then tied with a 2,000,000 one and could not evict it.)
_PRIORITY_SPAN = 1 << 32


def rank(priority_class: str, priority: int) -> int:
    """One integer that orders jobs: class first, numeric priority within the class."""
    clamped = max(-_PRIORITY_SPAN + 1, min(_PRIORITY_SPAN - 1, priority))
    class_rank = CLASS_RANK.get(priority_class)
    if class_rank is None:  # not a class name: PriorityClass says so
        class_rank = PriorityClass(priority_class).rank
    return class_rank * 2 * _PRIORITY_SPAN + clamped


def job_rank(job: Job) -> int:
    """The job's priority rank: which jobs go first, and whom it outranks."""
    return rank(job.priority_class.value, job.priority)


#: :func:`evict_rank` of a job that never preempts: below every running job's rank, so no victim ranks
#: below it (no eviction, no budget an eviction frees, no hint that one would help).
NEVER_EVICTS = -(1 << 62)


def evict_rank(job: Job) -> int:
    """The rank eviction rules compare with a victim's: the job's :func:`job_rank`, or
    :data:`NEVER_EVICTS` when it does not preempt (``Job.may_preempt``). Ordering jobs stays on
    :func:`job_rank`: a non-preempting job keeps its place in line, it only gives up evicting.

    >>> a = Job(id="a", priority=100)
    >>> waits = a.model_copy(update={"may_preempt": False})
    >>> evict_rank(a) == job_rank(a), evict_rank(waits) < rank("spot", -10**9), job_rank(waits) == job_rank(a)
    (True, True, True)
    """
    return job_rank(job) if job.may_preempt else NEVER_EVICTS


def escalated(job: Job, now: datetime) -> Job:
    """The job as it counts now: a ``spot`` job with priority escalation that has waited longer than
    ``ext_ml_escalation_after_s`` counts as its target class (OJS ML §8.4); others unchanged."""
    esc = job.escalation
    if (
        esc.enabled
        and esc.target_class is not None
        and job.priority_class is PriorityClass.SPOT
        and job.submit_time is not None
        and (now - job.submit_time).total_seconds() > esc.after_s
    ):
        return job.model_copy(update={"priority_class": esc.target_class})
    return job


def is_preemptible(rj: RunningJob) -> bool:
    """Explicit flag, else the class default (only spot); reserved never."""
    if rj.priority_class == "reserved":
        return False
    if rj.preemptible is not None:
        return rj.preemptible
    return rj.priority_class == "spot"


def held_units(rj: RunningJob) -> float:
    """GPU-equivalents a running job holds: whole GPUs, shares, TPU chips, or CPU cores / 16."""
    units = 0.0
    for r in rj.replicas:
        if r.gpu_milli is not None:
            units += r.gpu_milli / 1000
        elif r.gpus:
            units += len(r.gpus)
        elif r.tpu_chips:
            units += len(r.tpu_chips)
        else:
            units += r.cpu_cores / 16.0
    return units


def lost_gpu_seconds(rj: RunningJob, now: datetime) -> float:
    """Work thrown away by evicting ``rj`` now (before the restart penalty)."""
    if rj.checkpoint_on_preempt:
        return 0.0
    since = rj.last_checkpoint_at or rj.started_at
    if since is None:
        return 0.0
    return max(0.0, (now - since).total_seconds()) * held_units(rj)


@dataclass(frozen=True)
class Victim:
    """A running job that may be evicted: its rank, cost, and where it sits (node / pod indices)."""

    job: RunningJob
    rank: int
    cost: float
    lost_gpu_s: float
    nodes: tuple[int, ...]
    pods: tuple[int, ...]

    @cached_property
    def id(self) -> str:
        """The job's id (kept after the first read: greedy's eviction search reads it millions of times on
        a big cluster, and reading it through the pydantic job each time was a tenth of that search)."""
        return self.job.job


def victims(snap: Snapshot, now: datetime, restart_penalty_s: float) -> list[Victim]:
    """Every preemptible running job, cheapest first (then by id, for determinism)."""
    out: list[Victim] = []
    for rj in snap.cluster.running_jobs():
        if not is_preemptible(rj):
            continue
        lost = lost_gpu_seconds(rj, now)
        nodes = tuple(sorted({snap.by_name[r.node] for r in rj.replicas if r.node in snap.by_name}))
        pods = tuple(
            sorted({snap.pod_by_name[r.tpu_pod] for r in rj.replicas if r.tpu_pod in snap.pod_by_name})
        )
        out.append(
            Victim(
                job=rj,
                rank=rank(rj.priority_class, rj.priority),
                cost=lost
                + restart_penalty_s * held_units(rj)
                + DISRUPTION_PENALTY_S * rj.disruption_violations,
                lost_gpu_s=lost,
                nodes=nodes,
                pods=pods,
            )
        )
    out.sort(key=lambda v: (v.cost, v.id))
    return out
