"""FGD's fragment counts compiled (numba): the engines' hot loop, equal to the numpy definition.

Why compiled: an online arrival changes one node, so FGD's measure counts again one to three rows of
fragments per arrival. In numpy each count is a dozen array operations on arrays of a few dozen
elements, and their call overhead, not arithmetic, was a third of an online decision (``docs/fill.md``,
*Online*). One loop over the node's GPUs and the target's shapes does the same count in a tenth of the
time, for one row and for the thousand rows a change of target counts again alike.

What stays numpy: :func:`~placer.solver.objective.fragmentation.fragments` and
:func:`~placer.solver.objective.fragmentation.fragments_after_share` are the readable definition, the
fill's ``fgd`` policy reads them (a baseline measured as it was), and ``tests/solver/objective/
test_kernels.py`` holds these kernels equal to them, element for element, on random node states. Both
count whole milli in exact arithmetic, so equal means identical.

>>> from placer.solver.objective.fragmentation import COARSE_LEVELS, Targets, fragments
>>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
>>> cpu, gpu, acc = np.array([8.0]), np.array([[1000, 300]]), np.ones((1, 2), dtype=bool)
>>> count_fragments(cpu, gpu, acc, t).tolist(), fragments(cpu, gpu, acc, t).tolist()
([[300.0, 300.0]], [[300.0, 300.0]])
"""

from __future__ import annotations

import numpy as np
from numba import njit

from placer.solver.objective.fragmentation import COARSE_LEVELS, Targets

__all__ = [
    "best_node",
    "count_fragments",
    "count_fragments_after_share",
    "count_into",
    "count_share_into",
    "share_deltas",
    "warm",
    "weigh_into",
    "weights",
    "whole_deltas",
]

#: A whole GPU in milli.
_MILLI = 1000
#: CPU within this of a shape's CPU fits it (the numpy definition's tolerance).
_EPS = 1e-9


@njit(cache=True, nogil=True, inline="always")
def _count_row(out, r, c0, cpu, free, access, need_cpu, take, tcpu, tmilli, tnum, gpu):  # pragma: no cover
    """``out[r, c0 + m]`` for every shape ``m``: node ``r`` less ``need_cpu`` and its ``take`` lowest whole
    free GPUs (``gpu``: scratch of one row)."""
    n_gpus = free.shape[1]
    c = cpu[r] - need_cpu
    taken = 0
    total = 0
    for g in range(n_gpus):
        v = free[r, g]
        if taken < take and v == _MILLI:  # the lowest-indexed whole free GPUs, as greedy takes them
            v = 0
            taken += 1
        gpu[g] = v
        total += v
    for m in range(tcpu.shape[0]):
        if not access[r, m] or tnum[m] <= 0 or c + _EPS < tcpu[m]:
            out[r, c0 + m] = total  # the shape cannot run here: every free milli is a fragment
            continue
        fits = 0
        below = 0
        for g in range(n_gpus):
            if gpu[g] >= tmilli[m]:
                fits += 1
            else:
                below += gpu[g]
        out[r, c0 + m] = below if fits >= tnum[m] else total


@njit(cache=True, nogil=True, inline="always")
def _count_share_row(out, r, c0, cpu, free, access, need_cpu, milli, tcpu, tmilli, tnum):  # pragma: no cover
    """``out[r, g, c0 + m]`` for every GPU ``g`` and shape ``m``: node ``r`` less ``need_cpu`` and a share
    of ``milli`` on GPU ``g``."""
    n_gpus = free.shape[1]
    c = cpu[r] - need_cpu
    total = -milli
    for g in range(n_gpus):
        total += free[r, g]
    for m in range(tcpu.shape[0]):
        lv = tmilli[m]
        if not access[r, m] or tnum[m] <= 0 or c + _EPS < tcpu[m]:
            for g in range(n_gpus):
                out[r, g, c0 + m] = total
            continue
        fits = 0
        below = 0
        for g in range(n_gpus):
            v = free[r, g]
            if v >= lv:
                fits += 1
            else:
                below += v
        for g in range(n_gpus):  # the share on GPU g moves only g's terms
            v = free[r, g]
            h = v - milli
            f = fits - (1 if v >= lv else 0) + (1 if h >= lv else 0)
            b = below - (0 if v >= lv else v) + (0 if h >= lv else h)
            out[r, g, c0 + m] = b if f >= tnum[m] else total


