"""``placer place --slurm-partitions``: Slurm's running jobs are evicted exactly where Slurm's
``preempt/partition_prio`` would evict them (a lower ``PriorityTier`` whose ``PreemptMode`` lets them go),
and the decision passes ``placer check`` given the same partitions. Inputs are the captured Slurm 22.05
outputs of ``tests/fixtures/slurm`` with jobs moved to the ``scavenger`` partition; the live test does the
same on a running Slurm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.cli import main

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
PARTITIONS = (REAL / "show-partition-22.05.txt").read_text()


def _inputs(tmp_path: Path, scavenger: set[str], partitions: str = PARTITIONS) -> list[str]:
    """The captured squeue with the jobs named in ``scavenger`` moved to that partition. Pending job ``f``
    (id 5) asks 8 H100 on gpu01 (``-w``), where ``a`` (2 H100) and ``b`` (3) run and 3 are free."""
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        if j["name"] in scavenger:
            j["partition"] = "scavenger"
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    (tmp_path / "partitions.txt").write_text(partitions)
    sq = str(tmp_path / "squeue.json")
    cluster = str(REAL / "sinfo-squeue-pair-22.05.json")
    return ["place", "--cluster", cluster, "--running", sq, "--jobs", sq, "--engine", "greedy", "--no-plan"]


def _decide(capsys: pytest.CaptureFixture[str], args: list[str]) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_jobs_of_a_lower_preemptible_tier_are_evicted_for_a_higher_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _inputs(tmp_path, {"a", "b"})
    parts = ["--slurm-partitions", str(tmp_path / "partitions.txt")]
    d = _decide(capsys, [*args, *parts])
    # f needs all 8 GPUs of gpu01: both scavenger jobs go, each with scavenger's GraceTime=1
    assert sorted((e["job"], e["grace_period_s"]) for e in d["preemptions"]) == [("1", 1), ("2", 1)]
    (placed,) = d["placements"]
    assert placed["job"] == "5"
    assert [r["node"] for r in placed["replicas"]] == ["gpu01"]
    assert sorted(placed["replicas"][0]["gpus"]) == list(range(8))
    (tmp_path / "decision.json").write_text(json.dumps(d))
    check = ["check", *args[1:-3], "--decision", str(tmp_path / "decision.json")]
    check = [a for a in check if a != "--engine"]
    assert main([*check, *parts]) == 0, capsys.readouterr()
    # The checker, not told the partitions, sees evictions of jobs nobody said were preemptible
    assert main(check) == 1
    assert "preempt" in capsys.readouterr().out.lower()


def test_without_partitions_or_where_the_tier_forbids_nothing_is_evicted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _inputs(tmp_path, {"a", "b"})
    assert _decide(capsys, args)["preemptions"] == []  # preemptibility unknown: none
    off = PARTITIONS.replace("PreemptMode=REQUEUE", "PreemptMode=OFF")
    args = _inputs(tmp_path, {"a", "b"}, off)
    d = _decide(capsys, [*args, "--slurm-partitions", str(tmp_path / "partitions.txt")])
    assert d["preemptions"] == [] and d["placements"] == []
    # Only b in scavenger: a (gpu, never preempted) keeps 2 GPUs of gpu01, so f cannot fit there at all
    args = _inputs(tmp_path, {"b"})
    d = _decide(capsys, [*args, "--slurm-partitions", str(tmp_path / "partitions.txt")])
    assert d["preemptions"] == [] and d["placements"] == []


def test_the_script_requeues_or_cancels_as_the_partition_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for mode, command in (("REQUEUE", "scontrol requeuehold 1"), ("CANCEL", "scancel 1")):
        args = _inputs(tmp_path, {"a", "b"}, PARTITIONS.replace("PreemptMode=REQUEUE", f"PreemptMode={mode}"))
        parts = ["--slurm-partitions", str(tmp_path / "partitions.txt")]
        assert main([*args, *parts, "--output", "slurm"]) == 0
        script = capsys.readouterr().out
        lines = script.splitlines()
        assert command in lines
        # The grace time first: signal, wait scavenger's GraceTime (1 s), then requeue or cancel
        at = lines.index(command)
        assert lines[at - 2 : at] == ["scancel --signal=TERM --full 1", "sleep 1"]
        assert "scontrol update JobId=5 NumNodes=1 NodeList=gpu01 && scontrol release 5" in lines


def test_a_job_in_an_unknown_partition_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_prod = PARTITIONS.split("\n\n")[0].replace("PartitionName=gpu", "PartitionName=prod")
    args = _inputs(tmp_path, set(), only_prod)
    parts = ["--slurm-partitions", str(tmp_path / "partitions.txt")]
    # A running job's partition (gpu) is not among them: the running jobs cannot be read, exit 1
    assert main([*args, *parts]) == 1
    err = capsys.readouterr().err
    assert "job 1" in err and "'gpu'" in err
    # Without --running, the pending job f is rejected, naming its partition field
    no_running = [a for i, a in enumerate(args) if a != "--running" and args[i - 1] != "--running"]
    d = _decide(capsys, [*no_running, *parts])
    (rejected,) = d["rejected"]
    assert rejected["job"] == "5"
    (err_,) = rejected["errors"]
    assert (err_["code"], err_["path"]) == ("enum", "jobs[4].partition")
    assert "'gpu'" in err_["message"]
