"""RFC 14 counts (integer, RFC 22 idset, RFC 45 range string, range object), the compact string grammars,
and the range arithmetic used to multiply counts down a resource tree."""

from __future__ import annotations

from typing import Any

import pytest

from placer.solver.jobs.errors import Issue
from placer.solver.jobs.formats.flux_count import MAX_COUNT, fixed, product, read_count, scale, sum_of
from placer.solver.jobs.formats.flux_ids import (
    FluxLimitError,
    FluxSyntaxError,
    expand_hostlist,
    parse_idset,
    parse_range_string,
)
from placer.solver.jobs.model import CountRange


def _count(value: Any) -> tuple[CountRange | None, list[tuple[str, str]]]:
    issues: list[Issue] = []
    r = read_count(value, "resources[0].with[1].count", issues)
    return r, [(i.code, i.path) for i in issues]


P = "resources[0].with[1].count"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (4, CountRange(min=4, max=4)),
        (4.0, CountRange(min=4, max=4)),  # JSON has one number type
        ({"min": 2}, CountRange(min=2)),
        ({"min": 3, "max": 30, "operator": "+", "operand": 1}, CountRange(min=3, max=30)),
        (
            {"min": 2, "max": 16, "operator": "*", "operand": 2},
            CountRange(min=2, max=16, operator="*", operand=2),
        ),
        ("3-30", CountRange(min=3, max=30)),
        ("[3-30]", CountRange(min=3, max=30)),
        ("4", CountRange(min=4, max=4)),
        ("100+", CountRange(min=100)),
        ("1-5:2", CountRange(min=1, max=5, operand=2)),
        ("2-16:2:*", CountRange(min=2, max=16, operator="*", operand=2)),
        ("[2-300:2:^]", CountRange(min=2, max=300, operator="^", operand=2)),
        ("2+:2:*", CountRange(min=2, operator="*", operand=2)),
        ("2,4,6", CountRange(min=2, max=6, operand=2)),  # an arithmetic idset is an ordinary range
        ("4,9,16,25", CountRange(min=4, max=25, idset=(4, 9, 16, 25))),
    ],
)
def test_valid_counts(value: Any, expected: CountRange) -> None:
    got, issues = _count(value)
    assert issues == []
    assert got == expected


@pytest.mark.parametrize(
    ("value", "values"),
    [
        ("2-16:2:*", [2, 4, 8, 16]),
        ("2-300:2:^", [2, 4, 16, 256]),
        ("1-5:2", [1, 3, 5]),
        ("4,9,16,25", [4, 9, 16, 25]),
        ({"min": 3, "max": 10, "operator": "+", "operand": 3}, [3, 6, 9]),
    ],
)
def test_resolved_values(value: Any, values: list[int]) -> None:
    got, _ = _count(value)
    assert got is not None
    assert got.values(1000) == values


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, [("range", P)]),  # "a single positive integer"
        (-3, [("range", P)]),
        (2.5, [("type", P)]),
        (True, [("type", P)]),
        (None, [("type", P)]),
        ([4], [("type", P)]),
        ("abc", [("malformed", P)]),
        ("3,1", [("malformed", P)]),  # RFC 22: ascending
        ("1,1", [("malformed", P)]),  # RFC 22: unique
        ("01", [("malformed", P)]),  # RFC 22: no leading zeros
        ("[1-3", [("malformed", P)]),
        ("5-3", [("malformed", P)]),  # an idset range running backwards
        ("4:2", [("malformed", P)]),  # RFC 45: ':operand' needs min-max or min+
        ("1-5::*", [("malformed", P)]),
        ("1 - 5", [("malformed", P)]),
        ("", [("range", P)]),  # the empty idset lists no count
        ("0-4", [("range", P)]),  # counts are positive
        ("5-3:1", [("range", P)]),  # RFC 45 form: max < min
        ("1-8:1:*", [("range", P)]),  # operand >= 2 with *
        ("1-8:2:^", [("range", P)]),  # min >= 2 with ^
        ({}, [("required", f"{P}.min")]),
        ({"min": 0}, [("range", f"{P}.min")]),
        ({"min": -1}, [("range", f"{P}.min")]),
        ({"min": "2"}, [("type", f"{P}.min")]),
        ({"min": 1.5}, [("type", f"{P}.min")]),
        ({"min": 4, "max": 2, "operator": "+", "operand": 1}, [("range", f"{P}.max")]),
        ({"min": 1, "max": 8, "operator": "*", "operand": 1}, [("range", f"{P}.operand")]),
        ({"min": 1, "max": 8, "operator": "^", "operand": 2}, [("range", f"{P}.min")]),
        ({"min": 2, "max": 8, "operator": "^", "operand": 1}, [("range", f"{P}.operand")]),
        ({"min": 2, "max": 8, "operator": "-", "operand": 1}, [("enum", f"{P}.operator")]),
        ({"min": 2, "max": 8, "operator": "+", "operand": 0}, [("range", f"{P}.operand")]),
        ({"min": 2, "max": 8}, [("required", f"{P}.operator"), ("required", f"{P}.operand")]),
        ({"min": 2, "operand": 2}, [("required", f"{P}.max"), ("required", f"{P}.operator")]),
        ({"min": 2, "step": 1}, [("malformed", f"{P}.step")]),
        (2**60, [("limit", P)]),
        ("1-99999999999999999", [("limit", P)]),
        ("1,3," + ",".join(str(i) for i in range(10, 40000, 3)) + ",40001", [("limit", P)]),
    ],
)
def test_invalid_counts(value: Any, expected: list[tuple[str, str]]) -> None:
    got, issues = _count(value)
    assert got is None
    assert issues == expected


