"""The cluster store: changes all or none, template expansion, SQLite replay and compaction."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.service.state import ChangeError, ClusterStore, Stored, apply_changes, normalize_change
from placer.topology import cluster_of, dgx_h100, tpu_pod
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory
from placer.topology.views import summary

TEMPLATED = Inventory.model_validate(
    {
        "name": "t",
        "nodes": [
            {
                "name": "dgx",
                "count": 3,
                "rack": "r1",
                "cpu_cores": 64,
                "gpus": {"type": "nvidia-h100", "count": 8},
            },
            {"name": "cpu", "cpu_cores": 16},
        ],
    }
)


def started(job: str, node: str, gpus: list[int]) -> dict[str, object]:
    item = {"id": job, "ext_ml_gpu_count": len(gpus), "node": node, "gpus": gpus}
    return normalize_change({"op": "job_started", "job": item}, "changes[0]")


def test_node_down_in_a_template_changes_that_node_only() -> None:
    cluster = build_cluster(TEMPLATED)
    after = apply_changes(cluster, [{"op": "node_down", "node": "dgx-2"}])
    assert [n.name for n in after.nodes] == ["dgx-1", "dgx-2", "dgx-3", "cpu"]
    assert [n.usable for n in after.nodes] == [True, False, True, True]
    for old, new in zip(cluster.nodes, after.nodes, strict=True):  # nothing else about the nodes changed
        assert (old.labels, old.nvlink_domain, old.gpu_count, old.rack) == (
            new.labels,
            new.nvlink_domain,
            new.gpu_count,
            new.rack,
        )
    back = apply_changes(after, [{"op": "node_up", "node": "dgx-2"}])
    assert all(n.usable for n in back.nodes)
    assert summary(back) == summary(cluster)


def test_tpu_pods_go_down_and_up_by_name() -> None:
    cluster = cluster_of(dgx_h100(1), tpu_pod("v5e", name="pod-a"))
    down = apply_changes(cluster, [{"op": "node_down", "node": "pod-a"}])
    assert not down.tpu_pod("pod-a").usable and down.free_tpu_chips("pod-a") == 0
    assert apply_changes(down, [{"op": "node_up", "node": "pod-a"}]).free_tpu_chips("pod-a") == 256


def test_jobs_start_and_finish_and_running_jobs_survive_a_node_change() -> None:
    cluster = build_cluster(TEMPLATED)
    after = apply_changes(
        cluster,
        [started("a", "dgx-1", [0, 1, 2]), {"op": "node_down", "node": "dgx-3"}, started("b", "dgx-1", [3])],
    )
    assert sorted(after.state.jobs) == ["a", "b"] and len(after.free_gpus("dgx-1")) == 4
    done = apply_changes(after, [{"op": "job_finished", "job": "a"}])
    assert sorted(done.state.jobs) == ["b"] and len(done.free_gpus("dgx-1")) == 7
    assert not done.node("dgx-3").usable


@pytest.mark.parametrize(
    ("changes", "kind", "path"),
    [
        ([{"op": "node_down", "node": "nope"}], "invalid", "changes[0].node"),
        ([{"op": "job_finished", "job": "ghost"}], "conflict", "changes[0].job"),
        ([started("a", "dgx-1", [0]), started("a", "dgx-2", [0])], "conflict", "changes[1].job"),
        ([started("a", "dgx-1", [0]), started("b", "dgx-1", [0])], "conflict", "changes[1].job"),
        ([started("a", "dgx-1", [9])], "conflict", "changes[0].job"),
    ],
)
def test_a_bad_change_names_itself(changes: list[dict[str, object]], kind: str, path: str) -> None:
    with pytest.raises(ChangeError) as e:
        apply_changes(build_cluster(TEMPLATED), changes)
    assert e.value.kind == kind and e.value.errors[0]["path"] == path


def joined(*specs: dict[str, object], running: list[dict[str, object]] | None = None) -> dict[str, object]:
    inventory = {"nodes": list(specs), "running": running or []}
    return normalize_change({"op": "nodes_added", "inventory": inventory}, "changes[0]")


def test_nodes_join_with_their_jobs_and_leave_releasing_theirs() -> None:
    cluster = build_cluster(TEMPLATED)
    l4 = {"name": "l4-1", "gpus": {"type": "nvidia-l4", "count": 4}, "cpu_cores": 32}
    on_l4 = {"job": "inf", "replicas": [{"node": "l4-1", "gpus": [0, 1]}]}
    grown = apply_changes(cluster, [joined(l4, running=[on_l4]), started("a", "dgx-1", [0])])
    assert [n.name for n in grown.nodes] == ["dgx-1", "dgx-2", "dgx-3", "cpu", "l4-1"]
    assert len(grown.free_gpus("l4-1")) == 2 and sorted(grown.state.jobs) == ["a", "inf"]
    # What a build of the joined inventory gives: the same snapshot.
    inv = cluster.to_inventory()
    rebuilt = build_cluster(
        inv.model_copy(update={"nodes": [*inv.nodes, Inventory.model_validate({"nodes": [l4]}).nodes[0]]})
    ).with_allocations([grown.running_job("inf"), grown.running_job("a")])
    assert summary(grown) == summary(rebuilt)
    shrunk = apply_changes(
        grown, [{"op": "node_removed", "node": "l4-1"}, {"op": "node_removed", "node": "dgx-2"}]
    )
    assert [n.name for n in shrunk.nodes] == ["dgx-1", "dgx-3", "cpu"]
    assert sorted(shrunk.state.jobs) == ["a"]  # inf ran on l4-1: released with it


@pytest.mark.parametrize(
    ("change", "kind", "code", "path"),
    [
        ({"op": "node_removed", "node": "nope"}, "invalid", "enum", "changes[0].node"),
        (
            joined({"name": "dgx-2", "cpu_cores": 4}),
            "conflict",
            "duplicate",
            "changes[0].inventory.nodes[0].name",
        ),
        (
            joined(
                {"name": "ok", "cpu_cores": 4}, {"name": "typo", "gpus": {"type": "nvidia-h10", "count": 1}}
            ),
            "invalid",
            "invalid",
            "changes[0].inventory.nodes[1]",
        ),
        (
            joined(
                {"name": "l4", "gpus": {"type": "nvidia-l4", "count": 1}},
                running=[{"job": "j", "replicas": [{"node": "l4", "gpus": [3]}]}],
            ),
            "invalid",
            "invalid",
            "changes[0].inventory.running[0].replicas[0]",
        ),
    ],
)
def test_a_bad_membership_change_names_itself(
    change: dict[str, object], kind: str, code: str, path: str
) -> None:
    with pytest.raises(ChangeError) as e:
        apply_changes(build_cluster(TEMPLATED), [change])
    assert (e.value.kind, e.value.errors[0]["code"], e.value.errors[0]["path"]) == (kind, code, path)


def test_membership_changes_replay_from_the_log(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = ClusterStore(path)
    store.put("c", build_cluster(TEMPLATED))
    store.patch("c", [joined({"name": "l4-1", "gpus": {"type": "nvidia-l4", "count": 4}})])
    store.patch("c", [started("a", "l4-1", [1]), {"op": "node_removed", "node": "dgx-3"}])
    expected = store.get("c")
    store.close()
    reopened = ClusterStore(path)
    got = reopened.get("c")
    assert got is not None and expected is not None and got.version == 3
    assert got.cluster.to_inventory() == expected.cluster.to_inventory()
    assert [n.name for n in got.cluster.nodes] == ["dgx-1", "dgx-2", "cpu", "l4-1"]
    reopened.close()


def test_an_invalid_started_job_is_refused_before_it_is_applied() -> None:
    with pytest.raises(ChangeError) as e:
        normalize_change(
            {"op": "job_started", "job": {"id": "x", "ext_ml_gpu_count": "2", "node": "n"}}, "changes[3]"
        )
    assert e.value.kind == "invalid" and e.value.errors[0]["path"] == "changes[3].job.ext_ml_gpu_count"


def test_a_failed_patch_changes_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = ClusterStore(path)
    store.put("c", build_cluster(TEMPLATED))
    ok = store.patch("c", [started("a", "dgx-1", [0])])
    with pytest.raises(ChangeError):
        store.patch("c", [{"op": "job_finished", "job": "a"}, {"op": "node_down", "node": "nope"}])
    assert store.get("c") == ok
    store.close()
    reopened = ClusterStore(path)
    assert reopened.get("c").version == 2 and sorted(reopened.get("c").cluster.state.jobs) == ["a"]  # type: ignore[union-attr]
    reopened.close()


@pytest.mark.parametrize("compact_after", [2, 1000])
def test_reopening_replays_the_log_with_or_without_compaction(tmp_path: Path, compact_after: int) -> None:
    path = str(tmp_path / "s.db")
    store = ClusterStore(path, compact_after=compact_after)
    store.put("c", build_cluster(TEMPLATED))
    patches = [
        [{"op": "node_down", "node": "dgx-2"}],
        [started("a", "dgx-1", [0, 1])],
        [started("b", "dgx-3", [0]), {"op": "node_up", "node": "dgx-2"}],
        [{"op": "job_finished", "job": "a"}, {"op": "node_down", "node": "cpu"}],
        [started("c", "dgx-2", [7])],
    ]
    for p in patches:
        store.patch("c", p)
    expected = store.get("c")
    assert expected is not None and expected.version == 6
    store.close()
    reopened = ClusterStore(path, compact_after=compact_after)
    got = reopened.get("c")
    assert got is not None and got.version == 6 and got.updated_at == expected.updated_at
    assert summary(got.cluster) == summary(expected.cluster)
    assert got.cluster.to_inventory() == expected.cluster.to_inventory()
    rows = reopened._db.execute("SELECT COUNT(*) FROM changes").fetchone()[0]
    assert rows == (1 if compact_after == 2 else 5)  # compaction at versions 3 and 5 leaves one entry
    reopened.close()


def test_delete_and_ids(tmp_path: Path) -> None:
    store = ClusterStore(str(tmp_path / "s.db"))
    store.put("b", cluster_of(dgx_h100(1)))
    store.put("a", cluster_of(dgx_h100(1)))
    assert store.ids() == ["a", "b"] and len(store) == 2
    assert store.delete("a") and not store.delete("a")
    with pytest.raises(KeyError):
        store.patch("a", [{"op": "node_down", "node": "dgx-h100-1"}])
    store.close()
    assert ClusterStore(str(tmp_path / "s.db")).ids() == ["b"]


def test_a_corrupt_log_stops_the_start_instead_of_dropping_state(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    store = ClusterStore(path)
    store.put("c", build_cluster(TEMPLATED))
    store.patch("c", [{"op": "node_down", "node": "dgx-1"}])
    store._db.execute("""UPDATE changes SET changes = '[{"op": "job_finished", "job": "x"}]'""")
    store.close()
    with pytest.raises(RuntimeError, match="stored cluster 'c'"):
        ClusterStore(path)


def test_a_version_keeps_the_solvers_prepared_pieces_moved_forward_by_job_changes() -> None:
    from placer.solver.engine import place
    from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    from placer.solver.policy import Policy

    store = ClusterStore()
    s1, _ = store.put("c", build_cluster(TEMPLATED))
    policy = Policy(engine="greedy")
    job = [Job(id="x", tasks=[TaskGroup(gpu=GpuDemand(count=6))])]
    now = datetime(2026, 1, 1, tzinfo=UTC)

    def same(stored: Stored) -> bool:
        a = place(job, stored.cluster, policy, now=now, prepared=stored.prepared)
        b = place(job, stored.cluster, policy, now=now)
        return (a.placements, a.pending) == (b.placements, b.pending) and bool(a.placements)

    # Placing with the version's pieces decides as place() alone on the same snapshot
    assert same(s1)
    s1.prepared.snapshot()  # built now, so the next version can move it forward
    s2 = store.patch("c", [started("a", "dgx-1", [0, 1, 2])])
    # Jobs only: the pieces are moved forward (the snapshot is carried, with dgx-1's free GPUs updated)
    assert s2.prepared is not s1.prepared and s2.prepared._snap is not None
    assert s2.prepared.cluster is s2.cluster
    assert same(s2)
    # A node change: fresh pieces, built on first use
    s3 = store.patch("c", [{"op": "node_down", "node": "dgx-3"}])
    assert s3.prepared._snap is None and s3.prepared.cluster is s3.cluster
    assert same(s3)
    # Pieces in use by a placement are not touched: the next version starts fresh
    with s3.prepared_lock:
        s4 = store.patch("c", [{"op": "job_finished", "job": "a"}])
    assert s4.prepared._snap is None
    # Nodes of their own (the template was expanded by s3's change) going down or up, and nothing else:
    # the pieces are moved forward by those nodes, and still decide as place() alone.
    s4.prepared.snapshot()
    s5 = store.patch("c", [{"op": "node_down", "node": "dgx-1"}])
    assert s5.prepared._snap is not None and s5.prepared.cluster is s5.cluster
    assert same(s5)
    s6 = store.patch("c", [{"op": "node_up", "node": "dgx-3"}, {"op": "node_up", "node": "dgx-1"}])
    assert s6.prepared._snap is not None and all(n.usable for n in s6.cluster.nodes)
    assert same(s6)
    # Nodes joining, then leaving: the views of the nodes that stay are carried (the same objects where
    # nothing moved them), and the pieces still decide as place() alone.
    place(job, s6.cluster, policy, now=now, prepared=s6.prepared)  # arrays built too
    grown = store.patch(
        "c", [joined({"name": "dgx-4", "cpu_cores": 64, "gpus": {"type": "nvidia-h100", "count": 8}})]
    )
    assert grown.prepared._snap is not None and grown.prepared._snap.nodes[:4] == s6.prepared._snap.nodes
    assert all(a is b for a, b in zip(s6.prepared._snap.nodes, grown.prepared._snap.nodes, strict=False))
    assert same(grown)
    shrunk = store.patch("c", [{"op": "node_removed", "node": "cpu"}])
    assert shrunk.prepared._snap is not None and [v.name for v in shrunk.prepared._snap.nodes][-1] == "dgx-4"
    assert shrunk.prepared._snap.nodes[0] is grown.prepared._snap.nodes[0]
    assert same(shrunk)
    # A node fails and its job is reported finished in the same PATCH (docs/service.md's example): the
    # pieces still move forward, by the node and the job together.
    s7 = store.patch("c", [started("b", "dgx-2", [0, 1])])
    s7.prepared.snapshot()
    s8 = store.patch("c", [{"op": "node_down", "node": "dgx-2"}, {"op": "job_finished", "job": "b"}])
    assert s8.prepared._snap is not None and s8.prepared.cluster is s8.cluster
    assert not s8.cluster.node("dgx-2").usable and not s8.cluster.running_jobs()
    assert same(s8)


_NODES = ["dgx-1", "dgx-2", "dgx-3", "new-1", "new-2"]


@st.composite
def _patches(draw: st.DrawFn) -> list[list[tuple[str, str, int]]]:
    """Up to six PATCHes of one to three changes: nodes down or up, a 2-GPU job started (GPUs chosen when
    applied), the oldest running job finished, a DGX joined or a node removed."""
    change = st.tuples(
        st.sampled_from(
            ["node_down", "node_up", "job_started", "job_finished", "nodes_added", "node_removed"]
        ),
        st.sampled_from(_NODES),
        st.integers(0, 3),
    )
    return draw(st.lists(st.lists(change, min_size=1, max_size=3), min_size=1, max_size=6))


@settings(max_examples=30, deadline=None)
@given(patches=_patches())
def test_versions_decide_as_place_does_whatever_their_patches_mixed(
    patches: list[list[tuple[str, str, int]]],
) -> None:
    # Each version's pieces (moved forward by job and node changes, or started afresh) decide as place()
    # alone on the same snapshot: the property behind the store's speed.
    from placer.solver.engine import place
    from placer.solver.express import Express
    from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    from placer.solver.policy import Policy
    from tests.solver.conftest import without_timing

    store = ClusterStore()
    stored, _ = store.put("c", build_cluster(TEMPLATED))
    policy = Policy(engine="greedy")
    lane = Express()
    now = datetime(2026, 1, 1, tzinfo=UTC)
    batch = [  # more than the three DGXs hold: the rest goes to nodes that joined, when there are any
        Job(id="x", tasks=[TaskGroup(gpu=GpuDemand(count=4))]),
        *(Job(id=f"y{i}", tasks=[TaskGroup(gpu=GpuDemand(count=8))]) for i in range(3)),
    ]
    k = 0
    for patch in patches:
        stored.prepared.snapshot()  # built, so that the next version can move it forward
        cluster, changes = stored.cluster, []
        for op, node, slot in patch:
            gone = {c["node"] for c in changes if c.get("op") == "node_removed"}
            if not cluster.has_node(node) or node in gone:
                continue  # removed before (its jobs went with it)
            if op in ("node_down", "node_up", "node_removed"):
                changes.append({"op": op, "node": node})
            elif op == "nodes_added":
                k += 1
                spec = {
                    "name": f"new-{k}",
                    "rack": "r1",
                    "cpu_cores": 64,
                    "gpus": {"type": "nvidia-h100", "count": 8},
                }
                changes.append(joined(spec))
            elif op == "job_started":
                free = cluster.free_gpus(node)
                if len(free) >= 2 and not any(c.get("op") == "job_started" for c in changes):
                    k += 1
                    changes.append(started(f"j{k}", node, list(free[slot % (len(free) - 1) :][:2])))
            elif cluster.running_jobs() and not any(
                c.get("op") in ("job_finished", "node_removed") for c in changes
            ):
                changes.append(
                    {"op": "job_finished", "job": sorted(rj.job for rj in cluster.running_jobs())[0]}
                )
        if not changes:
            continue
        stored = store.patch("c", changes)
        mine = place(batch, stored.cluster, policy, now=now, prepared=stored.prepared)
        alone = place(batch, stored.cluster, policy, now=now)
        assert (mine.placements, mine.pending) == (alone.placements, alone.pending)
        # One job of the batch alone through the express lane, as the placements route runs it on a
        # stored cluster: place()'s decision on the same version.
        quick = lane.decide(
            batch[:1], stored.prepared, policy, now=now, queues=None, reservations=None, prices=None
        )
        if quick is not None:
            assert without_timing(quick) == without_timing(place(batch[:1], stored.cluster, policy, now=now))
