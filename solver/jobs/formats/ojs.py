"""The OJS reader: job envelopes (v0.3.0 flat ``ext_ml_*``, v0.1.0 ``meta``, ``ext_mlx_*``), workflows
and lists of envelopes, to :class:`~placer.solver.jobs.model.Job` objects.

What a document may be (see :func:`classify`): one envelope; a workflow (``workflow_type`` chain, group
or batch, :mod:`placer.solver.jobs.formats.ojs_workflow`); a list of envelopes and/or workflows (a batch of
jobs). Documents that are OJS but not jobs (a §10 queue configuration, a §11 / v0.1 §2.3 / §6.1 worker
advertisement or FETCH request, a bare §9.2 ``last_checkpoint`` block) get one ``format`` issue saying
what they are instead of being read as empty CPU jobs.

An envelope must look like one: an OJS job envelope (§13, v0.1 §2.1, extensions §10) is an object whose
core attributes have their core types (``id``, ``type`` and ``queue`` strings, ``args`` an array,
``meta`` an object) or which carries ``ext_ml*`` attributes. So a JSON Schema document (``$schema``, or
``definitions``/``$defs``/``properties`` as an object with a schema ``type`` like ``object`` or none; the
Flux ``schema.json`` files have a string ``type`` too), Flux RFC 26 dependency objects (``scheme`` and
``value``, nothing beyond ``type``/``scope``) and an object whose only core-looking key has the wrong type
(``{"type": 5}``) are not jobs; an empty list holds no job and is refused too (a file meant to carry jobs
that carries none is a mistake worth an exit code 1, not a silent success).

One envelope is read in this order:

1. core OJS fields: ``id`` (else the synthesized ``<source>#<index>``), ``type`` (a warning when absent:
   the normative spec fragments omit it), ``queue``, ``args`` (an array), ``meta`` (an object),
   ``priority`` (an integer), ``enqueued_at`` (else ``created_at``) as submit time and ``scheduled_at`` as
   not-before (RFC 3339 with a zone offset), ``timeout`` (seconds) or ``timeout_ms`` as the duration
   unless ``ext_ml_timeout_seconds`` is set (§14.3: it overrides the standard timeout);
2. v0.1.0 ``meta`` attributes translated to v0.3.0 keys and merged with the envelope's own (a value set
   differently in both forms is a ``conflict``);
3. the queue's ``ml_defaults`` fill the attributes still unset (§10.1), for ``options.queues[queue]``;
4. the v0.3.0 attributes (:mod:`placer.solver.jobs.formats.ojs_v03`) and the ``ext_mlx_*`` ones
   (:mod:`placer.solver.jobs.formats.ojs_mlx`);
5. ``meta.tenant``, ``meta.project`` and ``meta.user`` (strings) become ``Job.tenant``/``project``/
   ``user`` (the specs define no tenancy; ``meta`` is where OJS puts producer metadata);
   ``meta.last_checkpoint`` (§9.2 schema) becomes ``Job.last_checkpoint``; the rest of ``meta`` is kept
   as ``Job.metadata["meta"]``.

``Job.labels`` gets ``job_type`` (the envelope ``type``) and ``queue``, the labels §7.3 anti-affinity
rules test (its example matches ``job_type``). Keys the reader does not know (core or extension) are kept
untouched in ``Job.unknown``, nested ones under their dotted path; the whole input is ``Job.envelope``.

>>> from placer.solver.jobs.options import ReadOptions
>>> [r] = read({"id": "j1", "ext_ml_gpu_type": "nvidia-t4"}, source="x", options=ReadOptions())
>>> r.ok, r.job.accelerator.value, r.job.total_gpus, r.job.source_format
(True, 'gpu', 1, 'ojs-ml-v0.3')
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue, located, prefixed
from placer.solver.jobs.fields import Fields, type_name
from placer.solver.jobs.formats.ojs_mlx import MLX_ATTRIBUTES, parse_mlx
from placer.solver.jobs.formats.ojs_sections import cited
from placer.solver.jobs.formats.ojs_v01 import V01_META_KEYS, merge_forms, translate_meta
from placer.solver.jobs.formats.ojs_v03 import V03_ATTRIBUTES, parse_attributes
from placer.solver.jobs.formats.ojs_workflow import expand_workflow
from placer.solver.jobs.model import Job, LastCheckpoint, PreemptionPolicy, ReadResult, Toleration
from placer.solver.jobs.options import ReadOptions

__all__ = [
    "ALIASES",
    "SOURCE_FORMAT",
    "Kind",
    "classify",
    "read",
    "read_envelope",
    "read_tolerations",
    "unknown_attribute",
]

#: ``Job.source_format`` of every job this reader produces (v0.1.0 and ``ext_mlx_*`` attributes are
#: read into the same model, so one name).
SOURCE_FORMAT = "ojs-ml-v0.3"

Kind = Literal[
    "envelope",
    "workflow",
    "batch",
    "empty",
    "queue_config",
    "worker",
    "checkpoint_metadata",
    "json_schema",
    "flux_dependencies",
    "unknown",
]

#: OJS core envelope attributes and the Python types they must have for an object to pass as an envelope.
_CORE: dict[str, type | tuple[type, ...]] = {
    "id": str,
    "type": str,
    "queue": str,
    "args": list,
    "meta": Mapping,
}
#: Keys of a JSON Schema document's top level (draft-04 to 2020-12) that an envelope would not carry, and
#: the schema ``type`` names (an envelope's ``type`` is a job type like ``ml.train``).
_SCHEMA_KEYS = ("$defs", "definitions", "properties")
_SCHEMA_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def _is_json_schema(obj: Mapping[Any, Any], has_ext_ml: bool) -> bool:
    """``$schema``, or (without ``ext_ml*`` keys) a schema keyword holding an object and a ``type`` that is
    absent, a schema type name or a list of them."""
    if "$schema" in obj:
        return True
    if has_ext_ml or not any(isinstance(obj.get(k), Mapping) for k in _SCHEMA_KEYS):
        return False
    kind = obj.get("type")
    names = kind if isinstance(kind, list) else [kind]
    return kind is None or all(isinstance(n, str) and n in _SCHEMA_TYPES for n in names)


#: The keys of a Flux RFC 26 dependency object (``type``/``scope``/``scheme``/``value``): a string ``type``
#: would otherwise pass it as an OJS envelope (the ``spec_26`` example files are lists of them).
_FLUX_DEPENDENCY_KEYS = frozenset({"type", "scope", "scheme", "value"})


def _is_flux_dependency(obj: Any) -> bool:
    return isinstance(obj, Mapping) and {"scheme", "value"} <= obj.keys() <= _FLUX_DEPENDENCY_KEYS


_META_CONSUMED = V01_META_KEYS | {"last_checkpoint", "tenant", "project", "user"}


def _is_queue_config(obj: Any) -> bool:
    return (
        isinstance(obj, Mapping)
        and "queue" in obj
        and isinstance(obj.get("config"), Mapping)
        and set(obj) <= {"queue", "config"}
    )


def classify(obj: Any) -> Kind:
    """What an OJS-looking JSON object is.

    >>> classify({"type": "ml.train", "ext_ml_gpu_count": 8}), classify({"workflow_type": "chain"})
    ('envelope', 'workflow')
    >>> classify({"worker_id": "w1", "labels": ["gpu:nvidia-a100"]}), classify({"last_checkpoint": {}})
    ('worker', 'checkpoint_metadata')
    >>> classify({"queue": "q", "config": {"ml_limits": {}}}), classify([{"type": "a"}]), classify({})
    ('queue_config', 'batch', 'unknown')
    >>> classify({"$schema": "x", "type": "object", "properties": {}}), classify({"type": 5}), classify([])
    ('json_schema', 'unknown', 'empty')
    >>> classify([{"type": "in", "scope": "user", "scheme": "string", "value": "foo"}])
    'flux_dependencies'
    """
    if isinstance(obj, list):
        if not obj:
            return "empty"
        if all(_is_queue_config(o) for o in obj):
            return "queue_config"
        return "flux_dependencies" if all(_is_flux_dependency(o) for o in obj) else "batch"
    if not isinstance(obj, Mapping):
        return "unknown"
    has_ext_ml = any(isinstance(k, str) and k.startswith("ext_ml") for k in obj)
    if _is_json_schema(obj, has_ext_ml):
        return "json_schema"
    if _is_flux_dependency(obj):
        return "flux_dependencies"
    if "workflow_type" in obj:
        return "workflow"
    if _is_queue_config(obj):
        return "queue_config"
    if "worker_id" in obj or ("capabilities" in obj and "type" not in obj):
        return "worker"
    if set(obj) == {"last_checkpoint"}:
        return "checkpoint_metadata"
    if has_ext_ml or any(k in obj and isinstance(obj[k], t) for k, t in _CORE.items()):
        return "envelope"
    return "unknown"


_NOT_JOBS = {
    "queue_config": "an OJS queue configuration (§10), not a job; load it with placer.solver.jobs.queues",
    "worker": "an OJS worker capability advertisement or FETCH request, not a job",
    "checkpoint_metadata": "OJS checkpoint metadata (§9.2), not a job; it belongs in a job's meta",
    "json_schema": "a JSON Schema document ($schema / definitions / properties), not a job",
    "empty": "an empty list: the document holds no job",
    "flux_dependencies": (
        "Flux RFC 26 dependencies (type/scope/scheme/value), not a job; they belong in a jobspec's "
        "attributes.system.dependencies"
    ),
    "unknown": (
        "not an OJS job envelope, workflow or list of envelopes: an envelope needs a string type, id or "
        "queue, an array args, an object meta, or ext_ml_* attributes"
    ),
}


def read(doc: Any, *, source: str, options: ReadOptions) -> list[ReadResult]:
    """Every job of an OJS document, one :class:`~placer.solver.jobs.model.ReadResult` each (never raises)."""
    kind = classify(doc)
    if kind == "envelope":
        return [read_envelope(doc, source=source, options=options, fallback_id=f"{source}#0")]
    if kind == "workflow":
        return expand_workflow(
            doc, path="", fallback_id=source, source=source, options=options, read_one=read_envelope
        )
    if kind == "batch":
        out: list[ReadResult] = []
        for i, item in enumerate(doc):
            item_kind = classify(item)
            fallback = f"{source}#{i}"
            if item_kind == "envelope":
                out.append(
                    read_envelope(item, source=source, options=options, fallback_id=fallback, path=f"[{i}]")
                )
            elif item_kind == "workflow":
                out.extend(
                    expand_workflow(
                        item, path=f"[{i}]", fallback_id=fallback, source=source, options=options,
                        read_one=read_envelope,
                    )
                )  # fmt: skip
            else:
                msg = _NOT_JOBS.get(item_kind, "") or f"not a job envelope ({type_name(item)})"
                out.append(_failed(fallback, source, [issue("format", f"[{i}]", msg)]))
        return out
    return [_failed(source, source, [issue("format", source or "<input>", _NOT_JOBS[kind])])]


def _failed(
    job_id: str, source: str, errors: list[Issue], warnings: list[Issue] | None = None, path: str = ""
) -> ReadResult:
    return ReadResult(id=job_id, ok=False, errors=errors, warnings=warnings or [], source=source, path=path)


# ---------------------------------------------------------------------------------------------------
# One envelope
# ---------------------------------------------------------------------------------------------------


def _rewrite(path: str, origin: Mapping[str, str]) -> str:
    """A path in the merged v0.3 view -> where the value really came from (v0.1 ``meta``, a default)."""
    for key, real in origin.items():
        if path == key or path.startswith((key + ".", key + "[")):
            return real + path[len(key) :]
    return path


def _policy_defaults(policy: PreemptionPolicy, attrs: dict[str, Any], issues: list[Issue]) -> dict[str, Any]:
    """What ``ext_mlx_scheduling_preemption_policy`` (ML extensions §7) says of an eviction, where the job's
    own ``ext_ml_*`` preemption attributes (OJS ML §8.2) are silent.

    ``save_and_retry``: save a checkpoint in the grace period, then retry, so ``checkpoint_on_preempt``
    defaults to true. ``immediate``: stop at once without saving, so the grace period defaults to 0 (the
    §8.2 default of 30 s is a default, not a floor). An explicit attribute that says the opposite
    (``immediate`` with ``ext_ml_checkpoint_on_preempt: true``, ``save_and_retry`` with ``false``) is a
    conflict, as ``never`` with ``ext_ml_preemptible: true`` is.
    """
    checkpoint = attrs.get("ext_ml_checkpoint_on_preempt")
    out: dict[str, Any] = {}
    if policy is PreemptionPolicy.SAVE_AND_RETRY:
        if checkpoint is False:
            issues.append(
                issue(
                    "conflict",
                    "ext_mlx_scheduling_preemption_policy",
                    "save_and_retry contradicts ext_ml_checkpoint_on_preempt false",
                )
            )
        out["checkpoint_on_preempt"] = True
    elif policy is PreemptionPolicy.IMMEDIATE:
        if checkpoint is True:
            issues.append(
                issue(
                    "conflict",
                    "ext_mlx_scheduling_preemption_policy",
                    "immediate contradicts ext_ml_checkpoint_on_preempt true",
                )
            )
        if "ext_ml_preemption_grace_period_s" not in attrs:
            out["grace_period_s"] = 0
    return out


def _last_checkpoint(meta: Fields) -> LastCheckpoint | None:
    """§9.2 / v0.1.0 §4.4 ``meta.last_checkpoint``: every field optional, each strictly typed."""
    f = meta.sub("last_checkpoint")
    if f is None:
        return None
    start = len(f.issues)
    known = {
        "job_id": f.string("job_id"),
        "epoch": f.integer("epoch", minimum=0),
        "step": f.integer("step", minimum=0),
        "loss": f.number("loss"),
        "metrics": f.mapping("metrics"),
        "storage_key": f.string("storage_key"),
        "created_at": f.timestamp("created_at"),
    }
    if len(f.issues) > start:
        return None
    extra = {k: v for k, v in f.unread().items() if isinstance(k, str)}
    return LastCheckpoint(**{k: v for k, v in known.items() if v is not None}, **extra)


def _duration(f: Fields) -> float | None:
    """The standard OJS timeout: ``timeout`` in seconds or ``timeout_ms``; §14.3 lets ext_ml override it."""
    seconds = f.integer("timeout", minimum=0)
    millis = f.integer("timeout_ms", minimum=0)
    if seconds is not None:
        return float(seconds)
    return None if millis is None else millis / 1000.0


def read_envelope(
    env: Any,
    *,
    source: str,
    options: ReadOptions,
    fallback_id: str,
    path: str = "",
) -> ReadResult:
    """One OJS job envelope as a :class:`~placer.solver.jobs.model.ReadResult` (order of steps in the module
    doc).

    ``path`` prefixes every issue path (``steps[1]`` inside a workflow, ``[3]`` in a list).

    >>> r = read_envelope({"ext_ml_gpu_count": "8"}, source="s", options=ReadOptions(), fallback_id="s#0")
    >>> r.ok, [(i.code, i.path) for i in r.errors]
    (False, [('type', 'ext_ml_gpu_count')])
    """
    if not isinstance(env, Mapping):
        return _failed(
            fallback_id,
            source,
            [issue("type", path or source, f"must be an object, got {type_name(env)}")],
            path=path,
        )
    warnings: list[Issue] = []
    unknown: dict[str, Any] = {}
    f = Fields(env, "")
    job_id = f.string("id") or fallback_id
    job_type = f.string("type")
    if not f.has("type"):
        warnings.append(issue("required", "type", "absent: OJS core requires a job type"))
    queue = f.string("queue")
    f.array("args")
    meta_map = f.mapping("meta") or {}
    meta = Fields(meta_map, "meta", f.issues)
    priority = f.integer("priority")
    submit = f.timestamp("enqueued_at")
    created = f.timestamp("created_at")
    not_before = f.timestamp("scheduled_at")
    standard_timeout = _duration(f)

    # v0.1 meta + v0.3 flat + queue defaults, parsed as one v0.3 view
    v01, origin = translate_meta(meta_map, f.issues, unknown)
    flat = {k: v for k, v in env.items() if isinstance(k, str) and k.startswith("ext_ml_")}
    merged = merge_forms(flat, v01, origin, f.issues)
    applied: list[str] = []
    queue_config = options.queues.get(queue) if queue is not None else None
    if queue_config is not None:
        for k, v in queue_config.config.ml_defaults.items():
            if merged.get(k) is None:
                merged[k] = v
                origin[k] = f"queues[{queue}].ml_defaults.{k}"
                applied.append(k)
    mf = Fields(merged, "")
    sub_warnings: list[Issue] = []
    sub_unknown: dict[str, Any] = {}
    attrs = parse_attributes(mf, sub_warnings, sub_unknown)
    issues = [
        *f.issues,
        *(Issue(code=i.code, path=_rewrite(i.path, origin), message=i.message) for i in mf.issues),
    ]
    warnings += [Issue(code=i.code, path=_rewrite(i.path, origin), message=i.message) for i in sub_warnings]
    unknown.update({_rewrite(k, origin): v for k, v in sub_unknown.items()})

    f.issues = issues
    meta.issues = issues
    mlx = parse_mlx(f)
    tenant, project, user = meta.string("tenant"), meta.string("project"), meta.string("user")
    last_checkpoint = _last_checkpoint(meta)

    preemption = attrs.pop("preemption")
    if mlx.preemption_policy is not None:
        if preemption.preemptible is True and mlx.preemption_policy is PreemptionPolicy.NEVER:
            issues.append(
                issue(
                    "conflict",
                    "ext_mlx_scheduling_preemption_policy",
                    "never contradicts ext_ml_preemptible true",
                )
            )
        elif preemption.preemptible is False and mlx.preemption_policy is not PreemptionPolicy.NEVER:
            issues.append(
                issue(
                    "conflict",
                    "ext_mlx_scheduling_preemption_policy",
                    f"{mlx.preemption_policy.value} contradicts ext_ml_preemptible false",
                )
            )
        preemption = preemption.model_copy(
            update={
                "policy": mlx.preemption_policy,
                **_policy_defaults(mlx.preemption_policy, merged, issues),
            }
        )

    tolerations = read_tolerations(f.raw("ext_ml_tolerations"), issues)
    for k, v in env.items():
        if k not in f.read and k not in mf.read:
            unknown[str(k)] = v
            warning = unknown_attribute(str(k))
            if warning is not None:
                warnings.append(warning)
    if issues:
        return _failed(
            job_id,
            source,
            located(path, cited(issues)),
            located(path, warnings),
            path,
        )

    placement = attrs.pop("placement")
    hints: dict[str, Any] = {}
    if tolerations:
        hints["tolerations"] = tolerations
    if mlx.gpu_affinity is not None:
        hints["gpu_affinity"] = mlx.gpu_affinity
        if mlx.gpu_affinity.value == "dedicated":
            hints["exclusive_nodes"] = True
    if mlx.spot_preference is not None:
        hints["spot_preference"] = mlx.spot_preference
    if mlx.data_locality is not None:
        hints["data_locality"] = mlx.data_locality
    metadata: dict[str, Any] = {**attrs.pop("metadata"), **mlx.metadata}
    rest_of_meta = {k: v for k, v in meta_map.items() if k not in _META_CONSUMED}
    if rest_of_meta:
        metadata["meta"] = rest_of_meta
    if applied:
        metadata["ml_defaults_applied"] = applied
    if "duration_s" not in attrs and standard_timeout is not None:
        attrs["duration_s"] = standard_timeout
    labels = {k: v for k, v in (("job_type", job_type), ("queue", queue)) if v is not None}
    try:
        job = Job(
            id=job_id,
            type=job_type,
            source_format=SOURCE_FORMAT,
            queue=queue,
            tenant=tenant,
            project=project,
            user=user,
            priority=priority or 0,
            submit_time=submit or created,
            not_before=not_before,
            placement=placement.model_copy(update=hints),
            preemption=preemption,
            last_checkpoint=last_checkpoint,
            labels=labels,
            metadata=metadata,
            unknown=unknown,
            envelope=env,
            **attrs,
        )
    except ValidationError as e:
        errors = [
            issue("range", prefixed(path, ".".join(str(p) for p in err["loc"]) or "<job>"), err["msg"][:300])
            for err in e.errors()
        ]
        return _failed(job_id, source, errors, located(path, warnings), path)
    return ReadResult(
        id=job_id,
        ok=True,
        job=job,
        warnings=located(path, warnings),
        source=source,
        path=path,
    )


#: Names other OJS tools write for attributes the three documents name otherwise. They are *not* read (a
#: rule placer does not know it is applying is worse than a warning); the warning names the spelling to use.
ALIASES: dict[str, str] = {
    "ext_ml_node_affinity": "ext_ml_affinity",
    "ext_ml_affinity_rules": "ext_ml_affinity",
    "ext_ml_gpu_type_preference": "ext_ml_gpu_type",
    "ext_ml_tpu_chips": "ext_ml_tpu_chip_count",
    "ext_ml_preemption_grace_period": "ext_ml_preemption_grace_period_s",
}


def unknown_attribute(key: str) -> Issue | None:
    """A warning for an ``ext_ml_*`` / ``ext_mlx_*`` key none of the three OJS documents defines (kept in
    ``Job.unknown`` all the same, as the extension contract asks), with "did you mean" for a near or known
    other spelling; None for other keys.

    >>> unknown_attribute("ext_ml_node_affinity").message.endswith("did you mean 'ext_ml_affinity'?")
    True
    >>> unknown_attribute("ext_ml_gpu_cuont").message.endswith("did you mean 'ext_ml_gpu_count'?")
    True
    >>> unknown_attribute("queue") is None
    True
    """
    if not key.startswith(("ext_ml_", "ext_mlx_")):
        return None
    known = sorted(V03_ATTRIBUTES | MLX_ATTRIBUTES)
    guess = ALIASES.get(key) or next(iter(difflib.get_close_matches(key, known, n=1, cutoff=0.8)), None)
    message = "not an attribute of OJS ML resources v0.3.0 or the ML extensions (kept, not applied)"
    if guess is not None:
        message += f"; did you mean {guess!r}?"
    return issue("unknown", key, message)


def read_tolerations(raw: Any, issues: list[Issue]) -> list[Toleration]:
    """``ext_ml_tolerations`` — a placer extension, in Kubernetes syntax: a list of ``{key, operator
    (Equal|Exists), value, effect (NoSchedule|PreferNoSchedule|NoExecute)}``. Bad entries are issues at
    their path.

    >>> [t.key for t in read_tolerations([{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}], [])]
    ['dedicated']
    >>> read_tolerations([{"operator": "Equal"}], errs := []) == [] and errs[0].path
    'ext_ml_tolerations[0]'
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        issues.append(
            issue("type", "ext_ml_tolerations", f"must be a list of tolerations, got {type_name(raw)}")
        )
        return []
    out: list[Toleration] = []
    for i, item in enumerate(raw):
        path = f"ext_ml_tolerations[{i}]"
        if not isinstance(item, Mapping):
            issues.append(issue("type", path, f"a toleration must be an object, got {type_name(item)}"))
            continue
        try:
            out.append(Toleration.model_validate(dict(item)))
        except ValidationError as e:
            issues.append(issue("type", path, "; ".join(str(x["msg"]) for x in e.errors())))
    return out
