"""A cohort's totals per flavor (``Flavor.cohort_max_*``): Kueue's ClusterQueues in a cohort lend each
other quota flavor by flavor, so what the cohort's queues hold on one flavor's nodes stays within the sum
of their quotas on that flavor, even when their total over all flavors has room. Both engines through the
``solve`` fixture (the checker on every decision), the checker alone on a decision built by hand, and the
Kueue reader."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from placer.solver.checks import check
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig, load_queue_configs
from placer.topology import Cluster
from tests.solver.check_helpers import decision, place, rep
from tests.solver.conftest import NOW, Solve, nodes_of
from tests.solver.kube_objects import kueue_queue
from tests.solver.pools import pools


def _cluster() -> Cluster:
    """Three H100 nodes (``pool: h100``) and two A100 nodes (``pool: a100``), 8 GPUs each."""
    return pools(h100=3, a100=2)


def _queues(h100: int = 16, a100: int = 16) -> dict[str, QueueConfig]:
    """Queues a and b of cohort ``c`` (GPUs 32 in all), whose flavors carry the cohort's totals on them."""
    flavors: list[dict[str, Any]] = [
        {"name": "h100", "node_labels": {"pool": "h100"}, "cohort_max_gpus": h100},
        {"name": "a100", "node_labels": {"pool": "a100"}, "cohort_max_gpus": a100},
    ]
    group = {"covered": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
    cohort = {"name": "c", "max_total_gpus": h100 + a100}
    return {
        q: QueueConfig.model_validate({"queue": q, "config": {"flavor_groups": [group], "cohort": cohort}})
        for q in ("a", "b")
    }


def _running(cluster: Cluster, *held: tuple[str, str, str]) -> Cluster:
    """``cluster`` with unevictable jobs (id, queue, node) holding all 8 GPUs of their nodes."""
    return cluster.with_allocations(
        [
            {
                "job": job,
                "queue": queue,
                "priority_class": "reserved",
                "preemptible": False,
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": node, "gpus": list(range(8)), "cpu_cores": 8}],
            }
            for job, queue, node in held
        ]
    )


def _job(job_id: str, *, gpu_type: str | None = None) -> Job:
    demand = GpuDemand(count=8, types=[gpu_type] if gpu_type else [])
    return Job(id=job_id, queue="a", tasks=[TaskGroup(cpu_cores=8, gpu=demand)])


def test_a_full_flavor_of_the_cohort_sends_the_job_to_another_flavor(solve: Solve) -> None:
    # Queues a and b hold 8 H100s each: the cohort's 16 on h100 are used, 16 of its 32 in all. A third H100
    # node is free, but an 8-GPU job of queue a goes to an A100 node; an H100-only job waits, naming the
    # cohort and each flavor's room; with 24 H100s in the cohort it runs on the free H100 node.
    c = _running(_cluster(), ("a1", "a", "h100-0"), ("b1", "b", "h100-1"))
    d = solve([_job("any")], c, queues=_queues())
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps it itself
    assert nodes_of(d, "any")[0].startswith("a100-")
    d = solve([_job("h100", gpu_type="nvidia-h100-80gb")], c, queues=_queues())
    [p] = d.pending
    [r] = p.reasons
    assert r.code == "QUEUE_BUDGET" and r.details["cohort"] == "c" and r.details["cohort_only"] is True
    assert r.details["flavors"] == {"h100": 0}
    d = solve([_job("h100", gpu_type="nvidia-h100-80gb")], c, queues=_queues(h100=24))
    assert nodes_of(d, "h100") == ["h100-2"]


def test_jobs_of_one_batch_share_the_cohorts_room_on_a_flavor(solve: Solve) -> None:
    # 8 H100s of the cohort's 16 are held by b; two H100-only jobs of queues a and b: one of them runs.
    c = _running(_cluster(), ("b1", "b", "h100-0"))
    jobs = [_job("x", gpu_type="nvidia-h100-80gb"), _job("y", gpu_type="nvidia-h100-80gb")]
    jobs[1] = jobs[1].model_copy(update={"queue": "b"})
    d = solve(jobs, c, queues=_queues())
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps it itself
    assert len(d.placements) == 1 and len(d.pending) == 1


def test_the_checker_counts_the_cohort_per_flavor() -> None:
    c = _running(_cluster(), ("a1", "a", "h100-0"), ("b1", "b", "h100-1"))
    job = _job("h100", gpu_type="nvidia-h100-80gb")
    over = decision(place("h100", rep("h100-2", list(range(8)), cpu_cores=8)))
    [v] = check(over, [job], c, now=NOW, queues=_queues())
    assert v.rule == "queue-budget" and "the cohort's total of max_gpus on flavor 'h100' is 16" in v.message
    assert "hold 24 GPUs" in v.message, v.message
    assert check(over, [job], c, now=NOW, queues=_queues(h100=24)) == []
    fine = decision(place("h100", rep("a100-0", list(range(8)), cpu_cores=8)))
    assert (
        check(
            fine,
            [job.model_copy(update={"tasks": [TaskGroup(cpu_cores=8, gpu=GpuDemand(count=8))]})],
            c,
            now=NOW,
            queues=_queues(),
        )
        == []
    )


def _kueue() -> dict[str, Any]:
    """ClusterQueues a-cq and b-cq of cohort ``c``, 8 H100s and 8 A100s of quota each (no borrowing limit),
    and ResourceFlavors by node pool; LocalQueues ml/a and ml/b."""

    def cq(name: str) -> dict[str, Any]:
        def flavor(f: str) -> dict[str, Any]:
            return {
                "name": f,
                "resources": [
                    {"name": "cpu", "nominalQuota": "64"},
                    {"name": "memory", "nominalQuota": "512Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": 8},
                ],
            }

        return {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohort": "c",
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [flavor("h100"), flavor("a100")],
                    }
                ],
            },
        }

    doc = kueue_queue(
        {}, local=("ml", "a"), flavors={p: {"nodeLabels": {"pool": p}} for p in ("h100", "a100")}
    )
    doc["items"] = [i for i in doc["items"] if i["kind"] != "ClusterQueue"]
    doc["items"][-1]["spec"]["clusterQueue"] = "a-cq"
    b_local = {
        **doc["items"][-1],
        "metadata": {"namespace": "ml", "name": "b"},
        "spec": {"clusterQueue": "b-cq"},
    }
    doc["items"] += [cq("a-cq"), cq("b-cq"), b_local]
    return doc


