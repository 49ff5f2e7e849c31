"""``placer fill``: JSON and text reports, structured errors for bad CSV, usage errors, ``--verify``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from placer.cli import fill

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn2,16000,65536,2,P100\nn1,8000,32768,1,P100\n"
PODS = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\ns,1000,1024,1,500,\nw2,2000,2048,2,1000,\n"


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="placer")
    fill.add_parser(parser.add_subparsers())
    try:
        args = parser.parse_args(["fill", *argv])
    except SystemExit as e:  # argparse's usage errors (a flag's type refused its value)
        return int(e.code or 0)
    return args.run(args)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS)
    return str(tmp_path / "nodes.csv"), str(tmp_path / "pods.csv")


def test_json_report(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = files
    assert (
        run("--nodes", nodes, "--pods", pods, "--load", "1.0", "--policy", "best-fit", "--json", "--verify")
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out["alloc"]) == {"50", "80", "90", "100"}  # points up to the load only
    assert out["gpus"] == 3 and out["nodes"] == 2 and out["verified"] is True and out["violations"] == []
    assert all(0 <= v <= 100 for v in out["alloc"].values() if v is not None)
    assert all(out["bound"][k] >= out["alloc"][k] - 1e-9 for k in out["alloc"] if out["alloc"][k] is not None)
    assert out["wall_s"] >= 0 and 0 <= out["failed"] <= out["arrivals"]
    # Where the rest sits: parts of the GPU capacity not allocated, each within its whole.
    left = out["unallocated"]
    assert 0 <= left["whole_free_starved"] <= left["whole_free"]
    assert 0 <= left["partly_used_below_smallest_share"] <= left["partly_used"]
    assert sum(left["beside_share"].values()) <= left["partly_used"] + 1e-9
    assert left["whole_free"] + left["partly_used"] <= 100


def test_unallocated_is_what_the_run_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One 2-GPU node and 810-milli shares only: two arrive, one per GPU, and each leaves 190 beside it,
    # which no arrival can use: 380 of 2,000 milli, 19 %, all beside 810-milli shares.
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,2,P100\n")
    (tmp_path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\nbig,1000,1024,1,810,\n"
    )
    argv = ("--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv"), "--policy", "fgd")
    assert run(*argv, "--load", "1.3", "--json") == 0
    left = json.loads(capsys.readouterr().out)["unallocated"]
    assert left == {
        "whole_free": 0.0,
        "whole_free_starved": 0.0,
        "partly_used": 19.0,
        "partly_used_below_smallest_share": 19.0,
        "beside_share": {"810": 19.0},
    }


def test_text_report(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = files
    assert run("--nodes", nodes, "--pods", pods, "--seed", "3") == 0
    out = capsys.readouterr().out
    assert "arrived load %" in out and "allocated %" in out and "bound %" in out and "130" in out
    assert "unallocated at the end:" in out


def test_engines_in_batches(files: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    nodes, pods = files
    assert run("--nodes", nodes, "--pods", pods, "--policy", "greedy", "--batch", "3", "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["batch"] == 3 and out["reproducible"] is False
    assert out["cut_decisions"] == 0  # greedy alone, never cut on this small fill
    argv = ("--nodes", nodes, "--pods", pods, "--policy", "auto", "--batch", "3", "--reproducible", "--json")
    assert run(*argv, "--time-limit", "5") == 0  # room for OR-Tools' first import in the first call
    out = json.loads(capsys.readouterr().out)
    assert out["reproducible"] is True and out["cut_decisions"] == 0


def test_bad_csv_is_exit_1_with_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text(PODS + "bad,1000,abc,1,500,\n")
    assert run("--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv")) == 1
    err = capsys.readouterr().err
    assert "line 4, column 'memory_mib': 'abc' is not an integer" in err and "Traceback" not in err


def test_missing_column_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.csv").write_text("sn,cpu_milli,gpu,model\nn,1000,1,G2\n")
    (tmp_path / "pods.csv").write_text(PODS)
    assert run("--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv")) == 1
    assert "column 'memory_mib': required column missing" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--policy", "tetris"], "unknown policy 'tetris'"),
        (["--policy", "fgd", "--batch", "10"], "--batch must be 1"),
        (["--load", "0"], "a load is a number above 0"),
        (["--seed", "2147483648"], "a seed is an integer from 0"),
        (["--time-limit", "1e306"], "seconds must be a number above 0"),
    ],
)
def test_usage_errors_are_exit_2(
    files: tuple[str, str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    nodes, pods = files
    assert run("--nodes", nodes, "--pods", pods, *extra) == 2
    assert message in capsys.readouterr().err


def test_missing_file_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--nodes", str(tmp_path / "no.csv"), "--pods", str(tmp_path / "no.csv")) == 2
    assert "cannot open" in capsys.readouterr().err


def test_no_gpu_pods_is_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.csv").write_text(NODES)
    (tmp_path / "pods.csv").write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nc,1000,1024,0,0\n")
    assert run("--nodes", str(tmp_path / "nodes.csv"), "--pods", str(tmp_path / "pods.csv")) == 1
    assert "no pod asks for a GPU" in capsys.readouterr().err
