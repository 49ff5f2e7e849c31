"""Checker rule 16 (preemption), on hand-built decisions: the checker, not the solver, is under test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from solver.check import check
from solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from solver.jobs.model import GpuDemand, Job, TaskGroup
from topology import cluster_of, dgx_h100

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


def _decision(node: str = "dgx-h100-1", for_: list[str] | None = None) -> Decision:
    return Decision(
        placements=[JobPlacement(job="new", replicas=[ReplicaPlacement(node=node, gpus=list(range(8)))])],
        preemptions=[Eviction(job="victim", for_=["new"] if for_ is None else for_)],
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


def test_eviction_whose_room_nobody_uses_is_refused() -> None:
    # "new" runs on dgx-h100-2, which was free anyway: evicting the job on dgx-h100-1 helped nobody.
    assert "eviction-unused" in _rules(_decision(node="dgx-h100-2"), _job("on-demand"), _cluster())
