"""Hard instances: small clusters where a priority-ordered greedy placer is provably not optimal.

Why: a benchmark on random input cannot tell a solver that optimizes from one that is merely fast. Each
instance here is at most a few nodes or pods, the optimum is worked out by hand in its docstring (and
checked by brute force in ``tests/scenarios/test_synthetic_hard.py``), and a ``witness`` — one optimal
placement written as running-job allocations — proves the optimum feasible through
``cluster.with_allocations(witness)``.

Conventions shared by all four:

* every pending job is ``on-demand`` with a distinct numeric priority and the submit order of that
  priority, so "priority order" is unambiguous: the job listed first is placed first by a greedy;
* jobs that already run are ``reserved`` and not preemptible: no preemption can improve on the optimum;
* weighted demand is :func:`placer.scenarios.synthetic.scenario.weighted_demand` (units times the class
  weight 10
  of on-demand); every optimum here also places the most jobs, so it is optimal for any positive weights
  that favour higher priority;
* "first-fit" takes jobs in priority order and puts each on the first node (pod slice) in cluster order
  where it fits; "best-fit" puts it where the fewest GPUs are left over (ties: first). Both are what the
  ``greedy_placed`` field and the docstrings describe.

>>> for h in hard_instances():
...     print(h.name, h.greedy_placed, h.optimal_placed, h.optimal_weighted_demand)
hard-fragmentation 10 12 400.0
hard-nvlink-packing 8 9 360.0
hard-tpu-slices 4 5 640.0
hard-memory-stranding 6 8 320.0
"""

from __future__ import annotations

from datetime import timedelta

from placer.scenarios.synthetic.scenario import NOW, Scenario, weighted_demand
from placer.solver.jobs.model import DistributedStrategy, GpuDemand, Interconnect, Job, TaskGroup, TpuDemand
from placer.topology import ReplicaAllocation, RunningJob, cluster_of, dgx_h100, hgx_a100, tpu_pod

__all__ = ["fragmentation_trap", "hard_instances", "memory_stranding", "nvlink_packing", "tpu_slice_packing"]


def _gpu_job(
    i: int,
    prefix: str,
    gpus: int,
    *,
    gpu_type: str,
    cpu: float,
    memory: float,
    nvlink: bool = False,
    strategy: DistributedStrategy | None = None,
) -> Job:
    """Pending job number ``i``: priority ``100 - i`` and submitted ``i`` minutes after the first."""
    return Job(
        id=f"{prefix}{i:02d}",
        source_format="synthetic",
        priority=100 - i,
        submit_time=NOW - timedelta(minutes=60 - i),
        distributed_strategy=strategy,
        tasks=[
            TaskGroup(
                cpu_cores=cpu,
                memory_gb=memory,
                gpu=GpuDemand(
                    count=gpus,
                    types=[gpu_type],
                    interconnect=Interconnect.NVLINK if nvlink else Interconnect.ANY,
                ),
            )
        ],
        labels={"app": "hard-instance"},
    )


def _busy(name: str, node: str, gpus: list[int]) -> RunningJob:
    """A reserved, non-preemptible background job holding ``gpus`` of ``node``."""
    return RunningJob(
        job=name,
        priority_class="reserved",
        priority=900,
        preemptible=False,
        started_at=NOW - timedelta(hours=3),
        labels={"app": "background"},
        replicas=[ReplicaAllocation(node=node, gpus=gpus)],
    )


def _at(job: Job, node: str, gpus: list[int]) -> RunningJob:
    """``job`` placed on ``gpus`` of ``node``, as a running-job allocation (for witnesses)."""
    t = job.tasks[0]
    return RunningJob(
        job=job.id,
        labels=dict(job.labels),  # what other jobs' anti-affinity tests (the rule traps' witnesses)
        replicas=[ReplicaAllocation(node=node, gpus=gpus, cpu_cores=t.cpu_cores, memory_gb=t.memory_gb)],
    )


