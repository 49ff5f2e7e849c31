"""Where a run's unallocated GPU milli sits (``scenarios/fill/stranding.py``): a hand-made run replayed,
every figure worked out by hand."""

from __future__ import annotations

import numpy as np

from placer.scenarios.fill.result import FillResult
from placer.scenarios.fill.stranding import stranding
from placer.scenarios.fill.tables import NodeTable, PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod

NODES = [
    OpenbNode("a", 8000, 65536, 2, "P100"),
    OpenbNode("b", 1000, 65536, 1, "P100"),
    OpenbNode("c", 400, 65536, 1, "P100"),  # less CPU than any GPU pod asks: its GPU can never be used
]
PODS = [
    OpenbPod("whole", 2000, 1024, 1, 1000),
    OpenbPod("big", 1000, 1024, 1, 810),
    OpenbPod("half", 500, 1024, 1, 470),
    OpenbPod("cpu", 4000, 1024, 0, 0),
]


def test_a_hand_made_run_is_accounted_to_the_milli() -> None:
    # a: GPU 0 whole, GPU 1 an 810 share (190 free); b: two 470 shares on GPU 0 (60 free), no CPU left;
    # c: untouched, its GPU free but starved; then a whole GPU and a CPU-only pod fail.
    order = np.array([0, 1, 2, 2, 0, 3])
    node = np.array([0, 0, 1, 1, -1, -1])
    gpus = [(0,), (1,), (0,), (0,), (), ()]
    none = np.zeros(len(order))
    result = FillResult("hand", 0, 1.0, 1, 4000, none, none, order=order, node=node, gpus=gpus)
    s = stranding(result, NodeTable.of(NODES), PodTable.of(PODS))
    assert s.capacity_milli == 4000
    assert s.allocated_milli == 1000 + 810 + 2 * 470
    assert (s.whole_milli, s.whole_starved) == (1000, 1000)
    # The smallest share any arrival asked is 470: both gaps (190 and 60) are below it.
    assert (s.partial_milli, s.below_smallest) == (190 + 60, 250)
    assert s.beside == {810: (1, 190), 470: (1, 60)}
    assert dict(s.failed) == {(1, 1000): 1, (0, 0): 1}
    assert s.allocated_milli + s.whole_milli + s.partial_milli == s.capacity_milli
    assert s.percent(1000) == 25.0
