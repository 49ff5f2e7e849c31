"""Kubernetes pods (``kubectl get pods -o json``) read as jobs: each pending pod is one job, so a
Kubernetes or Kueue user can ask placer where a pending pod would fit and why it does not.

Why a reader of its own: most GPU fleets are Kubernetes clusters, and their work already exists as pods.
What a pod says, and what it becomes (``docs/kubernetes.md``):

* the pod's effective request — containers summed, init containers and sidecars as kube-scheduler
  counts them, plus ``overhead`` (the importer's own arithmetic, ``topology/importers/kubernetes.py``):
  ``cpu`` -> cores, ``memory`` -> GB (2^30 bytes), ``ephemeral-storage`` -> storage GB, ``nvidia.com/gpu``
  and ``amd.com/gpu`` -> whole GPUs (of AMD types only for ``amd.com/gpu``, of no AMD type for
  ``nvidia.com/gpu``: each device plugin advertises its own vendor's), ``google.com/tpu`` -> TPU chips,
  of the generation and slice shape GKE's node selector names (:func:`_tpu`: a multi-host slice is one
  replica per slice its gang's pods fill);
  any other extended resource (EFA ``vpc.amazonaws.com/efa``, RDMA ``rdma/...``, a MIG slice
  ``nvidia.com/mig-1g.10gb``; whole counts) and ``hugepages-<size>`` (bytes) -> the task group's
  ``extra``, which both engines and the checker count per node against the node's allocatable, as
  kube-scheduler does; a name that is neither is refused, not read past; and one ``pods`` (every pod takes
  one of its node's pod slots, a Kubernetes node's allocatable ``pods``);
* ``nodeSelector`` -> node selector; ``affinity.nodeAffinity`` required terms (ORed, their expressions
  ANDed; ``In``, ``NotIn``, ``Exists``, ``DoesNotExist``, ``Gt``, ``Lt``) -> required rules, preferred
  terms of one expression -> preferred rules with their weight (1-100);
* ``affinity.podAntiAffinity`` required terms on ``kubernetes.io/hostname`` with a ``labelSelector`` ->
  anti-affinity against the labels of the jobs on a node (running pods read with ``--pods`` carry their
  labels); preferred terms there whose selector is one requirement -> preferred anti-affinity with the
  term's weight, which both engines weigh; preferred ``podAffinity`` terms of that form -> preferred
  affinity to those jobs (rather beside them); required terms on another key (a zone, a rack label) ->
  ``anti_affinity_domains``: not in the domain of a matching job (running, or placed by the same
  decision, where one of such a pair is placed at a time: :mod:`placer.solver.apart`);
* ``affinity.podAffinity`` required terms (``topologyKey`` and a ``labelSelector``) ->
  ``affinity_required``: only in a domain of each key where a running job matching every term runs, or,
  when none does and the pod's labels match its terms, as the first of its group (kube-scheduler's
  InterPodAffinity filter, :mod:`placer.solver.affinity`); on a pod, a required term's ``matchLabelKeys``
  and ``mismatchLabelKeys`` (podAffinity and podAntiAffinity) narrow its selector by the pod's own labels;
* ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule`` (``topologyKey``, ``maxSkew``,
  ``labelSelector``, ``minDomains``, ``matchLabelKeys``, ``nodeAffinityPolicy``, ``nodeTaintsPolicy``) ->
  ``spread_required``:
  only in a domain that would hold at most ``maxSkew`` more of the pods it counts than the least one
  (kube-scheduler's PodTopologySpread filter, :mod:`placer.solver.skew`); in a pod template refused;
* containers' host ports (``hostPort``; every container port of a ``hostNetwork`` pod) -> the label
  ``placer.host-port/<protocol>-<port>`` and a required anti-affinity rule on it: two pods holding one
  port never share a node (kube-scheduler's ``NodePorts``; ``host_ports`` of the importer, which gives
  running pods the same label);
* ``tolerations`` -> tolerations; ``priority`` -> priority; ``priorityClassName`` -> priority class
  (:func:`~placer.topology.importers.kubernetes.priority_class_for`) and, without ``priority``, the
  listed class's value, as the API server's admission writes it (Kueue's ``kueue.x-k8s.io/priority-class``
  label first on a pod Kueue manages; :mod:`~placer.solver.jobs.formats.kubernetes_priority`);
  labels -> job labels;
* ``preemptionPolicy`` (the API server copies it from the PriorityClass: ``PreemptLowerPriority``, the
  default, or ``Never``) -> ``may_preempt``: a non-preempting pod keeps its priority in line but waits for
  free room, as kube-scheduler never preempts for it;
* ``schedulingGates`` -> ``gates``: a gated pod (Kueue's plain-pod integration gates each pod with
  ``kueue.x-k8s.io/admission`` until its workload is admitted) waits with ``SCHEDULING_GATED``, naming
  the gates, and is never placed or planned: kube-scheduler does not queue it, and the API server refuses
  a node for it. Placer's own gate (:data:`PLACER_GATE`) is not one of them: it is placer's to lift.

A pod already bound to a node (``spec.nodeName``) is running work, not a job to place: give the same file
to ``--pods`` (``placer place --cluster nodes.json --pods pods.json --jobs pods.json``), which counts it
on its node; here it is refused with code ``conflict`` naming ``spec.nodeName``, never dropped silently.
Finished pods (``Succeeded``/``Failed``) likewise. Anything a pod says that placer cannot represent
(a required ``podAffinity`` term without a label selector, ``matchFields`` other than
``metadata.name``) is
refused with code ``unsupported`` and the field path, never ignored. What is only a preference to
kube-scheduler and placer does not weigh
(a preferred pod affinity or anti-affinity term on another key or with a selector of several
requirements, a preferred node-affinity term of several expressions, ``ScheduleAnyway`` spread
constraints) never keeps a pod from running: the pod is read without it, with an ``unsupported`` warning
naming the field, since any placement placer makes is one kube-scheduler could make too. A
``schedulerName`` other than ``default-scheduler`` is kept in metadata with a warning: that pod is not the
default scheduler's to place. A volume from a PersistentVolumeClaim is read with a warning too: its volume
may keep the pod to some nodes, which placer, reading no PersistentVolumes, does not check.

>>> pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"},
...        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"},
...                 "requests": {"cpu": "4", "memory": "16Gi"}}}], "nodeSelector": {"pool": "a100"}},
...        "status": {"phase": "Pending"}}
>>> r = read_pod(pod, "", "p.json")
>>> r.id, r.job.tasks[0].gpus_per_replica, r.job.tasks[0].cpu_cores, r.job.placement.node_selector
('ml/train', 2, 4.0, {'pool': 'a100'})
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.formats.kubernetes_priority import QUEUE_LABEL, Classes, resolve
from placer.solver.jobs.model import (
    AffinityOperator,
    AllOf,
    AnyOf,
    DomainRule,
    GpuDemand,
    Job,
    LabelRule,
    Placement,
    PriorityClass,
    ReadResult,
    Rule,
    SpreadRule,
    TaskGroup,
    Toleration,
    TpuDemand,
)
from placer.topology.catalog import gpu_info, gpu_types, tpu_generation_from_gke
from placer.topology.extended import POD_SLOTS, is_kubernetes_extra
from placer.topology.importers._common import UNKNOWN_AMD_GPU, Problems
from placer.topology.importers.kubernetes import (
    L_TPU_ACCEL,
    L_TPU_TOPOLOGY,
    host_ports,
    pod_request,
    priority_class_for,
)
from placer.topology.importers.quantity import parse_quantity

__all__ = [
    "AMD_GPU",
    "GPU_RESOURCES",
    "HOSTNAME",
    "MODELLED_RESOURCES",
    "PLACER_GATE",
    "PREEMPTION_POLICIES",
    "api_int",
    "as_list",
    "as_map",
    "preempts",
    "read_pod",
    "scheduling_gates",
    "seconds",
    "template_group",
]

AMD_GPU = "amd.com/gpu"
#: Extended resources read as whole GPUs (NVIDIA's, then AMD's).
GPU_RESOURCES = ("nvidia.com/gpu", AMD_GPU)
#: The GPU types an ``amd.com/gpu`` pod may use: the catalog's AMD models, and an AMD node's GPUs whose
#: product no label names (the Kubernetes importer's ``amd-unknown-gpu``).
AMD_TYPES = (*(t for t in gpu_types() if gpu_info(t).vendor == "amd"), UNKNOWN_AMD_GPU)
#: The rule an ``nvidia.com/gpu`` pod carries: no AMD GPU type (a node of a type the catalog does not
#: know, ``gpu_type`` unknown, stays allowed: the Kubernetes importer reads NVIDIA GPUs only).
NOT_AMD = LabelRule(key="gpu_type", operator=AffinityOperator.NOT_IN, values=list(AMD_TYPES))
#: The topology key of one node (pod anti-affinity on it keeps jobs off the node; other keys, a domain).
HOSTNAME = "kubernetes.io/hostname"
_GIB = Decimal(2**30)
_OPERATORS = {
    "In": AffinityOperator.IN,
    "NotIn": AffinityOperator.NOT_IN,
    "Exists": AffinityOperator.EXISTS,
    "DoesNotExist": AffinityOperator.DOES_NOT_EXIST,
    "Gt": AffinityOperator.GT,
    "Lt": AffinityOperator.LT,
}


def as_map(value: Any) -> dict[str, Any]:
    """``value`` when it is an object, else empty (its shape is reported where it matters)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def shaped(value: Any, kind: type, path: str, errors: list[Issue]) -> Any:
    """``value`` when it is a ``kind`` (``dict`` or ``list``), empty when absent; for anything else a
    ``type`` error naming ``path``, and empty. Why not :func:`as_map`/:func:`as_list` for a field that
    keeps a pod off nodes: read as empty, a malformed one would leave the pod with fewer rules than it
    asked for — placed where it must not run."""
    if isinstance(value, kind):
        return value
    if value is not None:
        errors.append(issue("type", path, f"an {'object' if kind is dict else 'array'}"))
    return kind()


