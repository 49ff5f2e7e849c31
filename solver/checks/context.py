"""What every rule family needs, indexed once: jobs by id, the cluster after evictions, who sits where.

Why one shared index: each rule must stay O(replicas + nodes touched) on a 10k-node decision, so the
per-location occupancy (placed jobs per node or TPU host) and the post-eviction cluster are computed once
here and not re-derived per rule. Only nodes and pods the decision touches are ever looked at.

A *location* is what "the same machine" means for co-location rules (anti-affinity, exclusivity,
distinct nodes): a node name for GPU/CPU replicas, ``"<pod>/host-<i>"`` for each TPU host a replica's
chips fall on (computed from the chips, not taken from the replica's informational ``node``).

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.decision import Decision
>>> ctx = build_context(Decision(), [], cluster_of(dgx_h100(2)))
>>> ctx.running_at("dgx-h100-1")
()
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import Job, TaskGroup
from placer.topology import Cluster, Node, RunningJob, TpuPod

__all__ = ["EPS", "Context", "build_context", "group_of", "job_labels", "running_labels"]

#: Float tolerance of every capacity comparison (contract: 1e-6).
EPS = 1e-6


@dataclass
class Context:
    """The decision's inputs, indexed. Build with :func:`build_context`."""

    decision: Decision
    cluster: Cluster  # running jobs minus the evicted ones
    jobs: Mapping[str, Job]
    now: datetime
    reservations: frozenset[str]
    evicted: frozenset[str]
    placed: list[tuple[JobPlacement, Job]] = field(default_factory=list)
    #: location -> placed job id -> number of its replicas there
    occupants: dict[str, dict[str, int]] = field(default_factory=dict)
    _tpu_running: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    _domain_holders: list[RunningJob] | None = None
    _everyone: list[tuple[str, dict[str, str], list[str]]] | None = None

    # -- lookups --------------------------------------------------------------------------------------

    def node(self, rep: ReplicaPlacement) -> Node | None:
        """The replica's node (None for TPU replicas and unknown names)."""
        if rep.tpu_pod is not None or not self.cluster.has_node(rep.node):
            return None
        return self.cluster.node(rep.node)

    def pod(self, rep: ReplicaPlacement) -> TpuPod | None:
        """The replica's TPU pod (None when it names none or an unknown one)."""
        if rep.tpu_pod is None:
            return None
        try:
            return self.cluster.tpu_pod(rep.tpu_pod)
        except KeyError:
            return None

    def locations(self, rep: ReplicaPlacement) -> tuple[str, ...]:
        """Where the replica sits, for co-location rules (see the module docstring)."""
        if rep.tpu_pod is None:
            return (rep.node,)
        pod = self.pod(rep)
        if pod is None:
            return ()
        hosts = {pod.host_index(tuple(c)) for c in rep.tpu_chips if pod.contains(tuple(c))}
        return tuple(f"{pod.name}/host-{h}" for h in sorted(hosts))

    def running_at(self, location: str) -> tuple[str, ...]:
        """Ids of running (not evicted) jobs holding anything at a location."""
        if self.cluster.has_node(location):
            return self.cluster.usage(location).jobs
        pod_name, sep, _ = location.rpartition("/host-")
        if not sep:
            return ()
        hosts = self._tpu_running.get(pod_name)
        if hosts is None:
            hosts = {}
            try:
                pod = self.cluster.tpu_pod(pod_name)
            except KeyError:
                return ()
            for chip, job in self.cluster.used_tpu_chips(pod_name).items():
                hosts.setdefault(f"{pod_name}/host-{pod.host_index(chip)}", set()).add(job)
            self._tpu_running[pod_name] = hosts
        return tuple(sorted(hosts.get(location, ())))

    def domain_holders(self) -> list[RunningJob]:
        """Running (not evicted) jobs with anti-affinity on a wider domain than a node (read once: most
        clusters have none, and every placed job asks)."""
        if self._domain_holders is None:
            self._domain_holders = [rj for rj in self.cluster.running_jobs() if rj.anti_affinity_domains]
        return self._domain_holders

    def everyone(self) -> list[tuple[str, dict[str, str], list[str]]]:
        """Every job with replicas on nodes — running (not evicted) and placed by the decision — as (id,
        labels, node names), made once (each placed job with a rule on a domain reads them all)."""
        if self._everyone is None:
            out = [
                (rj.job, running_labels(rj), [r.node for r in rj.replicas if r.node is not None])
                for rj in self.cluster.running_jobs()
            ]
            out += [
                (p.job, job_labels(j), [r.node for r in p.replicas if r.tpu_pod is None])
                for p, j in self.placed
            ]
            self._everyone = out
        return self._everyone

    def running_job(self, job_id: str) -> RunningJob | None:
        """A running (not evicted) job by id."""
        try:
            return self.cluster.running_job(job_id)
        except KeyError:
            return None


