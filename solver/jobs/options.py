"""Knobs that change how jobs are read and validated, in one frozen object.

Why one object: the CLI, the HTTP service and the simulator all read jobs; they must apply the same
queue configuration, upper bounds and deny-lists, so these travel together rather than as loose keyword
arguments.

>>> ReadOptions().max_gpus_per_job
512
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from solver.jobs.queues import QueueConfig

#: Administrative label keys a job producer may not select on (OJS ML §15.4 names these two).
DEFAULT_DENIED_SELECTOR_KEYS: frozenset[str] = frozenset({"cost_center", "security_zone"})

#: URI schemes accepted for checkpoint storage (OJS ML §9.4).
CHECKPOINT_URI_SCHEMES: frozenset[str] = frozenset({"s3", "gs", "az", "file"})

#: URI schemes accepted for model registry and ML-extension artifact URIs (OJS ML §5.1, extensions §6).
ARTIFACT_URI_SCHEMES: frozenset[str] = frozenset({"s3", "gs", "az", "hdfs", "mlflow", "wandb", "hf", "file"})


@dataclass(frozen=True)
class ReadOptions:
    """How to read and validate jobs.

    ``queues`` maps queue name to its OJS §10 configuration (defaults and limits). Upper bounds apply to
    every job whatever its queue (OJS ML §15.1: "a malicious client requesting 1000 GPUs MUST be
    rejected"). ``sss_awareness`` is the default SSS ``awarenessPolicy`` (the spec's default is Reject).
    """

    queues: Mapping[str, QueueConfig] = field(default_factory=dict)
    max_gpus_per_job: int = 512
    max_tpu_chips_per_job: int = 9216
    max_memory_gb_per_job: float = 1_048_576.0
    max_replicas_per_job: int = 10_000
    max_timeout_seconds: int = 90 * 24 * 3600
    denied_selector_keys: frozenset[str] = DEFAULT_DENIED_SELECTOR_KEYS
    checkpoint_uri_schemes: frozenset[str] = CHECKPOINT_URI_SCHEMES
    artifact_uri_schemes: frozenset[str] = ARTIFACT_URI_SCHEMES
    allowed_uri_prefixes: tuple[str, ...] = ()
    allowed_model_ids: frozenset[str] | None = None
    sss_awareness: str = "Reject"
    now: datetime | None = None
