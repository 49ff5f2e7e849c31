"""Topology benchmark: build time, query time, TPU slice enumeration and memory at 1k and 10k nodes.

Run: ``.venv/bin/python benchmarks/topology_bench.py`` (add ``--runs 5`` for more repetitions). Each figure
is the median of several runs; memory is the tracemalloc peak of one build of the indexes, and, separately,
of building the networkx graph (built on first use; most callers never ask for it). Finishes in about a
minute.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from placer.topology import Cluster, cluster_of, dgx_h100, free_slices, tpu_pod


def _median_s(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _cluster(nodes: int) -> Cluster:
    return cluster_of(dgx_h100(nodes, nodes_per_rack=4, racks_per_block=32, zones=["zone-a", "zone-b"]))


def _half_busy(c: Cluster) -> Cluster:
    jobs = [
        {"job": f"j{i}", "replicas": [{"node": n.name, "gpus": [0, 1]}]} for i, n in enumerate(c.nodes[::2])
    ]
    return c.with_allocations(jobs)


def bench_nodes(nodes: int, runs: int) -> None:
    build_s, c = _median_s(lambda: _cluster(nodes), runs)
    tracemalloc.start()
    _cluster(nodes)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    alloc_s, busy = _median_s(lambda: _half_busy(c), runs)
    query_s, free = _median_s(lambda: busy.free_nvlink_domains("nvidia-h100", min_free=8), max(runs, 5))
    one_s, _ = _median_s(
        lambda: busy.allocate({"job": "x", "replicas": [{"node": c.nodes[1].name, "gpus": [7]}]}),
        max(runs, 5),
    )
    fresh = _cluster(nodes)
    t0 = time.perf_counter()
    graph = fresh.graph  # built on first use; timed without tracemalloc, which slows allocation a lot
    graph_s = time.perf_counter() - t0
    traced = _cluster(nodes)
    tracemalloc.start()
    _ = traced.graph
    _, graph_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    gpus = sum(n.gpu_count for n in c.nodes)
    print(f"{nodes:>6} nodes / {gpus:>6} GPUs: build {build_s * 1000:8.1f} ms, peak {peak / 2**20:6.1f} MiB")
    print(
        f"{'':>22} apply {nodes // 2} running jobs {alloc_s * 1000:8.1f} ms; "
        f"allocate one job {one_s * 1000:.2f} ms"
    )
    print(f"{'':>22} query free 8-GPU nvidia-h100 domains {query_s * 1000:7.2f} ms -> {len(free)} domains")
    print(
        f"{'':>22} networkx graph {graph_s * 1000:8.1f} ms, {graph.number_of_nodes()} vertices, "
        f"{graph.number_of_edges()} edges, peak {graph_peak / 2**20:6.1f} MiB"
    )


def bench_tpu(runs: int) -> None:
    c = cluster_of(tpu_pod("v5p", shape=(16, 16, 24), name="v5p"))
    chips = [[x, y, z] for x in range(16) for y in range(16) for z in range(12)]
    half = c.allocate({"job": "half", "replicas": [{"tpu_pod": "v5p", "tpu_chips": chips}]})
    for shape in ("4x4x4", "4x4x8", "8x8x8", "2x2x1"):
        empty_s, empty = _median_s(lambda s=shape: free_slices(c, s), runs)
        half_s, used = _median_s(lambda s=shape: free_slices(half, s), runs)
        print(
            f"v5p 16x16x24 slices {shape:>6}: empty {empty_s * 1000:7.2f} ms ({len(empty)} free), "
            f"half used {half_s * 1000:7.2f} ms ({len(used)} free)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for nodes in (1_000, 10_000):
        bench_nodes(nodes, args.runs)
    bench_tpu(args.runs)


if __name__ == "__main__":
    main()
