"""Reader for the Scalable Systems Software (SSS) XML job object: ``Job`` and ``JobGroup`` documents.

Why this shape: the SSS document is XML text, so this reader owns its parsing (through
:func:`placer.solver.jobs.parse.parse_xml`: DTDs, entities and external references refused). When the parser
rejects a document, :mod:`~placer.solver.jobs.formats.sss_diagnose` says what to fix (curly quotes, mismatched
tags) before the parser's own message. A well-formed document yields one
:class:`~placer.solver.jobs.model.ReadResult` per ``Job``; a ``JobGroup``'s ``JobDefaults`` apply to each of
its
jobs unless the job overrides them (§4-5), and its ``JobGroupId`` becomes the jobs' ``workflow_id``. A
document wrapped in an SSSRMAP ``Request``/``Response`` ``Data`` element is read from inside the
``Data``. The mapping decisions are documented in :mod:`~placer.solver.jobs.formats.sss_job` (jobs, task
groups, credentials), :mod:`~placer.solver.jobs.formats.sss_properties` (requested properties, ops,
alternatives, preferences, patterns) and :mod:`~placer.solver.jobs.formats.sss_values` (units, durations).

The awareness policy (§9) defaults to :attr:`ReadOptions.sss_awareness` (``Reject`` unless set) and is
overridden by any element's ``awarenessPolicy`` attribute for itself and what it contains.

>>> from placer.solver.jobs.options import ReadOptions
>>> xml = "<Job><JobId>PBS.1</JobId><Processors>16</Processors><Memory units='GB'>2</Memory></Job>"
>>> r = read(xml, source="x.xml", options=ReadOptions())[0]
>>> r.ok, r.job.id, r.job.tasks[0].cpu_cores, r.job.tasks[0].memory_gb
(True, 'PBS.1', 16.0, 2.0)
>>> read("<Job><JobId a=”x”>1</JobId></Job>", source="q.xml", options=ReadOptions())[0].errors[0].message
'curly quote U+201D (”) used as attribute quote at line 1 column 15 — replace with a straight quote (")'
"""

from __future__ import annotations

from typing import Any
from xml.etree.ElementTree import Element

from placer.solver.jobs.errors import Issue, JobValidationError, issue
from placer.solver.jobs.formats.sss_context import POLICIES, Ctx, children, local, parent_map, path_map, text
from placer.solver.jobs.formats.sss_diagnose import diagnose
from placer.solver.jobs.formats.sss_elements import PropertySet, check_value
from placer.solver.jobs.formats.sss_job import build_job
from placer.solver.jobs.model import ReadResult
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.parse import parse_xml

__all__ = ["ENVELOPES", "GROUP_PROPERTIES", "SOURCE_FORMAT", "parse", "read"]

#: The value of ``Job.source_format`` for jobs read here.
SOURCE_FORMAT = "sss"
#: Table 1 JobGroup properties (all informational to the placer but ``JobGroupId``), with their types.
GROUP_PROPERTIES: dict[str, str] = {
    "JobGroupId": "String",
    "JobGroupName": "String",
    "JobGroupState": "String",
    "CreationTime": "DateTime",
    "Description": "String",
}
#: SSSRMAP envelope elements whose ``Data`` child carries job objects.
ENVELOPES: frozenset[str] = frozenset({"Request", "Response", "Data"})


def _failed(source: str, errors: list[Issue]) -> list[ReadResult]:
    return [ReadResult(id=source or "<input>", ok=False, errors=errors, source=source)]


def parse(doc: Any, source: str) -> Element | list[Issue]:
    """The document's root element, or the issues that stop it (friendly diagnoses first).

    >>> parse("<Job/>", "s").tag, [i.code for i in parse("<Job>", "s")]
    ('Job', ['malformed', 'malformed'])
    """
    where = source or "<input>"
    if isinstance(doc, bytes | bytearray):
        try:
            doc = bytes(doc).decode("utf-8-sig")
        except UnicodeDecodeError as e:
            return [issue("malformed", where, f"not UTF-8 text: {e.reason} at byte {e.start}")]
    if not isinstance(doc, str):
        return [issue("malformed", where, f"an SSS job object is XML text, got {type(doc).__name__}")]
    try:
        return parse_xml(doc, source=where)
    except JobValidationError as e:
        friendly = [issue("malformed", where, d) for d in diagnose(doc)]
        return [*friendly, *e.issues]


