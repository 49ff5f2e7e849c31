"""``FITS_IF_PREEMPTIBLE``: a waiting job is told which running jobs of lower priority, were they
preemptible, would let it run now (``solver/what_if.py``). Hand-built clusters, both engines."""

from __future__ import annotations

from placer.solver.decision import Decision
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import Solve


def gpu_job(job_id: str, gpus: int, **kw: object) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(gpu=GpuDemand(count=gpus))], **kw)  # type: ignore[arg-type]


def running(job: str, node: str, gpus: list[int], **kw: object) -> dict[str, object]:
    return {"job": job, "replicas": [{"node": node, "gpus": gpus}], **kw}


def hint(d: Decision, job: str) -> list[str] | None:
    for p in d.pending:
        if p.job == job:
            for r in p.reasons:
                if r.code == "FITS_IF_PREEMPTIBLE":
                    return list(r.details["jobs"])
            return None
    raise AssertionError(f"{job} is not pending")


def test_names_the_lower_priority_jobs_nothing_may_evict(solve: Solve) -> None:
    # One DGX: an on-demand job (not preemptible by default) holds 0-3, a spot job that opted out of
    # preemption holds 4-7. An on-demand job of priority 5 needs all 8: it fits if both were preemptible.
    c = cluster_of(dgx_h100(1)).with_allocations(
        [
            running("od-low", "dgx-h100", [0, 1, 2, 3]),
            running("spot-pinned", "dgx-h100", [4, 5, 6, 7], priority_class="spot", preemptible=False),
        ]
    )
    d = solve([gpu_job("big", 8, priority=5)], c)
    assert d.placement_of("big") is None and not d.preemptions
    assert hint(d, "big") == ["od-low", "spot-pinned"]


def test_names_only_the_jobs_under_the_placement(solve: Solve) -> None:
    # dgx-h100-1: 4 free + a pinned spot job on 4; dgx-h100-2: a reserved job on 6 (never a candidate).
    # An 8-GPU job fits on dgx-h100-1 if the spot job were preemptible: only it is named.
    c = cluster_of(dgx_h100(2)).with_allocations(
        [
            running("spot-pinned", "dgx-h100-1", [0, 1, 2, 3], priority_class="spot", preemptible=False),
            running("res", "dgx-h100-2", [0, 1, 2, 3, 4, 5], priority_class="reserved"),
        ]
    )
    d = solve([gpu_job("big", 8)], c)
    assert hint(d, "big") == ["spot-pinned"]


def test_no_hint_when_only_reserved_or_equal_priority_work_is_in_the_way(solve: Solve) -> None:
    for blocker in (
        running("res", "dgx-h100", list(range(8)), priority_class="reserved"),  # never evicted (§8.2)
        running("peer", "dgx-h100", list(range(8))),  # same priority as the waiting job
    ):
        d = solve([gpu_job("big", 8)], cluster_of(dgx_h100(1)).with_allocations([blocker]))
        assert hint(d, "big") is None


def test_no_hint_when_even_preemption_would_not_make_room(solve: Solve) -> None:
    # 16 GPUs on one 8-GPU node can never fit: nothing to suggest.
    c = cluster_of(dgx_h100(1)).with_allocations([running("od-low", "dgx-h100", [0, 1])])
    d = solve([gpu_job("huge", 16, priority=5, distributed_strategy="fsdp")], c)
    assert hint(d, "huge") is None


def test_no_hint_when_the_policy_never_preempts(solve: Solve) -> None:
    # The first test's cluster, where a priority-5 job gets a hint; with preemption off in the policy no
    # running job would be evicted however preemptible it were, so there is nothing to suggest.
    c = cluster_of(dgx_h100(1)).with_allocations(
        [
            running("od-low", "dgx-h100", [0, 1, 2, 3]),
            running("spot-pinned", "dgx-h100", [4, 5, 6, 7], priority_class="spot", preemptible=False),
        ]
    )
    assert hint(solve([gpu_job("big", 8, priority=5)], c), "big") is not None
    d = solve([gpu_job("big", 8, priority=5)], c, preemption=False)
    assert d.placement_of("big") is None and hint(d, "big") is None