def _at(base: str, path: str) -> str:
    return f"{base}.{path}" if base else path


def read_pod(raw: Any, base: str, source: str, classes: Classes | None = None) -> ReadResult:
    """One pod as one result (module docstring); never raises for bad input. ``classes``: the priority
    classes listed beside it (:mod:`~placer.solver.jobs.formats.kubernetes_priority`)."""
    errors: list[Issue] = []
    warnings: list[Issue] = []
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) and meta.get("namespace") else "default"
    rid = f"{namespace}/{name}" if isinstance(name, str) and name else f"{source}#{base or 0}"
    spec = raw.get("spec") if isinstance(raw, dict) else None
    if not isinstance(spec, dict) or not isinstance(name, str) or not name:
        errors.append(
            issue("required", _at(base, "metadata.name" if not name else "spec"), "a pod needs both")
        )
        return ReadResult(id=rid, ok=False, errors=errors, source=source, path=base)
    status = as_map(raw.get("status"))
    if spec.get("nodeName"):
        errors.append(
            issue(
                "conflict",
                _at(base, "spec.nodeName"),
                f"bound to {str(spec['nodeName'])[:80]!r}: running work, not a job to place; give this "
                "file to --pods as well, which counts it on its node",
            )
        )
    elif status.get("phase") in ("Succeeded", "Failed"):
        errors.append(
            issue("conflict", _at(base, "status.phase"), f"the pod has {status['phase']}; nothing to place")
        )
    if errors:
        return ReadResult(id=rid, ok=False, errors=errors, source=source, path=base)
    labels = {str(k): v for k, v in as_map(as_map(meta).get("labels")).items() if isinstance(v, str)}
    group, placement = template_group(
        spec, base, source, "default", 1, errors, warnings, namespace, labels=dict(labels)
    )
    gates = scheduling_gates(spec, base, errors)
    deadline = seconds(spec.get("activeDeadlineSeconds"), _at(base, "spec.activeDeadlineSeconds"), errors)
    labels.update(host_ports(spec)[0])  # the host ports it would hold, which other pods asking for them avoid
    # Kueue's plain-pod integration reads its priority-class label on a pod it manages (a queue name).
    kueue = labels if QUEUE_LABEL in labels else {}
    pclass, priority, by_class = resolve(
        spec,
        kueue,
        classes or Classes(),
        _at(base, "spec"),
        errors,
        warnings,
        label_at=_at(base, "metadata.labels"),
    )
    may_preempt = preempts(spec, base, errors, by_class)
    if errors or group is None:
        return ReadResult(id=rid, ok=False, errors=errors, warnings=warnings, source=source, path=base)
    try:
        job = Job(
            id=rid,
            name=name,
            type="kubernetes.pod",
            source_format="kubernetes-pod",
            queue=labels.get(QUEUE_LABEL),
            tenant=namespace,  # as a running pod's (topology/importers/kubernetes.py)
            priority_class=PriorityClass(priority_class_for(pclass)),
            priority=priority,
            may_preempt=may_preempt,
            gates=gates,
            duration_s=deadline,
            tasks=[group],
            placement=placement,
            labels=labels,
            metadata={"kubernetes": {"namespace": namespace, "schedulerName": spec.get("schedulerName")}},
            envelope=raw,
        )
    except ValidationError as e:
        errs = [
            issue("range", _at(base, ".".join(str(x) for x in err["loc"])), str(err["msg"])[:300])
            for err in e.errors()
        ]
        return ReadResult(id=rid, ok=False, errors=errs, warnings=warnings, source=source, path=base)
    return ReadResult(id=rid, ok=True, job=job, warnings=warnings, source=source, path=base)


