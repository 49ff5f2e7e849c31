"""``placer place``: reading every input, the table and the Decision JSON, exit codes, and the committed
decision schema. Engine-sensitive cases use ``--engine greedy``; one runs the default engine (auto).

Expected facts come from the example files: ``examples/clusters/h100-training.yaml`` (16 DGX H100 in four
racks and 8 L4 spot nodes, three running jobs holding dgx-r1-1, dgx-r1-2 whole and GPUs 0-3 of dgx-r2-1),
``examples/jobs/*`` (10 jobs: 6 in batch.json, 2 in pipeline.json, one Flux, one SSS).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.cli import main
from placer.cli import place as place_cli
from placer.cli.schema import schema
from placer.solver.decision import Decision
from tests.solver.conftest import pending_reason

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
H100 = str(EXAMPLES / "clusters" / "h100-training.yaml")
#: The decision time of the documented example (docs/decision.md).
DOC_NOW = "2026-01-01T00:00:00Z"
ALL_JOBS = [str(p) for p in sorted((EXAMPLES / "jobs").iterdir())]
EXAMPLE_IDS = {
    "train-llama-70b",
    "pretrain-8b-gang",
    "sweep-lr-0.001",
    "serve-llama-8b",
    "t5-xxl-tpu",
    "tokenize-shards",
    "finetune-prep",
    "finetune-train",
    "mpi-train",
    "sss-analysis-1",
}


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="placer")
    place_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["place", *argv])
    return args.run(args)


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    rc = run(*argv, "--json")
    out = capsys.readouterr().out
    return rc, json.loads(out) if out.strip() else {}


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# -- the example batch --------------------------------------------------------------------------------------


def test_example_batch_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "greedy")
    assert rc == 0
    assert set(out) >= {"placements", "preemptions", "reservations", "pending", "rejected", "stats"}
    d = Decision.model_validate(out)
    answered = [p.job for p in d.placements] + [p.job for p in d.pending] + [r.job for r in d.rejected]
    assert sorted(answered) == sorted(EXAMPLE_IDS)
    pending = {p.job: p.reasons[0].code for p in d.pending}
    # finetune-train waits for finetune-prep (pipeline.json chain); the cluster has no TPU pod at all, so
    # the 2x4 TPU job is rejected (OJS ML §3.3: a topology the backend cannot satisfy MUST be rejected).
    assert pending == {"finetune-train": "DEPENDENCY_UNMET"}
    assert [(r.job, r.errors[0]["code"]) for r in d.rejected] == [("t5-xxl-tpu", "tpu_topology")]
    # train-llama-70b: 8 NVLink H100 with 64 GB shm on one DGX; the running jobs hold dgx-r1-1, dgx-r1-2.
    train = d.placement_of("train-llama-70b")
    assert train is not None and len(train.replicas) == 1
    assert len(train.replicas[0].gpus) == 8 and train.replicas[0].node not in ("dgx-r1-1", "dgx-r1-2")
    assert train.replicas[0].shm_gb == 64
    # pretrain-8b-gang: 16 GPUs, data_parallel -> two whole DGX.
    gang = d.placement_of("pretrain-8b-gang")
    assert gang is not None and sorted(len(r.gpus) for r in gang.replicas) == [8, 8]
    stats = out["stats"]
    assert isinstance(stats, dict)
    assert stats["engine"] == "greedy"
    for key in ("status", "objective", "bound", "gap", "build_s", "solve_s", "wall_s"):
        assert key in stats


def test_example_decision_passes_the_checker(capsys: pytest.CaptureFixture[str]) -> None:
    from placer.solver.checks import check
    from placer.solver.jobs import read_files
    from placer.topology.load import load_cluster

    # The checker is given the decision's own time: plans (rule 18) are relative to it.
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "greedy", "--now", DOC_NOW)
    assert rc == 0
    jobs = [r.job for r in read_files(ALL_JOBS) if r.job is not None]
    now = place_cli.parse_rfc3339(DOC_NOW)
    assert check(Decision.model_validate(out), jobs, load_cluster(H100), now=now) == []


def test_example_batch_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "greedy") == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    # No TPU CHIPS column: no job of the batch holds TPU chips (the TPU job is rejected).
    assert lines[0].split() == ["JOB", "NODES", "GPUS", "$/H"]
    train = next(line for line in lines if line.startswith("train-llama-70b"))
    assert train.split()[2:4] == ["8", "[0-7]"]  # 8 GPUs, indices 0-7 of one node
    assert float(train.split()[4]) > 0
    assert "pending (1):" in out
    assert "  finetune-train: DEPENDENCY_UNMET: " in out
    assert "  t5-xxl-tpu: ext_ml_tpu_topology: " in out
    first, second, third = lines[-3:]
    rows = lines[1 : lines.index("")]
    assert first.startswith(f"greedy placed {len(rows)} of {len(rows) + 2} jobs (1 pending, 1 rejected), $")
    assert second.startswith("Placed work ") and "status " in second
    assert third.endswith("s).") or "Wall-clock limits bounded" in third


def test_default_engine(capsys: pytest.CaptureFixture[str]) -> None:
    # --engine auto: greedy, then CP-SAT from greedy's answer (needs placer.solver.cpsat).
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--time-limit", "2")
    assert rc == 0
    stats = out["stats"]
    assert isinstance(stats, dict) and stats["engine"] in ("cpsat", "greedy")
    assert stats["status"] in ("OPTIMAL", "FEASIBLE")
    assert stats["wall_s"] <= 2 + 0.5


def test_through_the_placer_entry_point(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["place", "--cluster", H100, "--jobs", ALL_JOBS[0], "--engine", "greedy", "--json"]
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["engine"] == "greedy"


def test_tpu_and_fractional_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(
        tmp_path,
        "c.yaml",
        "nodes: [{name: l4, cpu_cores: 48, memory_gb: 192, gpus: {type: nvidia-l4, count: 1}}]\n"
        "tpu_pods: [{name: pod, type: v5e, shape: [4, 4]}]\n",
    )
    jobs = write(
        tmp_path,
        "j.json",
        '[{"id": "t", "ext_ml_accelerator": "tpu", "ext_ml_tpu_type": "v5e", "ext_ml_tpu_topology": "2x4"}]',
    )
    assert run("--cluster", cluster, "--jobs", jobs, "--engine", "greedy") == 0
    header, row = (line.split() for line in capsys.readouterr().out.splitlines()[:2])
    assert header[:2] == ["JOB", "NODES"] and "GPUS" not in header  # no GPUs in this batch: no column
    assert row[0] == "t" and row[1] == "pod" and row[2] == "8"  # a 2x4 slice is 8 chips


# -- inputs -------------------------------------------------------------------------------------------------


def test_invalid_job_goes_to_rejected_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(
        tmp_path, "j.json", '[{"id": "bad", "ext_ml_gpu_count": -1}, {"id": "ok", "ext_ml_gpu_count": 1}]'
    )
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", jobs, "--engine", "greedy")
    assert rc == 0
    d = Decision.model_validate(out)
    assert [r.job for r in d.rejected] == ["bad"]
    assert d.rejected[0].errors[0]["code"] == "range"
    assert d.placement_of("ok") is not None


def test_limits_file_applies_to_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--limits`` as in ``placer validate``: a job over the configured GPU bound goes to ``rejected``."""
    jobs = write(tmp_path, "j.json", '{"id": "eight", "type": "t", "ext_ml_gpu_count": 8}')
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", jobs, "--engine", "greedy")
    assert rc == 0 and Decision.model_validate(out).placement_of("eight") is not None
    limits = write(tmp_path, "limits.yaml", "max_gpus_per_job: 4\n")
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", jobs, "--limits", limits, "--engine", "greedy")
    d = Decision.model_validate(out)
    assert rc == 0 and [r.job for r in d.rejected] == ["eight"]
    assert [(e["code"], e["path"]) for e in d.rejected[0].errors] == [("limit", "ext_ml_gpu_count")]
    assert run("--cluster", H100, "--jobs", jobs, "--limits", str(tmp_path / "nope.yaml")) == 2
    assert "cannot open limits file" in capsys.readouterr().err
    bad = write(tmp_path, "bad.yaml", "max_gpus_per_job: lots\n")
    assert run("--cluster", H100, "--jobs", jobs, "--limits", bad) == 1
    assert f"limits file {bad} is invalid: max_gpus_per_job" in capsys.readouterr().err


