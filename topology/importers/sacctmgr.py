"""``sacctmgr -P`` text: its rows by column, and the job and GPU limits a row sets.

Why a module of its own: Slurm's QOS table (:mod:`.slurm_qos`) and association table
(:mod:`.slurm_assoc`) are both ``sacctmgr show ... -P`` output, with the same header line, the same
``GrpTRES`` lists and the same "empty or -1 is no limit"; both read them here, one way.

>>> problems = []
>>> text = "Name|GrpJobs|GrpTRES" + chr(10) + "gpu|4|cpu=8,gres/gpu=16" + chr(10)
>>> (number, row), = parsable_rows(text, "q", problems, ("Name",), "QOS", "sacctmgr show qos -P")
>>> columns = {"GrpJobs": ("jobs", False), "GrpTRES": ("gpus", True)}
>>> limit_fields(row, columns, (), "gpu", "q", problems)
{'jobs': 4, 'gpus': 16, 'unmodelled': ('GrpTRES cpu=8',)}
"""

from __future__ import annotations

from placer.topology.errors import Problem
from placer.topology.importers._common import short, whole_number

__all__ = ["limit_fields", "parsable_rows"]


def parsable_rows(
    text: str, source: str, problems: list[Problem], required: tuple[str, ...], what: str, command: str
) -> list[tuple[int, dict[str, str]]]:
    """The rows of ``sacctmgr -P`` (``--parsable2``) or ``--parsable`` text (a trailing ``|``), as (line
    number, column -> cell; cells stripped of spaces unless the column is ``Account``, whose leading spaces
    are a ``tree``'s depth); the header line names the columns and must have ``required``; a row of
    another width is a problem naming its line. ``what`` (a row's kind) and ``command`` (what prints the
    text) are for the messages."""
    lines = [(n, line.rstrip("\r")) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        problems.append(Problem(source, "document", f"no {what} ({command}, with its header line)"))
        return []
    (_, head), *body = lines
    columns = head.split("|")
    if columns and columns[-1] == "":  # --parsable ends every line with '|'
        columns = columns[:-1]
    missing = [c for c in required if c not in columns]
    if missing:
        what = f"the header names no {', '.join(missing)} column ({command})"
        problems.append(Problem(source, "line 1", what))
        return []
    out = []
    for number, line in body:
        cells = line.split("|")
        if len(cells) == len(columns) + 1 and cells[-1] == "":
            cells = cells[:-1]
        if len(cells) != len(columns):
            what = f"{len(cells)} fields where the header has {len(columns)}"
            problems.append(Problem(source, f"line {number}", what))
            continue
        row = {c: (v.rstrip() if c == "Account" else v.strip()) for c, v in zip(columns, cells, strict=True)}
        out.append((number, row))
    return out


def limit_fields(
    row: dict[str, str],
    columns: dict[str, tuple[str, bool]],
    not_read: tuple[str, ...],
    item: str,
    source: str,
    problems: list[Problem],
) -> dict[str, object]:
    """The limit ``columns`` of one ``sacctmgr -P`` row (column -> (field name, whether it is a TRES
    list)) as field name -> whole number, a TRES list giving its ``gres/gpu``; what else they or the
    ``not_read`` columns set is listed in ``unmodelled`` (``"GrpTRES cpu=64"``). Empty and ``-1`` are no
    limit; a value that is not a number is a problem naming ``item`` and the column."""
    out: dict[str, object] = {}
    unmodelled: list[str] = []
    for column, (name, tres) in columns.items():
        text = (row.get(column) or "").strip()
        if not text or text == "-1":
            continue
        if not tres:
            number = whole_number(text)
            if number is None:
                problems.append(Problem(source, item, f"{column} {short(text)} is not a whole number"))
                continue
            out[name] = number
            continue
        for part in text.split(","):
            key, eq, value = (x.strip() for x in part.partition("="))
            if not eq or not key or not value:
                why = f"{column} {short(text)} is not a TRES list (cpu=8,gres/gpu=4)"
                problems.append(Problem(source, item, why))
                break
            if key != "gres/gpu":
                unmodelled.append(f"{column} {key}={value}")
            elif whole_number(value) is not None:
                out[name] = whole_number(value)
            else:
                problems.append(
                    Problem(source, item, f"{column} gres/gpu={short(value)} is not a whole number")
                )
    unmodelled += [f"{c} {row[c]}" for c in not_read if (row.get(c) or "").strip() not in ("", "-1")]
    out["unmodelled"] = tuple(unmodelled)
    return out
