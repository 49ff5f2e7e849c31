"""Nodes and TPU pods joining and leaving a cluster: a new cluster with them added or removed.

Why not build the changed inventory again: that resolves every node against the catalog and replays
every running job, for a change that touches none of them (the openb cluster at full load: 1,213 nodes,
7,965 running pods, about 0.1 s a rebuild). Here only the nodes, TPU pods and NVLink domains that join or
leave are resolved; the other nodes stay the very same objects and the running jobs stay as they are
(nodes that leave are left by their jobs first). The result is what a rebuild of the changed inventory
gives (``tests/topology/test_membership.py`` checks it on random sequences), and a problem is reported as
the rebuild reports it, naming the item by its place in the changed inventory.

Who uses it: :meth:`placer.solver.session.Session.add_nodes` / ``remove_nodes`` and the service's
``node_added`` / ``node_removed`` changes, so a stored cluster and a session mean the same by them.

>>> from placer.topology.presets import cluster_of, dgx_h100
>>> from placer.topology.inventory import Inventory
>>> c = cluster_of(dgx_h100(2))
>>> l4 = {"name": "l4-1", "gpus": {"type": "nvidia-l4", "count": 1}}
>>> grown = with_nodes_added(c, Inventory(nodes=[l4]))
>>> [n.name for n in grown.nodes]
['dgx-h100-1', 'dgx-h100-2', 'l4-1']
>>> [n.name for n in without_nodes(grown, ["dgx-h100-1"]).nodes]
['dgx-h100-2', 'l4-1']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from placer.topology.build import _resolve_domains, _resolve_nodes, _resolve_pod, build_cluster
from placer.topology.cluster import Cluster
from placer.topology.errors import Problem, TopologyError
from placer.topology.inventory import Inventory, NodeSpec
from placer.topology.labels import HOST_LABEL
from placer.topology.model import NvlinkDomain
from placer.topology.structure import Structure

__all__ = ["node_names", "released", "with_nodes_added", "without_nodes"]


def node_names(cluster: Cluster, names: Iterable[str]) -> list[str]:
    """``names`` as the cluster's node and TPU pod names: a host the cluster holds as several nodes (a
    Slurm node of several GPU types, one node per type: label ``slurm_node``) stands for all of them. An
    unknown name is a :class:`TopologyError` naming it.

    >>> from placer.topology.presets import cluster_of, dgx_h100
    >>> node_names(cluster_of(dgx_h100(2)), ["dgx-h100-2"])
    ['dgx-h100-2']
    """
    names = list(dict.fromkeys(names))
    if not all(cluster.has_node(n) for n in names):
        parts: dict[str, list[str]] = {}
        for n in cluster.nodes:
            if HOST_LABEL in n.labels:
                parts.setdefault(n.labels[HOST_LABEL], []).append(n.name)
        names = list(
            dict.fromkeys(p for n in names for p in ([n] if cluster.has_node(n) else parts.get(n, [n])))
        )
    unknown = sorted(n for n in names if not cluster.has_node(n) and n not in cluster.structure.pods)
    if unknown:
        raise TopologyError(
            [Problem(cluster.source, "nodes", f"no node or TPU pod {n!r} in the cluster") for n in unknown]
        )
    return names


def released(cluster: Cluster, names: Iterable[str]) -> list[str]:
    """The running jobs that :func:`without_nodes` releases when the nodes and TPU pods ``names`` (as
    :func:`node_names` gives them) leave: every job with a replica there, sorted.

    >>> from placer.topology.presets import cluster_of, dgx_h100
    >>> c = cluster_of(dgx_h100(2)).allocate({"job": "j", "replicas": [{"node": "dgx-h100-2", "gpus": [0]}]})
    >>> released(c, ["dgx-h100-1"]), released(c, ["dgx-h100-2"])
    ([], ['j'])
    """
    pods = cluster.structure.pods
    return sorted(
        {j for n in names if cluster.has_node(n) for j in cluster.jobs_on(n)}
        | {j for p in names if p in pods for j in cluster.used_tpu_chips(p).values()}
    )


def with_nodes_added(cluster: Cluster, added: Inventory) -> Cluster:
    """``cluster`` with ``added``'s nodes and TPU pods after its own, and ``added.running`` started: what
    ``build_cluster`` of the joined inventory gives, without resolving the nodes or replaying the jobs
    already there. Raises :class:`TopologyError` as that rebuild would (a name already taken, a GPU type
    the catalog does not know, an NVLink domain that would mix GPU types), and changes nothing. Licence
    seats are the whole cluster's (:meth:`Cluster.with_licenses` sets them): ``added`` naming any is a
    ``TopologyError`` too, never dropped."""
    if added.licenses:
        raise TopologyError(
            [
                Problem(
                    cluster.source,
                    "licenses",
                    "licence seats are the whole cluster's, not the joining nodes': set them on the cluster",
                )
            ]
        )
    s = cluster.structure
    inv = s.inventory
    joined = inv.model_copy(
        update={"nodes": [*inv.nodes, *added.nodes], "tpu_pods": [*inv.tpu_pods, *added.tpu_pods]}
    )
    problems: list[Problem] = []
    fresh = _resolve_nodes(added, cluster.source, problems, first=len(inv.nodes))
    names = [n.name for n in fresh]
    pod_names = [p.name for p in added.tpu_pods]
    taken = any(n in s.node_index for n in names) or any(p in s.pods for p in pod_names)
    if problems or taken or len(set(pod_names)) != len(pod_names):
        return _rebuilt(cluster, joined)  # the rebuild names every problem as the joined inventory has it
    touched = sorted({n.nvlink_domain for n in fresh if n.nvlink_domain is not None})
    members = [s.node_index[m] for d in touched if d in s.domains for m in s.domains[d].nodes]
    domains, usable = _resolve_domains([*members, *fresh], cluster.source, problems)
    pods = dict(s.pods)
    for i, spec in enumerate(added.tpu_pods, start=len(inv.tpu_pods)):
        pod = _resolve_pod(spec, f"tpu_pods[{i}] ({spec.name})", cluster.source, problems)
        if pod is not None:
            pods[spec.name] = pod
    if problems:
        return _rebuilt(cluster, joined)
    index = dict(s.node_index)
    index.update((n.name, n) for n in fresh)
    structure = Structure(
        inventory=joined.model_copy(update={"running": inv.running}),
        source=s.source,
        nodes=(*s.nodes, *fresh),
        node_index=index,
        domains={**s.domains, **domains},
        pods=pods,
        domain_usable={**s.domain_usable, **usable},
    )
    structure.carry_spec_index(s)  # where the entries stand: the old ones where they were
    out = Cluster(structure, cluster.state)  # the nodes that joined hold nothing yet
    return out.with_allocations(added.running) if added.running else out


def without_nodes(cluster: Cluster, names: Iterable[str]) -> Cluster:
    """``cluster`` without the named nodes and TPU pods (a host of several nodes names them all,
    :func:`node_names`); the jobs running on them are released first (they cannot run anywhere). What a
    rebuild of the inventory without them gives; when a name is a node of a template (``count: 4``), that
    template is expanded and the cluster rebuilt."""
    names = node_names(cluster, names)
    s = cluster.structure
    gone = set(names)
    on_them = released(cluster, names)
    left = cluster.release(*on_them) if on_them else cluster
    nodes = [n for n in names if cluster.has_node(n)]
    removed = sorted(s.spec_index(n) for n in nodes)
    if any(s.inventory.nodes[i].count != 1 for i in removed):  # a node of a template: expand and rebuild
        return _rebuilt_without(left, gone)
    kept = [n for n in s.nodes if n.name not in gone]  # the same objects: nothing about them changed
    index = {n.name: n for n in kept} if nodes else dict(s.node_index)
    touched = sorted({d for n in nodes if (d := s.node_index[n].nvlink_domain) is not None})
    domains: dict[str, NvlinkDomain] = {d: v for d, v in s.domains.items() if d not in touched}
    usable = {d: v for d, v in s.domain_usable.items() if d not in touched}
    problems: list[Problem] = []
    remade, counts = _resolve_domains(
        [index[m] for d in touched for m in s.domains[d].nodes if m in index], cluster.source, problems
    )
    domains.update(remade)
    usable.update(counts)
    inv, dropped = s.inventory, set(removed)
    structure = Structure(
        inventory=inv.model_copy(
            update={
                "nodes": [spec for i, spec in enumerate(inv.nodes) if i not in dropped],
                "tpu_pods": [p for p in inv.tpu_pods if p.name not in gone],
            }
        ),
        source=s.source,
        nodes=tuple(kept),
        node_index=index,
        domains=domains,
        pods={p: v for p, v in s.pods.items() if p not in gone},
        domain_usable=usable,
    )
    busy = left.state.domain_busy.edit()
    for d in touched:
        if d not in domains and d in busy:
            busy.pop(d)
    pods_held = left.state.pods.edit()
    for p in names:
        if p in pods_held:
            pods_held.pop(p)
    return Cluster(structure, replace(left.state, domain_busy=busy.done(), pods=pods_held.done()))


def _rebuilt(cluster: Cluster, joined: Inventory) -> Cluster:
    """The general path: ``joined`` (the cluster's nodes and pods and more) built afresh, with the jobs
    running now."""
    running = list(cluster.state.jobs.values())
    return build_cluster(joined.model_copy(update={"running": running}), cluster.source)


def _rebuilt_without(cluster: Cluster, gone: set[str]) -> Cluster:
    """The general path: templates holding a node of ``gone`` expanded, those nodes and pods dropped, and
    the cluster built afresh from that inventory (nothing runs on them any more)."""
    inv = cluster.to_inventory()
    templates = {cluster.structure.spec_index(n) for n in gone if cluster.has_node(n)}
    specs: list[NodeSpec] = []
    for k, spec in enumerate(inv.nodes):
        expanded = Inventory(nodes=[spec]).expanded_nodes() if k in templates else [spec]
        specs.extend(x for x in expanded if x.name not in gone)
    pods = [p for p in inv.tpu_pods if p.name not in gone]
    return build_cluster(inv.model_copy(update={"nodes": specs, "tpu_pods": pods}), cluster.source)
