"""Node labels read as topology levels (issue "Kubernetes-native", item 2): the clouds' own labels by
default, a mapping on the command line, or a Kueue ``Topology`` object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placer.cli import main
from placer.topology.importers.kubernetes import kueue_topology_levels, parse_kubernetes

REPO = Path(__file__).resolve().parents[2]


def _node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


#: The rack of each node of :func:`_nodes`.
RACKS = {"n1": "r1", "n2": "r1", "n3": "r2", "n4": "r2"}


def _nodes(label: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [_node(n, {label: r}) for n, r in RACKS.items()]}


@pytest.fixture
def site_nodes(tmp_path: Path) -> Path:
    """A node list whose racks are the site's own label, ``example.com/rack``."""
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps(_nodes("example.com/rack")))
    return nodes


def test_eks_network_layers_are_known_by_default() -> None:
    inv = parse_kubernetes(_nodes("topology.k8s.aws/network-node-layer-3"), source="n.json")
    assert [n.rack for n in inv.nodes] == ["r1", "r1", "r2", "r2"]


def test_coreweave_racks_and_superpods_are_known_by_default() -> None:
    # CoreWeave's InfiniBand labels (docs.coreweave.com, "InfiniBand Labels"): the physical rack and the
    # superpod; AKS has no such labels, so nothing is assumed for it.
    inv = parse_kubernetes(_nodes("node.coreweave.cloud/rack"), source="n.json")
    assert [n.rack for n in inv.nodes] == ["r1", "r1", "r2", "r2"]
    inv = parse_kubernetes(_nodes("ib.coreweave.cloud/superpod"), source="n.json")
    assert [n.block for n in inv.nodes] == ["r1", "r1", "r2", "r2"]
    inv = parse_kubernetes(_nodes("kubernetes.azure.com/agentpool"), source="n.json")
    assert [(n.rack, n.block) for n in inv.nodes] == [(None, None)] * 4


def test_a_mapping_names_a_sites_own_labels() -> None:
    assert [n.rack for n in parse_kubernetes(_nodes("example.com/rack"), source="n.json").nodes] == [None] * 4
    inv = parse_kubernetes(_nodes("example.com/rack"), source="n.json", levels={"example.com/rack": "rack"})
    assert [n.rack for n in inv.nodes] == ["r1", "r1", "r2", "r2"]


def test_a_kueue_topology_maps_its_levels_from_the_node_up() -> None:
    topo = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Topology",
        "metadata": {"name": "default"},
        "spec": {
            "levels": [
                {"nodeLabel": "example.com/block"},
                {"nodeLabel": "example.com/rack"},
                {"nodeLabel": "kubernetes.io/hostname"},
            ]
        },
    }
    assert kueue_topology_levels(topo) == {"example.com/rack": "rack", "example.com/block": "block"}
    with pytest.raises(ValueError):
        kueue_topology_levels(
            {"kind": "Topology", "spec": {"levels": [{"nodeLabel": f"l{i}"} for i in range(5)]}}
        )


def test_place_keeps_a_rack_scoped_job_in_a_rack_named_by_the_topology(
    tmp_path: Path, site_nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = site_nodes
    topo = tmp_path / "topology.json"
    topo.write_text(
        json.dumps(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "Topology",
                "spec": {
                    "levels": [{"nodeLabel": "example.com/rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
                },
            }
        )
    )
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {
            "parallelism": 2,
            "template": {
                "metadata": {
                    "annotations": {
                        "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-subblock"
                    }
                },
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            },
        },
    }
    jobs = tmp_path / "job.json"
    jobs.write_text(json.dumps(job))
    rc = main(
        ["place", "--cluster", str(nodes), "--topology-labels", f"@{topo}", "--jobs", str(jobs), "--json"]
    )
    decision = json.loads(capsys.readouterr().out)
    assert rc == 0
    [p] = decision["placements"]
    assert len({RACKS[r["node"]] for r in p["replicas"]}) == 1 and len(p["replicas"]) == 2


def test_bad_mappings_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "place",
            "--cluster",
            str(REPO / "examples/importers/kubernetes_nodes.json"),
            "--topology-labels",
            "example.com/x=planet",
            "--jobs",
            str(REPO / "examples/jobs/batch.json"),
        ]
    )
    assert rc == 2 and "LABEL=LEVEL" in capsys.readouterr().err


def _site_job(annotations: dict[str, str], parallelism: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "t", "namespace": "ml"},
        "spec": {
            "parallelism": parallelism,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            },
        },
    }


def test_a_kueue_job_may_name_the_sites_own_label_that_the_mapping_gives(
    tmp_path: Path, site_nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The site's rack label in the job itself (Kueue's annotation names the label its Topology lists):
    # refused without the mapping, since placer would not know which nodes share it; kept in one rack with
    # it, by place and by validate alike.
    jobs = tmp_path / "job.json"
    jobs.write_text(json.dumps(_site_job({"kueue.x-k8s.io/podset-required-topology": "example.com/rack"})))
    assert main(["validate", str(jobs), "--json"]) == 1
    [out] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    [err] = out["errors"]
    assert err["code"] == "unsupported" and "--topology-labels" in err["message"]
    assert main(["validate", str(jobs), "--topology-labels", "example.com/rack=rack", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["job"]["placement"]["topology_scope"] == "rack"
    rc = main(
        [
            "place",
            "--cluster",
            str(site_nodes),
            "--topology-labels",
            "example.com/rack=rack",
            "--jobs",
            str(jobs),
            "--json",
        ]
    )
    decision = json.loads(capsys.readouterr().out)
    assert rc == 0
    [p] = decision["placements"]
    assert len({RACKS[r["node"]] for r in p["replicas"]}) == 1 and len(p["replicas"]) == 2


def test_kueue_slices_on_the_sites_own_rack_label(
    tmp_path: Path, site_nodes: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Four 8-GPU pods in slices of 2 per rack on two racks of two nodes. The site's label is read as the
    # rack level, so the group keeps its 4 pods under a rack slices rule (validate), and they are placed
    # 2 + 2 (the only placement here; what it shows is that the job is read and placed at all).
    annotations = {
        "kueue.x-k8s.io/podset-slice-required-topology": "example.com/rack",
        "kueue.x-k8s.io/podset-slice-size": "2",
    }
    jobs = tmp_path / "job.json"
    jobs.write_text(json.dumps(_site_job(annotations, parallelism=4)))
    assert main(["validate", str(jobs), "--topology-labels", "example.com/rack=rack", "--json"]) == 0
    [group] = json.loads(capsys.readouterr().out)["job"]["tasks"]
    assert (group["count"], group["slices"]) == (4, {"level": "rack", "size": 2, "exclusive": False})
    args = ["place", "--cluster", str(site_nodes), "--topology-labels", "example.com/rack=rack"]
    assert main([*args, "--jobs", str(jobs), "--json"]) == 0
    [p] = json.loads(capsys.readouterr().out)["placements"]
    per: dict[str, int] = {}
    for r in p["replicas"]:
        per[RACKS[r["node"]]] = per.get(RACKS[r["node"]], 0) + 1
    assert per == {"r1": 2, "r2": 2}
