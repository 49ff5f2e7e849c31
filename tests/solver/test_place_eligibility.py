"""Dependencies and ``not_before`` (placement-rules.md rule 14): a job whose dependency is unmet, or whose
``not_before`` is later than ``now``, is pending with ``DEPENDENCY_UNMET`` / ``NOT_BEFORE``; otherwise it
is placed like any other job. ``now`` is ``NOW`` of ``tests/solver/conftest.py`` (2025-06-01 12:00 UTC).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from placer.solver.jobs import read_file
from placer.solver.jobs.model import Dependency, GpuDemand, Job, TaskGroup
from placer.topology import cluster_of, cpu_nodes, dgx_h100
from tests.solver.conftest import NOW, Solve, nodes_of, reason_codes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def job(job_id: str, gpus: int = 0, **kw: object) -> Job:
    gpu = GpuDemand(count=gpus) if gpus else None
    return Job(id=job_id, tasks=[TaskGroup(cpu_cores=4, gpu=gpu)], **kw)  # type: ignore[arg-type]


def after(job_id: str, condition: str = "success") -> list[Dependency]:
    return [Dependency(job=job_id, condition=condition)]  # type: ignore[arg-type]


# -- not_before ------------------------------------------------------------------------------------------


def test_not_before_in_the_past_must_place_on_the_only_node_with_room(solve: Solve) -> None:
    # dgx-h100-1 has 4 of 8 GPUs busy, dgx-h100-2 is empty: an 8-GPU job can only go to dgx-h100-2.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [{"job": "r", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2, 3]}]}]
    )
    d = solve([job("late", 8, not_before=NOW - timedelta(hours=1))], c)
    assert nodes_of(d, "late") == ["dgx-h100-2"]
    assert sorted(d.placement_of("late").replicas[0].gpus) == list(range(8))  # type: ignore[union-attr]


def test_not_before_equal_to_now_may_place(solve: Solve) -> None:
    # "later than now" may not start; exactly now may.
    d = solve([job("now", 1, not_before=NOW)], cluster_of(dgx_h100(1)))
    assert nodes_of(d, "now") == ["dgx-h100"]


def test_not_before_in_the_future_must_not_place(solve: Solve) -> None:
    # The cluster is empty and big enough: only the time keeps the job out.
    later = NOW + timedelta(minutes=5)
    d = solve([job("early", 1, not_before=later)], cluster_of(dgx_h100(2)))
    assert d.placement_of("early") is None
    assert reason_codes(d, "early") == ["NOT_BEFORE", "PLANNED_START"]
    r = d.pending[0].reasons[0]
    assert r.details["not_before"] == later.isoformat()
    assert later.isoformat() in r.message
    # Nothing else competes: the plan starts exactly at not_before (conservative backfill, phase 9).
    [hold] = d.reservations
    assert (hold.job, hold.kind, hold.start) == ("early", "plan", later)


def test_not_before_job_leaves_its_room_to_others(solve: Solve) -> None:
    c = cluster_of(dgx_h100(1))
    # "now" ends (30 min) before "early" may start (1 h): backfilling it delays nothing.
    early = job("early", 8, priority_class="reserved", not_before=NOW + timedelta(hours=1))
    d = solve([early, job("now", 8, duration_s=1800)], c)
    assert nodes_of(d, "now") == ["dgx-h100"]
    assert reason_codes(d, "early")[0] == "NOT_BEFORE"
    assert [(h.job, h.start) for h in d.reservations] == [("early", NOW + timedelta(hours=1))]


def test_not_before_plan_is_not_delayed_by_a_longer_lower_priority_job(solve: Solve) -> None:
    # The same, but "now" runs 2 h (or for an unknown time): started now, it would still hold the node's
    # 8 GPUs when "early" (reserved, higher priority) is planned to start. Conservative backfill refuses.
    c = cluster_of(dgx_h100(1))
    early = job("early", 8, priority_class="reserved", not_before=NOW + timedelta(hours=1))
    for now_job in (job("now", 8, duration_s=7200), job("now", 8)):
        d = solve([early, now_job], c)
        assert d.placement_of("now") is None
        assert reason_codes(d, "now") == ["BACKFILL_WOULD_DELAY"]
        assert d.pending[[p.job for p in d.pending].index("now")].reasons[0].details["job"] == "early"
        assert [(h.job, h.start) for h in d.reservations] == [("early", NOW + timedelta(hours=1))]


# -- dependencies ----------------------------------------------------------------------------------------


def test_dependency_on_a_batch_job_is_unmet(solve: Solve) -> None:
    d = solve([job("prep"), job("train", 1, dependencies=after("prep"))], cluster_of(dgx_h100(1)))
    assert nodes_of(d, "prep") == ["dgx-h100"]
    assert reason_codes(d, "train") == ["DEPENDENCY_UNMET"]
    r = d.pending[0].reasons[0]
    assert r.details == {"job": "prep", "condition": "success"}
    assert "prep" in r.message


def test_dependency_on_a_running_job_start_is_met(solve: Solve) -> None:
    c = cluster_of(cpu_nodes(2)).with_allocations(
        [{"job": "srv", "replicas": [{"node": "cpu-1", "cpu_cores": 4}]}]
    )
    d = solve([job("client", dependencies=after("srv", "start"))], c)
    assert d.placement_of("client") is not None


def test_dependency_on_a_running_job_success_is_unmet(solve: Solve) -> None:
    c = cluster_of(cpu_nodes(2)).with_allocations(
        [{"job": "srv", "replicas": [{"node": "cpu-1", "cpu_cores": 4}]}]
    )
    for condition in ("success", "failure", "exit"):
        d = solve([job("next", dependencies=after("srv", condition))], c)
        assert reason_codes(d, "next") == ["DEPENDENCY_UNMET"], condition
        assert d.pending[0].reasons[0].details["condition"] == condition


def test_dependency_on_an_unknown_job_is_taken_as_met(solve: Solve) -> None:
    # Neither in the batch nor running: it finished earlier (rule 14).
    d = solve([job("next", dependencies=after("long-gone"))], cluster_of(cpu_nodes(1)))
    assert nodes_of(d, "next") == ["cpu"]


def test_workflow_example_chain(solve: Solve) -> None:
    # examples/jobs/pipeline.json: finetune-train follows finetune-prep (an OJS chain).
    rs = read_file(EXAMPLES / "jobs" / "pipeline.json")
    assert [r.id for r in rs] == ["finetune-prep", "finetune-train"]
    d = solve(rs, cluster_of(cpu_nodes(1), dgx_h100(1)))
    assert d.placement_of("finetune-prep") is not None
    assert reason_codes(d, "finetune-train") == ["DEPENDENCY_UNMET", "PLANNED_START"]
    assert d.pending[0].reasons[0].details["job"] == "finetune-prep"
    # The next step's capacity is held from the end of the current one: prep runs 1800 s.
    [hold] = d.reservations
    assert (hold.job, hold.kind, hold.start) == ("finetune-train", "workflow", NOW + timedelta(seconds=1800))
    assert hold.end == hold.start + timedelta(seconds=7200)
    assert (
        sorted(hold.replicas[0].gpus) == sorted(hold.replicas[0].gpus[:2]) and len(hold.replicas[0].gpus) == 2
    )


# -- scheduling gates ------------------------------------------------------------------------------------


def test_a_gated_job_waits_naming_its_gates_and_is_never_planned(solve: Solve) -> None:
    # Kubernetes scheduling gates (Kueue's plain-pod integration gates each pod until admission): the
    # cluster has room, and a one-hour job ends soon, yet the gated job neither runs nor gets a plan.
    cluster = cluster_of(dgx_h100(1, name="solo")).with_allocations(
        [
            {
                "job": "r",
                "replicas": [{"node": "solo", "gpus": [0]}],
                "expected_end": NOW + timedelta(hours=1),
            }
        ]
    )
    gated = job("g", gpus=8, gates=["kueue.x-k8s.io/admission"], duration_s=600)
    d = solve([gated, job("free", gpus=1)], cluster)
    assert reason_codes(d, "g") == ["SCHEDULING_GATED"] and "g" not in {p.job for p in d.placements}
    assert d.pending[0].reasons[0].details == {"gates": ["kueue.x-k8s.io/admission"]}
    assert not [h for h in d.reservations if h.job == "g"]  # no planned start
    assert nodes_of(d, "free") == ["solo"]
    ungated = solve([gated.model_copy(update={"gates": []})], cluster)  # ungated, it gets a planned start
    assert [h.job for h in ungated.reservations] == ["g"]
