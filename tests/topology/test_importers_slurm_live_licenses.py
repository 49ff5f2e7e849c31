"""Cluster-wide licences against a live Slurm (``tests/topology/live_slurm.py``, :func:`start_licenses`):
``Licenses=matlab:4,ansys:2``; job ``a`` runs holding 3 ``matlab`` seats, ``p`` asks ``matlab:2,ansys`` and
Slurm keeps it pending (reason ``Licenses``), ``q`` asks ``ansys:2`` and is held.

placer, reading what this Slurm prints, must wait where Slurm waits and start what Slurm starts: ``p``
waits for ``matlab`` (4 seats, 3 held, 2 asked), ``q`` may start; released, Slurm starts ``q`` and still
keeps ``p`` waiting, and placer, reading Slurm again, then also names ``ansys`` (2 seats, both held)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer.topology.importers.slurm_jobs import squeue_running
from placer.topology.importers.slurm_licenses import parse_slurm_licenses
from tests.topology.live_slurm import LiveSlurm, running, start_licenses


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-licenses")), start_licenses)


def _ids(squeue: str) -> dict[str, str]:
    return {j["name"]: str(j["job_id"]) for j in json.loads(squeue)["jobs"]}


def _place(slurm: LiveSlurm, tmp_path: Path, squeue: str) -> dict:  # type: ignore[type-arg]
    (tmp_path / "sinfo.json").write_text(slurm.run("sinfo", "--json"))
    (tmp_path / "squeue.json").write_text(squeue)
    (tmp_path / "licenses.txt").write_text(slurm.run("scontrol", "show", "licenses"))
    files = {
        k: str(tmp_path / f) for k, f in (("c", "sinfo.json"), ("q", "squeue.json"), ("l", "licenses.txt"))
    }
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", files["c"], "--running", files["q"]]
    out = subprocess.run(
        [*cmd, "--jobs", files["q"], "--slurm-licenses", files["l"], "--engine", "auto", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_slurms_pool_and_the_running_jobs_seats_agree(slurm: LiveSlurm) -> None:
    assert parse_slurm_licenses(slurm.out["show-licenses"], source="live") == {"ansys": 2, "matlab": 4}
    assert parse_slurm_licenses(slurm.out["show-licenses-o"], source="live -o") == {"ansys": 2, "matlab": 4}
    held: dict[str, int] = {}
    for rj in squeue_running(json.loads(slurm.out["squeue-json"]), source="live"):
        for name, seats in rj.licenses.items():
            held[name] = held.get(name, 0) + seats
    assert held == {"matlab": 3}  # what scontrol show licenses calls Used
    assert "LicenseName=matlab Total=4 Used=3" in slurm.out["show-licenses-o"]


def test_placer_waits_and_starts_as_slurm_does(slurm: LiveSlurm, tmp_path: Path) -> None:
    squeue = slurm.out["squeue-json"]
    ids = _ids(squeue)
    d = _place(slurm, tmp_path, squeue)
    assert [p["job"] for p in d["placements"]] == [ids["q"]]
    (p,) = d["pending"]
    assert p["job"] == ids["p"] and [r["details"]["license"] for r in p["reasons"]] == ["matlab", "ansys"]
    # Slurm agrees: released, q starts and p still waits for licences.
    slurm.run("scontrol", "release", ids["q"])
    slurm.wait("q running", lambda: "RUNNING" in slurm.run("squeue", "-h", "-j", ids["q"], "-o", "%T"))
    assert slurm.run("squeue", "-h", "-j", ids["p"], "-o", "%T %r").split() == ["PENDING", "Licenses"]
    after = _place(slurm, tmp_path, slurm.run("squeue", "--json"))
    (p,) = after["pending"]
    ansys = next(r for r in p["reasons"] if r["details"]["license"] == "ansys")
    assert ansys["details"] == {"license": "ansys", "total": 2, "held": 2, "started": 0, "seats": 1}
