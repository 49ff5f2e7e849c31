"""The deadline guarantee (``solver/engine.py``): ``place`` returns within ``policy.time_limit_s`` plus a
documented overhead of 0.5 s, on a ~1,000-node cluster with a batch that keeps the engine busy.

This is a guarantee test, not a benchmark: the wall time is measured with ``time.perf_counter`` around
``place`` and asserted against the limit plus the overhead, nothing tighter. The decision is still checked.
"""

from __future__ import annotations

import time

import pytest

from placer.solver.jobs.model import GpuDemand, Job, Placement, TaskGroup, TpuDemand
from placer.topology import Cluster, cluster_of, cpu_nodes, dgx_h100, gb200_nvl72, pcie_inference, tpu_pod
from tests.solver.conftest import HANG_GUARD_S, NOW, assert_valid, no_hang

#: The overhead beyond ``time_limit_s`` that ``docs/decision.md`` documents.
OVERHEAD_S = 0.5


def big_cluster() -> Cluster:
    """1,004 nodes: 512 DGX H100 (racks of 8), 256 L4 servers, 200 CPU nodes, 2 NVL72 racks, a v5e pod."""
    return cluster_of(
        dgx_h100(512, nodes_per_rack=8, racks_per_block=4),
        pcie_inference(256, nodes_per_rack=16),
        cpu_nodes(200),
        gb200_nvl72(2),
        tpu_pod("v5e"),
    )


def big_batch() -> list[Job]:
    """300 jobs of every shape, more GPUs in all than the cluster has, so not everything fits."""
    jobs: list[Job] = []
    for i in range(120):
        jobs.append(
            Job(
                id=f"train-{i:03d}",
                distributed_strategy="fsdp",
                tasks=[TaskGroup(cpu_cores=32, gpu=GpuDemand(count=16, types=["nvidia-h100"]))],
            )
        )
    for i in range(80):
        jobs.append(
            Job(
                id=f"infer-{i:03d}",
                tasks=[TaskGroup(count=2, cpu_cores=8, gpu=GpuDemand(count=1, types=["nvidia-l4"]))],
            )
        )
    for i in range(60):
        jobs.append(Job(id=f"etl-{i:03d}", tasks=[TaskGroup(cpu_cores=24, memory_gb=64)]))
    for i in range(20):
        jobs.append(
            Job(
                id=f"nvl-{i:03d}",
                distributed_strategy="fsdp",
                tasks=[TaskGroup(gpu=GpuDemand(count=16, interconnect="nvlink", types=["nvidia-gb200"]))],
            )
        )
    for i in range(20):
        jobs.append(
            Job(
                id=f"rack-{i:03d}",
                priority_class="reserved" if i % 2 else "spot",
                tasks=[TaskGroup(count=4, one_per_node=True, gpu=GpuDemand(count=8))],
                placement=Placement(topology_scope="rack"),
            )
        )
    jobs += [
        Job(id=f"tpu-{i}", tasks=[TaskGroup(tpu=TpuDemand(type="v5e", topology=(4, 4)))]) for i in range(10)
    ]
    return jobs


CLUSTER = big_cluster()


@pytest.mark.parametrize("limit", [0.2, 1.0])
def test_place_returns_within_the_limit_plus_overhead(engine: str, limit: float) -> None:
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    assert len(CLUSTER.nodes) >= 1000
    jobs = big_batch()
    t0 = time.perf_counter()
    with no_hang(limit + HANG_GUARD_S):
        decision = place(jobs, CLUSTER, Policy(engine=engine, time_limit_s=limit), now=NOW)
    wall = time.perf_counter() - t0
    assert wall <= limit + OVERHEAD_S, f"{engine} took {wall:.3f} s for a {limit} s limit"
    assert decision.stats.wall_s <= limit + OVERHEAD_S
    assert decision.placements, "a ~1,000-node cluster places something of this batch"
    assert_valid(decision, jobs, CLUSTER)


