"""The solver pool: work runs off the event loop, and a full pool refuses at once with 503."""

from __future__ import annotations

import asyncio
import threading

import pytest

from placer.service.errors import ApiError
from placer.service.pool import SolverPool


def test_a_full_pool_refuses_with_503_and_retry_after_then_admits_again() -> None:
    release = threading.Event()
    pool = SolverPool(workers=1, max_queued=1)

    async def scenario() -> list[object]:
        loop_thread = threading.get_ident()
        first = asyncio.ensure_future(pool.run(lambda: (release.wait(10), threading.get_ident())[1]))
        second = asyncio.ensure_future(pool.run(lambda: "queued"))
        await asyncio.sleep(0.05)
        assert pool.busy == 2
        with pytest.raises(ApiError) as e:
            await pool.run(lambda: "third")
        assert (e.value.status, e.value.code, e.value.headers) == (503, "busy", {"Retry-After": "1"})
        release.set()
        worker_thread = await first
        assert worker_thread != loop_thread  # the work ran in a solver thread
        return [await second, await pool.run(lambda: "after"), pool.busy]

    try:
        assert asyncio.run(scenario()) == ["queued", "after", 0]
    finally:
        release.set()
        pool.shutdown()


def test_an_error_in_the_work_reaches_the_caller_and_frees_the_slot() -> None:
    pool = SolverPool(workers=1, max_queued=0)

    def fail() -> None:
        raise ApiError(422, "invalid_cluster", "bad")

    async def scenario() -> int:
        with pytest.raises(ApiError):
            await pool.run(fail)
        return pool.busy

    try:
        assert asyncio.run(scenario()) == 0
    finally:
        pool.shutdown()
