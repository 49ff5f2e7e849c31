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


def test_queued_work_whose_client_went_away_never_runs() -> None:
    # One thread, busy; two more requests wait. The first waiting client goes away: its work is dropped
    # before a thread takes it (499, counted), the other waiting request still runs.
    release = threading.Event()
    ran: list[str] = []
    pool = SolverPool(workers=1, max_queued=2)
    gone = asyncio.Event()

    async def is_gone() -> bool:
        return gone.is_set()

    async def still_here() -> bool:
        return False

    async def scenario() -> list[object]:
        busy = asyncio.ensure_future(pool.run(lambda: (release.wait(10), ran.append("busy"))[1]))
        leaver = asyncio.ensure_future(pool.run(lambda: ran.append("leaver"), client_gone=is_gone))
        stayer = asyncio.ensure_future(pool.run(lambda: ran.append("stayer"), client_gone=still_here))
        await asyncio.sleep(0.05)
        gone.set()
        with pytest.raises(ApiError) as e:
            await leaver
        assert (e.value.status, e.value.code) == (499, "client_closed")
        assert pool.busy == 2  # the running one and the one still waiting
        release.set()
        await busy
        await stayer
        return [ran, pool.cancelled, pool.busy]

    try:
        assert asyncio.run(scenario()) == [["busy", "stayer"], 1, 0]
    finally:
        release.set()
        pool.shutdown()


def test_running_work_is_not_dropped_when_its_client_goes() -> None:
    # A thread cannot be interrupted: work it has begun runs to its end (within its own time limit).
    release = threading.Event()
    pool = SolverPool(workers=1, max_queued=0)

    async def gone() -> bool:
        return True

    async def scenario() -> object:
        running = asyncio.ensure_future(pool.run(lambda: (release.wait(10), "done")[1], client_gone=gone))
        await asyncio.sleep(0.5)  # several looks at the gone client
        release.set()
        return await running

    try:
        assert asyncio.run(scenario()) == "done"
        assert pool.cancelled == 0
    finally:
        release.set()
        pool.shutdown()
