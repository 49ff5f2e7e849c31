"""The ledger: the cluster as ``place()`` sees it at each scheduling interval — who holds what, and which
nodes are down.

Why a ledger and not the physical state: an evicted job keeps its GPUs for its grace period, yet the job
it was evicted for is already promised those GPUs. The ledger records the promise (the victim released,
the new job allocated at the decision), so the next decision never hands the same GPUs out twice and the
checker can verify it; the physical delay is the simulator's business (the new job starts when the
grace period ends; see ``scenarios/sim/loop.py``).

A failed node is a node with ``ready: false``. A node up in the base cluster goes down and comes back as
a session marks it (``Session.node_down``/``node_up``: flipped in place when it has an inventory entry of
its own, the session's pieces moved forward by it); otherwise the cluster is rebuilt from the inventory
with that node expanded out of its template (each set of down nodes once) and the session reset to it.

The ledger's cluster *is* a :class:`~placer.solver.session.Session`'s (the simulator's, or one of its
own): every allocation, release and failure moves the session forward by what changed, so the next
``place()`` (``session.decide``) costs what changed, not the whole cluster again.

>>> from placer.topology import cluster_of, dgx_h100, RunningJob
>>> led = Ledger(cluster_of(dgx_h100(2)))
>>> led.allocate([RunningJob(job="a", replicas=[{"node": "dgx-h100-1", "gpus": [0, 1]}])])
>>> led.set_down("dgx-h100-2", True)
>>> led.cluster.node("dgx-h100-2").usable, len(led.cluster.free_gpus("dgx-h100-1"))
(False, 6)
>>> led.release(["a"]); len(led.cluster.running_jobs())
0
"""

from __future__ import annotations

from collections.abc import Iterable

from placer.solver.session import Session
from placer.topology import Cluster, RunningJob
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory, NodeSpec
from placer.topology.membership import with_nodes_added, without_nodes

__all__ = ["Ledger"]


class Ledger:
    """The current cluster snapshot and the running allocations it holds (by job id)."""

    def __init__(self, empty: Cluster, session: Session | None = None):
        """``session``: the session the simulator decides with (the ledger keeps it in step; it starts
        from ``empty`` with nothing running); a fresh one deciding as ``place()`` alone when not given."""
        self._base = empty.without_allocations()
        self._structures: dict[frozenset[str], Cluster] = {frozenset(): self._base}
        self.down: frozenset[str] = frozenset()
        self.jobs: dict[str, RunningJob] = {}
        self.session = session if session is not None else Session(self._base, learn=False)
        self.session.reset(self._base)

    @property
    def cluster(self) -> Cluster:
        return self.session.cluster

    def allocate(self, jobs: Iterable[RunningJob]) -> None:
        """Add allocations, all or none (``TopologyError`` on any conflict: a bug in whoever decided)."""
        jobs = list(jobs)
        self.session.start(*jobs)
        for rj in jobs:
            self.jobs[rj.job] = rj

    def release(self, ids: Iterable[str]) -> None:
        ids = [i for i in ids if i in self.jobs]
        if ids:
            self.session.finish(*ids)
        for i in ids:
            del self.jobs[i]

    def replace(self, jobs: Iterable[RunningJob]) -> None:
        """Swap allocations for updated copies (new ``last_checkpoint_at``), same resources."""
        jobs = list(jobs)
        self.release(rj.job for rj in jobs)
        self.allocate(jobs)

    def add_nodes(self, inventory: Inventory) -> None:
        """Nodes join (an autoscaler's): the session moves forward by them (``Session.add_nodes``), and
        they are part of the cluster any later failure is rebuilt from."""
        self.session.add_nodes(inventory)
        self._base = with_nodes_added(self._base, inventory)
        self._structures = {frozenset(): self._base}

    def remove_nodes(self, names: Iterable[str]) -> None:
        """Nodes leave (an autoscaler removed them). Only nodes no job holds may leave: a job on one would
        stop without the simulator booking it, so that is a ``ValueError``."""
        names = list(names)
        held = sorted(j for j, rj in self.jobs.items() if any(r.node in names for r in rj.replicas))
        if held:
            raise ValueError(f"nodes {', '.join(names)} cannot leave: {', '.join(held)} run there")
        self.session.remove_nodes(*names)
        self._base = without_nodes(self._base, names)
        self._structures = {frozenset(): self._base}
        self.down = self.down - set(names)

    def set_down(self, node: str, down: bool) -> None:
        """Mark ``node`` failed (``ready: false``) or repaired, keeping every allocation elsewhere."""
        new = self.down | {node} if down else self.down - {node}
        if new == self.down:
            return
        self.down = new
        if self._base.has_node(node) and self._base.node(node).usable:
            # A node up in the base cluster goes down and back up as a session marks it (not ready; ready
            # and schedulable again): the session moves its pieces forward by that node instead of
            # starting afresh on a cluster rebuilt with every running job (``Session.node_down``).
            if down:
                self.session.node_down(node)
            else:
                self.session.node_up(node)
            return
        if new not in self._structures:
            self._structures[new] = _with_down(self._base, new)
        self.session.reset(self._structures[new].with_allocations(self.jobs.values()))


def _with_down(base: Cluster, down: frozenset[str]) -> Cluster:
    """``base`` rebuilt with the nodes in ``down`` not ready (templates holding them expanded)."""
    inv = base.to_inventory()
    nodes: list[NodeSpec] = []
    for spec in inv.nodes:
        if spec.count == 1:
            nodes.append(spec.model_copy(update={"ready": False}) if spec.name in down else spec)
            continue
        expanded = list(Inventory(nodes=[spec]).expanded_nodes())
        if not any(n.name in down for n in expanded):
            nodes.append(spec)
            continue
        nodes.extend(n.model_copy(update={"ready": False}) if n.name in down else n for n in expanded)
    return build_cluster(inv.model_copy(update={"nodes": nodes, "running": []}), source=base.source)
