"""Hard instances: the hand-worked optimum holds (brute force), is feasible (witness), and a priority-order
first-fit / best-fit places less.

The reference greedies below live here, not in ``scenarios/``: they only show that each trap works. In
these instances every NVLink domain is one node (DGX/HGX boards), so "one NVLink domain" and "one node"
coincide and the GPU greedies place each job on a single node.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from itertools import permutations

import pytest

from placer.scenarios.synthetic import (
    Scenario,
    fragmentation_trap,
    hard_instances,
    memory_stranding,
    nvlink_packing,
    tpu_slice_packing,
    weighted_demand,
)
from placer.scenarios.synthetic.scenario import CLASS_WEIGHT, demand_units
from placer.solver.jobs.model import Interconnect, Job
from placer.topology import Cluster, TopologyError, slices_in_pod

# ---------------------------------------------------------------------------------------------------
# Tiny reference placers (GPU jobs on single nodes; TPU jobs on the first free slice)
# ---------------------------------------------------------------------------------------------------

NodeState = tuple[int, float, float]  # free GPUs, cores, GB


def _priority_order(jobs: Sequence[Job]) -> list[Job]:
    return sorted(jobs, key=lambda j: (-j.priority_class.rank, -j.priority, j.submit_time))


def _need(job: Job) -> NodeState:
    t = job.tasks[0]
    assert len(job.tasks) == 1 and t.count == 1, "the reference placers handle one-replica jobs only"
    return (t.gpus_per_replica, t.cpu_cores, t.memory_gb)


def _fits(free: NodeState, need: NodeState) -> bool:
    return all(f >= n for f, n in zip(free, need, strict=True))


def _take(free: NodeState, need: NodeState) -> NodeState:
    return (free[0] - need[0], free[1] - need[1], free[2] - need[2])


def _node_states(cluster: Cluster) -> list[NodeState]:
    out = []
    for n in cluster.nodes:
        f = cluster.free(n.name)
        out.append((len(f.gpus), f.cpu_cores, f.memory_gb))
    return out


def _gpu_greedy(sc: Scenario, choose: Callable[[list[int], list[NodeState], NodeState], int]) -> list[str]:
    """Priority-order greedy over nodes: ``choose`` picks one node among those that fit."""
    free = _node_states(sc.cluster)
    placed = []
    for job in _priority_order(sc.jobs):
        need = _need(job)
        fits = [i for i, f in enumerate(free) if _fits(f, need)]
        if fits:
            i = choose(fits, free, need)
            free[i] = _take(free[i], need)
            placed.append(job.id)
    return placed


def first_fit(sc: Scenario) -> list[str]:
    """Each job, in priority order, on the first node (cluster order) where it fits."""
    if sc.cluster.tpu_pods():
        return _tpu_first_fit(sc)
    return _gpu_greedy(sc, lambda fits, free, need: fits[0])


def best_fit(sc: Scenario) -> list[str]:
    """Each job, in priority order, where the fewest GPUs are left over (ties: first node)."""
    return _gpu_greedy(sc, lambda fits, free, need: min(fits, key=lambda i: (free[i][0] - need[0], i)))


def _tpu_first_fit(sc: Scenario) -> list[str]:
    used: dict[str, set[tuple[int, ...]]] = {
        p.name: set(sc.cluster.used_tpu_chips(p.name)) for p in sc.cluster.tpu_pods()
    }
    placed = []
    for job in _priority_order(sc.jobs):
        shape = job.tasks[0].tpu.topology
        for pod in sc.cluster.tpu_pods():
            free = slices_in_pod(pod, shape, used[pod.name])
            if free:
                used[pod.name].update(free[0].chips)
                placed.append(job.id)
                break
    return placed


# ---------------------------------------------------------------------------------------------------
# Brute force (exhaustive, memoized on the multiset of node states: all nodes of an instance are alike)
# ---------------------------------------------------------------------------------------------------


def brute_force_gpu(sc: Scenario, value: Callable[[Job], float]) -> float:
    jobs = list(sc.jobs)
    needs = [_need(j) for j in jobs]
    values = [value(j) for j in jobs]
    assert len({(n.gpu_count, n.cpu_cores, n.memory_gb, n.gpu_type) for n in sc.cluster.nodes}) == 1

    @cache
    def best(i: int, states: tuple[NodeState, ...]) -> float:
        if i == len(jobs):
            return 0.0
        out = best(i + 1, states)  # leave job i pending
        for k, s in enumerate(states):
            if (k == 0 or states[k - 1] != s) and _fits(s, needs[i]):
                nxt = tuple(sorted((*states[:k], _take(s, needs[i]), *states[k + 1 :])))
                out = max(out, values[i] + best(i + 1, nxt))
        return out

    return best(0, tuple(sorted(_node_states(sc.cluster))))


def brute_force_tpu(sc: Scenario, value: Callable[[Job], float]) -> float:
    jobs = list(sc.jobs)
    pods = list(sc.cluster.tpu_pods())

    @cache
    def best(i: int, used: tuple[frozenset[tuple[int, ...]], ...]) -> float:
        if i == len(jobs):
            return 0.0
        out = best(i + 1, used)
        for p, pod in enumerate(pods):
            for s in slices_in_pod(pod, jobs[i].tasks[0].tpu.topology, used[p]):
                nxt = (*used[:p], used[p] | frozenset(s.chips), *used[p + 1 :])
                out = max(out, value(jobs[i]) + best(i + 1, nxt))
        return out

    return best(0, tuple(frozenset(sc.cluster.used_tpu_chips(p.name)) for p in pods))


def brute_force(sc: Scenario, value: Callable[[Job], float]) -> float:
    return brute_force_tpu(sc, value) if sc.cluster.tpu_pods() else brute_force_gpu(sc, value)


def _weight(job: Job) -> float:
    return demand_units(job) * CLASS_WEIGHT[job.priority_class.value]


# ---------------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------------

#: (builder, hand optimum placed, hand optimum weighted demand, first-fit placed, best-fit placed) from the
#: arithmetic in each builder's docstring; None where best-fit is not defined (TPU slices).
HAND = [
    (fragmentation_trap, 12, 400.0, 10, 10),
    (nvlink_packing, 9, 360.0, 8, 8),
    (tpu_slice_packing, 5, 640.0, 4, None),
    (memory_stranding, 8, 320.0, 6, 6),
]
IDS = [h[0].__name__ for h in HAND]


@pytest.mark.parametrize(("build", "placed", "weighted", "ff", "bf"), HAND, ids=IDS)
def test_hand_numbers_are_the_scenario_fields(
    build: Callable[[], Scenario], placed: int, weighted: float, ff: int, bf: int | None
) -> None:
    sc = build()
    assert (sc.optimal_placed, sc.optimal_weighted_demand, sc.greedy_placed) == (placed, weighted, ff)


@pytest.mark.parametrize(("build", "placed", "weighted", "ff", "bf"), HAND, ids=IDS)
def test_brute_force_confirms_the_hand_optimum(
    build: Callable[[], Scenario], placed: int, weighted: float, ff: int, bf: int | None
) -> None:
    sc = build()
    assert brute_force(sc, lambda j: 1.0) == placed
    assert brute_force(sc, _weight) == weighted


@pytest.mark.parametrize(("build", "placed", "weighted", "ff", "bf"), HAND, ids=IDS)
def test_priority_order_greedy_falls_into_the_trap(
    build: Callable[[], Scenario], placed: int, weighted: float, ff: int, bf: int | None
) -> None:
    sc = build()
    got = first_fit(sc)
    assert len(got) == ff < placed
    by_id = {j.id: j for j in sc.jobs}
    assert weighted_demand(by_id[i] for i in got) < weighted
    if bf is not None:
        assert len(best_fit(sc)) == bf < placed


@pytest.mark.parametrize("sc", hard_instances(), ids=lambda s: s.name)
def test_witness_is_feasible_and_reaches_the_optimum(sc: Scenario) -> None:
    after = sc.cluster.with_allocations(sc.witness)  # raises on any double booking or over-commit
    assert len(after.running_jobs()) == len(sc.cluster.running_jobs()) + len(sc.witness)
    by_id = {j.id: j for j in sc.jobs}
    assert len({w.job for w in sc.witness}) == len(sc.witness) == sc.optimal_placed
    assert weighted_demand(by_id[w.job] for w in sc.witness) == sc.optimal_weighted_demand
    for w in sc.witness:
        job = by_id[w.job]
        [rep] = w.replicas
        if job.total_tpu_chips:
            extents = tuple(
                max(c[d] for c in rep.tpu_chips) - min(c[d] for c in rep.tpu_chips) + 1 for d in (0, 1)
            )
            assert len(rep.tpu_chips) == job.total_tpu_chips
            assert extents in set(permutations(job.tasks[0].tpu.topology))  # a full box of the shape
        else:
            gpu = job.tasks[0].gpu
            assert len(rep.gpus) == gpu.count
            node = sc.cluster.node(rep.node)
            assert node.gpu_type in gpu.types
            if gpu.interconnect is Interconnect.NVLINK:
                assert node.nvlink_domain is not None


def test_witness_double_booking_would_be_caught() -> None:
    """The feasibility check above can fail: doubling a witness allocation is refused."""
    sc = fragmentation_trap()
    clash = sc.witness[0].model_copy(update={"job": "other"})
    with pytest.raises(TopologyError):
        sc.cluster.with_allocations([*sc.witness, clash])


@pytest.mark.parametrize("sc", hard_instances(), ids=lambda s: s.name)
def test_instances_are_small_and_unambiguous(sc: Scenario) -> None:
    assert len(sc.cluster.nodes) <= 40
    priorities = [j.priority for j in sc.jobs]
    assert len(set(priorities)) == len(priorities)
    assert {j.priority_class.value for j in sc.jobs} == {"on-demand"}
    assert all(rj.preemptible is False for rj in sc.cluster.running_jobs())


def test_fragmentation_free_gpus_as_described() -> None:
    c = fragmentation_trap().cluster
    assert [len(c.free_gpus(n.name)) for n in c.nodes] == [4, 4, 4, 4, 6, 6, 6, 6]


def test_nvlink_trap_leaves_eight_free_gpus_but_no_domain() -> None:
    """After first-fit, 8 H100s are free in total but no NVLink domain has 8 (docstring (b))."""
    sc = nvlink_packing()
    placed = set(first_fit(sc))
    assert placed == {f"b0{i}" for i in range(1, 9)}
    free = [8 - b for b in (4, 2, 0, 4, 2, 0, 8, 8)]
    assert sum(free) - sum(j.total_gpus for j in sc.jobs if j.id in placed) == 8


def test_hard_instances_is_the_four_in_order() -> None:
    assert [s.name for s in hard_instances()] == [
        "hard-fragmentation",
        "hard-nvlink-packing",
        "hard-tpu-slices",
        "hard-memory-stranding",
    ]