def fragmentation_trap() -> Scenario:
    """(a) Fragmentation trap: the small high-priority jobs take the tight nodes.

    Cluster: 8 DGX H100 nodes ``dgx-h100-1..8``. Background jobs hold GPUs 0-3 of nodes 1-4 (4 free each)
    and GPUs 0-1 of nodes 5-8 (6 free each): 4*4 + 4*6 = 40 free GPUs.

    Pending, in priority order: ``a01``-``a04`` with 2 GPUs each, then ``a05``-``a13`` with 4 GPUs each
    (single node: no distributed strategy). Demand 4*2 + 9*4 = 44 > 40.

    Greedy (first-fit, and best-fit alike): a01 and a02 fill node 1 (4 = 2 + 2), a03 and a04 fill node 2;
    the 4-GPU jobs a05-a10 take nodes 3, 4, 5, 6, 7, 8 (leaving 2 GPUs on each of nodes 5-8); a11-a13
    find no node with 4 free. Placed 4 + 6 = **10** jobs, 8 + 24 = 32 GPUs, weighted 320. (A spreading
    greedy, Kubernetes' LeastAllocated, puts the 2-GPU jobs on nodes 5-8 and happens to be optimal here.)

    Optimum: a01-a04 on nodes 5-8 (6 - 2 = 4 left each), then a05-a12 one per node on all 8 nodes.
    Placed **12**, 40 GPUs = every free GPU. No 13 jobs fit: all 13 need 44 GPUs > 40; and any 12 jobs
    need at least 4*2 + 8*4 = 40 GPUs, so 12 is the most. Weighted demand 40 GPUs * 10 = **400**, the most
    possible since only 40 GPUs are free.

    >>> fragmentation_trap().optimal_weighted_demand
    400.0
    """
    nodes = [f"dgx-h100-{i}" for i in range(1, 9)]
    busy = [_busy(f"bg-{i + 1}", n, [0, 1, 2, 3] if i < 4 else [0, 1]) for i, n in enumerate(nodes)]
    cluster = cluster_of(dgx_h100(8), name="hard-fragmentation").with_allocations(busy)
    jobs = [_gpu_job(i, "a", 2, gpu_type="nvidia-h100", cpu=16, memory=128) for i in range(1, 5)]
    jobs += [_gpu_job(i, "a", 4, gpu_type="nvidia-h100", cpu=32, memory=256) for i in range(5, 14)]
    witness = [_at(jobs[i], nodes[4 + i], [2, 3]) for i in range(4)]
    witness += [_at(jobs[4 + i], nodes[i], [4, 5, 6, 7]) for i in range(8)]
    placed = {w.job for w in witness}
    return Scenario(
        name="hard-fragmentation",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(a) fragmentation trap: free GPUs 4,4,4,4,6,6,6,6; jobs 2,2,2,2 then 4 x 9",
        optimal_placed=12,
        optimal_weighted_demand=weighted_demand(j for j in jobs if j.id in placed),
        greedy_placed=10,
        witness=tuple(witness),
    )


