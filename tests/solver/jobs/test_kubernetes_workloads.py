"""What the Job / JobSet / Workload reader reads of Kueue slices and JobSet exclusive placement, and
refuses rather than place without, and a JobSet child Job's pod count. Shapes from jobset's
``examples/simple/exclusive-placement.yaml`` (the exclusive-topology annotation on the JobSet, as xpk
writes it for multislice training), jobset's docs (the same annotation on a replicated Job's template)
and Kueue's topology-aware-scheduling task page (slices of a Job's pods,
``podset-slice-required-topology`` with ``podset-slice-size``: "every 2 pods on one node").
Placements run through both engines and the checker (the ``solve`` fixture)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from placer.solver.engine import place
from placer.solver.jobs.formats.kubernetes_workloads import EXCLUSIVE_ANNOTATIONS, read_workload
from placer.solver.jobs.model import Slices
from placer.solver.policy import Policy
from placer.topology import cluster_of, dgx_h100
from tests.solver.jobs.racks import racks_with_one_busy_node

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


def test_jobset_exclusive_placement_on_a_label_placer_does_not_know_is_refused_naming_it() -> None:
    [r] = read_workload(_jobset({EXCLUSIVE: "cloud.google.com/gke-nodepool"}), "", "js.yaml")
    assert not r.ok and r.job is None
    assert [(e.code, e.path) for e in r.errors] == [("unsupported", f"metadata.annotations.{EXCLUSIVE}")]
    assert (
        "cloud.google.com/gke-nodepool" in r.errors[0].message and "--topology-labels" in r.errors[0].message
    )


def test_required_pod_affinity_in_a_pod_template_is_refused_naming_it() -> None:
    # Read on a pod alone (placer.solver.affinity); in a gang's template each pod would have to join the
    # running ones or the first of its own: not represented, refused with the template's path.
    raw = _jobset()
    pod_spec = raw["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    term = {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": RACK}
    pod_spec["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    [r] = read_workload(raw, "", "js.yaml")
    assert not r.ok and [e.code for e in r.errors] == ["unsupported"]
    assert r.errors[0].path.endswith(
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    )


def test_jobset_exclusive_placement_reads_each_child_job_as_a_slice_alone_in_its_domain() -> None:
    # 3 child Jobs of 3 pods (parallelism 3), each alone in a rack: slices of 3, exclusive.
    [r] = read_workload(_jobset({EXCLUSIVE: RACK}), "", "js.yaml")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    assert (g.count, g.slices) == (9, Slices(level="rack", size=3, exclusive=True))
    assert r.job.metadata["kubernetes"]["exclusive_topology"] == {"workers": RACK}
    # xpk's node-pool label, which a site maps to a level of its own (--topology-labels).
    pool = "cloud.google.com/gke-nodepool"
    [r] = read_workload(_jobset({EXCLUSIVE: pool}), "", "js.yaml", levels={pool: "block"})
    assert (
        r.ok and r.job is not None and r.job.tasks[0].slices == Slices(level="block", size=3, exclusive=True)
    )


def test_jobset_exclusive_placement_on_a_replicated_job_template_is_read_there() -> None:
    raw = _jobset({EXCLUSIVE: "topology.kubernetes.io/zone"})
    raw["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {EXCLUSIVE: RACK}}
    [r] = read_workload(raw, "items[2]", "js.yaml")
    assert r.ok and r.job is not None and r.job.tasks[0].slices.level == "rack"  # type: ignore[union-attr]
    raw["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {EXCLUSIVE: "rack-of-mine"}}
    [r] = read_workload(raw, "items[2]", "js.yaml")
    at = f"items[2].spec.replicatedJobs[0].template.metadata.annotations.{EXCLUSIVE}"
    assert [(e.code, e.path) for e in r.errors] == [("unsupported", at)]


def test_jobset_exclusive_placement_on_the_hostname_gives_each_child_job_a_node_it_owns() -> None:
    [r] = read_workload(_jobset({EXCLUSIVE: HOST}), "", "js.yaml")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    # A child Job's 3 one-GPU pods on one node, alone: one replica of 3 GPUs owning its node, per child.
    assert (g.count, g.gpus_per_replica, g.exclusive, g.slices) == (3, 3, True, None)


@pytest.mark.parametrize("key", EXCLUSIVE_ANNOTATIONS)
def test_jobsets_node_selector_strategy_is_refused(key: str) -> None:
    raw = _jobset()
    raw["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": {key: "true"}}
    [r] = read_workload(raw, "items[2]", "js.yaml")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", f"items[2].spec.replicatedJobs[0].template.metadata.annotations.{key}")
    ]


def test_each_child_job_runs_in_a_rack_of_its_own_and_nothing_else_goes_there(solve: Any) -> None:
    # Two child Jobs of two 4-GPU pods, each alone in a rack, and a Job of four 2-GPU pods. Rack 1 has one
    # free node (a reserved job runs on the other), which would hold a child's two pods; but not alone, so
    # the children take racks 2 and 3, and the Job's pods go to rack 1's free node, not beside them.
    raw = _jobset({EXCLUSIVE: RACK})
    rj = raw["spec"]["replicatedJobs"][0]
    rj["replicas"] = 2
    rj["template"]["spec"]["parallelism"] = rj["template"]["spec"]["completions"] = 2
    rj["template"]["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "4"}
    }
    [js] = read_workload(raw, "items[0]", "js.yaml")
    [one] = read_workload(_job({}), "items[1]", "js.yaml")
    d = solve([js, one], racks_with_one_busy_node())
    racks = {rep.node.rsplit("-", 1)[0] for p in d.placements if p.job == js.id for rep in p.replicas}
    assert racks == {"dgx-h100-r2", "dgx-h100-r3"}
    assert {rep.node for p in d.placements if p.job == one.id for rep in p.replicas} == {"dgx-h100-r1-2"}


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
            {SLICE_TOPOLOGY: "example.com/rack", SLICE_SIZE: "2"},
            "unsupported",
            SLICE_TOPOLOGY,
            "not a node label placer knows",
        ),
        ({SLICE_TOPOLOGY: HOST}, "required", SLICE_SIZE, "must be set"),
        ({SLICE_SIZE: "2"}, "required", SLICE_TOPOLOGY, "needs a slice topology"),
        ({SLICE_TOPOLOGY: HOST, SLICE_SIZE: "two"}, "range", SLICE_SIZE, "whole number"),
        # Not a whole number Kueue's strconv.ParseInt would take as a size of at least 1 ('²' is a digit to
        # str.isdigit, and int() refuses it): each refused with the field, never a traceback.
        *[
            ({SLICE_TOPOLOGY: HOST, SLICE_SIZE: v}, "range", SLICE_SIZE, "whole number")
            for v in ("0", "-1", "²", "1e3", " 2", "")
        ],
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
    site = {"podSetSliceRequiredTopology": "example.com/rack", "podSetSliceSize": 2}
    [refused] = read_workload(_workload(site), "", "wl.yaml")
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


RACK = "cloud.google.com/gce-topology-subblock"


def _rack_slices(parallelism: int, size: str) -> Any:
    raw = _sliced(parallelism, 8, size)
    raw["spec"]["template"]["metadata"]["annotations"][SLICE_TOPOLOGY] = RACK
    [r] = read_workload(raw, "", "job.yaml")
    return r


def test_rack_slices_read_as_a_rule_on_the_group_not_as_bigger_replicas() -> None:
    r = _rack_slices(4, "2")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    assert (g.count, g.gpus_per_replica, g.slices.level, g.slices.size) == (4, 8, "rack", 2)  # type: ignore[union-attr]


def test_each_rack_holds_whole_slices_so_the_one_free_node_of_a_rack_stays_free(solve: Any) -> None:
    # Four 8-GPU pods in slices of 2 per rack; rack 1 has one free node, racks 2 and 3 two each. Kueue
    # places 2 + 2 in racks 2 and 3; filling the fullest rack first, as both engines do without slices,
    # puts one pod on rack 1's free node and cuts a slice.
    d = solve([_rack_slices(4, "2")], racks_with_one_busy_node())
    [p] = d.placements
    racks: dict[str, int] = {}
    for rep in p.replicas:
        rack = rep.node.rsplit("-", 1)[0]
        racks[rack] = racks.get(rack, 0) + 1
    assert racks == {"dgx-h100-r2": 2, "dgx-h100-r3": 2}


def test_slices_that_fit_only_across_racks_wait(solve: Any) -> None:
    # Slices of 4 need a rack with 4 free nodes; no rack has more than 2.
    d = solve([_rack_slices(4, "4")], racks_with_one_busy_node())
    assert not d.placements and [p.job for p in d.pending] == ["team-a/tas-sample"]


def test_the_checker_refuses_a_rack_holding_part_of_a_slice_and_a_node_in_no_rack() -> None:
    from placer.solver.checks import check

    r = _rack_slices(4, "2")
    assert r.job is not None
    cluster = racks_with_one_busy_node()
    ok = place([r], cluster, Policy(engine="greedy"))
    assert check(ok, [r.job], cluster) == [] and len(ok.placements[0].replicas) == 4

    def moved(d: Any, node: str) -> Any:
        bad = d.model_copy(deep=True)
        bad.placements[0].replicas[0].node = node
        return bad

    # One pod moved to rack 1's free node: rack 1 holds 1 pod and its old rack 1, half slices both.
    cut = check(moved(ok, "dgx-h100-r1-2"), [r.job], cluster)
    assert [v.rule for v in cut] == ["slices"] and "dgx-h100-rack-1: 1" in cut[0].message
    # The same decision on the same nodes with no rack known: every replica is in no rack.
    from placer.topology.build import build_cluster

    inv = cluster.to_inventory()
    rackless = build_cluster(
        inv.model_copy(update={"nodes": [n.model_copy(update={"rack": None}) for n in inv.nodes]})
    )
    nowhere = check(ok, [r.job], rackless)
    assert [v.rule for v in nowhere] == ["slices"] * 4 and all("in no rack" in v.message for v in nowhere)
    # And the engines keep rack slices off nodes in no rack: the job can never run there, and says why.
    for engine in ("greedy", "cpsat"):
        d = place([r], rackless, Policy(engine=engine))
        assert not d.placements
        [reason] = d.pending[0].reasons
        assert reason.code == "UNSATISFIABLE" and "no node it may use is in a rack" in reason.message


def test_slices_no_domain_could_ever_hold_are_unsatisfiable_not_short_of_capacity() -> None:
    # Slices of 4 eight-GPU pods need 32 GPUs in one rack; every rack has two 8-GPU nodes.
    d = place([_rack_slices(4, "4")], racks_with_one_busy_node(), Policy(engine="greedy"))
    [reason] = d.pending[0].reasons
    assert (
        reason.code == "UNSATISFIABLE"
        and "no rack it may use could ever hold one (32 GPUs)" in reason.message
    )


def test_cpsats_own_answer_keeps_whole_slices_where_a_preference_would_cut_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Rack 1 (3 free nodes) is the pods' preferred pool, rack 2 has one free node, rack 3 two. Without
    # slices the best answer puts 3 pods in rack 1 (more preferred nodes); with slices of 2, rack 1 can
    # hold 2 (3 would cut a slice): CP-SAT's own answer is 2 + 2.
    from datetime import timedelta

    import placer.solver.core
    import placer.solver.cpsat
    from placer.topology.build import build_cluster
    from tests.solver.conftest import NOW

    seen: list[Any] = []
    real = placer.solver.cpsat.solve

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        seen.append(result.assignment)
        return result

    monkeypatch.setattr(placer.solver.core, "solve", spy)  # the name the engine calls
    inv = cluster_of(dgx_h100(9, nodes_per_rack=3)).to_inventory()
    fast = [
        n.model_copy(update={"labels": {**n.labels, "pool": "fast"}}) if n.rack == "dgx-h100-rack-1" else n
        for n in inv.nodes
    ]
    busy = [
        {
            "job": f"busy-{n}",
            "priority_class": "reserved",
            "started_at": NOW - timedelta(hours=1),
            "replicas": [{"node": n, "gpus": list(range(8))}],
        }
        for n in ("dgx-h100-r2-1", "dgx-h100-r2-2", "dgx-h100-r3-1")
    ]
    cluster = build_cluster(inv.model_copy(update={"nodes": fast})).with_allocations(busy)
    names = [n.name for n in cluster.nodes]
    raw = _sliced(4, 8, "2")
    template = raw["spec"]["template"]
    template["metadata"]["annotations"][SLICE_TOPOLOGY] = RACK
    template["spec"]["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 50,
                    "preference": {
                        "matchExpressions": [{"key": "pool", "operator": "In", "values": ["fast"]}]
                    },
                }
            ]
        }
    }
    [r] = read_workload(raw, "", "job.yaml")
    assert r.ok, r.errors
    d = place([r], cluster, Policy(engine="cpsat", time_limit_s=5), now=NOW)
    [assignment] = seen
    [replicas] = assignment.placed.values()
    racks: dict[str, int] = {}
    for rep in replicas:
        rack = names[rep.node].rsplit("-", 1)[0]
        racks[rack] = racks.get(rack, 0) + 1
    assert racks == {"dgx-h100-r1": 2, "dgx-h100-r3": 2}
    assert sum(rep.node.startswith("dgx-h100-r1-") for rep in d.placements[0].replicas) == 2


MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"


def _partial_job(least: object, parallelism: int = 6) -> dict[str, Any]:
    """Kueue's partial-admission sample: a Job of 1-GPU pods that may start with ``least`` of them."""
    raw = _sliced(parallelism, 1, "1")
    raw["spec"]["template"]["metadata"]["annotations"] = {}
    raw["metadata"]["annotations"] = {MIN_PARALLELISM: least}
    return raw


