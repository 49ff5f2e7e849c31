"""Gangs: all-or-nothing, splitting a multi-node job, distinct nodes (``one_per_node``, ``spread``), several
task groups, topology scope, node counts, and the Flux and SSS examples — through ``place()`` on both
engines, every decision checked (placement-rules.md rules 2, 11, 12).
"""

from __future__ import annotations

from pathlib import Path

from placer.solver.jobs import read_file
from placer.solver.jobs.model import CountRange, GpuAffinity, GpuDemand, Job, Placement, TaskGroup
from placer.topology import cluster_of, cpu_nodes, dgx_h100, gb200_nvl72, pcie_inference
from tests.solver.conftest import Solve, gpus_of, nodes_of, pending_reason, reason_codes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def gpu_job(job_id: str, gpus: int, *, strategy: str | None = None, cpu: float = 0, **kw: object) -> Job:
    return Job(
        id=job_id,
        distributed_strategy=strategy,  # type: ignore[arg-type]
        tasks=[TaskGroup(cpu_cores=cpu, gpu=GpuDemand(count=gpus))],
        **kw,  # type: ignore[arg-type]
    )


def busy(node: str, gpus: list[int], job: str = "running") -> dict[str, object]:
    return {"job": job, "replicas": [{"node": node, "gpus": gpus}]}


# -- a multi-node job --------------------------------------------------------------------------------------


def test_16_gpu_fsdp_job_on_8_gpu_nodes_takes_two_whole_nodes(solve: Solve) -> None:
    # 16 GPUs over 8-GPU nodes: 2 parts of 8 on distinct nodes, CPU divided evenly (64 / 2 = 32).
    d = solve([gpu_job("fsdp", 16, strategy="fsdp", cpu=64)], cluster_of(dgx_h100(3)))
    p = d.placement_of("fsdp")
    assert p is not None
    assert len(p.replicas) == 2
    assert len({r.node for r in p.replicas}) == 2
    assert [len(r.gpus) for r in p.replicas] == [8, 8]
    assert [r.cpu_cores for r in p.replicas] == [32, 32]


def test_12_gpu_job_splits_into_equal_parts(solve: Solve) -> None:
    # 12 over 8-GPU nodes: the largest divisor of 12 that is <= 8 is 6 -> 2 parts of 6 (solver/demand.py).
    d = solve([gpu_job("dp", 12, strategy="data_parallel")], cluster_of(dgx_h100(2)))
    assert sorted(len(r.gpus) for r in d.placement_of("dp").replicas) == [6, 6]  # type: ignore[union-attr]
    assert len(set(nodes_of(d, "dp"))) == 2


def test_gang_is_all_or_nothing(solve: Solve) -> None:
    # 2 DGX, 4 GPUs of one busy: 12 free < 16. Nothing of the job may be placed.
    c = cluster_of(dgx_h100(2)).with_allocations([busy("dgx-h100-1", [0, 1, 2, 3])])
    d = solve([gpu_job("fsdp", 16, strategy="fsdp")], c)
    assert d.placement_of("fsdp") is None
    assert reason_codes(d, "fsdp")[0] == "INSUFFICIENT_CAPACITY"


def test_gang_that_cannot_fit_whole_leaves_room_for_others(solve: Solve) -> None:
    # The 16-GPU gang cannot run (12 free); the 8-GPU job behind it must still get dgx-h100-2 whole.
    c = cluster_of(dgx_h100(2)).with_allocations([busy("dgx-h100-1", [0, 1, 2, 3])])
    d = solve([gpu_job("fsdp", 16, strategy="fsdp"), gpu_job("eight", 8)], c)
    assert d.placement_of("fsdp") is None
    assert nodes_of(d, "eight") == ["dgx-h100-2"]


def test_strategy_none_over_8_gpus_is_unsatisfiable(solve: Solve) -> None:
    d = solve([gpu_job("one-node", 16, strategy="none")], cluster_of(dgx_h100(4)))
    assert reason_codes(d, "one-node") == ["UNSATISFIABLE"]


def test_strategy_none_over_8_gpus_message_names_the_strategy(solve: Solve) -> None:
    # Reasons must mention the constraint: here the one that forbids spanning nodes (the distributed
    # strategy), not only "node too small" — the job would run with a multi-node strategy.
    d = solve([gpu_job("one-node", 16, strategy="none")], cluster_of(dgx_h100(4)))
    message = pending_reason(d, "one-node") or ""
    assert "16" in message and "strategy" in message, message


