"""A generated workload: arrival times from a stated process, jobs drawn from a stated class mix.

Why classes with shares instead of one distribution per attribute: real clusters run a few kinds of work
(pre-training gangs, fine-tunes, sweeps, inference replicas) whose sizes, durations, priority classes and
checkpointing go together. A class states them together; the scenario states each class's share. Every
draw comes from ``random.Random`` objects seeded from the scenario's seed (``"{seed}:arrivals"``,
``"{seed}:jobs"``), so a seed fixes the workload, and changing the arrival rate does not change what each
job of a class looks like.

Jobs are :class:`placer.solver.jobs.model.Job` with ``submit_time`` (their arrival) and ``duration_s`` (the
work:
wall time on their full allocation). Ids are ``{class}-{n:05d}``, ``n`` counting all jobs from 1.

>>> from datetime import UTC, datetime
>>> from placer.scenarios.spec import SyntheticWorkload
>>> w = SyntheticWorkload.model_validate({"arrivals": {"process": "fixed", "every": "10m", "backlog": 2},
...     "classes": [{"name": "sweep", "gpus": 1, "duration": "30m", "priority_class": "spot"}]})
>>> jobs = generate(w, datetime(2026, 1, 1, tzinfo=UTC), 3600, seed=0)
>>> [(j.id, j.submit_time.strftime("%H:%M")) for j in jobs][:4]
[('sweep-00001', '00:00'), ('sweep-00002', '00:00'), ('sweep-00003', '00:10'), ('sweep-00004', '00:20')]
>>> len(jobs), jobs[0].duration_s, jobs[0].priority_class.value
(7, 1800.0, 'spot')
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TypeVar

from placer.scenarios.spec import Arrivals, DurationDist, JobClass, SyntheticWorkload
from placer.solver.jobs.model import (
    Checkpointing,
    Escalation,
    GpuDemand,
    Interconnect,
    Job,
    Placement,
    Preemption,
    ReservationRef,
    TaskGroup,
    TpuDemand,
)
from placer.topology.catalog import parse_shape

__all__ = ["T", "arrival_offsets", "choose", "draw_duration", "generate", "make_job"]

T = TypeVar("T")


def choose(rng: random.Random, weights: Mapping[T, float]) -> T:
    """One key of ``weights``, with probability proportional to its weight.

    >>> choose(random.Random(0), {"a": 0.0, "b": 1.0})
    'b'
    """
    keys = list(weights)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def draw_duration(d: DurationDist, rng: random.Random) -> float:
    """One duration (seconds) from ``d``, clamped to ``[d.min, d.max]`` and rounded to the second.

    >>> d = DurationDist(dist="lognormal", median=3600, sigma=1.0, min=60, max=7200)
    >>> all(60 <= draw_duration(d, random.Random(s)) <= 7200 for s in range(50))
    True
    """
    if d.dist == "fixed":
        x = float(d.value or 0)
    elif d.dist == "exponential":
        x = rng.expovariate(1.0 / float(d.mean or 1))
    elif d.dist == "lognormal":
        x = rng.lognormvariate(math.log(float(d.median or 1)), d.sigma)
    else:
        x = rng.uniform(float(d.low or 0), float(d.high or 0))
    x = max(d.min, x)
    if d.max is not None:
        x = min(d.max, x)
    return float(round(x))


def arrival_offsets(a: Arrivals, until: float, rng: random.Random) -> list[float]:
    """Seconds after the start at which jobs arrive: ``backlog`` zeros, then the process up to ``until``
    (exclusive; the first arrival one gap after the start), at most ``max_jobs`` in all.

    >>> arrival_offsets(Arrivals(process="fixed", every=600, backlog=1), 1800, random.Random(0))
    [0.0, 600.0, 1200.0]
    """
    cap = a.max_jobs if a.max_jobs is not None else 10_000_000
    out = [0.0] * min(a.backlog, cap)
    end = min(until, a.until) if a.until is not None else until
    t = 0.0
    while len(out) < cap and t < end:
        if a.process == "fixed":
            t += float(a.every or 1)
        else:
            t += rng.expovariate(float(a.rate_per_hour or 1) / 3600.0)
        if t < end:
            out.append(float(round(t, 3)))
    return out


def make_job(c: JobClass, n: int, submit: datetime, rng: random.Random) -> Job:
    """Job number ``n`` of class ``c``, submitted at ``submit``, its choices drawn from ``rng``."""
    gpus = choose(rng, c.gpus)
    if c.tpu is not None:
        shape = parse_shape(choose(rng, c.tpu.topology))
        tasks = [TaskGroup(tpu=TpuDemand(type=c.tpu.type, topology=shape))]
    elif gpus:
        ic = Interconnect.NVLINK if c.interconnect == "nvlink" else Interconnect.ANY
        tasks = [
            TaskGroup(
                cpu_cores=c.cpu_cores_per_gpu * gpus,
                memory_gb=c.memory_gb_per_gpu * gpus,
                gpu=GpuDemand(count=gpus, types=list(c.gpu_types), interconnect=ic),
            )
        ]
    else:
        tasks = [TaskGroup(cpu_cores=c.cpu_cores, memory_gb=c.memory_gb)]
    cls = choose(rng, c.priority_class)
    lo, hi = c.priority
    escalation = Escalation()
    if c.escalation is not None:
        escalation = Escalation(
            enabled=True, after_s=int(c.escalation.after), target_class=c.escalation.target
        )
    return Job(
        id=f"{c.name}-{n:05d}",
        name=c.name,
        source_format="scenario",
        queue=c.queue,
        tenant=c.tenant,
        priority_class=cls,
        priority=rng.randint(lo, hi),
        submit_time=submit,
        duration_s=draw_duration(c.duration, rng),
        tasks=tasks,
        distributed_strategy=c.strategy,
        placement=Placement(spot_preference=c.spot_preference),
        preemption=Preemption(
            preemptible=c.preemptible,
            grace_period_s=int(c.grace_period),
            checkpoint_on_preempt=c.checkpoint_on_preempt,
        ),
        checkpointing=Checkpointing(
            enabled=c.checkpoint_interval is not None, interval_s=max(1, int(c.checkpoint_interval or 300))
        ),
        escalation=escalation,
        reservation=ReservationRef(id=c.reservation) if c.reservation else None,
        labels={"class": c.name, **c.labels},
        metadata={"class": c.name},
    )


def generate(w: SyntheticWorkload, start: datetime, horizon_s: float, *, seed: int) -> list[Job]:
    """Every job of the workload, in submission order (ties by id)."""
    offsets = arrival_offsets(w.arrivals, horizon_s, random.Random(f"{seed}:arrivals"))
    rng = random.Random(f"{seed}:jobs")
    shares = {i: c.share for i, c in enumerate(w.classes)}
    jobs = []
    for n, off in enumerate(offsets, start=1):
        c = w.classes[choose(rng, shares)]
        jobs.append(make_job(c, n, start + timedelta(seconds=off), rng))
    return jobs
