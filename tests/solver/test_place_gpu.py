"""Accelerator kind, GPU type (aliases included), GPU count, minimum VRAM and compute capability, through
:func:`placer.solver.engine.place` on both engines; every decision is checked by ``placer.solver.checks``
(``solve``).

Expected values come from the builders' documented hardware (DGX H100: 8x H100 80 GB, compute capability
9.0; GB200 NVL72 tray: 4x GB200 186 GB, 10.0; g2-standard-48: 4x L4 24 GB, 8.9; HGX A100 with
``gpu_memory_gb``) and from placement-rules.md rule 4.
"""

from __future__ import annotations

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.topology import cluster_of, cpu_nodes, dgx_h100, gb200_nvl72, hgx_a100, pcie_inference
from tests.solver.conftest import Solve, gpus_of, nodes_of, pending_reason, reason_codes


def gpu_job(job_id: str, count: int = 1, **gpu: object) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(gpu=GpuDemand(count=count, **gpu))])  # type: ignore[arg-type]


# -- accelerator kind ------------------------------------------------------------------------------------


def test_gpu_job_never_on_cpu_only_node(solve: Solve) -> None:
    # Two CPU nodes come first in node order and are emptier: only the DGX may take the GPU job.
    c = cluster_of(cpu_nodes(2), dgx_h100(1))
    d = solve([gpu_job("g", 1)], c)
    assert nodes_of(d, "g") == ["dgx-h100"]
    assert len(gpus_of(d, "g")) == 1


def test_gpu_job_on_cpu_only_cluster_is_unsatisfiable(solve: Solve) -> None:
    d = solve([gpu_job("g", 1)], cluster_of(cpu_nodes(3)))
    assert reason_codes(d, "g") == ["UNSATISFIABLE"]
    reason = d.pending[0].reasons[0]
    assert reason.details["eliminated"] == {"accelerator": 3}  # all three nodes, for having no GPU
    assert "no GPU" in reason.message


def test_cpu_job_may_use_a_gpu_node(solve: Solve) -> None:
    job = Job(id="etl", tasks=[TaskGroup(cpu_cores=16, memory_gb=64)])
    d = solve([job], cluster_of(dgx_h100(1)))
    p = d.placement_of("etl")
    assert p is not None and [r.node for r in p.replicas] == ["dgx-h100"]
    assert p.replicas[0].gpus == [] and p.replicas[0].cpu_cores == 16 and p.replicas[0].memory_gb == 64


def test_cpu_job_too_big_for_every_node_is_unsatisfiable(solve: Solve) -> None:
    # cpu_nodes default to 64 cores; 65 cores fit no node even when empty.
    d = solve([Job(id="big", tasks=[TaskGroup(cpu_cores=65)])], cluster_of(cpu_nodes(2)))
    assert reason_codes(d, "big") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"too_small": 2}


# -- GPU type --------------------------------------------------------------------------------------------


def test_gpu_type_selects_the_node_with_that_type(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1), pcie_inference(1))  # nodes "dgx-h100" and "l4"
    d = solve([gpu_job("inf", 1, types=["nvidia-l4"]), gpu_job("train", 2, types=["nvidia-h100"])], c)
    assert nodes_of(d, "inf") == ["l4"]
    assert nodes_of(d, "train") == ["dgx-h100"]


@pytest.mark.parametrize("spelling", ["NVIDIA-H100-80GB-HBM3", "H100", "nvidia-h100"])
def test_gpu_type_alias_spellings(solve: Solve, spelling: str) -> None:
    # The OJS reader refuses the product-name spelling (test_ojs_reader_refuses_product_name below), so the
    # Job is built directly: the engine compares canonical catalog ids (rule 4).
    c = cluster_of(pcie_inference(1), dgx_h100(1))
    d = solve([gpu_job("a", 4, types=[spelling])], c)
    assert nodes_of(d, "a") == ["dgx-h100"]


def test_gpu_type_list_means_any_of_them(solve: Solve) -> None:
    # L4 first in the list, but the L4 node is full: the job takes the H100 alternative.
    c = cluster_of(pcie_inference(1), dgx_h100(1)).with_allocations(
        [{"job": "busy", "replicas": [{"node": "l4", "gpus": [0, 1, 2, 3]}]}]
    )
    d = solve([gpu_job("a", 2, types=["nvidia-l4", "NVIDIA-H100-80GB-HBM3"])], c)
    assert nodes_of(d, "a") == ["dgx-h100"]


