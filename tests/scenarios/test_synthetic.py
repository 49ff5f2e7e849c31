"""Scenarios S, M and L: sizes, busy fraction, fragmentation, the stated job mix, feasibility, determinism.

Expected numbers come from the brief and ``docs/scenarios-synthetic.md`` (1,000 GPU nodes x 8 GPUs =
8,000 GPUs; 1,000 jobs; 60% busy; kind quotas 35/25/10/10/7/5/8 %), not from running the generator.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from placer.scenarios.synthetic import NOW, Scenario, scenario_l, scenario_m, scenario_s
from placer.scenarios.synthetic.running import PRIORITY_BAND
from placer.scenarios.synthetic.workloads import CLASS_SHARES, KIND_SHARES
from placer.solver.jobs.model import Interconnect, Job, LabelRule
from placer.topology import Cluster, Node, slices_in_pod


@pytest.fixture(scope="module")
def m() -> Scenario:
    return scenario_m(0)


# ---------------------------------------------------------------------------------------------------
# helpers: classify a job by its structure, check it could run on the empty cluster
# ---------------------------------------------------------------------------------------------------


def kind_of(job: Job) -> str:
    """The job kind, read from the job's demands (not from ``metadata``)."""
    if job.total_tpu_chips:
        return "tpu"
    [t] = job.tasks
    if t.gpu is None:
        return "cpu"
    if t.count > 1 and t.one_per_node:
        return "gang_replicas"
    if t.gpu.count >= 16 and job.may_span_nodes():
        return "gang_split"
    if t.gpu.interconnect is Interconnect.NVLINK:
        return "nvlink"
    return "single_gpu" if t.gpu.count == 1 else "pcie_multi"


def rules_hold(rules: Iterable[object], labels: dict[str, str]) -> bool:
    out = True
    for r in rules:
        assert isinstance(r, LabelRule) and r.operator.value == "In", "the generator writes In rules only"
        out = out and labels.get(r.key) in r.values
    return out


def node_serves(job: Job, node: Node, parts: int) -> bool:
    """Whether an EMPTY ``node`` could hold one of ``parts`` equal parts of the job's (only) task group."""
    [t] = job.tasks
    p = job.placement
    if not rules_hold(p.required, dict(node.labels)):
        return False
    if any(node.labels.get(k) != v for k, v in p.node_selector.items()):
        return False
    if t.cpu_cores / parts > node.cpu_cores or t.memory_gb / parts > node.memory_gb:
        return False
    if t.gpu is None:
        return True
    g = t.gpu
    if g.types and node.gpu_type not in g.types:
        return False
    if g.interconnect is Interconnect.NVLINK and node.gpu_interconnect != "nvlink":
        return False
    if g.min_memory_gb is not None and (node.gpu_memory_gb or 0) < g.min_memory_gb:
        return False
    return node.gpu_count * parts >= g.count


#: Node label keys the generator's rules use; nodes alike on these and on their shape are interchangeable.
RULE_KEYS = ("zone", "capacity_class", "accelerator")


def node_classes(cluster: Cluster) -> list[tuple[Node, int]]:
    """One representative per (rack, shape, rule labels) with its node count: the feasibility check then
    looks at a few dozen classes instead of a thousand nodes."""
    seen: dict[tuple[object, ...], list[Node]] = {}
    for n in cluster.nodes:
        key = (
            n.rack,
            n.gpu_type,
            n.gpu_count,
            n.cpu_cores,
            n.memory_gb,
            *(n.labels.get(k) for k in RULE_KEYS),
        )
        seen.setdefault(key, []).append(n)
    return [(ns[0], len(ns)) for ns in seen.values()]


def feasible_on_empty(job: Job, cluster: Cluster, classes: list[tuple[Node, int]] | None = None) -> bool:
    """Whether the job could run on ``cluster`` with nothing running: some node (or enough nodes, in one
    rack/zone when the job says so) passes every hard constraint."""
    [t] = job.tasks
    if t.tpu is not None:
        return any(
            p.generation == t.tpu.type and slices_in_pod(p, t.tpu.topology) for p in cluster.tpu_pods()
        )
    assert {r.key for r in job.placement.required} | set(job.placement.node_selector) <= set(RULE_KEYS)
    nodes_needed = t.count
    parts = 1
    if t.gpu is not None and t.count == 1 and job.may_span_nodes() and t.gpu.count > 8:
        parts = t.gpu.count // 8
        nodes_needed = parts
    ok = [(n, k) for n, k in (classes or node_classes(cluster)) if node_serves(job, n, parts)]
    scope = job.placement.topology_scope
    if scope in ("rack", "zone"):
        groups: Counter[object] = Counter()
        for n, k in ok:
            groups[getattr(n, scope)] += k
        return max(groups.values(), default=0) >= nodes_needed
    return sum(k for _, k in ok) >= (nodes_needed if t.one_per_node or parts > 1 else 1)


