"""Building clusters: builder counts, NVLink domains, derived labels and description errors.

Every expected number is worked out by hand in a comment next to it.
"""

from __future__ import annotations

import pytest

from placer.topology import (
    Inventory,
    TopologyError,
    build_cluster,
    capacity_pool,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    gb200_nvl72,
    hgx_a100,
    pcie_inference,
    tpu_pod,
)
from placer.topology.labels import DERIVED_KEYS


def test_dgx_h100_counts_and_one_domain_per_node() -> None:
    c = cluster_of(dgx_h100(5))
    # 5 nodes x 8 GPUs = 40 GPUs; DGX boards are one NVSwitch domain each -> 5 domains of 8
    assert len(c.nodes) == 5
    assert sum(n.gpu_count for n in c.nodes) == 40
    domains = c.nvlink_domains()
    assert len(domains) == 5
    assert [d.size for d in domains] == [8, 8, 8, 8, 8]
    assert {d.nodes for d in domains} == {(n.name,) for n in c.nodes}
    n = c.nodes[0]
    assert (n.cpu_cores, n.memory_gb, n.storage_gb) == (224, 2048, 30720)  # DGX H100 defaults, see docstring
    assert (n.gpu_type, n.gpu_memory_gb, n.gpu_interconnect) == ("nvidia-h100", 80, "nvlink")
    assert n.price_per_hour is None


def test_hgx_a100_memory_variant() -> None:
    c = cluster_of(hgx_a100(2, gpu_memory_gb=40))
    assert [n.gpu_memory_gb for n in c.nodes] == [40, 40]
    assert c.nodes[0].labels["gpu_memory_gb"] == "40"
    assert c.nodes[0].labels["compute_capability"] == "8.0"
    assert c.nodes[0].cpu_cores == 256


def test_gb200_nvl72_one_domain_per_rack() -> None:
    c = cluster_of(gb200_nvl72(3))
    # 3 racks x 18 trays = 54 nodes; 54 x 4 GPUs = 216 GPUs; one domain per rack of 18 x 4 = 72 GPUs
    assert len(c.nodes) == 54
    assert sum(n.gpu_count for n in c.nodes) == 216
    domains = c.nvlink_domains()
    assert len(domains) == 3
    assert [d.size for d in domains] == [72, 72, 72]
    assert all(len(d.nodes) == 18 for d in domains)
    assert len({n.rack for n in c.nodes}) == 3
    # every tray of a rack names the same domain
    rack_of = {n.name: n.rack for n in c.nodes}
    for d in domains:
        assert len({rack_of[m] for m in d.nodes}) == 1
    assert c.nodes[0].gpu_memory_gb == 186


def test_pcie_nodes_have_no_domain() -> None:
    c = cluster_of(pcie_inference(6), pcie_inference(2, gpu="nvidia-t4", gpus_per_node=1))
    # 6 x 4 L4 + 2 x 1 T4 = 26 GPUs, none on NVLink
    assert sum(n.gpu_count for n in c.nodes) == 26
    assert c.nvlink_domains() == ()
    assert all(n.nvlink_domain is None and n.gpu_interconnect == "pcie" for n in c.nodes)


def test_cpu_nodes() -> None:
    c = cluster_of(cpu_nodes(3, cpu_cores=32, memory_gb=128))
    assert len(c.nodes) == 3
    assert all(n.gpu_count == 0 and n.labels["accelerator"] == "cpu" for n in c.nodes)
    assert "gpu_type" not in c.nodes[0].labels


def test_parts_never_share_a_rack() -> None:
    # The README's own example: a DGX part cut into racks of 4 and two NVL72 racks. Both builders count
    # their racks from 1; the racks must still be distinct: 16/4 = 4 DGX racks + 2 NVL72 racks = 6.
    c = cluster_of(dgx_h100(16, nodes_per_rack=4), gb200_nvl72(2))
    by_rack: dict[str | None, int] = {}
    for n in c.nodes:
        by_rack[n.rack] = by_rack.get(n.rack, 0) + 1
    assert len(by_rack) == 6
    assert sorted(by_rack.values()) == [4, 4, 4, 4, 18, 18]
    rack_vertices = [v for v, d in c.graph.nodes(data=True) if d.get("type") == "rack"]
    assert len(rack_vertices) == 6


