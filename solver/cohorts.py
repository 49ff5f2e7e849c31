"""Kueue's hierarchical cohorts: the quota arithmetic of a cohort tree, as Kueue's scheduler does it, for
GPUs and for cores, memory and pods alike (one tree per resource).

Why a module of its own: with cohorts in a tree (Kueue ``Cohort`` objects with a ``parent`` or a quota of
their own) one total per cohort no longer says what may run. Every node — a ClusterQueue (placer's
queue) or a cohort — has a *subtree quota* and keeps a *guaranteed* part it does not lend; what its
subtree uses beyond that part is what it *uses in its parent* (Kueue's ``pkg/cache/resource_node.go``):

* subtree quota: a queue's nominal GPUs; a cohort's own nominal GPUs plus, per child, the child's
  subtree quota less what the child keeps;
* guaranteed: ``max(0, subtree quota - lendingLimit)`` for a node with a lending limit, else 0;
* usage: a queue's GPUs held; a cohort's, per child, what the child uses beyond its guaranteed part.

A decision keeps, at the root, ``usage <= subtree quota``, and at every cohort with a ``borrowingLimit``
``max(0, usage - guaranteed) <= subtree quota - guaranteed + borrowingLimit`` (it takes at most that much
from its parent). A queue's own ``borrowingLimit`` is its ``ml_limits.max_total_gpus`` (nominal plus
limit), as for a flat cohort. GPUs are summed over flavors, as placer's budgets are; so are cores, GB and
pods, whose trees hold the same rules among the queues that state their own quota of them.

>>> from placer.solver.jobs.queues import CohortNode
>>> org = CohortNode(name="org", nominal_gpus=4)
>>> team = CohortNode(name="team", parent="org", borrowing_gpus=2)
>>> tree = CohortTree.of_nodes({"a": ("team", 8, None), "b": ("org", 8, None)}, [org, team])
>>> tree.subtree["org"], tree.room("a", {"a": 0, "b": 0})
(20.0, 10.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from placer.solver.jobs.flavors import FLAVOR_RESOURCES, TREE_AMOUNT, quota_groups

if TYPE_CHECKING:
    from placer.solver.jobs.flavors import Flavor
    from placer.solver.jobs.queues import CohortNode, QueueConfig

__all__ = ["TREE_RESOURCES", "CohortTree"]

#: What a tree's rules count, by resource: the suffix of its quota fields (``nominal_gpus``,
#: ``lending_cpu_cores``...) and the queue's field of what it keeps.
TREE_RESOURCES: dict[str, tuple[str, str]] = {r: (a, f"guaranteed_{a}") for r, a in TREE_AMOUNT.items()}

_EPS = 1e-9


@dataclass
class CohortTree:
    """The cohorts of the trees the queues are in, and the queues below them (module docstring)."""

    #: Cohort -> its parent (None: a root), own nominal GPUs, lending and borrowing limits.
    parent: dict[str, str | None] = field(default_factory=dict)
    nominal: dict[str, float] = field(default_factory=dict)
    lending: dict[str, float | None] = field(default_factory=dict)
    borrowing: dict[str, float | None] = field(default_factory=dict)
    #: Queue -> its cohort, nominal GPUs and lending limit (None: it lends all).
    queues: dict[str, tuple[str, float, float | None]] = field(default_factory=dict)
    #: Derived (:meth:`_derive`): subtree quota and guaranteed GPUs per cohort and per queue; children.
    subtree: dict[str, float] = field(default_factory=dict)
    kept: dict[str, float] = field(default_factory=dict)
    queue_subtree: dict[str, float] = field(default_factory=dict)
    queue_kept: dict[str, float] = field(default_factory=dict)
    child_cohorts: dict[str, list[str]] = field(default_factory=dict)
    child_queues: dict[str, list[str]] = field(default_factory=dict)

    @staticmethod
    def flavored(queues: Mapping[str, QueueConfig]) -> list[tuple[str, str]]:
        """The (resource, flavor) pairs some queue of a tree states its own quota on
        (``Flavor.tree_quota``), or some queue of a flat cohort keeps part of its quota on (a per-flavor
        ``lendingLimit``, ``tree_quota``'s ``guaranteed_*`` beside the cohort's total there): each has a
        tree of its own (:meth:`of` with ``flavor``)."""
        out: set[tuple[str, str]] = set()
        for qc in queues.values():
            c = qc.config.cohort
            if c is None:
                continue
            for resource, (amount, _) in TREE_RESOURCES.items():
                for flavor in _quota_flavors(qc, resource):
                    if (c.tree and f"nominal_{amount}" in flavor.tree_quota) or (
                        not c.tree
                        and flavor.tree_quota.get(f"guaranteed_{amount}")
                        and _shared(flavor, resource)
                    ):
                        out.add((resource, flavor.name))
        return sorted(out)

    @staticmethod
    def of(
        queues: Mapping[str, QueueConfig], resource: str = "gpus", flavor: str | None = None
    ) -> CohortTree | None:
        """The tree of ``resource`` (one of :data:`TREE_RESOURCES`) of the queues whose cohort is in one
        (``config.cohort.tree``) and that state their own quota of it (GPUs: every such queue; cores, GB
        and pods: those with ``nominal_cpu_cores``...), and for GPUs of the flat cohorts one of whose
        queues keeps GPUs (``guaranteed_gpus``, a Kueue lendingLimit); None when there is none.

        A flat cohort with kept GPUs is a one-node tree: each queue's quota is what it keeps (lent to
        nobody), the cohort's own quota the rest of its total, so the root's rule is the flat one, the
        queues' ``max(GPUs held, kept)`` adding up to at most the total. (A flat cohort's cores, GB and
        pods kept are the budgets' own rule: ``Budgets.cohort_resource_room``.)"""
        from placer.solver.jobs.queues import CohortNode

        amount, kept_field = TREE_RESOURCES[resource]
        members: dict[str, tuple[str, float, float | None]] = {}
        nodes: list[CohortNode] = []
        flat: dict[str, list[tuple[str, float, float]]] = {}  # cohort -> [(queue, total, kept)]
        for name, qc in queues.items():
            c = qc.config.cohort
            if c is None:
                continue
            if c.tree and flavor is not None:  # its quota on the flavor (Flavor.tree_quota)
                entry = next((f for f in _quota_flavors(qc, resource) if f.name == flavor), None)
                if entry is None or f"nominal_{amount}" not in entry.tree_quota:
                    continue
                nominal = entry.tree_quota[f"nominal_{amount}"]
                keeps = entry.tree_quota.get(f"guaranteed_{amount}", 0.0)
                members[name] = (c.name, float(nominal), float(nominal - keeps) if keeps else None)
                nodes.extend(c.tree)
            elif c.tree:
                nominal = getattr(c, f"nominal_{amount}")
                if nominal is None:
                    continue  # outside this resource's tree: its own budget only
                keeps = getattr(c, kept_field)
                lend = float(nominal - keeps) if keeps else None
                members[name] = (c.name, float(nominal), lend)
                nodes.extend(c.tree)
            elif flavor is not None:  # a flat cohort's total on the flavor and what the queue keeps there
                entry = next((f for f in _quota_flavors(qc, resource) if f.name == flavor), None)
                total = None if entry is None else _shared(entry, resource)
                if entry is not None and total is not None:
                    kept = entry.tree_quota.get(f"guaranteed_{amount}", 0.0)
                    flat.setdefault(c.name, []).append((name, total, float(kept)))
            elif resource == "gpus":
                flat.setdefault(c.name, []).append((name, float(c.max_total_gpus), float(c.guaranteed_gpus)))
        for cohort, queued in flat.items():
            if not any(kept for _, _, kept in queued):
                continue  # one total, no kept GPUs: the flat rule (budgets.cohort_of)
            for name, _, kept in queued:
                members[name] = (cohort, float(kept), 0.0)
            rest = queued[0][1] - sum(kept for _, _, kept in queued)  # may be below 0: nothing then fits
            if flavor is None:
                nodes.append(CohortNode.model_construct(name=cohort, parent=None, nominal_gpus=int(rest)))
            else:
                on_flavor = {flavor: {f"nominal_{amount}": rest}}
                nodes.append(CohortNode.model_construct(name=cohort, parent=None, flavor_quotas=on_flavor))
        return CohortTree.of_nodes(members, nodes, resource, flavor) if members else None

    @staticmethod
    def of_nodes(
        queues: Mapping[str, tuple[str, float, float | None]],
        nodes: Iterable[CohortNode],
        resource: str = "gpus",
        flavor: str | None = None,
    ) -> CohortTree:
        """The tree of ``nodes`` with ``queues`` (queue -> (cohort, nominal quota, lending limit)) below,
        for ``resource`` (the nodes' quotas of it; on ``flavor``: their ``flavor_quotas`` there)."""
        amount = TREE_RESOURCES[resource][0]
        tree = CohortTree(queues=dict(queues))
        for n in nodes:
            tree.parent[n.name] = n.parent
            if flavor is not None:
                own = n.flavor_quotas.get(flavor, {})
                tree.nominal[n.name] = float(own.get(f"nominal_{amount}", 0.0))
                lend, borrow = own.get(f"lending_{amount}"), own.get(f"borrowing_{amount}")
            else:
                tree.nominal[n.name] = float(getattr(n, f"nominal_{amount}"))
                lend, borrow = getattr(n, f"lending_{amount}"), getattr(n, f"borrowing_{amount}")
            tree.lending[n.name] = None if lend is None else float(lend)
            tree.borrowing[n.name] = None if borrow is None else float(borrow)
        for q, (c, _, _) in tree.queues.items():
            tree.parent.setdefault(c, None)  # a cohort named only by its queues: a root without quota
            tree.child_queues.setdefault(c, []).append(q)
        for c, p in tree.parent.items():
            tree.nominal.setdefault(c, 0.0)
            tree.lending.setdefault(c, None)
            tree.borrowing.setdefault(c, None)
            if p is not None:
                tree.child_cohorts.setdefault(p, []).append(c)
        tree._derive()
        return tree

    def _derive(self) -> None:
        for q, (_, nominal, lend) in self.queues.items():
            self.queue_subtree[q] = nominal
            self.queue_kept[q] = max(0.0, nominal - lend) if lend is not None else 0.0
        for c in self._bottom_up():
            total = self.nominal[c]
            total += sum(self.queue_subtree[q] - self.queue_kept[q] for q in self.child_queues.get(c, []))
            total += sum(self.subtree[k] - self.kept[k] for k in self.child_cohorts.get(c, []))
            self.subtree[c] = total
            lend = self.lending[c]
            self.kept[c] = max(0.0, total - lend) if lend is not None else 0.0

    def _bottom_up(self) -> list[str]:
        """Cohorts, every child before its parent."""
        order: list[str] = []
        seen: set[str] = set()

        def visit(c: str) -> None:
            if c in seen:
                return
            seen.add(c)
            for k in self.child_cohorts.get(c, []):
                visit(k)
            order.append(c)

        for c in sorted(self.parent):
            visit(c)
        return order

    def usage(self, held: Mapping[str, float]) -> dict[str, float]:
        """Each cohort's usage given the GPUs each queue holds (``held``; a queue not named holds 0)."""
        out: dict[str, float] = {}
        for c in self._bottom_up():
            use = sum(max(0.0, held.get(q, 0.0) - self.queue_kept[q]) for q in self.child_queues.get(c, []))
            use += sum(max(0.0, out[k] - self.kept[k]) for k in self.child_cohorts.get(c, []))
            out[c] = use
        return out

    def capacity(self, c: str) -> float | None:
        """What cohort ``c`` may count against its rule: its subtree quota at a root (all its usage counts),
        ``subtree - kept + borrowingLimit`` with a borrowing limit (its usage beyond what it keeps
        counts); None when it has no rule of its own."""
        if self.parent[c] is None:
            return self.subtree[c]
        b = self.borrowing[c]
        return None if b is None else self.subtree[c] - self.kept[c] + b

    def counted(self, c: str, usage: float) -> float:
        """What of cohort ``c``'s usage counts against :meth:`capacity`."""
        return usage if self.parent[c] is None else max(0.0, usage - self.kept[c])

    def path(self, queue: str) -> list[str]:
        """The cohorts above ``queue``, nearest first."""
        out: list[str] = []
        c: str | None = self.queues[queue][0]
        while c is not None and c not in out:
            out.append(c)
            c = self.parent.get(c)
        return out

    def room(self, queue: str, held: Mapping[str, float]) -> float:
        """The most GPUs ``queue`` may add with the queues holding ``held``: each level on its way up keeps
        what it has left of its guaranteed part, and every cohort with a rule on the way has to take the
        rest. Negative when a rule is broken already (quotas lowered): nothing fits."""
        usage = self.usage(held)
        absorbed = max(0.0, self.queue_kept[queue] - held.get(queue, 0.0))
        room = float("inf")
        for c in self.path(queue):
            cap = self.capacity(c)
            if cap is not None:
                left = cap - self.counted(c, usage[c])
                if left < -_EPS:
                    return left
                local = 0.0 if self.parent[c] is None else max(0.0, self.kept[c] - usage[c])
                room = min(room, left + local + absorbed)
            absorbed += max(0.0, self.kept[c] - usage[c])
        return room

    def over(self, held: Mapping[str, float]) -> list[str]:
        """The cohorts whose rule ``held`` breaks."""
        usage = self.usage(held)
        out = []
        for c in sorted(self.parent):
            cap = self.capacity(c)
            if cap is not None and self.counted(c, usage[c]) > cap + _EPS:
                out.append(c)
        return out

    def under(self, c: str) -> list[str]:
        """The queues in cohort ``c``'s subtree."""
        out = list(self.child_queues.get(c, []))
        for k in self.child_cohorts.get(c, []):
            out += self.under(k)
        return out


def _quota_flavors(qc: QueueConfig, resource: str) -> list[Flavor]:
    """The flavors, in order, of the queue's resource group that counts ``resource`` per flavor
    (:func:`~placer.solver.jobs.flavors.quota_groups`, as the budgets read it); none without one."""
    group = quota_groups(qc.config.flavor_groups).get(resource)
    return [] if group is None else list(group.flavors)


def _shared(flavor: Flavor, resource: str) -> float | None:
    """A flat cohort's total of ``resource`` on ``flavor`` (``Flavor.cohort_max_*``), or None."""
    total = getattr(flavor, f"cohort_{FLAVOR_RESOURCES[resource][0]}")
    return None if total is None else float(total)
