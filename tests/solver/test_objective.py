"""The one objective (``solver/objective/``) on both engines, every decision checked (``solve``).

Expected placements come from the spec texts and the arithmetic of each small cluster, never from what
the engine printed: OJS ML §4 (model version, MUST; model locality, SHOULD), MLX §7.1-7.2 (pack, spread,
data locality), OJS ML §7.2 (preferred weights 0-100), and gang compactness as Slurm's topology/tree and
Kueue's topology-aware scheduling keep a gang (the smallest domain that holds it).
"""

from __future__ import annotations

from typing import Any

import pytest

import placer.solver.core
import placer.solver.cpsat
from placer.scenarios.synthetic import hard_instances
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, ModelRef, Placement, TaskGroup
from placer.solver.policy import Policy
from placer.topology import Inventory, LoadedModel, NodeSpec, build_cluster, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve, nodes_of, reason_codes


def _cluster(*nodes: NodeSpec):  # type: ignore[no-untyped-def]
    return build_cluster(Inventory(nodes=list(nodes)), source="test")


def _l4(name: str, gpus: int = 1, **kw: Any) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=16, memory_gb=64, gpus={"type": "nvidia-l4", "count": gpus}, **kw)


def _job(job_id: str, gpus: int = 1, **kw: Any) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(cpu_cores=2, memory_gb=8, gpu=GpuDemand(count=gpus))], **kw)


