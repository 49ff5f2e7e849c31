"""Flux JSON Graph Format (Fluxion resource graph, RFC 20 ``R``) ->
:class:`~placer.topology.inventory.Inventory`.

Why: Flux describes a cluster as a containment tree (cluster > rack > node > socket > core/gpu/memory),
and Fluxion's test data and ``flux R`` output carry it as JGF. Accepted documents: RFC 20 ``R``
(``{"version": 1, "execution": {...}, "scheduling": {"graph": {...}}}``), a bare ``{"graph": {...}}``, and
(as a fallback when ``scheduling`` is absent) ``R``'s ``execution.R_lite`` + ``nodelist``.

Mapping rules (also in ``docs/importers.md``):

* Vertices: ``{"id", "metadata": {"type", "basename", "name", "id", "size", "unit", "properties",
  "paths", "rank"}}``; the name is ``name``, else ``basename`` + ``id``, else the vertex id.
* Containment edges: ``metadata.subsystem == "containment"`` or ``metadata.name.containment``, with
  ``relation``/value ``contains`` (source holds target) or ``in`` (target holds source); edges without
  metadata are containment ``contains`` (newer Fluxion writes them so). Other subsystems (network, power)
  are counted in ``metadata["ignored_edges"]``. With no containment edges at all, the tree comes from each
  vertex's ``paths.containment``.
* Each ``node`` vertex -> a ``NodeSpec``: cores = the sizes of its ``core`` vertices summed (count x size);
  memory = its ``memory`` vertices, size x ``unit`` (``B``, ``KB``, ``MB``, ``GB``, ``TB``, binary; no unit
  = GB, Fluxion's default); storage likewise from ``storage`` vertices; GPUs = the sizes of ``gpu``
  vertices, their type from the gpu vertex property ``model`` (through the catalog), else
  ``unknown-gpu``. The node's whole subtree is kept as ``inner`` (type, name, size, unit, properties).
  ``rank`` >= 0 -> ``rank``.
* Ancestors: a ``rack`` vertex -> the node's ``rack``, the root ``cluster`` vertex -> the inventory name,
  any other ancestor type -> a label ``<type>: <name>``.
* Properties (``{"name": "value"}``) -> the node's ``properties`` (the names, what RFC 31 constraints
  match) and labels (name: value, when the value is not empty).

>>> doc = {"graph": {"nodes": [
...     {"id": "0", "metadata": {"type": "cluster", "name": "tiny0"}},
...     {"id": "1", "metadata": {"type": "node", "name": "node0", "rank": 0}},
...     {"id": "2", "metadata": {"type": "core", "name": "core0", "size": 4}},
...     {"id": "3", "metadata": {"type": "gpu", "name": "gpu0", "properties": {"model": "H100"}}}],
...   "edges": [{"source": "0", "target": "1"}, {"source": "1", "target": "2"},
...             {"source": "1", "target": "3"}]}}
>>> inv = parse_jgf(doc, source="tiny.json")
>>> n = inv.nodes[0]
>>> (inv.name, n.name, n.cpu_cores, n.gpus.type, n.gpus.count, n.rank)
('tiny0', 'node0', 4.0, 'nvidia-h100', 1, 0)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from placer.topology.importers._common import UNKNOWN_GPU, Problems, gpu_fields, join_item, short
from placer.topology.importers.text import parse_text
from placer.topology.inventory import InnerVertex, Inventory, NodeSpec

__all__ = ["FORMAT", "MAX_TREE_DEPTH", "UNITS", "expand_hostlist", "expand_idset", "parse_jgf"]

FORMAT = "jgf"

#: Memory/storage units -> GB (binary, like the rest of the inventory).
UNITS = {
    "": 1.0, "b": 2.0**-30, "kb": 2.0**-20, "kib": 2.0**-20, "mb": 2.0**-10, "mib": 2.0**-10,
    "gb": 1.0, "gib": 1.0, "tb": 1024.0, "tib": 1024.0, "pb": 1024.0**2, "pib": 1024.0**2,
}  # fmt: skip
#: Deepest containment tree accepted (cycles and absurd documents stop here).
MAX_TREE_DEPTH = 64


@dataclass
class _Vertex:
    vid: str
    item: str
    type: str
    name: str
    size: int
    unit: str | None
    properties: dict[str, str]
    rank: int | None
    path: str | None
    children: list[_Vertex] = field(default_factory=list)
    parent: _Vertex | None = None


def parse_jgf(obj_or_text: Any, *, source: str) -> Inventory:
    """A Flux JGF / RFC 20 R document (object or JSON text) -> Inventory; a
    :class:`~placer.topology.errors.TopologyError` naming each bad vertex or edge otherwise.

    >>> parse_jgf({"graph": {"nodes": [{"id": "0", "metadata": {"type": "node", "size": -1}}]}},
    ...           source="r.json")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: r.json: graph.nodes[0] (0): 'size' must be >= 0, got -1
    """
    problems = Problems(source)
    obj = parse_text(obj_or_text, source=source) if isinstance(obj_or_text, str) else obj_or_text
    if not isinstance(obj, dict):
        problems.add("document", f"expected a JGF object with 'graph', got {short(obj)}")
        problems.check()
    graph = obj.get("graph")
    scheduling = obj.get("scheduling")
    if graph is None and isinstance(scheduling, dict):
        graph = scheduling.get("graph")
    if graph is None and "execution" in obj:
        return _from_r_lite(obj, problems, source)
    if not isinstance(graph, dict):
        problems.add("graph", f"expected an object with 'nodes' and 'edges', got {short(graph)}")
        problems.check()
    vertices = _vertices(graph.get("nodes"), problems)
    problems.check()
    ignored = _edges(graph.get("edges"), vertices, problems)
    problems.check()
    roots = [v for v in vertices.values() if v.parent is None]
    _check_acyclic(vertices, problems)
    problems.check()

    nodes: list[NodeSpec] = []
    for v in vertices.values():
        if v.type == "node":
            spec = _node(v, problems)
            if spec is not None:
                nodes.append(spec)
    seen: set[str] = set()
    for n in nodes:
        if n.name in seen:
            problems.add("graph.nodes", f"node name {n.name!r} is used by several node vertices")
        seen.add(n.name)
    if not nodes:
        problems.add("graph.nodes", "no vertex of type 'node'")
    problems.check()
    clusters = [r for r in roots if r.type == "cluster"]
    metadata: dict[str, Any] = {"format": FORMAT, "source": source}
    if ignored:
        metadata["ignored_edges"] = ignored
    data = {"name": clusters[0].name if clusters else "cluster", "nodes": nodes, "metadata": metadata}
    inv = problems.model(Inventory, data, "document")
    problems.check()
    assert inv is not None
    return inv


def _vertices(raw: Any, problems: Problems) -> dict[str, _Vertex]:
    if not isinstance(raw, list):
        problems.add("graph.nodes", f"must be a list of vertices, got {short(raw)}")
        return {}
    out: dict[str, _Vertex] = {}
    for index, entry in enumerate(raw):
        vid = entry.get("id") if isinstance(entry, dict) else None
        ok_id = isinstance(vid, str | int) and not isinstance(vid, bool)
        item = join_item("graph.nodes", index, str(vid) if ok_id else None)
        if not isinstance(entry, dict):
            problems.add(item, f"a vertex must be an object, got {short(entry)}")
            continue
        if not ok_id:
            problems.add(item, f"vertex 'id' must be a string or integer, got {short(vid)}")
            continue
        before = len(problems.items)
        meta = problems.mapping(entry, "metadata", item, required=True) or {}
        vtype = problems.string(meta, "type", item, required=True)
        name = problems.string(meta, "name", item)
        basename = problems.string(meta, "basename", item)
        size = problems.int_value(meta, "size", item)
        unit = meta.get("unit")
        if unit is not None and not isinstance(unit, str):
            problems.add(item, f"'unit' must be a string, got {short(unit)}")
        rank = meta.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int)):
            problems.add(item, f"'rank' must be an integer, got {short(rank)}")
        props = _properties(meta.get("properties"), item, problems)
        paths = meta.get("paths")
        path = paths.get("containment") if isinstance(paths, dict) else None
        if str(vid) in out:
            problems.add(item, f"vertex id {str(vid)!r} is used twice")
        if len(problems.items) > before or vtype is None:
            continue
        if name is None:
            mid = meta.get("id")
            name = f"{basename}{mid}" if basename and isinstance(mid, int) else basename or str(vid)
        out[str(vid)] = _Vertex(
            vid=str(vid),
            item=item,
            type=vtype,
            name=name,
            size=1 if size is None else size,
            unit=unit or None,
            properties=props,
            rank=rank if isinstance(rank, int) and rank >= 0 else None,
            path=path if isinstance(path, str) else None,
        )
    return out


def _properties(raw: Any, item: str, problems: Problems) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, list) and all(isinstance(p, str) for p in raw):
        return dict.fromkeys(raw, "")
    return problems.string_map({"properties": raw}, "properties", item)


def _relation(meta: Any) -> tuple[str | None, str | None]:
    """(subsystem, relation) of an edge's metadata; no metadata = containment/contains."""
    if meta is None:
        return "containment", "contains"
    if not isinstance(meta, dict):
        return None, None
    name = meta.get("name")
    if isinstance(name, dict) and len(name) == 1:
        ((subsystem, relation),) = name.items()
        return str(subsystem), str(relation)
    subsystem = meta.get("subsystem", "containment")
    relation = meta.get("relation", name if isinstance(name, str) else "contains")
    return (
        subsystem if isinstance(subsystem, str) else None,
        relation if isinstance(relation, str) else None,
    )


