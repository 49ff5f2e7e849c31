"""Extended resources: a Flux resource type beyond cores, GPUs, memory and storage (RFC 14 use case 1.5's
``ib10g``), an SSS consumable ``Resource`` (§5.1.8, a SHOULD) and a Kubernetes extended resource go only to
nodes that have that much free, on both engines, through the checker (rule 21), and the replicas on a node
count it down. Before, Flux and SSS resources were read into the task group and then dropped (use case 1.5
was placed on four nodes without any ``ib10g``), later compared per replica but not counted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs import read_file, read_object, read_text
from placer.solver.jobs.model import Job
from placer.topology import Cluster, InnerVertex, Inventory, NodeSpec, build_cluster
from tests.solver.conftest import NOW, Solve, nodes_of, pending_reason
from tests.solver.kube_objects import pod

MATLAB = """<Job><JobId>matlab</JobId><Requested>
  <Processors>2</Processors><Resource name="License" type="MATLAB">1</Resource>
</Requested></Job>"""


def _node(name: str, *inner: InnerVertex, **labels: str) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=8, memory_gb=64, inner=list(inner), labels=labels)


def _core(n: int) -> InnerVertex:
    return InnerVertex(type="core", size=n)


def test_use_case_1_5_goes_to_the_nodes_with_an_ib10g(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.5.yaml")
    # Slot "ib" x 2: a node with 4 GB and an ib10g each; slot "bicore" x 2: a node with 2 cores each. Two of
    # the four nodes have an ib10g vertex: the "ib" replicas can only be those.
    ib = InnerVertex(type="ib10g", size=1)
    mem = InnerVertex(type="memory", size=16)
    nodes = [_node("ib-0", _core(8), mem, ib), _node("plain-0", _core(8), mem)]
    nodes += [_node("ib-1", _core(8), mem, ib), _node("plain-1", _core(8), mem)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    placement = d.placement_of(r.id)
    assert placement is not None
    by_group = {g: sorted(x.node for x in placement.replicas if x.task_group == g) for g in ("ib", "bicore")}
    assert by_group["ib"] == ["ib-0", "ib-1"]
    assert all(x.extra == {"ib10g": 1.0} for x in placement.replicas if x.task_group == "ib")


def test_without_any_ib10g_use_case_1_5_is_unsatisfiable_and_says_why(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.5.yaml")
    nodes = [_node(f"plain-{i}", _core(8), InnerVertex(type="memory", size=16)) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    reason = pending_reason(d, r.id) or ""
    assert reason.startswith("UNSATISFIABLE") and "extended resource" in reason


def test_an_sss_license_goes_to_a_node_labelled_with_enough(solve: Solve) -> None:
    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None and r.job.tasks[0].extra == {"License:MATLAB": 1.0}
    # No inner tree here: the label resource.License.MATLAB says how many a node has (0 is none).
    nodes = [_node("none"), _node("zero", **{"resource.License.MATLAB": "0"})]
    nodes.append(_node("two", **{"resource.License.MATLAB": "2"}))
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    assert nodes_of(d, r.id) == ["two"]


@pytest.mark.parametrize(
    ("node", "takes", "broken"),
    [
        ("two", 1.0, []),
        ("none", 1.0, ["extended", "extended"]),  # the node has none, and 1 taken of 0
        ("zero", 1.0, ["extended", "extended"]),
        ("two", 0.0, ["extended"]),  # the replica says it takes less than its group asks
        ("two", 3.0, ["extended"]),  # 3 taken of the node's 2
    ],
)
def test_the_checker_refuses_a_replica_on_a_node_that_has_too_little(
    node: str, takes: float, broken: list[str]
) -> None:
    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None
    nodes = [_node("none"), _node("zero", **{"resource.License.MATLAB": "0"})]
    nodes.append(_node("two", **{"resource.License.MATLAB": "2"}))
    cluster = build_cluster(Inventory(nodes=nodes), source="t")
    rep = ReplicaPlacement(node=node, cpu_cores=2, extra={"License:MATLAB": takes} if takes else {})
    d = Decision(placements=[JobPlacement(job=r.id, replicas=[rep])])
    assert [v.rule for v in check(d, [r.job], cluster, now=NOW)] == broken


def test_a_plan_on_a_node_without_the_resource_is_refused_too() -> None:
    """Plans are placements held for later (rule 18 re-checks them as placements): rule 21 holds there."""
    from placer.solver.decision import Hold

    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None
    cluster = build_cluster(Inventory(nodes=[_node("none")]), source="t")
    rep = ReplicaPlacement(node="none", cpu_cores=2, extra={"License:MATLAB": 1})
    hold = Hold(job=r.id, start=NOW.replace(hour=13), replicas=[rep])
    d = Decision(
        reservations=[hold], pending=[{"job": r.id, "reasons": [{"code": "PLANNED_START", "message": "m"}]}]
    )
    assert "plan-placement" in [v.rule for v in check(d, [r.job], cluster, now=NOW)]


# -- Kubernetes extended resources, counted per node ----------------------------------------------------
EFA = "vpc.amazonaws.com/efa"


def _p5(name: str, zone: str = "us-east-2b") -> dict[str, object]:
    """An EKS p5.48xlarge node as ``kubectl get nodes -o json`` writes it (allocatable as the kubelet,
    the NVIDIA device plugin and the EFA device plugin advertise it)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "node.kubernetes.io/instance-type": "p5.48xlarge",
                "topology.kubernetes.io/zone": zone,
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
                "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                "nvidia.com/gpu.count": "8",
            },
        },
        "status": {
            "allocatable": {
                "cpu": "191450m",
                "memory": "2002032776Ki",
                "ephemeral-storage": "27527529330",
                "hugepages-1Gi": "0",
                "hugepages-2Mi": "42Gi",
                "nvidia.com/gpu": "8",
                EFA: "32",
                "pods": "100",
            },
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, gpus: int, efa: int, node: str | None = None, priority: int = 0) -> dict[str, object]:
    """A training pod asking for GPUs and EFA interfaces (limits, as the EFA device plugin's docs write
    them); bound to ``node`` and Running when given, else Pending."""
    limits = {"nvidia.com/gpu": str(gpus), EFA: str(efa), "hugepages-2Mi": "5120Mi"}
    resources = {"limits": limits, "requests": {"cpu": "8", "memory": "64Gi", **limits}}
    return pod(
        name,
        resources,
        node=node,
        image="public.ecr.aws/hpc-cloud/nccl-tests:latest",
        priority=priority,
        schedulerName="default-scheduler",
    )