#: ``spec.preemptionPolicy`` -> whether the pod preempts (Kubernetes ``core/v1`` ``PreemptionPolicy``).
PREEMPTION_POLICIES = {"PreemptLowerPriority": True, "Never": False}


def preempts(spec: dict[str, Any], base: str, errors: list[Issue], by_class: bool | None = None) -> bool:
    """Whether kube-scheduler may preempt lower-priority pods for this pod spec: false for
    ``preemptionPolicy: Never``; another value is an ``enum`` error naming the field. Without the field,
    ``by_class``: the policy of the pod's PriorityClass, which the admission plugin copies into the pod
    (:func:`~placer.solver.jobs.formats.kubernetes_priority.resolve`), when the class is listed.

    >>> errors = []
    >>> preempts({"preemptionPolicy": "Never"}, "", errors), preempts({}, "", errors), errors
    (False, True, [])
    """
    raw = spec.get("preemptionPolicy")
    if raw is None:
        return by_class is not False
    if not isinstance(raw, str) or raw not in PREEMPTION_POLICIES:
        errors.append(
            issue("enum", _at(base, "spec.preemptionPolicy"), f"one of {', '.join(PREEMPTION_POLICIES)}")
        )
        return True
    return PREEMPTION_POLICIES[raw]


#: The scheduling gate that is placer's to lift (a pod created with it waits for placer to pin it to a node:
#: ``placer place --output bindings``); every other gate holds the pod for whoever owns it.
PLACER_GATE = "placer.io/place"


def scheduling_gates(spec: dict[str, Any], base: str, errors: list[Issue]) -> list[str]:
    """The names of ``spec.schedulingGates`` other than :data:`PLACER_GATE`: while one remains the pod is not
    schedulable (kube-scheduler does not queue it and the API server refuses ``nodeName`` for it), so placer
    does not place it either; placer's own gate is placer's to lift. An entry without a name is a
    ``required`` error naming it.

    >>> gates = [{"name": "kueue.x-k8s.io/admission"}, {"name": PLACER_GATE}]
    >>> scheduling_gates({"schedulingGates": gates}, "", [])
    ['kueue.x-k8s.io/admission']
    """
    out: list[str] = []
    for i, gate in enumerate(
        shaped(spec.get("schedulingGates"), list, _at(base, "spec.schedulingGates"), errors)
    ):
        name = gate.get("name") if isinstance(gate, dict) else None
        if not isinstance(name, str) or not name:
            errors.append(
                issue("required", _at(base, f"spec.schedulingGates[{i}].name"), "a gate has a name")
            )
            continue
        if name != PLACER_GATE:
            out.append(name)
    return out


