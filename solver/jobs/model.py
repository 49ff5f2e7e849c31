"""The normalized job model: what every reader produces and all that the solver ever reads.

Why one model: placement logic must not know whether a job arrived as an OJS envelope, a Flux jobspec or
an SSS XML job object. Each reader maps its format onto these types; attributes a reader does not
understand are kept verbatim in :attr:`Job.unknown`, and the whole input in :attr:`Job.envelope`
(the OJS extension contract: ignore, don't fail).

Units are fixed so nothing downstream converts: memory, storage and shared memory in GB (10^9 bytes, as
the OJS ``*_gb`` attributes), CPU in cores (fractions allowed for Kubernetes-style millicores), times in
seconds, timestamps timezone-aware UTC.

A job is a *gang* of task groups (``tasks``). Each :class:`TaskGroup` is ``count`` identical replicas with
a per-replica demand; all replicas of all groups run or none does. An OJS job is one group of one replica
whose GPUs the solver may split over nodes when its distributed strategy allows (see
:meth:`Job.may_span_nodes`); a Flux jobspec asking for two nodes with a slot each is one group of two
replicas with ``one_per_node``.

>>> job = Job(id="train-1", tasks=[TaskGroup(gpu=GpuDemand(count=8, types=["nvidia-h100"]))])
>>> job.total_gpus, job.accelerator.value
(8, 'gpu')
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from placer.solver.jobs.errors import Issue

__all__ = [
    "CLASS_RANK",
    "PRECISION_MIN_CC",
    "Accelerator",
    "AffinityOperator",
    "AllOf",
    "AnyOf",
    "Checkpointing",
    "CountRange",
    "Dependency",
    "DependencyCondition",
    "DistributedStrategy",
    "DomainCount",
    "DomainRule",
    "Escalation",
    "FlavorChoice",
    "FluxResource",
    "GpuAffinity",
    "GpuDemand",
    "Interconnect",
    "Job",
    "JobAlternative",
    "LabelRule",
    "LastCheckpoint",
    "ModelRef",
    "Not",
    "OneFlavor",
    "Placement",
    "Precision",
    "Preemption",
    "PreemptionPolicy",
    "PriorityClass",
    "ReadResult",
    "ReservationRef",
    "Rule",
    "Slices",
    "SpotPreference",
    "SpreadRule",
    "TaskGroup",
    "Throttle",
    "Toleration",
    "TpuDemand",
    "tolerated",
]

# ---------------------------------------------------------------------------------------------------
# Closed value lists (OJS ML resources v0.3.0 and ML extensions v0.1.0)
# ---------------------------------------------------------------------------------------------------


class Accelerator(StrEnum):
    """OJS ML §3.1. ``cpu`` jobs may run on accelerator nodes; ``gpu``/``tpu`` jobs never on CPU-only ones."""

    GPU = "gpu"
    TPU = "tpu"
    FPGA = "fpga"
    CPU = "cpu"


class Interconnect(StrEnum):
    """OJS ML §3.2 ``ext_ml_gpu_interconnect``: ``nvlink`` means all GPUs inside one NVLink domain."""

    NVLINK = "nvlink"
    PCIE = "pcie"
    ANY = "any"


class PriorityClass(StrEnum):
    """OJS ML §8.1; ordered ``reserved`` > ``on-demand`` > ``spot`` (see :attr:`rank`)."""

    SPOT = "spot"
    ON_DEMAND = "on-demand"
    RESERVED = "reserved"

    @property
    def rank(self) -> int:
        """0 for spot, 1 for on-demand, 2 for reserved: compare classes with this, never by name."""
        return CLASS_RANK[self.value]


#: :attr:`PriorityClass.rank` by class name (a lookup for hot paths that hold the name, not the member).
CLASS_RANK: dict[str, int] = {"spot": 0, "on-demand": 1, "reserved": 2}


class AffinityOperator(StrEnum):
    """The eight operators of OJS ML §7.2, plus ``Matches`` (glob on the label value) for SSS ``Match``
    and Flux/SSS node-name patterns."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    GTE = "Gte"
    LT = "Lt"
    LTE = "Lte"
    MATCHES = "Matches"


class GpuAffinity(StrEnum):
    """ML extensions §7.1 ``ext_mlx_scheduling_gpu_affinity``."""

    SPREAD = "spread"
    PACK = "pack"
    DEDICATED = "dedicated"


class PreemptionPolicy(StrEnum):
    """ML extensions §7 ``ext_mlx_scheduling_preemption_policy``."""

    NEVER = "never"
    SAVE_AND_RETRY = "save_and_retry"
    IMMEDIATE = "immediate"


class SpotPreference(StrEnum):
    """ML extensions §7 ``ext_mlx_scheduling_spot_preference``."""

    SPOT_PREFERRED = "spot_preferred"
    ON_DEMAND_ONLY = "on_demand_only"
    ANY = "any"