def test_rack_block_zone_layout() -> None:
    c = cluster_of(
        dgx_h100(20, nodes_per_rack=4, racks_per_block=2, zones=["us-central1-a", "us-central1-b"])
    )
    # 20 nodes / 4 per rack = 5 racks; 2 zones -> ceil(5/2) = 3 racks in zone a, 2 in zone b
    racks = {(n.zone, n.rack) for n in c.nodes}
    assert len(racks) == 5
    zone_a = [n for n in c.nodes if n.zone == "us-central1-a"]
    zone_b = [n for n in c.nodes if n.zone == "us-central1-b"]
    assert (len(zone_a), len(zone_b)) == (12, 8)  # 3 racks x 4, 2 racks x 4
    # zone a: racks 1,2 -> block-1, rack 3 -> block-2 (names carry the part's name, dgx-h100)
    assert sorted({(n.rack, n.block) for n in zone_a}) == [
        ("dgx-h100-rack-1", "dgx-h100-block-1"),
        ("dgx-h100-rack-2", "dgx-h100-block-1"),
        ("dgx-h100-rack-3", "dgx-h100-block-2"),
    ]
    assert c.nodes[0].region == "us-central1"
    assert c.nodes[0].labels["region"] == "us-central1"


def test_uneven_last_rack() -> None:
    c = cluster_of(dgx_h100(10, nodes_per_rack=4))
    # racks of 4, 4, 2
    sizes = {}
    for n in c.nodes:
        sizes[n.rack] = sizes.get(n.rack, 0) + 1
    assert sorted(sizes.values()) == [2, 4, 4]


def test_capacity_pool() -> None:
    c = cluster_of(capacity_pool(spot=3, on_demand=2, reserved=1, prices={"spot": 2.0, "reserved": 5.0}))
    classes = [n.capacity_class for n in c.nodes]
    assert classes.count("spot") == 3 and classes.count("on-demand") == 2 and classes.count("reserved") == 1
    prices = {n.capacity_class: n.price_per_hour for n in c.nodes}
    assert prices == {"spot": 2.0, "on-demand": None, "reserved": 5.0}
    assert all(n.labels["capacity_class"] == n.capacity_class for n in c.nodes)


def test_tpu_pod_builders() -> None:
    c = cluster_of(tpu_pod("v5e"), tpu_pod("v6e"), tpu_pod("v4", shape=(4, 4, 8)), tpu_pod("v5p"))
    chips = {p.name: p.chips for p in c.tpu_pods()}
    # v5e 16x16 = 256, v6e 16x16 = 256, v4 4x4x8 = 128, v5p 16x20x28 = 8960
    assert chips == {"v5e-pod": 256, "v6e-pod": 256, "v4-pod": 128, "v5p-pod": 8960}
    hosts = {p.name: len(list(p.hosts())) for p in c.tpu_pods()}
    # 4 chips per host: 64, 64, 32, 2240
    assert hosts == {"v5e-pod": 64, "v6e-pod": 64, "v4-pod": 32, "v5p-pod": 2240}


def test_derived_labels_win_over_user_labels() -> None:
    inv = Inventory.model_validate(
        {
            "nodes": [
                {
                    "name": "n1",
                    "zone": "europe-west4-b",
                    "rack": "r7",
                    "block": "b2",
                    "rank": 3,
                    "properties": ["ib"],
                    "labels": {"gpu_type": "nvidia-h100", "team": "vision", "hostname": "fake"},
                    "gpus": {"type": "Tesla-T4", "count": 2},
                }
            ]
        }
    )
    n = build_cluster(inv).node("n1")
    assert n.labels["gpu_type"] == "nvidia-t4"  # the node's real GPUs, not the user label
    assert n.labels["hostname"] == "n1"
    assert n.labels["team"] == "vision"
    assert n.labels["ib"] == "true"
    assert n.labels["gpu_count"] == "2"
    assert n.labels["gpu_memory_gb"] == "16"
    assert n.labels["compute_capability"] == "7.5"
    assert n.labels["gpu_interconnect"] == "pcie"
    assert n.labels["accelerator"] == "gpu"
    assert (n.labels["zone"], n.labels["region"], n.labels["rack"], n.labels["block"]) == (
        "europe-west4-b",
        "europe-west4",
        "r7",
        "b2",
    )
    assert n.labels["rank"] == "3"
    assert n.labels["capacity_class"] == "on-demand"
    assert set(DERIVED_KEYS) <= set(n.labels)


def test_nodes_with_label_index() -> None:
    c = cluster_of(dgx_h100(3), pcie_inference(2))
    assert [n.name for n in c.nodes_with("gpu_type", "nvidia-l4")] == ["l4-1", "l4-2"]
    assert len(c.nodes_with("gpu_interconnect", "nvlink")) == 3


def test_gpu_objects() -> None:
    c = cluster_of(dgx_h100(1))
    gpus = c.gpus("dgx-h100")
    assert [g.index for g in gpus] == list(range(8))
    assert gpus[3].key == ("dgx-h100", 3)
    assert gpus[0].nvlink_domain == "dgx-h100/nvlink"


