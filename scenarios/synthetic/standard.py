"""The three sized scenarios: S (unit tests), M (1,000 GPU nodes) and L (10,000 GPU nodes).

Why three: the solver's unit tests need something that solves in well under a second (S); benchmarks
need a realistic production-size cluster (M) and a large one that shows scaling (L, the M table times
ten). All three share one recipe — pool table, running jobs at :data:`~placer.scenarios.synthetic.running.
BUSY_GPU_FRACTION`, pending jobs in the :data:`~placer.scenarios.synthetic.workloads.KIND_SHARES` mix — so
what
a solver does on S says something about M and L.

Capacity (GPU node counts exclude the CPU-only nodes; every GPU node has 8 GPUs):

=====  =========  ======  =========  ========  ========================  ============
name   GPU nodes  GPUs    CPU nodes  TPU pods  racks (nodes per rack)    pending jobs
=====  =========  ======  =========  ========  ========================  ============
S      36         288     4          v5e 4x8   8                         60
M      1,000      8,000   64         v5e 16x16 32                        1,000
L      10,000     80,000  640        2x 16x16  32                        5,000
=====  =========  ======  =========  ========  ========================  ============

>>> s = scenario_s()
>>> len(s.cluster.nodes), sum(n.gpu_count for n in s.cluster.nodes), len(s.jobs)
(40, 288, 60)
"""

from __future__ import annotations

import random

from placer.scenarios.synthetic.layout import Layout, Pool, TpuPool, build_layout
from placer.scenarios.synthetic.running import running_jobs
from placer.scenarios.synthetic.scenario import NOW, Scenario
from placer.scenarios.synthetic.workloads import pending_jobs

__all__ = [
    "L_LAYOUT",
    "M_LAYOUT",
    "M_POOLS",
    "S_LAYOUT",
    "ZONE_A",
    "ZONE_B",
    "build_scenario",
    "scenario_l",
    "scenario_m",
    "scenario_s",
]

ZONE_A = "us-central1-a"
ZONE_B = "us-central1-b"

#: Scenario M's pools: 1,000 GPU nodes (400 H100, 320 A100, 224 L40S, 56 B200) in two zones, spot /
#: on-demand / reserved capacity, and 64 CPU-only nodes.
M_POOLS: tuple[Pool, ...] = (
    Pool("dgx-h100", ZONE_A, "reserved", 96),
    Pool("dgx-h100", ZONE_A, "on-demand", 80),
    Pool("dgx-h100", ZONE_A, "spot", 24),
    Pool("hgx-a100", ZONE_A, "reserved", 64),
    Pool("hgx-a100", ZONE_A, "on-demand", 64),
    Pool("hgx-a100", ZONE_A, "spot", 32),
    Pool("l40s", ZONE_A, "on-demand", 80),
    Pool("l40s", ZONE_A, "spot", 32),
    Pool("dgx-b200", ZONE_A, "reserved", 32),
    Pool("dgx-b200", ZONE_A, "on-demand", 24),
    Pool("cpu", ZONE_A, "on-demand", 32),
    Pool("dgx-h100", ZONE_B, "reserved", 96),
    Pool("dgx-h100", ZONE_B, "on-demand", 80),
    Pool("dgx-h100", ZONE_B, "spot", 24),
    Pool("hgx-a100", ZONE_B, "reserved", 64),
    Pool("hgx-a100", ZONE_B, "on-demand", 64),
    Pool("hgx-a100", ZONE_B, "spot", 32),
    Pool("l40s", ZONE_B, "on-demand", 80),
    Pool("l40s", ZONE_B, "spot", 32),
    Pool("cpu", ZONE_B, "on-demand", 32),
)
M_LAYOUT = Layout(
    pools=M_POOLS,
    tpu_pods=(TpuPool("v5e-pod-a", "v5e", (16, 16), ZONE_A),),
    nodes_per_rack=32,
    racks_per_block=8,
    name="synthetic-m",
)
L_LAYOUT = M_LAYOUT.scaled(
    10,
    tpu_pods=(TpuPool("v5e-pod-a", "v5e", (16, 16), ZONE_A), TpuPool("v5e-pod-b", "v5e", (16, 16), ZONE_B)),
    name="synthetic-l",
)
#: Scenario S: 36 GPU nodes (16 H100, 8 A100, 8 L40S, 4 B200) + 4 CPU nodes = 40 nodes, racks of 8.
S_LAYOUT = Layout(
    pools=(
        Pool("dgx-h100", ZONE_A, "reserved", 4),
        Pool("dgx-h100", ZONE_A, "on-demand", 4),
        Pool("hgx-a100", ZONE_A, "on-demand", 4),
        Pool("hgx-a100", ZONE_A, "spot", 4),
        Pool("dgx-b200", ZONE_A, "reserved", 4),
        Pool("cpu", ZONE_A, "on-demand", 4),
        Pool("dgx-h100", ZONE_B, "on-demand", 4),
        Pool("dgx-h100", ZONE_B, "spot", 4),
        Pool("l40s", ZONE_B, "on-demand", 4),
        Pool("l40s", ZONE_B, "spot", 4),
    ),
    tpu_pods=(TpuPool("v5e-pod-a", "v5e", (4, 8), ZONE_A),),
    nodes_per_rack=8,
    racks_per_block=2,
    name="synthetic-s",
)


