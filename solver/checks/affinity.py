"""Rules 8 and 9: node selectors and required affinity rules hold; anti-affinity keeps jobs apart.

Why: OJS ML §7.1 — a worker "MUST match ALL key-value pairs" of ``ext_ml_node_selector``; §7.2 — "a
backend MUST NOT dispatch a job to a worker that violates any required rule"; §7.3 — anti-affinity
"prevent[s] co-location of specific jobs on the same worker", e.g. replicas of one model on different
hosts. Preferred rules never invalidate a decision (§7.2: they "MUST NOT prevent job dispatch").

Node rules are tested on ``Node.labels`` (derived keys included); for a TPU replica on the pod's labels.
Anti-affinity rules of job J are tested on the labels of every *other* job at one of J's locations:
running jobs (not evicted) and jobs placed by this decision; J's own replicas count as another job among
themselves when J's labels satisfy the rule. The rules of a running job bind incoming jobs too
(``check_running_anti_affinity``), as in Kubernetes.

>>> from placer.solver.jobs.model import Job, Placement
>>> from placer.solver.decision import ReplicaPlacement
>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.checks.context import build_context
>>> from placer.solver.decision import Decision
>>> job = Job(id="j", placement=Placement(node_selector={"zone": "us-east-1a"}))
>>> ctx = build_context(Decision(), [job], cluster_of(dgx_h100(2)))
>>> [v.rule for v in check_node_rules(ctx, job, ReplicaPlacement(node="dgx-h100-1"))]
['node-selector']
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pydantic import TypeAdapter

from placer.solver.checks.context import Context, group_of, job_labels, running_labels
from placer.solver.checks.labelrules import describe, satisfied
from placer.solver.checks.violation import Violation
from placer.solver.decision import JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import Job, Rule

__all__ = [
    "check_anti_affinity",
    "check_domain_anti_affinity",
    "check_node_rules",
    "check_pod_affinity",
    "check_running_anti_affinity",
]

#: Reads a running job's rules (JSON in the inventory) as the job model's rule objects.
_RULE: TypeAdapter[Rule] = TypeAdapter(Rule)


def _node_labels(ctx: Context, rep: ReplicaPlacement) -> Mapping[str, str] | None:
    if rep.tpu_pod is not None:
        pod = ctx.pod(rep)
        return None if pod is None else pod.labels
    node = ctx.node(rep)
    return None if node is None else node.labels


def check_domain_anti_affinity(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 9 on a domain wider than a node (``placement.anti_affinity_domains``: a zone, a rack label): for
    each such rule of the placed job, no other job its rule matches — running and not evicted, or placed by
    this decision — has a replica on a node whose label ``key`` has the value one of the job's nodes has;
    nor do two of its own replicas share a domain when its own labels match the rule. Nodes without the
    label are in no domain. (A placed job the rule of another placed job matches is reported there.)"""
    rules = [(d.key, d.rule) for d in job.placement.anti_affinity_domains]
    if not rules:
        return
    mine = [n for rep in placement.replicas if (n := ctx.node(rep)) is not None]
    own = job_labels(job)
    for key, rule in rules:
        where: dict[str, list[str]] = {}  # domain value -> the job's nodes there
        for n in mine:
            if key in n.labels:
                where.setdefault(n.labels[key], []).append(n.name)
        if not where:
            continue
        if satisfied(rule, own):
            for value, names in sorted(where.items()):
                if len(names) > 1:
                    yield Violation(
                        "anti-affinity",
                        job.id,
                        f"two of its replicas share {key} {value!r}, and its rule {describe(rule)} on that "
                        "domain matches its own labels",
                        names[1],
                    )
        for other, labels, nodes in ctx.everyone():
            if other == job.id or not satisfied(rule, labels):
                continue
            for name in nodes:
                found = ctx.cluster.node(name).labels.get(key) if ctx.cluster.has_node(name) else None
                if found is not None and found in where:
                    yield Violation(
                        "anti-affinity",
                        job.id,
                        f"its rule {describe(rule)} on {key} keeps it out of {found!r}, where {other} runs "
                        f"(on {name})",
                        where[found][0],
                    )
                    break


