"""Cooperative cancellation of a running ``place()``: when the caller no longer wants the answer (the
service's client went away), the decision in progress stops at its next check instead of spending its
whole time limit.

Why cooperative, and where it checks: ``place()`` runs in a solver thread that nothing can kill safely,
and most of a long call is CP-SAT, which OR-Tools can stop from another thread (``stop_search``). So a
:class:`Cancel` keeps the CP-SAT solvers started under it and stops them when cancelled; solvers started
after that get no time at all; and the loops that would otherwise run to the deadline — LNS rounds,
greedy's job loop, planning and what-if probes — end at their next turn (:func:`cancelled`). What a
cancelled call returns is a valid decision (greedy's answer stands wherever CP-SAT was stopped) that its
caller throws away.

Outside a :func:`cancellable` block nothing changes: :func:`cancelled` is False and solvers are not kept.

>>> c = Cancel()
>>> with cancellable(c):
...     before = cancelled()
...     c.cancel()
...     after = cancelled()
>>> before, after, cancelled()
(False, True, False)
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Cancel", "cancellable", "cancelled", "register"]


class Cancel:
    """A cancellation a caller can trigger from any thread."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self._solvers: list[Any] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """Stop the CP-SAT searches running under this cancellation, and let every check see it."""
        with self._lock:
            self.event.set()
            solvers, self._solvers = self._solvers, []
        for s in solvers:
            s.stop_search()

    def register(self, solver: Any) -> bool:
        """Keep ``solver`` to stop on cancellation; False when already cancelled (do not search)."""
        with self._lock:
            if self.event.is_set():
                return False
            self._solvers.append(solver)
            return True


_current: contextvars.ContextVar[Cancel | None] = contextvars.ContextVar("placer_cancel", default=None)


@contextmanager
def cancellable(c: Cancel) -> Iterator[Cancel]:
    """Run the block under ``c`` (in the thread that runs ``place()``)."""
    token = _current.set(c)
    try:
        yield c
    finally:
        _current.reset(token)


def cancelled() -> bool:
    """Whether the current call was cancelled (always False outside :func:`cancellable`)."""
    c = _current.get()
    return c is not None and c.event.is_set()


def register(solver: Any) -> bool:
    """Keep a CP-SAT solver for the current cancellation; False when the call is already cancelled."""
    c = _current.get()
    return True if c is None else c.register(solver)