def api_int(value: Any) -> int | None:
    """``value`` as the whole number the Kubernetes API holds: an int (not a bool), or in an annotation or a
    label a string of ASCII digits (``str.isdigit`` also takes ``²``, which ``int`` refuses); else None.

    >>> api_int(3), api_int("42"), api_int("²"), api_int(True), api_int("-1")
    (3, 42, None, None, None)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def seconds(value: Any, path: str, errors: list[Issue]) -> int | None:
    """A Kubernetes duration in whole seconds of at least 1 (``activeDeadlineSeconds``,
    ``maximumExecutionTimeSeconds``; Kueue's ``max-exec-time-seconds`` label, a string), or None when
    absent; anything else is a ``range`` error naming ``path``. placer reads such a cap as the job's
    ``duration_s``, the time it holds its resources at most, as Slurm's time limit is read (planning and
    backfill then count on it).

    >>> seconds(3600, "spec.activeDeadlineSeconds", []), seconds("600", "x", []), seconds(None, "x", [])
    (3600, 600, None)
    >>> errors = []; seconds(0, "spec.activeDeadlineSeconds", errors), [e.code for e in errors]
    (None, ['range'])
    """
    if value is None:
        return None
    n = api_int(value)
    if n is None or n < 1:
        errors.append(issue("range", path, f"whole seconds of at least 1, got {str(value)[:40]!r}"))
        return None
    return n


def template_group(
    spec: dict[str, Any],
    base: str,
    source: str,
    name: str,
    count: int,
    errors: list[Issue],
    warnings: list[Issue],
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> tuple[TaskGroup | None, Placement]:
    """A pod spec (a pod's, or a pod template's) as ``count`` replicas of one task group named ``name``,
    with its placement; problems appended (paths under ``base``), the types of ``priority`` and
    ``priorityClassName`` among them (their values are :func:`~placer.solver.jobs.formats.
    kubernetes_priority.resolve`'s to read). The group is None when the spec has an error. ``labels``: a
    pod's own labels, whose ``DoNotSchedule`` spread constraints are then read (:func:`_spread`); a pod
    template's (None) are refused."""
    start = len(errors)
    problems = Problems(source)
    request = pod_request(spec, base or "pod", problems)
    for p in problems.items:
        errors.append(issue("range", _at(base, "spec.containers"), p.message))
    placement = _placement(spec, base, errors, warnings, namespace, labels)
    priority = spec.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool):
        errors.append(issue("type", _at(base, "spec.priority"), "must be an integer"))
    pclass = spec.get("priorityClassName")
    if pclass is not None and not isinstance(pclass, str):
        errors.append(issue("type", _at(base, "spec.priorityClassName"), "must be a string"))
        pclass = None
    scheduler = spec.get("schedulerName")
    if scheduler not in (None, "default-scheduler"):
        warnings.append(
            issue(
                "unsupported",
                _at(base, "spec.schedulerName"),
                f"{str(scheduler)[:80]!r}: another scheduler's pods; placed here as if they were not",
            )
        )
    if spec.get("resourceClaims"):
        errors.append(issue("unsupported", _at(base, "spec.resourceClaims"), "not represented by placer"))
    _claimed_volumes(spec, base, warnings)
    _unmodelled_resources(spec, base, errors)
    spread = shaped(
        spec.get("topologySpreadConstraints"), list, _at(base, "spec.topologySpreadConstraints"), errors
    )
    if any(isinstance(c, dict) and c.get("whenUnsatisfiable") == "ScheduleAnyway" for c in spread):
        # kube-scheduler scores by them, never keeps the pod out
        warnings.append(
            _soft(_at(base, "spec.topologySpreadConstraints"), "ScheduleAnyway spread constraints")
        )
    if labels is not None:
        placement = placement.model_copy(
            update={"spread_required": _spread(spread, base, errors, namespace, labels)}
        )
    elif any(not isinstance(c, dict) or c.get("whenUnsatisfiable") != "ScheduleAnyway" for c in spread):
        errors.append(
            issue(
                "unsupported",
                _at(base, "spec.topologySpreadConstraints"),
                "a DoNotSchedule spread constraint in a pod template is not represented (each pod of the "
                "gang would count the others); pods read one by one keep it",
            )
        )
    nvidia, amd = (int(request.get(r, Decimal(0))) for r in GPU_RESOURCES)
    if nvidia and amd:
        errors.append(
            issue("conflict", _at(base, "spec.containers"), "asks for NVIDIA and AMD GPUs: no node has both")
        )
    if len(errors) > start:
        return None, placement
    gpus = nvidia + amd
    if nvidia:  # nvidia.com/gpu is advertised by NVIDIA's device plugin alone: never an AMD node's GPUs
        placement = placement.model_copy(update={"required": [*placement.required, NOT_AMD]})
    chips = int(request.get("google.com/tpu", Decimal(0)))
    tpu = None
    if chips:
        tpu, count = _tpu(chips, count, placement.node_selector, base, errors)
        if tpu is None:
            return None, placement
    extra = {k: float(v) for k, v in sorted(request.items()) if is_kubernetes_extra(k) and v > 0}
    extra[POD_SLOTS] = 1.0  # the pod takes one of its node's pod slots (allocatable pods)
    try:
        group = TaskGroup(
            name=name,
            count=count,
            cpu_cores=float(request.get("cpu", Decimal(0))),
            memory_gb=float(request.get("memory", Decimal(0)) / _GIB),
            storage_gb=float(request.get("ephemeral-storage", Decimal(0)) / _GIB),
            # amd.com/gpu: only AMD GPUs (the device plugin advertises it on AMD nodes alone).
            gpu=GpuDemand(count=gpus, types=list(AMD_TYPES) if amd else []) if gpus else None,
            tpu=tpu,
            extra=extra,
        )
    except ValidationError as e:
        errors.append(issue("range", _at(base, "spec"), str(e.errors()[0]["msg"])[:200]))
        return None, placement
    return group, placement


#: The container resources placer holds a pod to besides the counted ones :func:`is_kubernetes_extra`
#: names: CPU, memory, disk, whole GPUs and TPU chips.
MODELLED_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage", *GPU_RESOURCES, "google.com/tpu"})


