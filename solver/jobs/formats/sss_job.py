"""Build one normalized :class:`~placer.solver.jobs.model.Job` from an SSS ``Job`` element (and its defaults).

Why here and not in the entry module: this is where the SSS job model (§3) meets the placer's. The
mapping, decided once:

* **Identity and credentials**: ``JobId`` (else ``JobName``, else ``<source>#<index>``) is the id;
  ``UserId`` (else ``GlobalUserId``) the user; ``ProjectId`` — "Name of the Project or Charge Account",
  Table 3 — is the project, and ``AccountName`` (used by §8.1's examples, in no table) is read as the
  same charge account (both given and different is a ``conflict``); ``GroupId``, the local Unix group,
  is the tenant (the unit that shares a cluster). ``QualityOfService`` is kept in metadata and, when it
  names a placer priority class (``spot``/``on-demand``/``reserved``), sets it.
* **Task groups** (§3, §6): a job is a gang of its task groups; a job without any has one implicit
  group. Amounts stated in a ``TaskGroup`` are per task and multiply by the task count (``TaskCount``,
  else the number of ``Task`` elements, else the group's ``NodeCount`` with one task per node, else 1).
  Amounts stated at job level are the job's totals (the §1.3.3 example asks ``Processors`` 2 for a
  group of two tasks one per node, and ``Delivered`` confirms 2 in all), so they are split evenly over
  the tasks of groups that do not state that amount themselves.
* **Implicit group with NodeCount n > 1**: n tasks, one per node, each with 1/n of the totals (§3: tasks
  are what land on nodes). A NodeCount range keeps its bounds in ``placement.node_count`` and sizes
  tasks at its minimum.
* **TaskDistribution**: ``TasksPerNode`` 1 means one task per node; ``ProcessorsPerTask`` k gives k
  processors to each task that states none; ``Rule`` is a hint kept in metadata; ``TasksPerNode`` > 1
  and ``Geometry`` cannot be expressed: unsupported (awareness policy).
* **Times**: ``WallDuration`` (requested upper bound) -> ``duration_s``; ``SubmissionTime`` ->
  ``submit_time``; ``EligibleTime`` or a requested ``StartTime`` -> ``not_before``. ``Restartable`` ->
  ``preemption.preemptible``; ``Checkpointable`` -> ``preemption.checkpoint_on_preempt``.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any
from xml.etree.ElementTree import Element

from pydantic import ValidationError

from placer.solver.jobs.formats.sss_context import Ctx, raw_xml, text
from placer.solver.jobs.formats.sss_elements import SCALARS, PropertySet, check_value
from placer.solver.jobs.formats.sss_expr import parse_sequence
from placer.solver.jobs.formats.sss_properties import MAX_ALTERNATIVES, Collector
from placer.solver.jobs.formats.sss_values import parse_datetime, parse_integer
from placer.solver.jobs.model import (
    CountRange,
    Dependency,
    DependencyCondition,
    GpuDemand,
    Job,
    JobAlternative,
    Placement,
    Preemption,
    PriorityClass,
    ReadResult,
    ReservationRef,
    TaskGroup,
    TpuDemand,
)

__all__ = ["DEPENDENCY_TYPES", "EXTRA_NAMES", "FIELDS", "NOT_RESOURCES", "build_job", "collect"]

#: §5.1.6 dependency types and the model's conditions.
DEPENDENCY_TYPES: dict[str, DependencyCondition] = {
    "OnSuccess": DependencyCondition.SUCCESS,
    "OnFailure": DependencyCondition.FAILURE,
    "OnExit": DependencyCondition.EXIT,
}

#: Where each amount goes in a :class:`TaskGroup` (``extra`` for the rest, under its key).
FIELDS: dict[str, str] = {"Processors": "cpu_cores", "Memory": "memory_gb", "Disk": "storage_gb"}
EXTRA_NAMES: dict[str, str] = {"Swap": "swap_gb", "Network": "network"}
#: Amounts that are not per-task resources.
NOT_RESOURCES: frozenset[str] = frozenset({"NodeCount", "WallDuration"})


def collect(ps: PropertySet, ctx: Ctx, *, scalars: bool, choose: list[int] | None = None) -> Collector:
    """Run every placement property and requested expression of ``ps`` through one :class:`Collector`.

    >>> from xml.etree.ElementTree import fromstring
    >>> from placer.solver.jobs.formats.sss_context import Ctx, parent_map, path_map
    >>> el = fromstring('<Job><Requested><Processors op="GE">8</Processors></Requested></Job>')
    >>> ctx = Ctx(path_map(el, "Job[0]"), parent_map(el), default_policy="Reject", source="s")
    >>> collect(PropertySet.scan(el, ctx), ctx, scalars=True).demand("Processors")
    8.0
    """
    col = Collector(ctx, choose)
    if scalars:
        for tag in (
            "UserId",
            "GroupId",
            "ProjectId",
            "AccountName",
            "GlobalUserId",
            "Queue",
            "QualityOfService",
            "MachineName",
            "ReservationId",
            "JobName",
            "Type",
        ):
            el = ps.scalars.get(tag)
            if el is not None:
                col.set_scalar(tag, text(el), el)
    if ps.placement:
        col.collect(parse_sequence(ps.placement, ctx))
    for seq in ps.requested:
        col.collect(parse_sequence(seq, ctx))
    col.resolve()
    return col


def _count_range(col: Collector) -> CountRange | None:
    iv = col.amounts.get("NodeCount")
    if iv is None or iv.empty:
        return None
    lo = int(iv.demand("NodeCount"))
    hi = None if iv.hi is None else int(iv.hi)
    return CountRange(min=lo, max=hi)


class _Group:
    """A task group under construction: per-task amounts, count, and its own rules."""

    def __init__(self, name: str, col: Collector | None, count: int, el: Element | None):
        self.name, self.col, self.count, self.el = name, col, count, el
        self.per_task: dict[str, float] = {}
        self.types: dict[str, list[str]] = {}
        self.one_per_node = False
        self.count_range: CountRange | None = None
        self.deps: list[Dependency] = []
        if col is not None:
            for key in col.requested_keys():
                if key not in NOT_RESOURCES:
                    v = col.demand(key)
                    if v is not None:
                        self.per_task[key] = v
            self.types = dict(col.types)


def build_job(
    job_el: Element,
    defaults: PropertySet | None,
    ctx: Ctx,
    *,
    index: int,
    source: str,
    group_meta: dict[str, Any],
    workflow_id: str | None = None,
) -> ReadResult:
    """Read one job; never raises for bad input (model validation errors become issues).

    >>> from xml.etree.ElementTree import fromstring
    >>> from placer.solver.jobs.formats.sss_context import Ctx, parent_map, path_map
    >>> el = fromstring("<Job><JobId>a</JobId><Resource name='GPU'>4</Resource></Job>")
    >>> ctx = Ctx(path_map(el, "Job[0]"), parent_map(el), default_policy="Reject", source="s")
    >>> build_job(el, None, ctx, index=0, source="s", group_meta={}).job.total_gpus
    4
    """
    ps = PropertySet.scan(job_el, ctx)
    if defaults is not None:
        ps = ps.inherit(defaults)
    jid = _first_text(ps, "JobId", "JobName") or f"{source}#{index}"
    col = collect(ps, ctx, scalars=True)
    meta: dict[str, Any] = {**group_meta, **ps.metadata(ctx)}
    if col.meta:
        meta["requested"] = col.meta
    groups = _task_groups(ps, col, ctx, meta)
    node_count = _count_range(col)
    dependencies = _dependencies(ps, ctx)
    for g in groups:
        dependencies += g.deps  # a task group's dependency holds the whole gang back
    tasks = _split_totals(groups, col, ctx, node_count)
    alternatives = _alternatives(job_el, ps, col, ctx, meta) if col.shapes else []
    fields = _job_fields(ps, col, ctx, meta)
    if "duration_s" not in fields:  # a gang runs as long as its longest group
        group_walls = [
            w for g in groups if g.col is not None and (w := g.col.demand("WallDuration")) is not None
        ]
        if group_walls:
            fields["duration_s"] = max(group_walls)
    if col.dedicated:
        meta["dedicated"] = sorted(col.dedicated)
    if ctx.errors:
        return ReadResult(id=jid, ok=False, errors=ctx.errors, warnings=ctx.warnings, source=source)
    try:
        job = Job(
            id=jid,
            source_format="sss",
            tasks=[_task_group(g, ctx) for g in tasks],
            dependencies=_dedupe(dependencies),
            placement=Placement(required=col.required, preferred=col.preferred, node_count=node_count),
            alternatives=alternatives,
            metadata={"sss": meta},
            unknown=dict(ctx.unknown),
            envelope=raw_xml(job_el),
            workflow_id=workflow_id,
            **fields,
        )
    except ValidationError as e:
        for err in e.errors()[:20]:
            loc = ".".join(str(x) for x in err["loc"])
            ctx.fail("range", f"{ctx.path(job_el)}.{loc}" if loc else ctx.path(job_el), str(err["msg"])[:300])
        return ReadResult(id=jid, ok=False, errors=ctx.errors, warnings=ctx.warnings, source=source)
    if ctx.errors:
        return ReadResult(id=jid, ok=False, errors=ctx.errors, warnings=ctx.warnings, source=source)
    return ReadResult(id=jid, ok=True, job=job, warnings=ctx.warnings, source=source)


def _alternatives(
    job_el: Element, ps: PropertySet, col: Collector, ctx: Ctx, meta: dict[str, Any]
) -> list[JobAlternative]:
    """The job's other node shapes: one per combination of the alternatives of its ``Or`` expressions
    mixing node tests and amounts (the first combination is the job's own shape), each read again with
    that choice (quietly: the first reading already reported every problem). Recorded in
    ``metadata["sss"]["shapes"]``."""
    meta["shapes"] = [{"expression": e, "alternatives": alts} for e, alts in col.shapes]
    combos = list(itertools.product(*(range(len(alts)) for _, alts in col.shapes)))
    if len(combos) > MAX_ALTERNATIVES:
        ctx.fail(
            "limit", ctx.path(job_el), f"the Or expressions give more than {MAX_ALTERNATIVES} node shapes"
        )
        return []
    out: list[JobAlternative] = []
    quiet = _Quiet(ctx)
    for combo in combos[1:]:
        c = collect(ps, quiet, scalars=True, choose=list(combo))
        groups = _split_totals(_task_groups(ps, c, quiet, {}), c, quiet, _count_range(c))
        label = "; ".join(alts[k] for (_, alts), k in zip(col.shapes, combo, strict=True))
        out.append(
            JobAlternative(label=label, tasks=[_task_group(g, quiet) for g in groups], required=c.required)
        )
    return out


class _Quiet(Ctx):
    """A context that records nothing: for re-scanning an element already checked."""

    def __init__(self, ctx: Ctx):
        super().__init__(ctx.paths, ctx.parents, default_policy="Ignore", source=ctx.source)


def _first_text(ps: PropertySet, *tags: str) -> str | None:
    for tag in tags:
        el = ps.scalars.get(tag)
        if el is not None and text(el):
            return text(el)
    return None


def _task_groups(ps: PropertySet, job_col: Collector, ctx: Ctx, meta: dict[str, Any]) -> list[_Group]:
    """The job's task groups with per-task amounts and counts (an implicit one when none is given)."""
    job_tpn = _distribution(ps.distribution, ctx, meta, "task_distribution")
    if not ps.task_groups:
        return (
            [_Group("default", None, 1, None)]
            if not _has_tasks(ps)
            else [_explicit(None, ps, ctx, meta, job_tpn, 0)]
        )
    tg_defaults = (
        PropertySet.scan(ps.task_group_defaults, ctx) if ps.task_group_defaults is not None else None
    )
    out: list[_Group] = []
    for i, tg in enumerate(ps.task_groups):
        tps = PropertySet.scan(tg, ctx)
        if tg_defaults is not None:
            tps = tps.inherit(tg_defaults)
        out.append(_explicit(tg, tps, ctx, meta, job_tpn, i))
    return out


def _has_tasks(ps: PropertySet) -> bool:
    return bool(ps.tasks) or "TaskCount" in ps.scalars


def _explicit(
    tg: Element | None, tps: PropertySet, ctx: Ctx, meta: dict[str, Any], job_tpn: dict[str, Any], i: int
) -> _Group:
    name = _first_text(tps, "TaskGroupName", "TaskGroupId") or f"group{i}"
    col = collect(tps, ctx, scalars=False) if tg is not None else None
    if col is not None and col.shapes and tg is not None:
        ctx.unsupported(tg, "alternative node shapes (Or of node tests and amounts) inside a TaskGroup")
    gmeta: dict[str, Any] = {}
    if tg is not None:
        gmeta.update(tps.metadata(ctx))
        if col is not None and col.meta:
            gmeta["requested"] = col.meta
        if col is not None and col.scalars:
            gmeta["properties"] = {k: v for k, (v, _) in col.scalars.items()}
    dist = _distribution(tps.distribution, ctx, gmeta, "task_distribution") if tg is not None else {}
    dist = dist or job_tpn
    tasks = _tasks(tps, ctx, gmeta)
    count_el = tps.scalars.get("TaskCount")
    task_count: int | None = None
    if count_el is not None:
        task_count, _ = parse_integer(text(count_el))  # type error reported by the scan
        if task_count is not None and task_count < 1:
            ctx.fail("range", ctx.path(count_el), f"TaskCount must be >= 1, got {task_count}")
            task_count = 1
        elif task_count is not None and tasks > task_count:
            ctx.fail("conflict", ctx.path(count_el), f"TaskCount {task_count} but {tasks} Task elements")
    nodes = _count_range(col) if col is not None else None
    g = _Group(name, col, task_count or tasks or 1, tg)
    if tg is not None:
        g.deps = _dependencies(tps, ctx)
    if nodes is not None:
        gmeta["node_count"] = nodes.model_dump(exclude_defaults=True)
        if task_count is None and not tasks:
            g.count, g.one_per_node = nodes.min, True
            if nodes.max != nodes.min:
                g.count_range = nodes
        elif nodes.min == nodes.max == g.count:
            g.one_per_node = True
        elif nodes.min != nodes.max or nodes.min != 1:
            where = (col.where.get("NodeCount") if col is not None else None) or tg
            if where is not None:
                ctx.unsupported(
                    where,
                    f"{g.count} tasks on NodeCount {nodes.min}"
                    f"{'' if nodes.max == nodes.min else '..' + str(nodes.max)} nodes: the placer "
                    "cannot fix how many nodes a group's tasks share",
                )
    tpn = dist.get("TasksPerNode")
    if tpn == 1:
        g.one_per_node = True
    elif tpn is not None and g.count > 1:
        ctx.unsupported(
            dist["element"],
            f"TasksPerNode {tpn} for {g.count} tasks: the placer cannot pack exactly {tpn} tasks per node",
        )
    ppt = dist.get("ProcessorsPerTask")
    if ppt is not None and "Processors" not in g.per_task:
        g.per_task["Processors"] = float(ppt)
    if gmeta:
        meta.setdefault("task_groups", {})[name] = gmeta
    return g


def _tasks(tps: PropertySet, ctx: Ctx, gmeta: dict[str, Any]) -> int:
    """Number of Task elements; their own properties are informational unless they change the demand,
    which the placer cannot express per task (unsupported)."""
    defaults = PropertySet.scan(tps.task_defaults, ctx) if tps.task_defaults is not None else None
    infos: list[dict[str, str]] = []
    for t in tps.tasks:
        ts = PropertySet.scan(t, ctx)
        if defaults is not None:
            ts = ts.inherit(defaults)
        if ts.placement or ts.requested or ts.task_groups or ts.tasks:
            ctx.unsupported(
                t,
                "a Task with its own resources or node properties is not supported; state them "
                "on its TaskGroup",
            )
        infos.append(dict(ts.info))
    if any(infos):
        gmeta["tasks"] = infos
    return len(tps.tasks)


def _distribution(el: Element | None, ctx: Ctx, meta: dict[str, Any], key: str) -> dict[str, Any]:
    """§5.1.5 TaskDistribution: the parts the placer can honour (see the module docstring)."""
    if el is None:
        return {}
    kind, value = el.attrib.get("type"), text(el)
    meta[key] = {"type": kind, "value": value}
    if kind in ("TasksPerNode", "ProcessorsPerTask"):
        n, err = parse_integer(value)
        if err or n is None:
            ctx.fail("type", ctx.path(el), err or "must be an integer")
            return {}
        if n < 1:
            ctx.fail("range", ctx.path(el), f"must be >= 1, got {n}")
            return {}
        return {kind: n, "element": el}
    if kind == "Geometry":
        ctx.unsupported(el, "a TaskDistribution Geometry cannot be expressed to the placer")
    elif kind not in (None, "Rule"):
        ctx.unsupported(el, f"TaskDistribution type {kind!r} is not supported", attr="type")
    return {}


def _split_totals(groups: list[_Group], col: Collector, ctx: Ctx, nodes: CountRange | None) -> list[_Group]:
    """Spread job-level totals over the tasks that do not state the amount themselves."""
    implicit = len(groups) == 1 and groups[0].el is None
    if implicit and groups[0].count == 1 and nodes is not None and nodes.min > 1:
        g = groups[0]
        g.count, g.one_per_node = nodes.min, True
        if nodes.max != nodes.min:
            g.count_range = nodes
    for key in col.requested_keys():
        if key in NOT_RESOURCES:
            continue
        total = col.demand(key)
        if total is None:
            continue
        stated = [g for g in groups if key in g.per_task]
        free = [g for g in groups if key not in g.per_task]
        used = sum(g.per_task[key] * g.count for g in stated)
        where = col.where.get(key)
        path = ctx.path(where) if where is not None else "Job"
        if not free:
            if used > total + 1e-9:
                ctx.fail(
                    "conflict", path, f"job total {key} {total:g} is less than its task groups' {used:g}"
                )
            continue
        tasks = sum(g.count for g in free)
        remaining = total - used
        if remaining < -1e-9:
            ctx.fail("conflict", path, f"job total {key} {total:g} is less than its task groups' {used:g}")
            continue
        share = remaining / tasks
        if (
            key in ("GPU", "TPU")
            and remaining > 0
            and not float(share).is_integer()
            and not (key == "GPU" and "GPU" in col.shares and tasks == 1)
        ):
            ctx.fail("conflict", path, f"{remaining:g} {key}s cannot be split evenly over {tasks} tasks")
            continue
        for g in free:
            g.per_task[key] = share
            if key in col.types:
                g.types.setdefault(key, col.types[key])
            if key == "GPU" and "GPU" in col.shares and g.col is None:
                g.col = col
    return groups


def _task_group(g: _Group, ctx: Ctx) -> TaskGroup:
    extra: dict[str, float] = {}
    gpu: GpuDemand | None = None
    tpu: TpuDemand | None = None
    for key, v in g.per_task.items():
        if key in FIELDS:
            continue
        if key == "GPU":
            share = g.col.shares.get("GPU") if g.col is not None else None
            gpu = GpuDemand(count=1 if share else int(v), types=g.types.get("GPU", []), share_milli=share)
        elif key == "TPU":
            types = g.types.get("TPU", [])
            tpu = TpuDemand(chips=int(v), type=types[0] if len(types) == 1 else None)
        else:
            extra[EXTRA_NAMES.get(key, key.removeprefix("Resource:"))] = v
    own = g.col if g.col is not None and g.el is not None else None
    return TaskGroup(
        name=g.name,
        count=g.count,
        count_range=g.count_range,
        cpu_cores=g.per_task.get("Processors", 0),
        memory_gb=g.per_task.get("Memory", 0),
        storage_gb=g.per_task.get("Disk", 0),
        gpu=gpu if gpu is None or gpu.count > 0 or gpu.share_milli else None,
        tpu=tpu if tpu is None or (tpu.chips or 0) > 0 else None,
        extra=extra,
        one_per_node=g.one_per_node,
        required=list(own.required) if own is not None else [],
        preferred=list(own.preferred) if own is not None else [],
    )


def _dependencies(ps: PropertySet, ctx: Ctx) -> list[Dependency]:
    """§5.1.6: the element's text is the JobId depended upon; ``type`` defaults to OnSuccess."""
    out: list[Dependency] = []
    for el in ps.dependencies:
        target = text(el)
        kind = el.attrib.get("type", "OnSuccess")
        if not target:
            ctx.fail("required", ctx.path(el), "a Dependency must contain the JobId it depends on")
            continue
        if kind not in DEPENDENCY_TYPES:
            ctx.unsupported(
                el, f"Dependency type {kind!r} is not supported (OnSuccess, OnFailure, OnExit)", attr="type"
            )
            continue
        code: int | None = None
        if "code" in el.attrib:
            if kind != "OnExit":
                ctx.fail(
                    "conflict", f"{ctx.path(el)}@code", "a code attribute is only allowed with type OnExit"
                )
                continue
            code, err = parse_integer(el.attrib["code"])
            if err:
                ctx.fail("type", f"{ctx.path(el)}@code", err)
                continue
        out.append(Dependency(job=target, condition=DEPENDENCY_TYPES[kind], scheme=kind, exit_code=code))
    return out


def _dedupe(deps: list[Dependency]) -> list[Dependency]:
    return list({(d.job, d.condition, d.exit_code): d for d in deps}.values())


def _job_fields(ps: PropertySet, col: Collector, ctx: Ctx, meta: dict[str, Any]) -> dict[str, Any]:
    """The job's scalar attributes from simple elements and requested credentials."""
    s = {k: v for k, (v, _) in col.scalars.items()}
    out: dict[str, Any] = {}
    out["name"] = s.get("JobName")
    out["user"] = s.get("UserId") or s.get("GlobalUserId")
    out["tenant"] = s.get("GroupId")
    project, account = s.get("ProjectId"), s.get("AccountName")
    if project and account and project != account:
        ctx.fail(
            "conflict",
            ctx.path(col.scalars["AccountName"][1]),
            f"AccountName {account!r} contradicts ProjectId {project!r}: both name the charge account",
        )
    out["project"] = project or account
    out["queue"] = s.get("Queue")
    out["type"] = s.get("Type")
    qos = s.get("QualityOfService")
    if qos:
        meta["qos"] = qos
        if qos.lower() in {p.value for p in PriorityClass}:
            out["priority_class"] = PriorityClass(qos.lower())
    if s.get("MachineName"):
        meta["machine"] = s["MachineName"]
    if s.get("GlobalUserId"):
        meta["global_user"] = s["GlobalUserId"]
    if s.get("ReservationId"):
        out["reservation"] = ReservationRef(id=s["ReservationId"])
    typed = {tag: check_value(_Quiet(ctx), el, SCALARS[tag]) for tag, el in ps.scalars.items()}
    if typed.get("Priority") is not None:
        out["priority"] = typed["Priority"]
    submit = typed.get("SubmissionTime")
    if isinstance(submit, datetime):
        out["submit_time"] = submit
    start = None
    if "StartTime" in col.scalars:
        start, err = parse_datetime(s["StartTime"])
        if err:
            ctx.fail("type", ctx.path(col.scalars["StartTime"][1]), err)
    eligible = typed.get("EligibleTime")
    not_before = start or (eligible if isinstance(eligible, datetime) else None)
    if not_before is not None:
        out["not_before"] = not_before
    if "EndTime" in col.scalars:
        meta["requested_end"] = s["EndTime"]
    duration = col.demand("WallDuration")
    if duration is not None:
        out["duration_s"] = duration
    restartable, checkpointable = typed.get("Restartable"), typed.get("Checkpointable")
    if isinstance(restartable, bool) or checkpointable is True:
        out["preemption"] = Preemption(
            preemptible=restartable if isinstance(restartable, bool) else None,
            checkpoint_on_preempt=checkpointable is True,
        )
    if isinstance(typed.get("Suspendable"), bool):
        meta["suspendable"] = typed["Suspendable"]
    return {k: v for k, v in out.items() if v is not None}
