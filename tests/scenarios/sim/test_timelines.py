"""Hand-worked timelines: the simulator's accounting checked against arithmetic done by hand.

Every expected number below is derived in the comment above it from the scenario's inputs (times in
seconds after the start, scheduling every 60 s), not read off a run. Every decision of every run is
re-checked by the independent checker (``conftest.simulate_text``).
"""

from __future__ import annotations

import pandas as pd
import pytest

from tests.scenarios.sim.conftest import EVERY_600, ONE_DGX, PROD, TWO_DGX, jobs_yaml, simulate_text, spot_job


@pytest.mark.parametrize(
    ("extra", "saved", "lost"),
    [
        # Checkpoints every 600 s commit at 600 and 1200; evicted at 1500: 1200 s kept, 300 s lost.
        (EVERY_600, 1200, 300),
        # Checkpoint on preempt: it saves during the grace period, all 1500 s kept.
        ({**EVERY_600, "ext_ml_checkpoint_on_preempt": True}, 1500, 0),
        # No checkpoints at all: the 1500 s are lost, it starts over.
        ({}, 0, 1500),
    ],
    ids=["periodic", "on-preempt", "none"],
)
def test_preemption_with_grace_period_and_resume(timeline: str, extra: dict, saved: int, lost: int) -> None:
    run = simulate_text(timeline + ONE_DGX + jobs_yaml(spot_job(**extra), PROD))
    # t=0: spot starts. t=1500: prod arrives; the decision evicts spot for it. Spot keeps its GPUs for
    # its 120 s grace period, so prod starts at 1620 and ends at 1620 + 1200 = 2820.
    evict = run.decisions[1500.0].preemptions
    assert [(e.job, e.for_, e.grace_period_s) for e in evict] == [("spot", ["prod"], 120)]
    # The solver charged the eviction exactly the work the simulator then throws away: 8 GPUs x lost s.
    assert evict[0].expected_work_lost_gpu_s == 8 * lost
    prod = run.job("prod")
    assert (prod["wait_s"], prod["completion_s"]) == (120.0, 1320.0)
    # Spot is requeued at 1620 with 3600 - saved s of work, waits for prod, restarts at 2820.
    first, second = run.attempts("spot")
    assert (first["start_s"], first["stop_s"], first["release_s"], first["outcome"]) == (
        0.0,
        1500.0,
        1620.0,
        "evicted",
    )
    assert (first["useful_s"], first["lost_s"], first["grace_s"]) == (saved, lost, 120.0)
    assert first["held_s"] == first["useful_s"] + first["lost_s"] + first["grace_s"] == 1620.0
    assert (second["start_s"], second["outcome"], second["useful_s"]) == (2820.0, "done", 3600.0 - saved)
    spot = run.job("spot")
    assert spot["state"] == "done" and spot["completion_s"] == 2820 + 3600 - saved
    assert spot["preemptions"] == 1 and spot["attempts"] == 2
    assert spot["lost_gpu_h"] == pytest.approx(8 * lost / 3600)
    assert spot["grace_gpu_h"] == pytest.approx(8 * 120 / 3600)
    # Held 1620 s, then 3600 - saved s, at $98.32/h.
    assert spot["cost_usd"] == pytest.approx(98.32 * (1620 + 3600 - saved) / 3600)
    assert run.events("spot") == [
        (0.0, "submit"),
        (0.0, "start"),
        (1500.0, "evict"),
        (1620.0, "release"),
        (1620.0, "requeue"),
        (2820.0, "start"),
        (float(2820 + 3600 - saved), "finish"),
    ]
    assert run.events("prod") == [
        (1500.0, "submit"),
        (1500.0, "place"),
        (1620.0, "start"),
        (2820.0, "finish"),
    ]


