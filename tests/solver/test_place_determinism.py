"""Determinism: ``place`` is a pure function of (jobs, cluster, policy, now) — the same input twice, and
the same batch in another order, give the identical decision JSON except the timing fields
(``stats.build_s``, ``solve_s``, ``wall_s``).

As ``docs/solver.md`` (*Determinism*) promises: always for greedy, and for CP-SAT with
``Policy(reproducible=True)`` (one worker, deterministic time). Two parallel CP-SAT workers may return
different optimal solutions among equals, so every call here asks for the reproducible mode.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from placer.solver.engine import place
from placer.solver.jobs import read_files
from placer.solver.jobs.model import GpuDemand, Job, ReadResult, TaskGroup, TpuDemand
from placer.solver.policy import Policy
from placer.topology import cluster_of, cpu_nodes, dgx_h100, pcie_inference, tpu_pod
from placer.topology.load import load_cluster
from tests.solver.conftest import NOW, Solve, without_timing
from tests.solver.test_session import EFA
from tests.solver.test_session import _cluster as session_cluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_batch() -> list[ReadResult]:
    return read_files(sorted((EXAMPLES / "jobs").iterdir()))


def contended_batch() -> list[Job]:
    """Twelve equal-priority jobs competing for less room than they need, so tie-breaks matter."""
    jobs: list[Job] = []
    for i in range(6):
        jobs.append(Job(id=f"gpu-{i}", tasks=[TaskGroup(cpu_cores=8, gpu=GpuDemand(count=4))]))
    for i in range(3):
        jobs.append(Job(id=f"cpu-{i}", tasks=[TaskGroup(cpu_cores=40)]))
    for i in range(3):
        jobs.append(Job(id=f"tpu-{i}", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(2, 4)))]))
    return jobs


CONTENDED = cluster_of(dgx_h100(2), pcie_inference(1), cpu_nodes(2), tpu_pod("v5e", shape=(4, 4)))


def test_same_input_twice_gives_the_same_decision(solve: Solve) -> None:
    c = load_cluster(EXAMPLES / "clusters" / "h100-training.yaml")
    first = solve(example_batch(), c, seed=7, reproducible=True)
    second = solve(example_batch(), c, seed=7, reproducible=True)
    assert without_timing(first) == without_timing(second)


def test_same_contended_input_twice(solve: Solve) -> None:
    first = solve(contended_batch(), CONTENDED, reproducible=True)
    second = solve(contended_batch(), CONTENDED, reproducible=True)
    assert without_timing(first) == without_timing(second)
    assert first.pending, "the batch is meant to be contended"


@pytest.mark.parametrize("shuffle_seed", [1, 2, 3])
def test_shuffled_batch_order_gives_the_same_decision(solve: Solve, shuffle_seed: int) -> None:
    batch = contended_batch()
    reference = solve(batch, CONTENDED, reproducible=True)
    shuffled = list(batch)
    random.Random(shuffle_seed).shuffle(shuffled)
    assert [j.id for j in shuffled] != [j.id for j in batch]
    assert without_timing(solve(shuffled, CONTENDED, reproducible=True)) == without_timing(reference)


def test_shuffled_example_batch_gives_the_same_decision(solve: Solve) -> None:
    c = load_cluster(EXAMPLES / "clusters" / "h100-training.yaml")
    batch = example_batch()
    reference = solve(batch, c, reproducible=True)
    shuffled = list(reversed(batch))
    assert without_timing(solve(shuffled, c, reproducible=True)) == without_timing(reference)


def test_equal_jobs_tie_break_does_not_depend_on_batch_position(solve: Solve) -> None:
    # The smallest reproduction: two identical 8-GPU jobs, one DGX. Whichever wins, it must be the same
    # one in both batch orders, and the pending list must be the same.
    a = Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    b = Job(id="b", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    c = cluster_of(dgx_h100(1))
    ab, ba = solve([a, b], c, reproducible=True), solve([b, a], c, reproducible=True)
    assert [p.job for p in ab.placements] == [p.job for p in ba.placements]
    assert without_timing(ab) == without_timing(ba)


def test_a_reproducible_answer_does_not_depend_on_how_long_building_took(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Under load the model takes longer to build. A reproducible run budgets its solve stages in
    # deterministic time, a fixed share of the limit, so a slow build must not change the answer.
    import time

    from placer.solver.cpsat import reduce as model
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    policy = Policy(engine="cpsat", time_limit_s=4.0, reproducible=True)
    first = place(contended_batch(), CONTENDED, policy, now=NOW)
    build = model.Builder.build

    def slow_build(self: model.Builder) -> object:
        time.sleep(0.8)
        return build(self)

    monkeypatch.setattr(model.Builder, "build", slow_build)
    second = place(contended_batch(), CONTENDED, policy, now=NOW)
    assert first.stats.status == second.stats.status == "OPTIMAL"  # the model ran both times
    assert first.stats.deterministic and second.stats.deterministic
    assert without_timing(first) == without_timing(second)


def test_a_reproducible_run_cut_by_the_wall_clock_says_it_is_not_deterministic(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # When the machine is so slow that the deadline arrives before the deterministic budget is spent, the
    # answer may differ from an idle machine's: the decision must say so rather than claim reproducibility.
    import time

    from placer.solver.cpsat import reduce as model
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    build = model.Builder.build

    def build_past_the_deadline(self: model.Builder) -> object:
        time.sleep(max(0.0, self.deadline - time.perf_counter()))
        return build(self)

    monkeypatch.setattr(model.Builder, "build", build_past_the_deadline)
    d = place(contended_batch(), CONTENDED, Policy(engine="cpsat", time_limit_s=2.0, reproducible=True))
    assert d.placements, "greedy's answer still stands"
    assert d.stats.deterministic is False
    assert "cpsat" in d.stats.cut_by


def test_a_reproducible_bound_does_not_depend_on_the_time_left(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The LP bound is part of the decision (stats.bound, gap) and ends the neighbourhood search once level 1
    # reaches it. Outside reproducible mode it is computed only when enough wall time is left; a reproducible
    # run must compute it whatever the machine left. Here no wall time ever counts as enough.
    from placer.scenarios.synthetic import scenario_s
    from placer.solver import core
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    sc = scenario_s(0)

    def run(reproducible: bool) -> object:
        policy = Policy(time_limit_s=4.0, reproducible=reproducible, seed=3, plan=False)
        return place(list(sc.jobs), sc.cluster, policy, now=sc.now)

    idle = run(True)
    monkeypatch.setattr(core, "LP_MIN_LEFT_S", 1e9)
    assert run(False).stats.bound_source != "lp"  # the patch starves the wall-clock rule of time
    starved = run(True)
    assert idle.stats.bound_source == starved.stats.bound_source == "lp"
    assert starved.stats.deterministic and without_timing(idle) == without_timing(starved)


def test_a_planning_cut_by_the_wall_clock_is_named(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Planning that the deadline stops (here: every fit finds the clock past it) changes which jobs get a
    # plan with the machine's speed: cut_by names it and deterministic is false, even in greedy.
    from datetime import timedelta

    import placer.solver.planning
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    monkeypatch.setattr(placer.solver.planning, "probe_fit", lambda *a, **k: None)
    busy = [
        {
            "job": f"r{i}",
            "expected_end": NOW + timedelta(hours=1),
            "replicas": [{"node": n, "gpus": list(range(8))}],
        }
        for i, n in enumerate(["dgx-h100-1", "dgx-h100-2"])
    ]
    c = cluster_of(dgx_h100(2)).with_allocations(busy)
    job = Job(id="waits", duration_s=3600, tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    d = place([job], c, Policy(engine="greedy", time_limit_s=2.0), now=NOW)
    assert d.placement_of("waits") is None
    assert d.stats.cut_by == [] and d.stats.deterministic  # no fit found in time is not a cut: none ran late

    real_time = placer.solver.planning.time.perf_counter
    calls = {"n": 0}

    class LateClock:
        @staticmethod
        def perf_counter() -> float:
            calls["n"] += 1
            return real_time() + (100.0 if calls["n"] > 2 else 0.0)  # the planning deadline has passed

    monkeypatch.setattr(placer.solver.planning, "time", LateClock)
    d = place([job], c, Policy(engine="greedy", time_limit_s=2.0), now=NOW)
    assert "planning" in d.stats.cut_by and d.stats.deterministic is False


def test_stats_follow_the_final_placements() -> None:
    # Two on-demand 1-GPU jobs weigh 10 (class) x 10 (tenths of a GPU) = 100 each. When a later step
    # (backfill) withdraws one placement, recount makes the objective that of what is still placed.
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    jobs = [Job(id=f"j{i}", tasks=[TaskGroup(gpu=GpuDemand(count=1))]) for i in range(2)]
    d = place(jobs, cluster_of(dgx_h100(1)), Policy(engine="greedy"), now=NOW)
    assert d.stats.objective == 200
    d.placements = d.placements[:1]
    d.recount()
    assert d.stats.objective == 100
    assert d.stats.gap == pytest.approx((d.stats.bound - 100) / d.stats.bound)


def test_cpsats_bound_is_the_whole_number_level_1_proves() -> None:
    # Level 1 sums integer weights. One CP-SAT worker on the same model reported its float bound as
    # 1519.0 or 1519.0000000000002 from call to call (found by tests/solver/test_session.py, on its
    # cluster): the same input must give the same stats, so the bound is the whole number it proves.
    cluster = session_cluster()
    jobs = [
        Job(
            id="j2",
            priority_class="spot",
            tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1, share_milli=500))],
        ),  # type: ignore[arg-type]
        Job(id="j3", priority_class="spot", tasks=[TaskGroup(cpu_cores=22)]),  # type: ignore[arg-type]
        Job(
            id="j4",
            priority_class="reserved",
            tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1), extra={EFA: 8})],
        ),  # type: ignore[arg-type]
        Job(id="j5", priority_class="on-demand", tasks=[TaskGroup(cpu_cores=1, gpu=GpuDemand(count=5))]),  # type: ignore[arg-type]
    ]
    decisions = [place(jobs, cluster, Policy(time_limit_s=5, reproducible=True), now=NOW) for _ in range(8)]
    bounds = [d.stats.model_bound for d in decisions]
    assert all(b is not None and b == int(b) for b in bounds), bounds
    assert len({str(without_timing(d)) for d in decisions}) == 1