def _four_free_gpus() -> Any:
    from datetime import timedelta

    from tests.solver.conftest import NOW

    busy = {
        "job": "busy",
        "priority_class": "reserved",
        "started_at": NOW - timedelta(hours=1),
        "replicas": [{"node": "dgx-h100", "gpus": [0, 1, 2, 3]}],
    }
    return cluster_of(dgx_h100(1)).with_allocations([busy])


def test_partial_admission_runs_the_most_pods_that_fit_and_at_least_the_minimum(solve: Any) -> None:
    # 6 one-GPU pods, at least 3, on a node with 4 free GPUs: 4 run (Kueue admits the largest count that
    # fits); without the annotation the Job waits whole.
    [r] = read_workload(_partial_job("3"), "", "job.yaml")
    assert r.ok and r.job is not None
    [g] = r.job.tasks
    assert (g.count, g.count_range.min, g.count_range.max) == (3, 3, 6)  # type: ignore[union-attr]
    d = solve([r], _four_free_gpus())
    [p] = d.placements
    assert len(p.replicas) == 4
    assert "task group 'default' runs 4 replicas of its range 3..6, the most that fit" in p.notes
    [whole] = read_workload(_sliced(6, 1, "1"), "", "job.yaml")
    assert not solve([whole], _four_free_gpus()).placements
    [too_many] = read_workload(_partial_job("5"), "", "job.yaml")  # at least 5 of 6: none fit
    assert not solve([too_many], _four_free_gpus()).placements


