"""Running jobs as allocations: free capacity, NVLink domain queries, snapshots and validation errors."""

from __future__ import annotations

import pytest

from placer.topology import (
    Cluster,
    Inventory,
    TopologyError,
    build_cluster,
    cluster_of,
    dgx_h100,
    gb200_nvl72,
    pcie_inference,
)


def _job(name: str, *replicas: dict) -> dict:
    return {"job": name, "replicas": list(replicas)}


def test_free_domains_after_running_jobs() -> None:
    c = cluster_of(dgx_h100(4))
    c = c.with_allocations(
        [
            _job("a", {"node": "dgx-h100-1", "gpus": [0]}),  # domain 1: 7 free
            _job("b", {"node": "dgx-h100-2", "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}),  # domain 2: 0 free
            _job("c", {"node": "dgx-h100-3", "gpus": [5], "gpu_milli": 250}),  # domain 3: 7 wholly free
        ]
    )
    # only dgx-h100-4 still has 8 free H100s
    assert [fd.domain.id for fd in c.free_nvlink_domains("nvidia-h100", min_free=8)] == ["dgx-h100-4/nvlink"]
    # >= 7 free: domain 4 (8), then 1 and 3 (7 each) by id
    assert [(fd.domain.id, fd.free) for fd in c.free_nvlink_domains("H100", min_free=7)] == [
        ("dgx-h100-4/nvlink", 8),
        ("dgx-h100-1/nvlink", 7),
        ("dgx-h100-3/nvlink", 7),
    ]
    assert c.free_nvlink_domains("nvidia-l4") == []
    assert c.free_gpus("dgx-h100-1") == (1, 2, 3, 4, 5, 6, 7)
    assert c.free_gpu_milli("dgx-h100-3")[5] == 750  # 1000 - 250
    assert c.free_gpu_milli("dgx-h100-2")[0] == 0


def test_nvl72_domain_free_counts() -> None:
    c = cluster_of(gb200_nvl72(2))
    first = c.nvlink_domains()[0]
    trays = first.nodes[:3]
    c2 = c.allocate(_job("moe", *({"node": t, "gpus": [0, 1, 2, 3]} for t in trays)))
    # 3 trays x 4 GPUs = 12 held in rack 1: 72 - 12 = 60 free; rack 2 untouched: 72
    assert c2.domain_free(first.id) == 60
    assert sorted(fd.free for fd in c2.free_nvlink_domains(min_free=8)) == [60, 72]
    assert len(c2.free_domain_gpus(first.id)) == 60
    assert c.domain_free(first.id) == 72  # the old snapshot is unchanged


def test_unschedulable_nodes_do_not_count_as_free() -> None:
    inv = Inventory.model_validate(
        {
            "nodes": [
                {"name": "a", "gpus": {"type": "nvidia-h100", "count": 8}},
                {"name": "b", "gpus": {"type": "nvidia-h100", "count": 8}, "schedulable": False},
                {"name": "c", "gpus": {"type": "nvidia-h100", "count": 8}, "ready": False},
            ]
        }
    )
    c = build_cluster(inv)
    assert [fd.domain.id for fd in c.free_nvlink_domains("nvidia-h100")] == ["a/nvlink"]
    assert c.free_gpus("b") == tuple(range(8))  # per-node answer: nothing holds them


def test_free_cpu_memory() -> None:
    c = cluster_of(dgx_h100(1)).allocate(_job("x", {"node": "dgx-h100", "cpu_cores": 24.5, "memory_gb": 48}))
    # 224 - 24.5 = 199.5 cores, 2048 - 48 = 2000 GB
    assert c.free_cpu("dgx-h100") == 199.5
    assert c.free_memory_gb("dgx-h100") == 2000
    f = c.free("dgx-h100")
    assert (f.cpu_cores, f.memory_gb, len(f.gpus)) == (199.5, 2000, 8)
    assert c.jobs_on("dgx-h100") == ("x",)


def test_release_and_snapshots() -> None:
    base = cluster_of(dgx_h100(2))
    c1 = base.allocate(_job("a", {"node": "dgx-h100-1", "gpus": [0, 1], "cpu_cores": 10}))
    c2 = c1.allocate(_job("b", {"node": "dgx-h100-1", "gpus": [2], "cpu_cores": 5}))
    assert len(c2.free_gpus("dgx-h100-1")) == 5  # 8 - 2 - 1
    c3 = c2.release("a")
    assert c3.free_gpus("dgx-h100-1") == (0, 1, 3, 4, 5, 6, 7)
    assert c3.free_cpu("dgx-h100-1") == 219  # 224 - 5
    assert c3.domain_free("dgx-h100-1/nvlink") == 7
    assert [j.job for j in c3.running_jobs()] == ["b"]
    # earlier snapshots are untouched
    assert len(c1.free_gpus("dgx-h100-1")) == 6
    assert len(base.free_gpus("dgx-h100-1")) == 8
    assert c3.release("b").free_cpu("dgx-h100-1") == 224
    assert c2.without_allocations().running_jobs() == ()


def _errors(cluster: Cluster, jobs: list[dict]) -> list[str]:
    with pytest.raises(TopologyError) as exc:
        cluster.with_allocations(jobs)
    return [str(p) for p in exc.value.problems]


def test_validation_errors_name_items() -> None:
    c = cluster_of(dgx_h100(1), pcie_inference(1), source="cluster.yaml")
    errs = _errors(
        c,
        [
            _job("ghost", {"node": "nope", "gpus": [0]}),
            _job("oob", {"node": "dgx-h100", "gpus": [8]}),
            _job("cpu", {"node": "l4", "cpu_cores": 49}),
            _job("mem", {"node": "l4", "memory_gb": 193}),
        ],
    )
    assert errs == [
        "cluster.yaml: allocation[0] (ghost).replicas[0]: unknown node 'nope'",
        "cluster.yaml: allocation[1] (oob).replicas[0]: node 'dgx-h100': GPU index 8 out of range "
        "(the node has 8 GPUs)",
        "cluster.yaml: allocation[2] (cpu).replicas[0]: node 'l4': cpu over-committed: 49 cores in use, "
        "capacity 48",
        "cluster.yaml: allocation[3] (mem).replicas[0]: node 'l4': memory over-committed: 193 GB in use, "
        "capacity 192",
    ]


def test_double_booking() -> None:
    c = cluster_of(dgx_h100(1), source="c.yaml").allocate(_job("a", {"node": "dgx-h100", "gpus": [3]}))
    assert _errors(c, [_job("b", {"node": "dgx-h100", "gpus": [3]})]) == [
        "c.yaml: allocation[0] (b).replicas[0]: node 'dgx-h100': GPU 3 double-booked: "
        "already held by a (1000 milli)"
    ]
    shared = c.allocate(_job("s1", {"node": "dgx-h100", "gpus": [4], "gpu_milli": 600}))
    assert _errors(shared, [_job("s2", {"node": "dgx-h100", "gpus": [4], "gpu_milli": 500})]) == [
        "c.yaml: allocation[0] (s2).replicas[0]: node 'dgx-h100': GPU 4 double-booked: "
        "already held by s1 (600 milli)"
    ]
    # 600 + 400 = 1000 fits exactly
    full = shared.allocate(_job("s3", {"node": "dgx-h100", "gpus": [4], "gpu_milli": 400}))
    assert full.free_gpu_milli("dgx-h100")[4] == 0
    assert _errors(c, [_job("a", {"node": "dgx-h100", "gpus": [5]})]) == [
        "c.yaml: allocation[0] (a): job 'a' is already running"
    ]


def test_bad_job_shape_is_a_topology_error() -> None:
    c = cluster_of(dgx_h100(1), source="c.yaml")
    errs = _errors(c, [{"job": "x", "replicas": []}])
    assert errs[0].startswith("c.yaml: allocation[0] (x): replicas: List should have at least 1 item")


def test_running_jobs_in_inventory_are_validated_with_inventory_items() -> None:
    inv = Inventory.model_validate(
        {
            "nodes": [{"name": "n", "gpus": {"type": "nvidia-h100", "count": 8}, "cpu_cores": 10}],
            "running": [
                {"job": "a", "replicas": [{"node": "n", "gpus": [0, 1]}]},
                {"job": "b", "replicas": [{"node": "n", "gpus": [1, 1]}, {"node": "n", "cpu_cores": 11}]},
            ],
        }
    )
    with pytest.raises(TopologyError) as exc:
        build_cluster(inv, source="inv.yaml")
    assert [str(p) for p in exc.value.problems] == [
        "inv.yaml: running[1] (b).replicas[0]: node 'n': GPU index listed twice in [1, 1]",
        "inv.yaml: running[1] (b).replicas[0]: node 'n': GPU 1 double-booked: already held by a (1000 milli)",
        "inv.yaml: running[1] (b).replicas[1]: node 'n': cpu over-committed: 11 cores in use, capacity 10",
    ]


def test_release_unknown_job() -> None:
    with pytest.raises(TopologyError, match="no such running job"):
        cluster_of(dgx_h100(1)).release("nope")


def test_inventory_round_trip() -> None:
    c = cluster_of(dgx_h100(2, nodes_per_rack=1), pcie_inference(1))
    c = c.allocate(_job("a", {"node": c.nodes[0].name, "gpus": [0, 1], "cpu_cores": 3}))
    inv = c.to_inventory()
    again = build_cluster(Inventory.model_validate_json(inv.model_dump_json()))
    assert again.to_inventory() == inv
    assert [n.name for n in again.nodes] == [n.name for n in c.nodes]
    assert again.free_gpus(c.nodes[0].name) == c.free_gpus(c.nodes[0].name) == (2, 3, 4, 5, 6, 7)
