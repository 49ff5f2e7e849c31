"""Greedy's last keys (fit, then node order; ``docs/solver.md`` level 6): whole GPUs under FGD's key take
its ties in node order, shares and work without FGD's key keep best fit."""

from __future__ import annotations

import pytest

from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy, TargetShape
from placer.topology import cluster_of, pcie_inference
from tests.solver.conftest import NOW, assert_valid

# l4-1 has its 4 L4 free; l4-2 holds a 2-GPU job, 2 free. Best fit says l4-2 for one more GPU.
CLUSTER = cluster_of(pcie_inference(2)).allocate({"job": "r", "replicas": [{"node": "l4-2", "gpus": [0, 1]}]})


def _node(job: Job, target: list[TargetShape]) -> str:
    d = place([job], CLUSTER, Policy(engine="greedy", target_workload=target), now=NOW)
    assert_valid(d, [job], CLUSTER)
    (p,) = d.placements
    return p.replicas[0].node


@pytest.mark.parametrize(
    ("gpu", "target", "node"),
    [
        # Target: 1-GPU work only. One GPU from either node leaves the shape fitting: FGD's increase is 0 on
        # both, a tie; a whole GPU then goes by node order, to l4-1.
        (GpuDemand(count=1), [TargetShape(cpu_cores=1, gpus=1)], "l4-1"),
        # FGD's key off (an empty target): best fit alone, l4-2.
        (GpuDemand(count=1), [], "l4-2"),
        # A 500-milli share with a 500-milli target: it fits on every GPU of both nodes after, a tie too;
        # shares keep best fit (fewest whole GPUs left): l4-2.
        (GpuDemand(count=1, share_milli=500), [TargetShape(cpu_cores=1, gpu_milli=500)], "l4-2"),
    ],
)
def test_ties_of_fgd_go_by_node_order_for_whole_gpus_only(
    gpu: GpuDemand, target: list[TargetShape], node: str
) -> None:
    job = Job(id="j", tasks=[TaskGroup(cpu_cores=1, gpu=gpu)])
    assert _node(job, target) == node
