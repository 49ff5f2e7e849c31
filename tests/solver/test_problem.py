"""Phases 2-4 (``solver/problem.py``): which jobs are considered when the deadline has already passed.

The rule (``_candidates``): past the time the answer must be in hand, jobs are still considered in
priority order until one has candidates (some progress beats none), and never beyond the first
:data:`~placer.solver.problem.ALWAYS_CONSIDERED` of them. ``until`` is given as a time long past, as when
reading a 10,000-node cluster alone outlasts the limit.
"""

from __future__ import annotations

from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.solver.problem import ALWAYS_CONSIDERED, build_problem
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import NOW

CLUSTER = cluster_of(dgx_h100(4))
POLICY = Policy(engine="greedy", time_limit_s=1.0)


def _never(k: int) -> Job:
    """A job no node of CLUSTER can hold (it wants a GPU type the cluster does not have)."""
    return Job(id=f"a-never-{k:02d}", tasks=[TaskGroup(gpu=GpuDemand(count=1, types=["nvidia-b200"]))])


def _fits(k: int) -> Job:
    return Job(id=f"b-fits-{k:02d}", tasks=[TaskGroup(gpu=GpuDemand(count=1))])


def _past(_replicas: int) -> float:
    return 0.0  # perf_counter() is always later: the deadline has passed


def test_past_the_deadline_jobs_are_considered_until_one_has_candidates() -> None:
    # Priority order is submit time, then id: the three that cannot run come first.
    batch = [_never(0), _never(1), _never(2), *(_fits(k) for k in range(10))]
    problem = build_problem(batch, CLUSTER, POLICY, now=NOW, queues=None, until=_past)
    considered = {p.job.id for p in problem.plans if p.idx in problem.candidates or p.idx in problem.unsat}
    assert considered == {"a-never-00", "a-never-01", "a-never-02", "b-fits-00"}
    assert problem.cut
    assert len(problem.skipped) == 9


def test_past_the_deadline_at_most_the_first_jobs_are_looked_at_when_none_can_run() -> None:
    batch = [_never(k) for k in range(ALWAYS_CONSIDERED + 5)] + [_fits(0)]
    problem = build_problem(batch, CLUSTER, POLICY, now=NOW, queues=None, until=_past)
    assert len(problem.unsat) == ALWAYS_CONSIDERED
    assert not problem.candidates
    assert len(problem.skipped) == 5 + 1


def test_with_time_left_every_job_is_considered() -> None:
    batch = [_never(0), *(_fits(k) for k in range(10))]
    problem = build_problem(batch, CLUSTER, POLICY, now=NOW, queues=None, until=lambda _: float("inf"))
    assert (len(problem.unsat), len(problem.candidates), problem.cut) == (1, 10, False)
