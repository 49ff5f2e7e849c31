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
from placer.solver.jobs.model import Slices
from placer.solver.jobs.options import ReadOptions
from placer.topology import cluster_of, dgx_h100
from tests.solver.jobs.racks import racks_with_one_busy_node


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


EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"
RACK = "cloud.google.com/gce-topology-subblock"


def _sample(label: str) -> dict[str, Any]:
    """``docs/examples/sample/lws-exclusive-placement.yaml``: 3 groups of 4 pods of one template, each group
    alone in its domain of ``label`` (the example: ``cloud.google.com/gke-nodepool``), 2 GPUs a pod."""
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "leaderworkerset-sample", "annotations": {EXCLUSIVE: label}},
        "spec": {
            "replicas": 3,
            "leaderWorkerTemplate": {
                "size": 4,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "workerTemplate": {
                    "spec": {
                        "containers": [
                            {
                                "name": "nginx",
                                "image": "nginx:1.14.2",
                                "resources": {
                                    "limits": {"cpu": "100m", "nvidia.com/gpu": "2"},
                                    "requests": {"cpu": "50m"},
                                },
                                "ports": [{"containerPort": 8080}],
                            }
                        ]
                    }
                },
            },
        },
    }


def test_exclusive_placement_reads_each_group_as_one_slice_alone_in_its_domain() -> None:
    results = read_object(_sample(RACK), source="lws.yaml")
    assert [r.id for r in results] == [f"default/leaderworkerset-sample-{i}" for i in range(3)]
    for r in results:
        assert r.ok and r.job is not None
        # One task group of the group's 4 pods (the leader first), a single slice of 4 alone in its rack.
        [g] = r.job.tasks
        assert (g.name, g.count, g.slices) == ("group", 4, Slices(level="rack", size=4, exclusive=True))
        assert r.job.metadata["kubernetes"]["exclusive_topology"] == {"group": RACK}


def test_exclusive_placement_on_the_hostname_gives_each_group_a_node_it_owns() -> None:
    [r, *_] = read_object(_sample("kubernetes.io/hostname"), source="lws.yaml")
    assert r.job is not None
    [g] = r.job.tasks  # one replica holding the 4 pods' 8 GPUs, its node owned whole
    assert (g.count, g.gpus_per_replica, g.exclusive, g.slices) == (1, 8, True, None)


def test_exclusive_placement_on_a_label_placer_does_not_know_is_refused_or_read_as_the_site_maps_it() -> None:
    nodepool = "cloud.google.com/gke-nodepool"  # the LWS example's label
    results = read_object(_sample(nodepool), source="lws.yaml")
    assert {(e.code, e.path) for r in results for e in r.errors} == {
        ("unsupported", f"metadata.annotations.{EXCLUSIVE}")
    }
    assert "--topology-labels" in results[0].errors[0].message
    mapped = read_object(
        _sample(nodepool), source="lws.yaml", options=ReadOptions(topology_levels={nodepool: "block"})
    )
    assert [r.job.tasks[0].slices for r in mapped] == [Slices(level="block", size=4, exclusive=True)] * 3  # type: ignore[union-attr]


def test_a_leader_template_that_places_like_the_workers_is_read_one_that_does_not_is_refused() -> None:
    # vLLM's example: the leader template differs in its labels and command, not in what placer places by.
    raw = _vllm(replicas=1, size=2)
    raw["metadata"]["annotations"] = {EXCLUSIVE: RACK}
    [r] = read_object(raw, source="lws.yaml")
    assert r.ok and r.job is not None
    assert [(g.name, g.count, g.gpus_per_replica) for g in r.job.tasks] == [("group", 2, 8)]
    # A leader asking for no GPU cannot share one task group with 8-GPU workers: refused, not split.
    lt = raw["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
    del lt["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    [r] = read_object(raw, source="lws.yaml")
    assert [(e.code, e.path) for e in r.errors] == [("unsupported", f"metadata.annotations.{EXCLUSIVE}")]


def test_subgroup_exclusive_placement_is_refused_naming_the_annotation() -> None:
    key = "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology"
    raw = _vllm()
    raw["metadata"]["annotations"] = {key: RACK}
    results = read_object(raw, source="lws.yaml")
    assert [(e.code, e.path) for r in results for e in r.errors] == [
        ("unsupported", f"metadata.annotations.{key}")
    ]


def test_each_group_runs_in_a_rack_of_its_own_and_nothing_else_goes_there(solve: Any) -> None:
    """Three racks of two DGX H100, one node of rack 1 busy; 3 groups of 4 pods of 2 GPUs (8 GPUs a
    group) and a plain pod of 1 GPU. Rack 1's free node would hold a group, but not alone: two groups take
    racks 2 and 3, the third waits whole, and the pod goes to rack 1, beside no group."""
    groups = read_object(_sample(RACK), source="lws.yaml")
    pod = read_object(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "one", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        },
        source="pod.json",
    )
    d = solve([*groups, *pod], racks_with_one_busy_node())
    racks = {
        p.job: {rep.node.rsplit("-", 1)[0] for rep in p.replicas if rep.node is not None}
        for p in d.placements
    }
    placed = sorted(j for j in racks if j != "default/one")
    assert len(placed) == 2 and all(len(racks[j]) == 1 for j in placed)
    assert set().union(*(racks[j] for j in placed)) == {"dgx-h100-r2", "dgx-h100-r3"}
    assert racks["default/one"] == {"dgx-h100-r1"}
    assert [p.job for p in d.pending] == [j.id for j in groups if j.id not in placed]


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
