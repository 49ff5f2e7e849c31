"""Flux jobspec reader: RFC 14 canonical jobspecs and RFC 25 version 1, with RFC 26 dependencies and RFC 31
constraints, mapped to the normalized :class:`~placer.solver.jobs.model.Job`.

Why: Flux describes a job as a resource *graph* with task slots; the placer needs gang task groups. The
reading is split by concern, each module documenting its rules and mapping:

* :mod:`~placer.solver.jobs.formats.flux_ids` - RFC 22 idsets, RFC 29 hostlists, RFC 45 range strings;
* :mod:`~placer.solver.jobs.formats.flux_count` - the three forms of ``count`` and range arithmetic;
* :mod:`~placer.solver.jobs.formats.flux_resources` - the resource vertex tree;
* :mod:`~placer.solver.jobs.formats.flux_slots` - slots to task groups (with the table of RFC use cases);
* :mod:`~placer.solver.jobs.formats.flux_v1` - the RFC 25 restrictions for ``version: 1``;
* :mod:`~placer.solver.jobs.formats.flux_tasks` - ``tasks``;
* :mod:`~placer.solver.jobs.formats.flux_attributes` - ``attributes.system`` / ``user``;
* :mod:`~placer.solver.jobs.formats.flux_constraints`, :mod:`~placer.solver.jobs.formats.flux_dependencies` -
  RFC 31, 26.

The document: an object with ``version`` (integer), ``resources``, ``tasks`` and ``attributes`` (RFC 14
"MUST contain"; a missing one is ``required``). ``version: 1`` selects the RFC 25 rules and
``source_format`` ``"flux-rfc25"``; any other integer is canonical, ``"flux-rfc14"``. Top-level keys
beyond these four are kept in ``Job.unknown`` (with an ``unsupported`` warning); the whole document is
``Job.envelope``.

``version: 1`` is ambiguous between the RFCs: RFC 25 defines version 1 as its restricted language, yet
RFC 14 presents ``spec_14/example2.yaml`` ("running one task on each of four nodes", ``slot > node``) as a
canonical jobspec with ``version: 1``, and the canonical schema accepts any integer version. So a
``version: 1`` document that breaks an RFC 25 rule but meets every RFC 14 rule is read as canonical
(``"flux-rfc14"``), each RFC 25 rule it breaks kept as a warning (same code and path, the message saying
"not a version 1 jobspec (RFC 25)"), instead of refusing a jobspec an RFC itself shows. A ``version: 1``
document that is invalid under both gets the RFC 25 errors (the version it claims).

Job id: Flux assigns job ids at submission, so a jobspec has none. The id is
``attributes.system.job.name`` when the jobspec names itself (so RFC 26 ``after*`` dependencies between
the jobspecs of one batch can refer to each other by name; two jobspecs with one name are then a batch
``duplicate``), else ``<source>#0`` (one jobspec per document: index 0).

Accelerator: ``gpu`` when any slot asks for a GPU, else ``cpu``.

How the RFC example files fare (tests read them from ``shared/specs/flux-examples`` and check each
verdict against the ``schema.json`` beside it):

* accepted: every spec_14 use case (1.1-1.8, 2.1-2.9), ``example1`` and ``example2``; every spec_25
  file; every spec_26 dependency list (through
  :func:`~placer.solver.jobs.formats.flux_dependencies.read_dependencies`; given to ``placer validate``
  alone, a
  dependency list is refused as "not a job", which it is not);
* ``spec_14/example2.yaml`` is accepted as canonical (``"flux-rfc14"``) with two warnings: it says
  ``version: 1`` but its graph is ``slot > node``, which is not one of RFC 25's four V1 graphs and lacks
  the ``core`` RFC 25 requires (``unsupported`` at ``resources[0].with[0]``, ``required`` at
  ``resources[0].with``). The spec_14 schema beside it accepts it; the spec_25 schema does not;
* rejected: none.

Where the reader and the schemas differ on purpose (RFC text stricter or more precise than a schema):
a slot without ``with`` edges, ``max < min``, ``*``/``^`` with operand 1, ``^`` with min 1, an empty
``tasks`` list, a relative ``cwd``, repeated labels, a slot inside a slot and unknown memory units are
rejected although the schema accepts them; strings that are both an idset and a range (``"4"``),
``after*`` dependency objects without ``type``/``scope`` and ``exclusive`` on a V1 ``node`` are accepted
although a schema rejects them (see the modules for each).

>>> from placer.solver.jobs.options import ReadOptions
>>> doc = {"version": 1, "attributes": {"system": {"duration": 3600}},
...        "resources": [{"type": "slot", "count": 10, "label": "default",
...                       "with": [{"type": "core", "count": 2}, {"type": "gpu", "count": 1}]}],
...        "tasks": [{"command": ["myapp"], "slot": "default", "count": {"per_slot": 1}}]}
>>> [r] = read(doc, source="uc23.yaml", options=ReadOptions())
>>> r.ok, r.id, r.job.source_format, r.job.total_gpus, r.job.tasks[0].cpu_cores, r.job.accelerator.value
(True, 'uc23.yaml#0', 'flux-rfc25', 10, 2.0, 'gpu')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields
from placer.solver.jobs.formats.flux_attributes import Attributes, read_attributes
from placer.solver.jobs.formats.flux_resources import Vertex, read_resources
from placer.solver.jobs.formats.flux_slots import Plan, SlotGroup, plan_groups
from placer.solver.jobs.formats.flux_tasks import SlotInfo, read_tasks
from placer.solver.jobs.formats.flux_v1 import check_resources
from placer.solver.jobs.model import Accelerator, Job, Placement, Preemption, ReadResult
from placer.solver.jobs.options import ReadOptions

__all__ = ["TOP_KEYS", "read"]

TOP_KEYS: tuple[str, ...] = ("version", "resources", "tasks", "attributes")


def _slot_info(g: SlotGroup) -> SlotInfo:
    """Resource types per slot (for ``per_resource`` tasks) and the node count (for the V1 total rule)."""
    per_type: dict[str, int] = {}

    def visit(v: Vertex, m: int) -> None:
        m *= v.count.min
        per_type[v.type] = per_type.get(v.type, 0) + m
        for c in v.children:
            visit(c, m)

    for c in g.slot.children:
        visit(c, 1)
    nodes = None if g.nodes is None else g.nodes.min
    return SlotInfo(slots_total=g.slots_total, per_slot_types=per_type, nodes=nodes)


def _resources(doc: Mapping[str, Any], v1: bool, errors: list[Issue], warnings: list[Issue]) -> Plan | None:
    if "resources" not in doc:
        errors.append(issue("required", "resources", "is required"))
        return None
    tree = read_resources(doc["resources"], "resources", errors)
    if tree is None:
        return None
    if v1:
        v1_issues = check_resources(tree)
        if v1_issues:
            errors.extend(v1_issues)
            return None
    start = len(errors)
    plan = plan_groups(tree, errors)
    if len(errors) > start:
        return None
    if not plan.groups:
        errors.append(issue("required", "resources", "must define at least one task slot (type: slot)"))
        return None
    for path in plan.unslotted:
        warnings.append(issue("unsupported", path, "resources outside every task slot are not placed"))
    return plan


def _metadata(
    plan: Plan, tasks: list[dict[str, Any]], attrs: Attributes, version: int | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"flux_version": version, **attrs.metadata, "flux_tasks": tasks}
    meta["flux_slots"] = {
        g.label: {
            "slots": g.slots_total,
            "slots_per_replica": g.slots_per_replica,
            "count_exact": g.exact,
            "within": g.within,
        }
        for g in plan.groups
    }
    ids = {v.path: v.id for g in plan.groups for v in g.slot.walk() if v.id is not None}
    if ids:
        meta["flux_resource_ids"] = ids
    if plan.unslotted:
        meta["flux_unslotted"] = plan.unslotted
    return meta


def _build(
    doc: Mapping[str, Any],
    source: str,
    errors: list[Issue],
    warnings: list[Issue],
    *,
    canonical: bool = False,
) -> Job | None:
    """The job of ``doc``, or None with ``errors`` filled; ``canonical`` applies the RFC 14 rules even to a
    ``version: 1`` document (the fallback of :func:`read`)."""
    f = Fields(doc, "", errors)
    version = f.integer("version", required=True)
    v1 = version == 1 and not canonical
    plan = _resources(doc, v1, errors, warnings)
    if "attributes" not in doc:
        errors.append(issue("required", "attributes", "is required (it may be null)"))
    attrs = read_attributes(doc.get("attributes"), v1, errors, warnings)
    slots = None if plan is None else {g.label: _slot_info(g) for g in plan.groups}
    tasks: list[dict[str, Any]] = []
    if "tasks" not in doc:
        errors.append(issue("required", "tasks", "is required"))
    else:
        tasks = read_tasks(doc["tasks"], slots, v1, errors, warnings)
    unknown = {str(k): v for k, v in doc.items() if k not in TOP_KEYS}
    for k in unknown:
        warnings.append(issue("unsupported", k, "not a jobspec key; kept but not used"))
    if errors or plan is None:
        return None
    groups = [g.task_group for g in plan.groups]
    return Job(
        id=attrs.name or f"{source}#0",
        name=attrs.name,
        source_format="flux-rfc25" if v1 else "flux-rfc14",
        queue=attrs.queue,
        tenant=attrs.tenant,
        project=attrs.project,
        not_before=attrs.not_before,
        duration_s=attrs.duration_s,
        dependencies=attrs.dependencies,
        accelerator=Accelerator.GPU if any(g.gpu is not None for g in groups) else Accelerator.CPU,
        tasks=groups,
        placement=Placement(
            required=attrs.rules, node_count=plan.node_count, topology_scope=plan.topology_scope
        ),
        preemption=Preemption(preemptible=attrs.preemptible),
        labels=attrs.labels,
        metadata=_metadata(plan, tasks, attrs, version),
        unknown={**unknown, **attrs.unknown},
        envelope=doc,
    )


def _job_name(doc: Mapping[str, Any]) -> str | None:
    """The self-given name, looked up defensively so that even a broken jobspec's result has its id."""
    attrs = doc.get("attributes")
    system = attrs.get("system") if isinstance(attrs, Mapping) else None
    job = system.get("job") if isinstance(system, Mapping) else None
    name = job.get("name") if isinstance(job, Mapping) else None
    return name if isinstance(name, str) and name.strip() else None


