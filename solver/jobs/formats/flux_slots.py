"""Task slots to task groups: how a Flux resource tree becomes the normalized job's gang.

Why a module of its own: this is the one place where Flux's graph-shaped request is squeezed into
"``count`` identical replicas, each needing X", and the choices made here decide what the solver places.

Each vertex of ``type: slot`` becomes one :class:`~placer.solver.jobs.model.TaskGroup` named by its label. Two
shapes exist, depending on whether a ``node`` vertex lies *above* the slot or *inside* it:

* **node above the slot** (``node > slot``, ``node > socket > slot``): a replica is *one node's share*,
  i.e. all slots of this label on one node. ``count`` = product of the counts from the top down to that
  node; the per-replica demand is the slot contents times the slots per node; ``one_per_node`` is set.
  Grouping per node rather than per slot is what the request says: ``node: 4 > slot: 4`` is "4 nodes, 4
  slots on each", which ``one_per_node`` replicas of 4 slots express exactly, and 16 free-floating slot
  replicas would not. The node is whole-node ``exclusive`` only when it says ``exclusive: true`` (RFC 14:
  the default is false outside a slot).
* **no node above** (``slot > ...``): a replica is one slot. ``count`` = product of all counts from the
  top down to and including the slot. If the slot contains nodes (``slot > node``), a replica spans
  ``nodes_per_replica`` whole nodes (the minimum of their count), replicas land on distinct nodes
  (``one_per_node``), and ``exclusive`` is true unless the node says ``exclusive: false`` (RFC 14: inside a
  slot the default is true). A slot without nodes (``slot > core``) may share a node with other
  replicas; its cores, GPUs and memory are its own, not the node.

Per-replica demand sums the slot's subtree with counts multiplied down (minimum of each range):
``core`` -> ``cpu_cores``, ``gpu`` -> ``gpu=GpuDemand(count)``, ``memory`` -> ``memory_gb`` and
``storage``/``disk`` -> ``storage_gb`` (``unit`` converted), any other leaf type (``ib10g``) ->
``extra[type]``. Inner structure (sockets, nodes) is kept in ``structure`` as
:class:`~placer.solver.jobs.model.FluxResource` trees so the solver can match "2 sockets with 4 cores each".

Ranges: ``count_range`` holds the replica count range (``count`` is its minimum). Counts multiply down the
tree; one range times fixed counts stays exact (``+`` and ``*`` ranges scale, ``^`` only by 1); two ranges
on one path, or a node range summed over several replicas with ``*``/``^``, have no exact
:class:`~placer.solver.jobs.model.CountRange` form, and the smallest ``+1`` range containing every
possibility is
used instead (``metadata["flux_slots"][label]["count_exact"]`` is then false). A range *inside* a replica
(``memory: {min: 2}``) contributes its minimum to the demand; the full range stays in ``structure``.

Use cases (RFC 14 section 1-2, RFC 25):

===============  ===========================================  =========================================
use case         resources                                    task groups
===============  ===========================================  =========================================
14 example1,     node 4 > slot 1 > core 2                     default: 4 x (2 cores), one_per_node
25 example1
14 example2,     slot 4 > node 1                              4 x (1 whole node), one_per_node,
14 1.1, 2.1                                                   exclusive
14 1.2           slot {3..30 +1} > node 1                     3 x whole node, count_range 3..30,
                                                              node_count 3..30
14 1.3           slot 4 > node 1 (exclusive: false) >         4 x (8 cores), one_per_node, not
                 socket {min 2} > core {min 4}                exclusive; sockets kept in structure
14 1.4           same, node exclusive by default              4 x (8 cores), one_per_node, exclusive
14 1.5           cluster 1 > slot 2 "ib" > node 1 >           ib: 2 x (4 GB, extra ib10g 1);
                 (memory 4 GB, ib10g 1); switch 1 > slot 2    bicore: 2 x (2 cores); both one_per_node
                 "bicore" > node 1 > core 2                   and exclusive
14 1.6           cluster 2 > slot 1 > node {min 1} > core 30  2 x (30 cores), node_count {min 2}
14 1.7           switch 3 > slot 1 > node {min 1} > core 1    3 x (1 core), node_count {min 3}
14 1.8           slot "4,9,16,25" > node 1                    4 x whole node, count_range idset
                                                              (4, 9, 16, 25)
14 2.3, 25 2.2   slot 10 > core 2                             10 x (2 cores), nodes shared
14 2.4           node 1 > (slot 10 "read-db" > core 1,        read-db: 1 x (10 cores, 40 GB); db: 1 x
                 memory 4 GB; slot 1 "db" > core 6,           (6 cores, 24 GB); topology_scope "node"
                 memory 24 GB)
14 2.5           slot 10 > (memory {min 2} GB, core 1)        10 x (1 core, 2 GB)
14 2.6           slot 2 > node 1 > memory {min 4} GB          2 x whole node with >= 4 GB
25 1.1, 2.1      node 4 > slot 1 > core 1                     4 x (1 core), one_per_node
25 2.3           slot 10 > (core 2, gpu 1)                    10 x (2 cores, 1 GPU): 10 GPUs
25 2.4           node 4 > slot 4 > (core 1, gpu 1)            4 x (4 cores, 4 GPUs), one_per_node: 16
                                                              GPUs
===============  ===========================================  =========================================

Levels above the node (``cluster``, ``rack``, ``switch``...) become the group's ``domains``: for each,
the number of its instances (counts multiplied from the top down to it), over which the replicas are
spread evenly — ``cluster 1 > rack 2 > node 1 > slot`` is 2 replicas in 2 distinct racks (RFC 14 use case
1.7: ``switch 3 > slot 1 > node`` is 3 replicas on 3 switches). Left out: ``cluster: 1``, a single
top-level ``node``/``rack``/``block``/``zone`` of count 1 (that is ``topology_scope``), and levels below a
count range. The solver honours a level the cluster describes and notes the others as assumed.

Job-level: ``placement.node_count`` is set when exactly one group uses nodes and its node count is a
range. ``placement.topology_scope`` is set when the only top-level vertex has count 1 and is a ``node``,
``rack``, ``block`` or ``zone`` (everything inside one such domain). What the model cannot say is kept
in ``metadata["flux_slots"][label]``: the vertices above the slot (``within``: e.g. "3 switches, one slot
each"), slots per replica, and whether the counts are exact. Vertices outside every slot (not on a path
to one) are not demand; their paths are listed in ``metadata["flux_unslotted"]`` with a warning.

>>> from placer.solver.jobs.formats.flux_resources import read_resources
>>> issues: list = []
>>> tree = read_resources([{"type": "node", "count": 4, "with": [{"type": "slot", "count": 4, "label": "s",
...     "with": [{"type": "core", "count": 1}, {"type": "gpu", "count": 1}]}]}], "resources", issues)
>>> [g] = plan_groups(tree, issues).groups
>>> g.task_group.count, g.task_group.gpus_per_replica, g.task_group.one_per_node, g.slots_total
(4, 4, True, 16)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.flux_count import MAX_COUNT, fixed, is_fixed, product, relaxed, scale, sum_of
from placer.solver.jobs.formats.flux_resources import MEMORY_TYPES, STORAGE_TYPES, Vertex, unit_factor
from placer.solver.jobs.model import CountRange, DomainCount, FluxResource, GpuDemand, TaskGroup

__all__ = ["SCOPE_TYPES", "Plan", "SlotGroup", "plan_groups"]

#: Top-level vertex types that map to ``Placement.topology_scope`` when requested once.
SCOPE_TYPES: frozenset[str] = frozenset({"node", "rack", "block", "zone"})


@dataclass
class _Totals:
    cores: int = 0
    gpus: int = 0
    memory_gb: float = 0.0
    storage_gb: float = 0.0
    extra: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    nodes: list[tuple[Vertex, CountRange, bool]] = field(default_factory=list)


@dataclass
class SlotGroup:
    """One slot label mapped: its task group and what the model cannot hold."""

    label: str
    slot: Vertex
    task_group: TaskGroup
    slots_total: int
    slots_per_replica: int
    nodes: CountRange | None
    exact: bool
    within: list[dict[str, Any]]


@dataclass
class Plan:
    """All slot groups of a jobspec and the job-level facts derived from the tree."""

    groups: list[SlotGroup] = field(default_factory=list)
    node_count: CountRange | None = None
    topology_scope: str | None = None
    unslotted: list[str] = field(default_factory=list)


def _totals(children: list[Vertex], mult: int, issues: list[Issue]) -> _Totals:
    """Per-replica sums of the subtree, counts multiplied down (minimum of ranges)."""
    t = _Totals()

    def visit(v: Vertex, m_above: int, path_ranges: list[CountRange], in_node: bool) -> None:
        m = m_above * v.count.min
        if m > MAX_COUNT:
            issues.append(
                issue("limit", v.path, f"the counts down to here multiply to more than {MAX_COUNT}")
            )
            return
        ranges = [*path_ranges, v.count]
        if v.type == "node" and not in_node:
            r, exact = product(ranges)
            t.nodes.append((v, r, exact))
            in_node = True
        elif v.type == "core":
            t.cores += m
        elif v.type == "gpu":
            t.gpus += m
        elif v.type in MEMORY_TYPES:
            t.memory_gb += m * (unit_factor(v.unit) or 1.0)
        elif v.type in STORAGE_TYPES:
            t.storage_gb += m * (unit_factor(v.unit) or 1.0)
        elif not v.children and v.type != "node":
            t.extra[v.type] += m
        for c in v.children:
            visit(c, m, ranges, in_node)

    for c in children:
        visit(c, mult, [], False)
    return t


def _chain(vs: list[Vertex]) -> FluxResource:
    """``vs[0] > vs[1] > ... > vs[-1]`` keeping only this branch above the last vertex."""
    acc = vs[-1].to_flux()
    for v in reversed(vs[:-1]):
        acc = FluxResource(
            type=v.type, count=v.count, unit=v.unit, exclusive=v.exclusive, label=v.label, with_=[acc]
        )
    return acc


def _nodes_per_replica(found: list[tuple[Vertex, CountRange, bool]]) -> tuple[CountRange, bool]:
    if len(found) == 1:
        return found[0][1], found[0][2]
    lo = sum(r.min for _, r, _ in found)
    if all(is_fixed(r) for _, r, _ in found):
        return fixed(lo), all(e for _, _, e in found)
    his = [r.max for _, r, _ in found]
    return relaxed(lo, None if any(h is None for h in his) else sum(h for h in his if h is not None)), False


def _domains(above: list[Vertex], scoped_top: bool) -> list[DomainCount]:
    """The levels above the node as domain counts (instances of each: the counts multiplied from the top
    down to it). Left out: a top vertex of count 1 that ``topology_scope`` already says, ``cluster: 1``
    (the inventory is one cluster), and everything when a count on the way is a range (no fixed number
    of domains to honour; the ``within`` metadata still shows it)."""
    if not all(is_fixed(v.count) for v in above):
        return []
    out: list[DomainCount] = []
    instances = 1
    for i, v in enumerate(above):
        instances *= v.count.min
        if instances == 1 and (v.type == "cluster" or (i == 0 and scoped_top)):
            continue
        out.append(DomainCount(level=v.type, count=instances))
    return out


def _group(
    slot: Vertex, ancestors: list[Vertex], issues: list[Issue], scoped_top: bool = False
) -> SlotGroup | None:
    start = len(issues)
    label = slot.label or ""
    within = [{"type": a.type, "count": a.count.model_dump(exclude_defaults=True)} for a in ancestors]
    node_at = next((i for i, a in enumerate(ancestors) if a.type == "node"), None)
    domains = _domains(ancestors if node_at is None else ancestors[:node_at], scoped_top)
    if node_at is not None:
        outer, inner = ancestors[: node_at + 1], ancestors[node_at + 1 :]
        replicas, exact = product([a.count for a in outer])
        per = 1
        for a in [*inner, slot]:
            per *= a.count.min
        if per > MAX_COUNT:
            issues.append(issue("limit", slot.path, f"slots per node exceed {MAX_COUNT}"))
            return None
        t = _totals(slot.children, per, issues)
        if t.nodes:
            issues.append(issue("conflict", t.nodes[0][0].path, "a slot below a node cannot contain a node"))
        one_per_node, nodes_per_replica = True, 1
        exclusive = ancestors[node_at].exclusive is True
        structure = [_chain([*inner, slot])]
        nodes: CountRange | None = replicas
    else:
        replicas, exact = product([a.count for a in ancestors] + [slot.count])
        per = 1
        t = _totals(slot.children, 1, issues)
        structure = [c.to_flux() for c in slot.children]
        if t.nodes:
            per_replica, n_exact = _nodes_per_replica(t.nodes)
            one_per_node, nodes_per_replica = True, per_replica.min
            exclusive = all(v.exclusive is not False for v, _, _ in t.nodes)
            if is_fixed(per_replica):
                nodes, ok = scale(replicas, per_replica.min)
            elif is_fixed(replicas):
                nodes, ok = sum_of(per_replica, replicas.min)
            else:
                hi = (
                    None
                    if replicas.max is None or per_replica.max is None
                    else replicas.max * per_replica.max
                )
                nodes, ok = relaxed(replicas.min * per_replica.min, hi), False
            exact = exact and n_exact and ok
        else:
            one_per_node, nodes_per_replica, exclusive, nodes = False, 1, False, None
    if replicas.min * per > MAX_COUNT or nodes_per_replica > MAX_COUNT:
        issues.append(issue("limit", slot.path, f"the slot count exceeds {MAX_COUNT}"))
    if len(issues) > start:
        return None
    group = TaskGroup(
        name=label,
        count=replicas.min,
        count_range=None if is_fixed(replicas) else replicas,
        cpu_cores=t.cores,
        memory_gb=t.memory_gb,
        storage_gb=t.storage_gb,
        gpu=GpuDemand(count=t.gpus) if t.gpus else None,
        extra=dict(t.extra),
        one_per_node=one_per_node,
        exclusive=exclusive,
        nodes_per_replica=nodes_per_replica,
        structure=structure,
        domains=domains if is_fixed(replicas) else [],
    )
    return SlotGroup(
        label=label,
        slot=slot,
        task_group=group,
        slots_total=replicas.min * per,
        slots_per_replica=per,
        nodes=nodes,
        exact=exact,
        within=within,
    )


def _has_slot(v: Vertex) -> bool:
    return v.type == "slot" or any(_has_slot(c) for c in v.children)


def plan_groups(resources: list[Vertex], issues: list[Issue]) -> Plan:
    """Map every slot of the validated tree to a task group (issues appended; failed slots left out)."""
    plan = Plan()
    scoped_top = len(resources) == 1 and resources[0].type in SCOPE_TYPES and resources[0].count == fixed(1)

    def walk(v: Vertex, ancestors: list[Vertex]) -> None:
        if v.type == "slot":
            g = _group(v, ancestors, issues, scoped_top)
            if g is not None:
                plan.groups.append(g)
            return
        if not _has_slot(v):
            plan.unslotted.append(v.path)
            return
        for c in v.children:
            walk(c, [*ancestors, v])

    for v in resources:
        walk(v, [])
    with_nodes = [g for g in plan.groups if g.nodes is not None]
    if len(with_nodes) == 1 and with_nodes[0].nodes is not None and not is_fixed(with_nodes[0].nodes):
        plan.node_count = with_nodes[0].nodes
    if scoped_top:
        plan.topology_scope = resources[0].type
    return plan
