"""Plots of a run with matplotlib (an optional dependency: ``pip install 'placer-engine[sim]'``).

Why optional: the tables are the result; plots are a convenience for a notebook or ``placer simulate
--plots``. Nothing here is imported unless asked for, and :func:`available` says whether it can be.

* :func:`plot_gpus` — GPUs allocated, busy, stranded and total over time;
* :func:`plot_queue` — jobs waiting, by first pending reason, over time;
* :func:`plot_waits` — queue-wait distribution per priority class;
* :func:`save_all` — the three as PNG files in a folder.

>>> available() in (True, False)
True
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from placer.scenarios.sim.metrics import CLASS_ORDER, pending_reasons, utilization
from placer.scenarios.sim.record import SimResult

__all__ = ["available", "plot_gpus", "plot_queue", "plot_waits", "save_all"]


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


def plot_gpus(r: SimResult, ax: Any = None) -> Any:
    """GPUs total / allocated / busy / stranded per scheduling interval."""
    ax = _axes(ax)
    u = utilization(r)
    for col, label in (
        ("gpus_total", "usable"),
        ("gpus_allocated", "allocated"),
        ("gpus_busy", "busy"),
        ("stranded_gpus", "stranded"),
    ):
        ax.step(u["time"], u[col], where="post", label=label)
    ax.set_ylabel("GPUs")
    ax.set_title(f"{r.meta.get('name', '')}: GPUs over time")
    ax.legend(loc="best")
    return ax


def plot_queue(r: SimResult, ax: Any = None) -> Any:
    """Waiting jobs by first pending reason (stacked) per interval."""
    ax = _axes(ax)
    pr = pending_reasons(r)
    if not pr.empty:
        ax.stackplot(pr.index, *[pr[c] for c in pr.columns], labels=list(pr.columns), step="post")
        ax.legend(loc="upper left", fontsize="small")
    ax.set_ylabel("waiting jobs")
    ax.set_title(f"{r.meta.get('name', '')}: why jobs wait")
    return ax


def plot_waits(r: SimResult, ax: Any = None) -> Any:
    """Box plot of queue waits (hours) per priority class (jobs that started)."""
    ax = _axes(ax)
    j = r.jobs[r.jobs["wait_s"].notna()]
    classes = [c for c in CLASS_ORDER if c in set(j["priority_class"])]
    if classes:
        ax.boxplot([j[j["priority_class"] == c]["wait_s"] / 3600 for c in classes], tick_labels=classes)
    ax.set_ylabel("wait (h)")
    ax.set_title(f"{r.meta.get('name', '')}: queue wait by priority class")
    return ax


def save_all(r: SimResult, folder: str | Path) -> list[Path]:
    """Write ``gpus.png``, ``queue.png`` and ``waits.png`` into ``folder``; the paths written."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = []
    for name, fn in (("gpus", plot_gpus), ("queue", plot_queue), ("waits", plot_waits)):
        fig, ax = plt.subplots(figsize=(10, 4))
        fn(r, ax)
        fig.autofmt_xdate()
        fig.tight_layout()
        path = Path(folder) / f"{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out
