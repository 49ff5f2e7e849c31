"""OJS workflows (ML resources v0.3.0 §12, extensions §9): chain, group and batch, flattened to jobs.

Why flatten: the solver places jobs, not workflows. Each step becomes an independent job read by the
envelope reader, and the workflow's shape becomes :class:`~placer.solver.jobs.model.Dependency` edges:

* ``chain`` (``steps``): every job of step i+1 depends on every last job of step i, condition
  ``success`` (a chain advances when the previous step succeeded);
* ``group`` (``jobs``): independent jobs;
* ``batch`` (``jobs`` plus optional ``callbacks`` ``on_complete`` / ``on_success`` / ``on_failure``, each
  an envelope): the jobs are independent; a callback may only start once every batch job finished, so
  ``on_success`` depends on them with ``success`` and ``on_complete``/``on_failure`` with ``exit`` (the
  "at least one failed" part of ``on_failure`` is the backend's to decide; for placement it is an
  after-all-finished job). Callbacks are read with ids ``<workflow id>.<callback name>``.

A step may itself be a workflow (it has ``workflow_type``); its first jobs take the incoming
dependencies and its last jobs feed the next step.

Ids: a step's own ``id``, else ``<workflow id>.step-<i>`` with ``i`` counted from 0 (the index in
``steps``/``jobs``, as the issue paths ``steps[i]``; the OJS SDKs number steps the same way). A workflow
without an id uses the source name (``<source>#<i>`` inside a list).

Nothing is inherited between steps (§12.3 MUST NOT): each step is read on its own. Workflow-level
``meta`` (experiment id, run id, ...) is copied verbatim into every job's ``metadata["workflow_meta"]``
(§12.3 / §14.5 "shared metadata", never parsed as resources), ``name`` into ``metadata["workflow_name"]``;
other workflow-level keys are kept in each job's ``unknown["workflow"]``.

>>> from placer.solver.jobs.formats.ojs import read
>>> from placer.solver.jobs.options import ReadOptions
>>> doc = {"workflow_type": "chain", "id": "w", "steps": [{"type": "a"}, {"type": "b"}]}
>>> [(r.id, [d.job for d in r.job.dependencies]) for r in read(doc, source="s", options=ReadOptions())]
[('w.step-0', []), ('w.step-1', ['w.step-0'])]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.model import Dependency, DependencyCondition, ReadResult
from placer.solver.jobs.options import ReadOptions

__all__ = ["CALLBACKS", "WORKFLOW_TYPES", "ReadOne", "expand_workflow"]

WORKFLOW_TYPES: tuple[str, ...] = ("chain", "group", "batch")
CALLBACKS: dict[str, DependencyCondition] = {
    "on_complete": DependencyCondition.EXIT,
    "on_success": DependencyCondition.SUCCESS,
    "on_failure": DependencyCondition.EXIT,
}
_WORKFLOW_KEYS = {"workflow_type", "id", "name", "meta", "steps", "jobs", "callbacks"}

ReadOne = Callable[..., ReadResult]


class _Context:
    """What a workflow passes down to its jobs."""

    def __init__(self, source: str, options: ReadOptions, read_one: ReadOne):
        self.source = source
        self.options = options
        self.read_one = read_one


def _attach(
    result: ReadResult,
    *,
    after: list[str],
    condition: DependencyCondition,
    workflow_id: str,
    meta: Mapping[str, Any] | None,
    name: str | None,
    extra: Mapping[str, Any],
) -> ReadResult:
    """Add dependencies and workflow context to one step's job."""
    if result.job is None:
        return result
    job = result.job
    deps = [
        *job.dependencies,
        *(Dependency(job=a, condition=condition, scheme="ojs-workflow") for a in after),
    ]
    metadata = dict(job.metadata)
    if meta:
        metadata["workflow_meta"] = dict(meta)
    if name is not None:
        metadata["workflow_name"] = name
    unknown = dict(job.unknown)
    if extra:
        unknown["workflow"] = dict(extra)
    update = {"dependencies": deps, "metadata": metadata, "unknown": unknown}
    if job.workflow_id is None:
        update["workflow_id"] = workflow_id
    return result.model_copy(update={"job": job.model_copy(update=update)})


