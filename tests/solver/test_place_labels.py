"""Node selector, the eight affinity operators plus ``Matches``, AllOf/AnyOf/Not, per-group rules, taints
and unusable nodes, through ``place()`` on both engines (placement-rules.md rules 3 and 8).

Each operator case names the exact set of nodes the rule admits on a three-node cluster (by the Kubernetes
semantics of rule 8), places a gang of that many replicas on distinct nodes — which must use exactly that
set — and one more replica than that, which must be UNSATISFIABLE for the ``rules`` constraint.
"""

from __future__ import annotations

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.model import AllOf, AnyOf, Job, LabelRule, Not, Placement, Rule, TaskGroup
from placer.topology import Inventory, NodeSpec, Taint, build_cluster, cluster_of, cpu_nodes
from tests.solver.conftest import Solve, nodes_of, reason_codes

# gold: slots "8" (string-compares above "16"), driver "10.0" (string-compares below "9.0").
GOLD = {"tier": "gold", "slots": "8", "driver": "10.0", "pool": "a"}
SILVER = {"tier": "silver", "slots": "16", "driver": "9.0", "pool": "b"}
C = cluster_of(
    cpu_nodes(1, name="gold-1", labels=GOLD),
    cpu_nodes(1, name="silver-1", labels=SILVER),
    cpu_nodes(1, name="plain-1"),
)
ALL = {"gold-1", "silver-1", "plain-1"}


def gang(job_id: str, replicas: int, *rules: Rule, **placement: object) -> Job:
    """``replicas`` one-per-node replicas of 8 cores, with ``rules`` required."""
    return Job(
        id=job_id,
        tasks=[TaskGroup(count=replicas, cpu_cores=8, one_per_node=True)],
        placement=Placement(required=list(rules), **placement),  # type: ignore[arg-type]
    )


def admits_exactly(solve: Solve, expected: set[str], *rules: Rule) -> None:
    if expected:
        d = solve([gang("fit", len(expected), *rules)], C)
        assert set(nodes_of(d, "fit")) == expected
    d = solve([gang("over", len(expected) + 1, *rules)], C)
    assert reason_codes(d, "over") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"].get("rules", 0) == 3 - len(expected)


def rule(key: str, op: str, *values: str) -> LabelRule:
    return LabelRule(key=key, operator=op, values=list(values))  # type: ignore[arg-type]


OPERATOR_CASES = [
    pytest.param(rule("tier", "In", "gold"), {"gold-1"}, id="In"),
    pytest.param(rule("tier", "In", "gold", "silver"), {"gold-1", "silver-1"}, id="In-two-values"),
    pytest.param(rule("tier", "NotIn", "gold"), {"silver-1", "plain-1"}, id="NotIn-absent-label-passes"),
    pytest.param(rule("tier", "Exists"), {"gold-1", "silver-1"}, id="Exists"),
    pytest.param(rule("tier", "DoesNotExist"), {"plain-1"}, id="DoesNotExist"),
    pytest.param(rule("slots", "Gt", "8"), {"silver-1"}, id="Gt-numeric-16>8"),
    pytest.param(rule("slots", "Gte", "8"), {"gold-1", "silver-1"}, id="Gte-numeric"),
    pytest.param(rule("slots", "Lt", "16"), {"gold-1"}, id="Lt-numeric-8<16"),
    pytest.param(rule("slots", "Lte", "16"), {"gold-1", "silver-1"}, id="Lte-numeric"),
    pytest.param(rule("driver", "Gt", "9.5"), {"gold-1"}, id="Gt-version-10.0>9.5"),
    pytest.param(rule("driver", "Lt", "9.5"), {"silver-1"}, id="Lt-version-9.0<9.5"),
    pytest.param(rule("tier", "Gt", "1"), set(), id="Gt-not-comparable-fails"),
    pytest.param(rule("tier", "Matches", "go*"), {"gold-1"}, id="Matches-glob"),
    pytest.param(rule("hostname", "Matches", "*-1", "x*"), ALL, id="Matches-derived-hostname"),
    pytest.param(rule("tier", "Matches", "GO*"), set(), id="Matches-case-sensitive"),
]