def group_of(job: Job, rep: ReplicaPlacement) -> TaskGroup | None:
    """The task group a replica belongs to (None when the job has no group of that name).

    >>> from placer.solver.jobs.model import Job
    >>> group_of(Job(id="j"), ReplicaPlacement(node="n")).name
    'default'
    """
    for g in job.tasks:
        if g.name == rep.task_group:
            return g
    return None


def job_labels(job: Job) -> dict[str, str]:
    """Labels anti-affinity rules test on a placed job: its labels plus derived keys (which win).

    >>> job_labels(Job(id="a", type="ml.train", labels={"team": "x"}))["job_type"]
    'ml.train'
    """
    out = dict(job.labels)
    derived: dict[str, str | None] = {
        "job_id": job.id,
        "job_type": job.type,
        "queue": job.queue,
        "tenant": job.tenant,
        "priority_class": job.priority_class.value,
        "model_id": job.model.id,
    }
    out.update({k: v for k, v in derived.items() if v is not None})
    return out


def running_labels(job: RunningJob) -> dict[str, str]:
    """Labels of a running job: its labels plus ``job_id``, ``queue``, ``tenant``, ``priority_class``.

    >>> running_labels(RunningJob(job="r", replicas=[{"node": "n"}]))["job_id"]
    'r'
    """
    out = dict(job.labels)
    derived: dict[str, str | None] = {
        "job_id": job.job,
        "queue": job.queue,
        "tenant": job.tenant,
        "priority_class": job.priority_class,
    }
    out.update({k: v for k, v in derived.items() if v is not None})
    return out


def build_context(
    decision: Decision,
    jobs: Iterable[Job],
    cluster: Cluster,
    *,
    now: datetime | None = None,
    reservations: Iterable[Any] | None = None,
) -> Context:
    """Index the inputs. Evicted running jobs are released from the cluster (their capacity is what the
    placements may use); evictions naming no running job are left for the accounting rule to report.

    ``reservations``: reservation ids, or objects with a ``reservation`` attribute (decision holds).
    """
    by_id = {j.id: j for j in jobs}
    running = {rj.job for rj in cluster.running_jobs()}
    evicted = frozenset(e.job for e in decision.preemptions if e.job in running)
    after = cluster.release(*sorted(evicted)) if evicted else cluster
    ids: set[str] = set()
    for r in reservations or ():
        rid = r if isinstance(r, str) else getattr(r, "reservation", None) or getattr(r, "id", None)
        if isinstance(rid, str):
            ids.add(rid)
    ctx = Context(
        decision=decision,
        cluster=after,
        jobs=by_id,
        now=now or datetime.now(UTC),
        reservations=frozenset(ids),
        evicted=evicted,
    )
    for p in decision.placements:
        job = by_id.get(p.job)
        if job is not None:
            ctx.placed.append((p, job))
        for rep in p.replicas:
            for loc in ctx.locations(rep):
                here = ctx.occupants.setdefault(loc, {})
                here[p.job] = here.get(p.job, 0) + 1
    return ctx
