"""Per-node rules on nodes with eviction candidates: greedy's answer is a solution of the model.

Nodes holding running jobs that may be evicted are modelled one by one (``y[u, n]``, capacity rows per
priority level). Units with per-node rules other than one-per-node — exclusive nodes, anti-affinity with
other jobs of the batch — used to be kept off them, while greedy evicts for such jobs: on scenario M greedy
put 137 of them there, so CP-SAT's model (and its bound) stayed below greedy's answer and its time was
spent for nothing. Now they are offered those nodes with constraints of their own (``_node_rules``).

Each test is a small CPU cluster. Job weights (``Policy.job_weight``): class weight (on-demand 10) x
(1 + priority / 100) x tenths of a 16-core unit, so an on-demand job of 8 cores at priority 0 weighs
10 x 1 x 5 = 50. Running jobs of other jobs' size are CPU-only, so every eviction costs nothing: answers
differ on placed weight only.

To check CP-SAT's own answer, not only the decision, ``cpsat_taken`` makes the engine take CP-SAT's
answer also when it only ties greedy's (as if it were better on eviction cost and preferences): the
engine then re-checks it with the independent checker, and ``place_cpsat`` asserts that it passed.
``hint_status`` solves a copy of the model with every variable fixed to greedy's hint: FEASIBLE or
OPTIMAL says greedy's answer is a solution of the model, which CP-SAT then starts from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest
from ortools.sat.python import cp_model

import placer.solver.core
import placer.solver.cpsat
from placer.solver.assignment import objective
from placer.solver.cpsat import CpsatResult
from placer.solver.cpsat.model import Model as _Built
from placer.solver.decision import Decision
from placer.solver.jobs.model import Job, LabelRule, Placement, TaskGroup
from placer.topology import Cluster, cluster_of, cpu_nodes
from tests.solver.conftest import nodes_of
from tests.solver.cpsat.test_sound_answers import place_cpsat


@pytest.fixture
def cpsat_taken(monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """CP-SAT's answer wins ties on placed weight, so the checker sees it (as if it threw less work away
    by evictions); records its objective (``own``)."""
    seen: dict[str, float] = {}
    real = placer.solver.cpsat.solve
    real_score = placer.solver.core.score

    def solve(plans: list[Any], *args: Any, **kwargs: Any) -> CpsatResult:
        result = real(plans, *args, **kwargs)
        if result.assignment is not None:
            seen["own"] = float(objective(result.assignment, plans))
        return result

    def score(assignment: Any, problem: Any) -> Any:
        s = real_score(assignment, problem)
        return replace(s, eviction=math.inf) if assignment.engine == "cpsat" else s

    monkeypatch.setattr(placer.solver.core, "solve", solve)  # the name the engine calls
    monkeypatch.setattr(placer.solver.core, "score", score)
    return seen


@pytest.fixture
def hint_status(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Per model built, the status of a copy of it with every variable fixed to greedy's hint."""
    statuses: list[str] = []
    real = _Built.run

    def run(self: _Built, build_s: float) -> CpsatResult:
        fixed = self.m.Clone()
        for v, value in self.hint_values.items():
            fixed.add(fixed.get_int_var_from_proto_index(v.index) == value)
        s = cp_model.CpSolver()
        s.parameters.max_time_in_seconds = 5.0
        statuses.append(s.status_name(s.solve(fixed)))
        return real(self, build_s)

    monkeypatch.setattr(_Built, "run", run)
    return statuses


def web(job_id: str, cores: float = 8, priority: int = 0) -> Job:
    """A replica that avoids every job labelled ``app=web``, itself included (OJS ML §7.3)."""
    rule = LabelRule(key="app", operator="In", values=["web"])  # type: ignore[arg-type]
    return Job(
        id=job_id,
        labels={"app": "web"},
        priority=priority,
        tasks=[TaskGroup(cpu_cores=cores)],
        placement=Placement(anti_affinity=[rule]),
    )


def plain(job_id: str, cores: float, priority: int = 0, **kw: Any) -> Job:
    return Job(id=job_id, priority=priority, tasks=[TaskGroup(cpu_cores=cores)], **kw)


def running(job: str, node: str, cores: float, **kw: Any) -> dict[str, Any]:
    return {"job": job, "replicas": [{"node": node, "cpu_cores": cores}], **kw}


def cluster(cores: float, *jobs: dict[str, Any]) -> Cluster:
    return cluster_of(cpu_nodes(2, cpu_cores=cores)).with_allocations(list(jobs))


def solved(jobs: Sequence[Job], c: Cluster) -> Decision:
    d = place_cpsat(jobs, c)
    return d


def test_anti_affinity_jobs_evict_and_stay_apart(
    cpsat_taken: dict[str, float], hint_status: list[str]
) -> None:
    # Two 16-core nodes, each full with a spot job. Three web replicas of 8 cores (50 each) avoid each
    # other. Greedy: web-1 evicts low-1 and takes cpu-1, web-2 may not join it and evicts low-2 for cpu-2,
    # web-3 has no node left: 100. The model used to offer the web jobs neither node (both hold eviction
    # candidates): its bound was 0. Without the anti-affinity rows it would put two web jobs on one node
    # (150), which the checker rejects.
    c = cluster(
        16,
        running("low-1", "cpu-1", 16, priority_class="spot"),
        running("low-2", "cpu-2", 16, priority_class="spot"),
    )
    d = solved([web("web-1"), web("web-2"), web("web-3")], c)
    assert hint_status == ["OPTIMAL"]
    assert d.stats.greedy_objective == 100
    assert d.stats.model_bound is not None and d.stats.model_bound >= 100
    assert cpsat_taken["own"] == 100
    assert d.stats.engine == "cpsat"
    placed = sorted(p.job for p in d.placements)
    assert len(placed) == 2
    assert sorted(n for j in placed for n in nodes_of(d, j)) == ["cpu-1", "cpu-2"]
    assert sorted(e.job for e in d.preemptions) == ["low-1", "low-2"]


