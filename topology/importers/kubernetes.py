"""Kubernetes ``kubectl get nodes -o json`` (and optionally ``kubectl get pods -A -o json``) -> Inventory.

Why: most GPU/TPU clusters are Kubernetes clusters, and the node objects already carry everything placer
needs, in labels written by NVIDIA GPU Feature Discovery (GFD), GKE and the cloud providers. Mapping rules
(also in ``docs/importers.md``):

* **Resources** come from ``status.allocatable`` (``status.capacity`` when absent): ``cpu``, ``memory``,
  ``ephemeral-storage`` as Kubernetes quantities (:mod:`placer.topology.importers.quantity`), memory and
  storage in
  GB of 2**30 bytes; GPUs from ``nvidia.com/gpu``, or ``amd.com/gpu`` (AMD's device plugin; the type from
  AMD's labeller's ``amd.com/gpu.product-name``, ``amd-unknown-gpu`` without it; a node with both is a
  problem). With GPU time-slicing (``nvidia.com/gpu.replicas`` > 1)
  the allocatable count is inflated, so the physical ``nvidia.com/gpu.count`` label is used instead.
* **GPU facts** from GFD labels: ``nvidia.com/gpu.product`` (through the catalog, keeping what the
  product string says of memory and PCIe; GKE's ``cloud.google.com/gke-accelerator`` when GFD is not
  installed; ``unknown-gpu`` when neither is there), ``nvidia.com/gpu.memory`` (MiB, usable memory: read as
  the nominal size it is just under, see :func:`~placer.topology.importers._common.gpu_fields`),
  ``nvidia.com/gpu.compute.major``/``.minor``, and
  ``nvidia.com/gpu.clique`` (GB200 NVL72 / multi-node NVLink): the clique id is the node's
  ``nvlink_domain`` and its interconnect ``nvlink``.
* **Topology**: ``topology.kubernetes.io/zone``/``region``; GCE ``cloud.google.com/gce-topology-block`` ->
  ``block``, ``.../gce-topology-subblock`` -> ``rack`` (the next level down); ``.../gce-topology-host`` stays
  a label.
* **State**: ``spec.unschedulable`` -> not schedulable; a ``Ready`` condition that is not ``True`` -> not
  ready (no conditions at all -> ready, as stripped exports have none); taints are kept as they are —
  the ``nvidia.com/gpu`` / ``amd.com/gpu`` / ``google.com/tpu`` taints of accelerator pools included: a job
  that requests the resource tolerates them (ExtendedResourceToleration), others do not, so CPU work stays
  off GPU nodes as Kubernetes keeps it. A TPU host's other NoSchedule/NoExecute taints make its slice
  unschedulable (TPU slices carry no taints of their own).
* **Capacity class** ``spot`` when ``cloud.google.com/gke-spot``/``gke-preemptible`` is ``true``,
  ``cloud.google.com/gke-provisioning`` is ``spot``, ``eks.amazonaws.com/capacityType`` is ``SPOT``,
  ``karpenter.sh/capacity-type`` is ``spot`` (``reserved`` -> reserved), or
  ``kubernetes.azure.com/scalesetpriority`` is ``spot``.
* **GKE TPUs**: nodes labelled ``cloud.google.com/gke-tpu-accelerator`` are not GPU/CPU nodes but TPU
  hosts. The nodes of one node pool (``cloud.google.com/gke-nodepool``) whose chips (``google.com/tpu``)
  are fewer than the ``cloud.google.com/gke-tpu-topology`` mesh form one multi-host slice (a
  ``TpuPodSpec`` with ``fixed_slice`` and ``hosts``), ready only when every host is there and ready. A node
  that alone holds the whole mesh (single-host machine types) is its own fixed slice named after the node.
* **Pods** (optional): pods bound to a node (``spec.nodeName``) in phase Running or Pending (or Unknown)
  hold resources. A pod's request is Kubernetes' effective request: the larger of the sum over containers
  (plus restartable init "sidecar" containers) and the largest init container, plus ``spec.overhead``;
  GPUs from the ``nvidia.com/gpu`` limit. Kubernetes does not tell which GPU a pod got, so pods receive
  the lowest free GPU indices of their node, pods taken in (namespace, name) order. TPU pods receive the
  chips of their host: hosts of a slice, sorted by name, own the slice's host-sized blocks in row-major
  order. Pods with one controller (``ownerReferences`` with ``controller: true``) form one running job
  ``namespace/owner``; other pods are their own job ``namespace/pod``, preemptible unless their class is
  reserved (kube-scheduler may preempt any pod for one of higher priority). ``spec.priority`` -> priority;
  ``priorityClassName`` -> priority class by :func:`priority_class_for`; ``kueue.x-k8s.io/queue-name``
  label -> queue; namespace -> tenant. Pods on nodes that are not in the node list, pods that request
  nothing, and pods on TPU hosts that hold no chips (a slice tracks chips, not host CPU) are counted in
  ``Inventory.metadata["pods_skipped"]`` instead. A running pod's required pod anti-affinity on
  ``kubernetes.io/hostname`` binds incoming pods, as kube-scheduler's ``InterPodAffinity`` filter holds
  existing pods' terms against the incoming one: its label selector becomes the running job's
  ``anti_affinity`` (:func:`running_anti_affinity`); a term on another topology key (a zone, a rack
  label) its ``anti_affinity_domains``, which keep matching jobs out of that label's domain of each of
  its nodes. A term whose selector cannot be read as rules cannot be kept, and its job is named in
  ``Inventory.metadata["anti_affinity_not_kept"]`` with the key.

>>> inv = parse_kubernetes({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1",
...     "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}, "status": {"allocatable":
...     {"cpu": "207690m", "memory": "1871Gi", "nvidia.com/gpu": "8"}}}]}, source="nodes.json")
>>> n = inv.nodes[0]
>>> (n.cpu_cores, n.memory_gb, n.gpus.type, n.gpus.count)
(207.69, 1871.0, 'nvidia-h100', 8)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from itertools import product
from typing import Any

from placer.topology.catalog import parse_shape, tpu_generation_from_gke, tpu_info
from placer.topology.extended import POD_SLOTS, is_kubernetes_extra
from placer.topology.importers._common import (
    GB,
    UNKNOWN_AMD_GPU,
    UNKNOWN_GPU,
    Problems,
    child_map,
    gpu_fields,
    join_item,
    short,
)
from placer.topology.importers.kubernetes_disruption import KIND as PDB_KIND
from placer.topology.importers.kubernetes_disruption import allowances, read_budgets, violations
from placer.topology.importers.quantity import parse_quantity
from placer.topology.importers.text import parse_text
from placer.topology.inventory import (
    DomainAntiAffinity,
    Inventory,
    NodeSpec,
    ReplicaAllocation,
    RunningJob,
    TpuPodSpec,
)

__all__ = [
    "ACCELERATOR_TAINTS",
    "DEFAULT_LEVEL_LABELS",
    "FORMAT",
    "GPU_RESOURCE",
    "HOST_PORT_LABEL",
    "LEVELS",
    "L_BLOCK",
    "L_CLIQUE",
    "L_COUNT",
    "L_GKE_GPU",
    "L_MAJOR",
    "L_MEMORY",
    "L_MINOR",
    "L_NODEPOOL",
    "L_PRODUCT",
    "L_QUEUE",
    "L_REGION",
    "L_REPLICAS",
    "L_SUBBLOCK",
    "L_TPU_ACCEL",
    "L_TPU_TOPOLOGY",
    "L_ZONE",
    "TPU_RESOURCE",
    "host_ports",
    "kueue_topology_levels",
    "level_labels",
    "parse_kubernetes",
    "pod_request",
    "priority_class_for",
    "running_anti_affinity",
]

FORMAT = "kubernetes"

GPU_RESOURCE = "nvidia.com/gpu"
#: AMD's device plugin's resource, and the product label of AMD's node labeller (``-product-name``; older
#: labellers write it under ``beta.amd.com/``).
AMD_GPU_RESOURCE = "amd.com/gpu"
L_AMD_PRODUCT = ("amd.com/gpu.product-name", "beta.amd.com/gpu.product-name")
TPU_RESOURCE = "google.com/tpu"
L_PRODUCT = "nvidia.com/gpu.product"
L_COUNT = "nvidia.com/gpu.count"
L_MEMORY = "nvidia.com/gpu.memory"
L_MAJOR = "nvidia.com/gpu.compute.major"
L_MINOR = "nvidia.com/gpu.compute.minor"
L_CLIQUE = "nvidia.com/gpu.clique"
L_REPLICAS = "nvidia.com/gpu.replicas"
L_GKE_GPU = "cloud.google.com/gke-accelerator"
L_TPU_ACCEL = "cloud.google.com/gke-tpu-accelerator"
L_TPU_TOPOLOGY = "cloud.google.com/gke-tpu-topology"
L_NODEPOOL = "cloud.google.com/gke-nodepool"
L_ZONE = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
L_REGION = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
L_BLOCK = "cloud.google.com/gce-topology-block"
L_SUBBLOCK = "cloud.google.com/gce-topology-subblock"
L_QUEUE = "kueue.x-k8s.io/queue-name"
#: Kinds the job reader takes from the same List (workloads and priority classes): read past here, counted
#: in ``metadata["pods_skipped"]``; their running state is in their pods.
NOT_PODS = frozenset(
    {"Job", "JobSet", "Workload", "LeaderWorkerSet", "PriorityClass", "WorkloadPriorityClass"}
)
#: Taints that accelerator pods tolerate automatically (ExtendedResourceToleration); not imported.
ACCELERATOR_TAINTS = {GPU_RESOURCE, TPU_RESOURCE}
_TAINT_EFFECTS = {"NoSchedule", "PreferNoSchedule", "NoExecute"}
_HOLDING_PHASES = {"Running", "Pending", "Unknown", None}


@dataclass
class _Node:
    """What one Node object says, before GPU and TPU nodes go their separate ways."""

    index: int
    item: str
    spec: dict[str, Any]
    tpu_accelerator: str | None = None
    tpu_topology: str | None = None
    tpu_chips: int = 0
    pool: str | None = None
    blocking_taints: list[str] = field(default_factory=list)


@dataclass
class _TpuHost:
    """Where a TPU host's chips sit: the slice's name and the host's chip coordinates."""

    pod: str
    chips: list[list[int]]


