"""The compiled fragment counts (``solver/objective/kernels.py``) are the numpy definition, element for
element: the same node states and shapes give identical arrays (whole milli, exact arithmetic), so the
engines decide as they did before the counts were compiled."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

import placer.solver.objective.kernels as kernels
from placer.solver.objective.fragmentation import (
    Targets,
    fragmentation,
    fragments,
    fragments_after_share,
    quantized,
)
from placer.solver.objective.kernels import (
    best_node,
    count_fragments,
    count_fragments_after_share,
    count_into,
    count_share_into,
    share_deltas,
    weigh_into,
    weights,
    whole_deltas,
)

_MILLI = [0, 60, 100, 190, 250, 300, 500, 750, 810, 1000]


@st.composite
def states(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int]:
    shapes = draw(st.integers(0, 12))
    width = draw(st.sampled_from([1, 2, 4, 8]))
    k = draw(st.integers(0, 6))
    w = np.array([draw(st.integers(1, 9)) for _ in range(shapes)], dtype=np.float64)
    t = Targets(
        p=w / max(w.sum(), 1.0),
        # Halves and a CPU a hair below a node's free CPU: the 1e-9 tolerance must read alike.
        cpu=np.array(
            [draw(st.sampled_from([0.0, 0.5, 1.0, 4.0, 8.0, 8.0 + 1e-10, 32.0])) for _ in range(shapes)]
        ),
        milli=np.array([draw(st.sampled_from(_MILLI)) for _ in range(shapes)], dtype=np.int64),
        num=np.array([draw(st.sampled_from([0, 1, 1, 2, 4, 8])) for _ in range(shapes)], dtype=np.int64),
        access=np.ones((k, shapes), dtype=bool),
    )
    cpu = np.array(
        [draw(st.sampled_from([0.0, 0.5, 4.0, 8.0, 43.892, 64.0])) for _ in range(k)], dtype=np.float64
    )
    gpu = np.array(
        [[draw(st.sampled_from(_MILLI)) for _ in range(width)] for _ in range(k)], dtype=np.int64
    ).reshape(k, width)
    access = np.array([[draw(st.booleans()) for _ in range(shapes)] for _ in range(k)], dtype=bool).reshape(
        k, shapes
    )
    share = draw(st.sampled_from([60, 100, 250, 500, 810]))
    return cpu, gpu, access, t, share


@settings(max_examples=300, deadline=None)
@given(case=states())
def test_the_compiled_count_is_the_definition(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int],
) -> None:
    cpu, gpu, access, t, _ = case
    got, want = count_fragments(cpu, gpu, access, t), fragments(cpu, gpu, access, t)
    assert got.shape == want.shape == (len(cpu), t.size)
    assert np.array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(case=states())
def test_the_compiled_count_after_a_share_is_the_definition(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int],
) -> None:
    cpu, gpu, access, t, share = case
    got, want = (
        count_fragments_after_share(cpu, gpu, share, access, t),
        fragments_after_share(cpu, gpu, share, access, t),
    )
    # Every GPU, the ones the share does not fit on too (negative milli after): the caches hold them all.
    assert got.shape == want.shape == (len(cpu), gpu.shape[1], t.size)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_the_callers_dtypes_are_taken_as_they_come(dtype: type) -> None:
    """The fill's state and the engines' arrays hold milli in different integer types, CPU in cores or
    milli-cores: the counts read the values, not the types."""
    t = Targets(
        p=np.array([0.5, 0.5]),
        cpu=np.array([4, 1]),
        milli=np.array([1000, 500]),
        num=np.array([1, 1]),
        access=np.ones((1, 2), dtype=bool),
    )
    gpu = np.array([[1000, 300], [400, 0]], dtype=dtype)
    cpu = np.array([8, 2], dtype=dtype)
    access = np.array([[1, 1], [1, 0]], dtype=np.uint8)
    # Node 0: the 1-GPU shape fits (the 300 on GPU 1 is its fragment), the 500 share too (300 again).
    # Node 1: no whole GPU free (all 400 a fragment); the share may not run there (access 0): 400.
    assert count_fragments(cpu, gpu, access, t).tolist() == [[300.0, 300.0], [400.0, 400.0]]
    # A 250 share on node 0, GPU 1 (300 -> 50): the 1-GPU shape's fragment is 50, the 500 share's 50.
    assert count_fragments_after_share(cpu, gpu, 250, access, t)[0, 1].tolist() == [50.0, 50.0]


@settings(max_examples=200, deadline=None)
@given(
    case=states(), need_cpu=st.sampled_from([0.0, 0.5, 4.0]), take=st.integers(0, 8), first=st.integers(0, 3)
)
def test_counts_written_in_place_are_the_definition_on_the_node_after_a_replica(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int], need_cpu: float, take: int, first: int
) -> None:
    """What the engines' caches call: rows picked out of whole-cluster arrays, the node's state after one
    replica (its CPU, its lowest-indexed whole free GPUs or a share on each GPU), written at a column
    offset of a float32 table; the rows not picked and the columns around are left as they were."""
    cpu, gpu, access, t, share = case
    k, width = gpu.shape
    rows = np.array([r for r in range(k) if r % 2 == 0], dtype=np.int64)
    after = gpu[rows].copy()
    for row in after:  # the lowest-indexed whole free GPUs taken, as State.take takes them
        whole = [g for g in range(width) if row[g] == 1000][:take]
        row[whole] = 0
    want = fragments(cpu[rows] - need_cpu, after, access[rows], t)
    out = np.full((k, first + t.size + 1), -7.0, dtype=np.float32)
    count_into(out, first, rows, cpu, gpu, access, t, need_cpu=need_cpu, take=take)
    assert np.array_equal(out[rows, first : first + t.size], want)
    untouched = np.ones(out.shape, dtype=bool)
    untouched[rows, first : first + t.size] = False
    assert (out[untouched] == -7.0).all()

    want3 = fragments_after_share(cpu[rows] - need_cpu, gpu[rows], share, access[rows], t)
    out3 = np.full((k, width, first + t.size), -7.0, dtype=np.float32)
    count_share_into(out3, first, rows, cpu, gpu, access, t, need_cpu=need_cpu, milli=share)
    assert np.array_equal(out3[rows, :, first:], want3)
    assert (out3[:, :, :first] == -7.0).all()


def _deltas(k: int) -> tuple[np.ndarray, ...]:
    """An empty cache of increases (increase, GPU, version, score per node), every row stale."""
    return (
        np.zeros(k),
        np.full(k, -7, dtype=np.int64),
        np.full(k, -1, dtype=np.int64),
        np.zeros(k, dtype=np.int64),
    )


def _cache(cpu: np.ndarray, t: Targets, inner: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """An empty cache of fragments as the kernels read it (every row stale), holding ``t``'s shapes."""
    n = len(cpu)
    return (
        np.zeros((n, *inner, t.size), dtype=np.float32),
        np.full(n, -1, dtype=np.int64),
        np.zeros((n, *inner)),
        np.full(n, -1, dtype=np.int64),
        t.access,
        t.cpu.astype(np.float64),
        t.milli.astype(np.int64),
        t.num.astype(np.int64),
        *weights(t.p),
    )


