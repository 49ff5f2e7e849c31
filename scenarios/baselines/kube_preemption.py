"""A kube-scheduler-style placer with DefaultPreemption, as a baseline for placer's preemption.

What it does, per pending job in priority order (higher class, then numeric priority, then id):

1. place each replica first-fit on a node with room (no eviction), replicas of a gang one by one;
2. if a replica does not fit anywhere, "preempt" like kube-scheduler's DefaultPreemption plugin: for each
   candidate node, remove every running job of strictly lower priority (preemptible ones: spot by default),
   then *reprieve* them highest priority first while the replica still fits; among nodes where the replica
   then fits, pick the one whose highest-priority victim is lowest, then with the fewest victims, then the
   smallest sum of victim priorities, then the most recently started victims (kube's ordering); evict those
   victims (whole, even if they span nodes) and place the replica.

It is deliberately what kube-scheduler does, not what placer does: it looks at one replica at a time, knows
nothing of lost work or checkpoints, and evicts per node. Gangs are placed replica by replica with no
all-or-nothing guarantee in kube (coscheduling is a separate plugin); here, to keep the comparison fair, a
gang whose replicas cannot all be placed is rolled back (its evictions are kept, as kube would have done
them already).

Its decisions are valid: the benchmark checks them with the independent checker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from placer.solver.decision import Decision, Eviction, JobPlacement, PendingJob, Reason, ReplicaPlacement
from placer.solver.jobs.model import Job
from placer.solver.preempt import lost_gpu_seconds
from placer.topology import Cluster, RunningJob

__all__ = ["kube_preemption"]

_CLASS = {"spot": 0, "on-demand": 1, "reserved": 2}


def _prio(priority_class: str, priority: int) -> tuple[int, int]:
    return (_CLASS.get(priority_class, 1), priority)


def _preemptible(rj: RunningJob) -> bool:
    if rj.priority_class == "reserved":
        return False
    return rj.preemptible if rj.preemptible is not None else rj.priority_class == "spot"


@dataclass
class _Node:
    name: str
    gpu_type: str | None
    free: list[int]
    cpu: float
    mem: float
    usable: bool
    nvlink: bool = False
    jobs: dict[str, list[int]] = field(default_factory=dict)  # running job -> its GPUs here


def kube_preemption(jobs: list[Job], cluster: Cluster, now: datetime) -> Decision:
    """Place ``jobs`` (whole-GPU, single-type jobs) the kube-scheduler way; returns a Decision."""
    nodes: dict[str, _Node] = {}
    for n in cluster.nodes:
        f = cluster.free(n.name)
        nodes[n.name] = _Node(
            n.name,
            n.gpu_type,
            list(f.gpus),
            f.cpu_cores,
            f.memory_gb,
            n.usable and not any(t.effect in ("NoSchedule", "NoExecute") for t in n.taints),
            n.nvlink_domain is not None,
        )
    running = {rj.job: rj for rj in cluster.running_jobs()}
    for rj in running.values():
        for r in rj.replicas:
            if r.node in nodes:
                nodes[r.node].jobs.setdefault(rj.job, []).extend(r.gpus)
    decision = Decision()
    evicted: dict[str, list[str]] = {}
    order = sorted(jobs, key=lambda j: (-_CLASS.get(j.priority_class.value, 1), -j.priority, j.id))
    for job in order:
        mine = _prio(job.priority_class.value, job.priority)
        types = {t for g in job.tasks if g.gpu is not None for t in g.gpu.types}
        # What a user would express with a node selector: NVLink jobs only on NVLink nodes.
        nvlink = any(g.gpu is not None and g.gpu.interconnect.value == "nvlink" for g in job.tasks)
        replicas: list[tuple[str, int, float, float, str]] = []
        for g in job.tasks:
            gpus = g.gpu.count if g.gpu is not None else 0
            per = g.count
            if g.gpu is not None and g.count == 1 and gpus > 8 and job.may_span_nodes():
                per, gpus = gpus // 8, 8
            replicas += [
                (
                    g.name,
                    gpus,
                    g.cpu_cores / max(per, 1) if per > g.count else g.cpu_cores,
                    g.memory_gb / max(per, 1) if per > g.count else g.memory_gb,
                    "",
                )
            ] * per
        taken: list[tuple[str, list[int]]] = []
        ok = True
        for _group, gpus, cpu, mem, _ in replicas:
            node = _fit(nodes, gpus, cpu, mem, types, nvlink, exclude={n for n, _ in taken})
            if node is None:
                node = _preempt(
                    nodes,
                    running,
                    gpus,
                    cpu,
                    mem,
                    types,
                    nvlink,
                    mine,
                    evicted,
                    job.id,
                    {n for n, _ in taken},
                )
            if node is None:
                ok = False
                break
            nd = nodes[node]
            got = nd.free[:gpus]
            del nd.free[:gpus]
            nd.cpu -= cpu
            nd.mem -= mem
            taken.append((node, got))
        if not ok:
            for node, got in taken:  # roll the gang back (evictions stay: kube would have done them)
                nd = nodes[node]
                nd.free = sorted(nd.free + got)
            decision.pending.append(
                PendingJob(
                    job=job.id,
                    reasons=[Reason(code="INSUFFICIENT_CAPACITY", message="no room (kube baseline)")],
                )
            )
            continue
        for node, got in taken:
            nodes[node].jobs.setdefault(job.id, []).extend(got)
        decision.placements.append(
            JobPlacement(
                job=job.id,
                replicas=[
                    ReplicaPlacement(node=node, gpus=got, cpu_cores=r[2], memory_gb=r[3], task_group=r[0])
                    for (node, got), r in zip(taken, replicas, strict=True)
                ],
            )
        )
    placed = {p.job for p in decision.placements}
    for victim, for_ in sorted(evicted.items()):
        rj = running[victim]
        users = sorted(j for j in set(for_) if j in placed)
        decision.preemptions.append(
            Eviction(
                job=victim,
                for_=users or sorted(set(for_)),
                grace_period_s=rj.grace_period_s,
                checkpoint=rj.checkpoint_on_preempt,
                # kube does not weigh lost work, but the decision reports it, accounted as placer does
                expected_work_lost_gpu_s=lost_gpu_seconds(rj, now),
                nodes=sorted({r.node for r in rj.replicas if r.node}),
            )
        )
    return decision


def _fit(
    nodes: dict[str, _Node],
    gpus: int,
    cpu: float,
    mem: float,
    types: set[str],
    nvlink: bool,
    exclude: set[str],
) -> str | None:
    for name, nd in nodes.items():
        if (
            name in exclude
            or not nd.usable
            or (types and nd.gpu_type not in types)
            or (nvlink and not nd.nvlink)
        ):
            continue
        if len(nd.free) >= gpus and nd.cpu >= cpu - 1e-9 and nd.mem >= mem - 1e-9:
            return name
    return None


def _preempt(
    nodes: dict[str, _Node],
    running: dict[str, RunningJob],
    gpus: int,
    cpu: float,
    mem: float,
    types: set[str],
    nvlink: bool,
    mine: tuple[int, int],
    evicted: dict[str, list[str]],
    for_job: str,
    exclude: set[str],
) -> str | None:
    best: tuple[tuple[object, ...], str, list[str]] | None = None
    for name, nd in nodes.items():
        if (
            name in exclude
            or not nd.usable
            or (types and nd.gpu_type not in types)
            or (nvlink and not nd.nvlink)
        ):
            continue
        lower = [
            j
            for j in nd.jobs
            if j in running
            and j not in evicted
            and _preemptible(running[j])
            and _prio(running[j].priority_class, running[j].priority) < mine
        ]
        if not lower:
            continue

        def held(j: str, nd: _Node = nd) -> tuple[int, float, float]:
            reps = [r for r in running[j].replicas if r.node == nd.name]
            return len(nd.jobs[j]), sum(r.cpu_cores for r in reps), sum(r.memory_gb for r in reps)

        free_g, free_c, free_m = len(nd.free), nd.cpu, nd.mem
        for j in lower:
            g, c, m = held(j)
            free_g, free_c, free_m = free_g + g, free_c + c, free_m + m
        if free_g < gpus or free_c < cpu - 1e-9 or free_m < mem - 1e-9:
            continue
        victims = []
        # Reprieve: highest priority first, keep it running while the replica still fits.
        for j in sorted(
            lower, key=lambda j: _prio(running[j].priority_class, running[j].priority), reverse=True
        ):
            g, c, m = held(j)
            if free_g - g >= gpus and free_c - c >= cpu - 1e-9 and free_m - m >= mem - 1e-9:
                free_g, free_c, free_m = free_g - g, free_c - c, free_m - m
            else:
                victims.append(j)
        top = (
            max(_prio(running[j].priority_class, running[j].priority) for j in victims)
            if victims
            else (-1, 0)
        )
        starts = [running[j].started_at.timestamp() if running[j].started_at else 0.0 for j in victims]
        key = (
            top,
            len(victims),
            sum(p[1] for p in (_prio(running[j].priority_class, running[j].priority) for j in victims)),
            -max(starts, default=0.0),
            name,
        )
        if best is None or key < best[0]:
            best = (key, name, victims)
    if best is None:
        return None
    for j in best[2]:
        evicted.setdefault(j, []).append(for_job)
        for r in running[j].replicas:  # whole job, every node
            home = nodes.get(r.node) if r.node else None
            if home is None:
                continue
            home.free = sorted(home.free + home.jobs.pop(j, []))
            nd.cpu += r.cpu_cores
            nd.mem += r.memory_gb
    return best[1]
