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
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from placer.service.errors import ApiError

__all__ = ["SolverPool", "T"]

T = TypeVar("T")


class SolverPool:
    """A bounded thread pool for placements; admission is decided on the event loop's thread."""

    def __init__(self, workers: int, max_queued: int):
        self.workers = workers
        self.max_queued = max_queued
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="placer-solve")
        self._admitted = 0

    @property
    def busy(self) -> int:
        """Requests running or waiting."""
        return self._admitted

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a solver thread; 503 ``busy`` when the pool and its queue are full."""
        if self._admitted >= self.workers + self.max_queued:
            raise ApiError(
                503,
                "busy",
                f"{self._admitted} requests are running or waiting; retry shortly",
                headers={"Retry-After": "1"},
            )
        self._admitted += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))
        finally:
            self._admitted -= 1

    def shutdown(self) -> None:
        """Wait for running work, then stop the threads."""
        self._executor.shutdown(wait=True, cancel_futures=True)