def _eks(pods: list[dict[str, object]] | None = None) -> Cluster:
    from placer.topology.importers.kubernetes import parse_kubernetes

    nodes = {"apiVersion": "v1", "kind": "List", "items": [_p5("p5-a"), _p5("p5-b")]}
    running = None if pods is None else {"apiVersion": "v1", "kind": "List", "items": pods}
    return build_cluster(
        parse_kubernetes(nodes, running, source="nodes.json", pods_source="pods.json"), source="t"
    )


def _jobs(*pods: dict[str, object]) -> list[Job]:
    out = []
    for p in pods:
        [r] = read_object(p, source="pods.json")
        assert r.ok and r.job is not None, r.errors
        out.append(r.job)
    return out


def test_a_node_allocatable_extended_resources_and_huge_pages_are_read() -> None:
    node = _eks().node("p5-a")
    # hugepages-1Gi 0: none; pods 100: the most pods its kubelet runs.
    assert dict(node.spec.extra) == {EFA: 32.0, "hugepages-2Mi": 42 * 2**30, "pods": 100.0}


def test_pods_asking_all_of_a_nodes_efa_take_a_node_each(solve: Solve) -> None:
    """Three pods of 1 GPU and 32 EFA interfaces on two p5 nodes of 8 GPUs and 32 EFA each: GPUs alone would
    fit all three on one node; EFA lets one pod per node run, and the third waits."""
    jobs = _jobs(*(_pod(f"w{i}", gpus=1, efa=32) for i in range(3)))
    d = solve(jobs, _eks())
    placed = sorted(r.node for p in d.placements for r in p.replicas)
    assert placed == ["p5-a", "p5-b"]
    assert all(r.extra[EFA] == 32 for p in d.placements for r in p.replicas)
    assert len(d.pending) == 1


def test_half_the_efa_each_packs_two_pods_on_a_node(solve: Solve) -> None:
    jobs = _jobs(*(_pod(f"h{i}", gpus=4, efa=16) for i in range(4)))
    d = solve(jobs, _eks())
    by_node: dict[str, int] = {}
    for p in d.placements:
        for r in p.replicas:
            by_node[r.node] = by_node.get(r.node, 0) + 1
    assert by_node == {"p5-a": 2, "p5-b": 2} and d.pending == []


