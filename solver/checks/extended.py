"""Rule 21: a replica that asks for an extended resource lies on a node that advertises at least that much.

Why: a Flux jobspec may ask for any resource type (RFC 14: ``ib10g``, ``ssd``), an SSS job for any
consumable (§5.1.8 ``Resource name="License"``, §5.1.7 ``Swap``, ``Network``); a task group keeps them
in ``extra``, per replica. A node has such a resource when a Flux graph describes vertices of that type
inside it (their sizes summed) or, for any source, when a numeric label says how much: ``resource.<name>``
with ``:`` written ``.`` (``resource.License.MATLAB``), and ``swap_gb`` / ``network`` for SSS ``Swap`` and
``Network``. The amount is compared per replica; the rule does not count it down across the jobs on a
node (``docs/placement-rules.md``). Written from that text, sharing no code with the engines'
``placer.topology.extended``.

>>> from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement as Rep
>>> from placer.solver.jobs.model import Job, TaskGroup
>>> from placer.solver.checks.context import build_context
>>> from placer.topology import InnerVertex, Inventory, NodeSpec, build_cluster
>>> ib = NodeSpec(name="ib", cpu_cores=4, inner=[InnerVertex(type="ib10g")])
>>> cluster = build_cluster(Inventory(nodes=[ib, NodeSpec(name="plain", cpu_cores=4)]), source="t")
>>> job = Job(id="j", tasks=[TaskGroup(cpu_cores=1, extra={"ib10g": 1})])
>>> def rules(node):
...     rep = Rep(node=node, cpu_cores=1)
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

__all__ = ["check_extended"]


def check_extended(ctx: Context, job: Job, rep: ReplicaPlacement) -> Iterator[Violation]:
    """Rule 21 for one node replica."""
    group = group_of(job, rep)
    if group is None or not group.extra or rep.tpu_pod is not None or not ctx.cluster.has_node(rep.node):
        return
    node = ctx.cluster.node(rep.node)
    for name, amount in sorted(group.extra.items()):
        has = _has(node, name)
        if has + 1e-9 < amount:
            yield Violation(
                "extended",
                job.id,
                f"task group {group.name} asks {amount:g} {name} per replica; the node advertises {has:g}",
                rep.node,
            )


def _has(node: Node, name: str) -> float:
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
