"""The inventory document: placer's own description of a cluster, and what every importer produces.

Why a document model separate from the graph: importers (Kubernetes, Slurm, Flux JGF, OJS workers) and the
YAML/JSON inventory file all describe clusters; they meet here, in one validated, serializable shape with a
JSON Schema (``Inventory.model_json_schema()``), and :func:`placer.topology.build.build_cluster` turns any of
them
into the networkx graph. An importer never builds graph vertices itself.

Units: CPU in cores, memory/storage/shm in GB, prices in dollars per hour, times timezone-aware.

A node entry with ``count: N`` stands for N identical nodes named ``{name}-{i}`` (zero-padded, from 1), so
a 10,000-node cluster is a few lines of YAML:

>>> inv = Inventory.model_validate({"nodes": [{"name": "h100", "count": 2, "cpu_cores": 192,
...     "memory_gb": 2048, "gpus": {"type": "nvidia-h100", "count": 8}}]})
>>> [n.name for n in inv.expanded_nodes()]
['h100-1', 'h100-2']
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "MAX_DOLLARS_PER_HOUR",
    "CapacityClass",
    "DomainAntiAffinity",
    "InnerVertex",
    "Inventory",
    "LoadedModel",
    "NodeGpus",
    "NodeSpec",
    "ReplicaAllocation",
    "RunningJob",
    "Taint",
    "TaintEffect",
    "TpuPodSpec",
]

CapacityClass = Literal["spot", "on-demand", "reserved"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


#: Highest price a node, pod or catalog entry may have, in dollars per hour (a GB200 NVL72 rack rents for a
#: few hundred): prices are summed as integer hundredths of a cent over thousands of nodes, and a price of
#: 10^15 would overflow the CP-SAT model's 64-bit coefficients.
MAX_DOLLARS_PER_HOUR = 1_000_000.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NodeGpus(_Strict):
    """The GPUs of one node. Missing facts come from the accelerator catalog by ``type``.

    ``nvlink_domain``: id of an NVLink domain that spans several nodes (a GB200 NVL72 rack, Kubernetes
    label ``nvidia.com/gpu.clique``). When None and the interconnect is ``nvlink``, the node's GPUs form
    their own domain (an HGX/DGX board on NVSwitch).
    """

    type: str = Field(min_length=1)
    count: int = Field(ge=0, le=1024)
    memory_gb: float | None = Field(default=None, gt=0)
    compute_capability: str | None = Field(default=None, pattern=r"^[0-9]+\.[0-9]+$")
    interconnect: Literal["nvlink", "pcie"] | None = None
    nvlink_domain: str | None = None


class Taint(_Strict):
    """A Kubernetes-style taint: a ``NoSchedule``/``NoExecute`` one keeps every job off the node but those
    that tolerate it (``ext_ml_tolerations``, or requesting the resource it is for: ``nvidia.com/gpu``,
    ``amd.com/gpu``, ``google.com/tpu``); a ``PreferNoSchedule`` one only makes the node less preferred."""

    key: str = Field(min_length=1)
    value: str | None = None
    effect: TaintEffect = "NoSchedule"


class InnerVertex(_Strict):
    """A vertex of a node's inner tree (Flux JGF: socket, core, gpu, memory, ...), with its children."""

    type: str = Field(min_length=1)
    name: str | None = None
    size: int = Field(default=1, ge=0)
    unit: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    children: list[InnerVertex] = Field(default_factory=list)


class LoadedModel(_Strict):
    """OJS ML §11 ``models_loaded`` entry, for model locality."""

    model_config = ConfigDict(extra="allow", frozen=True)

    model_id: str
    model_version: str | None = None
    model_format: str | None = None