def test_idset_grammar() -> None:
    assert parse_idset("[0-2,5,7-8]") == [(0, 2), (5, 5), (7, 8)]
    assert parse_idset("") == []
    for bad in ("1-", "-1", "1,,2", "a", "1-2-3", "2,1", "1-3,3", "[1", "1]", "+1", " 1", "00"):
        with pytest.raises(FluxSyntaxError):
            parse_idset(bad)


def test_range_string_grammar() -> None:
    assert parse_range_string("[100+]") == (100, None, 1, "+")
    assert parse_range_string("1-4:2:*") == (1, 4, 2, "*")
    for bad in ("4", "4:2", "01-4", "1-04", "1-4:02", "1-4:2:/", "1-4:2:*:", "[1-4", "1+-4"):
        with pytest.raises(FluxSyntaxError):
            parse_range_string(bad)


@pytest.mark.parametrize(
    ("text", "hosts"),
    [  # RFC 29 test vectors
        ("", []),
        ("foox,fooy,fooz", ["foox", "fooy", "fooz"]),
        ("[1-3,5-6]", ["1", "2", "3", "5", "6"]),
        ("foo[1-5]", ["foo1", "foo2", "foo3", "foo4", "foo5"]),
        ("foo[0-4]-eth2", ["foo0-eth2", "foo1-eth2", "foo2-eth2", "foo3-eth2", "foo4-eth2"]),
        ("foo1,foo1,foo1", ["foo1", "foo1", "foo1"]),
        ("[00-02]", ["00", "01", "02"]),
        ("[00-2]", ["00", "01", "02"]),
        ("foo[1,1,2,1]", ["foo1", "foo1", "foo2", "foo1"]),
        ("node[1-3,5],login0", ["node1", "node2", "node3", "node5", "login0"]),
        ("n[005,4,11-12]", ["n005", "n004", "n011", "n012"]),  # "leading zeros of the first element"
    ],
)
def test_hostlist_vectors(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


def test_hostlist_errors() -> None:
    for bad in ("node[1-", "node]1[", "a[1][2]", "a[[1]]", "a[]", "a[3-1]", "a[x]", "a b", "a[1-2]b[3]"):
        with pytest.raises(FluxSyntaxError):
            expand_hostlist(bad)
    with pytest.raises(FluxLimitError):
        expand_hostlist("node[0-999999999999]")
    with pytest.raises(FluxLimitError):
        expand_hostlist("a[1-6],b[1-6]", limit=10)


def test_range_arithmetic() -> None:
    # 2 x (3..30 step 1) = 6..60 step 2, exact
    r, exact = scale(CountRange(min=3, max=30), 2)
    assert exact and r.values(1000) == list(range(6, 61, 2))
    # 3 x (2, 4, 8, 16) = (6, 12, 24, 48), exact
    r, exact = scale(CountRange(min=2, max=16, operator="*", operand=2), 3)
    assert exact and r.values(1000) == [6, 12, 24, 48]
    # 2 x (2, 4, 16, 256) has no ^ form: relaxed to 4..512
    r, exact = scale(CountRange(min=2, max=256, operator="^", operand=2), 2)
    assert not exact and (r.min, r.max, r.operator, r.operand) == (4, 512, "+", 1)
    # idsets scale exactly
    r, exact = scale(CountRange(min=4, max=9, idset=(4, 9)), 2)
    assert exact and r.values(100) == [8, 18]
    # sums of 2 values of 1, 4, 7 (max 8: 7 is the last on the sequence) are 2..14 step 3
    r, exact = sum_of(CountRange(min=1, max=8, operand=3), 2)
    assert exact and r.values(100) == [2, 5, 8, 11, 14]
    r, exact = sum_of(CountRange(min=2, max=8, operator="*", operand=2), 2)
    assert not exact and (r.min, r.max) == (4, 16)
    # one range among fixed factors is exact, two ranges are not
    r, exact = product([fixed(2), CountRange(min=1, max=4), fixed(3)])
    assert exact and r.values(100) == [6, 12, 18, 24]
    r, exact = product([CountRange(min=1, max=4), CountRange(min=2)])
    assert not exact and (r.min, r.max) == (2, None)
    assert product([fixed(2), fixed(5)]) == (fixed(10), True)
    assert MAX_COUNT == 2**53
