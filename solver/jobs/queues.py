"""Queue configuration of OJS ML resources §10: ``ml_defaults``, ``ml_limits`` and the GPU budget.

A queue-config file holds one ``{"queue": ..., "config": {...}}`` object or a list of them (the §10.1 and
§10.2 examples are exactly this shape). Defaults fill only attributes the producer left unset (§10.1);
limit violations are rejections (§10.2, HTTP 422); the GPU budget (§10.3) is never a rejection, the
solver keeps over-budget jobs pending.

>>> qc = QueueConfig.model_validate({"queue": "q", "config": {"ml_limits": {"max_gpu_count": 4}}})
>>> qc.config.ml_limits.max_gpu_count
4
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class MlLimits(BaseModel):
    """§10.2 ``ml_limits`` (and §10.3 budget fields, which are not rejections)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_gpu_count: int | None = Field(default=None, ge=0)
    max_gpu_memory_gb: float | None = Field(default=None, ge=0)
    max_memory_gb: float | None = Field(default=None, ge=0)
    max_timeout_seconds: int | None = Field(default=None, ge=0)
    allowed_gpu_types: list[str] | None = None
    allowed_priority_classes: list[str] | None = None
    max_concurrent_gpu_jobs: int | None = Field(default=None, ge=0)
    max_total_gpus: int | None = Field(default=None, ge=0)


class QueueSettings(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    ml_defaults: dict[str, Any] = Field(default_factory=dict)
    ml_limits: MlLimits = Field(default_factory=MlLimits)


class QueueConfig(BaseModel):
    """One queue's configuration, in the OJS §10 envelope ``{"queue", "config"}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    queue: str = Field(min_length=1)
    config: QueueSettings = Field(default_factory=QueueSettings)
