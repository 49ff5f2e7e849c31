"""OJS ML resources §10 queue configuration: loading, ``ml_defaults`` (§10.1), ``ml_limits`` (§10.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from placer.solver.jobs.errors import JobValidationError
from placer.solver.jobs.load import read_file, read_object
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_config_file, load_queue_configs
from tests.conftest import FIXTURES
from tests.solver.jobs.test_ojs_spec_examples import V03, spec_block


def test_spec_10_1_and_10_2_blocks_load(specs_dir: Path) -> None:
    defaults = load_queue_configs(spec_block(specs_dir, V03, "10.1"))["gpu-inference"].config.ml_defaults
    assert defaults == {
        "ext_ml_accelerator": "gpu",
        "ext_ml_gpu_count": 1,
        "ext_ml_timeout_seconds": 60,
        "ext_ml_priority_class": "on-demand",
    }
    limits = load_queue_configs(spec_block(specs_dir, V03, "10.2"))["gpu-inference"].config.ml_limits
    assert (
        limits.max_gpu_count,
        limits.max_gpu_memory_gb,
        limits.max_memory_gb,
        limits.max_timeout_seconds,
    ) == (
        4,
        80,
        256,
        3600,
    )
    assert limits.allowed_gpu_types == ["nvidia-a100", "nvidia-h100", "nvidia-l4"]
    assert limits.allowed_priority_classes == ["on-demand", "reserved"]
    assert (limits.max_concurrent_gpu_jobs, limits.max_total_gpus) == (100, 64)


def test_list_json_text_and_yaml_file() -> None:
    text = '[{"queue": "a", "config": {}}, {"queue": "b"}]'
    assert sorted(load_queue_configs(text, source="q.json")) == ["a", "b"]
    qs = load_queue_config_file(FIXTURES / "ojs" / "queues.yaml")
    assert sorted(qs) == ["cpu-workers", "gpu-inference"]
    assert qs["gpu-inference"].config.ml_limits.max_total_gpus == 64


BAD: list[tuple[Any, tuple[str, str]]] = [
    (
        {"queue": "q", "config": {"ml_limits": {"max_gpu_count": "4"}}},
        ("type", "config.ml_limits.max_gpu_count"),
    ),
    (
        {"queue": "q", "config": {"ml_limits": {"max_gpu_count": -1}}},
        ("range", "config.ml_limits.max_gpu_count"),
    ),
    ({"queue": "q", "config": {"ml_limits": {"max_gpus": 4}}}, ("malformed", "config.ml_limits.max_gpus")),
    (
        {"queue": "q", "config": {"ml_limits": {"allowed_gpu_types": ["A100"]}}},
        ("enum", "config.ml_limits.allowed_gpu_types[0]"),
    ),
    (
        {"queue": "q", "config": {"ml_limits": {"allowed_priority_classes": ["gold"]}}},
        ("enum", "config.ml_limits.allowed_priority_classes[0]"),
    ),
    (
        {"queue": "q", "config": {"ml_defaults": {"ext_ml_gpu_count": "1"}}},
        ("type", "config.ml_defaults.ext_ml_gpu_count"),
    ),
    ({"queue": "q", "config": {"ml_defaults": {"gpu_count": 1}}}, ("enum", "config.ml_defaults.gpu_count")),
    (
        {"queue": "q", "config": {"ml_defaults": {"ext_ml_gpu_count": 8}, "ml_limits": {"max_gpu_count": 4}}},
        ("conflict", "config.ml_defaults.ext_ml_gpu_count"),
    ),
    (
        {
            "queue": "q",
            "config": {
                "ml_defaults": {"ext_ml_priority_class": "spot"},
                "ml_limits": {"allowed_priority_classes": ["reserved"]},
            },
        },
        ("conflict", "config.ml_defaults.ext_ml_priority_class"),
    ),
    ({"config": {}}, ("required", "queue")),
    ({"queue": "", "config": {}}, ("range", "queue")),
    ({"queue": "q", "config": [1]}, ("type", "config")),
    ([{"queue": "q"}, {"queue": "q"}], ("duplicate", "[1].queue")),
    (42, ("type", "<config>")),
]


@pytest.mark.parametrize(("config", "expected"), BAD)
def test_bad_queue_config_raises_with_code_and_path(config: Any, expected: tuple[str, str]) -> None:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(config)
    assert expected in [(i.code, i.path) for i in e.value.issues]


def test_malformed_text_raises() -> None:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs("{not json", source="q.json")
    assert e.value.issues[0].code == "malformed"


# ---- §10.1 defaults ---------------------------------------------------------------------------------


def options() -> ReadOptions:
    return ReadOptions(queues=load_queue_config_file(FIXTURES / "ojs" / "queues.yaml"))


def test_defaults_fill_only_unset_attributes_of_the_jobs_queue() -> None:
    [r] = read_object(
        {"id": "j", "type": "t", "queue": "gpu-inference", "ext_ml_gpu_count": 2}, options=options()
    )
    job = r.job
    assert r.ok and job is not None
    assert job.total_gpus == 2  # the producer's value stays
    assert job.duration_s == 60 and job.accelerator.value == "gpu"  # defaults fill the rest
    assert job.metadata["ml_defaults_applied"] == [
        "ext_ml_accelerator",
        "ext_ml_timeout_seconds",
        "ext_ml_priority_class",
    ]
    [other] = read_object({"id": "k", "type": "t", "queue": "elsewhere"}, options=options())
    assert other.job.total_gpus == 0 and other.job.duration_s is None


def test_defaults_do_not_override_v01_meta_values() -> None:
    env = {"id": "j", "type": "t", "queue": "gpu-inference", "meta": {"resources": {"gpu": {"count": 3}}}}
    [r] = read_object(env, options=options())
    assert r.ok and r.job.total_gpus == 3


# ---- §10.2 limits and §10.3 budgets through the whole pipeline ------------------------------------


def test_fixture_batch_with_limits() -> None:
    rs = read_file(FIXTURES / "ojs" / "batch.json", options=options())
    assert [(r.id, r.ok) for r in rs] == [("inf-1", True), ("inf-2", False), ("prep-1", True)]
    # the limit error locates the envelope in the list, like reader errors do
    assert [(e.code, e.path) for e in rs[1].errors] == [("limit", "[1].ext_ml_gpu_count")]
    assert rs[0].job.total_gpus == 1 and rs[2].job.total_gpus == 0