#: Node labels of the common clouds read as topology levels by default (first present wins), below the
#: zone: GKE's compact-placement block and sub-block, EKS's instance-topology network layers (layer 1 is
#: the farthest from the node), CoreWeave's NVLink domain and physical rack (``node.coreweave.cloud/rack``)
#: as racks and its InfiniBand superpod (``ib.coreweave.cloud/superpod``) as a block. AKS publishes no
#: rack or block label (only the zone), so none is assumed for it.
DEFAULT_LEVEL_LABELS: dict[str, tuple[str, ...]] = {
    "block": (L_BLOCK, "topology.k8s.aws/network-node-layer-2", "ib.coreweave.cloud/superpod"),
    "rack": (
        L_SUBBLOCK,
        "topology.k8s.aws/network-node-layer-3",
        "ds.coreweave.com/nvlink.domain",
        "node.coreweave.cloud/rack",
    ),
}
#: Levels a label may be mapped to (``--topology-labels``, a Kueue ``Topology``).
LEVELS = ("zone", "block", "rack")


def level_labels(mapping: Mapping[str, str] | None) -> dict[str, tuple[str, ...]]:
    """Label keys per level: ``mapping`` (label -> level) first, then the defaults; the zone keeps the
    well-known zone labels after any label mapped to it.

    >>> level_labels({"example.com/rack": "rack"})["rack"][:2]
    ('example.com/rack', 'cloud.google.com/gce-topology-subblock')
    """
    out: dict[str, tuple[str, ...]] = {"zone": L_ZONE, **DEFAULT_LEVEL_LABELS}
    for label, level in (mapping or {}).items():
        out[level] = (label, *(x for x in out.get(level, ()) if x != label))
    return out


def kueue_topology_levels(obj: Any) -> dict[str, str]:
    """A Kueue ``Topology`` (``spec.levels[].nodeLabel``, broadest first) as label -> level: the levels
    above ``kubernetes.io/hostname`` are, from the node up, rack, block, zone (a fourth is refused).

    >>> kueue_topology_levels({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Topology", "spec": {"levels":
    ...     [{"nodeLabel": "cloud.google.com/gce-topology-block"}, {"nodeLabel": "example.com/rack"},
    ...      {"nodeLabel": "kubernetes.io/hostname"}]}})
    {'example.com/rack': 'rack', 'cloud.google.com/gce-topology-block': 'block'}
    """
    if not isinstance(obj, dict) or obj.get("kind") != "Topology":
        raise ValueError("not a Kueue Topology (kind: Topology)")
    levels = (obj.get("spec") or {}).get("levels") if isinstance(obj.get("spec"), dict) else None
    if not isinstance(levels, list) or not levels:
        raise ValueError("spec.levels must be a non-empty list")
    labels = []
    for i, lv in enumerate(levels):
        label = lv.get("nodeLabel") if isinstance(lv, dict) else None
        if not isinstance(label, str) or not label:
            raise ValueError(f"spec.levels[{i}].nodeLabel must be a label key")
        labels.append(label)
    if labels[-1] == "kubernetes.io/hostname":
        labels = labels[:-1]
    if len(labels) > len(LEVELS):
        raise ValueError(
            f"{len(labels)} levels above the node; placer knows {len(LEVELS)} (zone, block, rack)"
        )
    return {label: level for label, level in zip(reversed(labels), reversed(LEVELS), strict=False)}


