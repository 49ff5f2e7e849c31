"""What one decision's problem is built from, kept between decisions on the same cluster.

:func:`~placer.solver.core.decide` builds its :class:`~placer.solver.problem.Problem` from the cluster:
a snapshot of every node, numpy arrays of free amounts, candidate masks per static node group, and the
shapes of the running replicas (the default target workload). On a cluster of thousands of nodes and
pods that is most of a one-job decision's time, and between two decisions of a backend almost all of it
is unchanged: one placement changes one node.

:class:`Prepared` holds those pieces for one cluster and is moved forward by what changed
(:meth:`advanced`): the views and free amounts of the changed nodes are computed again, static answers
(candidate masks, preference scores, capacities) are kept, answers that read free amounts are dropped.
A :class:`~placer.solver.session.Session` keeps one; ``decide`` uses it only for the very cluster it
was prepared for (``prepared.cluster is cluster``), so a planning view or a reservation phase on another
cluster never reads it. The decision is the same either way (``tests/solver/test_session.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from placer.solver.candidates import NodeArrays
from placer.solver.objective.fragmentation import Learned, Shape, running_shapes
from placer.solver.shielded import Shielded
from placer.solver.snapshot import Snapshot, max_gpus_by_type, updated
from placer.solver.snapshot import joined as joined_view
from placer.solver.snapshot import left as left_view
from placer.topology import Cluster, RunningJob

__all__ = ["Prepared", "appended", "flipped", "shrunk"]


@dataclass(eq=False)
class Prepared:
    """The snapshot, arrays and running shapes of ``cluster`` (each built on first use)."""

    cluster: Cluster
    _snap: Snapshot | None = None
    _arrays: dict[frozenset[str], NodeArrays] = field(default_factory=dict)
    _shapes: dict[Shape, float] | None = None
    _shielded: Shielded | None = None
    _max_gpus: dict[str, int] | None = None
    #: What a session has seen arrive (the fragmentation key's target workload); None outside sessions:
    #: then the batch and the running replicas stand for it.
    learned: Learned | None = None

    def snapshot(self) -> Snapshot:
        if self._snap is None:
            self._snap = Snapshot.of(self.cluster)
        return self._snap

    def arrays(self, keys: Iterable[str]) -> NodeArrays:
        """The arrays for the batch's label keys (one set kept per distinct key set)."""
        k = frozenset(keys)
        hit = self._arrays.get(k)
        if hit is None:
            hit = self._arrays[k] = NodeArrays.of(self.snapshot(), k)
        return hit

    def running_shapes(self) -> dict[Shape, float]:
        if self._shapes is None:
            self._shapes = running_shapes(r for rj in self.cluster.running_jobs() for r in rj.replicas)
        return self._shapes

    def max_gpus_by_type(self) -> dict[str, int]:
        """The GPU count of the biggest node of each GPU type (node facts: kept until nodes change)."""
        if self._max_gpus is None:
            self._max_gpus = max_gpus_by_type(self.snapshot())
        return self._max_gpus

    def shielded(self) -> Shielded:
        """The running jobs nothing may evict, sorted by rank (what-if hints read them)."""
        if self._shielded is None:
            self._shielded = Shielded(self.cluster, set())
        return self._shielded

    def advanced(
        self,
        cluster: Cluster,
        started: Iterable[RunningJob],
        ended: Iterable[RunningJob],
        *,
        flipped: Iterable[str] = (),
        own: bool = False,
    ) -> Prepared:
        """The pieces for ``cluster``, which is this one with ``started`` jobs added, ``ended`` ones removed
        and the nodes ``flipped`` gone down or come back up (:func:`flipped` finds them; nothing else
        changed). Only what those jobs and nodes touch is computed again. A flip also leaves behind every
        kept answer that reads which nodes are up (the candidate masks: ``NodeArrays.refreshed``); static
        groups, preference scores and the fragmentation measures of the other nodes stand.

        ``own``: these pieces are the caller's alone (a :class:`~placer.solver.session.Session`'s): their
        arrays are moved forward in place (``NodeArrays.refreshed``), and these pieces are left empty —
        read again, they would be built afresh from their cluster, never read half moved."""
        started, ended = list(started), list(ended)
        flipped = list(flipped)
        names = sorted(
            {r.node for rj in [*started, *ended] for r in rj.replicas if r.node is not None}
            | {r.tpu_pod for rj in [*started, *ended] for r in rj.replicas if r.tpu_pod is not None}
            | set(flipped)
        )
        out = Prepared(cluster, learned=self.learned, _max_gpus=self._max_gpus)
        if self._snap is not None:
            out._snap = updated(self._snap, cluster, names)
            rows = [out._snap.by_name[n] for n in names if n in out._snap.by_name]
            moved = any(rj.anti_affinity or rj.anti_affinity_domains for rj in [*started, *ended])
            out._arrays = {
                k: a.refreshed(out._snap, rows, rules_moved=moved, flips=bool(flipped), own=own)
                for k, a in self._arrays.items()
            }
            if own:
                self._snap, self._arrays = None, {}
        if self._shapes is not None:
            out._shapes = _moved(self._shapes, started, ended)
        if self._shielded is not None:
            out._shielded = self._shielded.advanced(started, ended)
        return out

    def joined(self, cluster: Cluster) -> Prepared:
        """The pieces for ``cluster``, which is this one with nodes appended and nothing else changed
        (:func:`appended` tells): the new nodes' views and rows made, the other views, rows and static
        groups kept (:meth:`NodeArrays.joined`). Every kept answer is indexed by node or by static group
        and is made again on demand. What a learning session has seen arrive moves with the nodes
        (:meth:`Learned.moved`): a new node is taken as the first older node of its static group is
        (:meth:`_twins`). Running shapes stand (nothing started)."""
        out = Prepared(cluster, _shapes=self._shapes)
        if self._snap is not None:
            out._snap = joined_view(self._snap, cluster)
            out._arrays = {k: a.joined(out._snap) for k, a in self._arrays.items()}
        if self.learned is not None:
            out.learned = self.learned.moved(out._twins(len(self.cluster.nodes)))
        return out

    def _twins(self, before: int) -> np.ndarray:
        """For each node of this (joined) cluster, a node among its first ``before`` that a shape may use
        as it may use this one: itself for those, and for a node that joined, the first of them in its
        static group (the same facts for the label keys of the arrays kept; -1 when none is, or no arrays
        were kept)."""
        out = np.arange(len(self.cluster.nodes), dtype=np.int64)
        out[before:] = -1
        arrays = next(iter(self._arrays.values()), None)
        if arrays is None:
            return out
        for members in arrays.group_members:
            old = members[members < before]
            if old.size:
                new = members[members >= before]
                out[new] = old[0]
        return out

    def learned_on(self, cluster: Cluster) -> Learned | None:
        """What was seen arrive, on ``cluster``, whose nodes are some of this one's (nodes left): the rows
        of the nodes gone taken away (:meth:`Learned.moved`)."""
        if self.learned is None:
            return None
        index = {n.name: i for i, n in enumerate(self.cluster.nodes)}
        return self.learned.moved(np.fromiter((index[n.name] for n in cluster.nodes), dtype=np.int64))

    def left(self, cluster: Cluster, ended: Iterable[RunningJob]) -> Prepared:
        """The pieces for ``cluster``, which is this one with nodes removed and the ``ended`` jobs (those
        that ran on them) released, nothing else changed (:func:`shrunk` tells): the views and rows of
        the nodes that stay are kept and renumbered, those the ended jobs freed made again
        (:meth:`NodeArrays.left`). Every kept answer is indexed by node or by static group and is made
        again on demand; what a learning session has seen arrive loses the rows of the nodes gone
        (:meth:`learned_on`)."""
        ended = list(ended)
        out = Prepared(cluster, learned=self.learned_on(cluster))
        if self._shapes is not None:
            out._shapes = _moved(self._shapes, [], ended)
        if self._snap is not None:
            freed = {
                r.node for rj in ended for r in rj.replicas if r.node is not None and cluster.has_node(r.node)
            }
            out._snap = left_view(self._snap, cluster, freed)
            kept = np.fromiter((self._snap.by_name[n.name] for n in cluster.nodes), dtype=np.int64)
            rows = sorted(out._snap.by_name[n] for n in freed)
            out._arrays = {k: a.left(out._snap, kept, rows) for k, a in self._arrays.items()}
        return out


