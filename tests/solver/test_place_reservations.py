"""Reservations (OJS ML resources §8.3): members run only inside, others never use held capacity (not even
by evicting what runs there), unknown or too-small reservations reject, inactive ones make members wait, a
running member keeps a reservation with a timeout held. Every decision is checked, rule 15 included
(isolation)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, ReservationRef, TaskGroup
from placer.solver.policy import Policy
from placer.solver.reservations import Reservation, load_reservations
from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW, assert_valid, pending_reason, reason_codes


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
    from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement

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
    from placer.solver.jobs.errors import JobValidationError

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


N1, N2 = "dgx-h100-1", "dgx-h100-2"


def _running(job: str, node: str, gpus: list[int], cls: str = "spot", **kw: object) -> dict[str, object]:
    """A running job (started 59 minutes before NOW) in the shape ``Cluster.with_allocations`` takes."""
    return {
        "job": job,
        "priority_class": cls,
        "started_at": NOW - timedelta(minutes=59),
        "replicas": [{"node": node, "gpus": gpus}],
        **kw,
    }


FULL_N2 = _running("busy", N2, list(range(8)), "on-demand")


def test_a_non_member_never_evicts_its_way_into_a_whole_node_reservation(engine: str) -> None:
    # The audit's case: spot "s" holds GPUs 0-3 of the reserved node 1, node 2 is full of on-demand work.
    # On-demand "other" outranks "s", but what evicting "s" would free belongs to reservation r.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("s", N1, [0, 1, 2, 3]), FULL_N2])
    d = _run(engine, [_job("other", 4)], c, [Reservation(id="r", nodes=[N1])])
    assert d.placements == [] and d.preemptions == []
    assert reason_codes(d, "other") == ["INSUFFICIENT_CAPACITY"]
    why = d.pending[0].reasons[0]
    assert "reservation 'r'" in why.message
    assert (why.details["reservations"], why.details["reserved_nodes"]) == (["r"], [N1])


def test_a_non_member_waiting_beside_a_held_reservation_is_still_planned(engine: str) -> None:
    # Node 1 is reserved, node 2 busy until +1 h: "other" waits, naming the reservation in its capacity
    # reason, and gets a planned start on node 2 at +1 h (the reason must not make it unplannable).
    end = NOW + timedelta(hours=1)
    c = cluster_of(dgx_h100(2)).with_allocations([{**FULL_N2, "expected_end": end}])
    d = _run(engine, [_job("other", 4)], c, [Reservation(id="r", nodes=[N1])])
    assert reason_codes(d, "other") == ["INSUFFICIENT_CAPACITY", "PLANNED_START"]
    [plan] = [h for h in d.reservations if h.kind == "plan"]
    assert (plan.job, plan.start, [r.node for r in plan.replicas]) == ("other", end, [N2])


def test_a_non_member_may_not_evict_on_a_node_where_a_gpu_reservation_is_short(engine: str) -> None:
    # r reserves 4 GPUs of node 1; spot "s" holds 0-5, so r holds only 6 and 7 now. Evicting "s" for the
    # 6-GPU "other" would leave 8 - 6 = 2 GPUs for a reservation of 4: what an eviction frees there goes
    # to the reservation first.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("s", N1, list(range(6))), FULL_N2])
    d = _run(engine, [_job("other", 6)], c, [Reservation(id="r", gpus={N1: 4})])
    assert d.placements == [] and d.preemptions == []


def test_a_non_member_may_evict_beside_a_gpu_reservation_that_is_held_in_full(engine: str) -> None:
    # Spot "s" holds 0-3 and r holds its 4 GPUs (4-7) in full: evicting "s" frees GPUs r does not need.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("s", N1, [0, 1, 2, 3]), FULL_N2])
    d = _run(engine, [_job("other", 4)], c, [Reservation(id="r", gpus={N1: 4})])
    other = d.placement_of("other")
    assert (
        other is not None and other.replicas[0].node == N1 and sorted(other.replicas[0].gpus) == [0, 1, 2, 3]
    )
    assert [e.job for e in d.preemptions] == ["s"]


@pytest.mark.parametrize("member", [True, False])
def test_a_running_member_keeps_a_reservation_with_a_timeout_held(engine: str, member: bool) -> None:
    # r holds node 1 since an hour ago, timeout 600 s; "m1" (4 GPUs) has run on node 1 for 59 minutes.
    # When m1 names r, r is in use and stays held: member m2 gets node 1, the non-member waits (node 2 is
    # full). When m1 does not name r, nothing ran in r: it was released 600 s after its start, m2 waits
    # RESERVATION_INACTIVE and the non-member may use node 1.
    ref = {"reservation": "r"} if member else {}
    c = cluster_of(dgx_h100(2)).with_allocations(
        [_running("m1", N1, [0, 1, 2, 3], "on-demand", **ref), FULL_N2]
    )
    res = Reservation(id="r", nodes=[N1], start=NOW - timedelta(hours=1), timeout_s=600)
    d = _run(engine, [_job("m2", 2, "r"), _job("other", 2)], c, [res])
    if member:
        m2 = d.placement_of("m2")
        assert m2 is not None and [r.node for r in m2.replicas] == [N1]
        assert d.placement_of("other") is None
        assert [h.reservation for h in d.reservations] == ["r"]
    else:
        assert reason_codes(d, "m2") == ["RESERVATION_INACTIVE"]
        assert d.pending[0].reasons[0].details["state"] == "released"
        other = d.placement_of("other")
        assert other is not None and [r.node for r in other.replicas] == [N1]


def test_running_jobs_read_from_envelopes_carry_their_reservation() -> None:
    from placer.solver.running import running_from_envelopes

    a, b = running_from_envelopes(
        [
            {
                "id": "m1",
                "ext_ml_gpu_count": 4,
                "ext_ml_reservation_id": "r",
                "node": N1,
                "gpus": [0, 1, 2, 3],
            },
            {"id": "x", "ext_ml_gpu_count": 1, "node": N1, "gpus": [4]},
        ],
        "running.json",
    )
    assert (a.reservation, b.reservation) == ("r", None)


def test_members_cpsat_answer_survives_the_engines_own_recheck() -> None:
    # The members' phase calls decide() with the reservation allowed; the engine's re-check of CP-SAT's
    # answer must be told so, or it rejects every member placement as "not declared" and falls back to
    # greedy.
    from placer.solver.core import decide

    d = decide(
        [_job("m", 4, "r")],
        cluster_of(dgx_h100(1)),
        Policy(engine="cpsat", time_limit_s=2),
        now=NOW,
        reserved_ok=frozenset({"r"}),
    )
    assert d.placement_of("m") is not None
    assert not d.stats.status.startswith("CPSAT_REJECTED_BY_CHECKER"), d.stats.status


def test_a_reservation_naming_an_unknown_node_is_an_input_error() -> None:
    from placer.solver.jobs.errors import JobValidationError

    c = cluster_of(dgx_h100(1))
    with pytest.raises(JobValidationError) as e:
        place(
            [_job("m", 2, "r")],
            c,
            Policy(engine="greedy"),
            now=NOW,
            reservations=[Reservation(id="r", nodes=["nope"])],
        )
    [i] = e.value.issues
    assert (i.code, i.path) == ("enum", "[0].nodes[0]") and "'r'" in i.message and "'nope'" in i.message
    with pytest.raises(JobValidationError) as e:
        load_reservations(
            '[{"id": "ok", "gpus": {"dgx-h100": 8}}, {"id": "big", "gpus": {"dgx-h100": 9}}]', cluster=c
        )
    [i] = e.value.issues
    assert (
        (i.code, i.path) == ("range", "[1].gpus.dgx-h100") and "9 GPUs" in i.message and "has 8" in i.message
    )


def test_place_cli_exits_1_naming_the_reservation_field_and_node(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    from placer.cli import main

    (tmp_path / "c.yaml").write_text(
        "version: 1\nnodes:\n  - {name: n, count: 2, cpu_cores: 64, memory_gb: 512,\n"
        "     gpus: {type: nvidia-h100, count: 8}}\n"
    )
    (tmp_path / "j.json").write_text(
        '[{"id": "m", "type": "x", "queue": "q", "args": [], "ext_ml_gpu_count": 2}]'
    )
    (tmp_path / "r.json").write_text('[{"id": "r", "nodes": ["n-1", "nope"]}]')
    files = [str(tmp_path / n) for n in ("c.yaml", "j.json", "r.json")]
    argv = ["place", "--cluster", files[0], "--jobs", files[1], "--reservations", files[2]]
    rc = main([*argv, "--engine", "greedy"])
    err = capsys.readouterr().err
    assert rc == 1 and "[0].nodes[1]" in err and "reservation 'r'" in err and "'nope'" in err


def test_a_member_must_end_within_its_reservations_window(engine: str) -> None:
    # r holds 4 GPUs from an hour ago to an hour from now (a 2 h window, 1 h left). A 3 h member can never
    # fit the window: rejected. A 1.5 h member would fit a fresh window but outlive this one: it waits
    # RESERVATION_ENDS. A 0.5 h member and one of unknown length run.
    res = Reservation(
        id="r", gpus={"dgx-h100": 4}, start=NOW - timedelta(hours=1), end=NOW + timedelta(hours=1)
    )
    jobs = [_job("long", 1, "r", hours=3), _job("late", 1, "r", hours=1.5), _job("ok", 1, "r", hours=0.5)]
    jobs.append(_job("open", 1, "r"))
    d = _run(engine, jobs, cluster_of(dgx_h100(1)), [res])
    [rej] = d.rejected
    assert rej.job == "long" and "window is 7200 s" in rej.errors[0]["message"]
    assert reason_codes(d, "late") == ["RESERVATION_ENDS"]
    assert sorted(p.job for p in d.placements) == ["ok", "open"]


def test_members_of_a_whole_node_reservation_may_evict_there_and_the_node_stays_held(engine: str) -> None:
    # Member m (6 GPUs, on-demand) evicts spot "s" (GPUs 0-3) on reserved node 1; the hold then covers all
    # 8 GPUs of node 1, so the non-members go to node 2, evicting spot "t" there (node 2 is not reserved).
    # (The hold used to be worked out on the cluster before the members' eviction: place() raised a
    # TopologyError, m's GPUs double-booked with s's.)
    c = cluster_of(dgx_h100(2)).with_allocations(
        [_running("s", N1, [0, 1, 2, 3]), _running("t", N2, [0, 1, 2, 3])]
    )
    d = _run(engine, [_job("m", 6, "r"), _job("o", 4), _job("o2", 4)], c, [Reservation(id="r", nodes=[N1])])
    assert [r.node for r in d.placement_of("m").replicas] == [N1]  # type: ignore[union-attr]
    assert {r.node for j in ("o", "o2") for r in d.placement_of(j).replicas} == {N2}  # type: ignore[union-attr]
    assert [e.job for e in d.preemptions] == ["s", "t"]
    [hold] = d.reservations
    assert [(r.node, r.gpus) for r in hold.replicas] == [(N1, list(range(8)))]


def test_members_of_a_gpu_reservation_never_exceed_its_count_by_evicting(engine: str) -> None:
    # r reserves 4 GPUs of node 1 and holds 4-7 (spot "s" has 0-3). m1 takes the 4; m2 must wait rather
    # than evict "s" for 4 more: members would hold 8 GPUs of a 4-GPU reservation.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("s", N1, [0, 1, 2, 3])])
    d = _run(engine, [_job("m1", 4, "r"), _job("m2", 4, "r")], c, [Reservation(id="r", gpus={N1: 4})])
    assert [p.job for p in d.placements] == ["m1"] and d.preemptions == []
    assert d.placement_of("m1").replicas[0].gpus == [4, 5, 6, 7]  # type: ignore[union-attr]
    assert [p.job for p in d.pending] == ["m2"]


def _filled_until(n1_hours: float) -> Cluster:
    """Both nodes full: node 1 until ``n1_hours`` from now, node 2 until +10 h."""
    return cluster_of(dgx_h100(2)).with_allocations(
        [
            {
                "job": "r1",
                "expected_end": NOW + timedelta(hours=n1_hours),
                "replicas": [{"node": N1, "gpus": list(range(8))}],
            },
            {**FULL_N2, "expected_end": NOW + timedelta(hours=10)},
        ]
    )


@pytest.mark.parametrize(
    ("reservation", "gpus"),
    [
        (Reservation(id="r", nodes=[N1], start=NOW + timedelta(hours=1), end=NOW + timedelta(hours=3)), 8),
        # 4 of node 1's GPUs, but at +1 h r1 still sits on all 8: the hold gets none of its 4, and a plan of
        # 6 GPUs on node 1 at +2 h would leave it 2.
        (Reservation(id="r", gpus={N1: 4}, start=NOW + timedelta(hours=1), end=NOW + timedelta(hours=3)), 6),
    ],
)
def test_a_non_member_is_not_planned_into_a_reservation_that_starts_later(
    engine: str, reservation: Reservation, gpus: int
) -> None:
    # Node 1 frees at +2 h, inside the reservation's window [+1 h, +3 h); node 2 at +10 h. The 30-minute job
    # fits on node 1 at +2 h by capacity alone, but that is the reservation's; the first start outside its
    # window is +3 h, when it ends (the hold in the timeline used to take only what was free at +1 h).
    c = _filled_until(2)
    d = _run(engine, [_job("j", gpus, hours=0.5)], c, [reservation])
    [plan] = [h for h in d.reservations if h.kind == "plan"]
    assert (plan.start, [r.node for r in plan.replicas]) == (NOW + timedelta(hours=3), [N1])


def test_a_non_member_planned_to_end_by_a_later_reservations_start_may_use_its_node(engine: str) -> None:
    # Node 1 frees at +1 h and is reserved whole from +2 h: a 30-minute job planned at +1 h ends before the
    # window, so the node stays open to it.
    c = _filled_until(1)
    res = Reservation(id="r", nodes=[N1], start=NOW + timedelta(hours=2), end=NOW + timedelta(hours=3))
    d = _run(engine, [_job("j", 8, hours=0.5)], c, [res])
    [plan] = [h for h in d.reservations if h.kind == "plan"]
    assert (plan.start, [r.node for r in plan.replicas]) == (NOW + timedelta(hours=1), [N1])


def test_a_member_whose_reserved_node_is_down_waits_and_is_not_rejected(engine: str) -> None:
    # The reservation's node went down (not ready): the member cannot run now, but it fits the
    # reservation, so it waits for the node (NODES_UNAVAILABLE) instead of being rejected as a job the
    # reservation can never hold (which is what an UNSATISFIABLE member is).
    from placer.topology.availability import with_availability

    c = with_availability(cluster_of(dgx_h100(2)), {"dgx-h100-2": False})
    res = [Reservation(id="team", nodes=["dgx-h100-2"])]
    d = _run(engine, [_job("mine", 8, "team")], c, res)
    assert d.rejected == [] and reason_codes(d, "mine")[0] == "NODES_UNAVAILABLE"
    up = with_availability(c, {"dgx-h100-2": True})
    d = _run(engine, [_job("mine", 8, "team")], up, res)
    assert [r.node for r in d.placement_of("mine").replicas] == ["dgx-h100-2"]  # type: ignore[union-attr]