def busy_fraction(c: Cluster) -> float:
    total = sum(n.gpu_count for n in c.nodes)
    free = sum(len(c.free_gpus(n.name)) for n in c.nodes)
    return 1 - free / total


# ---------------------------------------------------------------------------------------------------
# scenario M
# ---------------------------------------------------------------------------------------------------


def test_m_has_1000_gpu_nodes_8000_gpus_and_1000_jobs(m: Scenario) -> None:
    gpu_nodes = [n for n in m.cluster.nodes if n.gpu_count]
    assert len(gpu_nodes) == 1000
    assert {n.gpu_count for n in gpu_nodes} == {8}
    assert sum(n.gpu_count for n in m.cluster.nodes) == 8000
    assert len(m.jobs) == 1000
    assert len({j.id for j in m.jobs}) == 1000
    # the stated shapes: 400 H100, 320 A100, 224 L40S, 56 B200; 64 CPU-only nodes; one v5e 16x16 pod
    assert Counter(n.gpu_type for n in gpu_nodes) == {
        "nvidia-h100": 400,
        "nvidia-a100": 320,
        "nvidia-l40s": 224,
        "nvidia-b200": 56,
    }
    assert sum(1 for n in m.cluster.nodes if not n.gpu_count) == 64
    assert [(p.generation, p.shape) for p in m.cluster.tpu_pods()] == [("v5e", (16, 16))]


def test_m_layout_zones_racks_blocks_and_capacity_classes(m: Scenario) -> None:
    nodes = m.cluster.nodes
    assert {n.zone for n in nodes} == {"us-central1-a", "us-central1-b"}
    assert {n.capacity_class for n in nodes} == {"spot", "on-demand", "reserved"}
    racks = Counter(n.rack for n in nodes)
    assert max(racks.values()) == 32 and None not in racks
    # a rack is homogeneous (one shape, zone, class) and a block never spans two zones
    for rack in racks:
        members = [n for n in nodes if n.rack == rack]
        assert len({(n.gpu_type, n.zone, n.capacity_class) for n in members}) == 1
    blocks: dict[str | None, set[str | None]] = {}
    for n in nodes:
        blocks.setdefault(n.block, set()).add(n.zone)
    assert all(len(z) == 1 for z in blocks.values())
    # NVLink: H100/A100/B200 nodes are 8-GPU domains, L40S nodes have none
    assert len(m.cluster.nvlink_domains()) == 400 + 320 + 56
    assert all(d.size == 8 for d in m.cluster.nvlink_domains())


def test_m_busy_fraction_between_55_and_65_percent(m: Scenario) -> None:
    assert 0.55 <= busy_fraction(m.cluster) <= 0.65


def test_m_is_fragmented_but_has_whole_free_domains(m: Scenario) -> None:
    c = m.cluster
    gpu_nodes = [n for n in c.nodes if n.gpu_count]
    free = [len(c.free_gpus(n.name)) for n in gpu_nodes]
    partial = sum(1 for f in free if 0 < f < 8)
    assert partial >= 0.20 * len(gpu_nodes)  # docs: "about 30% of GPU nodes partly used"
    assert sum(1 for f in free if f == 0) >= 0.30 * len(gpu_nodes)  # whole-node jobs and packed nodes
    assert len(c.free_nvlink_domains(min_free=8)) >= 50  # 8-GPU NVLink jobs are not all hopeless


