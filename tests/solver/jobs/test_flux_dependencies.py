"""RFC 26 dependencies: schemes, the URI-like form, begin-time, and invalid entries."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from placer.solver.jobs.formats.flux_dependencies import parse_dependency_uri, read_dependencies
from placer.solver.jobs.model import DependencyCondition

D = "attributes.system.dependencies"


@pytest.mark.parametrize(
    ("entry", "condition"),
    [
        ({"scheme": "after", "value": "f2oLkTLb"}, DependencyCondition.START),
        ({"scheme": "afterok", "value": "f2oLkTLb"}, DependencyCondition.SUCCESS),
        ({"scheme": "afternotok", "value": "f2oLkTLb"}, DependencyCondition.FAILURE),
        ({"scheme": "afterany", "value": "f2oLkTLb"}, DependencyCondition.EXIT),
        ("after:f2oLkTLb", DependencyCondition.START),
        ("afterok:f2oLkTLb", DependencyCondition.SUCCESS),
        ("afternotok:f2oLkTLb", DependencyCondition.FAILURE),
        ("afterany:f2oLkTLb", DependencyCondition.EXIT),
    ],
)
def test_job_state_schemes(entry: Any, condition: DependencyCondition) -> None:
    r = read_dependencies([entry], D)
    assert r.issues == []
    [dep] = r.dependencies
    assert (dep.job, dep.condition) == ("f2oLkTLb", condition)
    assert dep.scheme == (entry["scheme"] if isinstance(entry, dict) else entry.split(":")[0])
    assert r.other == []


def test_rfc26_uri_example_with_fluid_unicode() -> None:
    """The RFC's own ``afterany:ƒ2oLkTLb`` (an F58 job id with the ƒ prefix)."""
    [dep] = read_dependencies(["afterany:ƒ2oLkTLb"], D).dependencies
    assert (dep.job, dep.condition) == ("ƒ2oLkTLb", DependencyCondition.EXIT)


def test_uri_form_parsing() -> None:
    assert parse_dependency_uri("string:foo?type=out") == {"scheme": "string", "value": "foo", "type": "out"}
    assert parse_dependency_uri("string:foo?type=in;scope=global") == {
        "scheme": "string",
        "value": "foo",
        "type": "in",
        "scope": "global",
    }
    assert parse_dependency_uri("begin-time:1700000000.5") == {
        "scheme": "begin-time",
        "value": "1700000000.5",
    }
    for bad in ("afterok", ":x", "a:b?c", "a:b?=c", "a:b?x=1&x=2"):
        with pytest.raises(ValueError):
            parse_dependency_uri(bad)


def test_rfc26_uri_examples_lack_required_keys() -> None:
    """``string:foo?type=out`` and ``fluid:...`` omit the type/scope RFC 26 calls REQUIRED for these
    schemes: parsed, then refused with ``required`` (documented in the module)."""
    r = read_dependencies(["string:foo?type=out", "fluid:hungry-hippos-white-elephant"], D)
    assert [(i.code, i.path) for i in r.issues] == [
        ("required", f"{D}[0].scope"),
        ("required", f"{D}[1].type"),
        ("required", f"{D}[1].scope"),
    ]
    ok = read_dependencies(["string:foo?type=out&scope=user"], D)
    assert ok.issues == [] and ok.other == [
        {"scheme": "string", "value": "foo", "type": "out", "scope": "user"}
    ]


def test_begin_time() -> None:
    r = read_dependencies(
        [{"scheme": "begin-time", "value": "1735689600"}, {"scheme": "begin-time", "value": 1735689600.5}], D
    )
    assert r.issues == [] and r.dependencies == []
    # both must hold: the later one
    assert r.not_before == datetime(2025, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    r = read_dependencies(["begin-time:0"], D)
    assert r.not_before == datetime(1970, 1, 1, tzinfo=UTC)


def test_fluid_in_and_out() -> None:
    r = read_dependencies(
        [
            {"scheme": "fluid", "value": "abc", "type": "inout", "scope": "user"},
            {"scheme": "fluid", "value": "def", "type": "out", "scope": "user"},
        ],
        D,
    )
    assert [(d.job, d.condition) for d in r.dependencies] == [("abc", DependencyCondition.EXIT)]
    assert [o["value"] for o in r.other] == ["abc", "def"]


def test_unknown_schemes_are_kept() -> None:
    r = read_dependencies([{"scheme": "singleton", "value": ""}, "custom:x?level=3"], D)
    assert r.issues == [] and r.dependencies == []
    assert r.other == [{"scheme": "singleton", "value": ""}, {"scheme": "custom", "value": "x", "level": "3"}]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"scheme": "afterok", "value": "x"}, [("type", D)]),
        ([], [("range", D)]),  # "SHALL NOT be added" when there are none
        ([3], [("type", f"{D}[0]")]),
        (["afterok"], [("malformed", f"{D}[0]")]),
        (["a:b?x"], [("malformed", f"{D}[0]")]),
        ([{"value": "x"}], [("required", f"{D}[0].scheme")]),
        ([{"scheme": "afterok"}], [("required", f"{D}[0].value")]),
        ([{"scheme": "afterok", "value": ""}], [("range", f"{D}[0].value")]),
        (["afterok:"], [("range", f"{D}[0].value")]),
        ([{"scheme": "afterok", "value": 5}], [("type", f"{D}[0].value")]),
        ([{"scheme": 7, "value": "x"}], [("type", f"{D}[0].scheme")]),
        (
            [{"scheme": "string", "value": "x", "type": "sideways", "scope": "user"}],
            [("enum", f"{D}[0].type")],
        ),
        ([{"scheme": "string", "value": "x", "type": "in", "scope": "world"}], [("enum", f"{D}[0].scope")]),
        ([{"scheme": "begin-time", "value": "soon"}], [("type", f"{D}[0].value")]),
        ([{"scheme": "begin-time", "value": True}], [("type", f"{D}[0].value")]),
        ([{"scheme": "begin-time", "value": "nan"}], [("range", f"{D}[0].value")]),
        ([{"scheme": "begin-time", "value": 1e300}], [("range", f"{D}[0].value")]),
        ([{"scheme": "begin-time"}], [("required", f"{D}[0].value")]),
        (["afterok:a", {"scheme": "afterok", "value": "a"}], [("conflict", f"{D}[1]")]),  # unique items
    ],
)
def test_invalid_dependencies(value: Any, expected: list[tuple[str, str]]) -> None:
    r = read_dependencies(value, D)
    assert [(i.code, i.path) for i in r.issues] == expected
    assert r.dependencies == [] or expected[0][0] == "conflict"


def test_schema_is_stricter_than_rfc_text_for_after_schemes(specs_dir: Path) -> None:
    """spec_26/schema.json requires type and scope on every entry; the RFC text only on string/fluid."""
    schema = json.loads((specs_dir / "flux-examples" / "spec_26" / "schema.json").read_text())
    deps = [{"scheme": "afterok", "value": "f2oLkTLb"}]
    assert not jsonschema.validators.validator_for(schema)(schema).is_valid(deps)
    assert read_dependencies(deps, D).issues == []
