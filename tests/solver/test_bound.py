"""The reported bound is a valid upper bound, and the fragmentation cuts make scattered GPUs count for
little (``solver/bound.py``)."""

from __future__ import annotations

import pytest
from hypothesis import given

from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import NOW
from tests.solver.test_place_fuzz import CLUSTER, batches


def _busy(node: str, gpus: list[int], job: str) -> dict[str, object]:
    return {"job": job, "replicas": [{"node": node, "gpus": gpus}]}


def test_fragmentation_cut_knows_two_half_nodes_hold_no_8_gpu_replica() -> None:
    # Two DGX nodes with 4 free GPUs each: 8 free GPUs in all, but no node holds an 8-GPU replica.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [_busy("dgx-h100-1", [0, 1, 2, 3], "r1"), _busy("dgx-h100-2", [0, 1, 2, 3], "r2")]
    )
    big = Job(id="big", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    d = place([big], c, Policy(engine="cpsat", time_limit_s=2), now=NOW)
    assert d.placement_of("big") is None
    # The knapsack relaxation alone would allow the whole job (8 free GPUs); the cut says 0.
    assert d.stats.bound == 0.0 and d.stats.bound_source in ("lp", "cpsat")
    # Four 1-GPU jobs do fit, and the bound says exactly that much (4 x on-demand weight 10 x 10 tenths).
    small = [Job(id=f"s{i}", tasks=[TaskGroup(gpu=GpuDemand(count=1))]) for i in range(4)]
    d = place([big, *small], c, Policy(engine="cpsat", time_limit_s=2), now=NOW)
    assert len(d.placements) == 4
    assert d.stats.objective == d.stats.bound == 4 * 100
    assert d.stats.gap == 0.0


@given(batch=batches())
def test_bound_is_never_below_what_was_placed_nor_an_exact_optimum(batch: list[Job]) -> None:
    d = place(batch, CLUSTER, Policy(engine="cpsat", time_limit_s=1.0, reproducible=True), now=NOW)
    assert d.stats.bound is not None and d.stats.objective is not None
    assert d.stats.bound >= d.stats.objective - 1e-6
    if d.stats.status == "OPTIMAL" and d.stats.model_exact and d.stats.model_bound is not None:
        assert d.stats.bound >= d.stats.model_bound - 1e-6


def test_lp_bound_keeps_each_jobs_weight_in_a_shared_column_class(monkeypatch: pytest.MonkeyPatch) -> None:
    # lp_bound merges jobs with identical columns (pool, groups, demand, cuts) into one flow per group; the
    # LP is the same only if each job keeps its own weight and its own y <= 1. Two DGX nodes with 4 free
    # GPUs each; three 4-GPU jobs of one shape but different classes, and one 8-GPU reserved job that the
    # fragmentation cut rules out. Exactly two 4-GPU jobs fit: reserved (100 x 40) + on-demand (10 x 40).
    import placer.solver.bound
    import placer.solver.core

    c = cluster_of(dgx_h100(2)).with_allocations(
        [_busy("dgx-h100-1", [0, 1, 2, 3], "r1"), _busy("dgx-h100-2", [0, 1, 2, 3], "r2")]
    )
    four = [
        Job(id=f"four-{cls}", priority_class=cls, tasks=[TaskGroup(gpu=GpuDemand(count=4))])
        for cls in ("reserved", "on-demand", "spot")
    ]
    eight = Job(id="eight", priority_class="reserved", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    seen: dict[str, object] = {}
    real = placer.solver.bound.lp_bound

    def spy(plans, candidates, arrays, **kwargs):  # type: ignore[no-untyped-def]
        seen.update(args=(plans, candidates, arrays), kwargs=kwargs)
        return real(plans, candidates, arrays, **kwargs)

    monkeypatch.setattr(placer.solver.core, "lp_bound", spy)
    policy = Policy(engine="cpsat", time_limit_s=2, plan=False, preemption=False)
    d = place([*four, eight], c, policy, now=NOW)
    assert real(*seen["args"], victims=[]) == 100 * 40 + 10 * 40  # type: ignore[misc]
    assert d.stats.bound == 100 * 40 + 10 * 40
    assert {p.job for p in d.placements} == {"four-reserved", "four-on-demand"}


@given(batch=batches())
def test_the_relaxation_is_not_computed_only_where_it_equals_the_placed_weight(batch: list[Job]) -> None:
    # When greedy places every job that has candidates, core takes the relaxation as their summed weight
    # instead of computing it; on random batches that must be exactly what relaxation() returns.
    import placer.solver.core as core
    from placer.solver.bound import relaxation
    from placer.solver.problem import build_problem

    policy = Policy(engine="greedy", time_limit_s=1.0)
    problem = build_problem(batch, CLUSTER, policy, now=NOW, queues=None, until=lambda _: float("inf"))
    best = core._greedy(problem, policy, float("inf"))
    shortcut = core._relaxation(problem, best)
    assert shortcut == pytest.approx(relaxation(problem))
