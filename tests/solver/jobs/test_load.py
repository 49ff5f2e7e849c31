"""The loading pipeline: format detection, batch checks (duplicate ids, dependency cycles), file errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.solver.jobs.detect import parse_document
from placer.solver.jobs.load import check_batch, read_file, read_text
from placer.solver.jobs.model import Dependency, Job, ReadResult


def _ok(job_id: str, deps: tuple[str, ...] = ()) -> ReadResult:
    job = Job(id=job_id, dependencies=[Dependency(job=d) for d in deps])
    return ReadResult(id=job_id, ok=True, job=job, source="t")


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        ('{"type": "ml.train", "ext_ml_gpu_count": 1}', "ojs"),
        ('[{"type": "a"}, {"type": "b"}]', "ojs"),
        ('{"workflow_type": "chain", "steps": []}', "ojs"),
        ("version: 1\nresources: []\ntasks: []\n", "flux"),
        ('{"version": 1, "resources": [], "tasks": []}', "flux"),
        ("<?xml version='1.0'?><Job/>", "sss"),
        ("  \n<Job/>", "sss"),
    ],
)
def test_format_detection(text: str, fmt: str) -> None:
    assert parse_document(text)[0] == fmt


def test_forced_format_skips_detection() -> None:
    assert parse_document('{"version": 1, "resources": [], "tasks": []}', fmt="ojs")[0] == "ojs"


def test_scalar_document_is_not_a_job() -> None:
    [r] = read_text("42", source="n.yaml")
    assert not r.ok and r.errors[0].code == "format"


def test_duplicate_ids_reject_every_copy() -> None:
    out = check_batch([_ok("a"), _ok("b"), _ok("a")])
    assert [r.ok for r in out] == [False, True, False]
    assert {e.code for e in out[0].errors} == {"duplicate"}


def test_dependency_cycle_rejects_the_cycle_only() -> None:
    # a -> b -> c -> a is a cycle; d depends on a but is not on the cycle; e depends on an unknown job
    # (outside this batch: may already have run), which is not an error here.
    out = check_batch(
        [_ok("a", ("b",)), _ok("b", ("c",)), _ok("c", ("a",)), _ok("d", ("a",)), _ok("e", ("zz",))]
    )
    assert {r.id: r.ok for r in out} == {"a": False, "b": False, "c": False, "d": True, "e": True}
    assert out[0].errors[0].code == "dependency"


def test_self_dependency_is_a_cycle() -> None:
    [r] = check_batch([_ok("a", ("a",))])
    assert not r.ok and r.errors[0].code == "dependency"


def test_unreadable_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        read_file(tmp_path / "missing.json")
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"id": "caf\xe9"}')
    [r] = read_file(bad)
    assert not r.ok and r.errors[0].code == "malformed" and "UTF-8" in r.errors[0].message


# ---- what is not a job ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # a JSON Schema document has a string "type" too; it is not an OJS envelope
        ('{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"}', "JSON Schema"),
        ('{"type": "object", "properties": {"version": {"type": "integer"}}}', "JSON Schema"),
        ('{"definitions": {}, "title": "x"}', "JSON Schema"),
        # RFC 26 dependency objects: a Flux jobspec's attributes.system.dependencies, not a job
        ("- type: inout\n  scope: user\n  scheme: string\n  value: foo\n", "RFC 26"),
        # core keys of the wrong type are no envelope (OJS core: type is a string, args an array)
        ('{"type": 5}', "envelope needs a string type"),
        ('{"args": "x", "meta": []}', "envelope needs a string type"),
        ("[]", "empty list"),
    ],
)
def test_non_job_documents_are_refused_with_one_format_issue(text: str, says: str) -> None:
    [r] = read_text(text, source="doc")
    assert not r.ok and r.job is None
    assert [(e.code, e.path) for e in r.errors] == [("format", "doc")]
    assert says in r.errors[0].message


def test_flux_schema_files_are_not_jobs(specs_dir: Path) -> None:
    """The three ``schema.json`` files beside the Flux examples were read as OJS jobs of type "object"."""
    for spec in ("spec_14", "spec_25", "spec_26"):
        [r] = read_file(specs_dir / "flux-examples" / spec / "schema.json")
        assert not r.ok and [e.code for e in r.errors] == ["format"], spec
        assert "JSON Schema" in r.errors[0].message


def test_envelopes_with_core_keys_only_still_read() -> None:
    """The plausibility rule keeps minimal envelopes: a string id, queue or type, or ext_ml_* alone."""
    minimal = ('{"id": "a"}', '{"queue": "q"}', '{"type": "ml.train"}', '{"ext_ml_gpu_count": 1}')
    # a job type that is no JSON Schema type name: a producer's own "properties" key does not make a schema
    for text in (*minimal, '{"type": "ml.train", "properties": {"owner": "x"}}'):
        [r] = read_text(text, source="doc")
        assert r.ok, (text, r.errors)
    # ext_ml_* attributes make it an envelope whatever the core keys: the bad type is the reader's error
    [r] = read_text('{"type": 5, "ext_ml_gpu_count": 1}', source="doc")
    assert [(e.code, e.path) for e in r.errors] == [("type", "type")]


def test_flux_like_document_without_tasks_names_the_missing_key() -> None:
    """``version`` and ``resources`` make it a Flux jobspec: the Flux reader says ``tasks`` is missing,
    instead of the OJS reader's "not an envelope"."""
    text = (
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n"
        "    with: [{type: core, count: 1}]\nattributes: {system: {duration: 60}}\n"
    )
    assert parse_document(text)[0] == "flux"
    [r] = read_text(text, source="j.yaml")
    assert [(e.code, e.path) for e in r.errors] == [("required", "tasks")]


