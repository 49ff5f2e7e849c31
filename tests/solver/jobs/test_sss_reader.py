"""SSS reader behaviour: requested-property expressions, units, task groups, defaults, dependencies,
awareness policy, validation issues and hostile XML. Expected values come from the spec text or from
arithmetic on the document, never from running the reader."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from placer.solver.jobs.errors import ISSUE_CODES
from placer.solver.jobs.formats.sss import read
from placer.solver.jobs.load import read_text
from placer.solver.jobs.model import (
    AffinityOperator,
    AllOf,
    AnyOf,
    CountRange,
    DependencyCondition,
    LabelRule,
    Not,
    ReadResult,
)
from placer.solver.jobs.options import ReadOptions

GIB = 2**30 / 2**30  # placer's GB is 2^30 bytes (docs/inventory.md, Units)
MIB = 2**20 / 2**30
Op = AffinityOperator


def _read(xml: str, **opts: str) -> list[ReadResult]:
    results = read(xml, source="t.xml", options=ReadOptions(**opts))
    for r in results:
        assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])
    return results


def one(xml: str, **opts: str) -> ReadResult:
    (r,) = _read(xml, **opts)
    return r


def job(body: str, **opts: str) -> ReadResult:
    return one(f"<Job><JobId>j</JobId>{body}</Job>", **opts)


def ok(body: str, **opts: str):
    r = job(body, **opts)
    assert r.ok, r.errors
    assert r.job is not None
    return r.job


def codes(r: ReadResult) -> list[tuple[str, str]]:
    return [(e.code, e.path) for e in r.errors]


# -- identity ------------------------------------------------------------------------------------------


def test_ids_jobid_then_jobname_then_source_index() -> None:
    assert one("<Job><JobId>a</JobId><JobName>n</JobName></Job>").id == "a"
    assert one("<Job><JobName>n</JobName></Job>").id == "n"
    assert one("<Job><Processors>1</Processors></Job>").id == "t.xml#0"
    group = _read(
        "<JobGroup><JobGroupId>g</JobGroupId><Job><Processors>1</Processors></Job><Job><JobName>x"
        "</JobName></Job></JobGroup>"
    )
    assert [r.id for r in group] == ["t.xml#0", "x"]


def test_credentials_mapping() -> None:
    j = ok(
        "<UserId>u</UserId><GroupId>physics</GroupId><ProjectId>p1</ProjectId><Queue>q</Queue>"
        "<QualityOfService>spot</QualityOfService><Priority>-5</Priority><ReservationId>R7</ReservationId>"
        "<SubmissionTime>1051556734</SubmissionTime><Type>batch</Type>"
    )
    assert (j.user, j.tenant, j.project, j.queue, j.priority) == ("u", "physics", "p1", "q", -5)
    assert j.priority_class.value == "spot" and j.reservation.id == "R7" and j.type == "batch"
    assert j.submit_time == datetime(2003, 4, 28, 19, 5, 34, tzinfo=UTC)  # 1051556734 s after the epoch
    assert ok("<AccountName>acct</AccountName>").project == "acct"
    r = job("<ProjectId>p</ProjectId><Requested><AccountName>other</AccountName></Requested>")
    assert codes(r) == [("conflict", "Job[0].Requested.AccountName")]


# -- values and units ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("units", "gb"),
    [
        (None, 512 * MIB),
        ("KB", 512 * 2**10 / 2**30),
        ("MB", 512 * MIB),
        ("GB", 512 * GIB),
        ("TB", 512 * 2**40 / 2**30),
        ("kilobytes", 512 * 2**10 / 2**30),
        ("Gigabyte", 512 * GIB),
        ("B", 512 / 2**30),
    ],
)
def test_memory_units_appendix_a(units: str | None, gb: float) -> None:
    attr = f' units="{units}"' if units else ""
    assert ok(f"<Memory{attr}>512</Memory>").tasks[0].memory_gb == pytest.approx(gb)


def test_disk_swap_network_and_resources() -> None:
    t = ok(
        '<Disk units="GB">10</Disk><Swap>1024</Swap><Network>100</Network>'
        '<Resource name="License" type="MATLAB">2</Resource><Resource name="Scratch">5</Resource>'
    ).tasks[0]
    assert t.storage_gb == pytest.approx(10 * GIB)
    assert t.extra == {
        "swap_gb": pytest.approx(1024 * MIB),
        "network": 100,
        "License:MATLAB": 2,
        "Scratch": 5,
    }


def test_gpu_and_tpu_resources() -> None:
    j = ok('<Resource name="GPU" type="nvidia-h100">8</Resource>')
    assert j.total_gpus == 8 and j.tasks[0].gpu.types == ["nvidia-h100"] and j.accelerator.value == "gpu"
    assert ok('<Resource name="gpu">0.5</Resource>').tasks[0].gpu.share_milli == 500
    assert ok('<Resource name="TPU" type="v5e">8</Resource>').total_tpu_chips == 8
    r = job('<Resource name="GPU">1.5</Resource>')
    assert codes(r) == [("type", "Job[0].Resource")]


def test_gpu_type_alternatives_union_types_at_smallest_count() -> None:
    j = ok(
        '<Requested><Resource name="GPU" type="nvidia-h100">8</Resource>'
        '<Resource conj="Or" name="GPU" type="nvidia-a100">8</Resource></Requested>'
    )
    assert j.tasks[0].gpu.count == 8 and j.tasks[0].gpu.types == ["nvidia-h100", "nvidia-a100"]


@pytest.mark.parametrize(
    ("text", "attrs", "seconds"),
    [
        ("3600", "", 3600),
        ("1:00:00", "", 3600),
        ("2:03:04:05", "", ((2 * 24 + 3) * 60 + 4) * 60 + 5),
        ("PT1H30M", "", 5400),
        ("P1D", "", 86400),
        ("90", ' units="minutes"', 5400),
    ],
)
def test_wall_duration_forms(text: str, attrs: str, seconds: int) -> None:
    assert ok(f"<WallDuration{attrs}>{text}</WallDuration>").duration_s == seconds


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        ("<Processors>12.5</Processors>", "type", "Job[0].Processors"),
        ("<Processors>-1</Processors>", "range", "Job[0].Processors"),
        ('<Memory units="furlongs">1</Memory>', "enum", "Job[0].Memory@units"),
        ("<Memory>1_000</Memory>", "type", "Job[0].Memory"),
        ("<Memory>NaN</Memory>", "type", "Job[0].Memory"),
        ("<WallDuration>soon</WallDuration>", "type", "Job[0].WallDuration"),
        ("<WallDuration>4294967296</WallDuration>", "type", "Job[0].WallDuration"),
        ("<SubmissionTime>yesterday</SubmissionTime>", "type", "Job[0].SubmissionTime"),
        ("<Interactive>maybe</Interactive>", "type", "Job[0].Interactive"),
        ("<Requested><Memory op='ABOUT'>1</Memory></Requested>", "enum", "Job[0].Requested.Memory@op"),
        ("<Requested><Memory conj='Xor'>1</Memory></Requested>", "enum", "Job[0].Requested.Memory@conj"),
        ("<Requested><Memory group='x'>1</Memory></Requested>", "type", "Job[0].Requested.Memory@group"),
        (
            "<Requested><Memory preference='0'>1</Memory></Requested>",
            "range",
            "Job[0].Requested.Memory@preference",
        ),
        ("<Resource>1</Resource>", "required", "Job[0].Resource@name"),
        ("<NodeList></NodeList>", "required", "Job[0].NodeList"),
        ("<Environment><Variable>x</Variable></Environment>", "required", "Job[0].Environment.Variable@name"),
        ("<Queue>a</Queue><Queue>b</Queue>", "conflict", "Job[0].Queue[1]"),
        (
            "<Requested><Processors op='GE'>16</Processors><Processors op='LE'>8</Processors></Requested>",
            "conflict",
            "Job[0].Requested.Processors[1]",
        ),
        ("<Dependency type='OnSuccess' code='1'>x</Dependency>", "conflict", "Job[0].Dependency@code"),
        ("<Dependency/>", "required", "Job[0].Dependency"),
        ("<TaskGroup><TaskCount>0</TaskCount></TaskGroup>", "range", "Job[0].TaskGroup.TaskCount"),
    ],
)
def test_validation_issues(body: str, code: str, path: str) -> None:
    r = job(body)
    assert not r.ok and (code, path) in codes(r), r.errors


# -- ops, conj, groups, preferences ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "operator"),
    [("EQ", Op.IN), ("NE", Op.NOT_IN), ("LT", Op.LT), ("GT", Op.GT), ("LE", Op.LTE), ("GE", Op.GTE)],
)
def test_node_property_ops(op: str, operator: AffinityOperator) -> None:
    j = ok(f'<NodeProperties><Processors op="{op}">32</Processors></NodeProperties>')
    assert j.placement.required == [LabelRule(key="cpu_cores", operator=operator, values=["32"])]
    assert j.tasks[0].cpu_cores == 0  # a node property is a test on the node, not a demand


def test_node_memory_is_converted_and_features_and_names() -> None:
    j = ok(
        '<NodeProperties><Memory op="GE" units="GB">64</Memory><Feature>infiniband</Feature>'
        '<Feature op="NE">gpu_type=nvidia-t4</Feature><Name op="NE">bad01</Name></NodeProperties>'
    )
    assert j.placement.required == [
        LabelRule(key="memory_gb", operator=Op.GTE, values=["64"]),  # 64 GB: placer's GB is 2^30 bytes
        LabelRule(key="infiniband", operator=Op.EXISTS),
        LabelRule(key="gpu_type", operator=Op.NOT_IN, values=["nvidia-t4"]),
        LabelRule(key="hostname", operator=Op.NOT_IN, values=["bad01"]),
    ]


@pytest.mark.parametrize(
    ("pattern", "glob"), [("fr15n.*", "fr15n*"), ("^gpu\\d.+$", "gpu[0-9]?*"), ("rack[1-3]n.", "rack[1-3]n?")]
)
def test_match_regex_becomes_glob(pattern: str, glob: str) -> None:
    j = ok(f'<Requested><NodeProperties><Name op="Match">{pattern}</Name></NodeProperties></Requested>')
    assert j.placement.required == [LabelRule(key="hostname", operator=Op.MATCHES, values=[glob])]


def test_match_regex_without_glob_form_is_unsupported() -> None:
    r = job('<Requested><NodeProperties><Name op="Match">(a|b)+</Name></NodeProperties></Requested>')
    assert codes(r) == [("unsupported", "Job[0].Requested.NodeProperties.Name")]


@pytest.mark.parametrize(
    ("op", "cores", "bounds"),
    [
        ("EQ", 12, None),
        ("GE", 12, None),
        ("GT", 13, None),
        ("LE", 1, {"min": None, "max": 12}),
        ("LT", 1, {"min": None, "max": 11}),
    ],
)
def test_consumable_ops_give_requested_minimum(op: str, cores: int, bounds: dict | None) -> None:
    j = ok(f'<Requested><Processors op="{op}">12</Processors></Requested>')
    assert j.tasks[0].cpu_cores == cores
    assert j.metadata["sss"].get("requested", {}).get("ranges", {}).get("Processors") == bounds


def test_memory_gt_is_taken_as_ge() -> None:
    assert ok('<Requested><Memory op="GT">512</Memory></Requested>').tasks[0].memory_gb == pytest.approx(
        512 * MIB
    )


@pytest.mark.parametrize("op", ["NE", "Match"])
def test_consumable_ne_or_match_is_unsupported(op: str) -> None:
    r = job(f'<Requested><Memory op="{op}">512</Memory></Requested>')
    assert codes(r) == [("unsupported", "Job[0].Requested.Memory")]


def _features(*parts: str) -> str:
    return "<Requested><NodeProperties>" + "".join(parts) + "</NodeProperties></Requested>"


def _has(name: str) -> LabelRule:
    return LabelRule(key=name, operator=Op.EXISTS)


@pytest.mark.parametrize(
    ("conj", "expected"),
    [
        ("And", [_has("a"), _has("b")]),
        ("Or", [AnyOf(rules=[_has("a"), _has("b")])]),
        ("Nand", [_has("a"), Not(rule=_has("b"))]),
        ("Nor", [AnyOf(rules=[_has("a"), Not(rule=_has("b"))])]),
    ],
)
def test_conj_on_node_features(conj: str, expected: list) -> None:
    j = ok(_features("<Feature>a</Feature>", f'<Feature conj="{conj}">b</Feature>'))
    assert j.placement.required == expected


def test_and_binds_tighter_than_or_without_groups() -> None:
    j = ok(_features("<Feature>a</Feature>", '<Feature conj="Or">b</Feature>', "<Feature>c</Feature>"))
    assert j.placement.required == [AnyOf(rules=[_has("a"), AllOf(rules=[_has("b"), _has("c")])])]


def test_groups_override_precedence() -> None:
    j = ok(
        _features(
            '<Feature group="1">a</Feature>',
            '<Feature conj="Or" group="-1">b</Feature>',
            "<Feature>c</Feature>",
        )
    )
    assert j.placement.required == [AnyOf(rules=[_has("a"), _has("b")]), _has("c")]


def test_nested_groups_and_nand_of_group() -> None:
    j = ok(
        _features(
            "<Feature>a</Feature>",
            '<Feature conj="Nand" group="2">b</Feature>',
            '<Feature conj="Or" group="-1">c</Feature>',
            '<Feature group="-1">d</Feature>',
        )
    )
    assert j.placement.required == [
        _has("a"),
        Not(rule=AllOf(rules=[AnyOf(rules=[_has("b"), _has("c")]), _has("d")])),
    ]


@pytest.mark.parametrize(("first", "second"), [("1", "1"), ("-1", "-1"), ("2", "-1")])
def test_unbalanced_groups_are_range_errors(first: str, second: str) -> None:
    r = job(_features(f'<Feature group="{first}">a</Feature>', f'<Feature group="{second}">b</Feature>'))
    assert not r.ok and {c for c, _ in codes(r)} == {"range"}


def test_processors_or_alternatives_take_smallest() -> None:
    j = ok('<Requested><Processors>16</Processors><Processors conj="Or">12</Processors></Requested>')
    assert j.tasks[0].cpu_cores == 12
    alt = j.metadata["sss"]["requested"]["alternatives"]["Processors"][0]
    assert alt["chosen"] == "Processors=12"


def test_alternatives_respect_other_bounds() -> None:
    j = ok(
        '<Requested><Processors op="GE">14</Processors><Processors group="1">12</Processors>'
        '<Processors conj="Or" group="-1">16</Processors></Requested>'
    )
    assert j.tasks[0].cpu_cores == 16  # 12 contradicts GE 14, so 16 is the only feasible alternative


def test_mixing_amounts_and_node_tests_with_or_gives_node_shapes() -> None:
    # "4 processors, or a node with feature x": two shapes of the job (SSS §8.1 Or), not an error.
    j = ok('<Requested><Processors>4</Processors><Feature conj="Or">x</Feature></Requested>')
    assert j.tasks[0].cpu_cores == 4 and j.placement.required == []
    [alt] = j.alternatives
    assert alt.required == [_has("x")] and alt.tasks[0].cpu_cores < 4
    assert alt.label == "Feature=x"


def test_or_mixing_credentials_and_amounts_is_unsupported() -> None:
    r = job('<Requested><Processors>4</Processors><UserId conj="Or">x</UserId></Requested>')
    assert codes(r) == [("unsupported", "Job[0].Requested.Processors")]


def test_positive_feature_preferences_need_one_and_weigh() -> None:
    j = ok(_features('<Feature preference="3">ssd</Feature>', '<Feature preference="1">nvme</Feature>'))
    assert j.placement.required == [AnyOf(rules=[_has("ssd"), _has("nvme")])]
    assert j.placement.preferred == [
        LabelRule(key="ssd", operator=Op.EXISTS, weight=75),
        LabelRule(key="nvme", operator=Op.EXISTS, weight=25),
    ]


def test_negative_feature_preferences_are_soft() -> None:
    j = ok(_features('<Feature preference="-1">ssd</Feature>', '<Feature preference="-1">nvme</Feature>'))
    assert j.placement.required == []
    assert [(p.key, p.weight) for p in j.placement.preferred] == [("ssd", 50), ("nvme", 50)]


def test_negative_memory_preferences_do_not_demand() -> None:
    j = ok('<Requested><Memory preference="-2">1024</Memory><Memory preference="-1">512</Memory></Requested>')
    assert j.tasks[0].memory_gb == 0
    soft = j.metadata["sss"]["requested"]["soft_preferences"]["Memory"]
    assert [s["weight"] for s in soft] == [67, 33]


def test_credentials_with_other_ops_are_unsupported() -> None:
    r = job('<Requested><UserId op="NE">root</UserId></Requested>')
    assert codes(r) == [("unsupported", "Job[0].Requested.UserId@op")]


def test_requested_start_time_and_node_count_range() -> None:
    j = ok(
        '<Requested><StartTime>1051557713</StartTime><NodeCount op="GE">2</NodeCount>'
        '<NodeCount op="LE">8</NodeCount><Processors>16</Processors></Requested>'
    )
    assert j.not_before == datetime.fromtimestamp(1051557713, UTC)
    assert j.placement.node_count == CountRange(min=2, max=8)
    # implicit group over a node range: sized at the minimum, one task per node
    (t,) = j.tasks
    assert (t.count, t.one_per_node, t.cpu_cores) == (2, True, 8)


# -- task groups, defaults, dependencies -----------------------------------------------------------------


def test_job_totals_split_over_tasks_that_do_not_state_them() -> None:
    j = ok(
        "<Processors>10</Processors><Memory units='GB'>8</Memory>"
        "<TaskGroup><TaskGroupName>m</TaskGroupName><TaskCount>1</TaskCount><Processors>4</Processors></TaskGroup>"
        "<TaskGroup><TaskGroupName>w</TaskGroupName><TaskCount>3</TaskCount></TaskGroup>"
    )
    m, w = j.tasks
    assert (m.count, m.cpu_cores, w.count, w.cpu_cores) == (1, 4, 3, 2)  # (10 - 4) / 3
    assert m.memory_gb * 1 + w.memory_gb * 3 == pytest.approx(8 * GIB)


def test_task_group_defaults_and_task_count_from_tasks() -> None:
    j = ok(
        "<TaskGroupDefaults><Memory>256</Memory><Processors>2</Processors></TaskGroupDefaults>"
        "<TaskGroup><Processors>4</Processors><Task><TaskId>1</TaskId></Task><Task/><Task/></TaskGroup>"
        "<TaskGroup><TaskCount>2</TaskCount></TaskGroup>"
    )
    a, b = j.tasks
    assert (a.count, a.cpu_cores, a.memory_gb) == (3, 4, pytest.approx(256 * MIB))
    assert (b.count, b.cpu_cores, b.memory_gb) == (2, 2, pytest.approx(256 * MIB))


def test_task_group_wall_durations_bound_the_job() -> None:
    j = ok(
        "<TaskGroup><WallDuration>600</WallDuration></TaskGroup><TaskGroup><WallDuration>900</WallDuration>"
        "</TaskGroup>"
    )
    assert j.duration_s == 900
    assert (
        ok(
            "<WallDuration>60</WallDuration><TaskGroup><WallDuration>900</WallDuration></TaskGroup>"
        ).duration_s
        == 60
    )


def test_task_count_below_tasks_is_conflict() -> None:
    r = job("<TaskGroup><TaskCount>1</TaskCount><Task/><Task/></TaskGroup>")
    assert codes(r) == [("conflict", "Job[0].TaskGroup.TaskCount")]


def test_job_group_defaults_and_dependencies() -> None:
    rs = _read("""<JobGroup><JobGroupId>wf</JobGroupId>
      <JobDefaults><Queue>batch</Queue><UserId>u</UserId><Processors>4</Processors>
        <Requested><Memory op="GE" units="GB">1</Memory><WallDuration>600</WallDuration></Requested>
      </JobDefaults>
      <Job><JobId>a</JobId></Job>
      <Job><JobId>b</JobId><Queue>fast</Queue><Requested><Memory units="GB">2</Memory></Requested>
        <Dependency>a</Dependency></Job>
      <Job><JobId>c</JobId><Dependency type="OnFailure">a</Dependency>
        <Dependency type="OnExit" code="3">b</Dependency><Dependency type="OnExit">b</Dependency></Job>
    </JobGroup>""")
    a, b, c = (r.job for r in rs)
    assert all(r.ok for r in rs) and {x.workflow_id for x in (a, b, c)} == {"wf"}
    assert (a.queue, b.queue, c.queue) == ("batch", "fast", "batch")
    assert a.tasks[0].memory_gb == pytest.approx(GIB) and b.tasks[0].memory_gb == pytest.approx(2 * GIB)
    assert a.duration_s == b.duration_s == 600 and a.tasks[0].cpu_cores == 4 and a.user == "u"
    assert [(d.job, d.condition) for d in b.dependencies] == [("a", DependencyCondition.SUCCESS)]
    assert [(d.job, d.condition, d.exit_code) for d in c.dependencies] == [
        ("a", DependencyCondition.FAILURE, None),
        ("b", DependencyCondition.EXIT, 3),
        ("b", DependencyCondition.EXIT, None),
    ]


def test_task_group_rules_stay_on_their_group() -> None:
    j = ok(
        "<TaskGroup><NodeProperties><Feature>matlab</Feature></NodeProperties></TaskGroup>"
        "<TaskGroup><TaskCount>12</TaskCount><Processors>1</Processors></TaskGroup>"
    )
    assert j.placement.required == []
    assert j.tasks[0].required == [_has("matlab")] and j.tasks[1].required == []


def test_dependency_cycle_in_group_is_caught_by_batch_check() -> None:
    rs = read_text(
        "<JobGroup><JobGroupId>g</JobGroupId><Job><JobId>a</JobId><Dependency>b</Dependency></Job>"
        "<Job><JobId>b</JobId><Dependency>a</Dependency></Job></JobGroup>",
        source="g.xml",
    )
    assert [r.ok for r in rs] == [True, True]  # the reader reads; cycles are a batch check (load.check_batch)


# -- awareness policy (§9) --------------------------------------------------------------------------------


UNKNOWN = "<Job><JobId>j</JobId><Processors>2</Processors><Frobnicate level='3'>yes</Frobnicate></Job>"


def test_unknown_element_rejected_by_default() -> None:
    r = one(UNKNOWN)
    assert not r.ok and codes(r) == [("unsupported", "Job[0].Frobnicate")]
    assert "Frobnicate" in r.errors[0].message


def test_unknown_element_warn_and_ignore_keep_it() -> None:
    w = one(UNKNOWN, sss_awareness="Warn")
    assert w.ok and [(x.code, x.path) for x in w.warnings] == [("unsupported", "Job[0].Frobnicate")]
    assert w.job.unknown == {"Job[0].Frobnicate": '<Frobnicate level="3">yes</Frobnicate>'}
    i = one(UNKNOWN, sss_awareness="Ignore")
    assert i.ok and i.warnings == [] and "Job[0].Frobnicate" in i.job.unknown


def test_policy_attribute_inherits_and_overrides() -> None:
    doc = (
        "<Job awarenessPolicy='Ignore'><JobId>j</JobId><Foo/>"
        "<Requested awarenessPolicy='Reject'><Memory bogus='1'>1</Memory></Requested></Job>"
    )
    r = one(doc, sss_awareness="Warn")
    assert codes(r) == [("unsupported", "Job[0].Requested.Memory@bogus")]
    r2 = one(doc.replace("awarenessPolicy='Reject'", "awarenessPolicy='Warn'"))
    assert r2.ok and [w.path for w in r2.warnings] == ["Job[0].Requested.Memory@bogus"]
    assert r2.job.unknown == {"Job[0].Foo": "<Foo />", "Job[0].Requested.Memory@bogus": "1"}
    own = one("<Job><JobId>j</JobId><Foo awarenessPolicy='Ignore'/></Job>")
    assert own.ok and "Job[0].Foo" in own.job.unknown


def test_bad_policy_value_is_enum_and_counts_as_reject() -> None:
    r = one("<Job awarenessPolicy='Sometimes'><JobId>j</JobId><Foo/></Job>", sss_awareness="Ignore")
    assert ("enum", "Job[0]@awarenessPolicy") in codes(r) and ("unsupported", "Job[0].Foo") in codes(r)
    bad = _read("<Job/>", sss_awareness="Maybe")
    assert [(e.code, e.path) for e in bad[0].errors] == [("enum", "options.sss_awareness")]


def test_unsupported_dependency_type_follows_policy() -> None:
    doc = "<Dependency type='OnStart'>x</Dependency>"
    assert codes(job(doc)) == [("unsupported", "Job[0].Dependency@type")]
    assert ok(doc, sss_awareness="Ignore").dependencies == []


def test_informational_elements_are_not_unsupported() -> None:
    j = ok(
        "<Executable>/bin/x</Executable><Arguments>-v</Arguments><JobState>Idle</JobState>"
        "<OutputFile redirect='Append'>~/o</OutputFile><Charge units='USD'>1.5</Charge>"
        "<Delivered><Processors>3</Processors></Delivered>"
    )
    assert j.tasks[0].cpu_cores == 0 and j.metadata["sss"]["info"]["Executable"] == "/bin/x"


# -- documents ---------------------------------------------------------------------------------------------


def test_sssrmap_data_envelope() -> None:
    rs = _read(
        "<Request action='Submit'><Data><Job><JobId>a</JobId></Job><Job><JobId>b</JobId></Job></Data>"
        "</Request>"
    )
    assert [r.id for r in rs] == ["a", "b"] and all(r.ok for r in rs)


def test_namespaced_elements_are_read_by_local_name() -> None:
    r = one("<Job xmlns='urn:sss'><JobId>n</JobId><Processors>3</Processors></Job>")
    assert r.ok and r.job.tasks[0].cpu_cores == 3


@pytest.mark.parametrize(
    "doc",
    ["<Job><JobId>1</JobId>", "<Job><JobId>1</JobName></Job>", "not xml", "", "<Job></Job><Job></Job>"],
)
def test_malformed_xml(doc: str) -> None:
    r = one(doc)
    assert not r.ok and r.errors and all(e.code == "malformed" for e in r.errors)


def test_mismatched_tag_is_named_with_lines() -> None:
    r = one("<Job>\n<JobId>1</JobId>\n<Memory>2048<Memory>\n</Job>")
    assert any("</Job> at line 4" in e.message and "<Memory> opened at line 3" in e.message for e in r.errors)


def test_wrong_root_and_empty_group() -> None:
    assert codes(one("<Jobs/>")) == [("malformed", "Jobs")]
    assert codes(one("<JobGroup><JobGroupId>g</JobGroupId></JobGroup>")) == [("required", "JobGroup.Job")]


def test_xxe_is_refused() -> None:
    doc = (
        '<?xml version="1.0"?><!DOCTYPE Job [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<Job><JobId>&x;</JobId></Job>"
    )
    r = one(doc)
    assert not r.ok and [e.code for e in r.errors][-1] == "malformed"
    assert "passwd" not in str(r.model_dump()).replace("file:///etc/passwd", "")


def test_billion_laughs_is_refused() -> None:
    ents = "".join(f'<!ENTITY l{i} "&l{i - 1};&l{i - 1};&l{i - 1};&l{i - 1};">' for i in range(1, 10))
    doc = f'<?xml version="1.0"?><!DOCTYPE Job [<!ENTITY l0 "lol">{ents}]><Job><JobId>&l9;</JobId></Job>'
    r = one(doc)
    assert not r.ok and r.errors[-1].code == "malformed" and "refused" in r.errors[-1].message


def test_non_text_input_is_malformed() -> None:
    assert [e.code for e in _read({"Job": 1})[0].errors] == ["malformed"]  # type: ignore[arg-type]
    assert [e.code for e in _read(b"\xff\xfe<")[0].errors] == ["malformed"]  # type: ignore[arg-type]


def test_envelope_and_source_format() -> None:
    r = one("<Job><JobId>e</JobId><Processors>1</Processors></Job>")
    assert (
        r.job.source_format == "sss"
        and r.job.envelope == "<Job><JobId>e</JobId><Processors>1</Processors></Job>"
    )


def test_pipeline_reads_sss_text() -> None:
    (r,) = read_text("<Job><JobId>p</JobId><Processors>2</Processors></Job>", source="p.xml")
    assert r.ok and r.job.tasks[0].cpu_cores == 2
