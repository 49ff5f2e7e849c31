"""Autoscaled node groups: hand-worked timelines of nodes requested, joining, idling and leaving, and
their bill; and the scenario errors of a wrong group.

Every expected number is derived in the comment above it from the scenario (times in seconds after the
start, scheduling every 60 s), not read off a run; every decision is re-checked by the independent
checker (``conftest.simulate_text``). A DGX H100 lists at $12.29 per GPU-hour on demand: $98.32/h.
"""

from __future__ import annotations

import json

import pytest

from placer.scenarios.inputs import prepare
from placer.scenarios.load import ScenarioError, load_scenario_text
from placer.scenarios.sim.metrics import summary
from tests.scenarios.sim.conftest import ONE_DGX, TWO_DGX, jobs_yaml, simulate_text

DGX_HOUR = 98.32


def _groups(*groups: dict) -> str:
    return f"autoscaling: {json.dumps({'groups': list(groups)})}\n"


def _burst(**extra: object) -> dict:
    """DGX H100 nodes, on demand, at most 3, 300 s to boot, removed after 600 s idle."""
    return {
        "name": "burst",
        "node": {"dgx_h100": {}},
        "max": 3,
        "provision": 300,
        "scale_down_after": 600,
        **extra,
    }


def _job(job_id: str, gpus: int, work: int, submit: int = 0, **extra: object) -> dict:
    return {"id": job_id, "submit": submit, "ext_ml_gpu_count": gpus, "ext_ml_timeout_seconds": work, **extra}


def _node_events(run) -> list[tuple[float, str, str]]:  # type: ignore[no-untyped-def]
    e = run.result.events
    e = e[e["event"].isin(["scale_up", "node_added", "node_removed", "node_reclaimed"])]
    return [
        (t, what, detail.split(";")[0])
        for t, what, detail in zip(e["t_s"], e["event"], e["detail"], strict=True)
    ]


def test_nodes_are_requested_for_waiting_jobs_join_after_provisioning_and_leave_when_idle(
    timeline: str,
) -> None:
    jobs = [_job("a", 8, 3600), _job("b", 8, 1200, 60), _job("c", 4, 1200, 60), _job("d", 4, 1200, 60)]
    run = simulate_text(timeline + ONE_DGX + _groups(_burst()) + jobs_yaml(*jobs))
    # t=0: a fills the one DGX. t=60: b, c and d wait; on empty DGX nodes they need two (b on one, c and
    # d sharing the other), so two are requested, ready at 60 + 300 = 360. They join before the decision
    # at 360, which starts b, c and d on them; all three end at 360 + 1200 = 1560. From the interval at
    # 1560 both nodes are idle; at 1560 + 600 = 2160 they leave.
    assert _node_events(run) == [
        (60.0, "scale_up", "burst: burst-1, burst-2 for b, c, d"),
        (360.0, "node_added", "burst-1"),
        (360.0, "node_added", "burst-2"),
        (2160.0, "node_removed", "burst-1"),
        (2160.0, "node_removed", "burst-2"),
    ]
    for job in ("b", "c", "d"):
        assert run.job(job)["wait_s"] == 300.0 and run.job(job)["state"] == "done"
    assert {a["nodes"] for j in "bcd" for a in run.attempts(j)} == {"burst-1", "burst-2"}
    nodes = run.result.nodes[["node", "requested_s", "joined_s", "removed_s", "billed_h", "cost_usd"]]
    assert nodes.values.tolist() == [
        [n, 60.0, 360.0, 2160.0, pytest.approx(2100 / 3600), pytest.approx(DGX_HOUR * 2100 / 3600)]
        for n in ("burst-1", "burst-2")
    ]
    g = run.result.meta["autoscaling"]["burst"]
    # Billed from the request (60) to the removal (2160): 2,100 s each; there from 360: 1,800 s each.
    assert (g["requested"], g["removed"], g["peak"]) == (2, 2, 2)
    assert g["billed_node_h"] == pytest.approx(2 * 2100 / 3600)
    assert g["ready_node_h"] == pytest.approx(2 * 1800 / 3600)
    assert g["cost_usd"] == pytest.approx(DGX_HOUR * 2 * 2100 / 3600)
    s = summary(run.result)
    # Capacity: the DGX's 8 GPUs for 2 h, and 16 GPUs for 1,800 s; the fleet: the DGX for 2 h and the bill.
    assert s["capacity_gpu_h"] == pytest.approx(8 * 2 + 16 * 1800 / 3600)
    assert s["fleet_cost_usd"] == pytest.approx(DGX_HOUR * 2 + DGX_HOUR * 2 * 2100 / 3600)