def _edges(raw: Any, vertices: dict[str, _Vertex], problems: Problems) -> int:
    """Link children to parents; returns how many non-containment edges were ignored."""
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        problems.add("graph.edges", f"must be a list of edges, got {short(raw)}")
        return 0
    ignored = 0
    linked = 0
    for index, edge in enumerate(raw):
        item = f"graph.edges[{index}]"
        if not isinstance(edge, dict):
            problems.add(item, f"an edge must be an object, got {short(edge)}")
            continue
        src, dst = edge.get("source"), edge.get("target")
        subsystem, relation = _relation(edge.get("metadata"))
        if subsystem is None or relation is None:
            problems.add(item, f"metadata {short(edge.get('metadata'))} names no subsystem/relation")
            continue
        if subsystem != "containment":
            ignored += 1
            continue
        if relation not in ("contains", "in"):
            problems.add(item, f"containment relation {relation!r} is neither 'contains' nor 'in'")
            continue
        missing = [str(x) for x in (src, dst) if isinstance(x, bool) or str(x) not in vertices]
        if missing:
            problems.add(item, f"refers to unknown vertex {short(missing[0])}")
            continue
        parent, child = vertices[str(src)], vertices[str(dst)]
        if relation == "in":
            parent, child = child, parent
        if parent is child:
            problems.add(item, f"vertex {parent.vid!r} contains itself")
            continue
        if child.parent is parent:
            continue  # the same link in the other direction ("contains" + "in")
        if child.parent is not None:
            problems.add(item, f"vertex {child.vid!r} is in both {child.parent.name!r} and {parent.name!r}")
            continue
        child.parent = parent
        parent.children.append(child)
        linked += 1
    if not linked and any(v.path for v in vertices.values()):
        _link_by_paths(vertices, problems)
    return ignored


