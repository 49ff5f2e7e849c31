"""What an eviction gives back to the budgets (``config.preemption``, :class:`QuotaPreemption`; a Kueue
ClusterQueue's ``preemption``): placer evicts a running job only for strictly higher-priority work, to make
room on nodes; whether the victim's GPUs then come back to its queue's budget (``within_queue``) and to
its cohort's total (``within_cohort``, ``within_cohort_max_priority``) is the queue's to say. With
``never`` the eviction frees no quota: a job over its budget waits however low the jobs that hold it. Both
engines, every decision through the checker's rule 17, which re-derives the rule itself; and the checker
alone on decisions that use room an eviction did not give."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import JobValidationError
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig, load_queue_configs
from placer.solver.policy import Policy
from placer.topology import Cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve
from tests.solver.kube_objects import kueue_queue


def _job(job_id: str, queue: str, gpus: int = 8) -> Job:
    return Job(
        id=job_id, queue=queue, priority_class="reserved", tasks=[TaskGroup(gpu=GpuDemand(count=gpus))]
    )


def _full(queue: str, priority: int = 0) -> Cluster:
    """One DGX (8 GPUs), all held by a spot job of ``queue`` that started an hour ago."""
    return cluster_of(dgx_h100(1)).with_allocations(
        [
            {
                "job": "spot",
                "queue": queue,
                "priority_class": "spot",
                "priority": priority,
                "preemptible": True,
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": "dgx-h100", "gpus": list(range(8))}],
            }
        ]
    )


def _queue(within_queue: str) -> dict[str, QueueConfig]:
    doc = {"ml_limits": {"max_total_gpus": 8}, "preemption": {"within_queue": within_queue}}
    return {"train": QueueConfig.model_validate({"queue": "train", "config": doc})}


@pytest.mark.parametrize("within_queue", ["lower-priority", "never"])
def test_an_eviction_frees_the_queues_budget_only_where_the_queue_says_so(
    solve: Solve, within_queue: str
) -> None:
    # The queue's budget is 8 GPUs, all held by its running spot job, on the one node. A reserved 8-GPU job
    # of the queue needs that node and that budget: evicting the spot job gives both back by default; under
    # within_queue: never (Kueue's withinClusterQueue: Never) it frees the node but no quota, so the job
    # waits on its budget and nothing is evicted.
    d = solve([_job("urgent", "train")], _full("train"), queues=_queue(within_queue))
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # CP-SAT's model keeps it too
    if within_queue == "lower-priority":
        assert [p.job for p in d.placements] == ["urgent"] and [e.job for e in d.preemptions] == ["spot"]
        return
    assert d.placements == [] and d.preemptions == []
    [p] = d.pending
    assert p.reasons[0].code == "QUEUE_BUDGET" and p.reasons[0].details["more_gpus"] == 8


def _cohort(a: dict[str, Any], b: dict[str, Any]) -> dict[str, QueueConfig]:
    """Queues ``a`` and ``b`` of cohort ``c`` (8 GPUs in all), with these ``preemption`` settings."""
    return load_queue_configs(  # type: ignore[no-any-return]
        [
            {"queue": q, "config": {"cohort": {"name": "c", "max_total_gpus": 8}, "preemption": p}}
            for q, p in (("a", a), ("b", b))
        ]
    )


@pytest.mark.parametrize(
    ("a", "b", "runs"),
    [
        ({}, {}, True),  # placer's default: the room is the evicting job's
        ({"within_cohort": "never"}, {}, False),  # a takes no room from b's evictions
        ({}, {"within_cohort": "never"}, True),  # b's own rule is about b's jobs, not a's
        ({"within_cohort_max_priority": 10}, {}, True),  # the victim's priority (5) is within a's cap
        ({"within_cohort_max_priority": 4}, {}, False),  # ... and above this one
        ({}, {"within_queue": "never"}, False),  # b keeps what its jobs hold: nobody gets it back
    ],
)
def test_an_eviction_frees_the_cohorts_total_only_where_every_other_queue_takes_it(
    solve: Solve, a: dict[str, Any], b: dict[str, Any], runs: bool
) -> None:
    # b's spot job (priority 5) holds the cohort's 8 GPUs on the one node; a's reserved 8-GPU job evicts it
    # where the eviction gives the cohort its 8 back, and waits on the cohort where it does not.
    d = solve([_job("urgent", "a")], _full("b", priority=5), queues=_cohort(a, b))
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # CP-SAT's model keeps it too
    if runs:
        assert [p.job for p in d.placements] == ["urgent"] and [e.job for e in d.preemptions] == ["spot"]
        return
    assert d.placements == [] and d.preemptions == []
    [p] = d.pending
    assert p.reasons[0].code == "QUEUE_BUDGET" and p.reasons[0].details["cohort"] == "c"


def test_the_checker_counts_a_victim_that_gives_nothing_back() -> None:
    # Greedy under placer's default evicts b's spot job for a's job; the same decision judged against a
    # cohort whose queue a takes no room from evictions uses 8 GPUs that were never given back.
    cluster, job = _full("b"), _job("urgent", "a")
    d = place([job], cluster, Policy(engine="greedy"), now=NOW, queues=_cohort({}, {}))
    assert [e.job for e in d.preemptions] == ["spot"]
    assert check(d, [job], cluster, now=NOW, queues=_cohort({}, {})) == []
    found = check(d, [job], cluster, now=NOW, queues=_cohort({"within_cohort": "never"}, {}))
    assert [(v.rule, v.job) for v in found] == [("queue-budget", "c")], found
    assert "cohort holds 16 GPUs" in found[0].message
    # And a queue's own budget: the victim of a queue that keeps its quota still counts against it.
    d = place(
        [_job("urgent", "train")],
        _full("train"),
        Policy(engine="greedy"),
        now=NOW,
        queues=_queue("lower-priority"),
    )
    assert [e.job for e in d.preemptions] == ["spot"]
    found = check(d, [_job("urgent", "train")], _full("train"), now=NOW, queues=_queue("never"))
    assert [(v.rule, v.job) for v in found] == [("queue-budget", "train")], found


def _cq(preemption: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}],
            }
        ]
    }
    if preemption is not None:
        spec["preemption"] = preemption
    return kueue_queue(spec)


def _read(preemption: Any) -> dict[str, Any]:
    return load_queue_configs(_cq(preemption))["lq"].config.preemption.model_dump()


def test_kueue_preemption_policies_are_read_as_what_evictions_give_back() -> None:
    # Kueue's defaults (no preemption block) preempt for no quota at all.
    assert _read(None) == {
        "within_queue": "never",
        "within_cohort": "never",
        "within_cohort_max_priority": None,
    }
    # The example of Kueue's ClusterQueue concept page: reclaim Any, borrow LowerPriority up to priority
    # 100, within the ClusterQueue LowerPriority.
    sample = {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        "withinClusterQueue": "LowerPriority",
    }
    assert _read(sample) == {
        "within_queue": "lower-priority",
        "within_cohort": "lower-priority",
        "within_cohort_max_priority": 100,
    }
    # Reclaiming alone: Kueue reclaims only for a job within its nominal quota, which placer does not
    # tell apart from a borrowing one, so no cohort room comes back (stricter, never looser).
    reclaim = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerOrNewerEqualPriority"}
    assert _read(reclaim)["within_cohort"] == "never" and _read(reclaim)["within_queue"] == "lower-priority"


def test_an_unknown_kueue_preemption_policy_is_refused_naming_it() -> None:
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(_cq({"withinClusterQueue": "Sometimes"}), source="kueue.json")
    [issue] = e.value.issues
    assert issue.code == "enum" and issue.path.endswith("spec.preemption.withinClusterQueue")
    with pytest.raises(JobValidationError) as e:
        load_queue_configs(_cq(["LowerPriority"]), source="kueue.json")
    assert [i.code for i in e.value.issues] == ["type"]
