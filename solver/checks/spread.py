"""Rules 10-12: exclusive nodes, distinct nodes, node counts, topology scopes and Flux domain counts.

Why: ML extensions §7.1 ``dedicated`` "require[s] exclusive access to all GPUs on the allocated node(s)";
Flux RFC 14 ``exclusive`` nodes (the default inside a slot) are owned whole; a Flux ``node > slot``
request or ``spread`` affinity puts replicas on distinct nodes (a ``slot > node: k`` replica spans k
distinct nodes); RFC 14 node counts with ranges bound how many nodes a job may use; ``topology_scope``
keeps a gang inside one rack, block, zone, NVLink domain or node.

Domain counts (a task group's ``domains``, Flux levels above the node: ``rack: 2 > node: 1``): on a level
the cluster describes, the group's replicas lie in exactly that many distinct domains, the same number in
each; a replica on a node without a value for the level is in none. ``cluster`` is described by every
inventory (it is one cluster); ``rack``/``block``/``zone`` when some node of the cluster has one; other
levels are not checked (the decision notes them as assumed).

Slices (a task group's ``slices``, Kueue's ``podset-slice-required-topology`` above the node): every
domain of the level holds a multiple of the slice size of the group's replicas, and a replica on a node
without a value for the level is in none — whether the cluster describes the level or not (Kueue keeps
such pods off nodes without the label). Exclusive slices (JobSet exclusive placement): each domain the
group uses holds exactly one slice, and no node of it holds anything else, running (not evicted) or
placed, another group of the same job included.

One flavor (a job's ``placement.one_flavor``, set from a Kueue queue's ResourceFlavors): each task group's
pods are on the nodes of one flavor of each resource group listed, a node being the first flavor, in the
listed order, whose node labels it all has; a node of none of them breaks it.

Scopes: a node's ``rack``/``block``/``zone``/``nvlink_domain`` or its name (``node``). A job on a single
node satisfies every scope. On more nodes, a node without that attribute belongs to no such domain and
breaks the scope. A TPU pod is one ICI domain: for a TPU replica every scope but ``zone`` (the pod's zone)
means "the same pod". An unknown scope name is not checked (the readers only produce the five).

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
>>> from placer.solver.jobs.model import Job, Placement
>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.checks.context import build_context
>>> job = Job(id="j", placement=Placement(exclusive_nodes=True))
>>> d = Decision(placements=[JobPlacement(job="j", replicas=[ReplicaPlacement(node="dgx-h100-1")]),
...                          JobPlacement(job="k", replicas=[ReplicaPlacement(node="dgx-h100-1")])])
>>> ctx = build_context(d, [job, Job(id="k")], cluster_of(dgx_h100(2)))
>>> [v.rule for v in check_exclusive(ctx, job, d.placements[0])]
['exclusive']
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from placer.solver.checks.context import Context, group_of
from placer.solver.checks.violation import Violation
from placer.solver.decision import JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import GpuAffinity, Job

__all__ = [
    "SCOPES",
    "check_distinct",
    "check_domains",
    "check_exclusive",
    "check_one_flavor",
    "check_scope",
    "check_slices",
]

SCOPES = ("rack", "block", "zone", "nvlink_domain", "node")


def check_exclusive(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 10 for one placed job."""
    whole_job = job.placement.exclusive_nodes or job.placement.gpu_affinity is GpuAffinity.DEDICATED
    seen: set[str] = set()
    for rep in placement.replicas:
        g = group_of(job, rep)
        if not (whole_job or (g is not None and g.exclusive)):
            continue
        for loc in ctx.locations(rep):
            if loc in seen:
                continue
            seen.add(loc)
            others = [j for j in ctx.running_at(loc) if j != job.id]
            others += [j for j in ctx.occupants.get(loc, {}) if j != job.id]
            if others:
                why = "dedicated" if job.placement.gpu_affinity is GpuAffinity.DEDICATED else "exclusive"
                yield Violation(
                    "exclusive",
                    job.id,
                    f"the job needs its nodes {why}, but this node also hosts "
                    f"{', '.join(sorted(set(others)))}",
                    loc,
                )


