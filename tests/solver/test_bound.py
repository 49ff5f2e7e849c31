"""The reported bound is a valid upper bound, and the fragmentation cuts make scattered GPUs count for
little (``solver/bound.py``)."""

from __future__ import annotations

from hypothesis import given

from solver.engine import place
from solver.jobs.model import GpuDemand, Job, TaskGroup
from solver.policy import Policy
from tests.solver.conftest import NOW
from tests.solver.test_place_fuzz import CLUSTER, batches
from topology import cluster_of, dgx_h100


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
