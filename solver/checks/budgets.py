"""Rule 17, queue GPU budgets (OJS ML resources §10.3): after the decision, each queue's active GPU jobs
(running and not evicted, plus placed) hold at most ``max_total_gpus`` GPUs and number at most
``max_concurrent_gpu_jobs``. Re-derived from the inputs, independently of the solver.

>>> from solver.decision import Decision
>>> from topology import cluster_of, cpu_nodes
>>> list(check_budgets(Decision(), [], cluster_of(cpu_nodes(1)), {}))
[]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from solver.checks.violation import Violation
from solver.decision import Decision
from solver.jobs.model import Job
from solver.jobs.queues import QueueConfig
from topology import Cluster


def check_budgets(
    decision: Decision, jobs: Iterable[Job], cluster: Cluster, queues: Mapping[str, QueueConfig]
) -> Iterator[Violation]:
    """A ``queue-budget`` violation per queue whose limits the decision's outcome exceeds."""
    if not queues:
        return
    evicted = {e.job for e in decision.preemptions}
    by_id = {j.id: j for j in jobs}
    gpus: dict[str, float] = {}
    count: dict[str, int] = {}
    for rj in cluster.running_jobs():
        if rj.job in evicted or rj.queue is None:
            continue
        g = sum((r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus)) for r in rj.replicas)
        if g > 0:
            gpus[rj.queue] = gpus.get(rj.queue, 0.0) + g
            count[rj.queue] = count.get(rj.queue, 0) + 1
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is None or job.queue is None:
            continue
        g = sum((r.gpu_milli / 1000 if r.gpu_milli is not None else len(r.gpus)) for r in p.replicas)
        if g > 0:
            gpus[job.queue] = gpus.get(job.queue, 0.0) + g
            count[job.queue] = count.get(job.queue, 0) + 1
    for name, qc in sorted(queues.items()):
        lim = qc.config.ml_limits
        if lim.max_total_gpus is not None and gpus.get(name, 0.0) > lim.max_total_gpus + 1e-9:
            yield Violation(
                "queue-budget",
                name,
                f"queue holds {gpus[name]:g} GPUs after the decision; max_total_gpus is {lim.max_total_gpus}",
            )
        if lim.max_concurrent_gpu_jobs is not None and count.get(name, 0) > lim.max_concurrent_gpu_jobs:
            yield Violation(
                "queue-budget",
                name,
                f"queue has {count[name]} active GPU jobs after the decision; "
                f"max_concurrent_gpu_jobs is {lim.max_concurrent_gpu_jobs}",
            )
