"""Fragmentation gradient descent (FGD; Weng et al., "Beware of Fragmentation", USENIX ATC '23).

**The measure** (:mod:`placer.solver.objective.fragmentation`, shared with the engines' ``fgd`` scorer). A
*target workload* is a distribution of task shapes ``m`` (CPU, GPUs per task, milli per
GPU, accepted GPU models) with probabilities ``p_m`` (:func:`target_workload`). For a node with ``C``
free milli-CPU and free GPU milli ``a_1..a_G`` (total ``T``), the fragment *for task m* is

* ``T`` — every free GPU milli — when ``m`` cannot run there at all: it needs no GPU (a CPU-only task
  uses none of it), the node's GPU model is not one ``m`` accepts, ``C`` is below ``m``'s CPU, or fewer
  than ``m``'s GPU count of GPUs have ``m``'s milli free;
* otherwise ``sum of a_g over the GPUs with a_g < m's milli`` — the GPUs too full for ``m``.

The node's fragmentation is the expectation ``F = sum_m p_m x frag_m`` (:func:`fragmentation`); the
cluster's is the sum over nodes. **The policy** places each arriving pod on the node — and, for a GPU
share, the GPU — whose ``F`` grows least (the "gradient" step of the descent). Memory is not part of the
measure (as in the paper), only of feasibility.

**Scoring as the artifact does.** The artifact's plugin scores a node ``int(100 x sigmoid(-dF / 1000))``
(:func:`quantized`): increases within a few dozen milli of each other get the same integer, and
kube-scheduler's choice among equal scores follows the node order, which the artifact randomizes per
seed. ``fgd`` does the same (ties to the run's random node rank, a share to the lowest-indexed best GPU)
and reproduces the paper's figures within a few tenths (``docs/fill.md``). The quantization matters:
``fgd-exact``, comparing ``dF`` exactly, allocates about one point less on the default trace — near-ties
broken by a fixed node order pack pods onto the same nodes, which FGD's measure alone does not value.
Increases are rounded to :data:`~placer.solver.scorers.FGD_DECIMALS` decimals of a milli-GPU, as the
engines round them: an increase that is 0 in exact arithmetic can come out of the float sums as
``4.5e-13``, and the artifact's score then falls from 50 to 49 on that node alone, so summation order
would decide between nodes FGD's measure calls equal (``tests/scenarios/fill/test_engine_as_fgd.py``
found it).

``placer-frag`` takes that further for the pods whose ``dF`` barely tells nodes apart: whole-GPU and
CPU-only pods are scored on a coarser scale (:data:`COARSE_LEVELS` levels), shares as FGD scores them.

Speed: each placement changes one node, so ``dF`` per (node, pod shape) is cached and only rows of nodes
changed since (``FillState.version``) are recomputed — an arrival costs microseconds, not a scan of the
cluster's 10,000 GPUs times the target workload.

>>> t = Targets(p=np.array([0.5, 0.3, 0.2]), cpu=np.array([4000, 2000, 1000]), milli=np.array([1000, 500, 0]),
...             num=np.array([1, 1, 0]), access=np.ones((3, 9), dtype=bool))
>>> fragmentation(np.array([8000]), np.array([[1000, 300]]), np.ones((1, 3), dtype=bool), t).tolist()
[500.0]
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from placer.scenarios.fill.policies import Context, Policy, register
from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import MILLI, PodTable
from placer.solver.objective.fragmentation import (
    COARSE_LEVELS,
    SCORE_LEVELS,
    Targets,
    fragmentation,
    quantized,
)
from placer.solver.scorers import FGD_DECIMALS

__all__ = [
    "COARSE_LEVELS",
    "POPULARITY",
    "SCORE_LEVELS",
    "Fgd",
    "FgdExact",
    "PlacerFrag",
    "Targets",
    "fragmentation",
    "quantized",
    "target_workload",
]

#: Share of the trace's pods the target workload covers, most popular shapes first (the artifact's
#: ``podPopularityThreshold: 95``), renormalized.
POPULARITY = 0.95


def target_workload(pods: PodTable, popularity: float = POPULARITY) -> Targets:
    """The trace's task shapes by popularity (pods per shape), the most popular first until they cover
    ``popularity`` of the pods, renormalized to sum to 1. CPU-only pods are shapes too (the artifact's
    ``isInvolvedCpuPods: true``); memory is not part of a shape.

    >>> from placer.scenarios.traces.alibaba import OpenbPod
    >>> pods = PodTable.of([OpenbPod("a", 1000, 1, 1, 500)] * 3 + [OpenbPod("b", 2000, 1, 0, 0)])
    >>> t = target_workload(pods, popularity=0.5)
    >>> t.p.tolist(), t.milli.tolist()
    ([1.0], [500])
    """
    keys = [
        (int(pods.cpu[i]), int(pods.milli[i]), int(pods.num[i]), pods.access[i].tobytes())
        for i in range(len(pods))
    ]
    counts = Counter(keys)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][:3], kv[0][3]))
    chosen, covered = [], 0
    for key, n in ranked:
        if covered >= popularity * len(pods):
            break
        chosen.append((key, n))
        covered += n
    first = {k: i for i, k in reversed(list(enumerate(keys)))}
    rows = [first[k] for k, _ in chosen]
    weights = np.array([n for _, n in chosen], dtype=np.float64)
    return Targets(
        p=weights / weights.sum(),
        cpu=pods.cpu[rows],
        milli=pods.milli[rows],
        num=pods.num[rows],
        access=pods.access[rows],
    )


class _Cache:
    """Per (pod shape): ``dF`` and the GPU FGD picks for a share, for every node, valid while the node's
    version is ``ver``."""

    def __init__(self, n: int):
        self.delta = np.zeros(n)
        self.gpu = np.zeros(n, dtype=np.int64)
        self.ver = np.full(n, -1, dtype=np.int64)


@register
class Fgd(Policy):
    """FGD as the artifact runs it: the node (and, for a share, the GPU) with the best quantized score
    (:func:`quantized`); ties to the lowest node rank and the lowest GPU index."""

    name = "fgd"
    #: Score levels of :func:`quantized`; None compares the increases exactly (``fgd-exact``).
    levels: int | None = SCORE_LEVELS

    def __init__(self, ctx: Context, targets: Targets | None = None):
        super().__init__(ctx)
        self.targets = targets or target_workload(ctx.pods)
        # access[n, m]: target m accepts node n's GPU model (static).
        self.access = self.targets.access[:, ctx.nodes.model].T.copy()
        n = len(ctx.nodes)
        self.now = np.zeros(n)
        self.now_ver = np.full(n, -1, dtype=np.int64)
        self.cache: dict[tuple[int, int, int], _Cache] = {}

    def key(self, delta: np.ndarray) -> np.ndarray:
        """Lower is better: the quantized score negated, or the increase itself."""
        return delta if self.levels is None else -quantized(delta, self.levels).astype(np.float64)

    def deltas(self, state: FillState, i: int, cand: np.ndarray) -> tuple[np.ndarray, _Cache]:
        """``dF`` of placing pod ``i`` on each candidate node (refreshing stale cache rows)."""
        pods = self.ctx.pods
        shape = (int(pods.cpu[i]), int(pods.milli[i]), int(pods.num[i]))
        c = self.cache.get(shape)
        if c is None:
            c = self.cache[shape] = _Cache(len(self.ctx.nodes))
        stale = cand[c.ver[cand] != state.version[cand]]
        if stale.size:
            self._refresh(state, stale, shape, c)
        return c.delta[cand], c

    def _refresh(self, state: FillState, idx: np.ndarray, shape: tuple[int, int, int], c: _Cache) -> None:
        old = idx[self.now_ver[idx] != state.version[idx]]
        if old.size:
            self.now[old] = fragmentation(state.cpu[old], state.gpu[old], self.access[old], self.targets)
            self.now_ver[old] = state.version[old]
        cpu_req, milli, num = shape
        cpu = state.cpu[idx] - cpu_req
        gpu = state.gpu[idx]
        acc = self.access[idx]
        if num == 1 and milli < MILLI:  # a share: try each GPU it fits on, keep the best (lowest index)
            width = gpu.shape[1]
            after = np.repeat(gpu[:, None, :], width, axis=1)
            diag = np.arange(width)
            after[:, diag, diag] -= milli
            f = fragmentation(
                np.repeat(cpu, width), after.reshape(-1, width), np.repeat(acc, width, axis=0), self.targets
            ).reshape(-1, width)
            delta = np.round(f - self.now[idx][:, None], FGD_DECIMALS)
            key = np.where(gpu >= milli, self.key(delta), np.inf)
            best = key.argmin(axis=1)
            c.gpu[idx] = best
            c.delta[idx] = delta[np.arange(idx.size), best]
        else:
            after = gpu.copy()
            if num:
                free = after == MILLI
                after[free & (np.cumsum(free, axis=1) <= num)] = 0
            c.delta[idx] = np.round(
                fragmentation(cpu, after, acc, self.targets) - self.now[idx], FGD_DECIMALS
            )
        c.ver[idx] = state.version[idx]

    def choose(self, state: FillState, i: int, mask: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
        cand = np.flatnonzero(mask)
        if cand.size == 0:
            return None
        delta, c = self.deltas(state, i, cand)
        node = int(cand[self.best(self.key(delta), cand)])
        pods = self.ctx.pods
        if pods.num[i] == 1 and pods.milli[i] < MILLI:
            return node, (int(c.gpu[node]),)
        return node, state.gpus_for(node, pods, i)


@register
class FgdExact(Fgd):
    """FGD with the increases compared exactly (no score quantization); ties to the lowest rank."""

    name = "fgd-exact"
    levels = None


@register
class PlacerFrag(Fgd):
    """placer's refinement of FGD: shares are scored as FGD scores them, whole-GPU and CPU-only pods on a
    coarser scale (:data:`COARSE_LEVELS`), so more of their near-equal nodes tie and the run's fixed
    node order decides — consistent packing where FGD's measure barely tells nodes apart."""

    name = "placer-frag"

    def choose(self, state: FillState, i: int, mask: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
        pods = self.ctx.pods
        if pods.num[i] == 1 and pods.milli[i] < MILLI:
            return super().choose(state, i, mask)
        cand = np.flatnonzero(mask)
        if cand.size == 0:
            return None
        delta, _ = self.deltas(state, i, cand)
        node = int(cand[self.best(-quantized(delta, COARSE_LEVELS).astype(np.float64), cand)])
        return node, state.gpus_for(node, pods, i)
