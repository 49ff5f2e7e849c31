"""A sweep's results: the rows as one pandas DataFrame, a compact text table of it, and the files
``--out`` writes — ``results.parquet`` (``results.csv``) and ``sweep.json``, the resolved grid.

Why ``sweep.json`` beside the table: a row names its scenario, variant, policy and seed; the grid file
says what each of those was — the merged scenario every cell ran (after variants, policy overrides and
the horizon/interval overrides) — so a row can be re-run alone with ``placer simulate`` or compared with a
later sweep without the sweep file at hand.

>>> from placer.scenarios.sweep.row import error_row
>>> keys = {"cell": 0, "sweep": "s", "scenario": "a", "variant": "base", "policy": "p", "seed": 1}
>>> f = frame([error_row(keys, "ValueError: no", 0.25)])
>>> f.shape[0], str(f["seed"].dtype), str(f["allocation"].dtype)
(1, 'Int64', 'float64')
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from placer.scenarios.sim.output import Format, table_format
from placer.scenarios.sweep.grid import Cell
from placer.scenarios.sweep.row import COLUMNS
from placer.scenarios.units import format_duration

__all__ = ["TEXT_COLUMNS", "frame", "grid_doc", "records", "text", "write"]


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows (in grid order) as a DataFrame with every column of
    :data:`~placer.scenarios.sweep.row.COLUMNS`
    and its type."""
    data = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    for name, dtype in COLUMNS.items():
        if dtype == "object":
            continue
        data[name] = pd.to_numeric(data[name], errors="coerce").astype(dtype)
    return data.sort_values("cell", kind="stable").reset_index(drop=True)


def records(results: pd.DataFrame) -> list[dict[str, Any]]:
    """The table as JSON-ready dicts (missing values as ``None``)."""
    out = []
    for row in results.to_dict("records"):
        out.append({k: _plain(v) for k, v in row.items()})
    return out


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return None
    if hasattr(v, "item"):  # numpy scalars
        return v.item()
    return v


def grid_doc(cells: list[Cell], /, **run: Any) -> dict[str, Any]:
    """``sweep.json``: ``run`` facts (sweep, backend, times), every merged scenario once (``runs``), and
    every cell with its run (``cells``)."""
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in cells:
        runs.setdefault(
            (c.file, c.variant, c.policy),
            {
                "run": len(runs),
                "scenario": c.scenario,
                "file": c.file,
                "variant": c.variant,
                "policy": c.policy,
                "base": c.base,
                "spec": c.spec,
            },
        )
    return {
        **run,
        "runs": list(runs.values()),
        "cells": [
            {
                "cell": c.index,
                "scenario": c.scenario,
                "variant": c.variant,
                "policy": c.policy,
                "seed": c.seed,
                "run": runs[(c.file, c.variant, c.policy)]["run"],
            }
            for c in cells
        ],
    }


def write(
    results: pd.DataFrame, grid: dict[str, Any], out: str | os.PathLike[str], *, fmt: Format = "auto"
) -> list[Path]:
    """``results.parquet`` (or ``.csv``: ``fmt="csv"`` or no pyarrow) and ``sweep.json`` into ``out``."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    kind = table_format(fmt)
    table = folder / f"results.{kind}"
    if kind == "parquet":
        results.to_parquet(table, index=False)
    else:
        results.to_csv(table, index=False)
    doc = folder / "sweep.json"
    doc.write_text(json.dumps(grid, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return [table, doc]


def _pct(x: Any) -> str:
    return f"{100 * x:.1f}%"


def _num(x: Any) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}"


def _wait(x: Any) -> str:
    return format_duration(float(x))


#: The text table's numbers: (header, column, how a value is shown).
TEXT_COLUMNS: tuple[tuple[str, str, Any], ...] = (
    ("jobs", "jobs", str),
    ("done", "done", str),
    ("alloc", "allocation", _pct),
    ("util", "utilization", _pct),
    ("wait p95 od", "on_demand_wait_p95_s", _wait),
    ("wait p95 spot", "spot_wait_p95_s", _wait),
    ("evict", "preemptions", str),
    ("lost GPU-h", "lost_gpu_h", _num),
    ("$/useful GPU-h", "cost_per_useful_gpu_h", _num),
    ("wall s", "wall_s", lambda x: f"{x:.1f}"),
)


def text(results: pd.DataFrame) -> str:
    """One line per cell: its keys, a few headline numbers, or its error; then the failed-cell count."""
    keys = ["scenario", "variant", "policy", "seed"]
    if results["variant"].nunique() <= 1:
        keys.remove("variant")
    header = [*keys, "status", *(h for h, _, _ in TEXT_COLUMNS)]
    lines: list[list[str]] = []
    errors = []
    for row in results.to_dict("records"):
        cells = [str(row[k]) for k in keys] + [row["status"]]
        cells += ["-" if _plain(row[c]) is None else show(row[c]) for _, c, show in TEXT_COLUMNS]
        lines.append(cells)
        if row["status"] != "ok":
            errors.append(f"cell {row['cell']} ({'/'.join(str(row[k]) for k in keys)}): {row['error']}")
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(header)]
    left = len(keys) + 1

    def fmt(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    out = [fmt(header), *(fmt(r) for r in lines)]
    failed = len(errors)
    out.append(f"{len(lines)} cells, {len(lines) - failed} ran, {failed} failed")
    clocked = int((results["decisions_at_limit"].fillna(0) > 0).sum())
    if clocked:
        out.append(
            f"{clocked} cell{'s' if clocked > 1 else ''} had decisions that ran into the policy's time "
            "limit (decisions_at_limit): their numbers may depend on this machine's speed and load"
        )
    return "\n".join([*(line.rstrip() for line in out), *errors])
