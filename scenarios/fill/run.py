"""``run_fill``: one cluster-fill run — sample the arrivals, place them as they come, record the fill.

Pods arrive in the order :func:`~placer.scenarios.fill.sampling.arrivals` draws and never leave. With a
baseline
policy (:mod:`placer.scenarios.fill.policies`) each is placed on arrival, one at a time, on the incremental
:class:`~placer.scenarios.fill.state.FillState`; with ``greedy`` or ``cpsat`` they are decided ``batch`` at a
time by placer's own ``place()`` (:mod:`placer.scenarios.fill.engines`). A pod that does not fit when it
arrives
(or that ``place()`` leaves pending) is counted as not allocated and is never retried — as in the FGD
artifact, whose simulator deletes an unschedulable pod and records it as failed.

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> nodes = [OpenbNode("n", 16000, 65536, 2, "P100")]
>>> pods = [OpenbPod("half", 2000, 1024, 1, 500)]
>>> r = run_fill(nodes, pods, load=1.0, seed=0, policy="best-fit")
>>> len(r.order), r.final_alloc(), r.failed
(4, 100.0, 0)
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from placer.scenarios.fill.policies import Context, Policy, make
from placer.scenarios.fill.result import FillResult
from placer.scenarios.fill.sampling import Sampling, arrivals
from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import NodeTable, PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
from placer.solver.gc_pause import paused_gc

__all__ = ["ENGINES", "run_fill"]

#: Policies that are placer's own engines, run through ``place()`` as a backend runs them: ``auto`` (the
#: default engine: greedy, then CP-SAT from its answer), ``greedy`` and ``cpsat``; and ``greedy-fgd``,
#: greedy with the FGD baseline scorer (:mod:`placer.solver.scorers`, whose target workload is the batch)
#: — FGD's node choice inside ``place()``.
ENGINES: tuple[str, ...] = ("auto", "greedy", "cpsat", "greedy-fgd")


def run_fill(
    nodes: Sequence[OpenbNode],
    pods: Sequence[OpenbPod],
    *,
    load: float = 1.3,
    seed: int = 42,
    policy: str = "fgd",
    batch: int = 1,
    sampling: Sampling = "sample",
    time_limit_s: float = 2.0,
    order: Sequence[int] | None = None,
    reproducible: bool = False,
) -> FillResult:
    """Fill the cluster of ``nodes`` with pods drawn from ``pods`` up to ``load`` x its GPU capacity.

    ``batch`` is how many arrivals ``place()`` decides at once (engines only; the baselines place one pod
    at a time); ``time_limit_s`` is each ``place()`` call's limit; ``order`` (pod indices) replaces the
    sampled arrivals, for hand-worked examples; ``reproducible`` runs the engines on deterministic budgets
    (``Policy.reproducible``: the same run on any machine, however loaded; the baselines always are).
    ``KeyError`` for an unknown policy, ``ValueError`` for a batch size a baseline cannot use or a workload
    without GPU pods."""
    t0 = time.perf_counter()
    node_table, pod_table = NodeTable.of(nodes), PodTable.of(pods)
    drawn: Sequence[int] | np.ndarray | None = order
    if drawn is None:
        drawn = arrivals(
            pod_table, capacity_milli=node_table.capacity_milli, load=load, seed=seed, sampling=sampling
        )
    sequence = np.asarray(drawn, dtype=np.int64)
    state = FillState(node_table)
    if batch < 1:
        raise ValueError(f"batch must be at least 1, got {batch}")
    if policy not in ENGINES and batch != 1:
        engines = " and ".join(ENGINES)
        raise ValueError(f"policy {policy!r} places one pod at a time; --batch is for {engines}")
    # The collector paused for the whole run, whatever the policy: a run creates no reference cycles
    # (measured: nothing to collect at the end, the same peak memory), and full collections walking an
    # engine's thousands of running jobs after every few hundred commits were a tenth of its time.
    cut = 0
    with paused_gc():
        if policy in ENGINES:
            from placer.scenarios.fill.engines import place_batches

            where, gpus, cut = place_batches(
                nodes,
                pods,
                pod_table,
                sequence,
                state,
                engine=policy,
                batch=batch,
                seed=seed,
                time_limit_s=time_limit_s,
                reproducible=reproducible,
            )
        else:
            where, gpus = _one_at_a_time(make(policy, Context(node_table, pod_table, seed)), state, sequence)
    demand = pod_table.total_milli[sequence]  # arrival k's GPU request; allocated once it is placed
    return FillResult(
        policy=policy,
        seed=seed,
        load=load,
        batch=batch,
        capacity_milli=node_table.capacity_milli,
        arrived=np.cumsum(demand),
        allocated=np.cumsum(np.where(where >= 0, demand, 0)),
        order=sequence,
        node=where,
        gpus=gpus,
        wall_s=time.perf_counter() - t0,
        reproducible=reproducible,
        cut=cut,
    )


def _one_at_a_time(
    policy: Policy, state: FillState, order: np.ndarray
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Place each arrival with ``policy``; per arrival its node (-1: failed) and GPU indices."""
    pods = policy.ctx.pods
    where = np.full(len(order), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * len(order)
    for k, i in enumerate(order.tolist()):
        choice = policy.choose(state, i, state.feasible(pods, i))
        if choice is not None:
            node, chosen = choice
            gpus[k] = state.take(node, pods, i, chosen)
            where[k] = node
            policy.placed(state, node, i)
    return where, gpus
