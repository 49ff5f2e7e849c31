"""Baseline policies in scenarios: ``policy.engine: first-fit | best-fit | least-allocated |
most-allocated | fgd`` runs greedy with that node scorer (``solver/scorers.py``), every decision checked.

A hand-made timeline shows spreading against packing: at t = 0 a 5-GPU job takes dgx-h100-1 (every
scorer: the nodes are alike and ties go to node order); at t = 60 s a 1-GPU on-demand job and an 8-GPU spot
job arrive. Least allocated spreads: the 1-GPU job goes to the empty dgx-h100-2 (free fraction
(1 + 1 + 7/8) / 3 against (1 + 1 + 2/8) / 3) and the 8-GPU job finds no whole node. The packing scorers put
the 1-GPU job next to the 5-GPU one and the 8-GPU job starts at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.scenarios.inputs import policy_of, prepare
from placer.scenarios.load import ScenarioError, load_scenario, load_scenario_text, with_overrides
from placer.scenarios.sim.loop import Simulator
from placer.scenarios.spec import EngineName, PolicySpec
from placer.solver.policy import BASELINES, ENGINES
from tests.scenarios.sim.conftest import TWO_DGX, jobs_yaml, simulate_text

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios" / "library"


def _header(engine: str) -> str:
    return (
        "name: baseline\nstart: 2026-01-01T00:00:00Z\nhorizon: 30m\ninterval: 1m\n"
        f"policy: {{engine: {engine}, plan: false}}\n"
    )


JOBS = jobs_yaml(
    {"id": "five", "ext_ml_gpu_count": 5, "ext_ml_timeout_seconds": 3600},
    {"submit": 60, "id": "one", "ext_ml_gpu_count": 1, "ext_ml_timeout_seconds": 3600},
    {
        "submit": 60,
        "id": "eight",
        "ext_ml_gpu_count": 8,
        "ext_ml_priority_class": "spot",
        "ext_ml_timeout_seconds": 600,
    },
)


def test_engine_names_are_placers_engines_and_the_baselines() -> None:
    from typing import get_args

    assert get_args(EngineName) == ENGINES + BASELINES


@pytest.mark.parametrize("engine", BASELINES)
def test_a_baseline_engine_is_greedy_with_that_scorer(engine: str) -> None:
    policy = policy_of(PolicySpec(engine=engine), seed=0)  # type: ignore[arg-type]
    assert (policy.engine, policy.scorer, policy.engine_name) == ("greedy", engine, engine)
    assert policy_of(PolicySpec(), seed=0).scorer == "placer"


def test_the_scorer_is_chosen_as_the_engine_not_a_weight() -> None:
    text = (
        "name: x\nhorizon: 1h\ncluster: {layout: S}\nworkload: {jobs: []}\npolicy: {weights: {scorer: fgd}}\n"
    )
    with pytest.raises(ScenarioError) as e:
        load_scenario_text(text)
    (issue,) = e.value.issues
    assert issue.path == "policy.weights" and "policy.engine" in issue.message
    bad = "name: x\nhorizon: 1h\ncluster: {layout: S}\nworkload: {jobs: []}\npolicy: {engine: tetris}\n"
    with pytest.raises(ScenarioError, match="fgd"):
        load_scenario_text(bad)


@pytest.mark.parametrize("engine", ["best-fit", "most-allocated", "fgd", "first-fit"])
def test_packing_baselines_keep_a_node_whole(engine: str) -> None:
    run = simulate_text(_header(engine) + TWO_DGX + JOBS)
    assert run.result.meta["engine"] == engine
    assert [a["nodes"] for a in run.attempts("one")] == ["dgx-h100-1"]
    assert [(a["nodes"], a["start_s"]) for a in run.attempts("eight")] == [("dgx-h100-2", 60.0)]


def test_least_allocated_spreads_and_the_big_job_waits() -> None:
    run = simulate_text(_header("least-allocated") + TWO_DGX + JOBS)
    assert run.result.meta["engine"] == "least-allocated"
    assert [a["nodes"] for a in run.attempts("five")] == ["dgx-h100-1"]
    assert [a["nodes"] for a in run.attempts("one")] == ["dgx-h100-2"]
    assert run.attempts("eight") == []  # "one" runs for an hour: no whole node within the 30 minutes


@pytest.mark.parametrize("engine", BASELINES)
@pytest.mark.parametrize("scenario", ["mixed-generation", "h100-spot-inference"])
def test_library_scenario_runs_under_each_baseline(scenario: str, engine: str) -> None:
    # A few intervals with failures, a reservation, mixed GPU generations, preemption and (in
    # h100-spot-inference) time planning: every decision passes the checker.
    path = LIBRARY / f"{scenario}.yaml"
    spec = load_scenario(path)
    spec = with_overrides(spec, engine=engine, horizon=spec.interval * 5)
    result = Simulator(prepare(spec, path.parent), verify=True).run()
    assert result.meta["engine"] == engine
    assert result.meta["decisions"] >= 1 and result.meta["verified"] == result.meta["decisions"]
    assert (result.events["event"] == "start").any()
    assert set(result.intervals["engine"].dropna()) <= {"greedy"}  # never CP-SAT


def test_same_seed_same_run_under_a_baseline() -> None:
    path = LIBRARY / "mixed-generation.yaml"
    spec = with_overrides(load_scenario(path), engine="fgd", horizon="2h")
    a = Simulator(prepare(spec, path.parent), verify=True).run()
    b = Simulator(prepare(spec, path.parent), verify=True).run()
    for name, frame in a.tables().items():
        drop = [c for c in ("solver_wall_s",) if c in frame.columns]
        assert frame.drop(columns=drop).equals(b.tables()[name].drop(columns=drop)), name