def test_unset_strategy_over_8_gpus_is_unsatisfiable(solve: Solve) -> None:
    d = solve([gpu_job("unset", 9)], cluster_of(dgx_h100(4)))
    assert reason_codes(d, "unset") == ["UNSATISFIABLE"]


# -- replicas on distinct nodes -------------------------------------------------------------------------


def test_one_per_node_replicas_on_distinct_nodes(solve: Solve) -> None:
    # 3 replicas of 1 GPU would pack on one DGX; one_per_node forces 3 nodes.
    job = Job(id="w", tasks=[TaskGroup(count=3, one_per_node=True, gpu=GpuDemand(count=1))])
    d = solve([job], cluster_of(dgx_h100(3)))
    assert sorted(nodes_of(d, "w")) == ["dgx-h100-1", "dgx-h100-2", "dgx-h100-3"]


def test_one_per_node_needs_enough_nodes(solve: Solve) -> None:
    job = Job(id="w", tasks=[TaskGroup(count=4, one_per_node=True, gpu=GpuDemand(count=1))])
    d = solve([job], cluster_of(dgx_h100(3)))
    assert reason_codes(d, "w") == ["UNSATISFIABLE"]
    assert "distinct nodes" in (pending_reason(d, "w") or "")


def test_spread_affinity_puts_replicas_on_distinct_nodes(solve: Solve) -> None:
    job = Job(
        id="s",
        tasks=[TaskGroup(count=2, gpu=GpuDemand(count=1))],
        placement=Placement(gpu_affinity=GpuAffinity.SPREAD),
    )
    d = solve([job], cluster_of(dgx_h100(2)))
    assert sorted(nodes_of(d, "s")) == ["dgx-h100-1", "dgx-h100-2"]


def test_replicas_without_distinct_flag_may_share_a_node(solve: Solve) -> None:
    # 2 replicas of 4 GPUs on one DGX (8 GPUs): allowed, and the only way when one node exists.
    job = Job(id="pack", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=4))])
    d = solve([job], cluster_of(dgx_h100(1)))
    assert nodes_of(d, "pack") == ["dgx-h100", "dgx-h100"]
    assert sorted(g for _, g in gpus_of(d, "pack")) == list(range(8))


def test_several_task_groups_are_one_gang(solve: Solve) -> None:
    # A CPU master and two 8-GPU workers; only one DGX is free, so the gang cannot run at all.
    job = Job(
        id="mw",
        tasks=[
            TaskGroup(name="master", cpu_cores=8),
            TaskGroup(name="worker", count=2, one_per_node=True, gpu=GpuDemand(count=8)),
        ],
    )
    c = cluster_of(cpu_nodes(1), dgx_h100(2))
    d = solve([job], c)
    groups = sorted(r.task_group for r in d.placement_of("mw").replicas)  # type: ignore[union-attr]
    assert groups == ["master", "worker", "worker"]
    d = solve([job], c.with_allocations([busy("dgx-h100-2", [0])]))
    assert d.placement_of("mw") is None


# -- topology scope and node count ----------------------------------------------------------------------


def test_topology_scope_rack_keeps_the_gang_in_one_rack(solve: Solve) -> None:
    # 4 DGX in 2 racks of 2. One node of rack-1 is busy: a 2x8-GPU gang scoped to a rack must use rack-2.
    c = cluster_of(dgx_h100(4, nodes_per_rack=2)).with_allocations([busy("dgx-h100-r1-1", [0])])
    job = Job(
        id="rack",
        tasks=[TaskGroup(count=2, one_per_node=True, gpu=GpuDemand(count=8))],
        placement=Placement(topology_scope="rack"),
    )
    d = solve([job], c)
    assert sorted(nodes_of(d, "rack")) == ["dgx-h100-r2-1", "dgx-h100-r2-2"]


def test_topology_scope_rack_without_a_free_rack_places_nothing(solve: Solve) -> None:
    # One node busy in each rack: 3 whole DGX are free, but no rack has two.
    c = cluster_of(dgx_h100(4, nodes_per_rack=2)).with_allocations(
        [busy("dgx-h100-r1-1", [0], "r1"), busy("dgx-h100-r2-2", [0], "r2")]
    )
    job = Job(
        id="rack",
        tasks=[TaskGroup(count=2, one_per_node=True, gpu=GpuDemand(count=8))],
        placement=Placement(topology_scope="rack"),
    )
    d = solve([job], c)
    assert d.placement_of("rack") is None
    assert reason_codes(d, "rack")[0] in ("INSUFFICIENT_CAPACITY", "LOST_TO_HIGHER_PRIORITY")