def build_scenario(layout: Layout, n_jobs: int, seed: int, *, name: str, description: str) -> Scenario:
    """Cluster of ``layout`` with running jobs, plus ``n_jobs`` pending jobs, all from one ``seed``.

    Two independent streams are derived from the seed (running set, pending jobs), so changing the job
    count does not change what runs. The cluster is built once and the running jobs applied in one
    :meth:`~placer.topology.Cluster.with_allocations` call.

    >>> from placer.scenarios.synthetic.layout import Layout, Pool
    >>> sc = build_scenario(Layout(pools=(Pool("dgx-h100", "z", "spot", 2),)), 3, 7, name="x", description="")
    >>> len(sc.jobs), len(sc.cluster.running_jobs()) > 0
    (3, True)
    """
    empty = build_layout(layout)
    running = running_jobs(empty, random.Random(f"{seed}:running"), now=NOW)
    cluster = empty.with_allocations(running)
    prefix = name.rsplit("-", 1)[-1]
    jobs = pending_jobs(layout, n_jobs, random.Random(f"{seed}:pending"), prefix=prefix, now=NOW)
    return Scenario(name=name, cluster=cluster, jobs=tuple(jobs), description=description, now=NOW, seed=seed)


def scenario_s(seed: int = 0) -> Scenario:
    """Small scenario for the solver's unit tests: 40 nodes (36 with 8 GPUs), a v5e 4x8 pod, 60 jobs.

    >>> scenario_s(1).jobs[0].id
    's-00001'
    """
    return build_scenario(
        S_LAYOUT,
        60,
        seed,
        name="synthetic-s",
        description="40 nodes (16 H100, 8 A100, 8 L40S, 4 B200, 4 CPU) in 2 zones, racks of 8, v5e 4x8 pod; "
        "60% of GPUs busy; 60 pending jobs in the standard mix",
    )


def scenario_m(seed: int = 0) -> Scenario:
    """1,000 GPU nodes / 8,000 GPUs (+ 64 CPU nodes, one v5e 16x16 pod), 60% busy, 1,000 pending jobs.

    >>> m = scenario_m()
    >>> sum(1 for n in m.cluster.nodes if n.gpu_count), len(m.jobs)
    (1000, 1000)
    """
    return build_scenario(
        M_LAYOUT,
        1000,
        seed,
        name="synthetic-m",
        description="1,000 GPU nodes / 8,000 GPUs (400 DGX H100, 320 HGX A100, 224 8x L40S, 56 DGX B200) "
        "+ 64 CPU nodes in 2 zones, 32 nodes per rack, 8 racks per block, spot/on-demand/reserved pools, "
        "one v5e 16x16 pod; 60% of GPUs busy; 1,000 pending jobs in the standard mix",
    )


def scenario_l(seed: int = 0) -> Scenario:
    """10,000 GPU nodes / 80,000 GPUs (+ 640 CPU nodes, two v5e 16x16 pods), 60% busy, 5,000 pending jobs:
    the M pool table times ten. Builds in a few seconds.

    >>> sum(n.gpu_count for n in scenario_l().cluster.nodes)
    80000
    """
    return build_scenario(
        L_LAYOUT,
        5000,
        seed,
        name="synthetic-l",
        description="10,000 GPU nodes / 80,000 GPUs (scenario M's pools x 10) + 640 CPU nodes, two v5e 16x16 "
        "pods; 60% of GPUs busy; 5,000 pending jobs in the standard mix",
    )
