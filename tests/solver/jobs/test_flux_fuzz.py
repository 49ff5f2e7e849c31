"""Hypothesis: random and malformed jobspecs never make the Flux reader (or its parsers) raise.

Three layers: arbitrary JSON-like values; jobspec-shaped documents with random resource trees, counts,
tasks and attributes (the shape gets past the first checks so the deep code runs); and the string
grammars (idsets, ranges, hostlists, dependency URIs) fed random text from their own alphabets.
Every result must be a single ``ReadResult`` whose issues use only the allowed codes, and an ``ok``
result must carry a job whose totals are consistent.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.jobs.errors import ISSUE_CODES, Issue
from placer.solver.jobs.formats.flux import read
from placer.solver.jobs.formats.flux_constraints import read_constraints
from placer.solver.jobs.formats.flux_count import read_count
from placer.solver.jobs.formats.flux_dependencies import read_dependencies
from placer.solver.jobs.formats.flux_ids import FluxLimitError, FluxSyntaxError, expand_hostlist, parse_idset
from placer.solver.jobs.model import Job
from placer.solver.jobs.options import ReadOptions

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_like = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=8), st.integers()), inner, max_size=4),
    ),
    max_leaves=25,
)

ID_ALPHABET = "0123456789-,:+*^[] "
counts = st.one_of(
    st.integers(min_value=-3, max_value=40),
    st.integers(min_value=2**50, max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=ID_ALPHABET, max_size=10),
    st.fixed_dictionaries(
        {},
        optional={
            "min": st.one_of(st.integers(-2, 20), st.text(max_size=2), st.none()),
            "max": st.one_of(st.integers(-2, 40), st.none()),
            "operator": st.sampled_from(["+", "*", "^", "-", "", 3]),
            "operand": st.integers(-1, 4),
            "bogus": st.integers(),
        },
    ),
    st.booleans(),
    st.none(),
)
types = st.one_of(
    st.sampled_from(
        ["node", "slot", "core", "gpu", "socket", "memory", "storage", "cluster", "rack", "ib10g"]
    ),
    st.text(max_size=5),
    st.integers(),
)
labels = st.sampled_from(["default", "a", "b", ""])


def vertex(children: st.SearchStrategy[Any] | None, good: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """A resource vertex; ``good`` ones mostly pass the first checks so the mapping code runs."""
    kinds = st.sampled_from(["node", "slot", "core", "gpu", "socket", "memory", "ib10g"]) if good else types
    how_many = (
        st.one_of(st.integers(1, 4), st.sampled_from(["1-3", "2+", "2,3,5", {"min": 1}])) if good else counts
    )
    edges = st.lists(children, max_size=3) if children is not None else st.just([])
    optional: dict[str, st.SearchStrategy[Any]] = {
        "label": labels if good else st.one_of(labels, st.integers()),
        "exclusive": st.booleans(),
        "with": edges if good else st.one_of(edges, scalars),
    }
    if not good:
        optional.update(
            {
                "unit": st.sampled_from(["GB", "MiB", "furlong", "", 5]),
                "id": st.text(max_size=3),
                "x": st.integers(),
            }
        )
    return st.fixed_dictionaries({"type": kinds, "count": how_many}, optional=optional)


resource_trees = st.recursive(vertex(None), vertex, max_leaves=8)
good_trees = st.recursive(vertex(None, good=True), lambda c: vertex(c, good=True), max_leaves=8)

tasks = st.lists(
    st.fixed_dictionaries(
        {
            "command": st.one_of(st.lists(st.text(max_size=4), max_size=2), st.text(max_size=4), scalars),
            "slot": st.one_of(labels, scalars),
            "count": st.one_of(
                st.dictionaries(
                    st.sampled_from(["per_slot", "total", "per_resource", "per_node"]),
                    st.one_of(
                        st.integers(-2, 9),
                        st.fixed_dictionaries({"type": types, "count": st.integers(-1, 3)}),
                        scalars,
                    ),
                    max_size=2,
                ),
                scalars,
            ),
        },
        optional={"distribution": scalars, "attributes": json_like},
    ),
    max_size=3,
)

constraints = st.recursive(
    st.one_of(
        st.fixed_dictionaries(
            {"properties": st.lists(st.sampled_from(["a", "^b", "^", "", "c"]), max_size=3)}
        ),
        st.fixed_dictionaries({"hostlist": st.lists(st.text(alphabet="ab01-,[]", max_size=8), max_size=2)}),
        st.fixed_dictionaries({"ranks": st.lists(st.text(alphabet=ID_ALPHABET, max_size=6), max_size=2)}),
        json_like,
    ),
    lambda inner: st.dictionaries(
        st.sampled_from(["and", "or", "not", "xor"]), st.lists(inner, max_size=3), max_size=2
    ),
    max_leaves=10,
)

dependencies = st.one_of(
    st.lists(
        st.one_of(
            st.text(alphabet="afterokny-:?=&;x1", max_size=14),
            st.fixed_dictionaries(
                {},
                optional={
                    "scheme": st.sampled_from(
                        ["after", "afterok", "afterany", "begin-time", "fluid", "string", "x"]
                    ),
                    "value": st.one_of(st.text(max_size=6), st.floats(), st.integers()),
                    "type": st.sampled_from(["in", "out", "inout", "up"]),
                    "scope": st.sampled_from(["user", "global", "galaxy"]),
                },
            ),
            json_like,
        ),
        max_size=4,
    ),
    json_like,
)

system = st.fixed_dictionaries(
    {},
    optional={
        "duration": st.one_of(st.floats(), st.integers(-5, 10**6), st.text(max_size=3)),
        "preemptible-after": scalars,
        "queue": scalars,
        "bank": scalars,
        "cwd": st.one_of(st.sampled_from(["/a", "rel"]), scalars),
        "environment": json_like,
        "constraints": constraints,
        "dependencies": dependencies,
        "job": st.one_of(
            st.dictionaries(st.sampled_from(["name", "x"]), st.one_of(st.text(max_size=4), scalars)), scalars
        ),
        "shell": json_like,
        "files": json_like,
        "zzz": json_like,
    },
)

jobspecs = st.fixed_dictionaries(
    {},
    optional={
        "version": st.one_of(st.just(1), st.just(999), scalars),
        "resources": st.one_of(st.lists(resource_trees, min_size=1, max_size=3), json_like),
        "tasks": st.one_of(tasks, json_like),
        "attributes": st.one_of(
            st.fixed_dictionaries({}, optional={"system": st.one_of(system, scalars), "user": json_like}),
            json_like,
        ),
        "extra-key": json_like,
    },
)


valid_counts = st.one_of(
    st.integers(1, 6),
    st.sampled_from(["1-3", "2+", "2,3,5", "4,9,16", "[2-16:2:*]", "2-300:2:^"]),
    st.builds(lambda lo: {"min": lo}, st.integers(1, 4)),
    st.builds(
        lambda lo, n: {"min": lo, "max": lo + n, "operator": "+", "operand": 1},
        st.integers(1, 3),
        st.integers(0, 5),
    ),
)


@st.composite
def plausible_jobspecs(draw: st.DrawFn) -> dict[str, Any]:
    """Canonical jobspecs built to be mostly valid: chains of grouping vertices above one slot, random
    slot contents (nodes, sockets, cores, GPUs, memory...), every task count form, and attributes. The
    point is to reach the slot mapping and the range arithmetic with accepted documents."""

    def contents(depth: int) -> list[dict[str, Any]]:
        kids = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["core", "gpu", "memory", "storage", "socket", "node", "ib10g"]))
            v: dict[str, Any] = {"type": kind, "count": draw(valid_counts)}
            if kind in ("memory", "storage") and draw(st.booleans()):
                v["unit"] = draw(st.sampled_from(["GB", "MiB", "TB", "kb"]))
            if kind in ("socket", "node") and depth < 2 and draw(st.booleans()):
                v["with"] = contents(depth + 1)
            if draw(st.booleans()):
                v["exclusive"] = draw(st.booleans())
            kids.append(v)
        return kids

    top: dict[str, Any] = {
        "type": "slot",
        "label": "default",
        "count": draw(valid_counts),
        "with": contents(0),
    }
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["node", "cluster", "rack", "switch", "socket"]))
        top = {"type": kind, "count": draw(valid_counts), "with": [top]}
    count = draw(
        st.sampled_from(
            [{"per_slot": 1}, {"per_slot": 3}, {"total": 5}, {"per_resource": {"type": "core", "count": 2}}]
        )
    )
    return {
        "version": 999,
        "resources": [top],
        "tasks": [{"command": ["app"], "slot": "default", "count": count}],
        "attributes": {"system": draw(system)},
    }


def _check(doc: Any) -> None:
    results = read(doc, source="fuzz", options=ReadOptions())
    assert len(results) == 1
    [r] = results
    assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])
    if r.ok:
        assert isinstance(r.job, Job) and not r.errors
        assert r.job.id == r.id
        assert all(t.count >= 1 and t.cpu_cores >= 0 for t in r.job.tasks)
        assert r.job.total_gpus == sum(t.count * t.gpus_per_replica for t in r.job.tasks)
    else:
        assert r.job is None and r.errors


@given(json_like)
def test_arbitrary_values(doc: Any) -> None:
    _check(doc)


@given(jobspecs)
def test_jobspec_shaped_documents(doc: dict[str, Any]) -> None:
    _check(doc)


@given(st.lists(st.one_of(good_trees, resource_trees), min_size=1, max_size=2), st.sampled_from([1, 999]))
def test_random_resource_trees_with_valid_surroundings(resources: list[Any], version: int) -> None:
    doc = {
        "version": version,
        "resources": resources,
        "tasks": [{"command": ["app"], "slot": "default", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 60}},
    }
    _check(doc)


@given(plausible_jobspecs())
def test_plausible_jobspecs(doc: dict[str, Any]) -> None:
    _check(doc)


@given(counts)
def test_counts(value: Any) -> None:
    issues: list[Issue] = []
    r = read_count(value, "count", issues)
    assert (r is None) == bool(issues)
    if r is not None:
        assert r.min >= 1 and r.values(64) == sorted(set(r.values(64)))


@given(constraints)
def test_constraints(value: Any) -> None:
    issues: list[Issue] = []
    rules = read_constraints(value, "c", issues)
    assert all(i.code in ISSUE_CODES for i in issues)
    assert not (issues and rules)


@given(dependencies)
def test_dependencies(value: Any) -> None:
    r = read_dependencies(value, "d")
    assert all(i.code in ISSUE_CODES for i in r.issues)


@given(st.text(alphabet="ab01-,[]xy \t", max_size=16))
def test_hostlists_and_idsets(text: str) -> None:
    for parse in (expand_hostlist, parse_idset):
        with contextlib.suppress(FluxSyntaxError, FluxLimitError):
            parse(text)