@pytest.mark.parametrize(("the_rule", "expected"), OPERATOR_CASES)
def test_operator(solve: Solve, the_rule: LabelRule, expected: set[str]) -> None:
    admits_exactly(solve, expected, the_rule)


def test_any_of(solve: Solve) -> None:
    admits_exactly(
        solve, {"gold-1", "plain-1"}, AnyOf(rules=[rule("tier", "In", "gold"), rule("tier", "DoesNotExist")])
    )


def test_not(solve: Solve) -> None:
    admits_exactly(solve, {"silver-1", "plain-1"}, Not(rule=rule("tier", "In", "gold")))


def test_all_of_and_several_required_rules_are_anded(solve: Solve) -> None:
    admits_exactly(solve, {"silver-1"}, AllOf(rules=[rule("tier", "Exists"), rule("slots", "Gt", "8")]))
    admits_exactly(solve, {"silver-1"}, rule("tier", "Exists"), rule("slots", "Gt", "8"))


def test_nested_not_any_of(solve: Solve) -> None:
    # Not(AnyOf(gold, silver)) = the node with neither tier.
    admits_exactly(
        solve, {"plain-1"}, Not(rule=AnyOf(rules=[rule("tier", "In", "gold"), rule("tier", "In", "silver")]))
    )


def test_node_selector(solve: Solve) -> None:
    job = Job(id="s", tasks=[TaskGroup(cpu_cores=1)], placement=Placement(node_selector={"pool": "b"}))
    d = solve([job], C)
    assert nodes_of(d, "s") == ["silver-1"]


def test_node_selector_without_match_is_unsatisfiable(solve: Solve) -> None:
    job = Job(id="s", tasks=[TaskGroup(cpu_cores=1)], placement=Placement(node_selector={"pool": "z"}))
    d = solve([job], C)
    assert reason_codes(d, "s") == ["UNSATISFIABLE"]
    assert "node selector" in d.pending[0].reasons[0].message


def test_ojs_affinity_required_from_a_document(solve: Solve) -> None:
    doc = (
        '{"id": "o", "ext_ml_accelerator": "cpu", "ext_ml_cpu_cores": 4, "ext_ml_affinity": {"required": '
        '[{"key": "slots", "operator": "Gt", "values": ["8"]}]}}'
    )
    rs = read_text(doc)
    assert rs[0].ok, rs[0].errors
    d = solve(rs, C)
    assert nodes_of(d, "o") == ["silver-1"]


def test_task_group_rules_apply_to_their_group_only(solve: Solve) -> None:
    job = Job(
        id="mw",
        tasks=[
            TaskGroup(name="master", cpu_cores=4, required=[rule("tier", "In", "gold")]),
            TaskGroup(
                name="worker",
                count=2,
                cpu_cores=4,
                one_per_node=True,
                required=[rule("tier", "NotIn", "gold")],
            ),
        ],
    )
    d = solve([job], C)
    p = d.placement_of("mw")
    assert p is not None
    by_group: dict[str, set[str]] = {}
    for r in p.replicas:
        by_group.setdefault(r.task_group, set()).add(r.node)
    assert by_group == {"master": {"gold-1"}, "worker": {"silver-1", "plain-1"}}


def test_preferred_rule_is_soft(solve: Solve) -> None:
    # Preferring a label nobody has never stops the job.
    job = Job(
        id="p",
        tasks=[TaskGroup(cpu_cores=1)],
        placement=Placement(
            preferred=[LabelRule(key="tier", operator="In", values=["platinum"], weight=100)]
        ),
    )
    d = solve([job], C)
    assert nodes_of(d, "p")[0] in ALL


def test_preferred_rule_picks_the_preferred_node(solve: Solve) -> None:
    job = Job(
        id="p",
        tasks=[TaskGroup(cpu_cores=1)],
        placement=Placement(preferred=[LabelRule(key="tier", operator="In", values=["silver"], weight=50)]),
    )
    d = solve([job], C)
    assert nodes_of(d, "p") == ["silver-1"]


# -- taints and unusable nodes (rule 3) ------------------------------------------------------------------


