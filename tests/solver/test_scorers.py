"""Baseline scorers (``solver/scorers.py``): each picks the node its definition says, worked out by hand on
small clusters; every decision of every scorer passes the independent checker; same input, same decision.

Node facts used below: a DGX H100 node has 8 GPUs, 224 cores, 2048 GB; the L4 inference node 4 GPUs, 48
cores, 192 GB; the CPU node 64 cores, 256 GB. The largest node of these clusters is a DGX (best fit's
normalizers: 224 cores, 8,000 milli-GPUs).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import ValidationError

from placer.solver.candidates import NodeArrays, batch_keys, unit_candidates
from placer.solver.decision import Decision
from placer.solver.demand import expand
from placer.solver.engine import place
from placer.solver.greedy.state import State
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.objective.fragmentation import fragments
from placer.solver.objective.kernels import weigh_into
from placer.solver.policy import BASELINES, Policy, engine_fields
from placer.solver.scorers import SCORERS, Context, Targets, fragmentation, target_workload
from placer.solver.snapshot import Snapshot
from placer.topology import Cluster, cluster_of, cpu_nodes, dgx_h100, pcie_inference
from tests.solver.conftest import NOW, assert_valid, no_hang
from tests.solver.test_place_fuzz import CLUSTER, FUZZ_GUARD_S, batches


def _job(
    job_id: str, gpus: int = 0, *, milli: int | None = None, cls: str = "on-demand", **task: object
) -> Job:
    gpu = None if not gpus else GpuDemand(count=gpus, share_milli=milli)
    return Job(id=job_id, priority_class=cls, tasks=[TaskGroup(gpu=gpu, **task)])  # type: ignore[arg-type]


def _run(job: str, node: str, gpus: list[int], **replica: object) -> dict[str, object]:
    return {"job": job, "replicas": [{"node": node, "gpus": gpus, **replica}]}


def _place(jobs: list[Job], cluster: Cluster, scorer: str) -> Decision:
    d = place(jobs, cluster, Policy(scorer=scorer), now=NOW)  # type: ignore[arg-type]
    assert_valid(d, jobs, cluster)
    assert d.stats.engine == "greedy"
    return d


def _node(d: Decision, job: str) -> str:
    (p,) = [p for p in d.placements if p.job == job]
    return p.replicas[0].node


def _keys(cluster: Cluster, job: Job, scorer: str, batch: list[Job] | None = None) -> dict[str, float]:
    """The scorer's key of every node where one replica of ``job`` fits, on the cluster as it is; FGD's
    target workload is ``batch`` (default: the job alone)."""
    snap = Snapshot.of(cluster)
    jobs = batch or [job]
    plans = [expand(j, i, max_node_gpus=8) for i, j in enumerate(jobs)]
    arrays = NodeArrays.of(snap, batch_keys([u for p in plans for u in p.units]))
    cands = {
        p.idx: [unit_candidates(u, arrays, nvlink=p.nvlink, spot_ok=True) for u in p.units] for p in plans
    }
    ctx = Context.of(scorer, plans, cands, arrays)
    (plan,) = [p for p in plans if p.id == job.id]
    unit = plan.units[0]
    state = State.of(arrays)
    idx = np.flatnonzero(cands[plan.idx][0].static & state.fits(unit))
    return {snap.nodes[int(n)].name: float(k) for n, k in zip(idx, ctx.key(state, unit, idx), strict=True)}


# --- policy ---------------------------------------------------------------------------------------------


def test_baselines_are_greedy_only() -> None:
    assert Policy(scorer="fgd").engine == "greedy"  # auto, the default, means greedy
    assert Policy(engine="auto", scorer="first-fit").engine == "greedy"
    assert Policy(engine="greedy", scorer="best-fit").scorer == "best-fit"
    with pytest.raises(ValidationError, match="greedy baseline"):
        Policy(engine="cpsat", scorer="most-allocated")
    with pytest.raises(ValidationError):
        Policy(scorer="round-robin")  # type: ignore[arg-type]
    assert Policy().scorer == "placer" and Policy().engine == "auto"


def test_engine_names() -> None:
    assert set(BASELINES) == set(SCORERS)
    assert engine_fields("least-allocated") == {"engine": "greedy", "scorer": "least-allocated"}
    assert engine_fields("auto") == {"engine": "auto"}
    with pytest.raises(ValueError, match="unknown engine"):
        engine_fields("placer")


# --- each scorer's choice, by hand ----------------------------------------------------------------------


def test_first_fit_takes_the_first_node_that_fits() -> None:
    # dgx-h100-1 has 2 GPUs free, -2 all 8, -3 five: a 4-GPU job skips -1 and takes -2 (not the tighter -3).
    c = cluster_of(dgx_h100(3)).with_allocations(
        [_run("r1", "dgx-h100-1", list(range(6))), _run("r3", "dgx-h100-3", [0, 1, 2])]
    )
    assert _node(_place([_job("four", 4)], c, "first-fit"), "four") == "dgx-h100-2"
    assert _node(_place([_job("one", 1)], c, "first-fit"), "one") == "dgx-h100-1"
    # The first node is the emptier one: first fit still takes it, best fit takes the fuller -2.
    empty_first = cluster_of(dgx_h100(2)).allocate(_run("r", "dgx-h100-2", [0, 1, 2, 3]))
    assert _node(_place([_job("one", 1)], empty_first, "first-fit"), "one") == "dgx-h100-1"
    assert _node(_place([_job("one", 1)], empty_first, "best-fit"), "one") == "dgx-h100-2"


def test_best_fit_key_by_hand() -> None:
    # Empty DGX and L4, a 1-GPU job with 8 cores:
    #   dgx: 0.5 x (224 - 8) / 224 + 0.5 x 7000 / 8000 = 0.482143 + 0.4375 = 0.919643
    #   l4:  0.5 x (48 - 8) / 224  + 0.5 x 3000 / 8000 = 0.089286 + 0.1875 = 0.276786
    c = cluster_of(dgx_h100(1, name="dgx"), pcie_inference(1))
    keys = _keys(c, _job("j", 1, cpu_cores=8), "best-fit")
    assert keys == pytest.approx({"dgx": 0.919643, "l4": 0.276786}, abs=1e-6)
    assert _node(_place([_job("j", 1, cpu_cores=8)], c, "best-fit"), "j") == "l4"


def test_best_fit_and_most_allocated_differ_on_what_full_means() -> None:
    # DGX with 4 of 8 GPUs used, L4 with 1 of 4 used; a 1-GPU job (no CPU or memory asked).
    #   best fit (absolute, over the largest node): GPU left dgx 3000/8000, l4 2000/8000; CPU left dgx
    #     224/224, l4 48/224 -> l4 (0.5 x 0.2143 + 0.5 x 0.25 = 0.232 vs 0.5 + 0.1875 = 0.6875).
    #   most allocated (relative, over the node's own): free fraction dgx (1 + 1 + 3/8) / 3 = 0.7917,
    #     l4 (1 + 1 + 2/4) / 3 = 0.8333 -> dgx, the node with the smaller free fraction.
    #   least allocated: the opposite -> l4.
    c = cluster_of(dgx_h100(1, name="dgx"), pcie_inference(1)).with_allocations(
        [_run("a", "dgx", [0, 1, 2, 3]), _run("b", "l4", [0])]
    )
    job = _job("j", 1)
    assert _node(_place([job], c, "best-fit"), "j") == "l4"
    assert _node(_place([job], c, "most-allocated"), "j") == "dgx"
    assert _node(_place([job], c, "least-allocated"), "j") == "l4"
    most = _keys(c, job, "most-allocated")
    assert most == pytest.approx({"dgx": 19 / 24, "l4": 5 / 6})
    assert _keys(c, job, "least-allocated") == pytest.approx({k: -v for k, v in most.items()})


def test_kubernetes_scorers_count_memory_and_best_fit_does_not() -> None:
    # Two DGX: -1 runs a CPU job holding 1536 of 2048 GB, -2 a job holding 2 GPUs. A 1-GPU job:
    #   free fraction -1: (224/224 + 512/2048 + 7/8) / 3 = 0.7083; -2: (1 + 1 + 5/8) / 3 = 0.875.
    #   least allocated -> -2, most allocated -> -1; best fit (CPU and GPU only) -> -2 (5 GPUs left < 7).
    c = cluster_of(dgx_h100(2)).with_allocations(
        [_run("mem", "dgx-h100-1", [], memory_gb=1536), _run("gpu", "dgx-h100-2", [0, 1])]
    )
    job = _job("j", 1)
    assert _keys(c, job, "most-allocated") == pytest.approx({"dgx-h100-1": 17 / 24, "dgx-h100-2": 21 / 24})
    assert _node(_place([job], c, "least-allocated"), "j") == "dgx-h100-2"
    assert _node(_place([job], c, "most-allocated"), "j") == "dgx-h100-1"
    assert _node(_place([job], c, "best-fit"), "j") == "dgx-h100-2"


def test_kubernetes_scorers_skip_resources_a_node_lacks() -> None:
    # A 32-core CPU job. CPU node (no GPUs): (32/64 + 256/256) / 2 = 0.75, GPU not counted;
    # DGX: (192/224 + 1 + 1) / 3 = 0.952381.
    c = cluster_of(dgx_h100(1, name="dgx"), cpu_nodes(1))
    keys = _keys(c, _job("c", cpu_cores=32), "most-allocated")
    assert keys == pytest.approx({"dgx": 20 / 21, "cpu": 0.75})
    assert _node(_place([_job("c", cpu_cores=32)], c, "most-allocated"), "c") == "cpu"
    # Baselines do not keep GPU nodes for GPU work: least allocated puts CPU work on the DGX.
    assert _node(_place([_job("c", cpu_cores=32)], c, "least-allocated"), "c") == "dgx"


def test_fgd_keeps_a_whole_node_for_the_big_job() -> None:
    # dgx-h100-2 has 3 GPUs free, -1 all 8. The batch: a 1-GPU on-demand job (placed first) and an 8-GPU
    # spot job: target workload {1 GPU: 1/2, 8 GPUs: 1/2}. Placing the 1-GPU job
    #   on -1: the 8-GPU shape no longer fits, its fragment goes 0 -> 7000: dF = +3500;
    #   on -2: the 8-GPU shape never fitted, its fragment goes 3000 -> 2000: dF = -500.
    # FGD takes -2 and the 8-GPU job gets -1; first fit and least allocated break -1 and the big job waits.
    c = cluster_of(dgx_h100(2)).allocate(_run("r", "dgx-h100-2", [0, 1, 2, 3, 4]))
    one, eight = _job("one", 1), _job("eight", 8, cls="spot")
    assert _keys(c, one, "fgd", [one, eight]) == {"dgx-h100-1": 3500.0, "dgx-h100-2": -500.0}
    d = _place([one, eight], c, "fgd")
    assert _node(d, "one") == "dgx-h100-2" and _node(d, "eight") == "dgx-h100-1"
    for scorer in ("first-fit", "least-allocated"):
        d = _place([one, eight], c, scorer)
        assert _node(d, "one") == "dgx-h100-1" and [p.job for p in d.pending] == ["eight"]


def test_fgd_alone_in_the_batch_sees_no_fragmentation() -> None:
    # With only 1-GPU tasks in the target workload any free GPU is usable: dF = 0 everywhere, node order.
    c = cluster_of(dgx_h100(2)).allocate(_run("r", "dgx-h100-2", [0, 1, 2, 3, 4]))
    assert _keys(c, _job("one", 1), "fgd") == {"dgx-h100-1": 0.0, "dgx-h100-2": 0.0}


def test_fgd_chooses_the_gpu_of_a_share() -> None:
    # The L4 node's GPUs have 600, 800, 1000, 1000 milli free. The batch: a 200-milli share (on-demand,
    # placed first) and a 500-milli spot share: targets {200: 1/2, 500: 1/2}. The 200 share
    #   on GPU 0 leaves 400 < 500: the 500 shape's fragment grows by 400 -> dF = +200;
    #   on GPU 1 leaves 600, on GPU 2 or 3 800: nothing new is too full -> dF = 0; lowest index: GPU 1.
    # placer (and every other scorer) puts a share on the best-fitting GPU: GPU 0.
    c = cluster_of(pcie_inference(1)).with_allocations(
        [_run("a", "l4", [0], gpu_milli=400), _run("b", "l4", [1], gpu_milli=200)]
    )
    batch = [_job("small", 1, milli=200), _job("half", 1, milli=500, cls="spot")]
    d = _place(batch, c, "fgd")
    (small,) = [p for p in d.placements if p.job == "small"]
    assert small.replicas[0].gpus == [1] and small.replicas[0].gpu_milli == 200
    d = _place(batch, c, "best-fit")
    (small,) = [p for p in d.placements if p.job == "small"]
    assert small.replicas[0].gpus == [0]


def test_fragmentation_matches_the_fill_experiments_definition() -> None:
    # Same measure as scenarios/fill/policies/fgd.py (CPU there in milli-cores), on random node states.
    from placer.scenarios.fill.policies import fgd as fill

    rng = np.random.default_rng(7)
    k, g, m = 40, 8, 5
    gpu = rng.choice([0, 150, 300, 500, 700, 1000], size=(k, g))
    cpu = rng.integers(0, 64, size=k).astype(np.float64)
    access = rng.random((k, m)) < 0.8
    t = Targets(
        p=np.full(m, 1 / m),
        cpu=np.array([4.0, 8.0, 0.0, 16.0, 2.0]),
        milli=np.array([1000, 500, 0, 1000, 300]),
        num=np.array([1, 1, 0, 4, 1]),
        access=access,
    )
    theirs = fill.Targets(p=t.p, cpu=(t.cpu * 1000).astype(np.int64), milli=t.milli, num=t.num, access=access)
    expected = fill.fragmentation((cpu * 1000).astype(np.int64), gpu, access, theirs)
    assert fragmentation(cpu, gpu, access, t) == pytest.approx(expected)


def test_target_workload_weights_shapes_by_replicas() -> None:
    c = cluster_of(dgx_h100(1, name="dgx"), pcie_inference(1))
    jobs = [_job("a", 1), _job("b", 1), Job(id="c", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=2))])]
    snap = Snapshot.of(c)
    plans = [expand(j, i, max_node_gpus=8) for i, j in enumerate(jobs)]
    arrays = NodeArrays.of(snap, batch_keys([u for p in plans for u in p.units]))
    cands = {p.idx: [unit_candidates(u, arrays, nvlink=False, spot_ok=True) for u in p.units] for p in plans}
    t = target_workload(plans, cands, len(snap.nodes))
    # Two 1-GPU replicas and two 2-GPU replicas: 1/2 each.
    assert sorted(zip(t.num.tolist(), t.p.tolist(), strict=True)) == [(1, 0.5), (2, 0.5)]


def test_scorer_state_follows_greedys_changes_and_rollbacks() -> None:
    c = cluster_of(pcie_inference(2)).allocate(_run("a", "l4-1", [0], gpu_milli=400))
    snap = Snapshot.of(c)
    job = _job("s", 1, milli=250)
    plan = expand(job, 0, max_node_gpus=4)
    arrays = NodeArrays.of(snap, set())
    ctx = Context.of("best-fit", [plan], {}, arrays)
    state = State.of(arrays)
    every = np.arange(len(snap.nodes))
    assert ctx.gpus(state, every).tolist() == [[600, 1000, 1000, 1000], [1000] * 4]
    mark = state.mark()
    state.take(1, plan.units[0])  # best fit among l4-2's GPUs: GPU 0
    state.take(0, plan.units[0], share_gpu=3)
    assert ctx.gpus(state, every).tolist() == [[600, 1000, 1000, 750], [750, 1000, 1000, 1000]]
    state.rollback(mark)
    assert ctx.gpus(state, every).tolist() == [[600, 1000, 1000, 1000], [1000] * 4]


# --- every scorer: valid, deterministic -----------------------------------------------------------------


@pytest.mark.parametrize("scorer", sorted(SCORERS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches())
def test_random_batches_pass_the_checker(scorer: str, batch: list[Job]) -> None:
    with no_hang(1.0 + FUZZ_GUARD_S):
        d = place(batch, CLUSTER, Policy(scorer=scorer, time_limit_s=1.0), now=NOW)  # type: ignore[arg-type]
    assert_valid(d, batch, CLUSTER)


def test_evictions_work_under_a_baseline() -> None:
    # Both nodes run a spot job on all 8 GPUs; a reserved 8-GPU job evicts one of them (least lost work:
    # the one started later) whatever the scorer, and the checker agrees.
    from datetime import timedelta

    running = [
        {"job": f"s{i}", "priority_class": "spot", "started_at": NOW - timedelta(hours=h),
         "replicas": [{"node": f"dgx-h100-{i}", "gpus": list(range(8))}]}
        for i, h in ((1, 3), (2, 1))
    ]  # fmt: skip
    c = cluster_of(dgx_h100(2)).with_allocations(running)
    for scorer in SCORERS:
        d = _place([_job("big", 8, cls="reserved")], c, scorer)
        assert [e.job for e in d.preemptions] == ["s2"] and _node(d, "big") == "dgx-h100-2"


def _timeless(d: Decision) -> dict:
    out = d.to_json()
    for k in ("build_s", "solve_s", "wall_s"):
        out["stats"].pop(k)
    return out


@pytest.mark.parametrize("scorer", sorted(SCORERS))
def test_same_input_same_decision_in_any_order(scorer: str) -> None:
    rnd = random.Random(3)
    jobs = [
        _job(
            f"j{i}",
            rnd.choice([0, 1, 2, 4, 8]),
            cls=rnd.choice(["spot", "on-demand"]),
            cpu_cores=rnd.choice([0, 8]),
        )
        for i in range(24)
    ] + [_job(f"s{i}", 1, milli=rnd.choice([250, 500])) for i in range(6)]
    c = cluster_of(dgx_h100(3), pcie_inference(2), cpu_nodes(1)).allocate(_run("r", "dgx-h100-1", [0, 1, 2]))
    first = _timeless(_place(jobs, c, scorer))
    shuffled = list(jobs)
    rnd.shuffle(shuffled)
    assert _timeless(_place(jobs, c, scorer)) == first
    assert _timeless(_place(shuffled, c, scorer)) == first
    assert first["placements"]  # something was placed at all


def _fgd_keys_after_retarget(scorer_targets: list[Targets], c: Cluster, job: Job) -> list[np.ndarray]:
    """FGD's increases of one replica of ``job`` on every node where it fits, against each target in turn,
    all through the same arrays (so the store made for the first target serves the later ones)."""
    snap = Snapshot.of(c)
    plans = [expand(job, 0, max_node_gpus=8)]
    arrays = NodeArrays.of(snap, batch_keys(plans[0].units))
    cands = {0: [unit_candidates(u, arrays, nvlink=False, spot_ok=True) for u in plans[0].units]}
    out = []
    for t in scorer_targets:
        ctx = Context.of("fgd", plans, cands, arrays, targets=t)
        state = State.of(arrays)
        unit = plans[0].units[0]
        idx = np.flatnonzero(cands[0][0].static & state.fits(unit))
        out.append(ctx.key(state, unit, idx))
    return out


@pytest.mark.parametrize("milli", [None, 300])
def test_a_changed_target_gives_the_increases_a_fresh_count_gives(milli: int | None) -> None:
    # The store keeps fragments per target shape; a second target re-weights two of the first's shapes,
    # drops one and adds one. Its increases must be the ones counted from nothing for that target.
    c = cluster_of(pcie_inference(3), dgx_h100(2)).with_allocations(
        [
            _run("a", "l4-1", [0], gpu_milli=400),
            _run("b", "l4-2", [1, 2]),
            _run("c", "dgx-h100-1", [0, 1, 2]),
        ]
    )
    n = len(Snapshot.of(c).nodes)
    acc = np.ones((n, 3), dtype=bool)
    first = Targets(
        p=np.array([0.5, 0.3, 0.2]),
        cpu=np.array([4.0, 1.0, 8.0]),
        milli=np.array([1000, 500, 1000]),
        num=np.array([1, 1, 2]),
        access=acc,
    )
    second = Targets(
        p=np.array([0.1, 0.6, 0.3]),
        cpu=np.array([1.0, 8.0, 2.0]),
        milli=np.array([500, 1000, 250]),
        num=np.array([1, 2, 1]),
        access=acc,
    )
    assert set(first.keys) & set(second.keys) and set(second.keys) - set(first.keys)
    job = _job("x", 1, milli=milli)
    _, carried = _fgd_keys_after_retarget([first, second], c, job)
    (fresh,) = _fgd_keys_after_retarget([second], c, job)
    assert carried.tolist() == pytest.approx(fresh.tolist(), abs=1e-6)
    (stale,) = _fgd_keys_after_retarget([first], c, job)
    assert stale.tolist() != pytest.approx(fresh.tolist(), abs=1e-6)  # the targets do differ here


def test_fragments_of_replica_shapes_are_dropped_least_recent_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from placer.solver import scorers

    c = cluster_of(pcie_inference(2))
    snap = Snapshot.of(c)
    arrays = NodeArrays.of(snap, batch_keys([]))
    t = Targets(
        p=np.array([1.0]),
        cpu=np.array([1.0]),
        milli=np.array([1000]),
        num=np.array([1]),
        access=np.ones((len(snap.nodes), 1), dtype=bool),
    )
    store = scorers._Store.of(arrays, t)
    # Each shape below is given 8 columns of float32 per node and GPU; the cap holds two of them, and is
    # checked when a new shape comes (a new one holds nothing yet).
    grown = len(snap.nodes) * 4 * 8 * 4
    monkeypatch.setattr(scorers, "FRAGMENT_BYTES", 2 * grown)
    for shape in [(1.0, 0, 100), (1.0, 0, 200), (1.0, 0, 300)]:
        f = store.fragments_after(shape, len(snap.nodes), (4,))
        f.vals = np.zeros((len(snap.nodes), 4, 8), dtype=np.float32)
    store.fragments_after((1.0, 0, 100), len(snap.nodes), (4,))  # used again: now the most recent
    store.fragments_after((1.0, 0, 400), len(snap.nodes), (4,))  # over the cap: the least recent goes
    assert list(store.after) == [(1.0, 0, 300), (1.0, 0, 100), (1.0, 0, 400)]


def _target(access: np.ndarray, p: list[float], milli: list[int], num: list[int]) -> Targets:
    """A target of one-core shapes, ``milli`` per GPU on ``num`` GPUs, each weighing ``p``."""
    return Targets(
        p=np.array(p), cpu=np.ones(len(p)), milli=np.array(milli), num=np.array(num), access=access
    )


def _expected(f, t: Targets, version: np.ndarray, idx: np.ndarray, count) -> np.ndarray:  # type: ignore[no-untyped-def]
    """The nodes' expected fragments against ``t`` as the engines' kernels read a cache row by row: its
    columns selected for ``t`` (:meth:`_Fragments.kernel_args`), stale rows counted, rows weighed."""
    vals, ver, e, e_ver, *_ = f.kernel_args(t, version, count)
    p = f._p
    stale = idx[ver[idx] != version[idx]]
    if stale.size:
        count(stale, f.held, vals, 0)
        ver[stale] = version[stale]
    weigh_into(e, e_ver, vals, idx, version, p)
    return e[idx]  # type: ignore[no-any-return]


@pytest.mark.parametrize("held", [128, 2])
def test_a_shape_that_leaves_the_target_and_comes_back_counts_what_changed_meanwhile(
    held: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A learned target drops its lightest shapes and takes them back as arrivals move the weights; the
    # cache holds every shape's column (or, over its cap, starts over). Node 0 changes while shape 1 is
    # out: when shape 1 is back, node 0's expected fragment must be the definition's on its new state.
    from placer.solver import scorers

    monkeypatch.setattr(scorers, "HELD_SHAPES", held)
    cpu = np.array([8.0, 8.0, 4.0])
    gpu = np.array([[1000, 1000, 600, 0], [1000, 300, 300, 0], [1000, 1000, 1000, 1000]])
    acc = np.ones((3, 2), dtype=bool)

    a = _target(acc, [0.7, 0.3], [500, 1000], [1, 2])  # shapes (500, 1) and (1000, 2)
    b = _target(acc, [0.4, 0.6], [1000, 250], [2, 1])  # (1000, 2) kept, (500, 1) out, (250, 1) in
    f = scorers._Fragments.of(3, ())
    version = np.zeros(3, dtype=np.int64)
    idx = np.arange(3)

    def count(rows: np.ndarray, tt: Targets, out: np.ndarray, first: int) -> None:
        out[rows, first : first + tt.size] = fragments(cpu[rows], gpu[rows], tt.access[rows], tt)

    _expected(f, a, version, idx, count)
    _expected(f, b, version, idx, count)
    gpu[0] = [400, 1000, 600, 0]  # node 0 takes a share while (500, 1) is out of the target
    version[0] = 1
    _expected(f, b, version, idx, count)
    got = _expected(f, a, version, idx, count)
    assert got.tolist() == fragmentation(cpu, gpu, acc, a).tolist()
    # The keys the cache keeps by column are the held target's own, column by column (each select appends
    # the new shapes' keys rather than packing every held column again).
    assert f.keys == f.held.keys
    # By hand, node 0 against a: (500, 1) fits on GPUs 1 and 2, 400 too full; (1000, 2) finds one whole
    # GPU, so all 2000 free milli are its fragment: 0.7 x 400 + 0.3 x 2000.
    assert got[0] == pytest.approx(0.7 * 400 + 0.3 * 2000)


def test_a_shape_added_while_a_node_is_changed_is_counted_when_the_node_is_back() -> None:
    # A session's cache outlives greedy's calls: within one call greedy changes node 0 (its version ticks)
    # and the target brings shape (250, 1) while node 0 is not looked at; the next call starts from the
    # arrays' stamps again, node 0 as it was. Its fragment for the new shape must be counted, not read as
    # the 0 a column added without it holds (a session's greedy then chose another node than place()).
    from placer.solver import scorers

    cpu = np.array([8.0, 8.0, 4.0])
    gpu = np.array([[1000, 1000, 600, 100], [1000, 300, 300, 0], [1000, 1000, 1000, 1000]])
    acc = np.ones((3, 2), dtype=bool)

    a = _target(acc, [0.7, 0.3], [500, 1000], [1, 2])
    b = _target(acc, [0.4, 0.6], [1000, 250], [2, 1])  # (250, 1) is new
    f = scorers._Fragments.of(3, ())
    stamps = np.zeros(3, dtype=np.int64)

    def count(rows: np.ndarray, tt: Targets, out: np.ndarray, first: int) -> None:
        out[rows, first : first + tt.size] = fragments(cpu[rows], gpu[rows], tt.access[rows], tt)

    _expected(f, a, stamps, np.arange(3), count)  # call 1 reads every node at its stamp
    ticked = stamps.copy()
    ticked[0] = 1
    saved = gpu[0].copy()
    gpu[0] = [0, 1000, 600, 100]  # greedy takes GPU 0 of node 0 ...
    _expected(f, b, ticked, np.array([1, 2]), count)  # ... and the next unit looks at nodes 1 and 2 only
    gpu[0] = saved  # call 2: node 0 as the arrays have it, at its stamp
    got = _expected(f, b, stamps, np.arange(3), count)
    assert got.tolist() == fragmentation(cpu, gpu, acc, b).tolist()
    # By hand, node 0 against b: (1000, 2) fits on GPUs 0 and 1, so the 700 milli of GPUs 2 and 3 are its
    # fragment; (250, 1) fits, and GPU 3's 100 milli are too few for it: 0.4 x 700 + 0.6 x 100.
    assert got[0] == pytest.approx(0.4 * 700 + 0.6 * 100)
