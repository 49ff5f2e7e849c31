"""Workloads: the synthetic generator follows its stated distributions; trace and inline jobs land on the
scenario's clock. Tolerances are stated from the distributions (binomial / Poisson standard deviations),
not from a run."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from placer.scenarios.inputs.synthetic import generate
from placer.scenarios.inputs.workload import jobs_of
from placer.scenarios.spec import SyntheticWorkload, WorkloadSpec

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _w(arrivals: dict, *classes: dict) -> SyntheticWorkload:
    return SyntheticWorkload.model_validate({"arrivals": arrivals, "classes": list(classes)})


def test_fixed_arrivals_are_exact() -> None:
    # 3 jobs queued at the start, then one every 10 minutes from 00:10 while before the 1 h horizon:
    # 00:10 ... 00:50 = 5 more.
    jobs = generate(
        _w({"process": "fixed", "every": "10m", "backlog": 3}, {"name": "a", "duration": "5m"}),
        T0,
        3600,
        seed=0,
    )
    assert [int((j.submit_time - T0).total_seconds()) for j in jobs] == [0, 0, 0, 600, 1200, 1800, 2400, 3000]
    assert [j.id for j in jobs][:2] == ["a-00001", "a-00002"]


def test_max_jobs_caps_the_arrivals() -> None:
    w = _w({"process": "fixed", "every": 60, "backlog": 5, "max_jobs": 7}, {"name": "a", "duration": 60})
    assert len(generate(w, T0, 86400, seed=0)) == 7


def test_poisson_arrivals_and_class_shares() -> None:
    # 60 an hour for 20 h: 1200 expected, Poisson sd ~35. Shares 0.25 / 0.75 of ~1200: sd ~15.
    w = _w(
        {"rate_per_hour": 60},
        {"name": "small", "share": 3, "gpus": 1, "duration": "10m"},
        {"name": "big", "share": 1, "gpus": {8: 0.5, 16: 0.5}, "strategy": "fsdp", "duration": "1h"},
    )
    jobs = generate(w, T0, 20 * 3600, seed=0)
    assert abs(len(jobs) - 1200) < 4 * math.sqrt(1200)
    assert all(T0 <= j.submit_time < T0 + timedelta(hours=20) for j in jobs)
    big = [j for j in jobs if j.metadata["class"] == "big"]
    assert abs(len(big) - len(jobs) / 4) < 4 * math.sqrt(len(jobs) * 0.25 * 0.75)
    assert {j.total_gpus for j in big} == {8, 16} and all(j.distributed_strategy.value == "fsdp" for j in big)
    # Submission order, no two jobs with one id.
    assert [j.submit_time for j in jobs] == sorted(j.submit_time for j in jobs)
    assert len({j.id for j in jobs}) == len(jobs)


def test_durations_priorities_and_classes_stay_in_their_ranges() -> None:
    w = _w(
        {"process": "fixed", "every": 1, "backlog": 0},
        {
            "name": "x",
            "duration": {"dist": "lognormal", "median": "1h", "sigma": 1.5, "min": "10m", "max": "3h"},
            "priority": [100, 200],
            "priority_class": {"spot": 1, "reserved": 1},
        },
    )
    jobs = generate(w, T0, 2000, seed=1)
    assert all(600 <= j.duration_s <= 10800 for j in jobs)
    assert {j.duration_s for j in jobs} >= {600.0, 10800.0}  # sigma 1.5: both clamps are hit in 2000 draws
    assert all(100 <= j.priority <= 200 for j in jobs)
    assert {j.priority_class.value for j in jobs} == {"spot", "reserved"}


def test_job_fields_follow_the_class() -> None:
    w = _w(
        {"process": "fixed", "every": 60},
        {
            "name": "tpu",
            "tpu": {"type": "v5e", "topology": "4x4"},
            "duration": 600,
            "checkpoint_interval": "5m",
            "checkpoint_on_preempt": True,
            "grace_period": "2m",
            "preemptible": True,
            "escalation": {"after": "1h", "target": "reserved"},
            "reservation": "r",
            "queue": "q",
        },
    )
    [j] = generate(w, T0, 61, seed=0)
    assert j.total_tpu_chips == 16 and j.total_gpus == 0 and j.tasks[0].tpu.topology == (4, 4)
    assert (j.checkpointing.enabled, j.checkpointing.interval_s) == (True, 300)
    assert (j.preemption.checkpoint_on_preempt, j.preemption.grace_period_s, j.preemption.preemptible) == (
        True,
        120,
        True,
    )
    assert (j.escalation.enabled, j.escalation.after_s, j.escalation.target_class.value) == (
        True,
        3600,
        "reserved",
    )
    assert (j.reservation.id, j.queue, j.labels["class"]) == ("r", "q", "tpu")


def test_same_seed_same_jobs() -> None:
    w = _w(
        {"rate_per_hour": 30},
        {"name": "a", "gpus": {1: 1, 2: 1}, "duration": {"dist": "exponential", "mean": "1h"}},
    )
    a, b, c = (generate(w, T0, 36000, seed=s) for s in (4, 4, 5))
    assert a == b and a != c


def test_inline_jobs_read_through_the_job_readers() -> None:
    w = WorkloadSpec(
        jobs=[{"submit": "90s", "id": "x", "ext_ml_gpu_count": 2, "ext_ml_priority_class": "spot"}]
    )
    [j] = jobs_of(w, T0, 3600, seed=0, base=None)
    assert (
        (j.submit_time - T0).total_seconds() == 90 and j.total_gpus == 2 and j.priority_class.value == "spot"
    )


def test_trace_jobs_are_moved_to_the_scenario_clock(tmp_path: Path) -> None:
    # Philly rows at 07:00:00, 07:30:00 and 09:00:00 on 2017-10-09; since 07:10 and a 1 h horizon: only the
    # 07:30 job, submitted 20 minutes after the scenario's start.
    (tmp_path / "p.csv").write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 07:00:00,60,1,60,a\n2017-10-09 07:30:00,120,2,240,b\n2017-10-09 09:00:00,60,4,240,a\n"
    )
    w = WorkloadSpec.model_validate(
        {"trace": {"loader": "philly", "file": "p.csv", "since": "2017-10-09T07:10:00Z"}}
    )
    [j] = jobs_of(w, T0, 3600, seed=0, base=tmp_path)
    assert ((j.submit_time - T0).total_seconds(), j.duration_s, j.total_gpus) == (1200.0, 120.0, 2)


def test_a_trace_loader_may_be_any_function(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    w = WorkloadSpec.model_validate(
        {
            "trace": {
                "loader": "tests.scenarios.inputs.test_workloads:_three_jobs",
                "file": "x",
                "options": {"gpus": 2},
            }
        }
    )
    jobs = jobs_of(w, T0, 3600, seed=0, base=tmp_path)
    assert [(j.id, (j.submit_time - T0).total_seconds()) for j in jobs] == [
        ("j0", 0.0),
        ("j1", 600.0),
        ("j2", 1200.0),
    ]


def _three_jobs(path: Path, gpus: int) -> list:
    from placer.solver.jobs.model import GpuDemand, Job, TaskGroup

    start = datetime(2020, 1, 1, tzinfo=UTC)
    return [
        Job(
            id=f"j{i}",
            submit_time=start + timedelta(minutes=10 * i),
            tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
        )
        for i in range(3)
    ]


@pytest.mark.parametrize("bad", [{"rate_per_hour": 0}, {"process": "fixed"}, {"backlog": -1}])
def test_bad_arrivals_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        _w(bad, {"name": "a", "duration": 60})