def _link_by_paths(vertices: dict[str, _Vertex], problems: Problems) -> None:
    by_path = {v.path: v for v in vertices.values() if v.path}
    for v in vertices.values():
        if not v.path or "/" not in v.path.strip("/"):
            continue
        parent = by_path.get(v.path.rstrip("/").rsplit("/", 1)[0])
        if parent is None:
            problems.add(v.item, f"no vertex has the parent path of {v.path!r}")
            continue
        v.parent = parent
        parent.children.append(v)


def _check_acyclic(vertices: dict[str, _Vertex], problems: Problems) -> None:
    done: set[str] = set()
    for v in vertices.values():
        seen: set[str] = set()
        cur: _Vertex | None = v
        while cur is not None and cur.vid not in done:
            if cur.vid in seen or len(seen) > MAX_TREE_DEPTH:
                problems.add(v.item, "the containment edges form a cycle or a tree deeper than 64 levels")
                return
            seen.add(cur.vid)
            cur = cur.parent
        done |= seen


def _amount_gb(v: _Vertex, problems: Problems) -> float:
    factor = UNITS.get((v.unit or "").strip().lower())
    if factor is None:
        problems.add(v.item, f"unit {v.unit!r} is not one of B, KB, MB, GB, TB, PB")
        return 0.0
    return v.size * factor