class NodeSpec(_Strict):
    """One node (or ``count`` identical nodes)."""

    name: str = Field(min_length=1, max_length=253)
    count: int = Field(default=1, ge=1, le=1_000_000)
    zone: str | None = None
    region: str | None = None
    block: str | None = None
    rack: str | None = None
    cpu_cores: float = Field(default=0, ge=0)
    memory_gb: float = Field(default=0, ge=0)
    #: Scratch storage; absent means the source does not say (unknown is not zero: OJS ML v0.1 §2.1's job
    #: asks 200 GB and §6.1's worker advertises none, yet it matches).
    storage_gb: float | None = Field(default=None, ge=0)
    shm_gb: float | None = Field(default=None, ge=0)
    gpus: NodeGpus | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    properties: list[str] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    schedulable: bool = True
    ready: bool = True
    capacity_class: CapacityClass = "on-demand"
    price_per_hour: float | None = Field(default=None, ge=0, le=MAX_DOLLARS_PER_HOUR)
    models_loaded: list[LoadedModel] = Field(default_factory=list)
    runtimes: list[str] = Field(default_factory=list)
    inner: list[InnerVertex] = Field(default_factory=list)
    rank: int | None = Field(default=None, ge=0)
    #: Counted resources beyond cores, memory, storage, shm and GPUs, by name: a Kubernetes extended
    #: resource of ``status.allocatable`` (``vpc.amazonaws.com/efa``, ``rdma/hca``, a MIG slice
    #: ``nvidia.com/mig-1g.10gb``), ``hugepages-<size>`` in bytes. The replicas placed on the node count
    #: them down (:mod:`placer.topology.extended`).
    extra: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_extra(self) -> NodeSpec:
        _check_amounts(self.extra, "extra")
        return self


def _check_amounts(amounts: dict[str, float], field: str) -> None:
    """Extended-resource amounts: a non-empty name, a finite amount >= 0."""
    for name, amount in amounts.items():
        if not name:
            raise ValueError(f"{field}: a resource name must not be empty")
        if not 0 <= amount < float("inf"):
            raise ValueError(f"{field}.{name}: an amount must be finite and >= 0, got {amount!r}")


def _check_seats(seats: dict[str, int], field: str, *, least: int) -> None:
    """Licence seats: a non-empty name, a whole count of at least ``least``."""
    for name, count in seats.items():
        if not name.strip():
            raise ValueError(f"{field}: a licence name must not be empty")
        if count < least:
            raise ValueError(f"{field}.{name}: a seat count must be >= {least}, got {count!r}")


class TpuPodSpec(_Strict):
    """A TPU pod (or a fixed slice, e.g. a GKE TPU node pool) of one generation.

    ``shape`` is the chip mesh (``[16, 16]`` for a v5e pod, ``[16, 16, 24]`` for v5p). ``fixed_slice``:
    the whole mesh is one slice that is allocated whole (GKE multi-host node pools), not subdivided.
    ``wrap`` overrides the catalog's wraparound rule per axis.
    """

    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    shape: list[int] = Field(min_length=2, max_length=3)
    zone: str | None = None
    region: str | None = None
    fixed_slice: bool = False
    wrap: list[bool] | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    capacity_class: CapacityClass = "on-demand"
    price_per_hour: float | None = Field(default=None, ge=0, le=MAX_DOLLARS_PER_HOUR)
    cpu_cores_per_host: float = Field(default=0, ge=0)
    memory_gb_per_host: float = Field(default=0, ge=0)
    #: Names of the machines (TPU VMs / Kubernetes nodes) that hold the chips, when the source names them
    #: (GKE node pools); informational: chips are addressed by mesh coordinates, not by host.
    hosts: list[str] = Field(default_factory=list)
    schedulable: bool = True
    ready: bool = True

    @model_validator(mode="after")
    def _check(self) -> TpuPodSpec:
        if any(d < 1 for d in self.shape):
            raise ValueError("every TPU mesh dimension must be >= 1")
        if self.wrap is not None and len(self.wrap) != len(self.shape):
            raise ValueError("wrap must have one entry per mesh dimension")
        return self


class ReplicaAllocation(_Strict):
    """Where one replica of a running job sits: a node and its GPU indices, or TPU chips of a pod."""

    node: str | None = None
    gpus: list[int] = Field(default_factory=list)
    gpu_milli: int | None = Field(default=None, ge=1, le=1000)
    tpu_pod: str | None = None
    tpu_chips: list[list[int]] = Field(default_factory=list)
    cpu_cores: float = Field(default=0, ge=0)
    memory_gb: float = Field(default=0, ge=0)
    storage_gb: float = Field(default=0, ge=0)
    shm_gb: float = Field(default=0, ge=0)
    #: Extended resources the replica holds on its node (``NodeSpec.extra``), by name.
    extra: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> ReplicaAllocation:
        _check_amounts(self.extra, "extra")
        if self.node is None and self.tpu_pod is None:
            raise ValueError("a replica allocation needs a node or a tpu_pod")
        if self.gpu_milli is not None and len(self.gpus) != 1:
            raise ValueError("a fractional GPU allocation (gpu_milli) names exactly one GPU")
        return self


