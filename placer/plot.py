"""A decision as a picture: every GPU of every node, grouped by rack and NVLink domain, coloured by the job
that holds it (placed now: a colour per job; running before: grey; free: white), and TPU pods as chip
grids. For notebooks (``placer.plot.decision(d, cluster)``) and ``placer place --plot FILE.png``.

Why a picture: the question after "did it fit" is "where": fragmentation, a gang split over racks, a node
left with one free GPU are visible at a glance and invisible in JSON. Needs matplotlib (the ``sim`` or
``notebooks`` extra).

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.topology import cluster_of, dgx_h100
>>> c = cluster_of(dgx_h100(2, nodes_per_rack=1))
>>> rep = ReplicaPlacement(node="dgx-h100-r1", gpus=[0, 1])
>>> d = Decision(placements=[JobPlacement(job="a", replicas=[rep])])
>>> fig = decision(d, c)
>>> fig.placer_cells  # GPU cells drawn: 2 nodes x 8
{'gpu': 16, 'placed': 2, 'running': 0, 'tpu_chip': 0}
"""

from __future__ import annotations

from typing import Any

from placer.solver.decision import Decision
from placer.topology import Cluster

__all__ = ["decision"]

RUNNING = "#b0b0b0"
FREE = "#ffffff"


def decision(decision: Decision, cluster: Cluster, *, title: str | None = None) -> Any:
    """The picture of ``decision`` on ``cluster`` (module docstring): a matplotlib Figure, with the counts
    of what it drew in ``fig.placer_cells``."""
    import matplotlib.pyplot as plt  # whatever backend is current: inline in a notebook, Agg headless
    from matplotlib.patches import Rectangle

    placed: dict[tuple[str, int], str] = {}
    chips: dict[tuple[str, tuple[int, ...]], str] = {}
    for p in decision.placements:
        for r in p.replicas:
            for g in r.gpus:
                placed[(r.node, g)] = p.job
            if r.tpu_pod:
                for c in r.tpu_chips:
                    chips[(r.tpu_pod, tuple(c))] = p.job
    running: set[tuple[str, int]] = set()
    running_chips: set[tuple[str, tuple[int, ...]]] = set()
    for rj in cluster.running_jobs():
        for rep in rj.replicas:
            if rep.node:
                running.update((rep.node, g) for g in rep.gpus)
            if rep.tpu_pod:
                running_chips.update((rep.tpu_pod, tuple(c)) for c in rep.tpu_chips)
    jobs = sorted({p.job for p in decision.placements})
    cmap = plt.get_cmap("tab20")
    colour = {j: cmap(i % 20) for i, j in enumerate(jobs)}

    nodes = sorted(
        (n for n in cluster.nodes if n.gpu_count),
        key=lambda n: (n.rack or "", n.nvlink_domain or "", n.name),
    )
    width = max([n.gpu_count for n in nodes] + [1])
    pods = list(cluster.tpu_pods())
    pod_rows = sum(
        (p.shape[1] if len(p.shape) > 1 else 1) * (p.shape[2] if len(p.shape) > 2 else 1) + 1 for p in pods
    )
    height = len(nodes) + pod_rows + 1
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * width + 3), max(2.0, 0.28 * height + 1)))
    counts = {"gpu": 0, "placed": 0, "running": 0, "tpu_chip": 0}
    y = 0.0
    last_rack: str | None = None
    for n in nodes:
        rack = n.rack or "no rack"
        if rack != last_rack:  # one label per rack; nodes of one NVLink domain stay adjacent inside it
            ax.text(-0.5, -(y - 0.1), rack, ha="right", va="top", fontsize=7, color="#555555")
            last_rack = rack
        for g in range(n.gpu_count):
            job = placed.get((n.name, g))
            face = colour[job] if job else RUNNING if (n.name, g) in running else FREE
            ax.add_patch(
                Rectangle((g, -y - 0.9), 0.9, 0.8, facecolor=face, edgecolor="#333333", linewidth=0.4)
            )
            counts["gpu"] += 1
            counts["placed"] += job is not None
            counts["running"] += job is None and (n.name, g) in running
        ax.text(width + 0.3, -y - 0.5, n.name, va="center", fontsize=6)
        y += 1
    for pod in pods:
        y += 1
        ax.text(-0.5, -(y - 0.1), f"TPU {pod.name}", ha="right", va="top", fontsize=7, color="#555555")
        cols, rows = pod.shape[0], pod.shape[1] if len(pod.shape) > 1 else 1
        scale = width / max(cols, 1)
        for coord in _coords(pod.shape):
            key = (pod.name, tuple(coord))
            job = chips.get(key)
            face = colour[job] if job else RUNNING if key in running_chips else FREE
            x = coord[0]
            row = (coord[1] if len(coord) > 1 else 0) + (coord[2] * rows if len(coord) > 2 else 0)
            cell = Rectangle(
                (x * scale, -y - row - 0.9), 0.9 * scale, 0.8, facecolor=face, edgecolor="#333333"
            )
            cell.set_linewidth(0.3)
            ax.add_patch(cell)
            counts["tpu_chip"] += 1
        rows *= pod.shape[2] if len(pod.shape) > 2 else 1
        y += rows
    ax.set_xlim(-4, width + 4)
    ax.set_ylim(-y - 1, 1)
    ax.set_axis_off()
    drawn = set(placed.values()) | set(chips.values())
    shown = [j for j in jobs if j in drawn][:20]  # CPU-only jobs hold no GPU cell: not in the legend
    handles = [Rectangle((0, 0), 1, 1, facecolor=colour[j]) for j in shown]
    handles += [
        Rectangle((0, 0), 1, 1, facecolor=RUNNING),
        Rectangle((0, 0), 1, 1, facecolor=FREE, edgecolor="#333333"),
    ]
    labels = [*shown, "running before", "free"]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=6, frameon=False)
    s = decision.stats
    ax.set_title(
        title
        or f"{len(decision.placements)} placed, {len(decision.pending)} pending ({s.engine}, {s.status})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.placer_cells = counts  # type: ignore[attr-defined]
    return fig


def _coords(shape: list[int]) -> list[list[int]]:
    """Every chip coordinate of a mesh, the third axis folded into the rows (z-th block below)."""
    from itertools import product

    if len(shape) == 3:
        return [
            [x, y + z * shape[1], z] for z, y, x in product(range(shape[2]), range(shape[1]), range(shape[0]))
        ]
    return [list(c)[::-1] for c in product(*(range(n) for n in reversed(shape)))]
