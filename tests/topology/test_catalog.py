"""Catalog facts and aliases, checked against the OJS ML resources spec §3.2/§3.3 table and the brief."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.topology.catalog import (
    canonical_gpu_type,
    canonical_tpu_type,
    gpu_info,
    gpu_types,
    is_offered_shape,
    parse_gpu_product,
    parse_shape,
    slice_wraps,
    tpu_accelerator_type,
    tpu_generation_from_gke,
    tpu_info,
)

DATA = Path(__file__).resolve().parents[2] / "topology" / "data" / "accelerators.json"


# (type, memory_gb, compute capability) straight from the OJS ML resources v0.3.0 §3.2 table, plus the
# brief's gb200 and a10 rows.
SPEC_TABLE = [
    ("nvidia-a100", 80, "8.0"),
    ("nvidia-h100", 80, "9.0"),
    ("nvidia-h200", 141, "9.0"),
    ("nvidia-l4", 24, "8.9"),
    ("nvidia-l40s", 48, "8.9"),
    ("nvidia-t4", 16, "7.5"),
    ("nvidia-a10g", 24, "8.6"),
    ("nvidia-b200", 192, "10.0"),
    ("amd-mi250", 128, None),
    ("amd-mi300x", 192, None),
    ("nvidia-gb200", 186, "10.0"),
    ("nvidia-a10", 24, "8.6"),
]


@pytest.mark.parametrize(("type_", "memory", "cc"), SPEC_TABLE)
def test_gpu_facts_match_spec_table(type_: str, memory: int, cc: str | None) -> None:
    info = gpu_info(type_)
    assert info.memory_gb == memory
    assert info.compute_capability == cc


def test_v100_and_a100_memory_options() -> None:
    assert gpu_info("nvidia-v100").memory_options_gb == (16, 32)
    assert gpu_info("nvidia-a100").memory_options_gb == (40, 80)
    assert gpu_info("nvidia-v100").compute_capability == "7.0"


@pytest.mark.parametrize(
    ("type_", "interconnect"),
    [
        ("nvidia-a100", "nvlink"),
        ("nvidia-h100", "nvlink"),
        ("nvidia-h200", "nvlink"),
        ("nvidia-b200", "nvlink"),
        ("nvidia-gb200", "nvlink"),
        ("nvidia-v100", "nvlink"),
        ("nvidia-l4", "pcie"),
        ("nvidia-l40s", "pcie"),
        ("nvidia-t4", "pcie"),
        ("nvidia-a10g", "pcie"),
        ("nvidia-a10", "pcie"),
    ],
)
def test_default_interconnect(type_: str, interconnect: str) -> None:
    assert gpu_info(type_).interconnect == interconnect


def test_gb200_domain_is_72() -> None:
    assert gpu_info("nvidia-gb200").nvlink_domain_gpus == 72


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("NVIDIA-H100-80GB-HBM3", "nvidia-h100"),  # Kubernetes GFD
        ("NVIDIA-A100-SXM4-80GB", "nvidia-a100"),
        ("NVIDIA-A100-SXM4-40GB", "nvidia-a100"),
        ("Tesla-T4", "nvidia-t4"),
        ("NVIDIA-L4", "nvidia-l4"),
        ("nvidia-h100-80gb", "nvidia-h100"),  # GKE
        ("nvidia-tesla-t4", "nvidia-t4"),
        ("nvidia-l4", "nvidia-l4"),
        ("nvidia-tesla-a100", "nvidia-a100"),
        ("nvidia-a100-80gb", "nvidia-a100"),
        ("h100", "nvidia-h100"),  # Slurm gres
        ("a100", "nvidia-a100"),
        ("H100", "nvidia-h100"),
        ("NVIDIA H100 80GB HBM3", "nvidia-h100"),  # nvidia-smi
        ("nvidia_a10g", "nvidia-a10g"),
        ("NVIDIA-A10", "nvidia-a10"),
        ("AMD Instinct MI300X", "amd-mi300x"),
        ("Tesla-V100-SXM2-32GB", "nvidia-v100"),
        ("NVIDIA-GB200", "nvidia-gb200"),
    ],
)
def test_aliases(alias: str, canonical: str) -> None:
    assert canonical_gpu_type(alias) == canonical


@pytest.mark.parametrize(
    "name", ["NVIDIA-GeForce-RTX-4090", "l40", "", "   ", "nvidia-h10", "a1000", "x" * 500]
)
def test_unknown_gpu_names_give_none(name: str) -> None:
    assert canonical_gpu_type(name) is None


def test_product_memory_and_form() -> None:
    assert parse_gpu_product("NVIDIA-A100-SXM4-40GB").memory_gb == 40
    assert parse_gpu_product("NVIDIA-A100-SXM4-40GB").form == "sxm"
    assert parse_gpu_product("NVIDIA-A100-PCIE-40GB").form == "pcie"
    # GKE's nvidia-tesla-a100 is the 40 GB A100 (a2-highgpu), the alias says so
    assert parse_gpu_product("nvidia-tesla-a100").memory_gb == 40


def test_gpu_info_unknown_raises_keyerror() -> None:
    with pytest.raises(KeyError, match="unknown GPU type"):
        gpu_info("nvidia-h10")


@pytest.mark.parametrize(
    ("gen", "hbm", "pod_shape", "pod_chips", "dims"),
    [
        ("v4", 32, (16, 16, 16), 4096, 3),
        ("v5e", 16, (16, 16), 256, 2),
        ("v5p", 95, (16, 20, 28), 8960, 3),
        ("v6e", 32, (16, 16), 256, 2),
    ],
)
def test_tpu_facts(gen: str, hbm: int, pod_shape: tuple[int, ...], pod_chips: int, dims: int) -> None:
    info = tpu_info(gen)
    assert (info.hbm_gb, info.pod_shape, info.pod_chips, info.dims) == (hbm, pod_shape, pod_chips, dims)
    # pod_chips is the product of the pod shape: 16*16*16 = 4096, 16*16 = 256, 16*20*28 = 8960
    product = 1
    for d in pod_shape:
        product *= d
    assert product == pod_chips
    assert info.chips_per_host == 4


def test_tpu_host_shapes() -> None:
    assert tpu_info("v5e").host_shape == (2, 2)
    assert tpu_info("v6e").host_shape == (2, 2)
    assert tpu_info("v4").host_shape == (2, 2, 1)
    assert tpu_info("v5p").host_shape == (2, 2, 1)
    assert tpu_info("v5e").chips_per_host_options == (1, 4, 8)


@pytest.mark.parametrize(
    ("label", "gen"),
    [
        ("tpu-v5-lite-podslice", "v5e"),
        ("tpu-v5p-slice", "v5p"),
        ("tpu-v4-podslice", "v4"),
        ("tpu-v6e-slice", "v6e"),
    ],
)
def test_gke_labels(label: str, gen: str) -> None:
    assert tpu_generation_from_gke(label) == gen
    assert canonical_tpu_type(label) == gen


def test_tpu_accelerator_types_count_tensorcores_for_v4_v5p() -> None:
    assert tpu_accelerator_type("v4-32") == ("v4", 16)  # 32 TensorCores / 2 per chip
    assert tpu_accelerator_type("v5p-8") == ("v5p", 4)
    assert tpu_accelerator_type("v5litepod-16") == ("v5e", 16)  # v5e counts chips
    assert tpu_accelerator_type("v6e-256") == ("v6e", 256)
    assert tpu_accelerator_type("v4-3") is None
    assert canonical_tpu_type("trillium") == "v6e"
    assert canonical_tpu_type("v7x") is None


def test_offered_shapes() -> None:
    for s in ("1x1", "2x2", "2x4", "4x2", "4x4", "4x8", "8x8", "8x16", "16x16"):
        assert is_offered_shape("v5e", parse_shape(s)), s
    for s in ("2x6", "3x3", "16x32", "1x2"):
        assert not is_offered_shape("v6e", parse_shape(s)), s
    for s in ("2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "8x8x12", "4x2x2"):
        assert is_offered_shape("v4", parse_shape(s)), s
    for s in ("2x2x3", "4x4x6", "2x4x8", "16x16x32"):
        assert not is_offered_shape("v4", parse_shape(s)), s
    assert is_offered_shape("v5p", (16, 20, 28))
    assert not is_offered_shape("v5e", (2, 2, 1))


def test_wrap_rules() -> None:
    # v5e/v6e: an axis wraps only at its full length of 16
    assert slice_wraps("v5e", (16, 16)) == (True, True)
    assert slice_wraps("v5e", (8, 16)) == (False, True)
    assert slice_wraps("v6e", (4, 4)) == (False, False)
    # v4/v5p: 4x4x4 and larger are full tori, smaller never wrap
    assert slice_wraps("v4", (4, 4, 4)) == (True, True, True)
    assert slice_wraps("v5p", (4, 8, 16)) == (True, True, True)
    assert slice_wraps("v4", (2, 2, 2)) == (False, False, False)
    assert slice_wraps("v4", (2, 4, 4)) == (False, False, False)


def test_parse_shape() -> None:
    assert parse_shape("2x4") == (2, 4)
    assert parse_shape("4x4x8") == (4, 4, 8)
    for bad in ("", "2x", "x4", "0x4", "2x4x4x4", "abc", "-2x4"):
        assert parse_shape(bad) is None, bad


def test_data_table_has_sources_for_every_entry() -> None:
    data = json.loads(DATA.read_text())
    for section in ("gpus", "tpus"):
        for key, entry in data[section].items():
            assert entry["sources"].strip(), key
    assert set(data["gpus"]) == set(gpu_types())
    # the TPU sources cite Google Cloud TPU docs
    assert all("cloud.google.com/tpu" in e["sources"] for e in data["tpus"].values())
