"""The rack cluster the Kubernetes workload tests place on (JobSet and LeaderWorkerSet exclusive placement,
Kueue rack slices)."""

from __future__ import annotations

from datetime import timedelta

from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW

__all__ = ["racks_with_one_busy_node"]


def racks_with_one_busy_node() -> Cluster:
    """Three racks of two DGX H100 (``dgx-h100-r<rack>-<node>``); node 1 of rack 1 runs a reserved 8-GPU
    job, so rack 1 has one free node that no exclusive domain may use."""
    busy = {
        "job": "busy",
        "priority_class": "reserved",
        "started_at": NOW - timedelta(hours=1),
        "replicas": [{"node": "dgx-h100-r1-1", "gpus": list(range(8))}],
    }
    return cluster_of(dgx_h100(6, nodes_per_rack=2)).with_allocations([busy])
