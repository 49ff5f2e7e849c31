"""Jobs with alternative node shapes (SSS ``Or`` of node tests and amounts): which shape a placement used.

Why a step of its own: a job that may run as "8 processors on an a100 node, or 4 on an h100 node" is
validly placed in either shape, and every other rule (gang, capacity, rules on nodes...) must then be
judged against that shape. The checker does not ask the engine which it chose: for each placed job with
``alternatives`` it tries the job's own shape, then each alternative in order, and keeps the first under
which the placement breaks neither rule 2 (each task group whole, with its per-replica resources) nor
rule 8 (required node rules). When none fits, the job's own shape stays, and its violations are
reported. Pending and rejected jobs keep their own shape (nothing to judge).

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import JobAlternative, TaskGroup
>>> from placer.topology import cluster_of, dgx_h100
>>> four = JobAlternative(tasks=[TaskGroup(cpu_cores=4)])
>>> job = Job(id="j", tasks=[TaskGroup(cpu_cores=8)], alternatives=[four])
>>> rep = ReplicaPlacement(node="dgx-h100-1", cpu_cores=4)
>>> d = Decision(placements=[JobPlacement(job="j", replicas=[rep])])
>>> [j.tasks[0].cpu_cores for j in shaped(d, [job], cluster_of(dgx_h100(1)))]
[4.0]
"""

from __future__ import annotations

from collections.abc import Iterable

from placer.solver.checks.affinity import check_node_rules
from placer.solver.checks.context import build_context
from placer.solver.checks.gang import check_gang
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["shaped"]


def _shapes(job: Job) -> list[Job]:
    own = job.model_copy(update={"alternatives": []})
    return [own] + [
        own.model_copy(
            update={"tasks": a.tasks, "placement": job.placement.model_copy(update={"required": a.required})}
        )
        for a in job.alternatives
    ]


def shaped(decision: Decision, jobs: Iterable[Job], cluster: Cluster) -> list[Job]:
    """``jobs`` with every placed job that has alternatives replaced by the shape its placement fits."""
    jobs = list(jobs)
    if not any(j.alternatives for j in jobs):
        return jobs
    ctx = build_context(decision, jobs, cluster)
    placed = {p.job: p for p in decision.placements}
    out: list[Job] = []
    for job in jobs:
        placement = placed.get(job.id)
        if not job.alternatives or placement is None:
            out.append(job)
            continue
        shapes = _shapes(job)
        fits = (
            s
            for s in shapes
            if not any(True for _ in check_gang(s, placement))
            and not any(True for r in placement.replicas for _ in check_node_rules(ctx, s, r))
        )
        out.append(next(fits, shapes[0]))
    return out
