"""NVLink (OJS ML §3.2 ``ext_ml_gpu_interconnect: nvlink``; placement-rules.md rule 7): all GPUs of the
job inside one NVLink domain. A DGX H100 is one 8-GPU domain per node; a GB200 NVL72 rack is one 72-GPU
domain of 18 trays x 4 GPUs; PCIe L4 servers have no domain at all.
"""

from __future__ import annotations

from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.topology import Cluster, cluster_of, dgx_h100, gb200_nvl72, pcie_inference
from tests.solver.conftest import Solve, gpus_of, nodes_of, pending_reason, reason_codes


def nvlink_job(job_id: str, gpus: int, strategy: str | None = "fsdp") -> Job:
    return Job(
        id=job_id,
        distributed_strategy=strategy,  # type: ignore[arg-type]
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus, interconnect="nvlink"))],
    )


def domains(cluster: Cluster, held: list[tuple[str, int]]) -> set[str | None]:
    return {cluster.node(n).nvlink_domain for n, _ in held}


def fill_trays(rack: int, trays: range) -> dict[str, object]:
    return {
        "job": f"fill-r{rack}",
        "replicas": [{"node": f"nvl72-r{rack}-{t:02d}", "gpus": [0, 1, 2, 3]} for t in trays],
    }


def test_8_gpu_nvlink_job_fits_only_in_one_dgx(solve: Solve) -> None:
    # dgx-h100-1 has 4 free, dgx-h100-2 has 8 free: 4 + 4 over two domains is not allowed.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [{"job": "r", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2, 3]}]}]
    )
    d = solve([nvlink_job("nv8", 8)], c)
    held = gpus_of(d, "nv8")
    assert len(held) == 8
    assert {n for n, _ in held} == {"dgx-h100-2"}
    assert domains(c, held) == {"dgx-h100-2/nvlink"}


def test_8_gpu_nvlink_job_with_4_free_per_dgx_is_not_placed(solve: Solve) -> None:
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            {"job": "r1", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2, 3]}]},
            {"job": "r2", "replicas": [{"node": "dgx-h100-2", "gpus": [0, 1, 2, 3]}]},
        ]
    )
    d = solve([nvlink_job("nv8", 8)], c)
    assert d.placement_of("nv8") is None
    assert reason_codes(d, "nv8")[0] in ("INSUFFICIENT_CAPACITY", "NO_NVLINK_DOMAIN")


def test_16_gpu_nvlink_job_on_gb200_stays_in_one_rack_domain(solve: Solve) -> None:
    # Rack 1 has trays 1-15 busy (12 GPUs free < 16), rack 2 is empty: all 16 GPUs in nvl72-r2.
    c = cluster_of(gb200_nvl72(2)).with_allocations([fill_trays(1, range(1, 16))])
    d = solve([nvlink_job("nv16", 16)], c)
    held = gpus_of(d, "nv16")
    assert len(held) == 16 and len(set(held)) == 16
    assert domains(c, held) == {"nvl72-r2"}
    assert len(set(nodes_of(d, "nv16"))) == 4  # 16 GPUs / 4 per tray


def test_16_gpu_nvlink_job_on_an_empty_gb200_pair_uses_one_rack(solve: Solve) -> None:
    c = cluster_of(gb200_nvl72(2))
    d = solve([nvlink_job("nv16", 16)], c)
    assert len(domains(c, gpus_of(d, "nv16"))) == 1


def test_16_gpu_nvlink_job_across_dgx_domains_is_unsatisfiable(solve: Solve) -> None:
    # Each DGX is its own 8-GPU domain: no domain could ever hold 16.
    d = solve([nvlink_job("nv16", 16)], cluster_of(dgx_h100(4)))
    assert reason_codes(d, "nv16") == ["UNSATISFIABLE"]
    assert "NVLink domain" in (pending_reason(d, "nv16") or "")


def test_nvlink_job_refused_on_pcie_l4_nodes(solve: Solve) -> None:
    d = solve([nvlink_job("nv2", 2, strategy=None)], cluster_of(pcie_inference(3)))
    assert reason_codes(d, "nv2") == ["UNSATISFIABLE"]
    reason = d.pending[0].reasons[0]
    assert reason.details["eliminated"] == {"nvlink": 3}
    assert "NVLink" in reason.message


def test_nvlink_job_from_ojs_document_skips_pcie_nodes(solve: Solve) -> None:
    doc = '{"id": "o", "ext_ml_gpu_count": 2, "ext_ml_gpu_interconnect": "nvlink"}'
    c = cluster_of(pcie_inference(2), dgx_h100(1))
    d = solve(read_text(doc), c)
    assert nodes_of(d, "o") == ["dgx-h100"]


def test_single_gpu_nvlink_job_may_use_pcie(solve: Solve) -> None:
    # Rule 7 applies to jobs with more than one GPU: one GPU has nobody to talk to.
    d = solve([nvlink_job("nv1", 1, strategy=None)], cluster_of(pcie_inference(1)))
    assert nodes_of(d, "nv1") == ["l4"]


def test_no_nvlink_domain_reason_when_gb200_racks_are_fragmented(solve: Solve) -> None:
    # Both racks have trays 1-15 busy: 12 free GPUs each, 24 in all, but no domain has 16.
    c = cluster_of(gb200_nvl72(2)).with_allocations(
        [fill_trays(1, range(1, 16)), fill_trays(2, range(1, 16))]
    )
    d = solve([nvlink_job("nv16", 16)], c)
    assert d.placement_of("nv16") is None
    assert reason_codes(d, "nv16") == ["NO_NVLINK_DOMAIN"]
    reason = d.pending[0].reasons[0]
    assert reason.details["gpus"] == 16
    assert "16 GPUs" in reason.message and "NVLink domain" in reason.message


def test_an_nvlink_gang_keeps_its_zone_scope_inside_the_domain(solve: Solve) -> None:
    # A 16-GPU NVLink gang spans 4 trays of one NVL72 rack. It also asks for one zone (rule 12): with no
    # zone known on the trays it must not span them (found by the nightly property run); with one zone
    # given, it runs inside the rack as before.
    from placer.solver.jobs.model import Placement

    gang = nvlink_job("gang", 16).model_copy(update={"placement": Placement(topology_scope="zone")})
    d = solve([gang], cluster_of(gb200_nvl72(1)))
    assert d.placement_of("gang") is None
    assert reason_codes(d, "gang") == ["UNSATISFIABLE"]
    d = solve([gang], cluster_of(gb200_nvl72(1, zones=["us-east-1a"])))
    assert len(domains(cluster_of(gb200_nvl72(1)), [(n, 0) for n in nodes_of(d, "gang")])) == 1
