"""A tiny scenario and sweep for the sweep tests: two DGX H100 nodes (or three, in the ``big`` variant),
a few jobs an hour for two hours at five-minute intervals — a cell runs in a fraction of a second.

Why generous time limits: a decision that runs into its time limit depends on the machine's load, and
these tests compare runs made at different times on two loaded cores; with 30 s to spare the solver
always finishes first, so each cell is fixed by its scenario and seed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCENARIO = """
name: tiny
seed: 5
start: 2026-01-01T00:00:00Z
horizon: 24h
interval: 1m
cluster: {builders: [{dgx_h100: {count: 2}}]}
workload:
  synthetic:
    arrivals: {rate_per_hour: 6, backlog: 4}
    classes:
      - {name: train, share: 1, gpus: {4: 0.5, 8: 0.5}, priority_class: on-demand, priority: [100, 500],
         duration: {dist: exponential, mean: 40m}, checkpoint_interval: 10m, preemptible: true}
      - {name: sweep, share: 2, gpus: 1, priority_class: spot, duration: {dist: exponential, mean: 20m}}
policy: {engine: greedy, time_limit_s: 30, plan: false}
"""

SWEEP = """
name: tiny-grid
scenarios: [tiny.yaml]
seeds: [1, 2]
policies:
  greedy: {engine: greedy}
  cpsat: {engine: cpsat, time_limit_s: 30}
  no-preemption: {preemption: false}
variants:
  small: {}
  big: {cluster: {builders: [{dgx_h100: {count: 3}}]}}
overrides: {horizon: 2h, interval: 5m}
"""


def write(folder: Path, sweep: str = SWEEP, scenario: str = SCENARIO) -> Path:
    """``tiny.yaml`` and ``sweep.yaml`` in ``folder``; the sweep's path."""
    (folder / "tiny.yaml").write_text(scenario)
    path = folder / "sweep.yaml"
    path.write_text(sweep)
    return path


@pytest.fixture(scope="module")
def tiny_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("sweep"))