def test_a_running_pod_holding_a_nodes_efa_keeps_the_new_one_off_it(solve: Solve) -> None:
    """The running pod (read with ``--pods``) holds 32 EFA on p5-a and 1 of its 8 GPUs: the new pod asking
    for 32 goes to p5-b."""
    cluster = _eks([_pod("old", gpus=1, efa=32, node="p5-a")])
    assert cluster.free_extra("p5-a", EFA) == 0 and cluster.free_extra("p5-b", EFA) == 32
    d = solve(_jobs(_pod("new", gpus=1, efa=32)), cluster)
    assert nodes_of(d, "ml/new") == ["p5-b"]


def test_a_higher_priority_job_evicts_the_one_holding_the_efa_it_needs(solve: Solve) -> None:
    """One node only, its EFA all held by a preemptible job that uses 1 GPU: the on-demand pod asking for
    32 EFA fits the GPUs but not the EFA, so the spot job is evicted for it (both engines; CP-SAT's
    capacity rows of a node with eviction candidates count EFA too)."""
    from placer.topology.importers.kubernetes import parse_kubernetes

    nodes = {"apiVersion": "v1", "kind": "List", "items": [_p5("p5-a")]}
    cluster = build_cluster(parse_kubernetes(nodes, source="nodes.json"), source="t")
    low = {
        "job": "low",
        "priority_class": "spot",
        "replicas": [{"node": "p5-a", "gpus": [0], "extra": {EFA: 32}}],
    }
    d = solve(_jobs(_pod("high", gpus=1, efa=32)), cluster.with_allocations([low]))
    assert [e.job for e in d.preemptions] == ["low"]
    assert nodes_of(d, "ml/high") == ["p5-a"]
    kept = solve(_jobs(_pod("small", gpus=1, efa=0)), cluster.with_allocations([low]))
    assert kept.preemptions == [] and nodes_of(kept, "ml/small") == ["p5-a"]


def test_the_checker_counts_efa_across_the_decisions_replicas_and_running_pods() -> None:
    cluster = _eks([_pod("old", gpus=1, efa=16, node="p5-a")])
    jobs = _jobs(_pod("x", gpus=1, efa=16), _pod("y", gpus=1, efa=16))
    reps = {
        j.id: ReplicaPlacement(
            node="p5-a", gpus=[k + 1], cpu_cores=8, memory_gb=64, extra=dict(j.tasks[0].extra)
        )
        for k, j in enumerate(jobs)
    }
    one = Decision(placements=[JobPlacement(job="ml/x", replicas=[reps["ml/x"]])])
    assert [v.rule for v in check(one, jobs[:1], cluster, now=NOW)] == []
    both = Decision(placements=[JobPlacement(job=j, replicas=[r]) for j, r in reps.items()])
    broken = [v for v in check(both, jobs, cluster, now=NOW) if v.rule == "extended"]
    assert (
        len(broken) == 1 and "16 held by running jobs + 32 placed = 48, the node has 32" in broken[0].message
    )


def test_mig_slices_of_the_mixed_strategy_are_counted_and_no_whole_gpu_is_left(solve: Solve) -> None:
    """An A100 node of the GPU operator's mixed MIG strategy, as GPU Feature Discovery labels it: its one
    GPU cut into seven 1g.10gb slices, so ``nvidia.com/gpu`` is 0 and the slices are their own resource.
    Seven slice pods fit, the eighth waits; a whole-GPU pod never lands there."""
    from placer.topology.importers.kubernetes import parse_kubernetes

    mig = "nvidia.com/mig-1g.10gb"
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "a100-mig",
            "labels": {
                "kubernetes.io/hostname": "a100-mig",
                "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                "nvidia.com/gpu.count": "1",
                "nvidia.com/mig.strategy": "mixed",
                "nvidia.com/mig-1g.10gb.count": "7",
            },
        },
        "status": {
            "allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "0", mig: "7", "pods": "110"}
        },
    }
    inv = parse_kubernetes({"apiVersion": "v1", "kind": "List", "items": [node]}, source="nodes.json")
    assert inv.nodes[0].extra == {mig: 7.0, "pods": 110.0} and (
        inv.nodes[0].gpus is None or inv.nodes[0].gpus.count == 0
    )
    cluster = build_cluster(inv, source="t")

    slices = _jobs(*(pod(f"s{i}", {"limits": {mig: "1", "cpu": "1"}}) for i in range(8)))
    d = solve(slices, cluster)
    assert len(d.placements) == 7 and [p.job for p in d.pending] == ["ml/s7"]
    whole = solve(_jobs(pod("whole", {"limits": {"nvidia.com/gpu": "1"}})), cluster)
    assert whole.placements == [] and (pending_reason(whole, "ml/whole") or "").startswith("UNSATISFIABLE")


