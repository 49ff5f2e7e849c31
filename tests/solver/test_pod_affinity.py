"""Required pod affinity (``Placement.affinity_required``; a Kubernetes pod's required ``podAffinity``):
both engines, each decision through the checker (the ``solve`` fixture), and the checker alone on decisions
that break the rule.

kube-scheduler's InterPodAffinity filter is the reference: a node passes when, for every term, its
``topologyKey`` domain holds a pod that matches *every* term; with no such pod anywhere, a pod matching its
own terms may start the group. The cluster: three racks of two DGX H100 (8 GPUs each).
"""

from __future__ import annotations

from datetime import timedelta

from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import (
    DomainRule,
    GpuDemand,
    Job,
    LabelRule,
    Placement,
    PriorityClass,
    TaskGroup,
)
from placer.topology import Cluster, RunningJob, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve

CACHE = LabelRule(key="app", operator="In", values=["cache"])
GOLD = LabelRule(key="tier", operator="In", values=["gold"])


def _cluster(*running: RunningJob) -> Cluster:
    c = cluster_of(dgx_h100(6, nodes_per_rack=2))
    return c.with_allocations(list(running)) if running else c


def _node(c: Cluster, rack: int, k: int) -> str:
    return [n.name for n in c.nodes if n.labels.get("rack") == f"dgx-h100-rack-{rack}"][k - 1]


def _running(c: Cluster, job: str, node: str, gpus: list[int], **labels: str) -> RunningJob:
    return RunningJob(
        job=job,
        labels=labels,
        priority_class="spot",
        preemptible=True,
        replicas=[{"node": node, "gpus": gpus}],
    )


def _reader(i: int, *terms: DomainRule, gpus: int = 4, **labels: str) -> Job:
    return Job(
        id=f"reader-{i}",
        labels=labels,
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
        placement=Placement(affinity_required=list(terms)),
    )


def _racks(c: Cluster, d: Decision) -> dict[str, set[str]]:
    return {p.job: {c.node(r.node).labels["rack"] for r in p.replicas if r.node} for p in d.placements}


def test_jobs_join_the_rack_of_the_running_job_they_need(solve: Solve) -> None:
    base = _cluster()
    c = _cluster(_running(base, "cache-0", _node(base, 3, 1), [0], app="cache"))
    jobs = [_reader(i, DomainRule(key="rack", rule=CACHE)) for i in range(3)]
    d = solve(jobs, c)
    # rack 3 holds 15 free GPUs: three 4-GPU readers fit there, and only there
    assert _racks(c, d) == {j.id: {"dgx-h100-rack-3"} for j in jobs}


def test_on_the_hostname_a_job_joins_the_node_itself(solve: Solve) -> None:
    base = _cluster()
    node = _node(base, 2, 2)
    c = _cluster(_running(base, "cache-0", node, [0, 1, 2, 3], app="cache"))
    jobs = [_reader(i, DomainRule(key="hostname", rule=CACHE)) for i in range(2)]
    d = solve(jobs, c)
    placed = {p.job: [r.node for r in p.replicas] for p in d.placements}
    assert placed == {"reader-0": [node]}  # the node has 4 GPUs left: one reader, the other waits
    [waiting] = d.pending
    assert waiting.job == "reader-1" and waiting.reasons[0].code == "LOST_TO_HIGHER_PRIORITY"
    # The cache's node full: the five other nodes are blocked by the affinity, that one by its load.
    full = _cluster(_running(base, "cache-0", node, list(range(8)), app="cache"))
    [waiting] = solve(jobs[:1], full).pending
    assert waiting.reasons[0].details["blocked"] == {"busy": 1, "pod_affinity": 5}


def test_a_running_job_counts_only_when_it_matches_every_term(solve: Solve) -> None:
    base = _cluster()
    only_cache = _running(base, "cache-0", _node(base, 1, 1), [0], app="cache")
    both = _running(base, "cache-1", _node(base, 2, 1), [0], app="cache", tier="gold")
    gold = _running(base, "gold-0", _node(base, 3, 1), [0], tier="gold")
    c = _cluster(only_cache, both, gold)
    jobs = [_reader(0, DomainRule(key="rack", rule=CACHE), DomainRule(key="rack", rule=GOLD))]
    assert _racks(c, solve(jobs, c)) == {"reader-0": {"dgx-h100-rack-2"}}


def test_with_nothing_to_join_the_first_of_a_group_starts_it_and_the_others_wait(solve: Solve) -> None:
    c = _cluster()
    term = DomainRule(key="rack", rule=CACHE)
    group = [_reader(i, term, app="cache") for i in range(3)]
    stranger = _reader(9, term, app="web")  # its own labels do not match: it cannot start the group
    d = solve([*group, stranger], c)
    [first] = [p.job for p in d.placements]  # one of the three starts it (either engine may pick which)
    assert first in {"reader-0", "reader-1", "reader-2"}
    reasons = {p.job: p.reasons[0] for p in d.pending}
    others = sorted({"reader-0", "reader-1", "reader-2"} - {first})
    assert {j: r.code for j, r in reasons.items()} == dict.fromkeys([*others, "reader-9"], "POD_AFFINITY")
    assert all(reasons[j].details["first"] == first for j in others)
    assert "first" not in reasons["reader-9"].details
    assert reasons["reader-9"].details["batch"] == ["reader-0", "reader-1", "reader-2"]  # whom it may join


