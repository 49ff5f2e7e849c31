"""OJS ML resources v0.3.0: the flat ``ext_ml_*`` attributes of §3-§9, checked against their tables.

Why strict: the attribute tables give exact types (``"8"`` is not an integer, ``"64Gi"`` is not a number)
and closed value lists; a placer that guessed would place jobs the producer did not ask for. Every problem
of a job is reported at once as an :class:`~placer.solver.jobs.errors.Issue` (through
:class:`~placer.solver.jobs.fields.Fields`), never raised.

Rules implemented here beyond the tables:

* §3.1 accelerator inference: GPU attributes make a ``gpu`` job, TPU attributes a ``tpu`` job; an explicit
  accelerator that contradicts the attributes (``cpu`` with ``ext_ml_gpu_type``, ``gpu`` with
  ``ext_ml_tpu_type``, ``gpu`` with ``ext_ml_gpu_count: 0``), or GPU and TPU attributes together, is a
  ``conflict``.
* §3.2 ``ext_ml_gpu_count`` defaults to 1 when any GPU attribute is set (also when only
  ``ext_ml_accelerator: gpu`` is); 0 together with ``ext_ml_gpu_type``/``_memory_gb``/``_compute_capability``
  is a ``conflict``. GPU type ids are the well-known ones of §3.2 or lowercase ``{vendor}-{model}``;
  anything else (``"A100"``, ``"a100"``) is ``enum``. ``ext_ml_gpu_interconnect`` is ignored (with a
  warning) for a single GPU, as §3.2 says it SHOULD be.
* §3.3 TPU topology ``AxB`` / ``AxBxC`` becomes a tuple; a chip count that disagrees is a ``conflict``.
* §6 the minimum compute capability is inferred from ``ext_ml_precision`` for GPU jobs when not given;
  an explicit one below what the precision needs (bf16 with ``"7.0"``) is a ``conflict`` (§3.2 MUST).
* §7 affinity rules (below), node selectors kept in ``placement.node_selector`` and also as ``In`` rules
  in ``placement.required``.
* §8.3 a reservation timeout without a reservation id is ``required`` (the id is missing).
* §14.3 ``ext_ml_timeout_seconds`` is the job duration.

Affinity rules: an affinity object has only ``required`` and ``preferred`` lists (other keys are kept in
``Job.unknown`` under their path); a rule has a non-empty string ``key``, one of the eight operators of
§7.2 (v0.1.0 names four; all eight are accepted there too), ``values`` an array of strings (``In``/``NotIn``
need at least one; ``Exists``/``DoesNotExist`` take none; ``Gt``/``Gte``/``Lt``/``Lte`` exactly one, which
must be a number or a dotted version such as ``"8.0"``), and ``weight`` an integer 0-100. A weight is only
meaningful on a preferred rule; on a required rule it is ignored with a warning. A preferred rule without a
weight keeps ``weight=None`` ("unweighted"; the solver applies its default).

>>> from placer.solver.jobs.fields import Fields
>>> f = Fields({"ext_ml_gpu_type": "nvidia-h100", "ext_ml_precision": "fp8"})
>>> kw = parse_attributes(f, [], {})
>>> kw["accelerator"].value, kw["tasks"][0].gpu.count, kw["tasks"][0].gpu.min_compute_capability, f.issues
('gpu', 1, '8.9', [])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.model import (
    PRECISION_MIN_CC,
    Accelerator,
    AffinityOperator,
    Checkpointing,
    DistributedStrategy,
    Escalation,
    GpuDemand,
    Interconnect,
    LabelRule,
    ModelRef,
    Placement,
    Precision,
    Preemption,
    PriorityClass,
    ReservationRef,
    TaskGroup,
    TpuDemand,
)

__all__ = [
    "CHECKSUM_PATTERN",
    "GPU_TYPE_PATTERN",
    "MODEL_FORMATS",
    "MODEL_PROVIDERS",
    "MODEL_REGISTRIES",
    "OJS_OPERATORS",
    "RUNTIMES",
    "TPU_TYPES",
    "V03_ATTRIBUTES",
    "WELL_KNOWN_GPU_TYPES",
    "is_gpu_type",
    "parse_affinity",
    "parse_attributes",
    "parse_node_selector",
    "parse_rule",
    "parse_tpu_topology",
    "selector_rules",
]

# ---------------------------------------------------------------------------------------------------
# Closed lists of the v0.3.0 tables
# ---------------------------------------------------------------------------------------------------

#: §3.2 well-known GPU type identifiers.
WELL_KNOWN_GPU_TYPES: frozenset[str] = frozenset(
    {
        "nvidia-a100", "nvidia-h100", "nvidia-h200", "nvidia-l4", "nvidia-l40s", "nvidia-t4",
        "nvidia-v100", "nvidia-a10g", "nvidia-b200", "amd-mi250", "amd-mi300x",
    }
)  # fmt: skip
#: §3.2 "additional identifiers following the pattern {vendor}-{model}" (lowercase, as the table).
GPU_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9]+(?:[.-][a-z0-9]+)*$")
#: §3.3 TPU versions.
TPU_TYPES: tuple[str, ...] = ("v4", "v5e", "v5p", "v6e")
#: §4 model providers and formats, §5.1 registries, §6 runtimes.
MODEL_PROVIDERS: tuple[str, ...] = (
    "openai",
    "anthropic",
    "google",
    "huggingface",
    "replicate",
    "local",
    "custom",
)
MODEL_FORMATS: tuple[str, ...] = ("safetensors", "gguf", "onnx", "torchscript", "savedmodel", "custom")
MODEL_REGISTRIES: tuple[str, ...] = ("huggingface", "mlflow", "wandb", "s3", "gcs", "custom")
RUNTIMES: tuple[str, ...] = ("pytorch", "tensorflow", "onnx", "triton", "vllm", "tgi", "custom")
#: §4 ``{algorithm}:{digest}``. The digest is not forced to hex: the normative §5.2 example elides it
#: (``"sha256:e3b0c44298fc..."``).
CHECKSUM_PATTERN = re.compile(r"^[a-z0-9-]+:\S+$")
_CC_PATTERN = re.compile(r"^[0-9]+\.[0-9]+$")
_TOPOLOGY = re.compile(r"^([0-9]+)x([0-9]+)(?:x([0-9]+))?$")

_GPU_ATTRS = (
    "ext_ml_gpu_type", "ext_ml_gpu_count", "ext_ml_gpu_memory_gb",
    "ext_ml_gpu_compute_capability", "ext_ml_gpu_interconnect",
)  # fmt: skip
_GPU_ATTRS_NOT_ZERO = ("ext_ml_gpu_type", "ext_ml_gpu_memory_gb", "ext_ml_gpu_compute_capability")
_TPU_ATTRS = ("ext_ml_tpu_type", "ext_ml_tpu_topology", "ext_ml_tpu_chip_count")

#: Every attribute of §3-§9 this reader understands; other ``ext_ml_*`` keys go to ``Job.unknown``.
V03_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "ext_ml_accelerator", *_GPU_ATTRS, *_TPU_ATTRS,
        "ext_ml_memory_gb", "ext_ml_storage_gb", "ext_ml_shm_size_gb", "ext_ml_cpu_cores",
        "ext_ml_model_id", "ext_ml_model_version", "ext_ml_model_provider", "ext_ml_model_checksum",
        "ext_ml_model_format", "ext_ml_model_registry", "ext_ml_model_registry_uri",
        "ext_ml_max_tokens", "ext_ml_max_batch_size", "ext_ml_timeout_seconds", "ext_ml_runtime",
        "ext_ml_precision", "ext_ml_distributed_strategy",
        "ext_ml_node_selector", "ext_ml_affinity", "ext_ml_anti_affinity",
        "ext_ml_priority_class", "ext_ml_preemptible", "ext_ml_preemption_grace_period_s",
        "ext_ml_checkpoint_on_preempt", "ext_ml_reservation_id", "ext_ml_reservation_timeout_s",
        "ext_ml_priority_escalation", "ext_ml_escalation_after_s", "ext_ml_escalation_target_class",
        "ext_ml_checkpoint_enabled", "ext_ml_checkpoint_interval_s", "ext_ml_checkpoint_storage_uri",
        "ext_ml_checkpoint_max_count",
    }
)  # fmt: skip


def is_gpu_type(value: str) -> bool:
    """Whether ``value`` is an acceptable GPU type id (§3.2).

    >>> is_gpu_type("nvidia-h100"), is_gpu_type("intel-gaudi3"), is_gpu_type("A100"), is_gpu_type("a100")
    (True, True, False, False)
    """
    return value in WELL_KNOWN_GPU_TYPES or bool(GPU_TYPE_PATTERN.match(value))


def parse_tpu_topology(text: str) -> tuple[int, ...] | None:
    """``"4x4"`` -> ``(4, 4)``, ``"2x2x4"`` -> ``(2, 2, 4)``; None unless ``AxB``/``AxBxC`` of positive ints.

    >>> [parse_tpu_topology(t) for t in ("4x4", "2x2x4", "4x0", "16")]
    [(4, 4), (2, 2, 4), None, None]
    """
    m = _TOPOLOGY.match(text.strip())
    if m is None:
        return None
    dims = tuple(int(d) for d in m.groups() if d is not None)
    return dims if all(d >= 1 for d in dims) else None


# ---------------------------------------------------------------------------------------------------
# §7 affinity rules and node selectors
# ---------------------------------------------------------------------------------------------------

#: The eight operators of OJS ML §7.2 (``Matches`` is a placer extension for other formats, not OJS).
OJS_OPERATORS: tuple[str, ...] = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Gte", "Lt", "Lte")
_NO_VALUES = {"Exists", "DoesNotExist"}
_ONE_VALUE = {"Gt", "Gte", "Lt", "Lte"}
_ORDERABLE = re.compile(r"^-?[0-9]+(\.[0-9]+)*$|^-?[0-9]*\.[0-9]+$")
_RULE_KEYS = {"key", "operator", "values", "weight"}


def parse_rule(
    raw: Any,
    path: str,
    issues: list[Issue],
    warnings: list[Issue],
    unknown: dict[str, Any],
    *,
    preferred: bool,
) -> LabelRule | None:
    """One rule object, or None (with issues) when it is not valid.

    >>> rule = {"key": "cc", "operator": "Gte", "values": ["8.0"]}
    >>> parse_rule(rule, "r", [], [], {}, preferred=False).values
    ['8.0']
    """
    if not isinstance(raw, Mapping):
        issues.append(issue("type", path, f"an affinity rule must be an object, got {type_name(raw)}"))
        return None
    start = len(issues)
    for k, v in raw.items():
        if k not in _RULE_KEYS:
            unknown[join(path, str(k))] = v
    key = raw.get("key")
    if key is None:
        issues.append(issue("required", join(path, "key"), "is required"))
    elif not isinstance(key, str):
        issues.append(issue("type", join(path, "key"), f"must be a string, got {type_name(key)}"))
    elif not key.strip():
        issues.append(issue("range", join(path, "key"), "must not be empty"))
    op = raw.get("operator")
    if op is None:
        issues.append(issue("required", join(path, "operator"), "is required"))
    elif not isinstance(op, str):
        issues.append(issue("type", join(path, "operator"), f"must be a string, got {type_name(op)}"))
    elif op not in OJS_OPERATORS:
        issues.append(
            issue(
                "enum", join(path, "operator"), f"must be one of {', '.join(OJS_OPERATORS)}; got {op!r}"[:300]
            )
        )
    values = _values(raw, path, issues, op if isinstance(op, str) and op in OJS_OPERATORS else None)
    weight = raw.get("weight")
    if weight is not None:
        if isinstance(weight, float) and weight.is_integer():
            weight = int(weight)
        if isinstance(weight, bool) or not isinstance(weight, int):
            issues.append(issue("type", join(path, "weight"), f"must be an integer, got {type_name(weight)}"))
        elif not 0 <= weight <= 100:
            issues.append(issue("range", join(path, "weight"), f"must be between 0 and 100, got {weight}"))
        elif not preferred:
            warnings.append(
                issue("conflict", join(path, "weight"), "ignored: only preferred rules carry weights")
            )
            weight = None
    if len(issues) > start or not isinstance(op, str):
        return None
    return LabelRule(key=key, operator=AffinityOperator(op), values=values, weight=weight)


def _values(raw: Mapping[str, Any], path: str, issues: list[Issue], op: str | None) -> list[str]:
    p = join(path, "values")
    vals = raw.get("values")
    if vals is None:
        vals = []
        if op is not None and op not in _NO_VALUES:
            issues.append(issue("required", p, f"operator {op} needs values"))
            return []
    if not isinstance(vals, list):
        issues.append(issue("type", p, f"must be an array of strings, got {type_name(vals)}"))
        return []
    out: list[str] = []
    for i, v in enumerate(vals):
        if not isinstance(v, str):
            issues.append(issue("type", join(p, i), f"must be a string, got {type_name(v)}"))
        else:
            out.append(v)
    if op in _NO_VALUES and vals:
        issues.append(issue("range", p, f"operator {op} takes no values"))
    elif op in _ONE_VALUE:
        if len(vals) != 1:
            issues.append(issue("range", p, f"operator {op} takes exactly one value, got {len(vals)}"))
        elif out and not _ORDERABLE.match(out[0].strip()):
            issues.append(
                issue("type", join(p, 0), f"operator {op} needs a number or dotted version, got {out[0]!r}")
            )
    elif op in ("In", "NotIn") and not vals:
        issues.append(issue("range", p, f"operator {op} needs at least one value"))
    return out


def parse_affinity(
    raw: Any, path: str, issues: list[Issue], warnings: list[Issue], unknown: dict[str, Any]
) -> tuple[list[LabelRule], list[LabelRule]]:
    """An affinity (or anti-affinity) object ``{"required": [...], "preferred": [...]}``.

    >>> parse_affinity({"preferred": [{"key": "r", "operator": "In", "values": ["x"], "weight": 20}]},
    ...                "a", [], [], {})[1][0].weight
    20
    """
    if not isinstance(raw, Mapping):
        issues.append(issue("type", path, f"must be an object, got {type_name(raw)}"))
        return [], []
    lists: dict[str, list[LabelRule]] = {"required": [], "preferred": []}
    for k, v in raw.items():
        if k not in lists:
            unknown[join(path, str(k))] = v
            continue
        if v is None:
            continue
        p = join(path, k)
        if not isinstance(v, list):
            issues.append(issue("type", p, f"must be an array of rules, got {type_name(v)}"))
            continue
        for i, r in enumerate(v):
            rule = parse_rule(r, join(p, i), issues, warnings, unknown, preferred=(k == "preferred"))
            if rule is not None:
                lists[k].append(rule)
    return lists["required"], lists["preferred"]


def parse_node_selector(raw: Any, path: str, issues: list[Issue]) -> dict[str, str]:
    """A node selector: an object of string label values (§7.1). Sanitizing values is the guard's job.

    >>> parse_node_selector({"cluster": "prod"}, "ns", [])
    {'cluster': 'prod'}
    """
    if not isinstance(raw, Mapping):
        issues.append(issue("type", path, f"must be an object of strings, got {type_name(raw)}"))
        return {}
    out: dict[str, str] = {}
    for k, v in raw.items():
        p = join(path, str(k))
        if not isinstance(k, str) or not k.strip():
            issues.append(issue("range", p, "selector keys must be non-empty strings"))
        elif not isinstance(v, str):
            issues.append(issue("type", p, f"must be a string, got {type_name(v)}"))
        else:
            out[k] = v
    return out


def selector_rules(selector: Mapping[str, str]) -> list[LabelRule]:
    """Each ``key: value`` pair as an ``In`` rule (node selectors are equality constraints, §7.1).

    >>> [(r.key, r.operator.value, r.values) for r in selector_rules({"zone": "a"})]
    [('zone', 'In', ['a'])]
    """
    return [LabelRule(key=k, operator=AffinityOperator.IN, values=[v]) for k, v in selector.items()]


# ---------------------------------------------------------------------------------------------------
# §3-§9 attributes
# ---------------------------------------------------------------------------------------------------


def _set(f: Fields, key: str) -> bool:
    """Whether the producer gave ``key`` (JSON ``null`` counts as not given)."""
    return f.data.get(key) is not None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _first_set(f: Fields, keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if _set(f, k)), None)


def _accelerator(f: Fields, gpu_count: int | None) -> Accelerator:
    """§3.1: the explicit accelerator, checked against the GPU/TPU attributes, or the inferred one."""
    explicit = f.enum("ext_ml_accelerator", Accelerator)
    gpu_key = _first_set(f, _GPU_ATTRS)
    gpu_wanted = gpu_key is not None and not (gpu_count == 0 and _first_set(f, _GPU_ATTRS_NOT_ZERO) is None)
    tpu_key = _first_set(f, _TPU_ATTRS)
    if explicit is None:
        if f.has("ext_ml_accelerator") and f.data.get("ext_ml_accelerator") is not None:
            return Accelerator.CPU  # bad value, already reported
        if gpu_wanted and tpu_key:
            f.fail("conflict", tpu_key, f"TPU attributes together with GPU attribute {gpu_key}; set one kind")
        if tpu_key:
            return Accelerator.TPU
        return Accelerator.GPU if gpu_wanted else Accelerator.CPU
    if explicit is Accelerator.GPU:
        if tpu_key:
            f.fail("conflict", tpu_key, "a TPU attribute on a job whose ext_ml_accelerator is gpu")
        if gpu_count == 0:
            f.fail("conflict", "ext_ml_gpu_count", "0 GPUs for a job whose ext_ml_accelerator is gpu")
    elif explicit is Accelerator.TPU:
        if gpu_wanted:
            f.fail(
                "conflict", gpu_key or "ext_ml_gpu_count", "a GPU attribute on a job whose accelerator is tpu"
            )
    elif gpu_wanted or tpu_key:
        key = gpu_key if gpu_wanted else tpu_key
        f.fail(
            "conflict", key or "ext_ml_accelerator", f"{key} on a job whose ext_ml_accelerator is {explicit}"
        )
    return explicit


def _gpu(
    f: Fields,
    accelerator: Accelerator,
    gpu_count: int | None,
    precision: Precision | None,
    warnings: list[Issue],
) -> GpuDemand | None:
    gpu_type = f.string("ext_ml_gpu_type")
    if gpu_type is not None and not is_gpu_type(gpu_type):
        f.fail(
            "enum",
            "ext_ml_gpu_type",
            f"{gpu_type!r} is neither a well-known GPU type (§3.2) nor {{vendor}}-{{model}}",
        )
        gpu_type = None
    memory = f.number("ext_ml_gpu_memory_gb", minimum=0)
    cc = f.string("ext_ml_gpu_compute_capability")
    if cc is not None and not _CC_PATTERN.match(cc):
        f.fail("range", "ext_ml_gpu_compute_capability", f'must be "major.minor" (e.g. "8.0"), got {cc!r}')
        cc = None
    interconnect = f.enum("ext_ml_gpu_interconnect", Interconnect)
    if gpu_count == 0:
        other = _first_set(f, _GPU_ATTRS_NOT_ZERO)
        if other is not None:
            f.fail(
                "conflict", "ext_ml_gpu_count", f"0 GPUs requested together with {other} (§3.2: MUST reject)"
            )
        elif _set(f, "ext_ml_gpu_interconnect"):
            warnings.append(issue("conflict", "ext_ml_gpu_interconnect", "ignored: the job requests 0 GPUs"))
        return None
    if accelerator is not Accelerator.GPU:
        return None
    count = 1 if gpu_count is None else gpu_count
    if interconnect is not None and count == 1 and interconnect is not Interconnect.ANY:
        warnings.append(issue("conflict", "ext_ml_gpu_interconnect", "ignored for a single GPU (§3.2)"))
        interconnect = None
    if precision is not None:
        implied = PRECISION_MIN_CC[precision]
        if cc is None:
            cc = implied  # §6: SHOULD infer the minimum compute capability
        elif _version(cc) < _version(implied):
            # §3.2: "a job using bf16 MUST set ext_ml_gpu_compute_capability to at least 8.0" (same for §6)
            f.fail(
                "conflict", "ext_ml_gpu_compute_capability", f"{cc} is below the {implied} {precision} needs"
            )
    return GpuDemand(
        count=count,
        types=[gpu_type] if gpu_type else [],
        min_memory_gb=memory,
        min_compute_capability=cc,
        interconnect=interconnect or Interconnect.ANY,
    )


def _tpu(f: Fields, accelerator: Accelerator) -> TpuDemand | None:
    tpu_type = f.choice("ext_ml_tpu_type", TPU_TYPES)
    text = f.string("ext_ml_tpu_topology")
    topology = None
    if text is not None:
        topology = parse_tpu_topology(text)
        if topology is None:
            f.fail(
                "range", "ext_ml_tpu_topology", f'must be "AxB" or "AxBxC" with positive sizes, got {text!r}'
            )
    chips = f.integer("ext_ml_tpu_chip_count", minimum=1)
    if topology is not None and chips is not None:
        n = 1
        for d in topology:
            n *= d
        if n != chips:
            f.fail("conflict", "ext_ml_tpu_chip_count", f"{chips} chips, but topology {text} has {n} chips")
            chips = None
    if accelerator is not Accelerator.TPU:
        return None
    return TpuDemand(type=tpu_type, topology=topology, chips=chips)


def _placement(f: Fields, warnings: list[Issue], unknown: dict[str, Any]) -> Placement:
    selector: dict[str, str] = {}
    if _set(f, "ext_ml_node_selector"):
        selector = parse_node_selector(
            f.raw("ext_ml_node_selector"), join(f.path, "ext_ml_node_selector"), f.issues
        )
    required: list[LabelRule] = []
    preferred: list[LabelRule] = []
    if _set(f, "ext_ml_affinity"):
        required, preferred = parse_affinity(
            f.raw("ext_ml_affinity"), join(f.path, "ext_ml_affinity"), f.issues, warnings, unknown
        )
    anti: list[LabelRule] = []
    anti_pref: list[LabelRule] = []
    if _set(f, "ext_ml_anti_affinity"):
        # Preferred rules are weighed by both engines (the preference level: a replica beside a job a rule
        # matches loses its weight), required ones kept as hard rules.
        anti, anti_pref = parse_affinity(
            f.raw("ext_ml_anti_affinity"), join(f.path, "ext_ml_anti_affinity"), f.issues, warnings, unknown
        )
    return Placement(
        node_selector=selector,
        required=[*selector_rules(selector), *required],
        preferred=preferred,
        anti_affinity=list(anti),
        anti_affinity_preferred=anti_pref,
    )


def _model(f: Fields) -> ModelRef:
    checksum = f.string("ext_ml_model_checksum")
    if checksum is not None and not CHECKSUM_PATTERN.match(checksum):
        f.fail(
            "range", "ext_ml_model_checksum", f'must be "{{algorithm}}:{{digest}}", got {checksum!r}'[:200]
        )
        checksum = None
    return ModelRef(
        id=f.string("ext_ml_model_id"),
        version=f.string("ext_ml_model_version"),
        provider=f.choice("ext_ml_model_provider", MODEL_PROVIDERS),
        checksum=checksum,
        format=f.choice("ext_ml_model_format", MODEL_FORMATS),
        registry=f.choice("ext_ml_model_registry", MODEL_REGISTRIES),
        registry_uri=f.string("ext_ml_model_registry_uri"),
    )


def _preemption(f: Fields) -> Preemption:
    grace = f.integer("ext_ml_preemption_grace_period_s", minimum=0)
    return Preemption(
        preemptible=f.boolean("ext_ml_preemptible"),
        grace_period_s=30 if grace is None else grace,
        checkpoint_on_preempt=bool(f.boolean("ext_ml_checkpoint_on_preempt")),
    )


def _reservation(f: Fields) -> ReservationRef | None:
    rid = f.string("ext_ml_reservation_id")
    timeout = f.integer("ext_ml_reservation_timeout_s", minimum=0)
    if rid is None:
        if timeout is not None:
            f.fail("required", "ext_ml_reservation_id", "ext_ml_reservation_timeout_s needs a reservation id")
        return None
    return ReservationRef(id=rid, timeout_s=timeout)


def _escalation(f: Fields) -> Escalation:
    after = f.integer("ext_ml_escalation_after_s", minimum=0)
    return Escalation(
        enabled=bool(f.boolean("ext_ml_priority_escalation")),
        after_s=3600 if after is None else after,
        target_class=f.enum("ext_ml_escalation_target_class", PriorityClass),
    )


def _checkpointing(f: Fields) -> Checkpointing:
    interval = f.integer("ext_ml_checkpoint_interval_s", minimum=1)
    max_count = f.integer("ext_ml_checkpoint_max_count", minimum=1)
    return Checkpointing(
        enabled=bool(f.boolean("ext_ml_checkpoint_enabled")),
        interval_s=300 if interval is None else interval,
        storage_uri=f.string("ext_ml_checkpoint_storage_uri"),
        max_count=3 if max_count is None else max_count,
    )


def parse_attributes(f: Fields, warnings: list[Issue], unknown: dict[str, Any]) -> dict[str, Any]:
    """Read every §3-§9 attribute of ``f`` and return keyword arguments for
    :class:`~placer.solver.jobs.model.Job`.

    Problems go to ``f.issues`` (the caller refuses the job when there are any), ignorable oddities to
    ``warnings``, unknown keys inside rule objects to ``unknown``. ``ext_ml_max_tokens`` and
    ``ext_ml_max_batch_size`` (worker-side limits) come back under ``metadata`` keyed by attribute name.

    >>> f = Fields({"ext_ml_tpu_type": "v5e", "ext_ml_tpu_topology": "2x4", "ext_ml_tpu_chip_count": 16})
    >>> _ = parse_attributes(f, [], {})
    >>> [(i.code, i.path) for i in f.issues]
    [('conflict', 'ext_ml_tpu_chip_count')]
    """
    gpu_count = f.integer("ext_ml_gpu_count", minimum=0)
    accelerator = _accelerator(f, gpu_count)
    precision = f.enum("ext_ml_precision", Precision)
    task = TaskGroup(
        cpu_cores=f.integer("ext_ml_cpu_cores", minimum=0) or 0,
        memory_gb=f.number("ext_ml_memory_gb", minimum=0) or 0,
        storage_gb=f.number("ext_ml_storage_gb", minimum=0) or 0,
        shm_gb=f.number("ext_ml_shm_size_gb", minimum=0) or 0,
        gpu=_gpu(f, accelerator, gpu_count, precision, warnings),
        tpu=_tpu(f, accelerator),
    )
    metadata: dict[str, Any] = {}
    for key in ("ext_ml_max_tokens", "ext_ml_max_batch_size"):
        v = f.integer(key, minimum=1)
        if v is not None:
            metadata[key] = v
    timeout = f.integer("ext_ml_timeout_seconds", minimum=0)
    priority_class = f.enum("ext_ml_priority_class", PriorityClass)
    kwargs: dict[str, Any] = {
        "accelerator": accelerator,
        "tasks": [task],
        "precision": precision,
        "runtime": f.choice("ext_ml_runtime", RUNTIMES),
        "distributed_strategy": f.enum("ext_ml_distributed_strategy", DistributedStrategy),
        "placement": _placement(f, warnings, unknown),
        "preemption": _preemption(f),
        "reservation": _reservation(f),
        "escalation": _escalation(f),
        "checkpointing": _checkpointing(f),
        "model": _model(f),
        "metadata": metadata,
    }
    if priority_class is not None:
        kwargs["priority_class"] = priority_class
    if timeout is not None:
        kwargs["duration_s"] = float(timeout)
    return kwargs
