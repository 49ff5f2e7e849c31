"""What a Slurm user asks beside resources — ``--exclusive``, ``--begin``, ``--reservation``,
``--contiguous`` — against a live Slurm (``tests/topology/live_slurm.py``, :func:`start_options`): job
``a`` holds 2 H100 of gpu01, reservation ``maint`` holds gpu03 (the only A100 host), and the jobs of
``OPTION_JOBS`` wait held.

placer must not place them as if they had not asked: ``excl`` takes a node to itself (gpu02, the H100 host
with nothing on it), ``later`` waits for 2030, ``resv`` runs only inside ``maint``, ``plain-a100`` may not
use ``maint``'s node (so it waits), and ``contig`` is refused (node adjacency is not modelled). Released,
Slurm itself starts ``excl`` and ``resv`` where placer put them and keeps ``plain-a100`` waiting."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from placer.solver.jobs import read_text
from tests.topology.live_slurm import LiveSlurm, running, start_options

BEGIN = datetime(2030, 1, 1)  # --begin=2030-01-01T00:00:00, in the controller's (and this host's) zone


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-options")), start_options)


def _ids(slurm: LiveSlurm) -> dict[str, str]:
    """Job name -> Slurm's job id."""
    return {j["name"]: str(j["job_id"]) for j in json.loads(slurm.out["squeue-json"])["jobs"]}


def test_slurm_prints_what_each_job_asked(slurm: LiveSlurm) -> None:
    jobs = {j["name"]: j for j in json.loads(slurm.out["squeue-json"])["jobs"]}
    assert jobs["excl"]["shared"] == "none" and jobs["a"]["shared"] is None
    assert jobs["later"]["eligible_time"] == int(BEGIN.astimezone().timestamp())
    assert jobs["resv"]["resv_name"] == "maint" and jobs["contig"]["contiguous"] is True
    assert all(jobs[n]["state_reason"] == "JobHeldUser" for n in ("excl", "later", "resv", "contig"))


@pytest.mark.parametrize("form", ["squeue-json", "show-job-d"])
def test_both_forms_read_the_same_asks(slurm: LiveSlurm, form: str) -> None:
    read = {r.id: r for r in read_text(slurm.out[form], source=form)}
    ids = _ids(slurm)
    excl, later, resv, plain, contig = (
        read[ids[n]] for n in ("excl", "later", "resv", "plain-a100", "contig")
    )
    assert excl.job.placement.exclusive_nodes and not plain.job.placement.exclusive_nodes
    assert later.job.not_before == BEGIN.astimezone().astimezone(UTC)
    assert plain.job.not_before is None  # held without --begin: Slurm's eligible time is 0 (Unknown)
    assert resv.job.reservation is not None and resv.job.reservation.id == "maint"
    assert plain.job.reservation is None
    assert not contig.ok and [(e.code, e.path.rsplit(".", 1)[-1]) for e in contig.errors] == [
        ("unsupported", "contiguous")
    ]


def _files(slurm: LiveSlurm, tmp_path: Path) -> dict[str, str]:
    out = {}
    for key in ("sinfo-json", "squeue-json", "show-job-d", "show-reservation", "show-partition"):
        (tmp_path / key).write_text(slurm.out[key])
        out[key] = str(tmp_path / key)
    return out


@pytest.mark.parametrize("jobs_form", ["squeue-json", "show-job-d"])
def test_placer_places_them_as_slurm_would_and_the_checker_agrees(
    slurm: LiveSlurm, tmp_path: Path, jobs_form: str
) -> None:
    f = _files(slurm, tmp_path)
    common = ["--cluster", f["sinfo-json"], "--running", f["squeue-json"], "--jobs", f[jobs_form]]
    common += ["--reservations", f["show-reservation"]]
    now = ["--now", datetime.now(UTC).isoformat()]  # the reservation is held now (for 2 hours)
    out = subprocess.run(
        [sys.executable, "-m", "placer", "place", *common, *now, "--json"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    ids = _ids(slurm)
    where = {p["job"]: sorted({r["node"] for r in p["replicas"]}) for p in d["placements"]}
    assert where[ids["excl"]] == ["gpu02"] and where[ids["resv"]] == ["gpu03"]
    assert not {ids["later"], ids["plain-a100"]} & set(where)  # the rest of gpu01 goes to others
    waiting = {p["job"]: p["reasons"][0]["code"] for p in d["pending"]}
    assert waiting[ids["later"]] == "NOT_BEFORE" and waiting[ids["plain-a100"]] == "INSUFFICIENT_CAPACITY"
    assert [r["job"] for r in d["rejected"]] == [ids["contig"]]
    (tmp_path / "decision.json").write_text(out.stdout)
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "check",
            *common,
            *now,
            "--decision",
            str(tmp_path / "decision.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_with_the_partitions_placer_holds_jobs_as_their_partitions_do(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    # too-long asks 60 minutes of a partition of 10, in-down a partition that is DOWN: Slurm starts neither
    # (next test); in-whole's partition gives whole nodes, and the one empty H100 host goes to excl first.
    f = _files(slurm, tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "placer",
        "place",
        "--cluster",
        f["sinfo-json"],
        "--running",
        f["squeue-json"],
    ]
    cmd += ["--jobs", f["squeue-json"], "--reservations", f["show-reservation"], "--slurm-partitions"]
    cmd += [f["show-partition"], "--now", datetime.now(UTC).isoformat(), "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    d, ids = json.loads(out.stdout), _ids(slurm)
    rejected = {r["job"]: r["errors"][0]["message"] for r in d["rejected"]}
    assert "PartitionTimeLimit" in rejected[ids["too-long"]] and "PartitionDown" in rejected[ids["in-down"]]
    assert ids["in-whole"] in {p["job"] for p in d["pending"]}
    where = {p["job"]: sorted({r["node"] for r in p["replicas"]}) for p in d["placements"]}
    assert where[ids["excl"]] == ["gpu02"] and ids["in-whole"] not in where


def test_slurm_itself_keeps_them_pending_for_those_reasons(slurm: LiveSlurm) -> None:
    ids = _ids(slurm)
    for name in ("too-long", "in-down"):
        slurm.run("scontrol", "release", ids[name])

    def reasons() -> dict[str, str]:
        rows = slurm.run("squeue", "-h", "-o", "%j %r").splitlines()
        return {r.split()[0]: r.split()[1] for r in rows}

    slurm.wait(
        "Slurm's reasons",
        lambda: (
            reasons().get("too-long") == "PartitionTimeLimit" and reasons().get("in-down") == "PartitionDown"
        ),
    )


def test_zz_released_slurm_starts_them_where_placer_did(slurm: LiveSlurm) -> None:
    ids = _ids(slurm)
    for name in ("excl", "resv", "plain-a100"):
        slurm.run("scontrol", "release", ids[name])

    def state() -> dict[str, tuple[str, str]]:
        rows = slurm.run("squeue", "-h", "-o", "%j %T %N").splitlines()
        return {r.split()[0]: (r.split()[1], [*r.split(), ""][2]) for r in rows}

    slurm.wait("excl and resv running", lambda: state()["excl"][0] == state()["resv"][0] == "RUNNING")
    now = state()
    assert now["excl"] == ("RUNNING", "gpu02") and now["resv"] == ("RUNNING", "gpu03")
    assert now["plain-a100"][0] == "PENDING"  # maint's node is closed to it, as placer said