def test_an_exclusive_job_evicts_everything_and_keeps_the_node_to_itself(
    cpsat_taken: dict[str, float], hint_status: list[str]
) -> None:
    # cpu-1 (32 cores) runs a spot job of 8 cores; cpu-2 is full with an on-demand job (not preemptible).
    # "x" wants its node exclusive (16 cores, priority 10: 10 x 1.1 x 10 = 110); "y" (8 cores, 50) would fit
    # beside it. Greedy: x evicts low and takes cpu-1 whole; y has no node: 110. The model used to offer x
    # no node at all (y alone, 50, was its best); without the exclusivity rows it would put y beside x
    # (160), which the checker rejects.
    c = cluster(32, running("low", "cpu-1", 8, priority_class="spot"), running("keep", "cpu-2", 32))
    x = plain("x", 16, priority=10, placement=Placement(exclusive_nodes=True))
    d = solved([x, plain("y", 8)], c)
    assert hint_status == ["OPTIMAL"]
    assert d.stats.greedy_objective == 110
    assert d.stats.model_bound is not None and d.stats.model_bound >= 110
    assert cpsat_taken["own"] == 110
    assert d.stats.engine == "cpsat"
    assert nodes_of(d, "x") == ["cpu-1"] and d.placement_of("y") is None
    assert [(e.job, e.for_) for e in d.preemptions] == [("low", ["x"])]


def test_an_exclusive_job_never_shares_a_node_with_a_job_that_stays(cpsat_taken: dict[str, float]) -> None:
    # cpu-1 runs a spot job and an on-demand one that may not be evicted; cpu-2 is full with another. The
    # exclusive job could only have cpu-1 by evicting the spot job, and the other one would stay: it waits.
    c = cluster(
        32,
        running("low", "cpu-1", 8, priority_class="spot"),
        running("keep-1", "cpu-1", 8),
        running("keep-2", "cpu-2", 32),
    )
    x = plain("x", 16, priority=10, placement=Placement(exclusive_nodes=True))
    d = solved([x], c)
    assert d.placement_of("x") is None and d.preemptions == []


def test_cpsat_beats_greedy_by_moving_an_anti_affinity_job_beside_a_running_one() -> None:
    # Two 16-core nodes; cpu-2 runs "low" (8 cores, on-demand, preemptible, priority 5). Web jobs "a"
    # (priority 10: 10 x 1.1 x 5 = 55) and "b" (priority 8: 54) avoid each other; "c" (16 cores, priority
    # 0: 100) ranks below low, so it may not evict it. Greedy, by priority: a takes cpu-1 (first of equals),
    # b cannot join it and takes cpu-2 beside low, c finds 8 free cores on each node: 109. Best: a beside
    # low on cpu-2, c on cpu-1: 155. cpu-2 holds an eviction candidate (low, for a and b), so it is
    # modelled one by one, and the web jobs used to be kept off it: the model's best was c alone (100),
    # below greedy's.
    low = running("low", "cpu-2", 8, preemptible=True, priority=5)
    d = solved([web("a", priority=10), web("b", priority=8), plain("c", 16)], cluster(16, low))
    assert d.stats.greedy_objective == 109
    assert d.stats.engine == "cpsat" and d.stats.objective == 155
    assert nodes_of(d, "a") == ["cpu-2"] and nodes_of(d, "c") == ["cpu-1"]
    assert d.placement_of("b") is None and d.preemptions == []


def test_greedys_hint_names_the_rack_of_a_gang_on_nodes_modelled_one_by_one(hint_status: list[str]) -> None:
    # Four 16-core nodes, two racks. Rack 1 is full with spot jobs, rack 2 with jobs that stay. A gang of
    # two 16-core replicas confined to one rack (2 x 10 = 20 tenths: 200) can only evict the spot jobs of
    # rack 1, as greedy does. Its nodes are modelled one by one; the hint for the gang's rack (``b[p, d]``)
    # was read from classes only, so it named no rack, and greedy's answer was no solution of the model.
    inv = cpu_nodes(4, cpu_cores=16, nodes_per_rack=2)
    c = cluster_of(inv).with_allocations(
        [
            running("low-1", "cpu-r1-1", 16, priority_class="spot"),
            running("low-2", "cpu-r1-2", 16, priority_class="spot"),
            running("keep-3", "cpu-r2-1", 16),
            running("keep-4", "cpu-r2-2", 16),
        ]
    )
    gang = Job(id="g", tasks=[TaskGroup(count=2, cpu_cores=16)], placement=Placement(topology_scope="rack"))
    d = solved([gang], c)
    assert d.stats.greedy_objective == 200 and d.stats.objective == 200
    assert hint_status == ["OPTIMAL"]
    assert nodes_of(d, "g") == ["cpu-r1-1", "cpu-r1-2"]
