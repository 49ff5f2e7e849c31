"""Rule 18 of the independent checker: planned starts are sound (hand-built decisions, valid and not)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, Hold, JobPlacement, PendingJob, Reason, ReplicaPlacement
from placer.solver.jobs.model import Dependency, GpuDemand, Job, TaskGroup
from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW


def h(hours: float) -> datetime:
    return NOW + timedelta(hours=hours)


def job(job_id: str, gpus: int = 8, hours: float | None = 1, **kw: object) -> Job:
    return Job(
        id=job_id,
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
        duration_s=None if hours is None else hours * 3600,
        **kw,  # type: ignore[arg-type]
    )


def cluster() -> Cluster:
    # dgx-h100-1 is busy until +2 h; dgx-h100-2 is free.
    return cluster_of(dgx_h100(2)).with_allocations(
        [{"job": "r1", "expected_end": h(2), "replicas": [{"node": "dgx-h100-1", "gpus": list(range(8))}]}]
    )


def waiting(*ids: str) -> list[PendingJob]:
    return [PendingJob(job=i, reasons=[Reason(code="INSUFFICIENT_CAPACITY", message="")]) for i in ids]


def plan(job_id: str, start: datetime, end: datetime | None, node: str = "dgx-h100-1", **kw: object) -> Hold:
    return Hold(
        job=job_id, start=start, end=end, replicas=[ReplicaPlacement(node=node, gpus=list(range(8)))], **kw
    )  # type: ignore[arg-type]


def rules(d: Decision, jobs: list[Job]) -> list[str]:
    return sorted({v.rule for v in check(d, jobs, cluster(), now=NOW)})


def test_a_sound_plan_passes() -> None:
    d = Decision(pending=waiting("a"), reservations=[plan("a", h(2), h(3))])
    assert rules(d, [job("a")]) == []


@pytest.mark.parametrize(
    ("hold", "rule"),
    [
        (plan("a", h(1), h(2)), "plan-capacity"),  # r1 still holds those GPUs at +1 h
        (plan("a", NOW, h(1)), "plan-time"),  # not after now
        (plan("a", h(2), h(4)), "plan-time"),  # end is not start + 1 h
        (plan("a", h(2), None), "plan-time"),  # the job has a duration: the plan must end
        (
            Hold(
                job="a",
                start=h(2),
                end=h(3),
                replicas=[ReplicaPlacement(node="dgx-h100-1", gpus=[0, 1, 2, 3])],
            ),
            "plan-placement",  # 4 GPUs held for an 8-GPU job
        ),
        (
            Hold(
                job="a",
                start=h(2),
                end=h(3),
                replicas=[ReplicaPlacement(node="nowhere", gpus=list(range(8)))],
            ),
            "plan-placement",
        ),
    ],
)
def test_an_unsound_plan_is_reported(hold: Hold, rule: str) -> None:
    d = Decision(pending=waiting("a"), reservations=[hold])
    assert rule in rules(d, [job("a")])


def test_a_plan_for_a_placed_job_is_reported() -> None:
    placed = JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100-2", gpus=list(range(8)))])
    d = Decision(placements=[placed], reservations=[plan("a", h(2), h(3))])
    assert "plan-job" in rules(d, [job("a")])


def test_two_plans_on_the_same_gpus_at_the_same_time_are_reported() -> None:
    d = Decision(pending=waiting("a", "b"), reservations=[plan("a", h(2), h(3)), plan("b", h(2.5), h(3.5))])
    assert rules(d, [job("a"), job("b")]) == ["plan-capacity"]
    # One after the other is fine.
    d = Decision(pending=waiting("a", "b"), reservations=[plan("a", h(2), h(3)), plan("b", h(3), h(4))])
    assert rules(d, [job("a"), job("b")]) == []


def test_work_started_now_that_runs_into_a_plan_is_reported() -> None:
    # "long" starts now on dgx-h100-2 for 3 h; "a" is planned there at +2 h: the start would be delayed.
    long = JobPlacement(job="long", replicas=[ReplicaPlacement(node="dgx-h100-2", gpus=list(range(8)))])
    d = Decision(
        placements=[long], pending=waiting("a"), reservations=[plan("a", h(2), h(3), node="dgx-h100-2")]
    )
    assert rules(d, [job("a"), job("long", hours=3)]) == ["plan-capacity"]
    # A 1 h job ends before the plan starts.
    assert rules(d, [job("a"), job("long", hours=1)]) == []
    # A job without a duration is assumed to run on.
    assert rules(d, [job("a"), job("long", hours=None)]) == ["plan-capacity"]


def test_a_plan_before_its_dependency_is_met_is_reported() -> None:
    # "b" waits for "a" (success); "a" is planned +2 h .. +3 h, so "b" may start at +3 h at the earliest.
    b = job("b", dependencies=[Dependency(job="a")])
    early = Decision(
        pending=waiting("a", "b"),
        reservations=[plan("a", h(2), h(3)), plan("b", h(2.5), h(3.5), node="dgx-h100-2", kind="workflow")],
    )
    assert rules(early, [job("a"), b]) == ["plan-time"]
    ok = Decision(
        pending=waiting("a", "b"),
        reservations=[plan("a", h(2), h(3)), plan("b", h(3), h(4), node="dgx-h100-2", kind="workflow")],
    )
    assert rules(ok, [job("a"), b]) == []


def test_a_plan_before_not_before_is_reported() -> None:
    d = Decision(pending=waiting("a"), reservations=[plan("a", h(2), h(3))])
    assert rules(d, [job("a", not_before=h(2.5))]) == ["plan-time"]
