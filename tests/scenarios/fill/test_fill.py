"""The fill experiment's arithmetic on instances small enough to work by hand.

The two-node instance (node n2 listed first: 2 GPUs; n1: 1 GPU; 3,000 milli-GPUs in all) receives a
500-milli share s, a two-GPU pod w2, then another s:

* first fit takes n2 for s (its GPU 0 keeps 500), so w2 finds no node with two free GPUs and fails; the
  second s shares n2's GPU 0. Allocated 500 + 500 = 1,000 of 3,000: 33.33 %.
* best fit scores 0.5 x CPU left / 128,000 + 0.5 x GPU left / 8,000: n1 leaves 500 GPU milli, n2 1,500,
  so s goes to n1; w2 takes n2; the second s fills n1's GPU. All 3,000 allocated: 100 %.
* FGD (target workload: s and w2, half each): on n1, F goes from 0.5 x 0 + 0.5 x 1000 = 500 (w2 cannot
  use a 1-GPU node, so its GPU is a fragment for w2) to 0.5 x 0 + 0.5 x 500 = 250: -250. On n2, F goes
  from 0 to 0.5 x 0 + 0.5 x 1500 = 750 (w2 no longer fits): +750. FGD takes n1, then as best fit: 100 %.
"""

from __future__ import annotations

import numpy as np
import pytest

from placer.scenarios.fill.result import FillResult
from placer.scenarios.fill.run import run_fill
from placer.scenarios.fill.sampling import arrivals
from placer.scenarios.fill.tables import PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod

NODES = [OpenbNode("n2", 16000, 65536, 2, "P100"), OpenbNode("n1", 8000, 32768, 1, "P100")]
PODS = [OpenbPod("s", 1000, 1024, 1, 500), OpenbPod("w2", 2000, 2048, 2, 1000)]
ORDER = [0, 1, 0]  # s, w2, s


@pytest.mark.parametrize(
    ("policy", "alloc", "failed"), [("first-fit", 33.33, 1), ("best-fit", 100.0, 0), ("fgd", 100.0, 0)]
)
def test_hand_worked_two_node_fill(policy: str, alloc: float, failed: int) -> None:
    r = run_fill(NODES, PODS, policy=policy, order=ORDER)
    assert r.arrived.tolist() == [500, 2500, 3000]
    assert r.final_alloc() == alloc and r.failed == failed
    assert r.alloc_at((100,)) == {100: alloc}  # the last arrival is the only one at 100 % arrived


def test_first_fit_places_where_the_hand_arithmetic_says() -> None:
    r = run_fill(NODES, PODS, policy="first-fit", order=ORDER)
    assert r.node.tolist() == [0, -1, 0] and r.gpus == [(0,), (), (0,)]
    r = run_fill(NODES, PODS, policy="best-fit", order=ORDER)
    assert r.node.tolist() == [1, 0, 1] and r.gpus == [(0,), (0, 1), (0,)]


def test_every_baseline_keeps_capacity() -> None:
    pods = [*PODS, OpenbPod("cpu", 4000, 4096, 0, 0), OpenbPod("quarter", 2000, 1024, 1, 250)]
    from placer.scenarios.fill.policies import POLICIES

    for name in POLICIES:
        r = run_fill(NODES, pods, policy=name, load=2.0, seed=3)
        assert r.allocated[-1] <= 3000 and r.final_alloc() <= 100.0, name
        assert r.failed > 0, name  # 200 % of the capacity arrived: something must fail


def test_sampling_stops_before_exceeding_the_load() -> None:
    pods = PodTable.of([OpenbPod("g", 1000, 1, 1, 1000), OpenbPod("c", 1000, 1, 0, 0)])
    order = arrivals(pods, capacity_milli=4000, load=1.3, seed=5)
    # Every GPU pod asks for 1,000: 5 of them (5,000 <= 5,200); a sixth would make 6,000 > 5,200.
    assert int(pods.total_milli[order].sum()) == 5000
    assert (order == 0).sum() == 5
    assert np.array_equal(order, arrivals(pods, capacity_milli=4000, load=1.3, seed=5))  # seeded