def test_m_running_jobs_are_realistic(m: Scenario) -> None:
    running = m.cluster.running_jobs()
    gpus = Counter(sum(len(r.gpus) for r in j.replicas) for j in running)
    assert {1, 2, 4, 8}.issubset(gpus)  # the 1/2/4/8-GPU mix
    assert any(k >= 16 for k in gpus)  # some multi-node gangs
    assert {j.priority_class for j in running} == {"spot", "on-demand", "reserved"}
    for j in running:
        lo, hi = PRIORITY_BAND[j.priority_class]
        assert lo <= j.priority <= hi
        assert j.started_at is not None and j.started_at < NOW
        if j.priority_class == "spot":
            assert j.preemptible is True
        if j.last_checkpoint_at is not None:
            assert j.started_at < j.last_checkpoint_at <= NOW
    spot_ckpt = [j for j in running if j.priority_class == "spot" and j.last_checkpoint_at is not None]
    assert spot_ckpt, "some spot preemptible jobs carry a last checkpoint"
    # capacity classes drive job classes: spot capacity runs mostly spot jobs (85% stated)
    on_spot = [
        j
        for j in running
        if j.replicas[0].node and m.cluster.node(j.replicas[0].node).capacity_class == "spot"
    ]
    assert sum(j.priority_class == "spot" for j in on_spot) / len(on_spot) >= 0.75
    # TPU pod about 40% busy; CPU nodes about 50% of cores
    pod = m.cluster.tpu_pods()[0]
    assert 0.30 <= 1 - m.cluster.free_tpu_chips(pod.name) / pod.chips <= 0.41
    cpu_nodes = [n for n in m.cluster.nodes if not n.gpu_count]
    used = sum(n.cpu_cores - m.cluster.free_cpu(n.name) for n in cpu_nodes)
    assert used / sum(n.cpu_cores for n in cpu_nodes) == pytest.approx(0.50, abs=0.02)


def test_m_job_kinds_are_exact_quotas(m: Scenario) -> None:
    kinds = Counter(kind_of(j) for j in m.jobs)
    for kind, share in KIND_SHARES:
        assert abs(kinds[kind] - 1000 * share) <= 1, kind
    assert all(kind_of(j) == j.metadata["kind"] for j in m.jobs)


def test_m_priority_classes_are_exact_quotas_with_numeric_bands(m: Scenario) -> None:
    classes = Counter(j.priority_class.value for j in m.jobs)
    for cls, share in CLASS_SHARES:
        assert abs(classes[cls] - 1000 * share) <= 1
    for j in m.jobs:
        lo, hi = PRIORITY_BAND[j.priority_class.value]
        assert lo <= j.priority <= hi
        assert j.submit_time is not None and j.submit_time < NOW
        assert j.source_format == "synthetic"


def test_m_job_sizes_follow_the_stated_tables(m: Scenario) -> None:
    by_kind: dict[str, list[Job]] = {}
    for j in m.jobs:
        by_kind.setdefault(kind_of(j), []).append(j)
    assert {j.total_gpus for j in by_kind["single_gpu"]} == {1}
    assert {j.total_gpus for j in by_kind["nvlink"]} == {2, 4, 8}
    assert {j.total_gpus for j in by_kind["pcie_multi"]} == {2, 4}
    assert {j.total_gpus for j in by_kind["gang_split"]} == {16, 32, 48, 64}
    assert all(j.distributed_strategy.value in ("fsdp", "data_parallel") for j in by_kind["gang_split"])
    assert all(j.tasks[0].count == 1 for j in by_kind["gang_split"])
    assert {j.tasks[0].count for j in by_kind["gang_replicas"]} == {2, 4, 6, 8}
    assert all(j.tasks[0].gpu.count == 8 for j in by_kind["gang_replicas"])
    assert {j.tasks[0].tpu.topology for j in by_kind["tpu"]} == {(2, 2), (2, 4), (4, 4)}
    assert all(j.accelerator.value == "cpu" for j in by_kind["cpu"])
    # NVLink jobs never ask for a PCIe-only type
    assert all(
        "nvidia-l40s" not in j.tasks[0].gpu.types for j in by_kind["nvlink"] + by_kind["gang_replicas"]
    )
    # single-GPU type shares: 25% H100, 25% A100, 25% L40S, 5% B200, 20% any (+-7 points)
    types = Counter(tuple(j.tasks[0].gpu.types) for j in by_kind["single_gpu"])
    n = len(by_kind["single_gpu"])
    for t, share in (
        (("nvidia-h100",), 0.25),
        (("nvidia-l40s",), 0.25),
        ((), 0.20),
        (("nvidia-b200",), 0.05),
    ):
        assert abs(types[t] / n - share) <= 0.07, t


