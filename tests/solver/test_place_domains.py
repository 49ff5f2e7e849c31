"""Flux levels above the node (RFC 14 ``cluster: 1 > rack: 2 > node: 1 > slot``): honoured where the
inventory describes the level, said to be assumed where it does not (issue "Spec and peer fidelity",
rule 2). Every decision is checked by rule 12 (``domain-count``) through the ``solve`` fixture."""

from __future__ import annotations

from pathlib import Path

from placer.solver.checks import check
from placer.solver.jobs import ReadResult, read_file, read_object
from placer.solver.jobs.model import DomainCount, Job, TaskGroup
from placer.topology import Inventory, NodeSpec, build_cluster
from tests.solver.check_helpers import decision, place, rep, rules
from tests.solver.conftest import Solve, nodes_of, pending_reason


def _levels_job(job_id: str, levels: list[tuple[str, int]], nodes: int = 1) -> ReadResult:
    """A Flux jobspec: ``levels`` (outermost first) > node ``nodes`` > slot 1 > core 2."""
    inner: dict[str, object] = {
        "type": "node",
        "count": nodes,
        "with": [{"type": "slot", "count": 1, "label": "s", "with": [{"type": "core", "count": 2}]}],
    }
    for level, count in reversed(levels):
        inner = {"type": level, "count": count, "with": [inner]}
    spec = {
        "version": 999,
        "resources": [inner],
        "tasks": [{"command": ["app"], "slot": "s", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 3600}},
    }
    [r] = read_object(spec, source=job_id)
    assert r.ok, r.issues
    return r


def _racks(*sizes: int, rack: bool = True) -> object:
    """A cluster of racks ``r0, r1...`` holding ``sizes[i]`` 8-core nodes each (no rack attribute at all
    with ``rack=False``)."""
    nodes = [
        NodeSpec(name=f"r{i}-n{j}", cpu_cores=8, memory_gb=32, rack=f"r{i}" if rack else None)
        for i, size in enumerate(sizes)
        for j in range(size)
    ]
    return build_cluster(Inventory(nodes=nodes), source="t")


def _rack_of(node: str) -> str:
    return node.split("-")[0]


def test_reader_keeps_the_levels_above_the_node(specs_dir: Path) -> None:
    r = _levels_job("j", [("cluster", 1), ("rack", 2)])
    assert r.job is not None
    [g] = r.job.tasks
    # cluster: 1 is every inventory; rack: 2 > node: 1 is 2 replicas in 2 racks.
    assert (g.count, g.domains) == (2, [DomainCount(level="rack", count=2)])
    [g] = _levels_job("k", [("zone", 2), ("rack", 2)], nodes=2).job.tasks  # type: ignore[union-attr]
    assert g.count == 8 and g.domains == [
        DomainCount(level="zone", count=2),
        DomainCount(level="rack", count=4),
    ]
    # RFC 14 use cases 1.6 (2 clusters) and 1.7 (3 switches, one slot each).
    [g16] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.6.yaml")[0].job.tasks  # type: ignore[union-attr]
    assert g16.domains == [DomainCount(level="cluster", count=2)]
    [g17] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.7.yaml")[0].job.tasks  # type: ignore[union-attr]
    assert g17.domains == [DomainCount(level="switch", count=3)]


def test_two_racks_on_a_one_rack_cluster_is_unsatisfiable(solve: Solve) -> None:
    # The issue's case: rack: 2 on an inventory that describes one rack (of 4 nodes, with room for both
    # replicas). Looking through the rack count would place them; the request asks for 2 racks.
    r = _levels_job("j", [("cluster", 1), ("rack", 2)])
    d = solve([r], _racks(4))
    reason = pending_reason(d, r.id) or ""
    assert reason.startswith("UNSATISFIABLE") and "2 racks" in reason and "only 1 rack" in reason


def test_two_racks_get_one_replica_each(solve: Solve) -> None:
    # Racks of 3 and 1 nodes: best fit alone could put both replicas in rack r0; the request puts one in
    # each rack.
    r = _levels_job("j", [("cluster", 1), ("rack", 2)])
    placed = nodes_of(solve([r], _racks(3, 1)), r.id)
    assert sorted(_rack_of(n) for n in placed) == ["r0", "r1"]


