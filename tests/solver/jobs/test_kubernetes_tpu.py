"""GKE TPU pods and multislice JobSets, read and placed on the GKE node list of ``examples/importers``
(a v5e 4x4 slice of four 4-chip hosts in node pool ``tpu-v5e-4x4``, which the importer makes one fixed
slice named after the pool, and two single-host 2x4 machines of 8 chips, each its own slice named after
the node).

Shapes from GKE's TPU pages: a pod asks for ``google.com/tpu`` in its limits and selects
``cloud.google.com/gke-tpu-accelerator`` and ``cloud.google.com/gke-tpu-topology``; a multi-host slice
runs one pod per host, each asking for its host's chips, in a JobSet whose ``exclusive-topology``
annotation names ``cloud.google.com/gke-nodepool`` (the multislice example). Until this reader read
them, every such pod was refused (``chip_count`` is not a field of a TPU demand). Placements run through
both engines and the checker (the ``solve`` fixture)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from placer.solver.jobs.formats.kubernetes_pods import read_pod
from placer.solver.jobs.formats.kubernetes_workloads import read_workload
from placer.topology.load import load_cluster

NODES = Path(__file__).resolve().parents[3] / "examples" / "importers" / "kubernetes_nodes.json"
ACCEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"


def _pod(chips: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "tpu-pod", "namespace": "ml"},
        "spec": {
            "nodeSelector": selector,
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.10",
                    "resources": {"requests": {"google.com/tpu": chips}, "limits": {"google.com/tpu": chips}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


def _multislice(slices: int, topology: str = "4x4", chips: str = "4", pods: int = 4) -> dict[str, Any]:
    """GKE's multislice JobSet: ``slices`` child Jobs of ``pods`` pods, each pod one host's ``chips``."""
    pod = {
        "hostNetwork": True,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "nodeSelector": {ACCEL: "tpu-v5-lite-podslice", TOPOLOGY: topology},
        "containers": [
            {
                "name": "jax-tpu",
                "image": "python:3.10",
                "ports": [{"containerPort": 8471}, {"containerPort": 8080}],
                "securityContext": {"privileged": True},
                "resources": {"limits": {"google.com/tpu": chips}},
            }
        ],
    }
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "multislice-job",
            "namespace": "ml",
            "annotations": {"alpha.jobset.sigs.k8s.io/exclusive-topology": "cloud.google.com/gke-nodepool"},
        },
        "spec": {
            "failurePolicy": {"maxRestarts": 4},
            "replicatedJobs": [
                {
                    "name": "slice",
                    "replicas": slices,
                    "template": {
                        "spec": {
                            "parallelism": pods,
                            "completions": pods,
                            "backoffLimit": 0,
                            "template": {"spec": pod},
                        }
                    },
                }
            ],
        },
    }


def test_a_single_host_tpu_pod_is_one_slice_of_its_selected_generation_and_shape(solve: Any) -> None:
    r = read_pod(_pod("8", {ACCEL: "tpu-v5-lite-podslice", TOPOLOGY: "2x4"}), "", "p.json")
    assert r.ok and r.job is not None
    [group] = r.job.tasks
    assert group.count == 1 and group.tpu is not None
    assert (group.tpu.type, group.tpu.topology, group.tpu.chip_count) == ("v5e", (2, 4), 8)
    d = solve([r], load_cluster(NODES))
    [p] = d.placements
    [rep] = p.replicas
    assert rep.tpu_pod in ("gke-tpu-v5e-2x4-1", "gke-tpu-v5e-2x4-2") and len(rep.tpu_chips) == 8


def test_without_a_topology_the_pod_asks_for_its_chips_only() -> None:
    r = read_pod(_pod("4", {ACCEL: "tpu-v5-lite-podslice"}), "", "p.json")
    assert r.ok and r.job is not None and r.job.tasks[0].tpu is not None
    tpu = r.job.tasks[0].tpu
    assert (tpu.type, tpu.topology, tpu.chips) == ("v5e", None, 4)


def test_a_multislice_jobset_is_one_slice_per_child_job_each_on_its_own_node_pool(solve: Any) -> None:
    [r] = read_workload(_multislice(1), "", "js.json")
    assert r.ok and r.job is not None, r.errors
    [group] = r.job.tasks
    # four pods of four chips make one 16-chip 4x4 slice
    assert group.count == 1 and group.tpu is not None and group.tpu.topology == (4, 4)
    d = solve([r], load_cluster(NODES))
    [p] = d.placements
    [rep] = p.replicas
    assert rep.tpu_pod == "tpu-v5e-4x4" and len(rep.tpu_chips) == 16


def test_two_slices_wait_where_the_cluster_has_one(solve: Any) -> None:
    [r] = read_workload(_multislice(2), "", "js.json")
    assert r.ok and r.job is not None and r.job.tasks[0].count == 2
    d = solve([r], load_cluster(NODES))
    assert not d.placements and [q.job for q in d.pending] == ["ml/multislice-job"]


def test_a_child_job_that_is_not_one_slice_is_refused_naming_the_annotation() -> None:
    # Eight pods of four chips per child Job: two 4x4 slices, but a node pool is one slice.
    [r] = read_workload(_multislice(1, pods=8), "", "js.json")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", "metadata.annotations.alpha.jobset.sigs.k8s.io/exclusive-topology")
    ]


@pytest.mark.parametrize(
    ("chips", "topology", "code", "words"),
    [
        ("4", "4x4", "unsupported", "lone pod"),  # one host of a multi-host slice: runs only with the others
        ("3", "4x4", "conflict", "not one host"),  # 16 chips are not hosts of 3
        ("32", "4x4", "conflict", "not one host"),  # more chips than the slice has
        ("4", "4by4", "format", "2 or 3 positive sizes"),
        ("4", "0x4", "format", "2 or 3 positive sizes"),
    ],
)
def test_a_pod_that_is_not_whole_slices_is_refused_naming_the_topology(
    chips: str, topology: str, code: str, words: str
) -> None:
    r = read_pod(_pod(chips, {ACCEL: "tpu-v5-lite-podslice", TOPOLOGY: topology}), "", "p.json")
    assert not r.ok and r.job is None
    [e] = r.errors
    assert e.code == code and e.path == f"spec.nodeSelector[{TOPOLOGY!r}]" and words in e.message


def test_an_accelerator_placer_does_not_know_still_holds_the_pod_to_its_nodes(solve: Any) -> None:
    # No generation to set, but the selector is a required rule: no TPU host carries that label.
    r = read_pod(_pod("8", {ACCEL: "tpu-v99-podslice", TOPOLOGY: "2x4"}), "", "p.json")
    assert r.ok and r.job is not None and r.job.tasks[0].tpu is not None
    assert r.job.tasks[0].tpu.type is None
    d = solve([r], load_cluster(NODES))
    assert not d.placements


def test_the_pods_json_of_a_gang_reads_each_pod_of_a_multi_host_slice_as_refused_not_dropped() -> None:
    # kubectl get pods of a multislice job: each pod alone is one host of a slice, refused with the reason.
    results = []
    for i in range(4):
        pod = _pod("4", {ACCEL: "tpu-v5-lite-podslice", TOPOLOGY: "4x4"})
        pod["metadata"]["name"] = f"multislice-job-slice-0-{i}"
        results.append(read_pod(pod, f"items[{i}]", "pods.json"))
    assert [r.ok for r in results] == [False] * 4
    assert all("read the JobSet or Workload" in r.errors[0].message for r in results)


def test_a_kueue_workload_of_one_host_pods_is_read_as_whole_slices(solve: Any) -> None:
    # The Workload Kueue makes for a multislice JobSet: one pod set of 4 pods, each one 4-chip host of a
    # 4x4 slice; read as one replica of the slice, placed on the 4x4 node pool.
    pod = _pod("4", {ACCEL: "tpu-v5-lite-podslice", TOPOLOGY: "4x4"})["spec"]
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "jobset-multislice-job-5f2a1", "namespace": "ml"},
        "spec": {
            "queueName": "tpu-queue",
            "podSets": [{"name": "slice", "count": 4, "template": {"spec": pod}}],
        },
    }
    [r] = read_workload(workload, "", "wl.json")
    assert r.ok and r.job is not None, r.errors
    [group] = r.job.tasks
    assert group.count == 1 and group.tpu is not None and group.tpu.topology == (4, 4)
    [p] = solve([r], load_cluster(NODES)).placements
    assert [rep.tpu_pod for rep in p.replicas] == ["tpu-v5e-4x4"]
