"""The FGD paper's baselines and the two Kubernetes scoring strategies, one small class each.

Definitions follow the FGD artifact's score plugins (github.com/hkust-adsl/kubernetes-scheduler-simulator,
``pkg/simulator/plugin``) and Kubernetes' ``NodeResourcesFit`` strategies, written here from their
descriptions (no code of theirs is copied). Normalizers are the artifact's: 128 cores
(:data:`MAX_CPU`) and 8 GPUs (:data:`MAX_GPU`). Keys are "lower is better"; the base class breaks ties by
the run's random node rank.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.tables import NodeTable, PodTable
>>> from placer.scenarios.fill.state import FillState
>>> from placer.scenarios.fill.policies import Context, make
>>> big, small = OpenbNode("big", 96000, 393216, 8, "G2"), OpenbNode("small", 16000, 65536, 2, "P100")
>>> nodes, pods = NodeTable.of([big, small]), PodTable.of([OpenbPod("p", 4000, 1024, 1, 1000)])
>>> s = FillState(nodes)
>>> [make(n, Context(nodes, pods, 0)).choose(s, 0, s.feasible(pods, 0))[0] for n in ("best-fit", "first-fit")]
[1, 0]
"""

from __future__ import annotations

import numpy as np

from placer.scenarios.fill.policies import Context, Policy, register
from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import MILLI

__all__ = [
    "MAX_CPU",
    "MAX_GPU",
    "BestFit",
    "DotProduct",
    "FirstFit",
    "GpuClustering",
    "GpuPacking",
    "LeastAllocated",
    "MostAllocated",
    "Random",
]

#: The artifact's normalizers: the largest node's CPU (milli) and GPU (milli) capacity.
MAX_CPU = 128_000
MAX_GPU = 8_000


def _gpu_left(state: FillState, cand: np.ndarray) -> np.ndarray:
    """Free milli-GPUs per candidate node."""
    return state.gpu[cand].sum(axis=1)


@register
class Random(Policy):
    """Any node the pod fits on, uniformly; a share goes to a random GPU it fits on."""

    name = "random"

    def choose(self, state: FillState, i: int, mask: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
        cand = np.flatnonzero(mask)
        if cand.size == 0:
            return None
        node = int(cand[self.ctx.rng.integers(cand.size)])
        pods = self.ctx.pods
        if pods.num[i] == 1 and pods.milli[i] < MILLI:
            fits = np.flatnonzero(state.gpu[node] >= pods.milli[i])
            return node, (int(fits[self.ctx.rng.integers(fits.size)]),)
        return node, state.gpus_for(node, pods, i)


@register
class FirstFit(Policy):
    """The first node of the node list the pod fits on."""

    name = "first-fit"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        return cand.astype(np.float64)


@register
class BestFit(Policy):
    """Least CPU and GPU left after placing, each normalized by the largest node's, weighted 1/2 each."""

    name = "best-fit"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        pods = self.ctx.pods
        cpu = (state.cpu[cand] - pods.cpu[i]) / MAX_CPU
        gpu = (_gpu_left(state, cand) - pods.num[i] * pods.milli[i]) / MAX_GPU
        return 0.5 * cpu + 0.5 * gpu


class _Allocated(Policy):
    """Kubernetes ``NodeResourcesFit`` scoring over CPU, memory and GPU (equal weights): the mean over
    the resources the node has of the fraction left free after placing."""

    def free_fraction(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        nodes, pods = self.ctx.nodes, self.ctx.pods
        cpu = (state.cpu[cand] - pods.cpu[i]) / np.maximum(nodes.cpu[cand], 1)
        mem = (state.mem[cand] - pods.mem[i]) / np.maximum(nodes.mem[cand], 1)
        cap = nodes.gpus[cand] * MILLI
        has = cap > 0
        gpu = np.where(has, (_gpu_left(state, cand) - pods.num[i] * pods.milli[i]) / np.maximum(cap, 1), 0.0)
        return (cpu + mem + gpu) / (2 + has)


@register
class LeastAllocated(_Allocated):
    """Kubernetes ``LeastAllocated`` (the default): spread — the node left with the most free."""

    name = "least-allocated"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        return -self.free_fraction(state, i, cand)


@register
class MostAllocated(_Allocated):
    """Kubernetes ``MostAllocated``: pack — the node left with the least free."""

    name = "most-allocated"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        return self.free_fraction(state, i, cand)


@register
class DotProduct(Policy):
    """Tetris-style alignment (the artifact's ``DotProd``): the least dot product of the normalized request
    (CPU, GPU) and the node's normalized free (CPU, GPU)."""

    name = "dot-product"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        pods = self.ctx.pods
        req_cpu, req_gpu = pods.cpu[i] / MAX_CPU, pods.num[i] * pods.milli[i] / MAX_GPU
        return req_cpu * state.cpu[cand] / MAX_CPU + req_gpu * _gpu_left(state, cand) / MAX_GPU


@register
class GpuPacking(Policy):
    """The artifact's ``GpuPacking`` tiers (higher score wins): a share on an already shared GPU (100 minus
    a tenth of its free percent, at least 50) > free GPUs of a used node (50 minus the free GPUs taken, at
    least 33) > an empty node (33 minus its GPUs, at least its GPUs). CPU-only pods: all equal."""

    name = "gpu-packing"

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        pods = self.ctx.pods
        num, milli = int(pods.num[i]), int(pods.milli[i])
        if not num:
            return np.zeros(cand.size)
        full = state.full[cand]
        empty = full == self.ctx.nodes.gpus[cand]
        if milli < MILLI:
            row = state.gpu[cand]
            least = np.where(row >= milli, row, MILLI + 1).min(axis=1)  # the fullest GPU it fits on
            used = np.where(
                least == MILLI, np.maximum(50 - 1, 33), np.maximum(100 - (least * 100 // MILLI) // 10, 50)
            )
        else:
            used = np.full(cand.size, max(50 - num, 33))
        return -np.where(empty, np.maximum(33 - full, full), used).astype(np.float64)


#: GPU-count classes of the artifact's ``GpuClustering`` (its GPU affinity tags).
def _gpu_class(num: int, milli: int) -> int:
    """0 share, 1 one GPU, 2 two, 3 four, 4 eight, 5 any other count (-1 for CPU-only)."""
    if not num:
        return -1
    if milli < MILLI:
        return 0
    return {1: 1, 2: 2, 4: 3, 8: 4}.get(num, 5)


@register
class GpuClustering(Policy):
    """The artifact's ``GpuClustering``: pods of one GPU-count class together. Tiers (higher wins): a node
    running only that class > running it among others > running no GPU pod > running other classes; within
    a tier, the less GPU left the better (``25 x used / 8000``). CPU-only pods: all equal."""

    name = "gpu-clustering"

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.classes = np.zeros(len(ctx.nodes), dtype=np.int64)  # bit c set: a class-c pod runs there

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        pods = self.ctx.pods
        c = _gpu_class(int(pods.num[i]), int(pods.milli[i]))
        if c < 0:
            return np.zeros(cand.size)
        bits = self.classes[cand]
        mine = (bits >> c) & 1 == 1
        tier = np.where(mine, np.where(bits == 1 << c, 3, 2), np.where(bits == 0, 1, 0))
        return -(tier * 25 + 25 * (MAX_GPU - _gpu_left(state, cand)) // MAX_GPU).astype(np.float64)

    def placed(self, state: FillState, node: int, i: int) -> None:
        pods = self.ctx.pods
        c = _gpu_class(int(pods.num[i]), int(pods.milli[i]))
        if c >= 0:
            self.classes[node] |= 1 << c
