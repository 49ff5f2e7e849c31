"""What a run measured, as pandas DataFrames: GPU allocation and use over time, waits by priority class,
preemptions and lost work, cost, fragmentation, pending reasons — and a one-screen summary.

Why computed from the tables and not during the run: the tables are the record (written to parquet);
anyone can recompute these numbers, or others, from a saved run without re-running it.

Definitions (``docs/simulator.md``, *Metrics*):

* **allocation**: GPU-equivalents held (running, draining in a grace period, or promised to a job about
  to start) over the GPUs of usable nodes; **utilization**: GPU-equivalents of running jobs over the same.
  Over the run, both from the attempts table: held (resp. useful) GPU-hours over GPUs x horizon, plus
  the GPU-hours autoscaled nodes were there (joined to removal).
* **wait**: first start minus submission (jobs that started); **completion**: end minus submission
  (jobs that finished); p50 / p95 per priority class. Jobs still waiting at the horizon are counted in
  ``waiting`` with their wait so far in ``waiting_p50_s`` (censored: true waits are longer).
* **lost GPU-hours**: work thrown away by evictions and failures (since the last checkpoint) times the
  job's GPU-equivalents; **grace GPU-hours**: resources held during grace periods.
* **cost**: each run's ``cost_per_hour`` (``solver/prices.py``) over the time it held its resources;
  **per useful GPU-hour**: cost over GPU-hours of work kept. The fleet's cost (every node all the time,
  and autoscaled nodes from their request to their removal) over the same useful GPU-hours says what the
  idle capacity costs too.

>>> import pandas as pd
>>> jobs = pd.DataFrame({"priority_class": ["spot", "spot", "reserved"], "wait_s": [60.0, 600.0, 0.0],
...     "completion_s": [120.0, None, 30.0], "first_start": [1, 1, 1], "state": ["done", "running", "done"]})
>>> w = waits(jobs)
>>> int(w.loc["spot", "started"]), float(w.loc["spot", "wait_p50_s"]), float(w.loc["spot", "wait_p95_s"])
(2, 330.0, 573.0)
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from placer.scenarios.sim.record import SimResult
from placer.scenarios.units import format_duration

__all__ = [
    "CLASS_ORDER",
    "cost",
    "fragmentation",
    "gpu_hours",
    "pending_reasons",
    "preemptions",
    "summary",
    "summary_text",
    "utilization",
    "waiting_at_end",
    "waits",
]

CLASS_ORDER = ("reserved", "on-demand", "spot")


def utilization(r: SimResult) -> pd.DataFrame:
    """Per scheduling interval: GPUs total, allocated, busy, free and stranded, and the two ratios."""
    iv = r.intervals
    cols = ["time", "gpus_total", "gpus_allocated", "gpus_busy", "free_gpus", "stranded_gpus"]
    if iv.empty:
        return pd.DataFrame(columns=[*cols, "allocation", "utilization"])
    out = iv[cols].copy()
    total = out["gpus_total"].where(out["gpus_total"] > 0)
    out["allocation"] = out["gpus_allocated"] / total
    out["utilization"] = out["gpus_busy"] / total
    return out


def _q(series: pd.Series, q: float) -> float | None:
    s = series.dropna()
    return None if s.empty else float(s.quantile(q))


def waits(jobs: pd.DataFrame) -> pd.DataFrame:
    """Queue wait and completion time by priority class (p50, p95; seconds), with counts."""
    rows = []
    for cls in [c for c in CLASS_ORDER if c in set(jobs["priority_class"])] or []:
        j = jobs[jobs["priority_class"] == cls]
        started = j[j["wait_s"].notna()]
        done = j[j["completion_s"].notna()]
        waiting = j[j["state"] == "pending"]
        rows.append(
            {
                "priority_class": cls,
                "jobs": len(j),
                "started": len(started),
                "done": len(done),
                "waiting": len(waiting),
                "wait_p50_s": _q(started["wait_s"], 0.5),
                "wait_p95_s": _q(started["wait_s"], 0.95),
                "completion_p50_s": _q(done["completion_s"], 0.5),
                "completion_p95_s": _q(done["completion_s"], 0.95),
            }
        )
    return pd.DataFrame(rows).set_index("priority_class") if rows else pd.DataFrame()


def waiting_at_end(r: SimResult) -> pd.DataFrame:
    """Jobs still waiting at the horizon and how long they had waited (censored waits), by class."""
    j = r.jobs[r.jobs["state"] == "pending"].copy()
    if j.empty:
        return pd.DataFrame()
    j["waited_s"] = (
        r.meta.get("horizon_s", 0.0) - (j["submit"] - pd.Timestamp(r.meta["start"])).dt.total_seconds()
    )
    return j.groupby("priority_class")["waited_s"].describe(percentiles=[0.5, 0.95])


def preemptions(jobs: pd.DataFrame) -> pd.DataFrame:
    """Evictions, failures and the GPU-hours they cost, by priority class (and a total row)."""
    cols = ["preemptions", "failures", "lost_gpu_h", "grace_gpu_h", "useful_gpu_h", "held_gpu_h"]
    if jobs.empty:
        return pd.DataFrame(columns=cols)
    out = jobs.groupby("priority_class")[cols].sum()
    out.loc["total"] = out.sum()
    return out


def cost(r: SimResult) -> dict[str, float | None]:
    """Dollars of the held capacity and of the whole fleet, and each per useful GPU-hour."""
    held = float(r.jobs["cost_usd"].sum()) if not r.jobs.empty else 0.0
    useful = float(r.jobs["useful_gpu_h"].sum()) if not r.jobs.empty else 0.0
    fleet = float(r.meta.get("fleet_cost_per_hour", 0.0)) * float(r.meta.get("horizon_s", 0.0)) / 3600.0
    fleet += float(r.meta.get("autoscaled_cost_usd", 0.0))  # autoscaled nodes: request to removal
    return {
        "cost_usd": held,
        "useful_gpu_h": useful,
        "cost_per_useful_gpu_h": held / useful if useful else None,
        "fleet_cost_usd": fleet,
        "fleet_cost_per_useful_gpu_h": fleet / useful if useful else None,
    }


def gpu_hours(r: SimResult) -> dict[str, float | None]:
    """Allocation and utilization over the whole run, from the attempts (exact, not sampled)."""
    capacity = (
        float(r.meta.get("gpus", 0) + r.meta.get("tpu_chips", 0)) * float(r.meta.get("horizon_s", 0)) / 3600
    ) + float(r.meta.get("autoscaled_gpu_h", 0.0))  # autoscaled nodes' GPUs while they were there
    a = r.attempts
    held = float((a["held_s"] * a["units"]).sum()) / 3600 if not a.empty else 0.0
    useful = float((a["useful_s"] * a["units"]).sum()) / 3600 if not a.empty else 0.0
    return {
        "capacity_gpu_h": capacity,
        "held_gpu_h": held,
        "useful_gpu_h": useful,
        "allocation": held / capacity if capacity else None,
        "utilization": useful / capacity if capacity else None,
    }


def fragmentation(r: SimResult) -> dict[str, float]:
    """Means over intervals of the fragmentation measures, and the share of intervals with stranded GPUs."""
    iv = r.intervals
    keys = [
        "free_gpus",
        "stranded_gpus",
        "stranded_nvlink_domains",
        "stranded_nvlink_gpus",
        "stranded_tpu_chips",
    ]
    if iv.empty:
        return dict.fromkeys([*keys, "intervals_with_stranded_gpus"], 0.0)
    out = {f"mean_{k}": float(iv[k].mean()) for k in keys}
    out["intervals_with_stranded_gpus"] = float((iv["stranded_gpus"] > 0).mean())
    return out


def pending_reasons(r: SimResult) -> pd.DataFrame:
    """Jobs waiting per first reason code, one row per interval (0 where a code has none)."""
    times = pd.Index(r.intervals["time"] if not r.intervals.empty else [], name="time")
    if r.reasons.empty:
        return pd.DataFrame(index=times)
    table = r.reasons.pivot_table(index="time", columns="code", values="jobs", aggfunc="sum", fill_value=0)
    return table.reindex(times, fill_value=0)


def summary(r: SimResult) -> dict[str, Any]:
    """Headline numbers of a run (what ``placer simulate`` prints and writes to ``summary.json``)."""
    j = r.jobs
    states = j["state"].value_counts().to_dict() if not j.empty else {}
    w = waits(j) if not j.empty else pd.DataFrame()
    return {
        **r.meta,
        "jobs": len(j),
        "states": {str(k): int(v) for k, v in states.items()},
        "preemptions": int(j["preemptions"].sum()) if not j.empty else 0,
        "failures": int(j["failures"].sum()) if not j.empty else 0,
        "lost_gpu_h": float(j["lost_gpu_h"].sum()) if not j.empty else 0.0,
        "grace_gpu_h": float(j["grace_gpu_h"].sum()) if not j.empty else 0.0,
        **gpu_hours(r),
        **cost(r),
        **fragmentation(r),
        "waits": {str(k): {c: _plain(v) for c, v in row.items()} for k, row in w.to_dict("index").items()},
    }


def _plain(v: Any) -> Any:
    """A JSON-ready number: None for missing, int for counts."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    f = float(v)
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def summary_text(s: dict[str, Any]) -> str:
    """A short plain-text report of :func:`summary`."""

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    def dur(x: float | None) -> str:
        return "-" if x is None else format_duration(x)

    def money(x: float | None) -> str:
        return "n/a" if x is None else f"${x:,.2f}"

    states = s["states"]
    lines = [
        f"scenario {s['name']} (seed {s['seed']}): {s['nodes']} nodes, {s['gpus']} GPUs"
        + (f", {s['tpu_chips']} TPU chips" if s.get("tpu_chips") else "")
        + f"; {dur(s['horizon_s'])} at {dur(s['interval_s'])} intervals; engine {s['engine']}",
        f"jobs: {s['jobs']} submitted, {states.get('done', 0)} done, {states.get('running', 0)} running, "
        f"{states.get('pending', 0)} waiting, {states.get('rejected', 0)} rejected",
        f"GPU allocation {pct(s['allocation'])}, utilization {pct(s['utilization'])} "
        f"({s['useful_gpu_h']:,.1f} useful of {s['capacity_gpu_h']:,.1f} GPU-h); "
        f"stranded GPUs {s['mean_stranded_gpus']:.1f} on average",
    ]
    for cls, w in s["waits"].items():
        lines.append(
            f"  {cls:<9} {w['jobs']:>5} jobs, {w['started']} started, {w['done']} done, "
            f"{w['waiting']} waiting at the end; wait p50 {dur(w['wait_p50_s'])} p95 "
            f"{dur(w['wait_p95_s'])}; completion p50 {dur(w['completion_p50_s'])} p95 "
            f"{dur(w['completion_p95_s'])}"
        )
    lines += [
        f"evictions {s['preemptions']}, node failures {s.get('node_failures', 0)} (stopping {s['failures']} "
        f"runs): {s['lost_gpu_h']:,.2f} GPU-h of work lost, {s['grace_gpu_h']:,.2f} GPU-h in grace periods",
        f"cost {money(s['cost_usd'])} held ({money(s['cost_per_useful_gpu_h'])} per useful GPU-h); fleet "
        f"{money(s['fleet_cost_usd'])} ({money(s['fleet_cost_per_useful_gpu_h'])} per useful GPU-h)",
        *(
            f"autoscaling {name}: {g['requested']} nodes requested, {g['removed']} removed, at most "
            f"{g['peak']} at once; {g['billed_node_h']:,.1f} node-h billed ({g['ready_node_h']:,.1f} ready), "
            f"{money(g['cost_usd'])}"
            for name, g in s.get("autoscaling", {}).items()
        ),
        f"solver: {s['decisions']} decisions in {s['solver_s']:.1f} s"
        + (f", {s['verified']} checked by the independent checker" if s.get("verified") else ""),
    ]
    return "\n".join(lines)
