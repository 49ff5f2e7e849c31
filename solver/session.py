"""A placement engine that keeps its state: ``decide``, then ``commit``, ``finish``, nodes down and up,
nodes joining and leaving.

A backend calls placer every time work arrives or finishes; the simulator and the fill experiment do so
thousands of times. :func:`~placer.solver.engine.place` is a pure function of the whole cluster, and
rebuilding the solver's view of thousands of nodes and running pods for a one-job decision costs more
than deciding. A :class:`Session` holds the cluster and the pieces a decision is built from
(:class:`~placer.solver.prepared.Prepared`) and moves them forward by what changed, so a decision costs
time in proportion to the batch and to what changed since the last one. The pieces are the session's
alone, so they move in place (``Prepared.advanced(own=True)``: no copy of the node arrays per commit);
the cluster snapshots it hands out (:attr:`cluster`) are immutable and stay valid.

Its decisions are ``place()``'s on the same state (``tests/solver/test_session.py`` checks it on random
sequences of arrivals, commits, finishes, nodes going down and up, joining and leaving). Everything
``place()`` does — reservations, planning, what-if hints, the checker on CP-SAT's answers — a session
does too.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
>>> s = Session(cluster_of(dgx_h100(1)), Policy(engine="greedy"))
>>> d = s.decide([Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=6))])])
>>> s.commit(d)
>>> s.decide([Job(id="b", tasks=[TaskGroup(gpu=GpuDemand(count=4))])]).pending[0].reasons[0].code
'INSUFFICIENT_CAPACITY'
>>> s.finish("a")
>>> s.decide([Job(id="b", tasks=[TaskGroup(gpu=GpuDemand(count=4))])]).placements[0].replicas[0].gpus
[0, 1, 2, 3]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from placer.solver.decision import Decision, ReplicaPlacement, allocations, as_running
from placer.solver.engine import place
from placer.solver.express import Express
from placer.solver.jobs.model import Job, ReadResult
from placer.solver.jobs.queues import QueueConfig
from placer.solver.objective.fragmentation import Learned
from placer.solver.policy import Policy
from placer.solver.prepared import Prepared, appended, flipped, shrunk
from placer.solver.prices import PriceCatalog
from placer.solver.reservations import Reservation
from placer.solver.running import running_job
from placer.topology import Cluster, Inventory, RunningJob
from placer.topology.availability import with_availability
from placer.topology.membership import node_names, released, with_nodes_added, without_nodes

__all__ = ["Session"]


class Session:
    """``place()`` on state kept between calls (see the module docstring). Not thread-safe: one caller at a
    time, as one scheduling loop."""

    def __init__(
        self,
        cluster: Cluster,
        policy: Policy | None = None,
        *,
        queues: Mapping[str, QueueConfig] | None = None,
        reservations: Sequence[Reservation] | None = None,
        prices: PriceCatalog | None = None,
        learn: bool = True,
        express: bool = True,
    ) -> None:
        """``learn``: measure fragmentation against what the session has seen arrive (the default); with
        False, against the batch and the running replicas, as ``place()`` alone does, so that every
        decision is exactly ``place()``'s on the same cluster (the simulator's choice: a study must measure
        the engine a stateless caller gets). ``express``: decide a lone plain job in the express lane
        (:mod:`placer.solver.express`: the same decision, a fraction of the time); False sends every call
        through ``place()``."""
        self.policy = policy or Policy()
        self.queues = queues
        self.reservations = reservations
        self.prices = prices
        self.learn = learn
        self._prepared = Prepared(cluster, learned=Learned({}, {}) if learn else None)
        #: The jobs of the last decided batch, by id: what :meth:`commit` turns placements into.
        self._jobs: dict[str, Job] = {}
        #: The express lane (None: off).
        self.express = Express() if express else None

    @property
    def cluster(self) -> Cluster:
        """The cluster as this session knows it now (what runs where, nodes up and down)."""
        return self._prepared.cluster

    def decide(self, jobs: Sequence[Job | ReadResult], *, now: datetime | None = None) -> Decision:
        """The decision ``place()`` would make for ``jobs`` on :attr:`cluster` (nothing changes until
        :meth:`commit`)."""
        self._jobs = {
            j.id: j for j in (i.job if isinstance(i, ReadResult) else i for i in jobs) if j is not None
        }
        now = now or datetime.now(UTC)
        if self.express is not None:
            quick = self.express.decide(
                jobs,
                self._prepared,
                self.policy,
                now=now,
                queues=self.queues,
                reservations=self.reservations,
                prices=self.prices,
            )
            if quick is not None:
                return quick
        return place(
            jobs,
            self.cluster,
            self.policy,
            now=now,
            queues=self.queues,
            reservations=self.reservations,
            prices=self.prices,
            prepared=self._prepared,
        )

    def commit(self, decision: Decision) -> None:
        """Apply a decision: its evictions stop, its placements start running (with the job's queue,
        tenant, priority, labels and, from its duration, expected end). Raises ``TopologyError`` and
        changes nothing when the decision does not fit the cluster as it is now."""
        if not decision.placements and not decision.preemptions:
            return  # nothing starts or stops: the cluster and every piece kept for it stand as they are
        now = decision.now or datetime.now(UTC)
        cluster = self.cluster
        ended = [cluster.running_job(e.job) for e in decision.preemptions]
        if ended:
            cluster = cluster.release(*[rj.job for rj in ended])
        started = [self._running(p.job, p.replicas, now) for p in decision.placements]
        if started:
            cluster = cluster.with_allocations(started)
        self._prepared = self._prepared.advanced(cluster, started, ended, own=True)

    def start(self, *jobs: RunningJob) -> None:
        """Jobs start running as given (what a caller that builds its own running jobs, such as the
        simulator, would otherwise hand ``place()`` in a new cluster). Raises ``TopologyError`` and
        changes nothing when they do not fit."""
        if jobs:
            cluster = self.cluster.with_allocations(list(jobs))
            self._prepared = self._prepared.advanced(cluster, jobs, [], own=True)

    def finish(self, *job_ids: str) -> None:
        """Running jobs that ended (completed, failed or cancelled) give their capacity back."""
        ended = [self.cluster.running_job(j) for j in job_ids]
        cluster = self.cluster.release(*job_ids)
        self._prepared = self._prepared.advanced(cluster, [], ended, own=True)

    def node_down(self, *names: str) -> None:
        """Nodes (or TPU pods) not ready: nothing new goes there; what runs there stays accounted."""
        self._availability(dict.fromkeys(names, False))

    def node_up(self, *names: str) -> None:
        """Nodes (or TPU pods) ready and schedulable again."""
        self._availability(dict.fromkeys(names, True))

    def _availability(self, up: dict[str, bool]) -> None:
        """Nodes went down or came up: the prepared pieces move forward by the nodes whose readiness
        changed (:func:`~placer.solver.prepared.flipped`); when more changed (a TPU pod, a template the
        change expanded), they start afresh."""
        after = with_availability(self.cluster, up)
        names = flipped(self.cluster, after)
        if names is None:
            self._rebuild(after)
        else:
            self._prepared = self._prepared.advanced(after, [], [], flipped=names, own=True)

    def add_nodes(self, inventory: Inventory) -> None:
        """More nodes (and TPU pods), described as an inventory document of their own (jobs it lists as
        running start on them). Raises ``TopologyError`` and changes nothing when they do not fit the
        cluster (a name taken, a GPU type unknown: :func:`~placer.topology.membership.with_nodes_added`)."""
        after = with_nodes_added(self.cluster, inventory)
        if appended(self.cluster, after):  # no job started with them: the pieces move forward
            self._prepared = self._prepared.joined(after)  # what was seen arrive moves with them
        else:
            self._rebuild(after)

    def remove_nodes(self, *names: str) -> None:
        """Nodes (or TPU pods) leave the cluster; jobs running on them are released first (they cannot run
        anywhere)."""
        cluster = self.cluster
        gone = node_names(cluster, names)
        after = without_nodes(cluster, gone)
        ended = shrunk(cluster, after, [cluster.running_job(j) for j in released(cluster, gone)])
        if ended is None:  # a TPU pod left, or a template was expanded: the pieces start afresh
            self._prepared = Prepared(after, learned=self._prepared.learned_on(after))
        else:  # the nodes that stay move up; the pieces move forward, what was seen arrive with them
            self._prepared = self._prepared.left(after, ended)

    def reset(self, cluster: Cluster) -> None:
        """Carry on from ``cluster`` (the same nodes, some facts changed, e.g. a node failed and is rebuilt
        not ready): the prepared pieces start afresh, what was seen arrive stays."""
        self._rebuild(cluster)

    def _rebuild(self, cluster: Cluster) -> None:
        """Node facts changed (static groups, candidate masks): start the prepared pieces afresh; what was
        seen arrive stays when the nodes are the same ones (its masks are per node), else it starts anew
        (a session that does not learn has none)."""
        learned = self._prepared.learned
        if learned is not None and len(cluster.nodes) != len(self.cluster.nodes):
            learned = Learned({}, {})
        self._prepared = Prepared(cluster, learned=learned)

    @property
    def learned(self) -> Learned | None:
        """The arrivals this session has seen (the default target workload of its fragmentation key)."""
        return self._prepared.learned

    def _running(self, job_id: str, replicas: list[ReplicaPlacement], now: datetime) -> RunningJob:
        """A placement of the last batch as a running job, as the simulator starts one
        (:func:`placer.solver.running.running_job`: class, preemptibility, labels, expected end)."""
        job = self._jobs.get(job_id)
        if job is None:
            return as_running(job_id, replicas)
        return running_job(job, allocations(replicas), now)
