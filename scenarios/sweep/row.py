"""One row of a sweep's results table: which cell it is, whether it ran, and the simulator's summary
(:func:`placer.scenarios.sim.metrics.summary`) flattened into fixed columns.

Why fixed columns with fixed types: every row — also a failed cell's, whose metrics are empty — has the
same columns, so the table of a thousand cells is one parquet file that loads with its types, and two
sweeps' tables can be concatenated. Waits are one column per priority class
(``on_demand_wait_p95_s``); a class without jobs in a run is empty (NaN), not zero.

Three columns measure the machine, not the simulated cluster, and may differ between two runs of the
same cell: :data:`TIMING` (``wall_s``, ``solver_s``, ``decisions_at_limit``). Everything else is fixed
by the scenario and the seed — as long as no decision ran into the policy's time limit: the solver
stops at a wall-clock deadline, so a decision cut short on a loaded machine may differ from one that
finished (``decisions_at_limit`` counts them; raise ``time_limit_s`` to make a sweep reproducible).

>>> r = error_row({"cell": 0, "sweep": "s", "scenario": "a", "variant": "base", "policy": "p", "seed": 1,
...                "file": "a.yaml", "engine": "greedy"}, "ValueError: no", 0.5)
>>> r["status"], r["error"], r["allocation"], r["wall_s"]
('error', 'ValueError: no', None, 0.5)
"""

from __future__ import annotations

from typing import Any

from placer.scenarios.sim.metrics import CLASS_ORDER

__all__ = [
    "COLUMNS",
    "KEYS",
    "STATES",
    "SUMMARY",
    "TIMING",
    "WAIT_FIELDS",
    "class_column",
    "error_row",
    "summary_row",
]

#: Identity of a row: the cell and what it is.
KEYS = ("cell", "sweep", "scenario", "variant", "policy", "seed", "file", "engine", "status", "error")
#: Columns taken as they are from the summary (name -> pandas dtype).
SUMMARY: dict[str, str] = {
    "nodes": "Int64",
    "gpus": "Int64",
    "tpu_chips": "Int64",
    "horizon_s": "float64",
    "interval_s": "float64",
    "jobs": "Int64",
    "allocation": "float64",
    "utilization": "float64",
    "capacity_gpu_h": "float64",
    "held_gpu_h": "float64",
    "useful_gpu_h": "float64",
    "preemptions": "Int64",
    "failures": "Int64",
    "node_failures": "Int64",
    "lost_gpu_h": "float64",
    "grace_gpu_h": "float64",
    "cost_usd": "float64",
    "cost_per_useful_gpu_h": "float64",
    "fleet_cost_usd": "float64",
    "fleet_cost_per_useful_gpu_h": "float64",
    "autoscaled_gpu_h": "float64",
    "autoscaled_cost_usd": "float64",
    "mean_free_gpus": "float64",
    "mean_stranded_gpus": "float64",
    "decisions": "Int64",
    "verified": "Int64",
}
#: Job states counted (the summary's ``states``): ``pending`` jobs were still waiting at the horizon.
STATES = ("done", "running", "pending", "rejected")
#: Per priority class, from the summary's ``waits`` (wait = first start - submission, jobs that started).
WAIT_FIELDS: dict[str, str] = {
    "jobs": "Int64",
    "waiting": "Int64",
    "wait_p50_s": "float64",
    "wait_p95_s": "float64",
    "completion_p95_s": "float64",
}
#: Measures of the machine running the cell: seconds, and the decisions that ran into the time limit
#: (when not 0, the other numbers may depend on the machine's speed and load too).
TIMING = ("solver_s", "wall_s", "decisions_at_limit")


def class_column(priority_class: str, field: str) -> str:
    """``on-demand`` + ``wait_p95_s`` -> ``on_demand_wait_p95_s``."""
    return f"{priority_class.replace('-', '_')}_{field}"


#: Every column, in order, with its pandas dtype.
COLUMNS: dict[str, str] = {
    **{k: ("Int64" if k in ("cell", "seed") else "object") for k in KEYS},
    **dict.fromkeys(STATES, "Int64"),
    **SUMMARY,
    **{class_column(c, f): t for c in CLASS_ORDER for f, t in WAIT_FIELDS.items()},
    "solver_s": "float64",
    "wall_s": "float64",
    "decisions_at_limit": "Int64",
}


def summary_row(keys: dict[str, Any], summary: dict[str, Any], wall_s: float) -> dict[str, Any]:
    """The row of a cell that ran: ``keys`` (cell, sweep, scenario, ...) and the summary's numbers."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(keys, status="ok", error="")
    states = summary.get("states", {})
    row.update({s: int(states.get(s, 0)) for s in STATES})
    row.update({k: summary.get(k) for k in SUMMARY})
    for cls in CLASS_ORDER:
        waits = summary.get("waits", {}).get(cls)
        for f in WAIT_FIELDS:
            row[class_column(cls, f)] = None if waits is None else waits.get(f)
    row.update(solver_s=summary.get("solver_s"), wall_s=wall_s)
    row["decisions_at_limit"] = summary.get("decisions_at_limit")
    return row


def error_row(keys: dict[str, Any], error: str, wall_s: float | None) -> dict[str, Any]:
    """The row of a cell that failed: its keys, ``status`` ``error`` and the error text; no metrics."""
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(keys, status="error", error=error, wall_s=wall_s)
    return row
