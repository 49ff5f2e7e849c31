"""Throttles (``Job.throttle``, a Slurm array's ``%N``): at most ``max_running`` jobs of a group run at once,
counting the group's running jobs; the others wait with ``THROTTLE``. Every decision here is checked by
the independent checker (rule 20, ``solver/checks/throttle.py``)."""

from __future__ import annotations

import json
from datetime import timedelta

from placer.solver.checks import check
from placer.solver.decision import (
    Decision,
    Eviction,
    Hold,
    JobPlacement,
    PendingJob,
    Reason,
    ReplicaPlacement,
)
from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup, Throttle
from placer.solver.jobs.queues import QueueConfig
from placer.solver.policy import Policy
from placer.solver.session import Session
from placer.topology import RunningJob, cluster_of, dgx_h100
from tests.solver.conftest import NOW, reason_codes


def _task(job_id: str, group: str | None, most: int = 2, gpus: int = 1) -> Job:
    throttle = None if group is None else Throttle(group=group, max_running=most)
    return Job(id=job_id, throttle=throttle, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))])


def _running(job_id: str, group: str | None, gpu: int) -> RunningJob:
    return RunningJob(job=job_id, throttle_group=group, replicas=[{"node": "dgx-h100-1", "gpus": [gpu]}])


def test_at_most_n_of_a_group_start_and_the_others_wait(solve) -> None:  # type: ignore[no-untyped-def]
    # One DGX (8 GPUs) holds all eight: sweep lets 2 run, eval 1; the job without a throttle just runs.
    jobs = [_task(f"sweep_{k}", "sweep") for k in range(5)]
    jobs += [_task(f"eval_{k}", "eval", most=1) for k in range(2)] + [_task("free", None)]
    d = solve(jobs, cluster_of(dgx_h100(1)))
    placed = sorted(p.job for p in d.placements)
    assert sum(j.startswith("sweep_") for j in placed) == 2
    assert sum(j.startswith("eval_") for j in placed) == 1
    assert "free" in placed and len(placed) == 4
    for p in d.pending:
        (reason,) = p.reasons
        assert reason.code == "THROTTLE"
        group = p.job.split("_")[0]
        limit = 2 if group == "sweep" else 1
        assert reason.details == {"group": group, "max_running": limit, "running": 0, "started": limit}


def test_running_jobs_of_the_group_count(solve) -> None:  # type: ignore[no-untyped-def]
    # Three of the group run already (a limit lowered since): nothing more starts; another group's running
    # job does not count against this one.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            _running("r0", "sweep", 0),
            _running("r1", "sweep", 1),
            _running("r2", "sweep", 2),
            _running("o", "x", 3),
        ]
    )
    d = solve([_task("a", "sweep", most=3), _task("b", "other", most=1)], c)
    assert reason_codes(d, "a") == ["THROTTLE"]
    assert [p.job for p in d.placements] == ["b"]


def test_the_smallest_limit_the_groups_jobs_state_holds(solve) -> None:  # type: ignore[no-untyped-def]
    jobs = [_task("a", "g", most=3), _task("b", "g", most=1), _task("c", "g", most=3)]
    d = solve(jobs, cluster_of(dgx_h100(1)))
    assert len(d.placements) == 1 and all(reason_codes(d, p.job) == ["THROTTLE"] for p in d.pending)


def test_a_rejected_job_states_no_limit(solve) -> None:  # type: ignore[no-untyped-def]
    # "b" names a reservation the cluster does not have: rejected, its lower limit (1) is not the group's.
    # One of the group runs; "a" (limit 2) starts beside it, and the checker (run by ``solve`` on every
    # decision) agrees. Found by the nightly fuzz: the checker took the rejected job's limit.
    from placer.solver.jobs.model import ReservationRef

    c = cluster_of(dgx_h100(2)).with_allocations([_running("r0", "g", 0)])
    rejected = _task("b", "g", most=1).model_copy(update={"reservation": ReservationRef(id="nowhere")})
    d = solve([_task("a", "g", most=2), rejected], c)
    assert [p.job for p in d.placements] == ["a"] and [r.job for r in d.rejected] == ["b"]


