"""``--engine`` of ``placer place`` and ``placer simulate`` takes the baseline scorers too (greedy with that
node rule, ``solver/scorers.py``): the decision passes the checker, the summary names the baseline."""

from __future__ import annotations

import json

import pytest

from placer.cli import main
from placer.cli.place import ENGINE_CHOICES, parse_rfc3339
from placer.solver.decision import Decision
from placer.solver.policy import BASELINES, ENGINES
from tests.placer.cli.test_place import ALL_JOBS, DOC_NOW, H100, run_json
from tests.placer.cli.test_simulate import GB200


def test_choices_are_the_policys_names() -> None:
    assert ENGINE_CHOICES == ENGINES + BASELINES


@pytest.mark.parametrize("engine", BASELINES)
def test_place_with_a_baseline(engine: str, capsys: pytest.CaptureFixture[str]) -> None:
    from placer.solver.checks import check
    from placer.solver.jobs import read_files
    from placer.topology.load import load_cluster

    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--engine", engine, "--now", DOC_NOW)
    assert rc == 0
    decision = Decision.model_validate(out)
    assert decision.stats.engine == "greedy" and decision.placements
    jobs = [r.job for r in read_files(ALL_JOBS) if r.job is not None]
    assert check(decision, jobs, load_cluster(H100), now=parse_rfc3339(DOC_NOW)) == []


def test_simulate_with_a_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", GB200, "--json", "--quiet", "--verify", "--horizon", "15m", "--engine", "fgd"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["engine"] == "fgd" and s["decisions"] >= 1 and s["verified"] == s["decisions"]


def test_simulate_refuses_an_unknown_engine(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["simulate", GB200, "--engine", "tetris"])
    assert e.value.code == 2
    assert "least-allocated" in capsys.readouterr().err
