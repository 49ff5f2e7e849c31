"""Topology spread (``Placement.spread_required``; a Kubernetes pod's ``DoNotSchedule``
``topologySpreadConstraints``): both engines, each decision through the checker (the ``solve`` fixture),
and the checker alone on decisions that break the rule.

kube-scheduler's PodTopologySpread filter is the reference: a node passes when it has the constraint's
key and its domain's count of matching pods, plus the pod itself when it matches, exceeds the least
domain's count by at most ``maxSkew``; the least is 0 while fewer than ``minDomains`` domains exist; with
``nodeAffinityPolicy: Honor`` only nodes the pod's node rules allow are counted. The cluster: three racks
of two DGX H100 (8 GPUs each); the pods count jobs labelled ``app=web`` in namespace ``serve``.
"""

from __future__ import annotations

from placer.solver.checks import check
from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import (
    AffinityOperator,
    AllOf,
    GpuDemand,
    Job,
    LabelRule,
    Placement,
    PriorityClass,
    SpreadRule,
    TaskGroup,
)
from placer.topology import Cluster, RunningJob, cluster_of, dgx_h100
from tests.solver.conftest import NOW, Solve

WEB = AllOf(
    rules=[
        LabelRule(key="app", operator=AffinityOperator.IN, values=["web"]),
        LabelRule(key="tenant", operator=AffinityOperator.IN, values=["serve"]),
    ]
)


def _cluster(*running: RunningJob, per_rack: int = 2) -> Cluster:
    c = cluster_of(dgx_h100(3 * per_rack, nodes_per_rack=per_rack))
    return c.with_allocations(list(running)) if running else c


def _node(rack: int, k: int = 1, per_rack: int = 2) -> str:
    c = _cluster(per_rack=per_rack)
    return [n.name for n in c.nodes if n.labels.get("rack") == f"dgx-h100-rack-{rack}"][k - 1]


def _web(job: str, node: str, gpus: int = 1, *, tenant: str = "serve", **kw: object) -> RunningJob:
    """A running web pod (``app=web``) holding ``gpus`` GPUs from index 0 on ``node``."""
    return RunningJob(
        job=job,
        labels={"app": "web"},
        tenant=tenant,
        priority_class=kw.pop("priority_class", "spot"),  # type: ignore[arg-type]
        preemptible=kw.pop("preemptible", True),  # type: ignore[arg-type]
        replicas=[{"node": node, "gpus": list(range(gpus))}],
        **kw,  # type: ignore[arg-type]
    )


def _pod(i: int, *spread: SpreadRule, gpus: int = 1, app: str = "web", **placement: object) -> Job:
    return Job(
        id=f"serve/web-{i}",
        tenant="serve",
        labels={"app": app},
        tasks=[TaskGroup(gpu=GpuDemand(count=gpus))],
        placement=Placement(spread_required=list(spread), **placement),  # type: ignore[arg-type]
    )


def _rack(c: Cluster, d: Decision, job: str) -> str:
    [p] = [p for p in d.placements if p.job == job]
    [r] = p.replicas
    assert r.node is not None
    return c.node(r.node).labels["rack"]


RACK1 = "dgx-h100-rack-1"
RACK2, RACK3 = "dgx-h100-rack-2", "dgx-h100-rack-3"


def test_a_pod_goes_only_where_the_skew_stays_within_max_skew(solve: Solve) -> None:
    # Web pods per rack: 2, 1, 1. With maxSkew 1 a new web pod may go where the count is at most the
    # least (1): racks 2 and 3, not rack 1 (2 + 1 - 1 = 2 > 1).
    c = _cluster(_web("a", _node(1)), _web("b", _node(1, 2)), _web("c", _node(2)), _web("d", _node(3)))
    d = solve([_pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB))], c)
    assert _rack(c, d, "serve/web-0") in {RACK2, RACK3}
    # With maxSkew 2 rack 1 is allowed too; a pod that is not a web pod counts itself nowhere: even with
    # maxSkew 1 it may go to rack 1 (2 + 0 - 1 = 1).
    for pod in (
        _pod(1, SpreadRule(key="rack", max_skew=2, rule=WEB)),
        _pod(2, SpreadRule(key="rack", max_skew=1, rule=WEB), app="api"),
    ):
        blocked = [r.details.get("blocked", {}) for p in solve([pod], c).pending for r in p.reasons]
        assert blocked == []


