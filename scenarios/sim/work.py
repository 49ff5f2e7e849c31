"""Work, checkpoints and what a stop throws away: the arithmetic of checkpoint-and-resume (OJS ML §9).

Why a module of pure functions: these few lines decide every lost GPU-hour the simulator reports, and
they must agree with what the solver charges an eviction (``placer.solver.preempt.lost_gpu_seconds``). Kept
apart, each is a line of arithmetic a test can check by hand.

Model. A job needs ``work`` seconds of running on its full allocation. One *run* starts at ``start``
with ``done`` seconds already saved; it would end at ``start + work - done``. With periodic checkpoints
every ``interval`` seconds *of this run* (OJS ``ext_ml_checkpoint_interval_s``), checkpoints commit at
``start + k * interval``, k = 1, 2, ... A stop at ``stop`` keeps:

* everything (``stop - start``) when the job checkpoints on preempt (``ext_ml_checkpoint_on_preempt``)
  and the stop is an eviction — it saves during its grace period;
* up to the last committed checkpoint otherwise (an eviction without checkpoint-on-preempt, or a node
  failure, which gives no warning);
* nothing of this run without checkpoints; earlier runs' saved work stays saved.

>>> saved_at_stop(start=0, stop=5000, interval=1800, on_preempt=False)  # checkpoints at 1800 and 3600
3600.0
>>> 5000 - saved_at_stop(start=0, stop=5000, interval=1800, on_preempt=False)  # seconds lost
1400.0
"""

from __future__ import annotations

import math

__all__ = ["last_checkpoint", "saved_at_stop"]


def last_checkpoint(start: float, now: float, interval: float | None) -> float | None:
    """When the run started at ``start`` last committed a checkpoint by ``now`` (None: not yet, or it
    does not checkpoint).

    >>> last_checkpoint(100, 1000, 300), last_checkpoint(100, 350, 300), last_checkpoint(0, 10, None)
    (1000.0, None, None)
    """
    if not interval or now - start < interval:
        return None
    return float(start + math.floor((now - start) / interval + 1e-9) * interval)


def saved_at_stop(start: float, stop: float, interval: float | None, on_preempt: bool) -> float:
    """Seconds of this run's work that survive a stop at ``stop`` (see the module docstring)."""
    if on_preempt:
        return float(stop - start)
    cp = last_checkpoint(start, stop, interval)
    return 0.0 if cp is None else float(cp - start)
