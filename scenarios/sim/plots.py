"""Plots of a run with matplotlib (an optional dependency: ``pip install 'placer-engine[sim]'``).

Why optional: the tables are the result; plots are a convenience for a notebook or ``placer simulate
--plots``. Nothing here is imported unless asked for, and :func:`available` says whether it can be.

* :func:`plot_gpus` — GPUs allocated, busy and stranded, in % of the usable ones, over time;
* :func:`plot_queue` — jobs waiting, by first pending reason, over time (smoothed, and it says so);
* :func:`plot_waits` — queue waits per priority class as a cumulative distribution on a log axis, jobs
  still waiting at the horizon included;
* :func:`plot_spend` — dollars spent and evictions so far, over time;
* :func:`save_all` — the four as PNG files in a folder.

>>> available() in (True, False)
True
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pandas as pd

from placer.scenarios.sim.metrics import CLASS_ORDER, pending_reasons, utilization
from placer.scenarios.sim.record import SimResult

__all__ = ["PLOTS", "available", "plot_gpus", "plot_queue", "plot_spend", "plot_waits", "save_all"]


def available() -> bool:
    """Whether matplotlib is installed."""
    return importlib.util.find_spec("matplotlib") is not None


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(10, 4))
    return ax


def _time_axis(ax: Any, r: SimResult) -> None:
    """Label the time axis with its zone (the scenario's start is what the times are relative to)."""
    zone = pd.Timestamp(r.meta["start"]).tzname() if r.meta.get("start") else None
    ax.set_xlabel(f"time ({zone})" if zone else "time")


def plot_gpus(r: SimResult, ax: Any = None) -> Any:
    """Allocated and busy GPUs as a percentage of the usable ones per scheduling interval, with the
    stranded ones (free GPUs no waiting job can use: too few together, or no CPU or memory left beside
    them) — allocated drawn as an area so that busy, a line, never hides it."""
    ax = _axes(ax)
    u = utilization(r)
    if not u.empty:
        total = u["gpus_total"].where(u["gpus_total"] > 0)
        t = u["time"]
        ax.fill_between(t, 0, 100 * u["gpus_allocated"] / total, step="post", alpha=0.35, label="allocated")
        ax.step(
            t, 100 * u["gpus_busy"] / total, where="post", label="busy (running, not starting or draining)"
        )
        ax.step(
            t,
            100 * u["stranded_gpus"] / total,
            where="post",
            linestyle="--",
            label="stranded (free, but no waiting job fits them)",
        )
        ax.set_ylim(0, 105)
    ax.set_ylabel("% of usable GPUs")
    ax.set_title(f"{r.meta.get('name', '')}: GPU allocation over time")
    _time_axis(ax, r)
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_queue(r: SimResult, ax: Any = None, *, smooth: int | None = None) -> Any:
    """Waiting jobs by first pending reason (stacked). A reason that holds for one interval and then
    another would draw as a spike that reads like a gap in the data, so counts are averaged over
    ``smooth`` intervals (default: a 60th of the run, at least 1), and the title says so."""
    ax = _axes(ax)
    pr = pending_reasons(r)
    window = smooth if smooth is not None else max(1, len(pr) // 60)
    if not pr.empty:
        shown = pr.rolling(window, min_periods=1).mean() if window > 1 else pr
        ax.stackplot(shown.index, *[shown[c] for c in shown.columns], labels=list(shown.columns), step="post")
        ax.legend(loc="upper left", fontsize="small")
    ax.set_ylabel("waiting jobs")
    every = f" (mean over {window} intervals)" if window > 1 else ""
    ax.set_title(f"{r.meta.get('name', '')}: why jobs wait{every}")
    _time_axis(ax, r)
    return ax


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.3g} min" if seconds < 5400 else f"{seconds / 3600:.3g} h"


def plot_waits(r: SimResult, ax: Any = None) -> Any:
    """Queue waits as a cumulative distribution per priority class, on a log axis (waits span seconds to
    hours). Jobs still waiting at the horizon are counted: they have waited at least until then, so each
    curve stays below 100 % by their share, and the legend gives their number next to p50 and p95 of the
    jobs that started. A wait under a second is drawn at one second."""
    import numpy as np

    ax = _axes(ax)
    jobs = r.jobs
    horizon = float(r.meta.get("horizon_s", 0.0))
    start = pd.Timestamp(r.meta["start"]) if r.meta.get("start") else None
    for cls in [c for c in CLASS_ORDER if c in set(jobs["priority_class"])]:
        j = jobs[jobs["priority_class"] == cls]
        started = np.sort(np.maximum(j["wait_s"].dropna().to_numpy(dtype=float), 1.0))
        waiting = int((j["state"] == "pending").sum())
        n = len(started) + waiting
        if n == 0:
            continue
        label = f"{cls}: {len(started)} started"
        if len(started):
            p50, p95 = np.quantile(started, [0.5, 0.95])
            label += f", p50 {_minutes(p50)}, p95 {_minutes(p95)}"
        if waiting:
            label += f"; {waiting} still waiting at the horizon"
        x = np.concatenate([started, [max(horizon, started[-1] if len(started) else 1.0)]])
        y = np.concatenate([np.arange(1, len(started) + 1) / n, [len(started) / n]])
        ax.step(x, 100 * y, where="post", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("queue wait (s, log scale)")
    ax.set_ylabel("% of the class's jobs started within")
    ax.set_ylim(0, 105)
    ax.set_title(
        f"{r.meta.get('name', '')}: queue wait by priority class"
        + (f" (run from {start:%Y-%m-%d %H:%M %Z})" if start else "")
    )
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_spend(r: SimResult, ax: Any = None) -> Any:
    """Dollars spent on held capacity so far, and evictions so far, over time (two axes)."""
    ax = _axes(ax)
    iv = r.intervals
    if not iv.empty:
        step_h = float(r.meta.get("interval_s", 60.0)) / 3600.0
        ax.step(
            iv["time"],
            (iv["cost_per_hour"] * step_h).cumsum(),
            where="post",
            label="spend ($, held capacity)",
        )
        other = ax.twinx()
        other.step(iv["time"], iv["evicted"].cumsum(), where="post", color="tab:red", label="evictions")
        other.set_ylabel("evictions so far")
        other.set_ylim(bottom=0)
        lines = ax.get_legend_handles_labels()
        more = other.get_legend_handles_labels()
        ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper left", fontsize="small")
    ax.set_ylabel("dollars so far")
    ax.set_title(f"{r.meta.get('name', '')}: spend and evictions over time")
    _time_axis(ax, r)
    return ax


#: File name -> plot, as :func:`save_all` writes them.
PLOTS = {"gpus": plot_gpus, "queue": plot_queue, "waits": plot_waits, "spend": plot_spend}


def save_all(r: SimResult, folder: str | Path) -> list[Path]:
    """Write ``gpus.png``, ``queue.png``, ``waits.png`` and ``spend.png`` into ``folder``; the paths."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = []
    for name, fn in PLOTS.items():
        fig, ax = plt.subplots(figsize=(10, 4))
        fn(r, ax)
        if name != "waits":
            fig.autofmt_xdate()
        fig.tight_layout()
        path = Path(folder) / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out