@settings(max_examples=200, deadline=None)
@given(case=states(), need_cpu=st.sampled_from([0.0, 0.5, 4.0]), take=st.integers(0, 8))
def test_fused_increases_are_the_measure_after_less_the_measure_now(
    case: tuple[np.ndarray, np.ndarray, np.ndarray, Targets, int], need_cpu: float, take: int
) -> None:
    """FGD's increase per node, as ``whole_deltas`` and ``share_deltas`` give it from empty caches, is
    ``fragmentation(after) - fragmentation(now)`` by the numpy definition rounded to 6 decimals, and a
    share's GPU is the lowest-indexed least."""
    cpu, gpu, access, t, share = case
    k, width = gpu.shape
    t = Targets(p=t.p, cpu=t.cpu, milli=t.milli, num=t.num, access=access)
    rows, version = np.arange(k), np.zeros(k, dtype=np.int64)
    now = fragmentation(cpu, gpu, access, t)

    after = gpu.copy()
    for row in after:
        row[[g for g in range(width) if row[g] == 1000][:take]] = 0
    want = fragmentation(cpu - need_cpu, after, access, t) - now
    deltas = _deltas(k)
    whole_deltas(rows, version, cpu, gpu, need_cpu, take, _cache(cpu, t, ()), _cache(cpu, t, ()), deltas, 25)
    got, choice, ver, score = deltas
    # The weights are w / W with W <= 108, so no expectation sits on a rounding step's half: the two
    # summation orders round alike, exactly.
    assert np.array_equal(got, np.round(want, 6))
    assert (choice == -1).all() and (ver == 0).all()
    assert np.array_equal(score, quantized(got, 25))

    deltas = _deltas(k)
    share_deltas(
        rows, version, cpu, gpu, need_cpu, share, _cache(cpu, t, ()), _cache(cpu, t, (width,)), deltas, 100
    )
    got, choice, _, score = deltas
    assert np.array_equal(score, quantized(got, 100))
    for r in range(k):
        options = []
        for g in range(width):
            if gpu[r, g] >= share:
                one = gpu[r].copy()
                one[g] -= share
                options.append(
                    float(
                        fragmentation(cpu[r : r + 1] - need_cpu, one[None], access[r : r + 1], t)[0] - now[r]
                    )
                )
            else:
                options.append(np.inf)
        rounded = np.round(options, 6)
        assert got[r] == rounded.min()
        assert choice[r] == int(np.argmin(rounded))  # the lowest-indexed least (0 when none fits)