def test_racks_of_two_nodes_each_are_filled_evenly(solve: Solve) -> None:
    # rack: 2 > node: 2: 4 replicas, 2 racks, 2 in each. Racks of 3, 1 and 2 nodes: the 1-node rack
    # cannot hold 2 replicas on distinct nodes, so the racks are r0 and r2, 2 nodes each.
    r = _levels_job("j", [("rack", 2)], nodes=2)
    placed = nodes_of(solve([r], _racks(3, 1, 2)), r.id)
    assert len(placed) == len(set(placed)) == 4
    assert sorted(_rack_of(n) for n in placed) == ["r0", "r0", "r2", "r2"]


def test_a_full_rack_is_skipped_for_another(solve: Solve) -> None:
    # 3 racks of 1 node; a first job takes all of r0's cores. rack: 2 then goes to r1 and r2.
    cluster = _racks(1, 1, 1)
    big = Job(id="big", tasks=[TaskGroup(cpu_cores=8)])
    r = _levels_job("j", [("rack", 2)])
    d = solve([big, r], cluster)
    assert sorted(_rack_of(n) for n in nodes_of(d, r.id)) == sorted(
        {"r0", "r1", "r2"} - {_rack_of(n) for n in nodes_of(d, "big")}
    )


def test_a_level_the_cluster_does_not_describe_is_placed_and_noted(solve: Solve, specs_dir: Path) -> None:
    # No node names a rack: the level is assumed, and the decision says so on the job.
    r = _levels_job("j", [("cluster", 1), ("rack", 2)])
    d = solve([r], _racks(4, rack=False))
    [p] = d.placements
    assert len(p.replicas) == 2
    assert any("rack" in n and "assumed" in n for n in p.notes)
    # Switches are never described by placer's inventories (RFC 14 use case 1.7: 3 switches).
    [r17] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.7.yaml")
    [p] = solve([r17], _racks(4)).placements
    assert any("3 switch(s)" in n and "assumed" in n for n in p.notes)


def test_two_clusters_are_unsatisfiable_on_one_inventory(solve: Solve, specs_dir: Path) -> None:
    # RFC 14 use case 1.6: "30 cores on 2 clusters". An inventory is one cluster.
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.6.yaml")
    big = build_cluster(
        Inventory(nodes=[NodeSpec(name=f"n{i}", cpu_cores=64, memory_gb=64) for i in range(4)]), source="t"
    )
    reason = pending_reason(solve([r], big), r.id) or ""
    assert reason.startswith("UNSATISFIABLE") and "one cluster" in reason


def _two_rack_job() -> Job:
    return Job(
        id="j",
        tasks=[
            TaskGroup(
                name="s",
                count=2,
                cpu_cores=2,
                one_per_node=True,
                domains=[DomainCount(level="rack", count=2)],
            )
        ],
    )


def _rep(node: str, **kw: object) -> object:
    return rep(node, cpu_cores=2, **kw)


def test_checker_rejects_two_replicas_in_one_rack() -> None:
    cluster, job = _racks(2, 1), _two_rack_job()
    one_rack = decision(place("j", _rep("r0-n0", task_group="s"), _rep("r0-n1", task_group="s")))
    assert rules(check(one_rack, [job], cluster)) == [("domain-count", "j", None)]
    two_racks = decision(place("j", _rep("r0-n0", task_group="s"), _rep("r1-n0", task_group="s")))
    assert rules(check(two_racks, [job], cluster)) == []


def test_checker_rejects_a_replica_outside_every_rack() -> None:
    nodes = [
        NodeSpec(name="r0-n0", cpu_cores=8, memory_gb=8, rack="r0"),
        NodeSpec(name="loose", cpu_cores=8, memory_gb=8),
    ]
    cluster = build_cluster(Inventory(nodes=nodes), source="t")
    d = decision(place("j", _rep("r0-n0", task_group="s"), _rep("loose", task_group="s")))
    assert ("domain-count", "j", "loose") in rules(check(d, [_two_rack_job()], cluster))


def test_checker_does_not_judge_a_level_the_cluster_does_not_describe() -> None:
    d = decision(place("j", _rep("r0-n0", task_group="s"), _rep("r0-n1", task_group="s")))
    assert rules(check(d, [_two_rack_job()], _racks(2, rack=False))) == []
