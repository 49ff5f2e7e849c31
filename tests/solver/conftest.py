"""Fixtures for the placement tests: run :func:`placer.solver.engine.place` on both engines and check every
answer.

Why a fixture and not a helper each test calls: no placement test may forget the independent checker.
``solve(jobs, cluster)`` places the batch with the engine of the current parametrization (``engine``:
``greedy`` and ``cpsat``, so ``pytest -k greedy`` runs one engine) and fails the test when
:func:`placer.solver.checks.check` finds any violation of ``docs/placement-rules.md`` in the decision, or when
a job of the batch is not answered exactly once.

``queues`` (OJS §10 configurations: GPU and dollar budgets) and ``prices`` (catalog and tenant budgets)
go to both ``place`` and the checker, so that budgets are checked by rule 17 on every decision.

``NOW`` is the fixed decision time of every test (``not_before`` and dependencies are compared with it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from placer.solver.decision import Decision
from placer.solver.jobs.model import Job, ReadResult
from placer.topology import Cluster
from tests.support import alarm_after

if TYPE_CHECKING:
    from placer.solver.jobs.queues import QueueConfig
    from placer.solver.prices import PriceCatalog

#: The engines every engine-sensitive test runs on (``-k greedy`` selects one).
ENGINES = ("greedy", "cpsat")
#: The decision time of every placement test.
NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)

Solve = Callable[..., Decision]


def batch_jobs(items: Sequence[Job | ReadResult]) -> tuple[list[Job], list[str]]:
    """The valid jobs of a batch and the ids of those the readers refused (what the checker needs)."""
    jobs: list[Job] = []
    refused: list[str] = []
    for item in items:
        if isinstance(item, ReadResult):
            if item.ok and item.job is not None:
                jobs.append(item.job)
            else:
                refused.append(item.id)
        else:
            jobs.append(item)
    return jobs, refused


def assert_valid(
    decision: Decision,
    items: Sequence[Job | ReadResult],
    cluster: Cluster,
    now: datetime = NOW,
    *,
    queues: Mapping[str, QueueConfig] | None = None,
    prices: PriceCatalog | None = None,
) -> None:
    """Fail with every violation the independent checker finds (rules 1-17)."""
    from placer.solver.checks import check

    jobs, refused = batch_jobs(items)
    violations = check(decision, jobs, cluster, now=now, rejected_ids=refused, queues=queues, prices=prices)
    assert violations == [], "checker found violations:\n" + "\n".join(str(v) for v in violations)
    answered = (
        [p.job for p in decision.placements]
        + [p.job for p in decision.pending]
        + [r.job for r in decision.rejected]
    )
    # Rule 1: every input job id is answered exactly once (ids given twice included).
    assert sorted(answered) == sorted({j.id for j in jobs} | set(refused))


#: Seconds beyond the time limit after which a hung ``place`` call fails the test instead of hanging CI.
HANG_GUARD_S = 10.0


def no_hang(seconds: float) -> AbstractContextManager[None]:
    """Raise ``TimeoutError`` in the block after ``seconds`` of wall time (a solver stuck in a Python loop
    then fails its test with a traceback showing where, instead of hanging the whole suite)."""
    message = f"place() still running after {seconds:g} s: the deadline guarantee is broken"
    return alarm_after(seconds, message)


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> str:
    """The engine under test (``greedy`` or ``cpsat``)."""
    return str(request.param)


@pytest.fixture
def solve(engine: str) -> Solve:
    """``solve(jobs, cluster, *, now=NOW, time_limit_s=2.0, seed=0, queues=None, prices=None,
    reproducible=False, **policy_fields) -> Decision``, checked. ``reproducible`` is
    ``Policy.reproducible``: CP-SAT's answers are machine-independent only with it (``docs/solver.md``,
    *Determinism*); ``policy_fields`` are further :class:`Policy` fields."""
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    def run(
        jobs: Sequence[Job | ReadResult],
        cluster: Cluster,
        *,
        now: datetime = NOW,
        time_limit_s: float = 2.0,
        seed: int = 0,
        queues: Mapping[str, QueueConfig] | None = None,
        prices: PriceCatalog | None = None,
        reproducible: bool = False,
        **policy_fields: Any,
    ) -> Decision:
        policy = Policy(
            engine=engine, time_limit_s=time_limit_s, seed=seed, reproducible=reproducible, **policy_fields
        )
        with no_hang(time_limit_s + HANG_GUARD_S):
            decision = place(list(jobs), cluster, policy, now=now, queues=queues, prices=prices)
        assert_valid(decision, jobs, cluster, now, queues=queues, prices=prices)
        return decision

    return run


# -- small readers of a decision, shared by the test modules ---------------------------------------------


def nodes_of(decision: Decision, job: str) -> list[str]:
    """Nodes of a placed job's replicas, in replica order (fails when the job is not placed)."""
    p = decision.placement_of(job)
    assert p is not None, f"{job} is not placed: {pending_reason(decision, job)}"
    return [r.node for r in p.replicas]


def gpus_of(decision: Decision, job: str) -> list[tuple[str, int]]:
    """``(node, gpu index)`` of every GPU a placed job holds."""
    p = decision.placement_of(job)
    assert p is not None, f"{job} is not placed: {pending_reason(decision, job)}"
    return [(r.node, g) for r in p.replicas for g in r.gpus]


def pending_reason(decision: Decision, job: str) -> str | None:
    """``"CODE: message"`` of a pending job's first reason, or None when it is not pending."""
    for p in decision.pending:
        if p.job == job:
            return f"{p.reasons[0].code}: {p.reasons[0].message}" if p.reasons else "(no reason)"
    return None


def reason_codes(decision: Decision, job: str) -> list[str]:
    """Codes of all reasons of a pending job (fails when the job is not pending)."""
    for p in decision.pending:
        if p.job == job:
            return [r.code for r in p.reasons]
    raise AssertionError(f"{job} is not pending")


def without_timing(decision: Decision) -> dict[str, object]:
    """The decision JSON with the wall-clock fields removed (what must be reproducible)."""
    out = decision.to_json()
    for key in ("build_s", "solve_s", "wall_s"):
        out["stats"].pop(key, None)
    return out
