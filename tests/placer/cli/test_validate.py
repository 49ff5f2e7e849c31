"""``placer validate``: exit codes, JSON lines, and a start-up that does not import the solver stack."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placer.cli import main

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
        "import sys; from placer.cli import main; "
        f"rc = main(['validate', r'{EXAMPLES / 'batch.json'}']); "
        "heavy = [m for m in ('ortools', 'networkx', 'pandas') if m in sys.modules]; "
        "print(heavy); sys.exit(rc)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_every_example_job_validates_against_the_job_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """What ``--json`` prints as ``job`` is a document of ``placer schema job``: field aliases (a Flux
    resource's ``with``, not the Python ``with_``), and the schema forbids unknown keys."""
    import jsonschema

    from placer.cli.schema import schema

    validator = jsonschema.Draft202012Validator(schema("job"))
    assert main(["validate", "--json", *sorted(str(p) for p in EXAMPLES.iterdir())]) == 0
    lines = _json_lines(capsys)
    assert len(lines) == 10
    for line in lines:
        problems = [e.message for e in validator.iter_errors(line["job"])]
        assert problems == [], (line["id"], problems)
    mpi = next(line["job"] for line in lines if line["id"] == "mpi-train")
    structure = mpi["tasks"][0]["structure"]
    assert "with" in json.dumps(structure) and "with_" not in json.dumps(structure)


def test_a_json_schema_file_is_not_a_job(specs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema_file = specs_dir / "flux-examples" / "spec_25" / "schema.json"
    assert main(["validate", "--json", str(schema_file)]) == 1
    [line] = _json_lines(capsys)
    assert line["ok"] is False and line["job"] is None
    assert [(e["code"], e["path"]) for e in line["errors"]] == [("format", str(schema_file))]
    assert "JSON Schema" in line["errors"][0]["message"]


def test_an_empty_list_is_an_error_not_silence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file meant to carry jobs that carries none: exit 1 with a message, not exit 0 and no output."""
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert main(["validate", str(empty)]) == 1
    out = capsys.readouterr().out
    assert "empty list" in out and "[format]" in out


# ---- --limits FILE -----------------------------------------------------------------------------------


def test_limits_file_lowers_the_gpu_bound_and_sets_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobs = tmp_path / "jobs.json"
    jobs.write_text(
        json.dumps(
            [
                {"id": "four", "type": "t", "ext_ml_gpu_count": 4},
                {"id": "eight", "type": "t", "ext_ml_gpu_count": 8},
                {"id": "zone", "type": "t", "ext_ml_node_selector": {"zone": "a"}},
                {"id": "gcs", "type": "t", "ext_ml_checkpoint_storage_uri": "gs://b/ck/"},
                {"id": "model", "type": "t", "ext_ml_model_id": "llama-3.1-8b"},
            ]
        )
    )
    # with the defaults (512 GPUs, no zone deny, gs allowed, no model allow-list) all five are valid
    assert main(["validate", "--json", str(jobs)]) == 0
    capsys.readouterr()
    limits = tmp_path / "limits.yaml"
    limits.write_text(
        "max_gpus_per_job: 4\n"
        "denied_selector_keys: [zone]\n"
        "checkpoint_uri_schemes: [S3]\n"  # schemes are case-insensitive: stored as s3
        "allowed_model_ids: [llama-3.1-70b]\n"
    )
    assert main(["validate", "--json", "--limits", str(limits), str(jobs)]) == 1
    by_id = {line["id"]: [(e["code"], e["path"]) for e in line["errors"]] for line in _json_lines(capsys)}
    assert by_id == {
        "four": [],
        "eight": [("limit", "[1].ext_ml_gpu_count")],
        "zone": [("denied", "[2].ext_ml_node_selector.zone")],
        "gcs": [("uri", "[3].ext_ml_checkpoint_storage_uri")],
        "model": [("denied", "[4].ext_ml_model_id")],
    }


def test_limits_file_sets_the_sss_awareness_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SSS ``awarenessPolicy`` defaults to Reject (the spec's default); ``--limits`` may make it Warn."""
    job = tmp_path / "job.xml"
    job.write_text("<Job><JobId>x</JobId><Colour>blue</Colour></Job>")
    assert main(["validate", "--json", str(job)]) == 1
    [line] = _json_lines(capsys)
    assert [e["code"] for e in line["errors"]] == ["unsupported"]
    limits = tmp_path / "limits.json"
    limits.write_text('{"sss_awareness": "Warn"}')
    assert main(["validate", "--json", "--limits", str(limits), str(job)]) == 0
    [line] = _json_lines(capsys)
    assert [w["code"] for w in line["warnings"]] == ["unsupported"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"max_gpus_per_job": "8"}', "max_gpus_per_job: Input should be a valid integer [type]"),
        ('{"max_gpus_per_job": -1}', "max_gpus_per_job: Input should be greater than or equal to 0 [range]"),
        ('{"sss_awareness": "warn"}', "sss_awareness: Input should be 'Reject', 'Warn' or 'Ignore' [enum]"),
        ('{"max_gpu": 8}', "max_gpu: unknown key [malformed]"),
        ("[1]", "a limits file must be an object [type]"),
    ],
)
def test_bad_limits_file_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, problem: str
) -> None:
    limits = tmp_path / "limits.json"
    limits.write_text(text)
    assert main(["validate", "--limits", str(limits), str(EXAMPLES / "batch.json")]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and problem in captured.err


def test_missing_limits_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--limits", str(tmp_path / "nope.yaml"), str(EXAMPLES / "batch.json")]) == 2
    assert "cannot open limits file" in capsys.readouterr().err
