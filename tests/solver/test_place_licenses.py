"""Cluster-wide licences (``Job.licenses``, ``Inventory.licenses``; Slurm's ``--licenses`` and
``Licenses=``): a job starts only while the seats running jobs hold, with what the decision starts, leave
enough of each licence it asks for; else it waits with ``LICENSES``. Both engines, every decision through
the checker (rule 22), planned starts too, and the checker alone on decisions built by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.solver.checks import check
from placer.solver.decision import Decision, Hold, JobPlacement, ReplicaPlacement
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.solver.session import Session
from placer.topology import Cluster, Inventory, cluster_of, dgx_h100
from tests.solver.conftest import ENGINES, NOW, Solve, assert_valid


def _cluster(seats: dict[str, int], *running: dict) -> Cluster:  # type: ignore[type-arg]
    c = cluster_of(dgx_h100(2), Inventory(licenses=seats))
    return c.with_allocations(list(running)) if running else c


def _holder(job: str, seats: dict[str, int], *, hours: float | None = None, spot: bool = False) -> dict:  # type: ignore[type-arg]
    return {
        "job": job,
        "licenses": seats,
        "priority_class": "spot" if spot else "on-demand",
        "preemptible": spot,
        "started_at": NOW - timedelta(hours=1),
        "expected_end": None if hours is None else NOW + timedelta(hours=hours),
        "replicas": [{"node": "dgx-h100-1", "gpus": [7]}],
    }


def _job(job_id: str, seats: dict[str, int], *, priority: int = 0, gpus: int = 1, minutes: float = 30) -> Job:
    return Job(
        id=job_id,
        priority=priority,
        duration_s=minutes * 60,
        licenses=seats,
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
    )


def _reasons(d: Decision, job: str) -> list[dict]:  # type: ignore[type-arg]
    [p] = [p for p in d.pending if p.job == job]
    return [r.model_dump() for r in p.reasons if r.code == "LICENSES"]


def test_running_seats_and_what_starts_stay_within_the_pool(solve: Solve) -> None:
    # 4 matlab seats, a running job holds 2: of four 1-seat jobs (GPUs for all), two start, the two of
    # highest priority; the others wait: 4 - 2 - 2 = 0 left, each needs 1.
    c = _cluster({"matlab": 4}, _holder("old", {"matlab": 2}))
    jobs = [_job(f"j{i}", {"matlab": 1}, priority=i) for i in range(4)]
    d = solve(jobs, c, plan=False)
    assert not d.stats.status.startswith("CPSAT_REJECTED")  # CP-SAT's model keeps the seats itself
    assert sorted(p.job for p in d.placements) == ["j2", "j3"]
    for waiting in ("j0", "j1"):
        [r] = _reasons(d, waiting)
        assert r["details"] == {"license": "matlab", "total": 4, "held": 2, "started": 2, "seats": 1}


def test_cpsat_keeps_the_seats_where_every_job_fits_the_gpus(solve: Solve) -> None:
    # 3 seats; one job asking 2 and two asking 1 each (priority 0): the GPUs hold all three, the seats
    # three of the four asked. Any answer starts at most 3 seats' worth: the 2-seat job with one other, or
    # both 1-seat jobs.
    c = _cluster({"ansys": 3})
    jobs = [_job("big", {"ansys": 2}), _job("s1", {"ansys": 1}), _job("s2", {"ansys": 1})]
    d = solve(jobs, c, plan=False)
    assert not d.stats.status.startswith("CPSAT_REJECTED")
    started = sum(next(j for j in jobs if j.id == p.job).licenses["ansys"] for p in d.placements)
    assert started <= 3 and len(d.placements) == 2


def test_each_licence_a_job_asks_for_must_have_room(solve: Solve) -> None:
    # matlab has room, ansys has none left (1 seat, held): the job waits, naming ansys only.
    c = _cluster({"matlab": 4, "ansys": 1}, _holder("old", {"ansys": 1}))
    d = solve([_job("both", {"matlab": 1, "ansys": 1})], c, plan=False)
    assert d.placements == []
    assert [r["details"]["license"] for r in _reasons(d, "both")] == ["ansys"]


def test_a_licence_the_cluster_does_not_define_has_no_seat(solve: Solve) -> None:
    d = solve([_job("j", {"fluent": 1})], _cluster({"matlab": 4}), plan=False)
    [r] = _reasons(d, "j")
    assert r["details"]["total"] == 0 and "defines no licence 'fluent'" in r["message"]


def test_more_seats_than_the_cluster_has_is_unsatisfiable_not_a_wait(solve: Solve) -> None:
    d = solve([_job("j", {"matlab": 5})], _cluster({"matlab": 4}))
    [p] = d.pending
    assert [r.code for r in p.reasons] == ["UNSATISFIABLE"] and d.reservations == []  # never planned
    assert p.reasons[0].details["total"] == 4 and p.reasons[0].details["seats"] == 5


def test_jobs_without_licences_are_not_limited(solve: Solve) -> None:
    c = _cluster({"matlab": 1}, _holder("old", {"matlab": 1}))
    d = solve([Job(id="plain", tasks=[TaskGroup(gpu=GpuDemand(count=1))])], c, plan=False)
    assert [p.job for p in d.placements] == ["plain"]


def test_an_eviction_gives_no_seat_back_in_the_same_decision(solve: Solve) -> None:
    # A preemptible spot job holds the only seat; an urgent job asking for it is not placed by evicting
    # the spot job (its seat comes back once it has stopped: the next decision's), and nothing is evicted.
    c = _cluster({"matlab": 1}, _holder("spot", {"matlab": 1}, spot=True))
    urgent = Job.model_validate({**_job("urgent", {"matlab": 1}).model_dump(), "priority_class": "reserved"})
    d = solve([urgent], c, plan=False)
    assert d.placements == [] and d.preemptions == []
    assert _reasons(d, "urgent")


def test_a_waiting_job_is_planned_when_seats_come_back(solve: Solve) -> None:
    # All 4 seats held until NOW + 1 h; three jobs of 3 seats and 30 minutes each: one at a time, from
    # 1 h, in priority order (j2 first), 30 minutes apart.
    c = _cluster({"matlab": 4}, _holder("old", {"matlab": 4}, hours=1))
    jobs = [_job(f"j{i}", {"matlab": 3}, priority=i) for i in range(3)]
    d = solve(jobs, c)
    starts = {h.job: h.start for h in d.reservations if h.kind == "plan"}
    hour = NOW + timedelta(hours=1)
    assert starts == {"j2": hour, "j1": hour + timedelta(minutes=30), "j0": hour + timedelta(minutes=60)}


def test_lower_priority_work_does_not_take_seats_a_planned_start_needs(solve: Solve) -> None:
    # 3 matlab seats, a running job holds 2 for one more hour. "high" needs all 3: it can start in an hour.
    # "low" (lower priority) needs 1, free now; running 3 hours it would still hold it then, and "high"
    # would wait 3 hours instead of 1 (conservative backfill, Slurm's bf_licenses): it waits; "short"
    # (30 minutes) ends before and starts now.
    c = _cluster({"matlab": 3}, _holder("old", {"matlab": 2}, hours=1))
    high = _job("high", {"matlab": 3}, priority=10)
    low = _job("low", {"matlab": 1}, priority=1, minutes=180)
    d = solve([high, low], c)
    [plan] = [h for h in d.reservations if h.job == "high"]
    assert plan.start == NOW + timedelta(hours=1)
    assert [p.job for p in d.placements] == []
    [p] = [p for p in d.pending if p.job == "low"]
    assert [r.code for r in p.reasons] == ["BACKFILL_WOULD_DELAY", "PLANNED_START"]
    assert p.reasons[0].details["licenses"] == ["matlab"] and p.reasons[0].details["job"] == "high"
    # It is planned once "high" (30 minutes from the hour) has given its 3 seats back.
    [later] = [h for h in d.reservations if h.job == "low"]
    assert later.start == NOW + timedelta(minutes=90)
    short = _job("short", {"matlab": 1}, priority=1, minutes=30)
    d = solve([high, short], c)
    assert [p.job for p in d.placements] == ["short"]
    [plan] = [h for h in d.reservations if h.job == "high"]
    assert plan.start == NOW + timedelta(hours=1)


def test_higher_priority_work_may_take_seats_a_plan_then_waits_for(solve: Solve) -> None:
    # The same seats, "first" of higher priority than the planned job: it starts now (3 hours, 1 seat),
    # and the planned job starts when both the running job and "first" have given their seats back.
    c = _cluster({"matlab": 3}, _holder("old", {"matlab": 2}, hours=1))
    d = solve(
        [_job("first", {"matlab": 1}, priority=20, minutes=180), _job("high", {"matlab": 3}, priority=10)], c
    )
    assert [p.job for p in d.placements] == ["first"]
    [plan] = [h for h in d.reservations if h.job == "high"]
    assert plan.start == NOW + timedelta(hours=3)


def test_a_session_counts_the_seats_of_what_it_started(engine: str) -> None:
    from placer.solver.policy import Policy

    s = Session(_cluster({"matlab": 2}), Policy(engine=engine, plan=False))  # type: ignore[arg-type]
    d = s.decide([_job("a", {"matlab": 2})], now=NOW)
    assert [p.job for p in d.placements] == ["a"]
    s.commit(d)
    assert s.cluster.running_job("a").licenses == {"matlab": 2}
    d = s.decide([_job("b", {"matlab": 1})], now=NOW)
    assert d.placements == [] and _reasons(d, "b")[0]["details"]["held"] == 2
    s.finish("a")
    assert [p.job for p in s.decide([_job("b", {"matlab": 1})], now=NOW).placements] == ["b"]


def _rep(gpu: int) -> ReplicaPlacement:
    return ReplicaPlacement(node="dgx-h100-2", gpus=[gpu])


def _on(job: str, gpu: int) -> JobPlacement:
    return JobPlacement(job=job, replicas=[_rep(gpu)])


def test_the_checker_refuses_placements_over_the_pool() -> None:
    c = _cluster({"matlab": 3}, _holder("old", {"matlab": 2}))
    jobs = [_job("a", {"matlab": 1}), _job("b", {"matlab": 1})]
    d = Decision(placements=[_on("a", 0), _on("b", 1)])
    violations = [v for v in check(d, jobs, c, now=NOW) if v.rule == "licenses"]
    assert [(v.rule, v.job) for v in violations] == [("licenses", "b")]
    assert "holds 2" in violations[0].message or "hold 2" in violations[0].message
    # One of them fits: 2 + 1 = 3.
    ok = Decision(
        placements=[_on("a", 0)], pending=[{"job": "b", "reasons": [{"code": "LICENSES", "message": ""}]}]
    )
    assert [v for v in check(ok, jobs, c, now=NOW) if v.rule == "licenses"] == []


def test_the_checker_counts_an_evicted_jobs_seats_in_the_decision() -> None:
    c = _cluster({"matlab": 1}, _holder("spot", {"matlab": 1}, spot=True, hours=5))
    job = _job("a", {"matlab": 1})
    evicting = Decision.model_validate(
        {
            "placements": [_on("a", 0).model_dump()],
            "preemptions": [{"job": "spot", "for": ["a"], "nodes": ["dgx-h100-1"]}],
        }
    )
    assert [v.rule for v in check(evicting, [job], c, now=NOW) if v.rule == "licenses"] == ["licenses"]


def test_the_checker_refuses_plans_that_overlap_over_the_pool() -> None:
    # 4 seats free from NOW + 1 h (the holder's end); two 3-seat plans at 1 h and 1 h 10 min, each 30
    # minutes long, overlap: 6 seats at 1 h 10. Starting the second at 1 h 30 is fine.
    c = _cluster({"matlab": 4}, _holder("old", {"matlab": 4}, hours=1))
    jobs = [_job("a", {"matlab": 3}), _job("b", {"matlab": 3})]
    hour = NOW + timedelta(hours=1)

    def plans(second: timedelta) -> Decision:
        holds = [
            Hold(job="a", kind="plan", start=hour, end=hour + timedelta(minutes=30), replicas=[_rep(0)]),
            Hold(
                job="b",
                kind="plan",
                start=hour + second,
                end=hour + second + timedelta(minutes=30),
                replicas=[_rep(1)],
            ),
        ]
        pending = [{"job": j, "reasons": [{"code": "LICENSES", "message": ""}]} for j in ("a", "b")]
        return Decision.model_validate({"pending": pending, "reservations": [h.model_dump() for h in holds]})

    bad = [
        (v.rule, v.job) for v in check(plans(timedelta(minutes=10)), jobs, c, now=NOW) if v.rule == "licenses"
    ]
    assert bad == [("licenses", "b")]
    assert [v for v in check(plans(timedelta(minutes=30)), jobs, c, now=NOW) if v.rule == "licenses"] == []


_FUZZ_CLUSTER = _cluster(
    {"matlab": 3, "ansys": 1},
    _holder("old", {"matlab": 2}, hours=1),
    {**_holder("forever", {"ansys": 1}), "replicas": [{"node": "dgx-h100-2", "gpus": [7]}]},
)


@st.composite
def _licence_batches(draw: st.DrawFn) -> list[Job]:
    n = draw(st.integers(1, 6))
    return [
        Job(
            id=f"j{i}",
            priority=draw(st.integers(0, 20)),
            duration_s=draw(st.sampled_from([None, 600.0, 1800.0, 3600.0, 10800.0])),
            licenses=draw(st.sampled_from([{}, {"matlab": 1}, {"matlab": 2}, {"matlab": 3}, {"ansys": 1}])),
            tasks=[TaskGroup(gpu=GpuDemand(count=draw(st.sampled_from([1, 4, 8]))))],
        )
        for i in range(n)
    ]


@pytest.mark.parametrize("engine", ENGINES)
@given(batch=_licence_batches())
def test_random_licence_batches_plan_and_backfill_validly(engine: str, batch: list[Job]) -> None:
    # Seats held by running jobs until an hour from now (and one for good), jobs with and without time
    # limits: every decision, its plans and what backfill withdrew for seats, passes the checker (rules
    # 18 and 22 among them); a job waiting on a plan's seats names a job that has a plan.
    d = place(batch, _FUZZ_CLUSTER, Policy(engine=engine, time_limit_s=1.0), now=NOW)
    assert_valid(d, batch, _FUZZ_CLUSTER)
    planned = {h.job for h in d.reservations if h.kind in ("plan", "workflow")}
    for p in d.pending:
        for r in p.reasons:
            if r.code == "BACKFILL_WOULD_DELAY" and "licenses" in r.details:
                assert r.details["job"] in planned
