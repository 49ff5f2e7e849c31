"""Why a job is pending (``solver/explain.py``: the reason codes of ``docs/decision.md``), priority between
batch jobs, and rejected jobs. Each test builds a situation where exactly one code is right and checks
the code, the details, and that the message names the constraint.
"""

from __future__ import annotations

import pytest

from placer.solver.jobs import check_batch, read_text
from placer.solver.jobs.model import GpuDemand, Job, ReservationRef, TaskGroup
from placer.topology import Cluster, cluster_of, dgx_h100, pcie_inference
from placer.topology.availability import with_availability
from tests.solver.conftest import Solve, gpus_of, nodes_of, reason_codes


def gpu_job(job_id: str, gpus: int, **kw: object) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))], **kw)  # type: ignore[arg-type]


def half_busy_dgx() -> Cluster:
    """One DGX H100 with GPUs 0-3 held by a running job: 4 free."""
    return cluster_of(dgx_h100(1)).with_allocations(
        [{"job": "running", "replicas": [{"node": "dgx-h100", "gpus": [0, 1, 2, 3]}]}]
    )


def test_unsatisfiable_names_the_constraint_and_counts_nodes(solve: Solve) -> None:
    c = cluster_of(dgx_h100(2), pcie_inference(3))
    job = Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=1, types=["nvidia-l4"], min_memory_gb=40))])
    d = solve([job], c)
    assert reason_codes(d, "a") == ["UNSATISFIABLE"]
    r = d.pending[0].reasons[0]
    # The 2 DGX fail the type check first; the 3 L4 (24 GB) fail the memory check.
    assert r.details["eliminated"] == {"gpu_type": 2, "gpu_memory": 3}
    assert "GPU type" in r.message and "GPU memory" in r.message


def test_insufficient_capacity_when_running_jobs_hold_the_room(solve: Solve) -> None:
    d = solve([gpu_job("a", 8)], half_busy_dgx())  # 8 > 4 free, 8 <= 8 on the empty node
    assert reason_codes(d, "a") == ["INSUFFICIENT_CAPACITY"]
    r = d.pending[0].reasons[0]
    assert r.details["blocked"] == {"busy": 1}
    assert "8 GPUs" in r.message and "empty cluster" in r.message


def test_lost_to_higher_priority_names_the_winner(solve: Solve) -> None:
    # 4 free GPUs; a reserved 4-GPU job and an on-demand 4-GPU job: the reserved one takes them.
    d = solve([gpu_job("od", 4), gpu_job("res", 4, priority_class="reserved")], half_busy_dgx())
    assert sorted(g for _, g in gpus_of(d, "res")) == [4, 5, 6, 7]
    assert reason_codes(d, "od") == ["LOST_TO_HIGHER_PRIORITY"]
    r = d.pending[0].reasons[0]
    assert r.details["jobs"] == ["res"]
    assert "res" in r.message


def test_lower_priority_takers_are_never_called_higher_priority(solve: Solve, engine: str) -> None:
    # One empty 8-GPU node: "big" (7 GPUs, priority 10) or "lo-a" + "lo-b" (4 GPUs each, priority 0).
    # Greedy goes in priority order and places big; CP-SAT maximizes priority-weighted demand, where
    # 2 x 4 GPUs of priority 0 outweigh 7 of priority 10. Either way, a reason may call only jobs ranked at
    # least as high "higher priority".
    jobs = [gpu_job("big", 7, priority=10), gpu_job("lo-a", 4), gpu_job("lo-b", 4)]
    d = solve(jobs, cluster_of(dgx_h100(1)))
    placed = sorted(p.job for p in d.placements)
    assert placed == (["big"] if engine == "greedy" else ["lo-a", "lo-b"])
    if placed == ["big"]:
        # lo-a and lo-b each lost to a job of higher priority: "big"
        assert reason_codes(d, "lo-a") == ["LOST_TO_HIGHER_PRIORITY"]
        assert d.pending[0].reasons[0].details["jobs"] == ["big"]
    else:
        # 4 + 4 = 8 GPUs of priority 0 outweigh 7 of priority 10 under the policy's weights: "big" waits,
        # and the reason names the two lower-priority jobs without calling them higher priority.
        assert placed == ["lo-a", "lo-b"]
        assert reason_codes(d, "big") == ["OUTWEIGHED_IN_BATCH"]
        r = d.pending[0].reasons[0]
        assert r.details["jobs"] == ["lo-a", "lo-b"]
        assert "lower-priority" in r.message


def test_no_nvlink_domain(solve: Solve) -> None:
    # Two DGX with 4 free each (8 free in all): an 8-GPU NVLink job fits no single domain now...
    c = cluster_of(dgx_h100(2)).with_allocations(
        [{"job": f"r{i}", "replicas": [{"node": f"dgx-h100-{i}", "gpus": [0, 1, 2, 3]}]} for i in (1, 2)]
    )
    job = Job(
        id="nv",
        distributed_strategy="fsdp",
        tasks=[TaskGroup(count=2, gpu=GpuDemand(count=4, interconnect="nvlink"))],
    )
    d = solve([job], c)
    # ...and its 2 replicas of 4 each fit some node now, so the blocker is the domain, not capacity.
    assert reason_codes(d, "nv") == ["NO_NVLINK_DOMAIN"]
    assert "NVLink domain" in d.pending[0].reasons[0].message


