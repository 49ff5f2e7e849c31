"""placer against a live Slurm whose partition has a QOS (``live_slurm.start_partition_qos``).

Partition ``pq`` (gpu04) has the partition QOS ``partq``, ``GrpTRES=gres/gpu=4`` for all the partition's
jobs together, though each job's own QOS (``normal``) has no limit. ``pr1`` runs there with 2 H100;
``pq2`` (4 H100) and ``pq3`` (2 H100) wait, held, and gpu04 has room for both. Slurm's limits hierarchy
puts the partition QOS first: of the two, only ``pq3`` may start. placer says the same when given the
partitions and the QOS table, and Slurm, released, does what placer said.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer.topology.importers.slurm_partitions import parse_slurm_partitions
from placer.topology.importers.slurm_qos import parse_slurm_qos
from tests.topology.live_slurm import LiveSlurm, available_accounting, running, start_partition_qos


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(
        Path(tmp_path_factory.mktemp("slurm-partq")), start_partition_qos, available_accounting
    )


def _ids(slurm: LiveSlurm) -> dict[str, str]:
    return dict(reversed(line.split()) for line in slurm.run("squeue", "-h", "-o", "%i %j").splitlines())


def _cli(tmp_path: Path, slurm: LiveSlurm, command: str, *extra: str) -> subprocess.CompletedProcess[str]:
    for name, key in (("nodes", "show-node-d"), ("jobs", "show-job-d"), ("parts", "show-partition")):
        (tmp_path / f"{name}.txt").write_text(slurm.out[key])
    (tmp_path / "qos.txt").write_text(slurm.out["qos"])
    jobs = str(tmp_path / "jobs.txt")
    cmd = [sys.executable, "-m", "placer", command, "--cluster", str(tmp_path / "nodes.txt")]
    cmd += ["--running", jobs, "--jobs", jobs, *extra]
    return subprocess.run(cmd, capture_output=True, text=True)


def _tables(tmp_path: Path) -> tuple[str, ...]:
    return (
        "--slurm-partitions",
        str(tmp_path / "parts.txt"),
        "--slurm-qos-limits",
        str(tmp_path / "qos.txt"),
    )


def test_the_partition_and_its_qos_read_as_slurm_printed_them(slurm: LiveSlurm) -> None:
    parts = parse_slurm_partitions(slurm.out["show-partition"], source="parts.txt")
    assert parts["pq"].qos == "partq" and parts["gpu"].qos is None
    qos = parse_slurm_qos(slurm.out["qos"], source="qos.txt")
    assert qos["partq"].grp_gpus == 4 and qos["normal"].grp_gpus is None


def test_with_the_tables_one_job_starts_and_the_other_waits_for_the_partition_qos(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    ids = _ids(slurm)
    for engine in ("greedy", "cpsat"):
        out = _cli(tmp_path, slurm, "place", *_tables(tmp_path), "--engine", engine, "--json")
        assert out.returncode == 0, out.stderr
        d = json.loads(out.stdout)
        placed = {p["job"]: sorted({r["node"] for r in p["replicas"]}) for p in d["placements"]}
        assert placed == {ids["pq3"]: ["gpu04"]}, engine
        (pq2,) = [p for p in d["pending"] if p["job"] == ids["pq2"]]
        (reason,) = pq2["reasons"]
        assert reason["code"] == "THROTTLE", engine
        assert reason["details"] == {
            "group": "qos/partq",
            "max_gpus": 4,
            "gpus_held": 2,  # pr1, counted for its partition's QOS, not its own
            "gpus_started": 2,  # pq3
            "gpus": 4,
        }, engine


def test_without_the_qos_table_both_start_and_each_says_why(slurm: LiveSlurm, tmp_path: Path) -> None:
    ids = _ids(slurm)
    parts = ("--slurm-partitions", str(tmp_path / "parts.txt"))
    out = _cli(tmp_path, slurm, "place", *parts, "--json")
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert sorted(p["job"] for p in d["placements"]) == sorted([ids["pq2"], ids["pq3"]])
    # Each of them says, in the decision, that its partition QOS was not read.
    for p in d["placements"]:
        assert any("'partq'" in n and "not read" in n for n in p["notes"]), p
    # placer check, given the tables, holds that decision to the partition QOS's limit.
    (tmp_path / "blind.json").write_text(out.stdout)
    checked = _cli(tmp_path, slurm, "check", *_tables(tmp_path), "--decision", str(tmp_path / "blind.json"))
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "qos/partq" in checked.stdout


def _reason(slurm: LiveSlurm, job: str) -> str:
    return slurm.run("squeue", "-h", "-j", job, "-o", "%T %r").strip()


def test_zz_slurm_starts_the_job_placer_started_and_holds_back_the_other(slurm: LiveSlurm) -> None:
    ids = _ids(slurm)
    pq2, pq3 = ids["pq2"], ids["pq3"]
    slurm.run("scontrol", "release", pq3)
    slurm.run("scontrol", "reconfigure")  # a scheduling pass now
    slurm.wait("pq3 running", lambda: _reason(slurm, pq3).startswith("RUNNING"))
    slurm.run("scontrol", "release", pq2)
    slurm.run("scontrol", "reconfigure")
    slurm.wait("pq2 judged", lambda: _reason(slurm, pq2) not in ("PENDING JobHeldUser", "PENDING None"))
    assert _reason(slurm, pq2) == "PENDING QOSGrpGRES"
