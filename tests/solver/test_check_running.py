"""``running_from_envelopes``: running jobs from job envelopes plus where they run (OJS ML §8, §9.2)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.solver.jobs.errors import ISSUE_CODES, JobValidationError
from placer.solver.running import running_from_envelopes
from placer.topology import cluster_of, dgx_h100

SPOT: dict[str, Any] = {
    "id": "sweep-7",
    "type": "ml.train",
    "queue": "sweeps",
    "args": [],
    "ext_ml_gpu_count": 2,
    "ext_ml_cpu_cores": 16,
    "ext_ml_memory_gb": 64,
    "ext_ml_priority_class": "spot",
    "ext_ml_preemption_grace_period_s": 120,
    "ext_ml_checkpoint_on_preempt": True,
    "meta": {"last_checkpoint": {"job_id": "sweep-7", "epoch": 3, "created_at": "2026-02-19T12:00:00Z"}},
}


def test_envelope_with_node_and_gpus() -> None:
    item = {**SPOT, "node": "dgx-h100-1", "gpus": [0, 1], "started_at": "2026-02-19T10:00:00Z"}
    [rj] = running_from_envelopes([item], "running.json")
    assert rj.job == "sweep-7"
    assert (rj.priority_class, rj.preemptible) == ("spot", True)  # §8.1: spot is preemptible
    assert (rj.grace_period_s, rj.checkpoint_on_preempt) == (120, True)
    assert rj.queue == "sweeps"
    assert rj.labels["job_type"] == "ml.train"
    assert rj.started_at == datetime(2026, 2, 19, 10, tzinfo=UTC)
    assert rj.last_checkpoint_at == datetime(2026, 2, 19, 12, tzinfo=UTC)
    [r] = rj.replicas
    assert (r.node, r.gpus, r.cpu_cores, r.memory_gb) == ("dgx-h100-1", [0, 1], 16, 64)


def test_split_replicas_share_demand_by_gpus() -> None:
    item = {
        **SPOT,
        "ext_ml_gpu_count": 4,
        "ext_ml_distributed_strategy": "fsdp",
        "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2]}, {"node": "dgx-h100-2", "gpus": [0]}],
    }
    [rj] = running_from_envelopes([item], "r.json")
    assert [r.cpu_cores for r in rj.replicas] == [12, 4]  # 16 cores split 3:1
    assert [r.memory_gb for r in rj.replicas] == [48, 16]


def test_result_applies_to_a_cluster() -> None:
    item = {**SPOT, "node": "dgx-h100-1", "gpus": [0, 1]}
    c = cluster_of(dgx_h100(2)).with_allocations(running_from_envelopes([item], "r.json"))
    assert c.free_gpus("dgx-h100-1") == (2, 3, 4, 5, 6, 7)
    assert c.free_cpu("dgx-h100-1") == 224 - 16


@pytest.mark.parametrize(
    ("items", "code", "path"),
    [
        ({"id": "x"}, "malformed", "r.json"),
        ([{**SPOT}], "required", "r.json[0].node"),
        ([{**SPOT, "node": "n", "gpus": ["0"]}], "type", "r.json[0].gpus[0]"),
        ([{**SPOT, "node": "n", "started_at": "yesterday"}], "type", "r.json[0].started_at"),
        ([{**SPOT, "node": "n", "started_at": "2026-02-19T10:00:00"}], "range", "r.json[0].started_at"),
        ([{**SPOT, "node": "n", "ext_ml_gpu_count": "2"}], "type", "r.json[0].ext_ml_gpu_count"),
        ([{**SPOT, "node": "n"}, {**SPOT, "node": "m"}], "duplicate", "r.json[1].id"),
        ([{**SPOT, "replicas": [{"node": "n", "colour": 1}]}], "unsupported", "r.json[0].replicas[0].colour"),
        ([3], "malformed", "r.json[0]"),
    ],
)
def test_bad_items_are_structured_issues(items: Any, code: str, path: str) -> None:
    with pytest.raises(JobValidationError) as e:
        running_from_envelopes(items, "r.json")
    assert (code, path) in [(i.code, i.path) for i in e.value.issues]


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["id", "node", "gpus", "replicas", "started_at", "ext_ml_gpu_count", "x"]),
                inner,
            )
        ),
        max_leaves=12,
    )
)
def test_random_input_never_raises_anything_else(doc: Any) -> None:
    try:
        running_from_envelopes(doc if isinstance(doc, list) else [doc], "fuzz.json")
    except JobValidationError as e:
        assert all(i.code in ISSUE_CODES for i in e.issues)