def parse_kubernetes(
    nodes: Any,
    pods: Any = None,
    *,
    source: str,
    pods_source: str | None = None,
    levels: Mapping[str, str] | None = None,
) -> Inventory:
    """``kubectl get nodes -o json`` (object or JSON/YAML text), and optionally ``kubectl get pods -A -o
    json``, -> Inventory. Raises :class:`~placer.topology.errors.TopologyError` naming each bad item.

    >>> parse_kubernetes({"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n1"},
    ...     "status": {"allocatable": {"memory": "12Zi"}}}]}, source="nodes.json")
    Traceback (most recent call last):
    ...
    placer.topology.errors.TopologyError: nodes.json: items[0] (n1): status.allocatable.memory: '12Zi' is ...
    """
    problems = Problems(source)
    obj = parse_text(nodes, source=source) if isinstance(nodes, str) else nodes
    records: list[_Node] = []
    seen: set[str] = set()
    by_level = level_labels(levels)
    for index, item_obj in enumerate(_items(obj, "Node", problems)):
        record = _node(index, item_obj, problems, by_level)
        if record is None:
            continue
        name = record.spec["name"]
        if name in seen:
            problems.add(record.item, f"node name {name!r} is used twice")
            continue
        seen.add(name)
        records.append(record)
    problems.check()

    node_specs: list[NodeSpec] = []
    for record in records:
        if record.tpu_accelerator is None:
            spec = problems.model(NodeSpec, record.spec, record.item)
            if spec is not None:
                node_specs.append(spec)
    tpu_pods, tpu_hosts = _tpu_slices([r for r in records if r.tpu_accelerator], problems)
    problems.check()

    metadata: dict[str, Any] = {"format": FORMAT, "source": source}
    running: list[RunningJob] = []
    if pods is not None:
        psource = pods_source or source
        pproblems = Problems(psource)
        pods_obj = parse_text(pods, source=psource) if isinstance(pods, str) else pods
        running = _running(pods_obj, {n.name: n for n in node_specs}, tpu_hosts, pproblems, metadata)
        pproblems.check()
    inv = problems.model(
        Inventory,
        {"nodes": node_specs, "tpu_pods": tpu_pods, "running": running, "metadata": metadata},
        "document",
    )
    problems.check()
    assert inv is not None
    return inv


def _items(obj: Any, kind: str, problems: Problems) -> list[Any]:
    """The objects of a ``List``/``NodeList``/``PodList``, a bare list, or one object of ``kind``."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, dict):
        if obj.get("kind") == kind:
            return [obj]
        if "items" in obj:
            items = obj["items"]
            if not isinstance(items, list):
                problems.add("items", f"'items' must be a list, got {short(items)}")
                return []
            return items
    problems.add("document", f"expected a Kubernetes List of {kind} objects, got {short(obj)}")
    return []


def _quantity(res: dict[str, Any], key: str, item: str, problems: Problems, where: str) -> Decimal | None:
    if key not in res:
        return None
    try:
        value = parse_quantity(res[key])
    except ValueError as e:
        problems.add(item, f"{where}.{key}: {e}")
        return None
    if value < 0:
        problems.add(item, f"{where}.{key}: {res[key]!r} is negative")
        return None
    return value


def _count(value: Decimal | None, key: str, item: str, problems: Problems) -> int:
    if value is None:
        return 0
    if value != value.to_integral_value():
        problems.add(item, f"{key} {value} is not a whole number of devices")
        return 0
    return int(value)


def _node(
    index: int, obj: Any, problems: Problems, by_level: Mapping[str, tuple[str, ...]] | None = None
) -> _Node | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    raw_name = meta.get("name") if isinstance(meta, dict) else None
    item = join_item("items", index, raw_name if isinstance(raw_name, str) else None)
    if not isinstance(obj, dict):
        problems.add(item, f"a node must be an object, got {short(obj)}")
        return None
    if obj.get("kind", "Node") != "Node":
        problems.add(item, f"kind is {short(obj.get('kind'))}, expected 'Node'")
        return None
    before = len(problems.items)
    meta = problems.mapping(obj, "metadata", item, required=True) or {}
    name = problems.string(meta, "name", item, required=True)
    labels = problems.string_map(meta, "labels", item)
    spec_obj = problems.mapping(obj, "spec", item) or {}
    status = problems.mapping(obj, "status", item) or {}
    resources = problems.mapping(status, "allocatable", item)
    where = "status.allocatable"
    if resources is None:
        resources, where = problems.mapping(status, "capacity", item) or {}, "status.capacity"
    cpu = _quantity(resources, "cpu", item, problems, where)
    memory = _quantity(resources, "memory", item, problems, where)
    storage = _quantity(resources, "ephemeral-storage", item, problems, where)
    gpus = _count(_quantity(resources, GPU_RESOURCE, item, problems, where), GPU_RESOURCE, item, problems)
    amd = _count(
        _quantity(resources, AMD_GPU_RESOURCE, item, problems, where), AMD_GPU_RESOURCE, item, problems
    )
    if gpus and amd:
        problems.add(
            item, f"{where} has both {GPU_RESOURCE} and {AMD_GPU_RESOURCE}: a node holds one GPU type"
        )
    chips = _count(_quantity(resources, TPU_RESOURCE, item, problems, where), TPU_RESOURCE, item, problems)
    extra = _extra(resources, item, problems, where)
    taints, blocking = _taints(spec_obj.get("taints"), item, problems)
    unschedulable = spec_obj.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        problems.add(item, f"spec.unschedulable must be true or false, got {short(unschedulable)}")
    ready = _ready(status.get("conditions"), item, problems)
    if name is None or len(problems.items) > before:
        return None

    spec: dict[str, Any] = {
        "name": name,
        "zone": _first(labels, (by_level or level_labels(None))["zone"]),
        "region": _first(labels, L_REGION),
        "block": _first(labels, (by_level or level_labels(None))["block"]),
        "rack": _first(labels, (by_level or level_labels(None))["rack"]),
        "cpu_cores": float(cpu or 0),
        "memory_gb": float((memory or 0) / GB),
        "storage_gb": None if storage is None else float(storage / GB),
        "labels": labels,
        "taints": taints,
        "schedulable": not unschedulable,
        "ready": ready,
        "capacity_class": _capacity_class(labels),
    }
    if extra:
        spec["extra"] = extra
    record = _Node(index=index, item=item, spec=spec, blocking_taints=blocking)
    if L_TPU_ACCEL in labels:
        record.tpu_accelerator = labels[L_TPU_ACCEL]
        record.tpu_topology = labels.get(L_TPU_TOPOLOGY)
        record.tpu_chips = chips
        record.pool = labels.get(L_NODEPOOL)
        return record
    gpu = _amd_gpus(labels, amd) if amd and not gpus else _gpus(labels, gpus, item, problems)
    if gpu is not None:
        spec["gpus"] = gpu
    return record if len(problems.items) == before else None


def _extra(resources: dict[str, Any], item: str, problems: Problems, where: str) -> dict[str, float]:
    """The counted resources of a node's allocatable beyond its own fields (:func:`is_kubernetes_extra`):
    extended resources as whole counts, huge pages in bytes, and ``pods``, the most pods the kubelet runs
    (:data:`POD_SLOTS`); zeros left out."""
    out: dict[str, float] = {}
    for key in sorted(
        k for k in resources if isinstance(k, str) and (is_kubernetes_extra(k) or k == POD_SLOTS)
    ):
        value = _quantity(resources, key, item, problems, where)
        if value is None:
            continue
        amount = (
            float(value) if key.startswith("hugepages-") else _count(value, f"{where}.{key}", item, problems)
        )
        if amount > 0:
            out[key] = amount
    return out


def _first(labels: dict[str, str], keys: tuple[str, ...]) -> str | None:
    return next((labels[k] for k in keys if k in labels), None)


def _taints(raw: Any, item: str, problems: Problems) -> tuple[list[dict[str, Any]], list[str]]:
    """The node's taints, and the keys of those that make a TPU host's slice unschedulable."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        problems.add(item, f"spec.taints must be a list, got {short(raw)}")
        return [], []
    kept: list[dict[str, Any]] = []
    blocking: list[str] = []
    for i, taint in enumerate(raw):
        where = f"{item} spec.taints[{i}]"
        if not isinstance(taint, dict):
            problems.add(where, f"a taint must be an object, got {short(taint)}")
            continue
        key = problems.string(taint, "key", where, required=True)
        value = taint.get("value")
        effect = taint.get("effect")
        if value is not None and not isinstance(value, str):
            problems.add(where, f"value must be a string, got {short(value)}")
        if not isinstance(effect, str) or effect not in _TAINT_EFFECTS:
            problems.add(where, f"effect {short(effect)} is not one of {sorted(_TAINT_EFFECTS)}")
            continue
        if key is None:
            continue
        kept.append({"key": key, "value": value or None, "effect": effect})
        if effect != "PreferNoSchedule" and key not in ACCELERATOR_TAINTS:
            blocking.append(key)  # (a TPU host's google.com/tpu taint is tolerated by every TPU job)
    return kept, blocking