def test_m_constraint_shares(m: Scenario) -> None:
    gpu_jobs = [j for j in m.jobs if j.total_gpus]
    required = sum(1 for j in gpu_jobs if j.placement.required) / len(gpu_jobs)
    preferred = sum(1 for j in gpu_jobs if j.placement.preferred) / len(gpu_jobs)
    assert abs(required - 0.12) <= 0.04
    assert abs(preferred - 0.20) <= 0.05
    inference = [j for j in m.jobs if j.labels["workload"] == "inference"]
    anti = sum(1 for j in inference if j.placement.anti_affinity) / len(inference)
    assert abs(anti - 0.15) <= 0.06
    keys = Counter(r.key for j in m.jobs for r in j.placement.required)
    assert {"zone", "capacity_class", "accelerator"} <= set(keys)
    assert any(j.placement.node_selector for j in gpu_jobs)
    assert {j.placement.topology_scope for j in m.jobs} >= {None, "zone", "rack"}
    # anti-affinity names the job's own app, which is one of its labels
    assert all(
        j.placement.anti_affinity[0].values == [j.labels["app"]] for j in m.jobs if j.placement.anti_affinity
    )


def test_m_cpu_and_memory_fit_the_node_shapes(m: Scenario) -> None:
    # per GPU never above the smallest share of the shapes: L40S 192/8 = 24 cores, 1536/8 = 192 GB
    for j in m.jobs:
        for t in j.tasks:
            if t.gpu is not None:
                assert t.cpu_cores / t.gpu.count <= 28 and t.memory_gb / t.gpu.count <= 256
                if "nvidia-l40s" in t.gpu.types or not t.gpu.types:
                    assert t.cpu_cores / t.gpu.count <= 24 and t.memory_gb / t.gpu.count <= 192


def test_every_m_job_is_feasible_on_the_empty_cluster(m: Scenario) -> None:
    classes = node_classes(m.cluster)
    assert len(classes) < 80  # racks of one shape each
    bad = [j.id for j in m.jobs if not feasible_on_empty(j, m.cluster, classes)]
    assert bad == []


def test_feasibility_check_can_fail(m: Scenario) -> None:
    job = next(j for j in m.jobs if kind_of(j) == "nvlink")
    impossible = job.model_copy(
        update={
            "tasks": [
                job.tasks[0].model_copy(update={"gpu": job.tasks[0].gpu.model_copy(update={"count": 16})})
            ]
        }
    )
    assert not feasible_on_empty(impossible, m.cluster)


# ---------------------------------------------------------------------------------------------------
# determinism
# ---------------------------------------------------------------------------------------------------


def _fingerprint(sc: Scenario) -> tuple[object, ...]:
    return (
        tuple(n.name for n in sc.cluster.nodes),
        sc.cluster.running_jobs(),
        sc.jobs,
    )


def test_m_same_seed_same_scenario_other_seed_differs(m: Scenario) -> None:
    again = scenario_m(0)
    assert _fingerprint(again) == _fingerprint(m)
    other = scenario_m(1)
    assert other.cluster.running_jobs() != m.cluster.running_jobs()
    assert other.jobs != m.jobs
    assert [n.name for n in other.cluster.nodes] == [n.name for n in m.cluster.nodes]  # same layout


def test_global_random_state_is_neither_used_nor_changed() -> None:
    random.seed(1)
    state = random.getstate()
    a = scenario_s(4)
    assert random.getstate() == state
    random.seed(2)
    b = scenario_s(4)
    assert _fingerprint(a) == _fingerprint(b)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32))
def test_s_invariants_hold_for_any_seed(seed: int) -> None:
    s = scenario_s(seed)
    assert len(s.cluster.nodes) == 40 and sum(n.gpu_count for n in s.cluster.nodes) == 288
    assert len(s.jobs) == 60
    assert 0.55 <= busy_fraction(s.cluster) <= 0.65
    assert all(feasible_on_empty(j, s.cluster) for j in s.jobs)
    assert _fingerprint(scenario_s(seed)) == _fingerprint(s)


def test_s_and_different_seeds_differ() -> None:
    assert scenario_s(0).jobs != scenario_s(1).jobs


# ---------------------------------------------------------------------------------------------------
# scenario L
# ---------------------------------------------------------------------------------------------------


def test_l_builds_in_under_ten_seconds_with_stated_size() -> None:
    t0 = time.perf_counter()
    big = scenario_l(0)
    elapsed = time.perf_counter() - t0
    assert elapsed < 10
    gpu_nodes = [n for n in big.cluster.nodes if n.gpu_count]
    assert len(gpu_nodes) == 10_000
    assert sum(n.gpu_count for n in gpu_nodes) == 80_000
    assert len(big.jobs) == 5000
    assert len(big.cluster.tpu_pods()) == 2
    assert 0.55 <= busy_fraction(big.cluster) <= 0.65
    kinds = Counter(kind_of(j) for j in big.jobs)
    assert all(abs(kinds[k] - 5000 * s) <= 1 for k, s in KIND_SHARES)
