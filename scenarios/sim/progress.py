"""A progress bar over scheduling intervals: ``tqdm`` when installed, else ``rich``, else nothing.

Why optional: a day at one-minute intervals is 1,440 solver calls — long enough to want a bar on a
terminal, but no reason to make every install (CI, a backend embedding placer) pull a progress library.
``pip install 'placer-engine[sim]'`` brings ``tqdm``; without it the bar silently does nothing.

>>> with bar(3, enabled=False) as b:
...     b.update(3)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["Bar", "bar"]


class Bar(Protocol):
    def update(self, n: int = 1) -> Any: ...


class _Null:
    def update(self, n: int = 1) -> None:
        return None


@contextmanager
def bar(total: int, *, enabled: bool = True, desc: str = "simulate", unit: str = "interval") -> Iterator[Bar]:
    """A bar of ``total`` steps (``unit``s) on stderr (``enabled=False``, or no bar library: a no-op bar)."""
    if not enabled:
        yield _Null()
        return
    try:
        from tqdm import tqdm
    except ImportError:
        pass  # rich's, below
    else:
        with tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, dynamic_ncols=True) as t:
            yield t
        return
    try:
        from rich.progress import Progress
    except ImportError:
        yield _Null()
        return
    with Progress(transient=True) as p:
        task = p.add_task(desc, total=total)

        class _Rich:
            def update(self, n: int = 1) -> None:
                p.advance(task, n)

        yield _Rich()
