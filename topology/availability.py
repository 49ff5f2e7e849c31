"""Nodes and TPU pods going down and coming back: a new cluster with their readiness changed.

Why here and not in a front end: the HTTP service's stored clusters, a :class:`~placer.solver.session.
Session` and the simulator all mark nodes up and down, and they must mean the same thing by it.

>>> from placer.topology.presets import cluster_of, dgx_h100
>>> c = with_availability(cluster_of(dgx_h100(2)), {"dgx-h100-1": False})
>>> [(n.name, n.usable) for n in c.nodes]
[('dgx-h100-1', False), ('dgx-h100-2', True)]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from placer.topology.build import build_cluster
from placer.topology.cluster import Cluster
from placer.topology.inventory import Inventory, NodeSpec
from placer.topology.membership import node_names
from placer.topology.model import Node

__all__ = ["with_availability"]


def with_availability(cluster: Cluster, up: Mapping[str, bool]) -> Cluster:
    """``cluster`` with the named nodes or TPU pods up (ready and schedulable) or down (not ready); what
    runs there stays accounted. Inventory templates (``count: 4``) holding one of the nodes are expanded,
    so only that node changes. A host that the cluster holds as several nodes (a Slurm node of several GPU
    types, one node per type: label ``slurm_node``) names them all. An unknown name is a
    :class:`TopologyError` naming it."""
    # A host of several nodes names them all; an unknown name is refused.
    up = {part: value for name, value in up.items() for part in node_names(cluster, [name])}
    fast = _flipped(cluster, up)
    if fast is not None:
        return fast
    inv = cluster.to_inventory()
    templates = {cluster.structure.spec_index(n) for n in up if cluster.has_node(n)}
    specs: list[NodeSpec] = []
    for k, spec in enumerate(inv.nodes):
        expanded = Inventory(nodes=[spec]).expanded_nodes() if k in templates else [spec]
        specs.extend(_marked(s, up) for s in expanded)
    changed = inv.model_copy(update={"nodes": specs, "tpu_pods": [_marked(p, up) for p in inv.tpu_pods]})
    return build_cluster(changed, source=cluster.source)


def _flipped(cluster: Cluster, up: Mapping[str, bool]) -> Cluster | None:
    """What the general path builds, in time proportional to the nodes named, when every name is a node
    described by an inventory entry of its own (``count: 1``, the shape every importer writes): those
    entries and nodes are swapped for marked copies, their NVLink domains' usable and busy GPUs counted
    again, and the running jobs kept as they are (they stay accounted, on nodes whose facts are the same).
    None when a name is a TPU pod or a node of a template: the general path then rebuilds the cluster.
    ``tests/topology/test_availability.py`` checks both paths give equal clusters."""
    s = cluster.structure
    if not all(cluster.has_node(n) for n in up):
        return None
    specs = list(s.inventory.nodes)
    changed: dict[str, Node] = {}
    for name, value in up.items():
        node = s.node_index[name]
        at = s.spec_index(name)
        spec = specs[at]
        if spec.count != 1 or spec.name != name:
            return None
        marked = _marked(spec, {name: value})
        specs[at] = marked
        changed[name] = replace(node, schedulable=marked.schedulable, ready=marked.ready, spec=marked)
    domains = {d for n in changed.values() if (d := n.nvlink_domain) is not None and d in s.domains}
    usable = dict(s.domain_usable)
    busy = cluster.state.domain_busy.edit()
    for d in sorted(domains):
        members = [changed.get(m) or s.node_index[m] for m in s.domains[d].nodes]
        usable[d] = sum(n.gpu_count for n in members if n.usable)
        held = sum(len(cluster.usage(n.name).gpus) for n in members if n.usable)
        if held:
            busy[d] = held
        else:
            busy.pop(d)
    structure = s.with_nodes(s.inventory.model_copy(update={"nodes": specs}), changed, usable)
    return Cluster(structure, replace(cluster.state, domain_busy=busy.done()))


def _marked(spec: Any, up: Mapping[str, bool]) -> Any:
    if spec.name not in up:
        return spec
    return spec.model_copy(update={"ready": True, "schedulable": True} if up[spec.name] else {"ready": False})
