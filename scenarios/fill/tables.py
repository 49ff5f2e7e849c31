"""The fill experiment's input as numpy columns: nodes and pods of an openb trace, in the trace's units.

Why columns and not placer's :class:`~placer.topology.Cluster` and :class:`~placer.solver.jobs.model.Job`: a
fill places
~10,000 pods one at a time on 1,213 nodes, and every arrival asks "which nodes can take this pod" — a
handful of vectorized comparisons over integer columns (milli-CPU, MiB, milli-GPU), exact, with no float
rounding. The placer objects are built only where placer's engines or its checker are involved
(:mod:`placer.scenarios.fill.engines`, :mod:`placer.scenarios.fill.verify`).

GPU models are indexed by their position in :data:`~placer.scenarios.traces.alibaba.GPU_TYPES`; index
:data:`NO_GPU` stands for "no GPUs", so ``PodTable.access[pod, NodeTable.model[node]]`` says whether a
pod's ``gpu_spec`` admits a node's GPUs in one gather.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> nodes = NodeTable.of([OpenbNode("a", 8000, 32768, 1, "V100M16"), OpenbNode("b", 96000, 393216, 8, "G2")])
>>> pods = PodTable.of([OpenbPod("p", 4000, 1024, 1, 500, ("G2",))])
>>> nodes.capacity_milli, pods.access[0, nodes.model].tolist()
(9000, [False, True])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from placer.scenarios.traces.alibaba import GPU_TYPES, MILLI, OpenbNode, OpenbPod

__all__ = ["MODELS", "NO_GPU", "NodeTable", "PodTable"]

#: The openb GPU models, in index order.
MODELS: tuple[str, ...] = tuple(GPU_TYPES)
#: Model index of a node without GPUs.
NO_GPU = len(MODELS)


@dataclass(frozen=True, eq=False)
class NodeTable:
    """Node capacities: ``cpu`` milli-CPU, ``mem`` MiB, ``gpus`` GPU count, ``model`` model index."""

    names: tuple[str, ...]
    cpu: np.ndarray
    mem: np.ndarray
    gpus: np.ndarray
    model: np.ndarray

    @staticmethod
    def of(nodes: Sequence[OpenbNode]) -> NodeTable:
        """Columns of an openb node list."""
        index = {m: i for i, m in enumerate(MODELS)}
        return NodeTable(
            names=tuple(n.name for n in nodes),
            cpu=np.array([n.cpu_milli for n in nodes], dtype=np.int64),
            mem=np.array([n.memory_mib for n in nodes], dtype=np.int64),
            gpus=np.array([n.gpus for n in nodes], dtype=np.int64),
            model=np.array([index[n.model] if n.gpus and n.model else NO_GPU for n in nodes], dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.names)

    @property
    def max_gpus(self) -> int:
        """The most GPUs on one node (the width of the per-GPU state)."""
        return int(self.gpus.max(initial=0))

    @property
    def capacity_milli(self) -> int:
        """Total GPU capacity in milli-GPUs (the fill's denominator)."""
        return int(self.gpus.sum()) * MILLI


@dataclass(frozen=True, eq=False)
class PodTable:
    """Pod requests: ``cpu`` milli-CPU, ``mem`` MiB, ``num`` GPUs, ``milli`` per GPU (1000 whole, 0 for
    CPU-only), ``access[pod, model]`` whether the pod accepts that GPU model (column :data:`NO_GPU`:
    only CPU-only pods accept a node without GPUs)."""

    names: tuple[str, ...]
    cpu: np.ndarray
    mem: np.ndarray
    num: np.ndarray
    milli: np.ndarray
    access: np.ndarray

    @staticmethod
    def of(pods: Sequence[OpenbPod]) -> PodTable:
        """Columns of an openb pod list."""
        index = {m: i for i, m in enumerate(MODELS)}
        access = np.zeros((len(pods), NO_GPU + 1), dtype=bool)
        for i, p in enumerate(pods):
            if not p.num_gpu:
                access[i, :] = True
            elif p.models:
                access[i, [index[m] for m in p.models]] = True
            else:
                access[i, :NO_GPU] = True
        return PodTable(
            names=tuple(p.name for p in pods),
            cpu=np.array([p.cpu_milli for p in pods], dtype=np.int64),
            mem=np.array([p.memory_mib for p in pods], dtype=np.int64),
            num=np.array([p.num_gpu for p in pods], dtype=np.int64),
            milli=np.array([p.gpu_milli for p in pods], dtype=np.int64),
            access=access,
        )

    def __len__(self) -> int:
        return len(self.names)

    @property
    def total_milli(self) -> np.ndarray:
        """GPU request per pod in milli-GPUs (``num x milli``)."""
        return self.num * self.milli