class Precision(StrEnum):
    """OJS ML §6 ``ext_ml_precision``; :data:`PRECISION_MIN_CC` gives the implied compute capability."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"


#: OJS ML §6 table "Min Compute Capability" per precision.
PRECISION_MIN_CC: dict[Precision, str] = {
    Precision.FP32: "7.0",
    Precision.FP16: "7.0",
    Precision.BF16: "8.0",
    Precision.FP8: "8.9",
    Precision.INT8: "7.5",
    Precision.INT4: "7.5",
}


class DistributedStrategy(StrEnum):
    """OJS ML §6 ``ext_ml_distributed_strategy``."""

    NONE = "none"
    DATA_PARALLEL = "data_parallel"
    TENSOR_PARALLEL = "tensor_parallel"
    PIPELINE_PARALLEL = "pipeline_parallel"
    FSDP = "fsdp"
    DEEPSPEED = "deepspeed"


class DependencyCondition(StrEnum):
    """When a dependency is satisfied. Flux RFC 26 ``after*`` schemes, SSS ``OnSuccess``/``OnFailure``/
    ``OnExit``, OJS chain steps (``success``)."""

    START = "start"  # RFC 26 "after": the other job has started
    SUCCESS = "success"  # RFC 26 "afterok", SSS OnSuccess, OJS chain
    FAILURE = "failure"  # RFC 26 "afternotok", SSS OnFailure
    EXIT = "exit"  # RFC 26 "afterany", SSS OnExit


# ---------------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_enum_values=False)


class CountRange(_Model):
    """An integer count with a range, as Flux RFC 14 ``{min, max, operator, operand}`` and SSS ranges.

    ``max`` None means unbounded. Resolving picks the largest feasible value of the sequence
    ``min, min op operand, ...`` up to ``max`` (RFC 14: "the largest count that can be satisfied").
    """

    min: int = Field(ge=0)
    max: int | None = Field(default=None, ge=0)
    operator: Literal["+", "*", "^"] = "+"
    operand: int = Field(default=1, ge=1)
    #: Explicit admissible counts, ascending (a Flux RFC 14/22 idset count such as ``"4,9,16,25"``
    #: that no ``min, min op operand, ...`` sequence describes); ``min``/``max`` are its ends.
    idset: tuple[int, ...] | None = None

    @model_validator(mode="after")
    def _check(self) -> CountRange:
        if self.max is not None and self.max < self.min:
            raise ValueError("max must be >= min")
        if self.idset is not None:
            ids = self.idset
            if not ids or any(ids[i + 1] <= ids[i] for i in range(len(ids) - 1)):
                raise ValueError("idset must be non-empty, ascending and without repeats")
            if ids[0] != self.min or ids[-1] != self.max:
                raise ValueError("idset ends must equal min and max")
        if self.operator in ("*", "^") and self.operand < 2:
            raise ValueError(f"operand must be >= 2 with operator {self.operator!r}")
        return self

    def values(self, cap: int) -> list[int]:
        """All admissible counts up to ``min(max, cap)``, ascending.

        >>> CountRange(min=2, max=20, operator="*", operand=2).values(100)
        [2, 4, 8, 16]
        """
        hi = cap if self.max is None else min(self.max, cap)
        if self.idset is not None:
            return [v for v in self.idset if v <= hi]
        out: list[int] = []
        v = self.min
        while v <= hi:
            out.append(v)
            if self.operator == "+":
                v += self.operand
            elif self.operator == "*":
                if v == 0:
                    break
                v *= self.operand
            else:
                if v <= 1:
                    break
                v = v**self.operand
        return out


class LabelRule(_Model):
    """One label test against a node, with an optional preference weight (OJS ML §7.2, 0-100).

    Values are strings as labels are strings; ``Gt``/``Gte``/``Lt``/``Lte`` compare numerically, or as
    dotted versions (``"8.0"`` < ``"10.0"``) when both sides look like versions.
    """

    kind: Literal["label"] = "label"
    key: str = Field(min_length=1)
    operator: AffinityOperator
    values: list[str] = Field(default_factory=list)
    weight: int | None = Field(default=None, ge=-100, le=100)

    @model_validator(mode="after")
    def _check(self) -> LabelRule:
        op = self.operator
        if op in (AffinityOperator.EXISTS, AffinityOperator.DOES_NOT_EXIST):
            if self.values:
                raise ValueError(f"operator {op.value} takes no values")
        elif op in (AffinityOperator.GT, AffinityOperator.GTE, AffinityOperator.LT, AffinityOperator.LTE):
            if len(self.values) != 1:
                raise ValueError(f"operator {op.value} takes exactly one value")
        elif not self.values:
            raise ValueError(f"operator {op.value} needs at least one value")
        return self


class AllOf(_Model):
    """Every rule must hold (SSS ``conj="And"`` groups, RFC 31 ``and``)."""

    kind: Literal["all_of"] = "all_of"
    rules: list[Rule]


class AnyOf(_Model):
    """At least one rule must hold (SSS ``conj="Or"``, RFC 31 ``or``)."""

    kind: Literal["any_of"] = "any_of"
    rules: list[Rule]


class Not(_Model):
    """The rule must not hold (SSS ``Nand``/``Nor``, RFC 31 ``not``)."""

    kind: Literal["not"] = "not"
    rule: Rule


Rule = Annotated[LabelRule | AllOf | AnyOf | Not, Field(discriminator="kind")]
AllOf.model_rebuild()
AnyOf.model_rebuild()
Not.model_rebuild()


class GpuDemand(_Model):
    """GPU demand of one replica.

    ``types`` empty means any GPU type; several types mean any of them (Alibaba ``gpu_spec``, SSS
    alternatives, OJS ``In`` affinity on ``gpu_type`` stays an affinity rule). Types are catalog ids
    (``nvidia-h100``) where the catalog knows them, else as given. ``share_milli`` set means a fraction of
    one GPU (GPU sharing, 1-1000 of 1000); then ``count`` is 1.
    """

    count: int = Field(default=1, ge=0)
    types: list[str] = Field(default_factory=list)
    min_memory_gb: float | None = Field(default=None, ge=0)
    min_compute_capability: str | None = Field(default=None, pattern=r"^[0-9]+\.[0-9]+$")
    interconnect: Interconnect = Interconnect.ANY
    share_milli: int | None = Field(default=None, ge=1, le=1000)

    @model_validator(mode="after")
    def _check(self) -> GpuDemand:
        if self.share_milli is not None and self.count != 1:
            raise ValueError("a fractional GPU share (share_milli) needs count 1")
        return self


class TpuDemand(_Model):
    """TPU demand of one replica: generation, slice shape (``(2, 4)``, ``(4, 4, 8)``), chip count."""

    type: str | None = None
    topology: tuple[int, ...] | None = None
    chips: int | None = Field(default=None, ge=1)

    @field_validator("topology")
    @classmethod
    def _topology(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if v is not None and (len(v) not in (2, 3) or any(d < 1 for d in v)):
            raise ValueError("TPU topology must have 2 or 3 positive dimensions")
        return v

    @model_validator(mode="after")
    def _check(self) -> TpuDemand:
        if self.topology is not None:
            n = 1
            for d in self.topology:
                n *= d
            if self.chips is not None and self.chips != n:
                raise ValueError(f"chip count {self.chips} does not match topology ({n} chips)")
        return self

    @property
    def chip_count(self) -> int | None:
        """Chips needed: from the topology when given, else the explicit count."""
        if self.topology is not None:
            n = 1
            for d in self.topology:
                n *= d
            return n
        return self.chips


class FluxResource(_Model):
    """One vertex of a Flux RFC 14 resource request, kept for matching against a node's inner tree.

    ``count`` is resolved to a :class:`CountRange` (an integer ``n`` becomes ``min=max=n``).
    """

    type: str
    count: CountRange
    unit: str | None = None
    exclusive: bool | None = None
    label: str | None = None
    with_: list[FluxResource] = Field(default_factory=list, alias="with")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class DomainCount(_Model):
    """A Flux level above the node (RFC 14 ``rack: 2 > node: 1 > ...``): the group's replicas lie in
    exactly ``count`` distinct domains of type ``level`` (``rack``, ``block``, ``zone``, ``switch``,
    ``cluster``...), the same number in each. Honoured where the cluster describes that level (nodes
    carry a ``rack``/``block``/``zone``; the inventory is one ``cluster``); otherwise the decision notes
    that it was assumed.

    >>> DomainCount(level="rack", count=2)
    DomainCount(level='rack', count=2)
    """

    level: str = Field(min_length=1)
    count: int = Field(ge=1)


class Slices(_Model):
    """Kueue topology slices above the node (``podset-slice-required-topology`` with
    ``podset-slice-size``): the group's replicas in slices of ``size``, each slice inside one domain of
    ``level`` (``rack``, ``block``, ``zone``), several slices possibly in one domain. Equivalently, each
    domain holds a multiple of ``size`` of the group's replicas, and a node in no domain of the level holds
    none. Slices of one node are read as replicas holding a slice's pods instead (no rule needed).

    ``exclusive``: each slice alone in its domain (JobSet exclusive placement,
    ``alpha.jobset.sigs.k8s.io/exclusive-topology``: each child Job in a domain of its own, which no other
    Job's pods share): every domain the group uses holds exactly one slice, and no replica of anything
    else — another job, another group of this one — runs or is placed on any node of it.

    >>> Slices(level="rack", size=4)
    Slices(level='rack', size=4, exclusive=False)
    """

    level: Literal["rack", "block", "zone"]
    size: int = Field(ge=1)
    exclusive: bool = False


class TaskGroup(_Model):
    """``count`` identical replicas, each needing the resources below.

    ``one_per_node``: replicas must land on distinct nodes (Flux node-level slots, ``spread``).
    ``exclusive``: each replica owns its nodes whole (Flux ``exclusive``, ``dedicated``).
    ``nodes_per_replica``: a replica spans this many nodes (Flux ``slot`` with ``node count=2``).
    ``structure``: the Flux resource subtree of one replica, for matching sockets/cores inside a node.
    ``domains``: Flux levels above the node, outermost first; each ``count`` divides ``count``.
    ``slices``: Kueue slices above the node (:class:`Slices`); its ``size`` divides ``count``.
    """

    name: str = "default"
    count: int = Field(default=1, ge=1)
    count_range: CountRange | None = None
    cpu_cores: float = Field(default=0, ge=0)
    memory_gb: float = Field(default=0, ge=0)
    storage_gb: float = Field(default=0, ge=0)
    shm_gb: float = Field(default=0, ge=0)
    gpu: GpuDemand | None = None
    tpu: TpuDemand | None = None
    extra: dict[str, float] = Field(default_factory=dict)
    one_per_node: bool = False
    exclusive: bool = False
    nodes_per_replica: int = Field(default=1, ge=1)
    structure: list[FluxResource] = Field(default_factory=list)
    domains: list[DomainCount] = Field(default_factory=list)
    slices: Slices | None = None
    #: Node-label rules only this group's nodes must satisfy / prefer (SSS ``TaskGroup`` node properties:
    #: a master group asking for a feature the slave group does not); ANDed with ``Job.placement``.
    required: list[Rule] = Field(default_factory=list)
    preferred: list[LabelRule] = Field(default_factory=list)

    @model_validator(mode="after")
    def _domains_divide(self) -> TaskGroup:
        for d in self.domains:
            if self.count % d.count:
                raise ValueError(f"{self.count} replicas cannot be spread evenly over {d.count} {d.level}s")
        if self.slices is not None:
            if self.count % self.slices.size:
                raise ValueError(f"{self.count} replicas do not divide into slices of {self.slices.size}")
            if self.domains:
                raise ValueError("a task group has domain counts or slices, not both")
        return self

    @property
    def gpus_per_replica(self) -> int:
        return 0 if self.gpu is None else self.gpu.count

    @property
    def tpu_chips_per_replica(self) -> int:
        return 0 if self.tpu is None or self.tpu.chip_count is None else self.tpu.chip_count


class Toleration(_Model):
    """A Kubernetes toleration (``ext_ml_tolerations``, a placer extension in Kubernetes syntax): the job may
    use nodes with a matching taint. ``key`` None with ``Exists`` matches every taint; ``effect`` None
    matches every effect."""

    key: str | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    @model_validator(mode="after")
    def _shape(self) -> Toleration:
        if self.operator == "Exists" and self.value is not None:
            raise ValueError("a toleration with operator Exists has no value")
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without a key must use operator Exists")
        return self


def tolerated(taint: Any, tolerations: Iterable[Toleration]) -> bool:
    """Whether one of ``tolerations`` matches ``taint`` (anything with ``key``, ``value``, ``effect``), by
    Kubernetes' rule: same key, or no key with ``Exists``; ``Exists`` ignores the value, ``Equal``
    compares it; no effect matches every effect. (The independent checker has its own reading.)

    >>> from placer.topology.inventory import Taint
    >>> t = Taint(key="dedicated", value="ml", effect="NoSchedule")
    >>> tolerated(t, (Toleration(key="dedicated", value="ml"),))
    True
    >>> tolerated(t, (Toleration(key="dedicated", value="x"),))
    False
    """
    for tol in tolerations:
        if tol.key is not None and tol.key != taint.key:
            continue
        if tol.operator == "Equal" and tol.value != taint.value:
            continue
        if tol.effect is not None and tol.effect != taint.effect:
            continue
        return True
    return False


class DomainRule(_Model):
    """A rule on jobs within a topology domain: the nodes whose label ``key`` has one value (nodes without
    the label are in no domain). As required anti-affinity wider than a node (a Kubernetes pod's required
    ``podAntiAffinity`` term on ``topology.kubernetes.io/zone`` or a rack label), the job does not run on
    a node whose label ``key`` has the value a node of a job ``rule`` matches has, and no such job runs in
    the job's domain; as required affinity (``Placement.affinity_required``), the job runs only in a
    domain where such a job runs."""

    key: str = Field(min_length=1)
    rule: Rule


class SpreadRule(_Model):
    """A Kubernetes pod's topology spread constraint that keeps it out (``whenUnsatisfiable:
    DoNotSchedule``), as kube-scheduler's PodTopologySpread filter applies it: the domains are the values
    of node label ``key`` on the *eligible* nodes — those that have the label and, with
    ``honor_node_rules`` (kube's ``nodeAffinityPolicy: Honor``, the default), satisfy the job's own node
    selector and required node rules; each domain counts the running jobs ``rule`` matches on its
    eligible nodes (a job per node it runs on). The job runs only on a node that has ``key``, in a domain
    whose count, plus one when the job's own labels match ``rule``, exceeds the least count over the
    domains by at most ``max_skew`` — the least count being 0 while fewer than ``min_domains`` domains
    exist. With ``honor_taints`` (kube's ``nodeTaintsPolicy: Honor``; the default is ``Ignore``) a node
    with a ``NoSchedule`` or ``NoExecute`` taint the job does not tolerate is not eligible either. A pod's
    rule: the job has one replica, on a node (docs/placement-rules.md, rule 9).

    >>> SpreadRule(key="topology.kubernetes.io/zone", max_skew=1,
    ...            rule=LabelRule(key="app", operator="In", values=["web"])).max_skew
    1
    """

    key: str = Field(min_length=1)
    max_skew: int = Field(ge=1)
    rule: Rule
    min_domains: int | None = Field(default=None, ge=1)
    honor_node_rules: bool = True
    honor_taints: bool = False


class FlavorChoice(_Model):
    """A Kueue ResourceFlavor a pod set may be given (:class:`OneFlavor`): its name and node labels (none:
    every node)."""

    name: str = Field(min_length=1)
    node_labels: dict[str, str] = Field(default_factory=dict)


class OneFlavor(_Model):
    """Kueue gives each pod set of a workload *one* flavor of each resource group it requests and adds
    that flavor's node labels to the pods' node selector, so all the pods of one pod set run on the nodes
    of that one flavor. A task group of the job (a pod set) keeps its replicas on the nodes of one of
    ``flavors``: a node is the first flavor's, in this order, whose labels it all has (as quotas count
    it), and every replica of the group is on nodes of the same one. ``group`` is the ClusterQueue's
    resource group it comes from (its index), for messages.

    >>> OneFlavor(group=0, flavors=[FlavorChoice(name="a3", node_labels={"pool": "a3"}),
    ...                              FlavorChoice(name="spot")]).flavors[1].node_labels
    {}
    """

    group: int = Field(default=0, ge=0)
    flavors: list[FlavorChoice] = Field(min_length=2)


class Placement(_Model):
    """Where a job may (hard) and would like to (soft) run.

    ``required`` rules are ANDed hard constraints on node labels (node selector pairs become ``In`` rules
    here too, but are also kept in ``node_selector`` for explanations). ``preferred`` carry weights.
    ``anti_affinity`` rules are tested against the labels of *jobs* already on a node (OJS ML §7.3:
    "prevent co-location of specific jobs"); so are the preferred ones, ``anti_affinity_preferred`` (rather
    not beside) and ``affinity_preferred`` (rather beside), which weigh and never forbid. Node labels
    include derived keys the topology provides (``hostname``, ``gpu_type``, ``gpu_count``,
    ``gpu_memory_gb``, ``compute_capability``, ``gpu_interconnect``, ``zone``, ``region``, ``rack``,
    ``block``, ``capacity_class``).
    """

    node_selector: dict[str, str] = Field(default_factory=dict)
    required: list[Rule] = Field(default_factory=list)
    preferred: list[LabelRule] = Field(default_factory=list)
    anti_affinity: list[Rule] = Field(default_factory=list)
    #: Anti-affinity on a zone or rack rather than a node (:class:`DomainRule`).
    anti_affinity_domains: list[DomainRule] = Field(default_factory=list)
    anti_affinity_preferred: list[LabelRule] = Field(default_factory=list)
    #: Jobs the job would rather run beside (Kubernetes' preferred ``podAffinity`` on the hostname): a
    #: replica gains the rule's weight on a node where a job the rule matches sits, as
    #: ``anti_affinity_preferred`` loses it.
    affinity_preferred: list[LabelRule] = Field(default_factory=list)
    #: Jobs the job must run beside (a Kubernetes pod's required ``podAffinity`` terms; ``key``
    #: ``hostname`` for the node): every replica runs on a node whose label ``key`` has, for every term,
    #: the value of a node where a running job that matches *every* term's rule runs (kube-scheduler
    #: counts a pod for the terms only when it matches all of them). When no running job matches them all
    #: and the job's own labels do, it is the first of its group (kube-scheduler's special case): it runs
    #: on any node that has every key (docs/placement-rules.md, rule 9). A running job it needs is not
    #: evicted by the same decision. A pod's rule: the job has one replica, on a node.
    affinity_required: list[DomainRule] = Field(default_factory=list)
    #: Topology spread the job must keep (a Kubernetes pod's ``DoNotSchedule`` constraints,
    #: :class:`SpreadRule`). A pod's rule: the job has one replica, on a node.
    spread_required: list[SpreadRule] = Field(default_factory=list)
    gpu_affinity: GpuAffinity | None = None
    topology_scope: str | None = None  # "node" | "rack" | "block" | "zone": gang within one such domain
    data_locality: str | None = None
    spot_preference: SpotPreference = SpotPreference.ANY
    node_count: CountRange | None = None
    #: Taints the job tolerates (Kubernetes syntax; ``ext_ml_tolerations``). A job that requests GPUs or
    #: TPUs also tolerates that resource's taint (``nvidia.com/gpu``, ``amd.com/gpu``, ``google.com/tpu``),
    #: as Kubernetes' ExtendedResourceToleration admission adds it.
    tolerations: list[Toleration] = Field(default_factory=list)
    exclusive_nodes: bool = False
    #: One Kueue flavor per pod set (:class:`OneFlavor`), per resource group of the job's queue that
    #: gives it two flavors or more; set from the queue's ResourceFlavors when the job is read.
    one_flavor: list[OneFlavor] = Field(default_factory=list)


class Preemption(_Model):
    """OJS ML §8.2 plus ML extensions §7. ``preemptible`` None means "the default of the class"."""

    preemptible: bool | None = None
    grace_period_s: int = Field(default=30, ge=0)
    checkpoint_on_preempt: bool = False
    policy: PreemptionPolicy | None = None


class Checkpointing(_Model):
    """OJS ML §9.1 periodic checkpointing."""

    enabled: bool = False
    interval_s: int = Field(default=300, ge=1)
    storage_uri: str | None = None
    max_count: int = Field(default=3, ge=1)


class LastCheckpoint(_Model):
    """OJS ML §9.2 ``last_checkpoint`` (committed checkpoints only); v0.1.0 §4.4 has the same shape."""

    model_config = ConfigDict(extra="allow", frozen=True)

    job_id: str | None = None
    epoch: int | None = None
    step: int | None = None
    loss: float | None = None
    metrics: dict[str, Any] = Field(default_factory=dict)
    storage_key: str | None = None
    created_at: datetime | None = None


class Escalation(_Model):
    """OJS ML §8.4 priority escalation."""

    enabled: bool = False
    after_s: int = Field(default=3600, ge=0)
    target_class: PriorityClass | None = None


class ReservationRef(_Model):
    """OJS ML §8.3 / Flux / SSS ``ReservationId``."""

    id: str = Field(min_length=1)
    timeout_s: int | None = Field(default=None, ge=0)


class ModelRef(_Model):
    """OJS ML §4-5 model identity, for model locality (``models_loaded`` on workers)."""

    id: str | None = None
    version: str | None = None
    provider: str | None = None
    checksum: str | None = None
    format: str | None = None
    registry: str | None = None
    registry_uri: str | None = None


class Throttle(_Model):
    """At most ``max_running`` jobs of ``group`` run at once: a Slurm job array's ``%N``
    (``--array=0-99%4``, ``ArrayTaskThrottle``), one array task per job, the group the array's id.

    Both engines and the checker count the group's running jobs (``RunningJob.throttle_group``, evicted
    or not: an eviction gives no room back) plus what the decision places, so a decision never starts a
    job past it; a job left out for it is pending with ``THROTTLE``. Jobs of one group that state
    different limits are held to the smallest (one Slurm array has one throttle).

    >>> Throttle(group="6", max_running=2).max_running
    2
    """

    group: str = Field(min_length=1)
    max_running: int = Field(ge=1)


class GroupLimit(_Model):
    """What a group of jobs may hold at once: at most ``max_running`` of them run, and together they hold
    at most ``max_gpus`` GPUs (shares as fractions). A Slurm QOS's ``GrpJobs`` and ``GrpTRES=gres/gpu=N``
    (the group ``qos/<name>``), its per-user ``MaxJobsPU``/``MaxTRESPU`` (``qos/<name>/user/<user>``) and
    per-account ``MaxJobsPA``/``MaxTRESPA`` (``qos/<name>/account/<account>``).

    It works as a :class:`Throttle` does, with GPUs counted too: both engines and the checker count the
    group's running jobs (``RunningJob.limit_groups``; evicted or not: an eviction gives no room back) and
    what they hold, plus what the decision places, so a decision never starts a job past either limit; a
    job left out for it is pending with ``THROTTLE``, whose details name the group and the limit. Jobs of
    one group that state different limits are held to the smallest. A job may be in several groups (its
    QOS's, its user's under that QOS, its array's throttle): every one of them must have room.

    >>> GroupLimit(group="qos/gpu", max_gpus=16).max_running is None
    True
    >>> GroupLimit(group="qos/gpu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for GroupLimit
      Value error, a group limit needs max_running, max_gpus or both ...
    """

    group: str = Field(min_length=1)
    #: Jobs of the group running at once (Slurm's ``GrpJobs=0`` lets none run: 0 is allowed).
    max_running: int | None = Field(default=None, ge=0)
    max_gpus: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _some_limit(self) -> GroupLimit:
        if self.max_running is None and self.max_gpus is None:
            raise ValueError("a group limit needs max_running, max_gpus or both")
        return self


class Dependency(_Model):
    """This job may start only once job ``job`` reached ``condition``."""

    job: str = Field(min_length=1)
    condition: DependencyCondition = DependencyCondition.SUCCESS
    scheme: str | None = None  # the original scheme name (RFC 26 "afterok", SSS "OnSuccess", ...)
    exit_code: int | None = None  # SSS OnExit ``code``: satisfied only by this exit status (None: any)


# ---------------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------------


class JobAlternative(_Model):
    """Another shape the job may run in (SSS ``Or`` between node tests and amounts: "8 processors with
    4 GB, or 4 processors with 8 GB"): its own task groups and required node rules, everything else the
    job's. ``label`` says it in the document's words."""

    label: str = ""
    tasks: list[TaskGroup] = Field(min_length=1)
    required: list[Rule] = Field(default_factory=list)


class Job(_Model):
    """One pending (or running) job, whatever format it came in.

    ``alternatives``: other shapes the job may run in, besides ``tasks`` and ``placement.required``
    (SSS ``Or``); the engines run it in one of them (:meth:`variants`), the checker accepts any.
    """

    id: str = Field(min_length=1)
    name: str | None = None
    type: str | None = None
    source_format: str = "native"
    queue: str | None = None
    tenant: str | None = None
    project: str | None = None
    user: str | None = None
    priority_class: PriorityClass = PriorityClass.ON_DEMAND
    priority: int = 0
    submit_time: datetime | None = None
    not_before: datetime | None = None
    #: Scheduling gates (Kubernetes ``spec.schedulingGates``, e.g. Kueue's ``kueue.x-k8s.io/admission``):
    #: while any remains the job is not schedulable at all (kube-scheduler does not queue it, and the API
    #: server refuses a node for it); it waits with ``SCHEDULING_GATED``, and is never planned.
    gates: list[str] = Field(default_factory=list)
    duration_s: float | None = Field(default=None, ge=0)
    dependencies: list[Dependency] = Field(default_factory=list)
    workflow_id: str | None = None

    accelerator: Accelerator = Accelerator.CPU
    tasks: list[TaskGroup] = Field(default_factory=lambda: [TaskGroup()], min_length=1)
    distributed_strategy: DistributedStrategy | None = None
    precision: Precision | None = None
    runtime: str | None = None

    placement: Placement = Field(default_factory=Placement)
    preemption: Preemption = Field(default_factory=Preemption)
    #: Whether running jobs may be evicted to make room for this one. False for a non-preempting job (a
    #: Kubernetes pod whose ``preemptionPolicy`` is ``Never``, set from its PriorityClass): it keeps its
    #: priority — it is placed before lower-priority work and lower-priority work never evicts it — but
    #: it waits for free room, it never takes a running job's.
    may_preempt: bool = True
    checkpointing: Checkpointing = Field(default_factory=Checkpointing)
    last_checkpoint: LastCheckpoint | None = None
    reservation: ReservationRef | None = None
    throttle: Throttle | None = None
    #: Group limits it counts against (a Slurm QOS's ``GrpJobs``/``GrpTRES``, per user and per account).
    limits: list[GroupLimit] = Field(default_factory=list)
    #: Cluster-wide licences it needs while it runs, seats by name (Slurm ``--licenses=matlab:2,ansys``):
    #: it starts only while the cluster's pool (``Inventory.licenses``) less what running jobs hold has
    #: that many seats of each; else it waits with ``LICENSES``, as Slurm's reason ``Licenses`` says.
    licenses: dict[Annotated[str, Field(min_length=1)], Annotated[int, Field(ge=1)]] = Field(
        default_factory=dict
    )
    escalation: Escalation = Field(default_factory=Escalation)
    model: ModelRef = Field(default_factory=ModelRef)

    labels: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    unknown: dict[str, Any] = Field(default_factory=dict)
    envelope: Any = None
    alternatives: list[JobAlternative] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _infer_accelerator(cls, data: Any) -> Any:
        """OJS ML §3.1: infer the accelerator from GPU/TPU demands when the producer did not say."""
        if isinstance(data, dict) and "accelerator" not in data:
            tasks = data.get("tasks") or []

            def has(attr: str) -> bool:
                for t in tasks:
                    v = t.get(attr) if isinstance(t, dict) else getattr(t, attr, None)
                    if v is not None:
                        return True
                return False

            if has("tpu"):
                data = {**data, "accelerator": Accelerator.TPU}
            elif has("gpu"):
                data = {**data, "accelerator": Accelerator.GPU}
        return data

    @model_validator(mode="after")
    def _affinity_of_one_pod(self) -> Job:
        """Required pod affinity and topology spread are a pod's (kube-scheduler's filters decide pod by
        pod): a job of one replica on a node. A TPU replica runs on a TPU pod, which has no such labels;
        several replicas would each join the running jobs (or count each other), which the engines do not
        model."""
        for field, what in (
            ("affinity_required", "required pod affinity"),
            ("spread_required", "a DoNotSchedule topology spread constraint"),
        ):
            if not getattr(self.placement, field):
                continue
            if any(t.tpu is not None for t in self.tasks):
                raise ValueError(
                    f"placement.{field}: {what} is kept on nodes; a TPU task group runs on a TPU pod"
                )
            if sum(t.count for t in self.tasks) != 1:
                raise ValueError(
                    f"placement.{field}: {what} is a pod's; this job has "
                    f"{sum(t.count for t in self.tasks)} replicas (read each pod as a job of its own)"
                )
        return self

    # ---- derived views the solver uses -------------------------------------------------------------

    @property
    def total_gpus(self) -> int:
        """Whole GPUs over the gang (fractional shares count 0 here; see :attr:`total_gpu_milli`)."""
        return sum(
            t.count * t.gpus_per_replica for t in self.tasks if t.gpu is None or t.gpu.share_milli is None
        )

    @property
    def total_gpu_milli(self) -> int:
        """GPU demand in thousandths of a GPU over the gang, fractions included."""
        total = 0
        for t in self.tasks:
            if t.gpu is None:
                continue
            per = t.gpu.share_milli if t.gpu.share_milli is not None else 1000 * t.gpu.count
            total += t.count * per
        return total

    @property
    def total_tpu_chips(self) -> int:
        return sum(t.count * t.tpu_chips_per_replica for t in self.tasks)

    @property
    def is_preemptible(self) -> bool:
        """Explicit flag, else ``never`` policy, else the class default (only ``spot`` is)."""
        if self.preemption.policy is PreemptionPolicy.NEVER:
            return False
        if self.priority_class is PriorityClass.RESERVED:
            return False
        if self.preemption.preemptible is not None:
            return self.preemption.preemptible
        if self.preemption.policy is not None:
            return True
        return self.priority_class is PriorityClass.SPOT

    def variants(self) -> list[Job]:
        """The job in each of its shapes: itself (without alternatives), then one per alternative, in
        the document's order. A job without alternatives is its only variant.

        >>> alt = JobAlternative(label="4 cores", tasks=[TaskGroup(cpu_cores=4)])
        >>> job = Job(id="j", tasks=[TaskGroup(cpu_cores=8)], alternatives=[alt])
        >>> [v.tasks[0].cpu_cores for v in job.variants()]
        [8.0, 4.0]
        """
        if not self.alternatives:
            return [self]
        first = self.model_copy(update={"alternatives": []})
        return [
            first,
            *(
                first.model_copy(
                    update={
                        "tasks": a.tasks,
                        "placement": self.placement.model_copy(update={"required": a.required}),
                    }
                )
                for a in self.alternatives
            ),
        ]

    def may_span_nodes(self) -> bool:
        """Whether a single replica's GPUs may be split over several nodes (OJS ML §6: data/pipeline
        parallel, FSDP and DeepSpeed communicate across nodes; ``none`` and unset do not)."""
        return self.distributed_strategy not in (None, DistributedStrategy.NONE)


# ---------------------------------------------------------------------------------------------------
# Result of reading one job
# ---------------------------------------------------------------------------------------------------


class ReadResult(BaseModel):
    """What a reader returns for one job of a document: the job, or the issues that stopped it.

    ``warnings`` are for things that did not stop the job (SSS ``awarenessPolicy="Warn"``, ignored
    attributes). A document with several jobs (OJS workflow, SSS JobGroup) gives several results.

    ``path`` is where the job's envelope sits in its document (``[1]`` for the second envelope of a list,
    ``steps[0]`` in a workflow; empty for a document that is the job). The reader's own issues already
    carry it; the format-agnostic guards and batch checks run later on the normalized job and prefix their
    issues with it, so every issue of one job locates it the same way.
    """

    id: str
    ok: bool
    job: Job | None = None
    errors: list[Issue] = Field(default_factory=list)
    warnings: list[Issue] = Field(default_factory=list)
    source: str | None = None
    path: str = ""

    @property
    def unreadable(self) -> bool:
        """A whole document that failed (its result carries the document's name as its id): it names no
        job a decision could answer for, so ``place`` refuses it and ``check`` cannot account for it."""
        return not self.ok and self.id == self.source