def check_pod_affinity(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 9, required affinity (``placement.affinity_required``: a Kubernetes pod's required
    ``podAffinity`` terms, each a node label ``key`` and a rule on jobs). A running job (not evicted)
    that matches *every* term's rule is an anchor. With anchors, every replica's node has, for every term,
    the value of ``key`` that some anchor's node has. Without one, the job's own labels match every rule
    (kube-scheduler's first pod of a group), its node has every key, and every other job placed by the
    decision with the same terms is in the same domains (each is then a first pod of the same group: the
    second must join the first). Such a job is one pod (the job model refuses more replicas). A TPU
    replica is refused: a TPU pod has no node labels of this kind."""
    terms = [(d.key, d.rule) for d in job.placement.affinity_required]
    if not terms:
        return
    anchors = [
        rj
        for rj in ctx.cluster.running_jobs()
        if rj.job != job.id and all(satisfied(rule, running_labels(rj)) for _, rule in terms)
    ]
    allowed: dict[str, set[str]] = {key: set() for key, _ in terms}
    for rj in anchors:
        for r in rj.replicas:
            if r.node is not None and ctx.cluster.has_node(r.node):
                labels = ctx.cluster.node(r.node).labels
                for key, _ in terms:
                    if key in labels:
                        allowed[key].add(labels[key])
    said = " and ".join(f"{describe(rule)} on {key}" for key, rule in terms)
    values: dict[str, set[str]] = {key: set() for key, _ in terms}
    for rep in placement.replicas:
        node = ctx.node(rep)
        if node is None:
            if rep.tpu_pod is not None:
                yield Violation(
                    "pod-affinity", job.id, f"its required pod affinity ({said}) on a TPU pod", rep.tpu_pod
                )
            continue
        for key, _ in terms:
            value = node.labels.get(key)
            if value is None:
                yield Violation(
                    "pod-affinity",
                    job.id,
                    f"its required pod affinity is on {key}, a label the node lacks",
                    node.name,
                )
            elif anchors and value not in allowed[key]:
                yield Violation(
                    "pod-affinity",
                    job.id,
                    f"its required pod affinity ({said}) needs a running job that matches it in its {key}; "
                    f"none runs in {value!r}",
                    node.name,
                )
            else:
                values[key].add(value)
    if anchors:
        return
    if not all(satisfied(rule, job_labels(job)) for _, rule in terms):
        yield Violation(
            "pod-affinity",
            job.id,
            f"no running job matches its required pod affinity ({said}), and its own labels do not either "
            "(only the first job of a group that matches its own terms may start without one)",
        )
        return
    same = sorted(job.placement.affinity_required, key=lambda d: d.model_dump_json())
    for other, other_job in ctx.placed:
        if other.job >= job.id:
            continue
        theirs = sorted(other_job.placement.affinity_required, key=lambda d: d.model_dump_json())
        if theirs != same:
            continue
        for rep in other.replicas:
            node = ctx.node(rep)
            for key, _ in terms:
                value = None if node is None else node.labels.get(key)
                if value is not None and values[key] and value not in values[key]:
                    yield Violation(
                        "pod-affinity",
                        job.id,
                        f"{other.job} and it both start the pod-affinity group ({said}) with no running job "
                        f"to join, in different {key} domains ({value!r} and "
                        f"{', '.join(sorted(values[key]))})",
                    )
                    return


def _running_domains(
    ctx: Context, job: Job, placement: JobPlacement, own: Mapping[str, str]
) -> Iterator[Violation]:
    holders = [rj for rj in ctx.domain_holders() if rj.job != job.id]
    if not holders:
        return
    nodes = [n for rep in placement.replicas if (n := ctx.node(rep)) is not None]
    for rj in holders:
        theirs = [
            ctx.cluster.node(r.node)
            for r in rj.replicas
            if r.node is not None and ctx.cluster.has_node(r.node)
        ]
        for term in rj.anti_affinity_domains:
            rule = _RULE.validate_python(term.rule)
            if not satisfied(rule, own):
                continue
            domains = {n.labels[term.key] for n in theirs if term.key in n.labels}
            for n in sorted(
                {n.name: n for n in nodes if n.labels.get(term.key) in domains}.values(), key=lambda n: n.name
            ):
                yield Violation(
                    "anti-affinity",
                    job.id,
                    f"running job {rj.job} forbids jobs matching {describe(rule)} in its {term.key} "
                    f"{n.labels[term.key]!r}, and this job's labels match it",
                    n.name,
                )


def check_node_rules(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 8 for one replica: node selector pairs and required rules (job-wide and the group's)."""
    labels = _node_labels(ctx, rep)
    if labels is None:
        return  # unknown node or pod: rules 3 and 13
    where = rep.tpu_pod or rep.node
    for key, value in job.placement.node_selector.items():
        have = labels.get(key)
        if have != value:
            got = "absent" if have is None else repr(have)
            yield Violation(
                "node-selector", job.id, f"node selector {key}={value!r} does not match (label {got})", where
            )
    g = group_of(job, rep)
    rules: list[Rule] = [*job.placement.required, *(g.required if g is not None else [])]
    for rule in rules:
        if not satisfied(rule, labels):
            yield Violation(
                "label-rule",
                job.id,
                f"required rule {describe(rule)} does not hold on the node's labels",
                where,
            )


def check_anti_affinity(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 9 for one placed job."""
    rules = job.placement.anti_affinity
    if not rules:
        return
    own = job_labels(job)
    self_hit = next((r for r in rules if satisfied(r, own)), None)
    reported: set[tuple[str, str]] = set()
    for rep in placement.replicas:
        for loc in ctx.locations(rep):
            if (loc, job.id) in reported:
                continue
            placed_here = ctx.occupants.get(loc, {})
            if self_hit is not None and placed_here.get(job.id, 0) > 1:
                reported.add((loc, job.id))
                yield Violation(
                    "anti-affinity",
                    job.id,
                    f"{placed_here[job.id]} replicas of the job share this node, and the job's own labels "
                    f"match its anti-affinity rule {describe(self_hit)}",
                    loc,
                )
            yield from _others(ctx, job, rules, loc, placed_here, reported)


def _others(
    ctx: Context,
    job: Job,
    rules: list[Rule],
    loc: str,
    placed_here: Mapping[str, int],
    reported: set[tuple[str, str]],
) -> Iterator[Violation]:
    for other in ctx.running_at(loc):
        rj = ctx.running_job(other)
        if rj is None or other == job.id or (loc, other) in reported:
            continue
        hit = next((r for r in rules if satisfied(r, running_labels(rj))), None)
        if hit is not None:
            reported.add((loc, other))
            yield Violation(
                "anti-affinity",
                job.id,
                f"running job {other} on this node matches the job's anti-affinity rule {describe(hit)}",
                loc,
            )
    for other in placed_here:
        k = ctx.jobs.get(other)
        if k is None or other == job.id or (loc, other) in reported:
            continue
        hit = next((r for r in rules if satisfied(r, job_labels(k))), None)
        if hit is not None:
            reported.add((loc, other))
            yield Violation(
                "anti-affinity",
                job.id,
                f"job {other}, placed on this node too, matches the job's anti-affinity rule {describe(hit)}",
                loc,
            )


def check_running_anti_affinity(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 9, the other way round: a placed job does not join a running job (not evicted) whose own
    required anti-affinity rules match the placed job's labels — as Kubernetes keeps an incoming pod off
    a node whose pods' required anti-affinity it matches; nor, for a running job's rule on a wider domain
    (``RunningJob.anti_affinity_domains``: a zone, a rack), does it run on a node whose label of that key
    has the value one of the running job's nodes has."""
    own = job_labels(job)
    yield from _running_domains(ctx, job, placement, own)
    reported: set[tuple[str, str]] = set()
    for rep in placement.replicas:
        for loc in ctx.locations(rep):
            for other in ctx.running_at(loc):
                rj = ctx.running_job(other)
                if rj is None or not rj.anti_affinity or other == job.id or (loc, other) in reported:
                    continue
                rules = [_RULE.validate_python(r) for r in rj.anti_affinity]
                hit = next((r for r in rules if satisfied(r, own)), None)
                if hit is not None:
                    reported.add((loc, other))
                    yield Violation(
                        "anti-affinity",
                        job.id,
                        f"running job {other} on this node forbids jobs matching {describe(hit)}, and this "
                        "job's labels match it",
                        loc,
                    )