def read(doc: Any, *, source: str, options: ReadOptions) -> list[ReadResult]:
    """Read one Flux jobspec (a parsed YAML/JSON object) into one :class:`ReadResult`; never raises for
    bad input. ``options`` is accepted for the reader contract; queue limits and bounds are applied by the
    load pipeline's guards."""
    fallback = f"{source}#0"
    if not isinstance(doc, Mapping):
        err = issue("malformed", source or "<input>", "a Flux jobspec is an object (a YAML/JSON mapping)")
        return [ReadResult(id=fallback, ok=False, errors=[err], source=source)]
    rid = _job_name(doc) or fallback
    errors: list[Issue] = []
    warnings: list[Issue] = []
    job = _attempt(doc, source, errors, warnings, canonical=False)
    if job is None and doc.get("version") == 1 and type(doc.get("version")) is int:
        # Not RFC 25 valid: maybe a canonical jobspec saying version 1, as RFC 14's own example2 does.
        canonical_warnings: list[Issue] = []
        canonical_job = _attempt(doc, source, [], canonical_warnings, canonical=True)
        if canonical_job is not None:
            not_v1 = [
                issue(
                    i.code,
                    i.path,
                    f"not a version 1 jobspec (RFC 25): {i.message}; read under the RFC 14 canonical rules",
                )
                for i in errors
            ]
            job, errors, warnings = canonical_job, [], [*not_v1, *canonical_warnings]
    if job is None:
        return [ReadResult(id=rid, ok=False, errors=errors, warnings=warnings, source=source)]
    return [ReadResult(id=job.id, ok=True, job=job, warnings=warnings, source=source)]


def _attempt(
    doc: Mapping[str, Any], source: str, errors: list[Issue], warnings: list[Issue], *, canonical: bool
) -> Job | None:
    """:func:`_build`, with a model rule the reader failed to pre-check turned into an issue, not a crash."""
    try:
        return _build(doc, source, errors, warnings, canonical=canonical)
    except ValidationError as e:
        errors.append(
            issue("malformed", source or "<input>", f"jobspec does not fit the job model: {e}"[:500])
        )
        return None