def _node(
    item: Any, *, path: str, node_id: str, ctx: _Context, inherited_meta: Mapping[str, Any] | None
) -> tuple[list[ReadResult], list[str], list[str]]:
    """Read one step: (results, ids of its first jobs, ids of its last jobs)."""
    if isinstance(item, Mapping) and "workflow_type" in item:
        return _workflow(item, path=path, fallback_id=node_id, ctx=ctx, inherited_meta=inherited_meta)
    r = ctx.read_one(item, source=ctx.source, options=ctx.options, fallback_id=node_id, path=path)
    return [r], [r.id], [r.id]


def _workflow(
    doc: Mapping[str, Any],
    *,
    path: str,
    fallback_id: str,
    ctx: _Context,
    inherited_meta: Mapping[str, Any] | None,
) -> tuple[list[ReadResult], list[str], list[str]]:
    f = Fields(doc, path)
    kind = f.choice("workflow_type", WORKFLOW_TYPES, required=True)
    wf_id = f.string("id") or fallback_id
    name = f.string("name")
    meta = f.mapping("meta")
    merged_meta = {**(inherited_meta or {}), **(meta or {})} or None
    list_key = "steps" if kind == "chain" else "jobs"
    items = f.array(list_key, required=kind is not None) if kind else None
    if items is not None and not items:
        f.fail("range", list_key, "a workflow needs at least one step")
    callbacks = f.mapping("callbacks") if kind == "batch" else None
    if callbacks is not None:
        for k in callbacks:
            if k not in CALLBACKS:
                f.fail("enum", f"callbacks.{k}", f"must be one of {', '.join(CALLBACKS)}")
    if f.issues or kind is None or items is None:
        return (
            [ReadResult(id=wf_id, ok=False, errors=list(f.issues) or _no_kind(path), source=ctx.source)],
            [],
            [],
        )
    extra = {
        k: v for k, v in doc.items() if k not in _WORKFLOW_KEYS or (k == "callbacks" and kind != "batch")
    }
    results: list[ReadResult] = []
    heads: list[str] = []
    tails: list[str] = []
    previous: list[str] = []
    for i, item in enumerate(items):
        step_path = join(join(path, list_key) if path else list_key, i)
        own_id = item.get("id") if isinstance(item, Mapping) else None
        node_id = own_id if isinstance(own_id, str) and own_id.strip() else f"{wf_id}.step-{i}"
        rs, first, last = _node(item, path=step_path, node_id=node_id, ctx=ctx, inherited_meta=merged_meta)
        after = previous if kind == "chain" else []
        first_set = set(first)
        for r in rs:
            deps = after if r.id in first_set else []
            results.append(
                _attach(
                    r, after=deps, condition=DependencyCondition.SUCCESS, workflow_id=wf_id,
                    meta=merged_meta, name=name, extra=extra,
                )
            )  # fmt: skip
        if kind == "chain":
            if i == 0:
                heads = first
            previous = last
        else:
            heads += first
            tails += last
    if kind == "chain":
        tails = previous
    for cb_name, condition in CALLBACKS.items():
        if callbacks is None or callbacks.get(cb_name) is None:
            continue
        cb_path = join(join(path, "callbacks") if path else "callbacks", cb_name)
        rs, _, last = _node(
            callbacks[cb_name],
            path=cb_path,
            node_id=f"{wf_id}.{cb_name}",
            ctx=ctx,
            inherited_meta=merged_meta,
        )
        batch_jobs = list(tails)
        for r in rs:
            results.append(
                _attach(
                    r, after=batch_jobs, condition=condition, workflow_id=wf_id,
                    meta=merged_meta, name=name, extra=extra,
                )
            )  # fmt: skip
    return results, heads, tails


def _no_kind(path: str) -> list[Issue]:
    return [
        issue("required", join(path, "workflow_type"), "a workflow needs workflow_type chain, group or batch")
    ]


def expand_workflow(
    doc: Any, *, path: str, fallback_id: str, source: str, options: ReadOptions, read_one: ReadOne
) -> list[ReadResult]:
    """Every job of a workflow document, with chain/batch dependencies (rules in the module doc).

    ``read_one`` reads one envelope (the OJS envelope reader, passed in to keep modules acyclic).
    """
    if not isinstance(doc, Mapping):
        return [
            ReadResult(
                id=fallback_id,
                ok=False,
                errors=[issue("type", path or source, f"a workflow must be an object, got {type_name(doc)}")],
                source=source,
            )
        ]
    ctx = _Context(source, options, read_one)
    results, _, _ = _workflow(doc, path=path, fallback_id=fallback_id, ctx=ctx, inherited_meta=None)
    return results