def test_pods_of_another_namespace_and_of_other_apps_are_not_counted(solve: Solve) -> None:
    # Rack 2 and 3 hold web pods of namespace "other" only: for a "serve" pod every rack is at 0 but rack 1,
    # which holds one of its own: maxSkew 1 allows all three; a second one in rack 1 would not.
    c = _cluster(
        _web("a", _node(1)),
        _web("b", _node(2), tenant="other"),
        _web("c", _node(3), tenant="other"),
        _web("d", _node(3, 2), tenant="other"),
    )
    kept = _cluster(_web("a", _node(1)), _web("a2", _node(1, 2)), _web("b", _node(2)), _web("c", _node(3)))
    spread = SpreadRule(key="rack", max_skew=1, rule=WEB)
    assert not solve([_pod(0, spread)], c).pending
    d = solve([_pod(0, spread, gpus=8)], kept)  # 8 GPUs: only an empty node, and rack 1 is over
    assert _rack(kept, d, "serve/web-0") in {RACK2, RACK3}


def test_with_too_few_domains_the_least_count_is_zero_and_the_pod_waits_naming_the_counts(
    solve: Solve,
) -> None:
    # One web pod in every rack; minDomains 4 with 3 racks: the least count is 0, so a domain may hold
    # at most maxSkew - 1 = 0 web pods before this one: none qualifies.
    c = _cluster(_web("a", _node(1)), _web("b", _node(2)), _web("c", _node(3)))
    d = solve([_pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB, min_domains=4))], c)
    [waiting] = d.pending
    [reason] = waiting.reasons
    assert reason.code == "POD_TOPOLOGY_SPREAD"
    [facts] = reason.details["constraints"]
    assert facts["counts"] == {RACK1: 1, RACK2: 1, RACK3: 1} and facts["least"] == 0
    # minDomains 3 is met: the least is 1 again, and any rack takes it.
    assert not solve([_pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB, min_domains=3))], c).pending


def test_node_rules_decide_which_domains_count_unless_the_policy_ignores_them(solve: Solve) -> None:
    # Web pods per rack: 1, 2, 0. The pod may only run in racks 1 and 2 (a required rule). Honor: rack 3
    # is not counted, the least is 1, rack 1 (1 + 1 - 1 = 1) takes it. Ignore: the least is rack 3's 0,
    # and racks 1 and 2 are both over: it waits.
    c = _cluster(_web("a", _node(1)), _web("b", _node(2)), _web("c", _node(2, 2)))
    only = LabelRule(key="rack", operator=AffinityOperator.IN, values=[RACK1, RACK2])
    honor = _pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB), required=[only])
    assert _rack(c, solve([honor], c), "serve/web-0") == RACK1
    ignore = _pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB, honor_node_rules=False), required=[only])
    [waiting] = solve([ignore], c).pending
    assert [r.code for r in waiting.reasons] == ["POD_TOPOLOGY_SPREAD"]


def test_a_node_without_the_key_is_never_used(solve: Solve) -> None:
    d = solve([_pod(0, SpreadRule(key="no-such-label", max_skew=1, rule=WEB))], _cluster())
    [waiting] = d.pending
    assert waiting.reasons[0].code == "POD_TOPOLOGY_SPREAD"


def test_of_pods_that_count_each_other_one_is_placed_per_decision(solve: Solve) -> None:
    spread = SpreadRule(key="rack", max_skew=1, rule=WEB)
    d = solve([_pod(0, spread), _pod(1, spread), _pod(2, gpus=1, app="api")], _cluster())
    placed = sorted(p.job for p in d.placements)
    assert len(placed) == 2 and "serve/web-2" in placed  # the api pod counts in no constraint
    [waiting] = d.pending
    [first] = [j for j in placed if j != "serve/web-2"]
    assert waiting.job in {"serve/web-0", "serve/web-1"} - {first}
    assert waiting.reasons[0].code == "POD_TOPOLOGY_SPREAD"
    assert waiting.reasons[0].details["jobs"] == [first]


