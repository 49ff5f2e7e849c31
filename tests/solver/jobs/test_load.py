"""The loading pipeline: format detection, batch checks (duplicate ids, dependency cycles), file errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.jobs.detect import parse_document
from solver.jobs.load import check_batch, read_file, read_text
from solver.jobs.model import Dependency, Job, ReadResult


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
