"""Topology spread a job must keep (a Kubernetes pod's ``DoNotSchedule`` ``topologySpreadConstraints``):
where it may run, and which running jobs its constraints count.

kube-scheduler's PodTopologySpread filter, as placer applies it to a job (``Placement.spread_required``,
:class:`~placer.solver.jobs.model.SpreadRule`): for each constraint, the *eligible* nodes are those with the
label of every constraint's ``key`` (kube counts no pod on a node that lacks one) that (with
``honor_node_rules``, kube's ``nodeAffinityPolicy: Honor``) satisfy the job's own node selector and required
node rules; a domain is one value of ``key`` among them, and counts the running jobs ``rule`` matches on its
eligible nodes. A node passes when it has ``key`` and its domain's count, plus one when the job's own labels
match ``rule``, exceeds the least count by at most ``max_skew``; the least count is 0 while fewer than
``min_domains`` domains exist (a domain no eligible node is in counts 0, as kube's filter reads a domain it
did not count).

Why stricter than kube in one place, never looser: kube decides pod after pod, each seeing the pods placed
before it. placer decides a batch at once, so in one decision it places at most one of each pair of jobs
whose constraints count each other (:func:`spread_pairs`: a job's labels match the other's rule; both
engines keep it, as they keep pairs kept apart on a zone, :mod:`placer.solver.apart`); the other waits
``POD_TOPOLOGY_SPREAD`` and is decided next call. Then every job placed with a constraint
sees exactly the running jobs, whatever order kube would bind the decision's pods in: the constrained ones
first, each counting none of the others, then the rest, which no constraint of this decision reads. A
running job a constraint counts is not evicted by the decision that places the job
(``problem._candidates`` drops it from the victims): fewer pods in the least domain would raise the skew.

>>> from placer.solver.candidates import NodeArrays
>>> from placer.solver.demand import expand
>>> from placer.solver.jobs.model import Job, LabelRule, Placement, SpreadRule
>>> from placer.solver.snapshot import Snapshot
>>> from placer.topology import cluster_of, dgx_h100
>>> web = LabelRule(key="app", operator="In", values=["web"])
>>> job = Job(id="w", labels={"app": "web"},
...           placement=Placement(spread_required=[SpreadRule(key="rack", max_skew=1, rule=web)]))
>>> arrays = NodeArrays.of(Snapshot.of(cluster_of(dgx_h100(4, nodes_per_rack=2))), frozenset())
>>> blocked, counted, facts = spread_kept(expand(job, 0, max_node_gpus=8), arrays)
>>> int(blocked.sum()), sorted(counted), facts[0]["counts"]  # nothing runs: every rack at 0, any node
(0, [], {'dgx-h100-rack-1': 0, 'dgx-h100-rack-2': 0})
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from placer.solver.candidates import NodeArrays
from placer.solver.demand import JobPlan
from placer.solver.jobs.model import Job, Toleration, tolerated
from placer.solver.rules import holds, job_labels
from placer.solver.snapshot import HARD_TAINT_EFFECTS
from placer.topology import Node

__all__ = ["counts_each_other", "spread_kept", "spread_pairs"]


def _untainted(node: Node, tolerations: tuple[Toleration, ...]) -> bool:
    """Whether the job tolerates every ``NoSchedule``/``NoExecute`` taint of ``node`` (kube's
    ``nodeTaintsPolicy: Honor``: only such nodes' domains and pods count)."""
    return all(t.effect not in HARD_TAINT_EFFECTS or tolerated(t, tolerations) for t in node.taints)


def spread_pairs(plans: Sequence[Any], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """Per job of ``ids`` (plan indices) with topology spread constraints, the others with some that it
    counts or that count it (:func:`counts_each_other`): of each such pair at most one is placed by a
    decision (module docstring); jobs in no pair are absent. Jobs without constraints are in none: kube
    may bind them after every constrained pod of the decision, so no constraint of it counts them."""
    holders = [p for p in ids if plans[p].job.placement.spread_required]
    out: dict[int, set[int]] = {}
    for k, p in enumerate(holders):
        for q in holders[k + 1 :]:
            if counts_each_other(plans[p].job, plans[q].job):
                out.setdefault(p, set()).add(q)
                out.setdefault(q, set()).add(p)
    return {p: frozenset(qs) for p, qs in out.items()}


def counts_each_other(a: Job, b: Job) -> bool:
    """Whether a spread constraint of one of the two jobs counts the other (its rule matches the other's
    labels): two such jobs are not placed by one decision (module docstring)."""
    return any(holds(c.rule, job_labels(b)) for c in a.placement.spread_required) or any(
        holds(c.rule, job_labels(a)) for c in b.placement.spread_required
    )


def spread_kept(plan: JobPlan, arrays: NodeArrays) -> tuple[np.ndarray, frozenset[str], list[dict[str, Any]]]:
    """``(blocked, counted, facts)`` for a job with spread constraints: the nodes its constraints keep it
    off, the running jobs they count (not to be evicted by the decision that places it), and per
    constraint what it found (``key``, ``max_skew``, each domain's ``counts`` and the ``least``), for its
    reason when every node is blocked. The node rules and tolerations that decide which nodes count are
    the job's unit's (a pod: one task group), its node selector among the rules."""
    snap = arrays.snap
    job, unit = plan.job, plan.units[0]
    own = job_labels(job)
    allowed = np.ones(len(snap.nodes), dtype=bool)
    counted: set[str] = set()
    facts: list[dict[str, Any]] = []
    keys = [c.key for c in job.placement.spread_required]
    for c in job.placement.spread_required:
        counts: dict[str, int] = {}
        for v in snap.nodes:
            value = v.node.labels.get(c.key)
            if value is None or any(k not in v.node.labels for k in keys):  # kube: every key, or not counted
                continue
            if c.honor_node_rules and not all(holds(r, v.node.labels) for r in unit.rules):
                continue
            if c.honor_taints and not _untainted(v.node, unit.tolerations):
                continue
            counts.setdefault(value, 0)
            for j in v.running:
                if j != job.id and holds(c.rule, snap.running_labels(j)):
                    counts[value] += 1
                    counted.add(j)
        few = c.min_domains is not None and len(counts) < c.min_domains
        least = 0 if few or not counts else min(counts.values())
        mine = 1 if holds(c.rule, own) else 0
        ok = {value for value, k in counts.items() if k + mine - least <= c.max_skew}
        if mine - least <= c.max_skew:  # a domain of no eligible node counts 0
            for v in snap.nodes:
                value = v.node.labels.get(c.key)
                if value is not None and value not in counts:
                    ok.add(value)
        allowed &= np.fromiter(
            (v.node.labels.get(c.key) in ok for v in snap.nodes), dtype=bool, count=len(snap.nodes)
        )
        facts.append(
            {"key": c.key, "max_skew": c.max_skew, "counts": dict(sorted(counts.items())), "least": least}
        )
    return ~allowed, frozenset(counted), facts
