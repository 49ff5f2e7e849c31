"""The three figures of a cost study, with matplotlib (optional: ``pip install 'placer-engine[notebooks]'``).

Why these three: they answer the questions a colleague asks of a cluster design, in order — what do I
pay for how many jobs done in time (:func:`plot_frontier`: the designs no other design beats on both
are on the frontier), what does a useful GPU-hour cost and which way of buying makes it up
(:func:`plot_cost_per_useful_hour`), and what does cheap spot capacity throw away
(:func:`plot_lost_work`: GPU-hours lost to spot reclaims and to evictions).

Each takes the per-design table of :func:`placer.scenarios.cost.table` and, where it helps, the per-seed
table (``table(runs, per_seed=True)``) to show the spread over seeds; each draws on ``ax`` (a new figure
when None) and returns it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["CLASS_COLORS", "frontier", "plot_cost_per_useful_hour", "plot_frontier", "plot_lost_work"]

#: One colour per capacity class, the same in every figure.
CLASS_COLORS = {"reserved": "#4C72B0", "on-demand": "#DD8452", "spot": "#55A868"}


def _design_colors(table: pd.DataFrame) -> dict[str, Any]:
    """A design named after a capacity class (all ``reserved``, all ``on-demand``) keeps that class's
    colour, so "reserved" is one colour in every figure; other designs take colours no class uses.

    >>> c = _design_colors(pd.DataFrame(index=["reserved", "mix"]))
    >>> c["reserved"] == CLASS_COLORS["reserved"], c["mix"] in CLASS_COLORS.values()
    (True, False)
    """
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    others = [cmap(i) for i in (3, 4, 5, 6, 8, 9, 7)]  # tab10 without its blue, orange and green
    out: dict[str, Any] = {}
    for name in (str(n) for n in table.index):
        out[name] = (
            CLASS_COLORS.get(name) or others[sum(1 for n in out if n not in CLASS_COLORS) % len(others)]
        )
    return out


def _axes(ax: Any, size: tuple[float, float] = (7.5, 4.5)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size)
    return ax


def _bars_done(ax: Any, xlabel: str, title: str) -> Any:
    """Labels of a horizontal bar chart, one bar per design, the first design on top."""
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    return ax


def frontier(table: pd.DataFrame) -> list[str]:
    """Designs no other design beats on both cost (lower) and deadlines met (higher), cheapest first.

    >>> t = pd.DataFrame({"cost_usd": [10, 20, 30], "deadlines_met_share": [0.5, 0.9, 0.8]},
    ...                  index=["a", "b", "c"])
    >>> frontier(t)
    ['a', 'b']
    """
    out = []
    for name, row in table.iterrows():
        beaten = (
            (table["cost_usd"] <= row["cost_usd"])
            & (table["deadlines_met_share"] >= row["deadlines_met_share"])
            & (
                (table["cost_usd"] < row["cost_usd"])
                | (table["deadlines_met_share"] > row["deadlines_met_share"])
            )
        )
        if not beaten.any():
            out.append(str(name))
    return sorted(out, key=lambda n: float(table.loc[n, "cost_usd"]))


def plot_frontier(table: pd.DataFrame, per_seed: pd.DataFrame | None = None, ax: Any = None) -> Any:
    """Dollars over the horizon against the share of deadlines met: one big dot per design (the mean),
    a small dot of the same colour per seed, the frontier's designs ringed and joined."""
    ax = _axes(ax)
    colors = _design_colors(table)
    seeds = per_seed.reset_index() if per_seed is not None and not per_seed.empty else None
    for name, row in table.iterrows():
        c = colors[str(name)]
        if seeds is not None:
            mine = seeds[seeds["design"] == name]
            ax.scatter(mine["cost_usd"], 100 * mine["deadlines_met_share"], s=14, color=c, alpha=0.5)
        ax.scatter(
            row["cost_usd"], 100 * row["deadlines_met_share"], s=70, color=c, zorder=3, label=str(name)
        )
    best = frontier(table)
    x, y = table.loc[best, "cost_usd"], 100 * table.loc[best, "deadlines_met_share"]
    ax.scatter(x, y, s=220, facecolors="none", edgecolors="black", lw=1, zorder=4, label="on the frontier")
    if len(best) > 1:
        ax.plot(x, y, color="black", lw=0.8, ls="--", zorder=2)
    ax.set_xlabel("cost over the horizon ($)")
    ax.set_ylabel("deadlines met (%)")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(5))  # dollar labels are wide: five ticks never overlap
    ax.xaxis.set_major_formatter(lambda v, _: f"${v:,.0f}")
    ax.set_title("What each design costs, and how many jobs it finishes in time")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, title="big: mean, small: a seed")
    return ax


def plot_cost_per_useful_hour(
    table: pd.DataFrame, per_seed: pd.DataFrame | None = None, ax: Any = None
) -> Any:
    """Dollars per useful GPU-hour per design, stacked by the capacity class paid for (seeds as dots)."""
    ax = _axes(ax)
    names = [str(n) for n in table.index]
    left = pd.Series(0.0, index=table.index)
    useful = table["useful_gpu_h"].where(table["useful_gpu_h"] > 0)
    for cls, color in CLASS_COLORS.items():
        part = (table[f"cost_{cls.replace('-', '_')}_usd"] / useful).fillna(0.0)
        ax.barh(names, part, left=left, color=color, label=cls)
        left += part
    if per_seed is not None and not per_seed.empty:
        seeds = per_seed.reset_index()
        y = {n: i for i, n in enumerate(names)}
        ax.scatter(
            seeds["cost_per_useful_gpu_h"],
            [y[str(d)] for d in seeds["design"]],
            s=12,
            color="black",
            zorder=3,
            label="one seed",
        )
    # The means in a column right of every bar and dot.
    x = max(left.max(), per_seed["cost_per_useful_gpu_h"].max() if per_seed is not None else 0.0) * 1.03
    for i, total in enumerate(table["cost_per_useful_gpu_h"]):
        ax.annotate(f"${total:.2f}", (x, i), va="center", fontsize=9)
    ax.set_xlim(0, x * 1.1)
    return _bars_done(ax, "$ per useful GPU-hour", "What a useful GPU-hour costs, by how it was bought")


def plot_lost_work(table: pd.DataFrame, ax: Any = None) -> Any:
    """GPU-hours of work thrown away per design: to spot reclaims and to evictions (mean over seeds),
    with the mean number of reclaims."""
    ax = _axes(ax)
    names = [str(n) for n in table.index]
    reclaim = table["lost_reclaim_gpu_h"]
    evicted = table["lost_evicted_gpu_h"]
    ax.barh(names, reclaim, color=CLASS_COLORS["spot"], label="lost to spot reclaims")
    ax.barh(names, evicted, left=reclaim, color="0.6", label="lost to evictions")
    for i, (n, total) in enumerate(zip(table["reclaims"], reclaim + evicted, strict=True)):
        ax.annotate(f"{n:.0f} reclaims", (total, i), textcoords="offset points", xytext=(6, -3), fontsize=9)
    return _bars_done(
        ax, "GPU-hours of work lost (redone later or never)", "What cheap spot capacity throws away"
    )
