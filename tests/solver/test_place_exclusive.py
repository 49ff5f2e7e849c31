"""Exclusive nodes (placement-rules.md rule 10): ``TaskGroup.exclusive``, ``placement.exclusive_nodes``
and ``gpu_affinity: dedicated`` (ML extensions §7.1) — every node hosting the job hosts nothing else, no
running job and no other placement of the batch.
"""

from __future__ import annotations

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuAffinity, GpuDemand, Job, Placement, TaskGroup
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import Solve, nodes_of, reason_codes

RUNNING_ON_1 = {"job": "small", "replicas": [{"node": "dgx-h100-1", "gpus": [0]}]}


def exclusive_job(job_id: str, how: str, gpus: int = 1, count: int = 1, **kw: object) -> Job:
    """A job asking for whole nodes in one of the three ways (``how``: group, nodes, dedicated)."""
    if how == "group":
        tasks = [TaskGroup(count=count, exclusive=True, gpu=GpuDemand(count=gpus))]
        return Job(id=job_id, tasks=tasks, **kw)  # type: ignore[arg-type]
    placement = (
        Placement(exclusive_nodes=True) if how == "nodes" else Placement(gpu_affinity=GpuAffinity.DEDICATED)
    )
    tasks = [TaskGroup(count=count, gpu=GpuDemand(count=gpus))]
    return Job(id=job_id, tasks=tasks, placement=placement, **kw)  # type: ignore[arg-type]


HOW = ["group", "nodes", "dedicated"]


@pytest.mark.parametrize("how", HOW)
def test_exclusive_job_avoids_a_node_with_a_running_job(solve: Solve, how: str) -> None:
    # dgx-h100-1 has 7 free GPUs, enough for 1 GPU, but a running job is there.
    c = cluster_of(dgx_h100(2)).with_allocations([RUNNING_ON_1])
    d = solve([exclusive_job("x", how)], c)
    assert nodes_of(d, "x") == ["dgx-h100-2"]


@pytest.mark.parametrize("how", HOW)
def test_nothing_else_of_the_batch_joins_an_exclusive_node(solve: Solve, how: str) -> None:
    # One DGX: the exclusive 1-GPU job and a 1-GPU job would both fit on GPUs, but may not share it.
    c = cluster_of(dgx_h100(1))
    x = exclusive_job("x", how, priority_class="reserved")
    other = Job(id="other", tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    d = solve([other, x], c)
    assert nodes_of(d, "x") == ["dgx-h100"]
    assert d.placement_of("other") is None


@pytest.mark.parametrize("how", HOW)
def test_exclusive_job_waits_when_every_node_is_occupied(solve: Solve, how: str) -> None:
    c = cluster_of(dgx_h100(1)).with_allocations(
        [{"job": "small", "replicas": [{"node": "dgx-h100", "gpus": [0]}]}]
    )
    d = solve([exclusive_job("x", how)], c)
    assert d.placement_of("x") is None
    assert reason_codes(d, "x") == ["INSUFFICIENT_CAPACITY"]
    assert d.pending[0].reasons[0].details["blocked"] == {"exclusive": 1}


def test_dedicated_from_an_ojs_document(solve: Solve) -> None:
    doc = '{"id": "o", "ext_ml_gpu_count": 2, "ext_mlx_scheduling_gpu_affinity": "dedicated"}'
    rs = read_text(doc)
    assert rs[0].ok, rs[0].errors
    c = cluster_of(dgx_h100(2)).with_allocations([RUNNING_ON_1])
    d = solve(rs, c)
    assert nodes_of(d, "o") == ["dgx-h100-2"]


def test_exclusive_replicas_take_one_node_each(solve: Solve) -> None:
    # Two exclusive replicas of 1 GPU: each owns its node whole, so they cannot share one.
    d = solve([exclusive_job("x", "group", count=2)], cluster_of(dgx_h100(2)))
    assert sorted(nodes_of(d, "x")) == ["dgx-h100-1", "dgx-h100-2"]
