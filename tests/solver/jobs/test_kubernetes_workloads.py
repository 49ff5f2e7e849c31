"""What the Job / JobSet / Workload reader refuses rather than place without, and a JobSet child Job's pod
count. Shapes from jobset's ``examples/simple/exclusive-placement.yaml`` (the exclusive-topology
annotation on the JobSet, as xpk writes it for multislice TPU training), jobset's docs (the same
annotation on a replicated Job's template) and Kueue's topology-aware-scheduling task page (slices of a
Job's pods, ``podset-slice-required-topology`` with ``podset-slice-size``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from placer.solver.engine import place
from placer.solver.jobs.formats.kubernetes_workloads import (
    EXCLUSIVE_ANNOTATIONS,
    SLICE_ANNOTATIONS,
    read_workload,
)
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


def test_kueue_topology_slices_are_refused_naming_each_annotation() -> None:
    raw = _job(
        {
            "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block",
            "kueue.x-k8s.io/podset-slice-required-topology": "kubernetes.io/hostname",
            "kueue.x-k8s.io/podset-slice-size": "2",
        }
    )
    [r] = read_workload(raw, "", "job.yaml")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", f"spec.template.metadata.annotations.{k}") for k in SLICE_ANNOTATIONS[:2]
    ]


def test_a_workload_pod_set_asking_for_slices_is_refused() -> None:
    raw = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "team-a"},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "topologyRequest": {
                        "required": "cloud.google.com/gce-topology-block",
                        "podSetSliceRequiredTopology": "kubernetes.io/hostname",
                        "podSetSliceSize": 2,
                    },
                    "template": copy.deepcopy(_job({})["spec"]["template"]),
                }
            ],
        },
    }
    [r] = read_workload(raw, "", "wl.yaml")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", "spec.podSets[0].topologyRequest.podSetSliceRequiredTopology"),
        ("unsupported", "spec.podSets[0].topologyRequest.podSetSliceSize"),
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
