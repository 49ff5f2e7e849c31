"""Per-flavor GPU quotas (a queue's ``flavor_groups`` whose flavors carry ``max_gpus``; a Kueue ClusterQueue
with a GPU quota per ResourceFlavor): the GPUs a queue's jobs hold on a flavor's nodes, running and placed,
stay within its quota there, a node counted under the first flavor of the group whose labels it has. Both
engines through the ``solve`` fixture (the checker on every decision), the checker alone on decisions
built by hand, and the Kueue reader."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from placer.solver.checks import check
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig, load_queue_configs
from placer.topology import Cluster
from tests.solver.check_helpers import decision, place, rep
from tests.solver.conftest import NOW, Solve, nodes_of
from tests.solver.kube_objects import kueue_queue
from tests.solver.pools import pools


def _cluster(h100: int = 2, a100: int = 2) -> Cluster:
    """``h100`` H100 nodes labelled ``pool: h100`` and ``a100`` A100 nodes labelled ``pool: a100``."""
    return pools(h100, a100)


def _queues(h100: int | None = 8, a100: int | None = 16) -> dict[str, QueueConfig]:
    flavors: list[dict[str, Any]] = [
        {"name": "h100", "node_labels": {"pool": "h100"}, "max_gpus": h100},
        {"name": "a100", "node_labels": {"pool": "a100"}, "max_gpus": a100},
    ]
    group = {"covered": ["cpu", "memory", "nvidia.com/gpu"], "flavors": flavors}
    return {"team": QueueConfig.model_validate({"queue": "team", "config": {"flavor_groups": [group]}})}


def _job(job_id: str, gpus: int = 8, *, gpu_type: str | None = None, cls: str = "on-demand") -> Job:
    demand = GpuDemand(count=gpus, types=[gpu_type] if gpu_type else [])
    return Job(id=job_id, queue="team", priority_class=cls, tasks=[TaskGroup(cpu_cores=8, gpu=demand)])


def _running(
    cluster: Cluster, job: str, node: str, *, cls: str = "on-demand", queue: str = "team"
) -> Cluster:
    return cluster.with_allocations(
        [
            {
                "job": job,
                "queue": queue,
                "priority_class": cls,
                "preemptible": cls == "spot",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": node, "gpus": list(range(8)), "cpu_cores": 8}],
            }
        ]
    )


def test_a_flavor_at_its_quota_sends_the_job_to_another_flavor(solve: Solve) -> None:
    # The team holds 16 A100s (its whole A100 quota) and a third A100 node is free. An 8-GPU job of any
    # type goes to an H100 node; by itself (no quota, or only the summed 24) it takes the cheaper A100.
    c = _running(_running(_cluster(a100=3), "o1", "a100-0"), "o2", "a100-1")
    assert nodes_of(solve([_job("new")], c), "new") == ["a100-2"]
    d = solve([_job("new")], c, queues=_queues())
    assert "REJECTED" not in d.stats.status  # the engine kept the quota itself
    assert nodes_of(d, "new")[0].startswith("h100-")


def test_a_job_that_may_use_only_a_full_flavor_waits_naming_it(solve: Solve) -> None:
    c = _running(_cluster(), "old", "h100-0")
    d = solve([_job("h100-only", gpu_type="nvidia-h100-80gb")], c, queues=_queues())
    assert d.placements == []
    [reason] = next(p.reasons for p in d.pending if p.job == "h100-only")
    assert reason.code == "QUEUE_BUDGET" and "h100 0" in reason.message, reason.message
    assert reason.details["flavors"] == {"h100": 0.0}


def test_other_queues_and_flavors_without_a_quota_are_not_limited(solve: Solve) -> None:
    c = _running(_cluster(), "old", "h100-0")
    other = Job(
        id="other",
        queue="serve",
        tasks=[TaskGroup(cpu_cores=8, gpu=GpuDemand(count=8, types=["nvidia-h100-80gb"]))],
    )
    free = _job("free", gpu_type="nvidia-h100-80gb")
    d = solve([other], c, queues=_queues())
    assert nodes_of(d, "other") == ["h100-1"]
    d = solve([free], c, queues=_queues(h100=None))  # no H100 quota of its own: the free node is usable
    assert nodes_of(d, "free") == ["h100-1"]


def test_evicting_a_job_gives_its_flavor_quota_back_to_one_that_outranks_it(solve: Solve) -> None:
    # One H100 node, held by a spot job of the team (8 of its quota of 8). A reserved H100 job needs the
    # node, so the spot job is evicted and its 8 GPUs of quota come back.
    c = _running(_cluster(h100=1, a100=0), "spot", "h100-0", cls="spot")
    d = solve([_job("urgent", gpu_type="nvidia-h100-80gb", cls="reserved")], c, queues=_queues())
    assert nodes_of(d, "urgent") == ["h100-0"] and [e.job for e in d.preemptions] == ["spot"]


def test_the_checker_counts_gpus_per_flavor() -> None:
    c = _running(_cluster(), "old", "h100-0")
    jobs = [_job("a")]
    over = decision(place("a", rep("h100-1", list(range(8)))))
    [v] = [v for v in check(over, jobs, c, now=NOW, queues=_queues()) if v.rule == "queue-budget"]
    assert "flavor 'h100'" in v.message and "16 GPUs on its nodes" in v.message
    fine = decision(place("a", rep("a100-0", list(range(8)))))
    assert [v for v in check(fine, jobs, c, now=NOW, queues=_queues()) if v.rule == "queue-budget"] == []


def _kueue(borrowing: str | None = None, cohort: str | None = None) -> dict[str, Any]:
    """Two ResourceFlavors by node pool and a ClusterQueue with 8 H100 and 16 A100 GPUs."""

    def flavor(name: str, gpus: int) -> dict[str, Any]:
        res: dict[str, Any] = {"name": "nvidia.com/gpu", "nominalQuota": gpus}
        if borrowing is not None:
            res["borrowingLimit"] = borrowing
        return {"name": name, "resources": [{"name": "cpu", "nominalQuota": 256}, res]}

    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "nvidia.com/gpu"],
                "flavors": [flavor("h100", 8), flavor("a100", 16)],
            }
        ]
    }
    if cohort:
        spec["cohort"] = cohort
    pools = {name: {"nodeLabels": {"pool": name}} for name in ("h100", "a100")}
    return kueue_queue(spec, local=("ml", "team"), flavors=pools)


def _flavor_quotas(doc: dict[str, Any]) -> dict[str, float | None]:
    [group] = load_queue_configs(doc)["team"].config.flavor_groups
    return {f.name: f.max_gpus for f in group.flavors}


def test_kueue_gpu_quotas_per_resource_flavor_are_read() -> None:
    assert _flavor_quotas(_kueue()) == {"h100": 8, "a100": 16}
    assert load_queue_configs(_kueue())["team"].config.ml_limits.max_total_gpus == 24  # the sum, as before
    # In a cohort: nominal plus the borrowing limit; without one, no quota of its own there.
    assert _flavor_quotas(_kueue("4", cohort="all")) == {"h100": 12, "a100": 20}
    assert _flavor_quotas(_kueue(cohort="all")) == {"h100": None, "a100": None}


def test_kueue_flavor_quotas_hold_on_the_kueue_queue(solve: Solve) -> None:
    c = _running(_running(_cluster(a100=3), "o1", "a100-0"), "o2", "a100-1")
    d = solve([_job("new")], c, queues=load_queue_configs(_kueue()))
    assert nodes_of(d, "new")[0].startswith("h100-")
