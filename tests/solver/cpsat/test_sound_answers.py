"""CP-SAT's own answers pass the checker and turn into nodes: no CPSAT_REJECTED_BY_CHECKER, no REALIZE_FAILED.

The engine drops a CP-SAT answer that fails the checker or cannot be realized and keeps greedy's, so the
decision stays valid either way: these tests look at ``stats.status`` (and, where CP-SAT's answer is
strictly better, at ``stats.engine``) to see that the model itself was right. Each one reproduces, on a
hand-built cluster, a way the synthetic scenarios S and M caught the model out:

* TPU chips of running jobs: greedy evicted a running TPU job and took its chips; the model offered that
  slice as if its chips were free, so CP-SAT's answer (with no eviction, hence "cheaper") put a slice on
  chips a running job still held (scenario S, seeds 4 and 5).
* Greedy's packings as patterns: a greedy packing is kept as a pattern even when it does not fit the
  class on the model's amounts (demands rounded up, a class's capacity its smallest member's); the model
  then filled its slots with bigger replicas of the same item type, or used it on a smaller member, or
  on more nodes than greedy did, and the answer could not be realized (scenario M). On M the rounding came
  from counting tagged item types (one unit's own, never merged); here ``MAX_TYPES`` / ``MAX_CLASSES``
  are lowered to make a few nodes round as M's hundreds did.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, ModelRef, Placement, TaskGroup, TpuDemand
from placer.solver.policy import Policy
from placer.topology import Cluster, Inventory, LoadedModel, NodeSpec, build_cluster, cluster_of, tpu_pod
from tests.solver.conftest import NOW, nodes_of

BROKEN = ("CPSAT_REJECTED_BY_CHECKER", "REALIZE_FAILED")


def place_cpsat(jobs: Sequence[Job], cluster: Cluster) -> Decision:
    """``place`` on engine ``cpsat``; fails when CP-SAT's answer was dropped or the decision is invalid."""
    d = place(list(jobs), cluster, Policy(engine="cpsat", time_limit_s=3.0), now=NOW)
    assert not d.stats.status.startswith(BROKEN), d.stats.status
    violations = check(d, list(jobs), cluster, now=NOW)
    assert violations == [], "\n".join(str(v) for v in violations)
    return d


def tpu_job(job_id: str, shape: tuple[int, int], cls: str = "on-demand", priority: int = 0) -> Job:
    return Job(
        id=job_id,
        priority_class=cls,  # type: ignore[arg-type]
        priority=priority,
        tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=shape))],
    )


def pod_with_a_spot_job() -> Cluster:
    """A v5e 4x4 pod (four 2x2 hosts) whose first host (chips x, y < 2) runs a spot job, started 1 h ago."""
    host0 = [[0, 0], [0, 1], [1, 0], [1, 1]]
    return cluster_of(tpu_pod("v5e", shape=(4, 4))).with_allocations(
        [
            {
                "job": "low",
                "priority_class": "spot",
                "started_at": NOW - timedelta(hours=1),
                "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": host0}],
            }
        ]
    )


def chips_of(d: Decision, job: str) -> set[tuple[int, ...]]:
    p = d.placement_of(job)
    assert p is not None, f"{job} is not placed"
    return {tuple(c) for r in p.replicas for c in r.tpu_chips}


def test_a_slice_on_chips_of_a_running_job_comes_with_its_eviction() -> None:
    # The 4x4 slice is the whole pod: it needs the spot job's host. Greedy evicts it; CP-SAT's answer used
    # to take the same chips without the eviction (and won on "less work thrown away").
    c = pod_with_a_spot_job()
    d = place_cpsat([tpu_job("t", (4, 4))], c)
    assert len(chips_of(d, "t")) == 16
    assert [(e.job, e.for_) for e in d.preemptions] == [("low", ["t"])]


def test_cpsat_evicts_for_a_tpu_slice_greedy_could_not_place() -> None:
    # Greedy goes by priority: "small" (2x2, priority 50) takes a free host first, and then "big" (4x4)
    # cannot have the whole pod even by evicting "low" (small is not a running job). Weights (class 10 x
    # (1 + priority/100) x tenths of chips): small 10 x 1.5 x 40 = 600, big 10 x 1 x 160 = 1,600. CP-SAT
    # places big by evicting low, which it could not do when TPU evictions were greedy's only.
    c = pod_with_a_spot_job()
    d = place_cpsat([tpu_job("small", (2, 2), priority=50), tpu_job("big", (4, 4))], c)
    assert d.stats.greedy_objective == 600
    assert d.stats.engine == "cpsat" and d.stats.objective == 1600
    assert len(chips_of(d, "big")) == 16 and d.placement_of("small") is None
    assert [(e.job, e.for_) for e in d.preemptions] == [("low", ["big"])]


