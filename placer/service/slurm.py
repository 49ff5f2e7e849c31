"""Slurm in a placement body: its tables and its running jobs, read as ``placer place``'s Slurm flags read
them.

Why: a Slurm site's backend asks the service what ``placer place --running squeue.json --slurm-partitions
... --slurm-qos ...`` answers on the command line; without the tables, Slurm's pending jobs would rank by
Slurm's priority number, running jobs would be anonymous and never preemptible, and QOS and association
limits would not hold. Each table is the text Slurm prints, in a string field of the body:

=========================  ===========================  ============================================
body field                 ``placer place`` flag         what it is
=========================  ===========================  ============================================
``running`` (an object      ``--running``                ``squeue --json`` (or ``scontrol show job
or a string)                                             -d`` text): running jobs by Slurm id
``slurm_partitions``        ``--slurm-partitions``       ``scontrol show partition``
``slurm_qos``               ``--slurm-qos``              ``sacctmgr show qos -P`` (``preempt/qos``)
``slurm_preempt_mode``      ``--slurm-preempt-mode``     the cluster's ``PreemptMode``
``slurm_qos_limits``        ``--slurm-qos-limits``       ``sacctmgr show qos -P``, its limits alone
``slurm_assoc``             ``--slurm-assoc``            ``sacctmgr show assoc tree -P``
``slurm_licenses``          ``--slurm-licenses``         ``scontrol show licenses``: licence seats
=========================  ===========================  ============================================

The same combinations are refused as on the command line (the QOS table both for preemption and for its
limits alone; a preemption mode without the QOS table); a table that cannot be read is a 422 naming its
field. Partitions sent with ``slurm_qos`` say where and whether jobs start, not their rank, as with the
flags. The jobs then go through the very
functions the CLI applies (:func:`placer.solver.jobs.formats.slurm.with_slurm_ranks`,
:func:`~placer.solver.jobs.formats.slurm.with_cores`, :func:`placer.topology.importers.slurm_qos.
with_preemption_rules`, :func:`placer.topology.importers.slurm_jobs.with_slurm_jobs`), so the decision is
``placer place --json``'s for the same files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from placer.service.errors import issues_of_topology, unprocessable
from placer.solver.jobs import ReadResult
from placer.topology import Cluster, TopologyError

__all__ = [
    "SlurmTables",
    "is_slurm_running",
    "slurm_jobs",
    "slurm_tables",
    "with_slurm_licenses",
    "with_slurm_running",
]


@dataclass
class SlurmTables:
    """The Slurm tables of one body (each None when not sent)."""

    partitions: dict[str, Any] | None = None
    qos: dict[str, Any] | None = None
    qos_limits: dict[str, Any] | None = None
    assoc: Any = None
    #: Licence seats by name (``scontrol show licenses``): the cluster's pool, not a table of the jobs.
    licenses: dict[str, int] | None = None

    def given(self) -> dict[str, Any]:
        """The tables as the keyword arguments of the CLI's Slurm functions (``partitions``, ``qos``,
        ``qos_limits``, ``assoc``)."""
        return {
            "partitions": self.partitions,
            "qos": self.qos,
            "qos_limits": self.qos_limits,
            "assoc": self.assoc,
        }


def slurm_tables(body: Any) -> SlurmTables:
    """The body's Slurm tables, read (422 naming the field when one cannot be, or for a combination the
    CLI refuses)."""
    from placer.topology.importers.slurm_assoc import parse_slurm_assoc
    from placer.topology.importers.slurm_licenses import parse_slurm_licenses
    from placer.topology.importers.slurm_partitions import parse_slurm_partitions
    from placer.topology.importers.slurm_qos import parse_slurm_qos

    if body.slurm_qos_limits is not None and body.slurm_qos is not None:
        raise unprocessable(
            "invalid_slurm",
            "slurm_qos_limits and slurm_qos: slurm_qos holds jobs to the limits too",
            [{"code": "conflict", "path": "slurm_qos_limits", "message": "sent with slurm_qos"}],
        )
    if body.slurm_preempt_mode is not None and body.slurm_qos is None:
        raise unprocessable(
            "invalid_slurm",
            "slurm_preempt_mode goes with slurm_qos",
            [{"code": "conflict", "path": "slurm_preempt_mode", "message": "sent without slurm_qos"}],
        )

    def read(field: str, parse: Any) -> Any:
        text = getattr(body, field)
        if text is None:
            return None
        try:
            return parse(text)
        except TopologyError as e:
            raise unprocessable(
                "invalid_slurm", f"{field} cannot be read", _under(field, issues_of_topology(e))
            ) from None

    return SlurmTables(
        partitions=read("slurm_partitions", lambda t: parse_slurm_partitions(t, source="slurm_partitions")),
        qos=read(
            "slurm_qos",
            lambda t: parse_slurm_qos(t, source="slurm_qos", cluster_mode=body.slurm_preempt_mode),
        ),
        qos_limits=read(
            "slurm_qos_limits", lambda t: parse_slurm_qos(t, source="slurm_qos_limits", limits_only=True)
        ),
        assoc=read("slurm_assoc", lambda t: parse_slurm_assoc(t, source="slurm_assoc")),
        licenses=read("slurm_licenses", lambda t: parse_slurm_licenses(t, source="slurm_licenses")),
    )


def _under(field: str, problems: list[dict[str, str]]) -> list[dict[str, str]]:
    """Problems of a table, their paths under its body field."""
    return [
        {**p, "path": f"{field}: {p['path']}" if not p["path"].startswith(field) else p["path"]}
        for p in problems
    ]


def is_slurm_running(running: Any) -> bool:
    """Whether the body's ``running`` is Slurm's (``squeue --json`` as an object, or text), not envelopes."""
    return isinstance(running, (dict, str))


def with_slurm_running(cluster: Cluster, running: Any, tables: SlurmTables) -> Cluster:
    """``cluster`` with Slurm's running jobs in place of its anonymous per-node allocations (as
    ``placer place --running squeue.json``), under the tables' preemption rules and limits; 422 naming
    ``running`` when they cannot be read or do not fit."""
    from placer.topology.importers.slurm_job_text import read_running
    from placer.topology.importers.slurm_jobs import with_slurm_jobs
    from placer.topology.importers.slurm_qos import with_preemption_rules

    text = running if isinstance(running, str) else json.dumps(running)
    try:
        slurm, _ = read_running(text, source="running")
        if slurm is None:
            raise unprocessable(
                "invalid_running",
                "running jobs are neither envelopes nor what Slurm prints",
                [{"code": "format", "path": "running", "message": "not squeue --json nor scontrol show job"}],
            )
        slurm = with_preemption_rules(slurm, **tables.given(), source="running")
        return with_slurm_jobs(cluster, slurm)
    except TopologyError as e:
        raise unprocessable(
            "invalid_running", "Slurm's running jobs cannot be read", issues_of_topology(e)
        ) from None


def with_slurm_licenses(cluster: Cluster, tables: SlurmTables) -> Cluster:
    """``cluster`` with the body's licence seats (``slurm_licenses``), or as it is without them."""
    return cluster if tables.licenses is None else cluster.with_licenses(tables.licenses)


def slurm_jobs(results: list[ReadResult], tables: SlurmTables, cluster: Cluster) -> list[ReadResult]:
    """The read jobs with Slurm's pending ones ranked and limited by the tables, and their CPUs as the
    cluster's cores (what ``placer place`` does to the jobs it reads)."""
    from placer.solver.jobs.formats.slurm import with_cores, with_slurm_ranks
    from placer.topology.importers.slurm import fewest_cpus_per_core

    return with_cores(with_slurm_ranks(results, **tables.given()), fewest_cpus_per_core(cluster.nodes))
