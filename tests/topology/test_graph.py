"""The networkx graph: vertex types, containment, NVLink star edges, ICI torus edges, inner trees."""

from __future__ import annotations

from collections import Counter

import networkx as nx

from placer.topology import Inventory, build_cluster, cluster_of, dgx_h100, gb200_nvl72, tpu_pod


def _types(g: nx.DiGraph) -> Counter[str]:
    return Counter(d["type"] for _, d in g.nodes(data=True))


def _kinds(g: nx.DiGraph) -> Counter[str]:
    return Counter(d["kind"] for _, _, d in g.edges(data=True))


def test_dgx_graph_counts() -> None:
    g = cluster_of(dgx_h100(4, nodes_per_rack=2, zones=["z1"])).graph
    t = _types(g)
    # 1 cluster, 1 zone, 2 racks, 4 nodes, 32 GPUs, 4 domains
    assert (t["cluster"], t["zone"], t["rack"], t["node"], t["gpu"], t["nvlink_domain"]) == (
        1,
        1,
        2,
        4,
        32,
        4,
    )
    k = _kinds(g)
    # contains: cluster->zone 1 + zone->rack 2 + rack->node 4 + node->gpu 32 = 39; nvlink: one per GPU = 32
    assert (k["contains"], k["nvlink"]) == (39, 32)
    assert nx.is_frozen(g)
    # the containment edges form a tree rooted at the cluster
    tree = g.edge_subgraph([(u, v) for u, v, d in g.edges(data=True) if d["kind"] == "contains"])
    assert nx.is_arborescence(tree)


def test_nvl72_is_a_star_not_a_clique() -> None:
    g = cluster_of(gb200_nvl72(1)).graph
    domain = next(v for v, d in g.nodes(data=True) if d["type"] == "nvlink_domain")
    # 72 GPUs -> 72 nvlink edges into the domain vertex (a clique would be 72*71 = 5112 directed edges)
    assert g.in_degree(domain) == 72
    assert _kinds(g)["nvlink"] == 72


def test_v5e_ici_torus_edges() -> None:
    g = cluster_of(tpu_pod("v5e")).graph
    t = _types(g)
    assert (t["tpu_pod"], t["tpu_host"], t["tpu_chip"]) == (1, 64, 256)
    ici = [(u, v, d) for u, v, d in g.edges(data=True) if d["kind"] == "ici"]
    # 2-D torus 16x16: each chip has one +x and one +y link (wrap included) = 2 * 256 = 512 undirected
    # links, stored in both directions = 1024; wrap links: 16 per axis * 2 axes = 32 undirected = 64.
    assert len(ici) == 1024
    assert sum(1 for *_, d in ici if d["wrap"]) == 64
    assert all(
        g.out_degree(v) == 4 for v, d in g.nodes(data=True) if d["type"] == "tpu_chip"
    )  # 4 ICI neighbours


def test_small_v4_mesh_has_no_wrap_edges() -> None:
    g = cluster_of(tpu_pod("v4", shape=(2, 2, 2))).graph
    ici = [d for *_, d in g.edges(data=True) if d["kind"] == "ici"]
    # 2x2x2 mesh: links per axis = (2-1) * 4 = 4, 3 axes = 12 undirected = 24 directed, no wrap
    assert len(ici) == 24
    assert not any(d["wrap"] for d in ici)


def test_inner_tree_gpus_are_the_node_gpus() -> None:
    inv = Inventory.model_validate(
        {
            "nodes": [
                {
                    "name": "f",
                    "gpus": {"type": "t4", "count": 2},
                    "inner": [
                        {"type": "socket", "children": [{"type": "core"}, {"type": "gpu", "name": "gpu0"}]},
                        {"type": "socket", "children": [{"type": "core"}, {"type": "gpu", "name": "gpu1"}]},
                    ],
                }
            ]
        }
    )
    g = build_cluster(inv).graph
    t = _types(g)
    assert (t["socket"], t["core"], t["gpu"]) == (2, 2, 2)
    gpus = [v for v, d in g.nodes(data=True) if d["type"] == "gpu"]
    # each GPU hangs under a socket, not directly under the node
    parents = {next(iter(g.predecessors(v))) for v in gpus}
    assert all(g.nodes[p]["type"] == "socket" for p in parents)
    assert len(parents) == 2
