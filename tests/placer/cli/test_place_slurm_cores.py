"""Cores are cores on a Slurm cluster whose CPUs are hardware threads: the captured Slurm 22.05 outputs
with every node made a 2-core, 2-threads-per-core node (``cpus`` 4 = 1 socket x 2 cores x 2 threads), as
``sinfo --json`` prints such nodes. Slurm allocates whole cores (``select/cons_tres`` with ``CR_Core``):
a job of 1 CPU holds a core, 3 CPUs two."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.cli import main
from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"


def _smt_nodes() -> dict:
    doc = json.loads((REAL / "sinfo-squeue-pair-22.05.json").read_text())
    for n in doc["nodes"]:
        n["threads"], n["cpus"] = 2, 4
        n["alloc_cpus"] *= 2  # what Slurm shows: a job's core is both its threads
        if n.get("tres_used"):
            n["tres_used"] = n["tres_used"].replace("cpu=2,", "cpu=4,").replace("cpu=1,", "cpu=2,")
    return doc


def _squeue(cpus: int) -> dict:
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        if j["job_state"] == "RUNNING":  # each held one core: two CPUs on these nodes
            j["tres_alloc_str"] = j["tres_alloc_str"].replace("cpu=1,", "cpu=2,")
        else:
            j["cpus"] = cpus
    return doc


def test_nodes_and_running_jobs_count_cores() -> None:
    cluster = build_cluster(inventory_from_input(_smt_nodes(), source="sinfo.json"))
    gpu01 = next(n for n in cluster.nodes if n.name == "gpu01")
    assert gpu01.cpu_cores == 2  # 4 CPUs / 2 threads per core
    assert gpu01.labels["slurm_cpus_per_core"] == "2"
    named = with_slurm_jobs(cluster, squeue_running(_squeue(1), source="squeue.json"))
    a = next(rj for rj in named.running_jobs() if rj.job == "1")
    assert a.replicas[0].cpu_cores == 1  # 2 CPUs: one core
    # a and b hold one core each of gpu01's two: none left, and nothing anonymous remains
    assert named.free_cpu("gpu01") == 0
    assert not [rj for rj in named.running_jobs() if rj.job.startswith("slurm-alloc-")]


@pytest.mark.parametrize(("cpus", "cores"), [(1, 1), (2, 1), (3, 2), (4, 2)])
def test_a_pending_jobs_cpus_become_whole_cores(
    cpus: int, cores: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "sinfo.json").write_text(json.dumps(_smt_nodes()))
    (tmp_path / "squeue.json").write_text(json.dumps(_squeue(cpus)))
    args = ["validate", str(tmp_path / "squeue.json")]
    assert main(args) == 0  # read alone, the job asks Slurm CPUs
    assert f'"cpu_cores": {float(cpus)}' in capsys.readouterr().out
    # against the cluster, it asks cores
    sq = str(tmp_path / "squeue.json")
    args = ["place", "--cluster", str(tmp_path / "sinfo.json"), "--running", sq, "--jobs", sq]
    args += ["--engine", "greedy", "--no-plan", "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    # f asks gpu01 (-w), whose two cores a and b hold: pending, for lack of room there
    (pending,) = d["pending"]
    assert pending["job"] == "5"
    assert f"{cores} cores" in pending["reasons"][0]["message"]