def _ready(conditions: Any, item: str, problems: Problems) -> bool:
    if conditions is None:
        return True
    if not isinstance(conditions, list):
        problems.add(item, f"status.conditions must be a list, got {short(conditions)}")
        return False
    for cond in conditions:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return True


def _capacity_class(labels: dict[str, str]) -> str:
    """Spot/reserved/on-demand from the cloud providers' node labels (see the module docstring).

    >>> _capacity_class({"eks.amazonaws.com/capacityType": "SPOT"}), _capacity_class({})
    ('spot', 'on-demand')
    """
    low = {k: v.strip().lower() for k, v in labels.items()}
    if (
        low.get("cloud.google.com/gke-spot") == "true"
        or low.get("cloud.google.com/gke-preemptible") == "true"
        or low.get("cloud.google.com/gke-provisioning") == "spot"
        or low.get("eks.amazonaws.com/capacityType") == "spot"
        or low.get("karpenter.sh/capacity-type") == "spot"
        or low.get("kubernetes.azure.com/scalesetpriority") == "spot"
    ):
        return "spot"
    if low.get("karpenter.sh/capacity-type") == "reserved":
        return "reserved"
    return "on-demand"


def _label_int(labels: dict[str, str], key: str, item: str, problems: Problems) -> int | None:
    if key not in labels:
        return None
    text = labels[key].strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        problems.add(item, f"label {key} {labels[key]!r} is not a whole number")
        return None
    return int(text)


def _gpus(labels: dict[str, str], allocatable: int, item: str, problems: Problems) -> dict[str, Any] | None:
    count = allocatable
    replicas = _label_int(labels, L_REPLICAS, item, problems)
    physical = _label_int(labels, L_COUNT, item, problems)
    if replicas is not None and replicas > 1 and physical is not None:
        count = physical  # time-slicing advertises count x replicas; placer schedules whole GPUs
    product = labels.get(L_PRODUCT) or labels.get(L_GKE_GPU)
    if count == 0 and product is None:
        return None
    memory_mib = _label_int(labels, L_MEMORY, item, problems)
    measured = memory_mib / 1024 if memory_mib else None
    gpu: dict[str, Any] = gpu_fields(product, measured) if product else {"type": UNKNOWN_GPU}
    if not product and measured is not None:
        gpu["memory_gb"] = round(measured, 3)
    gpu["count"] = count
    major = _label_int(labels, L_MAJOR, item, problems)
    minor = _label_int(labels, L_MINOR, item, problems)
    if major is not None and minor is not None:
        gpu["compute_capability"] = f"{major}.{minor}"
    clique = labels.get(L_CLIQUE, "").strip()
    if clique:
        gpu["nvlink_domain"] = clique
        gpu["interconnect"] = "nvlink"
    return gpu


def _amd_gpus(labels: dict[str, str], count: int) -> dict[str, Any]:
    """An AMD node's GPUs (``amd.com/gpu``): the type from the labeller's product name
    (``AMD_Instinct_MI300X_OAM`` is ``amd-mi300x``), else :data:`UNKNOWN_AMD_GPU` — still an AMD type, so
    an ``nvidia.com/gpu`` pod never lands on it, while an ``amd.com/gpu`` pod may."""
    product = _first(labels, L_AMD_PRODUCT)
    fields = gpu_fields(product) if product else {}
    if not str(fields.get("type", "")).startswith("amd-"):
        fields = {"type": UNKNOWN_AMD_GPU}
    return {**fields, "count": count}


