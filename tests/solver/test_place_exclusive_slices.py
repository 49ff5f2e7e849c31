"""Exclusive slices (``Slices.exclusive``; JobSet exclusive placement, each child Job a slice alone in a
topology domain): one slice per domain, nothing else on any node of it — running, placed by the same
decision, or another group of the same job. Both engines through the ``solve`` fixture (which runs the
checker on every decision), and the checker alone on decisions built by hand."""

from __future__ import annotations

from datetime import timedelta

from placer.solver.checks import check
from placer.solver.jobs.model import GpuDemand, Job, Slices, TaskGroup
from placer.topology import Cluster, Inventory, NodeSpec, build_cluster
from placer.topology.inventory import NodeGpus
from tests.solver.check_helpers import decision, place, rep, rules
from tests.solver.conftest import NOW, Solve, pending_reason


def _racks(racks: int, nodes: int = 2) -> Cluster:
    """``racks`` racks ``r0, r1...`` of ``nodes`` 8-GPU H100 nodes each, ``r<i>-n<j>``."""
    return build_cluster(
        Inventory(
            nodes=[
                NodeSpec(
                    name=f"r{i}-n{j}",
                    rack=f"r{i}",
                    cpu_cores=64,
                    memory_gb=512,
                    gpus=NodeGpus(type="nvidia-h100-80gb", count=8),
                )
                for i in range(racks)
                for j in range(nodes)
            ]
        ),
        source="t",
    )


def _jobset(job_id: str, children: int, pods: int, *, gpus: int = 8, cls: str = "on-demand") -> Job:
    """A JobSet of ``children`` child Jobs of ``pods`` pods (``gpus`` each), each child alone in a rack."""
    return Job(
        id=job_id,
        priority_class=cls,
        tasks=[
            TaskGroup(
                name="workers",
                count=children * pods,
                cpu_cores=8,
                gpu=GpuDemand(count=gpus),
                slices=Slices(level="rack", size=pods, exclusive=True),
            )
        ],
    )


def _plain(job_id: str, gpus: int, cls: str = "on-demand") -> Job:
    return Job(id=job_id, priority_class=cls, tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=gpus))])


def _racks_of(d: object, job: str) -> list[str]:
    return sorted(
        r.node.split("-")[0]
        for p in d.placements  # type: ignore[attr-defined]
        if p.job == job
        for r in p.replicas
    )


def test_each_child_takes_a_rack_of_its_own(solve: Solve) -> None:
    # 3 racks of 2 nodes; 2 children of 2 pods of 8 GPUs: each child fills one rack, and a third rack is
    # left. Without exclusivity the same job fits on 2 racks as well; the difference is the next test.
    d = solve([_jobset("js", 2, 2)], _racks(3))
    assert "REJECTED" not in d.stats.status  # the engine kept the rule itself
    racks = _racks_of(d, "js")
    assert len(racks) == 4 and len(set(racks)) == 2 and all(racks.count(r) == 2 for r in set(racks))


def test_small_children_still_get_a_rack_each_and_nothing_else_goes_there(solve: Solve) -> None:
    # 2 racks of 2 nodes. Two children of 1 pod of 1 GPU each: plain slices would share a node; exclusive
    # ones take a rack each, which leaves no room for a 1-GPU job of the same batch, though 15 of each
    # rack's 16 GPUs are free. So it waits.
    js = _jobset("js", 2, 1, gpus=1, cls="reserved")
    other = _plain("other", 1)
    d = solve([js, other], _racks(2))
    assert "REJECTED" not in d.stats.status  # the engine kept the rule itself
    assert sorted(set(_racks_of(d, "js"))) == ["r0", "r1"]
    assert pending_reason(d, "other") is not None


def test_a_rack_where_anything_runs_is_not_taken(solve: Solve) -> None:
    # 3 racks; a running 1-GPU job on r1-n0. Two children of 2 pods of 4 GPUs: r1 has room for one (15 free
    # GPUs, the fullest rack, where plain slices would go first), but not alone: r0 and r2.
    c = _racks(3).with_allocations(
        [{"job": "run", "started_at": NOW - timedelta(hours=1), "replicas": [{"node": "r1-n0", "gpus": [0]}]}]
    )
    d = solve([_jobset("js", 2, 2, gpus=4)], c)
    assert "REJECTED" not in d.stats.status  # the engine kept the rule itself
    assert sorted(set(_racks_of(d, "js"))) == ["r0", "r2"]


def test_no_free_rack_for_a_child_leaves_the_jobset_pending(solve: Solve) -> None:
    # 2 racks, one with a running job: one child fits alone, the gang of two does not.
    c = _racks(2).with_allocations(
        [{"job": "run", "started_at": NOW - timedelta(hours=1), "replicas": [{"node": "r0-n1", "gpus": [0]}]}]
    )
    d = solve([_jobset("js", 2, 1)], c)
    assert "REJECTED" not in d.stats.status  # the engine kept the rule itself
    assert d.placements == []
    [reason] = next(p.reasons for p in d.pending if p.job == "js")
    # Two slices need two racks to themselves; only r1 has no running job.
    assert reason.code == "INSUFFICIENT_CAPACITY" and "alone in a rack" in reason.message
    assert (reason.details["slices"], reason.details["free_domains"], reason.details["domains"]) == (2, 1, 2)