def test_rejected_jobs_in_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(tmp_path, "j.json", '[{"id": "bad", "ext_ml_gpu_count": -1}]')
    assert run("--cluster", H100, "--jobs", jobs, "--engine", "greedy") == 0
    out = capsys.readouterr().out
    assert "rejected (1):" in out and "bad: [0].ext_ml_gpu_count: " in out and "[range]" in out


def test_running_file_is_added_to_the_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write(
        tmp_path,
        "c.yaml",
        "nodes: [{name: g, count: 2, cpu_cores: 64, memory_gb: 512, gpus: {type: nvidia-h100, count: 8}}]\n",
    )
    running = write(
        tmp_path,
        "running.json",
        json.dumps([{"id": "r1", "ext_ml_gpu_count": 6, "node": "g-1", "gpus": [0, 1, 2, 3, 4, 5]}]),
    )
    jobs = write(tmp_path, "j.json", '{"id": "four", "ext_ml_gpu_count": 4}')
    rc, out = run_json(
        capsys, "--cluster", cluster, "--jobs", jobs, "--running", running, "--engine", "greedy"
    )
    assert rc == 0
    # g-1 has 2 free GPUs (8 - 6): the 4-GPU job must go to g-2.
    d = Decision.model_validate(out)
    assert [r.node for r in d.placement_of("four").replicas] == ["g-2"]  # type: ignore[union-attr]