@njit(cache=True, nogil=True)
def _count_into(out, c0, rows, cpu, free, access, need_cpu, take, tcpu, tmilli, tnum):  # pragma: no cover
    gpu = np.empty(free.shape[1], dtype=np.int64)
    for i in range(rows.shape[0]):
        _count_row(out, rows[i], c0, cpu, free, access, need_cpu, take, tcpu, tmilli, tnum, gpu)


@njit(cache=True, nogil=True)
def _count_share_into(  # pragma: no cover
    out, c0, rows, cpu, free, access, need_cpu, milli, tcpu, tmilli, tnum
):
    for i in range(rows.shape[0]):
        _count_share_row(out, rows[i], c0, cpu, free, access, need_cpu, milli, tcpu, tmilli, tnum)


@njit(cache=True, nogil=True, inline="always")
def _dot(v, cols, w):  # pragma: no cover
    """``v[cols] @ w`` in float64, summed in column order: one order for every row whoever asks, so a
    node's expectation never depends on which rows were weighed with it, nor on the machine. ``cols``:
    the columns of nonzero weight, ascending (a zero-weighted column adds exactly 0 to the sum: leaving
    it out changes no bit of it). When they are the first columns in a row (a target that weighs every
    column held, as ``place()``'s batch target does), they are read in a row, not gathered."""
    s = 0.0
    n = cols.shape[0]
    if n == 0 or cols[n - 1] == n - 1:  # every column up to the last weighed: read them in a row
        for k in range(n):
            s += np.float64(v[k]) * w[k]
    else:
        for k in range(n):
            s += np.float64(v[cols[k]]) * w[k]
    return s


@njit(cache=True, nogil=True)
def _weigh_row(vals, e, r, cols, w):  # pragma: no cover
    """``e[r]`` (per GPU too, after a share) = node ``r``'s fragments weighed by ``w`` on ``cols``."""
    if vals.ndim == 2:
        e[r] = _dot(vals[r], cols, w)
    else:
        for g in range(vals.shape[1]):
            e[r, g] = _dot(vals[r, g], cols, w)


@njit(cache=True, nogil=True)
def _weigh_into(e, e_ver, vals, rows, version, cols, w):  # pragma: no cover
    for i in range(rows.shape[0]):
        _weighed(vals, e, e_ver, rows[i], version, cols, w)


@njit(cache=True, nogil=True, inline="always")
def _round6(x):  # pragma: no cover
    """``np.round(x, 6)`` as numpy computes it (times 1e6, to the nearest even integer, over 1e6)."""
    return np.rint(x * 1e6) / 1e6


@njit(cache=True, nogil=True, inline="always")
def _now_row(r, version, cpu, free, now, gpu):  # pragma: no cover
    """Node ``r``'s expected fragment as it is (cache ``now``), counted and weighed again only if stale."""
    vals, ver, e, e_ver, access, tcpu, tmilli, tnum, cols, w = now
    if ver[r] != version[r]:
        _count_row(vals, r, 0, cpu, free, access, 0.0, 0, tcpu, tmilli, tnum, gpu)
        ver[r] = version[r]
    _weighed2(vals, e, e_ver, r, version, cols, w)
    return e[r]


@njit(cache=True, nogil=True, inline="always")
def _weighed2(vals, e, e_ver, r, version, cols, w):  # pragma: no cover
    """:func:`_weighed` of a ``[node, shape]`` table, inlined where the kernels know the table is one (a
    call per row was a tenth of a change of target's cost); the same sum in the same order."""
    if e_ver[r] != version[r]:
        e[r] = _dot(vals[r], cols, w)
        e_ver[r] = version[r]


@njit(cache=True, nogil=True)
def _weighed(vals, e, e_ver, r, version, cols, w):  # pragma: no cover
    """Node ``r``'s expectation ``e[r]``, weighed again if it was for another version of the node."""
    if e_ver[r] != version[r]:
        _weigh_row(vals, e, r, cols, w)
        e_ver[r] = version[r]


