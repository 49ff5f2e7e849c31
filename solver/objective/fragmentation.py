"""FGD's fragmentation measure (Weng et al., "Beware of Fragmentation", USENIX ATC '23), defined once.

A *target workload* is a distribution of task shapes ``m`` (CPU, GPUs per task, milli per GPU, where it may
run) with probabilities ``p_m`` (:class:`Targets`). For a node with free CPU ``C`` and free GPU milli
``a_1..a_G`` (total ``T``), the fragment *for task m* is ``T`` when ``m`` cannot run there at all (it needs
no GPU, may not use the node, lacks CPU, or fewer than its GPU count of GPUs have its share free), else
the free milli of the GPUs too full for ``m``. The node's fragmentation is the expectation over the
target workload (:func:`fragmentation`).

Why one module: the engines' ``fgd`` scorer (:mod:`placer.solver.scorers`) and the fill experiment's FGD
baselines (:mod:`placer.scenarios.fill.policies.fgd`) must measure the same thing, in whatever units their
callers hold (greedy: cores; the fill: milli-CPU) — the measure only compares them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placer.solver.candidates import UnitCandidates
from placer.solver.demand import JobPlan

__all__ = ["MILLI", "Targets", "fragmentation", "target_workload"]

#: Milli per whole GPU.
MILLI = 1000


@dataclass(frozen=True, eq=False)
class Targets:
    """FGD's target workload: per task shape ``m`` its probability ``p``, CPU (in the caller's unit: cores
    for the engines, milli-CPU for the fill), milli per GPU (0 for CPU-only), GPU count, and ``access``:
    where ``m`` may run, indexed as its maker needs (the engines: ``[node, m]``; the fill: ``[m, GPU
    model]``). :func:`fragmentation` takes the per-node access matrix as its own argument."""

    p: np.ndarray
    cpu: np.ndarray
    milli: np.ndarray
    num: np.ndarray
    access: np.ndarray

    @property
    def size(self) -> int:
        return int(self.p.size)


def target_workload(plans: list[JobPlan], candidates: dict[int, list[UnitCandidates]], n: int) -> Targets:
    """The batch as FGD's target workload: each node unit of a job that has candidates is a task shape
    (its replica's CPU, GPUs and GPU share) that may use the nodes its hard constraints allow; shapes alike
    in all of that are one, weighted by their replicas. CPU-only units are shapes too (their free GPUs are
    fragments, as in the FGD artifact); TPU units are not (they use no node)."""
    weight: dict[tuple[float, int, int, bytes], float] = {}
    masks: dict[bytes, np.ndarray] = {}
    for plan in plans:
        cands = candidates.get(plan.idx)
        if cands is None:
            continue
        for unit, cand in zip(plan.units, cands, strict=True):
            if unit.tpu is not None or unit.replicas <= 0:
                continue
            need = unit.need
            num, milli = (need.gpus, MILLI) if need.gpus else ((1, need.milli) if need.milli else (0, 0))
            mask = np.packbits(cand.static).tobytes()
            masks.setdefault(mask, cand.static)
            key = (float(need.cpu), milli, num, mask)
            weight[key] = weight.get(key, 0.0) + unit.replicas
    keys = sorted(weight, key=lambda k: (k[:3], k[3]))
    w = np.array([weight[k] for k in keys], dtype=np.float64)
    return Targets(
        p=w / w.sum() if w.size else w,
        cpu=np.array([k[0] for k in keys], dtype=np.float64),
        milli=np.array([k[1] for k in keys], dtype=np.int64),
        num=np.array([k[2] for k in keys], dtype=np.int64),
        access=np.stack([masks[k[3]] for k in keys], axis=1) if keys else np.zeros((n, 0), dtype=bool),
    )


def fragmentation(cpu: np.ndarray, gpu: np.ndarray, access: np.ndarray, t: Targets) -> np.ndarray:
    """FGD's expected GPU fragment (milli-GPUs) of ``K`` node states: free CPU cores ``cpu[K]``, free milli
    per GPU ``gpu[K, G]`` (0 for GPUs a node lacks), ``access[K, M]``.

    The fragment for task shape ``m`` is every free GPU milli when ``m`` cannot run on the node at all (it
    needs no GPU, may not use the node, lacks CPU, or fewer than its GPU count of GPUs have its share
    free), else the free milli of the GPUs too full for ``m``; the node's fragmentation is its
    expectation over the target workload (the definition of ``scenarios/fill/policies/fgd.py``, on
    greedy's amounts).

    >>> t = Targets(p=np.array([0.5, 0.5]), cpu=np.array([4.0, 1.0]), milli=np.array([1000, 500]),
    ...             num=np.array([1, 1]), access=np.ones((1, 2), dtype=bool))
    >>> fragmentation(np.array([8.0]), np.array([[1000, 300]]), np.ones((1, 2), dtype=bool), t).tolist()
    [300.0]
    """
    total = gpu.sum(axis=1).astype(np.float64)
    if t.size == 0:
        return np.zeros(len(cpu))
    levels, col = np.unique(t.milli, return_inverse=True)
    g = gpu[:, :, None]
    fits = (g >= levels[None, None, :]).sum(axis=1)[:, col]  # GPUs with m's share free, (K, M)
    below = (g * (g < levels[None, None, :])).sum(axis=1)[:, col].astype(np.float64)  # too-full GPUs' milli
    ok = access & (cpu[:, None] + 1e-9 >= t.cpu[None, :]) & (fits >= t.num[None, :]) & (t.num[None, :] > 0)
    return np.where(ok, below, total[:, None]) @ t.p
