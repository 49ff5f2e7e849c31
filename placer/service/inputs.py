"""Request bodies to the engine's inputs, through the same readers ``placer place`` uses.

Why this module: the service promises the same decision as ``placer place --json`` for the same input, so
every document goes through the CLI's readers (:func:`placer.topology.load.inventory_from_input`,
:func:`placer.solver.jobs.read_object`, :func:`placer.solver.running.running_from_envelopes`,
:func:`placer.solver.jobs.queues.load_queue_configs`, :func:`placer.solver.reservations.load_reservations`,
:func:`placer.solver.prices.load_prices`) and only the error reporting differs: what the CLI exits 1 for is a
422 here, naming the body field (``cluster.nodes[3] (gpu-7)``, ``running[0].gpus[1]``, ``jobs[2]``).

Job documents are read with ``source`` ``jobs[i]``: jobs without an id of their own are named after it
(``jobs[2]#0``), as the CLI names them after the file.

>>> from placer.service.bodies import PlacementRequest
>>> body = PlacementRequest.model_validate({"cluster": {"nodes": [{"name": "n1", "cpu_cores": 8}]},
...                                         "jobs": [{"id": "a", "ext_ml_cpu_cores": 2}]})
>>> ins = placement_inputs(body, cluster_of(body, Limits()), Limits())
>>> [r.id for r in ins.jobs], ins.policy.time_limit_s
(['a'], 5.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from placer.service.bodies import ClusterFields, PlacementInputs, PlacementRequest, RunningFields
from placer.service.errors import issues, issues_of_topology, unprocessable
from placer.service.limits import Limits
from placer.solver.jobs import Job, JobValidationError, ReadOptions, ReadResult, check_batch, read_object
from placer.solver.jobs.errors import prefixed
from placer.solver.jobs.queues import QueueConfig, in_cluster_queues
from placer.solver.policy import Policy
from placer.solver.prices import PriceCatalog
from placer.solver.reservations import Reservation
from placer.topology import Cluster, TopologyError

__all__ = [
    "Inputs",
    "cluster_of",
    "inputs_of",
    "job_errors",
    "placement_inputs",
    "read_jobs",
    "read_options",
    "refuse_unreadable",
    "running_into",
    "with_running",
]


@dataclass
class Inputs:
    """Everything :func:`placer.solver.engine.place` takes, read from one request."""

    jobs: list[ReadResult]
    cluster: Cluster
    policy: Policy
    now: datetime | None = None
    queues: Mapping[str, QueueConfig] = field(default_factory=dict)
    reservations: list[Reservation] | None = None
    prices: PriceCatalog | None = None

    @property
    def valid_jobs(self) -> list[Job]:
        """The jobs the readers accepted (what the checker checks placements against)."""
        return [r.job for r in self.jobs if r.ok and r.job is not None]

    @property
    def rejected_ids(self) -> list[str]:
        """Ids of the jobs the readers refused (each must be in the decision's ``rejected``)."""
        return [r.id for r in self.jobs if not r.ok]


def cluster_of(body: ClusterFields, limits: Limits) -> Cluster:
    """The body's cluster, built; 413 when it has more nodes than the server accepts, 422 when it cannot
    be read (every problem listed, ``path`` starting with ``cluster``)."""
    from placer.topology.build import build_cluster
    from placer.topology.load import inventory_from_input

    try:
        inventory = inventory_from_input(
            body.cluster,
            body.cluster_format,
            pods=body.pods,
            levels=dict(body.topology_labels) if body.topology_labels else None,
            source="cluster",
            pods_source="pods",
            format_hint="the body field cluster_format",
        )
    except TopologyError as e:
        raise unprocessable("invalid_cluster", "the cluster cannot be read", issues_of_topology(e)) from None
    limits.check_inventory(inventory)
    try:
        return build_cluster(inventory, source="cluster")
    except TopologyError as e:
        raise unprocessable("invalid_cluster", "the cluster cannot be built", issues_of_topology(e)) from None


def with_running(cluster: Cluster, items: Sequence[Any] | None, limits: Limits) -> Cluster:
    """``cluster`` with the body's running jobs added (as ``placer place --running``); 422 when an item is
    invalid or does not fit what already runs."""
    if not items:
        return cluster
    from placer.solver.running import running_from_envelopes

    limits.check_count("running", len(items), limits.max_running)
    try:
        return cluster.with_allocations(running_from_envelopes(list(items), "running"))
    except JobValidationError as e:
        raise unprocessable("invalid_running", "running jobs are invalid", issues(e.issues)) from None
    except TopologyError as e:  # problems name "allocation[i] (job)" of the cluster: say running[i]
        where = f"{cluster.source}.allocation["
        problems = [
            {**p, "path": "running[" + p["path"][len(where) :]} if p["path"].startswith(where) else p
            for p in issues_of_topology(e)
        ]
        raise unprocessable("invalid_running", "running jobs do not fit the cluster", problems) from None


def running_into(cluster: Cluster, body: RunningFields, limits: Limits, tables: Any = None) -> Cluster:
    """``cluster`` with the body's running jobs, whichever form they come in: envelopes
    (:func:`with_running`), or Slurm's own output under the body's Slurm tables
    (:func:`placer.service.slurm.with_slurm_running`; ``tables``: those already read), and with the
    body's Slurm licences (``slurm_licenses``) when it sends them."""
    from placer.service.slurm import is_slurm_running, slurm_tables, with_slurm_licenses, with_slurm_running

    tables = tables or slurm_tables(body)
    if is_slurm_running(body.running):
        cluster = with_slurm_running(cluster, body.running, tables)
    else:
        cluster = with_running(cluster, body.running, limits)  # type: ignore[arg-type]
    return with_slurm_licenses(cluster, tables)


def read_options(
    queue_config: Any, limits: Limits | None = None, levels: Mapping[str, str] | None = None
) -> ReadOptions:
    """ReadOptions with the body's OJS §10 queue configuration, the server's administrative limits
    (``limits.read_limits``) and the body's ``topology_levels`` (``levels``); 422 naming the field when the
    queue configuration is bad."""
    options = ReadOptions(topology_levels=dict(levels or {}))
    if queue_config is not None:
        from placer.solver.jobs.queues import load_queue_configs

        try:
            options = replace(options, queues=load_queue_configs(queue_config, source="queue_config"))
        except JobValidationError as e:
            raise unprocessable(
                "invalid_queue_config", "the queue configuration is invalid", _prefixed("queue_config", e)
            ) from None
    if limits is not None and limits.read_limits is not None:
        options = limits.read_limits.apply(options)
    return options


def read_jobs(
    docs: Sequence[Any], options: ReadOptions, limits: Limits, *, fmt: str = "auto"
) -> list[ReadResult]:
    """Every job of every document, batch-checked (duplicate ids, dependency cycles) as
    ``placer validate`` does; 413 past :attr:`Limits.max_jobs`."""
    limits.check_count("jobs", len(docs), limits.max_jobs)
    results: list[ReadResult] = []
    for i, doc in enumerate(docs):
        results.extend(read_object(doc, source=f"jobs[{i}]", fmt=fmt, options=options))
        limits.check_count("jobs", len(results), limits.max_jobs)
    return check_batch(results)


def job_errors(results: Sequence[ReadResult]) -> list[dict[str, str]]:
    """The errors of every refused job, each path made relative to the body (``jobs[0][1].ext_ml_gpu_count``:
    the second envelope of the first document) and naming the job.

    >>> from placer.solver.jobs import read_object
    >>> [e] = job_errors(read_object([{"id": "a"}, {"id": "b", "ext_ml_gpu_count": -1}], source="jobs[0]"))
    >>> e["path"], e["job"], e["message"]
    ('jobs[0][1].ext_ml_gpu_count', 'b', 'must be >= 0, got -1 (OJS ML resources v0.3.0 §3.2)')
    """
    out = []
    for r in results:
        source = r.source or ""
        for e in issues(r.errors):
            path = e["path"] if e["path"].startswith(source) else prefixed(source, e["path"])
            out.append({**e, "path": path, "job": r.id})
    return out


def refuse_unreadable(results: Sequence[ReadResult]) -> None:
    """422 when a whole document could not be read: it names no job the decision could answer (the CLI
    exits 1 for the same)."""
    bad = [r for r in results if r.unreadable]
    if bad:
        raise unprocessable("invalid_jobs", f"{len(bad)} job document(s) cannot be read", job_errors(bad))


def placement_inputs(body: PlacementInputs, cluster: Cluster, limits: Limits) -> Inputs:
    """All of a placement request read and checked (the cluster already built); raises :class:`ApiError`."""
    from placer.service.slurm import slurm_jobs, slurm_tables

    options = read_options(body.queue_config, limits, body.topology_labels)
    jobs = read_jobs(body.jobs, options, limits)
    refuse_unreadable(jobs)
    tables = slurm_tables(body)
    cluster = running_into(cluster, body, limits, tables)
    jobs = slurm_jobs(jobs, tables, cluster)
    reservations = None
    if body.reservations is not None:
        from placer.solver.reservations import load_reservations

        try:
            reservations = load_reservations(body.reservations, source="reservations", cluster=cluster)
        except JobValidationError as e:
            raise unprocessable(
                "invalid_reservations", "reservations are invalid", _prefixed("reservations", e)
            ) from None
    prices = None
    if body.prices is not None:
        from placer.solver.prices import load_prices

        try:
            prices = load_prices(body.prices, source="prices")
        except JobValidationError as e:
            raise unprocessable("invalid_prices", "prices are invalid", _prefixed("prices", e)) from None
    p = body.policy
    policy = Policy(
        engine=p.engine,
        time_limit_s=limits.time_limit(body.time_limit_s),
        seed=p.seed,
        reproducible=p.reproducible,
        plan=p.plan,
        preemption=p.preemption,
    )
    # Running pods of a shared Kueue ClusterQueue's LocalQueues in its queue, as the pending ones are read.
    cluster = in_cluster_queues(cluster, options.queues)
    return Inputs(jobs, cluster, policy, body.now, options.queues, reservations, prices)


def _prefixed(field_name: str, e: JobValidationError) -> list[dict[str, str]]:
    """Issues whose paths are relative to a document (``[0].id``) made relative to the body."""
    out = []
    for entry in issues(e.issues):
        path = entry["path"] if entry["path"].startswith(field_name) else prefixed(field_name, entry["path"])
        out.append({**entry, "path": path})
    return out


def inputs_of(
    body: Mapping[str, Any], cluster: Cluster | None = None, limits: Limits | None = None
) -> Inputs:
    """A placement body (as sent, a dict) read into engine inputs without HTTP: the body of
    ``POST /v1/placements``, or with ``cluster`` that of a stored cluster's placements. The tests and the
    load benchmark re-check the service's decisions with it; a program can place without a server.

    >>> ins = inputs_of({"cluster": "nodes: [{name: n1}]", "jobs": [[{"id": "a"}, {"id": "a"}]]})
    >>> ins.valid_jobs, ins.rejected_ids
    ([], ['a', 'a'])
    """
    limits = limits or Limits(max_time_limit_s=float("inf"))
    if cluster is None:
        req = PlacementRequest.model_validate(body)
        return placement_inputs(req, cluster_of(req, limits), limits)
    return placement_inputs(PlacementInputs.model_validate(body), cluster, limits)
