"""OJS ML extensions v0.1.0 ``ext_mlx_*`` attributes: types, closed lists, hints, split ratios."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.formats.ojs import read
from placer.solver.jobs.model import GpuAffinity, Job, PreemptionPolicy, ReadResult, SpotPreference
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


BAD = [
    ({"ext_mlx_model_framework": "caffe"}, ("enum", "ext_mlx_model_framework")),
    ({"ext_mlx_inference_mode": "offline"}, ("enum", "ext_mlx_inference_mode")),
    ({"ext_mlx_preprocess_input_format": "xlsx"}, ("enum", "ext_mlx_preprocess_input_format")),
    ({"ext_mlx_preprocess_output_format": "xml"}, ("enum", "ext_mlx_preprocess_output_format")),
    ({"ext_mlx_artifact_registry": "dockerhub"}, ("enum", "ext_mlx_artifact_registry")),
    ({"ext_mlx_scheduling_gpu_affinity": "scatter"}, ("enum", "ext_mlx_scheduling_gpu_affinity")),
    ({"ext_mlx_scheduling_preemption_policy": "sometimes"}, ("enum", "ext_mlx_scheduling_preemption_policy")),
    ({"ext_mlx_scheduling_spot_preference": "spot_only"}, ("enum", "ext_mlx_scheduling_spot_preference")),
    ({"ext_mlx_model_name": 3}, ("type", "ext_mlx_model_name")),
    ({"ext_mlx_model_input_schema": "string"}, ("type", "ext_mlx_model_input_schema")),
    ({"ext_mlx_training_hyperparameters": [1]}, ("type", "ext_mlx_training_hyperparameters")),
    ({"ext_mlx_training_epochs": "3"}, ("type", "ext_mlx_training_epochs")),
    ({"ext_mlx_training_epochs": 0}, ("range", "ext_mlx_training_epochs")),
    ({"ext_mlx_inference_batch_size": 0}, ("range", "ext_mlx_inference_batch_size")),
    ({"ext_mlx_inference_timeout_ms": 1.5}, ("type", "ext_mlx_inference_timeout_ms")),
    ({"ext_mlx_training_dataset_uri": 5}, ("type", "ext_mlx_training_dataset_uri")),
    ({"ext_mlx_eval_metrics": "accuracy"}, ("type", "ext_mlx_eval_metrics")),
    ({"ext_mlx_eval_metrics": ["f1", 2]}, ("type", "ext_mlx_eval_metrics[1]")),
    ({"ext_mlx_eval_thresholds": {"accuracy": 0.9}}, ("type", "ext_mlx_eval_thresholds.accuracy")),
    ({"ext_mlx_eval_thresholds": {"accuracy": {}}}, ("required", "ext_mlx_eval_thresholds.accuracy")),
    ({"ext_mlx_eval_thresholds": {"f1": {"min": "0.8"}}}, ("type", "ext_mlx_eval_thresholds.f1.min")),
    ({"ext_mlx_eval_thresholds": {"f1": {"min": 0.9, "max": 0.1}}}, ("range", "ext_mlx_eval_thresholds.f1")),
    (
        {"ext_mlx_preprocess_transformations": [{"config": {}}]},
        ("required", "ext_mlx_preprocess_transformations[0].type"),
    ),
    ({"ext_mlx_preprocess_transformations": ["tokenize"]}, ("type", "ext_mlx_preprocess_transformations[0]")),
    (
        {"ext_mlx_preprocess_split_ratios": {"train": 0.8, "test": 0.1}},
        ("range", "ext_mlx_preprocess_split_ratios"),
    ),
    (
        {"ext_mlx_preprocess_split_ratios": {"train": 1.2, "test": -0.2}},
        ("range", "ext_mlx_preprocess_split_ratios.train"),
    ),
    (
        {"ext_mlx_preprocess_split_ratios": {"train": "0.8"}},
        ("type", "ext_mlx_preprocess_split_ratios.train"),
    ),
    ({"ext_mlx_preprocess_split_ratios": {}}, ("range", "ext_mlx_preprocess_split_ratios")),
]


@pytest.mark.parametrize(("env", "expected"), BAD, ids=[next(iter(e)) for e, _ in BAD])
def test_bad_mlx_value(env: dict[str, Any], expected: tuple[str, str]) -> None:
    assert expected in codes(env)


def test_split_ratios_summing_to_one_within_tolerance() -> None:
    ratios = {"train": 0.7, "validation": 0.2, "test": 0.1}  # 0.7 + 0.2 + 0.1 is not exactly 1.0 in floats
    assert (
        ok({"ext_mlx_preprocess_split_ratios": ratios}).metadata["ext_mlx_preprocess_split_ratios"] == ratios
    )
    assert codes({"ext_mlx_preprocess_split_ratios": {"train": 0.5, "test": 0.5 + 2e-6}}) == [
        ("range", "ext_mlx_preprocess_split_ratios")
    ]


def test_scheduling_hints_map_to_placement_and_preemption() -> None:
    job = ok(
        {
            "ext_mlx_scheduling_gpu_affinity": "dedicated",
            "ext_mlx_scheduling_preemption_policy": "save_and_retry",
            "ext_mlx_scheduling_spot_preference": "on_demand_only",
            "ext_mlx_scheduling_data_locality": "s3://datasets/corpus/",
        }
    )
    assert job.placement.gpu_affinity is GpuAffinity.DEDICATED and job.placement.exclusive_nodes
    assert job.preemption.policy is PreemptionPolicy.SAVE_AND_RETRY
    assert job.placement.spot_preference is SpotPreference.ON_DEMAND_ONLY
    assert job.placement.data_locality == "s3://datasets/corpus/"
    pack = ok({"ext_mlx_scheduling_gpu_affinity": "pack"})
    assert pack.placement.gpu_affinity is GpuAffinity.PACK and not pack.placement.exclusive_nodes


def test_preemption_policy_contradicting_preemptible_is_a_conflict() -> None:
    env = {"ext_ml_preemptible": True, "ext_mlx_scheduling_preemption_policy": "never"}
    assert codes(env) == [("conflict", "ext_mlx_scheduling_preemption_policy")]
    env = {"ext_ml_preemptible": False, "ext_mlx_scheduling_preemption_policy": "immediate"}
    assert codes(env) == [("conflict", "ext_mlx_scheduling_preemption_policy")]
    assert not ok(
        {"ext_ml_priority_class": "spot", "ext_mlx_scheduling_preemption_policy": "never"}
    ).is_preemptible


def test_preemption_policy_sets_the_eviction_directives() -> None:
    # save_and_retry: save in the grace period (checkpoint on), grace stays the OJS ML §8.2 default of 30 s
    saved = ok({"ext_ml_priority_class": "spot", "ext_mlx_scheduling_preemption_policy": "save_and_retry"})
    assert (saved.preemption.checkpoint_on_preempt, saved.preemption.grace_period_s) == (True, 30)
    # immediate: no grace, no save
    now = ok({"ext_ml_priority_class": "spot", "ext_mlx_scheduling_preemption_policy": "immediate"})
    assert (now.preemption.checkpoint_on_preempt, now.preemption.grace_period_s) == (False, 0)
    # an explicit grace period is the job's own and wins
    explicit = ok(
        {"ext_mlx_scheduling_preemption_policy": "immediate", "ext_ml_preemption_grace_period_s": 10}
    )
    assert explicit.preemption.grace_period_s == 10


@pytest.mark.parametrize(
    ("policy", "checkpoint"),
    [("save_and_retry", False), ("immediate", True)],
)
def test_preemption_policy_contradicting_checkpoint_is_a_conflict(policy: str, checkpoint: bool) -> None:
    env = {"ext_mlx_scheduling_preemption_policy": policy, "ext_ml_checkpoint_on_preempt": checkpoint}
    assert codes(env) == [("conflict", "ext_mlx_scheduling_preemption_policy")]


def test_hyperparameters_preserved_exactly() -> None:
    hp = {"learning_rate": 2e-5, "batch_size": 32, "nested": {"a": [1, "x", None]}, "weird": "1e-3"}
    assert ok({"ext_mlx_training_hyperparameters": hp}).metadata["ext_mlx_training_hyperparameters"] == hp


def test_informational_attributes_go_to_metadata_by_name() -> None:
    env = {
        "ext_mlx_model_name": "m",
        "ext_mlx_experiment_id": "e",
        "ext_mlx_inference_mode": "batch",
        "ext_mlx_eval_metrics": ["accuracy"],
        "ext_mlx_inference_model_uri": "s3://models/m/",
    }
    assert ok(env).metadata == env


def test_unknown_mlx_attribute_is_kept() -> None:
    assert ok({"ext_mlx_future_hint": 1}).unknown == {"ext_mlx_future_hint": 1}