def read(doc: Any, *, source: str, options: ReadOptions) -> list[ReadResult]:
    """Read every job of an SSS document (XML text); never raises for bad input."""
    policy = options.sss_awareness
    if policy not in POLICIES:
        return _failed(
            source,
            [
                issue(
                    "enum",
                    "options.sss_awareness",
                    f"must be one of {', '.join(POLICIES)}; got {policy!r}"[:300],
                )
            ],
        )
    root = parse(doc, source)
    if isinstance(root, list):
        return _failed(source, root)
    name = local(root.tag)
    if name in ENVELOPES:
        data = root if name == "Data" else next((c for c in children(root) if local(c.tag) == "Data"), None)
        objects = (
            [c for c in children(data) if local(c.tag) in ("Job", "JobGroup")] if data is not None else []
        )
        if not objects:
            return _failed(
                source, [issue("required", name, f"<{name}> carries no Data element with a Job or JobGroup")]
            )
        root_path = "Data"
    elif name in ("Job", "JobGroup"):
        objects, root_path = [root], ""
    else:
        return _failed(
            source,
            [
                issue(
                    "malformed",
                    name or "<root>",
                    f"the root element <{name}> is not an SSS Job or JobGroup (nor an SSSRMAP Data envelope)",
                )
            ],
        )
    paths = _paths(root, objects, root_path)
    parents = parent_map(root)
    results: list[ReadResult] = []
    for obj in objects:
        if local(obj.tag) == "Job":
            ctx = Ctx(paths, parents, default_policy=policy, source=source)
            results.append(build_job(obj, None, ctx, index=len(results), source=source, group_meta={}))
        else:
            results.extend(_read_group(obj, paths, parents, policy, source, start=len(results)))
    return results


def _paths(root: Element, objects: list[Element], root_path: str) -> dict[Element, str]:
    """Paths as a reader sees them: ``Job[0]`` for a lone job, ``JobGroup.Job[1]`` inside a group."""
    paths: dict[Element, str] = {}
    jobs = 0
    groups = sum(1 for o in objects if local(o.tag) == "JobGroup")
    for i, obj in enumerate(objects):
        prefix = f"{root_path}." if root_path else ""
        if local(obj.tag) == "Job":
            paths.update(path_map(obj, f"{prefix}Job[{jobs}]"))
            jobs += 1
        else:
            paths.update(path_map(obj, f"{prefix}JobGroup" + (f"[{i}]" if groups > 1 else "")))
    return paths


def _read_group(
    group: Element,
    paths: dict[Element, str],
    parents: dict[Element, Element],
    policy: str,
    source: str,
    *,
    start: int,
) -> list[ReadResult]:
    """§4: each Job of the group, with the group's JobDefaults inherited."""
    jobs = [c for c in children(group) if local(c.tag) == "Job"]
    if not jobs:
        where = paths.get(group, "JobGroup")
        return _failed(
            source, [issue("required", f"{where}.Job", "a JobGroup must contain one or more Jobs (§4)")]
        )
    out: list[ReadResult] = []
    for i, job in enumerate(jobs):
        ctx = Ctx(paths, parents, default_policy=policy, source=source)
        defaults, meta, group_id = _group_properties(group, ctx)
        out.append(
            build_job(
                job, defaults, ctx, index=start + i, source=source, group_meta=meta, workflow_id=group_id
            )
        )
    return out


def _group_properties(group: Element, ctx: Ctx) -> tuple[PropertySet | None, dict[str, Any], str | None]:
    """The group's JobDefaults, its informational properties, and its id (checked in every job's context
    so each job's result carries the group's problems too)."""
    ctx.check_attributes(group, frozenset())
    defaults: PropertySet | None = None
    info: dict[str, str] = {}
    for c in children(group):
        tag = local(c.tag)
        if tag == "Job":
            continue
        if tag == "JobDefaults":
            if defaults is not None:
                ctx.fail("conflict", ctx.path(c), "a JobGroup may contain zero or one JobDefaults (§4.1.3)")
                continue
            defaults = PropertySet.scan(c, ctx)
        elif tag in GROUP_PROPERTIES:
            ctx.check_attributes(c, frozenset())
            if check_value(ctx, c, GROUP_PROPERTIES[tag]) is not None:
                info[tag] = text(c)
        else:
            ctx.unsupported(c, f"element <{tag}> is not supported in a JobGroup")
    if "JobGroupId" not in info:  # Table 1: JobGroupId's appearance is MUST
        ctx.fail("required", f"{ctx.path(group)}.JobGroupId", "a JobGroup must carry its JobGroupId (§4.1.1)")
    meta: dict[str, Any] = {"job_group": info} if info else {}
    return defaults, meta, info.get("JobGroupId") or None
