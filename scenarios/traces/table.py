"""CSV tables with named, typed, validated columns, and the structured error every trace loader raises.

Why one module: the openb node list, the openb pod lists and the Philly extract are all CSV files whose
rows a loader turns into typed records. Each must say *where* bad input is — file, line, column, value —
and collect every problem of a file rather than stop at the first (a user fixes a file once, not once per
error). :class:`Table` does the reading and the column check; :meth:`Table.integer` and friends read one
cell each, recording a :class:`TraceProblem` instead of raising; the loader raises :class:`TraceError`
with all of them at the end (:meth:`Table.raise_problems`).

Line numbers are the file's own (the header is line 1), so ``sed -n 3p FILE`` shows the culprit.

>>> t = Table.parse("name,cpu_milli\\na,8000\\nb,lots\\n", "pods.csv", required=("name", "cpu_milli"))
>>> [t.integer(r, "cpu_milli") for r in t.rows]
[8000, None]
>>> str(t.problems[0])
"pods.csv: line 3, column 'cpu_milli': 'lots' is not an integer"
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["MAX_PROBLEMS", "Row", "Table", "TraceError", "TraceProblem"]

#: Most problems kept per file: a file broken on every line says so in a few lines, not in 80,000.
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class TraceProblem:
    """One problem in a trace file: where (``line`` 1-based, header included; ``column``) and what."""

    source: str
    line: int | None
    column: str | None
    message: str

    def __str__(self) -> str:
        where = [f"line {self.line}"] if self.line is not None else []
        if self.column is not None:
            where.append(f"column {self.column!r}")
        return (
            f"{self.source}: {', '.join(where)}: {self.message}"
            if where
            else f"{self.source}: {self.message}"
        )

    def to_json(self) -> dict[str, object]:
        """The problem as a JSON object (``source``, ``line``, ``column``, ``message``)."""
        return {"source": self.source, "line": self.line, "column": self.column, "message": self.message}


class TraceError(ValueError):
    """A trace file that cannot be loaded, with every problem found (at most :data:`MAX_PROBLEMS`).

    >>> str(TraceError([TraceProblem("n.csv", None, None, "empty file")]))
    'n.csv: empty file'
    """

    def __init__(self, problems: Iterable[TraceProblem], more: int = 0):
        self.problems = list(problems)
        self.more = more
        if not self.problems:
            raise ValueError("TraceError needs at least one problem")
        text = "; ".join(str(p) for p in self.problems)
        super().__init__(text + (f"; ... and {more} more problems" if more else ""))


@dataclass
class Row:
    """One data row: its cells by column name and its line in the file."""

    line: int
    cells: dict[str, str]


class Table:
    """A parsed CSV file whose required columns are known to be present (else :class:`TraceError`)."""

    def __init__(self, source: str, rows: list[Row]):
        self.source = source
        self.rows = rows
        self.problems: list[TraceProblem] = []
        self._dropped = 0

    @staticmethod
    def read(path: str | Path, required: Sequence[str], optional: Sequence[str] = ()) -> Table:
        """Read ``path`` (UTF-8); ``OSError`` when it cannot be opened, :class:`TraceError` when it is not
        a table with the ``required`` columns."""
        return Table.parse(Path(path).read_text(encoding="utf-8"), str(path), required, optional)

    @staticmethod
    def parse(text: str, source: str, required: Sequence[str], optional: Sequence[str] = ()) -> Table:
        """Parse CSV ``text``; the header must name every ``required`` column (``optional`` ones may be
        absent: their cells read as empty). Blank lines are skipped; a row with more or fewer cells than
        the header is a problem of that line."""
        reader = csv.reader(io.StringIO(text))
        try:
            header = next(reader, None)
        except csv.Error as e:
            raise TraceError([TraceProblem(source, 1, None, f"not CSV: {e}")]) from None
        if not header or not any(h.strip() for h in header):
            raise TraceError([TraceProblem(source, None, None, "empty file: no header line")])
        names = [h.strip() for h in header]
        missing = [c for c in required if c not in names]
        if missing:
            raise TraceError(
                [
                    TraceProblem(
                        source,
                        1,
                        c,
                        f"required column missing (the header has: {', '.join(n for n in names if n)})",
                    )
                    for c in missing
                ]
            )
        wanted = [c for c in (*required, *optional) if c in names]
        pos = {c: names.index(c) for c in wanted}
        table = Table(source, [])
        try:
            for i, cells in enumerate(reader, start=2):
                if not cells or not any(c.strip() for c in cells):
                    continue
                if len(cells) != len(names):
                    table.problem(i, None, f"{len(cells)} cells where the header has {len(names)} columns")
                    continue
                table.rows.append(Row(i, {c: cells[pos[c]].strip() for c in wanted}))
        except csv.Error as e:
            table.problem(reader.line_num, None, f"not CSV: {e}")
        return table

    # -- problems --------------------------------------------------------------------------------------

    def problem(self, line: int | None, column: str | None, message: str) -> None:
        """Record a problem (the first :data:`MAX_PROBLEMS` are kept, the rest counted)."""
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(TraceProblem(self.source, line, column, message))
        else:
            self._dropped += 1

    def raise_problems(self) -> None:
        """Raise :class:`TraceError` with every recorded problem, in file order, if there is any."""
        if self.problems:
            raise TraceError(sorted(self.problems, key=lambda p: p.line or 0), self._dropped)

    # -- typed cells -----------------------------------------------------------------------------------

    def _finite(self, row: Row, column: str, what: str) -> float | None:
        """The cell as a finite float, else None and a problem saying it is not ``what``."""
        text = row.cells.get(column, "")
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            self.problem(row.line, column, f"{text!r} is not {what}" if text else f"empty, {what} is needed")
            return None
        return value

    def integer(self, row: Row, column: str, *, low: int = 0, high: int | None = None) -> int | None:
        """The cell as an integer in ``[low, high]``; None (and a problem) otherwise. ``"8000.0"`` reads as
        8000: some exports write integers as floats."""
        value = self._finite(row, column, "an integer")
        if value is None:
            return None
        if value != int(value):
            self.problem(row.line, column, f"{row.cells.get(column)!r} is not an integer")
            return None
        n = int(value)
        if n < low or (high is not None and n > high):
            bounds = f"between {low} and {high}" if high is not None else f"at least {low}"
            self.problem(row.line, column, f"{n} is out of range (must be {bounds})")
            return None
        return n

    def number(self, row: Row, column: str, *, low: float = 0.0) -> float | None:
        """The cell as a finite number ``>= low``; None (and a problem) otherwise."""
        value = self._finite(row, column, "a number")
        if value is not None and value < low:
            self.problem(row.line, column, f"{value:g} is out of range (must be at least {low:g})")
            return None
        return value

    def timestamp(self, row: Row, column: str) -> datetime | None:
        """The cell as a UTC time (``2017-10-09 07:01:55`` or ISO 8601); None (and a problem) otherwise."""
        text = row.cells.get(column, "")
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            self.problem(
                row.line, column, f"{text!r} is not a date and time" if text else "empty, a time is needed"
            )
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def text(self, row: Row, column: str, *, required: bool = True) -> str:
        """The cell's text; an empty required cell is a problem."""
        value = row.cells.get(column, "")
        if required and not value:
            self.problem(row.line, column, "empty, a value is needed")
        return value
