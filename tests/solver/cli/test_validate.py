"""``placer validate``: exit codes, JSON lines, and a start-up that does not import the solver stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solver.cli import main

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "jobs"


def _json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_shipped_examples_are_valid(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in EXAMPLES.iterdir())
    assert main(["validate", "--json", *files]) == 0
    lines = _json_lines(capsys)
    # batch.json has 6 envelopes, pipeline.json a chain of 2 steps, one Flux jobspec, one SSS job.
    assert len(lines) == 6 + 2 + 1 + 1
    assert all(line["ok"] and line["errors"] == [] for line in lines)
    by_id = {line["id"]: line for line in lines}
    assert by_id["finetune-train"]["job"]["dependencies"][0]["job"] == "finetune-prep"
    assert {"id", "ok", "errors", "job"} <= by_id["train-llama-70b"].keys()


def test_invalid_job_exits_1_with_structured_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"id": "x", "ext_ml_gpu_count": "8"}')
    assert main(["validate", "--json", str(bad)]) == 1
    [line] = _json_lines(capsys)
    assert line["ok"] is False and line["job"] is None
    assert line["errors"][0]["path"] == "ext_ml_gpu_count"
    assert line["errors"][0]["code"] == "type"


def test_malformed_content_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"id": "x", ')
    assert main(["validate", "--json", str(bad)]) == 1
    [line] = _json_lines(capsys)
    assert line["errors"][0]["code"] == "malformed"


def test_missing_file_exits_2(tmp_path: Path) -> None:
    assert main(["validate", str(tmp_path / "nope.json")]) == 2


def test_usage_error_exits_2() -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", "--format", "cobol", "x.json"])
    assert info.value.code == 2


def test_validate_does_not_import_the_solver_stack() -> None:
    # Start-up speed is a feature: validating must not pay for OR-Tools, networkx or pandas.
    code = (
        "import sys; from solver.cli import main; "
        f"rc = main(['validate', r'{EXAMPLES / 'batch.json'}']); "
        "heavy = [m for m in ('ortools', 'networkx', 'pandas') if m in sys.modules]; "
        "print(heavy); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