def test_explicit_facts_override_catalog() -> None:
    inv = Inventory.model_validate(
        {
            "nodes": [
                {"name": "pcie-h100", "gpus": {"type": "NVIDIA-H100-PCIe", "count": 2}},
                {"name": "big-v100", "gpus": {"type": "v100", "count": 8, "memory_gb": 32}},
                {"name": "custom", "gpus": {"type": "acme-x1", "count": 1, "memory_gb": 12}},
                {"name": "amd", "gpus": {"type": "amd-mi300x", "count": 8, "interconnect": "nvlink"}},
            ]
        }
    )
    c = build_cluster(inv)
    assert c.node("pcie-h100").gpu_interconnect == "pcie"  # product string says PCIe
    assert c.node("pcie-h100").nvlink_domain is None
    assert c.node("big-v100").gpu_memory_gb == 32
    assert c.node("custom").gpu_type == "acme-x1" and c.node("custom").gpu_interconnect == "pcie"
    assert c.nvlink_domain("amd/nvlink").size == 8


def _problems(inv: dict) -> list[str]:
    with pytest.raises(TopologyError) as exc:
        build_cluster(Inventory.model_validate(inv), source="bad.yaml")
    return [str(p) for p in exc.value.problems]


def test_build_errors_name_source_item_problem() -> None:
    problems = _problems(
        {
            "nodes": [
                {"name": "ok", "gpus": {"type": "nvidia-h100", "count": 8}},
                {"name": "gpu", "count": 2, "gpus": {"type": "nvidia-h10", "count": 8}},
                {"name": "ok"},
                {"name": "l4", "gpus": {"type": "nvidia-l4", "count": 4, "nvlink_domain": "d1"}},
                {"name": "inner", "gpus": {"type": "t4", "count": 2}, "inner": [{"type": "gpu"}]},
            ],
            "tpu_pods": [
                {"name": "p1", "type": "v9z", "shape": [2, 2]},
                {"name": "p2", "type": "v5e", "shape": [4, 4, 4]},
                {"name": "p3", "type": "v5e", "shape": [32, 16]},
                {"name": "p4", "type": "v4", "shape": [3, 4, 4]},
                {"name": "p4", "type": "v5e", "shape": [2, 2]},
            ],
        }
    )
    assert problems == [
        "bad.yaml: nodes[1] (gpu): unknown GPU type 'nvidia-h10': not in the accelerator catalog; give "
        "gpus.memory_gb to use a type outside the catalog",
        "bad.yaml: nodes[2] (ok): duplicate node name (also nodes[0] (ok))",
        "bad.yaml: nodes[3] (l4): nvlink_domain 'd1' given for nvidia-l4 GPUs whose interconnect is pcie; "
        "set gpus.interconnect: nvlink if they really share NVLink",
        "bad.yaml: nodes[4] (inner): the inner tree has 1 gpu vertices but the node has 2 GPUs",
        "bad.yaml: tpu_pods[0] (p1): unknown TPU type 'v9z' (known: v4, v5e, v5p, v6e)",
        "bad.yaml: tpu_pods[1] (p2): a v5e mesh has 2 dimensions, not 3 (4x4x4)",
        "bad.yaml: tpu_pods[2] (p3): mesh 32x16 is larger than a v5e pod (16x16)",
        "bad.yaml: tpu_pods[3] (p4): mesh 3x4x4 is not a whole number of 2x2x1 hosts",
        "bad.yaml: tpu_pods[4] (p4): duplicate TPU pod name",
    ]


def test_mixed_type_domain_is_an_error() -> None:
    problems = _problems(
        {
            "nodes": [
                {"name": "a", "gpus": {"type": "nvidia-gb200", "count": 4, "nvlink_domain": "rack1"}},
                {"name": "b", "gpus": {"type": "nvidia-h100", "count": 8, "nvlink_domain": "rack1"}},
            ]
        }
    )
    assert problems == [
        "bad.yaml: nvlink_domain 'rack1': one NVLink domain mixes GPU types nvidia-gb200, "
        "nvidia-h100 (nodes a, b)"
    ]


def test_duplicate_expanded_name() -> None:
    problems = _problems({"nodes": [{"name": "n", "count": 2}, {"name": "n-1"}]})
    assert problems == ["bad.yaml: nodes[1] (n-1): duplicate node name (also nodes[0] (n))"]


def test_single_host_pods() -> None:
    c = cluster_of(tpu_pod("v5e", shape=(2, 4), name="one-host"), tpu_pod("v4", shape=(2, 2, 1), name="v4-8"))
    # 8 v5e chips fit one ct5lp-hightpu-8t host; a 2x2x1 v4 mesh is one 4-chip host
    assert [len(list(p.hosts())) for p in c.tpu_pods()] == [1, 1]
    assert c.tpu_pod("one-host").host_shape == (2, 4)
