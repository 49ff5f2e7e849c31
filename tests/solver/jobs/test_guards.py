"""Guards run on every job of every format: queue limits (§10.2), bounds (§15.1), selectors (§15.4),
URIs (§9.4, §15.2, §15.3, extensions §12), model allow-list (§15.2)."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.guards import check_job
from placer.solver.jobs.load import read_object
from placer.solver.jobs.model import (
    AffinityOperator,
    AllOf,
    Checkpointing,
    GpuDemand,
    Job,
    LabelRule,
    Not,
    Placement,
    TaskGroup,
)
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_configs
from placer.solver.jobs.uris import check_uri

LIMITS = {
    "max_gpu_count": 4,
    "max_gpu_memory_gb": 80,
    "max_memory_gb": 256,
    "max_timeout_seconds": 3600,
    "allowed_gpu_types": ["nvidia-a100", "nvidia-h100", "nvidia-l4"],
    "allowed_priority_classes": ["on-demand", "reserved"],
    "max_concurrent_gpu_jobs": 1,
    "max_total_gpus": 2,
}
QUEUES = load_queue_configs({"queue": "gpu-inference", "config": {"ml_limits": LIMITS}})


def errors(env: dict[str, Any], **opts: Any) -> list[tuple[str, str]]:
    options = ReadOptions(queues=QUEUES, **opts)
    [r] = read_object({"id": "j", "type": "t", "queue": "gpu-inference", **env}, options=options)
    assert r.ok == (not r.errors)
    return [(e.code, e.path) for e in r.errors]


# ---- §10.2 ml_limits -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("within", "beyond", "path"),
    [
        ({"ext_ml_gpu_count": 4}, {"ext_ml_gpu_count": 5}, "ext_ml_gpu_count"),
        ({"ext_ml_gpu_memory_gb": 80}, {"ext_ml_gpu_memory_gb": 141}, "ext_ml_gpu_memory_gb"),
        ({"ext_ml_memory_gb": 256}, {"ext_ml_memory_gb": 512}, "ext_ml_memory_gb"),
        ({"ext_ml_timeout_seconds": 3600}, {"ext_ml_timeout_seconds": 3601}, "ext_ml_timeout_seconds"),
        ({"ext_ml_gpu_type": "nvidia-l4"}, {"ext_ml_gpu_type": "nvidia-t4"}, "ext_ml_gpu_type"),
        ({"ext_ml_priority_class": "reserved"}, {"ext_ml_priority_class": "spot"}, "ext_ml_priority_class"),
    ],
)
def test_queue_limit(within: dict[str, Any], beyond: dict[str, Any], path: str) -> None:
    assert errors(within) == []
    assert errors(beyond) == [("limit", path)]


def test_limits_only_apply_to_the_jobs_queue() -> None:
    assert errors({"queue": "other", "ext_ml_gpu_count": 8}) == []


def test_gpu_budget_is_never_a_rejection() -> None:
    # 4 GPUs is within max_gpu_count but above the queue's max_total_gpus budget of 2 (§10.3: queue it)
    assert errors({"ext_ml_gpu_count": 4}) == []


# ---- §15.1 configurable upper bounds -----------------------------------------------------------------


def test_1000_gpus_are_rejected_everywhere() -> None:
    assert errors({"queue": "other", "ext_ml_gpu_count": 1000}) == [("limit", "ext_ml_gpu_count")]
    assert errors({"queue": "other", "ext_ml_gpu_count": 512}) == []


def test_other_upper_bounds_are_configurable() -> None:
    assert errors({"queue": "other", "ext_ml_tpu_chip_count": 16}, max_tpu_chips_per_job=8) == [
        ("limit", "ext_ml_tpu_chip_count")
    ]
    assert errors({"queue": "other", "ext_ml_memory_gb": 2048}, max_memory_gb_per_job=1024) == [
        ("limit", "ext_ml_memory_gb")
    ]
    assert errors({"queue": "other", "ext_ml_timeout_seconds": 100}, max_timeout_seconds=99) == [
        ("limit", "ext_ml_timeout_seconds")
    ]


def test_guards_work_on_non_ojs_jobs_with_model_paths() -> None:
    job = Job(id="flux-1", source_format="flux-rfc25", tasks=[TaskGroup(count=600, gpu=GpuDemand(count=1))])
    assert [(i.code, i.path) for i in check_job(job, ReadOptions())] == [("limit", "tasks.gpu.count")]
    job = Job(id="f", source_format="flux-rfc25", tasks=[TaskGroup(count=20_000)])
    assert [(i.code, i.path) for i in check_job(job, ReadOptions())] == [("limit", "tasks.count")]


# ---- §15.4 selectors ----------------------------------------------------------------------------------


def test_denied_selector_and_affinity_keys() -> None:
    assert errors({"ext_ml_node_selector": {"cost_center": "ml"}}) == [
        ("denied", "ext_ml_node_selector.cost_center")
    ]
    rule = {"key": "security_zone", "operator": "In", "values": ["dmz"]}
    assert errors({"ext_ml_affinity": {"required": [rule]}}) == [
        ("denied", "ext_ml_affinity.required.security_zone")
    ]
    assert errors({"ext_ml_affinity": {"preferred": [rule]}}) == [
        ("denied", "ext_ml_affinity.preferred.security_zone")
    ]
    assert errors({"ext_ml_node_selector": {"cost_center": "ml"}}, denied_selector_keys=frozenset()) == []


def test_denied_keys_found_inside_nested_rules() -> None:
    rule = LabelRule(key="cost_center", operator=AffinityOperator.EXISTS)
    job = Job(id="s", source_format="sss", placement=Placement(required=[AllOf(rules=[Not(rule=rule)])]))
    assert [(i.code, i.path) for i in check_job(job, ReadOptions())] == [
        ("denied", "placement.required.cost_center")
    ]


@pytest.mark.parametrize("value", ["us east", "a\nb", "x" * 64, "-lead", "a,b", "", "zone=a"])
def test_unsanitary_selector_values_are_denied(value: str) -> None:
    assert errors({"ext_ml_node_selector": {"zone": value}}) == [("denied", "ext_ml_node_selector.zone")]


@pytest.mark.parametrize("value", ["p5.48xlarge", "us-east-1", "80gb", "ml_training_prod", "x" * 63])
def test_sane_selector_values_pass(value: str) -> None:
    assert errors({"ext_ml_node_selector": {"zone": value}}) == []


def test_unsanitary_selector_key_and_affinity_value_are_denied() -> None:
    assert errors({"ext_ml_node_selector": {"bad key": "a"}}) == [("denied", "ext_ml_node_selector.bad key")]
    rule = {"key": "zone", "operator": "In", "values": ["a\u0000b"]}
    assert errors({"ext_ml_affinity": {"required": [rule]}}) == [("denied", "ext_ml_affinity.required.zone")]


# ---- URIs -------------------------------------------------------------------------------------------------

CHECKPOINT_URIS_OK = ["s3://checkpoints/run-1/", "gs://b/c/", "az://container/ck/", "file:///mnt/nfs/ckpt/"]
CHECKPOINT_URIS_BAD = [
    "s3://checkpoints/run-1",  # §9.4 trailing slash REQUIRED
    "hdfs://cluster/ck/",  # not a §9.4 scheme
    "http://169.254.169.254/latest/",  # SSRF bait: not a storage scheme
    "s3://b/../other-tenant/",
    "s3://b/%2e%2e/other/",  # percent-encoded traversal
    "s3://b/%252e%252e/other/",  # double-encoded traversal
    "s3://b/a%2f..%2fother/",  # encoded slashes hiding ".."
    "s3://AKIA:secret@b/ck/",  # credentials
    "s3://b/ck/?X-Amz-Signature=abc",
    "file://relative/ckpt/",
    "file:///etc/cron.d/",
    "s3:///no-bucket/",
    "s3://b/c k/",
    "/mnt/ckpt/",
]


@pytest.mark.parametrize("uri", CHECKPOINT_URIS_OK)
def test_checkpoint_uri_ok(uri: str) -> None:
    assert errors({"ext_ml_checkpoint_storage_uri": uri}) == []


@pytest.mark.parametrize("uri", CHECKPOINT_URIS_BAD)
def test_checkpoint_uri_refused(uri: str) -> None:
    assert errors({"ext_ml_checkpoint_storage_uri": uri}) == [("uri", "ext_ml_checkpoint_storage_uri")]


def test_allowed_uri_prefixes() -> None:
    env = {"ext_ml_checkpoint_storage_uri": "s3://team-a/ck/"}
    assert errors(env, allowed_uri_prefixes=("s3://team-a/",)) == []
    assert errors(env, allowed_uri_prefixes=("s3://team-b/",)) == [("uri", "ext_ml_checkpoint_storage_uri")]


def test_uri_prefixes_per_queue_and_per_tenant() -> None:
    # OJS ML extensions §12.1: allow-lists per queue or tenant. The job runs in queue gpu-inference for
    # tenant vision; each list that names one of them must hold every URI, the global one too.
    env = {
        "ext_ml_checkpoint_storage_uri": "s3://vision-ckpt/run/",
        "ext_mlx_inference_model_uri": "s3://models/vision/m.onnx",
        "meta": {"tenant": "vision"},
    }
    by_queue = {"gpu-inference": ("s3://vision-ckpt/", "s3://models/")}
    assert errors(env, uri_prefixes_by_queue=by_queue) == []
    by_tenant = {"vision": ("s3://vision-ckpt/",)}
    assert errors(env, uri_prefixes_by_queue=by_queue, uri_prefixes_by_tenant=by_tenant) == [
        ("uri", "ext_mlx_inference_model_uri")
    ]
    # Another queue's or tenant's list does not apply.
    assert (
        errors(
            env,
            uri_prefixes_by_queue={"training": ("gs://x/",)},
            uri_prefixes_by_tenant={"nlp": ("gs://y/",)},
        )
        == []
    )
    # A list that applies is checked on top of the global one, and names whose list refused.
    options = ReadOptions(queues=QUEUES, uri_prefixes_by_tenant=by_tenant)
    [r] = read_object({"id": "j", "type": "t", "queue": "gpu-inference", **env}, options=options)
    (e,) = r.errors
    assert "allowed for tenant 'vision': s3://vision-ckpt/" in e.message and "§12.1" in e.message


def test_model_registry_and_mlx_uris() -> None:
    assert errors({"ext_ml_model_registry_uri": "hf://meta-llama/Llama-3.1-70B-Instruct@main"}) == []
    assert errors({"ext_ml_model_registry_uri": "https://evil.example/model"}) == [
        ("uri", "ext_ml_model_registry_uri")
    ]
    assert (
        errors({"ext_mlx_inference_model_uri": "s3://models/m/model.onnx"}) == []
    )  # no trailing slash needed
    assert errors({"ext_mlx_inference_model_uri": "ftp://x/m"}) == [("uri", "ext_mlx_inference_model_uri")]
    assert errors({"ext_mlx_training_resume_from": "s3://b/../x/"}) == [
        ("uri", "ext_mlx_training_resume_from")
    ]
    assert errors({"ext_mlx_artifact_output_uri": "file://data/out"}) == [
        ("uri", "ext_mlx_artifact_output_uri")
    ]
    assert errors({"ext_mlx_scheduling_data_locality": "gs://u:p@b/d/"}) == [
        ("uri", "ext_mlx_scheduling_data_locality")
    ]


def test_last_checkpoint_storage_key_is_checked() -> None:
    assert errors({"meta": {"last_checkpoint": {"storage_key": "s3://b/job-1/epoch-42.pt"}}}) == []
    assert errors({"meta": {"last_checkpoint": {"storage_key": "s3://b/../../x.pt"}}}) == [
        ("uri", "meta.last_checkpoint.storage_key")
    ]


def test_check_uri_directly() -> None:
    assert check_uri("file:///data/models/v1.0/", schemes={"file"}) is None
    assert check_uri("file:///proc/self/environ", schemes={"file"}) is not None
    assert check_uri("s3://b/" + "a" * 5000, schemes={"s3"}) is not None


def test_uri_scheme_is_case_insensitive() -> None:
    """RFC 3986 §3.1: "schemes are case-insensitive"; ``S3://`` is the s3 scheme, also for the prefix
    allow-list, while the rest of the URI is compared as written."""
    assert errors({"ext_ml_checkpoint_storage_uri": "S3://b/x/"}) == []
    assert errors({"ext_ml_model_registry_uri": "Hf://meta-llama/Llama-3.1-8B"}) == []
    assert check_uri("S3://b/x/", schemes={"s3"}, allowed_prefixes=("s3://b/",)) is None
    assert check_uri("s3://b/x/", schemes={"s3"}, allowed_prefixes=("S3://b/",)) is None
    assert check_uri("S3://B/x/", schemes={"s3"}, allowed_prefixes=("s3://b/",)) is not None
    assert check_uri("FTP://b/x/", schemes={"s3"}) == "scheme 'ftp' is not allowed; allowed schemes: s3"


def test_uri_fragment_gets_its_own_message() -> None:
    """``s3://b/x/#frag`` does end the location with "/": the refusal names the fragment, not the slash."""
    for uri in ("s3://b/x/#frag", "s3://b/x/#"):
        message = check_uri(uri, schemes={"s3"}, require_trailing_slash=True)
        assert message is not None and "#fragment" in message and "end with" not in message
    assert errors({"ext_ml_checkpoint_storage_uri": "s3://b/x/#frag"}) == [
        ("uri", "ext_ml_checkpoint_storage_uri")
    ]
    assert errors({"ext_ml_model_registry_uri": "s3://models/m#v2"}) == [("uri", "ext_ml_model_registry_uri")]
    assert check_uri("s3://b/" + "a" * 5000, schemes={"s3"}) is not None


# ---- §15.2 model allow-list --------------------------------------------------------------------


def test_model_allow_list() -> None:
    allowed = frozenset({"llama-3.1-70b"})
    assert errors({"ext_ml_model_id": "llama-3.1-70b"}, allowed_model_ids=allowed) == []
    assert errors({"ext_ml_model_id": "untrusted"}, allowed_model_ids=allowed) == [
        ("denied", "ext_ml_model_id")
    ]
    assert errors({"ext_ml_model_id": "untrusted"}) == []  # no allow-list configured


def test_job_without_issues_has_none() -> None:
    job = Job(id="ok", checkpointing=Checkpointing(enabled=True, storage_uri="s3://b/c/"))
    assert check_job(job, ReadOptions()) == []
