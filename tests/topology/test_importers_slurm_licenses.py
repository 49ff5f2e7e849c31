"""Slurm's cluster-wide licences (``topology/importers/slurm_licenses.py``), read from what a live Slurm
22.05 printed (``tests/topology/live_slurm.py``, ``start_licenses``: ``Licenses=matlab:4,ansys:2``; job
``a`` runs holding ``matlab:3``, ``p`` asks ``matlab:2,ansys`` and waits with Slurm's reason ``Licenses``,
``q`` asks ``ansys:2`` and is held), and ``placer place`` on those very files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placer.solver.jobs import read_text
from placer.topology import TopologyError
from placer.topology.importers.slurm_job_text import show_job_running
from placer.topology.importers.slurm_jobs import squeue_running
from placer.topology.importers.slurm_licenses import job_licenses, parse_slurm_licenses, read_licenses_file

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
SQUEUE = REAL / "squeue-22.05-licenses.json"
SHOW_JOB = REAL / "show-job-d-22.05-licenses.txt"
SHOW_LICENSES = REAL / "show-licenses-22.05.txt"
SINFO = REAL / "sinfo-22.05-licenses.json"
#: squeue --json's name -> job_id of the jobs of ``start_licenses``.
IDS = {j["name"]: str(j["job_id"]) for j in json.loads(SQUEUE.read_text())["jobs"]}


def test_scontrol_show_licenses_gives_each_licences_total() -> None:
    # slurm.conf said Licenses=matlab:4,ansys:2; Used (3 of matlab) is the running jobs', counted from them.
    assert read_licenses_file(str(SHOW_LICENSES)) == {"ansys": 2, "matlab": 4}


def test_the_one_line_form_and_slurm_conf_read_the_same() -> None:
    one_line = "\n".join(
        " ".join(pair.strip().split())
        for pair in SHOW_LICENSES.read_text().replace("\n    ", " ").splitlines()
    )
    assert parse_slurm_licenses(one_line, source="-o") == {"ansys": 2, "matlab": 4}
    assert parse_slurm_licenses("Licenses=matlab:4,ansys:2\n", source="slurm.conf") == {
        "ansys": 2,
        "matlab": 4,
    }


def test_seats_a_reservation_keeps_are_not_counted() -> None:
    text = "LicenseName=matlab\n    Total=10 Used=2 Free=5 Reserved=3 Remote=no\n"
    assert parse_slurm_licenses(text, source="t") == {"matlab": 7}


def test_a_slurm_without_licences_has_none() -> None:
    assert parse_slurm_licenses("No licenses configured in Slurm.\n", source="t") == {}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("LicenseName=matlab\n    Used=2 Free=5\n", "no whole Total"),
        ("LicenseName=matlab Total=4\nLicenseName=matlab Total=5\n", "listed twice"),
        ("LicenseName=matlab Total=four\n", "no whole Total"),
        ("Licenses=matlab:x\n", "line 1"),
        ("something else entirely\n", "no licence found"),
    ],
)
def test_what_cannot_be_read_is_an_error_naming_the_line(text: str, says: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_licenses(text, source="lic.txt")
    assert says in str(e.value) and "lic.txt" in str(e.value)


def test_a_file_that_is_not_utf8_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "lic.txt"
    bad.write_bytes(b"LicenseName=m\xe9\xff Total=1\n")
    with pytest.raises(TopologyError, match="UTF-8"):
        read_licenses_file(str(bad))


def test_the_request_grammar() -> None:
    assert job_licenses("matlab:2,ansys") == {"matlab": 2, "ansys": 1}
    assert job_licenses("fluent@db*4") == {"fluent@db": 4}
    for bad in ("a|b", "a:0", "a:", ":2", "a,a"):
        with pytest.raises(ValueError):
            job_licenses(bad)


def test_running_jobs_hold_their_seats_in_both_forms() -> None:
    (a,) = squeue_running(json.loads(SQUEUE.read_text()), source="squeue.json")
    assert a.job == IDS["a"] and a.licenses == {"matlab": 3}
    (text,) = show_job_running(SHOW_JOB.read_text(), source="show-job.txt")
    assert text.licenses == {"matlab": 3}


def test_a_running_jobs_licences_that_are_not_text_are_an_error_naming_the_job() -> None:
    doc = json.loads(SQUEUE.read_text())
    doc["jobs"][0]["licenses"] = 7
    with pytest.raises(TopologyError, match=r"jobs\[0\] \(job \d+\): licenses must be text"):
        squeue_running(doc, source="squeue.json")


def test_pending_jobs_ask_their_seats_in_both_forms() -> None:
    for path in (SQUEUE, SHOW_JOB):
        jobs = {r.id: r.job for r in read_text(path.read_text(), source=path.name) if r.ok}
        assert jobs[IDS["p"]].licenses == {"matlab": 2, "ansys": 1}
        assert jobs[IDS["q"]].licenses == {"ansys": 2}


def _place(*extra: str) -> dict:  # type: ignore[type-arg]
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(SINFO), "--running", str(SQUEUE)]
    out = subprocess.run(
        [*cmd, "--jobs", str(SQUEUE), "--engine", "auto", "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_placer_waits_where_slurm_waits_for_licences() -> None:
    # Slurm keeps p pending with reason Licenses: 4 matlab seats, a holds 3, p asks 2. placer says the same
    # (LICENSES, naming matlab: 4 seats, 3 held, 2 asked) and starts q, whose 2 ansys seats are free.
    slurm = {j["name"]: j["state_reason"] for j in json.loads(SQUEUE.read_text())["jobs"]}
    assert slurm["p"] == "Licenses"
    d = _place("--slurm-licenses", str(SHOW_LICENSES))
    assert [p["job"] for p in d["placements"]] == [IDS["q"]]
    (p,) = d["pending"]
    assert p["job"] == IDS["p"]
    matlab = next(r for r in p["reasons"] if r["code"] == "LICENSES" and r["details"]["license"] == "matlab")
    assert matlab["details"] == {"license": "matlab", "total": 4, "held": 3, "started": 0, "seats": 2}


def test_without_the_licence_table_no_job_asking_for_one_starts() -> None:
    d = _place()
    assert d["placements"] == []
    assert {p["job"]: p["reasons"][0]["code"] for p in d["pending"]} == {
        IDS["p"]: "LICENSES",
        IDS["q"]: "LICENSES",
    }


def test_placer_check_holds_a_decision_to_slurms_licences(tmp_path: Path) -> None:
    # Placed under a bigger pool (matlab 5, ansys 3), both p and q start; placer check with the seats
    # Slurm printed (4 and 2) refuses it: p's 2 matlab beside a's 3, q's 2 ansys beside p's 1.
    bigger = tmp_path / "licenses.txt"
    bigger.write_text("Licenses=matlab:5,ansys:3\n")
    decision = _place("--slurm-licenses", str(bigger))
    assert sorted(p["job"] for p in decision["placements"]) == sorted([IDS["p"], IDS["q"]])
    (tmp_path / "decision.json").write_text(json.dumps(decision))
    files = ["--cluster", str(SINFO), "--running", str(SQUEUE), "--jobs", str(SQUEUE)]
    files += ["--decision", str(tmp_path / "decision.json")]
    check = [sys.executable, "-m", "placer", "check", *files]
    out = subprocess.run(
        [*check, "--slurm-licenses", str(SHOW_LICENSES)], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert sorted(line.split("]")[0] for line in out.stdout.splitlines()) == ["[licenses", "[licenses"]
    ok = subprocess.run(
        [*check, "--slurm-licenses", str(bigger)], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
