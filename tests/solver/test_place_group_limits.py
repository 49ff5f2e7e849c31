"""Group limits (``Job.limits``, a Slurm QOS's ``GrpJobs``/``GrpTRES=gres/gpu``, per user and per
account): at most ``max_running`` jobs of a group run at once and together hold at most ``max_gpus``
GPUs, counting the group's running jobs; the others wait with ``THROTTLE``. Both engines (the ``solve``
fixture runs each); every decision is checked by the independent checker (rule 20)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, Hold, JobPlacement, PendingJob, Reason, ReplicaPlacement
from placer.solver.jobs.model import GpuDemand, GroupLimit, Job, TaskGroup, Throttle
from placer.solver.policy import Policy
from placer.solver.session import Session
from placer.topology import RunningJob, cluster_of, dgx_h100
from tests.solver.conftest import NOW, reason_codes


def _job(job_id: str, gpus: int, *limits: GroupLimit, share: int | None = None) -> Job:
    gpu = GpuDemand(count=1, share_milli=share) if share else GpuDemand(count=gpus)
    return Job(id=job_id, limits=list(limits), tasks=[TaskGroup(gpu=gpu)])


def _running(
    job_id: str, gpus: list[int], *groups: str, node: str = "dgx-h100-1", **kw: object
) -> RunningJob:
    return RunningJob(job=job_id, limit_groups=list(groups), replicas=[{"node": node, "gpus": gpus}], **kw)


QOS16 = GroupLimit(group="qos/gpu", max_gpus=6)


def test_a_gpu_limit_holds_the_groups_gpus_with_the_running_ones(solve) -> None:  # type: ignore[no-untyped-def]
    # The group may hold 6 GPUs; a running job of it holds 2. Of three 2-GPU jobs, two fit under the
    # limit (2 + 2 + 2 = 6), the third waits although two DGX have 14 GPUs free.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("r", [0, 1], "qos/gpu")])
    d = solve([_job(f"j{k}", 2, QOS16) for k in range(3)], c)
    assert len(d.placements) == 2
    (waiting,) = d.pending
    (reason,) = waiting.reasons
    assert reason.code == "THROTTLE"
    assert reason.details == {"group": "qos/gpu", "max_gpus": 6, "gpus_held": 2, "gpus_started": 4, "gpus": 2}


def test_a_job_too_big_for_the_rest_waits_and_a_smaller_one_takes_it(solve) -> None:  # type: ignore[no-untyped-def]
    # 4 of 6 held: a 4-GPU job does not fit under the limit, a 2-GPU one does.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("r", [0, 1, 2, 3], "qos/gpu")])
    d = solve([_job("big", 4, QOS16), _job("small", 2, QOS16)], c)
    assert [p.job for p in d.placements] == ["small"]
    assert reason_codes(d, "big") == ["THROTTLE"]


def test_shares_count_as_fractions(solve) -> None:  # type: ignore[no-untyped-def]
    # Half a GPU each under a 1-GPU limit: two of three start.
    lim = GroupLimit(group="g", max_gpus=1)
    d = solve([_job(f"s{k}", 1, lim, share=500) for k in range(3)], cluster_of(dgx_h100(1)))
    assert len(d.placements) == 2 and reason_codes(d, d.pending[0].job) == ["THROTTLE"]


def test_every_group_of_a_job_must_have_room(solve) -> None:  # type: ignore[no-untyped-def]
    # The QOS lets 3 jobs run; ana's share of it 1 job; bob has no per-user limit. ana's second job waits
    # on her own group, bob's two run, and the QOS's job limit holds the last one back.
    qos = GroupLimit(group="qos/normal", max_running=3)
    ana = GroupLimit(group="qos/normal/user/ana", max_running=1)
    jobs = [_job("ana1", 1, qos, ana), _job("ana2", 1, qos, ana), _job("bob1", 1, qos), _job("bob2", 1, qos)]
    jobs.append(_job("bob3", 1, qos))
    d = solve(jobs, cluster_of(dgx_h100(1)))
    placed = sorted(p.job for p in d.placements)
    assert len(placed) == 3 and sum(j.startswith("ana") for j in placed) == 1
    for p in d.pending:  # each group that is full says so: ana's second job names both
        want = {"qos/normal", "qos/normal/user/ana"} if p.job.startswith("ana") else {"qos/normal"}
        assert {r.code for r in p.reasons} == {"THROTTLE"}
        assert {r.details["group"] for r in p.reasons} == want


def test_a_job_limit_of_zero_lets_none_run(solve) -> None:  # type: ignore[no-untyped-def]
    d = solve([_job("a", 1, GroupLimit(group="qos/frozen", max_running=0))], cluster_of(dgx_h100(1)))
    assert d.placements == [] and reason_codes(d, "a") == ["THROTTLE"]


def test_a_throttle_and_a_group_limit_hold_together(solve) -> None:  # type: ignore[no-untyped-def]
    # An array's %2 inside a QOS that holds 3 GPUs: 1-GPU tasks, at most 2 of the array; the plain QOS job
    # takes the third GPU.
    lim = GroupLimit(group="qos/gpu", max_gpus=3)
    tasks = [
        Job(
            id=f"7_{k}",
            throttle=Throttle(group="7", max_running=2),
            limits=[lim],
            tasks=[TaskGroup(gpu=GpuDemand())],
        )
        for k in range(4)
    ]
    d = solve([*tasks, _job("plain", 1, lim)], cluster_of(dgx_h100(1)))
    placed = [p.job for p in d.placements]
    assert len(placed) == 3 and sum(j.startswith("7_") for j in placed) == 2 and "plain" in placed


def test_a_session_counts_what_it_started() -> None:
    s = Session(cluster_of(dgx_h100(1)), Policy(engine="greedy"))
    first = s.decide([_job("a", 4, QOS16)], now=NOW)
    s.commit(first)
    assert s.cluster.running_job("a").limit_groups == ["qos/gpu"]
    second = [_job("b", 4, QOS16)]
    assert reason_codes(s.decide(second, now=NOW), "b") == ["THROTTLE"]  # 4 + 4 > 6
    s.finish("a")
    again = s.decide(second, now=NOW)
    assert [p.job for p in again.placements] == ["b"]
    assert check(again, second, s.cluster, now=NOW) == []


def test_waiting_jobs_are_planned_when_the_group_has_gpus_again(solve) -> None:  # type: ignore[no-untyped-def]
    # The group holds 4 of its 6 GPUs until minute 10; two 4-GPU jobs of 10 minutes wait: the first can
    # start at 10 (4 free of the limit then), the second only when the first ends, at 20, though the
    # cluster has room for both at once.
    run = _running(
        "r",
        [0, 1, 2, 3],
        "qos/gpu",
        started_at=NOW - timedelta(minutes=1),
        expected_end=NOW + timedelta(minutes=10),
    )
    c = cluster_of(dgx_h100(2)).with_allocations([run])
    jobs = [_job(f"w{k}", 4, QOS16).model_copy(update={"duration_s": 600}) for k in range(2)]
    d = solve(jobs, c)
    assert d.placements == []
    starts = sorted(h.start for h in d.reservations if h.kind == "plan")
    assert starts == [NOW + timedelta(minutes=10), NOW + timedelta(minutes=20)]


def _gpu_rule(d: Decision, jobs: list[Job], c: object) -> list[str]:
    return [str(v) for v in check(d, jobs, c, now=NOW) if v.rule == "throttle"]  # type: ignore[arg-type]


def test_the_checker_counts_gpus_running_and_placed() -> None:
    c = cluster_of(dgx_h100(2)).with_allocations([_running("r", [0, 1, 2, 3], "qos/gpu")])
    jobs = [_job("a", 2, QOS16), _job("b", 2, QOS16)]

    def on(job: str, gpus: list[int]) -> JobPlacement:
        return JobPlacement(job=job, replicas=[ReplicaPlacement(node="dgx-h100-2", gpus=gpus)])

    assert _gpu_rule(Decision(placements=[on("a", [0, 1])], now=NOW), jobs, c) == []  # 4 + 2 = 6
    (v,) = _gpu_rule(Decision(placements=[on("a", [0, 1]), on("b", [2, 3])], now=NOW), jobs, c)
    assert v.startswith("[throttle] job b: group qos/gpu lets at most 6 GPUs at once") and "holding 4" in v
    # Running jobs alone over a lowered limit are not the decision's doing.
    assert _gpu_rule(Decision(now=NOW), [_job("a", 2, GroupLimit(group="qos/gpu", max_gpus=2))], c) == []


def test_the_checker_counts_planned_gpus_at_each_start() -> None:
    c = cluster_of(dgx_h100(2))
    jobs = [_job(f"t{k}", 4, QOS16).model_copy(update={"duration_s": 600}) for k in range(2)]

    def plan(job: str, minute: int, gpus: list[int]) -> Hold:
        start = NOW + timedelta(minutes=minute)
        reps = [ReplicaPlacement(node="dgx-h100-2", gpus=gpus)]
        return Hold(kind="plan", job=job, start=start, end=start + timedelta(minutes=10), replicas=reps)

    def decided(*holds: Hold) -> Decision:
        pending = [PendingJob(job=j.id, reasons=[Reason(code="THROTTLE", message="-")]) for j in jobs]
        return Decision(pending=pending, reservations=list(holds), now=NOW)

    assert _gpu_rule(decided(plan("t0", 0, [0, 1, 2, 3]), plan("t1", 10, [4, 5, 6, 7])), jobs, c) == []
    (v,) = _gpu_rule(decided(plan("t0", 0, [0, 1, 2, 3]), plan("t1", 9, [4, 5, 6, 7])), jobs, c)
    assert "holding 8 GPUs" in v


@pytest.mark.parametrize(
    "bad", [{"group": "g"}, {"group": "g", "max_gpus": -1}, {"group": "", "max_running": 1}]
)
def test_a_limit_without_a_bound_or_with_a_negative_one_is_refused(bad: dict) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError):
        GroupLimit.model_validate(bad)
