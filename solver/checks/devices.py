"""Rules 5 and 6: no GPU held twice, no node over-committed — counting running jobs and placements.

Why both together: both sum, per node, what the running jobs (after evictions) hold and what every
placement of the decision adds, and both look only at the nodes the decision touches. A GPU held whole
(by a running job or a placement) excludes any other use; fractional shares of one GPU sum to at most
1000 milli. Capacity is cpu, memory, storage and (when the node declares it) shm, tolerance 1e-6.

Every placement counts here, also those of jobs the accounting rule reports, since their devices would
be used all the same if a backend applied the decision.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.checks.context import build_context
>>> rep = ReplicaPlacement(node="dgx-h100-1", gpus=[0])
>>> d = Decision(placements=[JobPlacement(job="a", replicas=[rep]), JobPlacement(job="b", replicas=[rep])])
>>> [v.rule for v in check_devices(build_context(d, [], cluster_of(dgx_h100(2))))]
['gpu-double-booked']
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from placer.solver.checks.context import EPS, Context
from placer.solver.checks.violation import Violation

__all__ = ["WHOLE", "check_devices"]

WHOLE = 1000


@dataclass
class _NodeLoad:
    cpu_cores: float = 0.0
    memory_gb: float = 0.0
    storage_gb: float = 0.0
    shm_gb: float = 0.0
    last_job: str = ""
    #: GPU index -> placed uses as (job, milli, whole)
    gpus: dict[int, list[tuple[str, int, bool]]] = field(default_factory=dict)


def check_devices(ctx: Context) -> Iterator[Violation]:
    """Every violation of rules 5 and 6 in the decision."""
    loads: dict[str, _NodeLoad] = {}
    for p in ctx.decision.placements:
        for rep in p.replicas:
            if rep.tpu_pod is not None or not ctx.cluster.has_node(rep.node):
                continue  # TPU chips: rule 13; unknown nodes: rule 3
            node = ctx.cluster.node(rep.node)
            load = loads.setdefault(rep.node, _NodeLoad())
            load.cpu_cores += rep.cpu_cores
            load.memory_gb += rep.memory_gb
            load.storage_gb += rep.storage_gb
            load.shm_gb += rep.shm_gb
            load.last_job = p.job
            if len(set(rep.gpus)) != len(rep.gpus):
                yield Violation(
                    "gpu-index", p.job, f"a replica lists a GPU index twice: {rep.gpus}", rep.node
                )
            whole = rep.gpu_milli is None
            milli = WHOLE if whole else rep.gpu_milli or 0
            for idx in dict.fromkeys(rep.gpus):
                if not 0 <= idx < node.gpu_count:
                    yield Violation(
                        "gpu-index",
                        p.job,
                        f"GPU index {idx} does not exist (the node has {node.gpu_count} GPUs)",
                        rep.node,
                    )
                    continue
                load.gpus.setdefault(idx, []).append((p.job, milli, whole))
    for name, load in loads.items():
        yield from _gpu_conflicts(ctx, name, load)
        yield from _capacity(ctx, name, load)


def _gpu_conflicts(ctx: Context, name: str, load: _NodeLoad) -> Iterator[Violation]:
    held = ctx.cluster.usage(name).gpus
    for idx, uses in sorted(load.gpus.items()):
        running = [(job, milli, milli >= WHOLE) for job, milli in held.get(idx, ())]
        everyone = running + uses
        if len(everyone) < 2:
            continue
        who = ", ".join(
            f"{job} ({'running, ' if i < len(running) else ''}{'whole' if w else f'{m} milli'})"
            for i, (job, m, w) in enumerate(everyone)
        )
        culprit = uses[-1][0]
        if any(w for _, _, w in everyone):
            yield Violation("gpu-double-booked", culprit, f"GPU {idx} is held by several jobs: {who}", name)
        else:
            total = sum(m for _, m, _ in everyone)
            if total > WHOLE:
                yield Violation(
                    "gpu-share", culprit, f"shares of GPU {idx} sum to {total} milli (over 1000): {who}", name
                )


def _capacity(ctx: Context, name: str, load: _NodeLoad) -> Iterator[Violation]:
    node = ctx.cluster.node(name)
    used = ctx.cluster.usage(name)
    for what, unit, placed, running, cap in (
        ("cpu", "cores", load.cpu_cores, used.cpu_cores, node.cpu_cores),
        ("memory", "GB", load.memory_gb, used.memory_gb, node.memory_gb),
        ("storage", "GB", load.storage_gb, used.storage_gb, node.storage_gb),
        ("shm", "GB", load.shm_gb, used.shm_gb, node.shm_gb),
    ):
        if cap is None or placed <= 0:
            continue
        if running + placed > cap + EPS:
            yield Violation(
                "capacity",
                load.last_job,
                f"{what} over-committed: {running:g} {unit} held by running jobs + {placed:g} placed = "
                f"{running + placed:g}, capacity {cap:g}",
                name,
            )