def test_another_job_of_the_batch_keeps_to_the_other_racks(solve: Solve) -> None:
    # 3 racks; a JobSet of 1 child (2 pods of 1 GPU) and four 4-GPU jobs. Best fit alone would put those on
    # the child's nodes (7 free GPUs each, the fullest); its rack holds nothing else, so they go to the two
    # other racks (4 nodes), all of them placed.
    jobs = [_jobset("js", 1, 2, gpus=1, cls="reserved"), *(_plain(j, 4) for j in "abcd")]
    d = solve(jobs, _racks(3))
    assert "REJECTED" not in d.stats.status  # the engine kept the rule itself
    [rack] = set(_racks_of(d, "js"))
    for j in "abcd":
        assert _racks_of(d, j) and rack not in _racks_of(d, j), (j, _racks_of(d, j))


def _w(node: str) -> object:
    """A replica of the JobSet's group ``workers`` on ``node``, holding GPU 0."""
    return rep(node, [0], task_group="workers")


def _checked(d: object, jobs: list[Job], cluster: Cluster) -> list[tuple[str, str, str | None]]:
    return [r for r in rules(check(d, jobs, cluster, now=NOW)) if r[0] == "slices"]  # type: ignore[arg-type]


def test_the_checker_wants_one_slice_per_rack_and_nothing_else_there() -> None:
    c = _racks(2)
    js = _jobset("js", 2, 1, gpus=1)
    ok = decision(place("js", _w("r0-n0"), _w("r1-n0")))
    assert _checked(ok, [js], c) == []
    two = decision(place("js", _w("r0-n0"), _w("r0-n1")))  # both children in r0
    assert ("slices", "js", None) in _checked(two, [js], c)
    beside = decision(
        place("js", _w("r0-n0"), _w("r1-n0")),
        place("other", rep("r1-n1", [0])),  # another job on the other node of a child's rack
    )
    assert ("slices", "js", "r1-n1") in _checked(beside, [js, _plain("other", 1)], c)


def test_the_checker_counts_running_jobs_and_not_evicted_ones() -> None:
    c = _racks(2).with_allocations(
        [
            {
                "job": "run",
                "priority_class": "spot",
                "preemptible": True,
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"node": "r1-n1", "gpus": [0]}],
            }
        ]
    )
    js = _jobset("js", 2, 1, gpus=1)
    d = decision(place("js", _w("r0-n0"), _w("r1-n0")))
    assert ("slices", "js", "r1-n1") in _checked(d, [js], c)


def test_a_sliced_pod_is_never_split_over_nodes(solve: Solve) -> None:
    # A replica in slices is a pod: it runs on one node, whatever its strategy says. Split over two nodes
    # (as FSDP's 16 GPUs or a "spread" pair would be), its exclusive slice of one would hold two replicas
    # in a rack — what the checker counts (found by the fuzz).
    c = _racks(2)

    def sliced(job_id: str, gpus: int, **placement: object) -> Job:
        group = TaskGroup(
            cpu_cores=8, gpu=GpuDemand(count=gpus), slices=Slices(level="rack", size=1, exclusive=True)
        )
        return Job.model_validate(
            {"id": job_id, "distributed_strategy": "fsdp", "tasks": [group], "placement": placement}
        )

    d = solve([sliced("pair", 2, gpu_affinity="spread")], c)
    [p] = d.placements
    assert len(p.replicas) == 1 and len(p.replicas[0].gpus) == 2  # one pod, its two GPUs on one node
    big = solve([sliced("big", 16)], c)
    assert (pending_reason(big, "big") or "").startswith(
        "UNSATISFIABLE"
    )  # no node holds 16 GPUs, and a pod is not split


def test_exclusive_node_replicas_in_a_slice_each_take_a_node_of_its_rack(solve: Solve) -> None:
    # A slice of 2 replicas that each own their node whole (Flux ``exclusive``), asking no resources: one
    # node holds one of them, however little they ask. r0 has one node left beside a running job, r1 two:
    # the slice goes to r1, and with a job on r1 too, nowhere. CP-SAT's patterns once put both on one
    # node, so its answer split the slice over two racks and the checker refused it (found by the fuzz).
    def run(node: str) -> dict[str, object]:
        return {
            "job": f"run-{node}",
            "started_at": NOW - timedelta(hours=1),
            "replicas": [{"node": node, "gpus": [0]}],
        }

    group = TaskGroup(count=2, cpu_cores=0, exclusive=True, slices=Slices(level="rack", size=2))
    job = Job(id="pair", tasks=[group])
    d = solve([job], _racks(2).with_allocations([run("r0-n0")]))
    assert "REJECTED" not in d.stats.status
    assert sorted(r.node for r in d.placements[0].replicas) == ["r1-n0", "r1-n1"]
    full = solve([job], _racks(2).with_allocations([run("r0-n0"), run("r1-n1")]))
    assert "REJECTED" not in full.stats.status and not full.placements


def test_the_checker_refuses_a_sliced_pod_split_over_nodes() -> None:
    # Rule 2's split case is for a replica that may span nodes; a replica in slices is a pod, so its GPUs
    # on two nodes are two replicas where the group has one.
    group = TaskGroup(gpu=GpuDemand(count=2), slices=Slices(level="rack", size=1))
    job = Job(id="pod", distributed_strategy="fsdp", tasks=[group])
    halves = [rep("r0-n0", gpus=[0]), rep("r0-n1", gpus=[0])]
    rules_broken = {v.rule for v in check(decision(place("pod", *halves)), [job], _racks(1))}
    assert rules_broken == {"gang"}