def test_ojs_reader_refuses_product_name_and_place_rejects_it(solve: Solve) -> None:
    rs = read_text('{"id": "a", "ext_ml_gpu_type": "NVIDIA-H100-80GB-HBM3", "ext_ml_gpu_count": 1}')
    assert not rs[0].ok
    d = solve(rs, cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["a"]
    assert d.rejected[0].errors[0]["path"] == "ext_ml_gpu_type"


def test_gpu_type_absent_from_cluster_is_unsatisfiable(solve: Solve) -> None:
    d = solve([gpu_job("a", 1, types=["nvidia-b200"])], cluster_of(dgx_h100(2), pcie_inference(1)))
    assert reason_codes(d, "a") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"gpu_type": 3}
    assert "GPU type" in d.pending[0].reasons[0].message


# -- GPU count -------------------------------------------------------------------------------------------


def test_gpu_count_is_exact_and_uses_free_gpus_only(solve: Solve) -> None:
    # GPUs 0-4 of the only DGX run a job: a 3-GPU job gets exactly 3 of the free indices 5, 6, 7.
    c = cluster_of(dgx_h100(1)).with_allocations(
        [{"job": "r", "replicas": [{"node": "dgx-h100", "gpus": [0, 1, 2, 3, 4]}]}]
    )
    d = solve([gpu_job("a", 3)], c)
    assert sorted(g for _, g in gpus_of(d, "a")) == [5, 6, 7]


def test_gpu_count_larger_than_free_is_insufficient_capacity(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1)).with_allocations(
        [{"job": "r", "replicas": [{"node": "dgx-h100", "gpus": [0, 1, 2, 3, 4]}]}]
    )
    d = solve([gpu_job("a", 4)], c)  # 3 free < 4; 8 >= 4 on the empty node
    assert reason_codes(d, "a") == ["INSUFFICIENT_CAPACITY"]


def test_two_jobs_never_share_a_gpu(solve: Solve) -> None:
    d = solve([gpu_job("a", 5), gpu_job("b", 3)], cluster_of(dgx_h100(1)))
    held = gpus_of(d, "a") + gpus_of(d, "b")
    assert sorted(held) == [("dgx-h100", i) for i in range(8)]


def test_fractional_gpu_shares_sum_to_at_most_one_gpu(solve: Solve) -> None:
    # One L4 node of 1 GPU: two 500-milli shares fit on GPU 0, a third does not.
    c = cluster_of(pcie_inference(1, gpus_per_node=1))
    jobs = [gpu_job(f"s{i}", 1, share_milli=500) for i in range(3)]
    d = solve(jobs, c)
    assert len(d.placements) == 2
    for p in d.placements:
        assert p.replicas[0].gpus == [0] and p.replicas[0].gpu_milli == 500
    assert len(d.pending) == 1


# -- minimum GPU memory ----------------------------------------------------------------------------------


def test_min_gpu_memory_skips_smaller_gpus(solve: Solve) -> None:
    c = cluster_of(hgx_a100(1, name="a100-40", gpu_memory_gb=40), hgx_a100(1, name="a100-80"))
    d = solve([gpu_job("a", 8, min_memory_gb=80)], c)
    assert nodes_of(d, "a") == ["a100-80"]


def test_min_gpu_memory_above_every_gpu_is_unsatisfiable(solve: Solve) -> None:
    c = cluster_of(hgx_a100(1, name="a100-40", gpu_memory_gb=40), hgx_a100(1, name="a100-80"))
    d = solve([gpu_job("a", 1, min_memory_gb=81)], c)
    assert reason_codes(d, "a") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"gpu_memory": 2}
    assert "memory" in pending_reason(d, "a")  # type: ignore[operator]


# -- minimum compute capability (compared as numbers: 10.0 > 9.0) --------------------------------------


def test_min_compute_capability_10_0_is_above_9_0(solve: Solve) -> None:
    # H100 is 9.0, GB200 is 10.0. As strings "10.0" < "9.0"; as versions 10.0 > 9.0.
    c = cluster_of(dgx_h100(1), gb200_nvl72(1))
    d = solve([gpu_job("a", 4, min_compute_capability="10.0")], c)
    assert nodes_of(d, "a")[0].startswith("nvl72-r1-")


def test_min_compute_capability_9_0_accepts_10_0(solve: Solve) -> None:
    # Only GB200 trays exist: a 9.0 minimum must accept 10.0.
    d = solve([gpu_job("a", 4, min_compute_capability="9.0")], cluster_of(gb200_nvl72(1)))
    assert nodes_of(d, "a")[0].startswith("nvl72-r1-")


def test_min_compute_capability_above_every_gpu_is_unsatisfiable(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1), gb200_nvl72(1), pcie_inference(1))  # 1 + 18 + 1 nodes
    d = solve([gpu_job("a", 1, min_compute_capability="10.1")], c)
    assert reason_codes(d, "a") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"compute_capability": 20}
    assert "compute capability" in pending_reason(d, "a")  # type: ignore[operator]
