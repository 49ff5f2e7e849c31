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

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from placer.solver.candidates import NodeArrays, UnitCandidates
from placer.solver.demand import JobPlan, Unit
from placer.solver.objective.fragmentation import (
    COARSE_LEVELS,
    MILLI,
    SCORE_LEVELS,
    Targets,
    fragmentation,
    target_workload,
)
from placer.solver.objective.kernels import (
    CacheArgs,
    best_node,
    count_into,
    count_share_into,
    share_deltas,
    weights,
    whole_deltas,
)

if TYPE_CHECKING:  # greedy imports this module; State is only needed for annotations here
    from placer.solver.greedy.state import State

#: FGD increases are rounded to this many decimals of a milli-GPU (the kernels' ``_round6``), so closer
#: ones are ties: float sums must not decide between equal nodes.
FGD_DECIMALS = 6


@dataclass(eq=False)
class _Deltas:
    """FGD's increase, share GPU and score per node for one replica shape, valid while the node's version
    is ``ver`` (a placement changes one node: only its row is computed again). The score is the
    increase quantized as placer's node choice compares it (:func:`score_levels`)."""

    delta: np.ndarray
    gpu: np.ndarray
    ver: np.ndarray
    score: np.ndarray

    @staticmethod
    def of(n: int) -> _Deltas:
        return _Deltas(
            np.zeros(n),
            np.full(n, -1, dtype=np.int64),
            np.full(n, -1, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
        )

    @property
    def args(self) -> CacheArgs:
        return (self.delta, self.gpu, self.ver, self.score)


def score_levels(unit: Unit) -> int:
    """How finely placer's node choice compares FGD's increases for ``unit``: GPU shares on the artifact's
    scale (:data:`SCORE_LEVELS`), whole GPUs and CPU-only work on a coarser one (:data:`COARSE_LEVELS`),
    so their near-equal nodes tie and the next keys pack them (``docs/solver.md``, *Scoring*)."""
    return SCORE_LEVELS if unit.need.milli and not unit.need.gpus else COARSE_LEVELS


#: (node rows, the target's shapes to count, the array to write them into, its first column to write):
#: writes the rows' fragments for those shapes (:func:`~placer.solver.objective.kernels.count_into`).
_Count = Callable[[np.ndarray, Targets, np.ndarray, int], None]


@dataclass(eq=False)
class _Fragments:
    """One node state's :func:`fragments` per node, column by target shape (``keys``, the shapes of
    ``held``), the last axis of ``vals`` (``[node, shape]``, or ``[node, GPU, shape]`` after a share);
    row ``k`` holds for the node state of version ``ver[k]``.

    Why columns and not the weighted sum: a target that changes (a session re-makes it as arrivals come)
    mostly re-weights the same shapes, and a column depends on its shape alone. The columns of every shape
    a target has named are held (up to :data:`HELD_SHAPES`), not only the current target's, and a row
    counted again counts them all: a learned target's lightest shapes drop out of it and come back as
    arrivals move their weights, and a shape that comes back then costs nothing (the fill: 920 targets
    of one run each brought about four such shapes, whose count for every node was a tenth of the run).
    A stale row costs the same with 30 columns or 100: its count is a few array operations on one node.
    Stored as float32: fragments are sums of whole milli, exact there. ``vals`` has room for more columns
    than it holds (the first ``len(keys)`` are held): a target that brings new shapes writes them into the
    room, and the array is copied only when the room runs out (then to twice the columns) — copying
    ``nodes x GPUs x shapes`` for every new target was a third of the cost of a target change."""

    keys: tuple[tuple[float, int, int, bytes], ...]
    vals: np.ndarray
    ver: np.ndarray
    held: Targets | None = None
    #: The target the weights ``_p`` are for: its probabilities on the held columns, 0 on the others.
    _for: Targets | None = None
    _p: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: The expected fragment against ``_for`` per row (``[node]`` or ``[node, GPU]``), valid for the node
    #: state of version ``_e_ver``: a target serves many calls (every replica shape's increases read the
    #: fragments now), and a row's expectation changes only with the row or the target.
    _e: np.ndarray = field(default_factory=lambda: np.zeros(0))
    _e_ver: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: What :meth:`kernel_args` gives, until the columns or the target change.
    _args: CacheArgs | None = None
    #: Each held key's column (``keys`` by position), and the held shapes' ``access`` as the kernels read
    #: it (C order), kept while the held shapes stand: a target change re-weighs the columns, and making
    #: these again for every replica shape's cache was a fifth of its cost.
    _index: dict[tuple[float, int, int, bytes], int] = field(default_factory=dict)
    _access: np.ndarray | None = None

    @staticmethod
    def of(n: int, inner: tuple[int, ...]) -> _Fragments:
        return _Fragments((), np.zeros((n, *inner, 0), dtype=np.float32), np.full(n, -1, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return int(self.vals.nbytes)

    def kernel_args(self, t: Targets, version: np.ndarray, count: _Count) -> CacheArgs:
        """This cache as the fused kernels read it (:func:`~placer.solver.objective.kernels.whole_deltas`),
        its columns selected for ``t`` first (``count``: how to count the new ones)."""
        if t is not self._for:
            self._select(t, version, count)
        if self._args is None:
            h = self.held
            assert h is not None
            if self._access is None:
                self._access = np.ascontiguousarray(h.access, dtype=np.bool_)
            self._args = (
                self.vals,
                self.ver,
                self._e,
                self._e_ver,
                self._access,
                np.ascontiguousarray(h.cpu, dtype=np.float64),
                np.ascontiguousarray(h.milli, dtype=np.int64),
                np.ascontiguousarray(h.num, dtype=np.int64),
                *weights(self._p),
            )
        return self._args

    def _select(self, t: Targets, version: np.ndarray, count: _Count) -> None:
        """Hold ``t``'s shapes (count the new ones for the current rows) and weigh the columns by ``t``."""
        index = self._index
        fresh = [m for m, key in enumerate(t.keys) if key not in index]
        if fresh and len(self.keys) + len(fresh) > HELD_SHAPES:  # start over from t's shapes alone
            self.keys, self.held, fresh = (), None, list(range(t.size))
            index = self._index = {}
            self.ver[:] = -1
        if fresh:
            new = t.columns(fresh)
            held, width = len(self.keys), len(self.keys) + len(fresh)
            if width > self.vals.shape[-1]:  # out of room: twice the columns (at most all a cache holds)
                vals = np.zeros((*self.vals.shape[:-1], min(HELD_SHAPES, 2 * width)), dtype=np.float32)
                vals[..., :held] = self.vals[..., :held]
                self.vals = vals
            current = self.ver == version
            if current.any():
                rows = np.flatnonzero(current)
                count(rows, new, self.vals, held)
            # A row held for another state than this call's lacks the new columns (its state is not at
            # hand to count them): it is no longer held. Why it matters: the next call starts again from
            # the arrays' stamps, so a row a greedy tick made stale here is current there — and read its
            # new columns as 0 (a session's greedy then chose another node than place()'s).
            self.ver[~current] = -1
            for m in fresh:
                index[t.keys[m]] = len(index)
            self.held = new if self.held is None else _joined(self.held, new)
            # The held target's keys, without packing every held column again (a target change selects
            # in every replica shape's cache: that was a sixth of the change's cost).
            self.keys, self._access = (*self.keys, *(t.keys[m] for m in fresh)), None
        self._p = np.zeros(len(self.keys))
        self._p[[index[k] for k in t.keys]] = t.p
        self._for = t
        if self._e.shape != self.vals.shape[:-1]:
            self._e = np.zeros(self.vals.shape[:-1])
        if len(self._e_ver) != len(self.ver):
            self._e_ver = np.empty(len(self.ver), dtype=np.int64)
        self._e_ver.fill(-1)  # every expectation stale: each is weighed again when read (e is rewritten)
        self._args = None


#: The most target shapes a cache of fragments holds columns for; beyond, it starts over from the shapes
#: of the target in force (four times what one target keeps, ``fragmentation.MAX_SHAPES``).
HELD_SHAPES = 128


def _joined(a: Targets, b: Targets) -> Targets:
    """The shapes of ``a`` then ``b`` as one target (what a cache of fragments counts; weights unused)."""
    return Targets(
        p=np.concatenate([a.p, b.p]),
        cpu=np.concatenate([a.cpu, b.cpu]),
        milli=np.concatenate([a.milli, b.milli]),
        num=np.concatenate([a.num, b.num]),
        access=np.concatenate([a.access, b.access], axis=1),
    )


@dataclass(eq=False)
class _Store:
    """FGD's answers per node stamp (:attr:`NodeArrays.stamp`), kept in the arrays' static answers so a
    session's next decision reuses every row whose node did not change: the fragments of each node now
    and after one replica of each shape (:class:`_Fragments`, kept across targets), and for the target in
    force the increases they give (:class:`_Deltas`).

    The fragments after a replica are the big ones (``nodes x GPUs x shapes`` for a share): the least
    recently used replica shapes are dropped beyond :data:`FRAGMENT_BYTES`, and counted again if they
    come back."""

    targets: Targets
    now: _Fragments
    after: OrderedDict[tuple[float, int, int], _Fragments] = field(default_factory=OrderedDict)
    deltas: dict[tuple[float, int, int], _Deltas] = field(default_factory=dict)

    @staticmethod
    def of(arrays: NodeArrays, targets: Targets) -> _Store:
        """The store of ``arrays``, its increases kept when ``targets`` is the target they were made for
        (a session's target in force), dropped otherwise (its fragments are kept)."""
        hit = arrays._static_cache.get("__fgd__")
        if hit is not None:
            if hit.targets is not targets:
                hit.targets, hit.deltas = targets, {}
            return hit
        store = arrays._static_cache["__fgd__"] = _Store(targets, _Fragments.of(len(arrays.snap.nodes), ()))
        return store

    def fragments_after(self, key: tuple[float, int, int], n: int, inner: tuple[int, ...]) -> _Fragments:
        """The fragments after one replica of shape ``key`` (made empty the first time)."""
        hit = self.after.get(key)
        if hit is not None:
            self.after.move_to_end(key)
            return hit
        made = self.after[key] = _Fragments.of(n, inner)
        used = sum(f.nbytes for f in self.after.values())
        while used > FRAGMENT_BYTES and len(self.after) > 1:
            _, dropped = self.after.popitem(last=False)
            used -= dropped.nbytes
        return made


#: What the fragments after replicas may hold, in bytes, before the least recently used shapes go.
FRAGMENT_BYTES = 256 << 20


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
    #: Whether ``free`` and ``version`` are this context's own copies (they are the arrays' until then).
    _own: bool = False

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
        if name == "fgd" and targets is None:
            targets = target_workload(plans, candidates, n)
        return Context(
            name=name,
            arrays=arrays,
            fn=SCORERS[name],
            targets=targets,
            free=arrays.milli_matrix(),  # the arrays' own until greedy changes a node (:meth:`gpus`)
            version=arrays.stamp,
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
            if not self._own:  # copied on the first change: a decision that changes nothing copies nothing
                self.free, self.version, self._own = self.free.copy(), self.version.copy(), True
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
        return int(_fgd_deltas(self, state, unit, np.array([node])).gpu[node])


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


def _fgd_deltas(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> _Deltas:
    """FGD's fragmentation increase of placing one replica of ``unit``, and for a share the GPU that gives
    it (the lowest-indexed best; -1 otherwise), brought up to date on the nodes ``idx``: cached per
    replica shape and node until greedy changes the node, and computed in one compiled pass over ``idx``
    (``objective/kernels.py``) that counts and weighs again the cached fragments now and after the
    replica only where a node changed. A change of target first selects the caches' columns
    (:meth:`_Fragments._select`, counting only its new shapes)."""
    ctx.gpus(state, idx[:0])  # bring the versions up to date
    t, store, need = ctx.targets, ctx.store, unit.need
    assert t is not None and store is not None
    key = (float(need.cpu), need.gpus, need.milli)
    cache = store.deltas.get(key)
    if cache is None:
        cache = store.deltas[key] = _Deltas.of(len(ctx.version))
    n = len(ctx.version)

    def count_now(rows: np.ndarray, tt: Targets, out: np.ndarray, first: int) -> None:
        count_into(out, first, rows, state.cpu, ctx.free, tt.access, tt)

    now = store.now.kernel_args(t, ctx.version, count_now)
    if need.milli and not need.gpus:  # a share: try each GPU it fits on, keep the best

        def count_share(rows: np.ndarray, tt: Targets, out: np.ndarray, first: int) -> None:
            count_share_into(
                out, first, rows, state.cpu, ctx.free, tt.access, tt, need_cpu=need.cpu, milli=need.milli
            )

        after = store.fragments_after(key, n, (ctx.free.shape[1],)).kernel_args(t, ctx.version, count_share)
        share_deltas(
            idx,
            ctx.version,
            state.cpu,
            ctx.free,
            need.cpu,
            need.milli,
            now,
            after,
            cache.args,
            score_levels(unit),
        )
        return cache

    def count_whole(rows: np.ndarray, tt: Targets, out: np.ndarray, first: int) -> None:
        # greedy takes the lowest-indexed whole free GPUs
        count_into(out, first, rows, state.cpu, ctx.free, tt.access, tt, need_cpu=need.cpu, take=need.gpus)

    after = store.fragments_after(key, n, ()).kernel_args(t, ctx.version, count_whole)
    whole_deltas(
        idx, ctx.version, state.cpu, ctx.free, need.cpu, need.gpus, now, after, cache.args, score_levels(unit)
    )
    return cache


def fgd_scores(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """FGD's increase of one replica of ``unit`` on each node of ``idx``, quantized as placer's node choice
    compares it (:func:`score_levels`; higher is better)."""
    return _fgd_deltas(ctx, state, unit, idx).score[idx]


def fgd_best(ctx: Context, state: State, unit: Unit, idx: np.ndarray, fit: np.ndarray) -> int:
    """The node of ``idx`` with the best FGD score for one replica of ``unit`` (:func:`fgd_scores`), then
    the least ``fit``, then the first: greedy's levels below preference when no node is priced and
    nothing is evicted, in one compiled pass."""
    return best_node(idx, _fgd_deltas(ctx, state, unit, idx).score, fit)


def fgd_increase(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """FGD's fragmentation increase of one replica of ``unit`` on each node of ``idx`` (cached; placer's
    own node choice compares it quantized, :func:`fgd_scores`)."""
    return _fgd_deltas(ctx, state, unit, idx).delta[idx]


def fgd(ctx: Context, state: State, unit: Unit, idx: np.ndarray) -> np.ndarray:
    """Fragmentation gradient descent (Weng et al., "Beware of Fragmentation", USENIX ATC '23): the node
    whose expected GPU fragmentation against the batch's target workload (:func:`target_workload`) grows
    least — so a 1-GPU task goes to a partly used node rather than breaking a whole one an 8-GPU task of
    the batch could use. Exact increases (the artifact's 0-100 score quantization is not applied)."""
    return _fgd_deltas(ctx, state, unit, idx).delta[idx]


#: name -> scorer (the baselines of ``Policy.scorer``; ``placer`` is greedy's own scoring, not here).
SCORERS: dict[str, ScoreFn] = {
    "first-fit": first_fit,
    "best-fit": best_fit,
    "least-allocated": least_allocated,
    "most-allocated": most_allocated,
    "fgd": fgd,
}

__all__ = [
    "SCORERS",
    "Context",
    "Targets",
    "fgd_best",
    "fgd_increase",
    "fgd_scores",
    "fragmentation",
    "score_levels",
    "target_workload",
]
