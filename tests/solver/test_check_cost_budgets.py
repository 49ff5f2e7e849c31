"""The checker's rule 17 for dollar budgets (``cost-budget``), on hand-written decisions: running jobs (not
evicted, priced from their allocation) plus placements must stay within a queue's ``max_cost_per_hour``
and a tenant's ``budgets.tenants``; a decision that adds nothing to a budget already over is not blamed.

H100 on-demand $12.29, spot $4.90 per GPU-hour (solver/data/prices.json).
"""

from __future__ import annotations

from datetime import timedelta

from placer.solver.checks import check
from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig
from placer.solver.prices import load_prices
from placer.topology import capacity_pool, cluster_of, dgx_h100
from tests.solver.conftest import NOW


def _queue(name: str = "train", **limits: float) -> dict[str, QueueConfig]:
    return {name: QueueConfig.model_validate({"queue": name, "config": {"ml_limits": limits}})}


def _job(job_id: str, gpus: int, queue: str = "train", tenant: str | None = None) -> Job:
    return Job(id=job_id, queue=queue, tenant=tenant, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))])


def _on(job: str, node: str, gpus: list[int]) -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node=node, gpus=gpus)])


def _rules(decision: Decision, jobs: list[Job], cluster: object, **kw: object) -> list[str]:
    return [v.rule for v in check(decision, jobs, cluster, now=NOW, **kw)]  # type: ignore[arg-type]


def test_a_placement_over_the_queue_dollar_budget_is_a_violation() -> None:
    c = cluster_of(dgx_h100(1))
    jobs = [_job("a", 4)]
    d = Decision(placements=[_on("a", "dgx-h100", [0, 1, 2, 3])])  # 4 x 12.29 = 49.16 $/h
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=49.15)) == ["cost-budget"]
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=49.16)) == []
    [v] = check(d, jobs, c, now=NOW, queues=_queue(max_cost_per_hour=40))
    assert v.job == "train" and "$49.16/h" in v.message and "$40/h" in v.message


def test_tenant_budget_adds_up_across_queues() -> None:
    c = cluster_of(dgx_h100(1))
    jobs = [_job("a", 2, queue="q1", tenant="acme"), _job("b", 1, queue="q2", tenant="acme")]
    d = Decision(placements=[_on("a", "dgx-h100", [0, 1]), _on("b", "dgx-h100", [2])])  # 36.87 $/h
    assert _rules(d, jobs, c, prices=load_prices('{"budgets": {"tenants": {"acme": 30}}}')) == ["cost-budget"]
    assert _rules(d, jobs, c, prices=load_prices('{"budgets": {"tenants": {"acme": 37}}}')) == []
    assert _rules(d, jobs, c, prices=load_prices('{"budgets": {"tenants": {"globex": 0}}}')) == []


def _running(node: str, gpus: list[int], job: str = "old", **kw: object) -> dict[str, object]:
    return {
        "job": job,
        "queue": "train",
        "started_at": NOW - timedelta(hours=1),
        "replicas": [{"node": node, "gpus": gpus}],
        **kw,
    }


def test_running_jobs_count_at_the_price_of_their_allocation() -> None:
    # 2 GPUs running on the spot node: 9.80 $/h; one on-demand GPU placed: 12.29; total 22.09.
    c = cluster_of(capacity_pool(spot=1, on_demand=1)).with_allocations([_running("pool-spot", [0, 1])])
    jobs = [_job("a", 1)]
    d = Decision(placements=[_on("a", "pool-on-demand", [0])])
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=22.08)) == ["cost-budget"]
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=22.09)) == []


def test_an_evicted_job_no_longer_counts() -> None:
    c = cluster_of(dgx_h100(1)).with_allocations(
        [_running("dgx-h100", list(range(8)), priority_class="spot")]
    )
    jobs = [_job("a", 8)]
    placed = _on("a", "dgx-h100", list(range(8)))
    # It ran 8 GPUs for an hour without a checkpoint: 8 x 3600 = 28,800 GPU-s are lost.
    evict = Eviction(job="old", for_=["a"], nodes=["dgx-h100"], expected_work_lost_gpu_s=28800)
    assert (
        _rules(
            Decision(placements=[placed], preemptions=[evict]), jobs, c, queues=_queue(max_cost_per_hour=100)
        )
        == []
    )
    # Without the eviction the GPUs are double-booked and the queue holds 196.64 $/h.
    assert "cost-budget" in _rules(
        Decision(placements=[placed]), jobs, c, queues=_queue(max_cost_per_hour=100)
    )


def test_a_budget_already_over_blames_only_a_decision_that_adds_to_it() -> None:
    # Running train work costs 98.32 $/h against a $50/h budget (and 8 GPUs against max_total_gpus 4).
    c = cluster_of(dgx_h100(2)).with_allocations([_running("dgx-h100-1", list(range(8)))])
    queues = _queue(max_cost_per_hour=50, max_total_gpus=4)
    other = Decision(placements=[_on("other", "dgx-h100-2", [0])])
    assert _rules(other, [_job("other", 1, queue="serve")], c, queues=queues) == []
    added = Decision(placements=[_on("a", "dgx-h100-2", [0])])
    assert sorted(_rules(added, [_job("a", 1)], c, queues=queues)) == ["cost-budget", "queue-budget"]


def test_the_checker_counts_with_the_prices_it_is_given() -> None:
    c = cluster_of(dgx_h100(1))
    jobs = [_job("a", 4)]
    d = Decision(placements=[_on("a", "dgx-h100", [0, 1, 2, 3])])
    cheap = load_prices('{"gpu": {"nvidia-h100": {"on-demand": 10}}}')
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=40), prices=cheap) == []
    assert _rules(d, jobs, c, queues=_queue(max_cost_per_hour=39.99), prices=cheap) == ["cost-budget"]
