"""Which pods arrive, and in what order: the workload of one fill run.

The FGD paper's cluster-fill experiment (ATC '23, §6; ``../shared/traces/README.md``): pods of the trace
are sampled with replacement, with a seed, until their total GPU request reaches ``load`` x the cluster's
GPU capacity; they arrive in that (shuffled) order and never leave. Two ways of drawing are offered:

* ``"sample"`` (default, the README's definition): independent draws; the first draw that would take the
  total GPU request above ``load x capacity`` ends the sample (it is not added), then the order is
  shuffled. CPU-only pods are drawn too; they add no GPU request.
* ``"artifact"`` (the FGD artifact's ``TunePodsByNodeTotalResource``): every pod of the trace once, in a
  shuffled order, then — when the trace asks for less than the target — draws appended, in draw order,
  until the next would exceed it; when it asks for more, random pods removed until it does not.

Both are deterministic for a seed (numpy's PCG64; the artifact's Go ``math/rand`` stream is not
reproduced, so seed 42 here is not seed 42 there — compare means over seeds).

>>> from placer.scenarios.traces.alibaba import OpenbPod
>>> from placer.scenarios.fill.tables import PodTable
>>> pods = PodTable.of([OpenbPod("a", 1000, 1, 1, 500), OpenbPod("b", 1000, 1, 2, 1000)])
>>> order = arrivals(pods, capacity_milli=10_000, load=1.3, seed=7)
>>> int(pods.total_milli[order].sum()) <= 13_000 < int(pods.total_milli[order].sum()) + 2000
True
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from placer.scenarios.fill.tables import PodTable

__all__ = ["SAMPLINGS", "Sampling", "arrivals"]

Sampling = Literal["sample", "artifact"]
SAMPLINGS: tuple[str, ...] = ("sample", "artifact")


def arrivals(
    pods: PodTable, *, capacity_milli: int, load: float, seed: int, sampling: Sampling = "sample"
) -> np.ndarray:
    """Pod indices in arrival order (a pod may appear many times). ``ValueError`` when no pod asks for a
    GPU (the fill would never end) or the load is not positive."""
    if load <= 0:
        raise ValueError(f"load must be positive, got {load}")
    gpu = pods.total_milli
    if len(pods) == 0 or not gpu.any():
        raise ValueError("no pod asks for a GPU: a GPU fill needs some")
    target = load * capacity_milli
    rng = np.random.default_rng(seed)
    if sampling == "artifact":
        return _artifact(gpu, target, rng)
    if sampling != "sample":
        raise ValueError(f"unknown sampling {sampling!r} (known: {', '.join(SAMPLINGS)})")
    return rng.permutation(_draws(gpu, target, 0, rng))


def _draws(gpu: np.ndarray, target: float, start: int, rng: np.random.Generator) -> np.ndarray:
    """Independent uniform draws while the running total (from ``start``) stays within ``target``."""
    mean = max(float(gpu.mean()), 1.0)
    out: list[np.ndarray] = []
    total = start
    while True:
        chunk = rng.integers(0, len(gpu), size=int((target - total) / mean) + 64)
        running = total + np.cumsum(gpu[chunk])
        over = np.flatnonzero(running > target)
        if over.size:
            out.append(chunk[: over[0]])
            return np.concatenate(out)
        out.append(chunk)
        total = int(running[-1])


def _artifact(gpu: np.ndarray, target: float, rng: np.random.Generator) -> np.ndarray:
    order = rng.permutation(len(gpu))
    total = int(gpu.sum())
    if total <= target:
        return np.concatenate([order, _draws(gpu, target, total, rng)])
    keep = list(order)
    while total > target:
        total -= int(gpu[keep.pop(int(rng.integers(0, len(keep))))])
    return np.array(keep, dtype=np.int64)
