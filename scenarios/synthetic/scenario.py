"""The :class:`Scenario` record and the demand measure the hard instances state their optimum in.

Why a record and not a tuple: the solver's benchmarks and tests need the cluster, the pending jobs, the
clock the running jobs were timed against (``now``), and, for hand-made hard instances, the known optimum
and a witness placement. Keeping them together means a benchmark cannot pair a job list with the wrong
cluster or the wrong clock.

Weighted demand is defined here, once, so that a hard instance's ``optimal_weighted_demand`` and a
solver's result are compared on the same scale: each placed job counts its accelerator units (whole GPUs,
else TPU chips, else CPU cores / 16) times its priority-class weight (spot 1, on-demand 10, reserved 100,
the weights of ``placer.solver.policy.Policy`` without its numeric-priority nudge).

>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> job = Job(id="j", priority_class="reserved", tasks=[TaskGroup(gpu=GpuDemand(count=4))])
>>> demand_units(job), weighted_demand([job])
(4.0, 400.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from placer.solver.jobs.model import Job
from placer.topology import Cluster, RunningJob

__all__ = ["CLASS_WEIGHT", "CPU_CORES_PER_UNIT", "NOW", "Scenario", "demand_units", "weighted_demand"]

#: The fixed clock of every synthetic scenario: running jobs' ``started_at`` and pending jobs'
#: ``submit_time`` lie before it. A constant (not the wall clock) so that the same seed gives the same
#: scenario on any day.
NOW = datetime(2025, 6, 2, 12, 0, tzinfo=UTC)

#: Priority-class weights of the weighted-demand measure (OJS ML §8.1 order reserved > on-demand > spot).
CLASS_WEIGHT: dict[str, int] = {"spot": 1, "on-demand": 10, "reserved": 100}

#: CPU cores that count as one unit of demand for a job without accelerators.
CPU_CORES_PER_UNIT = 16.0


@dataclass(frozen=True, eq=False)
class Scenario:
    """One benchmark or test input: a cluster snapshot (with running jobs) and the pending jobs.

    ``optimal_placed`` / ``optimal_weighted_demand`` are set only for hard instances, where they were
    worked out by hand (and checked by brute force in the tests); ``witness`` is one optimal placement
    of the pending jobs, written as running-job allocations so ``cluster.with_allocations(witness)``
    proves it feasible. ``greedy_placed`` is what a priority-order first-fit places (from the docstring
    arithmetic of each instance).
    """

    name: str
    cluster: Cluster
    jobs: tuple[Job, ...]
    description: str
    now: datetime = NOW
    seed: int | None = None
    optimal_placed: int | None = None
    optimal_weighted_demand: float | None = None
    greedy_placed: int | None = None
    witness: tuple[RunningJob, ...] = field(default=())

    def __repr__(self) -> str:
        return f"Scenario({self.name!r}: {self.cluster!r}, {len(self.jobs)} pending jobs)"


def demand_units(job: Job) -> float:
    """A job's accelerator units: whole GPUs (fractional shares in thousandths), else TPU chips, else CPU
    cores over :data:`CPU_CORES_PER_UNIT` — one scale for "how much did we place".

    >>> from placer.solver.jobs.model import Job, TaskGroup, TpuDemand
    >>> demand_units(Job(id="t", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 4)))]))
    8.0
    >>> demand_units(Job(id="c", tasks=[TaskGroup(count=2, cpu_cores=16)]))
    2.0
    """
    if job.total_gpu_milli:
        return job.total_gpu_milli / 1000
    if job.total_tpu_chips:
        return float(job.total_tpu_chips)
    return sum(t.count * t.cpu_cores for t in job.tasks) / CPU_CORES_PER_UNIT


def weighted_demand(jobs: Iterable[Job]) -> float:
    """Sum over ``jobs`` of :func:`demand_units` times the job's :data:`CLASS_WEIGHT`.

    >>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    >>> weighted_demand([Job(id="s", priority_class="spot", tasks=[TaskGroup(gpu=GpuDemand(count=2))])])
    2.0
    """
    return sum(demand_units(j) * CLASS_WEIGHT[j.priority_class.value] for j in jobs)
