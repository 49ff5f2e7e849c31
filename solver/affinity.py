"""Required affinity to running jobs (a Kubernetes pod's required ``podAffinity``): where a job may run,
and which running jobs it needs.

kube-scheduler's InterPodAffinity filter, as placer applies it to a job (``Placement.affinity_required``,
a list of terms, each a node label ``key`` and a rule on job labels): an existing pod counts for the terms
only when it matches *every* term's rule — an *anchor*. With anchors, a node passes when, for every term,
it has the label ``key`` with a value some anchor's node has. With none, a pod that matches all its own
terms is the first of its group and passes on any node that has every key (kube's special case, so that
a group with affinity to itself can start); any other pod waits.

Why stricter than kube in two places, never looser: within one decision only *running* jobs are anchors
(a job of the batch that would be one is not; kube places pod after pod, so an earlier pod of the cycle
counts, and placer decides the next call), and of the jobs of a batch that would each start the same
group, at most one is placed (the others would have to join it, a tie between jobs of one decision the
engines do not model; both keep them as pairs, :func:`~placer.solver.apart.one_of_each`, so one that
cannot be placed holds back none; the others wait with ``POD_AFFINITY`` and join it next call). An anchor
is not evicted by the decision that places a job beside it (``problem._candidates`` drops it from the
victims). A job with such terms is one pod: one replica on a node (the job model refuses others; the
Kubernetes importer reads them on pods, one job each).

>>> from placer.solver.candidates import NodeArrays, same_domain
>>> from placer.solver.jobs.model import DomainRule, Job, LabelRule, Placement
>>> from placer.solver.snapshot import Snapshot
>>> from placer.topology import cluster_of, dgx_h100
>>> cache = LabelRule(key="app", operator="In", values=["cache"])
>>> job = Job(id="j", labels={"app": "cache"},
...           placement=Placement(affinity_required=[DomainRule(key="rack", rule=cache)]))
>>> arrays = NodeArrays.of(Snapshot.of(cluster_of(dgx_h100(4, nodes_per_rack=2))), frozenset())
>>> blocked, anchors, starts = required_affinity(job, arrays, may_start=True)
>>> int(blocked.sum()), sorted(anchors), starts  # nothing runs: it starts its group, anywhere
(0, [], True)
>>> bool(required_affinity(job, arrays, may_start=False)[0].all())  # another job of the batch starts it
True
"""

from __future__ import annotations

import numpy as np

from placer.solver.candidates import NodeArrays, same_domain
from placer.solver.jobs.model import Job
from placer.solver.rules import holds, job_labels

__all__ = ["group_key", "required_affinity"]


def group_key(job: Job) -> str:
    """The job's required affinity terms, in a canonical form: jobs with the same key are one group (the
    first of them to start makes the others' anchor)."""
    return "|".join(sorted(d.model_dump_json() for d in job.placement.affinity_required))


def required_affinity(
    job: Job, arrays: NodeArrays, *, may_start: bool
) -> tuple[np.ndarray, frozenset[str], bool]:
    """``(blocked, anchors, starts)`` for a job with required affinity terms: the nodes it may not use, the
    running jobs that match every term (which it needs, so not to be evicted), and whether it starts its
    group (no anchor, its own labels match every term, and ``may_start``: no other job of the decision
    starts the same group before it). Every node is blocked when it may neither join nor start."""
    terms = [(d.key, d.rule) for d in job.placement.affinity_required]
    snap = arrays.snap
    n = len(snap.nodes)
    anchors: set[str] = set()
    at: set[int] = set()
    for v in snap.nodes:
        for j in v.running:
            if j != job.id and all(holds(rule, snap.running_labels(j)) for _, rule in terms):
                anchors.add(j)
                at.add(v.idx)
    starts = not anchors and may_start and all(holds(rule, job_labels(job)) for _, rule in terms)
    allowed = np.full(n, bool(anchors) or starts)
    for key, _ in terms:  # joining: the anchors' domains; starting: any node in a domain of every key
        nodes = sorted(at) if anchors else list(range(n))
        inside = np.zeros(n, dtype=bool)
        inside[same_domain(snap, key, nodes)] = True
        allowed &= inside
    return ~allowed, frozenset(anchors), starts
