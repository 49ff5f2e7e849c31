"""Per-flavor CPU, memory and pods quotas (a queue's ``flavor_groups`` whose flavors carry ``max_cpu_cores``,
``max_memory_gb`` or ``max_pods``; a Kueue ClusterQueue with ``cpu``, ``memory`` and ``pods`` quotas per
ResourceFlavor, the common shape: one resource group covering ``cpu``, ``memory`` and the GPUs, a flavor per
node pool). Until 2026-11-29 placer summed them over flavors into one queue budget, so a queue could put
on one pool's nodes more cores than its quota there, which Kueue never admits. Both engines through the
``solve`` fixture (the checker on every decision), the checker alone on decisions built by hand, and the
Kueue reader."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.jobs.model import Job, TaskGroup
from placer.solver.jobs.queues import QueueConfig, load_queue_configs
from placer.topology import Cluster, Inventory, NodeSpec, build_cluster
from tests.solver.check_helpers import decision, place, rep
from tests.solver.conftest import NOW, Solve, nodes_of, pending_reason
from tests.solver.kube_objects import kueue_queue


def _cluster(per_pool: int = 2) -> Cluster:
    """CPU nodes of 64 cores and 256 GB in two pools, ``pool: a`` (listed first) and ``pool: b``."""
    nodes = [
        NodeSpec(name=f"{pool}-{i}", cpu_cores=64, memory_gb=256, labels={"pool": pool})
        for pool in ("a", "b")
        for i in range(per_pool)
    ]
    return build_cluster(Inventory(nodes=nodes), source="t")


def _queues(**quotas: dict[str, float]) -> dict[str, QueueConfig]:
    """Queue ``team`` with flavors ``a`` and ``b`` (one per pool) carrying ``quotas[flavor]``."""
    flavors = [{"name": f, "node_labels": {"pool": f}, **quotas.get(f, {})} for f in ("a", "b")]
    group = {"covered": ["cpu", "memory", "pods"], "flavors": flavors}
    return {"team": QueueConfig.model_validate({"queue": "team", "config": {"flavor_groups": [group]}})}


def _job(job_id: str, cores: float = 24, memory: float = 16, cls: str = "on-demand") -> Job:
    return Job(
        id=job_id, queue="team", priority_class=cls, tasks=[TaskGroup(cpu_cores=cores, memory_gb=memory)]
    )


def _running(cluster: Cluster, job: str, node: str, cores: float, *, cls: str = "on-demand") -> Cluster:
    return cluster.with_allocations(
        [
            {
                "job": job,
                "queue": "team",
                "priority_class": cls,
                "preemptible": cls == "spot",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": node, "cpu_cores": cores, "memory_gb": 8}],
            }
        ]
    )


def _pools(d: Any, jobs: list[str]) -> list[str]:
    return [nodes_of(d, j)[0].split("-")[0] for j in jobs]


def test_a_flavor_short_of_cores_sends_the_job_to_the_other_pool(solve: Solve) -> None:
    # Pool a is first (every node is flavor a's by label) but the team may hold only 16 cores there: a
    # 24-core job goes to pool b, and so do the next two while b's 64 last. The fourth would take b to 96
    # and a to 24: it waits, naming both flavors' rooms, though the queue's sum (16 + 64 = 80) is not the
    # reason (48 cores held when it is decided).
    queues = _queues(a={"max_cpu_cores": 16}, b={"max_cpu_cores": 64})
    jobs = [_job(f"j{k}") for k in range(3)]
    d = solve(jobs, _cluster(), queues=queues)
    assert "REJECTED" not in d.stats.status  # the engine kept the quotas itself
    assert _pools(d, ["j0", "j1"]) == ["b", "b"]
    reason = pending_reason(d, "j2") or ""
    assert reason.startswith("QUEUE_BUDGET") and "CPU quota on every flavor" in reason, reason
    assert "a 16" in reason and "b 16" in reason and "24 cores" in reason, reason
    # Without the quotas, the same jobs all run, the first on pool a (its nodes come first).
    free = solve(jobs, _cluster())
    assert len(free.placements) == 3


def test_running_work_counts_on_the_flavor_of_its_node(solve: Solve) -> None:
    # Pool b holds a running 50-core job of the team: of b's 64 cores 14 are left, so a 24-core job takes
    # pool a (quota 32) even though b's nodes have the room.
    c = _running(_cluster(), "old", "b-0", 50)
    d = solve([_job("new")], c, queues=_queues(a={"max_cpu_cores": 32}, b={"max_cpu_cores": 64}))
    assert _pools(d, ["new"]) == ["a"]


@pytest.mark.parametrize(
    ("quotas", "job", "pool"),
    [
        # memory: 100 GB on pool a, a 160 GB job goes to b
        ({"a": {"max_memory_gb": 100}, "b": {"max_memory_gb": 1000}}, _job("m", cores=4, memory=160), "b"),
        # pods: pool a may hold no pod of the team
        ({"a": {"max_pods": 0}, "b": {"max_pods": 10}}, _job("p", cores=4), "b"),
    ],
)
def test_memory_and_pods_quotas_per_flavor_hold_too(
    solve: Solve, quotas: dict[str, dict[str, float]], job: Job, pool: str
) -> None:
    d = solve([job], _cluster(), queues=_queues(**quotas))
    assert _pools(d, [job.id]) == [pool]


def test_a_replicated_job_counts_every_replica_on_its_flavor(solve: Solve) -> None:
    # Four 16-core replicas: pool a's 32 cores hold two of them, so the job spreads over both pools (or
    # takes pool b alone): never more than 32 cores on pool a's nodes.
    job = Job(id="gang", queue="team", tasks=[TaskGroup(count=4, cpu_cores=16, memory_gb=8)])
    d = solve([job], _cluster(), queues=_queues(a={"max_cpu_cores": 32}, b={"max_cpu_cores": 64}))
    [p] = d.placements
    on_a = sum(16 for r in p.replicas if r.node.startswith("a-"))
    assert len(p.replicas) == 4 and on_a <= 32


def test_evicting_a_job_gives_its_flavor_cores_back_to_one_that_outranks_it(solve: Solve) -> None:
    # One node per pool; pool b's node is full of a spot job of the team holding b's whole quota of 64
    # cores, and pool a may hold nothing of the team. A reserved 24-core job needs b's node: the spot job is
    # evicted, and its 64 cores of quota on b come back to it.
    c = _running(_cluster(per_pool=1), "spot", "b-0", 64, cls="spot")
    queues = _queues(a={"max_cpu_cores": 0}, b={"max_cpu_cores": 64})
    d = solve([_job("urgent", cls="reserved")], c, queues=queues)
    assert nodes_of(d, "urgent") == ["b-0"] and [e.job for e in d.preemptions] == ["spot"]


def test_the_checker_counts_cores_memory_and_pods_per_flavor() -> None:
    c = _cluster()
    jobs = [_job("x", cores=24, memory=16)]
    over = decision(place("x", rep("a-0", cpu_cores=24, memory_gb=16)))
    fine = decision(place("x", rep("b-0", cpu_cores=24, memory_gb=16)))
    for quotas, words in (
        ({"a": {"max_cpu_cores": 16}}, "flavor 'a''s max_cpu_cores"),
        ({"a": {"max_memory_gb": 8}}, "flavor 'a''s max_memory_gb"),
        ({"a": {"max_pods": 0}}, "flavor 'a''s max_pods"),
    ):
        queues = _queues(**quotas)
        [v] = [v for v in check(over, jobs, c, now=NOW, queues=queues) if v.rule == "queue-budget"]
        assert words in v.message, v.message
        assert [v for v in check(fine, jobs, c, now=NOW, queues=queues) if v.rule == "queue-budget"] == []


def _kueue(cohort: str | None = None, borrowing: bool = False) -> dict[str, Any]:
    """Two ResourceFlavors by node pool and a ClusterQueue with cpu, memory and pods quotas on each (and,
    with ``borrowing``, a borrowing limit of 2 cores, 2 GiB and 2 pods on each)."""

    def flavor(name: str, cores: str, memory: str, pods: int) -> dict[str, Any]:
        resources: list[dict[str, Any]] = [
            {"name": "cpu", "nominalQuota": cores},
            {"name": "memory", "nominalQuota": memory},
            {"name": "pods", "nominalQuota": pods},
        ]
        if borrowing:
            for r, more in zip(resources, ("2", "2Gi", 2), strict=True):
                r["borrowingLimit"] = more
        return {"name": name, "resources": resources}

    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "pods"],
                "flavors": [flavor("a", "16", "64Gi", 4), flavor("b", "64", "256Gi", 10)],
            }
        ],
    }
    if cohort:
        spec["cohort"] = cohort
    pools = {name: {"nodeLabels": {"pool": name}} for name in ("a", "b")}
    return kueue_queue(spec, local=("ml", "team"), flavors=pools)


def _read(doc: dict[str, Any]) -> dict[str, tuple[float | None, float | None, int | None]]:
    [group] = load_queue_configs(doc)["team"].config.flavor_groups
    return {f.name: (f.max_cpu_cores, f.max_memory_gb, f.max_pods) for f in group.flavors}


def test_kueue_cpu_memory_and_pods_quotas_per_flavor_are_read() -> None:
    assert _read(_kueue()) == {"a": (16, 64, 4), "b": (64, 256, 10)}
    limits = load_queue_configs(_kueue())["team"].config.ml_limits
    assert (limits.max_total_cpu_cores, limits.max_total_memory_gb, limits.max_total_pods) == (80, 320, 14)
    # In a cohort: nominal plus the borrowing limit; without one, no quota of its own there.
    assert _read(_kueue(cohort="all", borrowing=True)) == {"a": (18, 66, 6), "b": (66, 258, 12)}
    assert _read(_kueue(cohort="all")) == {"a": (None, None, None), "b": (None, None, None)}


def test_kueue_flavor_cpu_quotas_hold_on_the_kueue_queue(solve: Solve) -> None:
    job = _job("ml/new").model_copy(update={"queue": "team"})
    d = solve([job], _cluster(), queues=load_queue_configs(_kueue()))
    assert _pools(d, ["ml/new"]) == ["b"]
