"""Random batches through ``place()``: whatever the jobs ask, the decision answers every job exactly once
and the independent checker finds no violation (placement-rules.md rules 1-15), on a small mixed cluster
with running jobs. Hypothesis shrinks any failure to a minimal batch.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.solver.engine import place
from placer.solver.jobs.model import (
    DomainRule,
    GpuAffinity,
    GpuDemand,
    GroupLimit,
    Job,
    LabelRule,
    Placement,
    Slices,
    SpreadRule,
    TaskGroup,
    Throttle,
    TpuDemand,
)
from placer.solver.jobs.queues import load_queue_configs
from placer.solver.policy import Policy
from placer.topology import Inventory, cluster_of, cpu_nodes, dgx_h100, gb200_nvl72, pcie_inference, tpu_pod
from tests.solver.conftest import ENGINES, NOW, assert_valid, no_hang

CLUSTER = cluster_of(
    dgx_h100(3, nodes_per_rack=2, labels={"net": "ib"}),
    pcie_inference(2),
    cpu_nodes(2, labels={"disk": "ssd"}),
    gb200_nvl72(1),
    tpu_pod("v5e", shape=(4, 4)),
    Inventory(licenses={"m": 3, "a": 1}),  # cluster-wide licence seats (Slurm Licenses=), rule 22
).with_allocations(
    [
        {
            "job": "run-a",
            "labels": {"app": "db"},
            "licenses": {"m": 1},
            "replicas": [{"node": "dgx-h100-r1-1", "gpus": [0, 1, 2]}],
        },
        {"job": "run-b", "replicas": [{"node": "l4-1", "gpus": [0], "gpu_milli": 400, "cpu_cores": 8}]},
        {"job": "run-t", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 0], [0, 1]]}]},
    ]
)

#: A hang found by hypothesis is re-run while shrinking: fail each run quickly.
FUZZ_GUARD_S = 2.0

RULES = st.sampled_from(
    [
        LabelRule(key="net", operator="In", values=["ib"]),
        LabelRule(key="disk", operator="Exists"),
        LabelRule(key="gpu_count", operator="Gte", values=["8"]),
        LabelRule(key="rack", operator="NotIn", values=["dgx-h100-rack-1"]),
        LabelRule(key="hostname", operator="Matches", values=["*-2"]),
    ]
)
#: Throttle groups (a Slurm array's %N): most jobs have none; two groups, one with limits that disagree.
THROTTLES = st.sampled_from(
    [
        None,
        None,
        None,
        Throttle(group="a", max_running=1),
        Throttle(group="a", max_running=2),
        Throttle(group="b", max_running=1),
    ]
)
#: Group limits (a Slurm QOS's GrpTRES=gres/gpu, GrpJobs, per user): most jobs have none; a GPU limit in
#: two sizes (the smaller holds), a job limit, and both on one job.
LIMITS = st.sampled_from(
    [
        [],
        [],
        [],
        [GroupLimit(group="qos/g", max_gpus=8)],
        [GroupLimit(group="qos/g", max_gpus=12)],
        [GroupLimit(group="qos/j", max_running=2)],
        [GroupLimit(group="qos/g", max_gpus=8), GroupLimit(group="qos/g/user/u", max_running=1, max_gpus=4)],
    ]
)
#: Licences (Slurm --licenses): most jobs ask none; "m" has 3 seats with 1 held by run-a, "a" 1, and "x"
#: is one the cluster does not define (no seat).
LICENSES = st.sampled_from([{}, {}, {}, {}, {"m": 1}, {"m": 2}, {"m": 1, "a": 1}, {"a": 1}, {"x": 1}])
ANTI = st.sampled_from(
    [
        LabelRule(key="app", operator="In", values=["db"]),
        LabelRule(key="job_type", operator="In", values=["t"]),
    ]
)

#: Anti-affinity on a rack (the DGX racks hold two nodes each) or a zone: against run-a's app, or against
#: jobs of type "t" (so jobs of one batch keep each other apart, and a multi-replica one itself: rejected).
DOMAIN_ANTI = st.sampled_from(
    [
        DomainRule(key="rack", rule=LabelRule(key="app", operator="In", values=["db"])),
        DomainRule(key="rack", rule=LabelRule(key="job_type", operator="In", values=["t"])),
        DomainRule(key="zone", rule=LabelRule(key="job_type", operator="In", values=["t"])),
    ]
)

#: Required pod affinity (a pod's: one replica on a node): to run-a's app on its rack or node (it runs on
#: dgx-h100-r1-1), or to jobs of type "t" on a rack or zone (none runs: a job of that type starts the
#: group, the others of the batch wait for it; a job of another type waits).
AFFINITY = st.sampled_from(
    [
        DomainRule(key="rack", rule=LabelRule(key="app", operator="In", values=["db"])),
        DomainRule(key="hostname", rule=LabelRule(key="app", operator="In", values=["db"])),
        DomainRule(key="rack", rule=LabelRule(key="job_type", operator="In", values=["t"])),
        DomainRule(key="zone", rule=LabelRule(key="job_type", operator="In", values=["t"])),
    ]
)


#: DoNotSchedule topology spread (a pod's: one replica on a node): of jobs of type "t" by rack or node (the
#: batch's own jobs of that type count each other: one of them a decision), or of run-a's app "db" (it
#: runs on rack 1), with a skew of 1 or 2, sometimes with more domains asked than there are racks.
SPREAD = st.sampled_from(
    [
        SpreadRule(key="rack", max_skew=1, rule=LabelRule(key="job_type", operator="In", values=["t"])),
        SpreadRule(key="hostname", max_skew=1, rule=LabelRule(key="job_type", operator="In", values=["t"])),
        SpreadRule(key="rack", max_skew=1, rule=LabelRule(key="app", operator="In", values=["db"])),
        SpreadRule(
            key="rack", max_skew=2, rule=LabelRule(key="app", operator="In", values=["db"]), min_domains=4
        ),
        SpreadRule(
            key="rack",
            max_skew=1,
            rule=LabelRule(key="job_type", operator="In", values=["t"]),
            honor_node_rules=False,
        ),
    ]
)


@st.composite
def gpu_demand(draw: st.DrawFn) -> GpuDemand | None:
    kind = draw(st.sampled_from(["none", "whole", "share"]))
    if kind == "none":
        return None
    if kind == "share":
        return GpuDemand(count=1, share_milli=draw(st.sampled_from([250, 500, 700])))
    return GpuDemand(
        count=draw(st.sampled_from([1, 2, 4, 8, 12, 16])),
        types=draw(st.sampled_from([[], ["nvidia-h100"], ["nvidia-l4"], ["nvidia-gb200", "nvidia-h100"]])),
        interconnect=draw(st.sampled_from(["any", "nvlink"])),
        min_compute_capability=draw(st.sampled_from([None, "8.9", "10.0"])),
    )


@st.composite
def jobs(draw: st.DrawFn, i: int) -> Job:
    if draw(st.integers(0, 9)) == 0:
        tasks = [
            TaskGroup(tpu=TpuDemand(type="v5e", topology=draw(st.sampled_from([(2, 2), (2, 4), (4, 4)]))))
        ]
    else:
        gpu = draw(gpu_demand())
        count = draw(st.integers(1, 3)) if gpu is None or gpu.count <= 8 else 1
        tasks = [
            TaskGroup(
                count=count,
                cpu_cores=draw(st.sampled_from([0, 4, 32, 100])),
                memory_gb=draw(st.sampled_from([0, 64, 512])),
                gpu=gpu,
                one_per_node=draw(st.booleans()),
                exclusive=draw(st.integers(0, 5)) == 0,
                # One in eight: Kueue slices of one replica or of the whole group per rack, sometimes
                # exclusive (JobSet exclusive placement: the rack alone); racks exist on the DGXs only.
                slices=draw(
                    st.sampled_from(
                        [None] * 7
                        + [
                            Slices(level="rack", size=1),
                            Slices(level="rack", size=count),
                            Slices(level="rack", size=1, exclusive=True),
                            Slices(level="rack", size=count, exclusive=True),
                        ]
                    )
                ),
            )
        ]
    placement = Placement(
        required=draw(st.lists(RULES, max_size=2)),
        anti_affinity=draw(st.lists(ANTI, max_size=1)),
        anti_affinity_domains=draw(st.lists(DOMAIN_ANTI, max_size=1)),
        gpu_affinity=draw(st.sampled_from([None, None, GpuAffinity.SPREAD, GpuAffinity.DEDICATED])),
        topology_scope=draw(st.sampled_from([None, None, "rack", "node"])),
    )
    one_pod = sum(t.count for t in tasks) == 1 and all(t.tpu is None for t in tasks)
    for field, rules in (("affinity_required", AFFINITY), ("spread_required", SPREAD)):  # a pod's rules
        if one_pod and draw(st.integers(0, 3)) == 0:
            placement = placement.model_copy(update={field: draw(st.lists(rules, min_size=1, max_size=2))})
    return Job(
        id=f"j{i}",
        type=draw(st.sampled_from([None, "t"])),
        priority_class=draw(st.sampled_from(["spot", "on-demand", "reserved"])),
        distributed_strategy=draw(st.sampled_from([None, "none", "fsdp"])),
        tasks=tasks,
        placement=placement,
        throttle=draw(THROTTLES),
        limits=draw(LIMITS),
        licenses=draw(LICENSES),
        may_preempt=draw(st.integers(0, 4)) > 0,  # one in five never preempts (preemptionPolicy: Never)
    )


@st.composite
def batches(draw: st.DrawFn) -> list[Job]:
    n = draw(st.integers(1, 8))
    return [draw(jobs(i)) for i in range(n)]


@pytest.mark.parametrize("engine", ENGINES)
@given(batch=batches())
def test_random_batches_give_valid_decisions(engine: str, batch: list[Job]) -> None:
    with no_hang(1.0 + FUZZ_GUARD_S):
        decision = place(batch, CLUSTER, Policy(engine=engine, time_limit_s=1.0), now=NOW)
    assert_valid(decision, batch, CLUSTER)
    assert not decision.stats.status.startswith("CPSAT_REJECTED"), decision.stats.status
    for p in decision.pending:
        assert p.reasons and all(r.code and r.message for r in p.reasons)


def _timeless(decision: object) -> dict:
    out = decision.to_json()  # type: ignore[attr-defined]
    for k in ("build_s", "solve_s", "wall_s"):
        out["stats"].pop(k)
    return out


@given(batch=batches())
def test_cpsat_is_never_worse_than_greedy_and_repeats_itself(batch: list[Job]) -> None:
    # The engine keeps greedy's answer unless CP-SAT's is at least as good, so on every input CP-SAT's
    # priority-weighted demand placed is >= greedy's; with reproducible=True the same input gives the
    # same decision.
    greedy = place(batch, CLUSTER, Policy(engine="greedy"), now=NOW)
    policy = Policy(engine="cpsat", time_limit_s=1.0, reproducible=True)
    with no_hang(1.0 + FUZZ_GUARD_S):
        first = place(batch, CLUSTER, policy, now=NOW)
        second = place(batch, CLUSTER, policy, now=NOW)
    assert first.stats.objective >= greedy.stats.objective
    assert first.stats.greedy_objective == greedy.stats.objective
    assert _timeless(first) == _timeless(second)
    if greedy.placements:  # placing nothing is never the answer when greedy could place something
        assert first.placements


def _cohort_queues(b_keeps: int = 0, closed: bool = False) -> dict:  # type: ignore[type-arg]
    """Two queues of one cohort: a has a GPU budget, b a GPU-job budget, and the cohort a total below
    their sum, and totals of CPU cores, memory and pods (the fuzz's jobs ask 0-100 cores and 0-512 GB a
    replica); ``b_keeps``: GPUs b keeps and does not lend (a Kueue lendingLimit), and with them a
    part of the cohort's cores, memory and pods (100, 700 GB and 6 pods); ``closed``: a's evictions free
    none of its quota (Kueue's ``withinClusterQueue: Never``) and b takes no cohort room from a's
    (``within_cohort: never``)."""
    kept: dict[str, float] = {}
    if b_keeps:
        kept = {
            "guaranteed_gpus": b_keeps,
            "guaranteed_cpu_cores": 100.0,
            "guaranteed_memory_gb": 700.0,
            "guaranteed_pods": 6,
        }
    res = {"max_total_cpu_cores": 150, "max_total_memory_gb": 1000, "max_total_pods": 9}
    return load_queue_configs(  # type: ignore[no-any-return]
        [
            {
                "queue": "a",
                "config": {
                    "ml_limits": {"max_total_gpus": 5},
                    "cohort": {"name": "c", "max_total_gpus": 7, **res},
                    "preemption": {"within_queue": "never"} if closed else {},
                },
            },
            {
                "queue": "b",
                "config": {
                    "ml_limits": {"max_concurrent_gpu_jobs": 2},
                    "cohort": {"name": "c", "max_total_gpus": 7, **kept, **res},
                    "preemption": {"within_cohort": "never"} if closed else {},
                },
            },
        ]
    )


#: The cluster's running job run-a (3 GPUs) is queue a's, so the cohort has 4 GPUs of room.
COHORT_QUEUES = _cohort_queues()
#: The same, with queue b keeping 2 GPUs it does not lend: the cohort counts b as holding at least 2, so a
#: and b together have 2 GPUs of room beyond what b places in its own 2 (and b keeps 100 of the cohort's
#: 150 cores, 700 of its 1,000 GB and 6 of its 9 pods the same way).
LENDING_QUEUES = _cohort_queues(b_keeps=2)
#: The same two queues in a tree (Kueue hierarchical cohorts): cohort c (a's 5 and b's 0 nominal GPUs,
#: b keeping them all) under root r with 2 GPUs of its own; c may take at most 1 GPU from r.
_TREE = [
    {"name": "c", "parent": "r", "borrowing_gpus": 1},
    {"name": "r", "nominal_gpus": 2},
]
TREE_QUEUES = load_queue_configs(
    [
        {
            "queue": "a",
            "config": {
                "ml_limits": {"max_total_gpus": 5},
                "cohort": {"name": "c", "max_total_gpus": 7, "nominal_gpus": 5, "tree": _TREE},
            },
        },
        {
            "queue": "b",
            "config": {
                "ml_limits": {"max_concurrent_gpu_jobs": 2},
                "cohort": {"name": "c", "max_total_gpus": 7, "tree": _TREE},
            },
        },
    ]
)
COHORT_CLUSTER = CLUSTER.release("run-a").with_allocations(
    [
        {
            "job": "run-a",
            "queue": "a",
            "labels": {"app": "db"},
            "replicas": [{"node": "dgx-h100-r1-1", "gpus": [0, 1, 2]}],
        }
    ]
)


#: Queue a's and b's running spot jobs, which the batch's higher-priority jobs may evict: with
#: ``CLOSED_QUEUES`` their evictions give nothing back to a's budget or to the cohort.
SPOT_CLUSTER = COHORT_CLUSTER.release("run-a").with_allocations(
    [
        {
            "job": f"spot-{q}",
            "queue": q,
            "priority_class": "spot",
            "preemptible": True,
            "started_at": NOW,
            "replicas": [{"node": node, "gpus": [0, 1, 2], "cpu_cores": 16}],
        }
        for q, node in (("a", "dgx-h100-r1-1"), ("b", "dgx-h100-r1-2"))
    ]
)
CLOSED_QUEUES = _cohort_queues(closed=True)


@pytest.mark.parametrize("kind", ["flat", "lending", "tree", "closed"])
@pytest.mark.parametrize("engine", ENGINES)
@given(batch=batches())
def test_random_batches_keep_queue_and_cohort_budgets(engine: str, kind: str, batch: list[Job]) -> None:
    jobs = [j.model_copy(update={"queue": ("a", "b", None)[i % 3]}) for i, j in enumerate(batch)]
    queues = {"flat": COHORT_QUEUES, "lending": LENDING_QUEUES, "tree": TREE_QUEUES, "closed": CLOSED_QUEUES}[
        kind
    ]
    cluster = SPOT_CLUSTER if kind == "closed" else COHORT_CLUSTER
    with no_hang(1.0 + FUZZ_GUARD_S):
        decision = place(jobs, cluster, Policy(engine=engine, time_limit_s=1.0), now=NOW, queues=queues)
    assert_valid(decision, jobs, cluster, queues=queues)
    assert not decision.stats.status.startswith("CPSAT_REJECTED"), decision.stats.status


#: The cluster with its running job run-a (3 GPUs) a member of the fuzz's QOS-like groups: qos/g (GPU
#: limits 8 or 12, so 5 or 9 left) and qos/j (2 jobs, so 1 left), and of the array throttle group "a".
GROUP_CLUSTER = CLUSTER.release("run-a").with_allocations(
    [
        {
            "job": "run-a",
            "labels": {"app": "db"},
            "throttle_group": "a",
            "limit_groups": ["qos/g", "qos/j"],
            "replicas": [{"node": "dgx-h100-r1-1", "gpus": [0, 1, 2]}],
        }
    ]
)


@pytest.mark.parametrize("engine", ENGINES)
@given(batch=batches())
def test_random_batches_keep_group_limits_with_running_members(engine: str, batch: list[Job]) -> None:
    # The running member counts against every group it names: the checker (rule 20) recounts it.
    with no_hang(1.0 + FUZZ_GUARD_S):
        decision = place(batch, GROUP_CLUSTER, Policy(engine=engine, time_limit_s=1.0), now=NOW)
    assert_valid(decision, batch, GROUP_CLUSTER)
    assert not decision.stats.status.startswith("CPSAT_REJECTED"), decision.stats.status


#: Queue a with Kueue-style quotas of every kind placer keeps: CPU, memory and pods (ml_limits), and GPUs per
#: flavor of its resource group — the InfiniBand DGXs (``net: ib``) 10, every other node 6. Its running
#: job run-a holds 3 DGX GPUs (COHORT_CLUSTER), so 7 are left there.
QUOTA_QUEUES = load_queue_configs(
    [
        {
            "queue": "a",
            "config": {
                "ml_limits": {"max_total_cpu_cores": 150, "max_total_memory_gb": 900, "max_total_pods": 8},
                "flavor_groups": [
                    {
                        "covered": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {"name": "ib", "node_labels": {"net": "ib"}, "max_gpus": 10},
                            {"name": "rest", "max_gpus": 6},
                        ],
                    }
                ],
            },
        }
    ]
)


@pytest.mark.parametrize("engine", ENGINES)
@given(batch=batches())
def test_random_batches_keep_cpu_memory_and_flavor_quotas(engine: str, batch: list[Job]) -> None:
    # Two of three jobs in queue a: whatever they ask, its CPU, memory and per-flavor GPU quotas hold
    # (the checker's rule 17 recounts them, run-a included), and CP-SAT's answer is never refused.
    jobs = [j.model_copy(update={"queue": ("a", "a", None)[i % 3]}) for i, j in enumerate(batch)]
    with no_hang(1.0 + FUZZ_GUARD_S):
        decision = place(
            jobs, COHORT_CLUSTER, Policy(engine=engine, time_limit_s=1.0), now=NOW, queues=QUOTA_QUEUES
        )
    assert_valid(decision, jobs, COHORT_CLUSTER, queues=QUOTA_QUEUES)
    assert not decision.stats.status.startswith("CPSAT_REJECTED"), decision.stats.status


_FLAVOR_GROUP_COVERS = ["cpu", "memory", "nvidia.com/gpu"]
#: Queues a and b of a tree of cohorts kept per flavor (Kueue keeps every quota per flavor and resource):
#: on the InfiniBand DGXs (flavor ``ib``) a has 4 GPUs and b 2, b keeping 1; on every other node
#: (``rest``) a 3 and b 2; cohort c has 1 ib GPU of its own and may take 1 more from root r, which has 2.
#: Cores are a tree too (a 60, b 60 keeping 20). Their jobs keep to one flavor per pod set (``with_flavors``).
_FLAVOR_TREE = [
    {
        "name": "c",
        "parent": "r",
        "borrowing_gpus": 1,
        "flavor_quotas": {"ib": {"nominal_gpus": 1, "borrowing_gpus": 1}},
    },
    {"name": "r", "nominal_gpus": 2, "flavor_quotas": {"ib": {"nominal_gpus": 2}}},
]


def _flavor_queue(
    name: str, ib: dict[str, float], rest: dict[str, float], cohort: dict[str, object]
) -> dict[str, object]:
    flavors = [
        {"name": "ib", "node_labels": {"net": "ib"}, "tree_quota": ib},
        {"name": "rest", "tree_quota": rest},
    ]
    return {
        "queue": name,
        "config": {
            "cohort": cohort,
            "flavor_groups": [{"covered": _FLAVOR_GROUP_COVERS, "flavors": flavors}],
        },
    }


FLAVOR_TREE_QUEUES = load_queue_configs(
    [
        _flavor_queue(
            "a",
            {"nominal_gpus": 4},
            {"nominal_gpus": 3},
            {
                "name": "c",
                "max_total_gpus": 12,
                "nominal_gpus": 7,
                "nominal_cpu_cores": 60,
                "tree": _FLAVOR_TREE,
            },
        ),
        _flavor_queue(
            "b",
            {"nominal_gpus": 2, "guaranteed_gpus": 1},
            {"nominal_gpus": 2},
            {
                "name": "c",
                "max_total_gpus": 12,
                "nominal_gpus": 4,
                "nominal_cpu_cores": 60,
                "guaranteed_cpu_cores": 20,
                "tree": _FLAVOR_TREE,
            },
        ),
    ]
)
#: The same two queues in a flat cohort f with totals per flavor (ib 6, rest 5; 11 in all), b keeping 2 of
#: its ib quota (a lendingLimit on that flavor).
FLAVOR_FLAT_QUEUES = load_queue_configs(
    [
        {
            "queue": q,
            "config": {
                "cohort": {"name": "f", "max_total_gpus": 11},
                "flavor_groups": [
                    {
                        "covered": _FLAVOR_GROUP_COVERS,
                        "flavors": [
                            {
                                "name": "ib",
                                "node_labels": {"net": "ib"},
                                "cohort_max_gpus": 6,
                                "tree_quota": {"guaranteed_gpus": 2} if q == "b" else {},
                            },
                            {"name": "rest", "cohort_max_gpus": 5},
                        ],
                    }
                ],
            },
        }
        for q in ("a", "b")
    ]
)


@pytest.mark.parametrize("kind", ["tree", "flat"])
@pytest.mark.parametrize("engine", ENGINES)
@given(batch=batches())
def test_random_batches_keep_cohort_quotas_per_flavor(engine: str, kind: str, batch: list[Job]) -> None:
    # Jobs of queues a and b (and some of none), read as Kueue would give them their flavors (one flavor
    # per pod set): whatever they ask, the trees per flavor and resource, the flat cohort's totals and
    # kept parts per flavor, and every pod set's one flavor hold (the checker's rules 12 and 17).
    from placer.solver.jobs.flavors import with_flavors

    queues = FLAVOR_TREE_QUEUES if kind == "tree" else FLAVOR_FLAT_QUEUES
    jobs = []
    for i, j in enumerate(batch):
        queue = ("a", "b", None)[i % 3]
        job = j.model_copy(update={"queue": queue})
        if queue is not None:
            flavored, problems = with_flavors(job, queues[queue].config.flavor_groups)
            job = job if problems else flavored
        jobs.append(job)
    with no_hang(1.0 + FUZZ_GUARD_S):
        decision = place(
            jobs, COHORT_CLUSTER, Policy(engine=engine, time_limit_s=1.0), now=NOW, queues=queues
        )
    assert_valid(decision, jobs, COHORT_CLUSTER, queues=queues)
    assert not decision.stats.status.startswith("CPSAT_REJECTED"), decision.stats.status
