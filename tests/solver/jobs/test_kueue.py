"""Kueue ClusterQueue GPU quotas as placer queue budgets (``solver/jobs/kueue.py``).

The objects have the shape Kueue's own samples give them (``kueue.x-k8s.io/v1beta1``; ``nominalQuota``
as a number or a quantity string), in the ``List`` that ``kubectl get clusterqueues,localqueues -A -o
json`` prints. The placement test runs on the shipped GKE-style node list and pending pods, both engines,
through the checker (which keeps the same budget ledger).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from placer.solver.jobs import JobValidationError, read_file
from placer.solver.jobs.queues import load_queue_configs
from placer.topology.load import load_cluster
from tests.solver.conftest import Solve, nodes_of, pending_reason

REPO = Path(__file__).resolve().parents[3]
NODES = REPO / "examples" / "importers" / "kubernetes_nodes.json"
PODS = REPO / "tests" / "fixtures" / "kubernetes" / "pending_pods.json"


def _kueue(gpus: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "h100"}},
            {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor", "metadata": {"name": "gb200"}},
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ClusterQueue",
                "metadata": {"name": "team-a-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": "h100",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": 64},
                                        {"name": "memory", "nominalQuota": "512Gi"},
                                        {"name": "nvidia.com/gpu", "nominalQuota": gpus},
                                    ],
                                },
                                {
                                    "name": "gb200",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": 0},
                                        {"name": "memory", "nominalQuota": 0},
                                        {"name": "nvidia.com/gpu", "nominalQuota": "0"},
                                    ],
                                },
                            ],
                        }
                    ],
                },
            },
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {"namespace": "ml", "name": "team-a"},
                "spec": {"clusterQueue": "team-a-cq"},
            },
        ],
    }


def test_each_local_queue_gets_its_cluster_queues_gpu_quota() -> None:
    queues = load_queue_configs(_kueue("12"))
    assert list(queues) == ["team-a"]
    assert queues["team-a"].config.ml_limits.max_total_gpus == 12 + 0  # summed over the two flavors


def test_the_pod_over_its_queues_quota_waits_and_fits_when_the_quota_allows(solve: Solve) -> None:
    # ml/h100-train (queue team-a) asks 8 H100: a quota of 4 keeps it pending on its budget, 8 lets it in.
    cluster = load_cluster(NODES)
    tight = solve(read_file(PODS), cluster, queues=load_queue_configs(_kueue(4)))
    assert (pending_reason(tight, "ml/h100-train") or "").startswith("QUEUE_BUDGET"), pending_reason(
        tight, "ml/h100-train"
    )
    roomy = solve(read_file(PODS), cluster, queues=load_queue_configs(_kueue(8)))
    assert nodes_of(roomy, "ml/h100-train") == ["gke-a3-h100-node-1"]


def _refused(doc: dict[str, Any]) -> str:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(doc, source="kueue.json")
    return str(e.value)


def _with_local_queue(namespace: str, name: str) -> dict[str, Any]:
    doc = copy.deepcopy(_kueue(8))
    doc["items"].append(
        {
            "kind": "LocalQueue",
            "metadata": {"namespace": namespace, "name": name},
            "spec": {"clusterQueue": "team-a-cq"},
        }
    )
    return doc


def test_what_placer_cannot_express_is_refused_naming_it() -> None:
    shared = _refused(_with_local_queue("ml", "team-b"))
    assert "ClusterQueue 'team-a-cq' is shared by LocalQueues team-a, team-b" in shared
    assert "LocalQueue 'team-a' exists in namespaces ml, other" in _refused(
        _with_local_queue("other", "team-a")
    )
    orphan = copy.deepcopy(_kueue(8))
    orphan["items"][-1]["spec"]["clusterQueue"] = "nope"
    assert "no ClusterQueue 'nope' in the document" in _refused(orphan)
    assert "not a Kubernetes quantity" in _refused(_kueue("lots"))
    assert "a GPU quota is a whole number" in _refused(_kueue("1.5"))
