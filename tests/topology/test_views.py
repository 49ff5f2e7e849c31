"""Dataframes and summaries; numbers by hand."""

from __future__ import annotations

import pytest

from placer.topology import (
    Cluster,
    Inventory,
    NodeSpec,
    Taint,
    build_cluster,
    cluster_of,
    dgx_h100,
    free_by,
    free_dataframe,
    gb200_nvl72,
    pcie_inference,
    summary,
    summary_text,
    to_dataframe,
    tpu_pod,
)


def _cluster() -> Cluster:
    c = cluster_of(dgx_h100(3), pcie_inference(2), gb200_nvl72(1), tpu_pod("v5e", name="p"), name="lab")
    return c.with_allocations(
        [
            {"job": "t", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2], "cpu_cores": 10}]},
            {"job": "tpu", "replicas": [{"tpu_pod": "p", "tpu_chips": [[0, 0], [0, 1], [1, 0], [1, 1]]}]},
        ]
    )


def test_summary_counts() -> None:
    s = summary(_cluster())
    # nodes: 3 DGX + 2 L4 + 18 GB200 trays = 23, all schedulable and ready
    assert s["nodes"] == 23
    # GPUs: 3*8 = 24 H100, 2*4 = 8 L4, 18*4 = 72 GB200
    assert s["gpus"] == {"nvidia-gb200": 72, "nvidia-h100": 24, "nvidia-l4": 8}
    # free: 24 - 3 held = 21 H100
    assert s["free_gpus"] == {"nvidia-gb200": 72, "nvidia-h100": 21, "nvidia-l4": 8}
    # domains with >= 2 GPUs: 3 DGX boards + 1 NVL72 rack = 4 (PCIe L4 nodes have none)
    assert s["nvlink_domains"] == 4
    assert s["tpu_chips"] == {"v5e": 256}
    assert s["free_tpu_chips"] == {"v5e": 252}  # 256 - 4
    assert s["running_jobs"] == 2
    # 8-free domains: dgx-h100-2, dgx-h100-3 and the NVL72 rack
    assert s["free_nvlink_domains_8"] == {"nvidia-gb200": 1, "nvidia-h100": 2}


def test_summary_text_mentions_totals() -> None:
    text = summary_text(_cluster())
    assert text.splitlines()[0].startswith("cluster lab: 23 usable nodes of 23")
    assert "nvidia-h100" in text and "21 / 24" in text
    assert "NVLink domains: 4" in text
    assert "252 / 256 chips free" in text
    assert len(text.splitlines()) < 40


def test_licences_show_their_seats_and_what_running_jobs_hold() -> None:
    c = cluster_of(dgx_h100(1), Inventory(licenses={"matlab": 4}))
    c = c.with_allocations(
        [{"job": "r", "licenses": {"matlab": 3, "x": 1}, "replicas": [{"node": "dgx-h100"}]}]
    )
    s = summary(c)
    assert (s["licenses"], s["licenses_held"]) == ({"matlab": 4}, {"matlab": 3, "x": 1})
    assert "Licences (free / seats): matlab 1 / 4, x 1 held, no seats defined" in summary_text(c)
    assert "Licences" not in summary_text(_cluster())  # none defined, none held: no line


def test_dataframes() -> None:
    c = _cluster()
    df = to_dataframe(c)
    assert len(df) == 23
    assert df.set_index("name").loc["dgx-h100-2", "gpu_count"] == 8
    free = free_dataframe(c).set_index("name")
    assert free.loc["dgx-h100-1", "free_gpus"] == 5  # 8 - 3
    assert free.loc["dgx-h100-1", "free_cpu_cores"] == 214  # 224 - 10
    assert free.loc["dgx-h100-1", "free_gpu_milli"] == 5000
    assert free.loc["dgx-h100-1", "jobs"] == 1
    assert free.loc["l4-1", "free_gpus"] == 4


def test_free_by_zone_and_capacity_class() -> None:
    # zone-a: 2 DGX racks of 1 node (16 GPUs); zone-b: 2 PCIe spot nodes (4 L4 each) of which
    # one is cordoned. 3 GPUs busy on the first DGX node.
    c = cluster_of(
        dgx_h100(2, nodes_per_rack=1, zones=["zone-a"]),
        pcie_inference(2, gpus_per_node=4, nodes_per_rack=1, zones=["zone-b"], capacity_class="spot"),
    )
    inv = c.to_inventory()
    cordoned = c.nodes[-1].name
    nodes = [n.model_copy(update={"schedulable": False}) if n.name == cordoned else n for n in inv.nodes]
    c = build_cluster(inv.model_copy(update={"nodes": nodes}))
    c = c.allocate({"job": "j", "replicas": [{"node": c.nodes[0].name, "gpus": [0, 1, 2]}]})
    by_zone = free_by(c, "zone")
    assert by_zone.loc["zone-a", "nodes"] == 2
    assert (by_zone.loc["zone-a", "gpu_count"], by_zone.loc["zone-a", "free_gpus"]) == (16, 13)
    # the cordoned node takes no work, so only one PCIe node counts
    assert by_zone.loc["zone-b", "nodes"] == 1
    assert by_zone.loc["zone-b", "free_gpus"] == 4
    by_class = free_by(c, "capacity_class")
    assert by_class.loc["spot", "free_gpus"] == 4
    assert by_class.loc["on-demand", "free_gpus"] == 13
    with pytest.raises(ValueError, match="level must be one of"):
        free_by(c, "socket")


def test_summary_counts_tainted_nodes_apart() -> None:
    # 3 CPU nodes, one tainted NoSchedule and one PreferNoSchedule (which only discourages): 1 tainted.
    taints = {
        "a": [Taint(key="gpu", value="true", effect="NoSchedule")],
        "b": [Taint(key="x", value="y", effect="PreferNoSchedule")],
    }
    nodes = [NodeSpec(name=n, cpu_cores=8, memory_gb=32, taints=taints.get(n, [])) for n in ("a", "b", "c")]
    s = summary(build_cluster(Inventory(nodes=nodes)))
    assert (s["nodes"], s["tainted_nodes"]) == (3, 1)
