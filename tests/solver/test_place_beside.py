"""Preferred rules on the jobs beside a replica. Anti-affinity (OJS ML §7.3 with §7.2's ``preferred`` list:
"A backend SHOULD prefer workers that satisfy more preferred rules, weighted by the ``weight`` field ...
Preferred rules MUST NOT prevent job dispatch"; Kubernetes' preferred ``podAntiAffinity``): a replica loses
its rule's weight on a node where a job that the rule matches sits — running, placed by the same decision,
or another replica of its own — and is placed there anyway when nothing else has room. Affinity
(Kubernetes' preferred ``podAffinity``) gains it there. Both engines, every decision through the checker
(``solve``)."""

from __future__ import annotations

import json

from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, Placement, TaskGroup
from placer.solver.policy import Policy
from placer.topology import cluster_of, cpu_nodes, dgx_h100
from tests.solver.conftest import NOW, Solve, assert_valid, nodes_of


def rather_not(*rules: tuple[str, str, int]) -> Placement:
    """Preferred anti-affinity: ``(key, value, weight)`` each an ``In`` rule."""
    return Placement(
        anti_affinity_preferred=[LabelRule(key=k, operator="In", values=[v], weight=w) for k, v, w in rules]
    )


def small(job_id: str, labels: dict[str, str] | None = None, **kw: object) -> Job:
    return Job(id=job_id, labels=labels or {}, tasks=[TaskGroup(cpu_cores=4)], **kw)  # type: ignore[arg-type]


def running(job: str, node: str, labels: dict[str, str]) -> dict[str, object]:
    return {"job": job, "labels": labels, "replicas": [{"node": node, "cpu_cores": 4}]}


def test_a_running_job_it_would_rather_not_join_moves_it_to_another_node(solve: Solve) -> None:
    # Without the rule best fit joins the busy node cpu-1 (fewest cores left free); with it the job takes
    # the empty cpu-2.
    c = cluster_of(cpu_nodes(2)).with_allocations([running("db", "cpu-1", {"app": "db"})])
    assert nodes_of(solve([small("web")], c), "web") == ["cpu-1"]
    d = solve([small("web", placement=rather_not(("app", "db", 50)))], c)
    assert nodes_of(d, "web") == ["cpu-2"]


def test_a_preferred_rule_never_keeps_a_job_from_running(solve: Solve) -> None:
    # §7.2: "MUST NOT prevent job dispatch". The only node holds the job it would rather avoid.
    c = cluster_of(cpu_nodes(1)).with_allocations([running("db", "cpu", {"app": "db"})])
    d = solve([small("web", placement=rather_not(("app", "db", 100)))], c)
    assert nodes_of(d, "web") == ["cpu"]


def test_the_lighter_rule_is_the_one_given_up(solve: Solve) -> None:
    # Both nodes hold a job the web job would rather avoid: a db (weight 80) on cpu-1, a cache (20) on
    # cpu-2. It loses less beside the cache.
    c = cluster_of(cpu_nodes(2)).with_allocations(
        [running("db", "cpu-1", {"app": "db"}), running("cache", "cpu-2", {"app": "cache"})]
    )
    d = solve([small("web", placement=rather_not(("app", "db", 80), ("app", "cache", 20)))], c)
    assert nodes_of(d, "web") == ["cpu-2"]


def test_two_jobs_of_one_batch_that_would_rather_not_share_a_node_do_not(solve: Solve) -> None:
    # Two 1-GPU servers of one app on two empty DGX: best fit packs them onto one node; each would rather
    # not be beside the other, and there is room to keep them apart.
    c = cluster_of(dgx_h100(2))

    def server(job_id: str, rule: bool) -> Job:
        return Job(
            id=job_id,
            labels={"app": "llama"},
            placement=rather_not(("app", "llama", 60)) if rule else Placement(),
            tasks=[TaskGroup(gpu=GpuDemand(count=1))],
        )

    packed = solve([server("s1", False), server("s2", False)], c)
    assert len({*nodes_of(packed, "s1"), *nodes_of(packed, "s2")}) == 1
    d = solve([server("s1", True), server("s2", True)], c)
    assert len({*nodes_of(d, "s1"), *nodes_of(d, "s2")}) == 2