def test_running_file_anti_affinity_on_the_running_job_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write(tmp_path, "c.yaml", "nodes: [{name: c, count: 2, cpu_cores: 64, memory_gb: 256}]\n")
    running = write(
        tmp_path,
        "running.json",
        json.dumps(
            [
                {
                    "id": "db",
                    "type": "db.serve",
                    "ext_ml_accelerator": "cpu",
                    "ext_ml_cpu_cores": 4,
                    "node": "c-1",
                }
            ]
        ),
    )
    jobs = write(
        tmp_path,
        "j.json",
        '{"id": "web", "ext_ml_accelerator": "cpu", "ext_ml_cpu_cores": 4, "ext_ml_anti_affinity": '
        '{"required": [{"key": "job_type", "operator": "In", "values": ["db.serve"]}]}}',
    )
    rc, out = run_json(
        capsys, "--cluster", cluster, "--jobs", jobs, "--running", running, "--engine", "greedy"
    )
    assert rc == 0
    d = Decision.model_validate(out)
    assert [r.node for r in d.placement_of("web").replicas] == ["c-2"]  # type: ignore[union-attr]


def test_now_controls_not_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    jobs = write(
        tmp_path, "j.json", '{"id": "later", "ext_ml_gpu_count": 1, "scheduled_at": "2030-01-01T00:00:00Z"}'
    )
    rc, out = run_json(
        capsys, "--cluster", H100, "--jobs", jobs, "--engine", "greedy", "--now", "2029-12-31T23:00:00Z"
    )
    assert rc == 0
    assert Decision.model_validate(out).pending[0].reasons[0].code == "NOT_BEFORE"
    rc, out = run_json(
        capsys, "--cluster", H100, "--jobs", jobs, "--engine", "greedy", "--now", "2030-01-01T01:00:00+01:00"
    )
    # 01:00+01:00 is exactly 00:00Z: not later than now, so it may start.
    assert rc == 0 and Decision.model_validate(out).placement_of("later") is not None


def test_seed_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", ALL_JOBS[0], "--engine", "greedy", "--seed", "42")
    assert rc == 0 and out["stats"]["seed"] == 42  # type: ignore[index]


