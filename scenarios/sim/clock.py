"""Events and the simulated clock: a heap of timed events with a fixed order at equal times.

Why a fixed order: a run must be the same for a seed, and "a job finishes at 10:00" and "the scheduler
runs at 10:00" must always be handled in the same order — releases first, so the scheduling interval
sees everything that happened at its instant. Ties after the kind are broken by insertion order.

Times are seconds after the scenario's start (floats); :meth:`Clock.at` turns them into datetimes.

>>> q = EventQueue()
>>> q.push(60.0, Kind.TICK); q.push(60.0, Kind.FINISH, job="a"); q.push(10.0, Kind.ARRIVAL, job="b")
>>> [(e.time, e.kind.name, e.job) for e in (q.pop(), q.pop(), q.pop())]
[(10.0, 'ARRIVAL', 'b'), (60.0, 'FINISH', 'a'), (60.0, 'TICK', None)]
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import IntEnum
from typing import Any

__all__ = ["Clock", "Event", "EventQueue", "Kind"]


class Kind(IntEnum):
    """Event kinds, in the order they are handled at one instant."""

    NODE_UP = 0  # a failed node is repaired
    NODE_ADD = 1  # a node an autoscaler requested joins, ready
    FINISH = 2  # a running job completes its work
    RELEASE = 3  # an evicted job's grace period ends: its resources are free, it is requeued
    NODE_DOWN = 4  # a node fails: its jobs fail and are requeued
    NODE_RECLAIM = 5  # the provider takes an autoscaled node back: its jobs fail and are requeued
    START = 6  # a job placed on capacity still draining starts (its victims' grace periods are over)
    ARRIVAL = 7  # a job is submitted
    RESERVATION = 8  # a reservation starts, ends or times out (recorded; place() applies it)
    TICK = 9  # a scheduling interval: place() decides (then the autoscaler asks for and removes nodes)


@dataclass(order=True, frozen=True, slots=True)
class Event:
    """One event. ``attempt`` ties job events to the run they were scheduled for: an event of an
    earlier run (a finish scheduled before the job was evicted) is stale and ignored."""

    time: float
    kind: Kind
    seq: int
    job: str | None = field(default=None, compare=False)
    attempt: int = field(default=0, compare=False)
    data: Any = field(default=None, compare=False)


class EventQueue:
    """A min-heap of events ordered by (time, kind, insertion)."""

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(
        self, time: float, kind: Kind, *, job: str | None = None, attempt: int = 0, data: Any = None
    ) -> None:
        self._seq += 1
        heapq.heappush(self._heap, Event(float(time), kind, self._seq, job, attempt, data))

    def pop(self) -> Event:
        return heapq.heappop(self._heap)

    def peek(self) -> Event | None:
        return self._heap[0] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)


@dataclass(frozen=True)
class Clock:
    """The scenario's start and end as datetimes, and conversions from seconds after the start.

    >>> from datetime import UTC
    >>> c = Clock(datetime(2026, 1, 1, tzinfo=UTC), 3600.0)
    >>> c.at(90).isoformat(), c.horizon_s
    ('2026-01-01T00:01:30+00:00', 3600.0)
    """

    start: datetime
    horizon_s: float

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    def seconds(self, when: datetime) -> float:
        return (when - self.start).total_seconds()
