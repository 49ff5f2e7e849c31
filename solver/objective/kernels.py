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

>>> from placer.solver.objective.fragmentation import Targets, fragments
>>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
>>> cpu, gpu, acc = np.array([8.0]), np.array([[1000, 300]]), np.ones((1, 2), dtype=bool)
>>> count_fragments(cpu, gpu, acc, t).tolist(), fragments(cpu, gpu, acc, t).tolist()
([[300.0, 300.0]], [[300.0, 300.0]])
"""

from __future__ import annotations

import numpy as np
from numba import njit

from placer.solver.objective.fragmentation import Targets

__all__ = ["count_fragments", "count_fragments_after_share", "count_into", "count_share_into"]

#: A whole GPU in milli.
_MILLI = 1000
#: CPU within this of a shape's CPU fits it (the numpy definition's tolerance).
_EPS = 1e-9


@njit(cache=True, nogil=True)
def _count_into(out, c0, rows, cpu, free, access, need_cpu, take, tcpu, tmilli, tnum):  # type: ignore[no-untyped-def]  # pragma: no cover
    n_gpus = free.shape[1]
    shapes = tcpu.shape[0]
    gpu = np.empty(n_gpus, dtype=np.int64)
    for i in range(rows.shape[0]):
        r = rows[i]
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
        for m in range(shapes):
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


@njit(cache=True, nogil=True)
def _count_share_into(out, c0, rows, cpu, free, access, need_cpu, milli, tcpu, tmilli, tnum):  # type: ignore[no-untyped-def]  # pragma: no cover
    n_gpus = free.shape[1]
    shapes = tcpu.shape[0]
    for i in range(rows.shape[0]):
        r = rows[i]
        c = cpu[r] - need_cpu
        total = -milli
        for g in range(n_gpus):
            total += free[r, g]
        for m in range(shapes):
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
        np.ascontiguousarray(rows, dtype=np.int64),
        np.asarray(cpu, dtype=np.float64),
        np.asarray(free, dtype=np.int64),
        np.asarray(access, dtype=np.bool_),
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
    count_share_into(
        out,
        0,
        np.arange(len(cpu)),
        np.asarray(cpu, dtype=np.float64),
        gpu,
        access,
        t,
        need_cpu=0.0,
        milli=milli,
    )
    return out
