"""Slurm's network topology (``topology.conf``, ``scontrol show topology``, ``topology.yaml``) -> racks and
blocks of the nodes.

Why: Slurm's node forms do not say which nodes share a leaf switch, so a cluster read from ``sinfo`` has no
racks, and placer cannot keep a gang inside the smallest domain that holds it (what Slurm's own
``topology/tree`` and ``topology/block`` plugins do). The same file Slurm reads gives placer that
structure:

* **tree** (``topology/tree``): ``SwitchName=leaf1 Nodes=gpu[01-04]`` lines name the leaf switches,
  ``SwitchName=spine1 Switches=leaf[1-2]`` the switches above them. A node's leaf switch becomes its
  ``rack``, the switch above that its ``block``, the one above that its ``zone``; switches higher still
  are left out (three levels are what placer's gangs are kept within). ``scontrol show topology`` prints
  the same ``Key=Value`` records (with ``Level=``), and is read the same way.
* **block** (``topology/block``, Slurm 23.11+): ``BlockName=b1 Nodes=gpu[01-08]`` lines; each block
  becomes the ``block`` of its nodes (``BlockSizes=`` is Slurm's scheduling rule, not structure).
* **topology.yaml** (Slurm 24.05+): a list of topologies, each a ``tree`` (``switches``: ``switch``,
  ``children`` or ``nodes``) or a ``block`` (``blocks``: ``block``, ``nodes``); the one marked
  ``cluster_default`` (else the first) is read as above.

Every problem is named (a node on two leaf switches, a switch that names an unknown switch, a cycle, a
malformed hostlist, an unknown key), never skipped.

>>> conf = "SwitchName=s0 Nodes=gpu[01-02]\\nSwitchName=s1 Nodes=gpu03\\nSwitchName=top Switches=s[0-1]\\n"
>>> levels = parse_slurm_topology(conf, source="topology.conf")
>>> levels["gpu01"], levels["gpu03"]
({'rack': 's0', 'block': 'top'}, {'rack': 's1', 'block': 'top'})
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers.jgf import expand_hostlist
from placer.topology.importers.slurm_mixed import slurm_node_of
from placer.topology.inventory import Inventory

__all__ = [
    "LEVELS_UP",
    "parse_slurm_topology",
    "read_topology_file",
    "topology_from_document",
    "with_topology_levels",
]

#: Levels given to a node, from its leaf switch up.
LEVELS_UP = ("rack", "block", "zone")
_TREE_KEYS = {"SwitchName", "Switches", "Nodes", "LinkSpeed", "Level"}
_BLOCK_KEYS = {"BlockName", "Nodes", "BlockSizes", "BlockIndex"}


def parse_slurm_topology(text: str, *, source: str) -> dict[str, dict[str, str]]:
    """``topology.conf`` or ``scontrol show topology`` text -> node -> ``{level: name}`` (module
    docstring); ``TopologyError`` naming every problem."""
    problems: list[Problem] = []
    switches: dict[str, tuple[list[str], list[str]]] = {}  # name -> (nodes, child switches)
    blocks: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        item = f"line {number}"
        fields: dict[str, str] = {}
        for token in line.split():
            key, sep, value = token.partition("=")
            if not sep:
                problems.append(Problem(source, item, f"{token!r} is not Key=Value"))
                continue
            fields[key] = value
        if "SwitchName" in fields:
            unknown = set(fields) - _TREE_KEYS
            name = fields["SwitchName"]
            if unknown:
                problems.append(Problem(source, item, f"unknown key(s) {', '.join(sorted(unknown))}"))
            children = _hosts(fields.get("Switches", ""), item, source, problems)
            # scontrol show topology lists under a switch above the leaves every node below it: those
            # come from its children, so only a leaf's Nodes= place nodes.
            nodes = [] if children else _hosts(fields.get("Nodes", ""), item, source, problems)
            if name in switches:
                problems.append(Problem(source, item, f"switch {name!r} is defined twice"))
            switches[name] = (nodes, children)
        elif "BlockName" in fields:
            unknown = set(fields) - _BLOCK_KEYS
            if unknown:
                problems.append(Problem(source, item, f"unknown key(s) {', '.join(sorted(unknown))}"))
            blocks[fields["BlockName"]] = _hosts(fields.get("Nodes", ""), item, source, problems)
        elif set(fields) <= {"BlockSizes"}:
            continue  # topology/block's scheduling rule, not structure
        else:
            problems.append(Problem(source, item, "a record starts with SwitchName= or BlockName="))
    if problems:
        raise TopologyError(problems)
    if switches and blocks:
        raise TopologyError([Problem(source, "document", "both switches and blocks: one topology at a time")])
    return _tree(switches, source) if switches else _blocks(blocks, source)


def topology_from_document(obj: Any, *, source: str) -> dict[str, dict[str, str]]:
    """``topology.yaml`` (already parsed) -> node -> ``{level: name}``."""
    topologies = obj if isinstance(obj, list) else [obj]
    chosen = next((t for t in topologies if isinstance(t, dict) and t.get("cluster_default")), None)
    chosen = chosen or (topologies[0] if topologies else None)
    if not isinstance(chosen, dict):
        raise TopologyError([Problem(source, "document", "expected a list of topologies (topology.yaml)")])
    problems: list[Problem] = []
    if isinstance(chosen.get("tree"), dict):
        switches: dict[str, tuple[list[str], list[str]]] = {}
        for i, sw in enumerate(chosen["tree"].get("switches") or []):
            item = f"tree.switches[{i}]"
            if not isinstance(sw, dict) or not isinstance(sw.get("switch"), str):
                problems.append(Problem(source, item, "a switch needs a 'switch' name"))
                continue
            nodes = _hosts(str(sw.get("nodes") or ""), item, source, problems)
            children = _hosts(str(sw.get("children") or ""), item, source, problems)
            switches[sw["switch"]] = (nodes, children)
        if problems:
            raise TopologyError(problems)
        return _tree(switches, source)
    if isinstance(chosen.get("block"), dict):
        blocks: dict[str, list[str]] = {}
        for i, b in enumerate(chosen["block"].get("blocks") or []):
            item = f"block.blocks[{i}]"
            if not isinstance(b, dict) or not isinstance(b.get("block"), str):
                problems.append(Problem(source, item, "a block needs a 'block' name"))
                continue
            blocks[b["block"]] = _hosts(str(b.get("nodes") or ""), item, source, problems)
        if problems:
            raise TopologyError(problems)
        return _blocks(blocks, source)
    raise TopologyError([Problem(source, "document", "a topology is a 'tree' or a 'block'")])


def _hosts(text: str, item: str, source: str, problems: list[Problem]) -> list[str]:
    if not text.strip():
        return []
    try:
        return expand_hostlist(text.strip())
    except ValueError as e:
        problems.append(Problem(source, item, f"hostlist {text[:60]!r}: {e}"))
        return []


def _tree(switches: Mapping[str, tuple[list[str], list[str]]], source: str) -> dict[str, dict[str, str]]:
    problems: list[Problem] = []
    parent: dict[str, str] = {}
    for name, (_, children) in switches.items():
        for child in children:
            if child not in switches:
                problems.append(Problem(source, f"switch {name}", f"names unknown switch {child!r}"))
            elif child in parent:
                problems.append(
                    Problem(source, f"switch {child}", f"under both {parent[child]!r} and {name!r}")
                )
            else:
                parent[child] = name
    out: dict[str, dict[str, str]] = {}
    for name, (nodes, _) in switches.items():
        chain = [name]
        while chain[-1] in parent:
            if parent[chain[-1]] in chain:
                problems.append(Problem(source, f"switch {name}", "switches form a cycle"))
                break
            chain.append(parent[chain[-1]])
        for node in nodes:
            if node in out:
                problems.append(
                    Problem(source, f"node {node}", f"on two leaf switches: {out[node]['rack']!r}, {name!r}")
                )
                continue
            out[node] = dict(zip(LEVELS_UP, chain[: len(LEVELS_UP)], strict=False))
    if problems:
        raise TopologyError(problems)
    return out


def _blocks(blocks: Mapping[str, list[str]], source: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    problems: list[Problem] = []
    for name, nodes in blocks.items():
        for node in nodes:
            if node in out:
                problems.append(
                    Problem(source, f"node {node}", f"in two blocks: {out[node]['block']!r}, {name!r}")
                )
            out[node] = {"block": name}
    if problems:
        raise TopologyError(problems)
    return out


def with_topology_levels(
    inventory: Inventory, levels: Mapping[str, Mapping[str, str]], *, source: str
) -> Inventory:
    """``inventory`` with each node's ``rack``/``block``/``zone`` from ``levels`` (what the topology file
    says replaces what the node file said). A node the topology names that the inventory lacks is a
    problem: the two files are of different clusters, or a node was left out of one. A Slurm node read as
    one node per GPU type (:mod:`~placer.topology.importers.slurm_mixed`) puts all its parts there."""
    nodes = list(inventory.expanded_nodes())
    known = {slurm_node_of(n.labels, n.name) for n in nodes}  # a node of several GPU types: its parts
    missing = sorted(set(levels) - known)
    if missing:
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        raise TopologyError([Problem(source, "document", f"nodes not in the cluster: {shown}")])
    return inventory.model_copy(
        update={
            "nodes": [
                n.model_copy(update=dict(levels.get(slurm_node_of(n.labels, n.name), {}))) for n in nodes
            ]
        }
    )


def read_topology_file(path: str) -> dict[str, dict[str, str]]:
    """A topology file by its content: ``topology.yaml`` (a YAML list or mapping with ``tree``/``block``),
    else ``topology.conf`` / ``scontrol show topology`` text. ``OSError`` when it cannot be opened."""
    from placer.topology.inputs import read_input, source_name
    from placer.topology.safe_load import UnsafeDocument, load_text

    text = read_input(path).decode("utf-8-sig")
    source = source_name(path)
    first = next(
        (line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")), ""
    )
    if first.startswith(("SwitchName=", "BlockName=", "BlockSizes=")):
        return parse_slurm_topology(text, source=source)
    try:
        return topology_from_document(load_text(text), source=source)
    except UnsafeDocument as e:
        raise TopologyError([Problem(source, "document", str(e))]) from None