def test_a_pod_that_cannot_be_placed_does_not_hold_back_one_it_counts(solve: Solve) -> None:
    # Two web pods that count each other; the first in priority order asks for 8 GPUs, and every DGX has
    # 7 free (another namespace's reserved pod holds one: it waits on capacity). The second is placed: one
    # of a pair per decision means one *placed*, not one considered.
    spread = SpreadRule(key="rack", max_skew=1, rule=WEB)
    big = _pod(0, spread, gpus=8).model_copy(update={"priority_class": PriorityClass.RESERVED})
    held = {"tenant": "other", "priority_class": "reserved", "preemptible": False}
    busy = _cluster(*[_web(f"b{r}{k}", _node(r, k), 1, **held) for r in (1, 2, 3) for k in (1, 2)])  # type: ignore[arg-type]
    d = solve([big, _pod(1, spread)], busy)
    assert [p.job for p in d.placements] == ["serve/web-1"]
    assert [p.job for p in d.pending] == ["serve/web-0"]


def test_a_running_pod_the_spread_counts_is_not_evicted_by_the_same_decision(solve: Solve) -> None:
    # One node per rack. Rack 1 runs a preemptible web pod on all 8 GPUs; racks 2 and 3 a reserved web pod
    # on 1 GPU each: every rack counts 1. A 1-GPU web pod may go to racks 2 and 3 (1 + 1 - 1 = 1). A
    # reserved 8-GPU job in the same batch could run only by evicting rack 1's web pod; with it gone rack
    # 1 would count 0, the least would be 0, and the web pod's rack would be over (1 + 1 - 0 = 2). So the
    # decision that places the web pod evicts no pod its spread counts: the big job waits.
    one = 1
    c = _cluster(
        _web("a", _node(1, per_rack=one), 8),
        _web("b", _node(2, per_rack=one), priority_class="reserved", preemptible=False),
        _web("c", _node(3, per_rack=one), priority_class="reserved", preemptible=False),
        per_rack=one,
    )
    pod = _pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB))
    big = Job(
        id="serve/db",
        tenant="serve",
        priority_class=PriorityClass.RESERVED,
        tasks=[TaskGroup(gpu=GpuDemand(count=8))],
    )
    d = solve([pod, big], c)
    assert _rack(c, d, pod.id) in {RACK2, RACK3}
    assert not d.preemptions and [p.job for p in d.pending] == [big.id]
    # Without the web pod in the batch, the big job evicts rack 1's web pod.
    assert [e.job for e in solve([big], c).preemptions] == ["a"]


def _placed(job: str, node: str, gpus: list[int]) -> JobPlacement:
    return JobPlacement(job=job, replicas=[ReplicaPlacement(node=node, gpus=gpus)])


def test_the_checker_refuses_a_skewed_domain_a_missing_key_and_two_pods_that_count_each_other() -> None:
    c = _cluster(_web("a", _node(1)), _web("b", _node(1, 2)), _web("c", _node(2)), _web("d", _node(3)))
    spread = SpreadRule(key="rack", max_skew=1, rule=WEB)
    pod = _pod(0, spread)
    ok = Decision(placements=[_placed(pod.id, _node(2), [1])])
    assert check(ok, [pod], c, now=NOW) == []
    skewed = Decision(placements=[_placed(pod.id, _node(1), [1])])  # rack 1: 2 + 1 - 1 = 2 > 1
    assert [v.rule for v in check(skewed, [pod], c, now=NOW)] == ["topology-spread"]
    keyless = _pod(0, SpreadRule(key="no-such-label", max_skew=1, rule=WEB))
    assert [v.rule for v in check(ok, [keyless], c, now=NOW)] == ["topology-spread"]
    other = _pod(1, spread)
    both = Decision(placements=[_placed(pod.id, _node(2), [1]), _placed(other.id, _node(3), [1])])
    assert [v.rule for v in check(both, [pod, other], c, now=NOW)] == ["topology-spread"]
    # An eviction the engines would not make: with web pod "c" gone rack 2 holds 0, so the least is 0 and
    # rack 3 (1 + 1 - 0 = 2) is over; the checker counts the cluster after the decision's evictions.
    evicting = Decision(
        placements=[_placed(pod.id, _node(3), [1])],
        preemptions=[Eviction(job="c", nodes=[_node(2)], **{"for": [pod.id]})],
    )
    assert "topology-spread" in [v.rule for v in check(evicting, [pod], c, now=NOW)]


