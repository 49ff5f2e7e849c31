"""The checker, rule by rule (rules 1-12, 14, 15 of docs/placement-rules.md): for each rule a hand-built
decision that passes and one or more that break it, asserting the rule code and the job/node named.

Expected values come from the cluster builders' documented facts (a DGX H100 has 8 GPUs, 224 cores,
2048 GB; a GB200 NVL72 rack is 18 trays of 4 GPUs in one NVLink domain) and from arithmetic.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from placer.solver.checks import RULES, check
from placer.solver.decision import Decision, Eviction, JobPlacement, RejectedJob
from placer.solver.jobs.model import (
    CountRange,
    Dependency,
    DependencyCondition,
    GpuDemand,
    Job,
    LabelRule,
    Placement,
    ReservationRef,
    TaskGroup,
)
from placer.topology import (
    Cluster,
    Inventory,
    NodeGpus,
    NodeSpec,
    Taint,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    gb200_nvl72,
    pcie_inference,
)
from tests.solver.check_helpers import decision, place, rep, rules

NOW = datetime(2025, 1, 1, tzinfo=UTC)
C = cluster_of(dgx_h100(2), cpu_nodes(2))
D1, D2 = "dgx-h100-1", "dgx-h100-2"


def gpu_job(job_id: str, gpus: int = 8, *, cpu: float = 0, count: int = 1, **kw: object) -> Job:
    gpu = kw.pop("gpu", None) or GpuDemand(count=gpus)
    return Job(id=job_id, tasks=[TaskGroup(count=count, cpu_cores=cpu, gpu=gpu)], **kw)  # type: ignore[arg-type]


def run(
    d: Decision, jobs: list[Job], cluster: Cluster = C, **kw: object
) -> list[tuple[str, str, str | None]]:
    return rules(check(d, jobs, cluster, now=NOW, **kw))  # type: ignore[arg-type]


def every_code_is_documented(vs: list[tuple[str, str, str | None]]) -> bool:
    return all(r in RULES for r, _, _ in vs)


# -- 1. accounting --------------------------------------------------------------------------------------


def test_accounting_ok_when_every_job_is_answered_once() -> None:
    a, b = gpu_job("a"), gpu_job("b")
    assert run(decision(place("a", rep(D1, list(range(8)))), pending=("b",)), [a, b]) == []


def test_accounting_job_missing() -> None:
    a, b = gpu_job("a"), gpu_job("b")
    assert run(decision(place("a", rep(D1, list(range(8))))), [a, b]) == [("accounting", "b", None)]


def test_accounting_job_twice() -> None:
    a = gpu_job("a")
    vs = run(decision(place("a", rep(D1, list(range(8)))), pending=("a",)), [a])
    assert vs == [("accounting", "a", None)]


def test_accounting_job_placed_twice() -> None:
    a = gpu_job("a", 1)
    vs = run(decision(place("a", rep(D1, [0])), place("a", rep(D2, [0]))), [a])
    assert ("accounting", "a", None) in vs


def test_accounting_unknown_job() -> None:
    assert run(decision(pending=("ghost",)), []) == [("accounting", "ghost", None)]


def test_accounting_refused_job_must_be_rejected() -> None:
    ok = Decision(rejected=[RejectedJob(job="bad", errors=[])])
    assert run(ok, [], rejected_ids=["bad"]) == []
    assert run(decision(pending=("bad",)), [], rejected_ids=["bad"]) == [("accounting", "bad", None)]


def test_eviction_must_name_a_running_job() -> None:
    d = Decision(preemptions=[Eviction(job="nobody", for_=[])])
    assert run(d, []) == [("eviction", "nobody", None)]


# -- 2. gang ---------------------------------------------------------------------------------------------


def test_gang_complete() -> None:
    j = gpu_job("j", 4, count=2, cpu=8)
    d = decision(place("j", rep(D1, [0, 1, 2, 3], cpu_cores=8), rep(D2, [0, 1, 2, 3], cpu_cores=8)))
    assert run(d, [j]) == []


def test_gang_missing_replica() -> None:
    j = gpu_job("j", 4, count=2)
    assert run(decision(place("j", rep(D1, [0, 1, 2, 3]))), [j]) == [("gang", "j", None)]


def test_gang_replica_with_wrong_gpu_count() -> None:
    j = gpu_job("j", 4, count=2)
    d = decision(place("j", rep(D1, [0, 1, 2, 3]), rep(D2, [0, 1, 2])))
    assert run(d, [j]) == [("gang", "j", D2)]


def test_gang_resources_short_by_half_a_core() -> None:
    j = gpu_job("j", 4, count=2, cpu=8)
    d = decision(place("j", rep(D1, [0, 1, 2, 3], cpu_cores=8), rep(D2, [0, 1, 2, 3], cpu_cores=7.5)))
    assert run(d, [j]) == [("gang", "j", None)]


def test_gang_split_over_nodes_when_strategy_allows() -> None:
    j = gpu_job("j", 16, cpu=32, distributed_strategy="fsdp")
    d = decision(place("j", rep(D1, list(range(8)), cpu_cores=16), rep(D2, list(range(8)), cpu_cores=16)))
    assert run(d, [j]) == []


def test_gang_split_not_allowed_without_strategy() -> None:
    j = gpu_job("j", 16)
    d = decision(place("j", rep(D1, list(range(8))), rep(D2, list(range(8)))))
    assert ("gang", "j", None) in run(d, [j])


def test_gang_split_pieces_must_sum_to_the_demand() -> None:
    j = gpu_job("j", 16, distributed_strategy="data_parallel")
    d = decision(place("j", rep(D1, list(range(8))), rep(D2, list(range(7)))))
    assert run(d, [j]) == [("gang", "j", None)]


def test_gang_split_pieces_on_distinct_nodes() -> None:
    j = gpu_job("j", 8, distributed_strategy="fsdp")
    d = decision(place("j", rep(D1, [0, 1, 2, 3]), rep(D1, [4, 5, 6, 7])))
    assert run(d, [j]) == [("gang", "j", D1)]


def test_gang_count_range() -> None:
    j = Job(id="j", tasks=[TaskGroup(count=2, count_range=CountRange(min=2, max=8, operator="*", operand=2))])
    four = decision(place("j", *(rep("cpu-1") for _ in range(4))))
    three = decision(place("j", *(rep("cpu-1") for _ in range(3))))
    assert run(four, [j]) == []
    assert run(three, [j]) == [("gang", "j", None)]  # 2, 4, 8 admissible; 3 is not


def test_gang_unknown_task_group() -> None:
    j = gpu_job("j", 1)
    d = decision(place("j", rep(D1, [0]), rep(D1, [1], task_group="workers")))
    assert run(d, [j]) == [("gang", "j", D1)]


def test_gang_fractional_share_must_match() -> None:
    j = gpu_job("j", gpu=GpuDemand(count=1, share_milli=250))
    assert run(decision(place("j", rep(D1, [0], gpu_milli=250))), [j]) == []
    assert run(decision(place("j", rep(D1, [0], gpu_milli=300))), [j]) == [("gang", "j", D1)]
    assert run(decision(place("j", rep(D1, [0]))), [j]) == [("gang", "j", D1)]


def test_gang_multi_node_replicas() -> None:
    # Flux slot > node: 2 (test_flux_reader: count 3, nodes_per_replica 2, 8 GPUs per replica)
    g = TaskGroup(count=1, nodes_per_replica=2, one_per_node=True, gpu=GpuDemand(count=8))
    j = Job(id="j", tasks=[g])
    ok = decision(place("j", rep(D1, [0, 1, 2, 3]), rep(D2, [0, 1, 2, 3])))
    assert run(ok, [j]) == []
    bad = decision(place("j", rep(D1, list(range(8)))))
    assert ("gang", "j", None) in run(bad, [j])


# -- 3. nodes --------------------------------------------------------------------------------------------


def _special() -> Cluster:
    gpus = NodeGpus(type="nvidia-h100", count=8)
    return cluster_of(
        Inventory(
            nodes=[
                NodeSpec(name="down", gpus=gpus, cpu_cores=64, memory_gb=512, ready=False),
                NodeSpec(name="cordoned", gpus=gpus, cpu_cores=64, memory_gb=512, schedulable=False),
                NodeSpec(name="tainted", gpus=gpus, cpu_cores=64, memory_gb=512, taints=[Taint(key="maint")]),
                NodeSpec(
                    name="soft",
                    gpus=gpus,
                    cpu_cores=64,
                    memory_gb=512,
                    taints=[Taint(key="x", effect="PreferNoSchedule")],
                ),
            ]
        )
    )


@pytest.mark.parametrize(
    ("node", "rule"), [("down", "node-unusable"), ("cordoned", "node-unusable"), ("tainted", "taint")]
)
def test_node_must_take_work(node: str, rule: str) -> None:
    assert run(decision(place("j", rep(node, [0]))), [gpu_job("j", 1)], _special()) == [(rule, "j", node)]


def test_prefer_no_schedule_taint_is_allowed() -> None:
    assert run(decision(place("j", rep("soft", [0]))), [gpu_job("j", 1)], _special()) == []


def test_unknown_node() -> None:
    assert run(decision(place("j", rep("nowhere", [0]))), [gpu_job("j", 1)]) == [
        ("node-unknown", "j", "nowhere")
    ]


# -- 4. accelerator ---------------------------------------------------------------------------------------


def test_gpu_job_on_cpu_node() -> None:
    vs = run(decision(place("j", rep("cpu-1"))), [gpu_job("j", 1)])
    assert ("accelerator", "j", "cpu-1") in vs


def test_cpu_job_may_use_gpu_node() -> None:
    assert (
        run(decision(place("j", rep(D1, cpu_cores=4))), [Job(id="j", tasks=[TaskGroup(cpu_cores=4)])]) == []
    )


def test_gpu_type_compared_as_catalog_ids() -> None:
    assert run(decision(place("j", rep(D1, [0]))), [gpu_job("j", gpu=GpuDemand(types=["H100"]))]) == []
    wrong = gpu_job("j", gpu=GpuDemand(types=["nvidia-a100"]))
    assert run(decision(place("j", rep(D1, [0]))), [wrong]) == [("gpu-type", "j", D1)]


def test_gpu_memory_minimum() -> None:
    assert run(decision(place("j", rep(D1, [0]))), [gpu_job("j", gpu=GpuDemand(min_memory_gb=80))]) == []
    big = gpu_job("j", gpu=GpuDemand(min_memory_gb=141))  # H200-sized; an H100 has 80 GB
    assert run(decision(place("j", rep(D1, [0]))), [big]) == [("gpu-memory", "j", D1)]


def test_compute_capability_compared_as_integers() -> None:
    # H100 is 9.0; "10.0" < "9.0" as strings, but (10, 0) > (9, 0): a Blackwell-only job may not run here
    blackwell = gpu_job("j", gpu=GpuDemand(min_compute_capability="10.0"))
    assert run(decision(place("j", rep(D1, [0]))), [blackwell]) == [("compute-capability", "j", D1)]
    ampere = gpu_job("j", gpu=GpuDemand(min_compute_capability="8.0"))
    assert run(decision(place("j", rep(D1, [0]))), [ampere]) == []


# -- 5. devices ------------------------------------------------------------------------------------------


def test_gpu_double_booked_against_running_job() -> None:
    busy = C.allocate({"job": "run-1", "replicas": [{"node": D1, "gpus": [0, 1]}]})
    assert run(decision(place("j", rep(D1, [1, 2]))), [gpu_job("j", 2)], busy) == [
        ("gpu-double-booked", "j", D1)
    ]
    assert run(decision(place("j", rep(D1, [2, 3]))), [gpu_job("j", 2)], busy) == []


def test_two_placements_on_the_same_gpu() -> None:
    d = decision(place("a", rep(D1, [3])), place("b", rep(D1, [3])))
    assert run(d, [gpu_job("a", 1), gpu_job("b", 1)]) == [("gpu-double-booked", "b", D1)]


def test_fractional_shares_summing_to_1001() -> None:
    a = gpu_job("a", gpu=GpuDemand(share_milli=500))
    b = gpu_job("b", gpu=GpuDemand(share_milli=501))
    d = decision(place("a", rep(D1, [0], gpu_milli=500)), place("b", rep(D1, [0], gpu_milli=501)))
    assert run(d, [a, b]) == [("gpu-share", "b", D1)]
    b2 = gpu_job("b", gpu=GpuDemand(share_milli=500))
    d2 = decision(place("a", rep(D1, [0], gpu_milli=500)), place("b", rep(D1, [0], gpu_milli=500)))
    assert run(d2, [a, b2]) == []  # 500 + 500 = 1000 exactly


def test_fractional_share_against_running_share() -> None:
    busy = C.allocate({"job": "r", "replicas": [{"node": D1, "gpus": [0], "gpu_milli": 700}]})
    j = gpu_job("j", gpu=GpuDemand(share_milli=301))
    assert run(decision(place("j", rep(D1, [0], gpu_milli=301))), [j], busy) == [("gpu-share", "j", D1)]


def test_fraction_on_a_wholly_held_gpu() -> None:
    j = gpu_job("j", gpu=GpuDemand(share_milli=100))
    d = decision(place("w", rep(D1, [0])), place("j", rep(D1, [0], gpu_milli=100)))
    assert run(d, [gpu_job("w", 1), j]) == [("gpu-double-booked", "j", D1)]


def test_gpu_index_out_of_range_and_repeated() -> None:
    assert run(decision(place("j", rep(D1, [8]))), [gpu_job("j", 1)]) == [("gpu-index", "j", D1)]
    assert run(decision(place("j", rep(D1, [2, 2]))), [gpu_job("j", 2)]) == [("gpu-index", "j", D1)]


# -- 6. capacity -----------------------------------------------------------------------------------------


def test_cpu_over_commit_by_half_a_core() -> None:
    busy = C.allocate({"job": "r", "replicas": [{"node": D1, "gpus": [0], "cpu_cores": 200}]})
    j = gpu_job("j", 1, cpu=24.5)  # 200 + 24.5 = 224.5 > 224 cores of a DGX H100
    assert run(decision(place("j", rep(D1, [1], cpu_cores=24.5))), [j], busy) == [("capacity", "j", D1)]
    fits = gpu_job("j", 1, cpu=24)
    assert run(decision(place("j", rep(D1, [1], cpu_cores=24))), [fits], busy) == []


def test_memory_over_commit_between_placements() -> None:
    a = Job(id="a", tasks=[TaskGroup(memory_gb=200)])
    b = Job(id="b", tasks=[TaskGroup(memory_gb=57)])  # 200 + 57 > 256 GB of a cpu node
    d = decision(place("a", rep("cpu-1", memory_gb=200)), place("b", rep("cpu-1", memory_gb=57)))
    assert run(d, [a, b]) == [("capacity", "b", "cpu-1")]


def test_eviction_frees_capacity() -> None:
    # A spot job evicted for an on-demand one (rule 16 allows it); its capacity is then free.
    busy = C.allocate(
        {
            "job": "spot",
            "priority_class": "spot",
            "replicas": [{"node": D1, "gpus": list(range(8)), "cpu_cores": 200}],
        }
    )
    j = gpu_job("j", 8, cpu=100)
    d = Decision(
        placements=[place("j", rep(D1, list(range(8)), cpu_cores=100))],
        # No started_at: no work is known to be lost.
        preemptions=[Eviction(job="spot", for_=["j"], nodes=[D1])],
    )
    assert run(d, [j], busy) == []
    d.preemptions.clear()
    assert sorted(r for r, _, _ in run(d, [j], busy)) == ["capacity", *["gpu-double-booked"] * 8]


# -- 7. NVLink -------------------------------------------------------------------------------------------


def test_nvlink_across_two_dgx_nodes_is_a_violation() -> None:
    j = gpu_job("j", gpu=GpuDemand(count=16, interconnect="nvlink"), distributed_strategy="fsdp")
    d = decision(place("j", rep(D1, list(range(8))), rep(D2, list(range(8)))))
    assert run(d, [j]) == [("nvlink", "j", D2)]


def test_nvlink_across_two_trays_of_one_nvl72_rack_is_fine() -> None:
    c = cluster_of(gb200_nvl72(1))
    j = gpu_job("j", gpu=GpuDemand(count=8, interconnect="nvlink"), distributed_strategy="fsdp")
    d = decision(place("j", rep("nvl72-r1-01", [0, 1, 2, 3]), rep("nvl72-r1-02", [0, 1, 2, 3])))
    assert run(d, [j], c) == []


def test_nvlink_on_pcie_node() -> None:
    c = cluster_of(pcie_inference(1, name="l4"))
    j = gpu_job("j", gpu=GpuDemand(count=2, interconnect="nvlink"))
    assert run(decision(place("j", rep("l4", [0, 1]))), [j], c) == [("nvlink", "j", "l4")]
    one = gpu_job("j", gpu=GpuDemand(count=1, interconnect="nvlink"))  # §3.2: ignored for one GPU
    assert run(decision(place("j", rep("l4", [0]))), [one], c) == []


# -- 8. label rules --------------------------------------------------------------------------------------


def test_node_selector() -> None:
    ok = gpu_job("j", 1, placement=Placement(node_selector={"gpu_type": "nvidia-h100"}))
    assert run(decision(place("j", rep(D1, [0]))), [ok]) == []
    bad = gpu_job("j", 1, placement=Placement(node_selector={"zone": "us-east-1a"}))
    assert run(decision(place("j", rep(D1, [0]))), [bad]) == [("node-selector", "j", D1)]


def test_required_rules_job_and_group() -> None:
    cc = LabelRule(key="compute_capability", operator="Gte", values=["10.0"])
    j = gpu_job("j", 1, placement=Placement(required=[cc]))
    assert run(decision(place("j", rep(D1, [0]))), [j]) == [("label-rule", "j", D1)]
    group_rule = LabelRule(key="hostname", operator="Matches", values=["cpu-*"])
    g = Job(id="g", tasks=[TaskGroup(required=[group_rule])])
    assert run(decision(place("g", rep("cpu-2"))), [g]) == []
    assert run(decision(place("g", rep(D1))), [g]) == [("label-rule", "g", D1)]


def test_preferred_rules_never_invalidate() -> None:
    pref = LabelRule(key="zone", operator="In", values=["nowhere"], weight=100)
    j = gpu_job("j", 1, placement=Placement(preferred=[pref]))
    assert run(decision(place("j", rep(D1, [0]))), [j]) == []


# -- 9. anti-affinity ------------------------------------------------------------------------------------

APART = LabelRule(key="app", operator="In", values=["web"])


def test_anti_affinity_with_a_running_job() -> None:
    busy = C.allocate(
        {
            "job": "web-0",
            "priority_class": "spot",
            "labels": {"app": "web"},
            "replicas": [{"node": D1, "gpus": [0]}],
        }
    )
    j = gpu_job("j", 1, placement=Placement(anti_affinity=[APART]))
    assert run(decision(place("j", rep(D1, [1]))), [j], busy) == [("anti-affinity", "j", D1)]
    assert run(decision(place("j", rep(D2, [1]))), [j], busy) == []


def test_anti_affinity_ignores_an_evicted_job() -> None:
    busy = C.allocate(
        {
            "job": "web-0",
            "priority_class": "spot",
            "labels": {"app": "web"},
            "replicas": [{"node": D1, "gpus": [0]}],
        }
    )
    j = gpu_job("j", 1, placement=Placement(anti_affinity=[APART]))
    evict = Eviction(job="web-0", for_=["j"], nodes=[D1])
    d = Decision(placements=[place("j", rep(D1, [1]))], preemptions=[evict])
    assert run(d, [j], busy) == []


def test_anti_affinity_between_own_replicas() -> None:
    j = gpu_job("j", 1, count=2, labels={"app": "web"}, placement=Placement(anti_affinity=[APART]))
    assert run(decision(place("j", rep(D1, [0]), rep(D1, [1]))), [j]) == [("anti-affinity", "j", D1)]
    assert run(decision(place("j", rep(D1, [0]), rep(D2, [0]))), [j]) == []


def test_anti_affinity_with_a_placed_job_by_derived_label() -> None:
    rule = LabelRule(key="job_type", operator="In", values=["ml.train.large"])
    j = gpu_job("j", 1, placement=Placement(anti_affinity=[rule]))
    big = gpu_job("big", 1, type="ml.train.large")
    d = decision(place("j", rep(D1, [0])), place("big", rep(D1, [1])))
    assert run(d, [j, big]) == [("anti-affinity", "j", D1)]


# -- 10-12. exclusivity, distinct nodes, scope -------------------------------------------------------------


def test_dedicated_node_shared_with_running_job() -> None:
    busy = C.allocate({"job": "r", "replicas": [{"node": D1, "gpus": [0]}]})
    j = gpu_job("j", 4, placement=Placement(gpu_affinity="dedicated"))
    assert run(decision(place("j", rep(D1, [1, 2, 3, 4]))), [j], busy) == [("exclusive", "j", D1)]
    assert run(decision(place("j", rep(D2, [1, 2, 3, 4]))), [j], busy) == []


def test_exclusive_group_shared_with_placed_job() -> None:
    j = Job(id="j", tasks=[TaskGroup(cpu_cores=1, exclusive=True)])
    other = Job(id="o", tasks=[TaskGroup(cpu_cores=1)])
    d = decision(place("j", rep("cpu-1", cpu_cores=1)), place("o", rep("cpu-1", cpu_cores=1)))
    assert run(d, [j, other]) == [("exclusive", "j", "cpu-1")]


def test_one_per_node() -> None:
    j = Job(id="j", tasks=[TaskGroup(count=2, one_per_node=True)])
    assert run(decision(place("j", rep("cpu-1"), rep("cpu-1"))), [j]) == [("distinct-nodes", "j", "cpu-1")]
    assert run(decision(place("j", rep("cpu-1"), rep("cpu-2"))), [j]) == []


def test_spread_affinity() -> None:
    j = gpu_job("j", 1, count=2, placement=Placement(gpu_affinity="spread"))
    assert run(decision(place("j", rep(D1, [0]), rep(D1, [1]))), [j]) == [("distinct-nodes", "j", D1)]


def test_node_count_range() -> None:
    rng = CountRange(min=2, max=2)
    j = Job(id="j", tasks=[TaskGroup(count=2)], placement=Placement(node_count=rng))
    assert run(decision(place("j", rep("cpu-1"), rep("cpu-1"))), [j]) == [("node-count", "j", None)]
    assert run(decision(place("j", rep("cpu-1"), rep("cpu-2"))), [j]) == []


def test_topology_scope_rack() -> None:
    c = cluster_of(dgx_h100(4, nodes_per_rack=2))
    j = gpu_job("j", 8, count=2, placement=Placement(topology_scope="rack"))
    same = decision(place("j", rep("dgx-h100-r1-1", list(range(8))), rep("dgx-h100-r1-2", list(range(8)))))
    assert run(same, [j], c) == []
    apart = decision(place("j", rep("dgx-h100-r1-1", list(range(8))), rep("dgx-h100-r2-1", list(range(8)))))
    assert run(apart, [j], c) == [("topology-scope", "j", "dgx-h100-r2-1")]


def test_topology_scope_node() -> None:
    j = gpu_job("j", 1, count=2, placement=Placement(topology_scope="node"))
    assert run(decision(place("j", rep(D1, [0]), rep(D1, [1]))), [j]) == []
    assert run(decision(place("j", rep(D1, [0]), rep(D2, [1]))), [j]) == [("topology-scope", "j", D2)]


# -- 14-15. dependencies, not_before, reservations ---------------------------------------------------------


def test_dependency_on_a_batch_job() -> None:
    a = gpu_job("a", 1)
    b = gpu_job("b", 1, dependencies=[Dependency(job="a")])
    d = decision(place("a", rep(D1, [0])), place("b", rep(D1, [1])))
    assert run(d, [a, b]) == [("dependency", "b", None)]
    assert run(decision(place("a", rep(D1, [0])), pending=("b",)), [a, b]) == []


def test_dependency_on_a_running_job() -> None:
    busy = C.allocate({"job": "r", "replicas": [{"node": D2, "gpus": [0]}]})
    after_start = gpu_job("j", 1, dependencies=[Dependency(job="r", condition=DependencyCondition.START)])
    assert run(decision(place("j", rep(D1, [0]))), [after_start], busy) == []
    after_ok = gpu_job("j", 1, dependencies=[Dependency(job="r", condition=DependencyCondition.SUCCESS)])
    assert run(decision(place("j", rep(D1, [0]))), [after_ok], busy) == [("dependency", "j", None)]


def test_dependency_on_a_finished_job_is_met() -> None:
    j = gpu_job("j", 1, dependencies=[Dependency(job="done-long-ago")])
    assert run(decision(place("j", rep(D1, [0]))), [j]) == []


def test_not_before() -> None:
    later = gpu_job("j", 1, not_before=NOW + timedelta(hours=1))
    assert run(decision(place("j", rep(D1, [0]))), [later]) == [("not-before", "j", None)]
    earlier = gpu_job("j", 1, not_before=NOW - timedelta(seconds=1))
    assert run(decision(place("j", rep(D1, [0]))), [earlier]) == []


def test_reservation_must_be_declared() -> None:
    j = gpu_job("j", 1, reservation=ReservationRef(id="nightly"))
    d = decision(place("j", rep(D1, [0])))
    assert run(d, [j]) == [("reservation", "j", None)]
    assert run(d, [j], reservations=["nightly"]) == []


def test_every_emitted_code_is_documented() -> None:
    busy = C.allocate({"job": "r", "replicas": [{"node": D1, "gpus": [0]}]})
    d = decision(place("j", rep(D1, [0, 0, 9])), place("ghost", rep("nowhere")))
    vs = run(d, [gpu_job("j", 2)], busy)
    assert vs and every_code_is_documented(vs)


def test_placement_dataclass_roundtrip_through_json() -> None:
    d = decision(place("a", rep(D1, list(range(8)))))
    again = Decision.model_validate(d.to_json())
    assert isinstance(again.placements[0], JobPlacement)
    assert run(again, [gpu_job("a")]) == []
