"""The autoscaler of a run: when to add nodes to a group and when to take them away, and what they cost.

Why in the simulator: a cost study that bills on-demand nodes only while jobs hold them assumes an ideal
autoscaler, one that has a node the moment a job needs it and gives it back the moment it is free. A
real one (Kubernetes cluster-autoscaler, Karpenter) waits minutes for a node to boot, keeps an idle node
for minutes before removing it, and is billed for both; jobs wait meanwhile. This module decides as
cluster-autoscaler does, and books what the nodes cost, so a study can compare an autoscaled pool with
fixed ones on the same workload (``docs/simulator.md``, section ``autoscaling``).

It decides, the loop acts (:mod:`placer.scenarios.sim.loop`):

* **Up**, after each decision: the jobs the decision left waiting for capacity (:data:`TRIGGERS`) are
  placed by the same engine on ``max - present`` empty nodes of the first group; the nodes that
  placement uses, less the group's nodes already on their way, are requested (at most up to ``max``), and
  the jobs it placed are taken out before the next group is tried. So a job no node of a group can hold
  asks nothing of it, a gang asks as many nodes as the engine needs for it, and a job already waiting
  for a booting node asks nothing more (cluster-autoscaler's estimator, with placer's engine as the
  bin-packer and its ``priority`` expander with one priority per group). A requested node joins
  ``provision`` later.
* **Down**, at every interval: a node of a group that no job has held (running, starting, or draining in
  a grace period) for ``scale_down_after`` leaves, as long as the group keeps ``min`` nodes
  (cluster-autoscaler's ``--scale-down-unneeded-time``; it only removes empty nodes here, never drains).
* **Reclaims**: a group with ``reclaim_mtbf`` (spot capacity) loses each node an exponential time after
  it joins, drawn from ``"{seed}:reclaim:{node}"`` alone (the same seed reclaims the same node at the
  same time whatever the policy); the loop fails its jobs and removes it, and the next decision's
  waiting jobs ask for nodes again.
* **Cost**: a node is billed from its request to its removal (or the horizon): a cloud bills a VM from its
  creation, booting included. Its GPUs count as capacity from when it joins.

>>> from placer.scenarios.inputs import NodeGroup
>>> from placer.topology.inventory import NodeSpec
>>> l4 = NodeSpec(name="l4-0", gpus={"type": "nvidia-l4", "count": 4})
>>> a = Autoscaler([NodeGroup("l4", l4, min=1, max=2, provision_s=300, scale_down_after_s=600,
...                           price_per_hour=3.2, gpus=4)])
>>> [(u.nodes, u.ready_s) for u in a.initial()]
[(['l4-1'], 0.0)]
>>> a.joined(0.0, "l4-1")
>>> a.scale_down(3000.0, busy=set())  # idle, but the group keeps its min of 1
[]
>>> a.report(3600.0)["l4"]["cost_usd"]
3.2
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from placer.scenarios.inputs import NodeGroup
from placer.solver.decision import Decision
from placer.solver.engine import place
from placer.solver.explain import CAPACITY_CODES
from placer.solver.jobs.model import Job
from placer.solver.policy import Policy
from placer.solver.prices import PriceCatalog
from placer.topology import Cluster, cluster_of

__all__ = ["TRIGGERS", "Autoscaler", "ScaleDown", "ScaleUp"]

#: First pending reasons that make a job ask for nodes: it waits for capacity (or, under planning, for
#: capacity to free up later), or no node of the cluster as it is could hold it. Jobs held by a budget,
#: a throttle, a dependency, a start time or a reservation ask nothing: a new node would not start them.
TRIGGERS = CAPACITY_CODES | {"UNSATISFIABLE", "NODES_UNAVAILABLE", "PLANNED_START", "BACKFILL_WOULD_DELAY"}


@dataclass(frozen=True)
class ScaleUp:
    """Request ``nodes`` of ``group``: they join at ``ready_s``. ``jobs``: the waiting jobs they are for."""

    group: str
    nodes: list[str]
    ready_s: float
    jobs: list[str]


@dataclass(frozen=True)
class ScaleDown:
    """Remove ``nodes`` of ``group`` (each idle for the group's ``scale_down_after``)."""

    group: str
    nodes: list[str]


@dataclass
class _Life:
    """One node of a group: when it was requested, joined and removed (seconds; None: not yet)."""

    requested_s: float
    joined_s: float | None = None
    removed_s: float | None = None
    reclaimed: bool = False

    def hours(self, horizon_s: float) -> tuple[float, float]:
        """Hours billed (request to removal) and ready (joined to removal), up to ``horizon_s``."""
        end = horizon_s if self.removed_s is None else min(horizon_s, self.removed_s)
        ready = 0.0 if self.joined_s is None else max(0.0, end - self.joined_s)
        return max(0.0, end - self.requested_s) / 3600, ready / 3600


@dataclass
class _State:
    """One group during a run."""

    group: NodeGroup
    #: Every node the group has made, in order, with its life so far.
    lives: dict[str, _Life] = field(default_factory=dict)
    #: Nodes that have joined and not left.
    present: set[str] = field(default_factory=set)
    #: Nodes requested and not joined yet.
    coming: set[str] = field(default_factory=set)
    #: Present nodes no job holds -> since when.
    idle_since: dict[str, float] = field(default_factory=dict)
    next_k: int = 1
    peak: int = 0

    def names(self, n: int) -> list[str]:
        out = [self.group.node_name(k) for k in range(self.next_k, self.next_k + n)]
        self.next_k += n
        return out


class Autoscaler:
    """The groups' state, the decisions to add and remove nodes, and their bill (see the module
    docstring). ``policy`` and ``prices``: the engine that estimates how many nodes waiting jobs need
    (greedy, without preemption or planning: the nodes are empty)."""

    def __init__(
        self,
        groups: list[NodeGroup],
        policy: Policy | None = None,
        prices: PriceCatalog | None = None,
        seed: int = 0,
    ) -> None:
        self._seed = seed
        self._groups = {g.name: _State(g) for g in groups}
        self._of: dict[str, str] = {}  # node name -> group name, for every node a group has made
        self._estimator = (policy or Policy()).model_copy(
            update={"engine": "greedy", "preemption": False, "plan": False}
        )
        self._prices = prices
        self._empty: dict[str, Cluster] = {}

    def __bool__(self) -> bool:
        return bool(self._groups)

    def group_of(self, node: str) -> NodeGroup | None:
        """The group ``node`` belongs to (None: a node of the cluster itself)."""
        name = self._of.get(node)
        return None if name is None else self._groups[name].group

    def initial(self) -> list[ScaleUp]:
        """Each group's ``min`` nodes, there from the start."""
        out = []
        for s in self._groups.values():
            if s.group.min:
                out.append(self._request(s, s.group.min, 0.0, ready_s=0.0, jobs=[]))
        return out

    def scale_up(self, t: float, decision: Decision, batch: list[Job], now: datetime) -> list[ScaleUp]:
        """Nodes to request for the jobs ``decision`` left waiting for capacity (see the module docstring)."""
        by_id = {j.id: j for j in batch}
        waiting = [
            by_id[p.job]
            for p in decision.pending
            if p.reasons and p.reasons[0].code in TRIGGERS and p.job in by_id
        ]
        out = []
        for s in self._groups.values():
            may = s.group.max - len(s.present)
            if not waiting or may <= 0:
                continue
            estimate = place(
                waiting, self._empty_nodes(s.group, may), self._estimator, now=now, prices=self._prices
            )
            used = {r.node for p in estimate.placements for r in p.replicas if r.node is not None}
            placed = {p.job for p in estimate.placements}
            add = min(len(used) - len(s.coming), may - len(s.coming))
            if add > 0:
                jobs = sorted(placed)
                out.append(self._request(s, add, t, ready_s=t + s.group.provision_s, jobs=jobs))
            waiting = [j for j in waiting if j.id not in placed]
        return out

    def _empty_nodes(self, group: NodeGroup, n: int) -> Cluster:
        """``n`` empty nodes of ``group`` (the estimate's cluster). One per group is kept, the last size
        asked: keeping every size would hold ``max``-squared nodes for a group that goes up and down."""
        hit = self._empty.get(group.name)
        if hit is None or len(hit.nodes) != n:
            hit = self._empty[group.name] = cluster_of(
                group.inventory([group.node_name(k) for k in range(1, n + 1)]), name=f"{group.name}-estimate"
            )
        return hit

    def _request(self, s: _State, n: int, t: float, *, ready_s: float, jobs: list[str]) -> ScaleUp:
        names = s.names(n)
        for name in names:
            s.coming.add(name)
            s.lives[name] = _Life(requested_s=t)
            self._of[name] = s.group.name
        return ScaleUp(s.group.name, names, ready_s, jobs)

    def joined(self, t: float, node: str) -> float | None:
        """``node``, which :meth:`initial` or :meth:`scale_up` requested, joined the cluster at ``t``; when
        the provider takes it back (None: never)."""
        s = self._groups[self._of[node]]
        s.coming.discard(node)
        s.present.add(node)
        s.lives[node].joined_s = t
        s.idle_since[node] = t
        s.peak = max(s.peak, len(s.present))
        mtbf = s.group.reclaim_mtbf_s
        if mtbf is None:
            return None
        return t + random.Random(f"{self._seed}:reclaim:{node}").expovariate(1.0 / mtbf)

    def present(self, node: str) -> bool:
        """Whether ``node`` (a group's) is in the cluster now."""
        name = self._of.get(node)
        return name is not None and node in self._groups[name].present

    def scale_down(self, t: float, busy: set[str]) -> list[ScaleDown]:
        """The group nodes to remove at ``t``: idle for ``scale_down_after``, down to ``min``, the longest
        idle first (then by name). ``busy``: the nodes some job holds now."""
        out = []
        for s in self._groups.values():
            for node in sorted(s.present):
                if node in busy:
                    s.idle_since.pop(node, None)
                else:
                    s.idle_since.setdefault(node, t)
            due = sorted(
                (since, node)
                for node, since in s.idle_since.items()
                if t - since >= s.group.scale_down_after_s
            )
            n = min(len(due), len(s.present) - s.group.min)
            if n > 0:
                out.append(ScaleDown(s.group.name, [node for _, node in due[:n]]))
        return out

    def left(self, t: float, nodes: list[str], *, reclaimed: bool = False) -> None:
        """``nodes`` left the cluster at ``t`` (``reclaimed``: the provider took them back): their bills
        close."""
        for node in nodes:
            s = self._groups[self._of[node]]
            s.present.discard(node)
            s.idle_since.pop(node, None)
            s.lives[node].removed_s = t
            s.lives[node].reclaimed = reclaimed

    def nodes(self, horizon_s: float) -> list[dict[str, Any]]:
        """One row per node the groups made (the simulator's ``nodes`` table): its group, class, GPUs and
        price, when it was requested, joined and removed (None: not by the horizon), and up to the
        horizon the hours it was billed (request to removal) and ready (joined to removal), and dollars."""
        rows: list[dict[str, Any]] = []
        for s in self._groups.values():
            g = s.group
            for node, life in s.lives.items():
                billed, ready = life.hours(horizon_s)
                rows.append(
                    {
                        "node": node,
                        "group": g.name,
                        "capacity_class": g.template.capacity_class,
                        "gpus": g.gpus,
                        "price_per_hour": g.price_per_hour,
                        "requested_s": life.requested_s,
                        "joined_s": life.joined_s,
                        "removed_s": life.removed_s,
                        "reclaimed": life.reclaimed,
                        "billed_h": billed,
                        "ready_h": ready,
                        "cost_usd": billed * g.price_per_hour,
                    }
                )
        return rows

    def report(self, horizon_s: float) -> dict[str, dict[str, float]]:
        """Per group, up to ``horizon_s`` (the sums of :meth:`nodes`): nodes requested and removed, the
        most present at once, node-hours billed and ready, GPU-hours ready, dollars."""
        out = {}
        for name, s in self._groups.items():
            hours = [life.hours(horizon_s) for life in s.lives.values()]
            billed, ready = sum(b for b, _ in hours), sum(r for _, r in hours)
            out[name] = {
                "requested": len(s.lives),
                "removed": sum(1 for life in s.lives.values() if life.removed_s is not None),
                "reclaimed": sum(1 for life in s.lives.values() if life.reclaimed),
                "peak": s.peak,
                "billed_node_h": billed,
                "ready_node_h": ready,
                "ready_gpu_h": ready * s.group.gpus,
                "cost_usd": billed * s.group.price_per_hour,
            }
        return out
