"""A small cluster of two node pools, for the tests of per-flavor quotas (a Kueue ResourceFlavor per pool)."""

from __future__ import annotations

from placer.topology import Cluster, Inventory, NodeSpec, build_cluster
from placer.topology.inventory import NodeGpus

__all__ = ["pools"]


def pools(h100: int = 2, a100: int = 2) -> Cluster:
    """``h100`` H100 nodes labelled ``pool: h100`` and ``a100`` A100 nodes labelled ``pool: a100``, named
    ``h100-0``... and ``a100-0``..., 8 GPUs, 64 cores and 512 GB each.

    >>> [n.name for n in pools(1, 1).nodes]
    ['h100-0', 'a100-0']
    """
    nodes = [
        NodeSpec(
            name=f"{kind}-{i}",
            cpu_cores=64,
            memory_gb=512,
            labels={"pool": kind},
            gpus=NodeGpus(type=f"nvidia-{kind}-80gb", count=8),
        )
        for kind, count in (("h100", h100), ("a100", a100))
        for i in range(count)
    ]
    return build_cluster(Inventory(nodes=nodes), source="t")