def test_reproducible_flag_gives_a_deterministic_cpsat_decision(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "cpsat", "--reproducible")
    argv += ("--now", "2026-01-01T00:00:00Z", "--time-limit", "5")
    rc1, first = run_json(capsys, *argv)
    rc2, second = run_json(capsys, *argv)
    assert rc1 == rc2 == 0
    assert first["stats"]["deterministic"] is True  # type: ignore[index]
    for key in ("placements", "preemptions", "reservations", "pending", "rejected"):
        assert first[key] == second[key]


def test_table_shows_eviction_directives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One 8-GPU node held by a spot job (started 2 h before now, no checkpoint, grace 60 s): an on-demand
    # 8-GPU job evicts it. Lost: 8 GPUs x 2 h = 16.0 GPU-h.
    cluster = write(
        tmp_path,
        "c.yaml",
        "nodes: [{name: g, cpu_cores: 64, memory_gb: 512, gpus: {type: nvidia-h100, count: 8}}]\n",
    )
    spot = {
        "id": "s",
        "ext_ml_gpu_count": 8,
        "ext_ml_priority_class": "spot",
        "ext_ml_preemption_grace_period_s": 60,
        "node": "g",
        "gpus": list(range(8)),
        "started_at": "2026-01-01T00:00:00Z",
    }
    running = write(tmp_path, "running.json", json.dumps([spot]))
    jobs = write(tmp_path, "j.json", '{"id": "od", "ext_ml_gpu_count": 8}')
    argv = ("--cluster", cluster, "--jobs", jobs, "--running", running, "--now", "2026-01-01T02:00:00Z")
    assert run(*argv, "--engine", "greedy") == 0
    out = capsys.readouterr().out
    assert "preemptions (1):" in out
    assert "s for od: grace 60 s, no checkpoint, loses 16.0 GPU-h (a scheduling event, not a failure)" in out


# -- exit codes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "now", ["yesterday", "2025-06-01", "2025-06-01T12:00:00", "2025-02-30T00:00:00Z", "2025-06-01T25:00:00Z"]
)
def test_bad_now_is_a_usage_error(now: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--cluster", H100, "--jobs", ALL_JOBS[0], "--engine", "greedy", "--now", now) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("placer place: --now: ")


@pytest.mark.parametrize("limit", ["0", "-1", "abc", "nan", "inf"])
def test_bad_time_limit_is_a_usage_error(limit: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        run("--cluster", H100, "--jobs", ALL_JOBS[0], "--time-limit", limit)
    assert e.value.code == 2


def test_bad_engine_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as e:
        run("--cluster", H100, "--jobs", ALL_JOBS[0], "--engine", "magic")
    assert e.value.code == 2


def test_missing_files_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.json")
    assert run("--cluster", missing, "--jobs", ALL_JOBS[0]) == 2
    assert "cannot open cluster" in capsys.readouterr().err
    assert run("--cluster", H100, "--jobs", ALL_JOBS[0], missing, "--engine", "greedy") == 2
    assert "cannot open jobs file" in capsys.readouterr().err
    assert run("--cluster", H100, "--jobs", ALL_JOBS[0], "--running", missing, "--engine", "greedy") == 2
    assert "cannot open running jobs" in capsys.readouterr().err


def test_unreadable_cluster_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "c.yaml", "nodes: [{name: x, cpu_cores: -4}]\n")
    assert run("--cluster", bad, "--jobs", ALL_JOBS[0], "--engine", "greedy") == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith(f"placer place: cluster {bad} cannot be read: ")


def test_unparseable_jobs_file_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "j.json", "{not json")
    assert run("--cluster", H100, "--jobs", ALL_JOBS[0], bad, "--engine", "greedy") == 1
    captured = capsys.readouterr()
    assert captured.out == "" and bad in captured.err and "[malformed]" in captured.err


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("[{", "invalid JSON at line 1 column 3"),
        ('[{"id": "r", "ext_ml_gpu_count": 1e400}]', "[0].ext_ml_gpu_count: inf is not a finite number"),
        ('{"id": "r"}', "running jobs are invalid"),
        (
            '[{"id": "r", "ext_ml_gpu_count": 1, "node": "no-such-node", "gpus": [0]}]',
            "do not fit the cluster",
        ),
    ],
)
def test_unreadable_running_file_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, what: str
) -> None:
    running = write(tmp_path, "running.json", text)
    assert run("--cluster", H100, "--jobs", ALL_JOBS[0], "--running", running, "--engine", "greedy") == 1
    assert what in capsys.readouterr().err


