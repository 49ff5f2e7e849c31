"""The bill of a design is its nodes' prices times the hours each is billed, worked out by hand.

Catalog prices per GPU-hour (solver/data/prices.json): H100 on-demand $12.29, spot $4.90, reserved
$7.80; A100 reserved $3.25. A DGX H100 and an HGX A100 have 8 GPUs each.
"""

from __future__ import annotations

import pandas as pd
import pytest

from placer.scenarios.cost import Billing, Design, Pool, bill, runs
from placer.scenarios.cost.billing import used_seconds
from placer.scenarios.sim import metrics
from placer.solver.prices import PriceCatalog
from placer.topology import cluster_of, dgx_h100
from tests.scenarios.cost.conftest import job, workload

#: Two reserved A100 nodes no job can use (the jobs ask for H100), one on-demand and one spot H100.
DESIGN = Design(
    name="hand",
    pools=[Pool(machine="hgx_a100", nodes=2, reserved=1.0), Pool(machine="dgx_h100", nodes=2, spot=0.5)],
)
#: "o" may not run on spot: it takes the on-demand node for 1 h; "s" (spot class) the spot node for 30 min.
JOBS = (
    job("o", 8, 3600, ext_mlx_scheduling_spot_preference="on_demand_only"),
    job("s", 8, 1800, ext_ml_priority_class="spot"),
)


def _run(billing: Billing | None = None):  # type: ignore[no-untyped-def]
    (run,) = runs([DESIGN], workload(*JOBS), reclaim=None, billing=billing, verify=True)
    return run


def test_bill_is_price_times_hours_on_a_hand_worked_case() -> None:
    run = _run()
    by_class = run.bill.groupby("capacity_class")["cost_usd"].sum()
    # reserved: 2 nodes x 8 GPUs x $3.25 x 2 h, idle or not
    assert by_class["reserved"] == pytest.approx(2 * 8 * 3.25 * 2)  # $104.00
    # on-demand: 8 x $12.29 x 1 h while "o" runs; spot: 8 x $4.90 x 0.5 h while "s" runs
    assert by_class["on-demand"] == pytest.approx(8 * 12.29 * 1)  # $98.32
    assert by_class["spot"] == pytest.approx(8 * 4.90 * 0.5)  # $19.60
    row = run.row()
    assert row["cost_usd"] == pytest.approx(221.92)
    # work kept: 8 GPUs x 1 h + 8 GPUs x 0.5 h
    assert row["useful_gpu_h"] == pytest.approx(12.0)
    assert row["cost_per_useful_gpu_h"] == pytest.approx(221.92 / 12.0)


def test_billed_always_the_bill_is_the_simulators_fleet_cost() -> None:
    run = _run(Billing(reserved="always", on_demand="always", spot="always"))
    hand = 2 * 8 * 3.25 * 2 + 8 * 12.29 * 2 + 8 * 4.90 * 2  # $379.04
    assert run.row()["cost_usd"] == pytest.approx(hand)
    assert metrics.cost(run.result)["fleet_cost_usd"] == pytest.approx(hand)


def test_billing_reads_the_class_names_of_a_study_file() -> None:
    assert Billing.model_validate({"on-demand": "always"}).on_demand == "always"
    with pytest.raises(ValueError):
        Billing.model_validate({"spot": "sometimes"})


def test_a_reclaimed_spot_node_is_not_billed_while_away() -> None:
    c = cluster_of(dgx_h100(1, name="sp", capacity_class="spot"), dgx_h100(1, name="od"))
    empty = pd.DataFrame(columns=["nodes", "placed_s", "release_s"])
    always = Billing(on_demand="always", spot="always")
    b = bill(c, PriceCatalog.default(), empty, horizon_s=7200, away={"sp": 1800}, billing=always)
    cost = dict(zip(b["node"], b["cost_usd"], strict=True))
    assert cost["sp"] == pytest.approx(8 * 4.90 * 1.5)  # 2 h less 30 min away
    assert cost["od"] == pytest.approx(8 * 12.29 * 2)


def test_a_node_shared_by_overlapping_runs_is_billed_once() -> None:
    # Two runs on node "n" overlap from 600 s to 1800 s; a third is on "n" and "m"; one ends past the horizon.
    attempts = pd.DataFrame(
        {
            "nodes": ["n", "n", "n,m", "m"],
            "placed_s": [0.0, 600.0, 3000.0, 6000.0],
            "release_s": [1800.0, 2400.0, 3600.0, 9000.0],
        }
    )
    used = used_seconds(attempts, horizon_s=7200)
    assert used == {"n": 2400 + 600, "m": 600 + 1200}


def test_an_autoscaled_group_is_billed_from_request_to_removal() -> None:
    groups = {"name": "burst", "node": {"dgx_h100": {}}, "max": 2, "provision": 300, "scale_down_after": 600}
    design = Design.model_validate(
        {"name": "auto", "pools": [{"nodes": 1, "reserved": 1.0}], "autoscaling": {"groups": [groups]}}
    )
    (run,) = runs([design], workload(job("a", 8, 1200), job("b", 8, 1200)), reclaim=None, verify=True)
    # a takes the reserved node at 0; b waits, so one on-demand node is requested at 0 and joins at 300;
    # b runs there 300-1500, the node is idle from 1500 and leaves at 1500 + 600 = 2100.
    scaled = run.bill[run.bill["kind"] == "autoscaled"].to_dict("records")
    assert [(r["node"], r["rule"], r["capacity_class"]) for r in scaled] == [
        ("burst-1", "exists", "on-demand")
    ]
    assert scaled[0]["billed_h"] == pytest.approx(2100 / 3600) and scaled[0]["used_h"] == pytest.approx(
        1200 / 3600
    )
    row = run.row()
    # reserved: 8 x $7.80 x 2 h; the group's node: 8 x $12.29 for 2,100 s, billed though idle from 1,500 s.
    assert row["cost_reserved_usd"] == pytest.approx(8 * 7.80 * 2)
    assert row["cost_autoscaled_usd"] == row["cost_on_demand_usd"] == pytest.approx(8 * 12.29 * 2100 / 3600)
    assert row["cost_usd"] == pytest.approx(8 * 7.80 * 2 + 8 * 12.29 * 2100 / 3600)
    assert (row["reserved_nodes"], row["on_demand_nodes"], row["autoscaled_nodes"]) == (1, 0, 1)
    assert row["autoscaled_node_h"] == pytest.approx(2100 / 3600)
