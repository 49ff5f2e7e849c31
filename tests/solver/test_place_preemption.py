"""Preemption (OJS ML resources §8, §14.2; ML extensions §7): who may be evicted, for whom, at what cost.

Costs are worked out by hand: lost work = GPUs x seconds since the last checkpoint (since start when none;
zero when the job checkpoints on preempt), plus the restart penalty (Policy default 300 s per GPU).
"""

from __future__ import annotations

from datetime import timedelta

from placer.solver.jobs.model import Escalation, GpuDemand, Job, TaskGroup
from placer.solver.running import running_from_envelopes
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve, nodes_of, pending_reason


def _running(job: str, node: str, cls: str = "spot", hours: float = 1.0, **kw: object) -> dict[str, object]:
    return {
        "job": job,
        "priority_class": cls,
        "started_at": NOW - timedelta(hours=hours),
        "replicas": [{"node": node, "gpus": list(range(8))}],
        **kw,
    }


def _gpu_job(job_id: str, cls: str, gpus: int = 8, **kw: object) -> Job:
    return Job(id=job_id, priority_class=cls, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))], **kw)  # type: ignore[arg-type]


def test_eviction_only_for_strictly_higher_priority(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations([_running("old-spot", "solo")])
    # A spot job may not evict a spot job: it waits.
    d = solve([_gpu_job("new-spot", "spot")], c)
    assert d.preemptions == [] and pending_reason(d, "new-spot") is not None
    # An on-demand job may: the spot job is evicted for it.
    d = solve([_gpu_job("svc", "on-demand")], c)
    assert [e.job for e in d.preemptions] == ["old-spot"] and d.preemptions[0].for_ == ["svc"]
    assert nodes_of(d, "svc") == ["solo"]


def test_numeric_priority_refines_the_class(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations([_running("low", "solo", priority=1)])
    d = solve([_gpu_job("same", "spot", priority=1)], c)
    assert d.preemptions == []
    d = solve([_gpu_job("higher", "spot", priority=2)], c)
    assert [e.job for e in d.preemptions] == ["low"]


def test_numeric_priorities_as_big_as_kubernetes_classes_keep_their_order(solve: Solve) -> None:
    """PriorityClass values reach 1,000,000,000 (2,000,001,000 for system classes) and Slurm's priorities
    are 32-bit: 3,000,000 outranks 2,000,000 and not 5,000,000, however big the numbers."""
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            _running("two-million", "dgx-h100-1", priority=2_000_000),
            _running("five-million", "dgx-h100-2", priority=5_000_000, hours=0.1),
        ]
    )
    d = solve([_gpu_job("three-million", "spot", priority=3_000_000)], c)
    assert [e.job for e in d.preemptions] == ["two-million"]
    assert nodes_of(d, "three-million") == ["dgx-h100-1"]
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations(
        [_running("critical", "solo", priority=2_000_001_000)]
    )
    assert solve([_gpu_job("user", "spot", priority=1_000_000_000)], c).preemptions == []
    top = solve([_gpu_job("top", "spot", priority=2**32 - 1)], c)
    assert [e.job for e in top.preemptions] == ["critical"]


def test_the_victim_losing_least_work_is_chosen(solve: Solve) -> None:
    # a: 8 GPUs x 2 h since start = 57,600 GPU-s; b: checkpointed 10 min ago = 4,800 GPU-s;
    # c: checkpoints on preempt = 0. Penalty 2,400 each. The reserved 8-GPU job evicts c.
    c = cluster_of(dgx_h100(3)).with_allocations(
        [
            _running("a", "dgx-h100-1", hours=2),
            _running("b", "dgx-h100-2", hours=2, last_checkpoint_at=NOW - timedelta(minutes=10)),
            _running("c", "dgx-h100-3", hours=2, checkpoint_on_preempt=True),
        ]
    )
    d = solve([_gpu_job("train", "reserved")], c)
    assert [e.job for e in d.preemptions] == ["c"]
    assert d.preemptions[0].expected_work_lost_gpu_s == 0.0 and d.preemptions[0].checkpoint is True
    # Without c, b is cheaper than a.
    c2 = cluster_of(dgx_h100(2)).with_allocations(
        [
            _running("a", "dgx-h100-1", hours=2),
            _running("b", "dgx-h100-2", hours=2, last_checkpoint_at=NOW - timedelta(minutes=10)),
        ]
    )
    d = solve([_gpu_job("train", "reserved")], c2)
    assert [e.job for e in d.preemptions] == ["b"]
    assert d.preemptions[0].expected_work_lost_gpu_s == 8 * 600


