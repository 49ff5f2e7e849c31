"""The cluster as the fill leaves it, updated in place one placement at a time.

Why incremental: a fill is ~10,000 arrivals on 1,213 nodes, and each placement changes one node. Keeping
free amounts as numpy columns and touching one row per placement makes an arrival cost microseconds;
rebuilding a placer :class:`~placer.solver.snapshot.Snapshot` per pod would cost milliseconds. ``version[n]``
counts the changes of node ``n``, so a policy may cache per-node scores and recompute only stale rows.

Free GPU capacity is ``gpu[n, g]`` milli-GPUs for GPU ``g`` of node ``n`` (0 for GPUs the node does not
have); ``full[n]`` counts its wholly free GPUs and ``top[n]`` is its largest free share, the two numbers
the fit test needs.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.tables import NodeTable, PodTable
>>> s = FillState(NodeTable.of([OpenbNode("a", 16000, 65536, 2, "P100")]))
>>> pods = PodTable.of([OpenbPod("x", 4000, 1024, 1, 600), OpenbPod("y", 4000, 1024, 1, 500)])
>>> s.take(0, pods, 0, s.gpus_for(0, pods, 0))
(0,)
>>> s.gpu[0].tolist(), s.feasible(pods, 1).tolist(), s.allocated
([400, 1000], [True], 600)
"""

from __future__ import annotations

import numpy as np

from placer.scenarios.fill.tables import MILLI, NodeTable, PodTable

__all__ = ["FillState"]


class FillState:
    """Free CPU (milli), memory (MiB) and per-GPU milli of every node, and what is allocated."""

    def __init__(self, nodes: NodeTable):
        self.nodes = nodes
        n, width = len(nodes), max(nodes.max_gpus, 1)
        self.cpu = nodes.cpu.copy()
        self.mem = nodes.mem.copy()
        self.gpu = np.where(np.arange(width)[None, :] < nodes.gpus[:, None], MILLI, 0).astype(np.int64)
        self.full = nodes.gpus.copy()
        self.top = np.where(nodes.gpus > 0, MILLI, 0).astype(np.int64)
        self.version = np.zeros(n, dtype=np.int64)
        #: milli-GPUs held by placed pods.
        self.allocated = 0

    def feasible(self, pods: PodTable, i: int) -> np.ndarray:
        """Boolean mask of the nodes where pod ``i`` fits now (CPU, memory, GPU model, GPUs)."""
        ok = (self.cpu >= pods.cpu[i]) & (self.mem >= pods.mem[i])
        num = pods.num[i]
        if num:
            ok &= pods.access[i][self.nodes.model]
            ok &= (self.top >= pods.milli[i]) if pods.milli[i] < MILLI else (self.full >= num)
        return ok

    def gpus_for(self, node: int, pods: PodTable, i: int) -> tuple[int, ...]:
        """Default GPU choice on ``node``: a share goes to the fullest GPU it fits on (best fit, lowest
        index on ties), whole GPUs are the lowest-indexed free ones."""
        num, milli = int(pods.num[i]), int(pods.milli[i])
        if not num:
            return ()
        row = self.gpu[node]
        if milli < MILLI:
            fits = np.flatnonzero(row >= milli)
            return (int(fits[np.argmin(row[fits])]),)
        return tuple(int(g) for g in np.flatnonzero(row == MILLI)[:num])

    def take(self, node: int, pods: PodTable, i: int, gpus: tuple[int, ...]) -> tuple[int, ...]:
        """Place pod ``i`` on ``node`` using GPU indices ``gpus``; returns ``gpus``. Raises ``ValueError``
        (and changes nothing) when it does not fit there."""
        num, milli = int(pods.num[i]), int(pods.milli[i])
        row = self.gpu[node]
        if (
            self.cpu[node] < pods.cpu[i]
            or self.mem[node] < pods.mem[i]
            or len(gpus) != num
            or len(set(gpus)) != num
            or any(not 0 <= g < self.nodes.gpus[node] or row[g] < milli for g in gpus)
            or (num and not pods.access[i][self.nodes.model[node]])
        ):
            raise ValueError(
                f"pod {pods.names[i]} does not fit on node {self.nodes.names[node]} with GPUs {gpus}"
            )
        self.cpu[node] -= pods.cpu[i]
        self.mem[node] -= pods.mem[i]
        for g in gpus:
            row[g] -= milli
        self.full[node] = int((row == MILLI).sum())
        self.top[node] = int(row.max())
        self.version[node] += 1
        self.allocated += num * milli
        return gpus
