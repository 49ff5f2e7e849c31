"""OJS ML pipeline extensions v0.1.0: the ``ext_mlx_*`` attributes of §8, typed and checked.

Why a placer reads them at all: §7 scheduling hints change placement (GPU affinity, preemption policy,
spot preference, data locality), and the artifact URIs of §5/§6 must be validated (§12.1, §12.4) before a
worker is told to fetch from them. Everything else is informational (§3: "do not affect scheduling") and
is kept, validated but untouched, in ``Job.metadata`` under its attribute name, so experiment trackers
downstream see exactly what the producer sent (§5.1: hyperparameters MUST be preserved exactly).

Checks: the types of the §8 tables; the closed lists (framework, inference mode, data formats, artifact
registry, GPU affinity, preemption policy, spot preference); integers >= 1 for epochs, batch size and the
per-request timeout; ``ext_mlx_preprocess_transformations`` items are objects with a string ``type``;
``ext_mlx_eval_metrics`` is an array of strings; each ``ext_mlx_eval_thresholds`` entry is an object with a
numeric ``min`` and/or ``max`` (``min <= max``); ``ext_mlx_preprocess_split_ratios`` values are numbers in
[0, 1] summing to 1 within :data:`SPLIT_TOLERANCE` (§5.3 "MUST sum to 1.0", "SHOULD validate"). URI
schemes, traversal and credentials are checked by :mod:`placer.solver.jobs.guards` (for every format).

>>> from placer.solver.jobs.fields import Fields
>>> f = Fields({"ext_mlx_scheduling_gpu_affinity": "dedicated", "ext_mlx_run_id": "run-1"})
>>> hints = parse_mlx(f)
>>> hints.gpu_affinity.value, hints.metadata, f.issues
('dedicated', {'ext_mlx_run_id': 'run-1'}, [])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.model import GpuAffinity, PreemptionPolicy, SpotPreference

__all__ = [
    "ARTIFACT_REGISTRIES",
    "DATA_FORMATS",
    "FRAMEWORKS",
    "INFERENCE_MODES",
    "MLX_ATTRIBUTES",
    "SPLIT_TOLERANCE",
    "URI_ATTRIBUTES",
    "MlxHints",
    "parse_mlx",
]

#: Largest accepted difference between the sum of split ratios and 1.
SPLIT_TOLERANCE = 1e-6

FRAMEWORKS: tuple[str, ...] = ("pytorch", "tensorflow", "onnx", "jax", "sklearn", "xgboost", "custom")
INFERENCE_MODES: tuple[str, ...] = ("batch", "streaming", "realtime")
DATA_FORMATS: tuple[str, ...] = ("csv", "parquet", "json", "jsonl", "tfrecord", "arrow", "custom")
ARTIFACT_REGISTRIES: tuple[str, ...] = ("s3", "gcs", "azure_blob", "mlflow", "wandb", "huggingface", "local")

_STRINGS = (
    "ext_mlx_model_name", "ext_mlx_model_version", "ext_mlx_experiment_id", "ext_mlx_run_id",
    "ext_mlx_eval_baseline_run_id",
)  # fmt: skip
#: Attributes holding a URI (checked by the guards with the artifact schemes).
URI_ATTRIBUTES: tuple[str, ...] = (
    "ext_mlx_training_dataset_uri", "ext_mlx_training_validation_uri", "ext_mlx_training_checkpoint_uri",
    "ext_mlx_training_resume_from", "ext_mlx_training_output_model_uri", "ext_mlx_inference_model_uri",
    "ext_mlx_inference_input_uri", "ext_mlx_inference_output_uri", "ext_mlx_preprocess_input_uri",
    "ext_mlx_preprocess_output_uri", "ext_mlx_eval_dataset_uri", "ext_mlx_eval_model_uri",
    "ext_mlx_eval_output_uri", "ext_mlx_artifact_model_uri", "ext_mlx_artifact_dataset_uri",
    "ext_mlx_artifact_checkpoint_uri", "ext_mlx_artifact_output_uri",
)  # fmt: skip
_CHOICES: dict[str, tuple[str, ...]] = {
    "ext_mlx_model_framework": FRAMEWORKS,
    "ext_mlx_inference_mode": INFERENCE_MODES,
    "ext_mlx_preprocess_input_format": DATA_FORMATS,
    "ext_mlx_preprocess_output_format": DATA_FORMATS,
    "ext_mlx_artifact_registry": ARTIFACT_REGISTRIES,
}
_OBJECTS = ("ext_mlx_model_input_schema", "ext_mlx_model_output_schema", "ext_mlx_training_hyperparameters")
_POSITIVE_INTS = ("ext_mlx_training_epochs", "ext_mlx_inference_batch_size", "ext_mlx_inference_timeout_ms")
_HINTS = (
    "ext_mlx_scheduling_gpu_affinity", "ext_mlx_scheduling_preemption_policy",
    "ext_mlx_scheduling_spot_preference", "ext_mlx_scheduling_data_locality",
)  # fmt: skip

#: Every attribute of extensions §8; other ``ext_mlx_*`` keys go to ``Job.unknown``.
MLX_ATTRIBUTES: frozenset[str] = frozenset(
    {
        *_STRINGS, *URI_ATTRIBUTES, *_CHOICES, *_OBJECTS, *_POSITIVE_INTS, *_HINTS,
        "ext_mlx_eval_metrics", "ext_mlx_eval_thresholds",
        "ext_mlx_preprocess_transformations", "ext_mlx_preprocess_split_ratios",
    }
)  # fmt: skip


@dataclass
class MlxHints:
    """What the ``ext_mlx_*`` attributes of one envelope mean for placement, and the rest as metadata."""

    gpu_affinity: GpuAffinity | None = None
    preemption_policy: PreemptionPolicy | None = None
    spot_preference: SpotPreference | None = None
    data_locality: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def _number(v: Any) -> TypeGuard[int | float]:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _transformations(f: Fields) -> list[Any] | None:
    items = f.array("ext_mlx_preprocess_transformations")
    if items is None:
        return None
    start = len(f.issues)
    base = join(f.path, "ext_mlx_preprocess_transformations")
    for i, t in enumerate(items):
        sub = Fields(t, join(base, i), f.issues) if isinstance(t, Mapping) else None
        if sub is None:
            f.fail(
                "type", f"ext_mlx_preprocess_transformations[{i}]", f"must be an object, got {type_name(t)}"
            )
            continue
        sub.string("type", required=True)
        if sub.has("config"):
            sub.mapping("config")
    return items if len(f.issues) == start else None


def _metrics(f: Fields) -> list[Any] | None:
    items = f.array("ext_mlx_eval_metrics")
    if items is None:
        return None
    bad = [i for i, m in enumerate(items) if not isinstance(m, str) or not m.strip()]
    for i in bad:
        f.fail(
            "type", f"ext_mlx_eval_metrics[{i}]", f"must be a metric name string, got {type_name(items[i])}"
        )
    return None if bad else items


def _thresholds(f: Fields) -> Mapping[str, Any] | None:
    th = f.mapping("ext_mlx_eval_thresholds")
    if th is None:
        return None
    start = len(f.issues)
    for metric, bound in th.items():
        key = f"ext_mlx_eval_thresholds.{metric}"
        if not isinstance(bound, Mapping):
            f.fail("type", key, f"must be an object with min and/or max, got {type_name(bound)}")
            continue
        lo, hi = bound.get("min"), bound.get("max")
        if lo is None and hi is None:
            f.fail("required", key, "needs a min or a max")
        for name, v in (("min", lo), ("max", hi)):
            if v is not None and not _number(v):
                f.fail("type", f"{key}.{name}", f"must be a number, got {type_name(v)}")
        if _number(lo) and _number(hi) and lo > hi:
            f.fail("range", key, f"min {lo} is greater than max {hi}")
    return th if len(f.issues) == start else None


def _split_ratios(f: Fields) -> Mapping[str, Any] | None:
    ratios = f.mapping("ext_mlx_preprocess_split_ratios")
    if ratios is None:
        return None
    start = len(f.issues)
    if not ratios:
        f.fail("range", "ext_mlx_preprocess_split_ratios", "needs at least one split")
    for name, v in ratios.items():
        key = f"ext_mlx_preprocess_split_ratios.{name}"
        if not _number(v):
            f.fail("type", key, f"must be a number, got {type_name(v)}")
        elif not 0 <= v <= 1:
            f.fail("range", key, f"must be between 0 and 1, got {v}")
    if len(f.issues) == start and ratios:
        total = math.fsum(ratios.values())
        if abs(total - 1.0) > SPLIT_TOLERANCE:
            f.fail(
                "range",
                "ext_mlx_preprocess_split_ratios",
                f"ratios must sum to 1.0 (§5.3), they sum to {total}",
            )
    return ratios if len(f.issues) == start else None


def parse_mlx(f: Fields) -> MlxHints:
    """Read every ``ext_mlx_*`` attribute of extensions §8 from ``f``; problems go to ``f.issues``.

    >>> f = Fields({"ext_mlx_preprocess_split_ratios": {"train": 0.8, "test": 0.1}})
    >>> _ = parse_mlx(f)
    >>> [(i.code, i.path) for i in f.issues]
    [('range', 'ext_mlx_preprocess_split_ratios')]
    """
    meta: dict[str, Any] = {}
    for key in (*_STRINGS, *URI_ATTRIBUTES):
        v = f.string(key)
        if v is not None:
            meta[key] = v
    for key, allowed in _CHOICES.items():
        choice = f.choice(key, allowed)
        if choice is not None:
            meta[key] = choice
    for key in _OBJECTS:
        obj = f.mapping(key)
        if obj is not None:
            meta[key] = obj  # the producer's object itself: §5.1 "preserve exactly"
    for key in _POSITIVE_INTS:
        count = f.integer(key, minimum=1)
        if count is not None:
            meta[key] = count
    for key, getter in (
        ("ext_mlx_preprocess_transformations", _transformations),
        ("ext_mlx_eval_metrics", _metrics),
        ("ext_mlx_eval_thresholds", _thresholds),
        ("ext_mlx_preprocess_split_ratios", _split_ratios),
    ):
        got = getter(f)
        if got is not None:
            meta[key] = got
    return MlxHints(
        gpu_affinity=f.enum("ext_mlx_scheduling_gpu_affinity", GpuAffinity),
        preemption_policy=f.enum("ext_mlx_scheduling_preemption_policy", PreemptionPolicy),
        spot_preference=f.enum("ext_mlx_scheduling_spot_preference", SpotPreference),
        data_locality=f.string("ext_mlx_scheduling_data_locality"),
        metadata=meta,
    )