def test_reserved_and_non_preemptible_jobs_are_never_evicted(solve: Solve) -> None:
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            _running("res", "dgx-h100-1", cls="reserved", preemptible=True),
            _running("od", "dgx-h100-2", cls="on-demand"),
        ]
    )
    d = solve([_gpu_job("top", "reserved", priority=100)], c)
    assert d.preemptions == [] and pending_reason(d, "top") is not None
    # The same on-demand job declared preemptible may be evicted by a reserved one.
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations(
        [_running("od", "solo", cls="on-demand", preemptible=True)]
    )
    d = solve([_gpu_job("top", "reserved")], c)
    assert [e.job for e in d.preemptions] == ["od"]


def test_gangs_are_evicted_whole(solve: Solve) -> None:
    # A 2-node spot gang holds both DGX nodes; one 8-GPU reserved job evicts the whole gang.
    gang = {
        "job": "gang",
        "priority_class": "spot",
        "started_at": NOW - timedelta(hours=1),
        "replicas": [
            {"node": "dgx-h100-1", "gpus": list(range(8))},
            {"node": "dgx-h100-2", "gpus": list(range(8))},
        ],
    }
    c = cluster_of(dgx_h100(2)).with_allocations([gang])
    d = solve([_gpu_job("train", "reserved")], c)
    [e] = d.preemptions
    assert e.job == "gang" and e.nodes == ["dgx-h100-1", "dgx-h100-2"]
    assert e.expected_work_lost_gpu_s == 16 * 3600  # both replicas' work is lost


