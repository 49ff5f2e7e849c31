"""``scontrol show job -d`` text -> running jobs by name, through the same rules as ``squeue --json``.

Why: ``scontrol`` is on every Slurm installation; the JSON forms need Slurm's OpenAPI plugins. The ``-d``
(details) form is the one that says which CPUs, how much memory and which GPU indices a job holds on each
node (``Nodes=gpu01 CPU_IDs=0-3 Mem=4096 GRES=gpu:h100:2(IDX:0-1)``). Each job record becomes the object
``squeue --json`` would print for it, and :func:`placer.topology.importers.slurm_jobs.squeue_running`
reads it — one set of rules for both forms.

Mapping: ``JobId`` (``ArrayJobId``/``ArrayTaskId``), ``JobName``, ``UserId`` (the name before the
parenthesis), ``Account``, ``Partition``, ``QOS``, ``Priority``, ``JobState``, ``TRES`` (what the job
holds), ``TimeLimit`` (``UNLIMITED``, ``MM``, ``HH:MM:SS``, ``D-HH:MM:SS``), ``StartTime``/``EndTime``
and the detail lines. Slurm prints times without a zone, in the controller's local time: they are read
in the local time zone of the machine running placer (set ``TZ`` to the controller's zone when they
differ). Free-text values (``JobName``, ``Command``, ``WorkDir``, ``StdOut``, ...) run to the end of their
line. Without ``-d`` there are no detail lines, so which node holds what is unknown: such a running job is
refused, naming it, never guessed.

>>> text = '''JobId=7 JobName=train x
...    UserId=ana(1000) GroupId=ana(1000) MCS_label=N/A
...    Priority=90 Nice=0 Account=ml QOS=normal
...    JobState=RUNNING Reason=None Dependency=(null)
...    RunTime=00:10:00 TimeLimit=01:00:00 TimeMin=N/A
...    StartTime=2026-01-01T00:00:00 EndTime=2026-01-01T01:00:00 Deadline=N/A
...    Partition=gpu AllocNode:Sid=login:1
...    TRES=cpu=8,mem=64G,node=1,billing=8,gres/gpu=2
...    JOB_GRES=gpu:h100:2
...      Nodes=g1 CPU_IDs=0-7 Mem=65536 GRES=gpu:h100:2(IDX:2-3)
... '''
>>> (rj,) = show_job_running(text, source="jobs.txt")
>>> rj.job, rj.labels["slurm_job_name"], rj.tenant, rj.replicas[0].gpus, rj.replicas[0].cpu_cores
('7', 'train x', 'ml', [2, 3], 8.0)
>>> (rj.expected_end - rj.started_at).total_seconds()
3600.0
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from placer.topology.errors import Problem, TopologyError
from placer.topology.importers.jgf import expand_hostlist
from placer.topology.importers.slurm import parse_index_list
from placer.topology.importers.slurm_jobs import squeue_running
from placer.topology.inventory import RunningJob

__all__ = ["is_show_job_text", "parse_time_limit", "show_job_running"]

#: Keys whose value is free text to the end of the line.
_TEXT_KEYS = ("JobName", "Command", "WorkDir", "StdErr", "StdIn", "StdOut", "Comment", "AdminComment")
_TOKEN = re.compile(r"(\S+?)=(\S*)")


def is_show_job_text(text: str) -> bool:
    """``scontrol show job`` output: its first non-blank line starts a ``JobId=`` record."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return first.startswith("JobId=")


