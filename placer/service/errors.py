"""Errors the HTTP service answers with: one JSON shape for every status, never a traceback.

Why one exception type: every layer (body reading, body validation, cluster import, the state store)
finds a client's mistake at a different depth, often in a worker thread; raising :class:`ApiError` there
and turning it into a response in one handler keeps the body shape identical everywhere::

    {"error": {"status": 422, "code": "invalid_cluster", "message": "...",
               "errors": [{"code": "...", "path": "...", "message": "..."}]}}

``errors`` lists the individual problems, each naming the field (``path``) and the rule (``code``,
for job problems one of :data:`placer.solver.jobs.ISSUE_CODES`).

>>> e = ApiError(413, "too_large", "the body is 20 bytes; the limit is 10")
>>> e.body()["error"]["status"], e.body()["error"]["errors"]
(413, [])
>>> issues_of_topology(TopologyError([Problem("cluster", "nodes[0] (a)", "cpu_cores: must be >= 0")]))
[{'code': 'invalid', 'path': 'cluster.nodes[0] (a)', 'message': 'cpu_cores: must be >= 0'}]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from placer.solver.jobs.errors import Issue
from placer.topology.errors import Problem, TopologyError

__all__ = [
    "MAX_ERRORS",
    "PROBLEM_JSON",
    "ApiError",
    "issues",
    "issues_of_topology",
    "problem",
    "unprocessable",
]

#: Most individual problems listed in one error body (a 10,000-node export can have 10,000).
MAX_ERRORS = 200


class ApiError(Exception):
    """A client mistake (4xx) or a refusal (503) with the structured body the service answers."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        errors: Iterable[Mapping[str, Any]] = (),
        *,
        headers: Mapping[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.errors = [dict(e) for e in errors]
        self.headers = dict(headers or {})

    def body(self, instance: str | None = None) -> dict[str, Any]:
        """The JSON body, an RFC 9457 problem (``type``, ``title``, ``status``, ``detail``, ``instance``)
        that keeps placer's own ``error`` member: at most :data:`MAX_ERRORS` problems, then one line saying
        how many more."""
        return problem(self.status, self.code, self.message, self.errors, instance)


#: Media type of every error answer (RFC 9457).
PROBLEM_JSON = "application/problem+json"


def problem(
    status: int,
    code: str,
    message: str,
    errors: Iterable[Mapping[str, Any]] = (),
    instance: str | None = None,
) -> dict[str, Any]:
    """An RFC 9457 problem for one refusal: ``type`` names placer's code (``urn:placer:problem:<code>``),
    ``title`` the HTTP reason, ``detail`` the message; ``error`` carries the same in placer's own shape
    (clients written against it keep working).

    >>> sorted(problem(404, "unknown_cluster", "no cluster 'c'", instance="/v1/clusters/c"))
    ['detail', 'error', 'instance', 'status', 'title', 'type']
    """
    every = [dict(e) for e in errors]
    shown = every[:MAX_ERRORS]
    more = len(every) - MAX_ERRORS
    if more > 0:
        shown.append({"code": "truncated", "path": "", "message": f"... and {more} more problems"})
    out: dict[str, Any] = {
        "type": f"urn:placer:problem:{code}",
        "title": _reason(status),
        "status": status,
        "detail": message,
    }
    if instance is not None:
        out["instance"] = instance
    out["error"] = {"status": status, "code": code, "message": message, "errors": shown}
    return out


def _reason(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def issues(items: Iterable[Issue]) -> list[dict[str, str]]:
    """Job-reader issues as error entries (``code`` from ``ISSUE_CODES``)."""
    return [{"code": i.code, "path": i.path, "message": i.message} for i in items]


def _problem(p: Problem) -> dict[str, str]:
    path = p.source if p.item == "document" else f"{p.source}.{p.item}"
    return {"code": "invalid", "path": path, "message": p.message}


def issues_of_topology(error: TopologyError) -> list[dict[str, str]]:
    """Cluster problems (``source`` is the body field, ``item`` the entry) as error entries."""
    return [_problem(p) for p in error.problems]


def unprocessable(code: str, message: str, errors: Iterable[Mapping[str, Any]]) -> ApiError:
    """A 422: the body is well-formed JSON of the right shape, but a document in it breaks a rule."""
    return ApiError(422, code, message, errors)