def test_a_first_of_a_group_that_cannot_be_placed_holds_back_none(solve: Solve) -> None:
    # A reserved job holds one GPU of every DGX. The highest-priority job that would start the group asks
    # for 8 GPUs: it fits the empty cluster, not this one, and waits on capacity; the next one starts the
    # group — of the jobs that would start one group one is *placed* per decision, not one considered.
    base = _cluster()
    held = [
        RunningJob(job=f"db-{n.name}", priority_class="reserved", replicas=[{"node": n.name, "gpus": [7]}])
        for n in base.nodes
    ]
    c = _cluster(*held)
    term = DomainRule(key="rack", rule=CACHE)
    big = _reader(0, term, gpus=8, app="cache").model_copy(update={"priority_class": PriorityClass.RESERVED})
    d = solve([big, _reader(1, term, app="cache")], c)
    assert [p.job for p in d.placements] == ["reader-1"]


def test_a_running_job_another_one_needs_is_not_evicted_for_a_third(solve: Solve) -> None:
    base = _cluster()
    node = _node(base, 1, 1)
    busy = [
        RunningJob(
            job=f"fixed-{n}", priority_class="reserved", replicas=[{"node": n, "gpus": list(range(8))}]
        )
        for n in (x.name for x in base.nodes)
        if n != node
    ]
    cache = _running(base, "cache-0", node, [0, 1, 2, 3], app="cache")
    c = _cluster(cache, *busy)
    big = Job(id="big", priority_class="reserved", tasks=[TaskGroup(gpu=GpuDemand(count=8))])
    # The only room for a whole node is the cache's: alone, the big job evicts it ...
    alone = solve([big], c)
    assert [e.job for e in alone.preemptions] == ["cache-0"]
    # ... but not while a job of the same decision needs it there.
    reader = _reader(0, DomainRule(key="hostname", rule=CACHE))
    d = solve([big, reader], c)
    assert not d.preemptions
    assert {p.job: [r.node for r in p.replicas] for p in d.placements} == {"reader-0": [node]}


def test_a_job_waiting_beside_a_full_node_is_planned_there(solve: Solve) -> None:
    # The cache's node is full until another job ends in an hour: the reader is planned there, then (the
    # plan's check judges the job's own constraints, not what it joins: that is read when it starts).
    base = _cluster()
    node = _node(base, 2, 1)
    cache = _running(base, "cache-0", node, [0, 1, 2, 3], app="cache")
    ends = RunningJob(
        job="batch-0", expected_end=NOW + timedelta(hours=1), replicas=[{"node": node, "gpus": [4, 5, 6, 7]}]
    )
    c = _cluster(cache, ends)
    reader = _reader(0, DomainRule(key="hostname", rule=CACHE)).model_copy(update={"duration_s": 600.0})
    d = solve([reader], c)
    assert not d.placements
    [plan] = d.reservations
    assert (plan.job, plan.start, [r.node for r in plan.replicas]) == (
        "reader-0",
        NOW + timedelta(hours=1),
        [node],
    )


# -- the checker alone -----------------------------------------------------------------------------------


def _placed(job: str, node: str, gpus: list[int]) -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node=node, gpus=gpus, cpu_cores=1)])


def test_the_checker_refuses_a_job_outside_every_domain_with_a_job_it_needs() -> None:
    base = _cluster()
    c = _cluster(_running(base, "cache-0", _node(base, 3, 1), [0], app="cache"))
    job = _reader(0, DomainRule(key="rack", rule=CACHE))
    good = Decision(placements=[_placed("reader-0", _node(base, 3, 2), [0, 1, 2, 3])])
    bad = Decision(placements=[_placed("reader-0", _node(base, 1, 1), [0, 1, 2, 3])])
    assert check(good, [job], c, now=NOW) == []
    assert [v.rule for v in check(bad, [job], c, now=NOW)] == ["pod-affinity"]


def test_the_checker_refuses_evicting_the_job_a_placed_one_joins() -> None:
    base = _cluster()
    node = _node(base, 3, 1)
    c = _cluster(_running(base, "cache-0", node, [0], app="cache"))
    job = _reader(0, DomainRule(key="hostname", rule=CACHE))
    placed = _placed("reader-0", node, [4, 5, 6, 7])
    assert check(Decision(placements=[placed]), [job], c, now=NOW) == []
    evicting = Decision.model_validate(
        {"placements": [placed.model_dump()], "preemptions": [{"job": "cache-0", "for": ["reader-0"]}]}
    )
    assert "pod-affinity" in [v.rule for v in check(evicting, [job], c, now=NOW)]


def test_the_checker_holds_a_group_without_a_running_job_to_one_domain() -> None:
    c = _cluster()
    term = DomainRule(key="rack", rule=CACHE)
    a, b = _reader(0, term, gpus=1, app="cache"), _reader(1, term, gpus=1, app="cache")
    same = Decision(
        placements=[_placed("reader-0", _node(c, 2, 1), [0]), _placed("reader-1", _node(c, 2, 2), [0])]
    )
    apart = Decision(
        placements=[_placed("reader-0", _node(c, 2, 1), [0]), _placed("reader-1", _node(c, 1, 1), [0])]
    )
    assert check(same, [a, b], c, now=NOW) == []  # kube: the second joins the first's rack
    assert [v.rule for v in check(apart, [a, b], c, now=NOW)] == ["pod-affinity"]
    stranger = _reader(2, term, gpus=1, app="web")
    alone = Decision(placements=[_placed("reader-2", _node(c, 1, 1), [0])])
    assert [v.rule for v in check(alone, [stranger], c, now=NOW)] == ["pod-affinity"]
