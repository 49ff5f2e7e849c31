"""Knobs that change how jobs are read and validated, in one frozen object.

Why one object: the CLI, the HTTP service and the simulator all read jobs; they must apply the same
queue configuration, upper bounds and deny-lists, so these travel together rather than as loose keyword
arguments.

The administrative part (upper bounds, selector deny-list, URI schemes and prefixes, model allow-list, the
SSS default ``awarenessPolicy``) can also come from a file, ``placer validate|place --limits FILE``: a
JSON/YAML object with any of the :class:`ReadLimits` keys, the others keeping their defaults. Lists
*replace* the default lists (so an operator can also shorten them); ``allowed_model_ids: null`` means no
allow-list. A wrong type, an unknown key, a negative bound or a malformed scheme refuses the whole file.

>>> ReadOptions().max_gpus_per_job
512
>>> opts = load_read_limits('{"max_gpus_per_job": 64, "sss_awareness": "Warn"}').apply(ReadOptions())
>>> opts.max_gpus_per_job, opts.sss_awareness, opts.max_tpu_chips_per_job
(64, 'Warn', 9216)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from placer.solver.jobs.errors import JobValidationError, issue
from placer.solver.jobs.queues import QueueConfig, pydantic_issues

__all__ = [
    "ARTIFACT_URI_SCHEMES",
    "CHECKPOINT_URI_SCHEMES",
    "DEFAULT_DENIED_SELECTOR_KEYS",
    "ReadLimits",
    "ReadOptions",
    "load_read_limits",
    "load_read_limits_file",
]

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
    #: Prefixes a job's URIs must also start with, by its queue and by its tenant (OJS ML extensions §12.1:
    #: "allowlists for permitted URI prefixes per queue or tenant"); a queue or tenant not named has none.
    uri_prefixes_by_queue: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uri_prefixes_by_tenant: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Whether URIs may name private addresses (10/8, 172.16/12, 192.168/16, fc00::/7): on-premises
    #: storage. Off by default (SSRF, OJS ML §15.2); loopback, link-local and metadata never are.
    private_hosts_allowed: bool = False
    allowed_model_ids: frozenset[str] | None = None
    #: Node labels the site reads as topology levels (``--topology-labels``: label -> ``rack``, ``block``
    #: or ``zone``), beside the ones placer knows by default: a Kueue Job or Workload may name them in
    #: ``podset-required-topology`` and ``podset-slice-required-topology`` (the node importer reads the
    #: same mapping, so the job's level and the nodes' agree).
    topology_levels: Mapping[str, str] = field(default_factory=dict)
    sss_awareness: str = "Reject"
    now: datetime | None = None


_DEFAULTS = ReadOptions()
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*$")


class ReadLimits(BaseModel):
    """The administrative settings of :class:`ReadOptions` as an operator writes them in a ``--limits`` file.

    Defaults are those of :class:`ReadOptions`; only the keys present in a file change anything
    (:meth:`apply`). Why a file and not flags: the lists (deny-list, schemes, prefixes, models) are long and
    site-specific, and one file can be shared by ``validate``, ``place`` and a deployment's config.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    max_gpus_per_job: int = Field(default=_DEFAULTS.max_gpus_per_job, ge=0)
    max_tpu_chips_per_job: int = Field(default=_DEFAULTS.max_tpu_chips_per_job, ge=0)
    max_memory_gb_per_job: float = Field(default=_DEFAULTS.max_memory_gb_per_job, ge=0)
    max_replicas_per_job: int = Field(default=_DEFAULTS.max_replicas_per_job, ge=0)
    max_timeout_seconds: int = Field(default=_DEFAULTS.max_timeout_seconds, ge=0)
    denied_selector_keys: list[str] = Field(default_factory=lambda: sorted(DEFAULT_DENIED_SELECTOR_KEYS))
    checkpoint_uri_schemes: list[str] = Field(default_factory=lambda: sorted(CHECKPOINT_URI_SCHEMES))
    artifact_uri_schemes: list[str] = Field(default_factory=lambda: sorted(ARTIFACT_URI_SCHEMES))
    allowed_uri_prefixes: list[str] = Field(default_factory=list)
    uri_prefixes_by_queue: dict[str, list[str]] = Field(default_factory=dict)
    uri_prefixes_by_tenant: dict[str, list[str]] = Field(default_factory=dict)
    private_hosts_allowed: bool = False
    allowed_model_ids: list[str] | None = None
    sss_awareness: Literal["Reject", "Warn", "Ignore"] = "Reject"

    @field_validator("checkpoint_uri_schemes", "artifact_uri_schemes")
    @classmethod
    def _schemes(cls, value: list[str]) -> list[str]:
        """Schemes compare case-insensitively (RFC 3986 §3.1): kept lower case, refused when malformed."""
        out = [v.lower() for v in value]
        bad = [v for v in out if not _SCHEME.match(v)]
        if bad:
            raise ValueError(f"{bad[0][:40]!r} is not a URI scheme (a letter, then letters, digits, + . -)")
        return out

    @field_validator("denied_selector_keys", "allowed_uri_prefixes", "allowed_model_ids")
    @classmethod
    def _non_empty(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and any(not v.strip() for v in value):
            raise ValueError("entries must be non-empty strings")
        return value

    @field_validator("uri_prefixes_by_queue", "uri_prefixes_by_tenant")
    @classmethod
    def _non_empty_lists(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for name, prefixes in value.items():
            if not name.strip():
                raise ValueError("names must be non-empty strings")
            if not prefixes or any(not p.strip() for p in prefixes):
                raise ValueError(f"{name!r}: give one or more non-empty prefixes")
        return value

    def apply(self, options: ReadOptions) -> ReadOptions:
        """``options`` with the settings this file sets (and only those) replaced."""
        changes: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if name == "allowed_uri_prefixes":
                value = tuple(value)
            elif name in ("uri_prefixes_by_queue", "uri_prefixes_by_tenant"):
                value = {k: tuple(v) for k, v in value.items()}
            elif isinstance(value, list):
                value = frozenset(value)
            changes[name] = value
        return replace(options, **changes)


def load_read_limits(obj_or_text: Any, source: str = "") -> ReadLimits:
    """A :class:`ReadLimits` from its JSON/YAML text or parsed object; raises
    :class:`~placer.solver.jobs.errors.JobValidationError` (every issue at once) for a bad file.

    >>> try:
    ...     load_read_limits({"max_gpus_per_job": "8", "colour": 1})
    ... except JobValidationError as e:
    ...     [(i.code, i.path) for i in e.issues]
    [('type', 'max_gpus_per_job'), ('malformed', 'colour')]
    """
    if isinstance(obj_or_text, str):
        from placer.solver.jobs.parse import parse_json_or_yaml

        obj_or_text = parse_json_or_yaml(obj_or_text, source=source)
    if not isinstance(obj_or_text, Mapping):
        raise JobValidationError([issue("type", source or "<limits>", "a limits file must be an object")])
    try:
        return ReadLimits.model_validate(obj_or_text)
    except ValidationError as e:
        raise JobValidationError(pydantic_issues(e, "")) from None


def load_read_limits_file(path: str | Path) -> ReadLimits:
    """:func:`load_read_limits` over a UTF-8 JSON or YAML file (``OSError`` when it cannot be read)."""
    from placer.solver.jobs.parse import read_utf8_file

    return load_read_limits(read_utf8_file(path), source=str(path))
