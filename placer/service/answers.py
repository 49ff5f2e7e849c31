"""Response shapes (pydantic v2), for the OpenAPI document and for building the answers themselves.

Why models for answers that are mostly built as dicts: ``/openapi.json`` must describe what the service
really sends, and a test validates every answer it gets against that document; the Decision keeps its
own model (:class:`placer.solver.decision.Decision`), shared with ``placer place --json``.

>>> body = {"error": {"status": 404, "code": "unknown_cluster", "message": "no cluster 'c1'"}}
>>> ErrorResponse.model_validate(body).error.errors
[]
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "ClusterList",
    "ClusterView",
    "Dispatched",
    "ErrorDetail",
    "ErrorEntry",
    "ErrorResponse",
    "Health",
    "JobResult",
    "Match",
    "MatchResponse",
    "ValidateFailure",
    "ValidateResponse",
]


class ErrorEntry(BaseModel):
    """One problem: the rule (``code``), the field (``path``), and what is wrong."""

    code: str
    path: str
    message: str
    job: str | None = Field(None, description="the job the problem is in (job documents)")


class ErrorDetail(BaseModel):
    status: int
    code: str = Field(description="malformed, invalid_body, too_large, invalid_cluster, invalid_jobs, ...")
    message: str
    errors: list[ErrorEntry] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    """Every 4xx and 5xx answer: an RFC 9457 problem (``application/problem+json``) whose ``error`` member
    is placer's own shape."""

    type: str | None = Field(None, description="urn:placer:problem:<code>")
    title: str | None = Field(None, description="the HTTP reason phrase")
    status: int | None = None
    detail: str | None = Field(None, description="the message")
    instance: str | None = Field(None, description="the request path")
    error: ErrorDetail


class JobResult(BaseModel):
    """One job as ``placer validate --json`` prints it."""

    id: str
    ok: bool
    source: str
    errors: list[ErrorEntry]
    warnings: list[ErrorEntry]
    job: dict[str, Any] | None = Field(description="the normalized job (placer schema job), when valid")


class ValidateResponse(BaseModel):
    """``POST /v1/jobs:validate`` with every job valid (200)."""

    valid: bool
    jobs: list[JobResult]


class ValidateFailure(ErrorResponse):
    """``POST /v1/jobs:validate`` with an invalid job (422): the error, and every job's result."""

    jobs: list[JobResult]


class Match(BaseModel):
    job: str
    rank: int = Field(description="1 is the best job for this worker")
    preference: int = Field(description="the engine's preference score on this worker (affinity, locality)")
    priority_class: str
    priority: int
    queue: str
    replicas: list[dict[str, Any]] = Field(description="where it would run on the worker (GPU indices)")


class Dispatched(BaseModel):
    job: str
    replicas: list[dict[str, Any]] = Field(description="where it runs beside the jobs dispatched before it")


class MatchResponse(BaseModel):
    """``POST /v1/match``: the jobs the worker may run, best first."""

    worker_id: str
    matches: list[Match]
    dispatch: list[Dispatched] | None = Field(
        description="with worker.count: the best jobs, at most count, that fit on the worker together"
    )
    unmatched: list[dict[str, Any]] = Field(description="{job, reasons}: why the worker cannot run it")
    rejected: list[dict[str, Any]] = Field(description="{job, errors}: jobs that break the specification")


class ClusterView(BaseModel):
    """A stored cluster: version and what it holds."""

    id: str
    version: int
    updated_at: datetime
    summary: dict[str, Any] = Field(description="as placer cluster --json")
    running: list[str] = Field(description="ids of the running jobs")
    unavailable: list[str] = Field(description="nodes and TPU pods that are down, cordoned or tainted")
    inventory: dict[str, Any] | None = Field(
        None, description="the snapshot as a placer inventory (?inventory=true)"
    )


class ClusterList(BaseModel):
    clusters: list[str]


class Health(BaseModel):
    status: str
    clusters: int
    busy: int = Field(description="placements running or waiting")
    workers: int
