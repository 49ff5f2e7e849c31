"""Large-neighbourhood search (``solver/cpsat/lns.py``): when the joint model would be too big, CP-SAT
improves greedy's answer a neighbourhood at a time, every answer checked, never below greedy's."""

from __future__ import annotations

import json

import pytest

from placer.scenarios.synthetic import fragmentation_trap, scenario_s
from placer.scenarios.synthetic.replicate import replicate
from placer.scenarios.synthetic.traps import exclusive_trap
from placer.solver.core import reproducible_rounds
from placer.solver.cpsat.parts import CpsatResult
from placer.solver.engine import place
from placer.solver.policy import Policy
from tests.solver.conftest import assert_valid


def _frozen(d: object) -> str:
    out = d.to_json()  # type: ignore[attr-defined]
    for key in ("build_s", "solve_s", "wall_s"):
        out["stats"].pop(key)
    return json.dumps(out, sort_keys=True)


def test_search_finds_what_greedy_misses_on_the_traps() -> None:
    # lns_above_size=1 sends even these small batches to the search: a neighbourhood around a job greedy
    # left pending holds its nodes and the jobs on them, solved exactly.
    # On the exclusive trap greedy places 3 of each 4 jobs; on the fragmentation trap it already reaches
    # the optimum, and the search must not lose it.
    for trap, greedy_short in ((exclusive_trap(), True), (fragmentation_trap(), False)):
        sc = replicate(trap, 3)
        greedy = place(list(sc.jobs), sc.cluster, Policy(engine="greedy"), now=sc.now)
        d = place(list(sc.jobs), sc.cluster, Policy(engine="cpsat", lns_above_size=1), now=sc.now)
        assert_valid(d, list(sc.jobs), sc.cluster, sc.now)
        assert (len(greedy.placements) < sc.optimal_placed) == greedy_short
        assert d.stats.lns_rounds is not None
        assert len(d.placements) == sc.optimal_placed
        assert d.stats.status == "FEASIBLE"  # a search proves nothing
        if greedy_short:
            assert d.stats.lns_accepted and d.stats.engine == "cpsat"


def test_search_is_never_worse_than_greedy_and_every_answer_is_checked() -> None:
    for seed in range(3):
        sc = scenario_s(seed)
        # Planning off: it may withdraw placements after the engine, on either engine's answer.
        policy = Policy(engine="auto", lns_above_size=1, time_limit_s=1.5, seed=seed, plan=False)
        d = place(list(sc.jobs), sc.cluster, policy, now=sc.now)
        assert_valid(d, list(sc.jobs), sc.cluster, sc.now)
        assert d.stats.objective is not None and d.stats.greedy_objective is not None
        assert d.stats.objective >= d.stats.greedy_objective
        assert d.stats.lns_rounds is not None


def test_reproducible_search_gives_the_same_decision() -> None:
    sc = replicate(exclusive_trap(), 4)
    policy = Policy(engine="cpsat", lns_above_size=1, reproducible=True, seed=3, time_limit_s=4.0)
    first = place(list(sc.jobs), sc.cluster, policy, now=sc.now)
    second = place(list(sc.jobs), sc.cluster, policy, now=sc.now)
    assert first.stats.lns_rounds  # the decision compared is the search's
    assert _frozen(first) == _frozen(second)


def test_budgets_keep_the_joint_model() -> None:
    # A queue budget spans the whole answer: the batch is never split into neighbourhoods.
    from placer.solver.jobs.queues import QueueConfig

    sc = replicate(exclusive_trap(), 2)
    limits = {"max_total_gpus": 100}
    queues = {"default": QueueConfig.model_validate({"queue": "default", "config": {"ml_limits": limits}})}
    d = place(list(sc.jobs), sc.cluster, Policy(engine="cpsat", lns_above_size=1), now=sc.now, queues=queues)
    assert d.stats.lns_rounds is None


def test_a_search_with_nothing_to_seed_cuts_nothing() -> None:
    # The fragmentation trap, replicated: greedy already places every job, so the search has no pending
    # job to seed a round from and stops before any. Its answer is greedy's, and no clock cut anything:
    # the decision says it is deterministic, without reproducible mode.
    sc = replicate(fragmentation_trap(), 3)
    d = place(list(sc.jobs), sc.cluster, Policy(engine="cpsat", lns_above_size=1, plan=False), now=sc.now)
    assert_valid(d, list(sc.jobs), sc.cluster, sc.now)
    assert len(d.placements) == sc.optimal_placed and d.stats.lns_rounds == 0
    assert d.stats.cut_by == [] and d.stats.deterministic is True


def _rounds_stopped(monkeypatch: pytest.MonkeyPatch, how: str) -> list[int]:
    """Make every round's solve look stopped by the wall clock (``how``: the solve's own flag, or no model
    built in time), counting the rounds."""
    import placer.solver.cpsat as cpsat

    real = cpsat.solve
    calls: list[int] = []

    def stopped(*args: object, **kwargs: object) -> CpsatResult:
        policy = args[7]
        assert isinstance(policy, Policy)
        if policy.lns_above_size:  # the joint model, found too big: not a round
            return real(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(1)
        if how == "build":
            return CpsatResult(None, "BUILD_TIMEOUT")
        res = real(*args, **kwargs)  # type: ignore[arg-type]
        res.deterministic = False
        return res

    monkeypatch.setattr(cpsat, "solve", stopped)
    return calls


@pytest.mark.parametrize("how", ["solve", "build"])
def test_a_reproducible_round_the_wall_clock_stopped_is_named(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # A round whose solve the safety net stopped (or whose model it kept from being built) found what the
    # machine's load let it find: the decision must not call itself deterministic. (The search used to
    # read only whether its rounds were all run, so a stopped round passed as reproducible.)
    sc = replicate(exclusive_trap(), 4)
    calls = _rounds_stopped(monkeypatch, how)
    policy = Policy(engine="cpsat", lns_above_size=1, reproducible=True, seed=3, time_limit_s=4.0)
    d = place(list(sc.jobs), sc.cluster, policy, now=sc.now)
    assert_valid(d, list(sc.jobs), sc.cluster, sc.now)
    assert d.stats.lns_rounds and calls
    assert d.stats.deterministic is False and "cpsat" in d.stats.cut_by


def test_reproducible_rounds_follow_the_time_limit() -> None:
    # Each counted round has a fixed deterministic budget, so a call runs the rounds its limit pays for:
    # 1.5 per second (at most 12), never more, and on this small batch none is stopped by the clock.
    sc = replicate(exclusive_trap(), 4)
    for limit, most in ((1.0, 1), (2.0, 3), (4.0, 6)):
        policy = Policy(engine="cpsat", lns_above_size=1, reproducible=True, seed=3, time_limit_s=limit)
        d = place(list(sc.jobs), sc.cluster, policy, now=sc.now)
        assert_valid(d, list(sc.jobs), sc.cluster, sc.now)
        assert 1 <= (d.stats.lns_rounds or 0) <= most == reproducible_rounds(limit)
        assert d.stats.deterministic is True and d.stats.cut_by == []
