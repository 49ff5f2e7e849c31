"""The kube-scheduler-style baseline (``scenarios/baselines/kube_preemption.py``): its victim choice is
kube's (lowest priority first, per node), its decisions pass placer's independent checker, and the work
it reports lost is the accounting placer uses (GPUs x seconds since the last checkpoint or start)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from placer.scenarios.baselines.kube_preemption import kube_preemption
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.topology import Cluster, cluster_of, dgx_h100

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _cluster() -> Cluster:
    # One DGX: "old-low" (spot, priority 1, GPUs 0-3, started 5 h ago) and "new-high" (spot, priority 5,
    # GPUs 4-7, started 10 min ago). Neither has a checkpoint.
    def run(job: str, priority: int, gpus: list[int], age: timedelta) -> dict[str, object]:
        return {
            "job": job,
            "priority_class": "spot",
            "priority": priority,
            "started_at": NOW - age,
            "replicas": [{"node": "dgx-h100", "gpus": gpus}],
        }

    return cluster_of(dgx_h100(1)).with_allocations(
        [
            run("old-low", 1, [0, 1, 2, 3], timedelta(hours=5)),
            run("new-high", 5, [4, 5, 6, 7], timedelta(minutes=10)),
        ]
    )


JOB = Job(id="svc", priority_class="on-demand", tasks=[TaskGroup(gpu=GpuDemand(count=4))])


def test_kube_evicts_the_lowest_priority_victim_and_passes_the_checker() -> None:
    c = _cluster()
    d = kube_preemption([JOB], c, NOW)
    assert [p.job for p in d.placements] == ["svc"]
    [e] = d.preemptions
    # kube reprieves the higher-priority victim first and evicts the lower one, whatever work it loses:
    # 4 GPUs x 5 h = 72,000 GPU-seconds.
    assert (e.job, e.for_, e.expected_work_lost_gpu_s) == ("old-low", ["svc"], 72_000)
    assert check(d, [JOB], c, now=NOW) == []


def test_placer_evicts_the_victim_losing_least_work_instead() -> None:
    # Both victims rank below the on-demand job, so either may go; placer picks the one that loses
    # 4 GPUs x 10 min = 2,400 GPU-seconds rather than 72,000.
    c = _cluster()
    for engine in ("greedy", "cpsat"):
        d = place([JOB], c, Policy(engine=engine, time_limit_s=2.0), now=NOW)
        [e] = d.preemptions
        assert (e.job, e.expected_work_lost_gpu_s) == ("new-high", 2_400)
        assert check(d, [JOB], c, now=NOW) == []
