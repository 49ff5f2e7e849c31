"""``placer cluster``: the one test module here that imports ``solver`` (the CLI lives in placer.cli)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from placer.cli import cluster

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "importers"


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="placer")
    cluster.add_parser(parser.add_subparsers())
    args = parser.parse_args(["cluster", *argv])
    return args.run(args)


def test_text_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(EXAMPLES / "slurm_nodes.txt")) == 0
    out = capsys.readouterr().out
    assert "3 usable nodes of 6" in out  # see test_importers_cluster.test_slurm_cluster
    assert "nvidia-h100" in out


def test_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    rc = run(
        str(EXAMPLES / "kubernetes_nodes.json"), "--pods", str(EXAMPLES / "kubernetes_pods.json"), "--json"
    )
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "kubernetes"
    for key in ("nodes", "gpus", "free_gpus", "nvlink_domains", "tpu_chips", "free_tpu_chips"):
        assert key in s
    assert s["tpu_chips"] == {"v5e": 32}  # 16 + 8 + 8
    assert s["free_gpus"]["nvidia-gb200"] == 12  # 16 - 4


def test_explicit_format(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(EXAMPLES / "flux_jgf.json"), "--format", "jgf", "--json") == 0
    assert json.loads(capsys.readouterr().out)["gpus"] == {"nvidia-a100": 16}


def test_bad_content_exit_1_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "nodes.txt"
    f.write_text("NodeName=g01 State=SLEEPY\n")
    assert run(str(f)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err == f"placer cluster: {f}: record 1 (NodeName=g01): State 'SLEEPY': unknown state SLEEPY\n"


def test_build_problem_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A typo'd GPU type in an inventory: the catalog cannot fill in its memory, so the cluster cannot
    # be built; one line on stderr names the file, the item and the problem.
    f = tmp_path / "cluster.yaml"
    f.write_text("nodes:\n  - name: g01\n    cpu_cores: 8\n    gpus: {type: nvidia-h10, count: 4}\n")
    assert run(str(f)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"placer cluster: {f}: nodes[0] (g01): unknown GPU type 'nvidia-h10'")


def test_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(str(tmp_path / "nope.json")) == 2
    assert "cannot open" in capsys.readouterr().err


def test_pods_file_missing_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(str(EXAMPLES / "kubernetes_nodes.json"), "--pods", str(tmp_path / "p.json")) == 2
    assert "p.json" in capsys.readouterr().err