def test_a_session_counts_what_it_started_and_what_ended() -> None:
    s = Session(cluster_of(dgx_h100(1)), Policy(engine="greedy"))
    first = s.decide([_task("t0", "arr"), _task("t1", "arr"), _task("t2", "arr")], now=NOW)
    assert len(first.placements) == 2
    s.commit(first)
    waiting = [_task(p.job, "arr") for p in first.pending]
    assert s.cluster.running_job(first.placements[0].job).throttle_group == "arr"
    assert s.decide(waiting, now=NOW).placements == []  # two of arr run
    s.finish(first.placements[0].job)
    again = s.decide(waiting, now=NOW)
    assert [p.job for p in again.placements] == [w.id for w in waiting]
    assert check(again, waiting, s.cluster, now=NOW) == []


def _on(job: str, gpu: int, node: str = "dgx-h100-2") -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node=node, gpus=[gpu])])


def _throttle_rule(d: Decision, jobs: list[Job], c: object) -> list[str]:
    return [str(v) for v in check(d, jobs, c, now=NOW) if v.rule == "throttle"]  # type: ignore[arg-type]


def test_the_checker_counts_running_and_placed() -> None:
    c = cluster_of(dgx_h100(2)).with_allocations([_running("r0", "g", 0)])
    jobs = [_task("a", "g"), _task("b", "g")]
    over = _throttle_rule(Decision(placements=[_on("a", 0), _on("b", 1)], now=NOW), jobs, c)
    assert over == [
        "[throttle] job b: throttle group g lets 2 run at once: 1 run and the decision starts 2 (a, b)"
    ]
    assert _throttle_rule(Decision(placements=[_on("a", 0)], now=NOW), jobs, c) == []  # at the limit
    # Running jobs alone over a lowered limit are not the decision's doing.
    lowered = [_task("a", "g", most=1), _task("b", "g", most=1)]
    crowded = c.with_allocations([_running("r1", "g", 1)])
    assert _throttle_rule(Decision(now=NOW), lowered, crowded) == []


def test_an_eviction_of_a_running_member_gives_the_checker_room() -> None:
    whole = {"node": "dgx-h100-2", "gpus": list(range(8))}
    spot = RunningJob(job="r0", throttle_group="g", priority_class="spot", preemptible=True, replicas=[whole])
    c = cluster_of(dgx_h100(2)).with_allocations([spot])
    job = Job(
        id="a",
        priority_class="reserved",
        throttle=Throttle(group="g", max_running=1),
        tasks=[TaskGroup(gpu=GpuDemand(count=8))],
    )
    placed = [JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100-1", gpus=list(range(8)))])]
    evict = Eviction(job="r0", for_=["a"], grace_period_s=30, nodes=["dgx-h100-2"])
    assert _throttle_rule(Decision(placements=placed, preemptions=[evict], now=NOW), [job], c) == []
    assert len(_throttle_rule(Decision(placements=placed, now=NOW), [job], c)) == 1


def test_a_slurm_throttle_below_one_is_refused_naming_its_field() -> None:
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "jobs": [
            {
                "job_id": 6,
                "array_job_id": 6,
                "array_task_string": "0-1",
                "array_max_tasks": -2,
                "job_state": "PENDING",
                "node_count": 1,
                "cpus": 1,
            }
        ],
    }
    read = {r.id: r for r in read_text(json.dumps(doc), source="squeue.json")}
    assert sorted(read) == ["6_0", "6_1"]
    for r in read.values():
        assert not r.ok and r.job is None
        assert [e.path for e in r.errors] == ["jobs[0].array_max_tasks"]


