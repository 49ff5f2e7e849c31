"""What a fill run produced, and the figure of merit read off it.

The FGD paper's figure of merit is the GPU allocation ratio — milli-GPUs held by placed pods over the
cluster's GPU capacity — as the arrived load grows (arrived load = GPU request of every pod that has
arrived, placed or not, over the capacity). The artifact reads it per arrived-load percent ``x`` as the
mean allocation over the arrival events whose arrived load, rounded to a whole percent, is ``x`` (events
within ``x +/- 1`` when there is none; ``merge_alloc_discrete`` of its analysis scripts); so does
:meth:`FillResult.alloc_at`.

>>> r = FillResult(policy="p", seed=0, load=1.0, batch=1, capacity_milli=1000,
...                arrived=np.array([500, 800, 1000]), allocated=np.array([500, 500, 700]))
>>> r.alloc_at((50, 80, 100, 130))
{50: 50.0, 80: 50.0, 100: 70.0, 130: None}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["LOAD_POINTS", "FillResult"]

#: Arrived-load percents the paper reports.
LOAD_POINTS: tuple[int, ...] = (50, 80, 90, 100, 110, 120, 130)


@dataclass
class FillResult:
    """One run: after each arrival event, cumulative arrived and allocated milli-GPUs; where each arrival
    went (``node[k] == -1``: it failed and stays failed); timings."""

    policy: str
    seed: int
    load: float
    batch: int
    capacity_milli: int
    arrived: np.ndarray
    allocated: np.ndarray
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    node: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    gpus: list[tuple[int, ...]] = field(default_factory=list)
    wall_s: float = 0.0
    #: Upper bounds (percent of capacity) on what any placement of the arrived pods allocates, per load
    #: point (:mod:`placer.scenarios.fill.bound`), when computed.
    bound: dict[int, float] = field(default_factory=dict)
    #: Whether the engines ran on deterministic budgets (``run_fill(reproducible=True)``).
    reproducible: bool = False
    #: Engine decisions a wall clock cut (``stats.deterministic`` false): 0 means the run is the same on
    #: any machine; the baselines never have any.
    cut: int = 0

    @property
    def failed(self) -> int:
        """Arrivals that found no node."""
        return int((self.node < 0).sum())

    def alloc_at(self, points: Sequence[int] = LOAD_POINTS) -> dict[int, float | None]:
        """Allocation percent at each arrived-load percent (None where the run never got there)."""
        arrived = np.round(100.0 * self.arrived / self.capacity_milli)
        alloc = 100.0 * self.allocated / self.capacity_milli
        out: dict[int, float | None] = {}
        for x in points:
            hit = arrived == x
            if not hit.any():
                hit = (arrived >= x - 1) & (arrived <= x + 1)
            out[x] = round(float(alloc[hit].mean()), 2) if hit.any() else None
        return out

    def final_alloc(self) -> float:
        """Allocation percent after the last arrival."""
        return (
            round(100.0 * float(self.allocated[-1]) / self.capacity_milli, 2) if len(self.allocated) else 0.0
        )
