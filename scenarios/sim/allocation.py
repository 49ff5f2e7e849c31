"""A placement becomes a running job: the decision's replicas as a :class:`~placer.topology.RunningJob`
allocation, with the facts preemption needs (class, preemptibility, grace period, checkpoint times).

Why the job is escalated first: a ``spot`` job placed after waiting past its escalation time runs at its
target class (OJS ML §8.4), and whether it may be evicted follows that class — as ``place()`` ranked it.

>>> from datetime import UTC, datetime
>>> from placer.solver.decision import JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> job = Job(id="a", priority_class="spot", tasks=[TaskGroup(gpu=GpuDemand(count=2))], labels={"app": "x"})
>>> p = JobPlacement(job="a", replicas=[ReplicaPlacement(node="n1", gpus=[0, 1], cpu_cores=4)])
>>> t = datetime(2026, 1, 1, tzinfo=UTC)
>>> rj = running_of(job, p, start=t, remaining_s=None, now=t)
>>> rj.priority_class, rj.preemptible, rj.replicas[0].gpus, sorted(footprint(rj))
('spot', True, [0, 1], [('node', 'n1')])
"""

from __future__ import annotations

from datetime import datetime

from placer.solver.budgets import running_gpus
from placer.solver.decision import JobPlacement, as_running
from placer.solver.jobs.model import Job
from placer.solver.preempt import escalated
from placer.solver.running import running_job
from placer.topology import RunningJob

__all__ = ["Key", "chips_of", "footprint", "gpus_of", "nodes_text", "running_of"]

#: What a job physically occupies, for "does this start have to wait for that draining job": whole nodes
#: (GPU and CPU replicas share a node's cores and memory) and single TPU chips.
Key = tuple


def running_of(
    job: Job, placement: JobPlacement, *, start: datetime, remaining_s: float | None, now: datetime
) -> RunningJob:
    """The allocation of ``placement`` for ``job``, starting at ``start`` with ``remaining_s`` seconds of
    work left (None: no known end), ranked as ``place()`` ranked it at ``now``."""
    replicas = as_running(job.id, placement.replicas).replicas
    as_ranked = escalated(job, now).model_copy(update={"duration_s": remaining_s, "last_checkpoint": None})
    return running_job(as_ranked, replicas, start)


def footprint(rj: RunningJob | JobPlacement) -> set[Key]:
    """Nodes and TPU chips an allocation or a placement occupies (see :data:`Key`)."""
    out: set[Key] = set()
    for r in rj.replicas:
        if r.tpu_pod is not None:
            out.update(("chip", r.tpu_pod, tuple(c)) for c in r.tpu_chips)
        elif r.node is not None:
            out.add(("node", r.node))
    return out


def gpus_of(rj: RunningJob) -> float:
    """GPUs ``rj`` holds (fractional shares as fractions).

    >>> gpus_of(RunningJob(job="s", replicas=[{"node": "n", "gpus": [3], "gpu_milli": 250}]))
    0.25
    """
    return running_gpus(rj)


def chips_of(rj: RunningJob) -> int:
    """TPU chips ``rj`` holds."""
    return sum(len(r.tpu_chips) for r in rj.replicas)


def nodes_text(rj: RunningJob) -> str:
    """Its nodes (TPU pods), sorted, comma-separated: one column of the attempts table."""
    return ",".join(sorted({r.node or r.tpu_pod or "" for r in rj.replicas}))
