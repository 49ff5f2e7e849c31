"""Pending jobs of the synthetic scenarios: a stated mix of job kinds, sizes, GPU types and constraints.

Why stated shares: a benchmark is only comparable across solver versions if its input is, so every
distribution is a module constant (documented in ``docs/scenarios-synthetic.md``) and the tests check the
generated jobs against them. Job kinds and priority classes are exact quotas (largest remainder, then
shuffled), so a 1,000-job scenario has exactly 350 single-GPU jobs; the rest is drawn per job.

Job kinds (:data:`KIND_SHARES`):

* ``single_gpu`` — one GPU of a named type (or any type), mostly inference;
* ``nvlink`` — 2, 4 or 8 GPUs with interconnect ``nvlink`` (all in one NVLink domain, so never L40S);
* ``pcie_multi`` — 2 or 4 GPUs, interconnect ``any``, inference replicas (L40S or any type);
* ``gang_split`` — one task group of one replica asking 16-64 GPUs, ``distributed_strategy`` fsdp or
  data_parallel: the solver must split it over nodes (``Job.may_span_nodes``); interconnect ``any``, as a
  16-GPU ``nvlink`` demand could never fit an 8-GPU domain;
* ``gang_replicas`` — an explicit gang of 2-8 replicas of 8 NVLink GPUs, ``one_per_node``;
* ``tpu`` — a v5e slice (2x2, 2x4 or 4x4);
* ``cpu`` — CPU-only, 1-4 replicas.

Every job is feasible on the empty cluster: hard node affinity (zone, capacity class, node selectors) is
made from a pool that has the job's GPU type and room for the whole job; CPU and memory per GPU never
exceed the smallest per-GPU share of the node shapes the job may use.

>>> import random
>>> from placer.scenarios.synthetic.layout import Layout, Pool
>>> lay = Layout(pools=(Pool("dgx-h100", "us-central1-a", "reserved", 8), Pool("cpu", "us-central1-a",
...     "on-demand", 2)))
>>> jobs = pending_jobs(lay, 20, random.Random(0), prefix="t")
>>> len(jobs), jobs[0].id, sum(j.metadata["kind"] == "single_gpu" for j in jobs)
(20, 't-00001', 8)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from placer.scenarios.synthetic.layout import Layout, Pool
from placer.scenarios.synthetic.running import APPS, PRIORITY_BAND, TEAMS, pick
from placer.scenarios.synthetic.scenario import NOW
from placer.solver.jobs.model import (
    AffinityOperator,
    Checkpointing,
    DistributedStrategy,
    GpuAffinity,
    GpuDemand,
    Interconnect,
    Job,
    LabelRule,
    Placement,
    Precision,
    Preemption,
    PreemptionPolicy,
    PriorityClass,
    SpotPreference,
    TaskGroup,
    TpuDemand,
)
from placer.topology import gpu_info

__all__ = [
    "ANTI_AFFINITY_SHARE",
    "CLASS_SHARES",
    "CPU_REPLICAS",
    "CPU_SELECTOR_SHARE",
    "GANG_REPLICAS",
    "GANG_SPLIT_SIZES",
    "GPU_TYPE_SHARES",
    "KIND_SHARES",
    "NVLINK_SIZES",
    "PCIE_SIZES",
    "PREFERRED_SHARE",
    "REQUIRED_SHARE",
    "TPU_SHAPES",
    "T",
    "Types",
    "pending_jobs",
    "quotas",
]

T = TypeVar("T")
Types = tuple[str, ...]

#: Share of each job kind among pending jobs (exact quotas).
KIND_SHARES: tuple[tuple[str, float], ...] = (
    ("single_gpu", 0.35),
    ("nvlink", 0.25),
    ("pcie_multi", 0.10),
    ("gang_split", 0.10),
    ("gang_replicas", 0.07),
    ("tpu", 0.05),
    ("cpu", 0.08),
)
#: Share of each priority class among pending jobs (exact quotas); numeric priority is drawn uniformly
#: in the class's band (:data:`placer.scenarios.synthetic.running.PRIORITY_BAND`).
CLASS_SHARES: tuple[tuple[str, float], ...] = (("reserved", 0.15), ("on-demand", 0.55), ("spot", 0.30))

#: Requested GPU types per kind; ``()`` means any type.
GPU_TYPE_SHARES: dict[str, tuple[tuple[Types, float], ...]] = {
    "single_gpu": (
        (("nvidia-h100",), 0.25),
        (("nvidia-a100",), 0.25),
        (("nvidia-l40s",), 0.25),
        (("nvidia-b200",), 0.05),
        ((), 0.20),
    ),
    "nvlink": (
        (("nvidia-h100",), 0.45),
        (("nvidia-a100",), 0.30),
        (("nvidia-b200",), 0.10),
        (("nvidia-h100", "nvidia-a100"), 0.10),
        ((), 0.05),
    ),
    "pcie_multi": ((("nvidia-l40s",), 0.70), ((), 0.30)),
    "gang_split": ((("nvidia-h100",), 0.55), (("nvidia-a100",), 0.30), (("nvidia-b200",), 0.15)),
    "gang_replicas": ((("nvidia-h100",), 0.55), (("nvidia-a100",), 0.30), (("nvidia-b200",), 0.15)),
}
NVLINK_SIZES: tuple[tuple[int, float], ...] = ((2, 0.40), (4, 0.35), (8, 0.25))
PCIE_SIZES: tuple[tuple[int, float], ...] = ((2, 0.60), (4, 0.40))
#: GPUs of a ``gang_split`` job (one replica the solver splits).
GANG_SPLIT_SIZES: tuple[tuple[int, float], ...] = ((16, 0.40), (32, 0.35), (48, 0.10), (64, 0.15))
#: Replicas (of 8 GPUs each) of a ``gang_replicas`` job.
GANG_REPLICAS: tuple[tuple[int, float], ...] = ((2, 0.35), (4, 0.35), (6, 0.10), (8, 0.20))
TPU_SHAPES: tuple[tuple[tuple[int, int], float], ...] = (((2, 4), 0.50), ((4, 4), 0.35), ((2, 2), 0.15))
CPU_REPLICAS: tuple[tuple[int, float], ...] = ((1, 0.70), (2, 0.15), (4, 0.15))

#: Probability that a GPU job (any GPU kind) has hard node affinity (zone or capacity class).
REQUIRED_SHARE = 0.12
#: Probability that a GPU job has a preferred (soft) affinity rule.
PREFERRED_SHARE = 0.20
#: Probability that an inference job has anti-affinity against its own app (spread its replicas).
ANTI_AFFINITY_SHARE = 0.15
#: Probability that a CPU job pins itself to CPU-only nodes (node selector ``accelerator: cpu``).
CPU_SELECTOR_SHARE = 0.30

_CPU_PER_GPU = (4, 8, 12, 16, 20, 24)
_MEM_PER_GPU = (32, 64, 96, 128, 160, 192)
_FP8_CC = (8, 9)


def quotas(n: int, shares: Sequence[tuple[T, float]], rng: random.Random) -> list[T]:
    """``n`` values in exact proportion to ``shares`` (largest remainder), in random order.

    >>> sorted(quotas(10, [("a", 0.35), ("b", 0.65)], random.Random(0)))
    ['a', 'a', 'a', 'a', 'b', 'b', 'b', 'b', 'b', 'b']
    """
    total = sum(w for _, w in shares)
    exact = [(v, n * w / total) for v, w in shares]
    counts = [int(x) for _, x in exact]
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i][1] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    out = [v for (v, _), c in zip(exact, counts, strict=True) for _ in range(c)]
    rng.shuffle(out)
    return out


class _Context:
    """What the generator needs to know about the layout: shapes per type, pools, rack sizes."""

    def __init__(self, layout: Layout, rng: random.Random, now: datetime):
        self.layout = layout
        self.rng = rng
        self.now = now
        self.types = layout.gpu_types()
        self.gpus_of = {t: sum(p.nodes * 8 for p in layout.pools_of(t)) for t in self.types}
        self.max_rack = {
            t: max(min(p.nodes, layout.nodes_per_rack) for p in layout.pools_of(t)) for t in self.types
        }
        self.tpu_generations = tuple(dict.fromkeys(p.generation for p in layout.tpu_pods))
        self.has_cpu_nodes = bool(layout.pools_of(None))

    def eligible(self, types: Types, nvlink: bool) -> Types:
        """The layout's GPU types a demand of ``types`` may use."""
        out = types or self.types
        if nvlink:
            out = tuple(t for t in out if gpu_info(t).interconnect == "nvlink")
        return tuple(t for t in out if t in self.gpus_of)

    def draw_types(self, kind: str, cap: int = 1) -> Types:
        """A type choice of ``kind``'s table that the layout has, with at least ``cap`` GPUs per type
        (so a 64-GPU gang never asks a type with 32 GPUs)."""
        table = [
            (types, w)
            for types, w in GPU_TYPE_SHARES[kind]
            if self.eligible(types, kind in ("nvlink", "gang_replicas"))
            and all(self.gpus_of.get(t, 0) >= cap for t in types)
        ]
        return pick(self.rng, table)

    def per_gpu(self, types: Types) -> tuple[float, float]:
        """(cores, GB) per GPU: a draw capped by the smallest per-GPU share of the eligible shapes."""
        shapes = [self.layout.shape_of(t) for t in types]
        cpu_cap = min(s.cpu_per_gpu for s in shapes)
        mem_cap = min(s.memory_per_gpu for s in shapes)
        cpu = self.rng.choice([c for c in _CPU_PER_GPU if c <= cpu_cap] or [1])
        mem = self.rng.choice([m for m in _MEM_PER_GPU if m <= mem_cap] or [8])
        return float(cpu), float(mem)