def parse_time_limit(text: str) -> int | None:
    """A Slurm time limit in minutes; None for ``UNLIMITED`` (or ``Partition_Limit``, not known here).

    >>> [parse_time_limit(t) for t in ("30", "01:30:00", "1-00:00:00", "2-12", "UNLIMITED")]
    [30, 90, 1440, 3600, None]
    """
    text = text.strip()
    if text in ("UNLIMITED", "INFINITE", "Partition_Limit", "NONE", ""):
        return None
    days, _, rest = text.rpartition("-")
    d = int(days) if days else 0
    parts = [int(p) for p in rest.split(":")]
    if days:  # D-HH, D-HH:MM, D-HH:MM:SS
        h, m, s = [*parts, 0, 0][:3]
    elif len(parts) == 1:  # MM
        h, m, s = 0, parts[0], 0
    elif len(parts) == 2:  # MM:SS
        h, m, s = 0, parts[0], parts[1]
    else:
        h, m, s = parts[:3]
    return d * 1440 + h * 60 + m + (1 if s else 0)


def _fields(line: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in _TEXT_KEYS:  # a free-text key takes the rest of its line
        at = line.find(f"{key}=")
        if at == 0 or (at > 0 and line[at - 1] == " "):
            out[key] = line[at + len(key) + 1 :].strip()
            line = line[:at]
    for m in _TOKEN.finditer(line):
        out.setdefault(m[1], m[2])
    return out


def _epoch(text: str | None) -> int | None:
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return int(datetime.fromisoformat(text).astimezone().timestamp())
    except ValueError:
        return None


def _number(text: str | None) -> int | None:
    return int(text) if text and text.lstrip("-").isdigit() else None


def _as_squeue(record: list[str], number: int, source: str, problems: list[Problem]) -> dict[str, Any]:
    """One record as the object ``squeue --json`` prints for the job."""
    fields: dict[str, str] = {}
    nodes: list[dict[str, Any]] = []
    gres: list[str] = []
    for line in record:
        stripped = line.strip()
        if stripped.startswith("Nodes="):  # a detail line: what the job holds on these nodes
            d = _fields(stripped)
            try:
                names = expand_hostlist(d.get("Nodes", ""))
            except ValueError as e:
                problems.append(Problem(source, f"record {number}", f"Nodes={d.get('Nodes')!r}: {e}"))
                continue
            for name in names:
                nodes.append(
                    {
                        "nodename": name,
                        "cpus": len(parse_index_list(d.get("CPU_IDs", "")) or ()),
                        "memory_allocated": _number(d.get("Mem")),
                    }
                )
                gres.append(d.get("GRES", ""))
        else:
            for k, v in _fields(stripped).items():
                fields.setdefault(k, v)
    limit = parse_time_limit(fields.get("TimeLimit", ""))
    user = fields.get("UserId", "").split("(", 1)[0]
    return {
        "job_id": _number(fields.get("JobId")),
        "array_job_id": _number(fields.get("ArrayJobId")),
        "array_task_id": _number(fields.get("ArrayTaskId")),
        "name": fields.get("JobName", ""),
        "user_name": user,
        "account": fields.get("Account", ""),
        "partition": fields.get("Partition", ""),
        "qos": fields.get("QOS", ""),
        "priority": _number(fields.get("Priority")),
        "job_state": fields.get("JobState", ""),
        "start_time": _epoch(fields.get("StartTime")),
        "end_time": _epoch(fields.get("EndTime")),
        "time_limit": limit,
        "tres_alloc_str": fields.get("TRES", ""),
        "gres_detail": gres,
        "job_resources": {"allocated_nodes": nodes} if nodes else {},
    }


def show_job_running(text: str, *, source: str) -> list[RunningJob]:
    """The running jobs of ``scontrol show job -d`` text (module docstring); ``TopologyError`` naming
    every record it cannot read."""
    records: list[list[str]] = []
    for line in text.splitlines():
        if line.strip().startswith("JobId="):
            records.append([])
        if records and line.strip():
            records[-1].append(line)
    problems: list[Problem] = []
    doc = {
        "meta": {"Slurm": {}},
        "jobs": [_as_squeue(r, n, source, problems) for n, r in enumerate(records, 1)],
    }
    if problems:
        raise TopologyError(problems)
    return squeue_running(doc, source=source)