def _tpu_slices(records: list[_Node], problems: Problems) -> tuple[list[TpuPodSpec], dict[str, _TpuHost]]:
    """GKE TPU nodes -> fixed slices; also where each host's chips sit, for the pods."""
    pools: dict[str, list[_Node]] = {}
    for r in records:
        generation = tpu_generation_from_gke(r.tpu_accelerator or "")
        shape = parse_shape(r.tpu_topology) if r.tpu_topology else None
        if generation is None:
            problems.add(r.item, f"{L_TPU_ACCEL} {r.tpu_accelerator!r} is not a known GKE TPU accelerator")
            continue
        if shape is None or len(shape) < 2:
            problems.add(r.item, f"{L_TPU_TOPOLOGY} {short(r.tpu_topology)} is missing or not like '2x4'")
            continue
        if r.tpu_chips == 0:
            problems.add(r.item, f"TPU node has no {TPU_RESOURCE} in status.allocatable")
            continue
        pools.setdefault(r.pool or r.spec["name"], []).append(r)
    out: list[TpuPodSpec] = []
    hosts: dict[str, _TpuHost] = {}
    for pool, members in pools.items():
        first = members[0]
        accel, topo = first.tpu_accelerator, first.tpu_topology
        odd = [m for m in members if (m.tpu_accelerator, m.tpu_topology) != (accel, topo)]
        for m in odd:
            problems.add(m.item, f"node pool {pool!r} mixes TPU types/topologies ({accel} {topo} first)")
        if odd:
            continue
        generation = tpu_generation_from_gke(accel or "") or ""
        mesh = list(parse_shape(topo or "") or ())
        total = math.prod(mesh)
        singles = [m for m in members if m.tpu_chips == total]
        if len(singles) == len(members):  # single-host machines: each node is a whole slice
            for m in members:
                spec = _slice(m.spec["name"], generation, mesh, [m], problems, m.item)
                if spec is not None:
                    out.append(spec)
                    hosts[m.spec["name"]] = _TpuHost(spec.name, _coords(mesh))
            continue
        per_host = first.tpu_chips
        if any(m.tpu_chips != per_host for m in members) or total % per_host:
            problems.add(first.item, f"node pool {pool!r}: hosts hold unequal chip counts for a {topo} mesh")
            continue
        if len(members) > total // per_host:
            problems.add(
                first.item,
                f"node pool {pool!r} has {len(members)} hosts but a {topo} slice of {per_host}-chip hosts "
                f"has {total // per_host}",
            )
            continue
        spec = _slice(pool, generation, mesh, members, problems, first.item)
        if spec is None:
            continue
        if len(members) < total // per_host:
            spec = spec.model_copy(update={"ready": False})  # a multi-host slice missing hosts cannot run
        out.append(spec)
        blocks = _host_blocks(generation, mesh, per_host)
        for i, m in enumerate(sorted(members, key=lambda x: x.spec["name"])):
            hosts[m.spec["name"]] = _TpuHost(pool, blocks[i] if i < len(blocks) else [])
    return out, hosts


def _slice(
    name: str, generation: str, shape: list[int], members: list[_Node], problems: Problems, item: str
) -> TpuPodSpec | None:
    specs = [m.spec for m in members]
    common = dict(specs[0]["labels"])
    for s in specs[1:]:
        common = {k: v for k, v in common.items() if s["labels"].get(k) == v}
    classes = {s["capacity_class"] for s in specs}
    data = {
        "name": name,
        "type": generation,
        "shape": shape,
        "zone": specs[0]["zone"],
        "region": specs[0]["region"],
        "fixed_slice": True,
        "labels": common,
        "capacity_class": "spot" if "spot" in classes else specs[0]["capacity_class"],
        "cpu_cores_per_host": min(s["cpu_cores"] for s in specs),
        "memory_gb_per_host": min(s["memory_gb"] for s in specs),
        "hosts": sorted(s["name"] for s in specs),
        "schedulable": all(s["schedulable"] for s in specs) and not any(m.blocking_taints for m in members),
        "ready": all(s["ready"] for s in specs),
    }
    return problems.model(TpuPodSpec, data, item)


def _coords(shape: list[int]) -> list[list[int]]:
    """Every chip coordinate of a mesh, row-major."""
    return [list(c) for c in product(*(range(d) for d in shape))]


