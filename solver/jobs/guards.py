"""Format-agnostic checks run on every job after its reader: queue limits, upper bounds, deny-lists, URIs.

Why after the readers: these are administrative policies (OJS ML resources §10.2, §15), not syntax. They
must hold whatever format a job came in, so they read only the normalized
:class:`~placer.solver.jobs.model.Job`
and the :class:`~placer.solver.jobs.options.ReadOptions`. :func:`placer.solver.jobs.load._guard` calls
:func:`check_job` on every job a reader accepted; any issue turns the result into a rejection.

What is checked, with the issue code:

* ``limit`` - the ``ml_limits`` of the job's queue (§10.2: "MUST reject"): ``max_gpu_count`` (whole GPUs
  over the gang), ``max_gpu_memory_gb`` (the per-device VRAM a task group asks for),
  ``max_memory_gb`` (host memory over the gang: replicas x per-replica memory), ``max_timeout_seconds``
  (the job's duration, when it has one), ``allowed_gpu_types`` (every GPU type the job names; a job naming
  none is not refused - it names nothing outside the list), ``allowed_priority_classes``. The §10.3 budget
  fields (``max_concurrent_gpu_jobs``, ``max_total_gpus``) and placer's dollar budget
  (``max_cost_per_hour``) are NOT checked: over-budget jobs wait, they are never rejected.
* ``limit`` - the configured upper bounds of ``ReadOptions`` for every job (§15.1: "a malicious client
  requesting 1000 GPUs MUST be rejected"): GPUs, TPU chips, host memory, replicas, timeout.
* ``denied`` - a node-selector key, or a key of a required or preferred node-affinity rule, on
  ``options.denied_selector_keys`` (§15.4). Node-selector keys and values are also sanitized (§15.4 "MUST
  be sanitized"): keys ``[prefix/]name`` as Kubernetes label keys (name 1-63 characters of
  ``[A-Za-z0-9._-]`` beginning and ending alphanumeric; prefix a DNS subdomain, 253 characters at most);
  values 1-63 characters of ``[A-Za-z0-9._-]`` beginning and ending alphanumeric. Affinity rule keys use the
  same key rule; affinity rule values must be free of control characters and at most 256 characters (they
  may hold things like versions a strict label charset would refuse, and ``Matches`` globs).
* ``uri`` - URIs, by :func:`placer.solver.jobs.uris.check_uri`: the checkpoint storage URI with the §9.4
  schemes
  and a REQUIRED trailing slash; the model registry URI, every ``ext_mlx_*_uri`` and
  ``ext_mlx_training_resume_from`` metadata value and the data-locality hint with the artifact schemes;
  ``last_checkpoint.storage_key`` with the checkpoint schemes (no trailing slash needed: it may name a
  file, as v0.1.0 §4.4 shows). ``options.allowed_uri_prefixes`` applies to all of them, and so do the
  allow-lists of the job's queue and tenant (``options.uri_prefixes_by_queue``, ``..._by_tenant``; OJS ML
  extensions §12.1): a URI must be under a prefix of every list that applies.
* ``denied`` - ``options.allowed_model_ids`` (§15.2 allow-list), when configured, must hold the model id.

Paths are the OJS attribute names for OJS jobs (``ext_ml_gpu_count``) and model paths for the others
(``tasks[0].gpu.count``).

>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> from placer.solver.jobs.options import ReadOptions
>>> job = Job(id="j", tasks=[TaskGroup(gpu=GpuDemand(count=1000))])
>>> [(i.code, i.path) for i in check_job(job, ReadOptions())]
[('limit', 'tasks.gpu.count')]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, Job, LabelRule, Not, Rule
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import MlLimits
from placer.solver.jobs.secrets import find_secrets
from placer.solver.jobs.uris import check_uri, outside_prefixes

__all__ = [
    "MAX_RULE_VALUE_CHARS",
    "check_job",
    "check_model",
    "check_queue_limits",
    "check_selectors",
    "check_upper_bounds",
    "check_uris",
    "label_key_problem",
    "label_value_problem",
]

#: Kubernetes-style label key and value rules (the sanitization of §15.4, see the module docstring).
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^(?:(?=[a-z0-9.-]{{1,253}}/)[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?/)?{_NAME}$")
_VALUE = re.compile(rf"^{_NAME}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_RULE_VALUE_CHARS = 256

#: (OJS attribute, model path) for the paths of issues.
_PATHS = {
    "gpus": ("ext_ml_gpu_count", "tasks.gpu.count"),
    "gpu_memory": ("ext_ml_gpu_memory_gb", "tasks.gpu.min_memory_gb"),
    "gpu_type": ("ext_ml_gpu_type", "tasks.gpu.types"),
    "memory": ("ext_ml_memory_gb", "tasks.memory_gb"),
    "timeout": ("ext_ml_timeout_seconds", "duration_s"),
    "class": ("ext_ml_priority_class", "priority_class"),
    "tpu": ("ext_ml_tpu_chip_count", "tasks.tpu.chips"),
    "replicas": ("tasks", "tasks.count"),
    "selector": ("ext_ml_node_selector", "placement.node_selector"),
    "required": ("ext_ml_affinity.required", "placement.required"),
    "preferred": ("ext_ml_affinity.preferred", "placement.preferred"),
    "checkpoint_uri": ("ext_ml_checkpoint_storage_uri", "checkpointing.storage_uri"),
    "registry_uri": ("ext_ml_model_registry_uri", "model.registry_uri"),
    "data_locality": ("ext_mlx_scheduling_data_locality", "placement.data_locality"),
    "storage_key": ("meta.last_checkpoint.storage_key", "last_checkpoint.storage_key"),
    "model_id": ("ext_ml_model_id", "model.id"),
}


def _path(job: Job, what: str) -> str:
    ojs, model = _PATHS[what]
    return ojs if job.source_format.startswith("ojs") else model


def _total_memory_gb(job: Job) -> float:
    return sum(t.count * t.memory_gb for t in job.tasks)


def _gpu_types(job: Job) -> list[str]:
    return [ty for t in job.tasks if t.gpu is not None for ty in t.gpu.types]


def _max_gpu_memory(job: Job) -> float | None:
    values = [t.gpu.min_memory_gb for t in job.tasks if t.gpu is not None and t.gpu.min_memory_gb is not None]
    return max(values) if values else None


def check_queue_limits(job: Job, limits: MlLimits, queue: str) -> list[Issue]:
    """§10.2 ``ml_limits`` of ``queue`` against ``job`` (budgets of §10.3 are not limits).

    >>> from placer.solver.jobs.model import GpuDemand, TaskGroup
    >>> job = Job(id="j", source_format="ojs-ml-v0.3", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    >>> [(i.code, i.path) for i in check_queue_limits(job, MlLimits(max_gpu_count=4), "q")]
    [('limit', 'ext_ml_gpu_count')]
    """
    out: list[Issue] = []
    where = f"queue {queue!r} ml_limits"

    def over(what: str, value: float | None, bound: float | None, name: str) -> None:
        if bound is not None and value is not None and value > bound:
            out.append(issue("limit", _path(job, what), f"{value:g} exceeds {name} {bound:g} of {where}"))

    over("gpus", job.total_gpus, limits.max_gpu_count, "max_gpu_count")
    over("gpu_memory", _max_gpu_memory(job), limits.max_gpu_memory_gb, "max_gpu_memory_gb")
    over("memory", _total_memory_gb(job), limits.max_memory_gb, "max_memory_gb")
    over("timeout", job.duration_s, limits.max_timeout_seconds, "max_timeout_seconds")
    if limits.allowed_gpu_types is not None:
        for t in _gpu_types(job):
            if t not in limits.allowed_gpu_types:
                out.append(
                    issue(
                        "limit",
                        _path(job, "gpu_type"),
                        f"GPU type {t!r} is not in allowed_gpu_types of {where}",
                    )
                )
    allowed_classes = limits.allowed_priority_classes
    if allowed_classes is not None and job.priority_class.value not in allowed_classes:
        out.append(
            issue(
                "limit",
                _path(job, "class"),
                f"priority class {job.priority_class.value!r} is not in allowed_priority_classes of {where}",
            )
        )
    return out


def check_upper_bounds(job: Job, options: ReadOptions) -> list[Issue]:
    """The configurable per-job upper bounds of ``options`` (§15.1).

    >>> from placer.solver.jobs.model import TaskGroup
    >>> [(i.code, i.path) for i in check_upper_bounds(Job(id="j", duration_s=10**9), ReadOptions())]
    [('limit', 'duration_s')]
    """
    out: list[Issue] = []
    checks: list[tuple[str, float | None, float, str]] = [
        ("gpus", job.total_gpus, options.max_gpus_per_job, "max_gpus_per_job"),
        ("tpu", job.total_tpu_chips, options.max_tpu_chips_per_job, "max_tpu_chips_per_job"),
        ("memory", _total_memory_gb(job), options.max_memory_gb_per_job, "max_memory_gb_per_job"),
        ("replicas", sum(t.count for t in job.tasks), options.max_replicas_per_job, "max_replicas_per_job"),
        ("timeout", job.duration_s, options.max_timeout_seconds, "max_timeout_seconds"),
    ]
    for what, value, bound, name in checks:
        if value is not None and value > bound:
            out.append(
                issue(
                    "limit",
                    _path(job, what),
                    f"{value:g} exceeds the configured upper bound {name} {bound:g}",
                )
            )
    return out


def _label_rules(rules: list[Rule]) -> Iterator[LabelRule]:
    """Every label rule in a rule list, through ``all_of``/``any_of``/``not`` nesting."""
    stack: list[Any] = list(rules)
    while stack:
        r = stack.pop()
        if isinstance(r, LabelRule):
            yield r
        elif isinstance(r, AllOf | AnyOf):
            stack.extend(r.rules)
        elif isinstance(r, Not):
            stack.append(r.rule)


def label_key_problem(key: str) -> str | None:
    """Why ``key`` is not an acceptable label key, or None.

    >>> label_key_problem("topology.kubernetes.io/zone") is None, label_key_problem("bad key") is None
    (True, False)
    """
    if _KEY.match(key):
        return None
    return f"label key {key[:80]!r} is not [prefix/]name of [A-Za-z0-9._-], 63 characters at most"


def label_value_problem(value: str) -> str | None:
    """Why ``value`` is not an acceptable node-selector value, or None.

    >>> label_value_problem("p5.48xlarge") is None, label_value_problem("a,b=c") is not None
    (True, True)
    """
    if _VALUE.match(value):
        return None
    return (
        f"selector value {value[:80]!r} is not 1-63 characters of [A-Za-z0-9._-] (alphanumeric at both ends)"
    )


def check_selectors(job: Job, options: ReadOptions) -> list[Issue]:
    """§15.4: deny-listed keys and unsanitary keys/values in node selectors and node-affinity rules.

    >>> from placer.solver.jobs.model import Placement
    >>> job = Job(id="j", placement=Placement(node_selector={"security_zone": "dmz"}))
    >>> [(i.code, i.path) for i in check_selectors(job, ReadOptions())]
    [('denied', 'placement.node_selector.security_zone')]
    """
    out: list[Issue] = []
    denied = options.denied_selector_keys
    base = _path(job, "selector")
    for k, v in job.placement.node_selector.items():
        p = f"{base}.{k}"
        if k in denied:
            out.append(issue("denied", p, f"selector key {k!r} is administrative; producers may not set it"))
            continue
        problem = label_key_problem(k) or label_value_problem(v)
        if problem:
            out.append(issue("denied", p, problem))
    selector_pairs = {(k, v) for k, v in job.placement.node_selector.items()}
    for what, rules in (("required", job.placement.required), ("preferred", job.placement.preferred)):
        for rule in _label_rules(list(rules)):
            if len(rule.values) == 1 and (rule.key, rule.values[0]) in selector_pairs:
                continue  # a node-selector pair, reported above
            p = f"{_path(job, what)}.{rule.key}"
            if rule.key in denied:
                out.append(
                    issue(
                        "denied", p, f"affinity key {rule.key!r} is administrative; producers may not use it"
                    )
                )
                continue
            problem = label_key_problem(rule.key)
            if problem is None and rule.operator is not AffinityOperator.MATCHES:
                bad = [v for v in rule.values if _CONTROL.search(v) or len(v) > MAX_RULE_VALUE_CHARS]
                if bad:
                    problem = (
                        f"affinity value {bad[0][:80]!r}: control characters or over {MAX_RULE_VALUE_CHARS}"
                    )
            if problem:
                out.append(issue("denied", p, problem))
    return out


def _uri_targets(job: Job) -> Iterator[tuple[str, str, bool]]:
    """(path, uri, is_checkpoint_storage) for every URI the job carries."""
    if job.checkpointing.storage_uri is not None:
        yield _path(job, "checkpoint_uri"), job.checkpointing.storage_uri, True
    if job.model.registry_uri is not None:
        yield _path(job, "registry_uri"), job.model.registry_uri, False
    if job.placement.data_locality is not None:
        yield _path(job, "data_locality"), job.placement.data_locality, False
    for key, value in job.metadata.items():
        if (
            isinstance(key, str)
            and key.startswith("ext_mlx_")
            and (key.endswith("_uri") or key == "ext_mlx_training_resume_from")
        ):
            yield key, value, False


def check_uris(job: Job, options: ReadOptions) -> list[Issue]:
    """URI rules of :mod:`placer.solver.jobs.uris` on every URI of the job.

    >>> from placer.solver.jobs.model import Checkpointing
    >>> job = Job(id="j", source_format="ojs-ml-v0.3", checkpointing=Checkpointing(storage_uri="s3://b/c"))
    >>> [(i.code, i.path) for i in check_uris(job, ReadOptions())]
    [('uri', 'ext_ml_checkpoint_storage_uri')]
    """
    out: list[Issue] = []
    prefixes = options.allowed_uri_prefixes
    scoped = _scoped_prefixes(job, options)
    for path, uri, checkpoint in _uri_targets(job):
        problem = check_uri(
            uri,
            schemes=options.checkpoint_uri_schemes if checkpoint else options.artifact_uri_schemes,
            require_trailing_slash=checkpoint,
            allowed_prefixes=prefixes,
            private_ok=options.private_hosts_allowed,
        ) or _outside_scoped(uri, scoped)
        if problem:
            where = "§9.4, §15.3" if checkpoint else "§15.2"
            out.append(
                issue("uri", path, problem if "§" in problem else f"{problem} (OJS ML resources {where})")
            )
    lc = job.last_checkpoint
    if lc is not None and lc.storage_key is not None:
        problem = check_uri(
            lc.storage_key,
            schemes=options.checkpoint_uri_schemes,
            allowed_prefixes=prefixes,
            private_ok=options.private_hosts_allowed,
        ) or _outside_scoped(lc.storage_key, scoped)
        if problem:
            out.append(issue("uri", _path(job, "storage_key"), problem))
    return out


def _scoped_prefixes(job: Job, options: ReadOptions) -> list[tuple[str, tuple[str, ...]]]:
    """The per-queue and per-tenant prefix allow-lists that apply to ``job`` (whose, prefixes)."""
    out = []
    if job.queue is not None and job.queue in options.uri_prefixes_by_queue:
        out.append((f"queue {job.queue!r}", options.uri_prefixes_by_queue[job.queue]))
    if job.tenant is not None and job.tenant in options.uri_prefixes_by_tenant:
        out.append((f"tenant {job.tenant!r}", options.uri_prefixes_by_tenant[job.tenant]))
    return out


def _outside_scoped(uri: str, scoped: list[tuple[str, tuple[str, ...]]]) -> str | None:
    """Why ``uri`` is refused by an allow-list of ``scoped`` (the first that refuses it), or None."""
    for whose, prefixes in scoped:
        if outside_prefixes(uri, prefixes):
            return (
                f"is outside the storage prefixes allowed for {whose}: {', '.join(prefixes)} "
                "(OJS ML extensions §12.1)"
            )
    return None


def check_model(job: Job, options: ReadOptions) -> list[Issue]:
    """§15.2: with an allow-list configured, a job naming a model must name an allowed one.

    >>> from placer.solver.jobs.model import ModelRef
    >>> job = Job(id="j", model=ModelRef(id="evil-model"))
    >>> [i.code for i in check_model(job, ReadOptions(allowed_model_ids=frozenset({"llama-3.1-70b"})))]
    ['denied']
    """
    allowed = options.allowed_model_ids
    if allowed is None or job.model.id is None or job.model.id in allowed:
        return []
    return [issue("denied", _path(job, "model_id"), f"model {job.model.id!r} is not on the model allow-list")]


def check_secrets(job: Job) -> list[Issue]:
    """OJS ML extensions §12.4: no credential in any attribute of an OJS envelope
    (:func:`placer.solver.jobs.secrets.find_secrets`); one ``secret`` issue per attribute that holds one.
    Other formats are not OJS envelopes (a Flux jobspec's ``environment`` is the submitter's own).

    >>> job = Job(id="j", source_format="ojs-ml-v0.3", envelope={"args": ["AWS_SECRET_ACCESS_KEY=abc123"]})
    >>> [(i.code, i.path) for i in check_secrets(job)]
    [('secret', 'args[0]')]
    """
    if not job.source_format.startswith("ojs") or job.envelope is None:
        return []
    return [
        issue(
            "secret",
            path,
            f"holds {kind}: credentials MUST NOT appear in job envelope attributes (OJS ML extensions "
            "§12.4); use IAM roles, workload identity or a secret the worker mounts",
        )
        for path, kind in find_secrets(job.envelope)
    ]


def check_job(job: Job, options: ReadOptions) -> list[Issue]:
    """Every guard on one job: queue limits, upper bounds, selectors, URIs, model allow-list, credentials.

    >>> from placer.solver.jobs.queues import QueueConfig
    >>> limits = {"ml_limits": {"allowed_priority_classes": ["spot"]}}
    >>> qc = QueueConfig.model_validate({"queue": "q", "config": limits})
    >>> [i.code for i in check_job(Job(id="j", queue="q"), ReadOptions(queues={"q": qc}))]
    ['limit']
    """
    out: list[Issue] = []
    qc = options.queues.get(job.queue) if job.queue is not None else None
    if qc is not None:
        out += check_queue_limits(job, qc.config.ml_limits, job.queue or "")
    out += check_upper_bounds(job, options)
    out += check_selectors(job, options)
    out += check_uris(job, options)
    out += check_model(job, options)
    out += check_secrets(job)
    return out
