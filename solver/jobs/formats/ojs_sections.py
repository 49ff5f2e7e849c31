"""Which section of the OJS documents decides each attribute: errors about it cite that section.

Why: other OJS tools validate with the project's JSON Schemas (openjobspec/ojs-json-schema), and where
those schemas and placer disagree on a document (``docs/spec-coverage.md``, *OJS JSON Schemas*) a user
needs to see which text placer follows. Every error of the OJS reader whose path starts at an attribute
named here gets ``(<document> §<section>)`` appended, unless its message already cites a section.

>>> from placer.solver.jobs.errors import Issue
>>> [i.message for i in cited([Issue(code="range", path="ext_ml_tpu_topology", message="bad")])]
['bad (OJS ML resources v0.3.0 §3.3)']
>>> cited([Issue(code="range", path="meta.resources.gpu.count", message="must be >= 0")])[0].message
'must be >= 0 (OJS ML resources v0.1.0 §2.2)'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from placer.solver.jobs.errors import Issue

__all__ = ["SECTIONS", "cited", "section_of"]

_V3, _V1, _X = "OJS ML resources v0.3.0", "OJS ML resources v0.1.0", "OJS ML extensions v0.1.0"


def _each(section: str, *keys: str) -> dict[str, str]:
    return dict.fromkeys(keys, section)


#: Attribute (or path prefix) -> the document and section that define it.
SECTIONS: dict[str, str] = {
    **_each(f"{_V3} §3.1", "ext_ml_accelerator"),
    **_each(
        f"{_V3} §3.2",
        "ext_ml_gpu_type",
        "ext_ml_gpu_count",
        "ext_ml_gpu_memory_gb",
        "ext_ml_gpu_compute_capability",
        "ext_ml_gpu_interconnect",
    ),
    **_each(f"{_V3} §3.3", "ext_ml_tpu_type", "ext_ml_tpu_topology", "ext_ml_tpu_chip_count"),
    **_each(f"{_V3} §3.4", "ext_ml_memory_gb", "ext_ml_storage_gb", "ext_ml_shm_size_gb"),
    **_each(f"{_V3} §3.5", "ext_ml_cpu_cores"),
    **_each(
        f"{_V3} §4",
        "ext_ml_model_id",
        "ext_ml_model_version",
        "ext_ml_model_checksum",
        "ext_ml_model_format",
        "ext_ml_model_provider",
    ),
    **_each(f"{_V3} §5", "ext_ml_model_registry", "ext_ml_model_registry_uri"),
    **_each(
        f"{_V3} §6",
        "ext_ml_max_tokens",
        "ext_ml_max_batch_size",
        "ext_ml_timeout_seconds",
        "ext_ml_precision",
        "ext_ml_distributed_strategy",
        "ext_ml_runtime",
    ),
    **_each(f"{_V3} §7.1", "ext_ml_node_selector"),
    **_each(f"{_V3} §7.2", "ext_ml_affinity"),
    **_each(f"{_V3} §7.3", "ext_ml_anti_affinity"),
    **_each(f"{_V3} §8.1", "ext_ml_priority_class"),
    **_each(
        f"{_V3} §8.2",
        "ext_ml_preemptible",
        "ext_ml_preemption_grace_period_s",
        "ext_ml_checkpoint_on_preempt",
    ),
    **_each(f"{_V3} §8.3", "ext_ml_reservation_id", "ext_ml_reservation_timeout_s"),
    **_each(
        f"{_V3} §8.4",
        "ext_ml_priority_escalation",
        "ext_ml_escalation_after_s",
        "ext_ml_escalation_target_class",
    ),
    **_each(
        f"{_V3} §9.1",
        "ext_ml_checkpoint_enabled",
        "ext_ml_checkpoint_interval_s",
        "ext_ml_checkpoint_storage_uri",
        "ext_ml_checkpoint_max_count",
    ),
    **_each(f"{_V1} §2.2", "meta.resources"),
    **_each(f"{_V1} §3.1", "meta.affinity"),
    **_each(f"{_V1} §4.2", "meta.checkpoint"),
    **_each(f"{_V1} §5.1", "meta.preemption"),
    **_each(f"{_X} §4", "ext_mlx_model_name", "ext_mlx_model_version"),
    **_each(f"{_X} §3", "ext_mlx_experiment_id", "ext_mlx_run_id"),
    **_each(f"{_X} §4.1", "ext_mlx_model_framework"),
    **_each(f"{_X} §4.2", "ext_mlx_model_input_schema", "ext_mlx_model_output_schema"),
    **_each(f"{_X} §5.1", "ext_mlx_training"),
    **_each(f"{_X} §5.2", "ext_mlx_inference"),
    **_each(f"{_X} §5.3", "ext_mlx_preprocess"),
    **_each(f"{_X} §5.4", "ext_mlx_eval"),
    **_each(f"{_X} §6", "ext_mlx_artifact"),
    **_each(f"{_X} §7", "ext_mlx_scheduling"),
}

_SEGMENT = re.compile(r"[.\[]")


def section_of(path: str) -> str | None:
    """The section deciding the attribute at ``path``: the longest key of :data:`SECTIONS` that is the
    path, a dotted or indexed prefix of it, or (for ``ext_mlx_`` families) the start of its first
    segment."""
    head = _SEGMENT.split(path, 1)[0]
    for key in sorted(SECTIONS, key=len, reverse=True):
        if path == key or path.startswith((key + ".", key + "[")) or head.startswith(key + "_"):
            return SECTIONS[key]
    return None


def cited(issues: Iterable[Issue]) -> list[Issue]:
    """``issues`` with the deciding section appended to each message that names none."""
    out: list[Issue] = []
    for i in issues:
        where = None if "§" in i.message else section_of(i.path)
        out.append(i if where is None else Issue(code=i.code, path=i.path, message=f"{i.message} ({where})"))
    return out
