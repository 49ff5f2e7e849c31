"""The fill's upper bound: valid (never below what a placement reaches) and tight where arithmetic says."""

from __future__ import annotations

import numpy as np
import pytest

from placer.scenarios.fill.bound import bounds_at, dff, gpu_bound
from placer.scenarios.fill.run import run_fill
from placer.scenarios.fill.tables import NodeTable, PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod


def test_dff_never_lets_a_bin_exceed_one() -> None:
    sizes = np.linspace(0, 1, 101)
    for e in (0.1, 0.19, 0.3, 0.5):
        for a in sizes:
            for b in sizes:
                if a + b <= 1 + 1e-12:
                    assert dff(a, e) + dff(b, e) <= 1 + 1e-9


def test_big_shares_each_take_a_gpu() -> None:
    # Four GPUs and only 810-milli shares: each GPU holds one, 4 x 810 = 3,240 (the aggregate 4,000 is
    # not reachable; the cut with e = 0.19 says so).
    nodes = NodeTable.of([OpenbNode("a", 64000, 262144, 2, "P100")] * 2)
    pods = PodTable.of([OpenbPod("s", 1000, 1024, 1, 810)])
    assert gpu_bound(nodes, pods, np.zeros(9, dtype=np.int64)) == pytest.approx(3240)


def test_cpu_per_node() -> None:
    # 16-core, 2-GPU nodes and 1-GPU pods of 12 cores: one pod per node, half the GPUs.
    nodes = NodeTable.of([OpenbNode("p", 16000, 65536, 2, "P100")] * 3)
    pods = PodTable.of([OpenbPod("w", 12000, 1024, 1, 1000)])
    assert gpu_bound(nodes, pods, np.zeros(10, dtype=np.int64)) == pytest.approx(3000)


def test_models_and_arrived_counts() -> None:
    nodes = NodeTable.of(
        [OpenbNode("t", 104000, 524288, 2, "T4"), OpenbNode("v", 32000, 131072, 4, "V100M16")]
    )
    pods = PodTable.of(
        [OpenbPod("only-t4", 1000, 1024, 1, 1000, ("T4",)), OpenbPod("any", 1000, 1024, 1, 500)]
    )
    assert gpu_bound(nodes, pods, np.array([0, 0, 0])) == pytest.approx(2000)  # T4 pods: 2 GPUs at most
    assert gpu_bound(nodes, pods, np.array([0, 1])) == pytest.approx(1500)  # only what arrived
    assert gpu_bound(nodes, pods, np.array([], dtype=np.int64)) == 0.0


def test_the_bound_is_above_every_policy() -> None:
    nodes = [OpenbNode("a", 16000, 65536, 2, "P100"), OpenbNode("b", 32000, 131072, 4, "V100M16")]
    pods = [
        OpenbPod("s", 3000, 1024, 1, 810),
        OpenbPod("w", 6000, 2048, 1, 1000),
        OpenbPod("h", 2000, 512, 1, 460),
    ]
    for policy in ("first-fit", "best-fit", "fgd", "random"):
        for seed in range(3):
            r = run_fill(nodes, pods, policy=policy, seed=seed, load=1.5)
            b = bounds_at(NodeTable.of(nodes), PodTable.of(pods), r.order, r.arrived, (100, 150))
            assert r.final_alloc() <= b[150] + 1e-9