def node(name: str, **kw: object) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=16, memory_gb=64, **kw)  # type: ignore[arg-type]


def test_taints_no_schedule_and_no_execute_excluded_prefer_no_schedule_allowed(solve: Solve) -> None:
    from placer.topology import build_cluster

    c = build_cluster(
        Inventory(
            nodes=[
                node("t-nosched", taints=[Taint(key="maint", effect="NoSchedule")]),
                node("t-noexec", taints=[Taint(key="maint", effect="NoExecute")]),
                node("t-prefer", taints=[Taint(key="busy", effect="PreferNoSchedule")]),
            ]
        )
    )
    d = solve([gang("one", 1)], c)
    assert nodes_of(d, "one") == ["t-prefer"]
    d = solve([gang("two", 2)], c)  # two distinct nodes needed, only one is allowed
    assert reason_codes(d, "two") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"]["taint"] == 2  # no toleration for "maint"


@pytest.mark.parametrize("flag", ["schedulable", "ready"])
def test_cordoned_or_not_ready_nodes_excluded(solve: Solve, flag: str) -> None:
    from placer.topology import build_cluster

    c = build_cluster(Inventory(nodes=[node("bad", **{flag: False}), node("good")]))
    d = solve([gang("j", 1)], c)
    assert nodes_of(d, "j") == ["good"]
    d = solve([gang("j2", 1)], build_cluster(Inventory(nodes=[node("bad", **{flag: False})])))
    # Its only node is cordoned or not ready: it waits for it (not UNSATISFIABLE, which is fixed).
    assert reason_codes(d, "j2") == ["NODES_UNAVAILABLE"]
    assert d.pending[0].reasons[0].details == {"count": 1, "nodes": ["bad"], "eliminated": {"unavailable": 1}}


# -- RFC 31 constraints of a Flux jobspec, end to end -------------------------------------------------------

FLUX = """
version: 1
resources:
  - type: node
    count: %d
    with:
      - type: slot
        count: 1
        label: task
        with:
          - type: core
            count: 4
tasks:
  - command: ["app"]
    slot: task
    count: {per_slot: 1}
attributes:
  system:
    duration: 3600
    constraints: %s
"""
# host0 and host1 have the property "ssd" (Flux properties become labels "ssd": "true"); host2 does not.
FLUX_CLUSTER = build_cluster(
    Inventory(
        nodes=[
            NodeSpec(name="host0", cpu_cores=8, memory_gb=32, properties=["ssd"]),
            NodeSpec(name="host1", cpu_cores=8, memory_gb=32, properties=["ssd"]),
            NodeSpec(name="host2", cpu_cores=8, memory_gb=32),
        ]
    )
)


@pytest.mark.parametrize(
    ("constraint", "admitted"),
    [
        ('{"properties": ["ssd"]}', {"host0", "host1"}),
        ('{"properties": ["^ssd"]}', {"host2"}),
        ('{"hostlist": ["host[1-2]"]}', {"host1", "host2"}),
        ('{"not": [{"hostlist": ["host0"]}]}', {"host1", "host2"}),
        ('{"and": [{"hostlist": ["host[1-2]"]}, {"properties": ["ssd"]}]}', {"host1"}),
        ('{"or": [{"hostlist": ["host0"]}, {"properties": ["^ssd"]}]}', {"host0", "host2"}),
    ],
)
def test_flux_rfc31_constraints_place_exactly_on_the_admitted_nodes(
    solve: Solve, constraint: str, admitted: set[str]
) -> None:
    # As many one-node replicas as nodes admitted: they must use exactly those nodes...
    d = solve(read_text(FLUX % (len(admitted), constraint), source="job.yaml"), FLUX_CLUSTER)
    placed = d.placements
    assert len(placed) == 1 and {r.node for r in placed[0].replicas} == admitted
    # ...and one more replica can never run.
    d = solve(read_text(FLUX % (len(admitted) + 1, constraint), source="job.yaml"), FLUX_CLUSTER)
    assert d.placements == [] and d.pending[0].reasons[0].code == "UNSATISFIABLE"