def test_a_node_runs_no_more_pods_than_its_allocatable_pods(solve: Solve) -> None:
    """An EKS node whose network interfaces allow 29 pods (allocatable ``pods: 29``), 27 of them running:
    of five small pending pods two fit there, the rest go to the other node, as kube-scheduler's
    ``NodeResourcesFit`` counts pods. A node that states no limit (not a Kubernetes node) has none."""
    from placer.topology.importers.kubernetes import parse_kubernetes

    small, roomy = _p5("p5-small"), _p5("p5-roomy")
    small["status"]["allocatable"]["pods"] = "29"  # type: ignore[index]
    running = [_cpu_pod(f"r{i}", node="p5-small") for i in range(27)]
    inv = parse_kubernetes(
        {"apiVersion": "v1", "kind": "List", "items": [small, roomy]},
        {"apiVersion": "v1", "kind": "List", "items": running},
        source="nodes.json",
        pods_source="pods.json",
    )
    cluster = build_cluster(inv, source="t")
    assert cluster.free_extra("p5-small", "pods") == 2 and cluster.free_extra("p5-roomy", "pods") == 100
    jobs = _jobs(*(_cpu_pod(f"w{i}") for i in range(5)))
    assert all(j.tasks[0].extra == {"pods": 1.0} for j in jobs)
    d = solve(jobs, cluster)
    on: dict[str, int] = {}
    for p in d.placements:
        on[p.replicas[0].node] = on.get(p.replicas[0].node, 0) + 1
    assert d.pending == [] and on.get("p5-small", 0) <= 2 and sum(on.values()) == 5
    # The same pods on a cluster that states no pod limit: nothing keeps them apart.
    from placer.topology import cluster_of, dgx_h100

    d = solve(jobs, cluster_of(dgx_h100(1)))
    assert len(d.placements) == 5


def test_best_effort_pods_take_their_pod_slots_too(solve: Solve) -> None:
    """A node allowing 4 pods runs 3 that request nothing (a DaemonSet's agent, a debug shell): one of two
    small pending pods fits there, as the kubelet counts every pod; the other waits."""
    from placer.topology.importers.kubernetes import parse_kubernetes

    small = _p5("p5-small")
    small["status"]["allocatable"]["pods"] = "4"  # type: ignore[index]
    running = [pod(f"agent-{i}", {}, node="p5-small", namespace="kube-system") for i in range(3)]
    inv = parse_kubernetes(
        {"apiVersion": "v1", "kind": "List", "items": [small]},
        {"apiVersion": "v1", "kind": "List", "items": running},
        source="nodes.json",
        pods_source="pods.json",
    )
    cluster = build_cluster(inv, source="t")
    assert cluster.free_extra("p5-small", "pods") == 1
    d = solve(_jobs(_cpu_pod("a"), _cpu_pod("b")), cluster)
    assert len(d.placements) == 1 and len(d.pending) == 1


def test_the_checker_counts_pod_slots() -> None:
    small = _p5("p5-small")
    small["status"]["allocatable"]["pods"] = "1"  # type: ignore[index]
    from placer.topology.importers.kubernetes import parse_kubernetes

    cluster = build_cluster(parse_kubernetes({"kind": "List", "items": [small]}, source="n.json"), source="t")
    jobs = _jobs(_cpu_pod("x"), _cpu_pod("y"))
    g = jobs[0].tasks[0]
    reps = [
        ReplicaPlacement(node="p5-small", cpu_cores=g.cpu_cores, memory_gb=g.memory_gb, extra={"pods": 1})
        for _ in jobs
    ]
    d = Decision(placements=[JobPlacement(job=j.id, replicas=[r]) for j, r in zip(jobs, reps, strict=True)])
    assert [v.rule for v in check(d, jobs, cluster, now=NOW)] == ["extended"]


def _cpu_pod(name: str, node: str | None = None) -> dict[str, object]:
    return pod(name, {"requests": {"cpu": "100m", "memory": "64Mi"}}, node=node, image="busybox")