def test_a_job_spreads_its_own_replicas_when_it_can(solve: Solve) -> None:
    # One serving job of three replicas whose rule matches its own label: one replica per node while
    # nodes last (three DGX), all on one node without the rule.
    c = cluster_of(dgx_h100(3))

    def serving(rule: bool) -> Job:
        return Job(
            id="serve",
            labels={"app": "llama"},
            placement=rather_not(("app", "llama", 30)) if rule else Placement(),
            tasks=[TaskGroup(count=3, gpu=GpuDemand(count=1))],
        )

    assert len(set(nodes_of(solve([serving(False)], c), "serve"))) == 1
    assert len(set(nodes_of(solve([serving(True)], c), "serve"))) == 3


def test_the_model_says_it_does_not_weigh_pairs_within_the_batch() -> None:
    # CP-SAT's preference level scores each replica's node on its own: it sees running jobs (in the node
    # scores) but not two jobs of the batch sharing a node. Its model says so, and is not called exact;
    # the objective that chooses between the engines' answers weighs the pair.
    c = cluster_of(dgx_h100(2))
    pair = [
        Job(
            id=f"s{i}",
            labels={"app": "llama"},
            placement=rather_not(("app", "llama", 60)),
            tasks=[TaskGroup(gpu=GpuDemand(count=1))],
        )
        for i in (1, 2)
    ]
    d = place(pair, c, Policy(engine="cpsat", time_limit_s=2.0), now=NOW)
    assert_valid(d, pair, c)
    assert d.stats.model_exact is False
    assert any("preferred (anti-)affinity" in a for a in d.stats.model_approximations)
    assert len({*nodes_of(d, "s1"), *nodes_of(d, "s2")}) == 2
    alone = [small("web", placement=rather_not(("app", "db", 50)))]
    d = place(alone, cluster_of(cpu_nodes(2)), Policy(engine="cpsat", time_limit_s=2.0), now=NOW)
    assert not any("preferred (anti-)affinity" in a for a in d.stats.model_approximations)


def test_an_ojs_envelope_s_preferred_anti_affinity_is_read_and_weighed(solve: Solve) -> None:
    # §7.3 rules "use the same operator syntax as affinity rules": a preferred list with weights.
    rule = {"key": "app", "operator": "In", "values": ["db"], "weight": 70}
    envelope = json.dumps(
        {"id": "web", "type": "ml.inference", "args": [], "ext_ml_anti_affinity": {"preferred": [rule]}}
    )
    (r,) = read_text(envelope)
    assert r.ok and r.warnings == [], r.warnings
    assert r.job is not None
    c = cluster_of(cpu_nodes(2)).with_allocations([running("db", "cpu-1", {"app": "db"})])
    d = solve([r.job], c)
    assert nodes_of(d, "web") == ["cpu-2"]


def rather_beside(key: str, value: str, weight: int) -> Placement:
    return Placement(affinity_preferred=[LabelRule(key=key, operator="In", values=[value], weight=weight)])


def test_a_job_it_would_rather_join_draws_it_to_that_node(solve: Solve) -> None:
    # Without the rule the web job takes cpu-1 (the nodes tie; node order); it would rather be beside the
    # db running on cpu-2.
    c = cluster_of(cpu_nodes(2)).with_allocations([running("db", "cpu-2", {"app": "db"})])
    assert nodes_of(solve([small("web")], c), "web") == ["cpu-1"]
    d = solve([small("web", placement=rather_beside("app", "db", 40))], c)
    assert nodes_of(d, "web") == ["cpu-2"]


def test_two_jobs_of_one_batch_that_would_rather_share_a_node_do(solve: Solve) -> None:
    # A 6-GPU server and a 1-GPU client: the server fits only on dgx-h100-2 (7 of dgx-h100-1's GPUs are
    # busy). Without the rule the client takes dgx-h100-1's last GPU (FGD's measure calls the two nodes
    # equal for it; node order); it would rather be beside the server, and dgx-h100-2 has room for it.
    busy = {"job": "busy", "replicas": [{"node": "dgx-h100-1", "gpus": list(range(7))}]}
    c = cluster_of(dgx_h100(2)).with_allocations([busy])
    server = Job(id="server", labels={"app": "llm"}, tasks=[TaskGroup(gpu=GpuDemand(count=6))])
    client = Job(id="client", priority=-1, tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    apart = solve([server, client], c)
    assert (nodes_of(apart, "server"), nodes_of(apart, "client")) == (["dgx-h100-2"], ["dgx-h100-1"])
    drawn = client.model_copy(update={"placement": rather_beside("app", "llm", 50)})
    d = solve([server, drawn], c)
    assert nodes_of(d, "server") == nodes_of(d, "client") == ["dgx-h100-2"]
