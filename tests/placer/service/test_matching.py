"""Resource-aware FETCH without the server: the engine decides feasibility, the order follows §6.2."""

from __future__ import annotations

from typing import Any

import pytest

from placer.service.errors import ApiError
from placer.service.matching import match
from placer.solver.jobs import read_object

A100X4 = {
    "worker_id": "w",
    "labels": ["gpu:nvidia-a100", "gpu_count:4", "gpu_memory_gb:80", "zone:z1", "spot:true"],
}
ON_DEMAND = {**A100X4, "labels": [*A100X4["labels"][:-1], "spot:false"]}


def names(entries: list[dict[str, Any]]) -> list[str]:
    return [e["job"] for e in entries]


def test_preferred_affinity_comes_before_priority_and_priority_before_submit_time() -> None:
    near = {"preferred": [{"key": "zone", "operator": "In", "values": ["z1"], "weight": 10}]}
    far = {"preferred": [{"key": "zone", "operator": "In", "values": ["z9"], "weight": 90}]}
    jobs = read_object(
        [
            {
                "id": "low-near",
                "ext_ml_gpu_count": 1,
                "ext_ml_priority_class": "spot",
                "meta": {"affinity": near},
            },
            {
                "id": "high-far",
                "ext_ml_gpu_count": 1,
                "ext_ml_priority_class": "reserved",
                "meta": {"affinity": far},
            },
            {"id": "mid", "ext_ml_gpu_count": 1, "created_at": "2025-06-01T00:00:00Z"},
            {"id": "mid-early", "ext_ml_gpu_count": 1, "created_at": "2025-01-01T00:00:00Z"},
        ]
    )
    out = match(ON_DEMAND, jobs)
    assert names(out["matches"]) == ["low-near", "high-far", "mid-early", "mid"]
    assert out["matches"][0]["preference"] > 0 and [m["rank"] for m in out["matches"]] == [1, 2, 3, 4]


def test_spot_work_is_steered_to_a_spot_worker() -> None:
    jobs = read_object(
        [
            {"id": "od", "ext_ml_gpu_count": 1},
            {"id": "spot", "ext_ml_gpu_count": 1, "ext_ml_priority_class": "spot"},
        ]
    )
    assert names(match(A100X4, jobs)["matches"]) == ["spot", "od"]  # ML extensions §7: spot work on spot
    assert names(match(ON_DEMAND, jobs)["matches"]) == ["od", "spot"]


def test_dispatch_takes_the_best_jobs_that_fit_together() -> None:
    worker = {**ON_DEMAND, "count": 3}
    jobs = read_object(
        [
            {"id": "a", "ext_ml_gpu_count": 3, "ext_ml_priority_class": "reserved"},
            {"id": "b", "ext_ml_gpu_count": 3},  # runnable alone, not beside a
            {"id": "c", "ext_ml_gpu_count": 1, "ext_ml_priority_class": "spot"},
            {"id": "d", "ext_ml_gpu_count": 1, "ext_ml_priority_class": "spot"},
        ]
    )
    out = match(worker, jobs)
    assert names(out["matches"]) == ["a", "b", "c", "d"]
    assert names(out["dispatch"]) == ["a", "c"]  # 3 + 1 GPUs fill the worker; count 3 is not reached


def test_a_gpu_memory_floor_and_on_demand_only_are_hard_constraints() -> None:
    jobs = read_object(
        [
            {"id": "vram", "ext_ml_gpu_count": 1, "ext_ml_gpu_memory_gb": 141},
            {"id": "no-spot", "ext_ml_gpu_count": 1, "ext_mlx_scheduling_spot_preference": "on_demand_only"},
            {"id": "fits", "ext_ml_gpu_count": 1, "ext_ml_gpu_memory_gb": 80},
        ]
    )
    out = match(A100X4, jobs)
    assert names(out["matches"]) == ["fits"]
    why = {u["job"]: u["reasons"][0]["details"]["eliminated"] for u in out["unmatched"]}
    assert why == {"vram": {"gpu_memory": 1}, "no-spot": {"spot": 1}}


def test_a_tpu_worker_runs_tpu_jobs_of_its_slice_only() -> None:
    worker = {
        "worker_id": "tpu-1",
        "capabilities": {"accelerator": "tpu", "tpu": {"type": "v5e", "topology": "2x4"}},
    }
    jobs = read_object(
        [
            {
                "id": "fits",
                "ext_ml_accelerator": "tpu",
                "ext_ml_tpu_type": "v5e",
                "ext_ml_tpu_topology": "2x4",
            },
            {
                "id": "v5p",
                "ext_ml_accelerator": "tpu",
                "ext_ml_tpu_type": "v5p",
                "ext_ml_tpu_topology": "2x2x1",
            },
            {"id": "gpu", "ext_ml_gpu_count": 1},
        ]
    )
    out = match(worker, jobs)
    assert names(out["matches"]) == ["fits"] and len(out["matches"][0]["replicas"][0]["tpu_chips"]) == 8
    assert sorted(names(out["unmatched"])) == ["gpu", "v5p"]


@pytest.mark.parametrize(
    ("worker", "path"),
    [
        ({"labels": ["gpu:nvidia-t4"]}, "worker.worker_id"),
        ({"worker_id": "w", "queues": "gpu"}, "worker.queues"),
        ({"worker_id": "w", "count": True}, "worker.count"),
        (
            {"worker_id": "w", "capabilities": {"gpu": {"type": "nvidia-t4", "count": "x"}}},
            "worker.workers[0] (w) gpu",
        ),
    ],
)
def test_a_worker_that_cannot_be_read_is_a_422_naming_the_field(worker: dict[str, Any], path: str) -> None:
    with pytest.raises(ApiError) as e:
        match(worker, [])
    assert e.value.status == 422 and e.value.errors[0]["path"] == path
