"""The input files ``placer place`` and ``placer check`` share, read one way for both.

Why one module: ``check`` must read a batch exactly as ``place`` read it — the same cluster formats, the
same queue configuration and ``--limits``, the same running-jobs, reservations and prices files — or the
two would disagree on which jobs were rejected and what capacity was free. Each loader raises
:class:`InputError`, whose ``kind`` says whether the file could not be opened (``usage``) or its content
is wrong (``content``); each command maps the kinds to its own exit codes (``place``: 2 and 1; ``check``:
2 for both, since then nothing can be checked).

>>> try:
...     cluster_arg("/no/such/cluster.yaml")
... except InputError as e:
...     print(e.kind, "|", e.message.split(":")[0])
usage | cannot open cluster /no/such/cluster.yaml
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from placer.topology.inputs import read_input

if TYPE_CHECKING:
    from placer.solver.jobs.options import ReadOptions
    from placer.solver.prices import PriceCatalog
    from placer.solver.reservations import Reservation
    from placer.topology import Cluster

__all__ = [
    "MAX_PRINTED",
    "InputError",
    "T",
    "add_limits_argument",
    "add_pods_argument",
    "add_topology_labels_argument",
    "cluster_arg",
    "jobs_arg",
    "prices_arg",
    "read_options_arg",
    "reservations_arg",
    "shown",
    "slurm_assoc_arg",
    "slurm_qos_limits_arg",
    "topology_labels_arg",
    "with_running_arg",
]

T = TypeVar("T")

#: Most problems printed for an unreadable file before "... and N more".
MAX_PRINTED = 20


@dataclass
class InputError(Exception):
    """An input file that cannot be used: ``usage`` (cannot be opened) or ``content`` (cannot be read)."""

    kind: Literal["usage", "content"]
    message: str


def shown(items: list[Any]) -> str:
    """At most :data:`MAX_PRINTED` problems, joined, and how many more.

    >>> shown(list(range(22)))[-30:]
    '16; 17; 18; 19; ... and 2 more'
    """
    more = len(items) - MAX_PRINTED
    return "; ".join(str(i) for i in items[:MAX_PRINTED]) + (f"; ... and {more} more" if more > 0 else "")


def _read(what: str, path: str, load: Callable[[], T], invalid: str = "is invalid") -> T:
    """``load()``, with an unopenable file as ``usage`` and a job-style validation error or a topology
    error as ``content``, each naming ``what`` and ``path``."""
    from placer.solver.jobs import JobValidationError
    from placer.topology import TopologyError

    try:
        return load()
    except OSError as e:
        raise InputError("usage", f"cannot open {what} {path}: {e.strerror or e}") from None
    except JobValidationError as e:
        raise InputError("content", f"{what} {path} {invalid}: {shown(list(e.issues))}") from None
    except TopologyError as e:
        raise InputError("content", f"{what} {path} cannot be read: {shown(list(e.problems))}") from None


def topology_labels_arg(value: str | None) -> dict[str, str] | None:
    """``--topology-labels``: ``LABEL=LEVEL,...`` (levels zone, block, rack), or ``@FILE`` holding a Kueue
    ``Topology`` object (``kubectl get topology NAME -o json``); None when not given.

    >>> topology_labels_arg("example.com/rack=rack,example.com/pod=block")
    {'example.com/rack': 'rack', 'example.com/pod': 'block'}
    """
    if not value:
        return None
    from placer.topology.importers.kubernetes import LEVELS, kueue_topology_levels

    if value.startswith("@"):
        from placer.topology.safe_load import UnsafeDocument, load_text

        try:
            with open(value[1:], encoding="utf-8") as f:
                return kueue_topology_levels(load_text(f.read()))
        except OSError as e:
            raise InputError(
                "usage", f"cannot open --topology-labels file {value[1:]}: {e.strerror or e}"
            ) from None
        except (ValueError, UnsafeDocument) as e:
            raise InputError("content", f"--topology-labels {value[1:]}: {e}") from None
    out: dict[str, str] = {}
    for part in value.split(","):
        label, sep, level = part.strip().partition("=")
        if not sep or not label or level not in LEVELS:
            raise InputError(
                "usage", f"--topology-labels: {part!r} is not LABEL=LEVEL with LEVEL in {', '.join(LEVELS)}"
            )
        out[label] = level
    return out


def cluster_arg(
    path: str,
    pods: str | None = None,
    levels: dict[str, str] | None = None,
    slurm_topology: str | None = None,
) -> Cluster:
    """``--cluster`` (any format ``placer cluster`` reads, detected automatically) and ``--pods`` (``kubectl
    get pods -A -o json``: what runs on a Kubernetes cluster, as ``placer cluster --pods`` reads it);
    ``levels``: node labels read as topology levels (``--topology-labels``); ``slurm_topology``: Slurm's
    ``topology.conf``, ``scontrol show topology`` or ``topology.yaml``, whose switches and blocks become
    the nodes' racks and blocks (``--slurm-topology``)."""
    from placer.topology import TopologyError
    from placer.topology.build import build_cluster
    from placer.topology.importers.slurm_topology import read_topology_file, with_topology_levels
    from placer.topology.inputs import source_name
    from placer.topology.load import load_inventory

    try:
        inventory = load_inventory(path, pods=pods, levels=levels)
    except OSError as e:
        what = "pods" if pods is not None and e.filename == pods else "cluster"
        raise InputError("usage", f"cannot open {what} {e.filename or path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise InputError("content", f"cluster {path} cannot be read: {shown(list(e.problems))}") from None
    if slurm_topology:
        levels_of = _read("topology", slurm_topology, lambda: read_topology_file(slurm_topology))
        inventory = _read(
            "topology",
            slurm_topology,
            lambda: with_topology_levels(inventory, levels_of, source=source_name(slurm_topology)),
        )
    try:
        cluster = build_cluster(inventory, source=source_name(path))
    except TopologyError as e:
        raise InputError("content", f"cluster {path} cannot be read: {shown(list(e.problems))}") from None
    lost = inventory.metadata.get("anti_affinity_not_kept") or {}
    if lost:  # said, never dropped in silence: the importer could not keep these running pods' terms
        named = ", ".join(f"{job} ({', '.join(keys)})" for job, keys in sorted(lost.items())[:5])
        more = f" and {len(lost) - 5} more" if len(lost) > 5 else ""
        print(
            f"placer: warning: running pods' required pod anti-affinity terms placer cannot read are not "
            f"kept (new pods may be placed in their domain): {named}{more}",
            file=sys.stderr,
        )
    return cluster


def add_topology_labels_argument(p: argparse.ArgumentParser) -> None:
    """``--topology-labels``: the site's node labels read as levels, by the node importer and by the
    Kubernetes job reader (a Kueue job may name them)."""
    p.add_argument(
        "--topology-labels",
        metavar="LABEL=LEVEL,...|@FILE",
        help="node labels read as topology levels (zone, block, rack), or @FILE with a Kueue Topology; "
        "GKE, EKS and CoreWeave labels are known by default; Kueue jobs may name them too "
        "(docs/kubernetes.md)",
    )


def add_pods_argument(p: argparse.ArgumentParser) -> None:
    """``--pods FILE`` and ``--topology-labels``, shared by ``place`` and ``check``: the running pods of a
    Kubernetes cluster, and which node labels are its racks and blocks."""
    p.add_argument(
        "--pods",
        metavar="FILE",
        help="kubectl get pods -A -o json: what already runs on a Kubernetes cluster (with a node list)",
    )
    add_topology_labels_argument(p)
    p.add_argument(
        "--slurm-topology",
        metavar="FILE",
        help="Slurm's topology.conf, scontrol show topology or topology.yaml: leaf switches become racks, "
        "the switches above them blocks and zones, topology/block blocks blocks (docs/slurm.md)",
    )
    p.add_argument(
        "--slurm-partitions",
        metavar="FILE",
        help="scontrol show partition (or slurm.conf): Slurm jobs start only where their partitions would "
        "start them (State, MaxTime, node counts, OverSubscribe, the partition's QOS with the QOS table); "
        "without --slurm-qos they rank by their partition's PriorityTier and running ones may be evicted "
        "as its PreemptMode (REQUEUE, CANCEL) and GraceTime say (docs/slurm.md)",
    )
    p.add_argument(
        "--slurm-licenses",
        metavar="FILE",
        help="scontrol show licenses (or slurm.conf's Licenses= line): the cluster's licence seats; a job "
        "asking for licences (--licenses) starts only while the running jobs leave it enough (docs/slurm.md)",
    )
    p.add_argument(
        "--slurm-qos",
        metavar="FILE",
        help="sacctmgr show qos -P, for PreemptType=preempt/qos: Slurm jobs rank by their QOS's place in the "
        "Preempt lists and running ones may be evicted as its PreemptMode and GraceTime say; its GrpJobs, "
        "GrpTRES=gres/gpu and per-user/per-account job and GPU limits hold (docs/slurm.md)",
    )
    p.add_argument(
        "--slurm-preempt-mode",
        metavar="MODE",
        help="the cluster's PreemptMode (scontrol show config): what a QOS whose PreemptMode is 'cluster' "
        "means",
    )
    p.add_argument(
        "--slurm-assoc",
        metavar="FILE",
        help="sacctmgr show assoc tree -P: Slurm jobs are held to their associations' job and GPU limits "
        "(GrpJobs, GrpTRES=gres/gpu, MaxJobs; an account's count for the accounts under it) (docs/slurm.md)",
    )
    p.add_argument(
        "--slurm-qos-limits",
        metavar="FILE",
        help="sacctmgr show qos -P, read for its limits alone (a cluster that preempts by partition, or not "
        "at all): Slurm jobs are held to their QOS's GrpJobs, GrpTRES=gres/gpu and per-user/per-account job "
        "and GPU limits; --slurm-qos does this too (docs/slurm.md)",
    )


def add_limits_argument(p: argparse.ArgumentParser) -> None:
    """``--limits FILE``, shared by ``validate``, ``place`` and ``check`` so all apply the same
    administrative rules."""
    p.add_argument(
        "--limits",
        metavar="FILE",
        help="JSON/YAML object overriding per-job upper bounds, selector deny-list, URI schemes/prefixes, "
        "model allow-list, SSS default awarenessPolicy (keys and defaults: README)",
    )


def read_options_arg(
    queue_config: str | None, limits: str | None, levels: dict[str, str] | None = None
) -> ReadOptions:
    """``--queue-config`` and ``--limits``: the options every job file is read under (both files UTF-8
    JSON or YAML; a file that is not UTF-8 is ``content``, like any other unreadable content).
    ``levels``: ``--topology-labels``, so that a Kueue job may name the site's labels the nodes were read
    with."""
    from placer.solver.jobs.options import ReadOptions, load_read_limits_file
    from placer.solver.jobs.queues import load_queue_config_file

    options = ReadOptions(topology_levels=levels or {})
    if queue_config:
        options = replace(
            options, queues=_read("queue config", queue_config, lambda: load_queue_config_file(queue_config))
        )
    if limits:
        options = _read("limits file", limits, lambda: load_read_limits_file(limits)).apply(options)
    return options


def jobs_arg(paths: list[str], options: ReadOptions) -> list[Any]:
    """``--jobs``: every job file read under ``options`` (read results, valid or not; the caller decides
    what a wholly unreadable document means for it)."""
    from placer.solver.jobs import read_files

    try:
        return read_files(paths, options=options)
    except OSError as e:
        raise InputError("usage", f"cannot open jobs file {e.filename or ''}: {e.strerror or e}") from None


def slurm_partitions_arg(path: str | None) -> dict[str, Any] | None:
    """``--slurm-partitions``: Slurm's partitions by name
    (:mod:`placer.topology.importers.slurm_partitions`)."""
    if not path:
        return None
    from placer.topology.importers.slurm_partitions import read_partitions_file

    return _read("slurm partitions", path, lambda: read_partitions_file(path))


def with_licenses_arg(cluster: Cluster, path: str | None) -> Cluster:
    """``--slurm-licenses``: the cluster with the licence seats Slurm prints
    (:mod:`placer.topology.importers.slurm_licenses`); without it, the cluster as it is (a licence
    nothing defines has no seat: jobs asking for one wait with ``LICENSES``)."""
    if not path:
        return cluster
    from placer.topology.importers.slurm_licenses import read_licenses_file

    return cluster.with_licenses(_read("slurm licenses", path, lambda: read_licenses_file(path)))


def slurm_qos_arg(path: str | None, mode: str | None) -> dict[str, Any] | None:
    """``--slurm-qos`` (with ``--slurm-preempt-mode``): Slurm's QOSes by name
    (:mod:`placer.topology.importers.slurm_qos`). Under ``preempt/qos`` the QOSes decide preemption and
    rank; ``--slurm-partitions`` given too still says where and whether jobs start (states, limits, a
    partition's QOS), not their rank."""
    if not path:
        if mode:
            raise InputError("usage", "--slurm-preempt-mode goes with --slurm-qos")
        return None
    from placer.topology.importers.slurm_qos import read_qos_file

    return _read("slurm QOS table", path, lambda: read_qos_file(path, cluster_mode=mode))


def slurm_qos_limits_arg(path: str | None, qos: str | None) -> dict[str, Any] | None:
    """``--slurm-qos-limits``: Slurm's QOSes by name, read for their limits alone
    (:func:`placer.topology.importers.slurm_qos.parse_slurm_qos` with ``limits_only``); with
    ``--slurm-qos``, which holds jobs to the same limits, a usage error."""
    if not path:
        return None
    if qos:
        raise InputError(
            "usage", "--slurm-qos-limits and --slurm-qos: --slurm-qos holds jobs to the limits too"
        )
    from placer.topology.importers.slurm_qos import read_qos_file

    return _read("slurm QOS table", path, lambda: read_qos_file(path, limits_only=True))


def slurm_assoc_arg(path: str | None) -> Any:
    """``--slurm-assoc``: Slurm's associations (:mod:`placer.topology.importers.slurm_assoc`)."""
    if not path:
        return None
    from placer.topology.importers.slurm_assoc import read_assoc_file

    return _read("slurm associations", path, lambda: read_assoc_file(path))


def in_slurm_cores(results: list[Any], cluster: Cluster) -> list[Any]:
    """The read jobs with Slurm's pending jobs' CPUs counted as cores of the cluster's nodes (where a
    Slurm node's CPUs are hardware threads; :func:`placer.solver.jobs.formats.slurm.with_cores`)."""
    from placer.solver.jobs.formats.slurm import with_cores
    from placer.topology.importers.slurm import fewest_cpus_per_core

    return with_cores(results, fewest_cpus_per_core(cluster.nodes))


def with_slurm_ranks_arg(
    results: list[Any],
    partitions: dict[str, Any] | None,
    qos: dict[str, Any] | None = None,
    qos_limits: dict[str, Any] | None = None,
    assoc: Any = None,
) -> list[Any]:
    """The read jobs with Slurm's pending jobs ranked by their partitions' tiers or their QOS's level
    (whichever is given; :func:`placer.solver.jobs.formats.slurm.with_slurm_ranks`), and held to their
    QOS's limits with ``qos_limits`` (``--slurm-qos-limits``), their associations' with ``assoc``
    (``--slurm-assoc``)."""
    from placer.solver.jobs.formats.slurm import with_slurm_ranks

    return with_slurm_ranks(results, partitions=partitions, qos=qos, qos_limits=qos_limits, assoc=assoc)


def with_running_arg(
    cluster: Cluster,
    path: str | None,
    partitions: dict[str, Any] | None = None,
    qos: dict[str, Any] | None = None,
    qos_limits: dict[str, Any] | None = None,
    assoc: Any = None,
) -> Cluster:
    """``--running``: the cluster with the file's running jobs added (a JSON list of job envelopes plus
    where they run, :mod:`placer.solver.running`), or Slurm's ``squeue --json`` or ``scontrol show job -d``,
    whose jobs replace the anonymous per-node allocations a Slurm node file gives
    (:mod:`placer.topology.importers.slurm_jobs`, :mod:`~placer.topology.importers.slurm_job_text`); with
    ``partitions`` (``--slurm-partitions``), Slurm's running jobs get their partition's tier, preemption
    mode and grace time; with ``qos`` (``--slurm-qos``), their QOS's level, mode and grace time, and the
    groups of its limits; with ``qos_limits`` (``--slurm-qos-limits``), those groups alone; with ``assoc``
    (``--slurm-assoc``), the groups of their associations' limits."""
    if not path:
        return cluster
    from placer.solver.jobs import JobValidationError
    from placer.solver.running import running_from_envelopes
    from placer.topology import TopologyError
    from placer.topology.importers.slurm_job_text import read_running
    from placer.topology.importers.slurm_jobs import with_slurm_jobs
    from placer.topology.safe_load import UnsafeDocument

    try:  # Slurm's jobs by name (scontrol show job -d, squeue --json), in place of its anonymous ones
        slurm, items = read_running(read_input(path).decode("utf-8-sig"), source=path)
        if slurm is not None:
            from placer.topology.importers.slurm_qos import with_preemption_rules

            slurm = with_preemption_rules(
                slurm, partitions=partitions, qos=qos, qos_limits=qos_limits, assoc=assoc, source=path
            )
    except OSError as e:
        raise InputError("usage", f"cannot open running jobs {path}: {e.strerror or e}") from None
    except TopologyError as e:
        raise InputError(
            "content", f"running jobs {path} cannot be read: {shown(list(e.problems))}"
        ) from None
    except UnsafeDocument as e:  # strict JSON: no NaN or Infinity, every number finite and at most 2^53
        raise InputError("content", f"running jobs {path}: {e}") from None
    except ValueError as e:  # not UTF-8
        raise InputError("content", f"running jobs {path} are not JSON: {e}") from None
    try:
        if slurm is not None:
            return with_slurm_jobs(cluster, slurm)
        return cluster.with_allocations(running_from_envelopes(items, path))
    except JobValidationError as e:
        raise InputError("content", f"running jobs are invalid: {shown(list(e.issues))}") from None
    except TopologyError as e:
        raise InputError(
            "content", f"running jobs do not fit the cluster: {shown(list(e.problems))}"
        ) from None


def reservations_arg(path: str | None, cluster: Cluster) -> list[Reservation] | None:
    """``--reservations``: the declared reservations, checked against the cluster (known nodes, GPUs)."""
    if not path:
        return None
    from placer.solver.jobs.parse import read_utf8_file
    from placer.solver.reservations import load_reservations

    def load() -> list[Reservation]:
        return load_reservations(read_utf8_file(path), source=path, cluster=cluster)

    return _read("reservations", path, load, invalid="are invalid")


def prices_arg(path: str | None) -> PriceCatalog | None:
    """``--prices``: the price catalog over the defaults, and tenant budgets."""
    if not path:
        return None
    from placer.solver.prices import load_prices_file

    return _read("prices", path, lambda: load_prices_file(path), invalid="are invalid")
