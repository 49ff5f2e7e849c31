"""Phase 2: each job as the solver places it — units of identical replicas with a per-replica need.

Why a separate, solver-side shape: the job model says what the producer asked for (a gang of task
groups, 16 GPUs "for FSDP"); the solver needs to know exactly what one replica takes from one node. This
module decides that, including the one non-obvious step, **splitting**: a single-replica job whose GPUs do
not fit on any node it may use, and whose distributed strategy crosses nodes (``Job.may_span_nodes``), is
cut into equal parts of ``d`` GPUs, ``d`` the largest divisor of its GPU count that fits the biggest
eligible node (16 GPUs on 8-GPU nodes: 2 x 8; 12 GPUs: 3 x 4), parts on distinct nodes, CPU and memory
divided evenly. Mixed splits (8 + 4) are not tried. A task group in Kueue slices is never split: its
replica is a pod, which runs on one node, and its slices count those pods.

>>> from placer.solver.jobs.model import Job, TaskGroup, GpuDemand
>>> job = Job(id="j", distributed_strategy="fsdp", tasks=[TaskGroup(cpu_cores=64, gpu=GpuDemand(count=16))])
>>> [(u.replicas, u.need.gpus, u.need.cpu, u.distinct) for u in expand(job, 0, max_node_gpus=8).units]
[(2, 8, 32.0, True)]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.solver.jobs.flavors import flavor_level
from placer.solver.jobs.model import (
    CountRange,
    FluxResource,
    GpuAffinity,
    GpuDemand,
    Interconnect,
    Job,
    LabelRule,
    Rule,
    TaskGroup,
    Toleration,
    TpuDemand,
    tolerated,  # Kubernetes' rule, shared with the job readers
)
from placer.solver.rules import holds, job_labels

__all__ = [
    "RESOURCE_TAINTS",
    "SCOPES",
    "JobPlan",
    "Need",
    "Unit",
    "demand_units",
    "expand",
    "largest_divisor_at_most",
    "tolerated",
    "tolerations_of",
    "unexpanded",
]

#: Node attributes a gang may be confined to (``Placement.topology_scope``).
SCOPES = ("node", "rack", "block", "zone", "nvlink_domain")


@dataclass(frozen=True, slots=True)
class Need:
    """What one replica takes from one node. ``milli`` is a fractional GPU share (then ``gpus`` is 0)."""

    gpus: int = 0
    milli: int = 0
    cpu: float = 0.0
    mem: float = 0.0
    storage: float = 0.0
    shm: float = 0.0
    #: Extended resources, ``(name, amount)`` sorted (``Unit.extra``): each node a replica (or a part of
    #: a split one) lies on gives that much of each.
    extra: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Unit:
    """``replicas`` identical replicas of one task group of one job."""

    job_idx: int
    job_id: str
    group: str
    replicas: int
    need: Need
    gpu: GpuDemand | None
    tpu: TpuDemand | None
    distinct: bool
    exclusive: bool
    rules: tuple[Rule, ...]
    preferred: tuple[LabelRule, ...]
    split: bool = False
    #: Flux count range of the replicas (``replicas`` is its minimum until greedy resolves it).
    count_range: CountRange | None = None
    #: Flux resource subtree of one replica, matched against nodes' inner trees (sockets, cores).
    structure: tuple[FluxResource, ...] = ()
    #: Taints the unit's replicas tolerate: the job's own, plus the taint of each extended resource it
    #: requests (Kubernetes' ExtendedResourceToleration).
    tolerations: tuple[Toleration, ...] = ()
    #: ``(model id, version)`` when the job pins a model version (OJS ML §4: only workers with that
    #: version loaded or accessible; a node advertising the model at other versions only is neither).
    model_pin: tuple[str, str] | None = None
    #: Flux levels above the node, outermost first: ``(level, count)`` — the replicas lie in exactly
    #: ``count`` domains of ``level``, as many in each (:mod:`placer.solver.domains`). After
    #: ``honour_domains`` only the levels the cluster describes are left. A pod set of a Kueue queue
    #: that gives it a choice of flavors has each resource group's flavors as a level first, one domain
    #: of it (``jobs.flavors.flavor_level``): all its pods on the nodes of one flavor.
    domains: tuple[tuple[str, int], ...] = ()
    #: Kueue slices above the node: ``(level, size)`` — each domain of ``level`` holds a multiple of
    #: ``size`` of the replicas, a node in none of them holds none (``jobs.model.Slices``).
    slices: tuple[str, int] | None = None
    #: Each slice alone in its domain (``Slices.exclusive``, JobSet exclusive placement): one slice per
    #: domain, and nothing else on any node of it, running or placed.
    exclusive_domains: bool = False
    #: Extended resources one replica asks for, ``(name, amount)`` sorted (a Kubernetes extended resource
    #: or ``hugepages-*``; a Flux resource type beyond cores, GPUs, memory and storage; an SSS
    #: ``Resource``, ``Swap`` or ``Network``): only nodes that have that much of each free may hold it,
    #: and the replicas placed count it down (:mod:`placer.topology.extended`). Also ``need.extra``.
    extra: tuple[tuple[str, float], ...] = ()


@dataclass
class JobPlan:
    """A job ready for placement: its units, weight, and gang-level constraints."""

    job: Job
    idx: int
    units: list[Unit]
    scope: str | None
    nvlink: bool
    anti: tuple[Rule, ...]
    labels: dict[str, str]
    demand_units: float
    weight: int = 0
    notes: list[str] = field(default_factory=list)
    #: Anti-affinity on a zone or rack: ``(node label key, rule)`` each (``Placement.anti_affinity_domains``).
    anti_domains: tuple[tuple[str, Rule], ...] = ()
    #: The pod-affinity group this job would start in the decision at hand (no running job matches its
    #: terms, and its own labels do: :func:`~placer.solver.affinity.required_affinity`); set by the problem
    #: phase. Of the jobs of a decision that would start one group, at most one is placed
    #: (:func:`~placer.solver.apart.one_of_each`).
    starts: str | None = None

    @property
    def id(self) -> str:
        return self.job.id

    @property
    def replicas(self) -> int:
        return sum(u.replicas for u in self.units)

    @property
    def is_tpu(self) -> bool:
        return any(u.tpu is not None for u in self.units)


def _selector_rules(job: Job) -> tuple[Rule, ...]:
    """The node selector as ``In`` rules plus the required rules, each once (readers already turn
    selectors into required rules)."""
    if not job.placement.node_selector:
        return tuple(job.placement.required)
    sel = tuple(
        LabelRule(key=k, operator="In", values=[v]) for k, v in sorted(job.placement.node_selector.items())
    )
    seen: set[object] = set()
    out: list[Rule] = []
    for r in (*sel, *job.placement.required):
        key = (r.key, r.operator, tuple(r.values)) if isinstance(r, LabelRule) else r.model_dump_json()
        if key not in seen:
            seen.add(key)
            out.append(r)
    return tuple(out)


def largest_divisor_at_most(n: int, cap: int) -> int:
    """The GPUs per node when a job of ``n`` GPUs is split over nodes of at most ``cap`` (equal parts);
    the simulator's measures and the Philly trace reader split jobs this same way.

    >>> largest_divisor_at_most(16, 8), largest_divisor_at_most(12, 8), largest_divisor_at_most(7, 4)
    (8, 6, 1)
    """
    for d in range(min(n, cap), 0, -1):
        if n % d == 0:
            return d
    return 1


def expand(job: Job, idx: int, *, max_node_gpus: int) -> JobPlan:
    """Turn ``job`` into a :class:`JobPlan`. ``max_node_gpus`` is the GPU count of the biggest node the
    job could use (by type), used only to decide splitting."""
    job_rules = _selector_rules(job)
    dedicated = job.placement.gpu_affinity is GpuAffinity.DEDICATED or job.placement.exclusive_nodes
    spread = job.placement.gpu_affinity is GpuAffinity.SPREAD
    labels = job_labels(job)
    self_anti = any(holds(r, labels) for r in job.placement.anti_affinity)
    units: list[Unit] = []
    notes: list[str] = []
    # One Kueue flavor per pod set: a level of each unit's domains, one domain of it (the outermost).
    flavors = tuple((flavor_level(o), 1) for o in job.placement.one_flavor)
    for g in job.tasks:
        replicas, gpu = g.count, g.gpu
        extra = tuple(sorted((k, float(v)) for k, v in g.extra.items() if v > 0))
        need = Need(
            gpus=0 if gpu is None or gpu.share_milli is not None else gpu.count,
            milli=0 if gpu is None or gpu.share_milli is None else gpu.share_milli,
            cpu=g.cpu_cores,
            mem=g.memory_gb,
            storage=g.storage_gb,
            shm=g.shm_gb,
            extra=extra,
        )
        split = False
        # ``spread`` (MLX §7.1, "spread GPU allocation across nodes"): one GPU per node where the job may
        # span nodes; otherwise a replica is split only when no node holds it. A group in Kueue slices is
        # never split: its replica is a pod, which runs on one node, and its slices count those pods.
        most = 1 if spread else max_node_gpus
        if (
            g.slices is None
            and gpu is not None
            and gpu.share_milli is None
            and replicas == 1
            and most > 0
            and max_node_gpus > 0
            and gpu.count > most
            and job.may_span_nodes()
        ):
            d = largest_divisor_at_most(gpu.count, most)
            parts = gpu.count // d
            replicas, split = parts, True
            need = Need(
                gpus=d,
                cpu=g.cpu_cores / parts,
                mem=g.memory_gb / parts,
                storage=g.storage_gb / parts,
                shm=g.shm_gb / parts,
                extra=extra,
            )
            notes.append(
                f"task group {g.name!r}: {gpu.count} GPUs split into {parts} parts of {d} on distinct nodes"
            )
        units.append(
            Unit(
                job_idx=idx,
                job_id=job.id,
                group=g.name,
                replicas=replicas,
                need=need,
                gpu=gpu,
                tpu=g.tpu,
                distinct=split or g.one_per_node or spread or self_anti or g.nodes_per_replica > 1,
                exclusive=g.exclusive or dedicated,
                rules=job_rules + tuple(g.required),
                preferred=tuple(job.placement.preferred) + tuple(g.preferred),
                split=split,
                count_range=None if split else g.count_range,
                structure=tuple(g.structure),
                model_pin=(job.model.id, job.model.version) if job.model.id and job.model.version else None,
                tolerations=tolerations_of(job, g),
                domains=(flavors if g.tpu is None and (replicas > 1 or g.count_range is not None) else ())
                + (() if split else tuple((d.level, d.count) for d in g.domains)),
                slices=None if g.slices is None else (g.slices.level, g.slices.size),  # never split
                exclusive_domains=g.slices is not None and g.slices.exclusive,
                extra=extra,
            )
        )
        if split and extra:
            asked = ", ".join(f"{v:g} {k}" for k, v in extra)
            notes.append(f"task group {g.name!r}: {asked} on each node of the split replica")
    total_gpus = sum(u.replicas * u.need.gpus for u in units)
    nvlink = (
        any(u.gpu is not None and u.gpu.interconnect is Interconnect.NVLINK for u in units) and total_gpus > 1
    )
    scope = job.placement.topology_scope
    multi = sum(u.replicas for u in units if u.tpu is None) > 1
    if nvlink and multi and scope != "node":
        # All GPUs of the gang inside one NVLink domain (OJS ML §3.2). A domain lies within a node (HGX)
        # or is a rack (NVL72); the job's own rack/block/zone scope still holds on top of it (a node
        # without that attribute breaks it, rule 12), hence the composite scope.
        scope = "nvlink_domain" if scope in (None, "nvlink_domain") else f"nvlink_domain+{scope}"
    demand = demand_units(job)
    return JobPlan(
        job=job,
        idx=idx,
        units=units,
        scope=scope,
        nvlink=nvlink,
        anti=tuple(job.placement.anti_affinity),
        labels=labels,
        demand_units=demand,
        notes=notes,
        anti_domains=tuple((d.key, d.rule) for d in job.placement.anti_affinity_domains),
    )


#: The taint each requested extended resource brings a toleration for (Kubernetes' ExtendedResourceToleration
#: admission controller, which GKE and EKS enable): GPU pods tolerate their GPU vendor's taint, TPU pods
#: Google's TPU taint.
RESOURCE_TAINTS: dict[str, tuple[str, ...]] = {
    "gpu": ("nvidia.com/gpu", "amd.com/gpu"),
    "tpu": ("google.com/tpu",),
}


_IMPLICIT = {
    kind: tuple(Toleration(key=k, operator="Exists") for k in keys) for kind, keys in RESOURCE_TAINTS.items()
}


def demand_units(job: Job) -> float:
    """The job's size in GPU-equivalents (``JobPlan.demand_units``): GPUs (shares as fractions), else TPU
    chips, else CPU cores over 16, else a token 0.1 — what the relaxation bound packs and what breaks ties
    between equally urgent jobs (bigger first).

    >>> demand_units(Job(id="a", tasks=[{"count": 2, "gpu": {"count": 4}}])), demand_units(Job(id="c"))
    (8.0, 0.1)
    """
    return (
        job.total_gpu_milli / 1000
        or job.total_tpu_chips
        or sum(g.count * g.cpu_cores for g in job.tasks) / 16.0
        or 0.1
    )


def unexpanded(job: Job, idx: int) -> JobPlan:
    """A plan for a job the deadline left unexamined before its demand was expanded: no units (nothing
    to place, no candidates), the job's labels and size only. Such a job stays pending,
    ``NOT_CONSIDERED`` (:mod:`placer.solver.problem`)."""
    return JobPlan(
        job=job,
        idx=idx,
        units=[],
        scope=None,
        nvlink=False,
        anti=(),
        labels={},
        demand_units=demand_units(job),
    )


def tolerations_of(job: Job, group: TaskGroup) -> tuple[Toleration, ...]:
    """The job's tolerations, plus ``Exists`` for the taint of each extended resource the group requests."""
    implicit: tuple[Toleration, ...] = ()
    if group.gpu is not None and (group.gpu.count or group.gpu.share_milli):
        implicit += _IMPLICIT["gpu"]
    if group.tpu is not None:
        implicit += _IMPLICIT["tpu"]
    # Kubernetes extended resources are domain-qualified (``vpc.amazonaws.com/efa``); Flux and SSS names
    # and ``hugepages-*`` are not, and bring no toleration.
    implicit += tuple(Toleration(key=k, operator="Exists") for k in sorted(group.extra) if "/" in k)
    return (*job.placement.tolerations, *implicit)
