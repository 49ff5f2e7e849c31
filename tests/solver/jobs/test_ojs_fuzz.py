"""Hypothesis: random and malformed OJS documents never make the reader (or the guards) raise.

Strategies mix plausible values (closed-list members, numbers, rule-shaped objects) with arbitrary JSON
for every known attribute key, so the fuzz reaches the deep checks as well as the type checks.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.jobs.errors import ISSUE_CODES, JobValidationError
from placer.solver.jobs.formats.ojs import read
from placer.solver.jobs.formats.ojs_mlx import MLX_ATTRIBUTES
from placer.solver.jobs.formats.ojs_v01 import parse_worker_labels
from placer.solver.jobs.formats.ojs_v03 import V03_ATTRIBUTES
from placer.solver.jobs.load import check_batch, read_object
from placer.solver.jobs.model import ReadResult
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_configs

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
)
JSON = st.recursive(
    SCALARS,
    # YAML documents may have non-string keys, so the dictionaries do too
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers(0, 3)), inner, max_size=4),
    ),
    max_leaves=12,
)
WORDS = st.sampled_from(
    [
        "gpu",
        "tpu",
        "cpu",
        "fpga",
        "nvlink",
        "pcie",
        "any",
        "spot",
        "on-demand",
        "reserved",
        "fp16",
        "bf16",
        "fsdp",
        "none",
        "nvidia-h100",
        "A100",
        "v5e",
        "v3",
        "4x4",
        "2x2x4",
        "0x1",
        "8.0",
        "9",
        "In",
        "Gt",
        "Exists",
        "s3://b/c/",
        "s3://b/../c",
        "file:///etc/x/",
        "hf://org/m@main",
        "sha256:abc",
        "dedicated",
        "never",
        "batch",
        "",
        " ",
        "\x00",
    ]
)
RULE = st.fixed_dictionaries(
    {},
    optional={
        "key": st.one_of(WORDS, JSON),
        "operator": st.one_of(WORDS, JSON),
        "values": st.one_of(st.lists(st.one_of(WORDS, SCALARS), max_size=3), JSON),
        "weight": st.one_of(st.integers(-5, 120), JSON),
    },
)
AFFINITY = st.fixed_dictionaries(
    {}, optional={"required": st.lists(RULE, max_size=3), "preferred": st.lists(RULE, max_size=3)}
)
VALUE = st.one_of(WORDS, st.integers(-2, 2000), st.floats(-1, 1e4), st.booleans(), AFFINITY, JSON)
CORE = [
    "id",
    "type",
    "queue",
    "args",
    "meta",
    "priority",
    "timeout",
    "timeout_ms",
    "created_at",
    "enqueued_at",
]
KEYS = [*sorted(V03_ATTRIBUTES | MLX_ATTRIBUTES), *CORE, "scheduled_at"]
META = st.fixed_dictionaries(
    {},
    optional={
        "resources": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "gpu": st.dictionaries(st.sampled_from(["count", "type", "memory_gb"]), VALUE),
                    "cpu": st.one_of(st.fixed_dictionaries({"cores": VALUE}), JSON),
                    "memory_gb": VALUE,
                },
            ),
            JSON,
        ),
        "affinity": st.one_of(AFFINITY, JSON),
        "preemption": st.dictionaries(
            st.sampled_from(["preemptible", "grace_period_s", "checkpoint_on_preempt"]), VALUE
        ),
        "checkpoint": st.dictionaries(
            st.sampled_from(["enabled", "interval_s", "storage_uri", "max_checkpoints"]), VALUE
        ),
        "last_checkpoint": st.one_of(
            st.dictionaries(st.sampled_from(["epoch", "step", "loss", "created_at", "storage_key"]), VALUE),
            JSON,
        ),
        "tenant": VALUE,
    },
)
ENVELOPE = st.one_of(
    st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=12),
    st.dictionaries(st.sampled_from(KEYS), VALUE, max_size=6).flatmap(
        lambda d: META.map(lambda m: {**d, "meta": m})
    ),
    st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)), JSON, max_size=8),
)
WORKFLOW = st.fixed_dictionaries(
    {"workflow_type": st.one_of(st.sampled_from(["chain", "group", "batch", "dag"]), JSON)},
    optional={
        "id": st.one_of(st.text(max_size=5), JSON),
        "steps": st.one_of(st.lists(st.one_of(ENVELOPE, JSON), max_size=4), JSON),
        "jobs": st.one_of(st.lists(ENVELOPE, max_size=4), JSON),
        "callbacks": st.one_of(
            st.dictionaries(st.sampled_from(["on_complete", "on_success", "on_failure", "x"]), ENVELOPE), JSON
        ),
        "meta": JSON,
    },
)
DOCUMENT = st.one_of(ENVELOPE, WORKFLOW, st.lists(st.one_of(ENVELOPE, WORKFLOW), max_size=4), JSON)


def _well_formed(results: Any) -> None:
    assert isinstance(results, list)
    for r in results:
        assert isinstance(r, ReadResult)
        if r.ok:
            assert r.job is not None and not r.errors
        else:
            assert r.job is None and r.errors
        assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])


@given(DOCUMENT)
def test_reader_never_raises(doc: Any) -> None:
    _well_formed(read(doc, source="fuzz", options=ReadOptions()))


@given(ENVELOPE)
def test_pipeline_with_guards_never_raises(doc: Any) -> None:
    queues = load_queue_configs(
        {
            "queue": "q",
            "config": {
                "ml_defaults": {"ext_ml_gpu_count": 1},
                "ml_limits": {"max_gpu_count": 4, "allowed_gpu_types": ["nvidia-h100"]},
            },
        }
    )
    doc = {**doc, "queue": "q"} if isinstance(doc, dict) else doc
    _well_formed(check_batch(read_object(doc, source="fuzz", options=ReadOptions(queues=queues))))


@given(st.one_of(st.lists(st.one_of(st.text(max_size=12), JSON), max_size=6), JSON))
def test_worker_label_parser_raises_only_validation_errors(labels: Any) -> None:
    try:
        out = parse_worker_labels(labels)
    except JobValidationError as e:
        assert all(i.code in ISSUE_CODES for i in e.issues)
    else:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in out.items())


@given(
    st.one_of(
        JSON,
        st.fixed_dictionaries(
            {"queue": JSON},
            optional={
                "config": st.dictionaries(
                    st.sampled_from(["ml_defaults", "ml_limits"]),
                    st.one_of(
                        st.dictionaries(
                            st.sampled_from([*KEYS, "max_gpu_count", "allowed_gpu_types"]), VALUE
                        ),
                        JSON,
                    ),
                )
            },
        ),
    )
)
def test_queue_config_loader_raises_only_validation_errors(config: Any) -> None:
    try:
        load_queue_configs(config)
    except JobValidationError as e:
        assert all(i.code in ISSUE_CODES for i in e.issues)
