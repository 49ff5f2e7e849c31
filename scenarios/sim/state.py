"""What the simulator knows about each job: its phase, its runs (attempts) and its accounting.

Why an attempt record per run: every figure the simulator reports — wait, lost work, grace time, cost —
is a sum over runs, and a run's numbers add up exactly: ``held = useful + lost + grace`` (seconds from
its start to the release of its resources). Keeping them per run makes that identity checkable.

Phases: ``waiting`` (not submitted yet) -> ``pending`` (in the queue) -> ``starting`` (placed, waiting for
the capacity it was given to drain) -> ``running`` -> ``done``; ``running`` -> ``draining`` (evicted, in
its grace period) -> ``pending`` (requeued); ``running`` -> ``pending`` (its node failed); ``rejected``
(the decision rejected it: it is never retried). ``background`` jobs ran before the scenario started
(``cluster.running: keep``): they end at their ``expected_end`` and are not requeued.

>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> j = SimJob(Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=2))], duration_s=600), submit_s=0.0)
>>> j.phase, j.remaining_s, j.units
('waiting', 600.0, 2.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from placer.scenarios.synthetic.scenario import demand_units
from placer.solver.jobs.model import Job
from placer.topology import RunningJob

__all__ = ["Attempt", "SimJob"]


@dataclass
class Attempt:
    """One run of a job: placed at ``placed_s``, started at ``start_s``, stopped at ``stop_s`` (its end,
    the eviction signal, or the failure), resources released at ``release_s``."""

    n: int
    placed_s: float
    start_s: float
    units: float
    cost_per_hour: float
    priority_class: str
    nodes: str
    stop_s: float | None = None
    release_s: float | None = None
    outcome: str = "running"  # done | evicted | failed | cancelled | horizon
    useful_s: float = 0.0
    lost_s: float = 0.0
    grace_s: float = 0.0

    @property
    def held_s(self) -> float:
        """Seconds its resources were held by the running job: start to release."""
        return 0.0 if self.release_s is None else max(0.0, self.release_s - self.start_s)


@dataclass
class SimJob:
    """A job of the scenario and its life so far."""

    job: Job
    submit_s: float
    phase: str = "waiting"
    done_s: float = 0.0
    background: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    allocation: RunningJob | None = None
    units: float = 0.0
    first_start_s: float | None = None
    end_s: float | None = None
    preemptions: int = 0
    failures: int = 0
    escalated: bool = False
    pending_reason: str | None = None

    def __post_init__(self) -> None:
        if not self.units:
            self.units = demand_units(self.job)

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def work_s(self) -> float:
        """Seconds of work the job needs in all (infinite without a duration: it never completes)."""
        return math.inf if self.job.duration_s is None else float(self.job.duration_s)

    @property
    def remaining_s(self) -> float:
        return self.work_s - self.done_s

    @property
    def current(self) -> Attempt | None:
        """The run in progress (or draining), if any."""
        if self.attempts and self.attempts[-1].release_s is None:
            return self.attempts[-1]
        return None

    @property
    def checkpoint_interval(self) -> float | None:
        c = self.job.checkpointing
        return float(c.interval_s) if c.enabled else None
