"""Hypothesis: random and malformed SSS documents never make the reader raise.

Trees mix the spec's element names (so the deep paths are reached: expressions, task groups, defaults)
with unknown ones, random attributes (including the meaningful ``op``/``conj``/``group``/``preference``/
``units``/``awarenessPolicy`` with random values) and random text; byte noise and mangled documents
cover the parser side. Every result must be a well-formed :class:`ReadResult` with known issue codes.
"""

from __future__ import annotations

from xml.sax.saxutils import escape, quoteattr

from hypothesis import given
from hypothesis import strategies as st

from placer.solver.jobs.errors import ISSUE_CODES
from placer.solver.jobs.formats.sss import read
from placer.solver.jobs.model import ReadResult
from placer.solver.jobs.options import ReadOptions

KNOWN = [
    "Job",
    "JobGroup",
    "JobDefaults",
    "JobId",
    "JobName",
    "JobGroupId",
    "Requested",
    "Delivered",
    "TaskGroup",
    "TaskGroupDefaults",
    "Task",
    "TaskDefaults",
    "TaskCount",
    "TaskGroupName",
    "Processors",
    "Memory",
    "Disk",
    "Swap",
    "Network",
    "Resource",
    "NodeCount",
    "NodeProperties",
    "Feature",
    "Name",
    "NodeList",
    "Node",
    "WallDuration",
    "Dependency",
    "TaskDistribution",
    "UserId",
    "ProjectId",
    "AccountName",
    "GroupId",
    "Queue",
    "QualityOfService",
    "Priority",
    "ReservationId",
    "SubmissionTime",
    "StartTime",
    "Environment",
    "Variable",
    "Extension",
    "ResourceLimit",
    "Partition",
    "Checkpointable",
    "Restartable",
    "Executable",
]
UNKNOWN = ["Foo", "Bar", "x", "Data"]
ATTRS = [
    "op",
    "conj",
    "group",
    "preference",
    "units",
    "awarenessPolicy",
    "name",
    "type",
    "code",
    "dedicated",
    "dynamic",
    "metric",
    "wallDuration",
    "consumptionRate",
    "redirect",
    "bogus",
]
VALUES = [
    "EQ",
    "NE",
    "LT",
    "GT",
    "LE",
    "GE",
    "Match",
    "And",
    "Or",
    "Nand",
    "Nor",
    "1",
    "-1",
    "2",
    "-3",
    "0",
    "GB",
    "KB",
    "x",
    "Reject",
    "Warn",
    "Ignore",
    "GPU",
    "TPU",
    "OnExit",
    "OnFailure",
    "TasksPerNode",
    "Geometry",
    "true",
    "1.5",
    "",
]
TEXTS = [
    "",
    "1",
    "0",
    "-4",
    "12",
    "2.5",
    "1e3",
    "3600",
    "1:00:00",
    "PT1H",
    "fr15n.*",
    "(a|b)+",
    "k=v",
    "a",
    "NaN",
    "99999999999999999999",
    "1051557713",
    "[",
    "\\",
]

_text = st.one_of(st.sampled_from(TEXTS), st.text(max_size=12))
_attrs = st.dictionaries(
    st.sampled_from(ATTRS), st.one_of(st.sampled_from(VALUES), st.text(max_size=6)), max_size=3
)


def _render(tag: str, attrs: dict[str, str], body: str) -> str:
    a = "".join(f" {k}={quoteattr(v)}" for k, v in attrs.items())
    return f"<{tag}{a}>{body}</{tag}>"


_tree = st.recursive(
    st.builds(lambda t, a, x: _render(t, a, escape(x)), st.sampled_from(KNOWN + UNKNOWN), _attrs, _text),
    lambda kids: st.builds(
        lambda t, a, ks: _render(t, a, "".join(ks)),
        st.sampled_from(KNOWN + UNKNOWN),
        _attrs,
        st.lists(kids, max_size=5),
    ),
    max_leaves=25,
)
_document = st.builds(
    lambda root, a, ks: _render(root, a, "".join(ks)),
    st.sampled_from(["Job", "JobGroup", "Data", "Request", "Foo"]),
    _attrs,
    st.lists(_tree, max_size=6),
)
_policy = st.sampled_from(["Reject", "Warn", "Ignore"])


def _check(results: list[ReadResult]) -> None:
    assert results
    for r in results:
        assert isinstance(r, ReadResult)
        assert r.ok == (r.job is not None) and (r.ok or r.errors)
        assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])


@given(_document, _policy)
def test_random_trees_never_raise(doc: str, policy: str) -> None:
    _check(read(doc, source="fuzz.xml", options=ReadOptions(sss_awareness=policy)))


@given(_document, st.integers(min_value=0, max_value=400), st.text(max_size=8))
def test_mangled_documents_never_raise(doc: str, at: int, junk: str) -> None:
    at = min(at, len(doc))
    _check(read(doc[:at] + junk + doc[at:], source="fuzz.xml", options=ReadOptions()))


@given(st.binary(max_size=200))
def test_byte_noise_never_raises(noise: bytes) -> None:
    _check(read(noise, source="noise", options=ReadOptions()))
    _check(read(noise.decode("latin-1"), source="noise", options=ReadOptions()))


@given(st.text(max_size=200))
def test_text_noise_never_raises(noise: str) -> None:
    _check(read("<Job>" + noise, source="noise", options=ReadOptions()))
