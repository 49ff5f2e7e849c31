"""Placing on a stored cluster (``placer serve``'s ``/v1/clusters/{id}``): one job per call, each started
with a PATCH, as a backend's loop does — with the version's prepared pieces against ``place()`` alone.

    python benchmarks/store_bench.py [--calls 100]

On scenario M's cluster (1,000 nodes, 8,000 GPUs, 60 % busy), through :class:`~placer.service.state.
ClusterStore` (in memory) and ``place()`` as the route calls it, without HTTP: per call, the median and
p90 milliseconds of the placement with the stored pieces (``prepared``: what the route uses when no other
placement holds them) and without (a fresh ``place()`` on the same snapshot), and of the PATCH that starts
the placed job. Both placements must be the same; the count of differences is printed. Prints figures,
asserts nothing; the machine is noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from placer.scenarios.synthetic import scenario_m
from placer.service.state import ClusterStore, normalize_change
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    return f"median {statistics.median(xs) * 1000:.1f} ms, p90 {xs[int(0.9 * (len(xs) - 1))] * 1000:.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args()
    sc = scenario_m(0)
    store = ClusterStore()
    stored, _ = store.put("m", sc.cluster)
    policy = Policy(engine="greedy", plan=False)
    with_pieces: list[float] = []
    alone: list[float] = []
    patches: list[float] = []
    differ = 0
    for k in range(args.calls):
        job = [Job(id=f"j{k}", tasks=[TaskGroup(cpu_cores=4, memory_gb=32, gpu=GpuDemand(count=1))])]
        t = time.perf_counter()
        d = place(job, stored.cluster, policy, now=sc.now, prepared=stored.prepared)
        with_pieces.append(time.perf_counter() - t)
        t = time.perf_counter()
        e = place(job, stored.cluster, policy, now=sc.now)
        alone.append(time.perf_counter() - t)
        differ += (d.placements, d.pending) != (e.placements, e.pending)
        if not d.placements:
            break
        (r,) = d.placements[0].replicas
        item = {"id": f"j{k}", "ext_ml_gpu_count": 1, "ext_ml_cpu_cores": 4, "ext_ml_memory_gb": 32}
        change = normalize_change(
            {"op": "job_started", "job": {**item, "node": r.node, "gpus": r.gpus}}, "changes[0]"
        )
        t = time.perf_counter()
        stored = store.patch("m", [change])
        patches.append(time.perf_counter() - t)
    n = len(sc.cluster.nodes)
    print(f"scenario M, {n} nodes, {len(with_pieces)} one-job placements, each then started")
    print(f"placement with the stored pieces: {_ms(with_pieces)}")
    print(f"place() alone, same snapshot:     {_ms(alone)}")
    print(f"PATCH job_started:                {_ms(patches)}")
    print(f"decisions that differ: {differ}")


if __name__ == "__main__":
    main()
