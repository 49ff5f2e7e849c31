"""The Microsoft Philly trace extract (Jeon et al., ATC '19; the Sia artifact's ``philly.csv``) -> jobs with
submit times and durations, for the what-if simulator.

Columns read: ``timestamp`` (submission, ``2017-10-09 07:01:55``, taken as UTC), ``duration`` (seconds),
``num_gpus``; ``cluster`` (the virtual cluster) when present. ``gpu_time`` is not needed.

The trace has no CPU, memory or GPU-type columns, so the loader chooses them (all overridable):

* **GPU type**: any (``types`` empty) unless ``gpu_type`` is given — Philly mixed GPU generations and
  the extract does not say which a job ran on;
* **CPU and memory**: ``cpu_per_gpu`` cores and ``memory_gb_per_gpu`` GB per GPU (defaults 4 and 32, so
  an 8-GPU job takes 32 cores and 256 GB): at most what any current 8-GPU server offers per GPU (a DGX
  H100 has 28 hardware threads and 256 GB per GPU), so GPUs — what the trace measures — stay the binding
  resource;
* **gangs**: a job of up to ``gpus_per_node`` GPUs (default 8) is one replica on one node; a bigger job is
  a gang of equal replicas on distinct nodes, all or nothing, each of ``d`` GPUs, ``d`` the largest
  divisor of its GPU count not above ``gpus_per_node`` (16 -> 2 x 8, 12 -> 2 x 6, 24 -> 3 x 8: the rule
  placer itself splits a distributed job by, ``docs/solver.md``);
* **queue**: the virtual cluster id, so per-VC quotas and budgets can be studied.

Jobs come sorted by submit time (then file line), named ``philly-<line>``; ``duration_s`` is set, so
placer's time planning and the simulator know when each ends.

>>> jobs = parse_philly("timestamp,duration,num_gpus,gpu_time,cluster\\n"
...                     "2017-10-09 07:01:55,66.0,12,792.0,11cb48\\n"
...                     "2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\\n", "philly.csv")
>>> [(j.id, j.submit_time.isoformat(), j.duration_s, j.total_gpus, j.tasks[0].count) for j in jobs]
... # doctest: +NORMALIZE_WHITESPACE
[('philly-3', '2017-10-09T06:13:03+00:00', 2951.0, 1, 1),
 ('philly-2', '2017-10-09T07:01:55+00:00', 66.0, 12, 2)]
"""

from __future__ import annotations

from pathlib import Path

from placer.scenarios.traces.table import Table
from placer.solver.demand import largest_divisor_at_most
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup

__all__ = ["COLUMNS", "MAX_GPUS", "parse_philly", "read_philly"]

COLUMNS = ("timestamp", "duration", "num_gpus")
#: Largest job the loader accepts (the extract's biggest is 128 GPUs).
MAX_GPUS = 4096


def read_philly(path: str | Path, **choices: object) -> list[Job]:
    """Read a Philly extract file; ``choices`` are :func:`parse_philly`'s keyword arguments."""
    return parse_philly(Path(path).read_text(encoding="utf-8"), str(path), **choices)  # type: ignore[arg-type]


def parse_philly(
    text: str,
    source: str = "<philly>",
    *,
    gpu_type: str | None = None,
    cpu_per_gpu: float = 4.0,
    memory_gb_per_gpu: float = 32.0,
    gpus_per_node: int = 8,
    limit: int | None = None,
) -> list[Job]:
    """Jobs of a Philly extract's CSV text (see the module docstring for the choices); ``limit`` keeps the
    first jobs by submit time. A bad cell is a problem of the raised ``TraceError``.

    >>> parse_philly("timestamp,duration,num_gpus\\nyesterday,5,12\\n", "p.csv")
    Traceback (most recent call last):
    ...
    placer.scenarios.traces.table.TraceError: p.csv: line 2, column 'timestamp': 'yesterday' is not a date...
    """
    if gpus_per_node < 1:
        raise ValueError("gpus_per_node must be at least 1")
    t = Table.parse(text, source, COLUMNS, optional=("cluster",))
    rows = []
    for r in t.rows:
        when = t.timestamp(r, "timestamp")
        duration = t.number(r, "duration")
        gpus = t.integer(r, "num_gpus", low=1, high=MAX_GPUS)
        if when is None or duration is None or gpus is None:
            continue
        rows.append((when, r.line, duration, gpus, r.cells.get("cluster") or None))
    t.raise_problems()
    rows.sort(key=lambda x: (x[0], x[1]))
    types = [gpu_type] if gpu_type else []
    out: list[Job] = []
    for when, line, duration, gpus, vc in rows[:limit]:
        per = largest_divisor_at_most(gpus, gpus_per_node)
        task = TaskGroup(
            count=gpus // per,
            cpu_cores=per * cpu_per_gpu,
            memory_gb=per * memory_gb_per_gpu,
            gpu=GpuDemand(count=per, types=types),
            one_per_node=gpus > per,
        )
        out.append(
            Job(
                id=f"philly-{line}",
                queue=vc,
                submit_time=when,
                duration_s=duration,
                tasks=[task],
                source_format="philly",
            )
        )
    return out
