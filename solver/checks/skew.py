"""Rule 9, topology spread: a job with ``DoNotSchedule`` topology spread constraints lands where kube-
scheduler's PodTopologySpread filter would let it.

Why: a Kubernetes pod's ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule`` keep it out of
a domain that would hold more than ``maxSkew`` above the least one; a placement that breaks one is a pod kube-
scheduler would leave pending. Counted here from the cluster after the decision's evictions, on the nodes'
labels, with no code of the engines: for each constraint (``placement.spread_required``) the eligible nodes
have the label of every constraint's ``key`` and, with ``honor_node_rules``, satisfy the job's node selector
and required node rules; each domain (a value of ``key`` among them) counts the running jobs the constraint's
rule matches on its eligible nodes, one per job and node; the job's node must have ``key``, and its domain's
count plus one (when the job's own labels match the rule) may exceed the least count by at most ``max_skew``,
the least being 0 while fewer than ``min_domains`` domains exist. Of the jobs a decision places, no two may
count each other (one's rule matches the other's labels): placer decides those one a call, so that each sees
exactly the running jobs (``docs/placement-rules.md``, rule 9).

>>> from placer.solver.jobs.model import Job, LabelRule, Placement, SpreadRule
>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.checks.context import build_context
>>> from placer.topology import cluster_of, dgx_h100
>>> web = LabelRule(key="app", operator="In", values=["web"])
>>> job = Job(id="j", placement=Placement(spread_required=[SpreadRule(key="no-such", max_skew=1, rule=web)]))
>>> placed = JobPlacement(job="j", replicas=[ReplicaPlacement(node="dgx-h100-1")])
>>> ctx = build_context(Decision(placements=[placed]), [job], cluster_of(dgx_h100(2)))
>>> [v.rule for v in check_topology_spread(ctx, job, placed)]
['topology-spread']
"""

from __future__ import annotations

from collections.abc import Iterator

from placer.solver.checks.context import Context, job_labels, running_labels
from placer.solver.checks.labelrules import describe, satisfied
from placer.solver.checks.nodes import BLOCKING, tolerates
from placer.solver.checks.violation import Violation
from placer.solver.decision import JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import Job, Rule, SpreadRule
from placer.topology import Node

__all__ = ["check_topology_spread"]


def check_topology_spread(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 9 for one placed job's topology spread constraints (module docstring)."""
    spread = job.placement.spread_required
    if not spread:
        return
    for rep in placement.replicas:
        node = ctx.node(rep)
        if node is None:
            if rep.tpu_pod is not None:
                yield Violation("topology-spread", job.id, "its topology spread on a TPU pod", rep.tpu_pod)
            continue
        for c in spread:
            value = node.labels.get(c.key)
            if value is None:
                yield Violation(
                    "topology-spread",
                    job.id,
                    f"its topology spread is on {c.key}, a label the node lacks",
                    node.name,
                )
                continue
            counts = _counts(ctx, job, rep, c)
            few = c.min_domains is not None and len(counts) < c.min_domains
            least = 0 if few or not counts else min(counts.values())
            mine = 1 if satisfied(c.rule, job_labels(job)) else 0
            have = counts.get(value, 0)
            if have + mine - least > c.max_skew:
                yield Violation(
                    "topology-spread",
                    job.id,
                    f"{c.key} {value!r} holds {have} job(s) matching {describe(c.rule)}"
                    f"{' and this one' if mine else ''}, more than {c.max_skew} above the least domain's "
                    f"{least}",
                    node.name,
                )
    for other, other_job in ctx.placed:
        if other.job >= job.id or not other_job.placement.spread_required:
            continue
        if _counts_other(job, other_job) or _counts_other(other_job, job):
            yield Violation(
                "topology-spread",
                job.id,
                f"placed by one decision with {other.job}, which its topology spread counts or which counts "
                "it (placer places at most one of such a pair per decision: each counts only running jobs)",
            )


def _counts(ctx: Context, job: Job, rep: ReplicaPlacement, c: SpreadRule) -> dict[str, int]:
    """Each domain of ``c.key`` among the eligible nodes, with the running jobs ``c.rule`` matches on them
    (one per job and node)."""
    rules: list[Rule] = [*job.placement.required, *(r for g in job.tasks for r in g.required)]

    def eligible(node: Node) -> bool:
        labels = node.labels
        if c.honor_taints and any(
            t.effect in BLOCKING and not tolerates(job, rep, t.key, t.value, t.effect) for t in node.taints
        ):
            return False
        if not c.honor_node_rules:
            return True
        return all(labels.get(k) == v for k, v in job.placement.node_selector.items()) and all(
            satisfied(r, labels) for r in rules
        )

    keys = [k.key for k in job.placement.spread_required]  # a node lacking one is counted for none

    def counted(node: Node) -> bool:
        return all(k in node.labels for k in keys) and eligible(node)

    counts: dict[str, int] = {}
    for n in ctx.cluster.nodes:
        if counted(n):
            counts[n.labels[c.key]] = 0
    for rj in ctx.cluster.running_jobs():
        if rj.job == job.id or not satisfied(c.rule, running_labels(rj)):
            continue
        for name in {r.node for r in rj.replicas if r.node is not None and ctx.cluster.has_node(r.node)}:
            node = ctx.cluster.node(name)
            if counted(node):
                counts[node.labels[c.key]] += 1
    return counts


def _counts_other(a: Job, b: Job) -> bool:
    """Whether a topology spread constraint of ``a`` matches ``b``'s labels."""
    return any(satisfied(c.rule, job_labels(b)) for c in a.placement.spread_required)
