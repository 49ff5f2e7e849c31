"""OJS workflows (§12): chain, group, batch, nesting, ids, no inheritance, workflow metadata."""

from __future__ import annotations

from typing import Any

from placer.solver.jobs.formats.ojs import read
from placer.solver.jobs.load import check_batch
from placer.solver.jobs.model import DependencyCondition, ReadResult
from placer.solver.jobs.options import ReadOptions


def run(doc: Any) -> list[ReadResult]:
    return read(doc, source="wf.json", options=ReadOptions())


def deps(r: ReadResult) -> list[tuple[str, DependencyCondition]]:
    assert r.job is not None
    return [(d.job, d.condition) for d in r.job.dependencies]


def test_chain_links_each_step_to_the_previous_with_success() -> None:
    rs = run(
        {
            "workflow_type": "chain",
            "id": "c",
            "steps": [{"type": "a"}, {"id": "own", "type": "b"}, {"type": "c"}],
        }
    )
    assert [r.id for r in rs] == ["c.step-0", "own", "c.step-2"]
    assert [deps(r) for r in rs] == [
        [],
        [("c.step-0", DependencyCondition.SUCCESS)],
        [("own", DependencyCondition.SUCCESS)],
    ]
    assert all(r.job.workflow_id == "c" for r in rs)


def test_group_jobs_are_independent() -> None:
    rs = run({"workflow_type": "group", "id": "g", "jobs": [{"type": "a"}, {"type": "b"}]})
    assert [(r.id, deps(r)) for r in rs] == [("g.step-0", []), ("g.step-1", [])]


def test_batch_callbacks_wait_for_all_jobs() -> None:
    doc = {
        "workflow_type": "batch",
        "id": "b",
        "jobs": [{"type": "a"}, {"type": "b"}],
        "callbacks": {"on_success": {"type": "notify"}, "on_complete": {"type": "report"}},
    }
    rs = run(doc)
    by_id = {r.id: r for r in rs}
    assert set(by_id) == {"b.step-0", "b.step-1", "b.on_complete", "b.on_success"}
    assert deps(by_id["b.on_success"]) == [
        ("b.step-0", DependencyCondition.SUCCESS),
        ("b.step-1", DependencyCondition.SUCCESS),
    ]
    assert deps(by_id["b.on_complete"]) == [
        ("b.step-0", DependencyCondition.EXIT),
        ("b.step-1", DependencyCondition.EXIT),
    ]
    assert [(e.code, e.path) for e in run({**doc, "callbacks": {"on_retry": {}}})[0].errors] == [
        ("enum", "callbacks.on_retry")
    ]


def test_nested_group_inside_chain() -> None:
    doc = {
        "workflow_type": "chain",
        "id": "c",
        "steps": [
            {"type": "prep"},
            {"workflow_type": "group", "jobs": [{"type": "x"}, {"type": "y"}]},
            {"type": "final"},
        ],
    }
    rs = run(doc)
    by_id = {r.id: r for r in rs}
    assert deps(by_id["c.step-1.step-0"]) == [("c.step-0", DependencyCondition.SUCCESS)]
    assert deps(by_id["c.step-1.step-1"]) == [("c.step-0", DependencyCondition.SUCCESS)]
    assert deps(by_id["c.step-2"]) == [
        ("c.step-1.step-0", DependencyCondition.SUCCESS),
        ("c.step-1.step-1", DependencyCondition.SUCCESS),
    ]


def test_steps_inherit_no_resources() -> None:
    rs = run(
        {
            "workflow_type": "chain",
            "id": "c",
            "steps": [
                {"type": "train", "ext_ml_gpu_count": 8, "ext_ml_gpu_type": "nvidia-h100"},
                {"type": "post"},
            ],
        }
    )
    assert rs[0].job.total_gpus == 8
    assert rs[1].job.total_gpus == 0 and rs[1].job.tasks[0].gpu is None


def test_workflow_meta_propagates_as_metadata_only() -> None:
    meta = {"experiment_id": "exp-1", "resources": {"gpu": {"count": 8}}}
    rs = run(
        {
            "workflow_type": "group",
            "id": "g",
            "name": "n",
            "meta": meta,
            "jobs": [{"type": "a"}],
            "owner": "x",
        }
    )
    job = rs[0].job
    assert job.metadata["workflow_meta"] == meta and job.metadata["workflow_name"] == "n"
    assert job.total_gpus == 0  # workflow meta is never parsed as resources
    assert job.unknown["workflow"] == {"owner": "x"}


def test_bad_step_fails_alone_with_its_path() -> None:
    rs = run(
        {
            "workflow_type": "chain",
            "id": "c",
            "steps": [{"type": "a"}, {"type": "b", "ext_ml_gpu_count": "2"}],
        }
    )
    assert [r.ok for r in rs] == [True, False]
    assert [(e.code, e.path) for e in rs[1].errors] == [("type", "steps[1].ext_ml_gpu_count")]


def test_bad_workflows() -> None:
    assert [(e.code, e.path) for e in run({"workflow_type": "dag", "steps": []})[0].errors] == [
        ("enum", "workflow_type")
    ]
    assert [(e.code, e.path) for e in run({"workflow_type": "chain", "steps": []})[0].errors] == [
        ("range", "steps")
    ]
    assert [(e.code, e.path) for e in run({"workflow_type": "group"})[0].errors] == [("required", "jobs")]
    assert [(e.code, e.path) for e in run({"workflow_type": "chain", "steps": {}})[0].errors] == [
        ("type", "steps")
    ]
    rs = run({"workflow_type": "chain", "steps": [5]})
    assert [(e.code, e.path) for e in rs[0].errors] == [("type", "steps[0]")]


def test_workflow_without_id_uses_source_and_lists_mix_workflows_and_envelopes() -> None:
    rs = run([{"type": "solo"}, {"workflow_type": "group", "jobs": [{"type": "a"}]}])
    assert [r.id for r in rs] == ["wf.json#0", "wf.json#1.step-0"]


def test_duplicate_step_ids_are_caught_by_the_batch_check() -> None:
    rs = check_batch(
        run({"workflow_type": "group", "jobs": [{"id": "x", "type": "a"}, {"id": "x", "type": "b"}]})
    )
    assert [[e.code for e in r.errors] for r in rs] == [["duplicate"], ["duplicate"]]
