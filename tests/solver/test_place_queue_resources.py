"""Queue CPU and memory budgets (``ml_limits.max_total_cpu_cores``, ``max_total_memory_gb``; a Kueue
ClusterQueue's ``cpu`` and ``memory`` quotas): every job of the queue counts, GPU or not; running jobs
count; over budget means pending with ``QUEUE_BUDGET`` naming the resource, never rejected; evicting a
running job gives its cores back to a job that outranks it. Both engines, every decision through the
checker's rule 17, and the checker alone on decisions built by hand."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs import JobValidationError
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig, load_queue_configs
from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve, pending_reason
from tests.solver.kube_objects import kueue_queue


def _queues(**limits: float) -> dict[str, QueueConfig]:
    return {"train": QueueConfig.model_validate({"queue": "train", "config": {"ml_limits": limits}})}


def _job(
    job_id: str, cpu: float, *, gpus: int = 0, mem: float = 0, cls: str = "on-demand", queue: str = "train"
) -> Job:
    gpu = GpuDemand(count=gpus) if gpus else None
    return Job(
        id=job_id, queue=queue, priority_class=cls, tasks=[TaskGroup(cpu_cores=cpu, memory_gb=mem, gpu=gpu)]
    )


def _running(
    cluster: Cluster,
    job: str,
    node: str,
    cpu: float,
    *,
    gpus: int = 0,
    mem: float = 0,
    cls: str = "on-demand",
    queue: str = "train",
) -> Cluster:
    return cluster.with_allocations(
        [
            {
                "job": job,
                "queue": queue,
                "priority_class": cls,
                "preemptible": cls == "spot",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": node, "gpus": list(range(gpus)), "cpu_cores": cpu, "memory_gb": mem}],
            }
        ]
    )


def test_a_cpu_budget_counts_running_and_new_jobs_gpu_or_not(solve: Solve) -> None:
    # Budget 64 cores; a running CPU job of the queue holds 40. Two new 16-core jobs (one with a GPU): the
    # cluster (2 DGX, 224 cores each) has room for both, the budget for one: 40 + 16 = 56 <= 64 < 72.
    c = _running(cluster_of(dgx_h100(2)), "old", "dgx-h100-1", 40)
    jobs = [_job("a", 16, gpus=1, cls="reserved"), _job("b", 16)]
    q = _queues(max_total_cpu_cores=64)
    d = solve(jobs, c, queues=q)
    assert "REJECTED" not in d.stats.status  # CP-SAT's model keeps the budget itself, not the checker for it
    assert [p.job for p in d.placements] == ["a"]  # the reserved one wins the budget
    reason = pending_reason(d, "b") or ""
    # 64 - 40 - 16 = 8 cores left; b needs 16: 8 more.
    assert reason.startswith("QUEUE_BUDGET") and "cpu budget" in reason and "8 more cores" in reason, reason
    assert d.rejected == []
    [b] = [p for p in d.pending if p.job == "b"]
    assert b.reasons[0].details["resource"] == "cpu" and b.reasons[0].details["more"] == pytest.approx(8)


def test_a_memory_budget_lets_in_what_fits(solve: Solve) -> None:
    # Budget 512 GB, nothing running: 400 GB fits; 600 GB does not (88 GB more would let it in, 512 - 400).
    c = cluster_of(dgx_h100(2))
    jobs = [_job("small", 8, mem=400, cls="reserved"), _job("big", 8, mem=200)]
    q = _queues(max_total_memory_gb=512)
    d = solve(jobs, c, queues=q)
    assert "REJECTED" not in d.stats.status
    assert [p.job for p in d.placements] == ["small"]
    reason = pending_reason(d, "big") or ""
    assert reason.startswith("QUEUE_BUDGET") and "memory budget" in reason and "88 more GB" in reason, reason


def test_other_queues_and_jobs_without_a_queue_are_not_limited(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1))
    jobs = [_job("other", 100, queue="serve"), Job(id="none", tasks=[TaskGroup(cpu_cores=100)])]
    d = solve(jobs, c, queues=_queues(max_total_cpu_cores=0))
    assert sorted(p.job for p in d.placements) == ["none", "other"]


def test_an_eviction_gives_its_cores_back_to_a_job_that_outranks_it(solve: Solve) -> None:
    # One DGX, full: a spot job of the queue holds its 8 GPUs and 48 of a 64-core budget. A reserved 8-GPU
    # job of 32 cores needs the node, so the spot job is evicted, and its 48 cores come back: 64 - 48 + 48.
    c = _running(cluster_of(dgx_h100(1)), "spot", "dgx-h100", 48, gpus=8, cls="spot")
    jobs = [_job("urgent", 32, gpus=8, cls="reserved")]
    d = solve(jobs, c, queues=_queues(max_total_cpu_cores=64))
    assert [p.job for p in d.placements] == ["urgent"]
    assert [e.job for e in d.preemptions] == ["spot"]


def test_without_the_eviction_the_budget_holds(solve: Solve) -> None:
    # The same node, but a budget of 40 cores and a job of 48: even with the spot job's 16 cores back
    # (40 - 16 + 16 = 40 < 48) it does not fit the budget, so it waits and nothing is evicted.
    c = _running(cluster_of(dgx_h100(1)), "spot", "dgx-h100", 16, gpus=8, cls="spot")
    jobs = [_job("urgent", 48, gpus=8, cls="reserved")]
    d = solve(jobs, c, queues=_queues(max_total_cpu_cores=40))
    assert d.placements == [] and d.preemptions == []
    assert (pending_reason(d, "urgent") or "").startswith("QUEUE_BUDGET")


def _placed(job: str, cpu: float, mem: float = 0) -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node="dgx-h100", cpu_cores=cpu, memory_gb=mem)])


@pytest.mark.parametrize(
    ("limits", "cpu", "mem", "broken"),
    [
        ({"max_total_cpu_cores": 64}, 24, 0, False),  # 40 running + 24 = 64: at the budget
        ({"max_total_cpu_cores": 64}, 25, 0, True),  # 65 > 64
        ({"max_total_memory_gb": 100}, 1, 60, False),  # 40 + 60 = 100
        ({"max_total_memory_gb": 100}, 1, 61, True),
    ],
)
def test_the_checker_counts_running_and_placed_cores_and_memory(
    limits: dict[str, float], cpu: float, mem: float, broken: bool
) -> None:
    c = _running(cluster_of(dgx_h100(1)), "old", "dgx-h100", 40, mem=40)
    jobs = [_job("a", cpu, mem=mem)]
    d = Decision(placements=[_placed("a", cpu, mem)])
    violations = [v for v in check(d, jobs, c, now=NOW, queues=_queues(**limits)) if v.rule == "queue-budget"]
    assert bool(violations) is broken, violations
    if broken:
        assert next(iter(limits)) in violations[0].message


def test_the_checker_refuses_cores_freed_by_evicting_an_equal() -> None:
    # Budget 64, an on-demand job holds 48: evicting it frees its cores for higher-priority work only, so
    # an on-demand job placed on them (32 + 48 counted > 64) breaks the budget.
    from placer.solver.decision import Eviction

    c = _running(cluster_of(dgx_h100(1)), "old", "dgx-h100", 48)
    jobs = [_job("a", 32)]
    d = Decision(
        placements=[_placed("a", 32)], preemptions=[Eviction(job="old", **{"for": ["a"]}, nodes=["dgx-h100"])]
    )
    violations = [v for v in check(d, jobs, c, now=NOW, queues=_queues(max_total_cpu_cores=64))]
    assert any(v.rule == "queue-budget" and "rank" in v.message for v in violations), violations


def _cluster_queue(resources: list[dict[str, Any]], cohort: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": [r["name"] for r in resources],
                "flavors": [{"name": "default-flavor", "resources": resources}],
            }
        ]
    }
    if cohort:
        spec["cohort"] = cohort
    return kueue_queue(spec)


def test_kueue_cpu_and_memory_quotas_become_the_queues_budgets() -> None:
    # Kueue's single-ClusterQueue sample: cpu 9, memory 36Gi (config/samples/single-clusterqueue-setup).
    doc = _cluster_queue([{"name": "cpu", "nominalQuota": 9}, {"name": "memory", "nominalQuota": "36Gi"}])
    limits = load_queue_configs(doc)["lq"].config.ml_limits
    assert (
        limits.max_total_cpu_cores == 9 and limits.max_total_memory_gb == 36 and limits.max_total_gpus is None
    )
    milli = _cluster_queue(
        [{"name": "cpu", "nominalQuota": "1500m"}, {"name": "memory", "nominalQuota": "512Mi"}]
    )
    limits = load_queue_configs(milli)["lq"].config.ml_limits
    assert limits.max_total_cpu_cores == 1.5 and limits.max_total_memory_gb == 0.5


def test_in_a_cohort_the_budget_is_nominal_plus_borrowing_limit_or_none() -> None:
    limited = _cluster_queue([{"name": "cpu", "nominalQuota": 8, "borrowingLimit": "4"}], cohort="all")
    assert load_queue_configs(limited)["lq"].config.ml_limits.max_total_cpu_cores == 12
    unlimited = _cluster_queue([{"name": "cpu", "nominalQuota": 8}], cohort="all")
    assert load_queue_configs(unlimited)["lq"].config.ml_limits.max_total_cpu_cores is None


def test_a_bad_cpu_or_memory_quota_is_refused_naming_it() -> None:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(_cluster_queue([{"name": "cpu", "nominalQuota": "lots"}]), source="kueue.json")
    [issue] = e.value.issues
    assert issue.code == "type" and issue.path.endswith("flavors[0].resources[0].nominalQuota")
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(_cluster_queue([{"name": "memory", "nominalQuota": "-1Gi"}]), source="kueue.json")
    assert [i.code for i in e.value.issues] == ["range"]


def _cohort_queues(total_cpu: float, **own: float) -> dict[str, QueueConfig]:
    """Queues ``a`` and ``b`` of one cohort ``c`` whose CPU total is ``total_cpu``; each queue's own
    ``ml_limits`` (``own``: ``a_cpu``, ``b_cpu``) when given (a queue without a borrowing limit has none)."""
    cohort = {"name": "c", "max_total_gpus": 100, "max_total_cpu_cores": total_cpu}
    out = {}
    for q in ("a", "b"):
        limits = {"max_total_cpu_cores": own[f"{q}_cpu"]} if f"{q}_cpu" in own else {}
        out[q] = QueueConfig.model_validate({"queue": q, "config": {"ml_limits": limits, "cohort": cohort}})
    return out


def test_a_cohorts_cpu_total_holds_its_queues_together(solve: Solve) -> None:
    # Cohort c has 64 cores; queue b's running job holds 40. Queue a's own budget (64: nominal plus its
    # borrowing limit) lets a 32-core job in, the cohort does not: 40 + 32 = 72 > 64, 8 too many. A 24-core
    # one fits both (64).
    c = _running(cluster_of(dgx_h100(2)), "old", "dgx-h100-1", 40, queue="b")
    q = _cohort_queues(64, a_cpu=64)
    big = _job("big", 32, queue="a", cls="reserved")
    d = solve([big], c, queues=q)
    assert "REJECTED" not in d.stats.status and d.placements == []
    [p] = d.pending
    details = p.reasons[0].details
    assert (details["cohort"], details["resource"], details["more"]) == ("c", "cpu", pytest.approx(8))
    d = solve([_job("small", 24, queue="a")], c, queues=q)
    assert [p.job for p in d.placements] == ["small"]


def test_a_queue_without_a_budget_of_its_own_is_held_by_its_cohort(solve: Solve) -> None:
    # Queue a has no CPU budget of its own (Kueue: no borrowing limit, it may borrow whatever is unused);
    # the cohort's 64 still bound it: of two 40-core jobs, one runs.
    q = _cohort_queues(64)
    d = solve(
        [_job("x", 40, queue="a", cls="reserved"), _job("y", 40, queue="a")],
        cluster_of(dgx_h100(2)),
        queues=q,
    )
    assert [p.job for p in d.placements] == ["x"]
    assert d.pending[0].reasons[0].details["cohort"] == "c"


def test_an_eviction_in_the_cohort_gives_its_cores_to_a_job_that_outranks_it(solve: Solve) -> None:
    # One DGX, full: queue b's spot job holds its 8 GPUs and 48 of the cohort's 64 cores. Queue a's reserved
    # 8-GPU job of 32 cores evicts it; its 48 cores come back to the cohort (48 + 32 > 64 otherwise).
    c = _running(cluster_of(dgx_h100(1)), "spot", "dgx-h100", 48, gpus=8, cls="spot", queue="b")
    d = solve([_job("urgent", 32, gpus=8, cls="reserved", queue="a")], c, queues=_cohort_queues(64))
    assert [p.job for p in d.placements] == ["urgent"]
    assert [e.job for e in d.preemptions] == ["spot"]


def test_the_checker_holds_a_cohorts_queues_to_its_total() -> None:
    c = _running(cluster_of(dgx_h100(1)), "old", "dgx-h100", 40, queue="b")
    jobs = [_job("a1", 20, queue="a"), _job("a2", 5, queue="a")]
    over = Decision(placements=[_placed("a1", 20), _placed("a2", 5)])
    violations = [
        v for v in check(over, jobs, c, now=NOW, queues=_cohort_queues(64)) if v.rule == "queue-budget"
    ]
    assert [(v.job, "65 cores" in v.message) for v in violations] == [("c", True)]
    fits = Decision(
        placements=[_placed("a1", 20)],
        pending=[{"job": "a2", "reasons": [{"code": "QUEUE_BUDGET", "message": ""}]}],
    )
    assert [
        v for v in check(fits, jobs, c, now=NOW, queues=_cohort_queues(64)) if v.rule == "queue-budget"
    ] == []


def test_kueue_gives_a_flat_cohort_its_queues_nominal_cpu_and_memory() -> None:
    # Two ClusterQueues of cohort "all" (cpu 8 and 24, memory 32Gi and 64Gi); a tree of cohorts has its
    # own rules instead (tests/solver/jobs/test_kueue.py).
    a = _cluster_queue(
        [{"name": "cpu", "nominalQuota": 8}, {"name": "memory", "nominalQuota": "32Gi"}], cohort="all"
    )
    b = _cluster_queue(
        [{"name": "cpu", "nominalQuota": 24}, {"name": "memory", "nominalQuota": "64Gi"}], cohort="all"
    )
    for obj, name in ((b["items"][0], "cq-b"), (b["items"][1], "lq-b")):
        obj["metadata"]["name"] = name
    b["items"][1]["spec"]["clusterQueue"] = "cq-b"
    queues = load_queue_configs({"apiVersion": "v1", "kind": "List", "items": a["items"] + b["items"]})
    cohorts = {q: qc.config.cohort for q, qc in queues.items()}
    assert {q: (c.max_total_cpu_cores, c.max_total_memory_gb) for q, c in cohorts.items() if c} == {
        "lq": (32, 96),
        "lq-b": (32, 96),
    }


def _pods_job(job_id: str, replicas: int, *, cls: str = "on-demand") -> Job:
    return Job(id=job_id, queue="train", priority_class=cls, tasks=[TaskGroup(count=replicas, cpu_cores=1)])


def test_a_pods_quota_counts_every_replica_running_and_placed(solve: Solve) -> None:
    # Budget 5 pods (the Kueue sample's pods quota); a running job of the queue is 2 pods. A 3-replica job
    # fits (2 + 3 = 5); a second 2-replica one does not (7 > 5: 2 more pods), and waits naming pods.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            {
                "job": "old",
                "queue": "train",
                "replicas": [{"node": "dgx-h100-1", "cpu_cores": 1}, {"node": "dgx-h100-2", "cpu_cores": 1}],
            }
        ]
    )
    jobs = [_pods_job("three", 3, cls="reserved"), _pods_job("two", 2)]
    d = solve(jobs, c, queues=_queues(max_total_pods=5))
    assert "REJECTED" not in d.stats.status
    assert [p.job for p in d.placements] == ["three"]
    [p] = d.pending
    details = p.reasons[0].details
    assert (details["resource"], details["need"], details["room"], details["more"]) == ("pods", 2, 0, 2)
    over = Decision(placements=[JobPlacement(job="two", replicas=[ReplicaPlacement(node="dgx-h100-1")] * 4)])
    violations = check(over, [_pods_job("two", 4)], c, now=NOW, queues=_queues(max_total_pods=5))
    budget = [v for v in violations if v.rule == "queue-budget"]
    assert len(budget) == 1 and "6 pods" in budget[0].message and "max_total_pods" in budget[0].message


def test_kueue_pods_quotas_become_the_queues_and_cohorts_pods_budgets() -> None:
    # The Red Hat build of Kueue's basic ClusterQueue: cpu 9, memory 36Gi, pods 5 (and a GPU resource).
    doc = _cluster_queue(
        [
            {"name": "cpu", "nominalQuota": 9},
            {"name": "memory", "nominalQuota": "36Gi"},
            {"name": "pods", "nominalQuota": 5},
        ]
    )
    assert load_queue_configs(doc)["lq"].config.ml_limits.max_total_pods == 5
    in_cohort = _cluster_queue([{"name": "pods", "nominalQuota": 5, "borrowingLimit": 2}], cohort="all")
    config = load_queue_configs(in_cohort)["lq"].config
    assert (
        config.ml_limits.max_total_pods == 7
        and config.cohort is not None
        and config.cohort.max_total_pods == 5
    )
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(_cluster_queue([{"name": "pods", "nominalQuota": "1500m"}]), source="kueue.json")
    assert [i.code for i in e.value.issues] == ["range"]


# What a queue keeps of a cohort's CPU, memory and pods (Kueue's lendingLimit below the quota).


def _keeping_queues(total_cpu: float, b_keeps: float) -> dict[str, QueueConfig]:
    """Queues ``a`` and ``b`` of cohort ``c`` (``total_cpu`` cores), ``b`` keeping ``b_keeps`` of them: the
    part of its quota it does not lend (nominal quota minus its ``lendingLimit``)."""
    out = {}
    for q in ("a", "b"):
        cohort: dict[str, Any] = {"name": "c", "max_total_gpus": 100, "max_total_cpu_cores": total_cpu}
        if q == "b" and b_keeps:
            cohort["guaranteed_cpu_cores"] = b_keeps
        out[q] = QueueConfig.model_validate({"queue": q, "config": {"cohort": cohort}})
    return out


@pytest.mark.parametrize("b_keeps", [0, 24])
def test_what_a_queue_keeps_the_others_never_borrow(solve: Solve, b_keeps: float) -> None:
    # Cohort c has 64 cores and nothing runs. Queue a asks 32 + 16. When b lends all of its quota, both fit
    # (48 <= 64); when b keeps 24 of it, a may use 64 - 24 = 40: the 32-core job runs and the 16-core one
    # waits, 8 cores short, the details naming the cohort — though b uses none of its 24.
    jobs = [_job("a1", 32, queue="a", cls="reserved"), _job("a2", 16, queue="a")]
    d = solve(jobs, cluster_of(dgx_h100(2)), queues=_keeping_queues(64, b_keeps))
    assert "REJECTED" not in d.stats.status
    if not b_keeps:
        assert sorted(p.job for p in d.placements) == ["a1", "a2"]
        return
    assert [p.job for p in d.placements] == ["a1"]
    [p] = d.pending
    details = p.reasons[0].details
    assert (details["cohort"], details["resource"], details["more"]) == ("c", "cpu", pytest.approx(8))


def test_a_queue_uses_what_it_keeps_while_the_others_hold_the_rest(solve: Solve) -> None:
    # Queue a runs 40 cores, all the cohort lends (64 - 24). b's 24-core job still runs: it is b's own
    # kept part (40 + 24 = 64). A further 1-core job of b does not: 40 + 25 > 64, 1 core short. Neither
    # engine's model may count b's kept part as taken by b itself (CP-SAT's bound would then fall below
    # the objective of greedy's answer, a bound error).
    c = _running(cluster_of(dgx_h100(2)), "old", "dgx-h100-1", 40, queue="a")
    jobs = [_job("b1", 24, queue="b", cls="reserved"), _job("b2", 1, queue="b")]
    d = solve(jobs, c, queues=_keeping_queues(64, 24))
    assert "REJECTED" not in d.stats.status and d.stats.bound_error is None
    assert [p.job for p in d.placements] == ["b1"]
    [p] = d.pending
    details = p.reasons[0].details
    assert (details["cohort"], details["resource"], details["more"]) == ("c", "cpu", pytest.approx(1))


def test_an_eviction_in_a_keeping_cohort_gives_its_cores_to_a_job_that_outranks_it(solve: Solve) -> None:
    # One DGX, full: queue a's spot job holds its 8 GPUs and 40 cores, all b lends of 64 (b keeps 24). a's
    # reserved 8-GPU job of 32 cores evicts it and takes its cores: 32 + 24 <= 64.
    c = _running(cluster_of(dgx_h100(1)), "spot", "dgx-h100", 40, gpus=8, cls="spot", queue="a")
    d = solve([_job("urgent", 32, gpus=8, cls="reserved", queue="a")], c, queues=_keeping_queues(64, 24))
    assert [p.job for p in d.placements] == ["urgent"]
    assert [e.job for e in d.preemptions] == ["spot"]


def test_the_checker_counts_each_queue_at_least_what_it_keeps() -> None:
    # a runs 20 of the cohort's 64 cores; b keeps 24 and uses none. Placing 20 more for a counts
    # 40 + 24 = 64: at the total. 21 more counts 65: over, though the cores held are only 41.
    c = _running(cluster_of(dgx_h100(1)), "old", "dgx-h100", 20, queue="a")
    queues = _keeping_queues(64, 24)
    for cpu, broken in ((20, False), (21, True)):
        d = Decision(placements=[_placed("a1", cpu)])
        found = [v for v in check(d, [_job("a1", cpu, queue="a")], c, now=NOW, queues=queues)]
        assert [v.rule for v in found] == (["queue-budget"] if broken else []), found
        if broken:
            assert "cohort counts 65 cores" in found[0].message and "b 0 (keeps 24)" in found[0].message


def test_the_checker_refuses_kept_room_freed_by_evicting_an_equal() -> None:
    # a's on-demand job holds 40 (all b lends); evicting it frees room for higher-priority work only, so an
    # on-demand job of a placed on it counts 32 + 40 (evicted, not outranked) + 24 kept by b > 64.
    from placer.solver.decision import Eviction

    c = _running(cluster_of(dgx_h100(1)), "old", "dgx-h100", 40, queue="a")
    d = Decision(
        placements=[_placed("a1", 32)],
        preemptions=[Eviction(job="old", **{"for": ["a1"]}, nodes=["dgx-h100"])],
    )
    found = check(d, [_job("a1", 32, queue="a")], c, now=NOW, queues=_keeping_queues(64, 24))
    assert any(v.rule == "queue-budget" and "at rank" in v.message for v in found), found


def test_a_kept_part_needs_the_cohorts_total_or_in_a_tree_the_queues_own_quota() -> None:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(
            {"queue": "b", "config": {"cohort": {"name": "c", "max_total_gpus": 8, "guaranteed_pods": 2}}}
        )
    assert "guaranteed_pods needs the cohort's max_total_pods" in str(e.value)
    tree = [{"name": "c", "parent": None}]
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(
            {
                "queue": "b",
                "config": {
                    "cohort": {
                        "name": "c",
                        "max_total_gpus": 8,
                        "max_total_cpu_cores": 10,
                        "guaranteed_cpu_cores": 2,
                        "tree": tree,
                    }
                },
            }
        )
    assert "guaranteed_cpu_cores in a tree needs the queue's nominal_cpu_cores" in str(e.value)
