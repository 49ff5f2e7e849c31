"""OJS worker advertisements (v0.3.0 §11, v0.1.0 §2.3 labels, v0.1.0 §6 FETCH) -> Inventory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.topology.errors import TopologyError
from placer.topology.importers.ojs_workers import parse_ojs_workers

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "importers" / "ojs_workers.json"

# The §11 example of ojs-ml-resources-v0.3.0.md, verbatim.
SPEC_V03_AD = {
    "worker_id": "gpu-worker-01",
    "capabilities": {
        "accelerator": "gpu",
        "gpu": {
            "type": "nvidia-a100",
            "count": 8,
            "memory_gb": 80,
            "compute_capability": "8.0",
            "interconnect": "nvlink",
        },
        "cpu_cores": 96,
        "memory_gb": 1024,
        "storage_gb": 8000,
        "shm_size_gb": 256,
        "models_loaded": [
            {"model_id": "llama-3.1-70b", "model_version": "v2.1", "model_format": "safetensors"},
            {"model_id": "llama-3.1-8b", "model_version": "v2.1", "model_format": "safetensors"},
        ],
        "runtimes": ["vllm", "pytorch"],
        "labels": {
            "region": "us-east-1",
            "zone": "us-east-1a",
            "instance_type": "p4d.24xlarge",
            "cluster": "ml-training-prod",
        },
    },
}
# §2.3 of ojs-ml-resources-v0.1.0.md, verbatim.
SPEC_V01_LABELS = {
    "worker_id": "gpu-worker-01",
    "labels": [
        "gpu:nvidia-a100",
        "gpu_count:4",
        "gpu_memory_gb:80",
        "cpu_cores:32",
        "memory_gb:256",
        "region:us-east-1",
        "spot:true",
    ],
}
# §6.1 of ojs-ml-resources-v0.1.0.md, verbatim.
SPEC_V01_FETCH = {
    "queues": ["ml-training"],
    "count": 1,
    "worker_id": "gpu-worker-01",
    "capabilities": {
        "gpu": {"count": 4, "type": "nvidia-a100", "memory_gb": 80},
        "cpu": {"cores": 32},
        "memory_gb": 256,
    },
}


def test_v03_spec_example() -> None:
    inv = parse_ojs_workers(SPEC_V03_AD, source="ad.json")
    (n,) = inv.nodes
    # Every number is the one written in §11.
    assert n.name == "gpu-worker-01"
    assert n.gpus is not None
    assert (n.gpus.type, n.gpus.count, n.gpus.memory_gb) == ("nvidia-a100", 8, 80)
    assert (n.gpus.compute_capability, n.gpus.interconnect) == ("8.0", "nvlink")
    assert (n.cpu_cores, n.memory_gb, n.storage_gb, n.shm_gb) == (96, 1024, 8000, 256)
    assert [m.model_id for m in n.models_loaded] == ["llama-3.1-70b", "llama-3.1-8b"]
    assert n.runtimes == ["vllm", "pytorch"]
    assert (n.region, n.zone) == ("us-east-1", "us-east-1a")
    assert n.labels["instance_type"] == "p4d.24xlarge"
    assert n.capacity_class == "on-demand"
    assert inv.metadata["format"] == "ojs-workers"
    assert "ignored" not in inv.metadata


def test_v01_label_list() -> None:
    (n,) = parse_ojs_workers(SPEC_V01_LABELS, source="ad.json").nodes
    assert n.gpus is not None
    assert (n.gpus.type, n.gpus.count, n.gpus.memory_gb) == ("nvidia-a100", 4, 80)
    assert (n.cpu_cores, n.memory_gb, n.region) == (32, 256, "us-east-1")
    assert n.capacity_class == "spot"  # spot:true
    # every label is kept, so affinity rules on "spot" or "gpu" still match
    assert n.labels["spot"] == "true" and n.labels["gpu_count"] == "4"


def test_product_name_keeps_memory_and_form() -> None:
    # Both ad forms: the product string says 40 GB and PCIe, which the canonical type alone would lose.
    ad = {"worker_id": "w", "capabilities": {"gpu": {"type": "NVIDIA-A100-PCIE-40GB", "count": 2}}}
    (n,) = parse_ojs_workers(ad, source="ad.json").nodes
    assert n.gpus is not None
    assert (n.gpus.type, n.gpus.memory_gb, n.gpus.interconnect) == ("nvidia-a100", 40, "pcie")
    labelled = {"worker_id": "w", "labels": ["gpu:NVIDIA-A100-PCIE-40GB", "gpu_count:2"]}
    (m,) = parse_ojs_workers(labelled, source="ad.json").nodes
    assert m.gpus is not None
    assert (m.gpus.type, m.gpus.count, m.gpus.memory_gb, m.gpus.interconnect) == (
        "nvidia-a100",
        2,
        40,
        "pcie",
    )


def test_v01_fetch_capabilities() -> None:
    (n,) = parse_ojs_workers(SPEC_V01_FETCH, source="fetch.json").nodes
    assert n.gpus is not None
    assert (n.gpus.type, n.gpus.count, n.gpus.memory_gb) == ("nvidia-a100", 4, 80)
    assert (n.cpu_cores, n.memory_gb) == (32, 256)


def test_list_and_workers_wrapper_and_text() -> None:
    two = [SPEC_V01_FETCH, {**SPEC_V01_LABELS, "worker_id": "w2"}]
    assert [n.name for n in parse_ojs_workers(two, source="x").nodes] == ["gpu-worker-01", "w2"]
    wrapped = parse_ojs_workers({"workers": two}, source="x")
    assert len(wrapped.nodes) == 2
    assert len(parse_ojs_workers(json.dumps(two), source="x.json").nodes) == 2


def test_sample_file() -> None:
    inv = parse_ojs_workers(SAMPLE.read_text(), source=str(SAMPLE))
    # 6 advertisements: 5 machines (4 GPU + 1 CPU) and 1 TPU worker imported as a 2x4 slice.
    assert sorted(n.name for n in inv.nodes) == [
        "cpu-worker-01",
        "gpu-worker-01",
        "gpu-worker-02",
        "gpu-worker-03",
        "gpu-worker-04",
    ]
    by_type: dict[str, int] = {}
    for n in inv.nodes:
        if n.gpus:
            by_type[n.gpus.type] = by_type.get(n.gpus.type, 0) + n.gpus.count
    # a100: 8 (worker-01) + 4 (worker-03) + 4 (worker-04) = 16; h100: 8 (worker-02)
    assert by_type == {"nvidia-a100": 16, "nvidia-h100": 8}
    spot = sorted(n.name for n in inv.nodes if n.capacity_class == "spot")
    assert spot == ["gpu-worker-02", "gpu-worker-03"]  # labels spot: "true" and spot:true
    (tpu,) = inv.tpu_pods
    assert (tpu.name, tpu.type, tpu.shape, tpu.fixed_slice) == ("tpu-worker-01", "v5e", [2, 4], True)
    assert tpu.shape[0] * tpu.shape[1] == 8  # 2x4 chips
    # the FETCH form's "queues"/"count" are known keys, nothing was ignored
    assert "ignored" not in inv.metadata


def test_unknown_keys_are_listed_not_dropped() -> None:
    ad = {"worker_id": "w", "capabilities": {"cpu_cores": 4, "fpga_count": 2}, "extra": 1}
    inv = parse_ojs_workers(ad, source="w.json")
    assert inv.metadata["ignored"] == ["workers[0] (w): extra", "workers[0] (w): capabilities.fpga_count"]


def test_fpga_worker_is_a_cpu_node_with_property() -> None:
    (n,) = parse_ojs_workers({"worker_id": "f", "capabilities": {"accelerator": "fpga"}}, source="x").nodes
    assert n.gpus is None and n.properties == ["fpga"]


@pytest.mark.parametrize(
    ("doc", "item", "problem"),
    [
        ({"capabilities": {}}, "workers[0]", "'worker_id' is missing"),
        (
            {"worker_id": "w", "capabilities": {"gpu": {"count": 2}}},
            "workers[0] (w) gpu",
            "'type' is missing",
        ),
        (
            {"worker_id": "w", "capabilities": {"gpu": {"type": "nvidia-t4", "count": "2"}}},
            "workers[0] (w) gpu",
            "'count' must be an integer, got '2'",
        ),
        (
            {
                "worker_id": "w",
                "capabilities": {"gpu": {"type": "nvidia-t4", "count": 1, "interconnect": "any"}},
            },
            "workers[0] (w) gpu",
            "interconnect 'any' must be 'nvlink' or 'pcie'",
        ),
        ({"worker_id": "w", "capabilities": {"accelerator": "gpu"}}, "workers[0] (w)", "advertises no gpu"),
        (
            {"worker_id": "w", "capabilities": {"accelerator": "quantum"}},
            "workers[0] (w)",
            "'quantum' is not",
        ),
        ({"worker_id": "w", "capabilities": {"memory_gb": -1}}, "workers[0] (w)", "'memory_gb' must be >= 0"),
        ({"worker_id": "w", "labels": ["gpu_count:x", "gpu:nvidia-t4"]}, "workers[0] (w)", "gpu_count:'x'"),
        ({"worker_id": "w", "labels": [7]}, "workers[0] (w)", "labels[0] must be a non-empty string"),
        ({"worker_id": "w", "labels": [" "]}, "workers[0] (w)", "labels[0] must be a non-empty string"),
        ({"worker_id": "w", "labels": ["spot:maybe"]}, "workers[0] (w)", "label spot 'maybe'"),
        (
            {
                "worker_id": "w",
                "capabilities": {"accelerator": "tpu", "tpu": {"type": "v9z", "topology": "2x4"}},
            },
            "workers[0] (w) tpu",
            "'v9z' is not a known TPU generation",
        ),
        (
            {"worker_id": "w", "capabilities": {"models_loaded": [{"x": 1}]}},
            "workers[0] (w) models_loaded[0]",
            "model_id",
        ),
        (42, "document", "expected an advertisement"),
    ],
)
def test_malformed_ads_name_file_item_problem(doc: object, item: str, problem: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_ojs_workers(doc, source="workers.json")
    p = e.value.problems[0]
    assert p.source == "workers.json"
    assert p.item.startswith(item)
    assert problem in p.message
    assert str(p).startswith(f"workers.json: {item}")


def test_duplicate_worker_ids() -> None:
    with pytest.raises(TopologyError, match=r"workers\[1\] \(a\): worker_id 'a' is used twice"):
        parse_ojs_workers([{"worker_id": "a"}, {"worker_id": "a"}], source="w.json")


def test_all_problems_reported_together() -> None:
    with pytest.raises(TopologyError) as e:
        parse_ojs_workers(
            [{"worker_id": 1}, {"worker_id": "b", "capabilities": {"cpu_cores": "x"}}], source="w"
        )
    assert len(e.value.problems) == 2


def test_a_label_without_a_colon_is_a_tag() -> None:
    # The OJS worker-info schema (openjobspec/ojs-json-schema, schemas/v1/worker-info.schema.json) has
    # labels as any strings ("canary", "v2.1"); v0.1.0 §2.3 writes capabilities as "key:value" in the
    # same list. A tag is kept as a label with the empty value, so "canary Exists" selects the worker.
    inv = parse_ojs_workers({"worker_id": "w", "labels": ["canary", "gpu:nvidia-t4"]}, source="w.json")
    [n] = inv.nodes
    assert n.labels["canary"] == "" and n.gpus is not None and n.gpus.count == 1
