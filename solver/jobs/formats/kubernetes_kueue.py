"""What Kueue asks of a pod set beyond its pods, read for :mod:`.kubernetes_workloads`: the node labels it
names as topology levels, topology slices, partial admission and the most a workload may run.

Why a module of its own: these are Kueue's annotations and Workload fields, one set of rules whatever the
object (Job, JobSet, Workload) that carries them, and each turns into a placer field the engines already
keep (``topology_scope``, :class:`~placer.solver.jobs.model.Slices`, a
:class:`~placer.solver.jobs.model.CountRange`, ``duration_s``).

Kueue's topology slices (``podset-slice-required-topology`` with ``podset-slice-size: s``, or a podSet's
``podSetSliceRequiredTopology`` / ``podSetSliceSize``): every ``s`` pods of the pod set inside one domain
of the slice level, several slices possibly in one domain. On a node (``kubernetes.io/hostname``) the
pod set is read as ``count / s`` replicas of ``s`` pods' CPU, memory, storage and GPUs together — a
replica is a slice, as a Flux ``node > slot`` replica is one node's slots — which asks exactly that of
these additive amounts. On a rack, block or zone label the group keeps its pods and gets
:class:`~placer.solver.jobs.model.Slices`, a rule both engines and the checker keep. The request is in
``metadata["kubernetes"]["slices"]``. Refused (``unsupported``, ``range``, ``required``: the field's path),
because placer cannot keep them and a job placed without them would run where Kueue would not
put it: a slice label placer does not know as a level, multi-layer slices, slices of TPU or GPU-share
pods, a size Kueue would refuse or that does not divide the pod count. ``podset-group-name`` and
``podset-unconstrained-topology`` ask nothing placer does not already do.

Kueue partial admission (a Job's ``kueue.x-k8s.io/job-min-parallelism``, a podSet's ``minCount``): the pod
set runs any count from that minimum to all its pods, the largest that fits, as Kueue admits it (a
:class:`~placer.solver.jobs.model.CountRange` on the group, placed as Flux ranges are). Refused on a pod set
in slices and on a second pod set of one job; a minimum that is not a whole number from 1 to the pod
count is a ``range`` error.

Runtime caps: the least of a Job's ``spec.activeDeadlineSeconds``, Kueue's ``max-exec-time-seconds`` label
(Job, JobSet) and a Workload's ``spec.maximumExecutionTimeSeconds`` is the job's ``duration_s`` (Kueue
evicts the workload after that long admitted), as Slurm's time limit is read.

>>> slice_request({SLICE_TOPOLOGY: HOSTNAME, SLICE_SIZE: "2"}, 4, lambda k: k, LEVELS, [])
('node', 2)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.kubernetes_pods import HOSTNAME, api_int, as_map, seconds
from placer.solver.jobs.model import CountRange, Slices, TaskGroup

__all__ = [
    "LEVELS",
    "MAX_EXEC_TIME",
    "MIN_PARALLELISM",
    "PREFERRED_TOPOLOGY",
    "REQUEST_FIELDS",
    "REQUIRED_TOPOLOGY",
    "SLICE_CONSTRAINTS",
    "SLICE_SIZE",
    "SLICE_TOPOLOGY",
    "max_runtime",
    "partial_group",
    "slice_request",
    "sliced_group",
    "unknown_level",
]

REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
#: Kueue TAS slices: each ``podset-slice-size`` pods of a pod set in one domain of the slice level, several
#: slices possibly in one domain (Kueue checks the size is a number no greater than the pod count).
SLICE_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
#: Kueue's multi-layer slices (a JSON list of levels and sizes): not read.
SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
#: A Workload podSet's ``topologyRequest`` fields -> the annotations they stand for.
REQUEST_FIELDS = {
    "required": REQUIRED_TOPOLOGY,
    "preferred": PREFERRED_TOPOLOGY,
    "podSetSliceRequiredTopology": SLICE_TOPOLOGY,
    "podSetSliceSize": SLICE_SIZE,
}
#: Kueue partial admission of a batch/v1 Job: at least this many of its ``parallelism`` pods may run when
#: all do not fit (a Workload's podSet says ``minCount``).
MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"

#: Node labels Kueue topologies use -> placer's topology scopes.
LEVELS: dict[str, str] = {
    HOSTNAME: "node",
    "cloud.google.com/gce-topology-subblock": "rack",
    "cloud.google.com/gce-topology-block": "block",
    "topology.kubernetes.io/zone": "zone",
}


def unknown_level(label: object, known: Mapping[str, str]) -> str:
    """Why ``label`` cannot be a level: the labels placer knows, and how a site names its own."""
    return (
        f"{str(label)[:80]!r} is not a node label placer knows as a level ({', '.join(known)}; a site's "
        "own with --topology-labels)"
    )


def slice_request(
    annotations: dict[str, Any],
    count: int,
    path: Callable[[str], str],
    known: Mapping[str, str],
    errors: list[Issue],
) -> tuple[str, int] | None:
    """A pod set's Kueue slices, ``(placer level, pods per slice)``, or None (no slices, or a slice
    request placer refuses: the reason is in ``errors``). ``path``: where an annotation was read."""
    if SLICE_CONSTRAINTS in annotations:
        errors.append(
            issue("unsupported", path(SLICE_CONSTRAINTS), "Kueue's multi-layer slices are not represented")
        )
        return None
    topology, size = annotations.get(SLICE_TOPOLOGY), annotations.get(SLICE_SIZE)
    if topology is None and size is None:
        return None
    if topology is None:
        errors.append(issue("required", path(SLICE_TOPOLOGY), f"{SLICE_SIZE} needs a slice topology"))
        return None
    level = known.get(topology) if isinstance(topology, str) else None
    if level is None:
        errors.append(issue("unsupported", path(SLICE_TOPOLOGY), unknown_level(topology, known)))
        return None
    if size is None:
        errors.append(issue("required", path(SLICE_SIZE), f"must be set when {SLICE_TOPOLOGY} is"))
        return None
    n = api_int(size) if isinstance(size, str) else None  # an annotation: a string
    if n is None or not 1 <= n <= max(count, 1):
        errors.append(
            issue("range", path(SLICE_SIZE), f"a whole number from 1 to the pod count {count}, got {size!r}")
        )
        return None
    if count % n:
        errors.append(
            issue(
                "range",
                path(SLICE_SIZE),
                f"{count} pods do not divide into slices of {n} (placer reads whole slices only)",
            )
        )
        return None
    return level, n


def sliced_group(group: TaskGroup, level: str, size: int, path: str, errors: list[Issue]) -> TaskGroup | None:
    """``group`` in slices of ``size`` pods, each inside one domain of ``level``. On a node: each slice one
    replica holding its pods' CPU, memory, storage and GPUs together (as a Flux ``node > slot`` replica
    holds its slots), exactly Kueue's rule for these additive amounts. Above the node: the group's
    :class:`~placer.solver.jobs.model.Slices`, a rule of the engines and the checker. TPU and GPU-share
    pods are refused (a TPU host's chips are not a node's GPUs; shares do not add up on one GPU)."""
    if group.tpu is not None or (group.gpu is not None and group.gpu.share_milli is not None):
        errors.append(issue("unsupported", path, "slices of TPU or GPU-share pods are not represented"))
        return None
    if level != "node":
        return group.model_copy(update={"slices": Slices(level=level, size=size)})
    gpu = group.gpu
    return group.model_copy(
        update={
            "count": group.count // size,
            "cpu_cores": group.cpu_cores * size,
            "memory_gb": group.memory_gb * size,
            "storage_gb": group.storage_gb * size,
            "shm_gb": group.shm_gb * size,
            "gpu": None if gpu is None else gpu.model_copy(update={"count": gpu.count * size}),
            "extra": {k: v * size for k, v in group.extra.items()},
        }
    )


#: Kueue's maximum execution time on a Job or JobSet (a label, whole seconds): the workload is evicted
#: once admitted that long; a Workload carries it as ``spec.maximumExecutionTimeSeconds``.
MAX_EXEC_TIME = "kueue.x-k8s.io/max-exec-time-seconds"


def max_runtime(
    kind: object, spec: dict[str, Any], meta: dict[str, Any], at: str, errors: list[Issue]
) -> int | None:
    """The most seconds the workload may run, or None: the least of a Job's ``activeDeadlineSeconds``,
    Kueue's ``max-exec-time-seconds`` label (Job, JobSet) and a Workload's ``maximumExecutionTimeSeconds``
    (:func:`~placer.solver.jobs.formats.kubernetes_pods.seconds` reads each)."""
    caps = [
        seconds(as_map(meta.get("labels")).get(MAX_EXEC_TIME), f"{at}metadata.labels.{MAX_EXEC_TIME}", errors)
    ]
    if kind == "Job":
        caps.append(seconds(spec.get("activeDeadlineSeconds"), f"{at}spec.activeDeadlineSeconds", errors))
    if kind == "Workload":
        caps.append(
            seconds(spec.get("maximumExecutionTimeSeconds"), f"{at}spec.maximumExecutionTimeSeconds", errors)
        )
    known = [c for c in caps if c is not None]
    return min(known) if known else None


def partial_group(
    group: TaskGroup, least: Any, path: str, sliced: bool, ranged: int, errors: list[Issue]
) -> TaskGroup | None:
    """``group`` with Kueue partial admission: any count from ``least`` to its pods, the largest that fits
    (a :class:`~placer.solver.jobs.model.CountRange`, placed as Flux ranges are), or None with the reason
    in ``errors``. Refused with slices (a count between would cut them) and on a second pod set of one job
    (placer's engines range one group of a job)."""
    n = api_int(least)
    if n is None or not 1 <= n <= group.count:
        errors.append(
            issue("range", path, f"a whole number from 1 to the pod count {group.count}, got {least!r}")
        )
        return None
    if sliced:
        errors.append(
            issue("unsupported", path, "partial admission of a pod set in slices is not represented")
        )
        return None
    if ranged > 1:
        errors.append(
            issue("unsupported", path, "partial admission of more than one pod set is not represented")
        )
        return None
    if n == group.count:
        return group
    return group.model_copy(update={"count": n, "count_range": CountRange(min=n, max=group.count)})
