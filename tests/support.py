"""Small helpers shared by test suites that are not fixtures: a wall-clock alarm and a document walker.

Why a module and not ``conftest.py``: these are plain functions imported by name from several packages
(``tests/solver``, ``tests/topology``, ``tests/reliability``), and one copy keeps their behaviour identical.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def alarm_after(seconds: float, message: str) -> Iterator[None]:
    """Raise ``TimeoutError(message)`` inside the block after ``seconds`` of wall time (SIGALRM).

    A parser expanding a bomb or a solver stuck in a Python loop then fails its own test with a traceback
    showing where, instead of hanging the whole suite.
    """

    def _raise(signum: int, frame: object) -> None:
        raise TimeoutError(message)

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def containers(doc: Any) -> list[Any]:
    """Every dict and list inside ``doc`` (``doc`` included): the places a mutation strategy may edit."""
    out, stack = [], [doc]
    while stack:
        cur = stack.pop()
        if isinstance(cur, dict | list):
            out.append(cur)
            stack.extend(cur.values() if isinstance(cur, dict) else cur)
    return out
