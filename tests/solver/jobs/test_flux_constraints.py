"""RFC 31 constraints: every example of the RFC, the empty-operand rules, and malformed constraints."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.errors import Issue
from placer.solver.jobs.formats.flux_constraints import NEVER, read_constraints
from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, Not, Rule

EXISTS = AffinityOperator.EXISTS
ABSENT = AffinityOperator.DOES_NOT_EXIST
IN = AffinityOperator.IN
C = "attributes.system.constraints"


def _rules(value: Any) -> list[Rule]:
    issues: list[Issue] = []
    rules = read_constraints(value, C, issues)
    assert issues == []
    return rules


def _issues(value: Any, limit: int = 100_000) -> list[tuple[str, str]]:
    issues: list[Issue] = []
    assert read_constraints(value, C, issues, limit=limit) == []
    return [(i.code, i.path) for i in issues]


def prop(name: str, op: AffinityOperator = EXISTS) -> LabelRule:
    return LabelRule(key=name, operator=op)


@pytest.mark.parametrize(
    ("constraint", "rules"),
    [  # the RFC 31 "Examples" section, one by one
        ({"properties": ["ssd"]}, [prop("ssd")]),
        ({"properties": ["^slowgpu"]}, [prop("slowgpu", ABSENT)]),
        ({"not": [{"properties": ["slowgpu"]}]}, [Not(rule=prop("slowgpu"))]),
        (
            {"or": [{"properties": ["ssd"]}, {"properties": ["huge"]}]},
            [AnyOf(rules=[prop("ssd"), prop("huge")])],
        ),
        ({"hostlist": ["host[0-1]"]}, [LabelRule(key="hostname", operator=IN, values=["host0", "host1"])]),
        (
            {"not": [{"hostlist": ["host[0-1]"]}]},
            [Not(rule=LabelRule(key="hostname", operator=IN, values=["host0", "host1"]))],
        ),
        (
            {"and": [{"hostlist": ["host[0-1]"]}, {"properties": ["ssd"]}]},
            [LabelRule(key="hostname", operator=IN, values=["host0", "host1"]), prop("ssd")],
        ),
        ({"ranks": ["0"]}, [LabelRule(key="rank", operator=IN, values=["0"])]),
        # "to constrain a job to only those resources that do not have a set of attributes foo and bar"
        ({"not": [{"properties": ["foo", "bar"]}]}, [Not(rule=AllOf(rules=[prop("foo"), prop("bar")]))]),
    ],
)
def test_rfc31_examples(constraint: dict[str, Any], rules: list[Rule]) -> None:
    assert _rules(constraint) == rules


def test_empty_operands() -> None:
    """RFC 31: {} / {"or": []} / {"and": []} always match; {"not": []} matches nothing."""
    assert _rules({}) == []
    assert _rules({"or": []}) == []
    assert _rules({"and": []}) == []
    assert _rules({"not": []}) == [NEVER]
    assert Not(rule=AllOf(rules=[])) == NEVER
    # an always-true operand makes an "or" always true; inside "and" it drops out
    assert _rules({"or": [{}, {"properties": ["a"]}]}) == []
    assert _rules({"and": [{}, {"properties": ["a"]}]}) == [prop("a")]
    # "not" of several operands negates their AND (flux-core)
    assert _rules({"not": [{"properties": ["a"]}, {"ranks": ["1"]}]}) == [
        Not(rule=AllOf(rules=[prop("a"), LabelRule(key="rank", operator=IN, values=["1"])]))
    ]


def test_properties_are_anded_and_nested_ands_flatten() -> None:
    assert _rules({"and": [{"properties": ["h100", "^drain"]}, {"and": [{"ranks": ["0-2,7"]}]}]}) == [
        prop("h100"),
        prop("drain", ABSENT),
        LabelRule(key="rank", operator=IN, values=["0", "1", "2", "7"]),
    ]


def test_hostlists_and_ranks_union() -> None:
    assert _rules({"hostlist": ["n[1-2]", "n2,x"]}) == [
        LabelRule(key="hostname", operator=IN, values=["n1", "n2", "x"])
    ]
    assert _rules({"ranks": ["3-4", "0,4"]}) == [LabelRule(key="rank", operator=IN, values=["0", "3", "4"])]
    # an empty hostlist or idset names no node: nothing matches
    assert _rules({"hostlist": [""]}) == [NEVER]
    assert _rules({"ranks": ["[]"]}) == [NEVER]


def test_or_of_nested() -> None:
    got = _rules(
        {"or": [{"and": [{"properties": ["a"]}, {"properties": ["b"]}]}, {"not": [{"properties": ["c"]}]}]}
    )
    assert got == [AnyOf(rules=[AllOf(rules=[prop("a"), prop("b")]), Not(rule=prop("c"))])]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("ssd", [("type", C)]),
        ([{"properties": ["a"]}], [("type", C)]),
        ({"xor": [{"properties": ["a"]}]}, [("enum", f"{C}.xor")]),
        ({"properties": ["a"], "ranks": ["0"]}, [("malformed", C)]),  # one operator per object
        ({"properties": "ssd"}, [("type", f"{C}.properties")]),
        ({"properties": []}, [("range", f"{C}.properties")]),
        ({"hostlist": []}, [("range", f"{C}.hostlist")]),
        ({"ranks": []}, [("range", f"{C}.ranks")]),
        ({"properties": ["a", 1]}, [("type", f"{C}.properties[1]")]),
        ({"properties": ["^"]}, [("range", f"{C}.properties[0]")]),
        ({"properties": [""]}, [("range", f"{C}.properties[0]")]),
        ({"properties": ["^^a"]}, [("range", f"{C}.properties[0]")]),
        ({"hostlist": ["node[1-"]}, [("malformed", f"{C}.hostlist[0]")]),
        ({"hostlist": [7]}, [("type", f"{C}.hostlist[0]")]),
        ({"ranks": ["3,1"]}, [("malformed", f"{C}.ranks[0]")]),
        ({"ranks": [0]}, [("type", f"{C}.ranks[0]")]),
        ({"and": {"properties": ["a"]}}, [("type", f"{C}.and")]),
        ({"and": ["a"]}, [("type", f"{C}.and[0]")]),
        ({"and": [{"or": [{"bogus": []}]}]}, [("enum", f"{C}.and[0].or[0].bogus")]),
        ({"not": [{"properties": ["a"]}, {"hostlist": ["x["]}]}, [("malformed", f"{C}.not[1].hostlist[0]")]),
    ],
)
def test_invalid_constraints(constraint: Any, expected: list[tuple[str, str]]) -> None:
    assert _issues(constraint) == expected


def test_expansion_limit_covers_the_whole_constraint() -> None:
    assert _issues({"ranks": ["0-1000000"]}) == [("limit", f"{C}.ranks[0]")]
    both = {"and": [{"hostlist": ["a[1-6]"]}, {"hostlist": ["b[1-6]"]}]}
    assert _issues(both, limit=10) == [("limit", f"{C}.and[1].hostlist[0]")]
