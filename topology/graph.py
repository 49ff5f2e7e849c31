"""The cluster as a networkx ``DiGraph``: containment tree, NVLink domains and TPU ICI links.

Why this shape:

* containment edges (``kind="contains"``) go parent -> child: cluster -> zone -> block -> rack -> node ->
  gpu (or the node's inner tree: socket -> core/memory/gpu), and tpu_pod -> tpu_host -> tpu_chip; a level
  the inventory leaves out is skipped, so a node without rack hangs directly from its block/zone/cluster;
* NVLink is modelled the way NVSwitch works: every GPU of a domain has one ``kind="nvlink"`` edge to the
  domain's vertex, so a 72-GPU NVL72 domain is 72 edges, not a 2,556-edge clique;
* ICI edges (``kind="ici"``) join neighbouring TPU chips in both directions, with ``wrap=True`` on the
  links that close a ring where the pod wraps (no wrap link on axes of length <= 2, where it would
  duplicate the neighbour link).

Vertex ids are strings like ``node:dgx-01`` and ``gpu:dgx-01/3``; they are an internal detail — every
vertex carries ``type`` and ``name`` attributes, and users should go through the typed
:class:`~placer.topology.cluster.Cluster` API. The graph is frozen: allocations live in snapshots, not here.

>>> from placer.topology.presets import dgx_h100, cluster_of
>>> g = cluster_of(dgx_h100(1)).graph
>>> sum(1 for _, d in g.nodes(data=True) if d["type"] == "gpu")
8
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import product
from typing import TYPE_CHECKING, Any

import networkx as nx

from placer.topology.inventory import InnerVertex
from placer.topology.model import Coord, Node

if TYPE_CHECKING:
    from placer.topology.structure import Structure

__all__ = ["ROOT", "build_graph", "chip_vertex", "gpu_vertex"]

ROOT = "cluster"


def gpu_vertex(node: str, index: int) -> str:
    """Vertex id of GPU ``index`` of ``node``."""
    return f"gpu:{node}/{index}"


def chip_vertex(pod: str, chip: Coord) -> str:
    """Vertex id of a TPU chip."""
    return f"tpu_chip:{pod}/" + ",".join(str(c) for c in chip)


def _location_chain(node: Node) -> list[tuple[str, str, str]]:
    """(vertex id, type, name) of the node's zone/block/rack ancestors that are known, outermost first."""
    chain: list[tuple[str, str, str]] = []
    path: list[str] = []
    for kind, value in (("zone", node.zone), ("block", node.block), ("rack", node.rack)):
        if value:
            path.append(value)
            chain.append((f"{kind}:{'/'.join(path)}", kind, value))
    return chain


def _inner(
    g: nx.DiGraph, parent: str, vertices: list[InnerVertex], prefix: str, gpu_ids: Iterator[str]
) -> None:
    for i, v in enumerate(vertices):
        vid = f"{prefix}/{v.type}{i}"
        if v.type == "gpu":
            # The k-th gpu of the inner tree is GPU k of the node (build checked the counts agree).
            vid = next(gpu_ids)
            g.add_node(vid, inner_name=v.name, size=v.size, properties=dict(v.properties))
        else:
            g.add_node(
                vid,
                type=v.type,
                name=v.name or f"{v.type}{i}",
                size=v.size,
                unit=v.unit,
                properties=dict(v.properties),
                inner=True,
            )
        g.add_edge(parent, vid, kind="contains")
        if v.children:
            _inner(g, vid, v.children, vid, gpu_ids)


