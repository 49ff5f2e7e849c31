"""The issue's scale requirement: 10,000 nodes / 80,000 GPUs build and answer "free 8-GPU NVLink domains
of type X" correctly. How fast is a figure ``benchmarks/topology_bench.py`` prints (a timed assertion here
failed on a loaded machine, after the whole suite had filled the heap): speed targets live in benchmarks."""

from __future__ import annotations

from placer.topology import cluster_of, dgx_h100, hgx_a100, summary


def test_10k_nodes_80k_gpus() -> None:
    c = cluster_of(dgx_h100(8000, nodes_per_rack=4, zones=["z-a", "z-b"]), hgx_a100(2000, nodes_per_rack=4))
    # 8000 + 2000 = 10,000 nodes; 10,000 x 8 = 80,000 GPUs; one domain per node
    assert len(c.nodes) == 10_000
    assert sum(n.gpu_count for n in c.nodes) == 80_000
    assert len(c.nvlink_domains()) == 10_000
    jobs = [{"job": f"j{i}", "replicas": [{"node": c.nodes[i].name, "gpus": [0]}]} for i in range(0, 8000, 2)]
    c = c.with_allocations(jobs)
    free = c.free_nvlink_domains("nvidia-h100", min_free=8)
    # 8000 H100 domains, every second one (4000) has a GPU held -> 4000 with 8 free
    assert len(free) == 4000
    assert len(c.free_nvlink_domains("nvidia-a100", min_free=8)) == 2000
    assert summary(c)["free_gpus"] == {"nvidia-a100": 16_000, "nvidia-h100": 64_000 - 4000}