def shrunk(before: Cluster, after: Cluster, ended: list[RunningJob] | None = None) -> list[RunningJob] | None:
    """The jobs released when ``after`` is ``before`` with nodes removed and nothing else changed (the
    nodes that stay in the same order and from the same inventory entries — a node marked down or up has
    a new one —, the same TPU pods, no job started; jobs ended only), which
    :meth:`Prepared.left` moves forward by; None otherwise. ``ended``: the jobs the caller released,
    when it knows (a session: those that ran on the nodes), which spares a walk over every running job."""
    old, new = before.nodes, after.nodes
    if len(new) >= len(old) or after.structure.pods.keys() != before.structure.pods.keys():
        return None
    rest = iter(old)
    for n in new:  # the same nodes in the same order, each from the same inventory entry (not flipped)
        o = next((o for o in rest if o.name == n.name), None)
        if o is None or (n is not o and n.spec is not o.spec):
            return None
    was, now = before.state.jobs, after.state.jobs
    if ended is not None:
        return ended if len(now) == len(was) - len(ended) and not any(rj.job in now for rj in ended) else None
    if not all(j in was for j in now):
        return None
    return [was[j] for j in was if j not in now]


def appended(before: Cluster, after: Cluster) -> bool:
    """Whether ``after`` is ``before`` with nodes appended and nothing else changed: ``before``'s nodes are
    the very same objects at the same places (:func:`~placer.topology.membership.with_nodes_added` keeps
    them), with the same TPU pods and the same running jobs. What :meth:`Prepared.joined` moves forward
    by."""
    old, new = before.nodes, after.nodes
    return (
        len(new) > len(old)
        and after.structure.pods.keys() == before.structure.pods.keys()
        and after.state.jobs is before.state.jobs
        and all(a is b for a, b in zip(old, new, strict=False))
    )


