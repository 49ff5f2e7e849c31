"""Rule 21: a replica that asks for an extended resource takes it on a node that has that much free.

Why: a Kubernetes pod may ask for an extended resource (``vpc.amazonaws.com/efa``, ``rdma/hca``, a MIG
slice) or huge pages, a Flux jobspec for any resource type (RFC 14: ``ib10g``, ``ssd``), an SSS job for
any consumable (§5.1.8 ``Resource name="License"``, §5.1.7 ``Swap``, ``Network``); a task group keeps them
in ``extra``, per replica. A node has such a resource when its inventory entry says how much (``extra``,
from a Kubernetes node's ``status.allocatable``), else when a Flux graph describes vertices of that type
inside it (their sizes summed), else when a numeric label says how much: ``resource.<name>`` with ``:``
written ``.`` (``resource.License.MATLAB``), and ``swap_gb`` / ``network`` for SSS ``Swap`` and
``Network``; a Kubernetes node's ``pods`` (every pod takes one; a node that does not state it has no
such limit). Each replica must say it takes at least what its group asks (``extra`` of the replica), and
on each node what the running jobs hold plus what the decision's replicas take is at most what the node
has, as kube-scheduler counts extended resources (``docs/placement-rules.md``). Written from that text,
sharing no code with the engines' ``placer.topology.extended``.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement as Rep
>>> from placer.solver.jobs.model import Job, TaskGroup
>>> from placer.solver.checks.context import build_context
>>> from placer.topology import InnerVertex, Inventory, NodeSpec, build_cluster
>>> ib = NodeSpec(name="ib", cpu_cores=4, inner=[InnerVertex(type="ib10g")])
>>> cluster = build_cluster(Inventory(nodes=[ib, NodeSpec(name="plain", cpu_cores=4)]), source="t")
>>> job = Job(id="j", tasks=[TaskGroup(cpu_cores=1, extra={"ib10g": 1})])
>>> def rules(node):
...     rep = Rep(node=node, cpu_cores=1, extra={"ib10g": 1})
...     ctx = build_context(Decision(placements=[JobPlacement(job="j", replicas=[rep])]), [job], cluster)
...     return [v.rule for v in check_extended(ctx, job, rep)]
>>> rules("ib"), rules("plain")
([], ['extended'])
"""

from __future__ import annotations

from collections.abc import Iterator

from placer.solver.checks.context import Context, group_of
from placer.solver.checks.violation import Violation
from placer.solver.decision import ReplicaPlacement
from placer.solver.jobs.model import Job
from placer.topology import InnerVertex, Node

__all__ = ["check_extended", "check_extended_counts"]


def check_extended(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 21 for one node replica."""
    group = group_of(job, rep)
    if group is None or not group.extra or rep.tpu_pod is not None or not ctx.cluster.has_node(rep.node):
        return
    node = ctx.cluster.node(rep.node)
    for name, amount in sorted(group.extra.items()):
        if amount <= 0:
            continue
        # The node must have that much at all, and the replica must say it takes it (which the counts
        # across replicas, check_extended_counts, then add up).
        for who, value in (
            ("the node has", _has(node, name)),
            ("the replica takes", rep.extra.get(name, 0.0)),
        ):
            if value + 1e-9 < amount:
                yield Violation(
                    "extended",
                    job.id,
                    f"task group {group.name} asks {amount:g} {name} per replica; {who} {value:g}",
                    rep.node,
                )


def check_extended_counts(ctx: Context) -> Iterator[Violation]:
    """Rule 21 across replicas: per node and extended resource, what running jobs (after the decision's
    evictions) hold plus what every replica of the decision takes is at most what the node has."""
    taken: dict[tuple[str, str], float] = {}
    last: dict[tuple[str, str], str] = {}
    for p in ctx.decision.placements:
        for rep in p.replicas:
            if rep.tpu_pod is not None or not ctx.cluster.has_node(rep.node):
                continue
            for name, amount in rep.extra.items():
                taken[(rep.node, name)] = taken.get((rep.node, name), 0.0) + amount
                last[(rep.node, name)] = p.job
    for (node_name, name), placed in sorted(taken.items()):
        if placed <= 0:
            continue
        running = ctx.cluster.usage(node_name).extra.get(name, 0.0)
        has = _has(ctx.cluster.node(node_name), name)
        if running + placed > has + 1e-6:
            yield Violation(
                "extended",
                last[(node_name, name)],
                f"{name} over-committed: {running:g} held by running jobs + {placed:g} placed = "
                f"{running + placed:g}, the node has {has:g}",
                node_name,
            )


def _has(node: Node, name: str) -> float:
    if name in node.spec.extra:
        return float(node.spec.extra[name])
    if name == "pods":  # a Kubernetes node's pod slots: a node that does not say has no such limit
        return float("inf")
    counted = [v.size for v in _vertices(node.spec.inner) if v.type == name]
    if counted:
        return float(sum(counted))
    key = {"swap_gb": "swap_gb", "network": "network"}.get(name, "resource." + ".".join(name.split(":")))
    text = node.labels.get(key)
    if text is None:
        return 0.0
    try:
        return max(0.0, float(text))
    except ValueError:
        return 0.0


def _vertices(inner: list[InnerVertex]) -> Iterator[InnerVertex]:
    for v in inner:
        yield v
        yield from _vertices(v.children)
