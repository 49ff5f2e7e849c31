"""Deadlines of a cost study: when a job should be done, and whether it was.

Why a study parameter and not a job field: the job model (OJS ML) has no deadline and the traces name
none, yet "how many jobs were done in time" is what a cheaper cluster trades away. So a study states, per
priority class, how late a job may finish: its **due time** is

    submit + stretch x work + slack

where ``work`` is the job's duration (its work on its full allocation). ``slack: 30m`` means "at most 30
minutes later than if it had started at once and never been stopped" (waiting and work redone after an
eviction or reclaim both eat the slack); ``stretch: 2`` means "done within twice its own duration".

The rule at the horizon: a job is **judged** when its due time falls before the horizon; it **met** its
deadline when it finished no later than its due time, and **missed** it otherwise (still waiting,
running, evicted, or rejected). Jobs due at or after the horizon are not judged, whatever happened to
them — judging only the short ones that happened to finish would flatter every design. Jobs of a class
without a deadline, jobs without a duration, and jobs that were already running at the start are not
judged either.

>>> import pandas as pd
>>> jobs = pd.DataFrame({"job": ["a", "b", "c"], "priority_class": ["reserved"] * 3,
...     "submit_s": [0.0, 0.0, 7000.0], "work_s": [600.0, 600.0, 600.0],
...     "completion_s": [900.0, 2500.0, None], "background": [False] * 3})
>>> list(judge(jobs, {"reserved": Deadline(slack=1800)}, horizon_s=7200)["deadline"])
['met', 'missed', 'not due']
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.scenarios.units import Duration

__all__ = ["Deadline", "deadline_counts", "judge"]


class Deadline(BaseModel):
    """How late a job of a class may finish: due at ``submit + stretch x work + slack``. A bare duration
    (``"30m"``) is ``slack`` alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slack: Duration = 0.0
    stretch: float = Field(default=1.0, ge=1.0, le=1000.0)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str | int | float) and not isinstance(data, bool):
            return {"slack": data}
        return data

    def allowed_s(self, work_s: float) -> float:
        """Seconds from submission to the due time of a job of ``work_s`` seconds of work."""
        return self.stretch * work_s + self.slack


def judge(jobs: pd.DataFrame, deadlines: dict[str, Deadline], horizon_s: float) -> pd.DataFrame:
    """``jobs`` (the simulator's jobs table with a ``submit_s`` column: seconds after the start) with
    ``due_s`` (seconds after the start; NaN when the job has no deadline) and ``deadline``: ``met``,
    ``missed``, ``not due`` (due at or after the horizon) or ``none`` (no deadline)."""
    out = jobs.copy()
    due: list[float] = []
    verdict: list[str] = []
    for row in out.itertuples(index=False):
        d = deadlines.get(str(row.priority_class))
        work = float(row.work_s) if row.work_s is not None else math.inf
        if d is None or bool(row.background) or not math.isfinite(work):
            due.append(math.nan)
            verdict.append("none")
            continue
        t = float(row.submit_s) + d.allowed_s(work)
        due.append(t)
        done = row.completion_s is not None and not pd.isna(row.completion_s)
        if t >= horizon_s:
            verdict.append("not due")
        elif done and float(row.submit_s) + float(row.completion_s) <= t + 1e-6:
            verdict.append("met")
        else:
            verdict.append("missed")
    out["due_s"] = due
    out["deadline"] = verdict
    return out


def deadline_counts(judged: pd.DataFrame) -> pd.DataFrame:
    """Per priority class (and ``total``): jobs judged (``due``), ``met``, ``missed`` and the share met
    (None when none were due)."""
    rows = {}
    for cls, g in [*judged.groupby("priority_class"), ("total", judged)]:
        met = int((g["deadline"] == "met").sum())
        missed = int((g["deadline"] == "missed").sum())
        rows[str(cls)] = {
            "due": met + missed,
            "met": met,
            "missed": missed,
            "met_share": met / (met + missed) if met + missed else None,
        }
    return pd.DataFrame.from_dict(rows, orient="index")