class DomainAntiAffinity(_Strict):
    """A running job's required anti-affinity on a topology domain wider than its node: while it runs, no
    job whose labels match ``rule`` may run on a node whose label ``key`` has the value one of its own
    nodes has there (a Kubernetes pod's required ``podAntiAffinity`` term on ``topology.kubernetes.io/zone``
    or a rack label: kube-scheduler keeps an incoming pod out of such a domain). Nodes without the label
    are in no domain, as kube-scheduler counts them.

    >>> DomainAntiAffinity(key="topology.kubernetes.io/zone", rule={"key": "app", "values": ["db"]}).key
    'topology.kubernetes.io/zone'
    """

    #: The node label whose values are the domains (``topology.kubernetes.io/zone``, a rack label).
    key: str = Field(min_length=1)
    #: The rule incoming jobs' labels are tested on (the job model's rule object as JSON).
    rule: dict[str, Any]


class RunningJob(_Strict):
    """A job already running: what it holds and what preemption needs to know about it."""

    job: str = Field(min_length=1)
    queue: str | None = None
    tenant: str | None = None
    priority_class: Literal["spot", "on-demand", "reserved"] = "on-demand"
    priority: int = 0
    preemptible: bool | None = None
    grace_period_s: int = Field(default=30, ge=0)
    checkpoint_on_preempt: bool = False
    started_at: datetime | None = None
    expected_end: datetime | None = None
    last_checkpoint_at: datetime | None = None
    #: The reservation it runs under (OJS ML §8.3 ``ext_ml_reservation_id``): while it runs there, a
    #: reservation with ``timeout_s`` is in use and stays held.
    reservation: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    #: The throttle group it counts against (a Slurm array's id; ``Job.throttle``): pending jobs of that
    #: group start only while fewer than their ``max_running`` of the group run.
    throttle_group: str | None = Field(default=None, min_length=1)
    #: The group limits it counts against (``Job.limits``: a Slurm QOS's ``GrpJobs``/``GrpTRES``, per user
    #: and per account): it counts as one running job of each, holding its GPUs.
    limit_groups: list[str] = Field(default_factory=list)
    #: Its required anti-affinity rules (OJS ML §7.3, the job model's rule objects as JSON): while it runs,
    #: no job whose labels match one may join it on a node — as Kubernetes keeps an incoming pod off a
    #: node whose pods' required anti-affinity it matches. The solver and the checker read them.
    anti_affinity: list[dict[str, Any]] = Field(default_factory=list)
    #: The same on a wider topology key than the node (:class:`DomainAntiAffinity`): no matching job joins
    #: it in the domain (a zone, a rack) of any of its nodes.
    anti_affinity_domains: list[DomainAntiAffinity] = Field(default_factory=list)
    #: PodDisruptionBudget violations evicting it would cause (the Kubernetes importer counts them from the
    #: budgets listed with the pods): the engines evict within budgets first, as kube-scheduler does.
    disruption_violations: int = Field(default=0, ge=0)
    #: Cluster-wide licences it holds while it runs, seats by name (Slurm ``--licenses``, the job's
    #: ``Licenses=``): they are not free for pending jobs (:attr:`Inventory.licenses`).
    licenses: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)
    replicas: list[ReplicaAllocation] = Field(min_length=1)

    @model_validator(mode="after")
    def _check_licenses(self) -> RunningJob:
        _check_seats(self.licenses, "licenses", least=1)
        return self


class Inventory(_Strict):
    """A whole cluster description: nodes, TPU pods, and what already runs."""

    version: Literal[1] = 1
    name: str = "cluster"
    nodes: list[NodeSpec] = Field(default_factory=list)
    tpu_pods: list[TpuPodSpec] = Field(default_factory=list)
    running: list[RunningJob] = Field(default_factory=list)
    #: Cluster-wide licences, seats by name (Slurm's ``Licenses=``, as ``scontrol show licenses`` prints
    #: them less what reservations keep): a job asking for some (``Job.licenses``) starts only while the
    #: seats running jobs hold (``RunningJob.licenses``) leave enough. A licence no entry names has no seat.
    licenses: dict[str, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_licenses(self) -> Inventory:
        _check_seats(self.licenses, "licenses", least=0)
        return self

    def expanded_nodes(self) -> Iterator[NodeSpec]:
        """Every node, with ``count`` templates expanded to ``{name}-{i}`` (zero-padded to the width of
        ``count``)."""
        for spec in self.nodes:
            if spec.count == 1:
                yield spec
                continue
            width = len(str(spec.count))
            for i in range(1, spec.count + 1):
                yield spec.model_copy(update={"name": f"{spec.name}-{i:0{width}d}", "count": 1})
