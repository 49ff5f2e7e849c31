"""Where the OJS project's JSON Schemas (openjobspec/ojs-json-schema: ``schemas/extensions/
ml-resources.schema.json``, ``schemas/v1/ml-extensions.schema.json``) and placer disagree on a document,
the text in ``shared/specs`` decides, and placer's error cites the section that does
(``docs/spec-coverage.md``, *OJS JSON Schemas*).

Each case is one attribute on an otherwise empty OJS envelope. The schema verdicts quoted in the comments
were found by validating the same attribute against those schemas (draft 2020-12)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs import read_object
from placer.solver.jobs.model import ReadResult


def _read(**attrs: Any) -> ReadResult:
    [r] = read_object({"id": "p", "type": "ml.train", "args": [], **attrs}, source="probe")
    return r


# Schema accepts, placer refuses: the error names the section of the spec that decides.
REFUSED = [
    # §3.2: identifiers are {vendor}-{model} "to prevent string fragmentation" ("A100" is the spec's own
    # bad example); the schema's gpu_type is any string.
    ({"ext_ml_gpu_type": "A100"}, "ext_ml_gpu_type", "§3.2"),
    ({"ext_ml_gpu_type": ""}, "ext_ml_gpu_type", "§3.2"),
    # §3.3: a slice of the given shape; the schema's pattern allows a zero-size axis.
    ({"ext_ml_accelerator": "tpu", "ext_ml_tpu_topology": "0x4"}, "ext_ml_tpu_topology", "§3.3"),
    # §4: an empty version pins nothing; the schema allows "".
    ({"ext_ml_model_id": "m", "ext_ml_model_version": ""}, "ext_ml_model_version", "§4"),
    # §7.2: Exists tests the key only ("value is irrelevant"); the schema accepts values with it.
    (
        {"ext_ml_affinity": {"required": [{"key": "k", "operator": "Exists", "values": ["x"]}]}},
        "ext_ml_affinity.required[0].values",
        "§7.2",
    ),
    # §8.3: the reservation must exist; "" names none. The schema allows "".
    ({"ext_ml_reservation_id": ""}, "ext_ml_reservation_id", "§8.3"),
    # §9.4 / §15.3: checkpoint URIs are storage prefixes of known backends, validated; the schema's
    # "format": "uri" is an annotation in draft 2020-12 (not asserted by default).
    ({"ext_ml_checkpoint_storage_uri": "relative/path"}, "ext_ml_checkpoint_storage_uri", "§9.4"),
    # ML extensions §4.1 lists pytorch, tensorflow, onnx, jax, sklearn, xgboost, custom; the schema
    # lists vllm, triton and other instead of sklearn, xgboost and custom.
    ({"ext_mlx_model_framework": "vllm"}, "ext_mlx_model_framework", "ML extensions v0.1.0 §4.1"),
    ({"ext_mlx_model_framework": "other"}, "ext_mlx_model_framework", "ML extensions v0.1.0 §4.1"),
]


@pytest.mark.parametrize(("attrs", "path", "section"), REFUSED)
def test_refused_where_the_schema_accepts_with_the_deciding_section(
    attrs: dict[str, Any], path: str, section: str
) -> None:
    r = _read(**attrs)
    assert not r.ok
    [error] = [e for e in r.errors if e.path == path]
    assert section in error.message


# Schema refuses, placer accepts: the spec sets no such bound (or asks for the opposite).
ACCEPTED = [
    # §3.2: 0 GPUs is refused only together with other GPU attributes; alone it is a CPU job.
    {"ext_ml_gpu_count": 0},
    # No upper bound in §3.2 / §3.3 (schema: 128 GPUs, 1024 chips; a v5p pod has 8,960 chips).
    {"ext_ml_gpu_count": 256, "ext_ml_distributed_strategy": "fsdp"},
    {"ext_ml_accelerator": "tpu", "ext_ml_tpu_chip_count": 2048},
    # Minimums the spec does not set (schema: VRAM >= 1 GB, memory > 0, cpu_cores >= 1).
    {"ext_ml_gpu_count": 1, "ext_ml_gpu_memory_gb": 0.5},
    {"ext_ml_memory_gb": 0},
    {"ext_ml_cpu_cores": 0},
    # Ranges the spec does not set (schema: grace <= 3600 s, interval 10..86400 s, <= 100 checkpoints,
    # timeout <= 7 days, max_tokens <= 10^7).
    {"ext_ml_preemption_grace_period_s": 7200},
    {"ext_ml_checkpoint_enabled": True, "ext_ml_checkpoint_interval_s": 5},
    {"ext_ml_checkpoint_max_count": 500},
    {"ext_ml_timeout_seconds": 1_209_600},
    {"ext_ml_max_tokens": 20_000_000},
    # ML extensions §4.1 lists sklearn and custom (the schema does not).
    {"ext_mlx_model_framework": "sklearn"},
    # ML extensions §4 describes model_version as semantic but does not require it (schema: x.y.z).
    {"ext_mlx_model_version": "v2.1"},
]


@pytest.mark.parametrize("attrs", ACCEPTED, ids=lambda a: ",".join(a))
def test_accepted_where_the_schema_refuses(attrs: dict[str, Any]) -> None:
    r = _read(**attrs)
    assert r.ok, r.errors


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("ext_mlx_evaluation_metrics", "ext_mlx_eval_metrics"),
        ("ext_mlx_preprocessing_input_uri", "ext_mlx_preprocess_input_uri"),
        ("ext_mlx_preprocessing_transforms", "ext_mlx_preprocess_transformations"),
        ("ext_mlx_inference_temperature", None),
    ],
)
def test_schema_only_attribute_names_are_kept_and_named(key: str, meant: str | None) -> None:
    # The schema defines evaluation_*, preprocessing_* and inference_temperature, which ML extensions
    # v0.1.0 spells eval_*, preprocess_* or does not define: kept in metadata and named in a warning
    # (with "did you mean" where a defined name is near), never applied and never dropped.
    value: Any = (
        {"acc": 0.9} if key.endswith("metrics") else ["x"] if key.endswith("transforms") else "s3://b/d"
    )
    if key.endswith("temperature"):
        value = 0.7
    r = _read(**{key: value})
    assert r.ok and r.job is not None
    [w] = [w for w in r.warnings if w.path == key]
    assert w.code == "unknown" and (meant is None or meant in w.message)
    assert r.job.unknown[key] == value
