"""FGD's fragmentation measure and target workload, against numbers worked out from the paper's definition.

Definition (Weng et al., ATC '23, §4; the artifact's ``GetNodePodFrag``): for a node with free GPU milli
``a_g`` (total ``T``) and a task ``m``, the fragment is ``T`` when ``m`` cannot run there (no GPU asked,
GPU model refused, too little CPU, too few GPUs with ``m``'s milli free), else the free milli of the GPUs
with less than ``m``'s milli free. The node's fragmentation is the expectation over the target workload.
"""

from __future__ import annotations

import numpy as np

from placer.scenarios.fill.policies import Context
from placer.scenarios.fill.policies.fgd import Fgd, Targets, fragmentation, quantized, target_workload
from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import NO_GPU, NodeTable, PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod


def targets(*rows: tuple[float, int, int, int]) -> Targets:
    """(p, cpu, milli, num) rows accepting any GPU model."""
    p, cpu, milli, num = (np.array(c) for c in zip(*rows, strict=True))
    return Targets(
        p=p.astype(float), cpu=cpu, milli=milli, num=num, access=np.ones((len(rows), NO_GPU + 1), bool)
    )


def test_fragmentation_hand_computed() -> None:
    # Node: GPUs free [1000, 300, 0, 700], 8 cores free; T = 2000.
    t = targets(
        (0.4, 4000, 1000, 1),  # one whole GPU, 4 cores: fits (GPU 0); GPUs below 1000: 300 + 700 = 1000
        (0.3, 2000, 500, 1),  # half a GPU: fits (GPU 0 or 3); GPUs below 500: 300
        (0.1, 16000, 200, 1),  # 16 cores: the node has 8 -> lacks CPU -> all of T = 2000
        (0.1, 1000, 1000, 2),  # two whole GPUs: only one is free -> T = 2000
        (0.1, 1000, 0, 0),  # CPU-only: uses no GPU -> T = 2000
    )
    got = fragmentation(np.array([8000]), np.array([[1000, 300, 0, 700]]), np.ones((1, 5), bool), t)
    assert got.tolist() == [0.4 * 1000 + 0.3 * 300 + 0.1 * 2000 + 0.1 * 2000 + 0.1 * 2000]  # 1090


def test_a_refused_model_makes_every_free_gpu_a_fragment() -> None:
    t = targets((1.0, 1000, 500, 1))
    access = np.array([[False], [True]])
    got = fragmentation(np.array([8000, 8000]), np.array([[1000, 400], [1000, 400]]), access, t)
    assert got.tolist() == [1400.0, 400.0]


def test_empty_and_full_nodes() -> None:
    t = targets((0.5, 1000, 1000, 8), (0.5, 1000, 0, 0))
    got = fragmentation(np.array([96000, 0]), np.array([[1000] * 8, [0] * 8]), np.ones((2, 2), bool), t)
    assert got.tolist() == [0.5 * 0 + 0.5 * 8000, 0.0]  # only the CPU-only task sees the free GPUs


def test_target_workload_popularity_cut() -> None:
    # 6 pods of shape A, 3 of B, 1 of C: A+B cover 90 % >= 85 %, so C is left out and A, B renormalized.
    a, b, c = OpenbPod("a", 1000, 1, 1, 500), OpenbPod("b", 2000, 1, 2, 1000), OpenbPod("c", 3000, 1, 0, 0)
    t = target_workload(PodTable.of([a] * 6 + [b] * 3 + [c]), popularity=0.85)
    assert t.p.tolist() == [6 / 9, 3 / 9]
    assert (t.milli.tolist(), t.num.tolist()) == ([500, 1000], [1, 2])
    t = target_workload(PodTable.of([a] * 6 + [b] * 3 + [c]), popularity=0.95)
    assert t.p.tolist() == [0.6, 0.3, 0.1] and t.num.tolist() == [1, 2, 0]  # CPU-only pods are targets too


def test_quantized_score_is_the_artifacts() -> None:
    # int(100 x sigmoid(-delta / 1000)): sigmoid(0.25) = 0.5622, sigmoid(-0.75) = 0.3208.
    assert quantized(np.array([-250.0, 750.0, 0.0])).tolist() == [56, 32, 50]


def test_fgd_picks_the_node_whose_fragmentation_grows_least() -> None:
    # The test_fill.py instance: dF(n1) = -250, dF(n2) = +750 for a 500-milli share.
    nodes = NodeTable.of([OpenbNode("n2", 16000, 65536, 2, "P100"), OpenbNode("n1", 8000, 32768, 1, "P100")])
    pods = PodTable.of([OpenbPod("s", 1000, 1024, 1, 500), OpenbPod("w2", 2000, 2048, 2, 1000)])
    fgd = Fgd(Context(nodes, pods, 0))
    state = FillState(nodes)
    delta, _ = fgd.deltas(state, 0, np.array([0, 1]))
    assert delta.tolist() == [750.0, -250.0]
    assert fgd.choose(state, 0, state.feasible(pods, 0)) == (1, (0,))


def test_cached_deltas_equal_fresh_ones_as_the_cluster_fills() -> None:
    nodes = NodeTable.of([OpenbNode(f"n{i}", 32000, 131072, 4, "V100M16") for i in range(5)])
    raw = [
        OpenbPod("s3", 3000, 1024, 1, 300),
        OpenbPod("s6", 2000, 1024, 1, 650),
        OpenbPod("w", 8000, 1024, 2, 1000),
    ]
    pods = PodTable.of(raw)
    fgd = Fgd(Context(nodes, pods, 1))
    state = FillState(nodes)
    rng = np.random.default_rng(0)
    for _ in range(25):
        i = int(rng.integers(3))
        choice = fgd.choose(state, i, state.feasible(pods, i))
        if choice is None:
            continue
        state.take(choice[0], pods, i, choice[1])
        for j in range(3):  # every cached row must equal a computation from scratch
            cand = np.flatnonzero(state.feasible(pods, j))
            if cand.size:
                cached, _ = fgd.deltas(state, j, cand)
                fresh, _ = Fgd(Context(nodes, pods, 1)).deltas(state, j, cand)
                assert np.allclose(cached, fresh)
