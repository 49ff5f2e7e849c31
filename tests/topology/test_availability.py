"""Nodes going down and up (``topology/availability.py``): the fast path and the rebuild agree.

A node described by an inventory entry of its own is flipped in place (its entry and node swapped, its
NVLink domain's counts made again); anything else rebuilds the cluster from its inventory. Both must give
the cluster a rebuild from the marked inventory gives: the rule is the docstring's — up is ready and
schedulable, down is not ready — and what runs there stays accounted, while a domain's free GPUs count
schedulable, ready nodes only.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from placer.topology import Cluster, cluster_of, dgx_h100, gb200_nvl72, pcie_inference
from placer.topology.availability import with_availability
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory, RunningJob


def _one_entry_per_node(c: Cluster) -> Cluster:
    """``c`` described node by node, as importers write inventories (the fast path's case)."""
    inv = c.to_inventory()
    return build_cluster(inv.model_copy(update={"nodes": list(Inventory(nodes=inv.nodes).expanded_nodes())}))


BASE = _one_entry_per_node(cluster_of(dgx_h100(3), gb200_nvl72(1), pcie_inference(2)))
RUNNING = [
    RunningJob(job="nvl-a", replicas=[{"node": BASE.nodes[3].name, "gpus": [0, 1, 2, 3]}]),
    RunningJob(job="nvl-b", replicas=[{"node": BASE.nodes[4].name, "gpus": [2]}]),
    RunningJob(job="dgx", replicas=[{"node": BASE.nodes[0].name, "gpus": [0, 1]}]),
    RunningJob(job="share", replicas=[{"node": BASE.nodes[1].name, "gpus": [5], "gpu_milli": 300}]),
]
START = BASE.with_allocations(RUNNING)


def _rebuilt(c: Cluster, up: dict[str, bool]) -> Cluster:
    """The reference: the whole inventory marked and built again."""
    inv = c.to_inventory()
    marked = [
        s.model_copy(update={"ready": True, "schedulable": True} if up[s.name] else {"ready": False})
        if s.name in up
        else s
        for s in inv.nodes
    ]
    return build_cluster(inv.model_copy(update={"nodes": marked}), source=c.source)


def _same(a: Cluster, b: Cluster) -> None:
    assert a.to_inventory().model_dump() == b.to_inventory().model_dump()
    assert a.nodes == b.nodes  # every fact but the spec object: name, ready, schedulable, ...
    assert [a.structure.spec_index(n.name) for n in a.nodes] == [
        b.structure.spec_index(n.name) for n in b.nodes
    ]
    for d in b.structure.domains:
        assert a.domain_free(d) == b.domain_free(d), d
        assert a.free_domain_gpus(d) == b.free_domain_gpus(d), d
    for n in b.nodes:
        assert a.free(n.name) == b.free(n.name)
        assert a.node(n.name) == n


NAMES = [n.name for n in START.nodes]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(NAMES), st.booleans(), min_size=1, max_size=3), max_size=5))
def test_flipping_nodes_in_place_gives_the_rebuilt_cluster(flips: list[dict[str, bool]]) -> None:
    c = START
    for up in flips:
        expected = _rebuilt(c, up)
        c = with_availability(c, up)
        _same(c, expected)
        # The flipped cluster goes on like a built one: a job still lands and leaves.
        _same(c.release("nvl-b"), expected.release("nvl-b"))


def test_a_down_node_leaves_its_domain_free_count_and_comes_back() -> None:
    nvl = START.nodes[3]  # 4 GPUs in NVL72 rack r1, 4 of them held by nvl-a
    domain = nvl.nvlink_domain
    assert domain is not None
    before = START.domain_free(domain)
    down = with_availability(START, {nvl.name: False})
    # Its 4 GPUs leave the usable count and its 4 busy ones the busy count: free is unchanged (0 free there).
    assert down.domain_free(domain) == before
    assert down.structure.domain_usable[domain] == START.structure.domain_usable[domain] - nvl.gpu_count
    assert not down.node(nvl.name).usable and down.running_job("nvl-a").replicas[0].node == nvl.name
    up = with_availability(down, {nvl.name: True})
    assert up.domain_free(domain) == before and up.node(nvl.name).usable


def test_templates_and_tpu_pods_are_rebuilt_and_agree() -> None:
    c = cluster_of(dgx_h100(3))  # one entry of count 3: the general path expands it
    out = with_availability(c, {"dgx-h100-2": False})
    assert [(s.name, s.count) for s in out.to_inventory().nodes] == [
        ("dgx-h100-1", 1),
        ("dgx-h100-2", 1),
        ("dgx-h100-3", 1),
    ]
    assert [n.usable for n in out.nodes] == [True, False, True]