def _host_blocks(generation: str, shape: list[int], per_host: int) -> list[list[list[int]]]:
    """The chips of each host of a multi-host slice: the mesh tiled by the catalog's host block, blocks in
    row-major order. Falls back to consecutive row-major runs when the block does not tile the mesh."""
    try:
        block = list(tpu_info(generation).host_shape)
    except KeyError:
        block = []
    if (
        len(block) == len(shape)
        and math.prod(block) == per_host
        and all(s % b == 0 for s, b in zip(shape, block, strict=True))
    ):
        grid = [s // b for s, b in zip(shape, block, strict=True)]
        out = []
        for origin in product(*(range(g) for g in grid)):
            out.append(
                [
                    [o * b + d for o, b, d in zip(origin, block, offset, strict=True)]
                    for offset in product(*(range(b) for b in block))
                ]
            )
        return out
    flat = _coords(shape)
    return [flat[i : i + per_host] for i in range(0, len(flat), per_host)]


# -- pods ------------------------------------------------------------------------------------------------


def priority_class_for(name: str | None) -> str:
    """Map a Kubernetes ``priorityClassName`` to placer's priority class (spot < on-demand < reserved).

    Exact names ``spot``/``on-demand``/``reserved`` map to themselves and ``system-*-critical`` to
    reserved; otherwise a name with a word like spot, preemptible, low, best-effort, scavenger or
    opportunistic is spot, one with reserved, critical, high or prod(uction) is reserved; the rest, and
    no class at all, is on-demand.

    >>> [priority_class_for(n) for n in (None, "low-priority", "system-node-critical", "team-a-default")]
    ['on-demand', 'spot', 'reserved', 'on-demand']
    """
    if not name:
        return "on-demand"
    low = name.strip().lower()
    if low in ("spot", "on-demand", "reserved"):
        return low
    words = set(re.split(r"[^a-z0-9]+", low))
    if words & {"spot", "preemptible", "low", "besteffort", "best", "scavenger", "opportunistic", "lowest"}:
        return "spot"
    if words & {"reserved", "critical", "high", "highest", "prod", "production"}:
        return "reserved"
    return "on-demand"


_RESOURCE_KEYS = ("cpu", "memory", "ephemeral-storage", GPU_RESOURCE, AMD_GPU_RESOURCE, TPU_RESOURCE)


def _container_request(c: Any, item: str, problems: Problems) -> dict[str, Decimal]:
    """One container's requests; a missing request defaults to the limit (Kubernetes' defaulting), and
    extended resources (GPUs, TPUs, the others :func:`is_kubernetes_extra` names) and huge pages are read
    from limits first (their requests must equal their limits)."""
    if not isinstance(c, dict):
        problems.add(item, f"a container must be an object, got {short(c)}")
        return {}
    res = c.get("resources") or {}
    if not isinstance(res, dict):
        problems.add(item, f"resources must be an object, got {short(res)}")
        return {}
    requests = res.get("requests") or {}
    limits = res.get("limits") or {}
    if not isinstance(requests, dict) or not isinstance(limits, dict):
        problems.add(item, "resources.requests and resources.limits must be objects")
        return {}
    out: dict[str, Decimal] = {}
    counted = sorted({k for k in (*limits, *requests) if isinstance(k, str) and is_kubernetes_extra(k)})
    for key in (*_RESOURCE_KEYS, *counted):
        extended = key not in ("cpu", "memory", "ephemeral-storage")
        first, second = (limits, requests) if extended else (requests, limits)
        source = first if key in first else second
        value = _quantity(source, key, item, problems, "resources")
        if value is not None:
            out[key] = value
    return out


def _add(a: dict[str, Decimal], b: dict[str, Decimal]) -> dict[str, Decimal]:
    return {k: a.get(k, Decimal(0)) + b.get(k, Decimal(0)) for k in set(a) | set(b)}


def pod_request(spec: dict[str, Any], item: str, problems: Problems) -> dict[str, Decimal]:
    """Kubernetes' effective pod request: max(sum of containers + sidecars, each init container with the
    sidecars started before it) + overhead. Pod-level ``spec.resources`` (KEP 2837, Kubernetes 1.32+),
    when it states CPU or memory, is the pod's request for that resource instead of the containers'
    (a request defaulting to the limit, as for containers); GPUs and TPUs stay the containers'.

    >>> c = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    >>> p = Problems("pod.json")
    >>> r = pod_request({"containers": [c, c], "resources": {"requests": {"cpu": "8"}}}, "p", p)
    >>> str(r["cpu"]), str(r["memory"]), p.items
    ('8', '2147483648', [])
    """
    containers = spec.get("containers") or []
    inits = spec.get("initContainers") or []
    if not isinstance(containers, list) or not isinstance(inits, list):
        problems.add(item, "spec.containers and spec.initContainers must be lists")
        return {}
    total: dict[str, Decimal] = {}
    for c in containers:
        total = _add(total, _container_request(c, item, problems))
    sidecars: dict[str, Decimal] = {}
    peak: dict[str, Decimal] = {}
    for c in inits:
        req = _container_request(c, item, problems)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, req)
            step = sidecars
        else:
            step = _add(sidecars, req)
        peak = {k: max(peak.get(k, Decimal(0)), step.get(k, Decimal(0))) for k in set(peak) | set(step)}
    total = _add(total, sidecars)
    effective = {k: max(total.get(k, Decimal(0)), peak.get(k, Decimal(0))) for k in set(total) | set(peak)}
    pod_level = spec.get("resources")
    if pod_level is not None:
        if not isinstance(pod_level, dict):
            problems.add(item, f"spec.resources must be an object, got {short(pod_level)}")
        else:
            stated = _container_request({"resources": pod_level}, item, problems)
            effective.update({k: v for k, v in stated.items() if k in ("cpu", "memory")})
    overhead = spec.get("overhead")
    if isinstance(overhead, dict):
        extra = {k: v for k in _RESOURCE_KEYS if (v := _quantity(overhead, k, item, problems, "overhead"))}
        effective = _add(effective, extra)
    return effective


#: The label a pod holding a host port carries in placer (``HOST_PORT_LABEL.format(protocol, port)``), so
#: that another pod asking for that port keeps off its node by anti-affinity (kube-scheduler's
#: ``NodePorts`` filter).
HOST_PORT_LABEL = "placer.host-port/{}-{}"