def _precision(rng: random.Random, workload: str, types: Types) -> Precision:
    fp8_ok = all(
        tuple(int(x) for x in (gpu_info(t).compute_capability or "0.0").split(".")) >= _FP8_CC for t in types
    )
    if workload == "training":
        p = pick(rng, ((Precision.BF16, 0.7), (Precision.FP8, 0.2), (Precision.FP32, 0.1)))
    else:
        p = pick(rng, ((Precision.FP16, 0.4), (Precision.INT8, 0.3), (Precision.FP8, 0.3)))
    return Precision.BF16 if p is Precision.FP8 and not fp8_ok else p


def _gpu_group(
    ctx: _Context, kind: str
) -> tuple[list[TaskGroup], Types, str, DistributedStrategy | None, int]:
    """Task groups, requested types, workload, strategy and nodes needed of one GPU job of ``kind``."""
    rng = ctx.rng
    strategy: DistributedStrategy | None = None
    replicas, one_per_node, nodes = 1, False, 1
    if kind == "single_gpu":
        types, count, ic = ctx.draw_types(kind), 1, Interconnect.ANY
        workload = pick(rng, (("inference", 0.6), ("training", 0.25), ("batch", 0.15)))
    elif kind == "nvlink":
        types, count, ic = ctx.draw_types(kind), pick(rng, NVLINK_SIZES), Interconnect.NVLINK
        workload = pick(rng, (("training", 0.75), ("inference", 0.25)))
    elif kind == "pcie_multi":
        types, count, ic = ctx.draw_types(kind), pick(rng, PCIE_SIZES), Interconnect.ANY
        workload = "inference"
    elif kind == "gang_split":
        sizes = [(s, w) for s, w in GANG_SPLIT_SIZES if s <= max(ctx.gpus_of.values()) // 2] or [(16, 1.0)]
        count = pick(rng, sizes)
        types, ic, workload = ctx.draw_types(kind, cap=2 * count), Interconnect.ANY, "training"
        strategy = pick(rng, ((DistributedStrategy.FSDP, 0.6), (DistributedStrategy.DATA_PARALLEL, 0.4)))
        nodes = count // 8
    else:  # gang_replicas
        sizes = [(r, w) for r, w in GANG_REPLICAS if r * 8 <= max(ctx.gpus_of.values()) // 2] or [(2, 1.0)]
        replicas = pick(rng, sizes)
        types, count, ic, workload = (
            ctx.draw_types(kind, cap=16 * replicas),
            8,
            Interconnect.NVLINK,
            "training",
        )
        strategy = pick(rng, ((DistributedStrategy.DATA_PARALLEL, 0.6), (DistributedStrategy.DEEPSPEED, 0.4)))
        one_per_node, nodes = True, replicas
    eligible = ctx.eligible(types, ic is Interconnect.NVLINK)
    cpu, mem = ctx.per_gpu(eligible)
    min_mem = None
    if kind == "single_gpu" and not types and rng.random() < 0.3:
        min_mem = rng.choice((40.0, 80.0))
    group = TaskGroup(
        name="worker" if replicas > 1 else "main",
        count=replicas,
        cpu_cores=cpu * count,
        memory_gb=mem * count,
        gpu=GpuDemand(count=count, types=list(types), interconnect=ic, min_memory_gb=min_mem),
        one_per_node=one_per_node,
    )
    return [group], eligible, workload, strategy, nodes


def _required(ctx: _Context, eligible: Types, nodes: int) -> tuple[dict[str, str], list[LabelRule]]:
    """Hard affinity built from one pool that can hold the job: a zone or a capacity-class rule."""
    rng = ctx.rng
    pools: list[Pool] = [p for t in eligible for p in ctx.layout.pools_of(t) if p.nodes >= nodes]
    if not pools:
        return {}, []
    pool = rng.choice(pools)
    if rng.random() < 0.5:
        key, values = "zone", [pool.zone]
    else:
        key, values = "capacity_class", [pool.capacity_class]
        other = "reserved" if pool.capacity_class != "reserved" else "on-demand"
        if rng.random() < 0.5:
            values.append(other)
    selector = {key: values[0]} if len(values) == 1 and rng.random() < 0.5 else {}
    return selector, [LabelRule(key=key, operator=AffinityOperator.IN, values=values)]


def _preferred(ctx: _Context, cls: str, types: Types) -> list[LabelRule]:
    rng = ctx.rng
    zones = sorted({p.zone for p in ctx.layout.pools})
    options = ["zone", "capacity_class"] + (["gpu_type"] if len(types) != 1 else [])
    what = rng.choice(options)
    if what == "zone":
        return [
            LabelRule(
                key="zone",
                operator=AffinityOperator.IN,
                values=[rng.choice(zones)],
                weight=rng.randint(10, 80),
            )
        ]
    if what == "capacity_class":
        value = "spot" if cls == "spot" else "reserved"
        return [LabelRule(key="capacity_class", operator=AffinityOperator.IN, values=[value], weight=50)]
    choices = types or ctx.types
    return [LabelRule(key="gpu_type", operator=AffinityOperator.IN, values=[rng.choice(choices)], weight=60)]


def _job(ctx: _Context, index: int, prefix: str, kind: str, cls: str) -> Job:
    rng, now = ctx.rng, ctx.now
    placement: dict[str, object] = {}
    strategy: DistributedStrategy | None = None
    precision: Precision | None = None
    if kind == "tpu":
        shape = pick(rng, TPU_SHAPES)
        tasks = [TaskGroup(tpu=TpuDemand(type=ctx.tpu_generations[0], topology=shape))]
        workload = (
            "training" if shape[0] * shape[1] >= 16 else pick(rng, (("training", 0.6), ("inference", 0.4)))
        )
        precision = Precision.BF16
    elif kind == "cpu":
        cores = float(rng.choice((4, 8, 16, 32)))
        tasks = [
            TaskGroup(count=pick(rng, CPU_REPLICAS), cpu_cores=cores, memory_gb=cores * rng.choice((2, 4, 8)))
        ]
        workload = "batch"
        if ctx.has_cpu_nodes and rng.random() < CPU_SELECTOR_SHARE:
            placement["node_selector"] = {"accelerator": "cpu"}
            placement["required"] = [
                LabelRule(key="accelerator", operator=AffinityOperator.IN, values=["cpu"])
            ]
    else:
        tasks, eligible, workload, strategy, nodes = _gpu_group(ctx, kind)
        types = tuple(tasks[0].gpu.types) if tasks[0].gpu else ()
        precision = _precision(rng, workload, eligible)
        if rng.random() < REQUIRED_SHARE:
            selector, rules = _required(ctx, eligible, nodes)
            placement["node_selector"], placement["required"] = selector, rules
        if rng.random() < PREFERRED_SHARE:
            placement["preferred"] = _preferred(ctx, cls, types)
        if kind in ("gang_split", "gang_replicas"):
            scope = pick(rng, ((None, 0.5), ("zone", 0.3), ("rack", 0.2)))
            if scope == "rack" and nodes > min(ctx.max_rack[t] for t in eligible):
                scope = "zone"
            placement["topology_scope"] = scope
        if kind == "nvlink" and rng.random() < 0.3:
            placement["gpu_affinity"] = GpuAffinity.PACK
    team = rng.choice(TEAMS)
    app = rng.choice(APPS[workload])
    if workload == "inference" and rng.random() < ANTI_AFFINITY_SHARE:
        placement["anti_affinity"] = [LabelRule(key="app", operator=AffinityOperator.IN, values=[app])]
    if cls == "spot" and rng.random() < 0.5:
        placement["spot_preference"] = SpotPreference.SPOT_PREFERRED
    elif cls == "reserved" and rng.random() < 0.3:
        placement["spot_preference"] = SpotPreference.ON_DEMAND_ONLY
    preemption = Preemption()
    if cls == "on-demand" and workload == "training" and rng.random() < 0.4:
        preemption = Preemption(
            policy=PreemptionPolicy.SAVE_AND_RETRY, checkpoint_on_preempt=True, grace_period_s=300
        )
    elif cls == "reserved" and rng.random() < 0.5:
        preemption = Preemption(policy=PreemptionPolicy.NEVER)
    checkpointing = Checkpointing()
    if workload == "training":
        checkpointing = Checkpointing(
            enabled=True,
            interval_s=rng.choice((600, 1800, 3600)),
            storage_uri=f"s3://checkpoints/{team}/{app}",
        )
        duration = float(rng.randint(1, 72) * 3600)
    elif workload == "inference":
        duration = float(rng.choice((3600, 4 * 3600, 24 * 3600)))
    else:
        duration = float(rng.randint(10, 240) * 60)
    lo, hi = PRIORITY_BAND[cls]
    return Job(
        id=f"{prefix}-{index:05d}",
        name=f"{app}-{index}",
        source_format="synthetic",
        queue=workload,
        tenant=team,
        project=f"{team}-{app}",
        user=f"user{rng.randint(1, 200):03d}",
        priority_class=PriorityClass(cls),
        priority=rng.randint(lo, hi),
        submit_time=now - timedelta(seconds=rng.randint(30, 12 * 3600)),
        duration_s=duration,
        tasks=tasks,
        distributed_strategy=strategy,
        precision=precision,
        placement=Placement.model_validate(placement),
        preemption=preemption,
        checkpointing=checkpointing,
        labels={"app": app, "team": team, "workload": workload},
        metadata={"kind": kind},
    )


def pending_jobs(
    layout: Layout, n: int, rng: random.Random, *, prefix: str = "job", now: datetime = NOW
) -> list[Job]:
    """``n`` pending jobs for a cluster of ``layout``, drawn with ``rng``; ``metadata["kind"]`` says which
    kind (:data:`KIND_SHARES`) each is. Kinds the layout cannot serve become the nearest it can: TPU
    without pods -> ``single_gpu``; NVLink kinds without NVLink GPUs -> ``pcie_multi``.

    >>> from placer.scenarios.synthetic.layout import Layout, Pool
    >>> lay = Layout(pools=(Pool("l40s", "us-east-1a", "spot", 4),))
    >>> from collections import Counter
    >>> sorted(Counter(j.metadata["kind"] for j in pending_jobs(lay, 10, random.Random(1))).items())
    [('cpu', 1), ('pcie_multi', 5), ('single_gpu', 4)]
    """
    ctx = _Context(layout, rng, now)
    kinds = quotas(n, KIND_SHARES, rng)
    classes = quotas(n, CLASS_SHARES, rng)
    out: list[Job] = []
    for i, (kind, cls) in enumerate(zip(kinds, classes, strict=True), start=1):
        if kind == "tpu" and not ctx.tpu_generations:
            kind = "single_gpu"
        elif kind in ("nvlink", "gang_split", "gang_replicas") and not ctx.eligible((), nvlink=True):
            kind = "pcie_multi"
        out.append(_job(ctx, i, prefix, kind, cls))
    return out
