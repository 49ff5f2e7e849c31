"""Flux jobspecs matched against nodes' inner containment trees (RFC 14): "4 nodes, each with 2 sockets of
at least 4 cores" (spec_14 use case 1.3) needs that shape, not just 8 cores."""

from __future__ import annotations

from pathlib import Path

from solver.jobs import read_file
from tests.solver.conftest import Solve, nodes_of, pending_reason
from topology import InnerVertex, Inventory, NodeSpec, build_cluster


def _socket(cores: int) -> InnerVertex:
    return InnerVertex(type="socket", children=[InnerVertex(type="core") for _ in range(cores)])


def _node(name: str, *sockets: int) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=sum(sockets), memory_gb=64, inner=[_socket(c) for c in sockets])


def test_use_case_1_3_needs_two_sockets_of_four_cores(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    # 5 nodes of 2 x 4 cores and 4 nodes of 1 x 8 cores: every node has 8 cores, only the first 5 the shape.
    nodes = [_node(f"two-{i}", 4, 4) for i in range(5)] + [_node(f"one-{i}", 8) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    placed = nodes_of(d, r.id)
    assert len(placed) == 4 and all(n.startswith("two-") for n in placed)


def test_too_few_nodes_of_the_shape_is_unsatisfiable_and_says_why(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    # 3 nodes of the right shape, 4 of one 8-core socket: 4 distinct nodes of the shape can never be had.
    nodes = [_node(f"two-{i}", 4, 4) for i in range(3)] + [_node(f"one-{i}", 8) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    reason = pending_reason(d, r.id) or ""
    assert reason.startswith("UNSATISFIABLE")
    assert "sockets/cores" in reason and "4 nodes" in reason


def test_nodes_without_an_inner_tree_are_judged_by_totals(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    nodes = [NodeSpec(name=f"flat-{i}", cpu_cores=8, memory_gb=64) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    assert sorted(nodes_of(d, r.id)) == [f"flat-{i}" for i in range(4)]
