"""Conventions every command shares: ``-`` reads standard input wherever a file is read, and
``placer --version`` names the installed version. Run as a user would: the installed console script in a
subprocess, with a real pipe."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
NODES = REPO / "examples" / "importers" / "kubernetes_nodes.json"
CLUSTER = REPO / "examples" / "clusters" / "h100-training.yaml"
JOBS = REPO / "examples" / "jobs" / "batch.json"


def placer(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "placer", *argv], input=stdin, capture_output=True, timeout=120, check=False
    )


def test_version_is_the_distribution_version() -> None:
    r = placer("--version")
    assert r.returncode == 0
    assert r.stdout.decode().strip() == f"placer {version('placer-engine')}"


def test_kubectl_nodes_piped_into_placer_cluster() -> None:
    """``kubectl get nodes -o json | placer cluster -``: the same summary as reading the file."""
    piped = placer("cluster", "-", "--json", stdin=NODES.read_bytes())
    from_file = placer("cluster", str(NODES), "--json")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["gpus"] == json.loads(from_file.stdout)["gpus"]


def test_jobs_from_standard_input_are_named_stdin() -> None:
    r = placer("validate", "-", "--json", stdin=JOBS.read_bytes())
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert len(lines) == len(json.loads(JOBS.read_text()))
    assert all(item["source"] == "<stdin>" and item["ok"] for item in lines)


def test_place_reads_jobs_from_standard_input() -> None:
    """The same decision as from the file (greedy, a fixed ``--now``: a pure function of its inputs)."""
    args = [
        "place",
        "--cluster",
        str(CLUSTER),
        "--engine",
        "greedy",
        "--json",
        "--now",
        "2025-06-01T12:00:00Z",
    ]
    piped = placer(*args, "--jobs", "-", stdin=JOBS.read_bytes())
    from_file = placer(*args, "--jobs", str(JOBS))
    assert piped.returncode == 0, piped.stderr
    placements = json.loads(piped.stdout)["placements"]
    assert placements and placements == json.loads(from_file.stdout)["placements"]


def test_empty_standard_input_is_a_content_error_not_a_traceback() -> None:
    r = placer("cluster", "-", stdin=b"")
    assert r.returncode == 1
    assert b"Traceback" not in r.stderr and b"<stdin>" in r.stderr


def test_place_counts_the_pods_running_on_a_kubernetes_cluster() -> None:
    """``--pods`` (kubectl get pods -A -o json) is read with the node list, as ``placer cluster --pods``
    reads it: the decision sees the GPUs those pods hold, and ``placer check`` with the same files agrees."""
    pods = str(REPO / "examples" / "importers" / "kubernetes_pods.json")
    args = ["place", "--cluster", str(NODES), "--jobs", str(JOBS), "--engine", "greedy", "--json"]
    without = json.loads(placer(*args).stdout)
    r = placer(*args, "--pods", pods)
    assert r.returncode == 0, r.stderr
    with_pods = json.loads(r.stdout)
    free = json.loads(placer("cluster", str(NODES), "--pods", pods, "--json").stdout)["free_gpus"]
    placed = sum(len(rep["gpus"]) for p in with_pods["placements"] for rep in p["replicas"])
    assert placed <= sum(free.values())
    assert with_pods["stats"]["objective"] < without["stats"]["objective"]
