"""Running jobs from job envelopes: what ``placer check --running FILE`` (and simulators) feed the cluster.

Why read the envelope with the job readers: preemption needs the running job's priority class,
preemptibility, grace period, checkpoint flags and labels exactly as the job declared them (OJS ML §8),
and anti-affinity needs its labels; re-reading the original envelope through
:func:`placer.solver.jobs.read_object` gives them in the one normalized form, in any JSON job format.

Each item is a job envelope plus where it runs:

* ``node`` and ``gpus`` (indices), optionally ``gpu_milli``; or ``tpu_pod`` and ``tpu_chips``;
* or ``replicas: [{node, gpus, ...}, ...]`` (each may also give ``task_group``, ``gpu_milli``,
  ``tpu_pod``, ``tpu_chips``, ``cpu_cores``, ``memory_gb``, ``storage_gb``, ``shm_gb``);
* ``started_at`` (RFC 3339 with an offset), optional.

The last checkpoint comes from the envelope itself (OJS ``meta.last_checkpoint``, §9.2). Per-replica cpu,
memory, storage and shm come from the job's demand: each replica of a group gets the group's per-replica
demand when the entries match the group's count; otherwise (a replica split over nodes) the group's total
is divided in proportion to GPUs (equally without GPUs). Values given on an entry win. Extended resources
(``TaskGroup.extra``) are held whole on each node entry, as the engines place them.

Bad input never escapes as a traceback: every problem of every item is collected and raised together as
:class:`~placer.solver.jobs.errors.JobValidationError` (codes from ``ISSUE_CODES``).

>>> rj = running_from_envelopes([{"id": "r1", "ext_ml_gpu_count": 2, "ext_ml_cpu_cores": 8,
...     "node": "dgx-1", "gpus": [0, 1], "started_at": "2025-01-01T00:00:00Z"}], "running.json")
>>> rj[0].job, rj[0].replicas[0].gpus, rj[0].replicas[0].cpu_cores, rj[0].started_at.year
('r1', [0, 1], 8.0, 2025)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, JobValidationError, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.load import read_object
from placer.solver.jobs.model import Job, TaskGroup
from placer.topology import ReplicaAllocation, RunningJob

__all__ = ["PLACEMENT_KEYS", "running_from_envelopes", "running_job"]

#: Keys of an item that say where the job runs; everything else is the job envelope.
PLACEMENT_KEYS = ("node", "gpus", "gpu_milli", "tpu_pod", "tpu_chips", "replicas", "started_at")
_RESOURCES = ("cpu_cores", "memory_gb", "storage_gb", "shm_gb")
_ENTRY_KEYS = ("node", "gpus", "gpu_milli", "tpu_pod", "tpu_chips", "task_group", *_RESOURCES)


def running_from_envelopes(items: Any, source: str) -> list[RunningJob]:
    """Convert a JSON list of running-job items (see the module docstring) into ``RunningJob`` objects.

    Raises :class:`JobValidationError` listing every problem (paths like ``running.json[2].gpus[0]``).
    """
    if not isinstance(items, list):
        raise JobValidationError(
            [issue("malformed", source, f"running jobs must be a JSON list, got {type_name(items)}")]
        )
    issues: list[Issue] = []
    out: list[RunningJob] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        path = f"{source}[{i}]"
        rj = _one(item, path, issues)
        if rj is None:
            continue
        if rj.job in seen:
            issues.append(issue("duplicate", join(path, "id"), f"job {rj.job!r} is listed twice"))
            continue
        seen.add(rj.job)
        out.append(rj)
    if issues:
        raise JobValidationError(issues)
    return out


def _one(item: Any, path: str, issues: list[Issue]) -> RunningJob | None:
    if not isinstance(item, dict):
        issues.append(issue("malformed", path, f"a running job must be an object, got {type_name(item)}"))
        return None
    before = len(issues)
    envelope = {k: v for k, v in item.items() if k not in PLACEMENT_KEYS}
    f = Fields(item, path, issues)
    started = f.timestamp("started_at", naive="range")
    entries = _entries(f)
    results = read_object(envelope, source=path)
    if len(results) != 1:
        issues.append(issue("format", path, f"a running job item holds one job, not {len(results)}"))
        return None
    r = results[0]
    if not r.ok or r.job is None:
        issues.extend(
            Issue(
                code=e.code, path=e.path if e.path.startswith(path) else join(path, e.path), message=e.message
            )
            for e in r.errors
        )
        return None
    if entries is None or len(issues) > before:
        return None
    job = r.job
    replicas = _replicas(job, entries, path, issues)
    if replicas is None:
        return None
    try:
        return running_job(job, replicas, started)
    except ValidationError as e:
        for err in e.errors():
            where = ".".join(str(p) for p in err["loc"])
            issues.append(issue("range", join(path, where) if where else path, err["msg"]))
        return None


def _entries(f: Fields) -> list[dict[str, Any]] | None:
    """The replica entries, as dicts of checked values; None when there are none or they are bad."""
    start = len(f.issues)
    raw = f.array("replicas")
    if raw is not None:
        if f.has("node") or f.has("tpu_pod"):
            f.fail("conflict", "replicas", "give either replicas or a top-level node/tpu_pod, not both")
            return None
        if not raw:
            f.fail("range", "replicas", "must list at least one replica")
            return None
        out = []
        for k, e in enumerate(raw):
            if not isinstance(e, dict):
                f.fail("type", join("replicas", k), f"must be an object, got {type_name(e)}")
                continue
            ef = Fields(e, join(f.path, join("replicas", k)), f.issues)
            out.append(_entry(ef))
            for key in ef.unread():
                ef.fail(
                    "unsupported", str(key), f"unknown replica attribute (known: {', '.join(_ENTRY_KEYS)})"
                )
        return out if len(f.issues) == start else None
    if not (f.has("node") or f.has("tpu_pod")):
        if not f.has("replicas"):
            f.fail(
                "required", "node", "a running job needs node and gpus, tpu_pod and tpu_chips, or replicas"
            )
        return None
    entry = _entry(f)
    return [entry] if len(f.issues) == start else None


def _entry(f: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node, pod = f.string("node"), f.string("tpu_pod")
    if node is None and pod is None:
        f.fail("required", "node", "each replica needs a node (or a tpu_pod)")
    out["node"], out["tpu_pod"] = node, pod
    out["gpus"] = _ints(f, "gpus", 1)
    out["tpu_chips"] = _ints(f, "tpu_chips", 2)
    out["gpu_milli"] = f.integer("gpu_milli", minimum=1, maximum=1000)
    out["task_group"] = f.string("task_group")
    for key in _RESOURCES:
        out[key] = f.number(key, minimum=0)
    return out


def _ints(f: Fields, key: str, depth: int) -> list[Any]:
    """A list of non-negative integers (depth 1) or of integer coordinate lists (depth 2)."""
    raw = f.array(key)
    if raw is None:
        return []
    out: list[Any] = []
    for k, v in enumerate(raw):
        if depth == 2:
            if not isinstance(v, list) or not 2 <= len(v) <= 3:
                f.fail("type", join(key, k), "a TPU chip is a coordinate list [x, y] or [x, y, z]")
                continue
            if all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in v):
                out.append(list(v))
            else:
                f.fail(
                    "type", join(key, k), f"chip coordinates must be non-negative integers, got {v!r}"[:200]
                )
        elif isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            out.append(v)
        else:
            f.fail("type", join(key, k), f"a GPU index is a non-negative integer, got {v!r}"[:200])
    return out


def _replicas(
    job: Job, entries: list[dict[str, Any]], path: str, issues: list[Issue]
) -> list[ReplicaAllocation] | None:
    groups = {g.name: g for g in job.tasks}
    buckets: dict[str, list[dict[str, Any]]] = {}
    if all(e["task_group"] is not None for e in entries):
        for k, e in enumerate(entries):
            if e["task_group"] not in groups:
                issues.append(
                    issue(
                        "enum",
                        f"{path}.replicas[{k}].task_group",
                        f"the job has no task group {e['task_group']!r}",
                    )
                )
                return None
            buckets.setdefault(e["task_group"], []).append(e)
    elif len(entries) == sum(g.count for g in job.tasks):
        it = iter(entries)
        for g in job.tasks:
            buckets[g.name] = [next(it) for _ in range(g.count)]
    elif len(job.tasks) == 1:
        buckets[job.tasks[0].name] = entries
    else:
        issues.append(
            issue(
                "conflict",
                path,
                f"{len(entries)} replicas for task groups of {sum(g.count for g in job.tasks)} replicas: "
                "say each replica's task_group",
            )
        )
        return None
    out: list[ReplicaAllocation] = []
    for name, es in buckets.items():
        out.extend(_allocations(groups[name], es))
    return out


def _allocations(g: TaskGroup, entries: list[dict[str, Any]]) -> list[ReplicaAllocation]:
    total_gpus = sum(len(e["gpus"]) for e in entries)
    out = []
    for e in entries:
        if len(entries) == g.count:
            share = 1.0
        elif total_gpus:
            share = g.count * len(e["gpus"]) / total_gpus
        else:
            share = g.count / len(entries)
        demand = {k: getattr(g, k) * share for k in _RESOURCES}
        demand.update({k: e[k] for k in _RESOURCES if e[k] is not None})
        milli = e["gpu_milli"]
        if milli is None and g.gpu is not None and g.gpu.share_milli is not None:
            milli = g.gpu.share_milli
        out.append(
            ReplicaAllocation(
                node=e["node"],
                gpus=e["gpus"],
                gpu_milli=milli,
                tpu_pod=e["tpu_pod"],
                tpu_chips=e["tpu_chips"],
                extra={k: v for k, v in g.extra.items() if v > 0} if e["node"] is not None else {},
                **demand,
            )
        )
    return out


def running_job(
    job: Job, replicas: list[ReplicaAllocation] | list[dict[str, object]], started: datetime | None
) -> RunningJob:
    """``job`` running on ``replicas`` since ``started``, with what preemption and anti-affinity read: its
    class, preemptibility, grace period, checkpoint flags, labels, ``expected_end`` from its duration, the
    throttle group and group limits it counts against, and the reservation it runs under (which keeps a
    reservation with ``timeout_s`` held while it runs; the simulator turns placements into running jobs
    with it too). ``replicas`` may be allocations as :func:`~placer.solver.decision.allocations` gives
    them (validated once, here)."""
    labels = dict(job.labels)
    if job.type:
        labels.setdefault("job_type", job.type)
    if job.model.id:
        labels.setdefault("model_id", job.model.id)
    end = None
    if started is not None and job.duration_s is not None:
        end = started + timedelta(seconds=job.duration_s)
    return RunningJob(
        job=job.id,
        queue=job.queue,
        tenant=job.tenant,
        priority_class=job.priority_class.value,
        priority=job.priority,
        preemptible=job.is_preemptible,
        grace_period_s=job.preemption.grace_period_s,
        checkpoint_on_preempt=job.preemption.checkpoint_on_preempt,
        started_at=started,
        expected_end=end,
        last_checkpoint_at=None if job.last_checkpoint is None else job.last_checkpoint.created_at,
        reservation=None if job.reservation is None else job.reservation.id,
        labels=labels,
        throttle_group=None if job.throttle is None else job.throttle.group,
        limit_groups=[lim.group for lim in job.limits],
        anti_affinity=[r.model_dump(mode="json") for r in job.placement.anti_affinity],
        anti_affinity_domains=[
            {"key": d.key, "rule": d.rule.model_dump(mode="json")}
            for d in job.placement.anti_affinity_domains
        ],
        licenses=dict(job.licenses),
        replicas=replicas,
    )