def _ici_edges(
    pod_name: str, shape: Coord, wrap: tuple[bool, ...]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for chip in product(*(range(s) for s in shape)):
        for axis, size in enumerate(shape):
            nxt = chip[axis] + 1
            is_wrap = False
            if nxt == size:
                if not wrap[axis] or size <= 2:
                    continue
                nxt, is_wrap = 0, True
            other = (*chip[:axis], nxt, *chip[axis + 1 :])
            a, b = chip_vertex(pod_name, chip), chip_vertex(pod_name, other)
            attrs = {"kind": "ici", "axis": axis, "wrap": is_wrap}
            yield a, b, attrs
            yield b, a, attrs


def build_graph(structure: Structure) -> nx.DiGraph:
    """Build the (frozen) graph of a cluster structure.

    Vertex attributes: ``type`` (cluster, zone, block, rack, node, gpu, nvlink_domain, tpu_pod, tpu_host,
    tpu_chip, or an inner-tree type such as socket/core/memory), ``name``, and per type: nodes carry
    ``labels``; GPUs ``node``, ``index``, ``gpu_type``; chips ``coord``; hosts ``index``. Vertices and
    edges are collected in lists and added in two bulk calls (about twice as fast at 10k nodes).
    """
    g: nx.DiGraph[str] = nx.DiGraph(name=structure.inventory.name, source=structure.source)
    vertices: list[tuple[str, dict[str, Any]]] = [
        (ROOT, {"type": "cluster", "name": structure.inventory.name})
    ]
    edges: list[tuple[str, str, dict[str, Any]]] = []
    contains = {"kind": "contains"}
    seen_loc: set[str] = set()
    for node in structure.nodes:
        parent = ROOT
        for vid, kind, value in _location_chain(node):
            if vid not in seen_loc:
                seen_loc.add(vid)
                vertices.append((vid, {"type": kind, "name": value}))
                edges.append((parent, vid, contains))
            parent = vid
        nid = f"node:{node.name}"
        vertices.append((nid, {"type": "node", "name": node.name, "labels": node.labels}))
        edges.append((parent, nid, contains))
        gpu_ids = [gpu_vertex(node.name, i) for i in range(node.gpu_count)]
        vertices.extend(
            (vid, {"type": "gpu", "name": vid[4:], "node": node.name, "index": i, "gpu_type": node.gpu_type})
            for i, vid in enumerate(gpu_ids)
        )
        remaining = iter(gpu_ids)
        if node.spec.inner:
            g.add_nodes_from(vertices)
            vertices.clear()
            _inner(g, nid, list(node.spec.inner), f"inner:{node.name}", remaining)
        edges.extend((nid, vid, contains) for vid in remaining)
    nvlink = {"kind": "nvlink"}
    for dom in structure.domains.values():
        did = f"nvlink:{dom.id}"
        vertices.append(
            (did, {"type": "nvlink_domain", "name": dom.id, "gpu_type": dom.gpu_type, "size": dom.size})
        )
        edges.extend((gpu_vertex(n, i), did, nvlink) for n, i in dom.gpus)
    for pod in structure.pods.values():
        pid = f"tpu_pod:{pod.name}"
        vertices.append(
            (pid, {"type": "tpu_pod", "name": pod.name, "generation": pod.generation, "shape": pod.shape})
        )
        parent = ROOT
        if pod.zone:
            zid = f"zone:{pod.zone}"
            if zid not in seen_loc:
                seen_loc.add(zid)
                vertices.append((zid, {"type": "zone", "name": pod.zone}))
                edges.append((ROOT, zid, contains))
            parent = zid
        edges.append((parent, pid, contains))
        for host in pod.hosts():
            hid = f"tpu_host:{host.name}"
            vertices.append((hid, {"type": "tpu_host", "name": host.name, "index": host.index}))
            edges.append((pid, hid, contains))
            for chip in host.chips:
                cid = chip_vertex(pod.name, chip)
                vertices.append((cid, {"type": "tpu_chip", "name": cid.split(":", 1)[1], "coord": chip}))
                edges.append((hid, cid, contains))
        edges.extend(_ici_edges(pod.name, pod.shape, pod.wrap))
    g.add_nodes_from(vertices)
    g.add_edges_from(edges)
    return nx.freeze(g)
