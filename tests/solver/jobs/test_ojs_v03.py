"""OJS ML resources v0.3.0 rules, each with an envelope that passes and one that fails (code and path)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.errors import ISSUE_CODES
from placer.solver.jobs.formats.ojs import read
from placer.solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    Interconnect,
    Job,
    PriorityClass,
    ReadResult,
)
from placer.solver.jobs.options import ReadOptions


def read1(env: Any) -> ReadResult:
    rs = read(env, source="t", options=ReadOptions())
    assert len(rs) == 1
    assert all(i.code in ISSUE_CODES for i in [*rs[0].errors, *rs[0].warnings])
    return rs[0]


def ok(env: dict[str, Any]) -> Job:
    r = read1({"id": "j", "type": "ml.train", **env})
    assert r.ok, r.errors
    assert r.job is not None
    return r.job


def fails(env: dict[str, Any]) -> list[tuple[str, str]]:
    r = read1({"id": "j", "type": "ml.train", **env})
    assert not r.ok and r.job is None
    return [(i.code, i.path) for i in r.errors]


# ---- strict types and closed lists (§3-§9 tables) -------------------------------------------------

BAD_VALUES = [
    ({"ext_ml_gpu_count": "8"}, ("type", "ext_ml_gpu_count")),
    ({"ext_ml_gpu_count": True}, ("type", "ext_ml_gpu_count")),
    ({"ext_ml_gpu_count": -1}, ("range", "ext_ml_gpu_count")),
    ({"ext_ml_memory_gb": "64Gi"}, ("type", "ext_ml_memory_gb")),
    ({"ext_ml_gpu_memory_gb": "80GB"}, ("type", "ext_ml_gpu_memory_gb")),
    ({"ext_ml_cpu_cores": 2.5}, ("type", "ext_ml_cpu_cores")),
    ({"ext_ml_shm_size_gb": []}, ("type", "ext_ml_shm_size_gb")),
    ({"ext_ml_storage_gb": -5}, ("range", "ext_ml_storage_gb")),
    ({"ext_ml_accelerator": "quantum"}, ("enum", "ext_ml_accelerator")),
    ({"ext_ml_gpu_count": 2, "ext_ml_gpu_interconnect": "infiniband"}, ("enum", "ext_ml_gpu_interconnect")),
    ({"ext_ml_priority_class": "premium"}, ("enum", "ext_ml_priority_class")),
    ({"ext_ml_precision": "fp64"}, ("enum", "ext_ml_precision")),
    ({"ext_ml_distributed_strategy": "horovod"}, ("enum", "ext_ml_distributed_strategy")),
    ({"ext_ml_model_format": "pickle"}, ("enum", "ext_ml_model_format")),
    ({"ext_ml_runtime": "jax"}, ("enum", "ext_ml_runtime")),
    ({"ext_ml_model_provider": "meta"}, ("enum", "ext_ml_model_provider")),
    ({"ext_ml_model_registry": "dockerhub"}, ("enum", "ext_ml_model_registry")),
    ({"ext_ml_model_checksum": "e3b0c442"}, ("range", "ext_ml_model_checksum")),
    ({"ext_ml_gpu_type": "A100"}, ("enum", "ext_ml_gpu_type")),
    ({"ext_ml_gpu_type": "a100"}, ("enum", "ext_ml_gpu_type")),
    ({"ext_ml_gpu_compute_capability": 8.0}, ("type", "ext_ml_gpu_compute_capability")),
    ({"ext_ml_gpu_compute_capability": "8"}, ("range", "ext_ml_gpu_compute_capability")),
    ({"ext_ml_tpu_type": "v3"}, ("enum", "ext_ml_tpu_type")),
    ({"ext_ml_tpu_topology": "4x4x"}, ("range", "ext_ml_tpu_topology")),
    ({"ext_ml_tpu_topology": "0x4"}, ("range", "ext_ml_tpu_topology")),
    ({"ext_ml_tpu_chip_count": 0}, ("range", "ext_ml_tpu_chip_count")),
    ({"ext_ml_timeout_seconds": "3600"}, ("type", "ext_ml_timeout_seconds")),
    ({"ext_ml_max_tokens": 0}, ("range", "ext_ml_max_tokens")),
    ({"ext_ml_max_batch_size": "32"}, ("type", "ext_ml_max_batch_size")),
    ({"ext_ml_preemptible": "false"}, ("type", "ext_ml_preemptible")),
    ({"ext_ml_preemption_grace_period_s": "60"}, ("type", "ext_ml_preemption_grace_period_s")),
    ({"ext_ml_checkpoint_on_preempt": 1}, ("type", "ext_ml_checkpoint_on_preempt")),
    ({"ext_ml_checkpoint_enabled": "yes"}, ("type", "ext_ml_checkpoint_enabled")),
    ({"ext_ml_checkpoint_interval_s": 0}, ("range", "ext_ml_checkpoint_interval_s")),
    ({"ext_ml_checkpoint_max_count": 0}, ("range", "ext_ml_checkpoint_max_count")),
    ({"ext_ml_checkpoint_storage_uri": 5}, ("type", "ext_ml_checkpoint_storage_uri")),
    ({"ext_ml_reservation_id": ""}, ("range", "ext_ml_reservation_id")),
    ({"ext_ml_escalation_target_class": "premium"}, ("enum", "ext_ml_escalation_target_class")),
    ({"ext_ml_escalation_after_s": -1}, ("range", "ext_ml_escalation_after_s")),
    ({"ext_ml_priority_escalation": "true"}, ("type", "ext_ml_priority_escalation")),
    ({"ext_ml_model_id": 7}, ("type", "ext_ml_model_id")),
    ({"ext_ml_node_selector": ["a"]}, ("type", "ext_ml_node_selector")),
    ({"ext_ml_node_selector": {"zone": 1}}, ("type", "ext_ml_node_selector.zone")),
    ({"ext_ml_affinity": []}, ("type", "ext_ml_affinity")),
    ({"priority": "high"}, ("type", "priority")),
    ({"args": {"a": 1}}, ("type", "args")),
    ({"meta": []}, ("type", "meta")),
    ({"queue": 3}, ("type", "queue")),
]


@pytest.mark.parametrize(("env", "expected"), BAD_VALUES, ids=[f"{k}" for k, _ in BAD_VALUES])
def test_bad_value_is_refused_with_code_and_path(env: dict[str, Any], expected: tuple[str, str]) -> None:
    assert expected in fails(env)


def test_well_typed_envelope_is_accepted() -> None:
    job = ok(
        {
            "ext_ml_gpu_count": 4.0,  # JSON has one number type: 4.0 is the integer 4
            "ext_ml_memory_gb": 64.5,
            "ext_ml_cpu_cores": 8,
            "ext_ml_model_checksum": "sha256:e3b0c44298fc",
            "ext_ml_priority_class": "spot",
            "priority": 7,
        }
    )
    assert (job.total_gpus, job.tasks[0].memory_gb, job.tasks[0].cpu_cores, job.priority) == (4, 64.5, 8, 7)
    assert job.model.checksum == "sha256:e3b0c44298fc" and job.priority_class is PriorityClass.SPOT


# ---- §3.1 accelerator inference -----------------------------------------------------------------


def test_accelerator_inferred_from_gpu_and_tpu_attributes() -> None:
    assert ok({"ext_ml_gpu_type": "nvidia-l4"}).accelerator is Accelerator.GPU
    assert ok({"ext_ml_gpu_count": 2}).accelerator is Accelerator.GPU
    assert ok({"ext_ml_tpu_type": "v5p"}).accelerator is Accelerator.TPU
    assert ok({"ext_ml_cpu_cores": 2}).accelerator is Accelerator.CPU


def test_accelerator_contradicting_attributes_is_a_conflict() -> None:
    assert ("conflict", "ext_ml_gpu_type") in fails(
        {"ext_ml_accelerator": "cpu", "ext_ml_gpu_type": "nvidia-t4"}
    )
    assert ("conflict", "ext_ml_tpu_type") in fails({"ext_ml_accelerator": "gpu", "ext_ml_tpu_type": "v4"})
    assert ("conflict", "ext_ml_tpu_type") in fails({"ext_ml_gpu_count": 2, "ext_ml_tpu_type": "v4"})
    assert ("conflict", "ext_ml_gpu_count") in fails({"ext_ml_accelerator": "gpu", "ext_ml_gpu_count": 0})


def test_fpga_accelerator_is_kept() -> None:
    assert ok({"ext_ml_accelerator": "fpga"}).accelerator is Accelerator.FPGA


# ---- §3.2 GPU rules ------------------------------------------------------------------------------


def test_gpu_count_defaults_to_one_when_any_gpu_attribute_is_set() -> None:
    assert ok({"ext_ml_gpu_memory_gb": 24}).total_gpus == 1
    assert ok({"ext_ml_accelerator": "gpu"}).total_gpus == 1
    assert ok({"ext_ml_gpu_compute_capability": "8.0"}).tasks[0].gpu.count == 1


def test_gpu_count_zero_with_other_gpu_attributes_is_rejected() -> None:
    for other in (
        {"ext_ml_gpu_type": "nvidia-a100"},
        {"ext_ml_gpu_memory_gb": 40},
        {"ext_ml_gpu_compute_capability": "8.0"},
    ):
        assert fails({"ext_ml_gpu_count": 0, **other}) == [("conflict", "ext_ml_gpu_count")]
    job = ok({"ext_ml_gpu_count": 0})
    assert job.accelerator is Accelerator.CPU and job.total_gpus == 0


def test_gpu_type_well_known_or_vendor_model_pattern() -> None:
    assert ok({"ext_ml_gpu_type": "amd-mi300x"}).tasks[0].gpu.types == ["amd-mi300x"]
    assert ok({"ext_ml_gpu_type": "intel-gaudi3"}).tasks[0].gpu.types == ["intel-gaudi3"]
    assert fails({"ext_ml_gpu_type": "NVIDIA-H100"}) == [("enum", "ext_ml_gpu_type")]


def test_interconnect_ignored_for_one_gpu_and_kept_for_several() -> None:
    r = read1({"id": "j", "type": "t", "ext_ml_gpu_count": 1, "ext_ml_gpu_interconnect": "nvlink"})
    assert r.ok and r.job.tasks[0].gpu.interconnect is Interconnect.ANY
    assert [(w.code, w.path) for w in r.warnings] == [("conflict", "ext_ml_gpu_interconnect")]
    assert ok({"ext_ml_gpu_count": 2, "ext_ml_gpu_interconnect": "nvlink"}).tasks[0].gpu.interconnect is (
        Interconnect.NVLINK
    )


# ---- §6 compute capability from precision ----------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "cc"),
    [("fp32", "7.0"), ("fp16", "7.0"), ("bf16", "8.0"), ("fp8", "8.9"), ("int8", "7.5"), ("int4", "7.5")],
)
def test_min_compute_capability_inferred_from_precision(precision: str, cc: str) -> None:
    job = ok({"ext_ml_gpu_count": 1, "ext_ml_precision": precision})
    assert job.tasks[0].gpu.min_compute_capability == cc


def test_explicit_compute_capability_below_precision_need_is_a_conflict() -> None:
    # §3.2: a bf16 job MUST set ext_ml_gpu_compute_capability to at least "8.0"
    env = {"ext_ml_gpu_count": 1, "ext_ml_precision": "bf16", "ext_ml_gpu_compute_capability": "7.5"}
    assert fails(env) == [("conflict", "ext_ml_gpu_compute_capability")]
    assert ok({**env, "ext_ml_gpu_compute_capability": "10.0"}).tasks[0].gpu.min_compute_capability == "10.0"


def test_explicit_compute_capability_wins_and_cpu_jobs_get_none() -> None:
    job = ok({"ext_ml_gpu_count": 1, "ext_ml_precision": "bf16", "ext_ml_gpu_compute_capability": "9.0"})
    assert job.tasks[0].gpu.min_compute_capability == "9.0"
    cpu = ok({"ext_ml_accelerator": "cpu", "ext_ml_precision": "bf16"})
    assert cpu.tasks[0].gpu is None and cpu.precision is not None


# ---- §3.3 TPU ---------------------------------------------------------------------------------------


def test_tpu_topology_parsed_and_chip_count_checked() -> None:
    job = ok({"ext_ml_tpu_type": "v5e", "ext_ml_tpu_topology": "2x2x4", "ext_ml_tpu_chip_count": 16})
    assert job.tasks[0].tpu.topology == (2, 2, 4) and job.total_tpu_chips == 16
    assert ok({"ext_ml_tpu_type": "v4", "ext_ml_tpu_topology": "2x4"}).total_tpu_chips == 8
    assert fails({"ext_ml_tpu_topology": "4x4", "ext_ml_tpu_chip_count": 8}) == [
        ("conflict", "ext_ml_tpu_chip_count")
    ]


# ---- §7 affinity, anti-affinity, node selectors ---------------------------------------------------

RULE_FAILS = [
    ({"key": "k", "operator": "Like", "values": ["a"]}, ("enum", "ext_ml_affinity.required[0].operator")),
    ({"operator": "In", "values": ["a"]}, ("required", "ext_ml_affinity.required[0].key")),
    ({"key": "k", "operator": "In"}, ("required", "ext_ml_affinity.required[0].values")),
    ({"key": "k", "operator": "In", "values": []}, ("range", "ext_ml_affinity.required[0].values")),
    ({"key": "k", "operator": "In", "values": [8]}, ("type", "ext_ml_affinity.required[0].values[0]")),
    ({"key": "k", "operator": "Exists", "values": ["a"]}, ("range", "ext_ml_affinity.required[0].values")),
    (
        {"key": "k", "operator": "DoesNotExist", "values": ["a"]},
        ("range", "ext_ml_affinity.required[0].values"),
    ),
    ({"key": "k", "operator": "Gt", "values": ["1", "2"]}, ("range", "ext_ml_affinity.required[0].values")),
    ({"key": "k", "operator": "Lte", "values": []}, ("range", "ext_ml_affinity.required[0].values")),
    ({"key": "k", "operator": "Gte", "values": ["high"]}, ("type", "ext_ml_affinity.required[0].values[0]")),
    ("not-a-rule", ("type", "ext_ml_affinity.required[0]")),
]


@pytest.mark.parametrize(("rule", "expected"), RULE_FAILS)
def test_bad_affinity_rule(rule: Any, expected: tuple[str, str]) -> None:
    assert expected in fails({"ext_ml_affinity": {"required": [rule]}})


@pytest.mark.parametrize("op", ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Gte", "Lt", "Lte"])
def test_all_eight_operators_accepted(op: str) -> None:
    values = {"In": ["a"], "NotIn": ["a"], "Exists": [], "DoesNotExist": []}.get(op, ["8.0"])
    job = ok({"ext_ml_affinity": {"required": [{"key": "k", "operator": op, "values": values}]}})
    assert job.placement.required[0].operator is AffinityOperator(op)


def test_preferred_weights_0_to_100() -> None:
    job = ok(
        {"ext_ml_affinity": {"preferred": [{"key": "r", "operator": "In", "values": ["x"], "weight": 100}]}}
    )
    assert job.placement.preferred[0].weight == 100
    bad = {"preferred": [{"key": "r", "operator": "In", "values": ["x"], "weight": 101}]}
    assert fails({"ext_ml_affinity": bad}) == [("range", "ext_ml_affinity.preferred[0].weight")]
    bad = {"preferred": [{"key": "r", "operator": "In", "values": ["x"], "weight": "80"}]}
    assert fails({"ext_ml_affinity": bad}) == [("type", "ext_ml_affinity.preferred[0].weight")]


def test_anti_affinity_rules_go_to_placement() -> None:
    job = ok(
        {
            "ext_ml_anti_affinity": {
                "required": [{"key": "job_type", "operator": "In", "values": ["ml.train.large"]}]
            }
        }
    )
    assert [(r.key, r.values) for r in job.placement.anti_affinity] == [("job_type", ["ml.train.large"])]
    assert job.labels["job_type"] == "ml.train"  # the label §7.3 rules test on other jobs
    bad = {"required": [{"key": "job_type", "operator": "Near", "values": ["x"]}]}
    assert fails({"ext_ml_anti_affinity": bad}) == [("enum", "ext_ml_anti_affinity.required[0].operator")]


def test_preferred_anti_affinity_is_read_with_its_weights() -> None:
    # §7.3 gives anti-affinity the affinity syntax, so a "preferred" list is valid; both engines weigh it
    # (tests/solver/test_place_beside.py), so it is read without a warning.
    rule = {"key": "job_type", "operator": "In", "values": ["ml.train.large"], "weight": 50}
    r = read1({"id": "j", "type": "ml.train", "ext_ml_anti_affinity": {"preferred": [rule]}})
    assert r.ok and r.job is not None and r.job.placement.anti_affinity_preferred[0].weight == 50
    assert r.warnings == []
    required = read1(
        {"id": "j", "type": "ml.train", "ext_ml_anti_affinity": {"required": [rule | {"weight": None}]}}
    )
    assert not [w for w in required.warnings if w.path.startswith("ext_ml_anti_affinity")]


def test_unknown_keys_inside_affinity_are_kept_not_dropped() -> None:
    job = ok(
        {"ext_ml_affinity": {"required": [{"key": "k", "operator": "Exists", "topologyKey": "zone"}], "x": 1}}
    )
    assert job.unknown["ext_ml_affinity.required[0].topologyKey"] == "zone"
    assert job.unknown["ext_ml_affinity.x"] == 1


def test_node_selector_kept_and_turned_into_in_rules() -> None:
    job = ok({"ext_ml_node_selector": {"gpu_type": "nvidia-a100", "region": "us-east-1"}})
    assert job.placement.node_selector == {"gpu_type": "nvidia-a100", "region": "us-east-1"}
    assert [(r.key, r.operator, r.values) for r in job.placement.required] == [
        ("gpu_type", AffinityOperator.IN, ["nvidia-a100"]),
        ("region", AffinityOperator.IN, ["us-east-1"]),
    ]


# ---- §8 priority, preemption, reservation, escalation ----------------------------------------------


def test_preemption_defaults_and_values() -> None:
    job = ok({})
    assert (
        job.preemption.preemptible,
        job.preemption.grace_period_s,
        job.preemption.checkpoint_on_preempt,
    ) == (
        None,
        30,
        False,
    )
    assert job.priority_class is PriorityClass.ON_DEMAND and not job.is_preemptible
    assert ok({"ext_ml_priority_class": "spot"}).is_preemptible


def test_reservation_needs_an_id() -> None:
    job = ok({"ext_ml_reservation_id": "res-42", "ext_ml_reservation_timeout_s": 600})
    assert (job.reservation.id, job.reservation.timeout_s) == ("res-42", 600)
    assert fails({"ext_ml_reservation_timeout_s": 600}) == [("required", "ext_ml_reservation_id")]


def test_escalation_target_must_be_a_priority_class() -> None:
    job = ok({"ext_ml_priority_escalation": True, "ext_ml_escalation_target_class": "on-demand"})
    assert (job.escalation.enabled, job.escalation.after_s, job.escalation.target_class) == (
        True,
        3600,
        PriorityClass.ON_DEMAND,
    )
    assert fails({"ext_ml_escalation_target_class": "gold"}) == [("enum", "ext_ml_escalation_target_class")]


# ---- §9 checkpoints --------------------------------------------------------------------------------


def test_checkpoint_defaults() -> None:
    c = ok({"ext_ml_checkpoint_enabled": True}).checkpointing
    assert (c.enabled, c.interval_s, c.max_count, c.storage_uri) == (True, 300, 3, None)


def test_last_checkpoint_from_meta_is_typed() -> None:
    job = ok(
        {"meta": {"last_checkpoint": {"epoch": 3, "step": 10, "storage_key": "s3://b/k/", "extra": "x"}}}
    )
    assert (job.last_checkpoint.epoch, job.last_checkpoint.step) == (3, 10)
    assert fails({"meta": {"last_checkpoint": {"epoch": "42"}}}) == [("type", "meta.last_checkpoint.epoch")]
    assert fails({"meta": {"last_checkpoint": {"created_at": "yesterday"}}}) == [
        ("type", "meta.last_checkpoint.created_at")
    ]


# ---- §14.3 timeout, core fields ------------------------------------------------------------------


def test_ml_timeout_overrides_standard_timeout() -> None:
    assert ok({"timeout": 10, "ext_ml_timeout_seconds": 60}).duration_s == 60
    assert ok({"timeout": 10}).duration_s == 10
    assert ok({"timeout_ms": 2500}).duration_s == 2.5
    assert ok({}).duration_s is None


def test_submit_time_and_not_before() -> None:
    job = ok({"created_at": "2026-02-19T10:00:00Z", "enqueued_at": "2026-02-19T11:00:00+01:00"})
    assert job.submit_time.isoformat() == "2026-02-19T10:00:00+00:00"  # enqueued_at, in UTC
    assert ok({"created_at": "2026-02-19T10:00:00Z"}).submit_time.hour == 10
    assert ok({"scheduled_at": "2026-03-01T00:00:00Z"}).not_before.month == 3
    assert fails({"enqueued_at": "2026-02-19T11:00:00"}) == [("type", "enqueued_at")]


def test_tenant_project_user_from_meta_rest_of_meta_is_metadata() -> None:
    job = ok({"meta": {"tenant": "acme", "project": "llm", "user": "ada", "experiment": "e1"}})
    assert (job.tenant, job.project, job.user) == ("acme", "llm", "ada")
    assert job.metadata["meta"] == {"experiment": "e1"}
    assert fails({"meta": {"tenant": 5}}) == [("type", "meta.tenant")]


def test_id_synthesized_when_absent_and_type_warning() -> None:
    r = read1({"ext_ml_gpu_count": 1})
    assert r.ok and r.id == "t#0" and r.job.id == "t#0"
    assert [(w.code, w.path) for w in r.warnings] == [("required", "type")]


def test_unknown_attributes_and_envelope_are_kept_untouched() -> None:
    env = {
        "id": "j",
        "type": "x",
        "specversion": "1.0",
        "ext_ml_future_thing": {"a": [1]},
        "ext_other_ext": 1,
    }
    job = ok(env)
    assert job.unknown == {"specversion": "1.0", "ext_ml_future_thing": {"a": [1]}, "ext_other_ext": 1}
    assert job.envelope == {**env}


def test_model_identity() -> None:
    job = ok(
        {
            "ext_ml_model_id": "meta-llama/Llama-3.1-70B-Instruct",
            "ext_ml_model_registry": "huggingface",
            "ext_ml_model_registry_uri": "hf://meta-llama/Llama-3.1-70B-Instruct@main",
        }
    )
    assert (job.model.id, job.model.registry, job.model.registry_uri) == (
        "meta-llama/Llama-3.1-70B-Instruct",
        "huggingface",
        "hf://meta-llama/Llama-3.1-70B-Instruct@main",
    )


def test_not_a_job_documents_are_refused_with_format() -> None:
    for doc in ({"worker_id": "w", "capabilities": {}}, {"hello": "world"}, 42, "text", None):
        rs = read(doc, source="t", options=ReadOptions())
        assert [[e.code for e in r.errors] for r in rs] == [["format"]]


def test_list_of_envelopes_is_a_batch_with_synthesized_ids() -> None:
    rs = read([{"type": "a"}, {"id": "named", "type": "b"}, 7], source="f.json", options=ReadOptions())
    assert [(r.id, r.ok) for r in rs] == [("f.json#0", True), ("named", True), ("f.json#2", False)]
    assert [(e.code, e.path) for e in rs[2].errors] == [("format", "[2]")]
    bad = read([{"ext_ml_gpu_count": "2"}], source="f", options=ReadOptions())
    assert [(e.code, e.path) for e in bad[0].errors] == [("type", "[0].ext_ml_gpu_count")]