def _tpu(
    chips: int, count: int, selector: Mapping[str, str], base: str, errors: list[Issue]
) -> tuple[TpuDemand | None, int]:
    """A pod's ``google.com/tpu`` chips as TPU demand, and how many replicas its ``count`` pods make
    (None, with the problem appended, when they make none).

    GKE places a TPU pod by its node selector: ``cloud.google.com/gke-tpu-accelerator`` names the TPU
    generation (placer's catalog maps it; a value it does not know leaves the generation open, and the
    selector still holds the pod to the nodes that carry it), ``cloud.google.com/gke-tpu-topology`` the
    slice's shape. A slice one host holds (the pod's chips are the topology's) is one replica of that
    shape. A multi-host slice runs one pod per host, each asking for its host's chips: the ``count`` pods
    of a gang (a JobSet's replicated job, a Workload's pod set) make ``count x chips / chips of the
    slice`` slices, one replica each, and a count that does not fill whole slices is refused, as is a lone
    pod of one (it runs only with the pods of its other hosts: read the JobSet or Workload that makes
    the gang). Without a topology, the pod asks for its chips on any slice.

    >>> errors = []
    >>> _tpu(4, 4, {L_TPU_ACCEL: "tpu-v5-lite-podslice", L_TPU_TOPOLOGY: "4x4"}, "pod", errors)
    (TpuDemand(type='v5e', topology=(4, 4), chips=None), 1)
    >>> _tpu(4, 1, {L_TPU_TOPOLOGY: "4x4"}, "pod", errors), errors[0].code
    ((None, 1), 'unsupported')
    """
    at = _at(base, f"spec.nodeSelector[{L_TPU_TOPOLOGY!r}]")
    kind = tpu_generation_from_gke(selector[L_TPU_ACCEL]) if L_TPU_ACCEL in selector else None
    text = selector.get(L_TPU_TOPOLOGY)
    if text is None:
        return TpuDemand(type=kind, chips=chips), count
    dims = text.split("x")
    if not 2 <= len(dims) <= 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
        why = f"{text[:40]!r}: a TPU topology is 2 or 3 positive sizes, like 2x4"
        errors.append(issue("format", at, why))
        return None, count
    shape = tuple(int(d) for d in dims)
    whole = math.prod(shape)
    if chips > whole or whole % chips:
        errors.append(
            issue("conflict", at, f"a pod asking for {chips} TPU chips is not one host of a {text} slice")
        )
        return None, count
    if (chips * count) % whole:
        what = f"a lone pod of {chips} chips does" if count == 1 else f"{count} pods of {chips} chips do"
        errors.append(
            issue(
                "unsupported",
                at,
                f"{what} not fill whole {text} slices ({whole} chips): a multi-host TPU slice runs one pod "
                "per host; read the JobSet or Workload that makes its gang",
            )
        )
        return None, count
    return TpuDemand(type=kind, topology=shape), chips * count // whole


def _unmodelled_resources(spec: dict[str, Any], base: str, errors: list[Issue]) -> None:
    """Refuse a pod that asks for a resource placer does not account (``storage``, ``pods``, a name
    outside every domain), naming the container's field, never read past; and an extended resource that
    is not a whole count (the API server refuses those). A quantity of 0 asks for nothing."""
    for kind in ("containers", "initContainers"):
        for i, c in enumerate(as_list(spec.get(kind))):
            res = c.get("resources") if isinstance(c, dict) else None
            if not isinstance(res, dict):
                continue
            said: set[str] = set()
            for part in ("limits", "requests"):
                asked = res.get(part)
                for name, value in asked.items() if isinstance(asked, dict) else ():
                    if name in MODELLED_RESOURCES or name in said or str(value).strip() in ("0", "0.0"):
                        continue
                    said.add(name)
                    where = _at(base, f"spec.{kind}[{i}].resources.{part}.{name}")
                    if not is_kubernetes_extra(str(name)):
                        errors.append(
                            issue(
                                "unsupported",
                                where,
                                f"{str(name)[:80]!r} is a resource placer does not account (it holds pods to "
                                "CPU, memory, ephemeral-storage, GPUs, TPU chips, extended resources and "
                                "huge pages)",
                            )
                        )
                    elif not str(name).startswith("hugepages-") and not _whole(value):
                        errors.append(
                            issue(
                                "range",
                                where,
                                f"an extended resource is a whole count, got {str(value)[:40]!r}",
                            )
                        )


def _whole(value: Any) -> bool:
    try:
        q = parse_quantity(value)
    except ValueError:
        return True  # the request's own reading names a malformed quantity
    return q == q.to_integral_value()


def _expressions(raw: Any, path: str, errors: list[Issue]) -> list[Rule]:
    out: list[Rule] = []
    for i, e in enumerate(shaped(raw, list, path, errors)):  # read as none, the rule would match more
        where = f"{path}[{i}]"
        if (
            not isinstance(e, dict)
            or not isinstance(e.get("key"), str)
            or not isinstance(e.get("operator"), str)
            or e["operator"] not in _OPERATORS
        ):
            errors.append(
                issue("enum", where, f"a match expression with key and operator in {', '.join(_OPERATORS)}")
            )
            continue
        values = e.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append(issue("type", f"{where}.values", "a list of strings"))
            continue
        try:
            out.append(LabelRule(key=e["key"], operator=_OPERATORS[e["operator"]], values=values))
        except ValidationError as err:
            errors.append(issue("range", where, str(err.errors()[0]["msg"])[:200]))
    return out


def _term(term: Any, path: str, errors: list[Issue]) -> Rule | None:
    if not isinstance(term, dict):
        errors.append(issue("type", path, "a node selector term is an object"))
        return None
    rules = _expressions(term.get("matchExpressions"), f"{path}.matchExpressions", errors)
    for i, f in enumerate(shaped(term.get("matchFields"), list, f"{path}.matchFields", errors)):
        if isinstance(f, dict) and f.get("key") == "metadata.name":
            rules += _expressions([{**f, "key": "hostname"}], f"{path}.matchFields[{i}]", errors)
        else:
            errors.append(
                issue("unsupported", f"{path}.matchFields[{i}]", "only metadata.name is represented")
            )
    if not rules:
        return None
    return rules[0] if len(rules) == 1 else AllOf(rules=rules)


def _soft(path: str, what: str) -> Issue:
    """The warning for a preference placer reads past: a soft rule never keeps kube-scheduler from placing
    a pod, so placing it without the rule is a placement kube-scheduler could make too."""
    return issue("unsupported", path, f"{what}: a preference placer does not weigh (read past)")


