"""``placer serve``: options, limits from flags, and the exit codes that do not need a running server
(the server itself: ``tests/placer/service/test_server.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from placer.cli import build_parser, main
from placer.cli.serve import limits_of
from placer.service.limits import Limits


def test_defaults_and_flags() -> None:
    args = build_parser().parse_args(["serve"])
    assert (args.host, args.port, args.workers, args.state) == ("127.0.0.1", 8080, 2, None)
    assert limits_of(args) == Limits()
    args = build_parser().parse_args(
        ["serve", "--max-body-bytes", "10", "--max-jobs", "3", "--max-nodes", "4", "--max-time-limit", "0.5"]
    )
    lim = limits_of(args)
    assert (lim.max_body_bytes, lim.max_jobs, lim.max_nodes, lim.max_time_limit_s) == (10, 3, 4, 0.5)


@pytest.mark.parametrize("flag", [["--workers", "0"], ["--max-time-limit", "inf"], ["--max-jobs", "x"]])
def test_bad_values_are_usage_errors(flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["serve", *flag])
    assert e.value.code == 2


def test_a_state_file_that_is_not_a_database_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "state.db"
    bad.write_bytes(b"not a database" * 100)
    assert main(["serve", "--state", str(bad), "--port", "0"]) == 1
    assert "cannot open the state" in capsys.readouterr().err


def test_negative_queue_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = build_parser().parse_args(["serve", "--max-queued", "-1"])
    assert isinstance(args, argparse.Namespace) and args.run(args) == 2
