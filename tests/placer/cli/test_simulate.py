"""``placer simulate``: a run writes its tables and summary, options override the scenario file, and a bad
scenario exits 1 with one ``path: message [code]`` line per problem (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from placer.cli import build_parser, main

REPO = Path(__file__).resolve().parents[3]
GB200 = str(REPO / "scenarios" / "library" / "gb200-nvl72-pod.yaml")


def test_a_run_writes_tables_and_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(
        ["simulate", GB200, "--out", str(out), "--format", "csv", "--horizon", "30m", "--verify", "--quiet"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.startswith(
        "scenario gb200-nvl72-pod (seed 0): 72 nodes, 288 GPUs; 30m00s at 5m00s intervals"
    )
    assert "checked by the independent checker" in printed
    names = {p.name for p in out.iterdir()}
    assert {"events.csv", "jobs.csv", "attempts.csv", "intervals.csv", "reasons.csv", "summary.json"} <= names
    assert len(pd.read_csv(out / "intervals.csv")) == 6  # 30 minutes at 5-minute intervals
    summary = json.loads((out / "summary.json").read_text())
    assert summary["name"] == "gb200-nvl72-pod" and summary["horizon_s"] == 1800


def test_options_override_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            *("simulate", GB200, "--json", "--quiet", "--horizon", "20m", "--interval", "10m", "--seed", "3"),
            *("--engine", "cpsat", "--time-limit", "0.5", "--no-preemption"),
        ]
    )
    s = json.loads(capsys.readouterr().out)
    assert code == 0
    assert (s["seed"], s["horizon_s"], s["interval_s"], s["engine"], s["time_limit_s"]) == (
        3,
        1200,
        600,
        "cpsat",
        0.5,
    )
    assert s["preemptions"] == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "name: x\nhorizon: soon\ncluster: {layout: S}\nworkload: {jobs: []}\n",
            "horizon: 'soon' is not a duration",
        ),
        (
            "name: x\nhorizon: 1h\ncluster: {builders: [{dgx_h100: {count: 1, bogus: 2}}]}\n"
            "workload: {jobs: []}\n",
            "cluster.builders[0].dgx_h100.bogus: Unexpected keyword argument [unsupported]",
        ),
        ("{not json", "scenario: "),
    ],
)
def test_bad_scenario_exits_1_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert main(["simulate", str(path), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert all(line.startswith(f"placer simulate: {path}: ") for line in err.splitlines())


def test_bad_override_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", GB200, "--quiet", "--interval", "never"]) == 1
    assert "interval: 'never' is not a duration" in capsys.readouterr().err


def test_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(tmp_path / "none.yaml")]) == 2
    assert "cannot open" in capsys.readouterr().err
    assert main(["simulate", GB200, "--plots"]) == 2
    assert "give --out DIR" in capsys.readouterr().err


def test_registered_with_the_other_subcommands() -> None:
    help_text = build_parser().format_help()
    assert "simulate" in help_text and "place" in help_text


def test_a_workload_that_yields_no_job_is_an_error_not_an_empty_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A trace file with its header and no row: a run of nothing would print 0 of everything, exit 0.
    header = (REPO.parent / "shared" / "traces" / "philly" / "philly.csv").read_text().splitlines()[0]
    trace = tmp_path / "empty.csv"
    trace.write_text(header + "\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: empty\nstart: 2017-10-09T00:00:00Z\nhorizon: 1h\ninterval: 5m\n"
        "cluster: {builders: [{hgx_a100: {count: 1}}]}\n"
        f"workload: {{trace: {{loader: philly, file: {trace}}}}}\n"
    )
    assert main(["simulate", str(scenario), "--quiet"]) == 1
    err = capsys.readouterr().err
    assert "workload.trace" in err and "no job" in err and "Traceback" not in err