@pytest.mark.parametrize(
    "group",
    [TaskGroup(), TaskGroup(exclusive=True), TaskGroup(count=3)],
    ids=["no-demand", "no-demand-exclusive", "no-demand-3-replicas"],
)
def test_job_without_resource_demand_returns_in_time(engine: str, group: TaskGroup) -> None:
    # Job(tasks=[TaskGroup()]) is the model's default job: no cores, memory or devices. It takes nothing,
    # so it fits any usable node, and place() must still return within the limit.
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    c = cluster_of(cpu_nodes(2))
    jobs = [Job(id="empty", tasks=[group])]
    t0 = time.perf_counter()
    with no_hang(1.0 + HANG_GUARD_S):
        decision = place(jobs, c, Policy(engine=engine, time_limit_s=1.0), now=NOW)
    assert time.perf_counter() - t0 <= 1.0 + OVERHEAD_S
    assert decision.placement_of("empty") is not None
    assert_valid(decision, jobs, c)


def test_wall_s_covers_the_whole_call(monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/decision.md: wall_s is "the whole call". It used to be stamped inside the core decision, before
    # the preemptibility hints and pricing (scenario M: wall_s 0.26 s for a 0.43 s call). Slow hints down
    # by a known amount: wall_s must include it.
    import placer.solver.engine
    import placer.solver.what_if
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    real = placer.solver.what_if.add_preemptible_hints

    def slow_hints(*args: object, **kwargs: object) -> None:
        time.sleep(0.3)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(placer.solver.engine, "add_preemptible_hints", slow_hints)
    c = cluster_of(dgx_h100(2))
    jobs = [Job(id="a", tasks=[TaskGroup(gpu=GpuDemand(count=4))])]
    t0 = time.perf_counter()
    d = place(jobs, c, Policy(engine="greedy", time_limit_s=2.0), now=NOW)
    wall = time.perf_counter() - t0
    assert 0.3 <= d.stats.wall_s <= wall


def test_planning_takes_at_most_its_share_of_the_limit() -> None:
    # Scenario M's jobs carry durations, so planning runs. It used to plan until the whole limit was gone
    # (greedy: 5.1 s of a 5 s limit for a decision made in 0.3 s); docs/solver.md gives it at most
    # plan_share of the limit after the decision now. The same call without planning is the yardstick,
    # measured here on this machine; the margin (1 s) is for the hints, which run after planning.
    from placer.scenarios.synthetic import scenario_m
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    sc = scenario_m(0)
    jobs = list(sc.jobs)
    policy = Policy(engine="greedy", time_limit_s=5.0)
    with no_hang(5.0 + HANG_GUARD_S):
        t0 = time.perf_counter()
        place(jobs, sc.cluster, policy.model_copy(update={"plan": False}), now=sc.now)
        without = time.perf_counter() - t0
        t0 = time.perf_counter()
        d = place(jobs, sc.cluster, policy, now=sc.now)
        wall = time.perf_counter() - t0
    share = min(policy.plan_share * policy.time_limit_s, policy.plan_max_s)
    assert wall <= without + share + 1.0, f"{wall:.2f} s with planning, {without:.2f} s without"
    assert_valid(d, jobs, sc.cluster, now=sc.now)


def test_status_says_how_cpsat_ended_and_feasible_when_it_did_not_run() -> None:
    # docs/decision.md, stats.status: with engine greedy CP-SAT never runs, so the status is FEASIBLE and
    # there is no model; with auto, a status other than FEASIBLE comes with the CP-SAT run it describes,
    # whichever answer was kept.
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    jobs = big_batch()[:40]
    g = place(jobs, CLUSTER, Policy(engine="greedy", time_limit_s=2.0), now=NOW)
    assert (g.stats.engine, g.stats.status, g.stats.model_variables) == ("greedy", "FEASIBLE", None)
    a = place(jobs, CLUSTER, Policy(engine="auto", time_limit_s=3.0), now=NOW)
    # auto runs CP-SAT: its status is one of CP-SAT's documented outcomes, and without a built model only
    # the two that say why there is none
    assert a.stats.status in ("OPTIMAL", "FEASIBLE", "UNKNOWN", "BUILD_TIMEOUT", "NO_TIME") or (
        a.stats.status.startswith("CPSAT_REJECTED_BY_CHECKER")
    ), a.stats
    if a.stats.model_variables is None:
        assert a.stats.status in ("BUILD_TIMEOUT", "NO_TIME"), a.stats


def test_lp_bound_stops_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    # The LP bound only sharpens the reported gap; on scenario L building it took 2-3 s with no deadline
    # and overran the call's. Its inputs are taken from a real decision; a fake clock that advances one
    # second per reading makes the cut-off exact: with the deadline 3 s ahead, it gives up after a few
    # readings, long before it has visited every job class.
    import placer.solver.bound
    import placer.solver.core
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    seen: dict[str, object] = {}
    real = placer.solver.bound.lp_bound

    def spy(plans: object, candidates: object, arrays: object, **kwargs: object) -> float | None:
        seen.update(plans=plans, candidates=candidates, arrays=arrays, victims=kwargs.get("victims"))
        return real(plans, candidates, arrays, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(placer.solver.core, "lp_bound", spy)
    place(big_batch(), CLUSTER, Policy(engine="cpsat", time_limit_s=5.0, plan=False), now=NOW)
    args = (seen["plans"], seen["candidates"], seen["arrays"])
    unbounded = real(*args, victims=seen["victims"])  # type: ignore[arg-type]
    assert unbounded is not None and unbounded > 0

    class Clock:
        readings = 0

        @classmethod
        def perf_counter(cls) -> float:
            cls.readings += 1
            return float(cls.readings)

    monkeypatch.setattr(placer.solver.bound, "time", Clock)
    assert real(*args, victims=seen["victims"], deadline=3.5) is None  # type: ignore[arg-type]
    assert Clock.readings <= 4
    Clock.readings = 0
    assert real(*args, victims=seen["victims"], deadline=0.5) is None  # type: ignore[arg-type]
    assert Clock.readings == 1
    Clock.readings = 0
    assert real(*args, victims=seen["victims"], deadline=1e9) == unbounded  # type: ignore[arg-type]


def test_jobs_past_the_deadline_are_not_even_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 one-GPU spot jobs and one reserved job whose id sorts last, at a limit the fixed phases alone
    # outlast: the demand phase expands jobs in priority order only while the deadline is ahead (the
    # first 16 always), so the reserved job is expanded, considered and placed, and most others are never
    # expanded (each ~25 us; scenario L: 0.13 s of a 0.2 s call) — they wait NOT_CONSIDERED, as the
    # candidate phase would have left them, and the decision says the deadline cut it.
    import placer.solver.problem as problem_module
    from placer.solver.engine import place
    from placer.solver.policy import Policy

    expanded: list[str] = []
    real = problem_module.expand

    def counting(job: Job, idx: int, **kw: int) -> object:
        expanded.append(job.id)
        return real(job, idx, **kw)

    monkeypatch.setattr(problem_module, "expand", counting)
    one = TaskGroup(gpu=GpuDemand(count=1))
    jobs = [Job(id=f"spot-{i:04d}", priority_class="spot", tasks=[one]) for i in range(2000)]
    jobs.append(Job(id="zzz-urgent", priority_class="reserved", tasks=[one]))
    d = place(jobs, CLUSTER, Policy(engine="greedy", time_limit_s=0.01, plan=False), now=NOW)
    assert expanded[0] == "zzz-urgent" and len(expanded) < 1000, len(expanded)
    assert "zzz-urgent" in {p.job for p in d.placements}
    waiting = {p.job: p.reasons[0].code for p in d.pending}
    assert len(waiting) + len(d.placements) == len(jobs)
    assert {waiting[j] for j in waiting if j not in expanded} == {"NOT_CONSIDERED"}
    assert "candidates" in d.stats.cut_by and not d.stats.deterministic
    assert_valid(d, jobs, CLUSTER)
