"""Spot reclaims: drawn only for spot nodes, from their own random stream, and the work they throw away
is lost only on spot nodes — in the amount a hand calculation gives."""

from __future__ import annotations

import pytest

from placer.scenarios.cost import Design, Pool, SpotReclaim, reclaims_of, runs
from placer.scenarios.inputs import prepare
from tests.scenarios.cost.conftest import job, workload

#: One on-demand and one spot DGX H100.
HALF_SPOT = Design(name="half-spot", pools=[Pool(nodes=2, spot=0.5)])
SPOT_NODE = "dgx-h100-spot"


def _busy_workload(horizon: str = "6h"):  # type: ignore[no-untyped-def]
    """Enough 8-GPU jobs of 20 minutes, checkpointing every 10 minutes, to keep both nodes busy."""
    jobs = [
        job(
            f"j{i:02d}",
            8,
            1200,
            submit=300 * i,
            ext_ml_checkpoint_enabled=True,
            ext_ml_checkpoint_interval_s=600,
        )
        for i in range(70)
    ]
    return workload(*jobs, horizon=horizon)


def test_reclaims_lose_work_only_on_spot_nodes() -> None:
    (run,) = runs(
        [HALF_SPOT], _busy_workload(), reclaim=SpotReclaim(mtbf="1h", replace_after="10m"), verify=True
    )
    a = run.result.attempts
    failed = a[a["outcome"] == "failed"]
    assert run.reclaims >= 3 and len(failed) >= 1
    assert set(failed["nodes"]) == {SPOT_NODE}
    assert (a.loc[a["nodes"] != SPOT_NODE, "lost_s"] == 0).all()
    # Evictions lose nothing here (one priority, nobody evicts): all lost work is the reclaims'.
    row = run.row()
    assert row["lost_evicted_gpu_h"] == 0
    assert row["lost_reclaim_gpu_h"] > 0
    assert row["lost_reclaim_gpu_h"] == pytest.approx(float((failed["lost_s"] * 8).sum()) / 3600)
    # A node down is down: nothing starts on the spot node while it is away.
    downs = run.result.events[run.result.events["event"] == "node_down"]
    assert set(downs["detail"]) == {SPOT_NODE}


def test_the_work_lost_to_a_reclaim_is_the_work_since_the_start_without_checkpoints() -> None:
    # One spot node, one job of 8 GPUs and 10 h of work, no checkpoints, started at 0: the first reclaim
    # at T throws away T seconds of 8 GPUs.
    design = Design.of("spot", 1, spot=1.0)
    spec = workload(job("long", 8, 36000), horizon="10h")
    reclaim = SpotReclaim(mtbf="3h", replace_after="10m")
    inputs = prepare(spec.model_copy(update={"cluster": design.cluster_spec()}), None, seed=0)
    first = reclaims_of(reclaim, inputs.cluster, inputs.start, spec.horizon, seed=0)[0]
    t = (first.down - inputs.start).total_seconds()
    assert 0 < t < 36000
    (run,) = runs([design], spec, reclaim=reclaim, verify=True)
    a = run.result.attempts.sort_values("attempt").iloc[0]
    assert (a["outcome"], a["stop_s"], a["lost_s"]) == ("failed", t, t)
    assert run.lost_reclaim_gpu_h >= 8 * t / 3600


def test_no_spot_nodes_no_reclaims_and_none_means_none() -> None:
    spec = _busy_workload("2h")
    on_demand, spot = runs([Design.of("od", 2), HALF_SPOT], spec, reclaim=SpotReclaim(mtbf="10m"))
    assert on_demand.reclaims == 0 and (on_demand.result.events["event"] != "node_down").all()
    assert spot.reclaims > 0
    (no_reclaims,) = runs([HALF_SPOT], spec, reclaim=None)
    assert no_reclaims.reclaims == 0 and (no_reclaims.result.events["event"] != "node_down").all()


def test_reclaims_do_not_move_with_the_scenarios_own_failures() -> None:
    # The workload's random failures (every node) draw from "{seed}:failures", the reclaims from
    # "{seed}:spot-reclaims": adding the former changes nothing of the latter.
    reclaim = SpotReclaim(mtbf="1h")
    plain = _busy_workload("4h")
    failing = workload(
        *plain.workload.jobs, horizon="4h", extra="failures: {random: {mtbf: 2h, repair: 30m}}"
    )
    seen = []
    for spec in (plain, failing):
        inputs = prepare(spec.model_copy(update={"cluster": HALF_SPOT.cluster_spec()}), None, seed=3)
        seen.append(reclaims_of(reclaim, inputs.cluster, inputs.start, spec.horizon, seed=3))
        if spec is failing:
            assert inputs.failures, "the scenario's own failures are there"
    assert seen[0] == seen[1] and seen[0]
