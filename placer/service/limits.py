"""The service's limits: body size, jobs, nodes and running jobs per request, time per request, queue.

Why explicit limits: every request body is untrusted and every placement costs CPU. A client that sends
a 2 GB body, 10 million jobs, an inventory template of a million nodes (a few bytes each), or asks for an
hour of CP-SAT must be refused before it costs anything, with a status that says which limit
(413 for sizes, the time limit is capped silently and reported in ``X-Placer-Time-Limit``, 503 when the
solver pool and its queue are full). The defaults fit scenario L (10,000 nodes, 5,000 jobs) in one
request; ``placer serve`` flags change them.

>>> lim = Limits(max_time_limit_s=10)
>>> lim.time_limit(None), lim.time_limit(2.5), lim.time_limit(60)
(5.0, 2.5, 10.0)
>>> lim.check_count("jobs", 3, 2)
Traceback (most recent call last):
...
placer.service.errors.ApiError: jobs: 3 items; the server accepts at most 2 per request
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from placer.service.errors import ApiError

if TYPE_CHECKING:
    from starlette.requests import Request

    from placer.solver.jobs.options import ReadLimits
    from placer.topology.inventory import Inventory

__all__ = ["Limits", "read_body"]


@dataclass(frozen=True)
class Limits:
    """What one request may ask for; one frozen object shared by every route."""

    #: Largest request body, in bytes (413). A ``kubectl get nodes -o json`` of 10,000 nodes is ~60 MB:
    #: raise it, or use stateful mode (send the cluster once, then deltas).
    max_body_bytes: int = 32 * 1024 * 1024
    #: Most jobs per request: job documents, and jobs read from them (a workflow is several) (413).
    max_jobs: int = 10_000
    #: Most nodes (inventory templates expanded) plus TPU pods per cluster (413).
    max_nodes: int = 20_000
    #: Most running-job items per request, and changes per PATCH (413).
    max_running: int = 50_000
    #: Time limit of a placement when the request gives none (as ``placer place``).
    default_time_limit_s: float = 5.0
    #: The most a request may ask for; more is capped to this.
    max_time_limit_s: float = 30.0
    #: Requests that may wait for a solver thread beyond those running; more are refused with 503.
    max_queued: int = 32
    #: Seconds a client may take to send a request body (slow uploads hold memory and a connection).
    body_timeout_s: float = 30.0
    #: The operator's administrative limits on jobs (``placer serve --limits FILE``, the same file
    #: ``placer validate``/``place`` take): set by the server, never by a request, so clients cannot
    #: relax them. None: the readers' defaults.
    read_limits: ReadLimits | None = None

    def time_limit(self, asked: float | None) -> float:
        """The effective time limit: the request's, capped by the server's; the default without one."""
        if asked is None:
            return float(min(self.default_time_limit_s, self.max_time_limit_s))
        return float(min(asked, self.max_time_limit_s))

    @staticmethod
    def check_count(what: str, count: int, limit: int) -> None:
        """413 naming the field when ``count`` exceeds ``limit``."""
        if count > limit:
            raise ApiError(
                413,
                "too_large",
                f"{what}: {count} items; the server accepts at most {limit} per request",
                [{"code": "limit", "path": what, "message": f"at most {limit}"}],
            )

    def check_inventory(self, inventory: Inventory, what: str = "cluster") -> None:
        """413 when the inventory expands to more nodes and TPU pods than :attr:`max_nodes`; counted
        before the graph is built, since ``count: 1000000`` costs a few bytes to send."""
        nodes = sum(spec.count for spec in inventory.nodes) + len(inventory.tpu_pods)
        self.check_count(what, nodes, self.max_nodes)


async def read_body(request: Request, max_bytes: int, timeout_s: float = 30.0) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed ``max_bytes``: from the
    ``Content-Length`` header before anything is read, else while streaming (chunked bodies); 408 when it
    takes longer than ``timeout_s`` to arrive."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise ApiError(400, "malformed", f"Content-Length {declared[:40]!r} is not a number") from None
        if size > max_bytes:
            raise _too_large(size, max_bytes)
    chunks: list[bytes] = []
    total = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                total += len(chunk)
                if total > max_bytes:
                    raise _too_large(total, max_bytes, at_least=True)
                chunks.append(chunk)
    except TimeoutError:
        raise ApiError(
            408, "request_timeout", f"the body did not arrive within {timeout_s:g} s ({total} bytes came)"
        ) from None
    return b"".join(chunks)


def _too_large(size: int, limit: int, *, at_least: bool = False) -> ApiError:
    said = f"at least {size}" if at_least else str(size)
    return ApiError(
        413,
        "too_large",
        f"the body is {said} bytes; the limit is {limit}",
        [{"code": "limit", "path": "body", "message": f"at most {limit} bytes"}],
    )
