"""What a run leaves behind: tidy tables of events, jobs, runs (attempts), scheduling intervals and
pending reasons, as pandas DataFrames in a :class:`SimResult`.

Why tidy rows appended during the run and framed once at the end: one row per event / job / interval is
what pandas, parquet and plotting want, and appending dicts costs nothing while the run goes.

Tables (columns in ``docs/simulator.md``):

* ``events``: one row per event (``submit``, ``start``, ``finish``, ``evict``, ``release``, ``requeue``,
  ``fail``, ``reject``, ``node_down``, ``node_up``, ``reservation_start``/``_end``/``_timeout``, and
  with autoscaling ``scale_up``, ``node_added``, ``node_removed``);
* ``jobs``: one row per job: submit, first start, end, wait, preemptions, failures, lost GPU-hours, cost;
* ``attempts``: one row per run of a job, with ``held = useful + lost + grace``;
* ``intervals``: one row per scheduling interval: queue, GPUs allocated / busy / free, fragmentation,
  spend rate, the solver's answer;
* ``reasons``: per interval, how many jobs wait for each first reason code;
* ``nodes``: one row per node an autoscaled group made: requested, joined, removed, hours billed and
  ready, dollars (empty without ``autoscaling``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from placer.scenarios.sim.clock import Clock
from placer.scenarios.sim.state import SimJob

__all__ = [
    "ATTEMPT_COLUMNS",
    "JOB_COLUMNS",
    "NODE_COLUMNS",
    "TABLES",
    "Recorder",
    "SimResult",
    "attempt_rows",
    "job_row",
]

#: Table names of a result, in the order they are written.
TABLES = ("events", "jobs", "attempts", "intervals", "reasons", "nodes")
#: Columns of the ``nodes`` table (:meth:`placer.scenarios.sim.autoscaler.Autoscaler.nodes`).
NODE_COLUMNS = (
    "node",
    "group",
    "capacity_class",
    "gpus",
    "price_per_hour",
    "requested_s",
    "joined_s",
    "removed_s",
    "reclaimed",
    "billed_h",
    "ready_h",
    "cost_usd",
)


@dataclass
class SimResult:
    """The tables of one run and what it was (``meta``: name, seed, start, horizon, interval, capacity)."""

    events: pd.DataFrame
    jobs: pd.DataFrame
    attempts: pd.DataFrame
    intervals: pd.DataFrame
    reasons: pd.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    nodes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(NODE_COLUMNS)))

    def tables(self) -> dict[str, pd.DataFrame]:
        return {name: getattr(self, name) for name in TABLES}


class Recorder:
    """Rows appended during a run."""

    def __init__(self, clock: Clock):
        self.clock = clock
        self.events: list[dict[str, Any]] = []
        self.intervals: list[dict[str, Any]] = []
        self.reasons: list[dict[str, Any]] = []

    def event(self, t: float, kind: str, job: str | None = None, detail: str = "", **extra: Any) -> None:
        self.events.append(
            {"time": self.clock.at(t), "t_s": t, "event": kind, "job": job, "detail": detail, **extra}
        )

    def interval(self, row: dict[str, Any]) -> None:
        self.intervals.append(row)

    def reason_counts(self, t: float, counts: dict[str, int]) -> None:
        when = self.clock.at(t)
        for code, n in sorted(counts.items()):
            self.reasons.append({"time": when, "t_s": t, "code": code, "jobs": n})

    def result(
        self, jobs: list[SimJob], meta: dict[str, Any], nodes: list[dict[str, Any]] | None = None
    ) -> SimResult:
        return SimResult(
            events=_frame(self.events, ["time", "t_s", "event", "job", "detail"]),
            jobs=_frame([job_row(j, self.clock) for j in jobs], list(JOB_COLUMNS)),
            attempts=_frame([a for j in jobs for a in attempt_rows(j)], list(ATTEMPT_COLUMNS)),
            intervals=_frame(self.intervals, ["time", "t_s"]),
            reasons=_frame(self.reasons, ["time", "t_s", "code", "jobs"]),
            meta=meta,
            nodes=_frame(nodes or [], list(NODE_COLUMNS)),
        )


def _frame(rows: list[dict[str, Any]], columns: list[str]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(rows)


ATTEMPT_COLUMNS = (
    "job",
    "attempt",
    "priority_class",
    "nodes",
    "units",
    "placed_s",
    "start_s",
    "stop_s",
    "release_s",
    "outcome",
    "held_s",
    "useful_s",
    "lost_s",
    "grace_s",
    "cost_per_hour",
    "cost_usd",
)


def attempt_rows(j: SimJob) -> list[dict[str, Any]]:
    """One row per run of ``j`` (seconds after the start; cost over the time its resources were held)."""
    return [
        {
            "job": j.id,
            "attempt": a.n,
            "priority_class": a.priority_class,
            "nodes": a.nodes,
            "units": a.units,
            "placed_s": a.placed_s,
            "start_s": a.start_s,
            "stop_s": a.stop_s,
            "release_s": a.release_s,
            "outcome": a.outcome,
            "held_s": a.held_s,
            "useful_s": a.useful_s,
            "lost_s": a.lost_s,
            "grace_s": a.grace_s,
            "cost_per_hour": a.cost_per_hour,
            "cost_usd": a.cost_per_hour * a.held_s / 3600.0,
        }
        for a in j.attempts
    ]


JOB_COLUMNS = (
    *("job", "class", "priority_class", "priority", "units", "gpus", "tpu_chips"),
    *("submit", "first_start", "end", "state", "wait_s", "completion_s", "work_s"),
    *("attempts", "preemptions", "failures", "escalated"),
    *("useful_gpu_h", "lost_gpu_h", "grace_gpu_h", "held_gpu_h", "cost_usd", "background"),
)


def job_row(j: SimJob, clock: Clock) -> dict[str, Any]:
    """One row of the jobs table: times as datetimes, waits in seconds, GPU-hours in GPU-equivalents
    (``units``: GPUs, TPU chips, or 16 cores), cost in dollars over the time its resources were held."""
    held = sum(a.held_s for a in j.attempts)
    useful = sum(a.useful_s for a in j.attempts)
    lost = sum(a.lost_s for a in j.attempts)
    grace = sum(a.grace_s for a in j.attempts)
    start = j.first_start_s
    return {
        "job": j.id,
        "class": j.job.metadata.get("class", j.job.name),
        "priority_class": j.job.priority_class.value,
        "priority": j.job.priority,
        "units": j.units,
        "gpus": j.job.total_gpu_milli / 1000,
        "tpu_chips": j.job.total_tpu_chips,
        "submit": clock.at(j.submit_s),
        "first_start": None if start is None else clock.at(start),
        "end": None if j.end_s is None else clock.at(j.end_s),
        "state": j.phase,
        "wait_s": None if start is None else start - j.submit_s,
        "completion_s": None if j.end_s is None else j.end_s - j.submit_s,
        "work_s": j.work_s,
        "attempts": len(j.attempts),
        "preemptions": j.preemptions,
        "failures": j.failures,
        "escalated": j.escalated,
        "useful_gpu_h": useful * j.units / 3600.0,
        "lost_gpu_h": lost * j.units / 3600.0,
        "grace_gpu_h": grace * j.units / 3600.0,
        "held_gpu_h": held * j.units / 3600.0,
        "cost_usd": sum(a.cost_per_hour * a.held_s for a in j.attempts) / 3600.0,
        "background": j.background,
    }
