"""Rule traps and replication: each trap's optimum is reached by its witness and cannot be beaten (every
free GPU used, or every job placed); copies multiply it and stay disjoint."""

from __future__ import annotations

import pytest

from placer.scenarios.synthetic import Scenario, hard_instances, weighted_demand
from placer.scenarios.synthetic.replicate import replicate
from placer.scenarios.synthetic.traps import anti_affinity_trap, exclusive_trap, rule_traps
from placer.topology import Cluster


def _free_gpus(cluster: Cluster) -> int:
    return sum(len(cluster.free_gpus(n.name)) for n in cluster.nodes)


def test_anti_affinity_witness_uses_every_gpu_and_keeps_serve_jobs_apart() -> None:
    sc = anti_affinity_trap()
    assert _free_gpus(sc.cluster) == 8 == sc.optimal_placed  # 1-GPU jobs: 8 GPUs place at most 8
    after = sc.cluster.with_allocations(sc.witness)
    assert _free_gpus(after) == 0
    for n in after.nodes:
        assert sum(j.startswith("serve") for j in after.jobs_on(n.name)) <= 1


def test_exclusive_witness_places_every_job_and_exclusive_jobs_alone() -> None:
    sc = exclusive_trap()
    assert sc.optimal_placed == len(sc.jobs) == 4
    after = sc.cluster.with_allocations(sc.witness)
    for n in after.nodes:
        here = after.jobs_on(n.name)
        if any(j.startswith("x") for j in here):
            assert len(here) == 1, f"{n.name} holds {here}"


@pytest.mark.parametrize("sc", rule_traps(), ids=lambda s: s.name)
def test_first_fit_falls_into_the_trap(sc: Scenario) -> None:
    # The docstrings' first-fit arithmetic, in numbers: fewer than the optimum.
    assert sc.greedy_placed is not None and sc.optimal_placed is not None
    assert sc.greedy_placed < sc.optimal_placed
    assert sc.optimal_weighted_demand == weighted_demand(sc.jobs)


@pytest.mark.parametrize("sc", hard_instances() + rule_traps(), ids=lambda s: s.name)
def test_replicas_are_disjoint_copies_with_the_optimum_multiplied(sc: Scenario) -> None:
    big = replicate(sc, 3)
    assert len(big.cluster.nodes) == 3 * len(sc.cluster.nodes)
    assert len(big.cluster.tpu_pods()) == 3 * len(sc.cluster.tpu_pods())
    assert len(big.cluster.running_jobs()) == 3 * len(sc.cluster.running_jobs())
    assert len({j.id for j in big.jobs}) == len(big.jobs) == 3 * len(sc.jobs)
    assert big.optimal_placed == 3 * sc.optimal_placed
    assert big.optimal_weighted_demand == 3 * sc.optimal_weighted_demand
    # The copies' witnesses together are feasible on the replica (no double booking across copies).
    after = big.cluster.with_allocations(big.witness)
    assert len(after.running_jobs()) == len(big.cluster.running_jobs()) + len(big.witness)


def test_replicate_refuses_zero_copies() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        replicate(anti_affinity_trap(), 0)
