"""The solver pool: CPU-bound work (reading documents, building clusters, placing) off the event loop.

Why threads: :func:`placer.solver.engine.place` is pure (no shared mutable state; the one process-wide switch
it touches, the paused garbage collector, is reference-counted and locked in :mod:`placer.solver.gc_pause`),
CP-SAT releases the GIL while it searches, and a thread shares the stored clusters of stateful mode
without copying them into another process. The event loop only reads bodies and writes answers, so
``/healthz`` and ``/metrics`` answer while placements run.

Why a bound: each running placement holds its snapshot and model in memory. At most ``workers``
placements run at once and at most ``max_queued`` more wait; beyond that a request is refused at once
with 503 and ``Retry-After`` rather than queued without end. The time limit of a placement starts when a
thread picks it up, not when it was queued.

>>> import asyncio
>>> pool = SolverPool(workers=1, max_queued=0)
>>> asyncio.run(pool.run(sum, [1, 2, 3]))
6
>>> pool.shutdown()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from placer.service.errors import ApiError
from placer.solver.cancel import Cancel, cancellable

__all__ = ["SolverPool", "T"]

T = TypeVar("T")


class SolverPool:
    """A bounded thread pool for placements; admission is decided on the event loop's thread."""

    #: Seconds between two looks at whether a waiting request's client is still there.
    POLL_S = 0.2

    def __init__(self, workers: int, max_queued: int):
        self.workers = workers
        self.max_queued = max_queued
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="placer-solve")
        self._admitted = 0
        #: Queued requests dropped because their client went away before a thread took them.
        self.cancelled = 0
        #: Running requests told to stop because their client went away (they end at their next check).
        self.interrupted = 0

    @property
    def busy(self) -> int:
        """Requests running or waiting."""
        return self._admitted

    async def run(
        self,
        fn: Callable[..., T],
        *args: Any,
        client_gone: Callable[[], Awaitable[bool]] | None = None,
        **kwargs: Any,
    ) -> T:
        """``fn(*args, **kwargs)`` in a solver thread; 503 ``busy`` when the pool and its queue are full.

        ``client_gone`` (Starlette's ``request.is_disconnected``) is asked every :attr:`POLL_S` while the
        work waits or runs: work still queued when its client has gone is cancelled and never runs (499
        ``client_closed``, which nobody reads); work a thread has begun is told to stop
        (:mod:`placer.solver.cancel`: CP-SAT searches are stopped, the loops that would run to the
        deadline end at their next turn), so clients that give up do not keep the pool busy."""
        if self._admitted >= self.workers + self.max_queued:
            raise ApiError(
                503,
                "busy",
                f"{self._admitted} requests are running or waiting; retry shortly",
                headers={"Retry-After": "1"},
            )
        self._admitted += 1
        stop = Cancel()

        def work() -> T:
            with cancellable(stop):
                return fn(*args, **kwargs)

        try:
            job = self._executor.submit(work)
            waiting = asyncio.wrap_future(job)
            if client_gone is None:
                return await waiting
            while True:
                done, _ = await asyncio.wait({waiting}, timeout=self.POLL_S)
                if done:
                    return waiting.result()
                if not stop.event.is_set() and await client_gone():
                    if job.cancel():  # still queued: it never runs
                        self.cancelled += 1
                        raise ApiError(
                            499, "client_closed", "the client closed the connection before its turn"
                        )
                    stop.cancel()  # running: place() stops at its next check (solver/cancel.py)
                    self.interrupted += 1
        finally:
            self._admitted -= 1

    def shutdown(self) -> None:
        """Wait for running work, then stop the threads."""
        self._executor.shutdown(wait=True, cancel_futures=True)