def _node(v: _Vertex, problems: Problems) -> NodeSpec | None:
    before = len(problems.items)
    cores = 0
    memory = 0.0
    storage: float | None = None  # no storage vertex: the graph does not say (unknown, not zero)
    gpus = 0
    models: set[str] = set()
    stack = list(v.children)
    while stack:
        d = stack.pop()
        stack.extend(d.children)
        if d.type == "node":
            problems.add(d.item, f"node {d.name!r} is inside node {v.name!r}")
        elif d.type == "core":
            cores += d.size
        elif d.type == "memory":
            memory += _amount_gb(d, problems)
        elif d.type == "storage":
            storage = (storage or 0.0) + _amount_gb(d, problems)
        elif d.type == "gpu":
            gpus += d.size
            models.add(d.properties.get("model", ""))
    if len(models) > 1:
        problems.add(
            v.item, f"node {v.name!r} has GPUs of several models {sorted(models)}; one type per node"
        )
    labels = {k: val for k, val in v.properties.items() if val}
    rack = None
    up = v.parent
    while up is not None:
        if up.type == "rack" and rack is None:
            rack = up.name
        elif up.type not in ("cluster", "rack"):
            labels.setdefault(up.type, up.name)
        up = up.parent
    if len(problems.items) > before:
        return None
    data: dict[str, Any] = {
        "name": v.name,
        "rack": rack,
        "cpu_cores": cores,
        "memory_gb": memory,
        "storage_gb": storage,
        "labels": labels,
        "properties": list(v.properties),
        "rank": v.rank,
        "inner": [_inner(c) for c in v.children],
    }
    if gpus:
        model = next(iter(models))
        data["gpus"] = {**(gpu_fields(model) if model else {"type": UNKNOWN_GPU}), "count": gpus}
    return problems.model(NodeSpec, data, v.item)


def _inner(v: _Vertex) -> InnerVertex:
    return InnerVertex(
        type=v.type,
        name=v.name,
        size=v.size,
        unit=v.unit,
        properties=v.properties,
        children=[_inner(c) for c in v.children],
    )


# -- R_lite fallback -------------------------------------------------------------------------------------


def expand_hostlist(text: str) -> list[str]:
    """A Flux/Slurm hostlist ``node[0-2,5],login`` -> names; ``ValueError`` when malformed.

    >>> expand_hostlist("gpu[01-03],login")
    ['gpu01', 'gpu02', 'gpu03', 'login']
    >>> expand_hostlist("n[1-")
    Traceback (most recent call last):
    ...
    ValueError: hostlist 'n[1-' has unbalanced brackets
    """
    depth = 0
    for ch in text:  # brackets must pair, unnested: "n[1-" is not a hostlist
        depth += (ch == "[") - (ch == "]")
        if depth not in (0, 1):
            raise ValueError(f"hostlist {text[:40]!r} has unbalanced brackets")
    if depth:
        raise ValueError(f"hostlist {text[:40]!r} has unbalanced brackets")
    out: list[str] = []
    for m in re.finditer(r"([^,\[\]]*)(?:\[([^\]]*)\])?([^,\[\]]*)(?:,|$)", text):
        if not m.group(0):
            continue
        prefix, ranges, suffix = m[1], m[2], m[3]
        if ranges is None:
            if prefix or suffix:
                out.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            if not (lo.isascii() and lo.isdigit()) or (hi and not (hi.isascii() and hi.isdigit())):
                raise ValueError(f"hostlist range {part!r} is malformed")
            width = len(lo)
            last = int(hi or lo)
            if last < int(lo) or last - int(lo) > 100_000:
                raise ValueError(f"hostlist range {part!r} is malformed")
            out.extend(f"{prefix}{i:0{width}d}{suffix}" for i in range(int(lo), last + 1))
    if not out or len(out) > 1_000_000:
        raise ValueError(f"hostlist {text[:40]!r} is empty or malformed")
    return out