# -- the decision schema ------------------------------------------------------------------------------------


def test_committed_decision_schema_is_up_to_date() -> None:
    committed = (REPO / "docs" / "schemas" / "decision.schema.json").read_text()
    expected = json.dumps(schema("decision"), indent=2, sort_keys=True) + "\n"
    assert committed == expected, "regenerate: placer schema decision > docs/schemas/decision.schema.json"


def test_decision_schema_uses_the_fixed_names() -> None:
    s = schema("decision")
    assert set(s["properties"]) == {
        "placements",
        "preemptions",
        "reservations",
        "pending",
        "rejected",
        "stats",
        "now",
    }
    eviction = s["$defs"]["Eviction"]["properties"]
    assert "for" in eviction and "for_" not in eviction
    # The names the solver issue fixes are required, so a backend validating with the schema can rely on
    # them (placer writes every field).
    assert {"placements", "preemptions", "reservations", "pending", "rejected", "stats"} <= set(s["required"])
    defs = s["$defs"]
    assert {"node", "gpus", "tpu_chips", "cpu_cores", "memory_gb"} <= set(
        defs["ReplicaPlacement"]["required"]
    )
    assert {"job", "for", "grace_period_s", "checkpoint"} <= set(defs["Eviction"]["required"])
    assert {"job", "reasons"} <= set(defs["PendingJob"]["required"])
    assert {"code", "message"} <= set(defs["Reason"]["required"])
    assert {"job", "errors"} <= set(defs["RejectedJob"]["required"])
    stats = {"engine", "status", "objective", "bound", "gap", "build_s", "solve_s", "wall_s"}
    assert stats <= set(defs["Stats"]["required"])


def test_example_decision_validates_against_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    import jsonschema

    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "greedy")
    assert rc == 0
    jsonschema.validate(out, json.loads((REPO / "docs" / "schemas" / "decision.schema.json").read_text()))


def test_other_schemas_unchanged_by_aliases() -> None:
    # by_alias=True must not change the job and inventory schemas (their committed inventory twin).
    from placer.topology.schema import inventory_schema_text

    inventory = schema("inventory")
    inventory.pop("$schema")
    assert json.dumps(inventory, indent=2, sort_keys=True) + "\n" == inventory_schema_text()
    assert "id" in schema("job")["properties"]


# -- docs/decision.md --------------------------------------------------------------------------------------

DOC = REPO / "docs" / "decision.md"


def test_doc_names_every_field_of_the_schema() -> None:
    text = DOC.read_text()
    s = schema("decision")
    names = set(s["properties"])
    for definition in s["$defs"].values():
        names |= set(definition.get("properties", {}))
    missing = sorted(n for n in names if f"`{n}`" not in text)
    assert missing == [], f"docs/decision.md does not document {missing}"


def test_doc_names_every_reason_code() -> None:
    import placer.solver.explain

    text = DOC.read_text()
    codes = {"UNSATISFIABLE", "INSUFFICIENT_CAPACITY", "NO_NVLINK_DOMAIN", "NO_TPU_SLICE"}
    codes |= {"LOST_TO_HIGHER_PRIORITY", "DEPENDENCY_UNMET", "NOT_BEFORE"}
    assert all(f"``{c}``" in (placer.solver.explain.__doc__ or "") for c in codes)
    assert sorted(c for c in codes if f"| `{c}` |" not in text) == []