def test_a_group_never_exceeds_max_and_counts_nodes_on_their_way(timeline: str) -> None:
    jobs = [_job("a", 8, 7200), *(_job(f"w{k}", 8, 600, 60) for k in range(3))]
    run = simulate_text(timeline + ONE_DGX + _groups(_burst(max=1)) + jobs_yaml(*jobs))
    # Three 8-GPU jobs wait from 60 and would take three nodes, but the group has at most one, which holds
    # one of them: one request at 60, for w0. The node on its way is counted in the intervals until it
    # joins at 360, and the one there after: no more requests while the jobs run on it one after the other
    # (360, 960, 1560; the last ends at 2160), then it leaves 600 s later, at 2760.
    assert _node_events(run) == [
        (60.0, "scale_up", "burst: burst-1 for w0"),
        (360.0, "node_added", "burst-1"),
        (2760.0, "node_removed", "burst-1"),
    ]
    assert [run.job(f"w{k}")["wait_s"] for k in range(3)] == [300.0, 900.0, 1500.0]


def test_a_group_scales_from_zero_for_jobs_only_its_nodes_can_hold(timeline: str) -> None:
    l4 = {"name": "l4", "node": {"pcie_inference": {}}, "max": 2, "provision": 120, "scale_down_after": 300}
    jobs = [_job("infer", 1, 600, ext_ml_gpu_type="nvidia-l4"), _job("huge", 16, 600)]
    run = simulate_text(timeline + ONE_DGX + _groups(l4) + jobs_yaml(*jobs))
    # No L4 in the cluster: the 1-GPU L4 job can run nowhere, and one L4 node would hold it, so one is
    # requested at 0 and joins at 120; the job runs 120-720 and the node leaves at 720 + 300 = 1020. The
    # 16-GPU job fits no node of either kind (8 and 4 GPUs): it asks for nothing and waits to the end.
    assert _node_events(run) == [
        (0.0, "scale_up", "l4: l4-1 for infer"),
        (120.0, "node_added", "l4-1"),
        (1020.0, "node_removed", "l4-1"),
    ]
    assert run.job("infer")["wait_s"] == 120.0
    assert run.job("huge")["state"] == "pending"


def test_min_nodes_are_there_from_the_start_and_stay(timeline: str) -> None:
    run = simulate_text(timeline + ONE_DGX + _groups(_burst(min=1)) + jobs_yaml(_job("a", 8, 600)))
    # burst-1 joins at 0 (before the first decision) and never leaves: the group keeps its min. Billed and
    # there for the whole 2 h horizon.
    assert _node_events(run) == [(0.0, "scale_up", "burst: burst-1"), (0.0, "node_added", "burst-1")]
    g = run.result.meta["autoscaling"]["burst"]
    assert (g["billed_node_h"], g["ready_node_h"], g["cost_usd"]) == pytest.approx((2.0, 2.0, 2 * DGX_HOUR))


def test_a_group_node_is_not_removed_while_a_job_holds_it(timeline: str) -> None:
    jobs = [_job("a", 8, 600), _job("long", 8, 3000, 60)]
    run = simulate_text(timeline + ONE_DGX + _groups(_burst(scale_down_after=60)) + jobs_yaml(*jobs))
    # long waits at 60 (a holds the DGX to 600): one node, there at 360, held by long until 360 + 3000 =
    # 3360, then removed one interval later (60 s idle), at 3420. a's end at 600 frees the DGX, but long
    # runs where it started.
    assert _node_events(run)[-2:] == [(360.0, "node_added", "burst-1"), (3420.0, "node_removed", "burst-1")]


def test_the_same_seed_gives_the_same_run(timeline: str) -> None:
    text = (
        timeline + ONE_DGX + _groups(_burst()) + jobs_yaml(*(_job(f"j{k}", 4, 900, 60 * k) for k in range(8)))
    )
    first, second = simulate_text(text), simulate_text(text)
    assert first.result.events.equals(second.result.events)


@pytest.mark.parametrize(
    ("group", "code", "path"),
    [
        ({"node": {"dgx_h100": {"count": 2}}}, "conflict", "autoscaling.groups[0].node.dgx_h100.count"),
        ({"node": {"gb200_nvl72": {}}}, "range", "autoscaling.groups[0].node"),
        ({"node": {"dgx_a900": {}}}, "enum", "autoscaling.groups[0].node"),
        (
            {"node": {"dgx_h100": {"nodes_per_rack": "x"}}},
            "type",
            "autoscaling.groups[0].node.dgx_h100.nodes_per_rack",
        ),
        ({"name": "dgx-h100"}, "conflict", "autoscaling.groups[0].name"),  # dgx-h100-1, dgx-h100-2
    ],
    ids=["count", "rack-builder", "unknown-builder", "bad-argument", "names-taken"],
)
def test_a_wrong_group_is_refused_naming_the_field(timeline: str, group: dict, code: str, path: str) -> None:
    text = timeline + TWO_DGX + _groups(_burst(**group)) + jobs_yaml(_job("a", 1, 60))
    with pytest.raises(ScenarioError) as e:
        prepare(load_scenario_text(text), base=None)
    assert [(i.code, i.path) for i in e.value.issues][:1] == [(code, path)]