def expand_idset(text: str) -> list[int]:
    """An RFC 22 idset ``0-3,7`` -> ``[0, 1, 2, 3, 7]``; ``ValueError`` when malformed.

    >>> expand_idset("0-2,5")
    [0, 1, 2, 5]
    """
    out: list[int] = []
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*([0-9]{1,7})(?:-([0-9]{1,7}))?\s*", part)
        if not m or int(m[2] or m[1]) < int(m[1]):
            raise ValueError(f"idset {str(text)[:40]!r} is malformed")
        out.extend(range(int(m[1]), int(m[2] or m[1]) + 1))
    if len(out) > 1_000_000:
        raise ValueError("idset is too large")
    return out


def _from_r_lite(obj: dict[str, Any], problems: Problems, source: str) -> Inventory:
    execution = problems.mapping(obj, "execution", "execution", required=True) or {}
    r_lite = execution.get("R_lite")
    nodelist = execution.get("nodelist")
    if not isinstance(r_lite, list):
        problems.add("execution", f"R_lite must be a list, got {short(r_lite)}")
    hosts: list[str] = []
    if nodelist is not None:
        if not isinstance(nodelist, list) or not all(isinstance(h, str) for h in nodelist):
            problems.add("execution", f"nodelist must be a list of hostlists, got {short(nodelist)}")
        else:
            for h in nodelist:
                try:
                    hosts.extend(expand_hostlist(h))
                except ValueError as e:
                    problems.add("execution.nodelist", str(e))
    problems.check()
    nodes: dict[int, dict[str, Any]] = {}
    for index, entry in enumerate(r_lite or []):
        item = f"execution.R_lite[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("children"), dict):
            problems.add(item, f"must be {{'rank': idset, 'children': {{...}}}}, got {short(entry)}")
            continue
        try:
            ranks = expand_idset(entry.get("rank", ""))
            children = {k: len(expand_idset(v)) for k, v in entry["children"].items()}
        except (ValueError, TypeError) as e:
            problems.add(item, str(e))
            continue
        for rank in ranks:
            if rank in nodes:
                problems.add(item, f"rank {rank} is listed twice")
                continue
            name = hosts[rank] if rank < len(hosts) else f"rank{rank}"
            node: dict[str, Any] = {"name": name, "rank": rank, "cpu_cores": children.get("core", 0)}
            if children.get("gpu"):
                node["gpus"] = {"type": UNKNOWN_GPU, "count": children["gpu"]}
            nodes[rank] = node
    props = execution.get("properties")
    if isinstance(props, dict):
        for prop, idset in props.items():
            try:
                for rank in expand_idset(idset):
                    if rank in nodes:
                        nodes[rank].setdefault("properties", []).append(str(prop))
            except ValueError as e:
                problems.add(f"execution.properties.{prop}", str(e))
    if not nodes and not problems:
        problems.add("execution", "R_lite describes no ranks")
    problems.check()
    data = {"nodes": [nodes[r] for r in sorted(nodes)], "metadata": {"format": FORMAT, "source": source}}
    inv = problems.model(Inventory, data, "execution")
    problems.check()
    assert inv is not None
    return inv