def test_waiting_jobs_are_planned_when_their_group_has_room(solve) -> None:  # type: ignore[no-untyped-def]
    # Two of the group run, ending in 5 and 10 minutes; six more wait, 10 minutes each, on a cluster with
    # room for all. Two at a time: starts at 5 and 10, then each as the one before it ends.
    ends = [NOW + timedelta(minutes=5), NOW + timedelta(minutes=10)]
    running = [
        RunningJob(
            job=f"r{k}",
            throttle_group="arr",
            started_at=NOW - timedelta(minutes=1),
            expected_end=end,
            replicas=[{"node": "dgx-h100-1", "gpus": [k]}],
        )
        for k, end in enumerate(ends)
    ]
    c = cluster_of(dgx_h100(2)).with_allocations(running)
    jobs = [_task(f"t{k}", "arr").model_copy(update={"duration_s": 600}) for k in range(6)]
    d = solve(jobs, c)
    assert d.placements == []
    starts = sorted(h.start for h in d.reservations if h.kind == "plan")
    assert starts == [NOW + timedelta(minutes=m) for m in (5, 10, 15, 20, 25, 30)]
    for p in d.pending:
        assert [r.code for r in p.reasons] == ["THROTTLE", "PLANNED_START"]


def test_a_plan_counts_the_groups_jobs_started_now(solve) -> None:  # type: ignore[no-untyped-def]
    # A %2 group: r runs with no end; "now" starts beside it, which fills the group; "later" may start in an
    # hour (not_before) but the group is still full then, so it gets no planned start (planning once
    # counted only the jobs it planned, not the ones the decision started: the checker named the plan).
    c = cluster_of(dgx_h100(2)).with_allocations([_running("r", "arr", 0)])
    later = _task("later", "arr").model_copy(update={"not_before": NOW + timedelta(hours=1)})
    d = solve([_task("now", "arr"), later], c)
    assert [p.job for p in d.placements] == ["now"]
    assert [h for h in d.reservations if h.job == "later"] == []
    assert reason_codes(d, "later") == ["NOT_BEFORE"]


def test_the_checker_counts_plans_at_each_planned_start() -> None:
    c = cluster_of(dgx_h100(2))
    jobs = [_task(f"t{k}", "g", most=2).model_copy(update={"duration_s": 600}) for k in range(3)]

    def plan(job: str, minute: int) -> Hold:
        start = NOW + timedelta(minutes=minute)
        replicas = [ReplicaPlacement(node="dgx-h100-2", gpus=[int(job[1])])]
        return Hold(kind="plan", job=job, start=start, end=start + timedelta(minutes=10), replicas=replicas)

    def decided(*holds: Hold) -> Decision:
        pending = [PendingJob(job=j.id, reasons=[Reason(code="THROTTLE", message="-")]) for j in jobs]
        return Decision(placements=[], pending=pending, reservations=list(holds), now=NOW)

    # Three plans of a group that lets two run at once: t2 may start when t0 and t1 end, not a minute
    # before.
    ok = decided(plan("t0", 5), plan("t1", 5), plan("t2", 15))
    assert _throttle_rule(ok, jobs, c) == []
    over = decided(plan("t0", 5), plan("t1", 5), plan("t2", 14))
    (v,) = _throttle_rule(over, jobs, c)
    assert v.startswith("[throttle] job t2: planned to start at") and "has 3 running then" in v


def test_a_throttle_and_a_queue_budget_hold_together(solve) -> None:  # type: ignore[no-untyped-def]
    # Queue train may hold 3 GPUs; the sweep group lets 2 run. Four sweep jobs and two plain ones, all in
    # train, one GPU each: at most two sweep jobs, at most three jobs in all.
    queues = {
        "train": QueueConfig.model_validate(
            {"queue": "train", "config": {"ml_limits": {"max_total_gpus": 3}}}
        )
    }
    jobs = [_task(f"s{k}", "sweep").model_copy(update={"queue": "train"}) for k in range(4)]
    jobs += [_task(f"p{k}", None).model_copy(update={"queue": "train"}) for k in range(2)]
    d = solve(jobs, cluster_of(dgx_h100(1)), queues=queues)
    placed = [p.job for p in d.placements]
    assert len(placed) == 3 and sum(j.startswith("s") for j in placed) <= 2
    codes = {c for p in d.pending for c in reason_codes(d, p.job)}
    assert codes <= {"THROTTLE", "QUEUE_BUDGET"} and "QUEUE_BUDGET" in codes
