"""OJS ML resources v0.1.0: the ``meta``-based form, translated onto the v0.3.0 flat attributes.

Why translate rather than parse separately: v0.1.0 (``meta.resources``, ``meta.affinity``,
``meta.preemption``, ``meta.checkpoint``) says the same things as v0.3.0's ``ext_ml_*`` attributes, and an
envelope may carry both. Mapping v0.1 values onto v0.3 keys lets one strict parser check them, and makes
"both forms set the same thing differently" a plain comparison (a ``conflict``). Issues found in a
translated value are reported at its v0.1 path (``meta.resources.gpu.count``), not the v0.3 key.

Mapping (v0.1.0 §2.2, §3, §4.2, §5.1 -> v0.3.0):

==================================  ===========================================================
``meta.resources.gpu.count``        ``ext_ml_gpu_count``
``meta.resources.gpu.type``         ``ext_ml_gpu_type``
``meta.resources.gpu.memory_gb``    ``ext_ml_gpu_memory_gb``
``meta.resources.cpu.cores``        ``ext_ml_cpu_cores``
``meta.resources.memory_gb``        ``ext_ml_memory_gb``
``meta.resources.storage_gb``       ``ext_ml_storage_gb``
``meta.affinity``                   ``ext_ml_affinity`` (all eight v0.3 operators accepted)
``meta.preemption.*``               ``ext_ml_preemptible``, ``ext_ml_preemption_grace_period_s``,
                                    ``ext_ml_checkpoint_on_preempt``
``meta.checkpoint.*``               ``ext_ml_checkpoint_enabled``/``_interval_s``/``_storage_uri``,
                                    ``max_checkpoints`` -> ``ext_ml_checkpoint_max_count``
==================================  ===========================================================

v0.1.0 gives ``gpu.count`` a default of 0, which would contradict any ``gpu.type`` it accompanies; an
absent count therefore stays absent and v0.3.0's rule applies (1 when any GPU attribute is set). An absent
``preemptible`` likewise stays absent (the class default, which is "not preemptible" for the on-demand
default class, as v0.1.0 says).

>>> flat, origin = translate_meta({"resources": {"gpu": {"count": 2}}}, [], {})
>>> flat, origin
({'ext_ml_gpu_count': 2}, {'ext_ml_gpu_count': 'meta.resources.gpu.count'})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, JobValidationError, issue
from placer.solver.jobs.fields import join, type_name

__all__ = ["V01_META_KEYS", "merge_forms", "parse_worker_labels", "translate_meta"]

#: meta sub-object -> {v0.1 field: v0.3 attribute}; nested objects are handled by :func:`translate_meta`.
_RESOURCES = {"memory_gb": "ext_ml_memory_gb", "storage_gb": "ext_ml_storage_gb"}
_GPU = {"count": "ext_ml_gpu_count", "type": "ext_ml_gpu_type", "memory_gb": "ext_ml_gpu_memory_gb"}
_CPU = {"cores": "ext_ml_cpu_cores"}
_PREEMPTION = {
    "preemptible": "ext_ml_preemptible",
    "grace_period_s": "ext_ml_preemption_grace_period_s",
    "checkpoint_on_preempt": "ext_ml_checkpoint_on_preempt",
}
_CHECKPOINT = {
    "enabled": "ext_ml_checkpoint_enabled",
    "interval_s": "ext_ml_checkpoint_interval_s",
    "storage_uri": "ext_ml_checkpoint_storage_uri",
    "max_checkpoints": "ext_ml_checkpoint_max_count",
}

#: ``meta`` keys this module consumes (the rest of ``meta`` is plain metadata).
V01_META_KEYS: frozenset[str] = frozenset({"resources", "affinity", "preemption", "checkpoint"})


def _copy(
    obj: Any,
    path: str,
    table: Mapping[str, str],
    flat: dict[str, Any],
    origin: dict[str, str],
    issues: list[Issue],
    unknown: dict[str, Any],
    nested: Iterable[str] = (),
) -> Mapping[str, Any]:
    if not isinstance(obj, Mapping):
        issues.append(issue("type", path, f"must be an object, got {type_name(obj)}"))
        return {}
    for k, v in obj.items():
        if k in table:
            if v is not None:
                flat[table[k]] = v
                origin[table[k]] = join(path, k)
        elif k not in nested:
            unknown[join(path, str(k))] = v
    return obj


def translate_meta(
    meta: Mapping[str, Any], issues: list[Issue], unknown: dict[str, Any], *, path: str = "meta"
) -> tuple[dict[str, Any], dict[str, str]]:
    """The v0.3 attributes ``meta`` expresses in v0.1.0 form, and for each the v0.1 path it came from.

    Type problems of the containers (``meta.resources`` not an object, ...) go to ``issues``; keys v0.1.0
    does not define inside them go to ``unknown`` under their path. Values themselves are checked later by
    the v0.3 parser.

    >>> translate_meta({"resources": "big"}, issues := [], {})[0], [(i.code, i.path) for i in issues]
    ({}, [('type', 'meta.resources')])
    """
    flat: dict[str, Any] = {}
    origin: dict[str, str] = {}
    if meta.get("resources") is not None:
        p = join(path, "resources")
        res = _copy(meta["resources"], p, _RESOURCES, flat, origin, issues, unknown, nested=("gpu", "cpu"))
        if res.get("gpu") is not None:
            _copy(res["gpu"], join(p, "gpu"), _GPU, flat, origin, issues, unknown)
        if res.get("cpu") is not None:
            _copy(res["cpu"], join(p, "cpu"), _CPU, flat, origin, issues, unknown)
    if meta.get("affinity") is not None:
        flat["ext_ml_affinity"] = meta["affinity"]
        origin["ext_ml_affinity"] = join(path, "affinity")
    if meta.get("preemption") is not None:
        _copy(meta["preemption"], join(path, "preemption"), _PREEMPTION, flat, origin, issues, unknown)
    if meta.get("checkpoint") is not None:
        _copy(meta["checkpoint"], join(path, "checkpoint"), _CHECKPOINT, flat, origin, issues, unknown)
    return flat, origin


def merge_forms(
    flat: Mapping[str, Any], v01: Mapping[str, Any], origin: Mapping[str, str], issues: list[Issue]
) -> dict[str, Any]:
    """``flat`` (the envelope's own ``ext_ml_*`` values) plus the translated v0.1 values.

    A value both forms set differently is a ``conflict`` reported at the v0.1 path; equal values are fine
    (``4`` and ``4.0`` are equal, as JSON numbers).

    >>> merge_forms({"ext_ml_gpu_count": 4}, {"ext_ml_gpu_count": 2},
    ...             {"ext_ml_gpu_count": "meta.resources.gpu.count"}, issues := [])
    {'ext_ml_gpu_count': 4}
    >>> [(i.code, i.path) for i in issues]
    [('conflict', 'meta.resources.gpu.count')]
    """
    merged = dict(flat)
    for k, v in v01.items():
        mine = flat.get(k)
        if mine is None:
            merged[k] = v
        elif not _same(mine, v):
            issues.append(issue("conflict", origin[k], f"{v!r} contradicts {k} = {mine!r}"[:300]))
    return merged


def _same(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers (``True != 1`` here), containers compare deeply."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b


def parse_worker_labels(labels: Any, *, path: str = "labels") -> dict[str, str]:
    """v0.1.0 §2.3 worker labels (``"gpu_count:4"``, ``"spot:true"``) as a ``{key: value}`` dict.

    The key is what precedes the first ``:``, the value everything after it (so ``"zone:us:1a"`` is key
    ``zone``, value ``us:1a``). Values stay strings: the topology importer decides what is a number.
    Raises :class:`~placer.solver.jobs.errors.JobValidationError` listing every bad entry (not a list, not a
    string, no ``:``, empty key or value, one key with two different values); never drops one silently.

    >>> parse_worker_labels(["gpu:nvidia-a100", "gpu_count:4", "spot:true"])
    {'gpu': 'nvidia-a100', 'gpu_count': '4', 'spot': 'true'}
    >>> try:
    ...     parse_worker_labels(["gpu_count"])
    ... except JobValidationError as e:
    ...     [(i.code, i.path) for i in e.issues]
    [('malformed', 'labels[0]')]
    """
    if not isinstance(labels, list):
        raise JobValidationError(
            [issue("type", path, f"must be an array of strings, got {type_name(labels)}")]
        )
    out: dict[str, str] = {}
    problems: list[Issue] = []
    for i, label in enumerate(labels):
        p = join(path, i)
        if not isinstance(label, str):
            problems.append(issue("type", p, f"must be a string, got {type_name(label)}"))
            continue
        key, sep, value = label.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            problems.append(issue("malformed", p, f'must be "key:value", got {label!r}'[:200]))
        elif key in out and out[key] != value:
            problems.append(
                issue("duplicate", p, f"label {key!r} is given twice: {out[key]!r} and {value!r}")
            )
        else:
            out[key] = value
    if problems:
        raise JobValidationError(problems)
    return out