def test_fused_increases_read_the_cache_and_count_only_stale_rows() -> None:
    """A row whose version did not move is read from the cache, not counted: what makes an arrival cost
    the nodes it changed. Planted values in a current row come back; a stale row is counted afresh."""
    t = Targets(
        p=np.array([1.0]),
        cpu=np.array([1.0]),
        milli=np.array([1000]),
        num=np.array([1]),
        access=np.ones((2, 1), dtype=bool),
    )
    cpu, gpu = np.array([8.0, 8.0]), np.array([[1000, 500], [1000, 500]], dtype=np.int64)
    now, after = _cache(cpu, t, ()), _cache(cpu, t, ())
    version = np.array([3, 3], dtype=np.int64)
    for c, planted in ((now, 100.0), (after, 160.0)):
        c[0][0, 0] = planted  # node 0's fragment, "counted" at version 3
        c[1][0] = 3
    deltas = _deltas(2)
    whole_deltas(np.array([0, 1]), version, cpu, gpu, 0.0, 1, now, after, deltas, 100)
    # Node 0 from the planted rows: 160 - 100. Node 1 counted: now 500 (the half-used GPU), after the
    # whole GPU is taken nothing fits the 1-GPU shape: all 500 free milli are a fragment, 500 - 500.
    assert deltas[0].tolist() == [60.0, 0.0]
    assert now[1].tolist() == [3, 3] and now[3].tolist() == [3, 3]
    # An increase already weighed for the node's version is kept as it is (not weighed again).
    deltas[0][1] = -5.0
    whole_deltas(np.array([0, 1]), version, cpu, gpu, 0.0, 1, now, after, deltas, 100)
    assert deltas[0].tolist() == [60.0, -5.0]


def test_the_best_node_is_the_highest_score_then_the_least_fit_then_the_first() -> None:
    score = np.array([3, 7, 7, 7, 1], dtype=np.int64)
    fit = np.array([0.0, 2.0, 1.0, 1.0, 0.0])
    assert best_node(np.array([0, 1, 2, 3, 4]), score, fit) == 2
    assert best_node(np.array([3, 2]), score, fit) == 3  # the first of the rows given among equals
    assert best_node(np.array([0, 4]), score, fit) == 0
    assert best_node(np.array([4]), score, fit) == 4


@njit(cache=False)
def _scores(delta: np.ndarray, levels: int) -> np.ndarray:  # pragma: no cover
    out = np.empty(delta.shape[0], dtype=np.int64)
    for i in range(delta.shape[0]):
        out[i] = kernels._score(delta[i], levels)
    return out


@pytest.mark.parametrize("levels", [100, 25])
def test_the_compiled_score_is_the_artifacts_quantization(levels: int) -> None:
    """The kernels score an increase with the compiled exp, numpy's ``quantized`` with its own (SIMD on
    this machine): the integer parts must agree everywhere a node choice can look, or the node choice of
    the express lane (kernels) and of a score elsewhere could part at a level's edge. Increases as the
    engines make them (rounded to 6 decimals) at every scale, whole and half milli, and the extremes."""
    rng = np.random.default_rng(20261129)
    for scale in (10.0, 100.0, 1000.0, 5000.0, 20000.0):
        delta = np.round(rng.normal(0.0, scale, 400_000), 6)
        assert np.array_equal(_scores(delta, levels), quantized(delta, levels))
    edges = np.concatenate([np.arange(-60_000, 60_000, 0.5), [np.inf, -np.inf, 0.0, -0.0]])
    assert np.array_equal(_scores(edges, levels), quantized(edges, levels))


@settings(max_examples=100, deadline=None)
@given(
    vals=st.lists(st.lists(st.integers(-2000, 8000), min_size=6, max_size=6), min_size=1, max_size=5),
    p=st.lists(st.sampled_from([0.0, 0.0, 1e-9, 0.125, 0.3, 0.7]), min_size=6, max_size=6),
)
def test_zero_weighted_columns_change_no_bit_of_an_expectation(vals: list[list[int]], p: list[float]) -> None:
    """A cache's columns the target does not weigh are left out of the sum (``weights``): every row's
    expectation is, bit for bit, the column-order float64 sum over all columns."""
    table = np.array(vals, dtype=np.float32)
    w = np.array(p)
    n = len(vals)
    e, e_ver = np.zeros(n), np.full(n, -1, dtype=np.int64)
    weigh_into(e, e_ver, table, np.arange(n), np.zeros(n, dtype=np.int64), w)
    for r in range(n):
        want = 0.0
        for m in range(len(p)):
            want += float(table[r, m]) * p[m]
        assert e[r] == want and np.signbit(e[r]) == np.signbit(want)
    assert weights(w)[0].tolist() == [m for m in range(len(p)) if p[m] != 0.0]
