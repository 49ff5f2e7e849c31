"""Running one cell: validate its merged scenario, build the inputs for its seed, simulate, summarize —
one row, whatever happens.

Why a function of plain data that never raises: it runs in a worker process or on a Ray node, where an
exception would cost the whole sweep or a confusing remote traceback; a failure (a trace file missing on
that machine, a decision that breaks a rule under ``verify``) becomes an ``error`` row with the error's
type and message, and the other cells go on.

>>> bad = Cell(index=0, sweep="s", scenario="x", file="x.yaml", variant="base", policy="p", seed=0,
...            spec={"name": "x", "horizon": "1h", "cluster": {"file": "gone.json"},
...                  "workload": {"jobs": []}}, base=".")
>>> row = run_cell(bad)
>>> row["status"], row["error"].split(":")[0]
('error', 'ScenarioError')
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from placer.scenarios.sim.record import SimResult
from placer.scenarios.sweep.grid import Cell
from placer.scenarios.sweep.row import error_row, summary_row

__all__ = ["AT_LIMIT", "MAX_ERROR_CHARS", "at_limit", "keys_of", "run_cell"]

#: Longest error text kept in a row.
MAX_ERROR_CHARS = 2000
#: Share of the time limit from which a decision counts as stopped by the clock.
AT_LIMIT = 0.9


def keys_of(cell: Cell) -> dict[str, Any]:
    """The identity columns of ``cell``'s row."""
    return {
        "cell": cell.index,
        "sweep": cell.sweep,
        "scenario": cell.scenario,
        "variant": cell.variant,
        "policy": cell.policy,
        "seed": cell.seed,
        "file": cell.file,
        "engine": (cell.spec.get("policy") or {}).get("engine", "greedy"),
    }


def at_limit(result: SimResult) -> int:
    """Decisions that took at least :data:`AT_LIMIT` of the policy's time limit: the solver's clock,
    not only the scenario and the seed, may have shaped them (a loaded machine decides less in the
    same seconds)."""
    iv = result.intervals
    limit = float(result.meta.get("time_limit_s") or 0.0)
    if iv.empty or "solver_wall_s" not in iv or limit <= 0:
        return 0
    return int((iv["solver_wall_s"] >= AT_LIMIT * limit).sum())


def run_cell(cell: Cell) -> dict[str, Any]:
    """Simulate ``cell`` and return its row (``status`` ``ok``), or an ``error`` row."""
    from pydantic import ValidationError

    from placer.scenarios.inputs import prepare
    from placer.scenarios.load import ScenarioError, issues_of
    from placer.scenarios.sim.loop import Simulator
    from placer.scenarios.sim.metrics import summary
    from placer.scenarios.spec import ScenarioSpec

    keys = keys_of(cell)
    started = time.perf_counter()
    try:
        try:
            spec = ScenarioSpec.model_validate(cell.spec)
        except ValidationError as e:  # said the way a scenario file's problems are said
            raise ScenarioError(issues_of(e)) from None
        inputs = prepare(spec, base=Path(cell.base), seed=cell.seed)
        result = Simulator(inputs, verify=cell.verify).run()
        s = {**summary(result), "decisions_at_limit": at_limit(result)}
    except Exception as e:  # a failed cell is a row, never a crash of the sweep
        text = f"{type(e).__name__}: {e}"
        if len(text) > MAX_ERROR_CHARS:
            text = text[: MAX_ERROR_CHARS - 3] + "..."
        return error_row(keys, text, time.perf_counter() - started)
    return summary_row(keys, s, time.perf_counter() - started)