def test_a_workload_pod_set_with_min_count_is_admitted_partially(solve: Any) -> None:
    raw = _workload({})
    raw["spec"]["podSets"][0].update({"count": 6, "minCount": 2})
    raw["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": "1"}
    }
    [r] = read_workload(raw, "", "wl.yaml")
    assert r.ok
    assert len(solve([r], _four_free_gpus()).placements[0].replicas) == 4


@pytest.mark.parametrize("least", ["0", "abc", "7", "", True, -1])
def test_a_minimum_kueue_would_refuse_is_refused_naming_the_annotation(least: object) -> None:
    [r] = read_workload(_partial_job(least), "", "job.yaml")
    assert not r.ok
    assert [(e.code, e.path) for e in r.errors] == [("range", f"metadata.annotations.{MIN_PARALLELISM}")]


def test_partial_admission_of_slices_or_of_two_pod_sets_is_refused() -> None:
    sliced = _partial_job("2", parallelism=4)
    sliced["spec"]["template"]["metadata"]["annotations"] = {SLICE_TOPOLOGY: HOST, SLICE_SIZE: "2"}
    [r] = read_workload(sliced, "", "job.yaml")
    assert [(e.code, e.path) for e in r.errors] == [
        ("unsupported", f"metadata.annotations.{MIN_PARALLELISM}")
    ]
    two = _workload({})
    first = two["spec"]["podSets"][0]
    first["minCount"] = 2
    two["spec"]["podSets"].append({**copy.deepcopy(first), "name": "other"})
    [r] = read_workload(two, "", "wl.yaml")
    assert [(e.code, e.path) for e in r.errors] == [("unsupported", "spec.podSets[1].minCount")]


def test_a_deactivated_workload_is_not_placed() -> None:
    raw = _workload({})
    raw["spec"]["active"] = False
    [r] = read_workload(raw, "items[3]", "wl.yaml")
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("conflict", "items[3].spec.active")]
    raw["spec"]["active"] = True
    assert read_workload(raw, "", "wl.yaml")[0].ok


def test_a_template_s_runtime_class_is_read_with_a_warning() -> None:
    # The RuntimeClass admission plugin merges the class's scheduling section (node selector,
    # tolerations) into each pod when it is created; a pod template has not been through it yet.
    doc = _jobset()
    template = doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    template["spec"]["runtimeClassName"] = "gvisor"
    [r] = read_workload(doc, "", "js.yaml")
    assert r.ok
    assert [(w.code, w.path) for w in r.warnings if w.path.endswith("runtimeClassName")] == [
        ("unsupported", "spec.replicatedJobs[0].template.spec.template.spec.runtimeClassName")
    ]
