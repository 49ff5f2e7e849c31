"""The static part of a cluster: resolved nodes, NVLink domains, TPU pods and the indexes over them.

Why separate from allocations: the structure never changes after :func:`placer.topology.build.build_cluster`,
so every allocation snapshot of a cluster shares one structure (and one networkx graph), and only the
small :class:`~placer.topology.allocations.State` differs between snapshots.

>>> from placer.topology.build import build_cluster
>>> from placer.topology.inventory import Inventory
>>> s = build_cluster(Inventory(nodes=[{"name": "c", "count": 3}])).structure
>>> [n.name for n in s.nodes]
['c-1', 'c-2', 'c-3']
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from placer.topology.inventory import Inventory
from placer.topology.model import Node, NvlinkDomain, TpuPod

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["Structure"]


@dataclass(eq=False)
class Structure:
    """Resolved, validated cluster structure with lookup indexes (built once, then read-only)."""

    inventory: Inventory
    source: str
    nodes: tuple[Node, ...]
    node_index: Mapping[str, Node]
    domains: Mapping[str, NvlinkDomain]
    pods: Mapping[str, TpuPod]
    #: domain id -> GPUs on schedulable, ready member nodes
    domain_usable: Mapping[str, int]
    domains_by_type: Mapping[str, tuple[str, ...]] = field(init=False)
    _label_index: dict[tuple[str, str], tuple[str, ...]] | None = field(default=None, init=False, repr=False)
    _graph: nx.DiGraph | None = field(default=None, init=False, repr=False)
    _positions: dict[str, int] | None = field(default=None, init=False, repr=False)
    _spec_positions: dict[str, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        by_type: dict[str, list[str]] = defaultdict(list)
        for d in self.domains.values():
            by_type[d.gpu_type].append(d.id)
        self.domains_by_type = {t: tuple(ids) for t, ids in by_type.items()}

    def label_index(self) -> Mapping[tuple[str, str], tuple[str, ...]]:
        """``(key, value) -> node names``, built on first use."""
        if self._label_index is None:
            index: dict[tuple[str, str], list[str]] = defaultdict(list)
            for n in self.nodes:
                for kv in n.labels.items():
                    index[kv].append(n.name)
            self._label_index = {k: tuple(v) for k, v in index.items()}
        return self._label_index

    def position(self, name: str) -> int:
        """Where node ``name`` sits in :attr:`nodes` (an index built on first use)."""
        if self._positions is None:
            self._positions = {n.name: i for i, n in enumerate(self.nodes)}
        return self._positions[name]

    def spec_index(self, name: str) -> int:
        """Where the inventory entry of node ``name`` stands in :attr:`inventory` (a template's, for a node
        of one); an index built on first use. Why not a field of the node: nodes leaving would renumber
        every node after them."""
        if self._spec_positions is None:
            at = {id(spec): i for i, spec in enumerate(self.inventory.nodes)}
            self._spec_positions = {n.name: at[id(n.spec)] for n in self.nodes}
        return self._spec_positions[name]

    def carry_spec_index(self, before: Structure) -> None:
        """Take ``before``'s entry positions (:meth:`spec_index`) when this structure is ``before`` with
        inventory entries and nodes appended (the new nodes' positions added); part of building it, as
        :func:`~placer.topology.membership.with_nodes_added` does. Nothing when ``before`` made none."""
        if before._spec_positions is None:
            return
        n0 = len(before.inventory.nodes)
        at = {id(spec): i for i, spec in enumerate(self.inventory.nodes[n0:], start=n0)}
        fresh = {n.name: at[id(n.spec)] for n in self.nodes[len(before.nodes) :]}
        self._spec_positions = {**before._spec_positions, **fresh}

    def with_nodes(
        self, inventory: Inventory, changed: Mapping[str, Node], domain_usable: Mapping[str, int]
    ) -> Structure:
        """This structure with the nodes in ``changed`` (by name) replaced by nodes of the same name whose
        labels are the same (only readiness differs), described by ``inventory``: the node tuple and name
        index are copied with those entries swapped, and the label index and node positions, which do not
        change, are shared. The graph is built again on demand (it carries readiness)."""
        nodes = list(self.nodes)
        index = dict(self.node_index)
        for name, node in changed.items():
            nodes[self.position(name)] = node
            index[name] = node
        out = Structure(
            inventory=inventory,
            source=self.source,
            nodes=tuple(nodes),
            node_index=index,
            domains=self.domains,
            pods=self.pods,
            domain_usable=domain_usable,
        )
        out._label_index, out._positions = self._label_index, self._positions
        out._spec_positions = self._spec_positions  # the same entries at the same places
        return out

    def graph(self) -> nx.DiGraph:
        """The networkx graph of the structure, built on first use and frozen (shared by snapshots)."""
        if self._graph is None:
            from placer.topology.graph import build_graph

            self._graph = build_graph(self)
        return self._graph