def _moved(
    shapes: dict[Shape, float], started: Iterable[RunningJob], ended: Iterable[RunningJob]
) -> dict[Shape, float]:
    """The running replicas' shapes after ``started`` jobs began and ``ended`` ones stopped."""
    out = dict(shapes)
    for rj, sign in [*((j, 1.0) for j in started), *((j, -1.0) for j in ended)]:
        for shape, n in running_shapes(rj.replicas).items():
            remaining = out.get(shape, 0.0) + sign * n
            if remaining > 0:
                out[shape] = remaining
            else:
                out.pop(shape, None)
    return out


def flipped(before: Cluster, after: Cluster, *, jobs: bool = False) -> list[str] | None:
    """The nodes that went down or came up between ``before`` and ``after``, when nothing else differs
    (the same nodes in the same order, the same TPU pods, and — unless ``jobs`` — the same running jobs):
    what :meth:`Prepared.advanced` moves forward by (with the jobs that started and ended, when ``jobs``).
    None otherwise: the pieces must start afresh.

    Nodes :func:`~placer.topology.availability.with_availability` left alone are the very same objects, so
    the walk compares identities; a rebuilt cluster (a template expanded, a TPU pod marked) has new ones
    throughout, and every node new is taken as that (when all of them really flipped, fresh pieces cost
    no more than moving every node forward)."""
    old, new = before.nodes, after.nodes
    if (
        len(old) != len(new)
        or after.structure.pods is not before.structure.pods
        or (not jobs and after.state.jobs is not before.state.jobs)
    ):
        return None
    changed = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a is not b]
    if len(changed) == len(old) or any(old[i].name != new[i].name for i in changed):
        return None
    return [new[i].name for i in changed]
