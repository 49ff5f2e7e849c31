"""Flux JGF / RFC 20 R -> Inventory: containment tree, totals, racks, properties, R_lite fallback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placer.topology.errors import TopologyError
from placer.topology.importers.jgf import expand_hostlist, expand_idset, parse_jgf
from placer.topology.inventory import Inventory

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "importers" / "flux_jgf.json"


def vertex(vid: str, type_: str, name: str | None = None, **meta: Any) -> dict[str, Any]:
    m: dict[str, Any] = {"type": type_, **meta}
    if name is not None:
        m["name"] = name
    return {"id": vid, "metadata": m}


def contains(src: str, dst: str) -> dict[str, Any]:
    return {"source": src, "target": dst, "metadata": {"subsystem": "containment", "relation": "contains"}}


@pytest.fixture(scope="module")
def sample() -> Inventory:
    return parse_jgf(SAMPLE.read_text(), source=str(SAMPLE))


def test_sample_nodes_and_totals(sample: Inventory) -> None:
    assert sample.name == "tiny0"
    assert [n.name for n in sample.nodes] == ["node0", "node1", "node2", "node3"]
    for n in sample.nodes:
        # 2 sockets x 4 cores = 8 cores; 2 sockets x 2 GPUs = 4; 2 memory vertices x 64 GB = 128 GB
        assert n.cpu_cores == 8
        assert n.gpus is not None and (n.gpus.type, n.gpus.count) == ("nvidia-a100", 4)
        assert n.memory_gb == 128
    # 4 nodes x 4 GPUs = 16
    assert sum(n.gpus.count for n in sample.nodes if n.gpus) == 16
    assert [n.rank for n in sample.nodes] == [0, 1, 2, 3]


def test_sample_racks_properties_inner(sample: Inventory) -> None:
    nodes = {n.name: n for n in sample.nodes}
    assert [nodes[f"node{i}"].rack for i in range(4)] == ["rack0", "rack0", "rack1", "rack1"]
    assert nodes["node0"].properties == ["perfclass", "login"]
    assert nodes["node0"].labels == {"perfclass": "3"}  # "login" has an empty value: a property only
    assert nodes["node2"].labels == {"perfclass": "1"}
    inner = nodes["node1"].inner
    assert [v.type for v in inner] == ["socket", "socket"]
    kinds = [c.type for c in inner[0].children]
    assert kinds == ["core"] * 4 + ["gpu"] * 2 + ["memory"]
    memory = inner[0].children[-1]
    assert (memory.size, memory.unit) == (64, "GB")
    assert inner[0].children[4].properties == {"model": "NVIDIA-A100-SXM4-80GB"}


def test_bare_graph_with_in_edges_and_no_metadata() -> None:
    doc = {
        "graph": {
            "nodes": [
                vertex("c", "cluster", "c0"),
                vertex("n", "node", "n0"),
                vertex("k", "core", "core0", size=16),
                vertex("m", "memory", "memory0", size=512, unit="MB"),
                vertex("m2", "memory", "memory1", size=2048, unit="MiB"),
            ],
            "edges": [
                {"source": "c", "target": "n"},  # no metadata: containment/contains
                {"source": "k", "target": "n", "metadata": {"name": {"containment": "in"}}},  # reverse
                {"source": "n", "target": "m", "metadata": {"name": {"containment": "contains"}}},
                {
                    "source": "m",
                    "target": "n",
                    "metadata": {"name": {"containment": "in"}},
                },  # same link again
                contains("n", "m2"),
                {"source": "n", "target": "c", "metadata": {"subsystem": "network", "relation": "link"}},
            ],
        }
    }
    inv = parse_jgf(doc, source="g.json")
    (n,) = inv.nodes
    # core vertex of size 16 -> 16 cores; memory 512 MB + 2048 MiB = 0.5 + 2 = 2.5 GB
    assert (n.cpu_cores, n.memory_gb, n.gpus) == (16, 2.5, None)
    assert inv.metadata["ignored_edges"] == 1


def test_tree_from_paths_when_no_edges() -> None:
    doc = {
        "graph": {
            "nodes": [
                vertex("0", "cluster", "c0", paths={"containment": "/c0"}),
                vertex("1", "rack", "r7", paths={"containment": "/c0/r7"}),
                vertex("2", "node", "n0", paths={"containment": "/c0/r7/n0"}),
                vertex("3", "gpu", "gpu0", paths={"containment": "/c0/r7/n0/gpu0"}),
            ]
        }
    }
    (n,) = parse_jgf(doc, source="p.json").nodes
    assert n.rack == "r7"
    assert n.gpus is not None and (n.gpus.type, n.gpus.count) == ("unknown-gpu", 1)  # no model property


def test_name_from_basename_and_id_and_other_ancestors_as_labels() -> None:
    doc = {
        "graph": {
            "nodes": [
                vertex("0", "cluster", "c0"),
                vertex("1", "pdu", "pdu3"),
                vertex("2", "node", None, basename="fluke", id=7),
            ],
            "edges": [contains("0", "1"), contains("1", "2")],
        }
    }
    (n,) = parse_jgf(doc, source="p.json").nodes
    assert n.name == "fluke7"
    assert n.labels == {"pdu": "pdu3"}


def test_r_lite_fallback() -> None:
    doc = {
        "version": 1,
        "execution": {
            "R_lite": [
                {"rank": "0-1", "children": {"core": "0-15", "gpu": "0-3"}},
                {"rank": "2", "children": {"core": "0-7"}},
            ],
            "nodelist": ["gpu[01-02],cpu01"],
            "properties": {"amd": "2"},
        },
    }
    inv = parse_jgf(doc, source="r.json")
    # ranks 0-1: 16 cores (0-15) and 4 GPUs (0-3); rank 2: 8 cores
    assert [(n.name, n.cpu_cores, n.gpus.count if n.gpus else 0) for n in inv.nodes] == [
        ("gpu01", 16, 4),
        ("gpu02", 16, 4),
        ("cpu01", 8, 0),
    ]
    assert inv.nodes[2].properties == ["amd"]


def test_hostlist_and_idset() -> None:
    assert expand_hostlist("node[0-2,5],login") == ["node0", "node1", "node2", "node5", "login"]
    assert expand_hostlist("gpu[008-010]") == ["gpu008", "gpu009", "gpu010"]
    assert expand_idset("0-3,7") == [0, 1, 2, 3, 7]
    with pytest.raises(ValueError):
        expand_idset("3-1")
    with pytest.raises(ValueError):
        expand_hostlist("n[a-b]")


def test_text_input() -> None:
    doc = {"graph": {"nodes": [vertex("0", "node", "n0")], "edges": []}}
    assert parse_jgf(json.dumps(doc), source="t.json").nodes[0].name == "n0"


@pytest.mark.parametrize(
    ("graph", "item", "problem"),
    [
        ({"nodes": [vertex("0", "node", "n", size=-1)]}, "graph.nodes[0] (0)", "'size' must be >= 0"),
        ({"nodes": [vertex("0", "node", "n", size="2")]}, "graph.nodes[0] (0)", "'size' must be an integer"),
        ({"nodes": [{"id": "0", "metadata": {"name": "x"}}]}, "graph.nodes[0] (0)", "'type' is missing"),
        (
            {"nodes": [{"metadata": {"type": "node"}}]},
            "graph.nodes[0]",
            "vertex 'id' must be a string or integer",
        ),
        (
            {"nodes": [vertex("0", "node", "a"), vertex("0", "node", "b")]},
            "graph.nodes[1] (0)",
            "is used twice",
        ),
        (
            {"nodes": [vertex("0", "node", "a")], "edges": [contains("0", "9")]},
            "graph.edges[0]",
            "unknown vertex '9'",
        ),
        (
            {
                "nodes": [vertex("0", "node", "a"), vertex("1", "core", "c")],
                "edges": [
                    {
                        "source": "0",
                        "target": "1",
                        "metadata": {"subsystem": "containment", "relation": "owns"},
                    }
                ],
            },
            "graph.edges[0]",
            "relation 'owns'",
        ),
        (
            {
                "nodes": [vertex("0", "rack", "r0"), vertex("1", "rack", "r1"), vertex("2", "node", "n")],
                "edges": [contains("0", "2"), contains("1", "2")],
            },
            "graph.edges[1]",
            "is in both 'r0' and 'r1'",
        ),
        (
            {
                "nodes": [vertex("0", "rack", "r0"), vertex("1", "rack", "r1"), vertex("2", "node", "n")],
                "edges": [contains("0", "1"), contains("1", "0")],
            },  # r0 in r1 in r0
            "graph.nodes[0] (0)",
            "form a cycle",
        ),
        (
            {
                "nodes": [vertex("0", "node", "n"), vertex("1", "memory", "m", size=4, unit="parsecs")],
                "edges": [contains("0", "1")],
            },
            "graph.nodes[1] (1)",
            "unit 'parsecs'",
        ),
        (
            {
                "nodes": [
                    vertex("0", "node", "n"),
                    vertex("1", "gpu", "g0", properties={"model": "A100"}),
                    vertex("2", "gpu", "g1", properties={"model": "T4"}),
                ],
                "edges": [contains("0", "1"), contains("0", "2")],
            },
            "graph.nodes[0] (0)",
            "GPUs of several models",
        ),
        ({"nodes": [vertex("0", "rack", "r")]}, "graph.nodes", "no vertex of type 'node'"),
        ({"nodes": "x"}, "graph.nodes", "must be a list of vertices"),
    ],
)
def test_malformed_graphs_name_file_item_problem(graph: dict[str, Any], item: str, problem: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_jgf({"graph": graph}, source="r.json")
    p = e.value.problems[0]
    assert (p.source, p.item) == ("r.json", item)
    assert problem in p.message


def test_cycle_through_three_vertices() -> None:
    nodes = [
        vertex("0", "rack", "a"),
        vertex("1", "rack", "b"),
        vertex("2", "rack", "c"),
        vertex("3", "node", "n"),
    ]
    # 0 -> 1 -> 2 -> 0: every vertex has exactly one parent, so only the cycle check can catch it
    edges = [contains("0", "1"), contains("1", "2"), contains("2", "0"), contains("2", "3")]
    with pytest.raises(TopologyError, match="cycle"):
        parse_jgf({"graph": {"nodes": nodes, "edges": edges}}, source="r.json")


def test_not_a_jgf() -> None:
    with pytest.raises(TopologyError, match=r"r.json: document: expected a JGF object"):
        parse_jgf([1, 2], source="r.json")
    with pytest.raises(TopologyError, match=r"r.json: graph: expected an object"):
        parse_jgf({"graph": 3}, source="r.json")
