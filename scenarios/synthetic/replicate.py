"""Replicate a scenario: ``k`` disjoint copies of its cluster, running jobs and pending jobs, as one.

Why: a hand-made trap shows that an engine *can* find a placement a greedy misses; a user asks whether it
still does at a real cluster's size, where the CP-SAT model aggregates identical nodes into classes. Each
instance here uses every free resource (or places every job) at its optimum, so ``k`` copies cannot do
better than ``k`` times it — the optimum of the replica is known by construction — and the copies'
witnesses together prove it feasible.

>>> from placer.scenarios.synthetic.traps import anti_affinity_trap
>>> big = replicate(anti_affinity_trap(), 3)
>>> len(big.cluster.nodes), len(big.jobs), big.optimal_placed, big.jobs[-1].id
(12, 24, 24, 'serve08-c3')
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

from placer.scenarios.synthetic.scenario import Scenario
from placer.solver.jobs.model import Job
from placer.topology import Cluster, RunningJob, build_cluster

__all__ = ["replicate"]

_N = TypeVar("_N", int, float)


def _copy_structure(cluster: Cluster, k: int) -> tuple[Cluster, dict[str, str], dict[str, str]]:
    """Copy ``k`` of the cluster's nodes and pods (nothing running), and the node and pod renaming."""
    inv = cluster.to_inventory()
    nodes = [n.model_copy(update={"name": f"{n.name}-c{k}"}) for n in inv.nodes]
    pods = [p.model_copy(update={"name": f"{p.name}-c{k}"}) for p in inv.tpu_pods]
    copy = build_cluster(inv.model_copy(update={"nodes": nodes, "tpu_pods": pods, "running": []}))
    node_map = {a.name: b.name for a, b in zip(cluster.nodes, copy.nodes, strict=True)}
    pod_map = {a.name: b.name for a, b in zip(cluster.tpu_pods(), copy.tpu_pods(), strict=True)}
    return copy, node_map, pod_map


def _moved(job: RunningJob, k: int, node_map: dict[str, str], pod_map: dict[str, str]) -> RunningJob:
    replicas = [
        r.model_copy(
            update={
                "node": None if r.node is None else node_map[r.node],
                "tpu_pod": None if r.tpu_pod is None else pod_map[r.tpu_pod],
            }
        )
        for r in job.replicas
    ]
    return job.model_copy(update={"job": f"{job.job}-c{k}", "replicas": replicas})


def replicate(sc: Scenario, copies: int) -> Scenario:
    """``copies`` disjoint copies of ``sc`` (nodes, pods and job ids suffixed ``-c1``, ``-c2``...), with
    the optimum, the first-fit count and the witness multiplied. Labels are kept, so jobs of different
    copies that conflict (anti-affinity) still do, and a copy's jobs may use any copy's nodes."""
    if copies < 1:
        raise ValueError("copies must be at least 1")
    inv = sc.cluster.to_inventory()
    nodes, pods, running, jobs, witness = [], [], [], [], []
    for k in range(1, copies + 1):
        _, node_map, pod_map = _copy_structure(sc.cluster, k)
        nodes += [n.model_copy(update={"name": f"{n.name}-c{k}"}) for n in inv.nodes]
        pods += [p.model_copy(update={"name": f"{p.name}-c{k}"}) for p in inv.tpu_pods]
        running += [_moved(j, k, node_map, pod_map) for j in sc.cluster.running_jobs()]
        witness += [_moved(j, k, node_map, pod_map) for j in sc.witness]
        jobs += [_renamed(j, k) for j in sc.jobs]
    cluster = build_cluster(
        inv.model_copy(
            update={"name": f"{inv.name}-x{copies}", "nodes": nodes, "tpu_pods": pods, "running": running}
        )
    )

    def times(v: _N | None) -> _N | None:
        return None if v is None else v * copies

    return replace(
        sc,
        name=f"{sc.name}-x{copies}",
        cluster=cluster,
        jobs=tuple(jobs),
        description=f"{copies} copies of: {sc.description}",
        optimal_placed=times(sc.optimal_placed),
        optimal_weighted_demand=times(sc.optimal_weighted_demand),
        greedy_placed=times(sc.greedy_placed),
        witness=tuple(witness),
    )


def _renamed(job: Job, k: int) -> Job:
    return job.model_copy(update={"id": f"{job.id}-c{k}"})
