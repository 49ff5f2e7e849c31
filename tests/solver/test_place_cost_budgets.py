"""Dollar budgets: a queue's ``ml_limits.max_cost_per_hour`` and a tenant's ``budgets.tenants`` (prices
file). Over budget means pending with COST_BUDGET, never rejected; running jobs count (priced from their
allocation); evictions give budget back. Every decision runs on both engines through ``solve``, which
checks it with the independent checker (rule 17, ``cost-budget``).

Arithmetic from solver/data/prices.json: H100 on-demand $12.29 and spot $4.90 per GPU-hour.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.solver.jobs.model import GpuDemand, Job, Placement, TaskGroup
from placer.solver.jobs.queues import QueueConfig
from placer.solver.prices import load_prices
from placer.topology import capacity_pool, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve, pending_reason, reason_codes


def _queues(**dollars: float) -> dict[str, QueueConfig]:
    """Queues with a dollar budget each: ``_queues(train=40.0)``."""
    return {
        q: QueueConfig.model_validate({"queue": q, "config": {"ml_limits": {"max_cost_per_hour": v}}})
        for q, v in dollars.items()
    }


def _job(
    job_id: str,
    gpus: int,
    *,
    queue: str = "train",
    tenant: str | None = None,
    cls: str = "on-demand",
    spot: str = "any",
) -> Job:
    return Job(
        id=job_id,
        queue=queue,
        tenant=tenant,
        priority_class=cls,
        placement=Placement(spot_preference=spot),
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
    )


def _details(decision: object, job: str) -> dict[str, object]:
    for p in decision.pending:  # type: ignore[attr-defined]
        if p.job == job:
            return dict(p.reasons[0].details)
    raise AssertionError(f"{job} is not pending")


def test_queue_budget_admits_three_h100_and_keeps_the_fourth_waiting(solve: Solve) -> None:
    # $40/h: 3 x 12.29 = 36.87 fits, a fourth (49.16) does not, though the DGX has 8 free GPUs.
    jobs = [_job(f"j{i}", 1) for i in range(4)]
    d = solve(jobs, cluster_of(dgx_h100(1)), queues=_queues(train=40.0))
    assert len(d.placements) == 3
    assert d.rejected == []
    [waiting] = d.pending
    assert reason_codes(d, waiting.job) == ["COST_BUDGET"]
    details = _details(d, waiting.job)
    assert details["queue"] == "train"
    assert details["max_cost_per_hour"] == pytest.approx(40.0)
    assert details["left_per_hour"] == pytest.approx(40.0 - 36.87)
    assert details["more_cost_per_hour"] == pytest.approx(12.29 - 3.13)  # 9.16 more lets it run
    message = pending_reason(d, waiting.job) or ""
    assert "fits if queue 'train''s budget allowed $9.16/h more" in message and "not rejected" in message
    assert d.stats.cost_per_hour == pytest.approx(36.87)


def test_a_budget_that_is_just_enough_places_everything(solve: Solve) -> None:
    # The boundary: 4 x 12.29 = 49.16 exactly is within a $49.16/h budget.
    jobs = [_job(f"j{i}", 1) for i in range(4)]
    d = solve(jobs, cluster_of(dgx_h100(1)), queues=_queues(train=49.16))
    assert len(d.placements) == 4 and d.pending == []


def test_tenant_budget_spans_queues(solve: Solve) -> None:
    # Tenant acme: $30/h. Its 2-GPU job in queue a (24.58) ranks first (more demand); its 1-GPU job in
    # queue b (12.29) would make 36.87 > 30. The other tenant's job in queue b is not limited.
    prices = load_prices('{"budgets": {"tenants": {"acme": 30}}}')
    jobs = [
        _job("acme-big", 2, queue="a", tenant="acme"),
        _job("acme-small", 1, queue="b", tenant="acme"),
        _job("other", 1, queue="b", tenant="globex"),
    ]
    d = solve(jobs, cluster_of(dgx_h100(1)), prices=prices)
    assert sorted(p.job for p in d.placements) == ["acme-big", "other"]
    assert reason_codes(d, "acme-small") == ["COST_BUDGET"]
    details = _details(d, "acme-small")
    assert details["tenant"] == "acme"
    assert details["more_cost_per_hour"] == pytest.approx(12.29 - (30 - 24.58))  # 6.87


def test_running_jobs_count_priced_from_their_allocation(solve: Solve) -> None:
    # A running train job holds 2 GPUs of the *spot* node: 2 x 4.90 = 9.80 $/h (not 2 x 12.29). With a
    # $20/h budget, 10.20 is left: an on-demand-only H100 (12.29) waits, 2.09 short; a spot-tolerant one
    # (4.90 on the spot node) runs.
    c = cluster_of(capacity_pool(spot=1, on_demand=1)).with_allocations(
        [
            {
                "job": "old",
                "queue": "train",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": "pool-spot", "gpus": [0, 1]}],
            }
        ]
    )
    d = solve([_job("stable", 1, spot="on_demand_only")], c, queues=_queues(train=20.0))
    assert reason_codes(d, "stable") == ["COST_BUDGET"]
    details = _details(d, "stable")
    assert details["left_per_hour"] == pytest.approx(10.20)
    assert details["more_cost_per_hour"] == pytest.approx(2.09)
    d = solve([_job("cheap", 1, spot="spot_preferred")], c, queues=_queues(train=20.0))
    assert [r.node for r in d.placements[0].replicas] == ["pool-spot"]


def test_an_eviction_gives_its_budget_back(solve: Solve) -> None:
    # A preemptible spot train job fills the only DGX (8 x 12.29 = 98.32 $/h). A reserved 8-GPU train job
    # needs its room, and 98.32 fits a $100/h budget only once the running job's 98.32 is given back.
    c = cluster_of(dgx_h100(1)).with_allocations(
        [
            {
                "job": "sweep",
                "queue": "train",
                "priority_class": "spot",
                "preemptible": True,
                "checkpoint_on_preempt": True,
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": "dgx-h100", "gpus": list(range(8))}],
            }
        ]
    )
    job = _job("urgent", 8, cls="reserved")
    d = solve([job], c, queues=_queues(train=100.0))
    assert [p.job for p in d.placements] == ["urgent"]
    assert [e.job for e in d.preemptions] == ["sweep"]
    if d.stats.model_bound is not None:  # CP-SAT's model, too, lets the eviction pay for the placement
        assert d.stats.model_bound >= d.stats.objective
    # With $90/h even the room given back is not enough: it waits, and nothing is evicted for nothing.
    d = solve([job], c, queues=_queues(train=90.0))
    assert d.placements == [] and d.preemptions == []
    assert reason_codes(d, "urgent") == ["COST_BUDGET"]
    assert _details(d, "urgent")["more_cost_per_hour"] == pytest.approx(98.32 - 90.0)


def test_other_queues_and_tenants_are_not_limited_and_cpu_work_costs(solve: Solve) -> None:
    # train and acme have $0/h; serve/globex have no dollar budget. CPU work costs money too (its cores'
    # share of the node), so unlike a GPU budget a dollar budget holds it back.
    prices = load_prices('{"budgets": {"tenants": {"acme": 0}}}')
    jobs = [
        _job("serve", 4, queue="serve", tenant="globex"),
        _job("acme", 1, queue="serve", tenant="acme"),
        Job(id="prep", queue="train", tasks=[TaskGroup(cpu_cores=4)]),
    ]
    d = solve(jobs, cluster_of(dgx_h100(1)), queues=_queues(train=0.0), prices=prices)
    assert [p.job for p in d.placements] == ["serve"]
    assert reason_codes(d, "acme") == reason_codes(d, "prep") == ["COST_BUDGET"]
    # 4 of the DGX's 224 cores: 4/224 of 8 x 12.29 $/h.
    assert _details(d, "prep")["cost_per_hour"] == pytest.approx(98.32 * 4 / 224, abs=1e-4)


def test_budget_counts_user_prices(solve: Solve) -> None:
    # With H100 on-demand at $10 (prices file), $40/h holds exactly four GPUs.
    prices = load_prices('{"gpu": {"nvidia-h100": {"on-demand": 10.0}}}')
    jobs = [_job(f"j{i}", 1) for i in range(5)]
    d = solve(jobs, cluster_of(dgx_h100(1)), queues=_queues(train=40.0), prices=prices)
    assert len(d.placements) == 4
    assert _details(d, d.pending[0].job)["more_cost_per_hour"] == pytest.approx(10.0)
