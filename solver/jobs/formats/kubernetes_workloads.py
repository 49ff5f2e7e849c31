"""Kubernetes workloads read as gangs: a batch/v1 ``Job``, a JobSet and a Kueue ``Workload`` are each one
placer job whose task groups are their pod sets — admitted whole, as Kueue admits them.

Why beside the pod reader: these are what operators submit (a Kueue user's unit is the Workload, not the
pod), and each is a list of pod templates with counts, which is exactly a placer job's task groups.

* ``Job`` (batch/v1): one group of ``parallelism`` replicas (default 1; at most ``completions`` when
  that is smaller) of ``spec.template``.
* ``JobSet`` (jobset.x-k8s.io/v1alpha2): one group per ``replicatedJobs[i]``, named by it, of ``replicas``
  x the child Job's ``parallelism`` replicas.
* ``Workload`` (kueue.x-k8s.io/v1beta1 and v1beta2): one group per ``podSets[i]``, ``count`` replicas of
  its ``template``; ``queueName``, ``priorityClassName`` and ``priority`` of the spec.

A pod template's ``preemptionPolicy: Never`` makes the job a non-preempting one (``may_preempt``), as
for a pod (:mod:`.kubernetes_pods`); with several pod sets, one such template is enough.

Kueue topology-aware scheduling: a pod template annotated ``kueue.x-k8s.io/podset-required-topology`` (or a
podSet's ``topologyRequest.required``) with a node label placer knows as a level keeps the gang in one
domain of it (``topology_scope``): ``kubernetes.io/hostname`` -> node,
``cloud.google.com/gce-topology-subblock`` -> rack, ``cloud.google.com/gce-topology-block`` -> block,
``topology.kubernetes.io/zone`` -> zone (the importer maps the same labels, ``docs/importers.md``), and the
site's own labels the caller maps (``levels``: ``--topology-labels``, as the node importer reads them).
Another label is refused (``unsupported``, the annotation's path): placer would not know which nodes share
it.
placer's scope is the job's: a required level on any pod set keeps the whole job in one such domain
(Kueue scopes each pod set on its own, so placer is stricter when only some pod sets ask). A
``preferred`` topology is what placer does anyway for an unscoped gang (smallest rack, then block, then
zone that holds it), so it is recorded in metadata. Pod templates of one job must agree on tolerations,
node selector, affinity and anti-affinity unless they differ only in required node rules (kept per group);
other differences are refused. A child Job of a JobSet runs ``parallelism`` pods, at most
``completions``, as a Job does.

Kueue's topology slices (``podset-slice-required-topology`` with ``podset-slice-size: s``, or a podSet's
``podSetSliceRequiredTopology`` / ``podSetSliceSize``): every ``s`` pods of the pod set inside one domain
of the slice level, several slices possibly in one domain. On a node (``kubernetes.io/hostname``) the
pod set is read as ``count / s`` replicas of ``s`` pods' CPU, memory, storage and GPUs together — a
replica is a slice, as a Flux ``node > slot`` replica is one node's slots — which asks exactly that of
these additive amounts. On a rack, block or zone label the group keeps its pods and gets
:class:`~placer.solver.jobs.model.Slices`, a rule both engines and the checker keep. The request is in
``metadata["kubernetes"]["slices"]``. Refused (``unsupported``, ``range``, ``required``: the field's path),
because placer cannot keep them and a job placed without them would run where Kueue or JobSet would not
put it: a slice label placer does not know as a level, multi-layer slices, slices of TPU or GPU-share
pods, a size Kueue would refuse or that does not divide the pod count; and JobSet exclusive placement
(``alpha.jobset.sigs.k8s.io/exclusive-topology`` or ``node-selector``, on the JobSet or a replicated Job's
template: each child Job in a domain no other JobSet's pods share). ``podset-group-name`` and
``podset-unconstrained-topology`` ask nothing placer does not already do.

Kueue partial admission (a Job's ``kueue.x-k8s.io/job-min-parallelism``, a podSet's ``minCount``): the pod
set runs any count from that minimum to all its pods, the largest that fits, as Kueue admits it (a
:class:`~placer.solver.jobs.model.CountRange` on the group, placed as Flux ranges are). Refused on a pod set
in slices and on a second pod set of one job; a minimum that is not a whole number from 1 to the pod
count is a ``range`` error.

A suspended Job (``spec.suspend: true``, as Kueue creates them) is still a job to place; one with active
pods, or a Workload with ``status.admission``, is running work, and a Workload with ``spec.active: false``
is one Kueue will not admit (all ``conflict``).

>>> job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
...        "spec": {"parallelism": 4, "template": {"spec": {"containers": [{"name": "c",
...                 "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}
>>> [r] = read_workload(job, "", "j.json")
>>> r.id, r.job.tasks[0].count, r.job.total_gpus
('ml/train', 4, 32)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.kubernetes_pods import (
    HOSTNAME,
    as_map,
    preempts,
    scheduling_gates,
    seconds,
    template_group,
)
from placer.solver.jobs.model import (
    CountRange,
    Job,
    Placement,
    PriorityClass,
    ReadResult,
    Slices,
    TaskGroup,
)
from placer.topology.importers.kubernetes import priority_class_for

__all__ = [
    "EXCLUSIVE_ANNOTATIONS",
    "KINDS",
    "LEVELS",
    "MAX_EXEC_TIME",
    "MIN_PARALLELISM",
    "REQUIRED_TOPOLOGY",
    "SLICE_SIZE",
    "SLICE_TOPOLOGY",
    "read_workload",
]

#: Workload kinds this module reads.
KINDS = frozenset({"Job", "JobSet", "Workload"})
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
#: JobSet exclusive placement (jobset's ``alpha.jobset.sigs.k8s.io/exclusive-topology``, on the JobSet or
#: on a replicated Job's template; ``node-selector``, its strategy with nodes labelled beforehand): each
#: child Job in a topology domain of its own, which no other JobSet's pods may share. placer has no
#: domain-level anti-affinity between jobs, so the JobSet is refused, never placed without it.
EXCLUSIVE_ANNOTATIONS = (
    "alpha.jobset.sigs.k8s.io/exclusive-topology",
    "alpha.jobset.sigs.k8s.io/node-selector",
)
#: Node labels Kueue topologies use -> placer's topology scopes.
LEVELS: dict[str, str] = {
    HOSTNAME: "node",
    "cloud.google.com/gce-topology-subblock": "rack",
    "cloud.google.com/gce-topology-block": "block",
    "topology.kubernetes.io/zone": "zone",
}


def _count(value: Any, default: int, path: str, errors: list[Issue]) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100_000:
        errors.append(issue("range", path, "an integer from 0 to 100000"))
        return default
    return value


def _pod_sets(
    raw: dict[str, Any], kind: str, base: str, errors: list[Issue]
) -> list[tuple[str, int, Any, str, dict[str, str], tuple[Any, str] | None]]:
    """``(name, count, pod template, path of the template, paths, least)`` of each pod set; ``paths``: an
    annotation read from another field (a Workload's ``topologyRequest``) -> that field's path; ``least``:
    Kueue partial admission's least count as given, and where (a Job's ``job-min-parallelism``, a
    podSet's ``minCount``), or None."""
    spec = as_map(raw.get("spec"))
    at = f"{base}." if base else ""
    if kind == "Job":
        parallelism = _count(spec.get("parallelism"), 1, f"{at}spec.parallelism", errors)
        completions = spec.get("completions")
        if (
            isinstance(completions, int)
            and not isinstance(completions, bool)
            and 0 < completions < parallelism
        ):
            parallelism = completions
        annotations = as_map(as_map(raw.get("metadata")).get("annotations"))
        least = None
        if MIN_PARALLELISM in annotations:
            least = (annotations[MIN_PARALLELISM], f"{at}metadata.annotations.{MIN_PARALLELISM}")
        return [("default", parallelism, spec.get("template"), f"{at}spec.template", {}, least)]
    if kind == "JobSet":
        out = []
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            where = f"{at}spec.replicatedJobs[{i}]"
            rj = as_map(rj)
            job_spec = as_map(as_map(rj.get("template")).get("spec"))
            replicas = _count(rj.get("replicas"), 1, f"{where}.replicas", errors)
            parallelism = _count(job_spec.get("parallelism"), 1, f"{where}.template.spec.parallelism", errors)
            completions = job_spec.get("completions")
            if (
                isinstance(completions, int)
                and not isinstance(completions, bool)
                and 0 < completions < parallelism
            ):
                parallelism = completions  # a child Job runs at most its completions at once, as a Job
            _exclusive(as_map(as_map(rj.get("template")).get("metadata")), f"{where}.template", errors)
            name = rj.get("name") if isinstance(rj.get("name"), str) and rj.get("name") else f"job{i}"
            out.append(
                (
                    name,
                    replicas * parallelism,
                    job_spec.get("template"),
                    f"{where}.template.spec.template",
                    {},
                    None,
                )
            )
        return out
    out = []
    for i, ps in enumerate(spec.get("podSets") or []):
        where = f"{at}spec.podSets[{i}]"
        ps = as_map(ps)
        name = ps.get("name") if isinstance(ps.get("name"), str) and ps.get("name") else f"set{i}"
        template = as_map(ps.get("template"))
        request = as_map(ps.get("topologyRequest"))
        paths: dict[str, str] = {}
        asked = {field: v for field, v in request.items() if field in REQUEST_FIELDS and v is not None}
        if asked:
            # The podSet's own topology request (Kueue copies the annotations there): read as the annotations,
            # problems named at the request's fields.
            tmeta = as_map(template.get("metadata"))
            annotations = dict(as_map(tmeta.get("annotations")))
            for field, value in asked.items():
                annotations[REQUEST_FIELDS[field]] = value if isinstance(value, str) else str(value)
                paths[REQUEST_FIELDS[field]] = f"{where}.topologyRequest.{field}"
            template = {**template, "metadata": {**tmeta, "annotations": annotations}}
        count = _count(ps.get("count"), 1, f"{where}.count", errors)
        least = (ps["minCount"], f"{where}.minCount") if ps.get("minCount") is not None else None
        out.append((name, count, template, f"{where}.template", paths, least))
    return out


def _unknown_level(label: object, known: Mapping[str, str]) -> str:
    return (
        f"{str(label)[:80]!r} is not a node label placer knows as a level ({', '.join(known)}; a site's "
        "own with --topology-labels)"
    )


def _slice_request(
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
        errors.append(issue("unsupported", path(SLICE_TOPOLOGY), _unknown_level(topology, known)))
        return None
    if size is None:
        errors.append(issue("required", path(SLICE_SIZE), f"must be set when {SLICE_TOPOLOGY} is"))
        return None
    n = int(size) if isinstance(size, str) and size.isascii() and size.isdigit() else 0
    if not 1 <= n <= max(count, 1):
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


def _sliced(group: TaskGroup, level: str, size: int, path: str, errors: list[Issue]) -> TaskGroup | None:
    """``group`` in slices of ``size`` pods, each inside one domain of ``level``. On a node: each slice one
    replica holding its pods' CPU, memory, storage and GPUs together (as a Flux ``node > slot`` replica
    holds its slots), exactly Kueue's rule for these additive amounts. Above the node: the group's
    :class:`~placer.solver.jobs.model.Slices`, a rule of the engines and the checker. TPU and GPU-share
    pods are refused (a TPU host's chips are not a node's GPUs; shares do not add up on one GPU)."""
    if group.tpu is not None or (group.gpu is not None and group.gpu.share_milli is not None):
        errors.append(issue("unsupported", path, "slices of TPU or GPU-share pods are not represented"))
        return None
    if level != "node":
        return group.model_copy(update={"slices": Slices(level=level, size=size)})  # type: ignore[arg-type]
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


def _max_runtime(
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


def _partial(
    group: TaskGroup, least: Any, path: str, sliced: bool, ranged: int, errors: list[Issue]
) -> TaskGroup | None:
    """``group`` with Kueue partial admission: any count from ``least`` to its pods, the largest that fits
    (a :class:`~placer.solver.jobs.model.CountRange`, placed as Flux ranges are), or None with the reason
    in ``errors``. Refused with slices (a count between would cut them) and on a second pod set of one job
    (placer's engines range one group of a job)."""
    n = least if isinstance(least, int) and not isinstance(least, bool) else None
    if isinstance(least, str) and least.isascii() and least.isdigit():
        n = int(least)
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


def _exclusive(meta: dict[str, Any], base: str, errors: list[Issue]) -> None:
    """Refuse JobSet exclusive placement (:data:`EXCLUSIVE_ANNOTATIONS`) named in ``meta``'s annotations."""
    annotations = as_map(meta.get("annotations"))
    at = f"{base}." if base else ""
    for key in EXCLUSIVE_ANNOTATIONS:
        if key in annotations:
            errors.append(
                issue(
                    "unsupported",
                    f"{at}metadata.annotations.{key}",
                    f"JobSet exclusive placement ({str(annotations[key])[:80]!r}: each child Job in a domain "
                    "of its own, shared with no other JobSet's pods) is not represented by placer",
                )
            )


def _running(raw: dict[str, Any], kind: str, base: str) -> Issue | None:
    status = as_map(raw.get("status"))
    at = f"{base}." if base else ""
    if kind == "Workload" and status.get("admission"):
        return issue(
            "conflict", f"{at}status.admission", "already admitted: running work, not a job to place"
        )
    if kind == "Workload" and as_map(raw.get("spec")).get("active") is False:
        return issue(
            "conflict", f"{at}spec.active", "deactivated: Kueue admits no inactive Workload, nor does placer"
        )
    if kind == "Job" and (status.get("active") or status.get("succeeded")):
        return issue("conflict", f"{at}status", "the Job has active or finished pods: not a job to place")
    return None


def read_workload(
    raw: Any, base: str, source: str, levels: Mapping[str, str] | None = None
) -> list[ReadResult]:
    """One Job, JobSet or Workload as one result (module docstring); never raises for bad input.
    ``levels``: the site's own node labels read as levels (``ReadOptions.topology_levels``), beside
    :data:`LEVELS`."""
    known = {**LEVELS, **(levels or {})}
    errors: list[Issue] = []
    warnings: list[Issue] = []
    meta = as_map(raw.get("metadata")) if isinstance(raw, dict) else {}
    kind = raw.get("kind") if isinstance(raw, dict) and isinstance(raw.get("kind"), str) else None
    name = meta.get("name")
    namespace = (
        meta.get("namespace")
        if isinstance(meta.get("namespace"), str) and meta.get("namespace")
        else "default"
    )
    at = f"{base}." if base else ""
    if not isinstance(name, str) or not name or kind not in KINDS:
        rid = f"{source}#{base or 0}"
        err = issue("required", f"{at}metadata.name", f"a {kind} needs a name")
        return [ReadResult(id=rid, ok=False, errors=[err], source=source, path=base)]
    rid = f"{namespace}/{name}"
    running = _running(raw, str(kind), base)
    if running is not None:
        return [ReadResult(id=rid, ok=False, errors=[running], source=source, path=base)]
    if kind == "JobSet":
        _exclusive(meta, base, errors)
    sets = _pod_sets(raw, str(kind), base, errors)
    if not sets and not errors:
        errors.append(issue("required", f"{at}spec", f"a {kind} needs at least one pod template"))
    groups: list[TaskGroup] = []
    placements: list[Placement] = []
    scopes: set[str] = set()
    priority, pclass = 0, None
    may_preempt = True  # a pod set whose template says preemptionPolicy: Never keeps the whole gang waiting
    gates: list[str] = []  # the scheduling gates of any pod template: its pods are gated, the gang waits
    preferred: dict[str, str] = {}
    slices: dict[str, dict[str, object]] = {}  # pod sets read as slices: their request, for the metadata
    ranged = 0  # pod sets read with a partial-admission range (placer ranges one per job)
    for set_name, count, template, where, paths, least in sets:
        template = as_map(template)
        tmeta = as_map(template.get("metadata"))
        tspec = template.get("spec")
        if not isinstance(tspec, dict):
            errors.append(issue("required", f"{where}.spec", "a pod template needs a spec"))
            continue
        annotations = as_map(tmeta.get("annotations"))

        def path(key: str, where: str = where, paths: dict[str, str] = paths) -> str:
            return paths.get(key, f"{where}.metadata.annotations.{key}")

        sliced = _slice_request(annotations, count, path, known, errors)
        required = annotations.get(REQUIRED_TOPOLOGY)
        if required is not None:
            level = known.get(required) if isinstance(required, str) else None
            if level is None:
                errors.append(issue("unsupported", path(REQUIRED_TOPOLOGY), _unknown_level(required, known)))
            else:
                scopes.add(level)
        if isinstance(annotations.get(PREFERRED_TOPOLOGY), str):
            preferred[set_name] = annotations[PREFERRED_TOPOLOGY]
        group, placement, prio, pc = template_group(
            tspec, where, source, set_name, max(count, 1), errors, warnings
        )
        may_preempt = preempts(tspec, where, errors) and may_preempt
        gates.extend(g for g in scheduling_gates(tspec, where, errors) if g not in gates)
        if count == 0:
            continue  # an empty pod set holds nothing
        if group is not None and sliced is not None:
            group = _sliced(group, *sliced, path(SLICE_SIZE), errors)
            slices[set_name] = {"topology": annotations[SLICE_TOPOLOGY], "size": sliced[1], "pods": count}
        if group is not None and least is not None:
            ranged += 1
            group = _partial(group, *least, sliced is not None, ranged, errors)
        if group is not None:
            groups.append(group)
            placements.append(placement)
            priority, pclass = max(priority, prio), pclass or pc
    spec = as_map(raw.get("spec")) if isinstance(raw, dict) else {}
    duration = _max_runtime(kind, spec, meta, at, errors)
    if kind == "Workload":
        if isinstance(spec.get("priority"), int) and not isinstance(spec.get("priority"), bool):
            priority = spec["priority"]
        if isinstance(spec.get("priorityClassName"), str):
            pclass = spec["priorityClassName"]
    if len(scopes) > 1:
        errors.append(
            issue("unsupported", f"{at}spec", f"pod sets ask for different topology levels: {sorted(scopes)}")
        )
    placement = _merged(placements, groups, f"{at}spec", errors)
    if errors or not groups:
        if not errors:
            errors.append(issue("range", f"{at}spec", "every pod set has a count of 0: nothing to place"))
        return [ReadResult(id=rid, ok=False, errors=errors, warnings=warnings, source=source, path=base)]
    labels = {str(k): v for k, v in as_map(meta.get("labels")).items() if isinstance(v, str)}
    queue = spec.get("queueName") if kind == "Workload" else labels.get("kueue.x-k8s.io/queue-name")
    try:
        job = Job(
            id=rid,
            name=name,
            type=f"kubernetes.{str(kind).lower()}",
            source_format=f"kubernetes-{str(kind).lower()}",
            queue=queue if isinstance(queue, str) else None,
            priority_class=PriorityClass(priority_class_for(pclass)),
            priority=priority,
            may_preempt=may_preempt,
            gates=gates,
            duration_s=duration,
            tasks=groups,
            placement=placement.model_copy(update={"topology_scope": next(iter(scopes), None)}),
            labels=labels,
            metadata={
                "kubernetes": {
                    "namespace": namespace,
                    "kind": kind,
                    "preferred_topology": preferred,
                    **({"slices": slices} if slices else {}),
                }
            },
            envelope=raw,
        )
    except ValidationError as e:
        errs = [issue("range", f"{at}spec", str(err["msg"])[:300]) for err in e.errors()]
        return [ReadResult(id=rid, ok=False, errors=errs, warnings=warnings, source=source, path=base)]
    return [ReadResult(id=rid, ok=True, job=job, warnings=warnings, source=source, path=base)]


def _merged(
    placements: list[Placement], groups: list[TaskGroup], path: str, errors: list[Issue]
) -> Placement:
    """One job-level placement for the pod sets: equal ones as they are; ones that differ only in required
    node rules keep those rules on their groups (``TaskGroup.required``); any other difference is refused."""
    if not placements:
        return Placement()
    first = placements[0]
    if all(p == first for p in placements):
        return first
    bare = [p.model_copy(update={"required": [], "node_selector": {}}) for p in placements]
    if any(b != bare[0] for b in bare):
        errors.append(
            issue(
                "unsupported",
                path,
                "pod templates differ in tolerations, anti-affinity or preferred rules; a job has one set",
            )
        )
        return first
    for k, (g, p) in enumerate(zip(groups, placements, strict=True)):
        groups[k] = g.model_copy(update={"required": [*g.required, *p.required]})
    return bare[0]
