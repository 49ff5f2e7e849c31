"""Property-based verification: random clusters AND random batches, decided by both engines.

Why generate the cluster too: ``tests/solver/test_place_fuzz.py`` fixes one cluster, so a bug that needs a
particular mix (a two-tray NVL72 domain next to a drained node, a half-used TPU pod, a node whose only free
GPU is shared) is never met. Here every example draws a small cluster (1-12 nodes of DGX H100, HGX A100,
L4/L40S PCIe, CPU-only and GB200 NVL72 trays sharing one NVLink domain, maybe one small TPU pod), marks
some nodes down, unschedulable or tainted, and fills it with running jobs made from valid allocations
(whole GPUs, GPU shares, multi-node jobs, TPU chips). The batch uses every job kind the model has (whole
GPUs, shares, split multi-node gangs, TPU slices, CPU-only, several task groups, Flux count ranges) and
every constraint (selectors, nested rules, preferences, anti-affinity, GPU affinity, topology scopes, spot
preference, exclusivity, node counts, dependencies, ``not_before``, locality, unknown reservations).

The properties, each from ``docs/solver.md`` / ``docs/placement-rules.md``:

* every decision of either engine passes the independent checker and answers every job exactly once;
* CP-SAT is never worse than greedy: ``stats.objective >=`` the greedy decision's objective (phase 7
  keeps the better answer), and CP-SAT's ``greedy_objective`` is greedy's;
* determinism: the same input and seed give the same decision (greedy always; CP-SAT with
  ``Policy(reproducible=True)``), timing fields aside; the batch's order does not matter;
* placing nothing is never the answer when greedy could place something.

:func:`examine` does the work and returns counts, so ``benchmarks/reliability_numbers.py`` runs the very
same generators and checks outside pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.solver.engine import place
from placer.solver.jobs.model import (
    AllOf,
    AnyOf,
    CountRange,
    Dependency,
    DependencyCondition,
    GpuAffinity,
    GpuDemand,
    Job,
    LabelRule,
    ModelRef,
    Not,
    Placement,
    ReservationRef,
    SpotPreference,
    TaskGroup,
    TpuDemand,
)
from placer.solver.policy import Policy
from placer.topology import (
    Cluster,
    cluster_of,
    cpu_nodes,
    dgx_h100,
    gb200_nvl72,
    hgx_a100,
    pcie_inference,
    tpu_pod,
)
from placer.topology.build import build_cluster
from placer.topology.inventory import Inventory, LoadedModel, NodeSpec, Taint
from placer.topology.presets import merge
from tests.solver.conftest import NOW, no_hang

#: Time limit of every CP-SAT call: small models solve in milliseconds, reproducible mode bounds the rest.
TIME_LIMIT_S = 2.0
#: Extra wall time before a hung call fails its example (see ``tests/solver/conftest.py``).
GUARD_S = 5.0
TIMING = ("build_s", "solve_s", "wall_s")

# -- clusters -------------------------------------------------------------------------------------------

NODE_LABELS = st.sampled_from(
    [{}, {"net": "ib"}, {"disk": "ssd"}, {"net": "ib", "tier": "a"}, {"data_locality": "s3://data/"}]
)
CAPACITY = st.sampled_from(["on-demand", "on-demand", "spot", "reserved"])


@st.composite
def node_part(draw: st.DrawFn, n: int) -> Inventory:
    """``n`` nodes of one random kind (GB200 trays: one rack = one NVLink domain, cut down to ``n``)."""
    kind = draw(st.sampled_from(["h100", "a100", "l4", "l40s", "cpu", "nvl72"]))
    labels = draw(NODE_LABELS)
    cc = draw(CAPACITY)
    racks = draw(st.sampled_from([None, None, 1, 2]))
    if kind == "h100":
        return dgx_h100(n, capacity_class=cc, labels=labels, nodes_per_rack=racks)
    if kind == "a100":
        return hgx_a100(n, capacity_class=cc, labels=labels, nodes_per_rack=racks, gpu_memory_gb=40)
    if kind == "l4":
        return pcie_inference(n, capacity_class=cc, labels=labels, nodes_per_rack=racks)
    if kind == "l40s":
        return pcie_inference(
            n,
            gpu="nvidia-l40s",
            gpus_per_node=8,
            cpu_cores=192,
            memory_gb=1536,
            capacity_class=cc,
            labels=labels,
        )
    if kind == "cpu":
        return cpu_nodes(n, capacity_class=cc, labels=labels, nodes_per_rack=racks)
    rack = gb200_nvl72(1, capacity_class=cc, labels=labels)
    return Inventory(nodes=[rack.nodes[0].model_copy(update={"count": n})])


@st.composite
def degraded(draw: st.DrawFn, spec: NodeSpec) -> NodeSpec:
    """Most node templates as they are; some down, cordoned, tainted or with a model loaded."""
    what = draw(st.sampled_from(["ok"] * 8 + ["down", "cordoned", "tainted", "model"]))
    if what == "down":
        return spec.model_copy(update={"ready": False})
    if what == "cordoned":
        return spec.model_copy(update={"schedulable": False})
    if what == "tainted":
        return spec.model_copy(update={"taints": [Taint(key="maintenance", effect="NoSchedule")]})
    if what == "model":
        return spec.model_copy(update={"models_loaded": [LoadedModel(model_id="llama-3-8b")]})
    return spec


@st.composite
def empty_clusters(draw: st.DrawFn) -> Cluster:
    """1-12 nodes in 1-4 parts, maybe a small TPU pod, some templates degraded."""
    total = draw(st.integers(1, 12))
    parts: list[Inventory] = []
    left = total
    for i in range(draw(st.integers(1, 4))):
        if left == 0:
            break
        n = left if i == 3 else draw(st.integers(1, left))
        part = draw(node_part(n))
        # distinct names per part: builders name nodes after the kind, two parts of one kind would clash
        nodes = [s.model_copy(update={"name": f"p{i}-{s.name}"}) for s in part.nodes]
        parts.append(Inventory(nodes=[draw(degraded(s)) for s in nodes]))
        left -= n
    pod = draw(st.sampled_from([None, None, ("v5e", (2, 4)), ("v5e", (4, 4)), ("v4", (2, 2, 2))]))
    if pod is not None:
        parts.append(tpu_pod(pod[0], shape=pod[1], capacity_class=draw(CAPACITY)))
    return build_cluster(merge(*parts), source="hypothesis")


@st.composite
def running(draw: st.DrawFn, cluster: Cluster) -> list[dict[str, Any]]:
    """Running jobs whose allocations are valid by construction (never more than a node holds)."""
    jobs: list[dict[str, Any]] = []
    nodes = list(cluster.nodes)
    for i, node in enumerate(nodes):
        if not draw(st.integers(0, 2)):
            continue
        gpus: list[int] = []
        milli: int | None = None
        if node.gpu_count:
            k = draw(st.integers(0, node.gpu_count))
            gpus = sorted(draw(st.permutations(range(node.gpu_count)))[:k])
            if k == 1 and draw(st.booleans()):
                milli = draw(st.sampled_from([250, 500, 700]))
        rep = {
            "node": node.name,
            "gpus": gpus,
            "cpu_cores": draw(st.sampled_from([0, 1, 4])) * node.cpu_cores / 8,
            "memory_gb": draw(st.sampled_from([0, 1, 4])) * node.memory_gb / 8,
        }
        if milli is not None:
            rep["gpu_milli"] = milli
        jobs.append(
            {
                "job": f"run-{i}",
                "labels": {"app": draw(st.sampled_from(["db", "web", "train"]))},
                "priority_class": draw(CAPACITY),
                "replicas": [rep],
            }
        )
    # a multi-node running job on two GPU nodes nobody else uses
    free = [n for n in nodes if n.gpu_count and not any(j["replicas"][0]["node"] == n.name for j in jobs)]
    if len(free) >= 2 and draw(st.booleans()):
        jobs.append({"job": "run-gang", "replicas": [{"node": n.name, "gpus": [0]} for n in free[:2]]})
    for pod in cluster.tpu_pods():
        if draw(st.booleans()):
            row = draw(st.integers(1, pod.shape[1]))
            chips = [[0, y, *([0] * (len(pod.shape) - 2))] for y in range(row)]
            jobs.append({"job": "run-tpu", "replicas": [{"tpu_pod": pod.name, "tpu_chips": chips}]})
    return jobs


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    """A random small cluster with random valid running jobs."""
    empty = draw(empty_clusters())
    return empty.with_allocations(draw(running(empty)))


# -- batches --------------------------------------------------------------------------------------------

LEAF_RULES = [
    LabelRule(key="net", operator="In", values=["ib"]),
    LabelRule(key="disk", operator="Exists"),
    LabelRule(key="tier", operator="DoesNotExist"),
    LabelRule(key="gpu_count", operator="Gte", values=["4"]),
    LabelRule(key="rack", operator="NotIn", values=["dgx-h100-rack-1"]),
    LabelRule(key="hostname", operator="Matches", values=["*-1"]),
    LabelRule(key="capacity_class", operator="In", values=["spot"]),
    LabelRule(key="compute_capability", operator="Gt", values=["8.0"]),
]
LEAF = st.sampled_from(LEAF_RULES)
RULE = st.one_of(
    LEAF,
    st.lists(LEAF, min_size=1, max_size=2).map(lambda rs: AllOf(rules=rs)),
    st.lists(LEAF, min_size=1, max_size=2).map(lambda rs: AnyOf(rules=rs)),
    LEAF.map(lambda r: Not(rule=r)),
)
PREFERRED = st.sampled_from(
    [
        LabelRule(key="net", operator="In", values=["ib"], weight=50),
        LabelRule(key="capacity_class", operator="In", values=["spot"], weight=30),
        LabelRule(key="disk", operator="Exists", weight=-20),
    ]
)
ANTI = st.sampled_from(
    [
        LabelRule(key="app", operator="In", values=["db"]),
        LabelRule(key="job_type", operator="In", values=["t"]),
    ]
)
#: Booleans that are mostly False: a constraint on every job would leave nothing placeable.
RARE = st.sampled_from([False] * 11 + [True])
SOMETIMES = st.sampled_from([False] * 4 + [True])
GPU_TYPES = st.sampled_from(
    [
        [],
        [],
        [],
        ["nvidia-h100"],
        ["nvidia-a100"],
        ["nvidia-l4", "nvidia-l40s"],
        ["nvidia-gb200", "nvidia-h100"],
    ]
)


@st.composite
def gpu(draw: st.DrawFn, counts: list[int]) -> GpuDemand:
    return GpuDemand(
        count=draw(st.sampled_from(counts)),
        types=draw(GPU_TYPES),
        interconnect=draw(st.sampled_from(["any", "any", "any", "nvlink"])),
        min_memory_gb=draw(st.sampled_from([None, None, None, 40, 100])),
        min_compute_capability=draw(st.sampled_from([None, None, None, "8.0", "9.0"])),
    )


@st.composite
def task_groups(draw: st.DrawFn) -> tuple[list[TaskGroup], str | None]:
    """The task groups of one job and the distributed strategy it needs (split jobs must span nodes)."""
    kind = draw(st.sampled_from(["gpu", "gpu", "share", "split", "tpu", "cpu", "multi", "range"]))
    cpu = st.sampled_from([0, 4, 32, 100])
    mem = st.sampled_from([0, 64, 512])
    strategy = draw(st.sampled_from([None, "none", "fsdp", "data_parallel"]))
    if kind == "share":
        return [
            TaskGroup(gpu=GpuDemand(count=1, share_milli=draw(st.sampled_from([200, 500, 800]))))
        ], strategy
    if kind == "split":
        return [TaskGroup(gpu=draw(gpu([12, 16, 24])), cpu_cores=draw(cpu))], draw(
            st.sampled_from(["fsdp", "data_parallel", "deepspeed"])
        )
    if kind == "tpu":
        tpu = draw(
            st.sampled_from(
                [
                    TpuDemand(type="v5e", topology=(2, 2)),
                    TpuDemand(type="v5e", topology=(2, 4)),
                    TpuDemand(type="v5e", chips=1),
                    TpuDemand(type="v4", topology=(2, 2, 1)),
                ]
            )
        )
        return [TaskGroup(tpu=tpu)], None
    if kind == "cpu":
        return [TaskGroup(count=draw(st.integers(1, 3)), cpu_cores=draw(cpu), memory_gb=draw(mem))], strategy
    if kind == "multi":
        return [
            TaskGroup(name="launcher", cpu_cores=draw(st.sampled_from([1, 8]))),
            TaskGroup(
                name="worker",
                count=draw(st.integers(1, 3)),
                gpu=draw(gpu([1, 2, 4])),
                one_per_node=draw(st.booleans()),
            ),
        ], strategy
    if kind == "range":
        lo = draw(st.integers(1, 2))
        return [
            TaskGroup(
                count=lo,
                count_range=CountRange(min=lo, max=draw(st.integers(lo, 5))),
                gpu=GpuDemand(count=1),
                one_per_node=draw(st.booleans()),
            )
        ], strategy
    return [
        TaskGroup(
            count=draw(st.integers(1, 3)),
            cpu_cores=draw(cpu),
            memory_gb=draw(mem),
            gpu=draw(gpu([1, 2, 4, 8])),
            one_per_node=draw(st.booleans()),
            exclusive=draw(RARE),
        )
    ], strategy


@st.composite
def jobs(draw: st.DrawFn, i: int, n: int) -> Job:
    tasks, strategy = draw(task_groups())
    others = [f"j{k}" for k in range(n) if k != i]
    deps: list[Dependency] = []
    if draw(SOMETIMES):
        target = draw(st.sampled_from([*others, "run-0", "ghost"]))
        deps.append(Dependency(job=target, condition=draw(st.sampled_from(list(DependencyCondition)))))
    placement = Placement(
        node_selector=draw(st.sampled_from([{}] * 6 + [{"net": "ib"}, {"capacity_class": "spot"}])),
        required=draw(st.one_of(st.just([]), st.just([]), st.lists(RULE, min_size=1, max_size=2))),
        preferred=draw(st.lists(PREFERRED, max_size=2)),
        anti_affinity=draw(st.one_of(st.just([]), st.just([]), st.lists(ANTI, max_size=1))),
        gpu_affinity=draw(st.sampled_from([None, None, *GpuAffinity])),
        topology_scope=draw(st.sampled_from([None, None, None, "rack", "node", "zone"])),
        spot_preference=draw(st.sampled_from([SpotPreference.ANY, *SpotPreference])),
        exclusive_nodes=draw(RARE),
        node_count=draw(st.sampled_from([None, None, None, CountRange(min=1, max=2)])),
        data_locality=draw(st.sampled_from([None, None, "s3://data/set-1/"])),
    )
    return Job(
        id=f"j{i}",
        type=draw(st.sampled_from([None, "t"])),
        priority_class=draw(st.sampled_from(["spot", "on-demand", "reserved"])),
        priority=draw(st.sampled_from([0, 0, -50, 10, 100])),
        distributed_strategy=strategy,
        tasks=tasks,
        placement=placement,
        dependencies=deps,
        not_before=draw(
            st.sampled_from([None, None, None, NOW - timedelta(hours=1), NOW + timedelta(hours=1)])
        ),
        reservation=ReservationRef(id="r-unknown") if draw(RARE) else None,
        model=ModelRef(id=draw(st.sampled_from([None, None, "llama-3-8b"]))),
        submit_time=NOW - timedelta(minutes=draw(st.integers(0, 90))),
    )


@st.composite
def batches(draw: st.DrawFn) -> list[Job]:
    n = draw(st.integers(1, 8))
    return [draw(jobs(i, n)) for i in range(n)]


@st.composite
def cases(draw: st.DrawFn) -> tuple[Cluster, list[Job], list[int]]:
    """A cluster, a batch, and a permutation of the batch (for the order-independence property)."""
    batch = draw(batches())
    return draw(clusters()), batch, draw(st.permutations(range(len(batch))))


# -- the properties -------------------------------------------------------------------------------------


def without_timing(decision: Decision) -> dict[str, Any]:
    """The decision JSON minus the wall-clock fields, which no run can reproduce."""
    out = decision.to_json()
    for key in TIMING:
        out["stats"].pop(key, None)
    return out


def problems(decision: Decision, batch: list[Job], cluster: Cluster) -> list[str]:
    """What the independent checker finds, plus rule 1 (every job answered exactly once)."""
    out = [str(v) for v in check(decision, batch, cluster, now=NOW)]
    answered = sorted(
        [p.job for p in decision.placements]
        + [p.job for p in decision.pending]
        + [r.job for r in decision.rejected]
    )
    if answered != sorted(j.id for j in batch):
        out.append(f"answered {answered}, batch {sorted(j.id for j in batch)}")
    out += [f"pending {p.job} has no reason" for p in decision.pending if not p.reasons]
    return out


@dataclass
class Findings:
    """What one case showed; every list must stay empty."""

    violations: dict[str, list[str]] = field(default_factory=lambda: {"greedy": [], "cpsat": []})
    cpsat_worse: list[str] = field(default_factory=list)
    nondeterministic: list[str] = field(default_factory=list)
    empty_answer: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            any(self.violations.values()) or self.cpsat_worse or self.nondeterministic or self.empty_answer
        )

    def __str__(self) -> str:
        return "\n".join(
            f"{k}: {v}"
            for k, v in (
                ("greedy violations", self.violations["greedy"]),
                ("cpsat violations", self.violations["cpsat"]),
                ("cpsat worse than greedy", self.cpsat_worse),
                ("nondeterministic", self.nondeterministic),
                ("placed nothing though greedy could", self.empty_answer),
            )
            if v
        )


def examine(cluster: Cluster, batch: list[Job], order: list[int]) -> Findings:
    """Decide ``batch`` with both engines (twice each, once in another order) and check every property."""
    f = Findings()
    shuffled = [batch[k] for k in order]
    greedy_policy = Policy(engine="greedy", time_limit_s=TIME_LIMIT_S)
    cpsat_policy = Policy(engine="cpsat", time_limit_s=TIME_LIMIT_S, reproducible=True)
    with no_hang(4 * TIME_LIMIT_S + GUARD_S):
        greedy = place(batch, cluster, greedy_policy, now=NOW)
        greedy_again = place(shuffled, cluster, greedy_policy, now=NOW)
        cpsat = place(batch, cluster, cpsat_policy, now=NOW)
        cpsat_again = place(shuffled, cluster, cpsat_policy, now=NOW)
    f.violations["greedy"] = problems(greedy, batch, cluster)
    f.violations["cpsat"] = problems(cpsat, batch, cluster)
    if cpsat.stats.objective < greedy.stats.objective:
        f.cpsat_worse.append(f"cpsat objective {cpsat.stats.objective} < greedy {greedy.stats.objective}")
    # Both are greedy's core answer before time planning (which may withdraw placements afterwards, and
    # then ``objective`` is the final decision's): compare like with like.
    if cpsat.stats.greedy_objective != greedy.stats.greedy_objective:
        f.cpsat_worse.append(
            f"cpsat's greedy_objective {cpsat.stats.greedy_objective} != greedy's "
            f"{greedy.stats.greedy_objective}"
        )
    if without_timing(greedy) != without_timing(greedy_again):
        f.nondeterministic.append("greedy: same input (reordered) gave another decision")
    if without_timing(cpsat) != without_timing(cpsat_again):
        f.nondeterministic.append("cpsat reproducible: same input (reordered) gave another decision")
    if greedy.placements and not cpsat.placements:
        f.empty_answer.append(f"greedy placed {[p.job for p in greedy.placements]}, cpsat nothing")
    return f


@given(case=cases())
def test_random_clusters_and_batches_hold_every_property(case: tuple[Cluster, list[Job], list[int]]) -> None:
    cluster, batch, order = case
    findings = examine(cluster, batch, order)
    assert findings.clean, str(findings)


@given(cluster=clusters())
def test_generated_running_jobs_are_valid_allocations(cluster: Cluster) -> None:
    # The generator's own contract: no GPU held past 1000 milli, no node past its CPU or memory; if the
    # generator broke it, with_allocations would already have raised TopologyError.
    for node in cluster.nodes:
        usage = cluster.usage(node.name)
        assert usage.cpu_cores <= node.cpu_cores + 1e-9
        assert usage.memory_gb <= node.memory_gb + 1e-9
        assert all(usage.gpu_milli_used(i) <= 1000 for i in usage.gpus)
    assert 1 <= sum(1 for _ in cluster.nodes) <= 12


def test_examine_detects_a_broken_decision() -> None:
    # The property harness must be able to fail: a decision placing a job on a GPU that does not exist
    # is a checker violation, and one that forgets a job breaks rule 1.
    from placer.solver.decision import JobPlacement, ReplicaPlacement

    cluster = cluster_of(dgx_h100(2))
    job = Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    bad = Decision(
        placements=[JobPlacement(job="a", replicas=[ReplicaPlacement(node="dgx-h100-1", gpus=[8])])]
    )
    assert any("GPU index 8" in p for p in problems(bad, [job], cluster))
    forgotten = problems(Decision(), [job], cluster)
    assert "answered [], batch ['a']" in forgotten and any("[accounting]" in p for p in forgotten)


# -- what the properties found, pinned as plain examples --------------------------------------------------


def test_node_count_bounds_a_gang_on_distinct_nodes() -> None:
    # Found by the property above. placement-rules.md rule 11: "the number of distinct nodes the job uses is
    # one of node_count.values(...)". Four one-per-node replicas need four distinct nodes, and node_count
    # allows at most 2, so no valid placement exists: the job must stay pending (it may not be placed on 4).
    cluster = cluster_of(dgx_h100(4))
    job = Job(
        id="a",
        tasks=[TaskGroup(count=4, one_per_node=True, gpu=GpuDemand(count=1))],
        placement=Placement(node_count=CountRange(min=1, max=2)),
    )
    for engine in ("greedy", "cpsat"):
        decision = place([job], cluster, Policy(engine=engine, time_limit_s=TIME_LIMIT_S), now=NOW)
        assert problems(decision, [job], cluster) == [], engine
        assert [p.job for p in decision.pending] == ["a"], engine