def nvlink_packing() -> Scenario:
    """(b) NVLink domain packing: small NVLink jobs scatter, an 8-GPU NVLink job finds no whole domain.

    Cluster: 8 DGX H100 nodes, each its own 8-GPU NVLink domain. Background jobs leave free: node 1: 4,
    node 2: 6, node 3: 8, node 4: 4, node 5: 6, node 6: 8; nodes 7 and 8 are full. Free 36 GPUs.

    Pending, in priority order, all ``interconnect: nvlink``: b01, b02 (1 GPU), b03 (2), b04-b07 (4 each),
    b08, b09 (8 each, ``fsdp``: they may span nodes, but NVLink keeps all 8 GPUs in one domain).
    Demand 1 + 1 + 2 + 4*4 + 2*8 = 36 = free.

    First-fit: b01, b02, b03 fill node 1 (1 + 1 + 2 = 4); b04 -> node 2 (2 left), b05, b06 -> node 3
    (full), b07 -> node 4 (full), b08 -> node 6; b09 finds free GPUs 2 (node 2) + 6 (node 5) = 8 but no
    domain with 8: unplaced. Best-fit: b01-b03 fill node 1, b04 -> node 4, b05 -> node 2, b06 -> node 5,
    b07 -> node 3, b08 -> node 6; b09 sees 2 + 4 + 2 free over three domains: unplaced. Both place
    **8** jobs, 28 GPUs, weighted 280.

    Optimum: b08 -> node 3, b09 -> node 6; node 2 (6) <- b04 + b03; node 5 (6) <- b05 + b01 + b02;
    node 1 <- b06; node 4 <- b07. All **9** placed, all 36 free GPUs used: weighted 36 * 10 = **360**.

    >>> nvlink_packing().optimal_placed
    9
    """
    nodes = [f"dgx-h100-{i}" for i in range(1, 9)]
    busy_gpus = [4, 2, 0, 4, 2, 0, 8, 8]
    busy = [
        _busy(f"bg-{i + 1}", n, list(range(b)))
        for i, (n, b) in enumerate(zip(nodes, busy_gpus, strict=True))
        if b
    ]
    cluster = cluster_of(dgx_h100(8), name="hard-nvlink-packing").with_allocations(busy)
    sizes = [1, 1, 2, 4, 4, 4, 4, 8, 8]
    jobs = [
        _gpu_job(
            i,
            "b",
            g,
            gpu_type="nvidia-h100",
            cpu=16 * g,
            memory=128 * g,
            nvlink=True,
            strategy=DistributedStrategy.FSDP if g == 8 else None,
        )
        for i, g in enumerate(sizes, start=1)
    ]
    b = {j.id: j for j in jobs}
    witness = [
        _at(b["b08"], nodes[2], list(range(8))),
        _at(b["b09"], nodes[5], list(range(8))),
        _at(b["b04"], nodes[1], [2, 3, 4, 5]),
        _at(b["b03"], nodes[1], [6, 7]),
        _at(b["b05"], nodes[4], [2, 3, 4, 5]),
        _at(b["b01"], nodes[4], [6]),
        _at(b["b02"], nodes[4], [7]),
        _at(b["b06"], nodes[0], [4, 5, 6, 7]),
        _at(b["b07"], nodes[3], [4, 5, 6, 7]),
    ]
    return Scenario(
        name="hard-nvlink-packing",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(b) NVLink packing: free domains 4,6,8,4,6,8 (+2 full); NVLink jobs 1,1,2,4,4,4,4,8,8",
        optimal_placed=9,
        optimal_weighted_demand=weighted_demand(jobs),
        greedy_placed=8,
        witness=tuple(witness),
    )


def tpu_slice_packing() -> Scenario:
    """(c) TPU slice packing: first-free 2x4 slices lie flat across the pod, so the last 4x4 finds no room.

    Cluster: one v5e pod ``v5e-8x8`` of 8x8 chips (64 chips, an offered v5e shape: ``v5litepod-64``;
    2x2-chip hosts, no wraparound since no axis spans 16), nothing running.

    Pending, in priority order: c01, c02 ask a 2x4 slice, c03-c05 a 4x4. Demand 2*8 + 3*16 = 64 = chips.

    First-free-slice greedy (slices in :func:`placer.topology.slices_in_pod` order: by origin, then shape):
    c01 -> rows 0-1 x cols 0-3 (origin (0,0), 2x4), c02 -> rows 0-1 x cols 4-7 (origin (0,4)); c03 ->
    rows 2-5 x cols 0-3 (origin (2,0)), c04 -> rows 2-5 x cols 4-7; only rows 6-7 stay free, a 2x8 strip:
    c05 finds no 4x4. Placed **4**, 48 chips, weighted 480.

    Optimum: c01 and c02 stand upright (4x2) in rows 0-3 x cols 0-1 and cols 2-3; the three 4x4 take rows
    0-3 x cols 4-7, rows 4-7 x cols 0-3 and rows 4-7 x cols 4-7. All **5** placed, 64 chips = every chip:
    weighted 64 * 10 = **640**.

    >>> tpu_slice_packing().optimal_weighted_demand
    640.0
    """
    cluster = cluster_of(tpu_pod("v5e", (8, 8), name="v5e-8x8"), name="hard-tpu-slices")
    shapes = [(2, 4)] * 2 + [(4, 4)] * 3
    jobs = [
        Job(
            id=f"c{i:02d}",
            source_format="synthetic",
            priority=100 - i,
            submit_time=NOW - timedelta(minutes=60 - i),
            tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=shape))],
            labels={"app": "hard-instance"},
        )
        for i, shape in enumerate(shapes, start=1)
    ]

    def chips(rows: range, cols: range) -> list[list[int]]:
        return [[r, c] for r in rows for c in cols]

    def on(job: Job, pod: str, rows: range, cols: range) -> RunningJob:
        return RunningJob(job=job.id, replicas=[ReplicaAllocation(tpu_pod=pod, tpu_chips=chips(rows, cols))])

    witness = [
        on(jobs[0], "v5e-8x8", range(0, 4), range(0, 2)),
        on(jobs[1], "v5e-8x8", range(0, 4), range(2, 4)),
        on(jobs[2], "v5e-8x8", range(0, 4), range(4, 8)),
        on(jobs[3], "v5e-8x8", range(4, 8), range(0, 4)),
        on(jobs[4], "v5e-8x8", range(4, 8), range(4, 8)),
    ]
    return Scenario(
        name="hard-tpu-slices",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(c) TPU slices: one v5e 8x8 pod; slices 2x4 x 2 then 4x4 x 3",
        optimal_placed=5,
        optimal_weighted_demand=weighted_demand(jobs),
        greedy_placed=4,
        witness=tuple(witness),
    )