def test_directives_grace_checkpoint_and_not_a_failure(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations(
        [_running("s", "solo", grace_period_s=90, checkpoint_on_preempt=True)]
    )
    d = solve([_gpu_job("svc", "on-demand")], c)
    [e] = d.preemptions
    assert (e.grace_period_s, e.checkpoint, e.event, e.counts_as_failure) == (90, True, "preemption", False)
    assert d.to_json()["preemptions"][0]["for"] == ["svc"]


def test_escalated_spot_job_counts_as_its_target_class(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations([_running("old-spot", "solo")])
    waited = _gpu_job(
        "patient",
        "spot",
        submit_time=NOW - timedelta(hours=2),
        escalation=Escalation(enabled=True, after_s=3600, target_class="on-demand"),
    )
    d = solve([waited], c)
    assert [e.job for e in d.preemptions] == ["old-spot"]
    fresh = waited.model_copy(update={"submit_time": NOW - timedelta(minutes=5)})
    d = solve([fresh], c)
    assert d.preemptions == []


def test_no_eviction_when_free_capacity_suffices(solve: Solve) -> None:
    c = cluster_of(dgx_h100(2)).with_allocations([_running("s", "dgx-h100-1")])
    d = solve([_gpu_job("svc", "on-demand")], c)
    assert d.preemptions == [] and nodes_of(d, "svc") == ["dgx-h100-2"]


def test_cpsat_finds_the_cheaper_evictions_greedy_misses() -> None:
    # Three full DGX nodes held by spot jobs: x on node 1 checkpoints on preempt (cost 0 + 2,400 penalty),
    # y on node 2 checkpointed 10 min ago (8 x 600 + 2,400 = 7,200), z on node 3 never (8 x 36,000 + 2,400).
    # Reserved "a" may use nodes 1-2, on-demand "b" nodes 1 or 3. Greedy places "a" first on its cheapest
    # victim x, so "b" must evict z: 2,400 + 290,400. The optimum puts "a" on node 2 (y) and "b" on node 1
    # (x): 7,200 + 2,400. Both place everything; CP-SAT must find the cheaper evictions.
    from placer.solver.engine import place
    from placer.solver.jobs.model import LabelRule, Placement
    from placer.solver.policy import Policy
    from tests.solver.conftest import assert_valid

    c = cluster_of(dgx_h100(3)).with_allocations(
        [
            _running("x", "dgx-h100-1", hours=10, checkpoint_on_preempt=True),
            _running("y", "dgx-h100-2", hours=10, last_checkpoint_at=NOW - timedelta(minutes=10)),
            _running("z", "dgx-h100-3", hours=10),
        ]
    )

    def on(*nodes: str) -> Placement:
        return Placement(required=[LabelRule(key="hostname", operator="In", values=list(nodes))])

    jobs = [
        _gpu_job("a", "reserved", placement=on("dgx-h100-1", "dgx-h100-2")),
        _gpu_job("b", "on-demand", placement=on("dgx-h100-1", "dgx-h100-3")),
    ]
    greedy = place(jobs, c, Policy(engine="greedy"), now=NOW)
    assert_valid(greedy, jobs, c)
    assert sorted(e.job for e in greedy.preemptions) == ["x", "z"]  # the trap, so this test keeps meaning
    d = place(jobs, c, Policy(engine="cpsat", time_limit_s=5, reproducible=True), now=NOW)
    assert_valid(d, jobs, c)
    assert len(d.placements) == 2 and d.stats.engine == "cpsat"
    assert {e.job: e.for_ for e in d.preemptions} == {"x": ["b"], "y": ["a"]}


def test_preemption_policy_of_running_envelopes(solve: Solve) -> None:
    # ML extensions §7 on three running 8-GPU spot jobs, each 2 h since start, no checkpoint:
    # "never" is not evicted; "save_and_retry" checkpoints on preempt, so it loses 0 GPU-s (+ penalty);
    # "immediate" loses 8 x 7,200 = 57,600 GPU-s. One on-demand 8-GPU job must evict exactly one of them:
    # the save_and_retry job, with checkpoint on and the §8.2 default grace of 30 s.
    def env(job_id: str, policy: str, node: str) -> dict[str, object]:
        return {
            "id": job_id,
            "type": "ml.train",
            "queue": "default",
            "args": [],
            "ext_ml_gpu_count": 8,
            "ext_ml_priority_class": "spot",
            "ext_mlx_scheduling_preemption_policy": policy,
            "node": node,
            "gpus": list(range(8)),
            "started_at": (NOW - timedelta(hours=2)).isoformat(),
        }

    running = running_from_envelopes(
        [
            env("never", "never", "dgx-h100-1"),
            env("now", "immediate", "dgx-h100-2"),
            env("save", "save_and_retry", "dgx-h100-3"),
        ],
        "running.json",
    )
    c = cluster_of(dgx_h100(3)).with_allocations(running)
    d = solve([_gpu_job("svc", "on-demand")], c)
    [e] = d.preemptions
    assert (e.job, e.checkpoint, e.grace_period_s, e.expected_work_lost_gpu_s) == ("save", True, 30, 0)
    # Two on-demand jobs need two victims: "never" is still protected, "immediate" goes with no grace.
    d = solve([_gpu_job("svc", "on-demand"), _gpu_job("svc2", "on-demand")], c)
    by_job = {e.job: e for e in d.preemptions}
    assert sorted(by_job) == ["now", "save"]
    assert (by_job["now"].checkpoint, by_job["now"].grace_period_s) == (False, 0)
    assert by_job["now"].expected_work_lost_gpu_s == 57_600


def test_a_job_that_does_not_preempt_waits_for_free_room(solve: Solve) -> None:
    # Kubernetes preemptionPolicy: Never. The on-demand job outranks the spot job on the only node, yet
    # waits; the same job that may preempt evicts it (so the cluster is one where eviction would help).
    c = cluster_of(dgx_h100(1, name="solo")).with_allocations([_running("old-spot", "solo")])
    d = solve([_gpu_job("svc", "on-demand", may_preempt=False)], c)
    assert d.preemptions == [] and d.placements == []
    assert pending_reason(d, "svc") is not None
    [waiting] = d.pending
    assert "FITS_IF_PREEMPTIBLE" not in [r.code for r in waiting.reasons]  # no eviction will place it
    assert any("does not preempt" in n for n in waiting.notes)
    d = solve([_gpu_job("svc", "on-demand")], c)
    assert [e.job for e in d.preemptions] == ["old-spot"]


def test_a_job_that_does_not_preempt_keeps_its_priority_in_line(solve: Solve) -> None:
    # Two on-demand jobs want the one free node; the higher priority one gets it though it never preempts,
    # and the lower one may not evict it either. Meanwhile a preempting job still evicts the spot job
    # for itself, and the non-preempting one does not take that room.
    c = cluster_of(dgx_h100(2)).with_allocations([_running("old-spot", "dgx-h100-1")])
    first = _gpu_job("first", "on-demand", priority=5, may_preempt=False)
    second = _gpu_job("second", "on-demand", priority=1)
    d = solve([first, second], c)
    assert nodes_of(d, "first") == ["dgx-h100-2"]
    assert nodes_of(d, "second") == ["dgx-h100-1"]
    assert [(e.job, e.for_) for e in d.preemptions] == [("old-spot", ["second"])]
