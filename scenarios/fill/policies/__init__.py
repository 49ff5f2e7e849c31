"""Placement policies for the fill experiment: small scorers over the fill's node columns, by name.

Why separate from placer's engines: these are the *baselines* the FGD paper compares against (and FGD
itself), written from their published definitions so that placer's own engines (``greedy``, ``cpsat``,
run through ``place()`` by :mod:`placer.scenarios.fill.engines`) are measured against independent code. Each
policy sees the fill state (:class:`~placer.scenarios.fill.state.FillState`), the arriving pod and the mask of
nodes it fits on, and answers a node and GPU indices — or None, and the pod fails.

A policy scores the feasible nodes (lower is better); ties go to the node with the lowest *rank*, a random
permutation of the nodes drawn from the run's seed (the artifact renames nodes with a random prefix and
kube-scheduler picks at random among equal scores; a seeded rank does both, reproducibly).

==================  ==================================================================================
name                node choice
==================  ==================================================================================
``random``          uniformly at random among the nodes the pod fits on (shares: a random fitting GPU)
``first-fit``       the first node in node-list order
``best-fit``        least free CPU and GPU left, each over the largest node's (128 cores, 8 GPUs), 50/50
``least-allocated`` Kubernetes ``LeastAllocated``: most free CPU, memory and GPU left, as fractions
``most-allocated``  Kubernetes ``MostAllocated``: least free CPU, memory and GPU left, as fractions
``dot-product``     Tetris alignment: least dot product of the request and the node's free (CPU, GPU)
``gpu-packing``     shared GPUs first, then free GPUs of used nodes, then empty nodes (artifact tiers)
``gpu-clustering``  nodes already running pods of the same GPU-count class first (artifact tiers)
``fgd``             fragmentation gradient descent (Weng et al., ATC '23): least growth of the node's
                    expected GPU fragmentation w.r.t. the target workload, scored as the artifact
                    scores it (:mod:`.fgd`)
``fgd-exact``       FGD with the growth compared exactly (no score quantization)
``placer-frag``     placer's refinement of FGD: whole-GPU and CPU-only pods on a coarser score scale
==================  ==================================================================================

>>> sorted(POLICIES)[:4]
['best-fit', 'dot-product', 'fgd', 'fgd-exact']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import NodeTable, PodTable

#: Relative tolerance under which two scores are a tie (scores are sums of floats).
TIE = 1e-9


@dataclass
class Context:
    """What a policy may know besides the state: the trace (node and pod tables) and the run's seed."""

    nodes: NodeTable
    pods: PodTable
    seed: int
    rng: np.random.Generator = field(init=False)
    #: Tie-break rank of each node (a seeded random permutation).
    rank: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng([self.seed, 0x5EED])
        self.rank = self.rng.permutation(len(self.nodes))


class Policy:
    """Base class: score the feasible nodes (lower is better), break ties by rank, default GPU choice."""

    name = "base"

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def choose(self, state: FillState, i: int, mask: np.ndarray) -> tuple[int, tuple[int, ...]] | None:
        """The node and GPU indices for pod ``i`` among the nodes in ``mask``; None when there is none."""
        cand = np.flatnonzero(mask)
        if cand.size == 0:
            return None
        node = int(cand[self.best(self.score(state, i, cand), cand)])
        return node, self.gpus(state, node, i)

    def best(self, key: np.ndarray, cand: np.ndarray) -> int:
        """Position in ``cand`` of the lowest ``key``, ties (within :data:`TIE`) to the lowest rank."""
        low = key.min()
        tie = np.flatnonzero(key <= low + TIE * max(1.0, abs(float(low))))
        return int(tie[np.argmin(self.ctx.rank[cand[tie]])]) if tie.size > 1 else int(tie[0])

    def score(self, state: FillState, i: int, cand: np.ndarray) -> np.ndarray:
        """Per candidate node, the policy's key (lower is better)."""
        raise NotImplementedError

    def gpus(self, state: FillState, node: int, i: int) -> tuple[int, ...]:
        """GPU indices on the chosen node (default: best-fit share, lowest-indexed whole GPUs)."""
        return state.gpus_for(node, self.ctx.pods, i)

    def placed(self, state: FillState, node: int, i: int) -> None:
        """Told after pod ``i`` went to ``node`` by any means (policies with memory of their own)."""


#: name -> policy class; filled by the policy modules below (import order = help order).
POLICIES: dict[str, Callable[[Context], Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    """Class decorator: make a policy selectable by its ``name``."""
    POLICIES[cls.name] = cls
    return cls


def make(name: str, ctx: Context) -> Policy:
    """The policy called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return POLICIES[name](ctx)
    except KeyError:
        raise KeyError(f"unknown policy {name!r} (known: {', '.join(POLICIES)})") from None


from placer.scenarios.fill.policies import baselines, fgd  # noqa: E402  (registration)

__all__ = ["POLICIES", "Context", "Policy", "baselines", "fgd", "make", "register"]
