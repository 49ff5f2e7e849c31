"""One Kueue flavor per pod set (``Placement.one_flavor``): Kueue gives each pod set of a workload one
flavor of each resource group and adds that flavor's node labels to the pods' node selector, so a pod set
whose queue offers two flavors runs all its pods on the nodes of one of them. Both engines through the
``solve`` fixture (the checker on every decision), the checker alone on decisions built by hand, and the
Kueue reader end to end (a Workload's pod set read with the queue's ResourceFlavors)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place as place_jobs
from placer.solver.jobs import ReadOptions, read_object
from placer.solver.jobs.flavors import Flavor, FlavorGroup, with_flavors
from placer.solver.jobs.model import GpuDemand, Job, Slices, TaskGroup
from placer.solver.jobs.queues import load_queue_configs
from placer.solver.policy import Policy
from placer.topology import Cluster, Inventory, NodeSpec, build_cluster
from placer.topology.inventory import NodeGpus
from tests.solver.check_helpers import decision, place, rep
from tests.solver.conftest import NOW, Solve, nodes_of
from tests.solver.kube_objects import kueue_queue

#: The queue's one resource group: pool a first, then pool b (Kueue tries flavors in this order).
GROUPS = [
    FlavorGroup(
        covered=["cpu", "memory", "nvidia.com/gpu"],
        flavors=[Flavor(name="a", node_labels={"pool": "a"}), Flavor(name="b", node_labels={"pool": "b"})],
    )
]


def _cluster(per_pool: int = 2) -> Cluster:
    """``per_pool`` 8-GPU nodes labelled ``pool: a`` and as many labelled ``pool: b``."""
    nodes = [
        NodeSpec(
            name=f"{pool}-{i}",
            cpu_cores=64,
            memory_gb=512,
            labels={"pool": pool},
            gpus=NodeGpus(type="nvidia-h100-80gb", count=8),
        )
        for pool in ("a", "b")
        for i in range(per_pool)
    ]
    return build_cluster(Inventory(nodes=nodes), source="t")


def _busy(cluster: Cluster, *nodes: str) -> Cluster:
    """``cluster`` with an unevictable job holding all 8 GPUs of each of ``nodes``."""
    return cluster.with_allocations(
        [
            {
                "job": f"busy-{n}",
                "priority_class": "reserved",
                "preemptible": False,
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": n, "gpus": list(range(8)), "cpu_cores": 8}],
            }
            for n in nodes
        ]
    )


def _gang(job_id: str = "gang", replicas: int = 2, gpus: int = 8) -> Job:
    """A pod set of ``replicas`` pods of ``gpus`` GPUs each, with the queue's flavors applied as the
    reader applies them."""
    job = Job(
        id=job_id, queue="team", tasks=[TaskGroup(count=replicas, cpu_cores=8, gpu=GpuDemand(count=gpus))]
    )
    flavored, problems = with_flavors(job, GROUPS)
    assert problems == []
    return flavored


def _pools(d: Any, job: str) -> set[str]:
    return {n.split("-")[0] for n in nodes_of(d, job)}


def test_with_flavors_gives_a_pod_set_its_choice_of_flavors_in_order() -> None:
    [one] = _gang().placement.one_flavor
    assert [(f.name, f.node_labels) for f in one.flavors] == [("a", {"pool": "a"}), ("b", {"pool": "b"})]
    # A single pod, or a queue with one flavor, has nothing to choose between: no such rule.
    assert _gang(replicas=1).placement.one_flavor == []
    single = [FlavorGroup(covered=GROUPS[0].covered, flavors=GROUPS[0].flavors[:1])]
    job = Job(id="j", queue="team", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=8))])
    assert with_flavors(job, single)[0].placement.one_flavor == []


def test_a_gang_goes_whole_to_the_flavor_that_holds_it(solve: Solve) -> None:
    # a-0 is busy: pool a has one free node, pool b two. Two 8-GPU pods fit on a-1 + b-0 by capacity, but
    # Kueue gives the pod set one flavor: both pods go to pool b.
    d = solve([_gang()], _busy(_cluster(), "a-0"))
    assert len(nodes_of(d, "gang")) == 2
    assert _pools(d, "gang") == {"b"}


def test_a_gang_no_single_flavor_holds_waits(solve: Solve) -> None:
    # One free node in each pool: two 8-GPU pods fit the cluster, not one flavor. Without the queue's
    # flavors the same job runs on the two free nodes.
    c = _busy(_cluster(), "a-0", "b-0")
    d = solve([_gang()], c)
    [pending] = d.pending
    assert pending.job == "gang"
    assert [(r.code, r.details["flavors"]) for r in pending.reasons] == [("NO_ONE_FLAVOR", {"a": 1, "b": 1})]
    plain = Job(id="plain", tasks=[TaskGroup(count=2, cpu_cores=8, gpu=GpuDemand(count=8))])
    assert sorted(nodes_of(solve([plain], c), "plain")) == ["a-1", "b-1"]


def test_greedy_tries_the_flavors_in_the_queues_order() -> None:
    # Both pools free: Kueue takes the first flavor that fits, pool a.
    d = place_jobs([_gang()], _cluster(), Policy(engine="greedy"), now=NOW)
    assert _pools(d, "gang") == {"a"}


def test_each_pod_set_of_a_job_gets_its_own_flavor(solve: Solve) -> None:
    # Two pod sets of two 8-GPU pods on a cluster of three nodes per pool, one busy in each: each pod set
    # needs a pool of its own (pool a and pool b hold two each), so the job runs with one pod set per pool.
    c = _busy(_cluster(3), "a-0", "b-0")
    tasks = [TaskGroup(name=n, count=2, cpu_cores=8, gpu=GpuDemand(count=8)) for n in ("leader", "workers")]
    job, problems = with_flavors(Job(id="two", queue="team", tasks=tasks), GROUPS)
    assert problems == []
    [p] = solve([job], c).placements
    by_group: dict[str, set[str]] = {}
    for r in p.replicas:
        by_group.setdefault(r.task_group, set()).add(r.node.split("-")[0])
    assert sorted(by_group.values(), key=sorted) == [{"a"}, {"b"}]


def test_slices_of_a_pod_set_stay_in_one_flavor(solve: Solve) -> None:
    # Kueue's topology-aware scheduling places a pod set inside the flavor it was given. Rack r1 holds a-0
    # and b-0, rack r2 a-1 and b-1: every rack mixes the two pools. A slice of two 8-GPU pods needs both
    # nodes of a rack, which are of two flavors, so it waits (without the flavors it would run on one
    # rack); a slice of two 4-GPU pods fits one node, of one rack and one pool.
    nodes = [
        NodeSpec(
            name=f"{pool}-{i}",
            cpu_cores=64,
            memory_gb=512,
            rack=f"r{i + 1}",
            labels={"pool": pool},
            gpus=NodeGpus(type="nvidia-h100-80gb", count=8),
        )
        for pool in ("a", "b")
        for i in range(2)
    ]
    c = build_cluster(Inventory(nodes=nodes), source="t")

    def sliced(gpus: int) -> Job:
        group = TaskGroup(
            count=2, cpu_cores=8, gpu=GpuDemand(count=gpus), slices=Slices(level="rack", size=2)
        )
        job, problems = with_flavors(Job(id=f"s{gpus}", queue="team", tasks=[group]), GROUPS)
        assert problems == []
        return job

    d = solve([sliced(8)], c)
    assert [p.job for p in d.pending] == ["s8"]
    d = solve([sliced(4)], c)
    [p] = d.placements
    assert len({r.node for r in p.replicas}) == 1  # one node: one rack and one pool


def test_the_checker_refuses_a_pod_set_on_two_flavors() -> None:
    c = _cluster()
    job = _gang()
    split = decision(
        place("gang", rep("a-0", list(range(8)), cpu_cores=8), rep("b-0", list(range(8)), cpu_cores=8))
    )
    [v] = [v for v in check(split, [job], c, now=NOW) if v.rule == "one-flavor"]
    assert "'a'" in v.message and "'b'" in v.message, v.message
    # The same placement of the job without the queue's flavors breaks no rule.
    plain = job.model_copy(update={"placement": job.placement.model_copy(update={"one_flavor": []})})
    assert check(split, [plain], c, now=NOW) == []
    whole = decision(
        place("gang", rep("b-0", list(range(8)), cpu_cores=8), rep("b-1", list(range(8)), cpu_cores=8))
    )
    assert check(whole, [job], c, now=NOW) == []


def _kueue() -> dict[str, Any]:
    """A ClusterQueue with one resource group of two flavors, by node pool, and its LocalQueue ml/team."""

    def flavor(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "resources": [
                {"name": r, "nominalQuota": q}
                for r, q in (("cpu", "256"), ("memory", "2Ti"), ("nvidia.com/gpu", "32"))
            ],
        }

    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [flavor("a"), flavor("b")]}
        ],
    }
    return kueue_queue(
        spec, local=("ml", "team"), flavors={p: {"nodeLabels": {"pool": p}} for p in ("a", "b")}
    )


@pytest.mark.parametrize("pods", [1, 2])
def test_a_kueue_workloads_pod_set_is_read_with_its_flavors(solve: Solve, pods: int) -> None:
    pod = {
        "containers": [
            {
                "name": "main",
                "image": "trainer:1",
                "resources": {
                    "requests": {"cpu": "8", "nvidia.com/gpu": "8"},
                    "limits": {"nvidia.com/gpu": "8"},
                },
            }
        ]
    }
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {
            "queueName": "team",
            "podSets": [{"name": "main", "count": pods, "template": {"spec": pod}}],
        },
    }
    [r] = read_object(workload, options=ReadOptions(queues=load_queue_configs(_kueue())))
    assert r.ok and r.job is not None, r.errors
    assert len(r.job.placement.one_flavor) == (pods > 1)
    d = solve([r], _busy(_cluster(), "a-0"), queues=load_queue_configs(_kueue()))
    if pods == 2:
        assert _pools(d, r.job.id) == {"b"}
    else:
        assert len(nodes_of(d, r.job.id)) == 1
