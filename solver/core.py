"""``decide(jobs, cluster, policy) -> Decision``: one batch, one cluster, no reservations or plans around it.

The phases, each in its own module (Kueue's scheduler cycle is the model; ``docs/solver.md``):

0-1. admit — rejected and ineligible jobs out, with reasons (:mod:`placer.solver.admission`);
2-4. problem — snapshot, demand units, candidates, preferences, budgets, eviction victims, built once
     for both engines (:mod:`placer.solver.problem`);
5.   greedy — always (:mod:`placer.solver.greedy`);
6.   CP-SAT — from greedy's hint, within the time left (:mod:`placer.solver.cpsat`);
7.   choose — the better valid answer; with ``policy.verify`` the checker has the last word
     (:mod:`placer.solver.checks`);
8.   explain — the decision, with a reason for every job left pending (:mod:`placer.solver.answer`).

:func:`~placer.solver.engine.place` wraps this core with reservations, time planning and what-if hints.

The whole call returns within ``policy.time_limit_s`` plus a small overhead (``docs/solver.md``): greedy's
time counts against the limit and CP-SAT gets what is left, minus a reserve for building the answer.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.jobs.model import Job, TaskGroup, GpuDemand
>>> d = decide([Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=4))])], cluster_of(dgx_h100(1)),
...            Policy(engine="greedy"))
>>> d.placements[0].replicas[0].gpus, d.stats.engine
([0, 1, 2, 3], 'greedy')
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime

from placer.solver.admission import Admission, admit, merge_rejected
from placer.solver.answer import answer
from placer.solver.assignment import Assignment, objective
from placer.solver.bound import lp_bound, relaxation
from placer.solver.checks import check

# CP-SAT's pipeline (and OR-Tools, about 0.3 s of imports) loads with the engine, not in the first decision
# that runs it: there it came out of that call's time limit (docs/decision.md, *Deadline*).
from placer.solver.cpsat import solve
from placer.solver.cpsat.lns import improve
from placer.solver.decision import Decision, JobPlacement, Stats
from placer.solver.greedy import greedy
from placer.solver.jobs.model import Job, ReadResult
from placer.solver.jobs.queues import QueueConfig
from placer.solver.objective.score import Score, score
from placer.solver.policy import Policy
from placer.solver.prepared import Prepared
from placer.solver.problem import Problem, build_problem
from placer.topology import Cluster

__all__ = [
    "CHECK_PER_REPLICA_S",
    "LNS_REPRODUCIBLE_ROUNDS",
    "LNS_REPRODUCIBLE_ROUNDS_PER_S",
    "LP_MIN_LEFT_S",
    "LP_SHARE",
    "RESERVE_PER_REPLICA_S",
    "RESERVE_S",
    "decide",
    "probe_fit",
    "problem_status",
    "report_bound",
    "reproducible_rounds",
]

#: Seconds kept back from the time limit for turning the answer into a Decision: a fixed part (the
#: relaxation bound, ~0.03 s on 10,000 nodes, and the hints of :mod:`placer.solver.what_if`) and a part per
#: replica of the jobs with candidates (emitting and explaining grow with those, not with the batch: a job
#: never considered costs one fixed reason). Measured on scenario L: ~15 us a replica. Counting every
#: replica of the batch at 0.1 ms, as before, kept 0.65 s back there, and at a 1.5 s limit greedy then saw
#: 16 jobs of 5,000.
RESERVE_S = 0.05
RESERVE_PER_REPLICA_S = 0.00003
#: Kept back as well, per replica, when CP-SAT's answer may have to pass the checker (``policy.verify``):
#: checking scenario L's ~5,500 placed replicas takes 0.3-0.8 s.
CHECK_PER_REPLICA_S = 0.0001
#: Rounds of large-neighbourhood search in reproducible mode (each on a fixed deterministic budget,
#: ``cpsat.lns.REPRODUCIBLE_ROUND_S``): this many per second of the time limit, at least one and at most
#: :data:`LNS_REPRODUCIBLE_ROUNDS`. Why per second: a round on scenario M (1,000 nodes) takes 0.15-0.25 s
#: of wall time with its model building, after greedy's ~1.2 s; twelve rounds at a 2 s limit were stopped by
#: the wall clock on an idle machine, so the decision depended on the machine after all.
LNS_REPRODUCIBLE_ROUNDS_PER_S = 1.5
LNS_REPRODUCIBLE_ROUNDS = 12

#: At most this share of the time left for CP-SAT goes to the LP bound (:func:`placer.solver.bound.lp_bound`),
#: which only sharpens the reported gap; and only when CP-SAT gets at least ``LP_MIN_LEFT_S``.
LP_SHARE = 0.25
LP_MIN_LEFT_S = 0.3


def decide(
    jobs: Sequence[Job | ReadResult],
    cluster: Cluster,
    policy: Policy | None = None,
    *,
    now: datetime | None = None,
    queues: Mapping[str, QueueConfig] | None = None,
    reserved_ok: frozenset[str] = frozenset(),
    prepared: Prepared | None = None,
) -> Decision:
    """The core of :func:`~placer.solver.engine.place`, without reservations: jobs naming a reservation
    outside ``reserved_ok`` are rejected (it does not exist for this call). ``policy.prices`` (default
    catalog when None) prices the cost term and the dollar budgets of ``queues`` and of the tenants it
    names. ``prepared``: pieces kept for this cluster between calls (a :class:`~placer.solver.session.
    Session`'s); the decision is the same without them."""
    t0 = time.perf_counter()
    policy = policy or Policy()
    now = now or datetime.now(UTC)

    def until(replicas: int) -> float:
        """When the answer must be in hand, given the replicas of the jobs considered."""
        return t0 + policy.time_limit_s - RESERVE_S - RESERVE_PER_REPLICA_S * replicas

    # 0-1. admit
    admission = admit(jobs, cluster, now, reserved_ok)
    # 2-4. problem
    problem = build_problem(
        admission.eligible, cluster, policy, now=now, queues=queues, until=until, prepared=prepared
    )
    # 5. greedy: it runs on as long as the answer for what was considered can still be built in time.
    deadline = until(problem.considered)
    greedy_best = _greedy(problem, policy, deadline)
    stats = Stats(engine="greedy", status="FEASIBLE", seed=policy.seed, deterministic=True)
    stats.greedy_objective = float(objective(greedy_best, problem.plans))
    stats.objective = stats.greedy_objective
    bounds: list[tuple[float, str]] = [(_relaxation(problem, greedy_best), "relaxation")]
    # 6. CP-SAT: its answer must also leave time for the checker.
    cpsat_deadline = deadline - (CHECK_PER_REPLICA_S * problem.considered if policy.verify else 0.0)
    bounds += _lp_bound(problem, policy, greedy_best, cpsat_deadline, stats)
    best, solve_s, proven = _cpsat(problem, policy, greedy_best, stats, cpsat_deadline, bounds)
    stats.objective = float(objective(best, problem.plans))
    # 7-8. choose and explain
    decision = _explained(problem, best, admission, policy)
    if policy.verify and stats.engine == "cpsat":
        # The whole decision is checked, rejected jobs included: they are the input's too, and must not
        # make a valid answer look invalid.
        violations = check(
            decision,
            [*admission.admitted],
            cluster,
            now=now,
            queues=queues,
            prices=problem.prices,
            reservations=reserved_ok,
            rejected_ids={r.job for r in decision.rejected},
        )
        if violations:  # never trust the solver's own word: greedy's answer stands
            decision = _explained(problem, greedy_best, admission, policy)
            stats.engine = "greedy"
            stats.status = f"CPSAT_REJECTED_BY_CHECKER: {violations[0].message}"[:300]
            stats.objective = stats.greedy_objective
            stats.levels = stats.greedy_levels
    if stats.engine == "cpsat" and best is not greedy_best:
        decision._greedy_answer = lambda: _explained(problem, greedy_best, admission, policy)
    report_bound(stats, bounds)
    stats.status = problem_status(stats, proven)
    # Determinism: every phase cut by the wall clock is named; any of them makes the decision depend on
    # the machine (CP-SAT's own search counts only in reproducible mode, with a deterministic budget).
    if problem.cut:
        stats.cut_by.insert(0, "candidates")
    if greedy_best.skipped:
        stats.cut_by.insert(1 if problem.cut else 0, "greedy")
    stats.cut_by = list(dict.fromkeys(stats.cut_by))  # a phase is named once, however often it was cut
    stats.deterministic = not stats.cut_by
    stats.build_s = round(problem.build_s, 6)
    stats.solve_s = round(solve_s, 6)
    stats.wall_s = round(time.perf_counter() - t0, 6)
    decision.stats = stats
    decision._levels_of = frozenset(p.job for p in decision.placements)
    return decision


def probe_fit(
    job: Job, cluster: Cluster, policy: Policy, now: datetime, seconds: float
) -> JobPlacement | None:
    """Where ``job`` alone would go on ``cluster`` at ``now``: one greedy decision, no evictions and no
    re-check, within ``seconds`` (at least 0.05). The fit test of time planning and of preemptibility
    hints, which ask it many times per decision."""
    quick = policy.model_copy(
        update={"engine": "greedy", "time_limit_s": max(0.05, seconds), "preemption": False, "verify": False}
    )
    d = decide([job], cluster, quick, now=now)
    return d.placements[0] if d.placements else None


def reproducible_rounds(time_limit_s: float) -> int:
    """Rounds of large-neighbourhood search a reproducible call runs (:data:`LNS_REPRODUCIBLE_ROUNDS_PER_S`).

    >>> reproducible_rounds(0.5), reproducible_rounds(2.0), reproducible_rounds(5.0), reproducible_rounds(60)
    (1, 3, 7, 12)
    """
    return max(1, min(LNS_REPRODUCIBLE_ROUNDS, int(time_limit_s * LNS_REPRODUCIBLE_ROUNDS_PER_S)))


def _budgeted(problem: Problem) -> bool:
    """Whether a queue or dollar budget, or a throttle, applies, or a job takes domains alone (exclusive
    slices), or jobs are kept apart on a zone or rack or count each other's topology spread: they span the
    whole answer, so a neighbourhood cannot be searched on its own."""
    return (
        problem.budgets.active
        or any(u.exclusive_domains for p in problem.plans for u in p.units)
        or any(p.anti_domains for p in problem.plans)  # pairs kept apart span neighbourhoods (apart.py)
        or any(p.job.placement.spread_required or p.starts for p in problem.plans)  # and spread, starters
    )


def _lns(
    problem: Problem,
    policy: Policy,
    greedy_best: Assignment,
    stats: Stats,
    cpsat_deadline: float,
    bounds: list[tuple[float, str]],
) -> tuple[Assignment, float]:
    """Phase 6 when the joint model is too big (node classes x node units above
    ``Policy.lns_above_size``): CP-SAT on neighbourhoods of greedy's answer (:mod:`placer.solver.cpsat.lns`).
    Each round's model is exact on its neighbourhood but the search is not a proof: the status is
    ``FEASIBLE``, the bound the relaxation's or the LP's. In reproducible mode the search runs a fixed
    number of rounds on deterministic budgets; a wall clock that stops it earlier is named in ``cut_by``."""
    t0 = time.perf_counter()
    result = improve(
        problem.plans,
        problem.candidates,
        problem.prefs,
        problem.anti,
        problem.arrays,
        problem.spot_ok,
        greedy_best,
        policy,
        lambda a: score(a, problem),
        deadline=cpsat_deadline,
        victims=problem.victims,
        pricing=problem.pricing,
        max_rounds=reproducible_rounds(policy.time_limit_s) if policy.reproducible else None,
        bound=min((b for b, _ in bounds), default=None),
    )
    stats.status = stats.model_status = "FEASIBLE"
    stats.lns_rounds, stats.lns_accepted = result.rounds, result.accepted
    # A search that ran no round (greedy left no job pending that could run: nothing to seed one) was cut
    # by no clock, and its answer is greedy's; otherwise a clock ended it unless counted rounds did.
    if result.cut or (result.rounds and not policy.reproducible):
        stats.cut_by.append("cpsat")
    best = result.assignment
    best.skipped = set(greedy_best.skipped)
    if result.accepted:
        stats.engine = "cpsat"
    _weighed(stats, result.score, result.start_score)
    return best, time.perf_counter() - t0


def _weighed(stats: Stats, chosen: Score, greedy: Score) -> None:
    """``stats.levels`` and ``stats.greedy_levels``: the two answers' scores, level by level."""
    stats.levels, stats.greedy_levels = asdict(chosen), asdict(greedy)


def _one_replica(problem: Problem, greedy_best: Assignment) -> bool:
    """Whether the batch is one replica on a node and greedy's answer leaves no eviction to weigh: greedy
    then picks the node that is best on the objective's levels in order, among all candidates, and CP-SAT
    cannot score higher (the online case: one arrival per call). With running jobs that may be evicted,
    that holds when greedy placed the replica without evicting: any answer that evicts is worse on level
    2, and one that leaves it pending worse on level 1. When greedy evicted, or could not place it, CP-SAT
    may find cheaper evictions or a placement greedy's eviction order missed."""
    if len(problem.candidates) != 1:
        return False
    if problem.victims and (not greedy_best.placed or greedy_best.evictions):
        return False
    (p,) = problem.candidates
    units = problem.plans[p].units
    if len(units) != 1:
        return False
    (u,) = units
    return u.replicas == 1 and u.tpu is None and u.count_range is None


def _explained(problem: Problem, assignment: Assignment, admission: Admission, policy: Policy) -> Decision:
    """Phase 8: the decision ``assignment`` stands for, pending and rejected jobs in id order."""
    decision = answer(problem, assignment, admission, policy.time_limit_s)
    decision.pending.sort(key=lambda p: p.job)
    decision.rejected = merge_rejected(decision.rejected)
    decision._weights = {p.id: p.weight for p in problem.plans}
    return decision


def _greedy(problem: Problem, policy: Policy, deadline: float) -> Assignment:
    """Phase 5; jobs greedy had no time for join the skipped ones."""
    best = greedy(
        problem.plans,
        problem.candidates,
        problem.prefs,
        problem.anti,
        problem.arrays,
        problem.spot_ok,
        problem.greedy_order(),
        deadline=deadline,
        victims=problem.victims,
        budgets=problem.budgets,
        pricing=problem.pricing,
        scorer=policy.scorer,
        targets=problem.targets,
        preferred_affinity=problem.preferred_affinity,
    )
    problem.skipped |= {i for i in best.skipped if i not in best.placed}
    return best


def _relaxation(problem: Problem, greedy_best: Assignment) -> float:
    """:func:`~placer.solver.bound.relaxation` of the problem, without computing it when greedy placed
    every job that has candidates (a one-arrival decision, mostly): the relaxation takes each job at most
    whole, so it is then the sum of their weights — what it would return, since a valid bound is never
    below what was placed (``tests/solver/test_bound.py`` compares both)."""
    if not problem.skipped and all(i in greedy_best.placed for i in problem.candidates):
        by_idx = {p.idx: p for p in problem.plans}
        return float(sum(by_idx[i].weight for i in problem.candidates))
    return relaxation(problem)


def report_bound(stats: Stats, bounds: list[tuple[float, str]]) -> None:
    """``stats.bound``: the least of the upper bounds proven (relaxation, LP, an exact CP-SAT model) that
    the decision's objective does not exceed, and where it came from. A bound below the objective of a
    checked answer is wrong — a bug, named in ``bound_error`` and never clamped up to look valid."""
    for name, value in bound_fields(stats.objective, bounds).items():
        setattr(stats, name, value)


def bound_fields(objective: float | None, bounds: list[tuple[float, str]]) -> dict[str, object]:
    """The fields :func:`report_bound` sets, for a decision of level-1 ``objective``: ``bound``,
    ``bound_source`` and ``gap``, and ``bound_error`` when a bound is wrong (a :class:`Stats` made with
    them in one call, as the express lane makes its own, skips a validated assignment per field).

    >>> bound_fields(90.0, [(100.4, "relaxation"), (95.0, "lp")])
    {'bound': 95.0, 'bound_source': 'lp', 'gap': 0.05263157894736842}
    """
    objective_value = objective or 0.0
    # Level 1 sums integer weights, so a bound B proves floor(B) too; rounding (with a hair for the LP's
    # float noise: 1399.9999999999998 proves 1400) keeps a proven optimum's gap exactly 0.
    bounds = [(float(math.floor(b + 1e-6)), s) for b, s in bounds]
    valid = [(b, s) for b, s in bounds if b >= objective_value - 1e-6]
    wrong = [(b, s) for b, s in bounds if b < objective_value - 1e-6]
    out: dict[str, object] = {"bound": None, "bound_source": None, "gap": None}
    if valid:
        bound, source = min(valid)
        out = {
            "bound": bound,
            "bound_source": source,
            "gap": 0.0 if bound == 0 else (bound - objective_value) / bound,
        }
    if wrong:
        out["bound_error"] = "; ".join(
            f"the {s} bound {b:g} is below the objective {objective_value:g} of a checked answer"
            for b, s in wrong
        )
    return out


#: Model statuses that come with an answer of the model: the problem's status is then OPTIMAL or FEASIBLE.
_ANSWERED = ("OPTIMAL", "FEASIBLE")


def problem_status(stats: Stats, proven: bool) -> str:
    """The problem's status (``stats.status``), which is not the model's (``stats.model_status``).

    ``OPTIMAL`` only when the decision is proven optimal for the problem: a valid bound equals its level-1
    objective (gap 0), and an exact model proved its levels up to preferences (eviction cost, preferences)
    optimal, so the kept answer, which scores at least as high as the model's, is optimal on them too. A
    model solved to optimality over an approximation (``model_exact: false``) proves nothing about the
    problem, and a greedy answer with gap 0 is proven on level 1 only: both are ``FEASIBLE``. When the
    model gave no answer, its status is the reason (``NO_TIME``, ``BUILD_TIMEOUT``, ``UNKNOWN``,
    ``REALIZE_FAILED``...), and a checker rejection keeps its message.

    >>> problem_status(Stats(status="OPTIMAL", model_status="OPTIMAL", gap=0.25), proven=False)
    'FEASIBLE'
    >>> problem_status(Stats(status="OPTIMAL", model_status="OPTIMAL", gap=0.0), proven=True)
    'OPTIMAL'
    >>> problem_status(Stats(status="NO_TIME", model_status="NO_TIME", gap=0.0), proven=False)
    'NO_TIME'
    """
    if stats.status.startswith("CPSAT_REJECTED_BY_CHECKER") or stats.model_status is None:
        return stats.status
    if stats.model_status not in _ANSWERED:
        return stats.model_status
    return "OPTIMAL" if proven and stats.gap == 0.0 else "FEASIBLE"


def _lp_bound(
    problem: Problem, policy: Policy, greedy_best: Assignment, cpsat_deadline: float, stats: Stats
) -> list[tuple[float, str]]:
    """The LP relaxation's bound, when there is time for it. It costs ~0.05 s on 1,000 nodes and ~0.6 s
    on 10,000: worth it when CP-SAT will run, not on the greedy fast path, and only within a share of
    CP-SAT's time (it sharpens the gap, nothing more).

    Under ``Policy.reproducible`` it is always computed when CP-SAT will run, with only CP-SAT's deadline
    as a safety net (``cpsat`` in ``stats.cut_by`` when that stops it): the bound is part of the decision
    (``stats.bound``, ``gap``) and ends the neighbourhood search once its level 1 is reached, so whether
    there is one must not depend on how much wall time the machine left."""
    left = cpsat_deadline - time.perf_counter()
    if policy.engine == "greedy" or not problem.candidates:
        return []
    if not policy.reproducible and left <= LP_MIN_LEFT_S:
        return []
    if policy.engine == "auto" and _one_replica(problem, greedy_best):
        return []  # CP-SAT will not run (see _cpsat): the relaxation bound stands
    lp_deadline = cpsat_deadline if policy.reproducible else time.perf_counter() + LP_SHARE * left
    lp = lp_bound(
        problem.plans, problem.candidates, problem.arrays, victims=problem.victims, deadline=lp_deadline
    )
    if lp is None and policy.reproducible and time.perf_counter() >= lp_deadline - 0.05:
        stats.cut_by.append("cpsat")  # the safety net stopped it: a faster machine would have a bound
    return [] if lp is None else [(lp, "lp")]


def _cpsat(
    problem: Problem,
    policy: Policy,
    greedy_best: Assignment,
    stats: Stats,
    cpsat_deadline: float,
    bounds: list[tuple[float, str]],
) -> tuple[Assignment, float, bool]:
    """Phase 6 and the engines' half of phase 7: CP-SAT from greedy's hint, and whichever answer scores
    higher on the one objective (:func:`~placer.solver.objective.score.score`). Returns the better answer,
    CP-SAT's solve time and whether its model proved its levels (:func:`problem_status`); an exact model's
    bound joins ``bounds``."""
    if policy.engine == "greedy" or not problem.candidates:
        return greedy_best, 0.0, False
    if policy.engine == "auto" and _one_replica(problem, greedy_best):
        return greedy_best, 0.0, False  # greedy's node is already the best on every level the model has
    if cpsat_deadline - time.perf_counter() <= 0.05:
        stats.cut_by.append("cpsat")  # no time was left for it: a faster machine would have run it
        return greedy_best, 0.0, False
    result = solve(
        problem.plans,
        problem.candidates,
        problem.prefs,
        problem.anti,
        problem.arrays,
        problem.spot_ok,
        greedy_best,
        policy.model_copy(update={"lns_above_size": 0}) if _budgeted(problem) else policy,
        deadline=cpsat_deadline,
        victims=problem.victims,
        budgets=problem.budgets,
        pricing=problem.pricing,
    )
    problem.build_s += result.build_s
    if result.status == "TOO_BIG":
        stats.node_classes = result.classes
        best, solve_s = _lns(problem, policy, greedy_best, stats, cpsat_deadline, bounds)
        return best, solve_s, False
    stats.status = stats.model_status = result.status
    stats.model_bound = result.bound
    stats.model_exact = result.exact
    stats.model_approximations = result.approximations
    stats.model_variables = result.variables
    stats.model_constraints = result.constraints
    stats.node_classes = result.classes
    # Reproducible unless the wall clock, not the deterministic budget, cut the model short.
    if not (policy.reproducible and result.deterministic and result.status != "BUILD_TIMEOUT"):
        stats.cut_by.append("cpsat")  # wall-clock limits, or a build the wall clock stopped
    best = greedy_best
    if result.assignment is not None:
        mine, greedy_score = score(result.assignment, problem), score(greedy_best, problem)
        if mine > greedy_score:
            best = result.assignment
            stats.engine = "cpsat"
        _weighed(stats, mine if best is not greedy_best else greedy_score, greedy_score)
    # CP-SAT's bound is a bound on the real problem only when its model is exact.
    if result.exact and result.bound is not None:
        bounds.append((result.bound, "cpsat"))
    return best, result.solve_s, result.proven
