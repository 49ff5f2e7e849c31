"""Helpers for the simulator tests: run a scenario written inline, with every decision checked.

Why every decision is checked here and not only where a test asks: the simulator applies whatever
``place()`` answers, so a test run is also a test of the engine; ``verify=True`` makes the simulator run
the independent checker on each decision and fail (``SimulationError``) on any violation, and the hook
keeps the decisions for the test to look at.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest

from placer.scenarios.inputs import prepare
from placer.scenarios.load import load_scenario_text
from placer.scenarios.sim.loop import Simulator
from placer.scenarios.sim.record import SimResult
from placer.solver.decision import Decision

#: The clock of the hand-made timelines: t = 0 s is this instant.
HEADER = """
name: timeline
start: 2026-01-01T00:00:00Z
horizon: 2h
interval: 1m
policy: {engine: greedy, plan: false}
"""


#: One DGX H100 (8 GPUs, on-demand list price 8 x $12.29 = $98.32/h, named ``dgx-h100``), or two.
ONE_DGX = "cluster: {builders: [{dgx_h100: {count: 1}}]}\n"
TWO_DGX = "cluster: {builders: [{dgx_h100: {count: 2}}]}\n"


def jobs_yaml(*jobs: dict) -> str:
    """The workload line of a scenario listing ``jobs`` (JSON is YAML)."""
    return f"workload: {json.dumps({'jobs': list(jobs)})}\n"


def spot_job(**extra: object) -> dict:
    """An 8-GPU spot job of 3,600 s of work submitted at 0, 120 s grace period, and ``extra`` fields."""
    return {
        "id": "spot",
        "ext_ml_gpu_count": 8,
        "ext_ml_priority_class": "spot",
        "ext_ml_timeout_seconds": 3600,
        "ext_ml_preemption_grace_period_s": 120,
        **extra,
    }


#: An 8-GPU on-demand job of 1,200 s submitted at 1,500 s (a tick: 25 x 60).
PROD = {"submit": 1500, "id": "prod", "ext_ml_gpu_count": 8, "ext_ml_timeout_seconds": 1200}
#: Periodic checkpoints every 600 s.
EVERY_600 = {"ext_ml_checkpoint_enabled": True, "ext_ml_checkpoint_interval_s": 600}


@dataclass
class Run:
    """A finished run and the decisions it applied, by interval (seconds after the start)."""

    result: SimResult
    decisions: dict[float, Decision] = field(default_factory=dict)

    def job(self, job_id: str) -> dict:
        rows = self.result.jobs[self.result.jobs["job"] == job_id].to_dict("records")
        assert len(rows) == 1, f"no job {job_id}"
        return rows[0]

    def attempts(self, job_id: str) -> list[dict]:
        a = self.result.attempts
        return a[a["job"] == job_id].sort_values("attempt").to_dict("records")

    def events(self, job_id: str | None = None) -> list[tuple[float, str]]:
        e = self.result.events
        if job_id is not None:
            e = e[e["job"] == job_id]
        return list(zip(e["t_s"], e["event"], strict=True))


def simulate_text(text: str, **options: object) -> Run:
    """Run scenario ``text`` (YAML) with the checker on every decision."""
    inputs = prepare(load_scenario_text(text), base=None)
    run = Run(result=None)  # type: ignore[arg-type]

    def keep(t: float, d: Decision, batch: object, cluster: object) -> None:
        run.decisions[t] = d

    run.result = Simulator(inputs, verify=True, on_decision=keep, **options).run()  # type: ignore[arg-type]
    return run


@pytest.fixture
def timeline() -> str:
    """The common header of the hand-made timelines (start, 2 h horizon, 1 min interval, greedy, no plan)."""
    return HEADER