# ---- guard and batch issues locate the envelope like reader issues ---------------------------------


def test_guard_issues_carry_the_list_index() -> None:
    """In a list, a reader error says ``[1].ext_ml_gpu_count``; the upper bound, URI and deny-list guards
    (run after the reader, on the normalized job) must say so too, not ``ext_ml_gpu_count``."""
    text = """[
        {"id": "fine", "type": "t", "ext_ml_gpu_count": 1},
        {"id": "big", "type": "t", "ext_ml_gpu_count": 1000},
        {"id": "uri", "type": "t", "ext_ml_checkpoint_storage_uri": "s3://b/no-slash"},
        {"id": "deny", "type": "t", "ext_ml_node_selector": {"security_zone": "dmz"}},
        {"id": "typo", "type": "t", "ext_ml_gpu_count": "8"}
    ]"""
    rs = read_text(text, source="batch.json")
    assert [(r.id, [(e.code, e.path) for e in r.errors]) for r in rs] == [
        ("fine", []),
        ("big", [("limit", "[1].ext_ml_gpu_count")]),  # 1000 > max_gpus_per_job 512
        ("uri", [("uri", "[2].ext_ml_checkpoint_storage_uri")]),
        ("deny", [("denied", "[3].ext_ml_node_selector.security_zone")]),
        ("typo", [("type", "[4].ext_ml_gpu_count")]),  # a reader error, located the same way
    ]
    assert [r.path for r in rs] == ["[0]", "[1]", "[2]", "[3]", "[4]"]


def test_guard_issues_in_a_workflow_carry_the_step_path() -> None:
    text = (
        '{"workflow_type": "chain", "id": "wf", "steps": '
        '[{"id": "a", "type": "t"}, {"id": "b", "type": "t", "ext_ml_gpu_count": 600}]}'
    )
    rs = read_text(text, source="wf.json")
    assert [(r.id, [(e.code, e.path) for e in r.errors]) for r in rs] == [
        ("a", []),
        ("b", [("limit", "steps[1].ext_ml_gpu_count")]),
    ]


def test_batch_issues_carry_the_list_index() -> None:
    rs = check_batch(read_text('[{"id": "x", "type": "t"}, {"id": "x", "type": "t"}]', source="dup.json"))
    assert [[(e.code, e.path) for e in r.errors] for r in rs] == [
        [("duplicate", "[0].id")],
        [("duplicate", "[1].id")],
    ]
