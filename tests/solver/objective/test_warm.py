"""The compiled kernels are ready when their modules are imported (``kernels.warm``, ``candidates._warm``):
the engines then compile nothing inside a decision's deadline.

Why a fresh interpreter: this process has long compiled every kernel for the other tests. The child imports
the modules (which warms them), counts each numba dispatcher's compiled signatures, runs the engines on
every kind of work that reaches a kernel — a learning session whose arrivals bring new target shapes
(whole GPUs, GPU shares, CPU only), then ``place()`` with each engine — and counts again. A kernel that
was not warmed, or a caller passing another dtype or memory layout than the warmed one (numpy's column
selection gives Fortran order: ``Targets.columns`` makes it C), shows up as a signature gained.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, sys
from datetime import datetime, UTC
from numba.core.registry import CPUDispatcher
import placer.solver.candidates, placer.solver.objective.kernels  # warmed as they are imported

def counts():
    return {
        f"{name}.{attr}": len(value.signatures)
        for name, module in list(sys.modules.items())
        if name.startswith("placer.")
        for attr, value in vars(module).items()
        if isinstance(value, CPUDispatcher)
    }

before = counts()
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.solver.session import Session
from placer.topology import cluster_of, cpu_nodes, dgx_h100, pcie_inference

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
shapes = [
    TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1)),
    TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1, share_milli=300)),
    TaskGroup(cpu_cores=8),
    TaskGroup(cpu_cores=16, gpu=GpuDemand(count=4)),
    TaskGroup(cpu_cores=1, gpu=GpuDemand(count=1, share_milli=700)),
    TaskGroup(cpu_cores=6, gpu=GpuDemand(count=2)),
]
cluster = cluster_of(dgx_h100(4, nodes_per_rack=2), pcie_inference(4, gpus_per_node=4), cpu_nodes(2))
session = Session(cluster, Policy(time_limit_s=1.0))
for k in range(120):  # three shapes first; the others arrive once targets and caches stand
    group = shapes[k % 3] if k < 40 else shapes[(k * 5) % len(shapes)]
    session.commit(session.decide([Job(id=f"a{k}", tasks=[group])], now=NOW))
batch = [Job(id=f"b{k}", tasks=[shapes[k % len(shapes)]]) for k in range(24)]
for engine in ("greedy", "cpsat", "auto"):
    place(batch, session.cluster, Policy(engine=engine, time_limit_s=1.0), now=NOW)
print(json.dumps([before, counts()]))
"""


def test_no_kernel_compiles_inside_a_decision() -> None:
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=root, capture_output=True, text=True, timeout=600, check=True
    )
    before, after = json.loads(out.stdout.strip().splitlines()[-1])
    engines = {
        "placer.solver.candidates._fits_free",
        "placer.solver.objective.kernels._count_into",
        "placer.solver.objective.kernels._count_share_into",
        "placer.solver.objective.kernels._whole_deltas",
        "placer.solver.objective.kernels._share_deltas",
        "placer.solver.objective.kernels._best",
    }
    assert {k for k, v in after.items() if v} == engines, "the kernels the engines call"
    assert all(before[k] == 1 for k in engines), before
    assert after == before, "a kernel compiled inside a decision"
