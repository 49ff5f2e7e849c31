"""What the Job / JobSet / Workload reader reads of Kueue slices and refuses rather than place without, and
a JobSet child Job's pod count. Shapes from jobset's ``examples/simple/exclusive-placement.yaml`` (the
exclusive-topology annotation on the JobSet, as xpk writes it for multislice TPU training), jobset's docs
(the same annotation on a replicated Job's template) and Kueue's topology-aware-scheduling task page
(slices of a Job's pods, ``podset-slice-required-topology`` with ``podset-slice-size``: "every 2 pods on
one node").
Placements run through both engines and the checker (the ``solve`` fixture)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from placer.solver.engine import place
from placer.solver.jobs.formats.kubernetes_workloads import EXCLUSIVE_ANNOTATIONS, read_workload
from placer.solver.policy import Policy
from placer.topology import cluster_of, dgx_h100

EXCLUSIVE = "alpha.jobset.sigs.k8s.io/exclusive-topology"


def _jobset(annotations: dict[str, str] | None = None, *, completions: int | None = 3) -> dict[str, Any]:
    """jobset's exclusive-placement example, with GPUs asked for and the annotations given."""
    job_spec: dict[str, Any] = {
        "parallelism": 3,
        "backoffLimit": 10,
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "sleep",
                        "image": "busybox",
                        "command": ["sleep"],
                        "args": ["1000s"],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ]
            }
        },
    }
    if completions is not None:
        job_spec["completions"] = completions
    meta: dict[str, Any] = {"name": "exclusive-placement"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {
            "failurePolicy": {"maxRestarts": 3},
            "replicatedJobs": [{"name": "workers", "replicas": 3, "template": {"spec": job_spec}}],
        },
    }


def test_jobset_exclusive_placement_on_the_jobset_is_refused_naming_the_annotation() -> None:
    [r] = read_workload(_jobset({EXCLUSIVE: "cloud.google.com/gke-nodepool"}), "", "js.yaml")
    assert not r.ok and r.job is None
    assert [(e.code, e.path) for e in r.errors] == [("unsupported", f"metadata.annotations.{EXCLUSIVE}")]
    assert "cloud.google.com/gke-nodepool" in r.errors[0].message


@pytest.mark.parametrize("key", EXCLUSIVE_ANNOTATIONS)
def test_jobset_exclusive_placement_on_a_replicated_job_template_is_refused(key: str) -> None:
    raw = _jobset()
    raw["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {key: "true"}}
    [r] = read_workload(raw, "items[2]", "js.yaml")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", f"items[2].spec.replicatedJobs[0].template.metadata.annotations.{key}")
    ]


def test_a_jobset_without_exclusive_placement_reads_and_its_child_jobs_run_at_most_completions() -> None:
    [r] = read_workload(_jobset({"unrelated": "x"}), "", "js.yaml")
    assert r.ok and r.job is not None
    # 3 child Jobs x parallelism 3 (completions 3): 9 pods of 1 GPU.
    assert [(g.name, g.count, g.gpus_per_replica) for g in r.job.tasks] == [("workers", 9, 1)]
    [fewer] = read_workload(_jobset(completions=2), "", "js.yaml")
    # completions 2 < parallelism 3: a child Job runs 2 pods at once (as a batch/v1 Job does), 3 x 2 = 6.
    assert fewer.ok and fewer.job is not None and fewer.job.tasks[0].count == 6


def _job(annotations: dict[str, str]) -> dict[str, Any]:
    """A Kueue TAS sample Job (``tas-sample-...``) with its pod template's annotations."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "tas-sample",
            "namespace": "team-a",
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
        },
        "spec": {
            "parallelism": 4,
            "completions": 4,
            "suspend": True,
            "template": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "containers": [
                        {
                            "name": "worker",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "resources": {
                                "requests": {"nvidia.com/gpu": "2"},
                                "limits": {"nvidia.com/gpu": "2"},
                            },
                        }
                    ],
                    "restartPolicy": "OnFailure",
                },
            },
        },
    }


SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
HOST = "kubernetes.io/hostname"


def _sliced(parallelism: int, gpus: int, size: str, **more: str) -> dict[str, Any]:
    """Kueue's TAS sample: a Job whose pods go in slices of ``size``, each slice on one node."""
    raw = _job({SLICE_TOPOLOGY: HOST, SLICE_SIZE: size, **more})
    raw["spec"]["parallelism"] = raw["spec"]["completions"] = parallelism
    for c in raw["spec"]["template"]["spec"]["containers"]:
        c["resources"] = {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "4", "memory": "16Gi"}}
    return raw


def test_hostname_slices_are_read_as_one_replica_per_slice_holding_its_pods() -> None:
    raw = _sliced(
        4, 2, "2", **{"kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block"}
    )
    [r] = read_workload(raw, "", "job.yaml")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    # 4 pods of (2 GPUs, 4 cores, 16 GiB) in slices of 2: 2 replicas of (4 GPUs, 8 cores, 32 GiB).
    assert (g.count, g.gpus_per_replica, g.cpu_cores, g.memory_gb) == (2, 4, 8.0, 32.0)
    assert r.job.total_gpus == 8  # the pods' GPUs, neither more nor fewer
    assert r.job.placement.topology_scope == "block"
    assert r.job.metadata["kubernetes"]["slices"] == {"default": {"topology": HOST, "size": 2, "pods": 4}}


