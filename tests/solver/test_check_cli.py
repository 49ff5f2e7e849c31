"""``placer check``: exit 0 without violations, 1 with any, 2 for unopenable or unreadable input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from placer.cli import check as cli

CLUSTER = {
    "name": "t",
    "nodes": [
        {
            "name": "dgx",
            "count": 2,
            "cpu_cores": 224,
            "memory_gb": 2048,
            "gpus": {"type": "nvidia-h100", "count": 8},
        }
    ],
}
JOBS = [
    {"id": "a", "type": "ml.train", "args": [], "ext_ml_gpu_count": 8, "ext_ml_cpu_cores": 16},
    {"id": "bad", "type": "ml.train", "args": [], "ext_ml_gpu_count": "8"},
]
GOOD = {
    "placements": [{"job": "a", "replicas": [{"node": "dgx-1", "gpus": list(range(8)), "cpu_cores": 16}]}],
    "rejected": [{"job": "bad", "errors": []}],
}


def _run(tmp_path: Path, decision: Any, *extra: str, running: Any = None) -> int:
    files = {"cluster.json": CLUSTER, "jobs.json": JOBS, "decision.json": decision}
    if running is not None:
        files["running.json"] = running
    for name, doc in files.items():
        (tmp_path / name).write_text(json.dumps(doc))
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    argv = ["check", "--cluster", str(tmp_path / "cluster.json"), "--jobs", str(tmp_path / "jobs.json")]
    argv += ["--decision", str(tmp_path / "decision.json"), *extra]
    if running is not None:
        argv += ["--running", str(tmp_path / "running.json")]
    args = parser.parse_args(argv)
    return int(args.run(args))


def test_valid_decision_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, GOOD) == 0
    assert "no violation" in capsys.readouterr().out


def test_violation_exits_1_and_prints_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = json.loads(json.dumps(GOOD))
    bad["placements"][0]["replicas"][0]["gpus"] = [0, 1, 2, 3, 4, 5, 6, 8]
    assert _run(tmp_path, bad) == 1
    assert capsys.readouterr().out.splitlines() == [
        "[gpu-index] job a on dgx-1: GPU index 8 does not exist (the node has 8 GPUs)"
    ]


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = {"placements": GOOD["placements"]}  # "bad" failed validation but is not in rejected
    assert _run(tmp_path, missing, "--json") == 1
    out = json.loads(capsys.readouterr().out)
    assert [(v["rule"], v["job"]) for v in out] == [("accounting", "bad")]


def test_running_jobs_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    running = [
        {"id": "r", "type": "ml.infer", "args": [], "ext_ml_gpu_count": 1, "node": "dgx-1", "gpus": [7]}
    ]
    assert _run(tmp_path, GOOD, running=running) == 1
    assert "[gpu-double-booked] job a on dgx-1" in capsys.readouterr().out


def test_bad_running_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, GOOD, running=[{"id": "r", "ext_ml_gpu_count": 1}]) == 2
    err = capsys.readouterr().err
    assert "running jobs are invalid" in err and "running.json[0].node" in err


def test_unopenable_and_invalid_inputs_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(tmp_path, {"placements": "nope"}) == 2
    assert "not a valid decision" in capsys.readouterr().err
    parser = argparse.ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["check", "--cluster", str(tmp_path / "none.json"), "--jobs", "j", "--decision", "d"]
    )
    assert cli.run(args) == 2
    assert "cannot open cluster" in capsys.readouterr().err


def test_now_must_be_a_timestamp(tmp_path: Path) -> None:
    assert _run(tmp_path, GOOD, "--now", "soon") == 2
    # as for placer place, a time without an offset is refused: it would be compared with aware times
    assert _run(tmp_path, GOOD, "--now", "2025-06-01T12:00:00") == 2
    assert _run(tmp_path, GOOD, "--now", "2025-06-01T12:00:00Z") == 0


def test_reservation_on_an_unknown_node_is_invalid_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The cluster has dgx-1 and dgx-2: a reservation of dgx-9 would hold nothing, so it is refused.
    (tmp_path / "res.json").write_text(json.dumps([{"id": "r", "nodes": ["dgx-9"]}]))
    assert _run(tmp_path, GOOD, "--reservations", str(tmp_path / "res.json")) == 2
    err = capsys.readouterr().err
    assert "reservations" in err and "dgx-9" in err and "not in the cluster" in err


def test_jobs_are_read_under_the_limits_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Under a 4-GPU limit per job, "a" (8 GPUs) is rejected by the readers, so a decision that places it
    # (what placer place would never return under those limits) does not account for it correctly.
    (tmp_path / "limits.json").write_text(json.dumps({"max_gpus_per_job": 4}))
    assert _run(tmp_path, GOOD) == 0
    capsys.readouterr()
    assert _run(tmp_path, GOOD, "--limits", str(tmp_path / "limits.json"), "--json") == 1
    out = json.loads(capsys.readouterr().out)
    assert ("accounting", "a") in [(v["rule"], v["job"]) for v in out]
    assert _run(tmp_path, GOOD, "--limits", str(tmp_path / "none.json")) == 2
    assert "cannot open limits file" in capsys.readouterr().err
