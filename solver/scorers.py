"""Baseline node scorers for greedy: how textbook schedulers would choose the node for one replica.

Why they exist: a study of placer must compare like with like — the same batches, the same hard
constraints, the same simulator — and change only the rule that picks a node. Each scorer below is that
rule, written from its published definition, as a key per candidate node (lower is better; ties go to
the lowest node index). Greedy calls it instead of its own keys (:func:`placer.solver.greedy.core._choose`)
when
``Policy.scorer`` names it (``engine: fgd`` in a scenario, ``placer simulate --engine fgd``).

What a baseline keeps: the candidates (every hard constraint: labels, GPU type, anti-affinity, gang
scopes, exclusivity, budgets, node counts), greedy's job order, its whole-gang placement, the fullest-first
order of a scoped gang's domains, its evictions (least eviction cost stays the first key when a job only
fits by evicting) and TPU slice choice — so every decision still passes :func:`placer.solver.checks.check`.
What it drops (that is what makes it a baseline): placer's soft preferences (affinity, model and data
locality, spot preference), the cost term, keeping NVLink nodes for NVLink work and GPU nodes for GPU work.

====================  ==================================================================================
name                  key of a node (lower wins), after placing the replica there
====================  ==================================================================================
``first-fit``         its index: the first node, in cluster order, where the replica fits
``best-fit``          free CPU / largest node's CPU + free GPU / largest node's GPUs, weighted 1/2 each
``least-allocated``   Kubernetes ``NodeResourcesFit`` ``LeastAllocated`` (spread): minus the mean over
                      CPU, memory and GPUs (those the node has) of free / allocatable
``most-allocated``    Kubernetes ``MostAllocated`` (pack): that same mean, so the fullest node wins
``fgd``               fragmentation gradient descent (Weng et al., ATC '23): the growth of the node's
                      expected GPU fragmentation against the batch's target workload (:func:`fragmentation`)
====================  ==================================================================================

GPUs count in milli (a whole GPU is 1000), so fractional shares weigh what they take. Kubernetes' scores
are integers 0-100 and kube-scheduler picks at random among equal ones; these keys are exact and ties go
to node order, so a run is reproducible. Kubernetes skips a resource the node has none of (a CPU node's
GPUs); so do these.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.engine import place
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> from placer.solver.policy import Policy
>>> busy = {"job": "r", "replicas": [{"node": "dgx-h100-2", "gpus": [0, 1, 2, 3, 4]}]}
>>> cluster = cluster_of(dgx_h100(2)).allocate(busy)
>>> one = Job(id="one", tasks=[TaskGroup(gpu=GpuDemand(count=1))])
>>> eight = Job(id="eight", priority_class="spot", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
>>> for name in SCORERS:  # "one" is placed first (higher priority): does it leave room for "eight"?
...     d = place([one, eight], cluster, Policy(scorer=name))
...     print(f"{name:16}", {p.job: p.replicas[0].node for p in d.placements})
first-fit        {'one': 'dgx-h100-1'}
best-fit         {'eight': 'dgx-h100-1', 'one': 'dgx-h100-2'}
least-allocated  {'one': 'dgx-h100-1'}
most-allocated   {'eight': 'dgx-h100-1', 'one': 'dgx-h100-2'}
fgd              {'eight': 'dgx-h100-1', 'one': 'dgx-h100-2'}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from placer.solver.candidates import NodeArrays, UnitCandidates
from placer.solver.demand import JobPlan, Unit
from placer.solver.objective.fragmentation import (
    MILLI,
    Targets,
    fragmentation,
    fragmentation_after_share,
    target_workload,
)

if TYPE_CHECKING:  # greedy imports this module; State is only needed for annotations here
    from placer.solver.greedy.state import State

#: FGD increases closer than this (milli-GPUs) are ties: float sums must not decide between equal nodes.
FGD_DECIMALS = 6


@dataclass(eq=False)
class _Deltas:
    """FGD's increase and share GPU per node for one replica shape, valid while the node's version is
    ``ver`` (a placement changes one node: only its row is computed again)."""

    delta: np.ndarray
    gpu: np.ndarray
    ver: np.ndarray

    @staticmethod
    def of(n: int) -> _Deltas:
        return _Deltas(np.zeros(n), np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64))


@dataclass(eq=False)
class _Store:
    """FGD's answers for one target workload, per node stamp (:attr:`NodeArrays.stamp`): the node's
    fragmentation now, and its increase per replica shape. Kept in the arrays' static answers, so a
    session's next decision reuses every row whose node did not change."""

    targets: Targets
    now: np.ndarray
    now_ver: np.ndarray
    deltas: dict[tuple[float, int, int], _Deltas] = field(default_factory=dict)

    @staticmethod
    def of(arrays: NodeArrays, targets: Targets) -> _Store:
        """The store of ``arrays`` for ``targets`` (the same object: a session's target in force), or a
        fresh one that replaces it."""
        hit = arrays._static_cache.get("__fgd__")
        if hit is not None and hit.targets is targets:
            return hit  # type: ignore[no-any-return]
        n = len(arrays.snap.nodes)
        store = arrays._static_cache["__fgd__"] = _Store(targets, np.zeros(n), np.full(n, -1, dtype=np.int64))
        return store


