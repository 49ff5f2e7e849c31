"""Rule 20, throttles: at most ``max_running`` jobs of a throttle group run at once (a Slurm job array's
``%N``, ``Job.throttle``). Re-derived from the inputs, independently of the solver.

After the decision a group holds its running jobs (``RunningJob.throttle_group``) that the decision does
not evict, plus its placed jobs. The limit is the smallest ``max_running`` the input's jobs of the group
state. As with budgets (rule 17), the rule is broken only by a decision that *places* a job of a group
that ends over its limit: running jobs alone over it (the limit was lowered) are not the decision's doing.

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

from placer.solver.checks.violation import Violation
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["check_throttles"]


def check_throttles(decision: Decision, jobs: Iterable[Job], cluster: Cluster) -> Iterator[Violation]:
    """A ``throttle`` violation per group the decision places jobs of and leaves over its limit, named on
    the group's last placed job in decision order."""
    limit: dict[str, int] = {}
    group_of: dict[str, str] = {}
    for job in jobs:
        if job.throttle is not None:
            g = job.throttle.group
            limit[g] = min(limit.get(g, job.throttle.max_running), job.throttle.max_running)
            group_of[job.id] = g
    if not limit:
        return
    evicted = {e.job for e in decision.preemptions}
    running: dict[str, int] = {}
    for rj in cluster.running_jobs():
        if rj.throttle_group in limit and rj.job not in evicted:
            running[rj.throttle_group] = running.get(rj.throttle_group, 0) + 1
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