def check_distinct(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 11 for one placed job: distinct nodes per group where required, and the job's node count."""
    spread = job.placement.gpu_affinity is GpuAffinity.SPREAD
    for g in job.tasks:
        if not (spread or g.one_per_node or g.nodes_per_replica > 1):
            continue
        seen: set[str] = set()
        for rep in placement.replicas:
            if rep.task_group != g.name:
                continue
            for loc in ctx.locations(rep):
                if loc in seen:
                    yield Violation(
                        "distinct-nodes",
                        job.id,
                        f"two replicas of task group {g.name} share this node; they must be on distinct "
                        "nodes",
                        loc,
                    )
                seen.add(loc)
    rng = job.placement.node_count
    if rng is not None:
        nodes = {loc for rep in placement.replicas for loc in ctx.locations(rep)}
        if len(nodes) not in rng.values(len(nodes)):
            hi = "unbounded" if rng.max is None else rng.max
            yield Violation(
                "node-count",
                job.id,
                f"the job uses {len(nodes)} nodes; admissible node counts run from {rng.min} to {hi} "
                f"({rng.operator}{rng.operand})",
            )


def _scope_value(ctx: Context, rep: ReplicaPlacement, scope: str) -> str | None:
    if rep.tpu_pod is not None:
        pod = ctx.pod(rep)
        if pod is None:
            return None
        return pod.zone if scope == "zone" else pod.name
    node = ctx.node(rep)
    if node is None:
        return None
    if scope == "node":
        return node.name
    value: str | None = getattr(node, scope)
    return value


def check_scope(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 12 for one placed job."""
    scope = job.placement.topology_scope
    if scope not in SCOPES or not placement.replicas:
        return
    places = {(r.tpu_pod, r.node) for r in placement.replicas}
    if len(places) <= 1:
        return
    first: str | None = None
    first_at = ""
    for rep in placement.replicas:
        if rep.tpu_pod is None and ctx.node(rep) is None:
            continue  # unknown node: rule 3
        value = _scope_value(ctx, rep, scope)
        where = rep.tpu_pod or rep.node
        if value is None:
            yield Violation(
                "topology-scope",
                job.id,
                f"the job must stay within one {scope}, but this node belongs to no {scope}",
                where,
            )
        elif first is None:
            first, first_at = value, where
        elif value != first:
            yield Violation(
                "topology-scope",
                job.id,
                f"the job must stay within one {scope}: this node is in {scope} {value}, "
                f"{first_at} in {first}",
                where,
            )


def _described(ctx: Context, level: str) -> bool:
    if level == "cluster":
        return True
    return level in ("rack", "block", "zone") and any(
        getattr(n, level) is not None for n in ctx.cluster.nodes
    )


def check_domains(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 12 (domain counts) for one placed job."""
    for g in job.tasks:
        reps = [r for r in placement.replicas if r.task_group == g.name]
        for d in g.domains:
            if not reps or not _described(ctx, d.level):
                continue
            if d.level == "cluster":
                if d.count != 1:
                    yield Violation(
                        "domain-count",
                        job.id,
                        f"task group {g.name} asks for {d.count} clusters and the inventory is one cluster",
                    )
                continue
            per = yield from _per_domain(
                ctx,
                reps,
                d.level,
                "domain-count",
                job,
                f"task group {g.name} must lie in {d.count} {d.level}s",
            )
            if per and (len(per) != d.count or len(set(per.values())) != 1):
                exactly = f"task group {g.name} must lie in exactly {d.count} {d.level}s"
                yield Violation(
                    "domain-count",
                    job.id,
                    f"{exactly} with as many replicas in each; its replicas are spread {_listed(per)}",
                )


def check_slices(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 12 (slices) for one placed job."""
    for g in job.tasks:
        if g.slices is None:
            continue
        level, size = g.slices.level, g.slices.size
        reps = [r for r in placement.replicas if r.task_group == g.name]
        what = f"task group {g.name} runs in slices of {size}, each inside one {level}"
        per = yield from _per_domain(ctx, reps, level, "slices", job, what)
        cut = {v: n for v, n in per.items() if n % size}
        if cut:
            multiple = f"every {level} holds a multiple of {size} of its replicas"
            yield Violation("slices", job.id, f"{what}, so {multiple}; it has {_listed(cut)}")
        if g.slices.exclusive and per:
            yield from _alone(ctx, job, placement, g.name, level, size, per)


def _alone(
    ctx: Context,
    job: Job,
    placement: JobPlacement,
    group: str,
    level: str,
    size: int,
    per: dict[str, int],
) -> Iterator[Violation]:
    """Exclusive slices: each domain the group uses holds exactly one slice of it, and no node of the
    domain holds a replica of anything else: a running job (not evicted), another job placed, or another
    group of this one."""
    what = f"task group {group}'s slices of {size} are exclusive, each alone in its {level}"
    more = {v: n for v, n in per.items() if n > size}
    if more:
        yield Violation("slices", job.id, f"{what}: one slice per {level}; it has {_listed(more)}")
    for node in ctx.cluster.nodes:
        value = getattr(node, level)
        if value not in per:
            continue
        others = set(ctx.running_at(node.name)) | {j for j in ctx.occupants.get(node.name, {}) if j != job.id}
        if any(r.node == node.name and r.task_group != group for r in placement.replicas):
            others.add(f"{job.id} (task group other than {group})")
        if others:
            yield Violation(
                "slices", job.id, f"{what}: {level} {value} also holds {', '.join(sorted(others))}", node.name
            )


def _per_domain(
    ctx: Context, reps: list[ReplicaPlacement], level: str, rule: str, job: Job, what: str
) -> Generator[Violation, None, dict[str, int]]:
    """The replicas ``reps`` counted per domain of ``level``; a replica on a node in no such domain is a
    violation of ``rule`` (``what`` the group must do, then "this node is in no <level>")."""
    per: dict[str, int] = {}
    for r in reps:
        node = ctx.node(r)
        value = None if node is None else getattr(node, level)
        if value is None:
            yield Violation(rule, job.id, f"{what}; this node is in no {level}", r.node)
            continue
        per[value] = per.get(value, 0) + 1
    return per


def _listed(per: dict[str, int]) -> str:
    """``rack-1: 2, rack-2: 1``: replicas per domain, in name order."""
    return ", ".join(f"{v}: {n}" for v, n in sorted(per.items()))


def check_one_flavor(ctx: Context, job: Job, placement: JobPlacement) -> Iterator[Violation]:
    """Rule 12 (one Kueue flavor per pod set, ``placement.one_flavor``) for one placed job: each task group's
    node replicas (TPU replicas hold no node) lie on nodes of one flavor of each such resource group, a node
    being the first flavor, in the group's order, whose node labels it all has."""
    for one in job.placement.one_flavor:
        names = ", ".join(repr(f.name) for f in one.flavors)
        for g in job.tasks:
            seen: dict[str, str] = {}  # flavor -> the first node of the group on it
            for r in placement.replicas:
                if r.task_group != g.name or r.tpu_pod is not None:
                    continue
                node = ctx.node(r)
                labels = {} if node is None else node.labels
                flavor = next(
                    (
                        f.name
                        for f in one.flavors
                        if all(labels.get(k) == v for k, v in f.node_labels.items())
                    ),
                    None,
                )
                if flavor is None:
                    yield Violation(
                        "one-flavor",
                        job.id,
                        f"task group {g.name} runs on one flavor of resource group {one.group} ({names}); "
                        "this node is of none of them",
                        r.node,
                    )
                    continue
                seen.setdefault(flavor, r.node)
            if len(seen) > 1:
                where = ", ".join(f"{f!r} ({n})" for f, n in sorted(seen.items()))
                yield Violation(
                    "one-flavor",
                    job.id,
                    f"Kueue gives task group {g.name} one flavor of resource group {one.group} ({names}); "
                    f"its pods are on the nodes of {where}",
                )