@pytest.mark.parametrize(
    ("groups", "code", "where"),
    [
        ([_burst(min=4, max=2)], "range", "autoscaling.groups[0]"),
        ([_burst(), _burst()], "duplicate", "autoscaling.groups"),
        (
            [{"name": "x", "node": {"dgx_h100": {}, "hgx_a100": {}}, "max": 1}],
            "malformed",
            "autoscaling.groups[0]",
        ),
        ([_burst(max=0)], "range", "autoscaling.groups[0].max"),
    ],
    ids=["min-above-max", "duplicate", "two-builders", "max-zero"],
)
def test_a_malformed_autoscaling_section_is_refused(
    timeline: str, groups: list, code: str, where: str
) -> None:
    text = timeline + ONE_DGX + _groups(*groups) + jobs_yaml(_job("a", 1, 60))
    with pytest.raises(ScenarioError) as e:
        load_scenario_text(text)
    assert (code, where) in [(i.code, i.path) for i in e.value.issues]


def test_a_job_arriving_while_nodes_boot_asks_for_nothing_more_when_they_will_hold_it(timeline: str) -> None:
    jobs = [_job("a", 8, 3600), _job("b", 4, 600, 60), _job("c", 4, 600, 120)]
    run = simulate_text(timeline + ONE_DGX + _groups(_burst()) + jobs_yaml(*jobs))
    # b waits at 60: one node requested. c arrives at 120 and waits too; b and c together take one empty
    # node, and one is on its way: nothing more is requested. Both start on burst-1 at 360.
    assert [e for e in _node_events(run) if e[1] != "node_removed"] == [
        (60.0, "scale_up", "burst: burst-1 for b"),
        (360.0, "node_added", "burst-1"),
    ]
    assert run.job("b")["wait_s"] == 300.0 and run.job("c")["wait_s"] == 240.0


def test_a_reclaimed_node_fails_its_job_which_asks_for_a_node_again(timeline: str) -> None:
    spot = _burst(max=1, provision=120, reclaim_mtbf=1800, node={"dgx_h100": {"capacity_class": "spot"}})
    jobs = [_job("a", 8, 7200), _job("b", 8, 3000, 60)]
    run = simulate_text(timeline + ONE_DGX + _groups(spot) + jobs_yaml(*jobs))
    events = _node_events(run)
    [reclaim] = [t for t, e, d in events if e == "node_reclaimed" and d == "burst-1"]
    # b waits at 60 (a holds the DGX all run): burst-1 is requested, joins at 180, b starts there. The
    # provider takes it back at some time after 180 (drawn); b has no checkpoints, so all its work there is
    # lost, and it waits again; at the next interval (a multiple of 60) it asks for burst-2.
    assert 180 < reclaim < 180 + 3000, "with 3,000 s of work b would have ended first"
    first = run.attempts("b")[0]
    assert (first["start_s"], first["stop_s"], first["outcome"]) == (180.0, reclaim, "failed")
    assert first["lost_s"] == reclaim - 180.0 and first["useful_s"] == 0.0
    retry = -(-reclaim // 60) * 60
    assert (retry, "scale_up", "burst: burst-2 for b") in events
    nodes = run.result.nodes.set_index("node")
    assert nodes.loc["burst-1", "reclaimed"] and nodes.loc["burst-1", "removed_s"] == reclaim
    assert nodes.loc["burst-1", "billed_h"] == pytest.approx((reclaim - 60) / 3600)
    assert run.result.meta["autoscaling"]["burst"]["reclaimed"] >= 1


def test_reclaims_are_drawn_per_node_from_the_seed_alone_with_the_mean_asked() -> None:
    from placer.scenarios.inputs import NodeGroup
    from placer.scenarios.sim.autoscaler import Autoscaler
    from placer.topology.inventory import NodeSpec

    def draws(seed: int, provision: float, price: float) -> list[float]:
        node = NodeSpec(name="s-0", cpu_cores=4)
        a = Autoscaler(
            [NodeGroup("s", node, 2000, 2000, provision, 600.0, price, 0, reclaim_mtbf_s=3600.0)], seed=seed
        )
        [up] = a.initial()
        out = [a.joined(0.0, n) for n in up.nodes]
        assert all(t is not None for t in out)
        return [float(t) for t in out if t is not None]

    first = draws(3, 300.0, 1.0)
    # Exponential with mean 3,600 s: over 2,000 nodes the mean is within 8 % (3.6 standard errors).
    assert abs(sum(first) / len(first) - 3600) < 0.08 * 3600
    # The same seed gives the same times whatever else the group (or the policy) says; another seed not.
    assert draws(3, 60.0, 9.0) == first and draws(4, 300.0, 1.0) != first