def test_artifact_sampling_keeps_every_trace_pod_once() -> None:
    pods = PodTable.of([OpenbPod(f"p{i}", 1000, 1, 1, 1000) for i in range(3)])
    order = arrivals(pods, capacity_milli=4000, load=1.3, seed=1, sampling="artifact")
    assert sorted(order[:3].tolist()) == [0, 1, 2] and len(order) == 5  # 3 trace pods + 2 draws
    down = arrivals(pods, capacity_milli=1000, load=1.3, seed=1, sampling="artifact")
    assert len(down) == 1  # the trace asks for 3,000 > 1,300: random pods removed until 1,000 remains


def test_sampling_refuses_a_workload_without_gpu_pods() -> None:
    with pytest.raises(ValueError, match="no pod asks for a GPU"):
        arrivals(PodTable.of([OpenbPod("c", 1, 1, 0, 0)]), capacity_milli=1000, load=1.0, seed=0)


def test_alloc_at_averages_the_events_of_each_percent() -> None:
    # Capacity 10,000: arrivals at 10 %, 49.6 %, 50.4 % and 80 %; allocations 10, 40, 45 and 70 %.
    r = FillResult(
        policy="x",
        seed=0,
        load=1.0,
        batch=1,
        capacity_milli=10_000,
        arrived=np.array([1000, 4960, 5040, 8000]),
        allocated=np.array([1000, 4000, 4500, 7000]),
    )
    # 49.6 and 50.4 both round to 50: their mean 42.5; 79-81 holds only 80; nothing within 89-91.
    assert r.alloc_at((50, 80, 90)) == {50: 42.5, 80: 70.0, 90: None}


def test_batch_is_for_engines_only() -> None:
    with pytest.raises(ValueError, match="batch"):
        run_fill(NODES, PODS, policy="fgd", batch=4, order=ORDER)
    with pytest.raises(KeyError, match="unknown policy"):
        run_fill(NODES, PODS, policy="tetris", order=ORDER)


def _mixed_fill() -> tuple[list[OpenbNode], list[OpenbPod]]:
    """40 nodes of three GPU models and a pod list of shares, whole GPUs and CPU-only pods: batches where
    CP-SAT has something to weigh (fragmentation, not only placed work)."""
    nodes = [
        OpenbNode(f"g{k}", 32000, 131072, 8 if k % 3 else 4, ("G2", "T4", "V100M16")[k % 3])
        for k in range(40)
    ]
    pods = [
        OpenbPod("half", 2000, 4096, 1, 500),
        OpenbPod("third", 1000, 2048, 1, 330),
        OpenbPod("one", 4000, 8192, 1, 1000),
        OpenbPod("two", 8000, 16384, 2, 1000),
        OpenbPod("cpu", 6000, 8192, 0, 0),
    ]
    return nodes, pods


def test_reproducible_engine_runs_are_cut_by_no_clock_and_repeat() -> None:
    # Reproducible, batches of 20: CP-SAT spends deterministic budgets, no call is cut by the clock, and a
    # second run makes every decision again. Batches of 20 because a reproducible call's wall time is its
    # deterministic budget in this machine's seconds: here the costliest one takes about 0.1 s of its 1 s
    # limit (measured), so the wall-clock safety net is far. In batches of 40 one call takes about 0.75 s
    # of its 1 s, and a busy moment in a full suite was enough for the net to cut it (then the run says
    # so: cut 1, not reproducible). Without reproducible budgets (0.3 s a call, batches of 40) the clock
    # cuts CP-SAT's search, and the run says in how many decisions (it may differ on another machine).
    # OR-Tools is imported first: its import (about 0.5 s, once per process) would fall in the first
    # decision that runs CP-SAT, and may leave that model unbuilt in time, which counts as a cut too.
    import placer.solver.cpsat  # noqa: F401

    nodes, pods = _mixed_fill()
    kw = {"load": 1.2, "seed": 7, "policy": "auto"}
    runs = [run_fill(nodes, pods, reproducible=True, time_limit_s=1.0, batch=20, **kw) for _ in range(2)]  # type: ignore[arg-type]
    assert [r.cut for r in runs] == [0, 0] and all(r.reproducible for r in runs)
    assert runs[0].node.tolist() == runs[1].node.tolist() and runs[0].gpus == runs[1].gpus
    clocked = run_fill(nodes, pods, time_limit_s=0.3, batch=40, **kw)  # type: ignore[arg-type]
    assert not clocked.reproducible and clocked.cut > 0
