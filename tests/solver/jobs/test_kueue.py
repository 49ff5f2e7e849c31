"""Kueue ClusterQueue GPU, CPU and memory quotas as placer queue budgets (``solver/jobs/kueue.py``).

The objects have the shape Kueue's own samples give them (``kueue.x-k8s.io/v1beta1``; ``nominalQuota``
as a number or a quantity string), in the ``List`` that ``kubectl get clusterqueues,localqueues -A -o
json`` prints. The placement test runs on the shipped GKE-style node list and pending pods, both engines,
through the checker (which keeps the same budget ledger).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import JobValidationError, ReadOptions, read_file, read_object
from placer.solver.jobs.queues import in_cluster_queues, load_queue_configs
from placer.solver.policy import Policy
from placer.topology.load import load_cluster
from tests.solver.conftest import Solve, nodes_of, pending_reason

REPO = Path(__file__).resolve().parents[3]
NODES = REPO / "examples" / "importers" / "kubernetes_nodes.json"
PODS = REPO / "tests" / "fixtures" / "kubernetes" / "pending_pods.json"
RUNNING = REPO / "examples" / "importers" / "kubernetes_pods.json"


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


def test_the_cluster_queues_cpu_and_memory_quotas_hold_too(solve: Solve) -> None:
    # ml/h100-train asks 32 cores and 256 GiB with its 8 GPUs. The fixture's quota (64 cores, 512Gi) lets
    # it in; 31 cores keeps it pending on the CPU budget, 255Gi on the memory budget (GPU quota 8 both).
    cluster = load_cluster(NODES)
    for resource, quota, said in (("cpu", 31, "cpu budget"), ("memory", "255Gi", "memory budget")):
        doc = _kueue(8)
        [h100] = [f for f in doc["items"][2]["spec"]["resourceGroups"][0]["flavors"] if f["name"] == "h100"]
        [res] = [r for r in h100["resources"] if r["name"] == resource]
        res["nominalQuota"] = quota
        d = solve(read_file(PODS), cluster, queues=load_queue_configs(doc))
        reason = pending_reason(d, "ml/h100-train") or ""
        assert reason.startswith("QUEUE_BUDGET") and said in reason, reason


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
    orphan = copy.deepcopy(_kueue(8))
    orphan["items"][-1]["spec"]["clusterQueue"] = "nope"
    assert "no ClusterQueue 'nope' in the document" in _refused(orphan)
    assert "not a Kubernetes quantity" in _refused(_kueue("lots"))
    assert "a GPU quota is a whole number" in _refused(_kueue("1.5"))
    clash = _with_local_queue("other", "x")  # team-a-cq shared: its queue is named team-a-cq ...
    clash["items"].append(copy.deepcopy(clash["items"][2]))  # ... and a second ClusterQueue ...
    clash["items"][-1]["metadata"]["name"] = "cq2"
    clash["items"].append(  # ... has a LocalQueue of that very name
        {
            "kind": "LocalQueue",
            "metadata": {"namespace": "z", "name": "team-a-cq"},
            "spec": {"clusterQueue": "cq2"},
        }
    )
    both = "queue 'team-a-cq' would be both a LocalQueue's and a shared ClusterQueue's name"
    assert both in _refused(clash)
    clash["items"][-2]["spec"] = {}  # cq2 sets no budget: z's pods would still say team-a-cq
    assert "LocalQueue 'z/team-a-cq' is not in ClusterQueue 'team-a-cq'" in _refused(clash)


# Shared ClusterQueues: Kueue's usual multi-tenant setup, one quota for the LocalQueues of several teams.


def test_local_queues_of_one_cluster_queue_are_one_queue_named_after_it() -> None:
    queues = load_queue_configs(_with_local_queue("research", "team-b"))
    assert list(queues) == ["team-a-cq"]
    config = queues["team-a-cq"].config
    assert config.local_queues == ["ml/team-a", "research/team-b"]
    assert config.ml_limits.max_total_gpus == 8
    # One LocalQueue name in two namespaces: each namespace's pods are told apart the same way.
    same_name = load_queue_configs(_with_local_queue("other", "team-a"))
    assert same_name["team-a-cq"].config.local_queues == ["ml/team-a", "other/team-a"]


def _research_pod() -> dict[str, Any]:
    """``ml/h100-train`` (8 GPUs) as a pod of namespace ``research`` in its LocalQueue ``team-b``, without
    its node selector (the a3 pool's other node is cordoned)."""
    pods = json.loads(PODS.read_text())
    pod = copy.deepcopy(next(p for p in pods["items"] if p["metadata"]["name"] == "h100-train"))
    pod["metadata"].update(namespace="research", name="b-train", uid="research-b-train")
    pod["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-b"}
    del pod["spec"]["nodeSelector"]
    return pod


@pytest.mark.parametrize("shared", [True, False])
def test_running_and_pending_pods_of_a_shared_cluster_queue_count_against_one_quota(
    solve: Solve, shared: bool
) -> None:
    # ml's two running pods (ml/llm-train, queue team-a) hold all 8 H100 of gke-a3-h100-node-1;
    # research's pod (queue team-b) asks 8 GPUs, which only the A100 node has free. With team-b in
    # team-a's ClusterQueue (quota 12), 8 run and 8 more would make 16: it waits. In a ClusterQueue of
    # its own (quota 12), it runs.
    doc = _with_local_queue("research", "team-b")
    doc["items"][2]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = 12
    if not shared:
        own = copy.deepcopy(doc["items"][2])
        own["metadata"]["name"] = "team-b-cq"
        doc["items"].append(own)
        doc["items"][-2]["spec"]["clusterQueue"] = "team-b-cq"
    queues = load_queue_configs(doc)
    cluster = in_cluster_queues(load_cluster(NODES, pods=RUNNING), queues)
    # ml/llm-train: the two pods of one owner, one running job (placer cluster --pods).
    assert cluster.running_job("ml/llm-train").queue == ("team-a-cq" if shared else "team-a")
    (pod,) = read_object(
        {"apiVersion": "v1", "kind": "List", "items": [_research_pod()]}, options=ReadOptions(queues=queues)
    )
    assert pod.job.queue == ("team-a-cq" if shared else "team-b")  # alone in its ClusterQueue: its own name
    d = solve([pod], cluster, queues=queues)
    if shared:
        assert (pending_reason(d, "research/b-train") or "").startswith("QUEUE_BUDGET")
    else:
        assert nodes_of(d, "research/b-train") == ["ip-10-0-3-17.ec2.internal"]


# ResourceFlavors: the queue's jobs run only on its flavors' nodes, with their tolerations.


def _with_flavors(cpu_flavor: dict[str, Any]) -> dict[str, Any]:
    """The ClusterQueue with a CPU/memory group whose one flavor is ``cpu_flavor`` (a ResourceFlavor
    ``spec``) and the GPU group of :func:`_kueue`; both groups' flavors are in the document."""
    doc = copy.deepcopy(_kueue(8))
    doc["items"].insert(
        0,
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ResourceFlavor",
            "metadata": {"name": "cpu-nodes"},
            "spec": cpu_flavor,
        },
    )
    cq = doc["items"][3]
    assert cq["kind"] == "ClusterQueue"
    gpu_group = cq["spec"]["resourceGroups"][0]
    gpu_group["coveredResources"] = ["nvidia.com/gpu"]
    for f in gpu_group["flavors"]:
        f["resources"] = [r for r in f["resources"] if r["name"] == "nvidia.com/gpu"]
    cq["spec"]["resourceGroups"].insert(
        0,
        {
            "coveredResources": ["cpu", "memory"],
            "flavors": [
                {
                    "name": "cpu-nodes",
                    "resources": [
                        {"name": "cpu", "nominalQuota": 96},
                        {"name": "memory", "nominalQuota": "1Ti"},
                    ],
                }
            ],
        },
    )
    return doc


