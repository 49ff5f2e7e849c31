"""Checker rule 15 (reservations, OJS ML §8.3) on hand-built decisions: the checker, not the solver, is
under test. A running member keeps a reservation with a timeout held; work started now must not run into a
reservation that starts later; a member must end by its reservation's end."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, Hold
from placer.solver.jobs.model import GpuDemand, Job, ReservationRef, TaskGroup
from placer.solver.reservations import Reservation
from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.check_helpers import decision, place, rep

NOW = datetime(2026, 1, 1, 1, tzinfo=UTC)
N1, N2 = "dgx-h100-1", "dgx-h100-2"


def _job(job_id: str, gpus: int, reservation: str | None = None, hours: float | None = None) -> Job:
    ref = ReservationRef(id=reservation) if reservation else None
    duration = None if hours is None else hours * 3600
    return Job(id=job_id, reservation=ref, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))], duration_s=duration)


def _rules(d, jobs: list[Job], c: Cluster, res: list[Reservation]) -> list[str]:  # type: ignore[no-untyped-def]
    return [v.rule for v in check(d, jobs, c, now=NOW, reservations=res)]


# -- a running member keeps a reservation with timeout_s held ---------------------------------------------

#: r holds node 1 from midnight, released after 600 s unless used; at 01:00 that has long passed.
TIMED = Reservation(id="r", nodes=[N1], start=NOW - timedelta(hours=1), timeout_s=600)


def _with_m1(names_r: bool) -> Cluster:
    """m1 runs on GPUs 0-3 of node 1 since 00:01; it is a member of r only when its envelope names r."""
    return cluster_of(dgx_h100(2)).allocate(
        {
            "job": "m1",
            "reservation": "r" if names_r else None,
            "started_at": NOW - timedelta(minutes=59),
            "replicas": [{"node": N1, "gpus": [0, 1, 2, 3]}],
        }
    )


def test_a_running_member_keeps_the_reservation_held() -> None:
    c = _with_m1(names_r=True)
    member = decision(place("m2", rep(N1, [4, 5])))
    assert _rules(member, [_job("m2", 2, "r")], c, [TIMED]) == []
    # The audit's decision: the non-member on the reserved node while m1 runs in r.
    other = decision(place("other", rep(N1, [4, 5])))
    assert _rules(other, [_job("other", 2)], c, [TIMED]) == ["reservation"]


def test_a_job_merely_sitting_on_the_reserved_node_does_not_keep_it_held() -> None:
    c = _with_m1(names_r=False)
    member = decision(place("m2", rep(N1, [4, 5])))
    assert _rules(member, [_job("m2", 2, "r")], c, [TIMED]) == ["reservation"]  # r is released
    other = decision(place("other", rep(N1, [4, 5])))
    assert _rules(other, [_job("other", 2)], c, [TIMED]) == []


def test_a_member_running_outside_the_reservation_does_not_keep_it_held() -> None:
    c = cluster_of(dgx_h100(2)).allocate(
        {"job": "m1", "reservation": "r", "replicas": [{"node": N2, "gpus": [0]}]}
    )
    other = decision(place("other", rep(N1, [0, 1])))
    assert _rules(other, [_job("other", 2)], c, [TIMED]) == []


# -- work started now must not run into a reservation that starts later -----------------------------------

#: The audit's res_f: node 1 whole from 01:00 to 05:00, checked at midnight.
LATER = Reservation(id="fut", nodes=[N1], start=NOW, end=NOW + timedelta(hours=4))
MIDNIGHT = NOW - timedelta(hours=1)


@pytest.mark.parametrize(
    ("hours", "rules"),
    [(2.0, ["reservation-backfill"]), (None, ["reservation-backfill"]), (1.0, []), (0.5, [])],
)
def test_a_non_member_on_a_whole_node_reserved_later_must_end_by_its_start(
    hours: float | None, rules: list[str]
) -> None:
    # From midnight: 2 h runs past 01:00, no duration runs forever, 1 h ends exactly at 01:00.
    d = decision(place("long", rep(N1, list(range(8)))))
    got = check(
        d, [_job("long", 8, hours=hours)], cluster_of(dgx_h100(2)), now=MIDNIGHT, reservations=[LATER]
    )
    assert [v.rule for v in got] == rules
    # On the other node nothing is reserved.
    d = decision(place("long", rep(N2, list(range(8)))))
    assert (
        check(d, [_job("long", 8, hours=hours)], cluster_of(dgx_h100(2)), now=MIDNIGHT, reservations=[LATER])
        == []
    )


GPU_LATER = Reservation(id="fut", gpus={"dgx-h100": 4}, start=NOW)


def _one(running_end: timedelta | None = None) -> Cluster:
    """One 8-GPU node; with ``running_end``, a job on GPUs 0-1 expected to end that long after midnight
    (``timedelta.max``: never)."""
    c = cluster_of(dgx_h100(1))
    if running_end is None:
        return c
    end = None if running_end == timedelta.max else MIDNIGHT + running_end
    return c.allocate({"job": "run", "expected_end": end, "replicas": [{"node": "dgx-h100", "gpus": [0, 1]}]})


@pytest.mark.parametrize(
    ("gpus", "hours", "running_end", "rules"),
    [
        # 8 GPUs - 4 placed still running at 01:00 = 4 free: the reservation's 4 fit.
        (4, 2.0, None, []),
        # 8 - 6 = 2 < 4.
        (6, 2.0, None, ["reservation-backfill"]),
        # Ends at 00:30: nothing of it is left at 01:00.
        (6, 0.5, None, []),
        # A running job without an end holds 2 more: 8 - 2 - 4 = 2 < 4.
        (4, 2.0, timedelta.max, ["reservation-backfill"]),
        # The running job ends at 00:30: 8 - 4 = 4 again.
        (4, 2.0, timedelta(minutes=30), []),
    ],
)
def test_work_started_now_leaves_a_later_gpu_reservation_its_count(
    gpus: int, hours: float, running_end: timedelta | None, rules: list[str]
) -> None:
    c = _one(running_end)
    free = [g for g in range(8) if g not in ((0, 1) if running_end is not None else ())]
    d = decision(place("j", rep("dgx-h100", free[:gpus])))
    assert [
        v.rule for v in check(d, [_job("j", gpus, hours=hours)], c, now=MIDNIGHT, reservations=[GPU_LATER])
    ] == rules


def test_a_member_of_a_reservation_that_starts_later_is_not_placed_now() -> None:
    d = decision(place("m", rep(N1, [0])))
    got = check(
        d, [_job("m", 1, "fut", hours=0.5)], cluster_of(dgx_h100(2)), now=MIDNIGHT, reservations=[LATER]
    )
    assert [v.rule for v in got] == ["reservation"]


# -- a member ends by its reservation's end ----------------------------------------------------------------


@pytest.mark.parametrize(("hours", "rules"), [(0.5, []), (1.0, []), (1.5, ["reservation"]), (None, [])])
def test_a_member_with_a_known_duration_ends_by_the_reservations_end(
    hours: float | None, rules: list[str]
) -> None:
    # r ends at 02:00, an hour from now; a member without a duration is not refused (length unknown).
    r = Reservation(id="r", nodes=[N1], end=NOW + timedelta(hours=1))
    d = decision(place("m", rep(N1, [0])))
    assert _rules(d, [_job("m", 1, "r", hours=hours)], cluster_of(dgx_h100(2)), [r]) == rules


# -- plans of other jobs leave a reservation's capacity free while it is held ------------------------------

#: Node 1 whole from 01:00 to 03:00, checked at midnight.
WINDOW = Reservation(id="win", nodes=[N1], start=NOW, end=NOW + timedelta(hours=2))


def _planned(job: str, node: str, gpus: list[int], start: timedelta, hours: float) -> Decision:
    """``job`` pending, with a plan on ``gpus`` of ``node`` from midnight + ``start`` for ``hours``."""
    d = decision(pending=(job,))
    begin = MIDNIGHT + start
    d.reservations.append(
        Hold(
            kind="plan", job=job, start=begin, end=begin + timedelta(hours=hours), replicas=[rep(node, gpus)]
        )
    )
    return d


@pytest.mark.parametrize(
    ("start", "node", "reservation", "rules"),
    [
        # 00:30-01:00 ends exactly when the window opens; 03:00-03:30 starts exactly when it closes.
        (timedelta(minutes=30), N1, None, []),
        (timedelta(hours=3), N1, None, []),
        # 00:45-01:15 runs into the window, 02:00-02:30 lies inside it.
        (timedelta(minutes=45), N1, None, ["reservation-plan"]),
        (timedelta(hours=2), N1, None, ["reservation-plan"]),
        # Node 2 is not reserved. A member's plan is not this rule's concern (rule 18's plan-placement
        # re-checks a plan without the declared reservations, so it refuses any member's plan; the engine
        # plans no member).
        (timedelta(hours=2), N2, None, []),
        (timedelta(hours=2), N1, "win", ["plan-placement"]),
    ],
)
def test_a_non_member_plan_stays_off_a_whole_node_reservation_during_its_window(
    start: timedelta, node: str, reservation: str | None, rules: list[str]
) -> None:
    d = _planned("p", node, list(range(8)), start, 0.5)
    jobs = [_job("p", 8, reservation, hours=0.5)]
    got = check(d, jobs, cluster_of(dgx_h100(2)), now=MIDNIGHT, reservations=[WINDOW])
    assert [v.rule for v in got] == rules


H2 = timedelta(hours=2)


@pytest.mark.parametrize(
    ("gpus", "start", "hours", "running_end", "placed_hours", "rules"),
    [
        # At 02:00, 8 - 4 planned = 4 free: the reservation's 4 fit.
        (4, H2, 1.0, None, None, []),
        # 8 - 6 = 2 < 4.
        (6, H2, 1.0, None, None, ["reservation-plan"]),
        # 00:30-01:00 ends as the reservation starts.
        (6, timedelta(minutes=30), 0.5, None, None, []),
        # A running job without an end holds 2 more: 8 - 2 - 4 = 2 < 4; one that ended at 00:30 holds none.
        (4, H2, 1.0, timedelta.max, None, ["reservation-plan"]),
        (4, H2, 1.0, timedelta(minutes=30), None, []),
        # A 2-GPU job placed now without a duration (-1) still runs at 02:00 (8 - 2 - 4 = 2); one of 1 h
        # has ended by then.
        (4, H2, 1.0, None, -1.0, ["reservation-plan"]),
        (4, H2, 1.0, None, 1.0, []),
    ],
)
def test_non_member_plans_leave_a_gpu_reservation_its_count(
    gpus: int,
    start: timedelta,
    hours: float,
    running_end: timedelta | None,
    placed_hours: float | None,
    rules: list[str],
) -> None:
    c = _one(running_end)
    d = _planned("p", "dgx-h100", list(range(8 - gpus, 8)), start, hours)
    jobs = [_job("p", gpus, hours=hours)]
    if placed_hours is not None:  # on GPUs 2-3, beside the running job's
        d.placements.append(place("now", rep("dgx-h100", [2, 3])))
        jobs.append(_job("now", 2, hours=None if placed_hours < 0 else placed_hours))
    got = check(d, jobs, c, now=MIDNIGHT, reservations=[GPU_LATER])
    assert [v.rule for v in got] == rules


# -- members stay inside their reservation (OJS ML §8.3) ------------------------------------------------


def test_a_member_placed_outside_its_reservation_is_a_violation() -> None:
    # r holds node 1 whole, held now: a member of r on node 2 runs outside it, on node 1 it is fine.
    held = Reservation(id="r", nodes=[N1], start=NOW - timedelta(minutes=5))
    c = cluster_of(dgx_h100(2))
    inside = decision(place("m", rep(N1, [0, 1])))
    assert _rules(inside, [_job("m", 2, "r")], c, [held]) == []
    outside = decision(place("m", rep(N2, [0, 1])))
    (v,) = check(outside, [_job("m", 2, "r")], c, now=NOW, reservations=[held])
    assert (v.rule, v.job, v.node) == ("reservation", "m", N2) and "outside its reservation 'r'" in v.message


def test_members_beyond_a_gpu_count_reservations_count_are_a_violation() -> None:
    # r reserves 4 GPUs of node 1: two members of 2 GPUs fit it, a third 2-GPU member there is over it.
    held = Reservation(id="r", gpus={N1: 4}, start=NOW - timedelta(minutes=5))
    c = cluster_of(dgx_h100(2))
    members = [_job(f"m{k}", 2, "r") for k in range(3)]
    two = decision(place("m0", rep(N1, [0, 1])), place("m1", rep(N1, [2, 3])), pending=("m2",))
    assert _rules(two, members, c, [held]) == []
    three = decision(place("m0", rep(N1, [0, 1])), place("m1", rep(N1, [2, 3])), place("m2", rep(N1, [4, 5])))
    (v,) = check(three, members, c, now=NOW, reservations=[held])
    assert (v.rule, v.job) == (
        "reservation",
        "r",
    ) and "members hold 6 GPUs of dgx-h100-1; it reserves 4" in v.message