def test_kueue_gives_each_flavor_the_cohorts_total_on_it(solve: Solve) -> None:
    queues = load_queue_configs(_kueue())
    [group] = queues["a"].config.flavor_groups
    totals = {
        f.name: (f.max_gpus, f.cohort_max_gpus, f.cohort_max_cpu_cores, f.cohort_max_memory_gb)
        for f in group.flavors
    }
    assert totals == {"h100": (None, 16, 128, 1024), "a100": (None, 16, 128, 1024)}
    c = _running(_cluster(), ("a1", "a", "h100-0"), ("b1", "b", "h100-1"))
    assert nodes_of(solve([_job("any")], c, queues=queues), "any")[0].startswith("a100-")


def _tree_queues(h100: float = 8, a100: float = 8, org_h100: float = 0) -> dict[str, QueueConfig]:
    """Queues a and b under cohort ``research``, child of ``org`` (with ``org_h100`` H100s of its own):
    each queue's quota is ``h100`` H100s and ``a100`` A100s (``Flavor.tree_quota``), so the trees are kept
    per flavor; the tree over all flavors has the sums."""
    flavors: list[dict[str, Any]] = [
        {"name": "h100", "node_labels": {"pool": "h100"}, "tree_quota": {"nominal_gpus": h100}},
        {"name": "a100", "node_labels": {"pool": "a100"}, "tree_quota": {"nominal_gpus": a100}},
    ]
    group = {"covered": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
    tree = [
        {"name": "research", "parent": "org"},
        {
            "name": "org",
            "parent": None,
            "nominal_gpus": int(org_h100),
            "flavor_quotas": {"h100": {"nominal_gpus": org_h100}},
        },
    ]
    cohort = {"name": "research", "max_total_gpus": 0, "nominal_gpus": int(h100 + a100), "tree": tree}
    return {
        q: QueueConfig.model_validate({"queue": q, "config": {"flavor_groups": [group], "cohort": cohort}})
        for q in ("a", "b")
    }


def test_a_tree_of_cohorts_is_kept_per_flavor(solve: Solve) -> None:
    # a and b hold 8 H100s each: the tree's 16 H100s are used, 16 of its 32 GPUs in all. An 8-GPU job of
    # queue a goes to an A100 node; an H100-only job waits, naming the cohort; with 8 H100s of org's own
    # (lent down the tree) it runs on the free H100 node.
    c = _running(_cluster(), ("a1", "a", "h100-0"), ("b1", "b", "h100-1"))
    d = solve([_job("any")], c, queues=_tree_queues())
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps it itself
    assert nodes_of(d, "any")[0].startswith("a100-")
    d = solve([_job("h100", gpu_type="nvidia-h100-80gb")], c, queues=_tree_queues())
    [p] = d.pending
    [r] = p.reasons
    assert (
        r.code == "QUEUE_BUDGET" and r.details["cohort"] == "research" and r.details["flavors"] == {"h100": 0}
    )
    d = solve([_job("h100", gpu_type="nvidia-h100-80gb")], c, queues=_tree_queues(org_h100=8))
    assert nodes_of(d, "h100") == ["h100-2"]


def test_the_checker_keeps_a_tree_per_flavor() -> None:
    c = _running(_cluster(), ("a1", "a", "h100-0"), ("b1", "b", "h100-1"))
    job = _job("h100", gpu_type="nvidia-h100-80gb")
    over = decision(place("h100", rep("h100-2", list(range(8)), cpu_cores=8)))
    [v] = check(over, [job], c, now=NOW, queues=_tree_queues())
    assert v.rule == "queue-budget" and "24 GPUs on flavor 'h100'" in v.message and "total is 16" in v.message
    assert check(over, [job], c, now=NOW, queues=_tree_queues(org_h100=8)) == []


def test_jobs_of_one_batch_share_a_trees_room_on_a_flavor(solve: Solve) -> None:
    # b holds 8 of the tree's 16 H100s; two H100-only jobs of queues a and b: one of them runs.
    c = _running(_cluster(), ("b1", "b", "h100-0"))
    jobs = [_job("x", gpu_type="nvidia-h100-80gb"), _job("y", gpu_type="nvidia-h100-80gb")]
    jobs[1] = jobs[1].model_copy(update={"queue": "b"})
    d = solve(jobs, c, queues=_tree_queues())
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps it itself
    assert len(d.placements) == 1 and len(d.pending) == 1


def _keeping(kept: float) -> dict[str, QueueConfig]:
    """:func:`_queues`, with queue b keeping ``kept`` of its H100 quota (a lendingLimit on that flavor)."""
    queues = _queues()
    b = queues["b"].config
    [group] = b.flavor_groups
    h100 = group.flavors[0].model_copy(update={"tree_quota": {"guaranteed_gpus": kept}})
    regrouped = group.model_copy(update={"flavors": [h100, *group.flavors[1:]]})
    queues["b"] = queues["b"].model_copy(
        update={"config": b.model_copy(update={"flavor_groups": [regrouped]})}
    )
    return queues


def test_what_a_queue_keeps_on_a_flavor_is_kept_out_of_the_cohorts_total_there(solve: Solve) -> None:
    # a holds 8 of the cohort's 16 H100s; b holds none but keeps 8 of its H100 quota for itself: a's next
    # H100-only job waits (8 + 8 held or kept = 16), and a job of any type goes to an A100 node. Keeping
    # nothing, the H100-only job runs.
    c = _running(_cluster(), ("a1", "a", "h100-0"))
    h100_only = _job("h100", gpu_type="nvidia-h100-80gb")
    d = solve([h100_only], c, queues=_keeping(8))
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps it itself
    assert [p.job for p in d.pending] == ["h100"]
    assert nodes_of(solve([_job("any")], c, queues=_keeping(8)), "any")[0].startswith("a100-")
    assert nodes_of(solve([h100_only], c, queues=_keeping(0)), "h100")[0].startswith("h100-")
    over = decision(place("h100", rep("h100-1", list(range(8)), cpu_cores=8)))
    [v] = check(over, [h100_only], c, now=NOW, queues=_keeping(8))
    assert "on flavor 'h100'" in v.message and "b 0 (guaranteed 8)" in v.message, v.message
