"""Queue GPU budgets (OJS ML resources §10.3): over budget means pending with QUEUE_BUDGET, never rejected;
running jobs count; evictions give budget back. Every decision is also checked against rule 17."""

from __future__ import annotations

from datetime import timedelta

from solver.check import check
from solver.jobs.model import GpuDemand, Job, TaskGroup
from solver.jobs.queues import QueueConfig
from tests.solver.conftest import NOW, pending_reason
from topology import cluster_of, dgx_h100


def _queues(**limits: int) -> dict[str, QueueConfig]:
    return {"train": QueueConfig.model_validate({"queue": "train", "config": {"ml_limits": limits}})}


def _job(job_id: str, gpus: int, cls: str = "on-demand", queue: str = "train") -> Job:
    return Job(id=job_id, queue=queue, priority_class=cls, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))])


def test_max_total_gpus_counts_running_and_new(engine: str) -> None:
    from solver.engine import place
    from solver.policy import Policy

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
    from solver.engine import place
    from solver.policy import Policy

    c = cluster_of(dgx_h100(1))
    jobs = [_job(f"j{i}", 1) for i in range(4)]
    q = _queues(max_concurrent_gpu_jobs=2)
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert check(d, jobs, c, now=NOW, queues=q) == []
    assert len(d.placements) == 2
    assert sorted((pending_reason(d, p.job) or "")[:12] for p in d.pending) == ["QUEUE_BUDGET"] * 2


def test_other_queues_and_cpu_jobs_are_not_limited(engine: str) -> None:
    from solver.engine import place
    from solver.policy import Policy

    c = cluster_of(dgx_h100(1))
    jobs = [_job("gpu-other", 8, queue="serve"), Job(id="cpu", queue="train", tasks=[TaskGroup(cpu_cores=4)])]
    q = _queues(max_total_gpus=0)
    d = place(jobs, c, Policy(engine=engine, time_limit_s=2), now=NOW, queues=q)
    assert sorted(p.job for p in d.placements) == ["cpu", "gpu-other"]


def test_checker_reports_a_decision_over_budget() -> None:
    from solver.decision import Decision, JobPlacement, ReplicaPlacement

    c = cluster_of(dgx_h100(1))
    jobs = [_job("a", 8)]
    d = Decision(
        placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100", gpus=list(range(8)))])]
    )
    assert [v.rule for v in check(d, jobs, c, now=NOW, queues=_queues(max_total_gpus=4))] == ["queue-budget"]
    assert check(d, jobs, c, now=NOW, queues=_queues(max_total_gpus=8)) == []
