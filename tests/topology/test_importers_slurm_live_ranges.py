"""A node range (``sbatch -N 1-3``) against a live Slurm (``tests/topology/live_slurm.py``,
:func:`start_ranges`): gpu01's 8 H100 are all held by job ``a``, so of the three nodes two have a free GPU.
placer places the held job ``r`` on those two (as many as fit now, up to three), ``--output slurm`` pins
that count and those nodes, and Slurm, released, runs it there."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.topology.live_slurm import LiveSlurm, running, start_ranges


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-ranges")), start_ranges)


def test_a_node_range_runs_where_placer_put_it(slurm: LiveSlurm, tmp_path: Path) -> None:
    (r_job,) = [j for j in json.loads(slurm.out["squeue-json"])["jobs"] if j["name"] == "r"]
    assert (r_job["node_count"], r_job["max_nodes"]) == (1, 3)  # what 22.05 prints for -N 1-3
    (tmp_path / "sinfo.json").write_text(slurm.out["sinfo-json"])
    (tmp_path / "squeue.json").write_text(slurm.out["squeue-json"])
    files = ["--cluster", str(tmp_path / "sinfo.json"), "--running", str(tmp_path / "squeue.json")]
    cmd = [sys.executable, "-m", "placer", "place", *files, "--jobs", str(tmp_path / "squeue.json")]
    decision = subprocess.run(
        [*cmd, "--engine", "auto", "--json"], capture_output=True, text=True, timeout=120
    )
    assert decision.returncode == 0, decision.stderr
    (p,) = json.loads(decision.stdout)["placements"]
    assert sorted(rep["node"] for rep in p["replicas"]) == ["gpu02", "gpu03"]
    script = subprocess.run(
        [*cmd, "--engine", "auto", "--output", "slurm"], capture_output=True, text=True, timeout=120
    )
    assert script.returncode == 0, script.stderr
    assert f"scontrol update JobId={r_job['job_id']} NumNodes=2 " in script.stdout
    applied = subprocess.run(
        ["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True, timeout=60
    )
    assert applied.returncode == 0, applied.stderr
    jid = str(r_job["job_id"])
    slurm.wait("r running", lambda: "RUNNING" in slurm.run("squeue", "-h", "-j", jid, "-o", "%T"))
    assert slurm.run("squeue", "-h", "-j", jid, "-o", "%D %N").split() == ["2", "gpu[02-03]"]
