"""Helpers for the cost-study tests: a workload written inline as a list of jobs, on a 2-hour clock.

Why hand-made jobs: the bill and the deadlines are checked against arithmetic done by hand (price x
hours, submit + work + slack), which needs jobs whose placement and times are known in advance.
"""

from __future__ import annotations

import json

from placer.scenarios.load import load_scenario_text
from placer.scenarios.spec import ScenarioSpec


def job(id: str, gpus: int, work_s: float, **extra: object) -> dict:
    """An H100 job envelope of ``gpus`` GPUs and ``work_s`` seconds of work (``submit`` etc. in extra)."""
    return {
        "id": id,
        "ext_ml_gpu_count": gpus,
        "ext_ml_gpu_type": "nvidia-h100",
        "ext_ml_timeout_seconds": work_s,
        **extra,
    }


def workload(*jobs: dict, horizon: str = "2h", interval: str = "1m", extra: str = "") -> ScenarioSpec:
    """A scenario of ``jobs`` (its one-node cluster is replaced by each design), greedy, no planning."""
    return load_scenario_text(
        f"""
name: hand
start: 2026-01-01T00:00:00Z
horizon: {horizon}
interval: {interval}
cluster: {{builders: [{{dgx_h100: {{count: 1}}}}]}}
workload: {json.dumps({"jobs": list(jobs)})}
policy: {{engine: greedy, plan: false}}
{extra}
"""
    )
