"""An upper bound on the GPU allocation any placement of the arrived pods could reach.

Why: "FGD reaches 95.4 %" says little until one knows what was possible. Given the pods that have
arrived (any subset may be placed, in any way) and the nodes, no placement allocates more milli-GPUs than
the optimum of this linear program (solved with GLOP):

* variables ``x[s, c] >= 0``: pods of shape ``s`` (CPU, memory, GPU count, milli per GPU, accepted models)
  placed on nodes of class ``c`` (model, CPU, memory, GPU count), only where one such pod fits an empty
  such node; ``sum_c x[s, c] <= n_s`` (the arrived count); maximize ``sum gpu_s x[s, c]``;
* per class, the class's total CPU, memory and GPU milli;
* per class, **dual-feasible-function cuts** (Fekete & Schepers) for the three kinds of bins a pod is cut
  into: each GPU (1000 milli), each node's CPU, each node's GPU count. With ``u`` the fraction of a bin
  an item takes, ``f_e(u) = 1`` if ``u > 1 - e``, ``u`` if ``e <= u <= 1 - e``, ``0`` if ``u < e``
  (``e <= 1/2``) never lets a bin's items add up to more than 1, so ``sum f_e(u) x <= bins``. For GPUs,
  ``e = 1 - d/1000`` for every share size ``d`` above 500: a GPU holding an 810-milli share can take
  only shares of at most 190 beside it — exactly the fragments FGD fights, now counted in the bound.

CPU-only pods add nothing to the objective and are left out (leaving pods out is always allowed).

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.tables import NodeTable, PodTable
>>> nodes = NodeTable.of([OpenbNode("a", 64000, 262144, 2, "P100")] * 2)
>>> pods = PodTable.of([OpenbPod("big", 1000, 1024, 1, 810)])
>>> round(gpu_bound(nodes, pods, np.zeros(10, dtype=np.int64)))  # four GPUs, one 810 share each
3240
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from ortools.linear_solver import pywraplp

from placer.scenarios.fill.tables import MILLI, NodeTable, PodTable

__all__ = ["NODE_CUTS", "bounds_at", "dff", "gpu_bound"]

#: Cut parameters ``e`` for a node's CPU and GPU-count bins (GPU bins also get one per big share size).
NODE_CUTS: tuple[float, ...] = (0.1, 0.2, 0.25, 0.3, 0.375, 0.4, 0.5)


def dff(u: float, e: float) -> float:
    """The dual feasible function ``f_e`` of the module docstring.

    >>> [dff(u, 0.19) for u in (0.1, 0.19, 0.5, 0.81, 0.9)]
    [0.0, 0.19, 0.5, 0.81, 1.0]
    """
    if u > 1 - e + 1e-12:
        return 1.0
    return u if u >= e - 1e-12 else 0.0


def gpu_bound(nodes: NodeTable, pods: PodTable, arrived: np.ndarray) -> float:
    """The LP optimum (milli-GPUs) for the pods ``arrived`` (pod indices, repeats allowed) on ``nodes``."""
    shapes: Counter[tuple[int, int, int, int, bytes]] = Counter()
    for i in arrived.tolist():
        if pods.num[i]:
            shapes[
                (
                    int(pods.cpu[i]),
                    int(pods.mem[i]),
                    int(pods.num[i]),
                    int(pods.milli[i]),
                    pods.access[i].tobytes(),
                )
            ] += 1
    classes = Counter(
        (int(nodes.model[n]), int(nodes.cpu[n]), int(nodes.mem[n]), int(nodes.gpus[n]))
        for n in range(len(nodes))
        if nodes.gpus[n]
    )
    if not shapes or not classes:
        return 0.0
    solver = pywraplp.Solver.CreateSolver("GLOP")
    objective = solver.Objective()
    objective.SetMaximization()
    big = sorted({m for (_, _, num, m, _) in shapes if MILLI // 2 < m < MILLI})
    gpu_cuts = sorted({round(1 - m / MILLI, 6) for m in big} | {0.5})
    rows: dict[tuple[object, ...], pywraplp.Constraint] = {}

    def add(key: tuple[object, ...], cap: float, var: pywraplp.Variable, coef: float) -> None:
        if coef:
            row = rows.get(key)
            if row is None:
                row = rows[key] = solver.Constraint(-solver.infinity(), cap)
            row.SetCoefficient(var, coef)

    for s, (count, (cpu, mem, num, milli, access)) in enumerate((n, k) for k, n in shapes.items()):
        accepts = np.frombuffer(access, dtype=bool)
        link = solver.Constraint(-solver.infinity(), float(count))
        for c, ((model, ccpu, cmem, gpus), n) in enumerate(classes.items()):
            if not accepts[model] or cpu > ccpu or mem > cmem or num > gpus:
                continue
            x = solver.NumVar(0.0, float(count), f"x{s}_{c}")
            link.SetCoefficient(x, 1.0)
            objective.SetCoefficient(x, float(num * milli))
            add((c, "cpu"), float(n * ccpu), x, float(cpu))
            add((c, "mem"), float(n * cmem), x, float(mem))
            add((c, "gpu"), float(n * gpus * MILLI), x, float(num * milli))
            for e in gpu_cuts:
                add((c, "gpu-dff", e), float(n * gpus), x, num * dff(milli / MILLI, e))
            for e in NODE_CUTS:
                add((c, "cpu-dff", e), float(n), x, dff(cpu / ccpu, e))
                add((c, "mem-dff", e), float(n), x, dff(mem / cmem, e))
                add((c, "count-dff", e), float(n), x, dff(num * milli / (gpus * MILLI), e))
    if solver.Solve() != pywraplp.Solver.OPTIMAL:
        raise RuntimeError("the fill bound's LP did not solve to optimality")
    return float(objective.Value())


def bounds_at(
    nodes: NodeTable, pods: PodTable, order: np.ndarray, arrived_milli: np.ndarray, points: tuple[int, ...]
) -> dict[int, float]:
    """Bound (percent of capacity) at each arrived-load percent of ``points``: the LP for the pods that
    had arrived when the arrived load first reached it (all arrivals for points never reached).

    >>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
    >>> nodes = NodeTable.of([OpenbNode("a", 64000, 262144, 2, "P100")])
    >>> pods = PodTable.of([OpenbPod("w", 1000, 1024, 1, 1000)])
    >>> order = np.zeros(3, dtype=np.int64)
    >>> bounds_at(nodes, pods, order, np.array([1000, 2000, 3000]), (50, 100, 150))
    {50: 50.0, 100: 100.0, 150: 100.0}
    """
    cap = nodes.capacity_milli
    out: dict[int, float] = {}
    for x in points:
        k = int(np.searchsorted(arrived_milli, x / 100 * cap, side="left")) + 1
        out[x] = round(100.0 * gpu_bound(nodes, pods, order[: min(k, len(order))]) / cap, 2)
    return out
