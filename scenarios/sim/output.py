"""Writing a run: one file per table (parquet when ``pyarrow`` is installed, else CSV) and
``summary.json``.

Why parquet first: the tables keep their types (timestamps with time zones, floats, booleans) and load
back in one line (``pd.read_parquet("out/jobs.parquet")``); CSV is the fallback that needs nothing.

>>> import tempfile
>>> from placer.scenarios.sim.record import SimResult
>>> import pandas as pd
>>> empty = SimResult(*(pd.DataFrame({"a": [1]}) for _ in range(5)), meta={"name": "x"})
>>> with tempfile.TemporaryDirectory() as d:
...     sorted(p.name for p in write(empty, d, fmt="csv", summary={"name": "x"}))
['attempts.csv', 'events.csv', 'intervals.csv', 'jobs.csv', 'nodes.csv', 'reasons.csv', 'summary.json']
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Literal

from placer.scenarios.sim.record import SimResult

__all__ = ["Format", "table_format", "write"]

Format = Literal["auto", "parquet", "csv"]


def table_format(fmt: Format = "auto") -> str:
    """``parquet`` or ``csv``: ``auto`` is parquet when ``pyarrow`` is importable."""
    if fmt == "auto":
        return "parquet" if importlib.util.find_spec("pyarrow") is not None else "csv"
    return fmt


def write(
    result: SimResult,
    out: str | os.PathLike[str],
    *,
    fmt: Format = "auto",
    summary: dict[str, Any] | None = None,
) -> list[Path]:
    """Write every table of ``result`` (and ``summary`` as JSON) into folder ``out``; the paths written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    kind = table_format(fmt)
    paths = []
    for name, frame in result.tables().items():
        path = folder / f"{name}.{kind}"
        if kind == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False)
        paths.append(path)
    if summary is not None:
        path = folder / "summary.json"
        path.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
