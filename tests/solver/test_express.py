"""The express lane decides as ``place()`` does (``solver/express.py``).

Random sequences of arrivals, mostly one job at a time (what the lane takes), of every kind that reaches
a node choice through the objective's levels — GPU types, shares, CPU-only, extended resources, a model
loaded and its version pin, data locality, preferred node labels, spot preference, PreferNoSchedule
taints, labels that running jobs' anti-affinity keeps off their nodes — and kinds the lane leaves to
``place()`` (gangs, jobs with anti-affinity of their own, jobs that do not fit). Each arrival is decided by
a session with the lane and by ``place()`` from scratch on the session's cluster (given what the session
has seen arrive), and the two decision JSONs must be equal, timing aside; a second session without the
lane must agree too, so what the lane lets a session learn is what ``place()`` would have. Every decision
goes through the independent checker.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.solver.engine import place
from placer.solver.express import Express
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, ModelRef, Placement, TaskGroup
from placer.solver.jobs.queues import QueueConfig
from placer.solver.policy import Policy
from placer.solver.prepared import Prepared
from placer.solver.prices import load_prices
from placer.solver.session import Session
from placer.topology import Cluster, Inventory, LoadedModel, NodeSpec, RunningJob, cluster_of, dgx_h100
from placer.topology.build import build_cluster
from tests.solver.conftest import NOW, without_timing

EFA = "vpc.amazonaws.com/efa"


def _cluster() -> Cluster:
    """Three DGX in two racks (EFA), four L4 boxes (one with llama v2 loaded, one with llama v1, one
    holding a data prefix, one spot), a gold-tier L4 tainted PreferNoSchedule, two CPU nodes."""

    def dgx(i: int) -> NodeSpec:
        return NodeSpec(
            name=f"dgx-{i}",
            rack=f"r{1 + i // 2}",
            cpu_cores=112,
            memory_gb=2048,
            gpus={"type": "nvidia-h100", "count": 8, "interconnect": "nvlink"},  # type: ignore[arg-type]
            extra={EFA: 32},
        )

    def l4(name: str, **kw: object) -> NodeSpec:
        return NodeSpec(name=name, cpu_cores=48, memory_gb=192, gpus={"type": "nvidia-l4", "count": 4}, **kw)  # type: ignore[arg-type]

    return build_cluster(
        Inventory(
            nodes=[
                *(dgx(i) for i in range(3)),
                l4("l4-a", models_loaded=[LoadedModel(model_id="llama", model_version="v2")]),
                l4("l4-b", models_loaded=[LoadedModel(model_id="llama", model_version="v1")]),
                l4("l4-c", labels={"data_locality": "s3://corpus/", "tier": "silver"}),
                l4("l4-d", capacity_class="spot"),
                l4(
                    "l4-e",
                    labels={"tier": "gold"},
                    taints=[{"key": "maint", "value": "soon", "effect": "PreferNoSchedule"}],
                ),
                NodeSpec(name="cpu-1", cpu_cores=64, memory_gb=256),
                NodeSpec(name="cpu-2", cpu_cores=64, memory_gb=256, labels={"tier": "gold"}),
            ]
        )
    )


@st.composite
def job(draw: st.DrawFn, k: int) -> Job:
    kind = draw(
        st.sampled_from(
            ["whole", "share", "cpu", "efa", "model", "pinned", "data", "preferred", "spot", "web", "guard",
             "gang", "pack", "selector", "typed"]
        )
    )  # fmt: skip
    cls = draw(st.sampled_from(["spot", "on-demand", "reserved"]))
    gpus = draw(st.integers(1, 4))
    task = TaskGroup(cpu_cores=draw(st.integers(1, 16)), gpu=GpuDemand(count=gpus))
    fields: dict[str, object] = {}
    placement: dict[str, object] = {}
    if kind == "share":
        task = TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1, share_milli=draw(st.sampled_from([250, 500]))))
    elif kind == "cpu":
        task = TaskGroup(cpu_cores=draw(st.integers(1, 48)))
    elif kind == "efa":
        task = TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1), extra={EFA: draw(st.sampled_from([8, 16]))})
    elif kind in ("model", "pinned"):
        fields["model"] = ModelRef(id="llama", version="v2" if kind == "pinned" else None)
    elif kind == "data":
        placement["data_locality"] = "s3://corpus/shard-7"
    elif kind == "preferred":
        placement["preferred"] = [LabelRule(key="tier", operator="In", values=["gold"], weight=80)]
    elif kind == "spot":
        placement["spot_preference"] = draw(st.sampled_from(["spot_preferred", "on_demand_only"]))
    elif kind == "web":
        fields["labels"] = {"app": "web"}
    elif kind == "guard":  # keeps web jobs off its node: the lane leaves it to place(), not its neighbours
        placement["anti_affinity"] = [LabelRule(key="app", operator="In", values=["web"])]
    elif kind == "gang":
        task = TaskGroup(count=2, cpu_cores=8, gpu=GpuDemand(count=draw(st.sampled_from([4, 8]))))
        fields["distributed_strategy"] = "data_parallel"
    elif kind == "pack":
        placement["gpu_affinity"] = draw(st.sampled_from(["pack", "spread"]))
    elif kind == "selector":
        placement["node_selector"] = {"tier": "gold"}
    elif kind == "typed":
        task = TaskGroup(cpu_cores=4, gpu=GpuDemand(count=gpus, types=["nvidia-l4"]))
    return Job(
        id=f"j{k}",
        priority_class=cls,  # type: ignore[arg-type]
        duration_s=draw(st.sampled_from([None, 3600.0])),
        submit_time=NOW - timedelta(seconds=1000 - k),
        tasks=[task],
        placement=Placement(**placement),  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


@st.composite
def arrivals(draw: st.DrawFn) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    k = 0
    for _ in range(draw(st.integers(4, 14))):
        what = draw(st.sampled_from(["one"] * 6 + ["two", "finish", "down"]))
        if what == "one":
            out.append(("batch", [draw(job(k))]))
            k += 1
        elif what == "two":
            out.append(("batch", [draw(job(k)), draw(job(k + 1))]))
            k += 2
        else:
            out.append((what, draw(st.integers(0, 50))))
    return out


def _run(steps: list[tuple[str, object]], policy: Policy) -> None:
    fast = Session(_cluster(), policy)
    slow = Session(_cluster(), policy, express=False)
    assert fast.express is not None
    for what, arg in steps:
        if what == "batch":
            jobs = arg
            fresh = place(
                jobs,  # type: ignore[arg-type]
                fast.cluster,
                policy,
                now=NOW,
                prepared=Prepared(fast.cluster, learned=fast.learned),
            )
            quick = fast.express.decide(
                jobs,  # type: ignore[arg-type]
                fast._prepared,
                policy,
                now=NOW,
                queues=None,
                reservations=None,
                prices=None,
            )
            event("the lane decided" if quick is not None else "place() decided")
            mine = quick if quick is not None else fast.decide(jobs, now=NOW)  # type: ignore[arg-type]
            other = slow.decide(jobs, now=NOW)  # type: ignore[arg-type]
            if not (mine.stats.deterministic and fresh.stats.deterministic and other.stats.deterministic):
                event("a wall clock cut a decision")  # equal only on deterministic budgets (docs/solver.md)
                return
            assert without_timing(mine) == without_timing(fresh)
            assert without_timing(other) == without_timing(fresh)
            assert check(mine, jobs, fast.cluster, now=NOW) == []  # type: ignore[arg-type]
            if quick is not None:
                fast._jobs = {j.id: j for j in jobs}  # type: ignore[attr-defined]
            fast.commit(mine)
            slow.commit(other)
            assert fast.learned is not None and slow.learned is not None
            assert fast.learned.total == slow.learned.total
        elif what == "finish":
            running = sorted(rj.job for rj in fast.cluster.running_jobs())
            if running:
                fast.finish(running[int(arg) % len(running)])  # type: ignore[call-overload]
                slow.finish(running[int(arg) % len(running)])  # type: ignore[call-overload]
        else:
            names = [n.name for n in fast.cluster.nodes]
            name = names[int(arg) % len(names)]  # type: ignore[call-overload]
            up = fast.cluster.node(name).usable
            for s in (fast, slow):
                (s.node_down if up else s.node_up)(name)


POLICIES = {
    "fill": Policy(engine="auto", preemption=False, plan=False, time_limit_s=5, reproducible=True),
    "greedy": Policy(engine="greedy", time_limit_s=5),
    "auto": Policy(engine="auto", time_limit_s=5, reproducible=True),
}


@pytest.mark.parametrize("name", POLICIES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=arrivals())
def test_the_lane_decides_as_place_does(name: str, steps: list[tuple[str, object]]) -> None:
    _run(steps, POLICIES[name])


def _lane(job: Job, policy: Policy | None = None, session: Session | None = None) -> object:
    s = session or Session(_cluster(), policy or POLICIES["fill"])
    assert s.express is not None
    return s.express.decide(
        [job], s._prepared, s.policy, now=NOW, queues=None, reservations=None, prices=None
    )


def test_what_the_lane_takes_and_leaves() -> None:
    plain = Job(id="a", tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=2))])
    assert _lane(plain) is not None
    gang = Job(
        id="g", distributed_strategy="data_parallel", tasks=[TaskGroup(count=2, gpu=GpuDemand(count=8))]
    )  # type: ignore[arg-type]
    assert _lane(gang) is None  # several replicas: greedy's gang search
    assert _lane(plain.model_copy(update={"tasks": [TaskGroup(gpu=GpuDemand(count=9))]})) is None  # no fit
    guard = plain.model_copy(
        update={"placement": Placement(anti_affinity=[LabelRule(key="app", operator="Exists")])}
    )
    assert _lane(guard) is None  # its own anti-affinity reaches the jobs beside it
    assert _lane(plain, Policy(engine="cpsat")) is None
    assert _lane(plain, Policy(scorer="fgd")) is None
    throttled = Job.model_validate({**plain.model_dump(), "throttle": {"group": "t", "max_running": 1}})
    assert _lane(throttled) is None  # a throttle counts the batch: place() does
    budgeted = {
        "train": QueueConfig.model_validate(
            {"queue": "train", "config": {"ml_limits": {"max_total_gpus": 4}}}
        )
    }
    lane = Express()
    s = Session(_cluster(), POLICIES["fill"])
    assert (
        lane.decide([plain], s._prepared, s.policy, now=NOW, queues=budgeted, reservations=None, prices=None)
        is None
    )
    assert (
        lane.decide([plain], s._prepared, s.policy, now=NOW, queues={}, reservations=None, prices=None)
        is not None
    )
    # No queue, but a tenant's dollar budget: it counts what runs, so place() decides.
    tenant = load_prices('{"budgets": {"tenants": {"acme": 30}}}')
    assert (
        lane.decide([plain], s._prepared, s.policy, now=NOW, queues={}, reservations=None, prices=tenant)
        is None
    )
    # A job that must wait: the lane explains it as place() does when nothing else would look at the
    # cluster for it; with planning on, place() plans it.
    s = Session(_cluster(), POLICIES["fill"])
    for k in range(3):
        s.commit(s.decide([Job(id=f"full{k}", tasks=[TaskGroup(gpu=GpuDemand(count=8))])], now=NOW))
    big = Job(id="big", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    waits = _lane(big, session=s)
    assert isinstance(waits, Decision) and waits.pending[0].reasons[0].code == "INSUFFICIENT_CAPACITY"
    assert without_timing(waits) == without_timing(
        place([big], s.cluster, s.policy, now=NOW, prepared=Prepared(s.cluster, learned=s.learned))
    )
    s.policy = Policy(engine="auto", preemption=False)
    assert _lane(big, session=s) is None
    # Default policy (auto, preemption and planning on), a spot job running that may be evicted: a job
    # that fits without evicting is the lane's; one that fits only by evicting is place()'s.
    s = Session(cluster_of(dgx_h100(1)), Policy())
    spot = Job(id="s", priority_class="spot", tasks=[TaskGroup(gpu=GpuDemand(count=6))])  # type: ignore[arg-type]
    s.commit(s.decide([spot], now=NOW))
    two = Job(id="two", tasks=[TaskGroup(gpu=GpuDemand(count=2))])
    four = Job(id="four", tasks=[TaskGroup(gpu=GpuDemand(count=4))])
    assert _lane(two, session=s) is not None
    assert _lane(four, session=s) is None
    assert [e.job for e in s.decide([four], now=NOW).preemptions] == ["s"]


def test_one_arrival_that_evicts_nothing_is_greedys_without_cpsat() -> None:
    """One replica that greedy places without evicting is optimal on every level (an answer that evicts is
    worse on level 2): auto returns it without running CP-SAT, victims or not. One that needs an eviction
    goes to CP-SAT, which may find a cheaper one."""
    gpus = [0, 1, 2, 3, 4, 5]
    spot = RunningJob(job="s", priority_class="spot", replicas=[{"node": "dgx-h100", "gpus": gpus}])  # type: ignore[list-item]
    cluster = cluster_of(dgx_h100(1)).with_allocations([spot])
    fits = place([Job(id="two", tasks=[TaskGroup(gpu=GpuDemand(count=2))])], cluster, Policy(), now=NOW)
    assert fits.placements and not fits.preemptions
    assert fits.stats.engine == "greedy" and fits.stats.model_status is None
    evicts = place([Job(id="four", tasks=[TaskGroup(gpu=GpuDemand(count=4))])], cluster, Policy(), now=NOW)
    assert [e.job for e in evicts.preemptions] == ["s"] and evicts.stats.model_status is not None


def test_a_kind_is_judged_once_and_kept_per_kind() -> None:
    lane = Express()
    s = Session(_cluster(), POLICIES["fill"], express=False)
    for k in range(5):
        j = Job(id=f"a{k}", submit_time=NOW - timedelta(seconds=k), tasks=[TaskGroup(gpu=GpuDemand(count=1))])
        d = lane.decide([j], s._prepared, s.policy, now=NOW, queues=None, reservations=None, prices=None)
        assert d is not None and d.placements[0].job == f"a{k}"
    assert len(lane._kinds) == 1  # the id and the submit time are not part of a kind


def test_a_kind_is_judged_for_the_nodes_the_cluster_has_now() -> None:
    # 16 GPUs in one task: split over two 8-GPU DGX (two replicas: place()'s), one replica once a 16-GPU
    # node joins (the lane's), as place() then plans it.
    s = Session(cluster_of(dgx_h100(2)), POLICIES["fill"])
    job = Job(id="big", tasks=[TaskGroup(gpu=GpuDemand(count=16))])
    assert _lane(job, session=s) is None
    wide = NodeSpec(name="hgx-16", cpu_cores=224, gpus={"type": "nvidia-h100", "count": 16})  # type: ignore[arg-type]
    s.add_nodes(Inventory(nodes=[wide]))
    d = _lane(job, session=s)
    assert isinstance(d, Decision) and [r.node for r in d.placements[0].replicas] == ["hgx-16"]
    assert without_timing(d) == without_timing(
        place([job], s.cluster, s.policy, now=NOW, prepared=Prepared(s.cluster, learned=s.learned))
    )


def test_an_arrivals_plan_is_its_kinds_with_its_own_job() -> None:
    # The lane copies the kind's plan field by field (express._for, _named): every field of the copy is
    # the template's but the job, its unit's job id and the weight, and the template is left as it was.
    import copy
    from dataclasses import fields, replace

    from placer.solver.demand import Unit, expand
    from placer.solver.express import _for

    first = Job(id="a", priority=3, tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1, share_milli=300))])
    second = first.model_copy(update={"id": "b", "priority": 7})
    template = expand(first, 0, max_node_gpus=8)
    before = copy.deepcopy(template.__dict__)
    plan = _for(template, second, Policy())
    assert all(f.init for f in fields(Unit))  # _named builds a Unit positionally
    assert plan.units == [replace(u, job_id="b") for u in template.units]
    assert plan.job is second and plan.weight == Policy().job_weight("on-demand", 7, plan.demand_units)
    assert {k: v for k, v in plan.__dict__.items() if k not in ("job", "units", "weight", "notes")} == {
        k: v for k, v in template.__dict__.items() if k not in ("job", "units", "weight", "notes")
    }
    assert plan.notes == template.notes and plan.notes is not template.notes
    assert template.__dict__ == before