def host_ports(spec: dict[str, Any]) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The host ports a pod spec holds on its node, as labels (:data:`HOST_PORT_LABEL`, value ``""``), and
    the problems found (path under ``spec``, issue code, message).

    kube-scheduler's ``NodePorts`` filter keeps two pods that ask for the same host port and protocol off
    one node; a container port with a ``hostPort``, or any container port of a ``hostNetwork`` pod (the
    API server then sets ``hostPort`` to it), holds that port. The containers and the sidecars (init
    containers with ``restartPolicy: Always``) are read, as the filter reads them. Why not per host IP:
    two pods binding one port on different addresses of a node are rare, and treating them as conflicting
    only keeps a pod off a node kube-scheduler would allow.

    >>> web = {"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9}]}
    >>> host_ports({"containers": [web]})
    ({'placer.host-port/TCP-8080': ''}, [])
    >>> dns = {"ports": [{"containerPort": 53, "protocol": "UDP"}]}
    >>> host_ports({"hostNetwork": True, "containers": [dns]})
    ({'placer.host-port/UDP-53': ''}, [])
    """
    labels: dict[str, str] = {}
    problems: list[tuple[str, str, str]] = []
    network = spec.get("hostNetwork") is True
    for kind in ("containers", "initContainers"):
        # A field of the wrong type is the resource reader's to report (with its path); here it holds no port.
        listed = spec.get(kind)
        for i, c in enumerate(listed if isinstance(listed, list) else []):
            if not isinstance(c, dict) or (kind == "initContainers" and c.get("restartPolicy") != "Always"):
                continue
            ports = c.get("ports")
            if ports is not None and not isinstance(ports, list):
                problems.append(
                    (f"{kind}[{i}].ports", "type", f"a list of container ports, got {short(ports)}")
                )
                continue
            for j, p in enumerate(ports or []):
                if not isinstance(p, dict):
                    continue
                where = f"{kind}[{i}].ports[{j}]"
                port = p.get("hostPort", p.get("containerPort") if network else None)
                if port is None or port == 0:
                    continue
                if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
                    problems.append(
                        (f"{where}.hostPort", "range", f"a port is a number 1-65535, got {short(port)}")
                    )
                    continue
                protocol = p.get("protocol", "TCP")
                if protocol not in ("TCP", "UDP", "SCTP"):
                    problems.append(
                        (f"{where}.protocol", "range", f"TCP, UDP or SCTP, got {short(protocol)}")
                    )
                    continue
                labels[HOST_PORT_LABEL.format(protocol, port)] = ""
    return labels, problems


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date) or not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass
class _Pod:
    namespace: str
    name: str
    item: str
    node: str
    job: str
    request: dict[str, Decimal]
    obj: dict[str, Any]


def _running(
    obj: Any,
    nodes: dict[str, NodeSpec],
    tpu_hosts: dict[str, _TpuHost],
    problems: Problems,
    metadata: dict[str, Any],
) -> list[RunningJob]:
    pods: list[_Pod] = []
    skipped: dict[str, int] = {}
    items = _items(obj, "Pod", problems)
    budgets = read_budgets(items, problems)  # PodDisruptionBudgets listed with the pods
    for index, raw in enumerate(items):
        kind = raw.get("kind") if isinstance(raw, dict) and isinstance(raw.get("kind"), str) else None
        if kind == PDB_KIND:
            continue
        if kind in NOT_PODS:  # the same file may serve --jobs: what runs of these is in their pods
            skipped[f"not pods ({kind})"] = skipped.get(f"not pods ({kind})", 0) + 1
            continue
        pod = _pod(index, raw, problems, skipped)
        if pod is None:
            continue
        if pod.node not in nodes and pod.node not in tpu_hosts:
            skipped["on nodes not in the node list"] = skipped.get("on nodes not in the node list", 0) + 1
            continue
        pods.append(pod)
    pods.sort(key=lambda p: (p.namespace, p.name))

    free_gpus = {name: list(range(n.gpus.count if n.gpus else 0)) for name, n in nodes.items()}
    replicas: dict[str, list[tuple[_Pod, ReplicaAllocation]]] = {}
    for pod in pods:
        req = pod.request
        gpus = _count(req.get(GPU_RESOURCE), GPU_RESOURCE, pod.item, problems)
        gpus += _count(req.get(AMD_GPU_RESOURCE), AMD_GPU_RESOURCE, pod.item, problems)
        chips = _count(req.get(TPU_RESOURCE), TPU_RESOURCE, pod.item, problems)
        alloc: dict[str, Any] = {
            "cpu_cores": float(req.get("cpu", 0)),
            "memory_gb": float(req.get("memory", 0) / GB),
            "storage_gb": float(req.get("ephemeral-storage", 0) / GB),
        }
        held = {k: float(v) for k, v in sorted(req.items()) if is_kubernetes_extra(k) and v > 0}
        if pod.node not in tpu_hosts:
            alloc["extra"] = {**held, POD_SLOTS: 1.0}  # every pod takes one of its node's pod slots
        if pod.node in tpu_hosts and not chips:
            # TPU slices track chips only; a host's CPU/memory are not divided among pods.
            skipped["on TPU hosts without TPU chips"] = skipped.get("on TPU hosts without TPU chips", 0) + 1
            continue
        if pod.node in tpu_hosts:
            host = tpu_hosts[pod.node]
            if chips > len(host.chips):
                problems.add(pod.item, f"requests {chips} TPU chips; host {pod.node} has {len(host.chips)}")
                continue
            alloc.update(tpu_pod=host.pod, tpu_chips=host.chips[:chips])
            del host.chips[:chips]
        else:
            free = free_gpus[pod.node]
            if chips:
                problems.add(pod.item, f"requests {TPU_RESOURCE} but node {pod.node} is not a TPU host")
                continue
            if gpus > len(free):
                problems.add(
                    pod.item,
                    f"requests {gpus} GPUs but node {pod.node} has only {len(free)} left "
                    f"(of {gpus_of.count if (gpus_of := nodes[pod.node].gpus) else 0})",
                )
                continue
            alloc.update(node=pod.node, gpus=free[:gpus])
            del free[:gpus]
        replica = problems.model(ReplicaAllocation, alloc, pod.item)
        if replica is not None:
            replicas.setdefault(pod.job, []).append((pod, replica))
    if skipped:
        metadata["pods_skipped"] = skipped
    if budgets:
        metadata["disruption_budgets"] = len(budgets)
    allowed = allowances(budgets, [(p.namespace, _pod_labels(p)) for p in pods]) if budgets else []
    out = []
    lost: dict[str, list[str]] = {}
    for name, members in replicas.items():
        job = _job(name, members, problems)
        anti, domains, keys = running_anti_affinity(members[0][0].obj.get("spec") or {})
        if keys:
            lost[name] = keys
        if job is not None and anti:
            job = job.model_copy(update={"anti_affinity": anti})
        if job is not None and domains:
            kept = [problems.model(DomainAntiAffinity, d, members[0][0].item) for d in domains]
            job = job.model_copy(update={"anti_affinity_domains": [d for d in kept if d is not None]})
        if job is not None and budgets:
            count = violations(budgets, allowed, [(p.namespace, _pod_labels(p)) for p, _ in members])
            job = job.model_copy(update={"disruption_violations": count}) if count else job
        if job is not None:
            out.append(job)
    if lost:
        metadata["anti_affinity_not_kept"] = lost
    return out


#: Label selector operators of pod (anti-)affinity terms (Kubernetes' ``LabelSelectorOperator``), which
#: are the job model's rule operators of the same names.
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def running_anti_affinity(
    spec: dict[str, Any],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """A running pod's required pod anti-affinity, as rules on the labels of incoming jobs (the job
    model's rule objects as JSON): one rule per term on ``kubernetes.io/hostname``, its selector's
    requirements ANDed (``RunningJob.anti_affinity``), and one ``{key, rule}`` per term on another
    topology key (``RunningJob.anti_affinity_domains``: the key is the node label whose values are the
    domains). Also the topology keys of the terms that cannot be kept (a selector of another shape, no
    key). An empty selector (``{}``) selects every pod, so its term keeps every job off (a null one keeps
    nothing off). Namespaces are not told apart: a term keeps off matching pods of every namespace
    (stricter than kube-scheduler, whose term matches its own namespace unless it names others).

    >>> term = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}
    >>> zone = {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": "db"}}}
    >>> odd = {"topologyKey": "rack", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}
    >>> anti = {"requiredDuringSchedulingIgnoredDuringExecution": [term, zone, odd]}
    >>> rules, domains, lost = running_anti_affinity({"affinity": {"podAntiAffinity": anti}})
    >>> [(r["key"], r["operator"], r["values"]) for r in rules], lost
    ([('app', 'In', ['web'])], ['rack'])
    >>> [(d["key"], d["rule"]["values"]) for d in domains]
    [('topology.kubernetes.io/zone', ['db'])]
    """
    affinity = child_map(spec, "affinity")
    anti = child_map(affinity, "podAntiAffinity")
    terms = anti.get("requiredDuringSchedulingIgnoredDuringExecution")
    rules: list[dict[str, Any]] = []
    domains: list[dict[str, Any]] = []
    lost: list[str] = []
    for term in terms if isinstance(terms, list) else []:
        if isinstance(term, dict) and term.get("labelSelector") is None:
            continue  # a null selector matches no pod: the term keeps nothing off
        key = term.get("topologyKey") if isinstance(term, dict) else None
        parts = _selector_rules(term.get("labelSelector")) if isinstance(term, dict) else None
        if not isinstance(key, str) or not key or parts is None:
            lost.append(str(key))
            continue
        # An empty selector ({}) selects every pod: the term keeps every job off (an empty all_of holds).
        rule = parts[0] if len(parts) == 1 else {"kind": "all_of", "rules": parts}
        if key == "kubernetes.io/hostname":
            rules.append(rule)
        else:
            domains.append({"key": key, "rule": rule})
    return rules, domains, lost


def _selector_rules(selector: Any) -> list[dict[str, Any]] | None:
    """A label selector's requirements as rule objects (JSON), or None for one of another shape."""
    if not isinstance(selector, dict):
        return None
    labels = selector.get("matchLabels") or {}
    exprs = selector.get("matchExpressions") or []
    if not isinstance(labels, dict) or not isinstance(exprs, list):
        return None
    if not all(isinstance(v, str) for v in labels.values()):
        return None  # a pair read past would leave the term selecting more pods than it does
    out = [{"kind": "label", "key": str(k), "operator": "In", "values": [v]} for k, v in labels.items()]
    for e in exprs:
        values = e.get("values") or [] if isinstance(e, dict) else None
        if (
            not isinstance(e, dict)
            or e.get("operator") not in _SELECTOR_OPERATORS
            or not isinstance(e.get("key"), str)
            or not isinstance(values, list)
            or not all(isinstance(v, str) for v in values)
        ):
            return None
        out.append({"kind": "label", "key": e["key"], "operator": e["operator"], "values": list(values)})
    return out


def _pod_labels(pod: _Pod) -> dict[str, str]:
    """The pod's labels, and those of the host ports it holds (:func:`host_ports`)."""
    meta = pod.obj.get("metadata") or {}
    labels = child_map(meta, "labels")
    ports, _ = host_ports(pod.obj.get("spec") or {})  # a bound pod's ports passed the API server's checks
    return {**{str(k): str(v) for k, v in labels.items() if isinstance(v, str)}, **ports}


def _pod(index: int, raw: Any, problems: Problems, skipped: dict[str, int]) -> _Pod | None:
    meta = raw.get("metadata") if isinstance(raw, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    item = join_item("items", index, f"{namespace}/{name}" if isinstance(name, str) else None)
    if not isinstance(raw, dict):
        problems.add(item, f"a pod must be an object, got {short(raw)}")
        return None
    if raw.get("kind", "Pod") != "Pod":
        problems.add(item, f"kind is {short(raw.get('kind'))}, expected 'Pod'")
        return None
    before = len(problems.items)
    meta = problems.mapping(raw, "metadata", item, required=True) or {}
    pod_name = problems.string(meta, "name", item, required=True)
    spec = problems.mapping(raw, "spec", item, required=True) or {}
    status = problems.mapping(raw, "status", item) or {}
    node = spec.get("nodeName")
    phase = status.get("phase")
    if len(problems.items) > before or pod_name is None:
        return None
    if node is None:
        skipped["not bound to a node"] = skipped.get("not bound to a node", 0) + 1
        return None
    if not isinstance(node, str) or not node:
        problems.add(item, f"spec.nodeName must be a string, got {short(node)}")
        return None
    if phase is not None and not isinstance(phase, str):
        problems.add(item, f"status.phase must be a string, got {short(phase)}")
        return None
    if phase not in _HOLDING_PHASES:
        if phase not in ("Succeeded", "Failed"):
            problems.add(item, f"status.phase {short(phase)} is not a Kubernetes pod phase")
        return None
    request = pod_request(spec, item, problems)
    if len(problems.items) > before:
        return None
    owner = _controller(meta.get("ownerReferences"))
    job = f"{namespace}/{owner or pod_name}"
    return _Pod(namespace, pod_name, item, node, job, request, raw)


def _deadline(pod: dict[str, Any]) -> datetime | None:
    """When a running pod's ``spec.activeDeadlineSeconds`` (counted from ``status.startTime``) has the
    kubelet kill it, or None without both."""
    start = _time((pod.get("status") or {}).get("startTime"))
    limit = (pod.get("spec") or {}).get("activeDeadlineSeconds")
    if start is None or not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        return None
    return start + timedelta(seconds=limit)


def _controller(refs: Any) -> str | None:
    if not isinstance(refs, list):
        return None
    for ref in refs:
        if isinstance(ref, dict) and ref.get("controller") is True and isinstance(ref.get("name"), str):
            return ref["name"]
    return None


def _job(name: str, members: list[tuple[_Pod, ReplicaAllocation]], problems: Problems) -> RunningJob | None:
    first = members[0][0]
    spec = first.obj.get("spec") or {}
    labels = _pod_labels(first)
    priority = spec.get("priority", 0)
    grace = spec.get("terminationGracePeriodSeconds", 30)
    starts = [t for p, _ in members if (t := _time((p.obj.get("status") or {}).get("startTime")))]
    class_name = spec.get("priorityClassName")
    ends = [e for p, _ in members if (e := _deadline(p.obj)) is not None]
    pclass = priority_class_for(class_name if isinstance(class_name, str) else None)
    data: dict[str, Any] = {
        "job": name,
        "tenant": first.namespace,
        "queue": labels.get(L_QUEUE),
        "priority_class": pclass,
        # kube-scheduler may preempt any running pod for a pod of higher priority (PodDisruptionBudgets
        # only weigh the choice); placer's classes say who outranks whom, and the reserved class
        # (system-cluster-critical, system-node-critical and the like) is never evicted.
        "preemptible": pclass != "reserved",
        "priority": priority if type(priority) is int else 0,
        "grace_period_s": grace if type(grace) is int and grace >= 0 else 30,
        "started_at": min(starts) if starts else None,
        # Every pod killed by its activeDeadlineSeconds at the latest: the job's room is free by then.
        "expected_end": max(ends) if ends and len(ends) == len(members) else None,
        "labels": labels,
        "replicas": [r for _, r in members],
    }
    return problems.model(RunningJob, data, first.item)
