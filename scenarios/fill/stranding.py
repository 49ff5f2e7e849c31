"""Where the GPU capacity a fill run did not allocate sits at its end, and what failed.

Why: the figure of merit says how much of the cluster a policy filled, not why the rest stayed empty. A
point gained over FGD has to come out of this rest, so it is worth knowing what it is made of:

* milli on **whole free GPUs** — a 1-GPU pod could use them, unless the node has too little CPU or memory
  left for any GPU pod of the run (``whole_starved``);
* milli on **partly used GPUs** — only a share of at most that much could use them; ``below_smallest`` is
  the part on GPUs with less free than the smallest share any arrival of the run asked, which no arrival
  could ever use; ``beside`` splits the partly used GPUs by the largest share placed on each (an 810-milli
  share leaves at most 190 beside it, which only the trace's rarest shares fit);
* the arrivals that failed, by shape (GPU count and milli per GPU; 0 GPUs for CPU-only pods).

It replays a finished run's placements (:class:`~placer.scenarios.fill.result.FillResult`: node and GPU
indices per arrival) on the node list, so it reads any policy's run, placer's engines included, without
touching the policy.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.run import run_fill
>>> nodes = [OpenbNode("n", 16000, 65536, 2, "P100")]
>>> pods = [OpenbPod("big", 1000, 1024, 1, 810), OpenbPod("whole", 1000, 1024, 1, 1000)]
>>> r = run_fill(nodes, pods, order=[0, 1, 0], policy="best-fit")
>>> s = stranding(r, NodeTable.of(nodes), PodTable.of(pods))
>>> s.allocated_milli, s.partial_milli, s.below_smallest, s.beside, dict(s.failed)
(1810, 190, 190, {810: (1, 190)}, {(1, 810): 1})
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from placer.scenarios.fill.result import FillResult
from placer.scenarios.fill.tables import MILLI, NodeTable, PodTable

__all__ = ["Stranding", "stranding"]


@dataclass(frozen=True)
class Stranding:
    """A finished run's unallocated GPU milli, by where it sits, and its failed arrivals by shape."""

    capacity_milli: int
    allocated_milli: int
    #: Milli on GPUs nothing uses, and the part of it on nodes left with less CPU or memory than the
    #: least any GPU pod of the run asks.
    whole_milli: int
    whole_starved: int
    #: Milli free on GPUs that hold a share, and the part on GPUs with less free than the smallest share
    #: any arrival asked.
    partial_milli: int
    below_smallest: int
    #: Largest share on a partly used GPU -> (such GPUs, their free milli).
    beside: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: (GPUs per pod, milli per GPU) -> arrivals of that shape that failed.
    failed: Counter[tuple[int, int]] = field(default_factory=Counter)

    def percent(self, milli: int) -> float:
        """``milli`` as a percent of the cluster's GPU capacity."""
        return 100.0 * milli / self.capacity_milli if self.capacity_milli else 0.0


def stranding(result: FillResult, nodes: NodeTable, pods: PodTable) -> Stranding:
    """Replay ``result``'s placements on ``nodes`` (the run's node list, ``pods`` its pod list) and say
    where its unallocated GPU milli sits (:class:`Stranding`)."""
    width = max(nodes.max_gpus, 1)
    has = np.arange(width)[None, :] < nodes.gpus[:, None]
    used = np.zeros((len(nodes), width), dtype=np.int64)
    largest = np.zeros((len(nodes), width), dtype=np.int64)
    cpu, mem = nodes.cpu.astype(np.int64), nodes.mem.astype(np.int64)
    failed: Counter[tuple[int, int]] = Counter()
    for k, i in enumerate(result.order.tolist()):
        num, milli = int(pods.num[i]), int(pods.milli[i])
        node = int(result.node[k])
        if node < 0:
            failed[(num, milli if num else 0)] += 1
            continue
        cpu[node] -= int(pods.cpu[i])
        mem[node] -= int(pods.mem[i])
        for g in result.gpus[k]:
            used[node, g] += milli
            largest[node, g] = max(largest[node, g], milli)
    free = np.where(has, MILLI - used, 0)
    gpu_pods = result.order[pods.num[result.order] > 0]
    if gpu_pods.size:
        starved = (cpu < pods.cpu[gpu_pods].min()) | (mem < pods.mem[gpu_pods].min())
    else:
        starved = np.zeros(len(nodes), dtype=bool)
    whole = has & (used == 0)
    partial = has & (used > 0) & (free > 0)
    smallest = int(pods.milli[gpu_pods].min(initial=MILLI))  # a whole GPU counts as its 1000
    beside: dict[int, tuple[int, int]] = {}
    for share in sorted(set(largest[partial].tolist()), reverse=True):
        at = partial & (largest == share)
        beside[int(share)] = (int(at.sum()), int(free[at].sum()))
    return Stranding(
        capacity_milli=nodes.capacity_milli,
        allocated_milli=int(used.sum()),
        whole_milli=int(free[whole].sum()),
        whole_starved=int(free[whole & starved[:, None]].sum()),
        partial_milli=int(free[partial].sum()),
        below_smallest=int(free[partial & (free < smallest)].sum()),
        beside=beside,
        failed=failed,
    )