def memory_stranding() -> Scenario:
    """(d) Multi-dimensional: packing by GPUs strands memory, so memory-heavy jobs find no node.

    Cluster: 4 HGX A100 nodes (8 GPUs, 256 cores, 2,048 GB each), nothing running.

    Pending, in priority order: d01-d04 with 4 GPUs, 96 cores, 200 GB each (data-loader heavy), then
    d05-d08 with 4 GPUs, 64 cores, 1,700 GB each (large embedding tables held in host memory).
    Demand: 32 GPUs = free; 4*200 + 4*1,700 = 7,600 GB <= 8,192; 4*96 + 4*64 = 640 cores <= 1,024.

    Greedy deciding by GPUs (first-fit, and best-fit on GPUs alike; memory only checked for
    feasibility): d01, d02 -> node 1 (8 GPUs used, 2,048 - 400 = 1,648 GB stranded), d03, d04 -> node 2
    (same); d05 -> node 3 (348 GB left), d06 -> node 4 (348 GB left); d07 and d08 see 4 free GPUs on nodes
    3 and 4 but only 348 GB < 1,700: unplaced. Placed **6**, 24 GPUs, weighted 240.

    Optimum: each node takes one of d01-d04 and one of d05-d08: 8 GPUs, 96 + 64 = 160 <= 256 cores,
    200 + 1,700 = 1,900 <= 2,048 GB. All **8** placed, 32 GPUs: weighted 32 * 10 = **320**. (Two
    1,700 GB jobs never share a node: 3,400 > 2,048.)

    >>> memory_stranding().optimal_placed
    8
    """
    cluster = cluster_of(hgx_a100(4), name="hard-memory-stranding")
    jobs = [_gpu_job(i, "d", 4, gpu_type="nvidia-a100", cpu=96, memory=200) for i in range(1, 5)]
    jobs += [_gpu_job(i, "d", 4, gpu_type="nvidia-a100", cpu=64, memory=1700) for i in range(5, 9)]
    nodes = [n.name for n in cluster.nodes]
    witness = [_at(jobs[i], nodes[i], [0, 1, 2, 3]) for i in range(4)]
    witness += [_at(jobs[4 + i], nodes[i], [4, 5, 6, 7]) for i in range(4)]
    return Scenario(
        name="hard-memory-stranding",
        cluster=cluster,
        jobs=tuple(jobs),
        description="(d) memory stranding: 4 A100 nodes; 4 GPU/200 GB jobs x 4 then 4 GPU/1,700 GB jobs x 4",
        optimal_placed=8,
        optimal_weighted_demand=weighted_demand(jobs),
        greedy_placed=6,
        witness=tuple(witness),
    )


def hard_instances() -> list[Scenario]:
    """The four hard instances, (a) to (d).

    >>> len(hard_instances())
    4
    """
    return [fragmentation_trap(), nvlink_packing(), tpu_slice_packing(), memory_stranding()]
