"""placer's own engines in the fill: each batch of arrivals decided by ``place()``, honestly.

Why through ``place()`` and not a shortcut: the point is to measure placer as a backend would run it.
Each batch of ``batch`` arrivals becomes placer jobs (:func:`~placer.scenarios.traces.alibaba.pod_to_job`);
the cluster is the openb cluster with every earlier placement running on it. ``place()`` decides with
``engine`` (``auto``, ``greedy`` or ``cpsat``) through a :class:`~placer.solver.session.Session`
(``place()`` on state kept between calls: each placement is committed to it), and its placements — down
to GPU indices and shares — are applied to the fill state as they are. A job ``place()`` leaves pending
has failed and is never retried, like a baseline's unplaceable pod.

The policy is placer's default with what the experiment needs switched off: no preemption (pods never
leave), no time planning (pods have no durations) and no prices (every GPU model costs the same here, so
cost does not steer placement; ``PriceCatalog()`` is empty).

>>> from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod
>>> from placer.scenarios.fill.run import run_fill
>>> r = run_fill([OpenbNode("n", 16000, 65536, 2, "P100")], [OpenbPod("w", 2000, 1024, 1, 1000)],
...              load=1.0, seed=0, policy="greedy", batch=2)
>>> r.final_alloc(), r.failed
(100.0, 0)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from placer.scenarios.fill.state import FillState
from placer.scenarios.fill.tables import PodTable
from placer.scenarios.traces.alibaba import OpenbNode, OpenbPod, nodes_to_cluster, pod_to_job
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job
from placer.topology import Cluster

__all__ = ["NOW", "arrival_id", "arrival_jobs", "place_batches"]

#: The decision time of every batch (the fill has no clock; a constant keeps runs reproducible).
NOW = datetime(2023, 7, 10, tzinfo=UTC)


def arrival_id(k: int) -> str:
    """The job id of arrival ``k`` (a pod sampled several times arrives as several jobs).

    >>> arrival_id(7)
    'a7'
    """
    return f"a{k}"


def arrival_jobs(
    pods: Sequence[OpenbPod],
    order: np.ndarray,
    ks: Sequence[int],
    templates: dict[tuple[object, ...], Job] | None = None,
) -> list[Job]:
    """The placer jobs of arrivals ``ks`` (pod ``order[k]`` named :func:`arrival_id` ``(k)``), submitted
    in arrival order (one second apart, ending at :data:`NOW`): what a queue in front of ``place()``
    would tell it. ``templates``: a pod's request -> its job, kept by a caller across calls (a trace's
    thousands of pods ask for a hundred or two distinct things; converting each once is the queue's
    parsing, not the engine's work)."""
    templates = {} if templates is None else templates
    out = []
    for k in ks:
        i = int(order[k])
        pod = pods[i]
        key = (pod.cpu_milli, pod.memory_mib, pod.num_gpu, pod.gpu_milli, pod.models)
        base = templates.get(key)
        if base is None:
            base = templates[key] = pod_to_job(pod)
        submitted = NOW - timedelta(seconds=len(order) - k)
        out.append(base.model_copy(update={"id": arrival_id(k), "submit_time": submitted}))
    return out


def place_batches(
    nodes: Sequence[OpenbNode],
    pods: Sequence[OpenbPod],
    table: PodTable,
    order: np.ndarray,
    state: FillState,
    *,
    engine: str,
    batch: int,
    seed: int,
    time_limit_s: float,
    reproducible: bool = False,
) -> tuple[np.ndarray, list[tuple[int, ...]], int]:
    """Decide the arrivals ``batch`` at a time with ``place()``; returns, per arrival, its node index (-1:
    failed) and GPU indices, after applying every placement to ``state``, and how many decisions a wall
    clock cut (``stats.deterministic`` false: they may differ on another machine). ``reproducible`` is
    ``Policy.reproducible``: CP-SAT and every other phase on deterministic budgets."""
    from placer.solver import Policy
    from placer.solver.prices import PriceCatalog
    from placer.solver.session import Session

    engine, _, scorer = engine.partition("-")  # "greedy-fgd": greedy with the fgd scorer
    policy = Policy(
        engine=engine,
        scorer=scorer or "placer",
        time_limit_s=time_limit_s,
        seed=seed,
        preemption=False,
        plan=False,
        reproducible=reproducible,
    )
    cluster: Cluster = nodes_to_cluster(nodes)
    session = Session(cluster, policy, prices=PriceCatalog())
    index = {name: n for n, name in enumerate(state.nodes.names)}
    where = np.full(len(order), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * len(order)
    templates: dict[tuple[object, ...], Job] = {}
    cut = 0
    for start in range(0, len(order), batch):
        ks = list(range(start, min(start + batch, len(order))))
        decision = session.decide(arrival_jobs(pods, order, ks, templates), now=NOW)
        cut += not decision.stats.deterministic
        _apply(decision, order, state, table, index, where, gpus)
        session.commit(decision)
    return where, gpus, cut


def _apply(
    decision: Decision,
    order: np.ndarray,
    state: FillState,
    table: PodTable,
    index: dict[str, int],
    where: np.ndarray,
    gpus: list[tuple[int, ...]],
) -> None:
    """Apply a batch's placements to the fill state (the session commits them to its cluster)."""
    for p in decision.placements:
        k = int(p.job[1:])
        (rep,) = p.replicas  # an openb pod is one replica on one node
        node = index[rep.node]
        gpus[k] = state.take(node, table, int(order[k]), tuple(rep.gpus))
        where[k] = node
