"""Autoscaled node groups of a scenario: each group's node, built once and checked against the cluster.

Why built here and not in the simulator: a group names its node as a ``cluster.builders`` entry does,
and a wrong one (an unknown builder, a bad argument, a builder that makes a rack, a name the cluster
already uses) must fail before the run, naming the field, like every other input of the file.

>>> from placer.scenarios.spec import AutoscalingSpec
>>> from placer.solver.prices import PriceCatalog
>>> from placer.topology import cluster_of, dgx_h100
>>> spec = AutoscalingSpec.model_validate({"groups": [{"name": "burst", "node": {"dgx_h100": {}}, "max": 4}]})
>>> [g] = node_groups_of(spec, cluster_of(dgx_h100(2)), PriceCatalog.default())
>>> g.node_name(3), g.inventory(["burst-3"]).nodes[0].gpus.count, g.max
('burst-3', 8, 4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from placer.scenarios.inputs.cluster import built
from placer.scenarios.load import fail
from placer.scenarios.spec import AutoscalingSpec, NodeGroupSpec
from placer.solver.prices import PriceCatalog
from placer.topology import Cluster, TopologyError, cluster_of
from placer.topology.inventory import Inventory, NodeSpec

__all__ = ["NodeGroup", "node_groups_of"]


@dataclass(frozen=True)
class NodeGroup:
    """One autoscaled group: its node (``template``, named ``<name>-<k>`` when made), its bounds, its
    delays in seconds, and what one node costs and holds."""

    name: str
    template: NodeSpec
    min: int
    max: int
    provision_s: float
    scale_down_after_s: float
    price_per_hour: float
    gpus: int
    #: Mean seconds from joining to the provider taking the node back (None: never).
    reclaim_mtbf_s: float | None = None

    def node_name(self, k: int) -> str:
        """The name of the group's ``k``-th node (``k`` counts from 1 and is never reused in a run)."""
        return f"{self.name}-{k}"

    def inventory(self, names: list[str]) -> Inventory:
        """The group's nodes of these names as an inventory document of their own (what joins the
        cluster)."""
        return Inventory(nodes=[self.template.model_copy(update={"name": n}) for n in names])


def node_groups_of(spec: AutoscalingSpec | None, cluster: Cluster, prices: PriceCatalog) -> list[NodeGroup]:
    """The groups of ``spec`` (none without it), each node built and priced; refused, naming the field,
    when a builder does not make exactly one node or a group's names are taken by the cluster."""
    if spec is None:
        return []
    return [_group(g, f"autoscaling.groups[{i}]", cluster, prices) for i, g in enumerate(spec.groups)]


def _group(g: NodeGroupSpec, where: str, cluster: Cluster, prices: PriceCatalog) -> NodeGroup:
    ((builder, args),) = g.node.items()
    if "count" in (args or {}):
        raise fail(
            "conflict", f"{where}.node.{builder}.count", "a group's node is one node: min and max count them"
        )
    inv = built({builder: {**(args or {}), "count": 1}}, f"{where}.node")
    if len(inv.nodes) != 1 or inv.nodes[0].count != 1 or inv.tpu_pods:
        raise fail(
            "range",
            f"{where}.node",
            f"{builder} makes {sum(n.count for n in inv.nodes)} nodes and {len(inv.tpu_pods)} TPU pods; a "
            "group grows one node at a time (gb200_nvl72 racks and tpu_pod pods do not scale here)",
        )
    mine = re.compile(rf"{re.escape(g.name)}-\d+")
    taken = sorted(n.name for n in cluster.nodes if mine.fullmatch(n.name))
    if taken:
        raise fail(
            "conflict", f"{where}.name", f"the cluster already has a node named like the group's: {taken[0]}"
        )
    template = inv.nodes[0].model_copy(update={"name": f"{g.name}-0"})
    try:
        node = cluster_of(Inventory(nodes=[template])).nodes[0]
    except TopologyError as e:
        raise fail("range", f"{where}.node", str(e)) from None
    return NodeGroup(
        name=g.name,
        template=template,
        min=g.min,
        max=g.max,
        provision_s=g.provision,
        scale_down_after_s=g.scale_down_after,
        price_per_hour=prices.node_hour(node),
        gpus=node.gpu_count,
        reclaim_mtbf_s=g.reclaim_mtbf,
    )
