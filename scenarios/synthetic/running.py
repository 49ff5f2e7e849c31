"""What already runs on a synthetic cluster: a fragmented, realistic set of
:class:`~placer.topology.RunningJob`.

Why this shape: placement quality only shows on a cluster that is partly busy in the way real clusters
are — big training gangs holding whole nodes, and a long tail of 1-, 2- and 4-GPU jobs scattered over many
nodes, leaving most nodes partly used. The generator reproduces that:

1. job sizes are drawn from :data:`RUNNING_GPU_SIZES` (and the GPU type in proportion to each type's GPUs)
   until they add up to exactly :data:`BUSY_GPU_FRACTION` of the GPUs (a draw never overshoots the rest);
2. whole-node jobs (8 GPUs, and 16/32/64-GPU gangs of 8-GPU replicas on distinct nodes of one zone,
   consecutive in rack order) are placed first, on fully free nodes;
3. the small jobs then go to a node with room chosen from a random sample: a :data:`PACK_SHARE` of them
   best-fit within the sample (packing, like a bin-packing scheduler), the rest the first that fits
   (scatter) — which leaves the partial nodes real clusters have;
4. CPU-only nodes get CPU jobs up to :data:`BUSY_CPU_FRACTION` of their cores, and each TPU pod gets slices
   at random free positions up to :data:`BUSY_TPU_FRACTION` of its chips (fragmenting the mesh).

Each job gets a priority class that depends on the capacity class of its node (spot capacity runs mostly
spot jobs), a numeric priority in its class's band, ``started_at`` before ``now``, and — for training jobs —
a checkpoint interval with ``last_checkpoint_at`` on it and ``checkpoint_on_preempt``. Spot jobs are
``preemptible``. CPU and memory per job are a fraction of the node's share per GPU, so a node is never
over-committed.

>>> import random
>>> from placer.scenarios.synthetic.layout import Layout, Pool, build_layout
>>> c = build_layout(Layout(pools=(Pool("dgx-h100", "us-central1-a", "spot", 10),)))
>>> jobs = running_jobs(c, random.Random(0))
>>> sum(len(r.gpus) for j in jobs for r in j.replicas)
48
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from placer.scenarios.synthetic.scenario import NOW
from placer.topology import Cluster, Node, ReplicaAllocation, RunningJob, slices_in_pod

__all__ = [
    "APPS",
    "BUSY_CPU_FRACTION",
    "BUSY_GPU_FRACTION",
    "BUSY_TPU_FRACTION",
    "CLASS_ON_CAPACITY",
    "PACK_SHARE",
    "PRIORITY_BAND",
    "RUNNING_GPU_SIZES",
    "RUNNING_TPU_SHAPES",
    "TEAMS",
    "T",
    "pick",
    "running_jobs",
]

T = TypeVar("T")

#: GPUs per running job and each size's share of running GPU jobs (by count).
RUNNING_GPU_SIZES: tuple[tuple[int, float], ...] = (
    (1, 0.40),
    (2, 0.22),
    (4, 0.20),
    (8, 0.12),
    (16, 0.04),
    (32, 0.015),
    (64, 0.005),
)
#: Fraction of all GPUs held by running jobs.
BUSY_GPU_FRACTION = 0.60
#: Share of small running jobs placed best-fit within a random sample of nodes (packing); the others go
#: to the first sampled node with room (scatter).
PACK_SHARE = 0.35
#: Fraction of the CPU-only nodes' cores held by running CPU jobs.
BUSY_CPU_FRACTION = 0.50
#: Fraction of each TPU pod's chips held by running slices.
BUSY_TPU_FRACTION = 0.40
#: Running TPU slice shapes (v5e) and their shares.
RUNNING_TPU_SHAPES: tuple[tuple[tuple[int, int], float], ...] = (
    ((2, 2), 0.30),
    ((2, 4), 0.40),
    ((4, 4), 0.25),
    ((8, 8), 0.05),
)
#: Priority class of a running job given the capacity class of the node it runs on.
CLASS_ON_CAPACITY: dict[str, tuple[tuple[str, float], ...]] = {
    "spot": (("spot", 0.85), ("on-demand", 0.15)),
    "on-demand": (("on-demand", 0.70), ("spot", 0.20), ("reserved", 0.10)),
    "reserved": (("reserved", 0.60), ("on-demand", 0.35), ("spot", 0.05)),
}
#: Numeric priority band of each class (inclusive).
PRIORITY_BAND: dict[str, tuple[int, int]] = {
    "spot": (0, 299),
    "on-demand": (300, 799),
    "reserved": (800, 1000),
}

TEAMS = ("research", "search", "ads", "speech", "platform", "vision")
APPS: dict[str, tuple[str, ...]] = {
    "training": ("pretrain", "finetune", "rlhf", "eval"),
    "inference": ("llm-serving", "embedding-api", "reranker", "asr"),
    "batch": ("batch-embed", "data-prep"),
}
_PCIE_TYPES = frozenset({"nvidia-l40s", "nvidia-l4", "nvidia-t4", "nvidia-a10g", "nvidia-a10"})
_SAMPLE = 16


def pick(rng: random.Random, pairs: Sequence[tuple[T, float]]) -> T:
    """One value of ``(value, weight)`` pairs, drawn with ``rng`` (never the global random state).

    >>> pick(random.Random(1), [("a", 0.0), ("b", 1.0)])
    'b'
    """
    return rng.choices([v for v, _ in pairs], weights=[w for _, w in pairs])[0]


class _Fill:
    """Mutable bookkeeping of one generation run: free GPU indices, cores and memory per node."""

    def __init__(self, cluster: Cluster, rng: random.Random, now: datetime, prefix: str):
        self.rng = rng
        self.now = now
        self.prefix = prefix
        self.nodes: tuple[Node, ...] = cluster.nodes
        self.free: list[list[int]] = [list(range(n.gpu_count)) for n in self.nodes]
        self.cpu: list[float] = [n.cpu_cores for n in self.nodes]
        self.mem: list[float] = [n.memory_gb for n in self.nodes]
        self.by_type: dict[str, list[int]] = {}
        for i, n in enumerate(self.nodes):
            if n.gpu_count and n.usable:
                self.by_type.setdefault(n.gpu_type or "", []).append(i)
        self.jobs: list[RunningJob] = []

    # -- job attributes ----------------------------------------------------------------------------

    def _job(self, capacity: str, workload: str, replicas: list[ReplicaAllocation]) -> RunningJob:
        rng, now = self.rng, self.now
        cls = pick(rng, CLASS_ON_CAPACITY[capacity])
        lo, hi = PRIORITY_BAND[cls]
        elapsed = rng.randint(5, 72 * 60)
        started = now - timedelta(minutes=elapsed)
        last_ckpt = None
        expected_end = None
        grace = 30
        ckpt = False
        if workload == "training":
            interval = rng.choice((15, 30, 60))
            n = elapsed // interval
            last_ckpt = started + timedelta(minutes=n * interval) if n else None
            expected_end = now + timedelta(minutes=rng.randint(10, 48 * 60))
            grace = rng.choice((120, 300))
            ckpt = True
        elif workload == "batch":
            expected_end = now + timedelta(minutes=rng.randint(5, 240))
        team = rng.choice(TEAMS)
        return RunningJob(
            job=f"{self.prefix}-{len(self.jobs) + 1:05d}",
            queue=workload,
            tenant=team,
            priority_class=cls,
            priority=rng.randint(lo, hi),
            preemptible={"spot": True, "reserved": False}.get(cls),
            grace_period_s=grace,
            checkpoint_on_preempt=ckpt,
            started_at=started,
            expected_end=expected_end,
            last_checkpoint_at=last_ckpt,
            labels={"app": rng.choice(APPS[workload]), "team": team, "workload": workload},
            replicas=replicas,
        )

    def _replica(self, i: int, k: int) -> ReplicaAllocation:
        """Take ``k`` GPUs (lowest free indices) of node ``i`` with a share of its cores and memory."""
        node = self.nodes[i]
        gpus, self.free[i] = self.free[i][:k], self.free[i][k:]
        cpu = float(int(k * node.cpu_cores / node.gpu_count * self.rng.choice((0.25, 0.5, 0.75, 1.0))))
        mem = float(int(k * node.memory_gb / node.gpu_count * self.rng.choice((0.25, 0.5, 0.75, 1.0))))
        self.cpu[i] -= cpu
        self.mem[i] -= mem
        return ReplicaAllocation(node=node.name, gpus=gpus, cpu_cores=cpu, memory_gb=mem)

    # -- GPU jobs ----------------------------------------------------------------------------------

    def gpu_plan(self, busy: float) -> list[tuple[int, str]]:
        """(size, GPU type) of every running GPU job, largest first, summing to ``busy`` of the GPUs."""
        rng = self.rng
        gpus_of = {t: sum(self.nodes[i].gpu_count for i in idx) for t, idx in self.by_type.items()}
        target = round(sum(gpus_of.values()) * busy)
        types = sorted(gpus_of.items())
        plan: list[tuple[int, str]] = []
        planned = 0
        while planned < target:
            t = pick(rng, types)
            left = target - planned
            sizes = [(s, w) for s, w in RUNNING_GPU_SIZES if s <= left and (s <= 8 or t not in _PCIE_TYPES)]
            sizes = [(s, w) for s, w in sizes if s <= gpus_of[t] // 2 or s == 1]
            size = pick(rng, sizes)
            plan.append((size, t))
            planned += size
        plan.sort(key=lambda p: -p[0])
        return plan

    def place_gpu_jobs(self, busy: float) -> None:
        """Place the plan: whole-node jobs first on free nodes, then the small ones; top up if any failed."""
        rng = self.rng
        whole: dict[tuple[str, str], list[int]] = {}
        for t, idx in self.by_type.items():
            for i in idx:
                whole.setdefault((t, self.nodes[i].zone or ""), []).append(i)
        missed = 0
        for size, t in self.gpu_plan(busy):
            if size >= 8 and self.nodes[self.by_type[t][0]].gpu_count == 8:
                k = size // 8
                zones = sorted(z for (tt, z), free in whole.items() if tt == t and len(free) >= k)
                if not zones:
                    missed += size
                    continue
                free = whole[(t, rng.choice(zones))]
                start = rng.randrange(len(free) - k + 1)
                chosen = free[start : start + k]
                del free[start : start + k]
                reps = [self._replica(i, 8) for i in chosen]
                self.jobs.append(self._job(self.nodes[chosen[0]].capacity_class, "training", reps))
            elif not self._place_small(size, t):
                missed += size
        while missed > 0:  # top up with 1-GPU jobs anywhere they fit
            t = rng.choice(sorted(self.by_type))
            if not self._place_small(1, t) and not any(
                self.free[i] for g in self.by_type.values() for i in g
            ):
                break
            missed -= 1

    def _place_small(self, k: int, t: str) -> bool:
        rng = self.rng
        group = self.by_type[t]
        pack = rng.random() < PACK_SHARE
        best: int | None = None
        for _ in range(_SAMPLE):
            i = group[rng.randrange(len(group))]
            f = len(self.free[i])
            if f >= k and (best is None or f < len(self.free[best])):
                best = i
                if not pack:
                    break
        if best is None:
            fits = [i for i in group if len(self.free[i]) >= k]
            if not fits:
                return False
            best = rng.choice(fits)
        node = self.nodes[best]
        if t in _PCIE_TYPES:
            workload = pick(rng, (("inference", 0.85), ("batch", 0.15)))
        else:
            workload = pick(rng, (("training", 0.5), ("inference", 0.35), ("batch", 0.15)))
        self.jobs.append(self._job(node.capacity_class, workload, [self._replica(best, k)]))
        return True

    # -- CPU and TPU jobs --------------------------------------------------------------------------

    def place_cpu_jobs(self, busy: float) -> None:
        """CPU jobs on the CPU-only nodes until ``busy`` of their cores are held."""
        rng = self.rng
        cpu_nodes = [i for i, n in enumerate(self.nodes) if not n.gpu_count and n.usable and n.cpu_cores]
        target = sum(self.nodes[i].cpu_cores for i in cpu_nodes) * busy
        used = 0.0
        fails = 0
        while cpu_nodes and used < target and fails < 50:
            cores = float(min(rng.choice((4, 8, 16, 32)), target - used))
            mem = float(cores * rng.choice((2, 4, 8)))
            i = cpu_nodes[rng.randrange(len(cpu_nodes))]
            if self.cpu[i] < cores or self.mem[i] < mem or cores < 1:
                fails += 1
                continue
            self.cpu[i] -= cores
            self.mem[i] -= mem
            used += cores
            rep = ReplicaAllocation(node=self.nodes[i].name, cpu_cores=cores, memory_gb=mem)
            self.jobs.append(self._job(self.nodes[i].capacity_class, "batch", [rep]))

    def place_tpu_jobs(self, cluster: Cluster, busy: float) -> None:
        """Slices at random free positions of each pod until ``busy`` of its chips are held."""
        rng = self.rng
        for pod in cluster.tpu_pods():
            used: set[tuple[int, ...]] = set()
            target = round(pod.chips * busy)
            fails = 0
            while len(used) < target and fails < 20:
                shape = pick(rng, RUNNING_TPU_SHAPES)
                n = shape[0] * shape[1]
                free = slices_in_pod(pod, shape, used) if n <= target - len(used) else []
                if not free:
                    fails += 1
                    continue
                s = rng.choice(free)
                used.update(s.chips)
                rep = ReplicaAllocation(tpu_pod=pod.name, tpu_chips=[list(c) for c in s.chips])
                workload = "training" if n >= 16 else pick(rng, (("training", 0.5), ("inference", 0.5)))
                self.jobs.append(self._job(pod.capacity_class, workload, [rep]))


def running_jobs(
    cluster: Cluster,
    rng: random.Random,
    *,
    now: datetime = NOW,
    prefix: str = "run",
    busy_gpus: float = BUSY_GPU_FRACTION,
    busy_cpu: float = BUSY_CPU_FRACTION,
    busy_tpu: float = BUSY_TPU_FRACTION,
) -> list[RunningJob]:
    """Running jobs for ``cluster`` (which should have nothing running), drawn with ``rng``.

    Apply them with ``cluster.with_allocations(jobs)`` (one call: fast at 10k nodes).

    >>> from placer.scenarios.synthetic.layout import Layout, Pool, build_layout
    >>> c = build_layout(Layout(pools=(Pool("l40s", "us-east-1a", "on-demand", 4),)))
    >>> busy = c.with_allocations(running_jobs(c, random.Random(3)))
    >>> sum(8 - len(busy.free_gpus(n.name)) for n in busy.nodes)  # 60% of 32 GPUs
    19
    """
    fill = _Fill(cluster, rng, now, prefix)
    if fill.by_type:
        fill.place_gpu_jobs(busy_gpus)
    fill.place_cpu_jobs(busy_cpu)
    fill.place_tpu_jobs(cluster, busy_tpu)
    return fill.jobs
