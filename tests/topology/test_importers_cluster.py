"""Imported samples built into cluster graphs (needs topology.build / topology.views)."""

from __future__ import annotations

from pathlib import Path

from placer.topology.load import load_cluster
from placer.topology.views import summary

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "importers"


def test_ojs_workers_cluster() -> None:
    s = summary(load_cluster(EXAMPLES / "ojs_workers.json"))
    assert s["nodes"] == 5
    assert s["gpus"] == {"nvidia-a100": 16, "nvidia-h100": 8}  # 8 + 4 + 4 A100, 8 H100
    assert s["free_gpus"] == {"nvidia-a100": 16, "nvidia-h100": 8}  # nothing runs
    # 4 GPU workers, each its own NVLink board (A100/H100 SXM are NVLink in the catalog)
    assert s["nvlink_domains"] == 4
    assert s["tpu_chips"] == {"v5e": 8} and s["free_tpu_chips"] == {"v5e": 8}  # the 2x4 worker


def test_kubernetes_cluster_with_pods() -> None:
    c = load_cluster(EXAMPLES / "kubernetes_nodes.json", pods=EXAMPLES / "kubernetes_pods.json")
    s = summary(c)
    assert s["nodes_total"] == 9
    assert s["nodes"] == 7  # minus the NotReady H100 and the cordoned L4
    assert s["gpus"] == {"nvidia-a100": 8, "nvidia-gb200": 16, "nvidia-h100": 16, "nvidia-l4": 1}
    # free on usable nodes: A100 8 - 1 (inference); GB200 16 - 4 (debug-shell); H100: node-1 holds
    # llm-train on all 8, node-2 is not ready; the only L4 is cordoned
    assert s["free_gpus"] == {"nvidia-a100": 7, "nvidia-gb200": 12, "nvidia-h100": 0, "nvidia-l4": 0}
    # 2 H100 boards + 2 GB200 cliques + 1 A100 board (the L4 is PCIe)
    assert s["nvlink_domains"] == 5
    # only clique .2 (trays 3-4: 2 x 4 = 8 GPUs, none used) still has 8 free GPUs
    assert s["free_nvlink_domains_8"]["nvidia-gb200"] == 1
    # 4x4 = 16 chips (held whole by tpu-train-slice-0) + 2 x 2x4 = 16 free
    assert s["tpu_chips"] == {"v5e": 32} and s["free_tpu_chips"] == {"v5e": 16}
    # llm-train, inference, debug-shell, tpu-train-slice-0, kube-proxy, and best-effort (it requests
    # nothing, yet holds one of its node's pod slots)
    assert s["running_jobs"] == 6


def test_slurm_cluster() -> None:
    s = summary(load_cluster(EXAMPLES / "slurm_nodes.txt"))
    assert (s["nodes_total"], s["nodes"]) == (6, 3)  # usable: gpu-h100-01, gpu-a100-01, cpu-01
    assert s["gpus"] == {"nvidia-a100": 8, "nvidia-h100": 16, "nvidia-t4": 2}
    # h100-01: 8 - 4 allocated; a100-01: all 4 allocated; the others are not usable
    assert s["free_gpus"] == {"nvidia-a100": 0, "nvidia-h100": 4, "nvidia-t4": 0}
    assert s["nvlink_domains"] == 4  # 2 H100 + 2 A100 boards; T4 is PCIe
    assert s["running_jobs"] == 2


def test_jgf_cluster() -> None:
    s = summary(load_cluster(EXAMPLES / "flux_jgf.json"))
    assert s["name"] == "tiny0"
    assert s["nodes"] == 4
    assert s["gpus"] == {"nvidia-a100": 16}  # 4 nodes x 2 sockets x 2 GPUs
    assert s["cpu_cores"] == 32  # 4 nodes x 2 sockets x 4 cores
    assert s["nvlink_domains"] == 4
