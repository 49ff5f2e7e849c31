"""Reservations (OJS ML resources §8.3): members run only inside, others never use held capacity, unknown
or too-small reservations reject, inactive ones make members wait. Every decision is checked, rule 15
included (isolation)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from solver.check import check
from solver.engine import place
from solver.jobs.model import GpuDemand, Job, ReservationRef, TaskGroup
from solver.policy import Policy
from solver.reservations import Reservation, load_reservations
from tests.solver.conftest import NOW, assert_valid, pending_reason
from topology import cluster_of, dgx_h100


def _job(job_id: str, gpus: int, reservation: str | None = None, hours: float | None = None) -> Job:
    ref = ReservationRef(id=reservation) if reservation else None
    duration = None if hours is None else hours * 3600
    return Job(id=job_id, reservation=ref, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))], duration_s=duration)


def _run(engine: str, jobs: list[Job], cluster, reservations: list[Reservation]):  # type: ignore[no-untyped-def]
    d = place(jobs, cluster, Policy(engine=engine, time_limit_s=2), now=NOW, reservations=reservations)
    assert_valid_with(d, jobs, cluster, reservations)
    return d


def assert_valid_with(d, jobs, cluster, reservations) -> None:  # type: ignore[no-untyped-def]
    answered = [p.job for p in d.placements] + [p.job for p in d.pending] + [r.job for r in d.rejected]
    assert sorted(answered) == sorted(j.id for j in jobs)
    assert check(d, jobs, cluster, now=NOW, reservations=reservations) == []


GPU4 = Reservation(id="nightly", gpus={"dgx-h100-1": 4})


def test_member_gets_the_reserved_gpus_and_others_cannot_take_them(engine: str) -> None:
    c = cluster_of(dgx_h100(2))
    jobs = [_job("member", 4, "nightly"), _job("a", 8), _job("b", 4), _job("c", 4)]
    d = _run(engine, jobs, c, [GPU4])
    member = d.placement_of("member")
    assert member is not None and [r.node for r in member.replicas] == ["dgx-h100-1"]
    # 16 GPUs - 4 reserved = 12 for others: the 8 and one 4 fit, the other 4 waits though nothing else runs.
    assert len(d.placements) == 3
    [hold] = d.reservations
    assert hold.kind == "reservation" and hold.reservation == "nightly"
    assert [(r.node, len(r.gpus)) for r in hold.replicas] == [("dgx-h100-1", 4)]


def test_held_capacity_stays_held_without_members(engine: str) -> None:
    c = cluster_of(dgx_h100(1))
    d = _run(engine, [_job("a", 8)], c, [Reservation(id="nightly", gpus={"dgx-h100": 4})])
    assert d.placement_of("a") is None  # 8 GPUs, 4 of them held: it waits
    assert pending_reason(d, "a") is not None


def test_member_stays_inside_even_when_outside_is_free(engine: str) -> None:
    # The reservation holds 4 GPUs of node 1; node 2 is empty, but an 8-GPU member cannot go there.
    c = cluster_of(dgx_h100(2))
    d = _run(engine, [_job("big", 8, "nightly")], c, [GPU4])
    assert d.placement_of("big") is None
    [r] = d.rejected
    assert (
        r.job == "big" and "cannot hold it" in r.errors[0]["message"] and "8 GPUs" in r.errors[0]["message"]
    )


def test_whole_node_reservation(engine: str) -> None:
    c = cluster_of(dgx_h100(2))
    res = [Reservation(id="team", nodes=["dgx-h100-2"])]
    jobs = [_job("mine", 8, "team"), _job("x", 8), _job("y", 8)]
    d = _run(engine, jobs, c, res)
    assert [r.node for r in d.placement_of("mine").replicas] == ["dgx-h100-2"]  # type: ignore[union-attr]
    assert sum(1 for p in d.placements if p.job in ("x", "y")) == 1  # only node 1 is open to them


def test_unknown_reservation_is_rejected(engine: str) -> None:
    c = cluster_of(dgx_h100(1))
    d = _run(engine, [_job("lost", 1, "nope")], c, [GPU4.model_copy(update={"gpus": {"dgx-h100": 4}})])
    [r] = d.rejected
    assert r.errors[0]["code"] == "reservation" and "does not exist" in r.errors[0]["message"]


@pytest.mark.parametrize(
    ("res", "state"),
    [
        (Reservation(id="r", gpus={"dgx-h100": 4}, start=NOW + timedelta(hours=1)), "not_started"),
        (Reservation(id="r", gpus={"dgx-h100": 4}, end=NOW - timedelta(seconds=1)), "ended"),
        (
            Reservation(id="r", gpus={"dgx-h100": 4}, start=NOW - timedelta(hours=2), timeout_s=3600),
            "released",
        ),
    ],
)
def test_inactive_reservation_makes_members_wait_and_frees_its_capacity(
    engine: str, res: Reservation, state: str
) -> None:
    # "other" runs 30 minutes: it ends before a reservation that starts in an hour.
    c = cluster_of(dgx_h100(1))
    d = _run(engine, [_job("member", 4, "r"), _job("other", 8, hours=0.5)], c, [res])
    reason = pending_reason(d, "member") or ""
    assert reason.startswith("RESERVATION_INACTIVE") and d.pending[0].reasons[0].details["state"] == state
    assert d.placement_of("other") is not None  # nothing is held now: the whole node is open
    assert d.reservations == []


@pytest.mark.parametrize("hours", [2.0, None])
def test_work_that_would_run_into_a_reservation_that_starts_later_waits(
    engine: str, hours: float | None
) -> None:
    # The reservation holds 4 GPUs from +1 h. An 8-GPU job of 2 h (or of unknown length) started now would
    # still hold them then: conservative backfill keeps it waiting, naming the reservation. A 6-GPU... no:
    # a 4-GPU job fits beside the reservation's GPUs and may start.
    c = cluster_of(dgx_h100(1))
    res = Reservation(id="r", gpus={"dgx-h100": 4}, start=NOW + timedelta(hours=1))
    d = _run(engine, [_job("big", 8, hours=hours), _job("small", 4, hours=hours)], c, [res])
    assert d.placement_of("big") is None
    [why] = [p.reasons for p in d.pending if p.job == "big"]
    assert why[0].code == "BACKFILL_WOULD_DELAY" and why[0].details["reservation"] == "r"
    small = d.placement_of("small")
    assert small is not None and len(small.replicas[0].gpus) == 4


def test_checker_catches_a_non_member_on_reserved_gpus() -> None:
    from solver.decision import Decision, JobPlacement, ReplicaPlacement

    c = cluster_of(dgx_h100(1))
    res = [Reservation(id="r", gpus={"dgx-h100": 4})]
    d = Decision(
        placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100", gpus=list(range(8)))])]
    )
    assert [v.rule for v in check(d, [_job("a", 8)], c, now=NOW, reservations=res)] == ["reservation"]


def test_reservation_file_form_and_errors() -> None:
    [r] = load_reservations(
        '[{"id": "n", "gpus": {"dgx-1": 2}, "start": "2026-01-01T00:00:00Z", "timeout_s": 60}]'
    )
    assert r.gpus == {"dgx-1": 2} and r.timeout_s == 60
    from solver.jobs.errors import JobValidationError

    for bad in (
        '[{"id": "n"}]',
        '[{"id": "n", "nodes": ["a"], "gpus": {"a": 1}}]',
        '[{"id": "n", "gpus": {"a": 0}}]',
        '[{"id": "n", "nodes": ["a"]}, {"id": "n", "nodes": ["b"]}]',
    ):
        with pytest.raises(JobValidationError):
            load_reservations(bad)


def test_no_reservations_means_unknown(engine: str) -> None:
    d = place([_job("m", 1, "nightly")], cluster_of(dgx_h100(1)), Policy(engine=engine), now=NOW)
    assert_valid(d, [_job("m", 1, "nightly")], cluster_of(dgx_h100(1)))
    assert [r.job for r in d.rejected] == ["m"]


def test_whole_node_member_with_cpu_leaves_the_rest_held(engine: str) -> None:
    # A member taking 4 GPUs and 16 cores of a whole reserved node: the hold keeps the other 4 GPUs and
    # the 224 - 16 = 208 cores left (it used to claim all 224 again, and place() failed on the overlap).
    c = cluster_of(dgx_h100(2))
    member = Job(
        id="m", reservation=ReservationRef(id="r"), tasks=[TaskGroup(cpu_cores=16, gpu=GpuDemand(count=4))]
    )
    other = Job(id="o", tasks=[TaskGroup(cpu_cores=16, gpu=GpuDemand(count=4))])
    d = _run(engine, [member, other], c, [Reservation(id="r", nodes=["dgx-h100-1"])])
    assert [r.node for r in d.placement_of("m").replicas] == ["dgx-h100-1"]  # type: ignore[union-attr]
    assert [r.node for r in d.placement_of("o").replicas] == ["dgx-h100-2"]  # type: ignore[union-attr]


def test_member_waits_while_another_member_fills_the_reservation(engine: str) -> None:
    # The reserved node is busy with an earlier member; a second member of the same size waits for it,
    # it is not rejected as too big (the reservation holds 8 GPUs, 0 of them free now).
    c = cluster_of(dgx_h100(2)).allocate(
        {"job": "first", "replicas": [{"node": "dgx-h100-2", "gpus": list(range(8))}]}
    )
    d = _run(engine, [_job("second", 8, "team")], c, [Reservation(id="team", nodes=["dgx-h100-2"])])
    assert d.rejected == [] and d.placement_of("second") is None
    assert (pending_reason(d, "second") or "").startswith("INSUFFICIENT_CAPACITY")