@pytest.mark.parametrize("order", ["reserved-first", "reserved-last"])
def test_reserved_wins_the_last_free_gpus_regardless_of_batch_order(solve: Solve, order: str) -> None:
    res = gpu_job("res", 4, priority_class="reserved")
    od = gpu_job("od", 4, priority_class="on-demand")
    spot = gpu_job("spot", 4, priority_class="spot")
    batch = [res, od, spot] if order == "reserved-first" else [spot, od, res]
    d = solve(batch, half_busy_dgx())
    assert [p.job for p in d.placements] == ["res"]
    assert sorted(p.job for p in d.pending) == ["od", "spot"]


def test_on_demand_beats_spot(solve: Solve) -> None:
    d = solve([gpu_job("spot", 4, priority_class="spot"), gpu_job("od", 4)], half_busy_dgx())
    assert [p.job for p in d.placements] == ["od"]
    assert reason_codes(d, "spot") == ["LOST_TO_HIGHER_PRIORITY"]


def test_numeric_priority_breaks_ties_within_a_class(solve: Solve) -> None:
    d = solve([gpu_job("low", 4, priority=1), gpu_job("high", 4, priority=50)], half_busy_dgx())
    assert [p.job for p in d.placements] == ["high"]


def test_placed_job_carries_its_priority_class(solve: Solve) -> None:
    d = solve([gpu_job("res", 1, priority_class="reserved")], cluster_of(dgx_h100(1)))
    assert d.placement_of("res").priority_class == "reserved"  # type: ignore[union-attr]


# -- rejected jobs ----------------------------------------------------------------------------------------


def test_invalid_job_goes_to_rejected_with_its_errors(solve: Solve) -> None:
    rs = read_text('[{"id": "bad", "ext_ml_gpu_count": -1}, {"id": "good", "ext_ml_gpu_count": 1}]')
    d = solve(rs, cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["bad"]
    assert d.rejected[0].errors[0]["code"] == "range"
    assert d.rejected[0].errors[0]["path"].endswith("ext_ml_gpu_count")
    assert nodes_of(d, "good") == ["dgx-h100"]


def test_duplicate_ids_are_rejected_once(solve: Solve) -> None:
    # Rule 1: every input job id appears exactly once across placements, pending and rejected — a
    # duplicated id is rejected (which copy was meant is unknowable), in one entry.
    d = solve([gpu_job("twin", 1), gpu_job("twin", 2)], cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["twin"]
    assert d.placements == [] and d.pending == []
    assert d.rejected[0].errors[0]["code"] == "duplicate"


def test_duplicate_ids_from_documents_are_rejected_once(solve: Solve) -> None:
    rs = read_text('[{"id": "twin", "ext_ml_gpu_count": 1}]') + read_text('[{"id": "twin"}]')
    rs = check_batch(rs)
    assert [r.ok for r in rs] == [False, False]
    d = solve(rs, cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["twin"]


def test_job_with_an_undeclared_reservation_is_rejected(solve: Solve) -> None:
    # Rule 15: without the reservation declared, the job must not be placed.
    job = gpu_job("held", 1, reservation=ReservationRef(id="res-42"))
    d = solve([job], cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["held"]
    assert "res-42" in d.rejected[0].errors[0]["message"]


def test_nodes_unavailable_when_only_nodes_that_are_down_could_run_it(solve: Solve) -> None:
    # Both DGX are down (not ready); the L4 servers are up but the job wants H100s. Were the DGX up it
    # would run: it waits (a pod on NotReady nodes stays Pending), it is not UNSATISFIABLE, which is fixed.
    c = with_availability(
        cluster_of(dgx_h100(2), pcie_inference(2)), {"dgx-h100-1": False, "dgx-h100-2": False}
    )
    job = Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=8, types=["nvidia-h100"]))])
    d = solve([job], c)
    assert reason_codes(d, "a") == ["NODES_UNAVAILABLE"]
    r = d.pending[0].reasons[0]
    assert r.details["count"] == 2 and r.details["nodes"] == ["dgx-h100-1", "dgx-h100-2"]
    assert r.details["eliminated"] == {"unavailable": 2, "gpu_type": 2}
    assert "dgx-h100-1" in r.message and "not ready" in r.message
    # One of them back: it runs there.
    assert nodes_of(solve([job], with_availability(c, {"dgx-h100-2": True})), "a") == ["dgx-h100-2"]


def test_a_job_no_node_could_ever_run_stays_unsatisfiable_when_nodes_are_down(solve: Solve) -> None:
    # A DGX is down, but the job wants B200s: with every node up it still could not run.
    c = with_availability(cluster_of(dgx_h100(2)), {"dgx-h100-1": False})
    d = solve([Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=1, types=["nvidia-b200"]))])], c)
    assert reason_codes(d, "a") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"unavailable": 1, "gpu_type": 1}
    # Nor does a down node count as enough when, up, it would still be too small (16 GPUs on one node).
    d = solve([Job(id="b", tasks=[TaskGroup(gpu=GpuDemand(count=9), one_per_node=True)])], c)
    assert reason_codes(d, "b") == ["UNSATISFIABLE"]
