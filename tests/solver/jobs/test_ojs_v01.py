"""OJS ML resources v0.1.0 (``meta`` form), mixing with v0.3.0, and the §2.3 worker-label parser."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.errors import JobValidationError
from placer.solver.jobs.formats.ojs import read
from placer.solver.jobs.formats.ojs_v01 import parse_worker_labels
from placer.solver.jobs.model import AffinityOperator, Job, ReadResult
from placer.solver.jobs.options import ReadOptions


def read1(env: dict[str, Any]) -> ReadResult:
    [r] = read({"id": "j", "type": "ml.train", **env}, source="t", options=ReadOptions())
    return r


def ok(env: dict[str, Any]) -> Job:
    r = read1(env)
    assert r.ok, r.errors
    assert r.job is not None
    return r.job


def codes(env: dict[str, Any]) -> list[tuple[str, str]]:
    r = read1(env)
    assert not r.ok
    return [(i.code, i.path) for i in r.errors]


def test_meta_resources_map_to_the_job() -> None:
    meta = {
        "resources": {
            "gpu": {"count": 2, "type": "nvidia-a100", "memory_gb": 40},
            "cpu": {"cores": 8},
            "memory_gb": 64,
            "storage_gb": 200,
        }
    }
    job = ok({"meta": meta})
    t = job.tasks[0]
    assert (job.total_gpus, t.gpu.types, t.gpu.min_memory_gb, t.cpu_cores, t.memory_gb, t.storage_gb) == (
        2,
        ["nvidia-a100"],
        40,
        8,
        64,
        200,
    )


def test_meta_resource_values_are_checked_at_their_v01_path() -> None:
    assert codes({"meta": {"resources": {"gpu": {"count": "2"}}}}) == [("type", "meta.resources.gpu.count")]
    assert codes({"meta": {"resources": {"gpu": {"type": "A100"}}}}) == [("enum", "meta.resources.gpu.type")]
    assert codes({"meta": {"resources": {"memory_gb": "64Gi"}}}) == [("type", "meta.resources.memory_gb")]
    assert codes({"meta": {"resources": {"gpu": 2}}}) == [("type", "meta.resources.gpu")]
    assert codes({"meta": {"resources": []}}) == [("type", "meta.resources")]


def test_gpu_type_without_count_means_one_gpu() -> None:
    assert ok({"meta": {"resources": {"gpu": {"type": "nvidia-t4"}}}}).total_gpus == 1


def test_meta_affinity_accepts_all_eight_operators() -> None:
    rules = [{"key": "cc", "operator": "Gte", "values": ["8.0"]}, {"key": "zone", "operator": "Exists"}]
    job = ok({"meta": {"affinity": {"required": rules}}})
    assert [r.operator for r in job.placement.required] == [AffinityOperator.GTE, AffinityOperator.EXISTS]
    bad = {"required": [{"key": "k", "operator": "Approx", "values": ["x"]}]}
    assert codes({"meta": {"affinity": bad}}) == [("enum", "meta.affinity.required[0].operator")]


def test_meta_preemption_and_checkpoint() -> None:
    job = ok(
        {
            "meta": {
                "preemption": {"preemptible": True, "grace_period_s": 60, "checkpoint_on_preempt": True},
                "checkpoint": {
                    "enabled": True,
                    "interval_s": 120,
                    "storage_uri": "gs://b/c/",
                    "max_checkpoints": 7,
                },
            }
        }
    )
    p, c = job.preemption, job.checkpointing
    assert (p.preemptible, p.grace_period_s, p.checkpoint_on_preempt) == (True, 60, True)
    assert (c.enabled, c.interval_s, c.storage_uri, c.max_count) == (True, 120, "gs://b/c/", 7)
    assert codes({"meta": {"checkpoint": {"max_checkpoints": 0}}}) == [
        ("range", "meta.checkpoint.max_checkpoints")
    ]


def test_both_forms_agreeing_is_fine_disagreeing_is_a_conflict() -> None:
    same = ok({"ext_ml_gpu_count": 4, "meta": {"resources": {"gpu": {"count": 4}}}})
    assert same.total_gpus == 4
    assert codes({"ext_ml_gpu_count": 4, "meta": {"resources": {"gpu": {"count": 2}}}}) == [
        ("conflict", "meta.resources.gpu.count")
    ]
    assert codes({"ext_ml_preemptible": False, "meta": {"preemption": {"preemptible": True}}}) == [
        ("conflict", "meta.preemption.preemptible")
    ]
    aff = {"required": [{"key": "a", "operator": "Exists"}]}
    assert codes({"ext_ml_affinity": aff, "meta": {"affinity": {"required": []}}}) == [
        ("conflict", "meta.affinity")
    ]


def test_mixed_forms_fill_each_other() -> None:
    job = ok(
        {"ext_ml_gpu_type": "nvidia-h100", "meta": {"resources": {"gpu": {"count": 8}, "memory_gb": 512}}}
    )
    assert (job.total_gpus, job.tasks[0].gpu.types, job.tasks[0].memory_gb) == (8, ["nvidia-h100"], 512)


def test_unknown_keys_in_meta_resources_are_kept() -> None:
    job = ok({"meta": {"resources": {"gpu": {"count": 1, "vendor": "nvidia"}, "fpga": 1}}})
    assert job.unknown["meta.resources.gpu.vendor"] == "nvidia"
    assert job.unknown["meta.resources.fpga"] == 1


# ---- §2.3 worker labels ---------------------------------------------------------------------------


def test_worker_labels_from_the_spec_example() -> None:
    labels = [
        "gpu:nvidia-a100",
        "gpu_count:4",
        "gpu_memory_gb:80",
        "cpu_cores:32",
        "memory_gb:256",
        "region:us-east-1",
        "spot:true",
    ]
    assert parse_worker_labels(labels) == {
        "gpu": "nvidia-a100",
        "gpu_count": "4",
        "gpu_memory_gb": "80",
        "cpu_cores": "32",
        "memory_gb": "256",
        "region": "us-east-1",
        "spot": "true",
    }


def test_worker_label_value_may_contain_colons() -> None:
    assert parse_worker_labels(["zone:us:1a"]) == {"zone": "us:1a"}


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (["gpu_count"], [("malformed", "labels[0]")]),
        (["ok:1", ":4"], [("malformed", "labels[1]")]),
        (["a:"], [("malformed", "labels[0]")]),
        ([4], [("type", "labels[0]")]),
        (["a:1", "a:2"], [("duplicate", "labels[1]")]),
        ("gpu:1", [("type", "labels")]),
    ],
)
def test_bad_worker_labels(labels: Any, expected: list[tuple[str, str]]) -> None:
    with pytest.raises(JobValidationError) as e:
        parse_worker_labels(labels)
    assert [(i.code, i.path) for i in e.value.issues] == expected