def test_topology_scope_node_puts_every_replica_on_one_node(solve: Solve) -> None:
    job = Job(
        id="n",
        tasks=[TaskGroup(count=4, gpu=GpuDemand(count=2))],
        placement=Placement(topology_scope="node"),
    )
    d = solve([job], cluster_of(dgx_h100(3)))
    assert len(set(nodes_of(d, "n"))) == 1


def test_node_count_range(solve: Solve) -> None:
    # node_count min=max=2 with two one-per-node replicas: exactly 2 distinct nodes.
    job = Job(
        id="nc",
        tasks=[TaskGroup(count=2, one_per_node=True, cpu_cores=4)],
        placement=Placement(node_count=CountRange(min=2, max=2)),
    )
    d = solve([job], cluster_of(cpu_nodes(3)))
    assert len(set(nodes_of(d, "nc"))) == 2


# -- the Flux and SSS examples ----------------------------------------------------------------------------


def test_flux_jobspec_example_on_two_distinct_nodes_with_4_gpus_each(solve: Solve) -> None:
    # examples/jobs/mpi-job.flux.yaml: node count 2, each one slot of 16 cores and 4 GPUs.
    rs = read_file(EXAMPLES / "jobs" / "mpi-job.flux.yaml")
    assert [r.ok for r in rs] == [True]
    c = cluster_of(dgx_h100(2), pcie_inference(2))
    d = solve(rs, c)
    p = d.placement_of(rs[0].id)
    assert p is not None
    assert len(p.replicas) == 2 and len({r.node for r in p.replicas}) == 2
    assert [len(r.gpus) for r in p.replicas] == [4, 4]
    assert [r.cpu_cores for r in p.replicas] == [16, 16]


def test_flux_jobspec_example_needs_two_nodes(solve: Solve) -> None:
    # Only one node exists: two node-level slots can never both be placed.
    rs = read_file(EXAMPLES / "jobs" / "mpi-job.flux.yaml")
    d = solve(rs, cluster_of(dgx_h100(1)))
    assert reason_codes(d, rs[0].id) == ["UNSATISFIABLE"]


def test_sss_example_placed(solve: Solve) -> None:
    # examples/jobs/analysis.sss.xml: 16 processors, memory >= 2 GB; SSS Appendix A: GB = 2^30 bytes, which
    # is placer's GB too (docs/inventory.md, Units): 2 GB.
    rs = read_file(EXAMPLES / "jobs" / "analysis.sss.xml")
    assert [r.id for r in rs] == ["sss-analysis-1"] and rs[0].ok
    d = solve(rs, cluster_of(cpu_nodes(2)))
    p = d.placement_of("sss-analysis-1")
    assert p is not None and len(p.replicas) == 1
    assert p.replicas[0].cpu_cores == 16
    assert abs(p.replicas[0].memory_gb - 2.0) < 1e-9


def test_sss_example_too_many_processors_for_the_cluster(solve: Solve) -> None:
    rs = read_file(EXAMPLES / "jobs" / "analysis.sss.xml")
    d = solve(rs, cluster_of(cpu_nodes(2, cpu_cores=8)))  # 8 cores per node < 16
    assert d.placement_of("sss-analysis-1") is None
    assert reason_codes(d, "sss-analysis-1") == ["UNSATISFIABLE"]


def test_nvlink_gang_with_topology_scope_node_stays_on_one_node(solve: Solve) -> None:
    # GB200 NVL72: the NVLink domain is the whole rack, so "one node" is the stricter scope and must win.
    # Tray 01 has GPUs 0-1 busy (2 free), the other trays 4 free: 2 replicas x 2 GPUs fit one 4-free tray.
    c = cluster_of(gb200_nvl72(1)).with_allocations([busy("nvl72-r1-01", [0, 1])])
    job = Job(
        id="pair",
        tasks=[TaskGroup(count=2, gpu=GpuDemand(count=2, interconnect="nvlink"))],
        placement=Placement(topology_scope="node"),
    )
    d = solve([job], c)
    assert len(set(nodes_of(d, "pair"))) == 1
    assert len(gpus_of(d, "pair")) == 4