def test_doc_example_is_what_placer_place_prints(capsys: pytest.CaptureFixture[str]) -> None:
    # The example in docs/decision.md is the real output of the documented command (timing aside).
    text = DOC.read_text()
    block = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    documented = json.loads(block)
    rc, fresh = run_json(
        capsys, "--cluster", H100, "--jobs", *ALL_JOBS, "--engine", "greedy", "--now", DOC_NOW
    )
    assert rc == 0
    for d in (documented, fresh):
        for key in ("build_s", "solve_s", "wall_s"):
            d["stats"].pop(key)  # type: ignore[attr-defined]
    assert documented == fresh, "regenerate the example in docs/decision.md"


# -- malformed input never escapes as a traceback -----------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 20) | st.sampled_from(["", "x", "nvidia-h100", "2x4", "-1"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "ext_ml_gpu_count",
                    "ext_ml_gpu_type",
                    "ext_ml_accelerator",
                    "node",
                    "gpus",
                    "replicas",
                    "x",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@given(jobs=JSON_VALUES | st.text(max_size=40), running=st.none() | JSON_VALUES | st.text(max_size=40))
def test_random_documents_give_an_exit_code_not_a_traceback(jobs: object, running: object) -> None:
    import contextlib
    import io
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        jobs_file = Path(tmp) / "jobs.json"
        jobs_file.write_text(jobs if isinstance(jobs, str) else json.dumps(jobs))
        argv = ["--cluster", H100, "--jobs", str(jobs_file), "--engine", "greedy", "--json"]
        if running is not None:
            running_file = Path(tmp) / "running.json"
            running_file.write_text(running if isinstance(running, str) else json.dumps(running))
            argv += ["--running", str(running_file)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = run(*argv)
    assert rc in (0, 1)  # every file opens: content problems are 1, never a traceback
    if rc == 0:
        Decision.model_validate(json.loads(out.getvalue()))
    else:
        assert out.getvalue() == "" and err.getvalue().startswith("placer place: ")


# -- the shipped example inputs (examples/inputs/) -----------------------------------------------------------

INPUTS = EXAMPLES / "inputs"
WITH_INPUTS = (
    "--running",
    str(INPUTS / "running.json"),
    "--reservations",
    str(INPUTS / "reservations.json"),
    "--queue-config",
    str(INPUTS / "queue-config.json"),
    "--prices",
    str(INPUTS / "prices.json"),
    "--now",
    "2026-01-01T02:00:00Z",
)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_example_inputs_preemption_reservation_budget(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # examples/inputs: 8 spot sweeps (queue gpu-spot, 8 GPUs each, since 00:00) fill racks 3 and 4;
    # sweep-43 checkpoints on preempt, sweep-44 checkpointed at 01:30; reservation nightly-eval holds
    # dgx-r2-2..4 from 01:00; gpu-spot may hold 50 GPUs and holds 64.
    rc, out = run_json(capsys, "--cluster", H100, "--jobs", *ALL_JOBS, *WITH_INPUTS, "--engine", engine)
    assert rc == 0
    d = Decision.model_validate(out)
    # Nobody but the reservation's members (none here) uses its nodes.
    used = {r.node for p in d.placements for r in p.replicas}
    assert not used & {"dgx-r2-2", "dgx-r2-3", "dgx-r2-4"}
    # The spot sweep of the batch waits on its queue's budget: 64 + 4 - 50 = 18 GPUs short (evicting a spot
    # sweep gives a spot job no room).
    assert (pending_reason(d, "sweep-lr-0.001") or "").startswith("QUEUE_BUDGET")
    assert "18 more GPUs" in (pending_reason(d, "sweep-lr-0.001") or "")
    # Every eviction is of a spot sweep, for higher-priority work, and the cheapest victim goes first: the
    # sweep that checkpoints on preempt loses nothing.
    assert d.preemptions and all(e.job.startswith("sweep-") for e in d.preemptions)
    assert "sweep-43" in {e.job for e in d.preemptions}
    assert {e.job: e.expected_work_lost_gpu_s for e in d.preemptions}["sweep-43"] == 0
    # placer check, given the same inputs, agrees.
    decision = tmp_path / "decision.json"
    decision.write_text(json.dumps(out))
    argv = ["check", "--cluster", H100, "--jobs", *ALL_JOBS, *WITH_INPUTS, "--decision", str(decision)]
    assert main(argv) == 0


@pytest.mark.parametrize("command", ["place", "check"])
def test_a_shared_kueue_cluster_queue_counts_running_pods_of_every_local_queue(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # --pods: ml's running pods (LocalQueue ml/team-a) hold 8 GPUs of team-a-cq's 12; research's pending
    # pod (LocalQueue research/team-b, same ClusterQueue) asks 8: it waits on the shared budget. `check`
    # reads the inputs the same way: a decision that places it breaks the budget (rule 17).
    from tests.solver.jobs.test_kueue import NODES, RUNNING, _research_pod, _with_local_queue

    doc = _with_local_queue("research", "team-b")
    doc["items"][2]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = 12
    kueue = write(tmp_path, "kueue.json", json.dumps(doc))
    pods = write(
        tmp_path, "pending.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": [_research_pod()]})
    )
    inputs = ("--cluster", str(NODES), "--pods", str(RUNNING), "--jobs", pods, "--queue-config", kueue)
    if command == "place":
        rc, out = run_json(capsys, *inputs)
        assert rc == 0
        (p,) = Decision.model_validate(out).pending
        assert p.job == "research/b-train" and p.reasons[0].code == "QUEUE_BUDGET"
        assert "'team-a-cq'" in p.reasons[0].message
        return
    from placer.cli import check as check_cli

    placed = {
        "placements": [
            {
                "job": "research/b-train",
                "replicas": [
                    {
                        "node": "ip-10-0-3-17.ec2.internal",
                        "gpus": list(range(8)),
                        "cpu_cores": 32,
                        "memory_gb": 256,
                    }
                ],
            }
        ]
    }
    decision = write(tmp_path, "decision.json", json.dumps(placed))
    parser = argparse.ArgumentParser(prog="placer")
    check_cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(["check", *inputs, "--decision", decision, "--json"])
    assert args.run(args) == 1
    assert "queue-budget" in capsys.readouterr().out


def test_the_table_shows_what_a_reader_read_past(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A Kubernetes pod with a preferred pod-affinity term on the zone (a preference to kube-scheduler that
    # placer does not weigh: read past): the decision's notes carry the reader's warning, and the table
    # prints it under the job, not only placer validate.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": "cache"}},
                                "topologyKey": "topology.kubernetes.io/zone",
                            },
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Pending"},
    }
    jobs = write(tmp_path, "pod.json", json.dumps(pod))
    rc, d = run_json(capsys, "--cluster", H100, "--jobs", jobs, "--engine", "greedy", "--now", DOC_NOW)
    assert rc == 0
    (placed,) = d["placements"]  # type: ignore[misc]
    (note,) = placed["notes"]
    assert (
        note.startswith("warning: spec.affinity.podAffinity.preferredDuringScheduling")
        and "[unsupported]" in note
    )
    assert run("--cluster", H100, "--jobs", jobs, "--engine", "greedy", "--now", DOC_NOW) == 0
    text = capsys.readouterr().out
    assert "notes (1):" in text and f"  ml/web: {note}" in text


def test_the_stats_line_names_the_level_cpsat_won_on() -> None:
    # Placed work tied: the sentence names the first later level where stats.levels beats greedy's, and
    # falls back to "a later level" when the decision carries no levels.
    from placer.cli.place import stats_line
    from placer.solver.decision import Decision, Stats

    base = {"engine": "cpsat", "status": "FEASIBLE", "objective": 10.0, "greedy_objective": 10.0}
    base["model_status"] = "FEASIBLE"
    tied = {"placed": 10, "eviction": 0.0, "preference": 4, "compactness": 0, "fragmentation": -5.0}
    greedy = {**tied, "preference": 4, "fragmentation": -9.0}
    line = stats_line(Decision(stats=Stats(**base, levels=tied, greedy_levels=greedy)))
    assert "ties greedy's on placed work and wins on fragmentation" in line
    assert "wins on a later level" in stats_line(Decision(stats=Stats(**base)))
