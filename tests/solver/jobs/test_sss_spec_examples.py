"""The SSS spec's own XML examples: raw ones (word-processor quotes, broken tags) are rejected with a
message naming the problem; the corrected fixtures read, and their values match the spec text.

The raw examples are extracted from ``sss-job-object.txt`` at test time (never copied). Fragments (one
element, e.g. §5.1.6's Dependency) are wrapped in a minimal ``<Job>`` exactly as their fixture is; the
fixture check below proves each fixture is the raw example with only the documented corrections.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from placer.solver.jobs.formats.sss import read
from placer.solver.jobs.model import AffinityOperator, CountRange, DependencyCondition, LabelRule
from placer.solver.jobs.options import ReadOptions
from tests.conftest import FIXTURES

SSS_FIXTURES = FIXTURES / "sss"
GIB = 2**30 / 2**30  # placer's GB is 2^30 bytes (docs/inventory.md, Units)  # GB per Appendix A gigabyte
MIB = 2**20 / 2**30  # GB per Appendix A megabyte

_HEADING = re.compile(r"^(\d+(?:\.\d+)*)\.? [A-Z]")
_CURLY = {"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'"}

#: Section -> how the spec introduces its examples ("The following are four examples", ...): the count.
EXPECTED_COUNTS = {
    "1.3.1": 1,
    "1.3.2": 1,
    "1.3.3": 1,
    "5.1.1.1": 1,
    "5.1.1.2": 1,
    "5.1.1.3": 1,
    "5.1.1.4": 1,
    "5.1.3.1": 1,
    "5.1.4.1": 1,
    "5.1.5": 3,
    "5.1.6": 1,
    "5.1.7": 2,
    "5.1.8": 2,
    "5.1.10": 1,
    "8.1": 4,
    "8.2": 4,
}

#: Broken tags in the raw examples and their fixes: (section, example index) -> [(broken, fixed)].
TAG_FIXES: dict[tuple[str, int], list[tuple[str, str]]] = {
    ("1.3.3", 0): [
        ("<Environment></JobDefaults>", "</Environment></JobDefaults>"),
        ("</Delivered><WallDuration>1155", "<Delivered><WallDuration>1155"),
        ("<Memory>2048<Memory>", "<Memory>2048</Memory>"),
        # the Slave group's alternatives close (-1) before they open (1): signs swapped
        ('<Processors group="-1">12', '<Processors group="1">12'),
        ('<Processors conj="Or" group="1">16', '<Processors conj="Or" group="-1">16'),
    ],
    ("8.1", 1): [("</NodeProperties><Requested>", "</NodeProperties></Requested>")],
}

#: How a fragment example is made a job document (the fixture uses the same wrapping).
WRAP: dict[str, tuple[str, str]] = {
    "5.1.3.1": ("<Environment>", "</Environment>"),
    "5.1.4.1": ("<NodeList>", "</NodeList>"),
}


def _sections(spec: str) -> dict[str, list[str]]:
    """Body lines of every numbered section after the table of contents."""
    lines = spec.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "1. Introduction")
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in lines[start:]:
        m = _HEADING.match(line.strip())
        if m and len(line.strip()) < 80:
            current = m.group(1)
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def extract_examples(spec: str, section: str) -> list[str]:
    """The XML examples of ``section``: blocks after the sentence introducing them, one per root element.

    A block ends at its root's closing tag, or at a repeated *opening* root tag at depth one (the spec's
    word-processor typo ``<Requested>`` for ``</Requested>``).
    """
    body = _sections(spec)[section]
    intro = next(i for i, line in enumerate(body) if re.search(r"\bexamples?\b", line, re.I))
    examples: list[str] = []
    block: list[str] = []
    root: str | None = None
    depth = 0
    for raw in body[intro + 1 :]:
        line = raw.strip()
        if not line:
            continue
        if root is None:
            if not line.startswith("<"):
                continue
            root = re.match(r"<([A-Za-z]+)", line).group(1)  # type: ignore[union-attr]
            block, depth = [], 0
        block.append(line)
        if line == f"<{root}>" and depth == 1:
            depth = 0
        else:
            depth += len(re.findall(rf"<{root}[\s>]", line)) - len(re.findall(rf"</{root}>", line))
        if depth <= 0:
            examples.append("\n".join(block))
            root = None
    return examples


def _straighten(xml: str) -> str:
    return "".join(_CURLY.get(c, c) for c in xml)


def _squash(xml: str) -> str:
    """Whitespace between tags removed, comments dropped: to compare documents structurally."""
    xml = re.sub(r"<!--.*?-->", "", xml, flags=re.S)
    return re.sub(r">\s+<", "><", xml.strip())


def wrap(section: str, index: int, fragment: str) -> str:
    """A fragment example as a job document (complete examples are returned unchanged)."""
    if section.startswith("1.3."):
        return fragment
    pre, post = WRAP.get(section, ("", ""))
    return f"<Job>\n<JobId>spec-{section}-{'abcd'[index]}</JobId>\n{pre}\n{fragment}\n{post}\n</Job>\n"


def fixture_name(section: str, index: int) -> str:
    suffix = f"_{'abcd'[index]}" if EXPECTED_COUNTS[section] > 1 else ""
    return f"sec{section.replace('.', '_')}{suffix}.xml"


def corrected(section: str, index: int, raw: str) -> str:
    """The raw example with straight quotes and the documented tag fixes (squashed form)."""
    fixed = _squash(_straighten(wrap(section, index, raw)))
    for broken, good in TAG_FIXES.get((section, index), []):
        assert broken in fixed, f"expected typo {broken!r} not found in §{section} example {index}"
        fixed = fixed.replace(broken, good)
    return fixed


ALL = [(s, i) for s, n in EXPECTED_COUNTS.items() for i in range(n)]


@pytest.fixture(scope="module")
def spec(specs_dir: Path) -> str:
    return (specs_dir / "sss-job-object.txt").read_text(encoding="utf-8")


def _read(xml: str, **opts: str) -> list:
    return read(xml, source="t.xml", options=ReadOptions(**opts))


def _fixture(section: str, index: int) -> str:
    return (SSS_FIXTURES / fixture_name(section, index)).read_text(encoding="utf-8")


# -- extraction and fixture fidelity -----------------------------------------------------------------


@pytest.mark.parametrize("section", list(EXPECTED_COUNTS))
def test_extraction_finds_the_announced_number_of_examples(spec: str, section: str) -> None:
    assert len(extract_examples(spec, section)) == EXPECTED_COUNTS[section]


@pytest.mark.parametrize(("section", "index"), ALL)
def test_fixture_is_the_raw_example_with_only_documented_corrections(
    spec: str, section: str, index: int
) -> None:
    raw = extract_examples(spec, section)[index]
    text = _fixture(section, index)
    assert text.startswith("<!--") and "Corrected" in text.split("-->", 1)[0]
    assert _squash(text) == corrected(section, index, raw)
    assert not set(text) & set(_CURLY)


@pytest.mark.parametrize(("section", "index"), ALL)
def test_corrected_fixture_reads(section: str, index: int) -> None:
    opts = {"sss_awareness": "Warn"} if (section, index) == ("5.1.5", 2) else {}
    results = _read(_fixture(section, index), **opts)
    assert results and all(r.ok for r in results), [e for r in results for e in r.errors]
    assert all(r.job is not None and r.job.source_format == "sss" for r in results)


@pytest.mark.parametrize(("section", "index"), ALL)
def test_raw_example_with_curly_quotes_is_rejected_naming_them(spec: str, section: str, index: int) -> None:
    raw = wrap(section, index, extract_examples(spec, section)[index])
    results = _read(raw)
    quotes = [c for c in raw if c in _CURLY]
    if not quotes and (section, index) not in TAG_FIXES:
        assert all(r.ok for r in results)  # §1.3.1 and §5.1.4.1 were typed without quotes: they read
        return
    assert len(results) == 1 and not results[0].ok
    messages = [e.message for e in results[0].errors]
    assert all(e.code == "malformed" for e in results[0].errors)
    if quotes:
        first_line = next(n for n, line in enumerate(raw.splitlines(), 1) if set(line) & set(_CURLY))
        assert f"U+{ord(quotes[0]):04X}" in messages[0]
        assert f"at line {first_line} " in messages[0]
        assert "replace with a straight quote" in messages[0]
    assert any(m.startswith("invalid XML") for m in messages)  # the parser's own verdict follows


def test_raw_elaborate_example_names_each_broken_tag(spec: str) -> None:
    raw = _straighten(extract_examples(spec, "1.3.3")[0])
    messages = [e.message for e in _read(raw)[0].errors]
    assert any("</JobDefaults>" in m and "<Environment>" in m for m in messages)
    assert any("</Delivered>" in m and "no matching opening tag" in m for m in messages)
    assert any("<Memory>" in m for m in messages)


def test_raw_8_1_second_example_names_the_unclosed_requested(spec: str) -> None:
    raw = _straighten(wrap("8.1", 1, extract_examples(spec, "8.1")[1]))
    messages = [e.message for e in _read(raw)[0].errors]
    assert any("</Job>" in m and "<Requested>" in m for m in messages)


def test_elaborate_example_with_only_quotes_fixed_reports_unbalanced_groups(spec: str) -> None:
    """The spec's Slave group closes a group (-1) before opening one (1): a ``range`` error, which is why
    the fixture swaps the two signs."""
    fixed = corrected("1.3.3", 0, extract_examples(spec, "1.3.3")[0])
    fixed = fixed.replace('<Processors group="1">12', '<Processors group="-1">12').replace(
        '<Processors conj="Or" group="-1">16', '<Processors conj="Or" group="1">16'
    )
    results = _read(fixed)
    slave = results[1]
    assert results[0].ok and not slave.ok
    assert {e.code for e in slave.errors} == {"range"}
    assert any(e.path.endswith("Requested.Processors[0]@group") for e in slave.errors)


# -- values against the spec text ---------------------------------------------------------------------


def test_1_3_1_very_simple() -> None:
    (r,) = _read(_fixture("1.3.1", 0))
    job = r.job
    assert job.id == "PBS.1234.0" and job.user == "scottmo"
    assert job.tasks[0].cpu_cores == 16 and job.tasks[0].count == 1
    assert job.duration_s == 3600
    assert job.metadata["sss"]["info"] == {"JobState": "Idle", "Executable": "/bin/hostname"}


def test_1_3_2_moderate() -> None:
    (r,) = _read(_fixture("1.3.2", 0))
    job = r.job
    assert (job.id, job.name, job.project, job.user) == ("PBS.1234.0", "Heavy Water", "nwchemdev", "peterk")
    assert job.queue == "batch_normal" and job.metadata["sss"]["qos"] == "BottomFeeder"
    # Requested: Processors GE 12, Memory GE 2 GB (Appendix A: 2 * 2^30 bytes), WallDuration 3600.
    assert job.tasks[0].cpu_cores == 12
    assert job.tasks[0].memory_gb == pytest.approx(2 * GIB)
    assert job.duration_s == 3600
    assert job.metadata["sss"]["environment"] == {"PATH": "/usr/bin:/home/peterk"}
    assert "<Delivered>" in job.metadata["sss"]["delivered"][0]  # 16 processors delivered: not a request


def test_1_3_3_elaborate() -> None:
    first, second = _read(_fixture("1.3.3", 0))
    a, b = first.job, second.job
    assert (a.id, b.id) == ("fr15n05.1234.0", "fr15n05.1234.1")
    assert a.workflow_id == b.workflow_id == "fr15n05.1234"
    # JobDefaults: UserId keith, ProjectId GrandChallenge18, SubmissionTime 1051556734, for both jobs.
    for job in (a, b):
        assert (job.user, job.project) == ("keith", "GrandChallenge18")
        assert job.submit_time == datetime.fromtimestamp(1051556734, UTC)
        assert job.metadata["sss"]["environment"] == {
            "LD_LIBRARY_PATH": "/usr/lib",
            "PATH": "/usr/bin:~/bin:",
        }
    # Job 0: Processors 2, Memory 1024 (MB) for a group of TaskCount 2, TasksPerNode 1.
    (g,) = a.tasks
    assert (g.count, g.one_per_node) == (2, True)
    assert g.cpu_cores * g.count == 2 and g.memory_gb * g.count == pytest.approx(1024 * MIB)
    assert a.duration_s == 3600 and a.queue == "batch"
    # Job 1: priority 1032847, WallDuration 43200, Master and Slave groups.
    assert b.priority == 1032847 and b.duration_s == 43200 and b.queue == "batch_normal"
    master, slave = b.tasks
    assert (master.name, master.count) == ("Master", 1)
    assert master.memory_gb == pytest.approx(2048 * MIB)
    assert master.extra == {"License:ESSL2": 1}
    assert master.required == [LabelRule(key="Jumbo-Frame", operator=AffinityOperator.EXISTS)]
    # Slave: NodeCount 4 and no TaskCount: 4 tasks, one per node, each 12 processors (12 or 16: smallest)
    assert (slave.name, slave.count, slave.one_per_node) == ("Slave", 4, True)
    assert slave.cpu_cores == 12 and slave.memory_gb == pytest.approx(512 * MIB)
    assert slave.required == [LabelRule(key="hostname", operator=AffinityOperator.MATCHES, values=["fr15n*"])]
    alts = b.metadata["sss"]["task_groups"]["Slave"]["requested"]["alternatives"]["Processors"][0]
    assert alts["chosen"] == "Processors=12" and [o["value"] for o in alts["options"]] == [
        "Processors=12",
        "Processors=16",
    ]


def test_5_1_dependency_and_fragments() -> None:
    (dep,) = _read(_fixture("5.1.6", 0))
    assert [(d.job, d.condition) for d in dep.job.dependencies] == [
        ("PBS.1234.0", DependencyCondition.SUCCESS)
    ]
    (mem,) = _read(_fixture("5.1.7", 0))
    assert mem.job.tasks[0].memory_gb == pytest.approx(483 * GIB)
    (procs,) = _read(_fixture("5.1.7", 1))
    assert procs.job.tasks[0].cpu_cores == 4
    (lic,) = _read(_fixture("5.1.8", 0))
    assert lic.job.tasks[0].extra == {"License:MATLAB": 1}
    (tel,) = _read(_fixture("5.1.8", 1))
    assert tel.job.tasks[0].extra == {"Telescope:Zoom2000": 10}
    (node,) = _read(_fixture("5.1.4.1", 0))
    assert node.job.placement.required == [
        LabelRule(key="hostname", operator=AffinityOperator.IN, values=["node1"])
    ]
    (ext,) = _read(_fixture("5.1.10", 0))
    assert ext.job.metadata["sss"]["extensions"] == [
        {"name": "Restartable", "value": "true", "type": "Scheduler"}
    ]
    (var,) = _read(_fixture("5.1.3.1", 0))
    assert var.job.metadata["sss"]["environment"] == {"PATH": "/usr/bin:/home/sssdemo"}
    (lim,) = _read(_fixture("5.1.1.4", 0))
    assert lim.job.metadata["sss"]["resource_limits"] == [{"name": "CPUTime", "value": "1000000"}]


def test_5_1_5_task_distribution() -> None:
    (tpn,) = _read(_fixture("5.1.5", 0))
    assert tpn.job.metadata["sss"]["task_distribution"] == {"type": "TasksPerNode", "value": "2"}
    (rule,) = _read(_fixture("5.1.5", 1))
    assert rule.job.metadata["sss"]["task_distribution"] == {"type": "Rule", "value": "RoundRobin"}
    (geo,) = _read(_fixture("5.1.5", 2))  # Geometry cannot be expressed: Reject by default
    assert not geo.ok and [e.code for e in geo.errors] == ["unsupported"]
    assert geo.errors[0].path == "Job[0].TaskDistribution"
    (warned,) = _read(_fixture("5.1.5", 2), sss_awareness="Warn")
    assert warned.ok and [w.code for w in warned.warnings] == ["unsupported"]
    assert "Job[0].TaskDistribution" in warned.job.unknown


def test_8_1_requested_examples() -> None:
    (a,) = _read(_fixture("8.1", 0))  # Processors GE 8 and LE 16, WallDuration 3600
    assert a.job.tasks[0].cpu_cores == 8 and a.job.duration_s == 3600
    assert a.job.metadata["sss"]["requested"]["ranges"]["Processors"] == {"min": 8, "max": 16}
    (b,) = _read(_fixture("8.1", 1))  # NodeCount 1, Name Match fr15.*
    assert b.job.placement.node_count == CountRange(min=1, max=1)
    assert b.job.placement.required == [
        LabelRule(key="hostname", operator=AffinityOperator.MATCHES, values=["fr15*"])
    ]
    (c,) = _read(_fixture("8.1", 2))  # (scottmo and mscfops) or (monkeyboy and junglehunt)
    assert (c.job.user, c.job.project) == ("scottmo", "mscfops")
    assert c.job.metadata["sss"]["requested"]["credential_alternatives"] == [
        [
            {"UserId": "scottmo", "AccountName": "mscfops"},
            {"UserId": "monkeyboy", "AccountName": "junglehunt"},
        ]
    ]
    (d,) = _read(_fixture("8.1", 3))  # Memory preference 2: 1024, preference 1: 512 (MB)
    assert d.job.tasks[0].memory_gb == pytest.approx(512 * MIB)
    options = d.job.metadata["sss"]["requested"]["alternatives"]["Memory"][0]["options"]
    assert [o["weight"] for o in options] == [round(100 * 2 / 3), round(100 * 1 / 3)]


def test_8_2_delivered_examples_do_not_request_anything() -> None:
    for i in range(4):
        (r,) = _read(_fixture("8.2", i))
        assert r.job.tasks[0].cpu_cores == 0 and r.job.placement.required == []
        assert r.job.user is None and len(r.job.metadata["sss"]["delivered"]) == 1