def _prep_in_team_a() -> list[Any]:
    """The shipped pending pods, ``ml/cpu-prep`` (8 CPUs, no GPU, node selector zone us-central1-a) put in
    LocalQueue team-a."""
    import json

    pods = json.loads(PODS.read_text())
    (prep,) = [p for p in pods["items"] if p["metadata"]["name"] == "cpu-prep"]
    prep["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "team-a"
    return pods


def _read(pods: Any, kueue: dict[str, Any]) -> list[Any]:
    from placer.solver.jobs import read_object
    from placer.solver.jobs.options import ReadOptions

    return read_object(pods, source="pods.json", options=ReadOptions(queues=load_queue_configs(kueue)))


A3 = {"cloud.google.com/gke-nodepool": "a3-pool"}  # gke-a3-h100-node-1 and -2, tainted nvidia.com/gpu
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_a_queues_flavor_keeps_its_pods_on_the_flavors_nodes_with_its_tolerations(solve: Solve) -> None:
    cluster = load_cluster(NODES)
    free = solve(_read(_prep_in_team_a(), _kueue(8)), cluster)
    assert nodes_of(free, "ml/cpu-prep") == ["gke-cpu-pool-5f2a"]  # a CPU pod keeps off GPU nodes
    # The flavor's nodes are the a3 pool; it tolerates the GPU taint they carry, and gives that toleration
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    flavored = _with_flavors({"nodeLabels": A3, "nodeTaints": [GPU_TAINT], "tolerations": tolerate})
    kept = solve(_read(_prep_in_team_a(), flavored), cluster, queues=load_queue_configs(flavored))
    assert nodes_of(kept, "ml/cpu-prep")[0].startswith("gke-a3-h100-node-")
    # Pods of other queues are not kept anywhere new: the same of them are placed
    others = {p.job for p in free.placements} - {"ml/cpu-prep"}
    assert others and {p.job for p in kept.placements} - {"ml/cpu-prep"} == others
    # The flavor's labels and the pod's own selector both hold: p4d nodes are not in us-central1-a
    elsewhere = _with_flavors({"nodeLabels": {"node.kubernetes.io/instance-type": "p4d.24xlarge"}})
    d = solve(_read(_prep_in_team_a(), elsewhere), cluster, queues=load_queue_configs(elsewhere))
    assert (pending_reason(d, "ml/cpu-prep") or "").startswith("UNSATISFIABLE")


def test_a_flavor_whose_taints_the_pod_does_not_tolerate_is_not_its_flavor() -> None:
    # cpu-prep asks no GPU, so it does not tolerate the GPU taint: Kueue would not assign the flavor
    flavored = _with_flavors({"nodeLabels": A3, "nodeTaints": [GPU_TAINT]})
    (prep,) = [r for r in _read(_prep_in_team_a(), flavored) if r.id == "ml/cpu-prep"]
    assert not prep.ok
    (err,) = prep.errors
    assert err.code == "limit"
    assert "tolerates the node taints of none of the flavors (cpu-nodes)" in err.message


def test_flavor_problems_are_named() -> None:
    missing = _with_flavors({})
    missing["items"][3]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "nope"
    assert "no ResourceFlavor 'nope' in the document" in _refused(missing)
    assert "nodeLabels: must be an object" in _refused(_with_flavors({"nodeLabels": ["a3-pool"]}))
    not_listed = _with_flavors({})
    not_listed["items"][3]["spec"]["resourceGroups"][0]["flavors"] = True
    assert "resourceGroups[0].flavors: must be a list" in _refused(not_listed)
    bad_taint = _with_flavors({"nodeTaints": [{"key": "x", "effect": "Sometimes"}]})
    assert "flavor_groups" in _refused(bad_taint)


def test_jobs_jobsets_and_workloads_take_their_shared_cluster_queue() -> None:
    # The shipped Job, JobSet and Workload of namespace ml name LocalQueue user-queue (a label, or a
    # Workload's spec.queueName); with user-queue of ml and of research in one ClusterQueue, each is read
    # in that ClusterQueue's queue; read without the configuration they keep the LocalQueue's name.
    doc = copy.deepcopy(_kueue(8))
    doc["items"][-1]["metadata"]["name"] = "user-queue"
    doc["items"].append(
        {
            "kind": "LocalQueue",
            "metadata": {"namespace": "research", "name": "user-queue"},
            "spec": {"clusterQueue": "team-a-cq"},
        }
    )
    queues = load_queue_configs(doc)
    workloads = REPO / "tests" / "fixtures" / "kubernetes" / "workloads.json"
    shared = {r.id: r.job.queue for r in read_file(workloads, options=ReadOptions(queues=queues)) if r.job}
    plain = {r.id: r.job.queue for r in read_file(workloads) if r.job}
    assert shared and set(shared.values()) == {"team-a-cq"}
    assert set(plain.values()) == {"user-queue"} and set(plain) == set(shared)


def test_a_queue_configuration_listing_local_queues_is_checked() -> None:
    bad = [
        {"queue": "a", "config": {"local_queues": ["ml/lq", "no-namespace"]}},
        {"queue": "b", "config": {"local_queues": ["ml/lq"]}},
    ]
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(bad, source="queues.json")
    found = {(i.code, i.path, i.message) for i in e.value.issues}
    assert (
        "malformed",
        "[0].config.local_queues[1]",
        "'no-namespace': a LocalQueue is namespace/name",
    ) in found
    assert any(code == "conflict" and "'ml/lq' is listed by queues 'a' and 'b'" in m for code, _, m in found)


# Cohorts: ClusterQueues that borrow each other's unused quota, within the cohort's total.


def _cohort_doc(borrow_a: int | None, *, cohort: bool = True) -> dict[str, Any]:
    """team-a-cq (nominal 4 GPUs, borrowingLimit ``borrow_a``) for ml/team-a and team-b-cq (nominal 8, no
    borrowingLimit) for research/team-b, both in cohort ``research`` (unless ``cohort`` is False)."""
    doc = _with_local_queue("research", "team-b")
    a = doc["items"][2]
    gpu = a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
    gpu["nominalQuota"] = 4
    if borrow_a is not None:  # on both flavors: a GPU resource without a limit may borrow without one
        gpu["borrowingLimit"] = borrow_a
        a["spec"]["resourceGroups"][0]["flavors"][1]["resources"][2]["borrowingLimit"] = 0
    b = copy.deepcopy(a)
    b["metadata"]["name"] = "team-b-cq"
    b_gpu = b["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]
    b_gpu["nominalQuota"] = 8
    b_gpu.pop("borrowingLimit", None)
    doc["items"].append(b)
    doc["items"][-2]["spec"]["clusterQueue"] = "team-b-cq"  # research/team-b
    if cohort:
        a["spec"]["cohort"] = "research"
        b["spec"]["cohortName"] = "research"  # the v1beta2 spelling
    return doc


def test_a_cohorts_queues_get_nominal_plus_borrowing_and_the_cohorts_total() -> None:
    queues = load_queue_configs(_cohort_doc(8))
    a, b = queues["team-a"].config, queues["team-b"].config
    assert a.ml_limits.max_total_gpus == 4 + 8 and b.ml_limits.max_total_gpus is None  # b: no limit
    assert a.cohort is not None and b.cohort is not None
    assert (
        (a.cohort.name, a.cohort.max_total_gpus)
        == (b.cohort.name, b.cohort.max_total_gpus)
        == ("research", 12)
    )
    plain = load_queue_configs(_cohort_doc(8, cohort=False))
    assert plain["team-a"].config.ml_limits.max_total_gpus == 4 and plain["team-a"].config.cohort is None


@pytest.mark.parametrize("cohort", [True, False])
def test_a_cohort_lends_unused_quota_and_holds_its_total(solve: Solve, cohort: bool) -> None:
    # ml's running llm-train (team-a) holds 8 GPUs: 4 of its own and 4 borrowed from team-b-cq. research's
    # 8-GPU pod (team-b, nominal 8) would bring the cohort to 16 of its 12: it waits, QUEUE_BUDGET naming
    # the cohort. Outside a cohort team-b-cq's 8 are its own, and the pod runs.
    queues = load_queue_configs(_cohort_doc(8, cohort=cohort))
    cluster = in_cluster_queues(load_cluster(NODES, pods=RUNNING), queues)
    (pod,) = read_object(
        {"apiVersion": "v1", "kind": "List", "items": [_research_pod()]}, options=ReadOptions(queues=queues)
    )
    d = solve([pod], cluster, queues=queues)
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # CP-SAT's model keeps it too
    if not cohort:
        assert nodes_of(d, "research/b-train") == ["ip-10-0-3-17.ec2.internal"]
        return
    (p,) = d.pending
    reason, memory = p.reasons
    assert reason.code == "QUEUE_BUDGET" and reason.details["cohort"] == "research"
    assert reason.details["more_gpus"] == 8 + 8 - 12
    # The cohort's memory total is its ClusterQueues' nominal quotas, 512 GB each: llm-train holds 800 GB,
    # the pod asks 256, 32 GB too many (Kueue would not admit it either).
    assert (memory.details["cohort"], memory.details["resource"], memory.details["more"]) == (
        "research",
        "memory",
        800 + 256 - 1024,
    )
    # The checker holds a decision that places it (where it runs without the cohort) to the cohort's total.
    alone = place(
        [pod.job], cluster, Policy(engine="greedy"), queues=load_queue_configs(_cohort_doc(8, cohort=False))
    )
    assert [p.job for p in alone.placements] == ["research/b-train"]
    violations = check(alone, [pod.job], cluster, queues=queues)
    # The memory and the GPUs, each over the cohort's total and over its total on flavor h100 (its
    # ClusterQueues' quotas there: all of them, gb200's being 0).
    assert [v.rule for v in violations] == ["queue-budget"] * 4
    said = [v.message for v in violations]
    assert "cohort's queues hold 1056 GB after the decision" in said[0]
    assert "total of max_gpus on flavor 'h100' is 12" in said[1] and "cohort holds 16 GPUs" in said[3]


def _lending_b(limit: Any) -> dict[str, Any]:
    """:func:`_cohort_doc` (team-a may borrow 8) with team-b-cq (nominal 8) lending at most ``limit``."""
    doc = _cohort_doc(8)
    doc["items"][-1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["lendingLimit"] = limit
    return doc


def test_a_lending_limit_keeps_the_rest_of_the_quota_for_its_own_queue() -> None:
    queues = load_queue_configs(_lending_b(2))
    a, b = queues["team-a"].config.cohort, queues["team-b"].config.cohort
    assert a is not None and b is not None
    assert (b.max_total_gpus, b.guaranteed_gpus) == (12, 8 - 2) and a.guaranteed_gpus == 0
    assert "more than the nominal quota 8" in _refused(_lending_b(9))
    assert "a GPU limit is a whole number" in _refused(_lending_b("1500m"))


def _resource_lending(k: int, limit: Any, doc: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`_cohort_doc` (or ``doc``) with team-b-cq lending at most ``limit`` of its h100 flavor's
    resource ``k`` (0: cpu, 64 cores; 1: memory, 512Gi)."""
    doc = doc or _cohort_doc(8)
    cq = next(i for i in doc["items"] if i.get("metadata", {}).get("name") == "team-b-cq")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][k]["lendingLimit"] = limit
    return doc


def test_a_cpu_or_memory_lending_limit_keeps_the_rest_for_its_own_queue() -> None:
    # team-b-cq lends 40 of its 64 cores and 256Gi of its 512Gi: it keeps 24 cores and 256 GB, which the
    # cohort (128 cores, 1024 GB) counts as b's, used or not. A limit equal to the quota lends it all.
    at = "items[5].spec.resourceGroups[0].flavors[0].resources[{}].lendingLimit"  # team-b-cq
    doc = _resource_lending(1, "256Gi", _resource_lending(0, 40))
    queues = load_queue_configs(doc)
    a, b = queues["team-a"].config.cohort, queues["team-b"].config.cohort
    assert a is not None and b is not None
    assert (b.max_total_cpu_cores, b.guaranteed_cpu_cores, b.guaranteed_memory_gb) == (128, 24, 256)
    assert (a.guaranteed_cpu_cores, a.guaranteed_memory_gb, a.guaranteed_pods) == (0, 0, 0)
    lends_all = load_queue_configs(_resource_lending(0, 64))["team-b"].config.cohort
    assert lends_all is not None and lends_all.guaranteed_cpu_cores == 0
    refused = _refused(_resource_lending(0, 65))
    assert at.format(0) in refused and "65 is more than the nominal quota 64" in refused
    # In a tree of cohorts the queue states its own quota and what it keeps of it, for the tree's rules.
    tree = _resource_lending(0, 40, _tree_doc(_cohort_object("research", "org"), _cohort_object("org")))
    kept = load_queue_configs(tree)["team-b"].config.cohort
    assert kept is not None and (kept.nominal_cpu_cores, kept.guaranteed_cpu_cores) == (64, 24)


def test_what_a_cluster_queue_without_a_local_queue_keeps_is_out_of_the_cohorts_total() -> None:
    # A third ClusterQueue of the cohort, with no LocalQueue (nothing runs there), lends 16 of its 64
    # cores: the 48 it keeps are no one's, so the cohort's total is 64 + 64 + 16, not 192.
    doc = _cohort_doc(8)
    pool = copy.deepcopy(next(i for i in doc["items"] if i["metadata"]["name"] == "team-b-cq"))
    pool["metadata"]["name"] = "pool-cq"
    pool["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 16
    doc["items"].append(pool)
    cohort = load_queue_configs(doc)["team-b"].config.cohort
    assert cohort is not None and cohort.max_total_cpu_cores == 64 + 64 + 16


@pytest.mark.parametrize(("limit", "runs"), [(16, False), (32, True), (None, True)])
def test_a_queue_borrows_only_the_cores_the_lender_lends(solve: Solve, limit: int | None, runs: bool) -> None:
    # ml/h100-train (team-a, 8 GPUs, 32 cores) on an idle cluster; team-a-cq's own cpu quota is 0 here, so
    # every core it uses is borrowed from team-b-cq's 64. Lending 16 keeps 48: the cohort's 64 cores leave
    # team-a 16, the pod waits 16 short; lending 32 it runs (32 + 32 = 64), and with no lendingLimit.
    doc = _cohort_doc(8)
    a = next(i for i in doc["items"] if i.get("metadata", {}).get("name") == "team-a-cq")
    a["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 0
    if limit is not None:
        doc = _resource_lending(0, limit, doc)
    queues = load_queue_configs(doc)
    jobs = [r for r in read_file(PODS, options=ReadOptions(queues=queues)) if r.id == "ml/h100-train"]
    cluster = load_cluster(NODES)
    d = solve(jobs, cluster, queues=queues)
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status
    if runs:
        assert nodes_of(d, "ml/h100-train") == ["gke-a3-h100-node-1"]
        return
    (p,) = d.pending
    (reason,) = p.reasons
    assert reason.code == "QUEUE_BUDGET"
    assert (reason.details["cohort"], reason.details["resource"], reason.details["more"]) == (
        "research",
        "cpu",
        16,
    )
    # The checker holds a decision that places it (as without the lending limit) to what team-b-cq keeps.
    free = copy.deepcopy(doc)
    _resource_lending(0, 64, free)
    placed = place([jobs[0].job], cluster, Policy(engine="greedy"), queues=load_queue_configs(free))
    assert [p.job for p in placed.placements] == ["ml/h100-train"]
    # Over all flavors, and on h100 (the cohort's flavors are h100 and gb200, its lendingLimit h100's).
    summed, on_h100 = check(placed, [jobs[0].job], cluster, queues=queues)
    assert summed.rule == "queue-budget" and "team-b 0 (keeps 48)" in summed.message
    assert "its total is 64" in summed.message
    assert on_h100.rule == "queue-budget" and "cores on flavor 'h100'" in on_h100.message, on_h100.message
    assert "team-b 0 (guaranteed 48)" in on_h100.message and "its total is 64" in on_h100.message


@pytest.mark.parametrize(("limit", "runs"), [(2, False), (4, True), (None, True)])
def test_a_queue_borrows_only_what_the_lender_lends(solve: Solve, limit: int | None, runs: bool) -> None:
    # ml/h100-train (team-a, 8 GPUs; nominal 4, may borrow 8) on an idle cluster, in a cohort of 12 with
    # team-b-cq (nominal 8). team-b-cq lending 2 keeps 6 for itself: 8 + 6 > 12, the pod waits on the
    # cohort; lending 4 keeps 4: 8 + 4 = 12, it runs; no lendingLimit: it lends all 8 (the usual cohort).
    doc = _lending_b(limit) if limit is not None else _cohort_doc(8)
    queues = load_queue_configs(doc)
    jobs = [r for r in read_file(PODS, options=ReadOptions(queues=queues)) if r.id == "ml/h100-train"]
    cluster = load_cluster(NODES)
    d = solve(jobs, cluster, queues=queues)
    if runs:
        assert nodes_of(d, "ml/h100-train") == ["gke-a3-h100-node-1"]
        return
    (p,) = d.pending
    (reason,) = p.reasons
    assert reason.code == "QUEUE_BUDGET" and reason.details["cohort"] == "research"
    # The checker holds a decision that places it (as without the lending limit) to the guaranteed GPUs.
    placed = place([jobs[0].job], cluster, Policy(engine="greedy"), queues=load_queue_configs(_cohort_doc(8)))
    assert [p.job for p in placed.placements] == ["ml/h100-train"]
    # Over all flavors, and on h100 (the cohort's flavors are h100 and gb200, its lendingLimit h100's).
    summed, on_h100 = check(placed, [jobs[0].job], cluster, queues=queues)
    for v in (summed, on_h100):
        assert v.rule == "queue-budget" and "guaranteed 6" in v.message and "its total is 12" in v.message
    assert "GPUs on flavor 'h100'" in on_h100.message, on_h100.message


def _cohort_object(
    name: str, parent: str | None = None, *, memory: str | None = None, **gpu: Any
) -> dict[str, Any]:
    """A Kueue ``Cohort`` (v1beta1 ``parentName``) with a GPU quota of its own when ``gpu`` gives one
    (``nominalQuota``, ``borrowingLimit``, ``lendingLimit``), and a memory quota of ``memory``."""
    spec: dict[str, Any] = {"parentName": parent} if parent else {}
    resources = [{"name": "nvidia.com/gpu", **gpu}] if gpu else []
    resources += [{"name": "memory", "nominalQuota": memory}] if memory else []
    if resources:
        covered = [r["name"] for r in resources]
        spec["resourceGroups"] = [
            {"coveredResources": covered, "flavors": [{"name": "h100", "resources": resources}]}
        ]
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Cohort",
        "metadata": {"name": name},
        "spec": spec,
    }


def _tree_doc(*cohorts: dict[str, Any]) -> dict[str, Any]:
    doc = _cohort_doc(8)
    doc["items"].extend(cohorts)
    return doc


def test_a_cohort_tree_is_read_with_each_cohorts_quota_and_limits() -> None:
    queues = load_queue_configs(
        _tree_doc(
            _cohort_object("research", "org", nominalQuota=0, borrowingLimit=2),
            _cohort_object("org", nominalQuota=4),
        )
    )
    a = queues["team-a"].config.cohort
    assert a is not None and a.nominal_gpus == 4
    assert [(n.name, n.parent, n.nominal_gpus, n.borrowing_gpus) for n in a.tree] == [
        ("research", "org", 0, 2),
        ("org", None, 4, None),
    ]
    assert a.max_total_gpus == 4 + 8 + 4  # every quota in the tree, for information
    cycle = _tree_doc(_cohort_object("research", "org"), _cohort_object("org", "research"))
    assert "cohort parents make a cycle" in _refused(cycle)


@pytest.mark.parametrize(
    ("cohorts", "runs"),
    [
        ((), False),  # one cohort of 12: 8 running + 8 > 12
        (  # 16 <= 4 + 12
            (_cohort_object("research", "org"), _cohort_object("org", nominalQuota=4, memory="256Gi")),
            True,
        ),
        (
            (
                _cohort_object("research", "org", nominalQuota=0, borrowingLimit=2),
                _cohort_object("org", nominalQuota=4, memory="256Gi"),
            ),
            False,  # research may take only 2 of org's 4: 16 > 12 + 2
        ),
        (  # its own pool
            (_cohort_object("research", "org", nominalQuota=4, memory="256Gi"), _cohort_object("org")),
            True,
        ),
    ],
)
def test_a_cohort_tree_shares_its_quotas_within_its_limits(solve: Solve, cohorts: tuple, runs: bool) -> None:  # type: ignore[type-arg]
    # ml's running llm-train (team-a) holds 8 GPUs; research's 8-GPU pod (team-b, nominal 8) needs 16 in
    # research's subtree of 12 (team-a 4 + team-b 8). A parent cohort with 4 GPUs of its own lends them,
    # unless research may borrow only 2; a pool of 4 on research itself is its own. Memory too: llm-train
    # holds 800 GB of the queues' 1024 and the pod needs 256, so a cohort adds 256Gi of its own where the
    # pod is to run (test_a_cohort_tree_holds_memory_as_it_holds_gpus: without it, it waits).
    queues = load_queue_configs(_tree_doc(*cohorts))
    cluster = in_cluster_queues(load_cluster(NODES, pods=RUNNING), queues)
    (pod,) = read_object(
        {"apiVersion": "v1", "kind": "List", "items": [_research_pod()]}, options=ReadOptions(queues=queues)
    )
    d = solve([pod], cluster, queues=queues)
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status
    if runs:
        assert nodes_of(d, "research/b-train") == ["ip-10-0-3-17.ec2.internal"]
        return
    (p,) = d.pending
    reason, *more = p.reasons
    assert reason.code == "QUEUE_BUDGET" and reason.details["cohort"] == "research"
    # The flat cohort also totals its queues' memory (800 GB held + 256 > 1024); the tree has 1280.
    assert [r.details.get("resource") for r in more] == ([] if cohorts else ["memory"])
    # The checker holds a decision that places it anyway to the tree's rules.
    free = load_queue_configs(_cohort_doc(8, cohort=False))
    placed = place([pod.job], cluster, Policy(engine="greedy"), queues=free)
    assert [p.job for p in placed.placements] == ["research/b-train"]
    rules = [v.rule for v in check(placed, [pod.job], cluster, queues=queues)]
    # Flat: GPUs and memory, over all flavors and on h100; a tree: GPUs, over all and on h100 (its quotas
    # are per flavor, h100 and gb200, so a tree is kept for each).
    assert rules == ["queue-budget"] * (2 if cohorts else 4)


def test_a_cohort_tree_holds_memory_as_it_holds_gpus(solve: Solve) -> None:
    # org's 4 GPUs of its own let research's 8-GPU pod in on GPUs (16 <= 16), but the tree's memory is its
    # queues' 1024 GB, of which llm-train holds 800: the 256 GB pod waits on the tree's memory, naming the
    # cohort; 256Gi of org's own lets it run. A decision that places it anyway breaks the tree's rule.
    tight = load_queue_configs(
        _tree_doc(_cohort_object("research", "org"), _cohort_object("org", nominalQuota=4))
    )
    cohort = tight["team-b"].config.cohort
    assert cohort is not None and (cohort.nominal_memory_gb, cohort.tree[1].nominal_memory_gb) == (512, 0)
    # Its ClusterQueue has two flavors (h100, gb200): the trees are kept per flavor too, from each flavor's
    # quotas and each Cohort's own on them.
    h100 = tight["team-b"].config.flavor_groups[0].flavors[0]
    assert (h100.name, h100.tree_quota) == (
        "h100",
        {"nominal_cpu_cores": 64, "nominal_memory_gb": 512, "nominal_gpus": 8},
    )
    assert cohort.tree[1].flavor_quotas == {"h100": {"nominal_gpus": 4}}
    cluster = in_cluster_queues(load_cluster(NODES, pods=RUNNING), tight)
    (pod,) = read_object(
        {"apiVersion": "v1", "kind": "List", "items": [_research_pod()]}, options=ReadOptions(queues=tight)
    )
    d = solve([pod], cluster, queues=tight)
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model kept it itself
    (p,) = d.pending
    assert [(r.code, r.details.get("resource"), r.details.get("cohort")) for r in p.reasons] == [
        ("QUEUE_BUDGET", "memory", "research")
    ]
    free = load_queue_configs(_cohort_doc(8, cohort=False))
    placed = place([pod.job], cluster, Policy(engine="greedy"), queues=free)
    summed, on_h100 = check(placed, [pod.job], cluster, queues=tight)
    assert summed.rule == on_h100.rule == "queue-budget"
    assert "1056 GB after" in summed.message and "1056 GB on flavor 'h100'" in on_h100.message, (
        on_h100.message
    )
    roomy = _tree_doc(
        _cohort_object("research", "org"), _cohort_object("org", nominalQuota=4, memory="256Gi")
    )
    queues = load_queue_configs(roomy)
    assert nodes_of(solve([pod], cluster, queues=queues), "research/b-train") == ["ip-10-0-3-17.ec2.internal"]


@pytest.mark.parametrize("cohort", [True, False])
def test_a_queue_of_a_cohort_borrows_what_the_others_leave_unused(solve: Solve, cohort: bool) -> None:
    # ml/h100-train (team-a, 8 H100) on an idle cluster: team-a-cq's own quota is 4, but in the cohort it
    # may borrow up to 8 of team-b-cq's unused 8, so it runs; outside the cohort it waits on its 4.
    queues = load_queue_configs(_cohort_doc(8, cohort=cohort))
    jobs = [r for r in read_file(PODS, options=ReadOptions(queues=queues)) if r.id == "ml/h100-train"]
    d = solve(jobs, load_cluster(NODES), queues=queues)
    if cohort:
        assert nodes_of(d, "ml/h100-train") == ["gke-a3-h100-node-1"]
    else:
        assert (pending_reason(d, "ml/h100-train") or "").startswith("QUEUE_BUDGET")


@pytest.mark.parametrize(
    ("where", "value", "path"),
    [
        ("resourceGroups", {"flavors": []}, "resourceGroups"),
        ("flavors", {"name": "h100"}, "resourceGroups[0].flavors"),
        (
            "resources",
            {"name": "nvidia.com/gpu", "nominalQuota": 4},
            "resourceGroups[0].flavors[0].resources",
        ),
    ],
)
def test_a_quota_of_the_wrong_shape_is_refused_not_read_as_no_quota(
    where: str, value: Any, path: str
) -> None:
    # Walked leniently, a quota in a malformed part was read as none: a queue without a budget.
    doc = _cohort_doc(8)
    cq = next(i for i in doc["items"] if i["kind"] == "ClusterQueue")
    if where == "resourceGroups":
        cq["spec"]["resourceGroups"] = value
    elif where == "flavors":
        cq["spec"]["resourceGroups"][0]["flavors"] = value
    else:
        cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = value
    assert f"items[2].spec.{path}: " in _refused(doc)


def test_names_and_kinds_of_the_wrong_type_are_refused_not_tracebacks() -> None:
    # Found by the hostile-input fuzz: a resource name or an object kind that is a list or a mapping was
    # looked up in a set of names (TypeError: unhashable type).
    doc = _cohort_doc(8)
    cq = next(i for i in doc["items"] if i["kind"] == "ClusterQueue")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = ["nvidia.com/gpu"]
    # A resource whose name is not a string is malformed (its quota, read past, could be the GPUs'):
    # refused, naming it.
    assert "resources[0]: a resource with a name" in _refused(doc)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = "cpu"
    doc["items"].append({"kind": ["Cohort"], "metadata": {"name": "x"}})
    with pytest.raises(JobValidationError):
        load_queue_configs(doc)  # no longer a Kueue document: the queue-configuration reader refuses it


def test_the_shipped_kueue_example_lends_cores_and_reads_its_preemption_blocks(solve: Solve) -> None:
    # examples/importers/kueue_queues.json (docs/kubernetes.md): team-b-cq lends 32 of its 64 cores and has
    # no preemption block (Kueue's defaults: Never, Never); team-a-cq has no cores of its own on h100 and
    # the preemption block of Kueue's ClusterQueue concept page.
    queues = load_queue_configs((REPO / "examples" / "importers" / "kueue_queues.json").read_text())
    a, b = queues["team-a"].config, queues["team-b"].config
    assert b.cohort is not None and b.cohort.guaranteed_cpu_cores == 64 - 32
    assert (
        a.preemption.within_queue,
        a.preemption.within_cohort,
        a.preemption.within_cohort_max_priority,
    ) == (
        "lower-priority",
        "lower-priority",
        100,
    )
    assert (b.preemption.within_queue, b.preemption.within_cohort) == ("never", "never")
    jobs = [r for r in read_file(PODS, options=ReadOptions(queues=queues)) if r.id == "ml/h100-train"]
    d = solve(jobs, load_cluster(NODES), queues=queues)
    assert nodes_of(d, "ml/h100-train") == ["gke-a3-h100-node-1"]  # 32 cores, all lent by team-b-cq
