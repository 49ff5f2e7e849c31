"""``scontrol show job -d`` text -> running jobs by name, through the same rules as ``squeue --json``.

Why: ``scontrol`` is on every Slurm installation; the JSON forms need Slurm's OpenAPI plugins. The ``-d``
(details) form is the one that says which CPUs, how much memory and which GPU indices a job holds on each
node (``Nodes=gpu01 CPU_IDs=0-3 Mem=4096 GRES=gpu:h100:2(IDX:0-1)``). Each job record becomes the object
``squeue --json`` would print for it, and :func:`placer.topology.importers.slurm_jobs.squeue_running`
reads it — one set of rules for both forms.

Mapping: ``JobId`` (``ArrayJobId``/``ArrayTaskId``), ``JobName``, ``UserId`` (the name before the
parenthesis), ``Account``, ``Partition``, ``QOS``, ``Priority``, ``JobState``, ``TRES`` (what the job
holds), ``TimeLimit`` (``UNLIMITED``, ``MM``, ``HH:MM:SS``, ``D-HH:MM:SS``), ``StartTime``/``EndTime``
and the detail lines; for a pending job also what ``squeue --json`` says of it in other words
(``OverSubscribe``, ``EligibleTime``, ``Reservation``, ``Contiguous``, ``Licenses``, ``Prefer``).
Slurm prints times without a zone, in the controller's local time: they are read
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
from placer.topology.importers._common import whole_number
from placer.topology.importers.jgf import expand_hostlist
from placer.topology.importers.slurm import parse_index_list, parse_memory_mb
from placer.topology.importers.slurm_jobs import is_squeue_json, squeue_running
from placer.topology.inventory import RunningJob
from placer.topology.safe_load import load_json

__all__ = [
    "is_show_job_text",
    "local_time",
    "parse_time_limit",
    "read_running",
    "show_job_document",
    "show_job_running",
]

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


#: ``OverSubscribe=`` as ``scontrol show job`` prints it -> ``shared`` as ``squeue --json`` does (Slurm
#: 22.05, both captured from the same jobs): ``NO`` is ``--exclusive``, ``YES`` ``--oversubscribe``.
_OVERSUBSCRIBE = {"OK": None, "NO": "none", "USER": "user", "MCS": "mcs", "TOPO": "topo", "YES": "shared"}


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


def local_time(text: str | None) -> datetime | None:
    """A time as Slurm prints it (``2026-11-27T17:33:33``, no zone: the controller's local time) in the
    local zone of the machine reading it; None for ``Unknown``, ``None``, ``N/A`` or what is not a time."""
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        return datetime.fromisoformat(text).astimezone()
    except ValueError:
        return None


def _epoch(text: str | None) -> int | None:
    t = local_time(text)
    return None if t is None else int(t.timestamp())


def _number(text: str | None) -> int | None:
    if text and text.startswith("-"):
        n = whole_number(text[1:])
        return None if n is None else -n
    return whole_number(text)


def _null(text: str | None) -> str:
    """A value as ``squeue --json`` gives it: Slurm's ``(null)`` and ``N/A`` placeholders are empty."""
    return "" if text in (None, "(null)", "N/A", "None") else text


def _memory(text: str | None, key: str, item: str, source: str, problems: list[Problem]) -> float | None:
    """``MinMemoryCPU=200M`` / ``MinMemoryNode=4G`` in MB (None when absent)."""
    if not _null(text) or text == "0":
        return None
    try:
        return parse_memory_mb(text or "")
    except ValueError as e:
        problems.append(Problem(source, item, f"{key}={text!r}: {e}"))
        return None


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
    item = f"record {number}"
    try:
        limit = parse_time_limit(fields.get("TimeLimit", ""))
    except ValueError:
        problems.append(Problem(source, item, f"TimeLimit={fields.get('TimeLimit')!r} is not a Slurm time"))
        limit = None
    user = fields.get("UserId", "").split("(", 1)[0]
    task = fields.get("ArrayTaskId", "")
    pending = {  # what the pending-job reader takes (solver/jobs/formats/slurm.py)
        "node_count": _number(fields.get("NumNodes", "").split("-")[0]),
        "max_nodes": _number(fields.get("NumNodes", "").split("-")[-1]),
        "cpus": _number(fields.get("NumCPUs")),
        "tasks": _number(fields.get("NumTasks")),
        "tasks_per_node": _number(fields.get("NtasksPerN:B:S:C", "").split(":")[0]),
        "memory_per_cpu": _memory(fields.get("MinMemoryCPU"), "MinMemoryCPU", item, source, problems),
        "memory_per_node": _memory(fields.get("MinMemoryNode"), "MinMemoryNode", item, source, problems),
        "minimum_cpus_per_node": _number(fields.get("MinCPUsNode")),
        "minimum_tmp_disk_per_node": _memory(
            fields.get("MinTmpDiskNode"), "MinTmpDiskNode", item, source, problems
        ),
        "memory_per_tres": _null(fields.get("MemPerTres")),
        "cpus_per_tres": _null(fields.get("CpusPerTres")),
        "tres_per_node": _null(fields.get("TresPerNode")),
        "tres_per_job": _null(fields.get("TresPerJob")),
        "tres_per_task": _null(fields.get("TresPerTask")),
        "required_nodes": _null(fields.get("ReqNodeList")),
        "excluded_nodes": _null(fields.get("ExcNodeList")),
        "features": _null(fields.get("Features")),
        "dependency": _null(fields.get("Dependency")),
        "submit_time": _epoch(fields.get("SubmitTime")),
        "state_reason": _null(fields.get("Reason")),
        "array_task_string": task if task and not task.isdigit() else "",
        "array_max_tasks": _number(fields.get("ArrayTaskThrottle")),
        "shared": _OVERSUBSCRIBE.get(
            fields.get("OverSubscribe", "OK"), fields.get("OverSubscribe", "").lower()
        ),
        "eligible_time": _epoch(fields.get("EligibleTime")),
        "resv_name": _null(fields.get("Reservation")),
        "contiguous": fields.get("Contiguous") == "1",
        # Switches=1@00:05:00 (printed only for a job that asked --switches): count, and wait in seconds.
        "required_switches": _number(fields.get("Switches", "").split("@")[0]),
        "maximum_switch_wait_time": _wait(fields.get("Switches", "")),
        "licenses": _null(fields.get("Licenses")),
        "prefer": _null(fields.get("Prefer")),
        "het_job_id": _number(fields.get("HetJobId")),
        "het_job_offset": _number(fields.get("HetJobOffset")),
    }
    return {
        **pending,
        "job_id": _number(fields.get("JobId")),
        "array_job_id": _number(fields.get("ArrayJobId")),
        "array_task_id": _number(fields.get("ArrayTaskId")),
        "name": fields.get("JobName", ""),
        "user_name": user,
        "account": _null(fields.get("Account")),
        "partition": fields.get("Partition", ""),
        "qos": _null(fields.get("QOS")),
        "priority": _number(fields.get("Priority")),
        "job_state": fields.get("JobState", ""),
        "start_time": _epoch(fields.get("StartTime")),
        "end_time": _epoch(fields.get("EndTime")),
        "time_limit": limit,
        "tres_alloc_str": fields.get("TRES", ""),
        "gres_detail": gres,
        "job_resources": {"allocated_nodes": nodes} if nodes else {},
    }


def _wait(switches: str) -> int | None:
    """The seconds of ``Switches=k@[days-]hh:mm:ss``; None without one."""
    _, at, wait = switches.partition("@")
    if not at:
        return None
    try:
        minutes = parse_time_limit(wait)
    except ValueError:
        return None
    return None if minutes is None else int(minutes * 60)


def show_job_running(text: str, *, source: str) -> list[RunningJob]:
    """The running jobs of ``scontrol show job -d`` text (module docstring); ``TopologyError`` naming
    every record it cannot read."""
    return squeue_running(show_job_document(text, source=source), source=source)


def show_job_document(text: str, *, source: str) -> dict[str, Any]:
    """``scontrol show job`` text as the document ``squeue --json`` prints for the same jobs (running and
    pending), for the readers of both; ``TopologyError`` naming every record it cannot read.

    >>> doc = show_job_document('''JobId=9 JobName=big
    ...    Priority=100 Account=(null) JobState=PENDING Reason=Resources Dependency=(null)
    ...    TimeLimit=02:00:00 SubmitTime=2026-01-01T00:00:00 Partition=gpu
    ...    ReqNodeList=(null) ExcNodeList=gpu03 NumNodes=2-2 NumCPUs=16 NumTasks=2
    ...    MinCPUsNode=8 MinMemoryNode=64G Features=(null)
    ...    TresPerNode=gres:gpu:h100:8
    ... ''', source="jobs.txt")
    >>> j = doc["jobs"][0]
    >>> j["node_count"], j["cpus"], j["memory_per_node"], j["tres_per_node"], j["time_limit"], j["account"]
    (2, 16, 65536.0, 'gres:gpu:h100:8', 120, '')
    """
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
    return doc


def read_running(text: str, *, source: str) -> tuple[list[RunningJob] | None, Any]:
    """``(Slurm's running jobs, the parsed document)`` of a running-jobs file, by its content:
    ``scontrol show job -d`` text or ``squeue --json`` give the jobs (and ``None``, or the JSON);
    any other JSON gives ``None`` and the parsed document, for the caller's own format. Raises what the
    readers raise: ``TopologyError`` for a Slurm form it cannot read, ``UnsafeDocument`` or
    ``ValueError`` for text that is not strict JSON.

    >>> read_running('{"jobs": []}', source="x.json")
    (None, {'jobs': []})
    """
    if is_show_job_text(text):
        return show_job_running(text, source=source), None
    doc = load_json(text)
    return (squeue_running(doc, source=source) if is_squeue_json(doc) else None), doc
