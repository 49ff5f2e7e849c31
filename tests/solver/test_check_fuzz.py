"""Property tests: decisions built by a simple constructive allocator on random small clusters pass the
checker; the same decisions with one random corruption fail it, with the rule the corruption breaks.

The allocator here is deliberately naive (first fit over nodes, whole replicas, free GPUs and cores
tracked in the test) so it shares nothing with the solver either. A node ``full`` is always entirely
held by a running job, so moving any replica there must break a rule.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.checks import RULES, check
from placer.solver.decision import Decision, Eviction, JobPlacement, PendingJob, Reason, ReplicaPlacement
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup, TpuDemand
from placer.topology import Cluster, cluster_of, cpu_nodes, dgx_h100, pcie_inference, tpu_pod

FULL = "full"


@st.composite
def scenario(draw: st.DrawFn) -> tuple[Cluster, list[Job], Decision]:
    parts = [dgx_h100(draw(st.integers(1, 3))), dgx_h100(1, name="full")]
    if draw(st.booleans()):
        parts.append(cpu_nodes(draw(st.integers(1, 2))))
    if draw(st.booleans()):
        parts.append(pcie_inference(draw(st.integers(1, 2)), name="l4"))
    cluster = cluster_of(*parts).allocate(
        {"job": "filler", "replicas": [{"node": FULL, "gpus": list(range(8)), "cpu_cores": 224}]}
    )
    free_gpus = {n.name: list(range(n.gpu_count)) for n in cluster.nodes if n.name != FULL}
    free_cpu = {n.name: n.cpu_cores for n in cluster.nodes if n.name != FULL}
    if draw(st.booleans()):  # a random running job on the first node
        node = cluster.nodes[0].name
        k = draw(st.integers(1, 8))
        cluster = cluster.allocate({"job": "run-0", "replicas": [{"node": node, "gpus": list(range(k))}]})
        free_gpus[node] = free_gpus[node][k:]
    jobs: list[Job] = []
    placements: list[JobPlacement] = []
    pending: list[PendingJob] = []
    for i in range(draw(st.integers(1, 8))):
        gpus = draw(st.integers(0, 8))
        count = draw(st.integers(1, 3))
        cpu = draw(st.sampled_from([1, 2, 4.5, 16, 64]))
        job = Job(
            id=f"job-{i}",
            tasks=[TaskGroup(count=count, cpu_cores=cpu, gpu=GpuDemand(count=gpus) if gpus else None)],
        )
        jobs.append(job)
        trial_gpus = {k: list(v) for k, v in free_gpus.items()}
        trial_cpu = dict(free_cpu)
        reps: list[ReplicaPlacement] = []
        for _ in range(count):
            order = draw(st.permutations(sorted(trial_gpus)))
            for node in order:
                if len(trial_gpus[node]) >= gpus and trial_cpu[node] >= cpu:
                    take, trial_gpus[node] = trial_gpus[node][:gpus], trial_gpus[node][gpus:]
                    trial_cpu[node] -= cpu
                    reps.append(ReplicaPlacement(node=node, gpus=take, cpu_cores=cpu))
                    break
        if len(reps) == count:
            free_gpus, free_cpu = trial_gpus, trial_cpu
            placements.append(JobPlacement(job=job.id, replicas=reps))
        else:
            pending.append(PendingJob(job=job.id, reasons=[Reason(code="CAPACITY", message="no room")]))
    return cluster, jobs, Decision(placements=placements, pending=pending)


def _replicas(d: Decision) -> list[tuple[int, int]]:
    return [(p, r) for p, pl in enumerate(d.placements) for r in range(len(pl.replicas))]


def _codes(d: Decision, jobs: list[Job], cluster: Cluster) -> set[str]:
    return {v.rule for v in check(d, jobs, cluster)}


@given(scenario())
def test_constructed_decisions_are_valid(s: tuple[Cluster, list[Job], Decision]) -> None:
    cluster, jobs, d = s
    assert check(d, jobs, cluster) == []


@given(scenario(), st.data())
def test_moving_a_replica_to_a_full_node_fails(s: tuple[Cluster, list[Job], Decision], data: Any) -> None:
    cluster, jobs, d = s
    reps = _replicas(d)
    if not reps:
        return
    p, r = data.draw(st.sampled_from(reps))
    old = d.placements[p].replicas[r]
    d.placements[p].replicas[r] = old.model_copy(update={"node": FULL})
    codes = _codes(d, jobs, cluster)
    assert "capacity" in codes  # every replica asks >= 1 core and the node has none left
    if old.gpus:
        assert "gpu-double-booked" in codes


@given(scenario(), st.data())
def test_dropping_a_replica_fails(s: tuple[Cluster, list[Job], Decision], data: Any) -> None:
    cluster, jobs, d = s
    reps = _replicas(d)
    if not reps:
        return
    p, r = data.draw(st.sampled_from(reps))
    del d.placements[p].replicas[r]
    assert "gang" in _codes(d, jobs, cluster)


@given(scenario(), st.data())
def test_duplicating_a_gpu_index_fails(s: tuple[Cluster, list[Job], Decision], data: Any) -> None:
    cluster, jobs, d = s
    with_gpus = [(p, r) for p, r in _replicas(d) if d.placements[p].replicas[r].gpus]
    if not with_gpus:
        return
    p, r = data.draw(st.sampled_from(with_gpus))
    target = d.placements[p].replicas[r]
    same_node = [
        (q, s_)
        for q, s_ in with_gpus
        if (q, s_) != (p, r) and d.placements[q].replicas[s_].node == target.node
    ]
    if len(target.gpus) >= 2 and (not same_node or data.draw(st.booleans())):
        gpus = [*target.gpus[:-1], target.gpus[0]]  # one index twice within the replica
        expected = "gpu-index"
    elif same_node:
        q, s_ = data.draw(st.sampled_from(same_node))
        gpus = [d.placements[q].replicas[s_].gpus[0], *target.gpus[1:]]  # another replica's GPU
        expected = "gpu-double-booked"
    else:
        return
    d.placements[p].replicas[r] = target.model_copy(update={"gpus": gpus})
    assert expected in _codes(d, jobs, cluster)


_NAMES = ["dgx-h100-1", "dgx-h100-2", "full", "ghost", "v5e-pod/host-0"]
_JOBS = [
    Job(id="g", tasks=[TaskGroup(count=2, cpu_cores=1, gpu=GpuDemand(count=2, interconnect="nvlink"))]),
    Job(id="f", distributed_strategy="fsdp", tasks=[TaskGroup(gpu=GpuDemand(count=3, share_milli=None))]),
    Job(id="s", tasks=[TaskGroup(gpu=GpuDemand(share_milli=400))]),
    Job(id="t", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 2)))]),
    Job(id="n", tasks=[TaskGroup(count=2, nodes_per_replica=2, one_per_node=True)]),
]
_ROBUST = cluster_of(dgx_h100(2), dgx_h100(1, name="full"), tpu_pod("v5e", shape=(4, 4))).allocate(
    {"job": "filler", "replicas": [{"node": FULL, "gpus": [0, 1]}]}
)

_replica = st.builds(
    ReplicaPlacement,
    node=st.sampled_from(_NAMES),
    gpus=st.lists(st.integers(-1, 9), max_size=4),
    gpu_milli=st.none() | st.integers(1, 1000),
    tpu_pod=st.none() | st.sampled_from(["v5e-pod", "nope"]),
    tpu_chips=st.lists(st.lists(st.integers(-1, 4), min_size=1, max_size=4), max_size=5),
    cpu_cores=st.floats(0, 300),
    task_group=st.sampled_from(["default", "other"]),
)


@given(
    st.lists(
        st.builds(
            JobPlacement, job=st.sampled_from(["g", "f", "s", "t", "n", "x"]), replicas=st.lists(_replica)
        ),
        max_size=6,
    ),
    st.lists(st.builds(Eviction, job=st.sampled_from(["filler", "nope"])), max_size=2),
)
def test_arbitrary_decisions_never_crash_the_checker(
    placements: list[JobPlacement], ev: list[Eviction]
) -> None:
    vs = check(Decision(placements=placements, preemptions=ev), _JOBS, _ROBUST)
    assert all(v.rule in RULES and v.message for v in vs)
