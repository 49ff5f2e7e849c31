"""The node arrays' cached answers (``solver/candidates.py``): what is kept, and the cap that keeps a
long-lived session or stored cluster from growing without bound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import placer.solver.candidates as candidates
from placer.solver.jobs.model import LabelRule
from placer.solver.rules import holds, job_labels, running_label
from placer.solver.snapshot import Snapshot
from placer.topology import Cluster, cluster_of, cpu_nodes


def test_static_answers_are_capped_and_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(candidates, "MAX_STATIC_ANSWERS", 3)
    a = candidates.Answers()
    for k in range(3):
        a[("mask", k)] = k
    a["__anti__"] = "dynamic"  # answers that read free amounts do not count
    b = a.refreshed()  # shares the static answers
    b[("mask", 3)] = 3  # the fourth: the three before are dropped, for every holder
    assert dict(a.static) == {("mask", 3): 3} and a.static is b.static
    a[("mask", 3)] = 33  # replacing a kept answer drops nothing
    assert dict(b.static) == {("mask", 3): 33}
    assert a["__anti__"] == "dynamic"


# The indexes behind the hot paths answer exactly what testing every node or running job answers: each
# test compares them with that plain reading (rules.holds over rules.job_labels, node by node).

_KEYS = ("app", "team", "queue", "job_id", "tenant", "priority_class")
_VALUES = ("a", "b", "c")


@st.composite
def _running_cluster(draw: st.DrawFn) -> Cluster:
    nodes = draw(st.integers(min_value=1, max_value=6))
    jobs = []
    for k in range(draw(st.integers(min_value=0, max_value=12))):
        labels = draw(st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=3))
        extra = {f: draw(st.sampled_from((None, *_VALUES))) for f in ("queue", "tenant")}
        node = draw(st.integers(min_value=1, max_value=nodes))
        jobs.append(
            {
                "job": _VALUES[k] if k < len(_VALUES) else f"j{k}",  # job_id rules match some
                "labels": labels,
                "replicas": [{"node": f"cpu-{node}" if nodes > 1 else "cpu", "cpu_cores": 1}],
                **{f: v for f, v in extra.items() if v is not None},
            }
        )
    return cluster_of(cpu_nodes(nodes)).with_allocations(jobs)


_RULE = st.one_of(
    st.builds(
        LabelRule,
        key=st.sampled_from(_KEYS),
        operator=st.sampled_from(("In", "NotIn")),
        values=st.lists(st.sampled_from(_VALUES), min_size=1, max_size=2),
    ),
    st.builds(LabelRule, key=st.sampled_from(_KEYS), operator=st.sampled_from(("Exists", "DoesNotExist"))),
)


@settings(max_examples=150, deadline=None)
@given(cluster=_running_cluster(), key=st.sampled_from(_KEYS))
def test_running_label_is_the_value_job_labels_gives(cluster: Cluster, key: str) -> None:
    for rj in cluster.running_jobs():
        assert running_label(rj, key) == job_labels(rj).get(key)


@settings(max_examples=150, deadline=None)
@given(cluster=_running_cluster(), rules=st.lists(_RULE, max_size=3))
def test_anti_affinity_mask_is_every_running_job_tested(cluster: Cluster, rules: list[LabelRule]) -> None:
    arrays = candidates.NodeArrays.of(Snapshot.of(cluster), ())
    expected = [
        any(
            holds(r, job_labels(rj))
            for rj in cluster.running_jobs()
            for rep in rj.replicas
            if rep.node == v.node.name
            for r in rules
        )
        for v in arrays.snap.nodes
    ]
    assert candidates.anti_affinity_mask(tuple(rules), arrays).tolist() == expected


def test_scope_ranks_order_domains_by_name() -> None:
    (spec,) = cpu_nodes(1).nodes
    racks = ("r-b", "r-a", "r-c", "r-a")  # first seen: r-b (code 0), r-a (1), r-c (2)
    nodes = [spec.model_copy(update={"name": f"n{k}", "rack": r}) for k, r in enumerate(racks)]
    cluster = cluster_of(cpu_nodes(1).model_copy(update={"nodes": nodes}))
    arrays = candidates.NodeArrays.of(Snapshot.of(cluster), ())
    assert arrays.scope_codes("rack").tolist() == [0, 1, 2, 1]
    assert arrays.scope_ranks("rack").tolist() == [1, 0, 2]  # r-a < r-b < r-c


@settings(max_examples=30, deadline=None)
@given(kinds=st.lists(st.integers(0, 3), min_size=1, max_size=6), keys=st.sampled_from([(), ("team",)]))
def test_arrays_joined_are_the_arrays_of_the_grown_view(kinds: list[int], keys: tuple[str, ...]) -> None:
    # Nodes appended (of groups the arrays have and of new ones) give the rows, groups and members that
    # arrays built from scratch on the grown view give.
    from placer.solver.snapshot import joined
    from placer.topology import Inventory, NodeSpec, dgx_h100
    from placer.topology.membership import with_nodes_added

    base = cluster_of(dgx_h100(2), cpu_nodes(2))
    base = base.allocate(
        {"job": "r", "replicas": [{"node": base.nodes[0].name, "gpus": [0, 1], "gpu_milli": None}]}
    )
    specs = [
        NodeSpec(name="x", cpu_cores=224, memory_gb=2048, gpus={"type": "nvidia-h100", "count": 8}),  # type: ignore[arg-type]
        NodeSpec(name="x", cpu_cores=64, gpus={"type": "nvidia-l4", "count": 4}),  # type: ignore[arg-type]
        NodeSpec(name="x", cpu_cores=32, labels={"team": "a"}),
        NodeSpec(name="x", cpu_cores=32, schedulable=False),
    ]
    snap = Snapshot.of(base)
    arrays = candidates.NodeArrays.of(snap, keys)
    grown = with_nodes_added(
        base, Inventory(nodes=[specs[k].model_copy(update={"name": f"n{i}"}) for i, k in enumerate(kinds)])
    )
    view = joined(snap, grown)
    assert view == Snapshot.of(grown)
    got, want = arrays.joined(view), candidates.NodeArrays.of(view, keys)
    for name in (*candidates._ROWS, "group"):
        assert (getattr(got, name) == getattr(want, name)).all(), name
    assert [m.tolist() for m in got.group_members] == [m.tolist() for m in want.group_members]
    assert got.stamp[: len(arrays.stamp)].tolist() == arrays.stamp.tolist()  # old nodes keep their stamps
    assert len(set(got.stamp.tolist())) == len(got.stamp)


@settings(max_examples=30, deadline=None)
@given(gone=st.sets(st.integers(0, 7), min_size=1, max_size=5), keys=st.sampled_from([(), ("team",)]))
def test_arrays_left_are_the_arrays_of_the_shrunk_view(gone: set[int], keys: tuple[str, ...]) -> None:
    # Nodes removed (one holding part of a two-node job, which is released and frees the other part) give
    # the rows, renumbered groups and members that arrays built from scratch on the shrunk view give.
    from placer.solver.prepared import shrunk
    from placer.solver.snapshot import left
    from placer.topology import Inventory, NodeSpec
    from placer.topology.build import build_cluster
    from placer.topology.membership import without_nodes

    specs = [
        NodeSpec(name=f"n{i}", cpu_cores=32, labels={"team": "a"} if i % 3 == 0 else {},
                 gpus={"type": ["nvidia-h100", "nvidia-l4"][i % 2], "count": 4})  # type: ignore[arg-type]
        for i in range(8)
    ]  # fmt: skip
    base = build_cluster(Inventory(nodes=specs)).with_allocations(
        [
            {"job": "two", "replicas": [{"node": "n0", "gpus": [0, 1]}, {"node": "n5", "gpus": [3]}]},
            {"job": "one", "replicas": [{"node": "n2", "gpus": [1]}]},
        ]
    )
    snap = Snapshot.of(base)
    arrays = candidates.NodeArrays.of(snap, keys)
    after = without_nodes(base, [f"n{i}" for i in sorted(gone)])
    ended = shrunk(base, after)
    assert ended is not None
    freed = {r.node for rj in ended for r in rj.replicas if after.has_node(str(r.node))}
    view = left(snap, after, freed)
    assert view == Snapshot.of(after)
    kept = np.array([snap.by_name[n.name] for n in after.nodes], dtype=np.int64)
    got = arrays.left(view, kept, sorted(view.by_name[n] for n in freed))
    want = candidates.NodeArrays.of(view, keys)
    for name in (*candidates._ROWS, "group"):
        assert (getattr(got, name) == getattr(want, name)).all(), name
    assert [m.tolist() for m in got.group_members] == [m.tolist() for m in want.group_members]
    assert len(set(got.stamp.tolist())) == len(got.stamp)


@settings(max_examples=30, deadline=None)
@given(
    jobs=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=1, max_size=5),
    own=st.booleans(),
)
def test_arrays_refreshed_are_the_arrays_of_the_new_view(jobs: list[tuple[int, int]], own: bool) -> None:
    # Jobs started on some nodes give the rows and free-milli matrix that arrays built from scratch on the
    # new view give, copied (the arrays before unchanged) or moved forward in place (``own``).
    from placer.solver.snapshot import updated
    from placer.topology import dgx_h100

    base = cluster_of(dgx_h100(2), cpu_nodes(2))
    snap = Snapshot.of(base)
    arrays = candidates.NodeArrays.of(snap, ())
    before = {name: getattr(arrays, name).copy() for name in candidates._ROWS}
    matrix = arrays.milli_matrix().copy()
    started = [
        {"job": f"j{k}", "replicas": [{"node": base.nodes[n % 2].name, "gpus": [k], "gpu_milli": 100 * g}]}
        for k, (n, g) in enumerate(jobs)
    ]
    after = base.with_allocations(started)
    names = sorted({s["replicas"][0]["node"] for s in started})
    view = updated(snap, after, names)
    got = arrays.refreshed(view, [view.by_name[n] for n in names], own=own)
    want = candidates.NodeArrays.of(view, ())
    assert (got is arrays) is own
    for name in candidates._ROWS:
        assert (getattr(got, name) == getattr(want, name)).all(), name
    assert (got.milli_matrix() == want.milli_matrix()).all()
    changed = [view.by_name[n] for n in names]
    assert (got.milli_matrix()[changed] != matrix[changed]).any()
    if not own:  # the arrays before still read the state before
        for name in candidates._ROWS:
            assert (getattr(arrays, name) == before[name]).all(), name
        assert (arrays.milli_matrix() == matrix).all()
    assert len(set(got.stamp.tolist())) == len(got.stamp)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 8),
            st.sampled_from([0.0, 1.0, 4.0 - 1e-10, 4.0, 64.0]),
            st.sampled_from([0.0, 8.0, 16.0 - 5e-10, 16.0]),
            st.sampled_from([0.0, 100.0, np.inf]),
            st.sampled_from([0, 250, 999, 1000]),
        ),
        min_size=1,
        max_size=12,
    ),
    gpus=st.integers(0, 8),
    cpu=st.sampled_from([0.0, 1.0, 4.0]),
    mem=st.sampled_from([0.0, 16.0]),
    storage=st.sampled_from([0.0, 50.0]),
    milli=st.sampled_from([0, 250, 1000]),
)
def test_what_fits_now_is_every_amount_compared(
    rows: list[tuple[int, float, float, float, int]],
    gpus: int,
    cpu: float,
    mem: float,
    storage: float,
    milli: int,
) -> None:
    # NodeArrays.fits compiled: a node fits one replica when each free amount is at least the need's, less
    # 1e-9 for the float ones, and its largest free share holds the need's share (numpy's reading).
    from placer.solver.demand import Need

    n = len(rows)
    g, c, m, s, mi = (np.array(col) for col in zip(*rows, strict=True))
    arrays = candidates.NodeArrays.of(Snapshot.of(cluster_of(cpu_nodes(n))), ())
    arrays.gpus, arrays.cpu, arrays.mem, arrays.storage, arrays.milli = g, c, m, s, mi
    arrays.shm = np.full(n, 1.0)
    need = Need(gpus=0 if milli else gpus, cpu=cpu, mem=mem, storage=storage, milli=milli)
    want = (g >= need.gpus) & (c >= cpu - 1e-9) & (m >= mem - 1e-9) & (s >= storage - 1e-9)
    if milli:
        want &= mi >= milli
    assert arrays.fits(need).tolist() == want.tolist()