def test_a_free_slice_is_preferred_to_an_eviction() -> None:
    # A 2x4 (either way round) fits the free chips (x >= 2, or y >= 2): nothing is evicted.
    c = pod_with_a_spot_job()
    d = place_cpsat([tpu_job("t", (2, 4))], c)
    assert not chips_of(d, "t") & {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert d.preemptions == []


def _gpu_job(job_id: str, cores: float, **kw: object) -> Job:
    task = TaskGroup(cpu_cores=cores, memory_gb=8, gpu=GpuDemand(count=1))
    return Job(id=job_id, tasks=[task], **kw)  # type: ignore[arg-type]


def test_greedy_packing_of_small_replicas_is_not_filled_with_big_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One node: 2 GPUs, 32 cores, llama loaded. Four 1-GPU jobs of equal priority: two of 2 cores
    # ("a-small-*", first in greedy's order by id) and two of 20 cores that prefer the node (model
    # locality). Greedy places the two small ones (GPUs full). With demands rounded up to one item type
    # (32 cores), greedy's packing "2 of that type" does not fit the node on paper (64 cores) but was kept,
    # and CP-SAT filled it with the two preferred 20-core replicas: 40 cores on a 32-core node. Now the
    # small ones keep their real amounts; the best answer is one big (preferred) and one small: 22 cores.
    monkeypatch.setattr("placer.solver.cpsat.reduce.MAX_TYPES", 1)
    node = NodeSpec(
        name="n",
        cpu_cores=32,
        memory_gb=512,
        gpus={"type": "nvidia-l4", "count": 2},  # type: ignore[arg-type]
        models_loaded=[LoadedModel(model_id="llama")],
    )
    c = build_cluster(Inventory(nodes=[node]), source="test")
    llama = ModelRef(id="llama")
    jobs = [
        _gpu_job("a-small-1", 2),
        _gpu_job("a-small-2", 2),
        _gpu_job("z-big-1", 20, model=llama),
        _gpu_job("z-big-2", 20, model=llama),
    ]
    d = place_cpsat(jobs, c)
    placed = sorted(p.job for p in d.placements)
    assert len(placed) == 2 and sum(j.startswith("z-big") for j in placed) == 1
    assert d.stats.engine == "cpsat"


def test_greedy_packing_on_a_roomy_member_is_not_used_on_a_small_one(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two 2-GPU, 64-core nodes; running jobs leave n1 24 free cores and n2 40. With classes rounded until
    # they merge (64 cores: both floor to 0), the class's capacity is its smallest member's, 24 cores.
    # Greedy puts "big-1" (40 cores) on n2, the only node it fits; "big-2" fits nowhere; "small" goes to
    # n1. The packing "one big" does not fit the class on paper; it was kept and used twice (two bigs), which
    # no node could hold. Now it is pinned to n2: one big, and the small one on n1.
    monkeypatch.setattr("placer.solver.cpsat.classes.MAX_CLASSES", 1)

    def spec(name: str) -> NodeSpec:
        return NodeSpec(name=name, cpu_cores=64, memory_gb=256, gpus={"type": "nvidia-l4", "count": 2})  # type: ignore[arg-type]

    c = build_cluster(Inventory(nodes=[spec("n1"), spec("n2")]), source="test").with_allocations(
        [
            {"job": "r1", "replicas": [{"node": "n1", "cpu_cores": 40}]},
            {"job": "r2", "replicas": [{"node": "n2", "cpu_cores": 24}]},
        ]
    )
    jobs = [
        _gpu_job("big-1", 40, priority=10),
        _gpu_job("big-2", 40, priority=10),
        _gpu_job("small", 4),
    ]
    d = place_cpsat(jobs, c)
    bigs = [j for j in ("big-1", "big-2") if d.placement_of(j) is not None]
    assert len(bigs) == 1 and nodes_of(d, bigs[0]) == ["n2"]
    assert nodes_of(d, "small") == ["n1"]


def test_tagged_item_types_do_not_drive_the_rounding(monkeypatch: pytest.MonkeyPatch) -> None:
    # Two exclusive jobs (item types of their own, tagged) and one plain job: with room for two item types,
    # only the plain job's demand could ever merge with another, and it is alone, so nothing is rounded and
    # the model is exact. Counting the tagged types (never merged) rounded every demand up to 128 cores and
    # 1 TB: on scenario M, 487 of 593 types were tagged and the plain ones all became 128-core replicas.
    monkeypatch.setattr("placer.solver.cpsat.reduce.MAX_TYPES", 2)

    def spec(name: str) -> NodeSpec:
        return NodeSpec(name=name, cpu_cores=32, memory_gb=256, gpus={"type": "nvidia-l4", "count": 2})  # type: ignore[arg-type]

    c = build_cluster(Inventory(nodes=[spec("n1"), spec("n2"), spec("n3")]), source="test")
    whole = Placement(exclusive_nodes=True)
    jobs = [_gpu_job("e1", 4, placement=whole), _gpu_job("e2", 6, placement=whole), _gpu_job("u", 8)]
    d = place_cpsat(jobs, c)
    assert d.stats.model_exact is True
    assert len(d.placements) == 3
