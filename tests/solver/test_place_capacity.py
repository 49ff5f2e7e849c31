"""Node capacity (placement-rules.md rule 6): running usage plus placed replicas never exceed a node's
cores, memory, storage, or shared memory (shm only where the node declares it), and CPU-only jobs.

Numbers are the builders' defaults (``cpu_nodes``: 64 cores, 256 GB) or stated in each test.
"""

from __future__ import annotations

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.model import Job, TaskGroup
from placer.topology import Inventory, NodeSpec, build_cluster, cluster_of, cpu_nodes
from tests.solver.conftest import Solve, nodes_of, reason_codes


def cpu_job(job_id: str, **need: float) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(**need)])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resource", "capacity", "used", "fits", "too_much"),
    [
        ("cpu_cores", 64, 40, 24, 25),
        ("memory_gb", 256, 200, 56, 57),
        ("storage_gb", 1000, 600, 400, 401),
    ],
)
def test_resource_left_after_a_running_job(
    solve: Solve, resource: str, capacity: float, used: float, fits: float, too_much: float
) -> None:
    c = build_cluster(Inventory(nodes=[NodeSpec(name="n", cpu_cores=64, memory_gb=256, storage_gb=1000)]))
    c = c.with_allocations([{"job": "r", "replicas": [{"node": "n", resource: used}]}])
    # capacity - used is exactly what is left: the job of that size fits, one unit more does not.
    assert capacity - used == fits
    d = solve([cpu_job("fits", **{resource: fits})], c)
    assert nodes_of(d, "fits") == ["n"]
    d = solve([cpu_job("over", **{resource: too_much})], c)
    assert reason_codes(d, "over") == ["INSUFFICIENT_CAPACITY"]


def test_batch_jobs_share_capacity(solve: Solve) -> None:
    # Three 30-core jobs on two 64-core nodes: two fit per node at most (60 <= 64), all three are placed,
    # and no node carries more than 64 cores.
    d = solve([cpu_job(f"j{i}", cpu_cores=30) for i in range(3)], cluster_of(cpu_nodes(2)))
    assert len(d.placements) == 3
    per_node: dict[str, float] = {}
    for p in d.placements:
        for r in p.replicas:
            per_node[r.node] = per_node.get(r.node, 0) + r.cpu_cores
    assert max(per_node.values()) <= 64


def test_five_30_core_jobs_on_two_nodes_place_four(solve: Solve) -> None:
    # floor(64 / 30) = 2 per node, 2 nodes: 4 of 5.
    d = solve([cpu_job(f"j{i}", cpu_cores=30) for i in range(5)], cluster_of(cpu_nodes(2)))
    assert len(d.placements) == 4 and len(d.pending) == 1


def test_shared_memory_counts_where_the_node_declares_it(solve: Solve) -> None:
    c = build_cluster(
        Inventory(
            nodes=[
                NodeSpec(name="small-shm", cpu_cores=64, memory_gb=256, shm_gb=16),
                NodeSpec(name="big-shm", cpu_cores=64, memory_gb=256, shm_gb=64),
            ]
        )
    )
    d = solve([cpu_job("s", cpu_cores=1, shm_gb=32)], c)
    assert nodes_of(d, "s") == ["big-shm"]
    d = solve([cpu_job("s", cpu_cores=1, shm_gb=65)], c)
    assert reason_codes(d, "s") == ["UNSATISFIABLE"]


def test_shared_memory_is_not_limited_where_the_node_does_not_declare_it(solve: Solve) -> None:
    c = build_cluster(Inventory(nodes=[NodeSpec(name="n", cpu_cores=64, memory_gb=256)]))
    d = solve([cpu_job("s", cpu_cores=1, shm_gb=500)], c)
    assert nodes_of(d, "s") == ["n"]


def test_cpu_only_ojs_job(solve: Solve) -> None:
    # examples/jobs/batch.json tokenize-shards: 16 cores, 64 GB, 500 GB storage on a CPU node of 1 TB disk.
    doc = (
        '{"id": "tok", "ext_ml_accelerator": "cpu", "ext_ml_cpu_cores": 16, "ext_ml_memory_gb": 64, '
        '"ext_ml_storage_gb": 500}'
    )
    d = solve(read_text(doc), cluster_of(cpu_nodes(1, storage_gb=1000)))
    p = d.placement_of("tok")
    assert p is not None
    r = p.replicas[0]
    assert (r.node, r.gpus, r.cpu_cores, r.memory_gb, r.storage_gb) == ("cpu", [], 16, 64, 500)


def test_cpu_only_job_needing_storage_the_node_lacks(solve: Solve) -> None:
    doc = '{"id": "tok", "ext_ml_accelerator": "cpu", "ext_ml_cpu_cores": 16, "ext_ml_storage_gb": 500}'
    # The nodes declare 100 GB: 500 never fits. (A node that declares no storage is not a limit: unknown
    # is not zero, test_spec_fidelity.py.)
    d = solve(read_text(doc), cluster_of(cpu_nodes(2, storage_gb=100)))
    assert reason_codes(d, "tok") == ["UNSATISFIABLE"]
