"""The normalized job model: invariants that hold whatever format a job came from."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from placer.solver.jobs.model import (
    PRECISION_MIN_CC,
    Accelerator,
    AffinityOperator,
    CountRange,
    DomainRule,
    GpuDemand,
    Job,
    LabelRule,
    Placement,
    Precision,
    Preemption,
    PreemptionPolicy,
    PriorityClass,
    TaskGroup,
    TpuDemand,
)


def test_priority_class_order_is_reserved_over_on_demand_over_spot() -> None:
    # OJS ML §8.1: "reserved > on-demand > spot".
    assert PriorityClass.RESERVED.rank > PriorityClass.ON_DEMAND.rank > PriorityClass.SPOT.rank


def test_precision_table_matches_spec() -> None:
    # OJS ML §6 "Min Compute Capability" column.
    assert PRECISION_MIN_CC == {
        Precision.FP32: "7.0",
        Precision.FP16: "7.0",
        Precision.BF16: "8.0",
        Precision.FP8: "8.9",
        Precision.INT8: "7.5",
        Precision.INT4: "7.5",
    }


def test_accelerator_inferred_from_demands() -> None:
    gpu = Job(id="g", tasks=[TaskGroup(gpu=GpuDemand(count=2))])
    tpu = Job(id="t", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 4)))])
    cpu = Job(id="c", tasks=[TaskGroup(cpu_cores=4)])
    assert (gpu.accelerator, tpu.accelerator, cpu.accelerator) == (
        Accelerator.GPU,
        Accelerator.TPU,
        Accelerator.CPU,
    )


def test_gang_totals() -> None:
    # 2 replicas x 4 GPUs + 1 replica x 0.25 GPU share: 8 whole GPUs, 8000 + 250 milli-GPUs.
    job = Job(
        id="j",
        tasks=[
            TaskGroup(name="workers", count=2, gpu=GpuDemand(count=4)),
            TaskGroup(name="sidecar", gpu=GpuDemand(count=1, share_milli=250)),
        ],
    )
    assert job.total_gpus == 8
    assert job.total_gpu_milli == 8250


def test_tpu_topology_gives_chip_count_and_conflicts_are_refused() -> None:
    assert TpuDemand(topology=(4, 4, 8)).chip_count == 128
    with pytest.raises(ValidationError):
        TpuDemand(topology=(2, 4), chips=16)
    with pytest.raises(ValidationError):
        TpuDemand(topology=(2, 4, 4, 2))


def test_fractional_share_needs_one_gpu() -> None:
    with pytest.raises(ValidationError):
        GpuDemand(count=2, share_milli=500)


@pytest.mark.parametrize(
    ("operator", "values", "ok"),
    [
        ("Exists", [], True),
        ("Exists", ["x"], False),
        ("DoesNotExist", [], True),
        ("In", [], False),
        ("In", ["a", "b"], True),
        ("Gte", ["8.0"], True),
        ("Gte", ["8.0", "9.0"], False),
        ("Lt", [], False),
    ],
)
def test_label_rule_arity(operator: str, values: list[str], ok: bool) -> None:
    if ok:
        assert LabelRule(key="k", operator=AffinityOperator(operator), values=values).values == values
    else:
        with pytest.raises(ValidationError):
            LabelRule(key="k", operator=AffinityOperator(operator), values=values)


def test_preemptible_defaults_follow_the_class_and_overrides() -> None:
    # §8.1: spot preemptible, on-demand not (by default), reserved never.
    assert Job(id="s", priority_class="spot").is_preemptible
    assert not Job(id="o", priority_class="on-demand").is_preemptible
    assert Job(id="o2", priority_class="on-demand", preemption=Preemption(preemptible=True)).is_preemptible
    # reserved is never evicted, whatever the flag says.
    assert not Job(id="r", priority_class="reserved", preemption=Preemption(preemptible=True)).is_preemptible
    # extensions §7: policy "never" overrides the class default of spot.
    assert not Job(
        id="n", priority_class="spot", preemption=Preemption(policy=PreemptionPolicy.NEVER)
    ).is_preemptible


@pytest.mark.parametrize(
    ("rng", "cap", "expected"),
    [
        # RFC 14: min 3, max 30, operator +, operand 1 -> 3, 4, ..., capped.
        (CountRange(min=3, max=30, operator="+", operand=1), 6, [3, 4, 5, 6]),
        (CountRange(min=2, max=20, operator="*", operand=2), 100, [2, 4, 8, 16]),
        (CountRange(min=2, max=300, operator="^", operand=2), 1000, [2, 4, 16, 256]),
        (CountRange(min=1), 3, [1, 2, 3]),
    ],
)
def test_count_range_values(rng: CountRange, cap: int, expected: list[int]) -> None:
    assert rng.values(cap) == expected


def test_count_range_rejects_inverted_bounds() -> None:
    with pytest.raises(ValidationError):
        CountRange(min=5, max=2)
    with pytest.raises(ValidationError):
        CountRange(min=1, operator="*", operand=1)


def test_job_json_round_trip_and_frozen() -> None:
    job = Job(id="j", tasks=[TaskGroup(count=3, cpu_cores=2, gpu=GpuDemand(count=1, types=["nvidia-l4"]))])
    assert Job.model_validate_json(job.model_dump_json()) == job
    with pytest.raises(ValidationError):
        job.id = "other"  # type: ignore[misc]


def test_required_pod_affinity_is_a_single_pods_rule_on_nodes() -> None:
    # kube-scheduler decides it pod by pod, on node labels: one replica on a node, nothing else.
    term = DomainRule(key="rack", rule=LabelRule(key="app", operator="In", values=["cache"]))
    ok = Job(id="pod", placement=Placement(affinity_required=[term]))
    assert ok.placement.affinity_required == [term]
    with pytest.raises(ValidationError, match=r"placement\.affinity_required: .* 3 replicas"):
        Job(id="gang", tasks=[TaskGroup(count=3)], placement=Placement(affinity_required=[term]))
    with pytest.raises(ValidationError, match=r"placement\.affinity_required: .* TPU pod"):
        Job(
            id="tpu",
            tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 2)))],
            placement=Placement(affinity_required=[term]),
        )