def test_reservation_expiry(timeline: str) -> None:
    # Node dgx-h100-2 is reserved for "team" until 1800 s. At 0: "a" (8 GPUs, 3600 s) takes node 1, the
    # member "m0" (4 GPUs, 600 s) runs inside the reservation, and "b" (8 GPUs, 600 s) may not use node 2:
    # it waits until the reservation ends at 1800, then runs to 2400. The member "m1" arrives at 2400,
    # after the end: it waits with RESERVATION_INACTIVE although node 2 is free.
    member = {"ext_ml_gpu_count": 4, "ext_ml_timeout_seconds": 600, "ext_ml_reservation_id": "team"}
    workload = jobs_yaml(
        {"id": "a", "ext_ml_gpu_count": 8, "ext_ml_timeout_seconds": 3600},
        {"id": "m0", **member},
        {"id": "b", "ext_ml_gpu_count": 8, "ext_ml_timeout_seconds": 600},
        {"submit": 2400, "id": "m1", **member},
    )
    reserved = "reservations: [{id: team, nodes: [dgx-h100-2], end: 30m}]\n"
    run = simulate_text(timeline + TWO_DGX + reserved + workload)
    assert run.attempts("m0")[0]["nodes"] == "dgx-h100-2"
    assert run.attempts("a")[0]["nodes"] == "dgx-h100-1"
    b = run.job("b")
    assert (b["wait_s"], b["completion_s"]) == (1800.0, 2400.0)
    assert run.attempts("b")[0]["nodes"] == "dgx-h100-2"
    assert (1800.0, "reservation_end") in run.events()
    m1 = run.job("m1")
    assert m1["state"] == "pending" and pd.isna(m1["first_start"])
    r = run.result.reasons
    late = r[(r["t_s"] >= 2400) & (r["code"] == "RESERVATION_INACTIVE")]
    assert len(late) == (7200 - 2400) // 60 and set(late["jobs"]) == {1}


def test_node_failure_requeues_from_the_last_checkpoint(timeline: str) -> None:
    # "t" (8 GPUs, 3600 s, checkpoints every 900 s) starts at 0 on dgx-h100-1. The node fails at 1000 for
    # 30 minutes: the checkpoint at 900 survives, 100 s are lost (no grace on a failure), and "t" is
    # requeued at 1000 with 2700 s left. The next interval (1020) places it on dgx-h100-2: it ends at 3720.
    job = {"id": "t", "ext_ml_gpu_count": 8, "ext_ml_timeout_seconds": 3600, **EVERY_600}
    job["ext_ml_checkpoint_interval_s"] = 900
    failure = "failures: {events: [{node: dgx-h100-1, at: 1000, for: 30m}]}\n"
    run = simulate_text(timeline + TWO_DGX + failure + jobs_yaml(job))
    first, second = run.attempts("t")
    assert (first["nodes"], first["outcome"], first["useful_s"], first["lost_s"]) == (
        "dgx-h100-1",
        "failed",
        900.0,
        100.0,
    )
    assert first["release_s"] == 1000.0 and first["grace_s"] == 0.0
    assert (second["nodes"], second["start_s"], second["useful_s"]) == ("dgx-h100-2", 1020.0, 2700.0)
    t = run.job("t")
    assert (t["state"], t["failures"], t["completion_s"]) == ("done", 1, 3720.0)
    assert t["lost_gpu_h"] == pytest.approx(8 * 100 / 3600)
    assert (1000.0, "node_down") in run.events() and (2800.0, "node_up") in run.events()
    iv = run.result.intervals.set_index("t_s")
    # While the node is down (1000 <= t < 2800) the cluster has 8 usable GPUs, otherwise 16.
    assert iv.loc[1020.0, "gpus_down"] == 8 and iv.loc[1020.0, "gpus_total"] == 8
    assert iv.loc[2760.0, "gpus_down"] == 8 and iv.loc[2820.0, "gpus_down"] == 0
    assert iv.loc[960.0, "gpus_total"] == 16


def test_escalation_lets_a_waiting_spot_job_evict(timeline: str) -> None:
    # "hog" (spot, 8 GPUs, 7200 s) runs from 0. "late" is spot too, with escalation to on-demand after
    # 600 s of waiting (OJS ML §8.4), submitted at 60. Spot cannot evict spot. Escalation needs more than
    # 600 s of waiting: at t = 660 it has waited exactly 600, at t = 720 it has waited 660 and counts as
    # on-demand, so that decision evicts "hog" (default grace 30 s): "late" starts at 750, waited 690 s.
    spot = {"ext_ml_gpu_count": 8, "ext_ml_priority_class": "spot"}
    escalates = {
        "ext_ml_priority_escalation": True,
        "ext_ml_escalation_after_s": 600,
        "ext_ml_escalation_target_class": "on-demand",
    }
    hog = {"id": "hog", **spot, "ext_ml_timeout_seconds": 7200}
    late = {"submit": 60, "id": "late", **spot, "ext_ml_timeout_seconds": 600, **escalates}
    run = simulate_text(timeline + ONE_DGX + jobs_yaml(hog, late))
    assert [t for t, d in sorted(run.decisions.items()) if d.preemptions] == [720.0]
    late = run.job("late")
    assert (late["wait_s"], late["escalated"]) == (690.0, True)
    assert run.attempts("late")[0]["priority_class"] == "on-demand"