def _placement(
    spec: dict[str, Any],
    base: str,
    errors: list[Issue],
    warnings: list[Issue],
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Placement:
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, dict) or not all(isinstance(v, str) for v in selector.values()):
        errors.append(issue("type", _at(base, "spec.nodeSelector"), "an object of strings"))
        selector = {}
    required: list[Rule] = [
        LabelRule(key=k, operator=AffinityOperator.IN, values=[v]) for k, v in selector.items()
    ]
    preferred: list[LabelRule] = []
    anti: list[Rule] = []
    domains: list[DomainRule] = []
    affinity = shaped(spec.get("affinity"), dict, _at(base, "spec.affinity"), errors)
    path = _at(base, "spec.affinity.nodeAffinity")
    node = shaped(affinity.get("nodeAffinity"), dict, path, errors)
    required_at = f"{path}.requiredDuringSchedulingIgnoredDuringExecution"
    required_node = shaped(
        node.get("requiredDuringSchedulingIgnoredDuringExecution"), dict, required_at, errors
    )
    hard = shaped(required_node.get("nodeSelectorTerms"), list, f"{required_at}.nodeSelectorTerms", errors)
    terms: list[Rule] = []
    for i, t in enumerate(hard):
        rule = _term(t, f"{required_at}.nodeSelectorTerms[{i}]", errors)
        if rule is not None:
            terms.append(rule)
    if hard and not terms:  # every term empty: kube's empty term matches no node, nor does the pod
        terms.append(AnyOf(rules=[]))
    if terms:
        required.append(terms[0] if len(terms) == 1 else AnyOf(rules=terms))
    for i, p in enumerate(as_list(node.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        where = f"{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        exprs = as_map(p.get("preference")).get("matchExpressions") if isinstance(p, dict) else None
        weight = p.get("weight") if isinstance(p, dict) else None
        if not isinstance(weight, int) or not 1 <= weight <= 100:
            errors.append(issue("range", f"{where}.weight", "a preferred term has a weight 1-100"))
            continue
        if not isinstance(exprs, list) or len(exprs) != 1:
            warnings.append(_soft(where, "a preferred term of several expressions"))
            continue
        rules = _expressions(exprs, f"{where}.preference.matchExpressions", errors)  # (one expression)
        rule = rules[0] if rules else None
        if isinstance(rule, LabelRule):
            preferred.append(rule.model_copy(update={"weight": weight}))
    pod_affinity = shaped(affinity.get("podAffinity"), dict, _at(base, "spec.affinity.podAffinity"), errors)
    beside = _required_affinity(pod_affinity, base, errors, namespace, labels)
    beside_preferred = _preferred_terms(pod_affinity, "podAffinity", base, errors, warnings)
    pod_anti = shaped(
        affinity.get("podAntiAffinity"), dict, _at(base, "spec.affinity.podAntiAffinity"), errors
    )
    for key, rule, where, term in _required_terms(pod_anti, "podAntiAffinity", base, errors):
        if rule is None:
            continue
        if labels is not None:  # a pod: kube narrows the selector by its own values (a template's: broader)
            rule = _keyed(rule, term, where, labels, errors)
        if key == HOSTNAME:
            anti.append(rule)
        else:  # a zone, a rack: kept apart in that label's domain (solver/apart.py within a batch)
            domains.append(DomainRule(key=key, rule=rule))
    anti_preferred = _preferred_terms(pod_anti, "podAntiAffinity", base, errors, warnings)
    ports, bad = host_ports(spec)
    for where, code, message in bad:
        errors.append(issue(code, _at(base, f"spec.{where}"), message))
    # A host port is held on the node: a pod asking for it keeps off nodes whose pods hold it (NodePorts).
    anti += [LabelRule(key=k, operator=AffinityOperator.EXISTS) for k in sorted(ports)]
    tolerations: list[Toleration] = []
    for i, t in enumerate(as_list(spec.get("tolerations"))):
        where = _at(base, f"spec.tolerations[{i}]")
        if not isinstance(t, dict):
            errors.append(issue("type", where, "a toleration is an object"))
            continue
        try:
            tolerations.append(
                Toleration(
                    key=t.get("key") or None,
                    operator=t.get("operator", "Equal"),
                    value=t.get("value") or None,
                    effect=t.get("effect") or None,
                )
            )
        except ValidationError as err:
            errors.append(issue("range", where, str(err.errors()[0]["msg"])[:200]))
    return Placement(
        node_selector={str(k): v for k, v in selector.items()},
        required=required,
        preferred=preferred,
        anti_affinity=anti,
        anti_affinity_domains=domains,
        anti_affinity_preferred=anti_preferred,
        affinity_preferred=beside_preferred,
        affinity_required=beside,
        tolerations=tolerations,
    )


def _required_affinity(
    section: dict[str, Any],
    base: str,
    errors: list[Issue],
    namespace: str | None,
    labels: Mapping[str, str] | None = None,
) -> list[DomainRule]:
    """Required ``podAffinity`` terms as ``placement.affinity_required`` (kube-scheduler's InterPodAffinity
    filter, :mod:`placer.solver.affinity`): each term's ``topologyKey`` (``kubernetes.io/hostname`` read
    as the node's ``hostname``) and its label selector as a rule on job labels, ANDed with the namespaces
    it reads as a rule on ``tenant`` (a pod's namespace, for running pods and pods read here alike): the
    term's ``namespaces``, the pod's own ``namespace`` when it lists none, every namespace for an empty
    ``namespaceSelector``. A term without a selector, or with an empty one, is refused (``unsupported``):
    kube-scheduler matches no pod with the first and every pod with the second, neither a rule placer
    keeps; so is a ``namespaceSelector`` that selects (placer does not read namespaces' labels).
    ``matchLabelKeys`` and ``mismatchLabelKeys`` narrow the selector by the pod's own ``labels`` as kube
    does (:func:`_keyed`); in a pod template (no ``labels``) they are refused: read without them, the term
    would match pods kube's does not."""
    out: list[DomainRule] = []
    for key, rule, where, term in _required_terms(section, "podAffinity", base, errors):
        if rule is None or rule == AllOf(rules=[]):  # no selector, or one that selects every pod
            errors.append(
                issue("unsupported", f"{where}.labelSelector", "a required term selects the pods to join")
            )
            continue
        keyed = [k for k in ("matchLabelKeys", "mismatchLabelKeys") if term.get(k)]
        # A template's pods' labels are not its own to read here: without them the term matches more.
        if keyed and labels is None:
            errors.append(
                issue(
                    "unsupported",
                    f"{where}.{keyed[0]}",
                    "a required term's label keys are not represented in a pod template",
                )
            )
            continue
        if labels is not None:
            rule = _keyed(rule, term, where, labels, errors)
        selector = term.get("namespaceSelector")
        if selector is not None and not (isinstance(selector, dict) and not selector):
            errors.append(
                issue(
                    "unsupported",
                    f"{where}.namespaceSelector",
                    "placer does not read namespaces' labels; list the namespaces in namespaces",
                )
            )
            continue
        names = [
            n
            for n in shaped(term.get("namespaces"), list, f"{where}.namespaces", errors)
            if isinstance(n, str) and n
        ]
        if selector is None:
            inside = LabelRule(
                key="tenant",
                operator=AffinityOperator.IN,
                values=sorted(set(names) or {namespace or "default"}),
            )
            rules = rule.rules if isinstance(rule, AllOf) else [rule]
            rule = AllOf(rules=[*rules, inside])
        out.append(DomainRule(key="hostname" if key == HOSTNAME else key, rule=rule))
    return out


def _keyed(
    rule: Rule, term: dict[str, Any], where: str, labels: Mapping[str, str], errors: list[Issue]
) -> Rule:
    """``rule`` (a pod affinity or anti-affinity term's selector) narrowed as kube-scheduler narrows it by
    the pod's own labels: ``key In [the pod's value]`` for each of ``matchLabelKeys``, ``key NotIn [it]``
    for each of ``mismatchLabelKeys``; a key the pod lacks is ignored, as kube ignores it. A list that is
    not of strings is a ``type`` error naming it (the rule is returned as it is).

    >>> app = LabelRule(key="app", operator=AffinityOperator.IN, values=["web"])
    >>> term = {"matchLabelKeys": ["pod-template-hash"], "mismatchLabelKeys": ["tenant-id", "absent"]}
    >>> r = _keyed(app, term, "t", {"pod-template-hash": "5d8f", "tenant-id": "a"}, [])
    >>> [(x.key, x.operator.value, x.values) for x in r.rules]
    [('app', 'In', ['web']), ('pod-template-hash', 'In', ['5d8f']), ('tenant-id', 'NotIn', ['a'])]
    """
    extra: list[Rule] = []
    for field, op in (
        ("matchLabelKeys", AffinityOperator.IN),
        ("mismatchLabelKeys", AffinityOperator.NOT_IN),
    ):
        keys = term.get(field)
        if keys is None:
            continue
        if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
            errors.append(issue("type", f"{where}.{field}", "a list of label keys"))
            continue
        extra += [LabelRule(key=k, operator=op, values=[labels[k]]) for k in keys if k in labels]
    if not extra:
        return rule
    return AllOf(rules=[*(rule.rules if isinstance(rule, AllOf) else [rule]), *extra])


def _required_terms(
    section: dict[str, Any], kind: str, base: str, errors: list[Issue]
) -> Iterator[tuple[str, Rule | None, str, dict[str, Any]]]:
    """Each required ``kind`` (``podAffinity``, ``podAntiAffinity``) term as its topology key, its label
    selector as one rule (None when it names no requirement), its path and the term itself; a term naming
    no key is an error, and skipped."""
    field = f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution"
    listed = shaped(
        section.get("requiredDuringSchedulingIgnoredDuringExecution"), list, _at(base, field), errors
    )
    for i, t in enumerate(listed):
        where = _at(base, f"{field}[{i}]")
        key = t.get("topologyKey") if isinstance(t, dict) else None
        if not isinstance(key, str) or not key:
            errors.append(
                issue("type", f"{where}.topologyKey", "a term names its topology key (a node label)")
            )
            continue
        sel = shaped(t.get("labelSelector"), dict, f"{where}.labelSelector", errors)
        rules = _selector(sel, f"{where}.labelSelector", errors)
        if isinstance(t.get("labelSelector"), dict) and not rules:  # {} selects every pod (kube), not none
            yield key, AllOf(rules=[]), where, t
            continue
        rule = None if not rules else rules[0] if len(rules) == 1 else AllOf(rules=rules)
        yield key, rule, where, t


#: ``nodeAffinityPolicy`` of a spread constraint -> whether the pod's node rules decide which nodes count.
NODE_AFFINITY_POLICIES = {"Honor": True, "Ignore": False}
#: ``nodeTaintsPolicy`` of a spread constraint -> whether nodes with taints the pod does not tolerate are left
#: out of the counts.
NODE_TAINTS_POLICIES = {"Honor": True, "Ignore": False}


def _spread(
    constraints: list[Any], base: str, errors: list[Issue], namespace: str | None, labels: Mapping[str, str]
) -> list[SpreadRule]:
    """A pod's ``DoNotSchedule`` topology spread constraints as ``placement.spread_required``
    (kube-scheduler's PodTopologySpread filter, :mod:`placer.solver.skew`): ``topologyKey``
    (``kubernetes.io/hostname`` read as the node's ``hostname``), ``maxSkew``, ``minDomains``,
    ``nodeAffinityPolicy`` (``Honor``, the default, or ``Ignore``), and the label selector as a rule on job
    labels ANDed with the pod's namespace (kube counts the pods of its namespace), and with each key of
    ``matchLabelKeys`` the pod has, at the pod's value (kube adds them to the selector; a key the pod lacks
    is ignored, as kube ignores it), and ``nodeTaintsPolicy`` (``Ignore``, the default, or ``Honor``).
    ``ScheduleAnyway`` ones are read past (a warning, by the caller). A constraint without a selector counts
    no pod, as kube's nil selector selects none: it only keeps the pod to nodes that have the key."""
    out: list[SpreadRule] = []
    for i, c in enumerate(constraints):
        where = _at(base, f"spec.topologySpreadConstraints[{i}]")
        if not isinstance(c, dict):
            errors.append(issue("type", where, "a spread constraint is an object"))
            continue
        if c.get("whenUnsatisfiable") == "ScheduleAnyway":
            continue
        if c.get("whenUnsatisfiable") != "DoNotSchedule":
            errors.append(issue("enum", f"{where}.whenUnsatisfiable", "DoNotSchedule or ScheduleAnyway"))
            continue
        key, skew, least = c.get("topologyKey"), c.get("maxSkew"), c.get("minDomains")
        start = len(errors)
        if not isinstance(key, str) or not key:
            errors.append(
                issue("type", f"{where}.topologyKey", "a constraint names its topology key (a node label)")
            )
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
            errors.append(issue("range", f"{where}.maxSkew", "an integer of at least 1"))
        if least is not None and (not isinstance(least, int) or isinstance(least, bool) or least < 1):
            errors.append(issue("range", f"{where}.minDomains", "an integer of at least 1"))
        policy = c.get("nodeAffinityPolicy", "Honor")
        if not isinstance(policy, str) or policy not in NODE_AFFINITY_POLICIES:
            errors.append(issue("enum", f"{where}.nodeAffinityPolicy", "Honor or Ignore"))
        taints = c.get("nodeTaintsPolicy", "Ignore")
        if not isinstance(taints, str) or taints not in NODE_TAINTS_POLICIES:
            errors.append(issue("enum", f"{where}.nodeTaintsPolicy", "Honor or Ignore"))
        sel = c.get("labelSelector")
        if sel is not None and not isinstance(sel, dict):
            errors.append(issue("type", f"{where}.labelSelector", "a label selector is an object"))
        if len(errors) > start:
            continue
        rule: Rule = AnyOf(rules=[])  # no selector counts no pod (kube's nil selector): the key alone binds
        if isinstance(sel, dict):
            rules = _selector(sel, f"{where}.labelSelector", errors)
            keys = c.get("matchLabelKeys") or []
            if not isinstance(keys, list) or not all(isinstance(k, str) and k for k in keys):
                errors.append(issue("type", f"{where}.matchLabelKeys", "a list of label keys"))
                continue
            rules += [
                LabelRule(key=k, operator=AffinityOperator.IN, values=[labels[k]])
                for k in keys
                if k in labels
            ]
            rules.append(
                LabelRule(key="tenant", operator=AffinityOperator.IN, values=[namespace or "default"])
            )
            rule = AllOf(rules=rules)
        assert isinstance(key, str) and isinstance(skew, int)
        out.append(
            SpreadRule(
                key="hostname" if key == HOSTNAME else key,
                max_skew=skew,
                rule=rule,
                min_domains=least,
                honor_node_rules=NODE_AFFINITY_POLICIES[policy],
                honor_taints=NODE_TAINTS_POLICIES[taints],
            )
        )
    return out


def _claimed_volumes(spec: dict[str, Any], base: str, warnings: list[Issue]) -> None:
    """A volume from a PersistentVolumeClaim (or a generic ephemeral one) may hold the pod to the nodes its
    PersistentVolume reaches — a zone, a node for a local volume — which kube-scheduler's
    ``VolumeBinding`` and ``VolumeZone`` filters keep. placer does not read PersistentVolumes or
    StorageClasses, so it cannot check that: said with a warning per such volume, never in silence."""
    for i, v in enumerate(as_list(spec.get("volumes"))):
        if not isinstance(v, dict):
            continue
        for kind in ("persistentVolumeClaim", "ephemeral"):
            if kind in v:
                warnings.append(
                    issue(
                        "unsupported",
                        _at(base, f"spec.volumes[{i}].{kind}"),
                        "the claim's volume may keep the pod to some nodes (its zone, or one node for a "
                        "local volume); placer does not read PersistentVolumes, so it does not check them",
                    )
                )


def _selector(sel: dict[str, Any], path: str, errors: list[Issue]) -> list[Rule]:
    """A pod label selector (``matchLabels`` pairs and ``matchExpressions``, ANDed) as rules on job labels;
    problems appended under ``path``."""
    pairs = sel.get("matchLabels")
    if pairs is not None and not (
        isinstance(pairs, dict)
        and all(isinstance(k, str) and k and isinstance(v, str) for k, v in pairs.items())
    ):  # read past, a pair would leave the selector matching more
        errors.append(issue("type", f"{path}.matchLabels", "an object of label keys and string values"))
        pairs = {}
    rules: list[Rule] = [
        LabelRule(key=k, operator=AffinityOperator.IN, values=[v]) for k, v in (pairs or {}).items()
    ]
    return rules + _expressions(sel.get("matchExpressions"), f"{path}.matchExpressions", errors)


def _preferred_terms(
    section: dict[str, Any], kind: str, base: str, errors: list[Issue], warnings: list[Issue]
) -> list[LabelRule]:
    """``podAffinity`` or ``podAntiAffinity`` (``kind``) preferred terms (kube-scheduler's InterPodAffinity
    scoring) as preferred rules on the jobs beside a replica, with the term's weight: a term on
    ``kubernetes.io/hostname`` whose label selector is one requirement (one ``matchLabels`` pair or one
    ``matchExpressions`` entry). Another term is read past with a warning: a preference never keeps a pod
    out, so placing it without the term is a placement kube-scheduler could make too."""
    out: list[LabelRule] = []
    field = f"spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution"
    for i, p in enumerate(as_list(section.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        where = _at(base, f"{field}[{i}]")
        weight = p.get("weight") if isinstance(p, dict) else None
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            errors.append(issue("range", f"{where}.weight", "a preferred term has a weight 1-100"))
            continue
        term = as_map(p.get("podAffinityTerm"))
        if term.get("topologyKey") != HOSTNAME:
            warnings.append(
                _soft(f"{where}.podAffinityTerm.topologyKey", f"a term on another key than {HOSTNAME}")
            )
            continue
        rules = _selector(as_map(term.get("labelSelector")), f"{where}.podAffinityTerm.labelSelector", errors)
        if len(rules) != 1 or not isinstance(rules[0], LabelRule):
            warnings.append(
                _soft(f"{where}.podAffinityTerm.labelSelector", "a selector of several requirements")
            )
            continue
        out.append(rules[0].model_copy(update={"weight": weight}))
    return out
