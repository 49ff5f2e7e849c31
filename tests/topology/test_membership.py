"""Nodes and TPU pods joining and leaving (``topology/membership.py``): the same cluster a rebuild gives.

The reference is the definition: a cluster that gains nodes is ``build_cluster`` of its inventory with the
new entries after its own; one that loses nodes is ``build_cluster`` of its inventory without them, after
the jobs running there were released. The fast paths must give an equal cluster (inventory, node facts
and where each node's entry stands, NVLink domains' free counts, every node's free amounts), and it must
go on like a built one (a job still lands and leaves).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.topology import Cluster, TopologyError, cluster_of, dgx_h100, gb200_nvl72, pcie_inference
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory, NodeSpec, RunningJob, TpuPodSpec
from placer.topology.membership import node_names, with_nodes_added, without_nodes


def _one_entry_per_node(c: Cluster) -> Cluster:
    inv = c.to_inventory()
    return build_cluster(inv.model_copy(update={"nodes": list(Inventory(nodes=inv.nodes).expanded_nodes())}))


BASE = _one_entry_per_node(cluster_of(dgx_h100(3), gb200_nvl72(1), pcie_inference(2)))
NVL = BASE.nodes[3]  # a GB200 tray of the NVL72 rack: its domain is shared by 18 trays
START = BASE.with_allocations(
    [
        RunningJob(job="nvl-a", replicas=[{"node": NVL.name, "gpus": [0, 1, 2, 3]}]),
        RunningJob(job="nvl-b", replicas=[{"node": BASE.nodes[4].name, "gpus": [2]}]),
        RunningJob(job="dgx", replicas=[{"node": BASE.nodes[0].name, "gpus": [0, 1]}]),
        RunningJob(job="share", replicas=[{"node": BASE.nodes[1].name, "gpus": [5], "gpu_milli": 300}]),
        RunningJob(
            job="two-nodes",
            replicas=[{"node": BASE.nodes[1].name, "gpus": [0]}, {"node": BASE.nodes[2].name, "gpus": [0]}],
        ),
    ]
)


def _joining(k: int) -> Inventory:
    """New machines, of kinds that touch every part: a DGX (its own NVLink domain), a GB200 tray joining
    the existing NVL72 domain, a PCIe L4 box with a job already on it, a cordoned node, a TPU pod."""
    tray = NVL.spec.model_copy(update={"name": f"tray-{k}"})
    return Inventory(
        nodes=[
            NodeSpec(name=f"dgx-new-{k}", gpus={"type": "nvidia-h100", "count": 8}, cpu_cores=112),  # type: ignore[arg-type]
            tray,
            NodeSpec(name=f"l4-new-{k}", gpus={"type": "nvidia-l4", "count": 4}),  # type: ignore[arg-type]
            NodeSpec(name=f"cordoned-{k}", cpu_cores=32, schedulable=False),
        ],
        tpu_pods=[TpuPodSpec(name=f"v5e-new-{k}", type="v5e", shape=[4, 4])],
        running=[RunningJob(job=f"on-l4-{k}", replicas=[{"node": f"l4-new-{k}", "gpus": [1]}])],
    )


def _joined_reference(c: Cluster, added: Inventory) -> Cluster:
    inv = c.to_inventory()
    return build_cluster(
        inv.model_copy(
            update={
                "nodes": [*inv.nodes, *added.nodes],
                "tpu_pods": [*inv.tpu_pods, *added.tpu_pods],
                "running": [*inv.running, *added.running],
            }
        ),
        source=c.source,
    )


def _left_reference(c: Cluster, gone: set[str]) -> Cluster:
    on_them = [
        rj.job for rj in c.running_jobs() if any(r.node in gone or r.tpu_pod in gone for r in rj.replicas)
    ]
    inv = (c.release(*on_them) if on_them else c).to_inventory()
    nodes = [s for spec in inv.nodes for s in Inventory(nodes=[spec]).expanded_nodes() if s.name not in gone]
    if all(spec.count == 1 for spec in inv.nodes):
        nodes = [s for s in inv.nodes if s.name not in gone]
    pods = [p for p in inv.tpu_pods if p.name not in gone]
    return build_cluster(inv.model_copy(update={"nodes": nodes, "tpu_pods": pods}), source=c.source)


def _same(a: Cluster, b: Cluster) -> None:
    assert a.to_inventory().model_dump() == b.to_inventory().model_dump()
    assert a.nodes == b.nodes  # every fact: name, labels, readiness, NVLink domain, ...
    assert [a.structure.spec_index(n.name) for n in a.nodes] == [
        b.structure.spec_index(n.name) for n in b.nodes
    ]
    assert dict(a.structure.domains) == dict(b.structure.domains)
    assert dict(a.structure.domain_usable) == dict(b.structure.domain_usable)
    for d in b.structure.domains:
        assert a.domain_free(d) == b.domain_free(d), d
    for n in b.nodes:
        assert a.free(n.name) == b.free(n.name), n.name
        assert a.node(n.name) == n
    assert set(a.structure.pods) == set(b.structure.pods)
    for p in b.structure.pods:
        assert a.free_tpu_chips(p) == b.free_tpu_chips(p)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10_000), st.integers(1, 3)), max_size=5))
def test_joining_and_leaving_give_the_rebuilt_cluster(steps: list[tuple[bool, int, int]]) -> None:
    c = START
    for k, (join, pick, how_many) in enumerate(steps):
        if join:
            added = _joining(k)
            expected = _joined_reference(c, added)
            c = with_nodes_added(c, added)
        else:
            names = [n.name for n in c.nodes] + list(c.structure.pods)
            gone = {names[(pick + 7 * i) % len(names)] for i in range(how_many)}
            expected = _left_reference(c, gone)
            c = without_nodes(c, sorted(gone))
        _same(c, expected)
    # The result goes on like a built one: a job lands on a node and leaves again.
    some = next(n for n in c.nodes if n.gpu_count)
    job = RunningJob(job="later", replicas=[{"node": some.name, "gpus": list(c.free_gpus(some.name))[:1]}])
    if c.free_gpus(some.name):
        _same(c.allocate(job).release("later"), c)


def test_a_tray_joins_its_nvl72_domain_and_leaves_it() -> None:
    domain = NVL.nvlink_domain
    assert domain is not None
    before = START.structure.domains[domain]
    grown = with_nodes_added(START, _joining(0))
    # 18 trays of 4 GPUs, then a 19th: the domain counts 76 GPUs, the new tray's 4 of them free.
    assert grown.structure.domains[domain].nodes == (*before.nodes, "tray-0")
    assert grown.structure.domain_usable[domain] == START.structure.domain_usable[domain] + 4
    assert grown.domain_free(domain) == START.domain_free(domain) + 4
    shrunk = without_nodes(grown, [NVL.name])  # the tray running nvl-a (4 GPUs) leaves, nvl-a with it
    assert NVL.name not in shrunk.structure.domains[domain].nodes
    assert shrunk.structure.domain_usable[domain] == grown.structure.domain_usable[domain] - 4
    assert shrunk.domain_free(domain) == grown.domain_free(domain)  # its 4 GPUs were all held
    assert "nvl-a" not in {rj.job for rj in shrunk.running_jobs()}


def test_the_nodes_that_stay_are_the_same_objects() -> None:
    grown = with_nodes_added(START, _joining(0))
    assert all(a is b for a, b in zip(START.nodes, grown.nodes, strict=False))
    shrunk = without_nodes(grown, [START.nodes[2].name])
    assert shrunk.nodes[:2] == START.nodes[:2] and all(
        a is b for a, b in zip(START.nodes[:2], shrunk.nodes[:2], strict=True)
    )
    # Nodes after the one that left moved up an entry, and the structure says so; the nodes are the same.
    assert all(a is b for a, b in zip(START.nodes[3:], shrunk.nodes[2:], strict=False))
    inv = shrunk.to_inventory()
    assert [inv.nodes[shrunk.structure.spec_index(n.name)].name for n in shrunk.nodes] == [
        n.name for n in shrunk.nodes
    ]


@pytest.mark.parametrize(
    ("specs", "at", "name", "message"),
    [
        ([NodeSpec(name=START.nodes[0].name, cpu_cores=4)], 0, START.nodes[0].name, "duplicate node name"),
        (
            [
                NodeSpec(name="ok", cpu_cores=4),
                NodeSpec(name="typo", gpus={"type": "nvidia-h10", "count": 1}),
            ],  # type: ignore[arg-type]
            1,
            "typo",
            "unknown GPU type 'nvidia-h10'",
        ),
    ],
)
def test_a_bad_join_names_the_item_where_the_joined_inventory_has_it(
    specs: list[NodeSpec], at: int, name: str, message: str
) -> None:
    # As build_cluster of the joined inventory reports it: the new entries come after the cluster's own.
    with pytest.raises(TopologyError) as err:
        with_nodes_added(START, Inventory(nodes=specs))
    n = len(START.to_inventory().nodes)
    assert f"nodes[{n + at}] ({name})" in str(err.value) and message in str(err.value)


def test_a_domain_that_would_mix_gpu_types_is_refused() -> None:
    h100 = NodeSpec(
        name="odd",
        gpus={
            "type": "nvidia-h100",
            "count": 4,
            "interconnect": "nvlink",
            "nvlink_domain": NVL.nvlink_domain,
        },
    )  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="mixes GPU types"):
        with_nodes_added(START, Inventory(nodes=[h100]))


def test_a_job_that_does_not_fit_a_joining_node_is_refused() -> None:
    added = Inventory(
        nodes=[NodeSpec(name="small", gpus={"type": "nvidia-l4", "count": 1})],  # type: ignore[arg-type]
        running=[RunningJob(job="big", replicas=[{"node": "small", "gpus": [3]}])],
    )
    with pytest.raises(TopologyError, match="GPU index 3 out of range"):
        with_nodes_added(START, added)


def test_unknown_names_are_refused_and_a_template_is_expanded() -> None:
    with pytest.raises(TopologyError, match="no node or TPU pod 'nope'"):
        without_nodes(START, ["nope"])
    c = cluster_of(dgx_h100(3))  # one entry of count 3
    out = without_nodes(c, ["dgx-h100-2"])
    assert [(s.name, s.count) for s in out.to_inventory().nodes] == [("dgx-h100-1", 1), ("dgx-h100-3", 1)]


def test_a_host_of_several_nodes_names_them_all() -> None:
    inv = Inventory(
        nodes=[
            NodeSpec(name="n1-a100", gpus={"type": "nvidia-a100", "count": 2}, labels={"slurm_node": "n1"}),  # type: ignore[arg-type]
            NodeSpec(name="n1-t4", gpus={"type": "nvidia-t4", "count": 2}, labels={"slurm_node": "n1"}),  # type: ignore[arg-type]
            NodeSpec(name="n2", cpu_cores=8),
        ]
    )
    c = build_cluster(inv)
    assert node_names(c, ["n1"]) == ["n1-a100", "n1-t4"]
    assert [n.name for n in without_nodes(c, ["n1"]).nodes] == ["n2"]


def test_licence_seats_stay_with_the_cluster_through_every_change() -> None:
    from placer.topology.availability import with_availability

    c = cluster_of(dgx_h100(3), Inventory(licenses={"matlab": 4}))
    changed = [
        with_availability(c, {"dgx-h100-1": False}),
        without_nodes(c, ["dgx-h100-1"]),
        with_nodes_added(c, dgx_h100(1, name="x")),
        c.without_allocations(),
        c.with_allocations([{"job": "r", "licenses": {"matlab": 1}, "replicas": [{"node": "dgx-h100-2"}]}]),
    ]
    assert [k.licenses for k in changed] == [{"matlab": 4}] * 5
    assert build_cluster(changed[-1].to_inventory()).licenses == {"matlab": 4}
