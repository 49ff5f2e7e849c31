"""The ``slurm`` job format: the pending jobs of ``squeue --json``, read as placer jobs.

Why: a Slurm user's question is "where would my pending job run, and if not, why?". With the cluster from
``sinfo --json`` (or ``scontrol show node -d``), the running jobs from the same ``squeue --json``
(``placer place --running``) and the pending ones read here, ``placer place`` answers it on the live
cluster, by placer's rules, with the reasons and planned starts it gives any job.

Mapping of one pending job (Slurm's OpenAPI fields, plugins ``v0.0.37``-``v0.0.39``; the
``{"set", "number"}`` numbers of ``v0.0.40``+ too):

==============================  ===================================================================
placer                          from
==============================  ===================================================================
id, name                        ``job_id``, ``name``; a pending array (``array_task_string``
                                ``0-9``, ``1,3,7-9``, ``0-15:4``) is one job per task,
                                ``<array_job_id>_<task>`` as Slurm names them (a task Slurm
                                split off, ``array_task_id``, too)
queue, tenant, user             ``partition``, ``account`` (else ``user_name``), ``user_name``
priority                        ``priority``; submit time ``submit_time``
replicas                        ``node_count`` replicas, one per node (``--nodes``), all or none
per node                        CPUs: ``cpus`` / nodes, at least ``minimum_cpus_per_node``
                                (``--mincpus``) and ``cpus_per_tres`` x GPUs (``--cpus-per-gpu``);
                                memory: ``memory_per_node`` (MB), else ``memory_per_tres`` x GPUs
                                (``--mem-per-gpu``), else ``memory_per_cpu`` x CPUs per node; disk:
                                ``minimum_tmp_disk_per_node`` (``--tmp``, MB); GPUs: ``tres_per_node``
                                (``gres:gpu:h100:8``, ``gres/gpu:h100=8``, ``gres:gpu:2``), or
                                ``tres_per_job`` on one node, or ``tres_per_task`` x tasks
                                per node (``tasks_per_node``, or ``tasks`` on one node)
duration                        ``time_limit`` (minutes; none when unlimited)
where it may run                nodes of its ``partition`` (any of a comma list; node label
                                ``partition/<name>``), ``required_nodes`` (``-w``, a hostlist),
                                not ``excluded_nodes`` (``-x``), ``features`` (``-C``: ``a&b``,
                                ``a|b``; node features are node properties)
dependencies                    ``dependency``: ``afterok``, ``afterany``, ``afternotok``, ``after``
                                with ``:``-separated job ids (``12``, an array task ``12_3``); one on
                                a whole array is one on each of its tasks the output shows
==============================  ===================================================================

Jobs in other states (running, completed, ...) are not pending work and are not read here (give the
same file to ``--running``). What placer cannot represent is refused with the field and the reason, never
read halfway: GPUs per job or per task (``--gpus``, ``--gpus-per-task``) that Slurm may split unevenly
over several nodes, generic resources other than GPUs per job or per task, or typed (``gres:nic:mlx5:1``;
untyped per node, ``gres:nic:1``, is the task group's ``extra`` ``gres/nic``, counted per node against
its ``Gres``), heterogeneous jobs, feature counts and brackets, ``singleton`` and other dependency kinds.

A throttled array (``--array=0-99%4``: ``%N`` in ``array_task_string``, ``array_max_tasks``) gives each
pending task, split off or not, ``Job.throttle`` with the array's id as its group: the engines start at
most N of the array's tasks counting those running (``--running`` marks running tasks with the group),
and the others wait with ``THROTTLE``.

>>> doc = {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": [{"job_id": 9, "name": "big",
...     "job_state": "PENDING", "partition": "gpu", "user_name": "ana", "node_count": 2, "cpus": 16,
...     "memory_per_node": 65536, "tres_per_node": "gres:gpu:h100:8", "time_limit": 120,
...     "required_nodes": "", "excluded_nodes": "", "features": "ib", "dependency": ""}]}
>>> (r,) = read(doc, source="squeue.json", options=None)
>>> g = r.job.tasks[0]
>>> r.job.id, r.job.queue, g.count, g.one_per_node, g.cpu_cores, g.memory_gb, g.gpu.count, g.gpu.types
('9', 'gpu', 2, True, 8.0, 64.0, 8, ['nvidia-h100'])
>>> r.job.duration_s, [x.key for x in r.job.placement.required]
(7200.0, ['partition/gpu', 'ib'])
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.flux_ids import FluxLimitError, FluxSyntaxError, expand_hostlist
from placer.solver.jobs.model import (
    AffinityOperator,
    AnyOf,
    CountRange,
    Dependency,
    DependencyCondition,
    DistributedStrategy,
    GpuDemand,
    GroupLimit,
    Job,
    LabelRule,
    Placement,
    ReadResult,
    ReservationRef,
    Rule,
    TaskGroup,
    Throttle,
)
from placer.topology import TopologyError, canonical_gpu_type
from placer.topology.importers.slurm import cores_holding, parse_gres
from placer.topology.importers.slurm_assoc import AssocTable
from placer.topology.importers.slurm_jobs import singleton_group, slurm_number, slurm_states, slurm_text
from placer.topology.importers.slurm_licenses import job_licenses
from placer.topology.importers.slurm_partitions import SlurmPartition, tier_of
from placer.topology.importers.slurm_qos import SlurmQos, level_of, qos_limits

__all__ = [
    "MAX_ARRAY_TASKS",
    "PENDING_STATES",
    "array_tasks",
    "read",
    "with_assoc_limits",
    "with_cores",
    "with_partition_tiers",
    "with_partitions",
    "with_qos_levels",
    "with_qos_limits",
    "with_slurm_ranks",
]

#: Job states of work still waiting to start.
PENDING_STATES = frozenset({"PENDING"})
#: Most nodes a ``required_nodes`` / ``excluded_nodes`` hostlist may expand to.
MAX_HOSTS = 100_000
_DEPENDENCIES = {
    "after": DependencyCondition.START,
    "afterok": DependencyCondition.SUCCESS,
    "afternotok": DependencyCondition.FAILURE,
    "afterany": DependencyCondition.EXIT,
}


def read(doc: Any, *, source: str, options: Any) -> list[ReadResult]:
    """Every pending job of ``squeue --json`` output as one result (module docstring); never raises for
    bad input."""
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        err = issue("malformed", source or "<input>", "expected squeue --json output: an object with 'jobs'")
        return [ReadResult(id=source or "<input>", ok=False, errors=[err], source=source)]
    out: list[ReadResult] = []
    throttles = _throttles(jobs)
    for k, raw in enumerate(jobs):
        base = f"jobs[{k}]"
        if not isinstance(raw, dict):
            err = issue("type", base, "a job must be an object")
            out.append(ReadResult(id=f"{source}#{k}", ok=False, errors=[err], source=source, path=base))
            continue
        if not PENDING_STATES & set(slurm_states(raw.get("job_state"))):
            continue
        if slurm_text(raw.get("array_task_string")) and slurm_number(raw.get("array_task_id")) is None:
            out.extend(_array(raw, base, source, throttles))
            continue
        out.append(_job(raw, base, source, throttles))
    return _on_whole_arrays(_het_jobs(out, jobs), _array_members(jobs, out))


def _het_jobs(results: list[ReadResult], jobs: list[Any]) -> list[ReadResult]:
    """A heterogeneous job's components (``sbatch ... : ...``; one ``squeue`` record each, with
    ``het_job_id`` and ``het_job_offset``) as one job: one task group per component, named by its offset
    (``"0"``, ``"1"``), each with its own nodes, CPUs, memory, GPUs and node constraints (``-w``, ``-x``,
    ``-C``), placed all together or not at all (Slurm starts them together). The job's id is the het job's
    (component 0's), its other fields component 0's; a component refused refuses the whole job, with every
    component's errors. ``jobs``: the output's records (a result's ``path`` is its record's)."""
    groups: dict[int, list[tuple[int, ReadResult]]] = {}
    order: list[int | ReadResult] = []
    for r in results:
        m = re.fullmatch(r"jobs\[(\d+)\]", r.path)
        raw = jobs[int(m.group(1))] if m is not None else None
        hid = slurm_number(raw.get("het_job_id")) if isinstance(raw, dict) else None
        if not hid:
            order.append(r)
            continue
        key = int(hid)
        if key not in groups:
            order.append(key)
        offset = int(slurm_number(raw.get("het_job_offset")) or 0)  # type: ignore[union-attr]
        groups.setdefault(key, []).append((offset, r))
    return [
        item if isinstance(item, ReadResult) else _het_job(item, sorted(groups[item], key=lambda x: x[0]))
        for item in order
    ]


def _het_job(hid: int, parts: list[tuple[int, ReadResult]]) -> ReadResult:
    """One heterogeneous job from its components (offset, read result), component 0 first."""
    first = parts[0][1]
    if any(r.job is None for _, r in parts):
        errors = [e for _, r in parts for e in r.errors]
        return first.model_copy(update={"id": str(hid), "ok": False, "job": None, "errors": errors})
    assert first.job is not None
    tasks = []
    for offset, r in parts:
        assert r.job is not None
        for t in r.job.tasks:
            tasks.append(
                t.model_copy(
                    update={"name": str(offset), "required": [*t.required, *r.job.placement.required]}
                )
            )
    nodes = sum(t.count for t in tasks)
    durations = [r.job.duration_s for _, r in parts if r.job is not None and r.job.duration_s is not None]
    job = first.job.model_copy(
        update={
            "id": str(hid),
            "tasks": tasks,
            "placement": first.job.placement.model_copy(update={"required": []}),
            "duration_s": max(durations) if durations else None,
            "distributed_strategy": DistributedStrategy.DATA_PARALLEL if nodes > 1 else None,
            "labels": {**first.job.labels, "slurm_het_job_id": str(hid)},
        }
    )
    return first.model_copy(
        update={"id": str(hid), "job": job, "warnings": [w for _, r in parts for w in r.warnings]}
    )


def _array_members(jobs: list[Any], results: list[ReadResult]) -> dict[str, list[str]]:
    """Array id -> the ids of its tasks this output shows: running or split-off records, and the tasks a
    pending record lists (read or refused as a whole)."""
    members: dict[str, set[str]] = {}
    for raw in jobs:
        if not isinstance(raw, dict):
            continue
        array_id, task = slurm_number(raw.get("array_job_id")), slurm_number(raw.get("array_task_id"))
        if array_id and task is not None:
            members.setdefault(str(int(array_id)), set()).add(f"{int(array_id)}_{int(task)}")
        elif array_id and slurm_text(raw.get("array_task_string")):
            members.setdefault(str(int(array_id)), set())
    for r in results:
        head, sep, _ = r.id.partition("_")
        if sep and head in members:
            members[head].add(r.id)
        elif not r.ok and r.id in members:  # a refused array: a dependency on it waits on the array itself
            members[r.id].add(r.id)
    return {k: sorted(v) for k, v in members.items()}


def _on_whole_arrays(results: list[ReadResult], members: dict[str, list[str]]) -> list[ReadResult]:
    """A dependency on a whole array (``afterok:4711``) is, in Slurm, one on every task of it: it becomes
    one dependency per task this output shows (placer's dependencies all hold together). Without this a
    dependency on ``4711`` named no job placer knows, and would count as met."""
    out = []
    for r in results:
        job = r.job
        if job is None or not any(d.job in members for d in job.dependencies):
            out.append(r)
            continue
        deps: list[Dependency] = []
        for d in job.dependencies:
            for jid in members.get(d.job, [d.job]):
                dep = d.model_copy(update={"job": jid})
                if dep not in deps:
                    deps.append(dep)
        out.append(r.model_copy(update={"job": job.model_copy(update={"dependencies": deps})}))
    return out


#: Most tasks one pending array may expand to (Slurm's ``MaxArraySize`` defaults to 1,001).
MAX_ARRAY_TASKS = 100_000


def array_tasks(text: str) -> tuple[list[int], int]:
    """The task indices of Slurm's ``array_task_string`` and its throttle (0: none): ``0-5%2`` is tasks
    0..5, at most 2 at once; ``1,3,7-9`` and ``0-15:4`` (a step) as ``sbatch --array`` takes them.
    ``ValueError`` names what is wrong.

    >>> array_tasks("0-5%2"), array_tasks("1,3,7-9"), array_tasks("0-15:4")
    (([0, 1, 2, 3, 4, 5], 2), ([1, 3, 7, 8, 9], 0), ([0, 4, 8, 12], 0))
    """
    spec, _, throttle = text.strip().partition("%")
    if throttle and not (throttle.isascii() and throttle.isdigit()):  # "²" is a digit int() refuses
        raise ValueError(f"throttle {throttle!r} is not a number")
    out: list[int] = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part.strip())
        if m is None:
            raise ValueError(
                f"{part.strip()!r} is not a task index, a range a-b or a range with a step a-b:s"
            )
        first = int(m.group(1))
        last = int(m.group(2)) if m.group(2) is not None else first
        step = int(m.group(3)) if m.group(3) is not None else 1
        if last < first or step < 1:
            raise ValueError(f"{part.strip()!r} is an empty range")
        if len(out) + (last - first) // step + 1 > MAX_ARRAY_TASKS:
            raise ValueError(f"more than {MAX_ARRAY_TASKS:,} tasks")
        out.extend(range(first, last + 1, step))
    return sorted(set(out)), int(throttle or 0)


def _throttles(jobs: list[Any]) -> dict[float, int]:
    """Per array id, its throttle as its pending record states it (``array_max_tasks``, else ``%N`` in
    ``array_task_string``): a task Slurm split off carries none of its own (Slurm keeps the throttle on
    the array's record), so it takes its array's from there. Unreadable strings are refused by
    :func:`_array`."""
    out: dict[float, int] = {}
    for raw in jobs:
        if not isinstance(raw, dict) or slurm_number(raw.get("array_task_id")) is not None:
            continue
        array_id = slurm_number(raw.get("array_job_id"))
        if not array_id:
            continue
        most = int(slurm_number(raw.get("array_max_tasks")) or 0)
        if not most:
            try:
                most = array_tasks(slurm_text(raw.get("array_task_string")))[1]
            except ValueError:
                continue
        if most:
            out[array_id] = most
    return out


def _array(raw: dict[str, Any], base: str, source: str, throttles: dict[float, int]) -> list[ReadResult]:
    """A pending array's tasks, one job each (``<array_job_id>_<task>``), each with the array's throttle
    (``throttles``: :func:`_throttles`); one refused result naming the field when its task string is
    unreadable."""
    array_id = slurm_number(raw.get("array_job_id")) or slurm_number(raw.get("job_id"))
    rid = f"{int(array_id)}" if array_id is not None else f"{source}#{base}"
    text = slurm_text(raw.get("array_task_string"))
    try:
        tasks, _ = array_tasks(text)
    except ValueError as e:
        err = issue("malformed", f"{base}.array_task_string", f"{text!r}: {e}")
        return [ReadResult(id=rid, ok=False, errors=[err], source=source, path=base)]
    task = {**raw, "array_job_id": array_id}
    return [_job({**task, "array_task_id": t}, base, source, throttles) for t in tasks]


def with_cores(results: list[ReadResult], cpus_per_core: int) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` with their CPUs per node as cores, for a cluster whose nodes'
    CPUs are hardware threads, ``cpus_per_core`` of them to a core (Slurm allocates whole cores, so
    ``-c 3`` on such nodes takes 2 cores); other formats, and everything when ``cpus_per_core`` is 1,
    pass unchanged. The caller takes the smallest ``cpus_per_core`` of the nodes (placer cannot make a
    job's demand depend on the node): where nodes differ, a job may reserve more cores than Slurm would
    give it, never fewer.

    >>> doc = {"jobs": [{"job_id": 9, "job_state": "PENDING", "node_count": 1, "cpus": 3}]}
    >>> (r,) = with_cores(read(doc, source="q.json", options=None), 2)
    >>> r.job.tasks[0].cpu_cores
    2.0
    """
    if cpus_per_core <= 1:
        return results

    def cores(r: ReadResult, job: Job) -> ReadResult:
        tasks = [
            g.model_copy(update={"cpu_cores": cores_holding(g.cpu_cores, cpus_per_core)}) for g in job.tasks
        ]
        return r.model_copy(update={"job": job.model_copy(update={"tasks": tasks})})

    return _each_slurm_job(results, cores)


def _each_slurm_job(
    results: list[ReadResult], change: Callable[[ReadResult, Job], ReadResult]
) -> list[ReadResult]:
    """``results`` with ``change`` applied to each read Slurm job (others as they are)."""
    out: list[ReadResult] = []
    for r in results:
        ok = r.ok and r.job is not None and r.job.source_format == "slurm"
        out.append(change(r, r.job) if ok and r.job is not None else r)
    return out


def with_partition_tiers(
    results: list[ReadResult], table: dict[str, SlurmPartition], *, qos: dict[str, SlurmQos] | None = None
) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` with their partitions' ``PriorityTier`` as priority (the
    highest of a comma list; Slurm's priority number kept as the label ``slurm_priority``), so that
    placer evicts for them exactly where Slurm's ``preempt/partition_prio`` would
    (:mod:`placer.topology.importers.slurm_partitions`), and held to what their partitions say of starting
    them (:func:`_partition_rules`; with ``qos``, the QOS table, a partition's QOS's limits too). A job
    whose partition is not in ``table`` is rejected, naming its ``partition`` field; other formats pass
    unchanged.

    >>> from placer.topology.importers.slurm_partitions import SlurmPartition
    >>> doc = {"jobs": [{"job_id": 9, "job_state": "PENDING", "partition": "gpu", "priority": 4294901759,
    ...                  "node_count": 1, "cpus": 1}]}
    >>> (r,) = with_partition_tiers(read(doc, source="q.json", options=None),
    ...                             {"gpu": SlurmPartition("gpu", priority_tier=10)})
    >>> r.job.priority, r.job.labels["slurm_priority"]
    (10, '4294901759')
    """

    def rank(value: str, job: Job) -> tuple[int, dict[str, str]]:
        return tier_of(value, table, item=job.id), {}

    return _partition_rules(_ranked_by(results, "partition", rank), table, qos)


def with_partitions(
    results: list[ReadResult], table: dict[str, SlurmPartition], *, qos: dict[str, SlurmQos] | None = None
) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` held to what their partitions say of starting them
    (:func:`_partition_rules`: states, ``MaxTime``, node counts, ``OverSubscribe=EXCLUSIVE``, with ``qos``
    their partition QOS's limits), their priority left as it is: under ``preempt/qos`` a job ranks by its
    QOS (:func:`with_qos_levels`), not by its partitions' ``PriorityTier``. A job whose partition is not
    in ``table`` is rejected, naming its ``partition`` field."""

    def checked(r: ReadResult, job: Job) -> ReadResult:
        value = slurm_text((job.envelope or {}).get("partition"))
        try:
            if _partition_names(value):  # with_partition_tiers's refusal of a partition not read
                tier_of(value, table, item=job.id)
        except TopologyError as e:
            err = issue("enum", f"{r.path}.partition", e.problems[0].message)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        return r

    return _partition_rules(_each_slurm_job(results, checked), table, qos, tiers=False)


def _partition_rules(
    results: list[ReadResult],
    table: dict[str, SlurmPartition],
    qos: dict[str, SlurmQos] | None = None,
    *,
    tiers: bool = True,
) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` (ranked, their partitions known) held to what their partitions
    say of starting them: a partition that is ``DOWN`` or ``INACTIVE``, or whose ``MaxTime``, ``MaxNodes``
    or ``MinNodes`` the job exceeds, starts none of them (Slurm keeps such a job pending:
    ``PartitionDown``, ``PartitionTimeLimit``, ``PartitionNodeLimit``), so the job may run only in its other
    partitions (a warning names those left out, its tier is theirs) and is rejected, naming the
    ``partition`` field and every reason, when none is left; ``OverSubscribe=EXCLUSIVE`` makes it hold its
    nodes whole (with a warning where only some of its partitions say so: placer is then stricter).

    A partition's QOS (``QOS=`` in ``slurm.conf``, the *partition QOS*) limits every job of the partition,
    whatever its own QOS: with ``qos`` (``sacctmgr show qos -P``) its ``GrpJobs``/``GrpTRES=gres/gpu`` and
    per-user and per-account limits become the job's group limits (the groups ``qos/<name>...`` of
    :func:`~placer.topology.importers.slurm_qos.qos_limits`, which the partition's running jobs count
    against too), and a job over its per-job GPU limit is one the partition does not start
    (``QOSMaxGRESPerJob``). Slurm takes each limit from the partition QOS when it sets it, else from the
    job's QOS (the reverse under the job QOS's ``OverPartQOS`` flag); placer holds the job to both, and
    warns where both set one (it is then stricter than Slurm). Without ``qos`` a warning says the partition
    QOS's limits are not read.

    >>> from placer.topology.importers.slurm_partitions import SlurmPartition
    >>> doc = {"jobs": [{"job_id": 9, "job_state": "PENDING", "partition": "short,gpu", "node_count": 1,
    ...                  "cpus": 1, "time_limit": 120}]}
    >>> table = {"short": SlurmPartition("short", priority_tier=5, max_time_min=60),
    ...          "gpu": SlurmPartition("gpu", exclusive=True)}
    >>> (r,) = with_partition_tiers(read(doc, source="q.json", options=None), table)
    >>> r.job.priority, r.job.placement.exclusive_nodes, r.job.placement.required[0].key
    (1, True, 'partition/gpu')
    """

    def ruled(r: ReadResult, job: Job) -> ReadResult:
        names = _partition_names(slurm_text((job.envelope or {}).get("partition")))
        if not names or any(p not in table for p in names):
            return r
        nodes = job.tasks[0].count if len(job.tasks) == 1 else None  # a het job's components: each its own
        minutes = job.duration_s / 60 if job.duration_s is not None else None
        refused = {p: why for p in names if (why := table[p].refuses(nodes, minutes)) is not None}
        part_qos = {
            p: qos[q] for p in names if (q := table[p].qos) is not None and qos is not None and q in qos
        }
        for p, level in part_qos.items():
            what = f"partition {p}'s QOS {level.name!r}"
            over = _over_per_job(job, level.job_gpus, level.node_gpus, what, "QOSMaxGRESPer")
            if over is not None and p not in refused:
                refused[p] = f"partition {p}: {over}"
        allowed = [p for p in names if p not in refused]
        path = f"{r.path}.partition" if r.path else "partition"
        if not allowed:
            err = issue("limit", path, "; ".join(refused.values()))
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        warnings = list(r.warnings)
        update: dict[str, Any] = {}
        placement = job.placement
        limits = _partition_qos_limits(job, [part_qos[p] for p in allowed if p in part_qos], qos or {})
        if limits is not None:
            update["limits"], said = limits
            warnings += [issue("unsupported", path, why) for why in said]
            free = [p for p in allowed if table[p].qos is None]
            if free:  # it may start where no partition QOS holds it; placer holds it anyway
                why = (
                    f"partition {free[0]!r} has no QOS: Slurm holds the job to a partition QOS only where it "
                    "starts in that partition, placer wherever it starts"
                )
                warnings.append(issue("unsupported", path, why))
        if refused:
            why = f"runs only in {', '.join(allowed)}: " + "; ".join(refused.values())
            warnings.append(issue("limit", path, why))
            keep = _partition_rule(allowed)
            required = [keep if _is_partition_rule(x) else x for x in placement.required]
            placement = placement.model_copy(update={"required": required})
            if tiers:  # the tier of the partitions left (under preempt/qos the QOS ranks instead)
                update["priority"] = max(table[p].priority_tier for p in allowed)
        for p in allowed:
            if table[p].qos is not None and p not in part_qos:
                why = (
                    f"partition {p!r} has QOS {table[p].qos!r}, whose limits Slurm applies to its jobs: "
                    + ("not read" if qos is None else "not in the QOS table")
                    + " (placer may place a job they hold)"
                )
                warnings.append(issue("unsupported", path, why))
        whole = [p for p in allowed if table[p].exclusive]
        if whole and not placement.exclusive_nodes:
            placement = placement.model_copy(update={"exclusive_nodes": True})
            if len(whole) < len(allowed):
                why = f"partition {whole[0]!r} gives jobs whole nodes (OverSubscribe=EXCLUSIVE): "
                warnings.append(
                    issue("unsupported", path, why + "so does placer, in every partition of the job")
                )
        if placement is job.placement and not update and warnings == r.warnings:
            return r
        job = job.model_copy(update={**update, "placement": placement})
        return r.model_copy(update={"job": job, "warnings": warnings})

    return _each_slurm_job(results, ruled)


def _limits_with(
    limits: list[GroupLimit], found: list[tuple[str, int | None, int | None]]
) -> list[GroupLimit]:
    """``limits`` and, after them, the group limits of ``found`` ((group, jobs, GPUs) each) whose groups
    ``limits`` lacks: a group named twice would hold the job twice to one limit."""
    have = {lim.group for lim in limits}
    return [
        *limits,
        *(GroupLimit(group=g, max_running=most, max_gpus=gpus) for g, most, gpus in found if g not in have),
    ]


#: A QOS's limits as Slurm names them: the ``SlurmQos`` field -> the ``sacctmgr`` column.
_QOS_LIMIT_NAMES = {
    "grp_jobs": "GrpJobs",
    "grp_gpus": "GrpTRES=gres/gpu",
    "user_jobs": "MaxJobsPU",
    "user_gpus": "MaxTRESPU=gres/gpu",
    "account_jobs": "MaxJobsPA",
    "account_gpus": "MaxTRESPA=gres/gpu",
    "job_gpus": "MaxTRES=gres/gpu",
    "node_gpus": "MaxTRESPerNode=gres/gpu",
}


def _partition_qos_limits(
    job: Job, part_qos: list[SlurmQos], table: dict[str, SlurmQos]
) -> tuple[list[GroupLimit], list[str]] | None:
    """The job's group limits with those of its partitions' QOSes added (a group it already has is not
    added twice), and the warnings to give: limits placer does not model, a job QOS that sets a limit the
    partition QOS sets too, several partition QOSes; None when no partition QOS applies."""
    if not part_qos:
        return None
    env = job.envelope or {}
    account = slurm_text(env.get("account")) or None
    limits = job.limits
    said: list[str] = []
    own = table.get(slurm_text(env.get("qos")))
    for q in part_qos:
        limits = _limits_with(limits, qos_limits(q, job.user, account))
        if q.unmodelled:
            said.append(
                f"the partition QOS {q.name!r} limits {', '.join(q.unmodelled)}: not modelled "
                "(placer may place a job they hold)"
            )
        if own is not None and own.name != q.name:
            both = [
                n
                for f, n in _QOS_LIMIT_NAMES.items()
                if getattr(q, f) is not None and getattr(own, f) is not None
            ]
            if both:
                said.append(
                    f"the partition QOS {q.name!r} and the job's QOS {own.name!r} both set "
                    f"{', '.join(both)}: Slurm applies {q.name!r}'s (the job QOS's under its OverPartQOS "
                    "flag), placer both"
                )
    if len(part_qos) > 1:
        names = ", ".join(repr(q.name) for q in part_qos)
        said.append(
            f"its partitions have QOSes {names}: Slurm holds it to the one of the partition it starts in, "
            "placer to all of them"
        )
    return limits, said


def _partition_names(value: str) -> list[str]:
    """The partitions of Slurm's comma list (``short,gpu``), in its order."""
    return [p for p in value.split(",") if p]


def _partition_rule(partitions: list[str]) -> Rule:
    """The rule that keeps a job on the nodes of ``partitions`` (any of them)."""
    alts: list[Rule] = [LabelRule(key=f"partition/{p}", operator=AffinityOperator.EXISTS) for p in partitions]
    return alts[0] if len(alts) == 1 else AnyOf(rules=alts)


def _is_partition_rule(rule: Rule) -> bool:
    if isinstance(rule, LabelRule):
        return rule.key.startswith("partition/")
    return isinstance(rule, AnyOf) and all(
        isinstance(x, LabelRule) and x.key.startswith("partition/") for x in rule.rules
    )


def with_qos_levels(results: list[ReadResult], table: dict[str, SlurmQos]) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` with their QOS's level as priority (Slurm's priority number
    kept as the label ``slurm_priority``, the QOS's ``Priority`` as ``slurm_qos_priority``), so that placer
    evicts for them exactly where Slurm's ``preempt/qos`` would (:mod:`placer.topology.importers.slurm_qos`),
    and with its QOS's limits as group limits (``Job.limits``: ``GrpJobs``, ``GrpTRES=gres/gpu``, per user
    and per account); a limit placer does not model is named in a warning. A job whose QOS is not in
    ``table`` is rejected, naming its ``qos`` field; other formats pass unchanged.

    >>> from placer.topology.importers.slurm_qos import SlurmQos
    >>> doc = {"jobs": [{"job_id": 9, "job_state": "PENDING", "qos": "high", "priority": 4294901759,
    ...                  "node_count": 1, "cpus": 1}]}
    >>> (r,) = with_qos_levels(read(doc, source="q.json", options=None),
    ...                        {"high": SlurmQos("high", priority=100, preempt=frozenset({"low"}), level=1)})
    >>> r.job.priority, r.job.labels["slurm_priority"], r.job.labels["slurm_qos_priority"]
    (1, '4294901759', '100')
    """

    def rank(value: str, job: Job) -> tuple[int, dict[str, str]]:
        q = level_of(value, table, item=job.id)
        return q.level, {"slurm_qos_priority": str(q.priority)}

    return with_qos_limits(_ranked_by(results, "qos", rank), table)


def with_qos_limits(results: list[ReadResult], table: dict[str, SlurmQos]) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` with their QOS's limits as group limits (``Job.limits``:
    ``GrpJobs``, ``GrpTRES=gres/gpu``, per user and per account; ``slurm_qos.qos_limits``), and a warning
    naming the limits placer does not model; nothing else changes (the table read for its limits alone,
    ``--slurm-qos-limits``; :func:`with_qos_levels` calls it too). A job whose QOS is not in ``table`` is
    rejected, naming its ``qos`` field."""

    def limited(r: ReadResult, job: Job) -> ReadResult:
        env = job.envelope or {}
        try:
            q = level_of(slurm_text(env.get("qos")), table, item=job.id)
        except TopologyError as e:
            err = issue("enum", f"{r.path}.qos", e.problems[0].message)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        over = _over_per_job(job, q.job_gpus, q.node_gpus, f"QOS {q.name!r}", "QOSMaxGRESPer")
        if over is not None:
            err = issue("limit", f"{r.path}.qos" if r.path else "qos", over)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        account = slurm_text(env.get("account")) or None
        # A partition QOS that is the job's own QOS named its groups already: they are not added twice.
        limits = _limits_with(job.limits, qos_limits(q, job.user, account))
        warnings = list(r.warnings)
        if q.unmodelled:
            what = ", ".join(q.unmodelled)
            why = f"QOS {q.name!r} limits {what}: not modelled (placer may place a job they hold)"
            warnings.append(issue("unsupported", f"{r.path}.qos" if r.path else "qos", why))
        if len(limits) == len(job.limits) and not q.unmodelled:
            return r
        job = job.model_copy(update={"limits": limits})
        return r.model_copy(update={"job": job, "warnings": warnings})

    return _each_slurm_job(results, limited)


def with_assoc_limits(results: list[ReadResult], table: AssocTable) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` with their associations' limits as group limits
    (``Job.limits``: the user association's ``GrpJobs``/``GrpTRES=gres/gpu``/``MaxJobs``, its account's and
    every account's above it; :mod:`placer.topology.importers.slurm_assoc`), and a warning naming the
    limits placer does not model. A job the table has no association for (its ``account`` and
    ``user_name``; Slurm would not run it) is rejected, naming its ``account`` field."""

    def limited(r: ReadResult, job: Job) -> ReadResult:
        env = job.envelope or {}
        account = slurm_text(env.get("account")) or None
        try:
            found = table.limits(account, job.user, job.queue, item=job.id)
        except TopologyError as e:
            err = issue("enum", f"{r.path}.account", e.problems[0].message)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        job_gpus, node_gpus = table.per_job(account, job.user, job.queue)
        over = _over_per_job(
            job, job_gpus, node_gpus, f"the association of {job.user!r} under {account!r}", "AssocMaxGRESPer"
        )
        if over is not None:
            err = issue("limit", f"{r.path}.account" if r.path else "account", over)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        limits = [GroupLimit(group=g, max_running=most, max_gpus=gpus) for g, most, gpus in found]
        unmodelled = table.unmodelled(account, job.user, job.queue)
        warnings = list(r.warnings)
        if unmodelled:
            why = (
                f"association limits {', '.join(unmodelled)}: not modelled (placer may place a job they hold)"
            )
            warnings.append(issue("unsupported", f"{r.path}.account" if r.path else "account", why))
        if not limits and not unmodelled:
            return r
        job = job.model_copy(update={"limits": [*job.limits, *limits]})
        return r.model_copy(update={"job": job, "warnings": warnings})

    return _each_slurm_job(results, limited)


def _over_per_job(
    job: Job, job_gpus: int | None, node_gpus: int | None, whose: str, reason: str
) -> str | None:
    """Why ``job`` asks more GPUs than one job may (``MaxTRES``, ``MaxTRESPerNode`` of ``whose``), or None.
    Slurm keeps such a job pending for good (``reason`` + ``Job``/``Node``)."""
    total = job.total_gpu_milli / 1000
    if job_gpus is not None and total > job_gpus:
        return (
            f"asks {total:g} GPUs; {whose} lets one job have at most {job_gpus} "
            f"(MaxTRES=gres/gpu={job_gpus}): Slurm keeps it pending ({reason}Job)"
        )
    per_node = max(
        (t.gpu.count for t in job.tasks if t.gpu is not None and t.gpu.share_milli is None), default=0
    )
    if node_gpus is not None and per_node > node_gpus:
        return (
            f"asks {per_node} GPUs per node; {whose} lets one job have at most {node_gpus} per node "
            f"(MaxTRESPerNode=gres/gpu={node_gpus}): Slurm keeps it pending ({reason}Node)"
        )
    return None


def with_slurm_ranks(
    results: list[ReadResult],
    *,
    partitions: dict[str, SlurmPartition] | None,
    qos: dict[str, SlurmQos] | None,
    qos_limits: dict[str, SlurmQos] | None = None,
    assoc: AssocTable | None = None,
) -> list[ReadResult]:
    """The pending Slurm jobs of ``results`` ranked by their QOS's level when the QOS table is given
    (``preempt/qos``: :func:`with_qos_levels`), else by their partitions' tiers
    (:func:`with_partition_tiers`); unchanged with neither. Partitions given with the QOS table still say
    where and whether a job starts (:func:`with_partitions`), only not its rank.
    ``qos_limits``: a QOS table read for its limits alone (:func:`with_qos_limits`); ``assoc``: the
    associations, whose limits they are held to (:func:`with_assoc_limits`)."""
    if partitions is not None and qos is not None:  # preempt/qos: the QOS ranks, partitions still rule
        results = with_partitions(results, partitions, qos=qos)
    elif partitions is not None:
        results = with_partition_tiers(results, partitions, qos=qos_limits)
    if qos is not None:
        results = with_qos_levels(results, qos)
    if qos_limits is not None:
        results = with_qos_limits(results, qos_limits)
    if assoc is not None:
        results = with_assoc_limits(results, assoc)
    return results


def _ranked_by(
    results: list[ReadResult], field: str, rank: Callable[[str, Job], tuple[int, dict[str, str]]]
) -> list[ReadResult]:
    """The read Slurm jobs re-ranked by ``rank`` of their ``field`` (its priority and labels to add; a
    ``TopologyError`` rejects the job, naming ``field``); Slurm's own priority number is kept as the label
    ``slurm_priority``."""

    def ranked(r: ReadResult, job: Job) -> ReadResult:
        try:
            priority, extra = rank(slurm_text((job.envelope or {}).get(field)), job)
        except TopologyError as e:
            err = issue("enum", f"{r.path}.{field}", e.problems[0].message)
            return r.model_copy(update={"ok": False, "job": None, "errors": [*r.errors, err]})
        labels = {**job.labels, "slurm_priority": str(job.priority), **extra}
        return r.model_copy(update={"job": job.model_copy(update={"priority": priority, "labels": labels})})

    return _each_slurm_job(results, ranked)


def _job(raw: dict[str, Any], base: str, source: str, throttles: dict[float, int]) -> ReadResult:
    errors: list[Issue] = []

    def at(field: str) -> str:
        return f"{base}.{field}"

    jid = slurm_number(raw.get("job_id"))
    rid = str(int(jid)) if jid is not None else f"{source}#{base}"
    if jid is None:
        errors.append(issue("required", at("job_id"), "a job needs its numeric job_id"))
    # An array task (expanded by _array, or split off by Slurm): named as Slurm and squeue name it.
    array_id, task = slurm_number(raw.get("array_job_id")), slurm_number(raw.get("array_task_id"))
    array_labels: dict[str, str] = {}
    if array_id and task is not None:
        if array_id < 1 or task < 0 or array_id != int(array_id) or task != int(task):
            why = f"array {array_id:g} task {task:g}: Slurm's are whole, arrays from 1 and tasks from 0"
            errors.append(issue("range", at("array_task_id"), why))
        rid = f"{int(array_id)}_{int(task)}"
        array_labels = {"slurm_array_job_id": str(int(array_id)), "slurm_array_task_id": str(int(task))}
    most = throttles.get(array_id) if array_labels and array_id else None
    if most is not None and most < 1:
        why = f"{most:g}: a throttle lets at least one task run"
        errors.append(issue("range", at("array_max_tasks"), why))
    nodes = int(slurm_number(raw.get("node_count")) or 1)
    most_nodes = max(nodes, int(slurm_number(raw.get("max_nodes")) or nodes))  # -N min-max
    cpus = slurm_number(raw.get("cpus")) or 0.0
    extra: dict[str, float] = {}
    gpu = _gpus(slurm_text(raw.get("tres_per_node")), at("tres_per_node"), errors, extra)
    gpu = _gpus_per_job_or_task(raw, nodes, gpu, at, errors)
    per_cpu, per_node = slurm_number(raw.get("memory_per_cpu")), slurm_number(raw.get("memory_per_node"))
    cpu_per_node = cpus / nodes if nodes > 0 else cpus
    gpus_here = gpu.count if gpu is not None else 0
    # --mincpus and --cpus-per-gpu: Slurm allocates them, but a pending job's ``cpus`` does not count
    # them yet (22.05, captured: --cpus-per-gpu=2 with 2 GPUs still shows cpus 1).
    per_gpu_cpus = _per_gpu(raw, "cpus_per_tres", at, errors)
    cpu_per_node = max(
        cpu_per_node,
        slurm_number(raw.get("minimum_cpus_per_node")) or 0.0,
        (per_gpu_cpus or 0.0) * gpus_here,
    )
    memory_mb = per_node if per_node is not None else (per_cpu or 0.0) * cpu_per_node
    # --mem-per-gpu: what the job gets per node (its memory_per_cpu is then only DefMemPerCPU).
    per_gpu_mb = _per_gpu(raw, "memory_per_tres", at, errors)
    if per_gpu_mb is not None and per_node is None:
        memory_mb = per_gpu_mb * gpus_here
    tmp_mb = slurm_number(raw.get("minimum_tmp_disk_per_node")) or 0.0  # --tmp, MB
    rules = _rules(raw, at, errors)
    dependencies = _dependencies(slurm_text(raw.get("dependency")), at("dependency"), errors)
    warnings: list[Issue] = []
    exclusive = _exclusive(raw, at, errors, warnings)
    if not per_node and not per_cpu and per_gpu_mb is None and not exclusive:
        exclusive = True  # --mem=0, or no memory asked and no DefMemPerCPU: every node's whole memory
        why = (
            "no memory per node, CPU or GPU: Slurm gives the job every node's whole memory (--mem=0, or no "
            "--mem without DefMemPerCPU), so where memory is a consumable resource (CR_*_Memory) it starts "
            "only on nodes with all memory free; read as whole nodes (stricter where memory is not counted)"
        )
        warnings.append(issue("unsupported", at("memory_per_node"), why))
    preferred = _preferred(slurm_text(raw.get("prefer")), at("prefer"), warnings)
    _not_modelled(raw, at, errors)
    licenses = _licenses(raw.get("licenses"), at("licenses"), errors)
    _switches(raw, nodes, at, warnings)
    if errors:
        return ReadResult(id=rid, ok=False, errors=errors, warnings=warnings, source=source, path=base)
    # --begin: the job may not start before its eligible time. Slurm sets it to the submit time for a job
    # without one, to 0 (scontrol: Unknown) while a job is held, and to the begin time after --begin, also
    # while held (Slurm 22.05, captured); later than the submit time, it is a time the job waits for.
    eligible = slurm_number(raw.get("eligible_time"))
    submitted = slurm_number(raw.get("submit_time"))
    begins = eligible if eligible and (not submitted or eligible > submitted) else None
    reservation = slurm_text(raw.get("resv_name"))
    limit = slurm_number(raw.get("time_limit"))
    partition = slurm_text(raw.get("partition"))
    try:
        job = Job(
            id=rid,
            name=slurm_text(raw.get("name")) or None,
            type="slurm.job",
            source_format="slurm",
            queue=partition.split(",")[0] if partition else None,
            tenant=slurm_text(raw.get("account")) or slurm_text(raw.get("user_name")) or None,
            user=slurm_text(raw.get("user_name")) or None,
            priority=int(slurm_number(raw.get("priority")) or 0),
            submit_time=datetime.fromtimestamp(submitted, UTC) if submitted else None,
            not_before=datetime.fromtimestamp(begins, UTC) if begins else None,
            duration_s=limit * 60 if limit is not None else None,
            dependencies=dependencies,
            distributed_strategy=DistributedStrategy.DATA_PARALLEL if nodes > 1 else None,
            tasks=[
                TaskGroup(
                    count=nodes,
                    # -N min-max: as many nodes as fit now, up to max (Slurm's "as many nodes as possible
                    # within the range ... without delaying the initiation of the job"; seen on 22.05: -N 2-3
                    # released on three idle nodes ran on all three).
                    count_range=CountRange(min=nodes, max=most_nodes) if most_nodes > nodes else None,
                    one_per_node=most_nodes > 1,
                    cpu_cores=cpu_per_node,
                    memory_gb=memory_mb / 1024,
                    storage_gb=tmp_mb / 1024,
                    gpu=gpu,
                    extra=extra,
                )
            ],
            placement=Placement(required=rules, preferred=preferred, exclusive_nodes=exclusive),
            reservation=ReservationRef(id=reservation) if reservation else None,
            throttle=Throttle(group=str(int(array_id)), max_running=int(most)) if most and array_id else None,
            licenses=licenses,
            limits=_singleton(raw, slurm_text(raw.get("dependency"))),
            labels={
                **{k: v for k, v in {"slurm_job_name": slurm_text(raw.get("name"))}.items() if v},
                **array_labels,
            },
            metadata={"slurm": {"state_reason": slurm_text(raw.get("state_reason"))}},
            envelope=raw,
        )
    except (ValidationError, ValueError, OverflowError, OSError) as e:
        found = e.errors() if isinstance(e, ValidationError) else [{"loc": (), "msg": str(e)}]
        errs = [
            issue("range", at(".".join(str(x) for x in err["loc"]) or "job"), str(err["msg"])[:300])
            for err in found
        ]
        return ReadResult(id=rid, ok=False, errors=errs, warnings=warnings, source=source, path=base)
    return ReadResult(id=rid, ok=True, job=job, warnings=warnings, source=source, path=base)


#: ``shared`` as ``squeue --json`` prints it (22.05: one word; newer: a list of flags) -> whether the job
#: holds its nodes whole. ``none`` is ``--exclusive``; ``user`` and ``mcs`` (``--exclusive=user|mcs``) share
#: nodes only with the same user's or MCS label's jobs, and ``topo`` (24.11) a topology block: placer keeps
#: those nodes whole too (stricter: it never starts another job beside them), with a warning; ``shared``
#: and ``oversubscribe`` (``--oversubscribe``) change nothing in placer, which never oversubscribes.
_SHARED = {"none": True, "user": True, "mcs": True, "topo": True, "shared": False, "oversubscribe": False}


def _exclusive(raw: dict[str, Any], at: Any, errors: list[Issue], warnings: list[Issue]) -> bool:
    """Whether the job holds whole nodes (``--exclusive``: ``shared`` is ``none``), from ``shared`` (or the
    ``exclusive`` flags of newer Slurm); an unknown value is an ``enum`` error naming the field."""
    exclusive = False
    for field in ("shared", "exclusive"):
        value = raw.get(field)
        words = [slurm_text(v) for v in value] if isinstance(value, list) else [slurm_text(value)]
        for word in (w.lower() for w in words if w):
            if field == "exclusive":  # newer Slurm: ["true"], ["user"], ["mcs"], ["topo"], ["false"]
                if word == "false":
                    continue  # not exclusive: what a job that asked nothing says
                word = "none" if word == "true" else word
            if word not in _SHARED:
                errors.append(issue("enum", at(field), f"{word!r}: not one of {', '.join(_SHARED)}"))
                continue
            exclusive = exclusive or _SHARED[word]
            if word in ("user", "mcs", "topo"):
                why = (
                    f"--exclusive={word}: placer holds the nodes whole (Slurm would share them with the "
                    f"{word}'s own jobs)"
                )
                warnings.append(issue("unsupported", at(field), why))
            elif word in ("shared", "oversubscribe"):
                why = "--oversubscribe: placer never oversubscribes; it places the job as if it had not asked"
                warnings.append(issue("unsupported", at(field), why))
    return exclusive


def _preferred(text: str, path: str, warnings: list[Issue]) -> list[LabelRule]:
    """``--prefer`` (Slurm 22.05+: features to have if possible, in ``-C``'s syntax) as preferred rules, one
    per feature of an ``&`` list (weight 1 each); another form is read past with a warning (a preference
    never keeps a job from running)."""
    if not text:
        return []
    if re.search(r"[\[\]*()!|]", text):
        warnings.append(issue("unsupported", path, f"{text!r}: only a feature or an & list is preferred"))
        return []
    return [LabelRule(key=f, operator=AffinityOperator.EXISTS, weight=1) for f in text.split("&") if f]


def _not_modelled(raw: dict[str, Any], at: Any, errors: list[Issue]) -> None:
    """What a job may ask that placer cannot represent: refused, naming the field, never placed as if it
    had not asked (Slurm would hold it where placer would start it)."""
    if raw.get("contiguous") is True:
        errors.append(issue("unsupported", at("contiguous"), "--contiguous: node adjacency is not modelled"))


def _licenses(value: Any, path: str, errors: list[Issue]) -> dict[str, int]:
    """``--licenses`` (``licenses`` / ``Licenses=``): seats by licence
    (:func:`~placer.topology.importers.slurm_licenses.job_licenses`); an ``|`` list is ``unsupported``, a
    count of 0 ``range``, anything else unreadable ``malformed``, a value that is not text ``type``, each
    naming the field."""
    if value is not None and not isinstance(value, str):
        errors.append(
            issue("type", path, f"a licence request is text (matlab:2,ansys), got {type(value).__name__}")
        )
        return {}
    text = slurm_text(value)
    if not text:
        return {}
    try:
        return job_licenses(text)
    except ValueError as e:
        code = "unsupported" if "|" in text else "range" if "at least 1" in str(e) else "malformed"
        errors.append(issue(code, path, str(e)))
        return {}


def _switches(raw: dict[str, Any], nodes: int, at: Callable[[str], str], warnings: list[Issue]) -> None:
    """``--switches=k@wait`` (``required_switches``, ``maximum_switch_wait_time``; ``scontrol show job``
    prints ``Switches=1@00:05:00``): Slurm holds a multi-node job up to ``wait`` for an allocation under
    ``k`` leaf switches, then starts it anyway. placer keeps a gang under the fewest leaf switches it can
    (``docs/solver.md``, compactness) but does not hold it: said with a warning, never in silence. A
    one-node job is under one switch whatever it asks."""
    k = slurm_number(raw.get("required_switches"))
    if not k or nodes <= 1:
        return
    wait = slurm_number(raw.get("maximum_switch_wait_time"))
    held = f"up to {wait:g} s " if wait else ""
    why = (
        f"--switches={k:g}: Slurm holds the job {held}for {k:g} leaf switch(es); placer places it under the "
        "fewest it can now and does not hold it"
    )
    warnings.append(issue("unsupported", at("required_switches"), why))


def _per_gpu(raw: dict[str, Any], field: str, at: Callable[[str], str], errors: list[Issue]) -> float | None:
    """An amount per GPU (``cpus_per_tres``: ``--cpus-per-gpu``; ``memory_per_tres``: ``--mem-per-gpu``, MB)
    from Slurm's ``gres:gpu:N`` (22.05) or ``gres/gpu=N`` (newer); None when the job gave none. Per another
    TRES is refused, naming the field: placer knows what a job holds per GPU only."""
    text = slurm_text(raw.get(field))
    if not text:
        return None
    m = re.fullmatch(r"gres[:/]gpu[:=](\d+)", text)
    if m is None:
        errors.append(
            issue("unsupported", at(field), f"{text!r}: only an amount per GPU (gres:gpu:N) is read")
        )
        return None
    return float(m[1])


def _gpus_per_job_or_task(
    raw: dict[str, Any], nodes: int, per_node: GpuDemand | None, at: Callable[[str], str], errors: list[Issue]
) -> GpuDemand | None:
    """GPUs per node from ``--gpus`` (``tres_per_job``) or ``--gpus-per-task`` (``tres_per_task``) where
    they fix it: ``--gpus`` on one node; ``--gpus-per-task`` times the tasks per node
    (``--ntasks-per-node``, or every task on one node). Elsewhere Slurm may split them unevenly over the
    nodes, which placer's one demand per node cannot say: refused, naming the field."""
    for field, flag in (("tres_per_job", "--gpus"), ("tres_per_task", "--gpus-per-task")):
        text = slurm_text(raw.get(field))
        if "gpu" not in text:
            if text:  # other generic resources per job or task are refused here, never read past
                _gpus(text, at(field), errors)
            continue
        tasks = int(slurm_number(raw.get("tasks")) or 1)
        per_node_tasks = int(slurm_number(raw.get("tasks_per_node")) or 0) or (tasks if nodes == 1 else 0)
        times = (1 if nodes == 1 else 0) if field == "tres_per_job" else per_node_tasks
        if per_node is not None or not times:
            why = "with --gpus-per-node as well" if per_node is not None else "over several nodes"
            errors.append(
                issue(
                    "unsupported",
                    at(field),
                    f"GPUs per {field.removeprefix('tres_per_')} ({flag}) {why} are not read: Slurm may "
                    "split them unevenly; ask GPUs per node (--gres, --gpus-per-node)"
                    + (" or tasks per node (--ntasks-per-node)" if field == "tres_per_task" else ""),
                )
            )
            continue
        each = _gpus(text, at(field), errors)
        if each is not None:
            per_node = GpuDemand(count=each.count * times, types=each.types)
    return per_node


def _gpus(
    text: str, path: str, errors: list[Issue], extra: dict[str, float] | None = None
) -> GpuDemand | None:
    """``tres_per_node`` -> GPUs per node (22.05 ``gres:gpu:h100:8``, 23.02+ ``gres/gpu:h100=8``), read
    by the node importer's ``Gres`` parser once the ``gres`` prefix and ``=`` spelling are taken off.
    With ``extra`` (per node), other generic resources (``gres:nic:1``, ``gres/shard=2``) go there as
    ``gres/<name>``, which the engines count against each node's ``Gres``; a typed one is refused."""
    demand: GpuDemand | None = None
    for part in (p.strip() for p in text.split(",") if p.strip()):
        entry = re.sub(r"^gres[:/]", "", part).replace("=", ":")
        try:
            (gres,) = parse_gres(entry)
        except ValueError:
            errors.append(issue("malformed", path, f"{part!r} is not gres:name[:type][:count]"))
            continue
        if gres.name != "gpu":
            if gres.name in ("cpu", "mem", "node", "billing"):
                continue
            if extra is None:
                errors.append(
                    issue("unsupported", path, f"generic resource {gres.name!r} is not read here (GPUs only)")
                )
            elif gres.type:
                errors.append(
                    issue(
                        "unsupported", path, f"{part!r}: a typed generic resource other than GPUs is not read"
                    )
                )
            elif gres.count > 0:
                extra[f"gres/{gres.name}"] = extra.get(f"gres/{gres.name}", 0.0) + gres.count
            continue
        if demand is not None:
            errors.append(issue("unsupported", path, "GPUs of several types per node are not read"))
            continue
        types = [canonical_gpu_type(gres.type) or gres.type] if gres.type else []
        demand = GpuDemand(count=gres.count, types=types) if gres.count > 0 else None
    return demand


def _rules(raw: dict[str, Any], at: Any, errors: list[Issue]) -> list[Rule]:
    rules: list[Rule] = []
    partitions = _partition_names(slurm_text(raw.get("partition")))
    if partitions:
        rules.append(_partition_rule(partitions))
    for field, op in (("required_nodes", AffinityOperator.IN), ("excluded_nodes", AffinityOperator.NOT_IN)):
        text = slurm_text(raw.get(field))
        if not text:
            continue
        try:
            hosts = expand_hostlist(text, MAX_HOSTS)
        except (FluxLimitError, FluxSyntaxError) as e:
            errors.append(issue("malformed", at(field), f"not a Slurm hostlist: {e}"[:300]))
            continue
        rules.append(LabelRule(key="hostname", operator=op, values=list(dict.fromkeys(hosts))))
    features = slurm_text(raw.get("features"))
    if features:
        if re.search(r"[\[\]*()!]", features):
            errors.append(
                issue("unsupported", at("features"), f"{features!r}: counts, brackets and ! are not read")
            )
        elif "&" in features and "|" in features:
            errors.append(issue("unsupported", at("features"), f"{features!r}: & and | mixed are not read"))
        else:
            sep = "|" if "|" in features else "&"
            alts = [LabelRule(key=f, operator=AffinityOperator.EXISTS) for f in features.split(sep) if f]
            if sep == "&":
                rules.extend(alts)
            else:
                rules.append(AnyOf(rules=alts))
    return rules


def _singleton(raw: dict[str, Any], text: str) -> list[GroupLimit]:
    """``--dependency=singleton``: one running job of the user's jobs of this name at a time."""
    parts = [re.sub(r"\((?:un)?fulfilled\)$", "", p.strip()) for p in text.split(",")] if text else []
    if "singleton" not in parts:
        return []
    user, name = slurm_text(raw.get("user_name")), slurm_text(raw.get("name"))
    return [GroupLimit(group=singleton_group(user, name), max_running=1)]


def _dependencies(text: str, path: str, errors: list[Issue]) -> list[Dependency]:
    """``afterok:12:13,afterany:14`` (Slurm prints ``(unfulfilled)`` after each; ``?`` joins any-of)."""
    out: list[Dependency] = []
    if not text:
        return out
    if "?" in text:
        errors.append(issue("unsupported", path, "dependencies joined by ? (any of) are not read"))
        return out
    for part in text.split(","):
        part = re.sub(r"\((?:un)?fulfilled\)$", "", part.strip())
        if part == "singleton":  # a group limit, not a dependency on a job (_singleton)
            continue
        kind, _, ids = part.partition(":")
        condition = _DEPENDENCIES.get(kind)
        if condition is None or not ids:
            errors.append(
                issue("unsupported", path, f"dependency {part!r} is not after/afterok/afterany/afternotok")
            )
            continue
        for jid in ids.split(":"):
            if "+" in jid:  # afterok:12+30: 30 minutes after 12 ends; placer's dependencies have no delay
                errors.append(issue("unsupported", path, f"{part!r}: a delay after a dependency is not read"))
                continue
            if re.fullmatch(r"\d+(?:_\d+)?", jid) is None:  # 12, or task 3 of array 12: 12_3
                errors.append(issue("malformed", path, f"{jid!r} is not a job id"))
                continue
            out.append(Dependency(job=jid, condition=condition))
    return out
