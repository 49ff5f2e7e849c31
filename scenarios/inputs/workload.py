"""The scenario's jobs, in submission order: generated, read from a trace, or written out in the file.

Why one list of :class:`~placer.solver.jobs.model.Job`: the simulator only needs each job's ``submit_time``
and
``duration_s`` on top of what ``place()`` reads, so every source ends as the same jobs, sorted by
``(submit_time, id)``.

* ``synthetic``: :mod:`placer.scenarios.inputs.synthetic`.
* ``jobs``: job envelopes in any job format (OJS, Flux, SSS as text) with ``submit`` — a duration after
  the start — read by the job readers (``placer.solver.jobs.read_object``); an envelope's problems are
  reported
  under ``workload.jobs[i]``.
* ``trace``: a loader — a name of :data:`TRACE_LOADERS` (``philly``: the Microsoft Philly extract,
  :mod:`placer.scenarios.traces.philly`) or ``module:function`` — called as ``loader(path, **options)``,
  returning jobs (or read results) with ``submit_time`` and ``duration_s``.

>>> from datetime import UTC, datetime
>>> from placer.scenarios.spec import WorkloadSpec
>>> w = WorkloadSpec(jobs=[{"submit": "5m", "id": "a", "ext_ml_gpu_count": 2,
...                         "ext_ml_timeout_seconds": 600}])
>>> [(j.id, j.submit_time.minute, j.duration_s) for j in jobs_of(w, datetime(2026, 1, 1, tzinfo=UTC), 3600,
...                                                               seed=0, base=None)]
[('a', 5, 600.0)]
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from placer.scenarios.inputs.synthetic import generate
from placer.scenarios.load import ScenarioError, fail, resolve
from placer.scenarios.spec import TraceWorkload, WorkloadSpec
from placer.scenarios.units import parse_duration
from placer.solver.jobs.errors import Issue
from placer.solver.jobs.formats.slurm import with_cores, with_slurm_ranks
from placer.solver.jobs.load import check_batch, read_file, read_object
from placer.solver.jobs.model import Job, ReadResult
from placer.topology.importers.slurm_assoc import AssocTable
from placer.topology.importers.slurm_partitions import SlurmPartition
from placer.topology.importers.slurm_qos import SlurmQos

__all__ = ["TRACE_LOADERS", "jobs_of"]


def jobs_of(
    w: WorkloadSpec,
    start: datetime,
    horizon_s: float,
    *,
    seed: int,
    base: Path | None,
    partitions: dict[str, SlurmPartition] | None = None,
    qos: dict[str, SlurmQos] | None = None,
    cpus_per_core: int = 1,
    qos_limits: dict[str, SlurmQos] | None = None,
    assoc: AssocTable | None = None,
) -> list[Job]:
    """Every job of the workload, sorted by ``(submit_time, id)``; :class:`ScenarioError` for bad ones.
    ``partitions``: Slurm's partitions (``cluster.slurm_partitions``), whose tiers pending Slurm jobs of
    ``file`` take (or their QOSes' levels, ``qos``: ``cluster.slurm_qos``); ``qos_limits``: a QOS table
    whose limits alone they are held to (``cluster.slurm_qos_limits``); ``assoc``: the associations whose
    limits they are held to (``cluster.slurm_assoc``); ``cpus_per_core``: how many of their CPUs make a
    core of the cluster's nodes."""
    if w.synthetic is not None:
        jobs = generate(w.synthetic, start, horizon_s, seed=seed)
    elif w.trace is not None:
        jobs = _trace(w.trace, start, start + timedelta(seconds=horizon_s), base)
    elif w.file is not None:
        jobs = _file(w.file, start, base, partitions, qos, cpus_per_core, qos_limits, assoc)
    else:
        jobs = _explicit(w.jobs or [], start)
    return sorted(jobs, key=lambda j: (j.submit_time or start, j.id))


def _file(
    name: str,
    start: datetime,
    base: Path | None,
    partitions: dict[str, SlurmPartition] | None,
    qos: dict[str, SlurmQos] | None,
    cpus_per_core: int,
    qos_limits: dict[str, SlurmQos] | None = None,
    assoc: AssocTable | None = None,
) -> list[Job]:
    """Every job of a job file (any format ``placer place --jobs`` reads), submitted at the start."""
    path = resolve(name, base)
    try:
        results = read_file(str(path))
    except OSError as e:
        raise fail("required", "workload.file", f"cannot open {path}: {e.strerror or e}") from None
    results = check_batch(
        with_cores(
            with_slurm_ranks(results, partitions=partitions, qos=qos, qos_limits=qos_limits, assoc=assoc),
            cpus_per_core,
        )
    )
    bad = [
        Issue(code=e.code, path=f"workload.file: {e.path}", message=e.message)
        for r in results
        for e in r.errors
    ]
    if bad:
        raise ScenarioError(bad)
    return [r.job.model_copy(update={"submit_time": start}) for r in results if r.job is not None]


def _explicit(items: list[dict[str, Any]], start: datetime) -> list[Job]:
    issues: list[Issue] = []
    results: list[ReadResult] = []
    submits: list[float] = []
    for i, item in enumerate(items):
        path = f"workload.jobs[{i}]"
        envelope = {k: v for k, v in item.items() if k != "submit"}
        try:
            off = parse_duration(item.get("submit", 0))
        except ValueError as e:
            issues.append(Issue(code="type", path=f"{path}.submit", message=str(e)))
            off = 0.0
        found = read_object(envelope, source=path)
        if len(found) != 1:
            issues.append(Issue(code="format", path=path, message=f"one job per item, not {len(found)}"))
            continue
        results.append(found[0])
        submits.append(off)
    results = check_batch(results)
    jobs: list[Job] = []
    for r, off in zip(results, submits, strict=True):
        if not r.ok or r.job is None:
            issues.extend(
                Issue(
                    code=e.code,
                    path=e.path if e.path.startswith("workload") else f"{r.source}.{e.path}",
                    message=e.message,
                )
                for e in r.errors
            )
            continue
        jobs.append(r.job.model_copy(update={"submit_time": start + timedelta(seconds=off)}))
    if issues:
        raise ScenarioError(issues)
    return jobs


#: Trace loaders a scenario may name; ``module:function`` names any other.
TRACE_LOADERS: dict[str, str] = {"philly": "placer.scenarios.traces.philly:read_philly"}


def _loader(name: str) -> Callable[..., Any]:
    target = TRACE_LOADERS.get(name, name)
    module, sep, func = target.partition(":")
    if not sep:
        raise fail(
            "enum",
            "workload.trace.loader",
            f"unknown trace loader {name!r}; known: {', '.join(TRACE_LOADERS)} (or module:function)",
        )
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError) as e:
        raise fail("enum", "workload.trace.loader", f"trace loader {name!r} is not available: {e}") from None
    if not callable(fn):
        raise fail("type", "workload.trace.loader", f"{target} is not callable")
    return fn


def _trace(t: TraceWorkload, start: datetime, end: datetime, base: Path | None) -> list[Job]:
    """The trace's jobs submitted from ``since`` (default: its first submission) for the horizon,
    moved to the scenario's clock (``rebase``)."""
    fn = _loader(t.loader)
    path = resolve(t.file, base)
    if not path.exists():
        raise fail("required", "workload.trace.file", f"no such file: {path}")
    try:
        loaded = list(fn(path, **t.options))
    except (TypeError, ValueError, KeyError, OSError) as e:
        raise fail("malformed", "workload.trace", f"loader {t.loader!r} failed on {path}: {e}") from None
    jobs = [j for j in (i.job if isinstance(i, ReadResult) else i for i in loaded) if isinstance(j, Job)]
    jobs.sort(key=lambda j: (j.submit_time or start, j.id))
    first = t.since or min((j.submit_time for j in jobs if j.submit_time is not None), default=start)
    shift = start - first if t.rebase else timedelta(0)
    out = []
    for j in jobs:
        when = (j.submit_time or first) + shift
        if when < start or when >= end:
            continue
        out.append(j.model_copy(update={"submit_time": when}))
        if t.limit is not None and len(out) >= t.limit:
            break
    return out