@njit(cache=True, nogil=True, inline="always")
def _score(d, levels):  # pragma: no cover
    """:func:`~placer.solver.objective.fragmentation.quantized` of one increase (the same arithmetic)."""
    x = min(max(d, -50_000.0), 50_000.0)
    return np.int64(levels / (1.0 + np.exp(x / 1000.0)))


@njit(cache=True, nogil=True)
def _whole_deltas(rows, version, cpu, free, need_cpu, take, now, after, deltas, levels):  # pragma: no cover
    av, aver, ae, aeve, aacc, acpu, amilli, anum, acols, aw = after
    delta, choice, dver, score = deltas
    gpu = np.empty(free.shape[1], dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        if dver[r] == version[r]:
            continue  # the node did not change since its increase was weighed
        before = _now_row(r, version, cpu, free, now, gpu)
        if aver[r] != version[r]:
            _count_row(av, r, 0, cpu, free, aacc, need_cpu, take, acpu, amilli, anum, gpu)
            aver[r] = version[r]
        _weighed2(av, ae, aeve, r, version, acols, aw)
        d = _round6(ae[r] - before)
        delta[r], choice[r], score[r], dver[r] = d, -1, _score(d, levels), version[r]


@njit(cache=True, nogil=True)
def _share_deltas(rows, version, cpu, free, need_cpu, milli, now, after, deltas, levels):  # pragma: no cover
    av, aver, ae, aeve, aacc, acpu, amilli, anum, acols, aw = after
    delta, choice, dver, score = deltas
    gpu = np.empty(free.shape[1], dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
        if dver[r] == version[r]:
            continue  # the node did not change since its increase was weighed
        before = _now_row(r, version, cpu, free, now, gpu)
        if aver[r] != version[r]:
            _count_share_row(av, r, 0, cpu, free, aacc, need_cpu, milli, acpu, amilli, anum)
            aver[r] = version[r]
        if aeve[r] != version[r]:  # weighed on the GPUs the share fits on only: the others are never read
            for g in range(free.shape[1]):
                if free[r, g] >= milli:
                    ae[r, g] = _dot(av[r, g], acols, aw)
            aeve[r] = version[r]
        best = np.inf
        at = 0
        for g in range(free.shape[1]):  # the least increase among the GPUs it fits on, lowest index first
            if free[r, g] >= milli:
                d = _round6(ae[r, g] - before)
                if d < best:
                    best = d
                    at = g
        delta[r], choice[r], score[r], dver[r] = best, at, _score(best, levels), version[r]


@njit(cache=True, nogil=True)
def _best(rows, score, fit):  # pragma: no cover
    best = -1
    top = np.iinfo(np.int64).min
    least = np.inf
    for i in range(rows.shape[0]):
        r = rows[i]
        if score[r] > top or (score[r] == top and fit[r] < least):
            best, top, least = r, score[r], fit[r]
    return best


def _shapes(t: Targets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The target's shapes as the kernels take them (one compiled signature for every caller)."""
    return (
        np.ascontiguousarray(t.cpu, dtype=np.float64),
        np.ascontiguousarray(t.milli, dtype=np.int64),
        np.ascontiguousarray(t.num, dtype=np.int64),
    )


def count_into(
    out: np.ndarray,
    first: int,
    rows: np.ndarray,
    cpu: np.ndarray,
    free: np.ndarray,
    access: np.ndarray,
    t: Targets,
    *,
    need_cpu: float = 0.0,
    take: int = 0,
) -> None:
    """Write :func:`~placer.solver.objective.fragmentation.fragments` of the nodes ``rows`` into
    ``out[row, first : first + t.size]``: node ``r`` as it would be with ``need_cpu`` less free CPU and
    its ``take`` lowest-indexed whole free GPUs taken (a whole-GPU replica, as greedy takes them).
    ``cpu[n]``, ``free[n, GPU]`` and ``access[n, shape]`` are indexed by node, so no row is copied out."""
    if t.size and rows.size:
        nodes = _nodes(rows, cpu, free, access)
        _count_into(out, first, *nodes, float(need_cpu), int(take), *_shapes(t))


def count_share_into(
    out: np.ndarray,
    first: int,
    rows: np.ndarray,
    cpu: np.ndarray,
    free: np.ndarray,
    access: np.ndarray,
    t: Targets,
    *,
    need_cpu: float,
    milli: int,
) -> None:
    """Write :func:`~placer.solver.objective.fragmentation.fragments_after_share` of the nodes ``rows``
    into ``out[row, GPU, first : first + t.size]``: node ``r`` with ``need_cpu`` less free CPU and
    ``milli`` less free on each GPU in turn (every GPU, the ones the share does not fit on too)."""
    if t.size and rows.size:
        nodes = _nodes(rows, cpu, free, access)
        _count_share_into(out, first, *nodes, float(need_cpu), int(milli), *_shapes(t))


def _nodes(
    rows: np.ndarray, cpu: np.ndarray, free: np.ndarray, access: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The node arrays as the kernels take them (one compiled signature for every caller; no copy when
    they already are: the engines' state is)."""
    return (
        _row_ids(rows),
        np.ascontiguousarray(cpu, dtype=np.float64),
        np.ascontiguousarray(free, dtype=np.int64),
        np.ascontiguousarray(access, dtype=np.bool_),
    )


def count_fragments(cpu: np.ndarray, gpu: np.ndarray, access: np.ndarray, t: Targets) -> np.ndarray:
    """:func:`~placer.solver.objective.fragmentation.fragments`, compiled: ``[k, m]``, the fragment of node
    state ``k`` (free CPU ``cpu[k]``, free milli per GPU ``gpu[k]``) for shape ``m`` of ``t``."""
    out = np.zeros((len(cpu), t.size))
    count_into(out, 0, np.arange(len(cpu)), cpu, gpu, access, t)
    return out


def count_fragments_after_share(
    cpu: np.ndarray, gpu: np.ndarray, milli: int, access: np.ndarray, t: Targets
) -> np.ndarray:
    """:func:`~placer.solver.objective.fragmentation.fragments_after_share`, compiled: ``[k, g, m]``, the
    fragment for shape ``m`` of node state ``k`` with ``milli`` less free on GPU ``g`` (``cpu`` already
    net of the share's CPU)."""
    out = np.zeros((len(cpu), gpu.shape[1], t.size))
    count_share_into(out, 0, np.arange(len(cpu)), cpu, gpu, access, t, need_cpu=0.0, milli=milli)
    return out


#: One cache of fragments as the kernels read it: its table, row versions, expectations and their
#: versions, the held shapes' access, CPU, milli and GPU count, and their weights under the target as
#: :func:`weights` gives them (the columns of nonzero weight, and those weights).
CacheArgs = tuple[np.ndarray, ...]


def weights(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weights per column ``p`` as the kernels read them: the columns of nonzero weight, ascending, and
    their weights. Why: a cache holds the columns of every shape a target has named, and the target in
    force weighs about four in five of them (``scorers.HELD_SHAPES``); the others add exactly 0.

    >>> [a.tolist() for a in weights(np.array([0.0, 0.25, 0.0, 0.75]))]
    [[1, 3], [0.25, 0.75]]
    """
    cols = np.flatnonzero(p)
    return cols.astype(np.int64), np.ascontiguousarray(p[cols], dtype=np.float64)


def weigh_into(
    e: np.ndarray, e_ver: np.ndarray, vals: np.ndarray, rows: np.ndarray, version: np.ndarray, p: np.ndarray
) -> None:
    """``e[r] = vals[r] @ p`` (per GPU for a ``[node, GPU, shape]`` table) for the ``rows`` whose
    ``e_ver`` is not their ``version``, summed in column order, and stamp them."""
    if rows.size:
        cols, w = weights(p)
        _weigh_into(e, e_ver, vals, _row_ids(rows), version, cols, w)


def whole_deltas(
    rows: np.ndarray,
    version: np.ndarray,
    cpu: np.ndarray,
    free: np.ndarray,
    need_cpu: float,
    take: int,
    now: CacheArgs,
    after: CacheArgs,
    deltas: CacheArgs,
    levels: int,
) -> None:
    """Bring ``deltas`` (increase, GPU, version, score per node) up to date on ``rows`` for one replica
    taking ``need_cpu`` and the ``take`` lowest whole free GPUs: for each node whose version moved, FGD's
    increase rounded to 6 decimals — the expectation after (cache ``after``) less the one now (cache
    ``now``), each counted and weighed again only where stale — its GPU -1, and its score on ``levels``
    (:func:`~placer.solver.objective.fragmentation.quantized`)."""
    _whole_deltas(
        _row_ids(rows), version, cpu, free, float(need_cpu), int(take), now, after, deltas, int(levels)
    )


def share_deltas(
    rows: np.ndarray,
    version: np.ndarray,
    cpu: np.ndarray,
    free: np.ndarray,
    need_cpu: float,
    milli: int,
    now: CacheArgs,
    after: CacheArgs,
    deltas: CacheArgs,
    levels: int,
) -> None:
    """:func:`whole_deltas` for a share of ``milli``: a node's increase at its best GPU (the least among
    the GPUs with ``milli`` free, the lowest index among equal ones; ``inf`` and GPU 0 where none has),
    and that GPU."""
    _share_deltas(
        _row_ids(rows), version, cpu, free, float(need_cpu), int(milli), now, after, deltas, int(levels)
    )


def best_node(rows: np.ndarray, score: np.ndarray, fit: np.ndarray) -> int:
    """The node of ``rows`` with the highest ``score``, then the least ``fit``, then the first: greedy's
    levels below preference for a unit with no price and no eviction (one pass, no array built)."""
    return int(_best(_row_ids(rows), score, np.asarray(fit, dtype=np.float64)))


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Node indices as the kernels take them (no copy when they already are)."""
    return np.ascontiguousarray(rows, dtype=np.int64)


def warm() -> None:
    """Compile every kernel the engines call, for the one signature they call it with — or load it from
    numba's cache on disk (``__pycache__`` beside this file, else ``NUMBA_CACHE_DIR`` or the user's cache
    directory), — on a two-node state. Run once, when this module is imported.

    Why at import: numba compiles a kernel on its first call. Inside ``place()`` that first call was the
    first decision's deadline: on a machine with no cache yet, the first ``place()`` of a process took
    1.5 s for a 0.2 s limit (the whole compile), and a process that finds the cache still loads it there
    (``docs/decision.md``, *Deadline*). Here the cost is the import's: about 5 s the first time on a
    machine (every kernel), about 0.2 s once cached. The wrappers above give each kernel one signature
    (contiguous arrays, fixed dtypes), so nothing is left to compile later;
    ``tests/solver/objective/test_warm.py`` runs the engines after this and checks that no kernel gained a
    signature.
    """
    n, g = 2, 2
    rows = np.arange(n, dtype=np.int64)
    version = np.zeros(n, dtype=np.int64)
    cpu = np.full(n, 8.0)
    free = np.full((n, g), _MILLI, dtype=np.int64)
    t = Targets(
        p=np.array([0.5, 0.5]),
        cpu=np.array([1.0, 2.0]),
        milli=np.array([_MILLI, 500]),
        num=np.array([1, 0]),
        access=np.ones((n, 2), dtype=bool),
    )
    tcpu, tmilli, tnum = _shapes(t)
    cols, w = weights(t.p)

    def cache(inner: tuple[int, ...]) -> CacheArgs:
        vals = np.zeros((n, *inner, t.size), dtype=np.float32)
        ver = np.full(n, -1, dtype=np.int64)
        e, e_ver = np.zeros((n, *inner)), np.full(n, -1, dtype=np.int64)
        return (vals, ver, e, e_ver, t.access, tcpu, tmilli, tnum, cols, w)

    def deltas() -> CacheArgs:
        stale = np.full(n, -1, dtype=np.int64)
        return (np.zeros(n), stale, stale.copy(), np.zeros(n, dtype=np.int64))

    now, whole, share = cache(()), cache(()), cache((g,))
    count_into(now[0], 0, rows, cpu, free, t.access, t)
    count_share_into(share[0], 0, rows, cpu, free, t.access, t, need_cpu=1.0, milli=500)
    whole_deltas(rows, version, cpu, free, 1.0, 1, now, whole, deltas(), COARSE_LEVELS)
    found = deltas()
    share_deltas(rows, version, cpu, free, 1.0, 500, now, share, found, COARSE_LEVELS)
    best_node(rows, found[3], np.zeros(n))


warm()
