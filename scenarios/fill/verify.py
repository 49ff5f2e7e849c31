"""Every placement of a fill, re-checked by placer's independent checker.

Why: the baselines and FGD place pods on the fill's own numpy state (:mod:`placer.scenarios.fill.state`), not
through ``place()``; a bug there (a GPU share double-booked, a pod on a model its ``gpu_spec`` refuses, a
node's memory overrun) would inflate their figures silently. Here the whole run becomes one placer
:class:`~placer.solver.decision.Decision` — every arrival a job
(:func:`~placer.scenarios.fill.engines.arrival_jobs`),
placed where the run put it, with its GPU indices and share, or pending — and
:func:`placer.solver.checks.check` judges it against the openb cluster built from the node list. The checker
shares no code with the fill.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.run import run_fill
>>> nodes, pods = [OpenbNode("n", 16000, 65536, 2, "P100")], [OpenbPod("s", 2000, 1024, 1, 300)]
>>> r = run_fill(nodes, pods, load=1.0, seed=1, policy="fgd")
>>> verify(nodes, pods, r)
[]
"""

from __future__ import annotations

from collections.abc import Sequence

from placer.scenarios.fill.engines import NOW, arrival_id, arrival_jobs
from placer.scenarios.fill.result import FillResult
from placer.scenarios.traces.alibaba import GB_PER_MIB, MILLI, OpenbNode, OpenbPod, nodes_to_cluster
from placer.solver.checks import Violation, check
from placer.solver.decision import Decision, JobPlacement, PendingJob, Reason, ReplicaPlacement

__all__ = ["decision_of", "verify"]


def decision_of(nodes: Sequence[OpenbNode], pods: Sequence[OpenbPod], result: FillResult) -> Decision:
    """The run as one Decision: placed arrivals with node, GPU indices, share, CPU and memory; failed
    ones pending with ``INSUFFICIENT_CAPACITY``."""
    decision = Decision(now=NOW)
    for k, i in enumerate(result.order.tolist()):
        pod, node = pods[i], int(result.node[k])
        if node < 0:
            reason = Reason(code="INSUFFICIENT_CAPACITY", message="no node had room when it arrived")
            decision.pending.append(PendingJob(job=arrival_id(k), reasons=[reason]))
            continue
        replica = ReplicaPlacement(
            node=nodes[node].name,
            gpus=list(result.gpus[k]),
            gpu_milli=pod.gpu_milli if pod.is_share else None,
            cpu_cores=pod.cpu_milli / MILLI,
            memory_gb=pod.memory_mib * GB_PER_MIB,
        )
        decision.placements.append(JobPlacement(job=arrival_id(k), replicas=[replica]))
    return decision


def verify(nodes: Sequence[OpenbNode], pods: Sequence[OpenbPod], result: FillResult) -> list[Violation]:
    """Violations of placer's placement rules by the run's placements (empty when every one is valid)."""
    jobs = arrival_jobs(pods, result.order, range(len(result.order)))
    return check(decision_of(nodes, pods, result), jobs, nodes_to_cluster(nodes), now=NOW)