def _three_free_per_node() -> Any:
    """Two DGX H100 with 5 GPUs busy on each: 3 free GPUs a node."""
    from datetime import timedelta

    from tests.solver.conftest import NOW

    busy = [
        {
            "job": f"busy-{n}",
            "priority_class": "reserved",
            "started_at": NOW - timedelta(hours=1),
            "replicas": [{"node": f"dgx-h100-{n}", "gpus": [0, 1, 2, 3, 4]}],
        }
        for n in (1, 2)
    ]
    return cluster_of(dgx_h100(2)).with_allocations(busy)


def test_each_slice_lands_on_one_node_so_no_node_holds_a_part_of_one(solve: Any) -> None:
    # 4 one-GPU pods in slices of 2, on nodes with 3 free GPUs each: Kueue puts 2 and 2 (a node can hold one
    # slice and a GPU to spare); 3 + 1, what packing the pods one by one gives, cuts a slice in two.
    [r] = read_workload(_sliced(4, 1, "2"), "", "job.yaml")
    d = solve([r], _three_free_per_node())
    [p] = d.placements
    per_node: dict[str, int] = {}
    for rep in p.replicas:
        per_node[rep.node] = per_node.get(rep.node, 0) + len(rep.gpus)
    assert sorted(per_node.values()) == [2, 2]


def test_slices_too_big_for_any_node_wait() -> None:
    # Slices of 4 one-GPU pods need 4 free GPUs on one node; there are 3 on each: the job waits, although
    # its 4 pods alone would fit in the 6 free GPUs.
    [r] = read_workload(_sliced(4, 1, "4"), "", "job.yaml")
    d = place([r], _three_free_per_node(), Policy(engine="greedy"))
    assert [p.job for p in d.pending] == ["team-a/tas-sample"] and not d.placements


@pytest.mark.parametrize(
    ("annotations", "code", "key", "words"),
    [
        (
            {SLICE_TOPOLOGY: "cloud.google.com/gce-topology-subblock", SLICE_SIZE: "2"},
            "unsupported",
            SLICE_TOPOLOGY,
            "only kubernetes.io/hostname",
        ),
        ({SLICE_TOPOLOGY: HOST}, "required", SLICE_SIZE, "must be set"),
        ({SLICE_SIZE: "2"}, "required", SLICE_TOPOLOGY, "needs a slice topology"),
        ({SLICE_TOPOLOGY: HOST, SLICE_SIZE: "two"}, "range", SLICE_SIZE, "whole number"),
        ({SLICE_TOPOLOGY: HOST, SLICE_SIZE: "8"}, "range", SLICE_SIZE, "pod count 4"),
        ({SLICE_TOPOLOGY: HOST, SLICE_SIZE: "3"}, "range", SLICE_SIZE, "do not divide"),
        (
            {"kueue.x-k8s.io/podset-slice-required-topology-constraints": '[{"topology":"x","size":2}]'},
            "unsupported",
            "kueue.x-k8s.io/podset-slice-required-topology-constraints",
            "multi-layer",
        ),
    ],
)
def test_slice_requests_placer_cannot_keep_are_refused_naming_the_annotation(
    annotations: dict[str, str], code: str, key: str, words: str
) -> None:
    [r] = read_workload(_job(annotations), "", "job.yaml")  # 4 pods
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [(code, f"spec.template.metadata.annotations.{key}")]
    assert words in r.errors[0].message


def _workload(request: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team-a"},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "topologyRequest": request,
                    "template": copy.deepcopy(_job({})["spec"]["template"]),
                }
            ],
        },
    }


def test_a_workload_pod_set_reads_its_slices_from_the_topology_request() -> None:
    request = {"required": "cloud.google.com/gce-topology-block", "podSetSliceRequiredTopology": HOST}
    [r] = read_workload(_workload({**request, "podSetSliceSize": 2}), "", "wl.yaml")
    assert r.ok and r.job is not None
    assert [(g.count, g.gpus_per_replica) for g in r.job.tasks] == [(2, 4)]
    # A problem is named at the request's own field, not at an annotation the Workload does not have.
    [bad] = read_workload(_workload({**request, "podSetSliceSize": 3}), "", "wl.yaml")
    assert [(e.code, e.path) for e in bad.errors] == [
        ("range", "spec.podSets[0].topologyRequest.podSetSliceSize")
    ]
    rack = {"podSetSliceRequiredTopology": "cloud.google.com/gce-topology-subblock", "podSetSliceSize": 2}
    [refused] = read_workload(_workload(rack), "", "wl.yaml")
    assert [(e.code, e.path) for e in refused.errors] == [
        ("unsupported", "spec.podSets[0].topologyRequest.podSetSliceRequiredTopology")
    ]


@pytest.mark.parametrize(
    "annotations",
    [{"kueue.x-k8s.io/podset-unconstrained-topology": "true"}, {"kueue.x-k8s.io/podset-group-name": "g"}],
)
def test_annotations_that_ask_nothing_more_are_read(annotations: dict[str, str]) -> None:
    [r] = read_workload(_job(annotations), "", "job.yaml")
    assert r.ok and r.job is not None and r.job.tasks[0].count == 4


def test_a_refused_jobset_is_rejected_by_place_and_the_rest_of_the_batch_runs() -> None:
    refused = read_workload(_jobset({EXCLUSIVE: "cloud.google.com/gke-nodepool"}), "items[0]", "js.yaml")
    fine = read_workload(_job({}), "items[1]", "js.yaml")
    d = place([*refused, *fine], cluster_of(dgx_h100(2)), Policy(engine="greedy"))
    [r] = d.rejected
    assert r.job == "default/exclusive-placement"
    path = f"items[0].metadata.annotations.{EXCLUSIVE}"
    assert [(e["code"], e["path"]) for e in r.errors] == [("unsupported", path)]
    assert [p.job for p in d.placements] == ["team-a/tas-sample"]
