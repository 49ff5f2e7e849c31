"""LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``): each group — its leader and ``size - 1`` workers — is
one gang, as Kueue admits an LWS group, named as LWS names the group's leader pod (``<name>-<i>``).

Shapes from the LWS repository's examples: ``docs/examples/vllm/GPU/lws.yaml`` (vLLM multi-node serving,
2 groups of a leader and a worker of 8 GPUs each), ``docs/examples/sample/lws-multi-template.yaml`` (a
leader template of its own), ``docs/examples/sample/lws-exclusive-placement.yaml`` and
``docs/examples/leaderworkerset/topology-aware-scheduling/vllm-kueue.yaml`` (Kueue queue and required
topology). Placements run through both engines and the checker (the ``solve`` fixture)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from placer.solver.jobs import read_file, read_object
from placer.topology import cluster_of, dgx_h100


def _vllm(replicas: int = 2, size: int = 2) -> dict[str, Any]:
    def template(name: str) -> dict[str, Any]:
        return {
            "spec": {
                "containers": [
                    {
                        "name": name,
                        "image": "vllm/vllm-openai:v0.8.5",
                        "resources": {
                            "limits": {
                                "nvidia.com/gpu": "8",
                                "memory": "1124Gi",
                                "ephemeral-storage": "800Gi",
                            },
                            "requests": {"ephemeral-storage": "800Gi", "cpu": 125},
                        },
                    }
                ]
            }
        }

    leader = template("vllm-leader")
    leader["metadata"] = {"labels": {"role": "leader"}}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "vllm"},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": leader,
                "workerTemplate": template("vllm-worker"),
            },
        },
    }


def test_each_group_is_a_gang_of_its_leader_and_workers() -> None:
    results = read_object(_vllm(), source="lws.yaml")
    assert [r.id for r in results] == ["default/vllm-0", "default/vllm-1"]
    for r in results:
        assert r.ok and r.job is not None
        assert [(g.name, g.count, g.gpu.count if g.gpu else 0) for g in r.job.tasks] == [
            ("leader", 1, 8),
            ("worker", 1, 8),
        ]
        assert r.job.tasks[0].cpu_cores == 125 and r.job.tasks[0].memory_gb == 1124


def test_a_group_of_one_is_its_leader_and_the_worker_template_serves_without_a_leader_template() -> None:
    raw = _vllm(replicas=1, size=1)
    [r] = read_object(raw, source="lws.yaml")
    assert [(g.name, g.count) for g in r.job.tasks] == [("leader", 1)]  # type: ignore[union-attr]
    # lws-multi-template.yaml's counterpart, without a leader template: 4 pods of the worker template.
    del raw["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    raw["spec"]["leaderWorkerTemplate"]["size"] = 4
    [r] = read_object(raw, source="lws.yaml")
    assert [(g.name, g.count) for g in r.job.tasks] == [("leader", 1), ("worker", 3)]  # type: ignore[union-attr]


def test_exclusive_placement_is_refused_naming_the_annotation() -> None:
    raw = _vllm()
    key = "leaderworkerset.sigs.k8s.io/exclusive-topology"
    raw["metadata"]["annotations"] = {key: "cloud.google.com/gke-nodepool"}
    results = read_object(raw, source="lws.yaml")
    assert [(e.code, e.path) for r in results for e in r.errors] == [
        ("unsupported", f"metadata.annotations.{key}")
    ]


def test_kueue_queue_and_required_topology_reach_every_group() -> None:
    raw = _vllm(replicas=1)
    raw["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "default"}
    for t in ("leaderTemplate", "workerTemplate"):
        meta = raw["spec"]["leaderWorkerTemplate"][t].setdefault("metadata", {})
        meta["annotations"] = {
            "kueue.x-k8s.io/podset-group-name": "vllm-multi-host",
            "kueue.x-k8s.io/podset-required-topology": "cloud.google.com/gce-topology-block",
        }
    [r] = read_object(raw, source="lws.yaml")
    assert r.job is not None and (r.job.queue, r.job.placement.topology_scope) == ("default", "block")


def test_groups_already_created_and_zero_groups_are_refused() -> None:
    created = _vllm()
    created["status"] = {"replicas": 2, "readyReplicas": 2}
    [r] = read_object(created, source="lws.yaml")
    assert [(e.code, e.path) for e in r.errors] == [("conflict", "status.replicas")]
    none = copy.deepcopy(_vllm(replicas=0))
    [r] = read_object(none, source="lws.yaml")
    assert [(e.code, e.path) for e in r.errors] == [("range", "spec.replicas")]


def test_a_group_is_placed_whole_or_waits(solve: Any) -> None:
    """Three idle DGX: the first group's leader and worker take two of them; the second group, two
    8-GPU pods with one node left, waits whole rather than start its leader alone."""
    results = read_object(_vllm(), source="lws.yaml")
    d = solve(results, cluster_of(dgx_h100(3)))
    assert [p.job for p in d.placements] == ["default/vllm-0"]
    assert len({r.node for r in d.placements[0].replicas}) == 2
    assert [p.job for p in d.pending] == ["default/vllm-1"]


def test_the_fixture_list_reads_classes_an_lws_and_a_pod_together() -> None:
    """``tests/fixtures/kubernetes/lws_priorities.json`` (also a seed of the hostile-input fuzz): the LWS's
    Kueue label gives each group its WorkloadPriorityClass's value, the pod its PriorityClass's value and
    preemption policy."""
    path = Path(__file__).resolve().parents[2] / "fixtures" / "kubernetes" / "lws_priorities.json"
    got = {r.id: r.job for r in read_file(path)}
    assert sorted(got) == ["ml/sweep-0", "serving/vllm-0", "serving/vllm-1"]
    assert [got[k].priority for k in ("serving/vllm-0", "serving/vllm-1")] == [10000, 10000]  # type: ignore[union-attr]
    assert (got["ml/sweep-0"].priority, got["ml/sweep-0"].may_preempt) == (-10, False)  # type: ignore[union-attr]
