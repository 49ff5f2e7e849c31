"""From files, text or parsed objects to validated jobs: the one pipeline every front end uses.

Steps, each with one job: (1) parse and detect (:mod:`placer.solver.jobs.detect`), (2) the format's reader
maps
the document to :class:`~placer.solver.jobs.model.Job` objects (:mod:`placer.solver.jobs.formats`), (3)
format-agnostic
guards on every job: queue limits, upper bounds, deny-listed selector keys, URIs
(:func:`placer.solver.jobs.guards.check_job`), (4) batch checks: duplicate ids, dependency cycles.

>>> rs = read_text('{"id": "j1", "type": "ml.train", "ext_ml_gpu_count": 2}', source="inline")
>>> [(r.id, r.ok, r.job.total_gpus) for r in rs]
[('j1', True, 2)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from placer.solver.jobs.detect import detect_object, parse_document
from placer.solver.jobs.errors import Issue, JobValidationError, issue, located
from placer.solver.jobs.formats import reader
from placer.solver.jobs.model import Job, ReadResult
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import local_queue_names
from placer.topology.inputs import input_size, read_input, source_name

__all__ = ["MAX_FILE_BYTES", "check_batch", "read_file", "read_files", "read_object", "read_text"]

#: Largest job file read, in bytes (a guard against reading a multi-gigabyte file by mistake).
MAX_FILE_BYTES = 32 * 1024 * 1024


def _failed(source: str, errors: list[Issue]) -> list[ReadResult]:
    return [ReadResult(id=source, ok=False, errors=errors, source=source)]


def _read_parsed(fmt: str, doc: Any, source: str, options: ReadOptions) -> list[ReadResult]:
    try:
        results = reader(fmt)(doc, source=source, options=options)
    except JobValidationError as e:
        return _failed(source, e.issues)
    shared = local_queue_names(options.queues)  # Kueue LocalQueues of shared ClusterQueues, read once
    return [_guard(r, options, shared) for r in results]


def _guard(result: ReadResult, options: ReadOptions, shared: dict[tuple[str, str], str]) -> ReadResult:
    if not result.ok or result.job is None:
        return result
    from placer.solver.jobs.flavors import with_flavors
    from placer.solver.jobs.guards import check_job

    job = _in_cluster_queue(result.job, shared)
    if job is not result.job:
        result = result.model_copy(update={"job": job})
    qc = options.queues.get(job.queue) if job.queue is not None else None
    if qc is not None and qc.config.flavor_groups:  # the queue's node flavors (Kueue ResourceFlavors)
        job, kept_off = with_flavors(job, qc.config.flavor_groups)
        if kept_off:
            errors = [*result.errors, *located(result.path, kept_off)]
            return result.model_copy(update={"ok": False, "job": None, "errors": errors})
        result = result.model_copy(update={"job": job})
    # Guard paths are relative to the job's envelope; locate them in the document as the reader's are.
    problems = located(result.path, check_job(job, options))
    if not problems:
        return result
    return result.model_copy(update={"ok": False, "job": None, "errors": [*result.errors, *problems]})


def _in_cluster_queue(job: Job, shared: dict[tuple[str, str], str]) -> Job:
    """A Kubernetes pod or workload whose Kueue LocalQueue (its queue, in its namespace) a queue
    configuration lists (``shared``: :func:`~placer.solver.jobs.queues.local_queue_names`, a ClusterQueue
    shared by LocalQueues) takes that queue, so that they all count against one quota
    (:mod:`placer.solver.jobs.kueue`)."""
    if job.queue is None or not shared:
        return job
    namespace = (job.metadata.get("kubernetes") or {}).get("namespace")
    queue = shared.get((namespace, job.queue)) if isinstance(namespace, str) else None
    return job if queue is None else job.model_copy(update={"queue": queue})


def read_text(
    text: str, *, source: str = "<input>", fmt: str = "auto", options: ReadOptions | None = None
) -> list[ReadResult]:
    """Read every job of one document given as text."""
    options = options or ReadOptions()
    try:
        found, doc = parse_document(text, source=source, fmt=fmt)
    except JobValidationError as e:
        return _failed(source, e.issues)
    return _read_parsed(found, doc, source, options)


def read_object(
    obj: Any, *, source: str = "<input>", fmt: str = "auto", options: ReadOptions | None = None
) -> list[ReadResult]:
    """Read every job of an already-parsed document (the HTTP service gets JSON bodies this way);
    Flux YAML and SSS XML may come as strings."""
    options = options or ReadOptions()
    if isinstance(obj, str):
        return read_text(obj, source=source, fmt=fmt, options=options)
    try:
        found = detect_object(obj, source=source) if fmt == "auto" else fmt
    except JobValidationError as e:
        return _failed(source, e.issues)
    return _read_parsed(found, obj, source, options)


def read_file(path: str | Path, *, fmt: str = "auto", options: ReadOptions | None = None) -> list[ReadResult]:
    """Read every job of one file. Raises ``OSError`` when the file cannot be opened (a usage error for
    the CLI, not a job error); undecodable or oversized content is a ``malformed`` result."""
    name = source_name(path)
    size = input_size(path)
    if size is not None and size > MAX_FILE_BYTES:
        return _failed(
            name, [issue("malformed", name, f"file is {size} bytes; the limit is {MAX_FILE_BYTES}")]
        )
    data = read_input(path, MAX_FILE_BYTES)
    if len(data) > MAX_FILE_BYTES:
        return _failed(name, [issue("malformed", name, f"input is larger than {MAX_FILE_BYTES} bytes")])
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        return _failed(name, [issue("malformed", name, f"not UTF-8 text: {e.reason} at byte {e.start}")])
    return read_text(text, source=name, fmt=fmt, options=options)


def read_files(
    paths: Iterable[str | Path], *, fmt: str = "auto", options: ReadOptions | None = None
) -> list[ReadResult]:
    """Read a batch of files and run the batch checks (duplicate ids, dependency cycles) over them all."""
    results: list[ReadResult] = []
    for p in paths:
        results.extend(read_file(p, fmt=fmt, options=options))
    return check_batch(results)


def check_batch(results: Sequence[ReadResult]) -> list[ReadResult]:
    """Reject every job whose id another job of the batch also has, and jobs in a dependency cycle.

    Why reject all copies of a duplicate id: which one the producer meant is unknowable, and placing one
    of them silently would be a partial decision the backend cannot map back.
    """
    counts: dict[str, int] = {}
    for r in results:
        if r.job is not None:
            counts[r.job.id] = counts.get(r.job.id, 0) + 1
    cyclic = _jobs_in_cycles([r for r in results if r.ok and r.job is not None])
    out: list[ReadResult] = []
    for r in results:
        if r.job is None:
            out.append(r)
            continue
        errs: list[Issue] = []
        if counts[r.job.id] > 1:
            errs.append(
                issue("duplicate", "id", f"job id {r.job.id!r} appears {counts[r.job.id]} times in the batch")
            )
        if r.job.id in cyclic:
            errs.append(
                issue("dependency", "dependencies", f"job {r.job.id!r} is part of a dependency cycle")
            )
        errs = located(r.path, errs)
        out.append(
            r if not errs else r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, *errs]})
        )
    return out


def _jobs_in_cycles(results: Sequence[ReadResult]) -> set[str]:
    """Ids of jobs on a dependency cycle (Tarjan-free: iterative DFS colouring, no networkx import so the
    CLI stays fast)."""
    graph: dict[str, list[str]] = {}
    for r in results:
        assert r.job is not None
        graph[r.job.id] = [d.job for d in r.job.dependencies]
    on_cycle: set[str] = set()
    color: dict[str, int] = {}
    for start in graph:
        if color.get(start):
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                color[node] = 1
                path.append(node)
            succ = [s for s in graph.get(node, []) if s in graph]
            if i < len(succ):
                stack.append((node, i + 1))
                nxt = succ[i]
                if color.get(nxt) == 1:
                    on_cycle.update(path[path.index(nxt) :])
                elif not color.get(nxt):
                    stack.append((nxt, 0))
            else:
                color[node] = 2
                path.pop()
    return on_cycle
