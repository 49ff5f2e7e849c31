"""Several YAML documents in one file (``---`` between them), as ``kubectl apply -f`` files are written:
read as the ``v1`` ``List`` ``kubectl get -o yaml`` prints for the same objects, by every reader.

The Kueue file is the shape of Kueue's ``single-clusterqueue-setup.yaml`` (a ResourceFlavor, a
ClusterQueue, a LocalQueue, one document each); the job file a PriorityClass and a pod, as a user keeps
them together. Before, each was refused: ``expected a single document in the stream``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from placer.solver.jobs import JobValidationError, read_file
from placer.solver.jobs.queues import load_queue_configs
from placer.topology.load import load_cluster
from placer.topology.safe_load import UnsafeDocument, load_yaml

KUEUE_SETUP = """\
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: "default-flavor"
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: "cluster-queue"
spec:
  namespaceSelector: {} # match all.
  resourceGroups:
  - coveredResources: ["cpu", "memory", "nvidia.com/gpu"]
    flavors:
    - name: "default-flavor"
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        nominalQuota: 36Gi
      - name: "nvidia.com/gpu"
        nominalQuota: 4
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata:
  namespace: "default"
  name: "user-queue"
spec:
  clusterQueue: "cluster-queue"
"""

JOBS = """\
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: team-a
value: 1000
description: "team A's training"
---
# a comment-only document between objects is empty, and skipped
---
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: ml
spec:
  priorityClassName: team-a
  containers:
  - name: train
    image: nvcr.io/nvidia/pytorch:24.05-py3
    resources:
      limits:
        nvidia.com/gpu: 2
---
"""


def test_a_kueue_setup_file_of_three_documents_gives_the_local_queue_its_quota() -> None:
    configs = load_queue_configs(KUEUE_SETUP, "single-clusterqueue-setup.yaml")
    assert configs["user-queue"].config.ml_limits.max_total_gpus == 4


def test_a_job_file_of_several_documents_reads_each_object_with_the_others(tmp_path: Path) -> None:
    path = tmp_path / "train.yaml"
    path.write_text(JOBS)
    [r] = read_file(path)
    assert r.ok and r.job is not None
    # The pod's class is the PriorityClass of the same file: its value is the pod's priority.
    assert (r.job.id, r.job.priority, r.job.tasks[0].gpu.count) == ("ml/train", 1000, 2)


def test_one_document_with_empty_ones_around_it_is_that_document() -> None:
    assert load_yaml("---\nkind: Pod\napiVersion: v1\n---\n") == {"kind": "Pod", "apiVersion": "v1"}
    assert load_yaml("") is None


@pytest.mark.parametrize(
    "text",
    [
        "id: a\ntype: train\n---\nid: b\ntype: train\n",  # two OJS envelopes
        "apiVersion: v1\nkind: Pod\n---\n- 1\n- 2\n",  # a Kubernetes object, then a list
        "apiVersion: v1\nkind: Pod\n---\nkind: Job\n",  # no apiVersion in the second
    ],
)
def test_several_documents_that_are_not_all_kubernetes_objects_are_refused(text: str, tmp_path: Path) -> None:
    with pytest.raises(UnsafeDocument, match="YAML documents in one stream"):
        load_yaml(text)
    path = tmp_path / "jobs.yaml"
    path.write_text(text)
    [r] = read_file(path)  # a structured error from the job reader, no traceback
    assert not r.ok and [i.code for i in r.errors] == ["malformed"]
    assert "YAML documents in one stream" in r.errors[0].message
    with pytest.raises(JobValidationError, match="YAML documents in one stream"):
        load_queue_configs(text, "queues.yaml")


def test_a_node_file_of_several_documents_is_the_cluster_of_those_nodes(tmp_path: Path) -> None:
    nodes = json.loads((Path(__file__).parents[2] / "examples/importers/kueue_tas_nodes.json").read_text())
    path = tmp_path / "nodes.yaml"
    path.write_text(
        yaml.safe_dump_all(nodes["items"][:3])
    )  # what `kubectl get node a b c -o yaml` splits into
    cluster = load_cluster(path)
    assert [n.name for n in cluster.nodes] == [i["metadata"]["name"] for i in nodes["items"][:3]]