@pytest.fixture
def cpsat_answers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """CP-SAT's own answers (realized assignments), whether or not the engine kept them."""
    seen: list[Any] = []
    real = placer.solver.cpsat.solve

    def solve(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        seen.append((args[0], result.assignment))
        return result

    monkeypatch.setattr(placer.solver.core, "solve", solve)  # the name the engine calls
    return seen


def _cpsat_nodes(cpsat_answers: list[Any], snap_nodes: list[str], job_id: str) -> list[str]:
    plans, assignment = cpsat_answers[-1]
    (p,) = [p for p in plans if p.id == job_id]
    return [snap_nodes[r.node] for r in assignment.placed[p.idx]]


# -- preferences --------------------------------------------------------------------------------------------


def test_model_locality_on_four_identical_nodes(solve: Solve, engine: str, cpsat_answers: list[Any]) -> None:
    """SHOULD (OJS ML §4/§11): of four identical nodes, the one with the model loaded. CP-SAT's own answer
    too: its node classes keep the model's node apart from the other three."""
    c = _cluster(_l4("a"), _l4("b"), _l4("c", models_loaded=[LoadedModel(model_id="llama")]), _l4("d"))
    d = solve([_job("serve", model=ModelRef(id="llama"))], c)
    assert nodes_of(d, "serve") == ["c"]
    if engine == "cpsat":
        assert _cpsat_nodes(cpsat_answers, ["a", "b", "c", "d"], "serve") == ["c"]


def test_version_pin_is_a_must(solve: Solve) -> None:
    """MUST (OJS ML §4): never on a node that has the model at another version only; a node that does not
    advertise the model may load it. With the wrong version everywhere the job is UNSATISFIABLE, and the
    reason names the version."""
    wrong = [LoadedModel(model_id="llama", model_version="v1")]
    c = _cluster(_l4("a", models_loaded=wrong), _l4("b"))
    d = solve([_job("serve", model=ModelRef(id="llama", version="v2"))], c)
    assert nodes_of(d, "serve") == ["b"]
    only_wrong = _cluster(_l4("a", models_loaded=wrong))
    d = solve([_job("serve", model=ModelRef(id="llama", version="v2"))], only_wrong)
    assert reason_codes(d, "serve") == ["UNSATISFIABLE"]
    assert "model_version" in d.pending[0].reasons[0].details["eliminated"]


def test_data_locality_on_identical_nodes(solve: Solve, engine: str, cpsat_answers: list[Any]) -> None:
    c = _cluster(_l4("a"), _l4("b", labels={"data_locality": "s3://bucket/"}), _l4("c"))
    d = solve([_job("train", placement=Placement(data_locality="s3://bucket/part-0"))], c)
    assert nodes_of(d, "train") == ["b"]
    if engine == "cpsat":
        assert _cpsat_nodes(cpsat_answers, ["a", "b", "c"], "train") == ["b"]


def test_preferred_weights_fill_the_heavier_node_first(solve: Solve) -> None:
    """Two 2-GPU nodes; every job prefers tier a (weight 80) over tier b (weight 20): two jobs on a, the
    third on b (80 + 80 + 20 = 180 is the most preference three jobs can have)."""
    c = _cluster(_l4("a", gpus=2, labels={"tier": "a"}), _l4("b", gpus=2, labels={"tier": "b"}))
    rules = [
        LabelRule(key="tier", operator="In", values=["a"], weight=80),
        LabelRule(key="tier", operator="In", values=["b"], weight=20),
    ]
    jobs = [_job(f"j{i}", placement=Placement(preferred=rules)) for i in range(3)]
    d = solve(jobs, c)
    on = sorted(nodes_of(d, j.id)[0] for j in jobs)
    assert on == ["a", "a", "b"]


# -- gangs, pack and spread ---------------------------------------------------------------------------------


def _racks(busy: dict[str, list[int]]):  # type: ignore[no-untyped-def]
    """Two racks of two DGX H100 nodes (dgx-h100-r1-1, -r1-2, -r2-1, -r2-2), with ``busy`` GPUs taken."""
    c = cluster_of(dgx_h100(4, nodes_per_rack=2))
    return c.with_allocations(
        [{"job": f"busy-{n}", "replicas": [{"node": n, "gpus": g}]} for n, g in busy.items()]
    )


def _gang(job_id: str = "gang") -> Job:
    """Two replicas of 8 GPUs that may span nodes (data parallel)."""
    return Job(
        id=job_id,
        distributed_strategy="data_parallel",
        tasks=[TaskGroup(count=2, cpu_cores=8, memory_gb=64, gpu=GpuDemand(count=8))],
    )


def test_a_gang_stays_in_one_rack_when_a_rack_has_room(solve: Solve) -> None:
    # Rack 1 has one idle node (the other is half busy); rack 2 has both idle: only rack 2 holds the gang.
    c = _racks({"dgx-h100-r1-1": [0, 1, 2, 3]})
    d = solve([_gang()], c)
    assert sorted(nodes_of(d, "gang")) == ["dgx-h100-r2-1", "dgx-h100-r2-2"]


def test_cpsats_own_answer_keeps_a_gang_in_one_rack(cpsat_answers: list[Any]) -> None:
    """Compactness is a term of the model, not only of the engine's comparison: CP-SAT's own answer puts
    the gang in rack 2. Without it the three idle nodes (one in rack 1, two in rack 2) were one class, and
    its first two members straddled the racks."""
    c = _racks({"dgx-h100-r1-1": [0, 1, 2, 3]})
    place([_gang()], c, Policy(engine="cpsat", time_limit_s=3), now=NOW)
    names = [n.name for n in c.nodes]
    assert sorted(_cpsat_nodes(cpsat_answers, names, "gang")) == ["dgx-h100-r2-1", "dgx-h100-r2-2"]


def test_a_gang_is_split_across_racks_only_when_no_rack_holds_it(solve: Solve) -> None:
    c = _racks({"dgx-h100-r1-1": [0], "dgx-h100-r2-1": [0]})
    d = solve([_gang()], c)
    assert sorted(nodes_of(d, "gang")) == ["dgx-h100-r1-2", "dgx-h100-r2-2"]


def test_pack_puts_replicas_on_the_fewest_nodes(solve: Solve) -> None:
    """MLX §7.1 pack: four 1-GPU replicas on one 4-GPU node, though best fit alone would not insist."""
    c = _cluster(_l4("a", gpus=4), _l4("b", gpus=4), _l4("c", gpus=4))
    job = Job(
        id="packed",
        placement=Placement(gpu_affinity="pack"),  # type: ignore[arg-type]
        tasks=[TaskGroup(count=4, cpu_cores=1, memory_gb=4, gpu=GpuDemand(count=1))],
    )
    d = solve([job], c)
    assert len(set(nodes_of(d, "packed"))) == 1


def test_spread_puts_each_gpu_on_its_own_node(solve: Solve) -> None:
    """MLX §7.1 spread: a 4-GPU replica that may span nodes gets one GPU on each of four nodes."""
    c = _cluster(*(_l4(n, gpus=4) for n in "abcd"))
    job = Job(
        id="spread",
        distributed_strategy="data_parallel",
        placement=Placement(gpu_affinity="spread"),  # type: ignore[arg-type]
        tasks=[TaskGroup(cpu_cores=4, memory_gb=16, gpu=GpuDemand(count=4))],
    )
    d = solve([job], c)
    assert sorted(nodes_of(d, "spread")) == ["a", "b", "c", "d"]


def test_the_readme_example_keeps_pretrain_8b_gang_in_one_rack() -> None:
    from placer.solver.jobs import read_files
    from placer.topology.load import load_cluster

    cluster = load_cluster("examples/clusters/h100-training.yaml")
    jobs = read_files(
        [
            "examples/jobs/batch.json",
            "examples/jobs/pipeline.json",
            "examples/jobs/mpi-job.flux.yaml",
            "examples/jobs/analysis.sss.xml",
        ]
    )
    for engine in ("greedy", "auto"):
        d = place(jobs, cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
        nodes = nodes_of(d, "pretrain-8b-gang")
        assert len({cluster.node(n).rack for n in nodes}) == 1, (engine, nodes)


# -- the engines' answers and the bound ---------------------------------------------------------------------


def test_a_rejected_job_does_not_cost_the_batch_cpsat_answer() -> None:
    """A batch where CP-SAT beats greedy keeps CP-SAT's answer when one envelope of it is invalid: the
    rejected job is answered in ``rejected`` and the checker judges the rest."""
    sc = next(s for s in hard_instances() if s.name == "hard-memory-stranding")  # greedy places 6 of 8
    (bad,) = read_text('{"id": "bad", "ext_ml_gpu_count": 0, "ext_ml_gpu_type": "nvidia-h100"}')
    assert not bad.ok
    d = place([*sc.jobs, bad], sc.cluster, Policy(time_limit_s=3), now=sc.now)
    assert not d.stats.status.startswith("CPSAT_REJECTED_BY_CHECKER"), d.stats.status
    assert d.stats.engine == "cpsat"
    assert len(d.placements) == sc.optimal_placed
    assert [r.job for r in d.rejected] == ["bad"]


def test_a_wrong_bound_is_caught_not_clamped(monkeypatch: pytest.MonkeyPatch) -> None:
    """An LP bound below what a checked answer achieves is wrong: it is named in ``bound_error`` and the
    reported bound and gap come from the bounds that hold."""
    monkeypatch.setattr(placer.solver.core, "lp_bound", lambda *a, **k: 0.0)
    sc = next(s for s in hard_instances() if s.name == "hard-fragmentation")
    d = place(sc.jobs, sc.cluster, Policy(time_limit_s=3), now=sc.now)
    assert d.stats.objective and d.stats.objective > 0
    assert d.stats.bound_error is not None and "lp bound 0" in d.stats.bound_error
    assert d.stats.bound_source != "lp"
    assert d.stats.bound is not None and d.stats.bound >= d.stats.objective
    assert d.stats.gap == pytest.approx((d.stats.bound - d.stats.objective) / d.stats.bound)


def test_levels_say_on_which_level_the_kept_answer_won() -> None:
    """``stats.levels`` / ``stats.greedy_levels``: both answers' scores, level 1 of each equal to the
    objective the decision reports and to greedy run on its own; CP-SAT's answer was kept because it is
    larger on the first level where they differ (here level 1: 8 jobs placed against greedy's 6)."""
    sc = next(s for s in hard_instances() if s.name == "hard-memory-stranding")
    alone = place(sc.jobs, sc.cluster, Policy(engine="greedy", time_limit_s=3), now=sc.now)
    d = place(sc.jobs, sc.cluster, Policy(time_limit_s=3), now=sc.now)
    assert alone.stats.levels is None and alone.stats.greedy_levels is None  # greedy alone weighed nothing
    assert d.stats.engine == "cpsat" and len(d.placements) == sc.optimal_placed
    assert d.stats.levels is not None and d.stats.greedy_levels is not None
    assert d.stats.levels["placed"] == d.stats.objective
    assert d.stats.greedy_levels["placed"] == d.stats.greedy_objective == alone.stats.objective
    assert d.stats.levels["placed"] > d.stats.greedy_levels["placed"]
    assert list(d.stats.levels) == [
        "placed",
        "eviction",
        "preference",
        "compactness",
        "fragmentation",
        "money",
        "fit",
    ]


def test_levels_of_an_answer_the_checker_refused_are_greedy_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the checker refuses CP-SAT's answer, greedy's stands, and so do its levels."""
    from placer.solver.checks.violation import Violation

    monkeypatch.setattr(placer.solver.core, "check", lambda *a, **k: [Violation("capacity", "x", "made up")])
    sc = next(s for s in hard_instances() if s.name == "hard-memory-stranding")
    d = place(sc.jobs, sc.cluster, Policy(time_limit_s=3), now=sc.now)
    assert d.stats.status.startswith("CPSAT_REJECTED_BY_CHECKER")
    assert d.stats.levels is not None and d.stats.levels == d.stats.greedy_levels
    assert d.stats.levels["placed"] == d.stats.objective


def test_a_withdrawal_drops_the_levels() -> None:
    """Levels computed for placements a later step withdrew describe no decision that stands."""
    from placer.solver.decision import Decision, Stats

    levels = {"placed": 10.0, "eviction": 0.0}
    d = Decision(stats=Stats(objective=10.0, levels=levels, greedy_levels=levels))
    d._weights, d._levels_of = {"a": 10}, frozenset({"a"})
    d.recount()  # "a" was withdrawn
    assert d.stats.objective == 0.0 and d.stats.levels is None and d.stats.greedy_levels is None