@dataclass(eq=False)
class Context:
    """A scorer for one greedy call: its key function, the cluster's normalizers, FGD's target workload,
    and the free milli of every GPU (``free[n, g]``), kept in step with greedy's state through
    ``State.changed``. ``version[n]`` is the stamp of node ``n``'s state: the arrays' stamp at first, a
    fresh tick of their clock each time greedy changes the node, so FGD's cached answers (``store``) are
    read only for the state they were computed on."""

    name: str
    arrays: NodeArrays
    fn: ScoreFn
    targets: Targets | None = None
    free: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    version: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    store: _Store | None = None

    @staticmethod
    def of(
        name: str,
        plans: list[JobPlan],
        candidates: dict[int, list[UnitCandidates]],
        arrays: NodeArrays,
        targets: Targets | None = None,
    ) -> Context:
        """The scorer called ``name``; ``KeyError`` naming the known ones otherwise. ``targets``: FGD's
        target workload (default: the batch's, :func:`target_workload`)."""
        if name not in SCORERS:
            raise KeyError(f"unknown scorer {name!r} (known: {', '.join(SCORERS)})")
        n = len(arrays.snap.nodes)
        free = arrays.milli_matrix().copy()
        if name == "fgd" and targets is None:
            targets = target_workload(plans, candidates, n)
        return Context(
            name=name,
            arrays=arrays,
            fn=SCORERS[name],
            targets=targets,
            free=free,
            version=arrays.stamp.copy(),
            store=_Store.of(arrays, targets) if name == "fgd" and targets is not None else None,
        )

    @property
    def max_cpu(self) -> float:
        return max(1e-9, float(self.arrays.cap_cpu.max(initial=0.0)))

    @property
    def max_gpu_milli(self) -> float:
        return max(1.0, float(self.arrays.cap_gpus.max(initial=0)) * MILLI)

    def gpus(self, state: State, idx: np.ndarray) -> np.ndarray:
        """Free milli per GPU of the nodes ``idx`` now (rows of :attr:`free`, refreshed where greedy
        changed a node since the last look)."""
        if state.changed:
            for n in state.changed:
                row = state.milli_idx.get(n)
                shares = state.snap.nodes[n].milli_free if row is None else row
                self.free[n] = 0
                self.free[n, : len(shares)] = shares
                self.version[n] = self.arrays.clock.tick()
            state.changed.clear()
        return self.free[idx]

    def key(self, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
        """Per node of ``idx`` (candidates where one replica of ``unit`` fits), the scorer's key."""
        return self.fn(self, state, unit, idx)

    def share_gpu(self, state: State, node: int, unit: Unit) -> int | None:
        """The GPU of ``node`` a fractional share goes to: FGD's choice for ``fgd``, else None (greedy's
        best fit among the GPUs, as for placer)."""
        if self.name != "fgd" or unit.need.gpus or not unit.need.milli:
            return None
        _, gpu = _fgd_deltas(self, state, unit, np.array([node]))
        return int(gpu[0])


#: A scorer: (context, greedy's state, the unit, candidate node indices) -> key per candidate.
ScoreFn = Callable[[Context, "State", Unit, np.ndarray], np.ndarray]


def _milli_of(unit: Unit) -> int:
    """GPU milli one replica takes."""
    return unit.need.gpus * MILLI + unit.need.milli


def first_fit(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """The node's index: the first node in cluster order that fits wins — the simplest rule, and what a
    scheduler without scoring does."""
    return idx.astype(np.float64)


def best_fit(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """CPU and GPU left free after placing, each over the largest node's capacity, half and half: the
    tightest fit wins (the FGD paper's Best-fit baseline), so big holes stay for big jobs."""
    cpu = (state.cpu[idx] - unit.need.cpu) / ctx.max_cpu
    gpu = (ctx.gpus(state, idx).sum(axis=1) - _milli_of(unit)) / ctx.max_gpu_milli
    return 0.5 * cpu + 0.5 * gpu


def free_fraction(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """Kubernetes ``NodeResourcesFit`` scoring, before its integer rounding: the mean, over CPU, memory and
    GPUs, of what is free after placing over what the node has (a resource the node has none of is
    skipped, as Kubernetes skips zero allocatable)."""
    a, need = ctx.arrays, unit.need
    parts = [
        (state.cpu[idx] - need.cpu, a.cap_cpu[idx]),
        (state.mem[idx] - need.mem, a.cap_mem[idx]),
        (ctx.gpus(state, idx).sum(axis=1) - _milli_of(unit), a.cap_gpus[idx] * float(MILLI)),
    ]
    total = np.zeros(idx.size)
    count = np.zeros(idx.size)
    for left, cap in parts:
        has = cap > 0
        total += np.where(has, left / np.where(has, cap, 1.0), 0.0)
        count += has
    return total / np.maximum(count, 1)


def least_allocated(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """Kubernetes ``LeastAllocated`` (kube-scheduler's default): the node left with the largest free
    fraction wins — spreading, which keeps every node's headroom but fragments GPUs."""
    return -free_fraction(ctx, state, unit, idx)


def most_allocated(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """Kubernetes ``MostAllocated`` (bin packing): the node left with the smallest free fraction wins."""
    return free_fraction(ctx, state, unit, idx)


def _fgd_deltas(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FGD's fragmentation increase of placing one replica of ``unit`` on each node of ``idx``, and for a
    share the GPU that gives it (the lowest-indexed best; -1 otherwise). Cached per replica shape and
    node until greedy changes the node."""
    ctx.gpus(state, idx[:0])  # bring the versions up to date
    need = unit.need
    assert ctx.store is not None
    key = (float(need.cpu), need.gpus, need.milli)
    cache = ctx.store.deltas.setdefault(key, _Deltas.of(len(ctx.version)))
    stale = idx[cache.ver[idx] != ctx.version[idx]]
    if stale.size:
        cache.delta[stale], cache.gpu[stale] = _fgd_compute(ctx, state, unit, stale)
        cache.ver[stale] = ctx.version[stale]
    return cache.delta[idx], cache.gpu[idx]


def _fgd_compute(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = ctx.targets
    assert t is not None
    gpu = ctx.gpus(state, idx)
    acc = t.access[idx]
    store = ctx.store
    assert store is not None
    old = idx[store.now_ver[idx] != ctx.version[idx]]
    if old.size:
        store.now[old] = fragmentation(state.cpu[old], ctx.free[old], t.access[old], t)
        store.now_ver[old] = ctx.version[old]
    now = store.now[idx]
    cpu = state.cpu[idx] - unit.need.cpu
    need = unit.need
    choice = np.full(idx.size, -1, dtype=np.int64)
    if need.milli and not need.gpus:  # a share: try each GPU it fits on, keep the best
        f = fragmentation_after_share(cpu, gpu, need.milli, acc, t)
        delta = np.round(f - now[:, None], FGD_DECIMALS)
        delta = np.where(gpu >= need.milli, delta, np.inf)
        choice = delta.argmin(axis=1)
        return delta[np.arange(idx.size), choice], choice
    after = gpu.copy()
    if need.gpus:  # greedy takes the lowest-indexed whole free GPUs
        whole = after == MILLI
        after[whole & (np.cumsum(whole, axis=1) <= need.gpus)] = 0
    return np.round(fragmentation(cpu, after, acc, t) - now, FGD_DECIMALS), choice


def fgd_increase(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """FGD's fragmentation increase of one replica of ``unit`` on each node of ``idx`` (cached; placer's
    own node choice quantizes it, :func:`~placer.solver.objective.fragmentation.quantized`)."""
    return _fgd_deltas(ctx, state, unit, idx)[0]


def fgd(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """Fragmentation gradient descent (Weng et al., "Beware of Fragmentation", USENIX ATC '23): the node
    whose expected GPU fragmentation against the batch's target workload (:func:`target_workload`) grows
    least — so a 1-GPU task goes to a partly used node rather than breaking a whole one an 8-GPU task of
    the batch could use. Exact increases (the artifact's 0-100 score quantization is not applied)."""
    return _fgd_deltas(ctx, state, unit, idx)[0]


#: name -> scorer (the baselines of ``Policy.scorer``; ``placer`` is greedy's own scoring, not here).
SCORERS: dict[str, ScoreFn] = {
    "first-fit": first_fit,
    "best-fit": best_fit,
    "least-allocated": least_allocated,
    "most-allocated": most_allocated,
    "fgd": fgd,
}

__all__ = ["SCORERS", "Context", "Targets", "fgd_increase", "fragmentation", "target_workload"]
