"""Cores are cores, against a live Slurm whose node's CPUs are hardware threads
(``tests/topology/live_slurm.py``, :func:`start_smt`): smt01 has 1 socket x 2 cores x 2 threads = 4 CPUs.
Slurm allocates whole cores, so job e (1 CPU) holds a core (2 CPUs) and job g (3 CPUs: 2 cores) waits for
the one core left to become two. placer reads the node as 2 cores with 1 free, from every form, and g as
asking 2 cores."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input
from tests.topology.live_slurm import LiveSlurm, running, start_smt


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-smt")), start_smt)


def test_slurm_itself_allocates_a_whole_core_to_a_one_cpu_job(slurm: LiveSlurm) -> None:
    # What the arithmetic below rests on, as Slurm prints it: 4 CPUs, 2 allocated to e's 1 CPU.
    node = " ".join(slurm.out["show-node-d"].split())
    assert "CPUTot=4 " in node and "CPUAlloc=2 " in node and "ThreadsPerCore=2" in node
    states = {j["name"]: j["job_state"] for j in json.loads(slurm.out["squeue-json"])["jobs"]}
    assert states == {"e": "RUNNING", "g": "PENDING"}


def test_every_node_form_gives_two_cores_one_free(slurm: LiveSlurm) -> None:
    for source, doc in (
        ("sinfo.json", json.loads(slurm.out["sinfo-json"])),
        ("show-node-d.txt", slurm.out["show-node-d"]),
    ):
        cluster = build_cluster(inventory_from_input(doc, source=source))
        (node,) = [n for n in cluster.nodes if n.name == "smt01"]
        assert node.cpu_cores == 2, source
        assert cluster.free_cpu("smt01") == 1, source
    named = with_slurm_jobs(
        cluster, squeue_running(json.loads(slurm.out["squeue-json"]), source="squeue.json")
    )
    (e,) = [rj for rj in named.running_jobs()]
    assert e.labels["slurm_job_name"] == "e" and e.replicas[0].cpu_cores == 1
    assert named.free_cpu("smt01") == 1


def test_the_pending_job_asks_two_cores_and_waits_as_in_slurm(slurm: LiveSlurm, tmp_path: Path) -> None:
    (tmp_path / "sinfo.json").write_text(slurm.out["sinfo-json"])
    (tmp_path / "squeue.json").write_text(slurm.out["squeue-json"])
    sq = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json")]
    cmd += ["--running", sq, "--jobs", sq, "--engine", "greedy", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["placements"] == []
    (pending,) = d["pending"]
    assert "2 cores" in pending["reasons"][0]["message"], pending


def test_a_powered_down_cloud_node_is_not_ready_but_schedulable(slurm: LiveSlurm) -> None:
    # off01: State=CLOUD with power saving on and no slurmd; Slurm shows it idle and powered down, and
    # would power it up for a job. placer: not ready now, schedulable (as for `IDLE+CLOUD+POWERED_DOWN`).
    node = json.loads(slurm.out["sinfo-json"])["nodes"]
    (off,) = [n for n in node if n["name"] == "off01"]
    shown = " ".join([off["state"], *off.get("state_flags", [])]).upper()
    assert "POWER" in shown and "CLOUD" in shown, off
    for source, doc in (
        ("sinfo.json", json.loads(slurm.out["sinfo-json"])),
        ("show-node-d.txt", slurm.out["show-node-d"]),
    ):
        nodes = {n.name: n for n in inventory_from_input(doc, source=source).nodes}
        assert (nodes["off01"].ready, nodes["off01"].schedulable) == (False, True), source