def test_a_node_lacking_one_constraints_key_is_counted_for_none(solve: Solve) -> None:
    # kube-scheduler counts pods only on nodes that have the key of every constraint of the pod. Nodes all
    # carry "pool" but rack 1's second node; web pods run on that node, on rack 2's and on rack 3's first.
    # Spread by rack (maxSkew 1) and by pool (a loose second constraint): rack 1 counts 0, not 1, so the
    # least is 0 and racks 2 and 3 (1 + 1 - 0) are over: the pod goes to rack 1's first node.
    from placer.topology import Inventory
    from placer.topology.build import build_cluster

    inv = _cluster().to_inventory()
    lacking = _node(1, 2)
    nodes = [  # one entry per node (the inventory lists each rack's nodes as one entry with a count)
        n.model_copy(update={"labels": {**n.labels, "pool": "p"}}) if n.name != lacking else n
        for n in Inventory(nodes=inv.nodes).expanded_nodes()
    ]
    c = build_cluster(inv.model_copy(update={"nodes": nodes})).with_allocations(
        [_web("a", lacking), _web("b", _node(2)), _web("c", _node(3))]
    )
    pod = _pod(
        0, SpreadRule(key="rack", max_skew=1, rule=WEB), SpreadRule(key="pool", max_skew=100, rule=WEB)
    )
    d = solve([pod], c)
    [p] = d.placements
    assert [r.node for r in p.replicas] == [_node(1)]


def test_tainted_nodes_count_unless_the_policy_honours_the_taints(solve: Solve) -> None:
    # Rack 3's nodes are tainted dedicated=infra:NoSchedule and hold no web pod; racks 1 and 2 hold one
    # each. A web pod that does not tolerate the taint: with the default (Ignore) rack 3 counts, its 0 is
    # the least, racks 1 and 2 (1 + 1 - 0) are over and rack 3 is closed to it — it waits. With
    # nodeTaintsPolicy Honor rack 3 is not counted, the least is 1, and racks 1 and 2 take it.
    from placer.topology import Inventory
    from placer.topology.build import build_cluster
    from placer.topology.inventory import Taint

    inv = _cluster().to_inventory()
    taint = Taint(key="dedicated", value="infra", effect="NoSchedule")
    nodes = [
        n.model_copy(update={"taints": [taint]}) if n.rack == RACK3 else n
        for n in Inventory(nodes=inv.nodes).expanded_nodes()
    ]
    c = build_cluster(inv.model_copy(update={"nodes": nodes})).with_allocations(
        [_web("a", _node(1)), _web("b", _node(2))]
    )
    ignore = _pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB))
    [waiting] = solve([ignore], c).pending
    assert [r.code for r in waiting.reasons] == ["POD_TOPOLOGY_SPREAD"]
    honor = _pod(0, SpreadRule(key="rack", max_skew=1, rule=WEB, honor_taints=True))
    assert _rack(c, solve([honor], c), honor.id) in {RACK1, RACK2}


def test_a_constraint_that_selects_no_pod_only_needs_the_key(solve: Solve) -> None:
    # A pod's constraint without a labelSelector (kube's nil selector selects no pod), read as a rule
    # that never holds: every domain counts 0, so any node with the key takes it, and none without.
    from placer.solver.jobs.model import AnyOf

    none = AnyOf(rules=[])
    c = _cluster(_web("a", _node(1)), _web("b", _node(1, 2)))
    assert not solve([_pod(0, SpreadRule(key="rack", max_skew=1, rule=none))], c).pending
    [waiting] = solve([_pod(0, SpreadRule(key="no-such-label", max_skew=1, rule=none))], c).pending
    assert waiting.reasons[0].code == "POD_TOPOLOGY_SPREAD"
