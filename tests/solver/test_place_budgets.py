"""Queue GPU budgets (OJS ML resources §10.3): over budget means pending with QUEUE_BUDGET, never rejected;
running jobs count; evictions give budget back. Every decision is also checked against rule 17."""

from __future__ import annotations

from datetime import timedelta

from placer.solver.checks import check
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import NOW, pending_reason


def _queues(**limits: int) -> dict[str, QueueConfig]:
    return {"train": QueueConfig.model_validate({"queue": "train", "config": {"ml_limits": limits}})}


def _job(job_id: str, gpus: int, cls: str = "on-demand", queue: str = "train") -> Job:
    return Job(id=job_id, queue=queue, priority_class=cls, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))])


def test_max_total_gpus_counts_running_and_new(engine: str) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    # Budget 16; a running train job holds 8; two new 8-GPU jobs: only one fits the budget, though the
    # cluster (3 DGX) has room for both.
    c = cluster_of(dgx_h100(3)).with_allocations(
        [
            {
                "job": "old",
                "queue": "train",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": "dgx-h100-1", "gpus": list(range(8))}],
            }
        ]
    )
    jobs = [_job("a", 8, cls="reserved"), _job("b", 8)]
    q = _queues(max_total_gpus=16)
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert check(d, jobs, c, now=NOW, queues=q) == []
    assert [p.job for p in d.placements] == ["a"]  # the reserved one wins the budget
    reason = pending_reason(d, "b") or ""
    assert reason.startswith("QUEUE_BUDGET") and "8 more GPUs" in reason and "not rejected" in reason
    assert d.rejected == []


def test_max_concurrent_gpu_jobs(engine: str) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    c = cluster_of(dgx_h100(1))
    jobs = [_job(f"j{i}", 1) for i in range(4)]
    q = _queues(max_concurrent_gpu_jobs=2)
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert check(d, jobs, c, now=NOW, queues=q) == []
    assert len(d.placements) == 2
    assert sorted((pending_reason(d, p.job) or "")[:12] for p in d.pending) == ["QUEUE_BUDGET"] * 2


def test_other_queues_and_cpu_jobs_are_not_limited(engine: str) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    c = cluster_of(dgx_h100(1))
    jobs = [_job("gpu-other", 8, queue="serve"), Job(id="cpu", queue="train", tasks=[TaskGroup(cpu_cores=4)])]
    q = _queues(max_total_gpus=0)
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert sorted(p.job for p in d.placements) == ["cpu", "gpu-other"]


def test_checker_reports_a_decision_over_budget() -> None:
    from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement

    c = cluster_of(dgx_h100(1))
    jobs = [_job("a", 8)]
    d = Decision(
        placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100", gpus=list(range(8)))])]
    )
    assert [v.rule for v in check(d, jobs, c, now=NOW, queues=_queues(max_total_gpus=4))] == ["queue-budget"]
    assert check(d, jobs, c, now=NOW, queues=_queues(max_total_gpus=8)) == []


def _spot_queue_cluster() -> object:
    # Three DGX: two spot jobs of queue "spot" hold dgx-h100-1 and -2 whole (started an hour ago, no
    # checkpoint); dgx-h100-3 is free. The spot queue's budget is 16 GPUs, all used by the two.
    def run(job: str, node: str) -> dict[str, object]:
        return {
            "job": job,
            "queue": "spot",
            "priority_class": "spot",
            "started_at": NOW - timedelta(hours=1),
            "replicas": [{"node": node, "gpus": list(range(8))}],
        }

    return cluster_of(dgx_h100(3)).with_allocations([run("s1", "dgx-h100-1"), run("s2", "dgx-h100-2")])


def test_evictions_free_budget_only_for_work_that_outranks_the_victim(engine: str) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    # An on-demand 8-GPU job (queue "train") and a spot 4-GPU job (queue "spot"). The on-demand job fits
    # the free dgx-h100-3, so nothing must be evicted. Evicting s1 "for" the on-demand job would free 8 GPUs
    # of the spot budget, but the spot job does not outrank s1 (OJS ML §8: evictions are for strictly
    # higher-priority work), so it may not use that room: it waits with QUEUE_BUDGET (16 used of 16).
    c = _spot_queue_cluster()
    jobs = [_job("od", 8), _job("sp", 4, cls="spot", queue="spot")]
    q = {
        "spot": QueueConfig.model_validate({"queue": "spot", "config": {"ml_limits": {"max_total_gpus": 16}}})
    }
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert check(d, jobs, c, now=NOW, queues=q) == []
    assert d.preemptions == []
    assert [p.job for p in d.placements] == ["od"]
    assert (pending_reason(d, "sp") or "").startswith("QUEUE_BUDGET")


def test_a_queue_already_over_budget_names_the_whole_excess(engine: str) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    # The spot queue runs 16 GPUs against a budget lowered to 10: 6 over. A 4-GPU spot job needs the budget
    # to grow by 16 + 4 - 10 = 10 GPUs, not by its own 4.
    c = _spot_queue_cluster()
    jobs = [_job("sp", 4, cls="spot", queue="spot")]
    q = {
        "spot": QueueConfig.model_validate({"queue": "spot", "config": {"ml_limits": {"max_total_gpus": 10}}})
    }
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    reason = pending_reason(d, "sp") or ""
    assert reason.startswith("QUEUE_BUDGET") and "already 6 over" in reason and "10 more GPUs" in reason
    assert d.pending[0].reasons[0].details["more_gpus"] == 10


def test_checker_refuses_budget_freed_by_evicting_an_equal() -> None:
    from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement

    # The forged answer of the test above: od evicts s1 and takes dgx-h100-1, sp uses the 8 GPUs of spot
    # budget that frees, on dgx-h100-3. Totals fit (8 + 4 = 12 <= 16), but at the spot level s1 still
    # counts: 8 + 8 + 4 = 20 > 16.
    c = _spot_queue_cluster()
    jobs = [_job("od", 8), _job("sp", 4, cls="spot", queue="spot")]
    q = {
        "spot": QueueConfig.model_validate({"queue": "spot", "config": {"ml_limits": {"max_total_gpus": 16}}})
    }
    d = Decision(
        placements=[
            JobPlacement(job="od", replicas=[ReplicaPlacement(node="dgx-h100-1", gpus=list(range(8)))]),
            JobPlacement(job="sp", replicas=[ReplicaPlacement(node="dgx-h100-3", gpus=[0, 1, 2, 3])]),
        ],
        # s1: 8 GPUs x 3600 s since its start, no checkpoint
        preemptions=[Eviction(job="s1", for_=["od"], nodes=["dgx-h100-1"], expected_work_lost_gpu_s=28_800)],
    )
    violations = check(d, jobs, c, now=NOW, queues=q)
    assert [(v.rule, v.job) for v in violations] == [("queue-budget", "spot")]
    assert "20 GPUs" in violations[0].message
    # Without sp the same eviction is fine: od outranks s1, and nothing of the spot queue is added.
    d.placements = d.placements[:1]
    assert check(d, jobs[:1], c, now=NOW, queues=q) == []
