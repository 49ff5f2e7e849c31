"""Checker rule 16 (preemption), on hand-built decisions: the checker, not the solver, is under test.
Who may be evicted and for whom, and the directives a backend acts on (grace period, checkpoint, nodes,
counts_as_failure, work lost), each recomputed by the checker from the running job as given."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from placer.solver.checks import check
from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.topology import cluster_of, dgx_h100

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _cluster(cls: str = "spot", **kw: object):  # type: ignore[no-untyped-def]
    run = {
        "job": "victim",
        "priority_class": cls,
        "started_at": NOW - timedelta(hours=1),
        "replicas": [{"node": "dgx-h100-1", "gpus": list(range(8))}],
        **kw,
    }
    return cluster_of(dgx_h100(2)).with_allocations([run])


#: The victim's directives when it runs 8 GPUs on dgx-h100-1 since an hour: 8 x 3600 = 28,800 GPU-s lost.
LEGAL = {"nodes": ["dgx-h100-1"], "expected_work_lost_gpu_s": 28800.0}


def _decision(node: str = "dgx-h100-1", for_: list[str] | None = None, **directives: object) -> Decision:
    return Decision(
        placements=[JobPlacement(job="new", replicas=[ReplicaPlacement(node=node, gpus=list(range(8)))])],
        preemptions=[
            Eviction(job="victim", for_=["new"] if for_ is None else for_, **{**LEGAL, **directives})  # type: ignore[arg-type]
        ],
    )


def _job(cls: str, priority: int = 0) -> Job:
    return Job(id="new", priority_class=cls, priority=priority, tasks=[TaskGroup(gpu=GpuDemand(count=8))])


def _rules(decision: Decision, job: Job, cluster) -> list[str]:  # type: ignore[no-untyped-def]
    return [v.rule for v in check(decision, [job], cluster, now=NOW)]


def test_legal_eviction_passes() -> None:
    assert _rules(_decision(), _job("on-demand"), _cluster()) == []


def test_reserved_or_non_preemptible_victims_are_forbidden() -> None:
    assert "eviction-forbidden" in _rules(
        _decision(), _job("reserved"), _cluster("reserved", preemptible=True)
    )
    assert "eviction-forbidden" in _rules(_decision(), _job("reserved"), _cluster("on-demand"))
    assert "eviction-forbidden" not in _rules(
        _decision(), _job("reserved"), _cluster("on-demand", preemptible=True)
    )


def test_eviction_for_equal_or_lower_priority_is_refused() -> None:
    assert "eviction-priority" in _rules(_decision(), _job("spot"), _cluster())
    assert "eviction-priority" in _rules(_decision(), _job("spot", priority=-1), _cluster())
    assert "eviction-priority" not in _rules(_decision(), _job("spot", priority=1), _cluster())


def test_eviction_for_a_job_not_placed_or_for_nobody_is_refused() -> None:
    d = _decision(for_=["ghost"])
    assert "eviction-priority" in _rules(d, _job("on-demand"), _cluster())
    assert "eviction-priority" in _rules(_decision(for_=[]), _job("on-demand"), _cluster())


def test_eviction_for_a_job_that_does_not_preempt_is_refused() -> None:
    # Kubernetes preemptionPolicy: Never: the on-demand job outranks the spot victim, yet may not evict it.
    waits = _job("on-demand").model_copy(update={"may_preempt": False})
    assert _rules(_decision(), waits, _cluster()) == ["eviction-non-preempting"]
    assert "eviction-non-preempting" not in _rules(_decision(), _job("on-demand"), _cluster())


def test_eviction_whose_room_nobody_uses_is_refused() -> None:
    # "new" runs on dgx-h100-2, which was free anyway: evicting the job on dgx-h100-1 helped nobody.
    assert "eviction-unused" in _rules(_decision(node="dgx-h100-2"), _job("on-demand"), _cluster())


# -- directives -------------------------------------------------------------------------------------------


def test_each_tampered_directive_is_its_own_violation() -> None:
    job, c = _job("on-demand"), _cluster()
    assert _rules(_decision(grace_period_s=0), job, c) == ["eviction-grace"]
    assert _rules(_decision(checkpoint=True), job, c) == ["eviction-checkpoint"]
    assert _rules(_decision(counts_as_failure=True), job, c) == ["eviction-failure"]
    assert _rules(_decision(expected_work_lost_gpu_s=0.0), job, c) == ["eviction-work-lost"]
    # A node it does not hold is as wrong as one left out.
    assert _rules(_decision(nodes=["dgx-h100-1", "dgx-h100-2"]), job, c) == ["eviction-nodes"]


def test_grace_and_checkpoint_follow_the_jobs_own_settings() -> None:
    # The job asks 120 s and checkpoints on preempt: then nothing is lost, and the defaults are wrong.
    c = _cluster(grace_period_s=120, checkpoint_on_preempt=True)
    own = _decision(grace_period_s=120, checkpoint=True, expected_work_lost_gpu_s=0.0)
    assert _rules(own, _job("on-demand"), c) == []
    defaults = _decision(expected_work_lost_gpu_s=0.0)
    assert _rules(defaults, _job("on-demand"), c) == ["eviction-grace", "eviction-checkpoint"]


def test_work_lost_counts_from_the_last_checkpoint_with_a_rounding_tolerance() -> None:
    # Checkpointed 10 minutes ago: 8 GPUs x 600 s = 4,800 GPU-s; the decision rounds to 3 decimals.
    c = _cluster(last_checkpoint_at=NOW - timedelta(minutes=10))
    assert _rules(_decision(expected_work_lost_gpu_s=4800.004), _job("on-demand"), c) == []
    assert _rules(_decision(expected_work_lost_gpu_s=4800.5), _job("on-demand"), c) == ["eviction-work-lost"]
    # Started 1 h ago without a checkpoint (28,800) is not what a checkpointed job loses.
    assert _rules(_decision(), _job("on-demand"), c) == ["eviction-work-lost"]


def test_a_gang_eviction_lists_every_node_of_the_gang() -> None:
    # A 16-GPU gang on both nodes, checkpointed at 01:50, evicted at 02:00 (the audit's d_tamper case):
    # 16 GPUs x 600 s = 9,600 GPU-s.
    gang = {
        "job": "victim",
        "priority_class": "spot",
        "started_at": NOW,
        "last_checkpoint_at": NOW + timedelta(hours=1, minutes=50),
        "replicas": [
            {"node": "dgx-h100-1", "gpus": list(range(8))},
            {"node": "dgx-h100-2", "gpus": list(range(8))},
        ],
    }
    c = cluster_of(dgx_h100(2)).with_allocations([gang])
    at = NOW + timedelta(hours=2)
    ok = _decision(nodes=["dgx-h100-1", "dgx-h100-2"], expected_work_lost_gpu_s=9600.0)
    assert [v.rule for v in check(ok, [_job("on-demand")], c, now=at)] == []
    dropped = _decision(nodes=["dgx-h100-1"], expected_work_lost_gpu_s=9600.0)
    [v] = check(dropped, [_job("on-demand")], c, now=at)
    assert v.rule == "eviction-nodes" and "leaves out dgx-h100-2" in v.message


def test_a_gated_job_placed_is_refused() -> None:
    from placer.solver.decision import Decision as D

    gated = Job(id="g", gates=["kueue.x-k8s.io/admission"], tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    d = D(placements=[JobPlacement(job="g", replicas=[ReplicaPlacement(node="dgx-h100-2", gpus=[0])])])
    assert [v.rule for v in check(d, [gated], _cluster(), now=NOW)] == ["gated"]
    ungated = gated.model_copy(update={"gates": []})
    assert check(d, [ungated], _cluster(), now=NOW) == []
