"""The Flux jobspec reader on hand-written documents: validation paths and codes (RFC 14 canonical, RFC 25
V1), attributes, tasks, the slot-to-task-group mapping, and the repository's own GPU fixtures."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from placer.solver.jobs.errors import ISSUE_CODES
from placer.solver.jobs.formats.flux import read
from placer.solver.jobs.load import read_files, read_text
from placer.solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    AnyOf,
    CountRange,
    DependencyCondition,
    LabelRule,
    ReadResult,
)
from placer.solver.jobs.options import ReadOptions
from tests.conftest import FIXTURES

FLUX_FIXTURES = FIXTURES / "flux"


def core(n: Any = 1, **kw: Any) -> dict[str, Any]:
    return {"type": "core", "count": n, **kw}


def slot(n: Any, *with_: dict[str, Any], label: str = "default", **kw: Any) -> dict[str, Any]:
    return {"type": "slot", "count": n, "label": label, "with": list(with_), **kw}


def node(n: Any, *with_: dict[str, Any], **kw: Any) -> dict[str, Any]:
    v: dict[str, Any] = {"type": "node", "count": n, **kw}
    if with_:
        v["with"] = list(with_)
    return v


def jobspec(
    *resources: dict[str, Any], version: int = 999, tasks: Any = None, system: Any = None
) -> dict[str, Any]:
    return {
        "version": version,
        "resources": list(resources),
        "tasks": tasks
        if tasks is not None
        else [{"command": ["app"], "slot": "default", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 3600} if system is None else system},
    }


def run(doc: Any) -> ReadResult:
    [r] = read(doc, source="t.yaml", options=ReadOptions())
    assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])
    assert r.ok == (not r.errors)
    assert r.source == "t.yaml"
    return r


def errors(doc: Any) -> list[tuple[str, str]]:
    r = run(doc)
    assert not r.ok and r.job is None
    return [(i.code, i.path) for i in r.errors]


def ok(doc: Any) -> Any:
    r = run(doc)
    assert r.ok, r.errors
    return r.job


SIMPLE = jobspec(slot(2, core(4)))


# ---------------------------------------------------------------------------------------------------
# document shape
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", [[], "version: 1", 3, None])
def test_not_a_mapping(doc: Any) -> None:
    [r] = read(doc, source="x.yaml", options=ReadOptions())
    assert (r.ok, r.id, [(i.code, i.path) for i in r.errors]) == (
        False,
        "x.yaml#0",
        [("malformed", "x.yaml")],
    )


@pytest.mark.parametrize("key", ["version", "resources", "tasks", "attributes"])
def test_required_top_level_keys(key: str) -> None:
    doc = copy.deepcopy(SIMPLE)
    del doc[key]
    assert (("required", key)) in errors(doc)


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"version": "1"}, [("type", "version")]),
        ({"version": 1.5}, [("type", "version")]),
        ({"resources": {}}, [("type", "resources")]),
        ({"resources": []}, [("range", "resources")]),
        ({"tasks": []}, [("range", "tasks")]),
        ({"tasks": {}}, [("type", "tasks")]),
        ({"attributes": []}, [("type", "attributes")]),
        ({"attributes": {"system": None}}, [("type", "attributes.system")]),
        ({"attributes": {"user": "x"}}, [("type", "attributes.user")]),
        ({"attributes": {"sys": {}}}, [("malformed", "attributes.sys")]),
    ],
)
def test_document_errors(patch: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert errors({**SIMPLE, **patch}) == expected


def test_attributes_may_be_null_in_canonical_jobspecs() -> None:
    job = ok({**SIMPLE, "attributes": None})
    assert job.duration_s is None


def test_unknown_top_level_keys_are_kept_with_a_warning() -> None:
    r = run({**SIMPLE, "x-site": {"a": 1}})
    assert r.job is not None
    assert r.job.unknown == {"x-site": {"a": 1}}
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", "x-site")]


# ---------------------------------------------------------------------------------------------------
# resource vertices
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ([slot(1, core(1, color="red"))], [("malformed", "resources[0].with[0].color")]),
        ([slot(1, core(1), label=7)], [("type", "resources[0].label")]),
        ([{"type": "slot", "count": 1, "with": [core()]}], [("required", "resources[0].label")]),
        ([slot(1)], [("required", "resources[0].with")]),
        ([{"count": 1, "type": "slot", "label": "default"}], [("required", "resources[0].with")]),
        ([slot(1, {"type": "core"})], [("required", "resources[0].with[0].count")]),
        ([slot(1, {"count": 1})], [("required", "resources[0].with[0].type")]),
        ([slot(1, {"type": 3, "count": 1})], [("type", "resources[0].with[0].type")]),
        ([slot(1, core(1, exclusive="yes"))], [("type", "resources[0].with[0].exclusive")]),
        ([slot(1, core(1, unit=5))], [("type", "resources[0].with[0].unit")]),
        ([slot(1, core(1, id=5))], [("type", "resources[0].with[0].id")]),
        (
            [slot(1, core(1), with_="x")] if False else [{**slot(1), "with": "core"}],
            [("type", "resources[0].with")],
        ),
        ([slot(1, "core")], [("type", "resources[0].with[0]")]),
        ([slot(1, core(1)), slot(1, core(1))], [("conflict", "resources[1].label")]),
        ([slot(1, core(1, label="default"))], [("conflict", "resources[0].with[0].label")]),
        ([slot(1, slot(1, core(1), label="inner"))], [("unsupported", "resources[0].with[0].type")]),
        (
            [slot(1, {"type": "memory", "count": 4, "unit": "furlong"})],
            [("enum", "resources[0].with[0].unit")],
        ),
        (
            [slot(1, core({"min": 1, "max": 4}))],
            [
                ("required", "resources[0].with[0].count.operator"),
                ("required", "resources[0].with[0].count.operand"),
            ],
        ),
        (
            [node(2, core(1), slot(1, node(1)))],
            [("conflict", "resources[0].with[1].with[0]")],
        ),
        ([node(2, core(4))], [("required", "resources")]),  # no task slot at all
    ],
)
def test_vertex_errors(resources: list[dict[str, Any]], expected: list[tuple[str, str]]) -> None:
    assert errors(jobspec(*resources)) == expected


def test_count_errors_have_exact_paths() -> None:
    doc = jobspec(slot(1, core(1), core({"min": 0})))
    assert errors(doc) == [("range", "resources[0].with[1].count.min")]
    doc = jobspec(node(2, slot(-1, core(1))))
    assert errors(doc) == [("range", "resources[0].with[0].count")]


def test_every_problem_is_reported_at_once() -> None:
    doc = json.loads((FLUX_FIXTURES / "canonical_bad.json").read_text())
    assert errors(doc) == [
        ("range", "resources[0].count.max"),
        ("range", "resources[0].with[0].count"),
        ("enum", "resources[0].with[1].unit"),
        ("malformed", "resources[1].count"),
        ("conflict", "resources[1].label"),
        ("type", "resources[1].with[0].count"),
        ("range", "attributes.system.duration"),
        ("enum", "attributes.system.constraints.xor"),
        ("required", "attributes.system.dependencies[0].value"),
        ("conflict", "tasks[0].count"),
    ]


# ---------------------------------------------------------------------------------------------------
# tasks
# ---------------------------------------------------------------------------------------------------


def task(count: Any, slot_label: str = "default", command: Any = None, **kw: Any) -> dict[str, Any]:
    return {"command": ["app"] if command is None else command, "slot": slot_label, "count": count, **kw}


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        ([task({"per_slot": 1}, "other")], [("enum", "tasks[0].slot")]),
        ([task({"per_slot": 1}, command=[])], [("range", "tasks[0].command")]),
        ([task({"per_slot": 1}, command="app")], [("type", "tasks[0].command")]),
        ([task({"per_slot": 1}, command=["app", 3])], [("type", "tasks[0].command[1]")]),
        ([task({})], [("required", "tasks[0].count")]),
        ([task(3)], [("type", "tasks[0].count")]),
        ([task({"per_slot": 1, "total": 4})], [("conflict", "tasks[0].count")]),
        ([task({"per_node": 1})], [("unsupported", "tasks[0].count.per_node")]),
        ([task({"per_slot": 0})], [("range", "tasks[0].count.per_slot")]),
        ([task({"total": "4"})], [("type", "tasks[0].count.total")]),
        (
            [task({"per_resource": {"type": "gpu", "count": 1}})],
            [("enum", "tasks[0].count.per_resource.type")],
        ),
        ([task({"per_resource": {"type": "core"}})], [("required", "tasks[0].count.per_resource.count")]),
        ([task({"per_resource": 2})], [("type", "tasks[0].count.per_resource")]),
        ([task({"per_slot": 1}, distribution=3)], [("type", "tasks[0].distribution")]),
        (
            [task({"per_slot": 1}, attributes={"environment": {"A": 1}})],
            [("type", "tasks[0].attributes.environment.A")],
        ),
        ([task({"per_slot": 1}, nice=3)], [("malformed", "tasks[0].nice")]),
        ([{"slot": "default", "count": {"per_slot": 1}}], [("required", "tasks[0].command")]),
        ([{"command": ["a"], "count": {"per_slot": 1}}], [("required", "tasks[0].slot")]),
        (["app"], [("type", "tasks[0]")]),
    ],
)
def test_task_errors(tasks: list[Any], expected: list[tuple[str, str]]) -> None:
    assert errors(jobspec(slot(2, core(4)), tasks=tasks)) == expected


def test_task_totals() -> None:
    doc = jobspec(
        node(3, slot(2, core(4), {"type": "gpu", "count": 2})),
        tasks=[
            task({"per_slot": 2}),
            task({"total": 7}, distribution="cyclic"),
            task({"per_resource": {"type": "gpu", "count": 1}}),
            task({"per_resource": {"type": "core", "count": 2}}),
        ],
    )
    totals = [t["total_tasks"] for t in ok(doc).metadata["flux_tasks"]]
    # 3 nodes x 2 slots = 6 slots; 2 GPUs and 4 cores per slot: 6 x 2 x 1 GPU tasks, 6 x 4 x 2 core tasks
    assert totals == [12, 7, 12, 48]


# ---------------------------------------------------------------------------------------------------
# RFC 25 (version 1) restrictions
# ---------------------------------------------------------------------------------------------------


def v1(*resources: dict[str, Any], tasks: Any = None, system: Any = None) -> dict[str, Any]:
    return jobspec(*resources, version=1, tasks=tasks, system=system)


#: How the warnings of a version 1 document read under the canonical rules begin (see the flux module).
NOT_V1 = "not a version 1 jobspec (RFC 25): "


def v1_breaks(doc: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    """The RFC 25 rules a ``version: 1`` document breaks, and what became of it: ``"canonical"`` (a valid
    RFC 14 jobspec: read as ``flux-rfc14``, each broken rule a warning) or ``"rejected"`` (invalid under
    both, the RFC 25 errors). The verdict must agree with the same document under a canonical version."""
    r = run(doc)
    canonical_ok = run({**doc, "version": 2}).ok
    if not r.ok:
        assert not canonical_ok
        return "rejected", [(i.code, i.path) for i in r.errors]
    assert canonical_ok and r.job is not None and r.job.source_format == "flux-rfc14"
    return "canonical", [(i.code, i.path) for i in r.warnings if i.message.startswith(NOT_V1)]


@pytest.mark.parametrize(
    "resources",
    [
        [slot(4, core(2))],
        [node(2, slot(1, core(2)))],
        [slot(4, core(2), {"type": "gpu", "count": 1})],
        [node(2, slot(1, {"type": "gpu", "count": 1}, core(2)))],
        [node(2, slot(1, core(2)), exclusive=True)],
        [slot(4, core(2), exclusive=True)],
    ],
)
def test_v1_valid_graphs(resources: list[dict[str, Any]]) -> None:
    r = run(v1(*resources))
    assert r.job is not None and r.job.source_format == "flux-rfc25"
    assert not [w for w in r.warnings if w.message.startswith(NOT_V1)]


@pytest.mark.parametrize(
    ("resources", "verdict", "expected"),
    [
        ([slot(1, core(1)), slot(1, core(1), label="b")], "canonical", [("range", "resources")]),
        (
            [{"type": "cluster", "count": 1, "with": [slot(1, core(1))]}],
            "canonical",
            [
                ("enum", "resources[0].type"),
                ("unsupported", "resources[0].type"),
            ],
        ),
        (
            [slot(1, {"type": "socket", "count": 1, "with": [core(1)]})],
            "canonical",
            [
                ("enum", "resources[0].with[0].type"),
                ("unsupported", "resources[0].with[0]"),
                ("required", "resources[0].with"),
                ("unsupported", "resources[0].with[0].with[0]"),
            ],
        ),
        ([slot(1, core({"min": 1}))], "canonical", [("type", "resources[0].with[0].count")]),
        ([slot("4", core(1))], "canonical", [("type", "resources[0].count")]),
        (
            [slot(1, core(1, exclusive=True))],
            "canonical",
            [("unsupported", "resources[0].with[0].exclusive")],
        ),
        ([slot(1, core(1, id="0-3"))], "canonical", [("unsupported", "resources[0].with[0].id")]),
        # no task slot at all: not a canonical jobspec either (RFC 14 needs a slot), so rejected
        ([node(2)], "rejected", [("required", "resources[0].with")]),
        ([node(2, core(1))], "rejected", [("unsupported", "resources[0].with[0]")]),
        (
            [node(2, slot(1, core(1)), slot(1, core(1), label="b"))],
            "canonical",
            [("unsupported", "resources[0].with[1]")],
        ),
        ([slot(1, core(1), core(1))], "canonical", [("unsupported", "resources[0].with[1]")]),
        ([slot(1, {"type": "gpu", "count": 1})], "canonical", [("required", "resources[0].with")]),
        (
            [slot(1, node(1))],
            "canonical",
            [("unsupported", "resources[0].with[0]"), ("required", "resources[0].with")],
        ),
    ],
)
def test_v1_invalid_graphs(
    resources: list[dict[str, Any]], verdict: str, expected: list[tuple[str, str]]
) -> None:
    assert v1_breaks(v1(*resources)) == (verdict, expected)


@pytest.mark.parametrize(
    ("tasks", "expected"),
    [
        ([task({"per_slot": 1}), task({"per_slot": 1})], [("range", "tasks")]),
        ([task({"per_slot": 2})], [("range", "tasks[0].count.per_slot")]),
        (
            [task({"per_resource": {"type": "core", "count": 1}})],
            [("unsupported", "tasks[0].count.per_resource")],
        ),
        ([task({"total": 1})], [("range", "tasks[0].count.total")]),  # fewer tasks than the 2 nodes
    ],
)
def test_v1_task_rules(tasks: list[Any], expected: list[tuple[str, str]]) -> None:
    # each is a valid canonical task list: read as RFC 14, the RFC 25 rule kept as a warning
    assert v1_breaks(v1(node(2, slot(1, core(1))), tasks=tasks)) == ("canonical", expected)


def test_v1_command_may_be_a_string() -> None:
    job = ok(v1(slot(1, core(1)), tasks=[task({"per_slot": 1}, command="hostname")]))
    assert job.metadata["flux_tasks"][0]["command"] == ["hostname"]


def test_v1_duration_is_required() -> None:
    # RFC 14 makes duration optional, so these are canonical jobspecs; RFC 25's rule is a warning
    assert v1_breaks(v1(slot(1, core(1)), system={})) == (
        "canonical",
        [("required", "attributes.system.duration")],
    )
    assert v1_breaks({**v1(slot(1, core(1))), "attributes": {}}) == (
        "canonical",
        [("required", "attributes.system")],
    )
    assert v1_breaks({**v1(slot(1, core(1))), "attributes": None}) == (
        "canonical",
        [("required", "attributes.system")],
    )


def test_v1_document_invalid_under_both_rfcs_gets_the_rfc25_errors() -> None:
    """The canonical fallback never hides a broken document: a zero count is wrong under RFC 14 too."""
    r = run(v1(slot(0, core(1))))
    assert not r.ok and [(i.code, i.path) for i in r.errors] == [("range", "resources[0].count")]
    assert not [w for w in r.warnings if w.message.startswith(NOT_V1)]


# ---------------------------------------------------------------------------------------------------
# attributes.system / user
# ---------------------------------------------------------------------------------------------------


def with_system(**system: Any) -> dict[str, Any]:
    return jobspec(slot(2, core(4)), system=system)


def test_system_attributes_map_to_the_job() -> None:
    job = ok(
        with_system(
            duration=90.5,
            queue="batch",
            bank="physics",
            project="lattice",
            cwd="/work",
            environment={"OMP_NUM_THREADS": "4", "UNSET_ME": None},
            job={"name": "qcd-1", "campaign": "spring"},
            shell={"options": {"verbose": 1}},
            files={"script": {"data": "#!/bin/sh"}},
            **{"preemptible-after": 0},
        )
    )
    assert (job.id, job.name, job.queue, job.tenant, job.project) == (
        "qcd-1",
        "qcd-1",
        "batch",
        "physics",
        "lattice",
    )
    assert job.duration_s == 90.5
    assert job.labels == {"name": "qcd-1", "campaign": "spring"}
    assert job.preemption.preemptible is True
    assert job.metadata["flux_preemptible_after_s"] == 0
    assert job.metadata["cwd"] == "/work"
    assert job.metadata["environment"] == {"OMP_NUM_THREADS": "4", "UNSET_ME": None}
    assert job.metadata["flux_shell"] == {"options": {"verbose": 1}}
    assert job.metadata["flux_files"] == ["script"]
    assert job.unknown == {}


def test_duration_zero_means_unlimited() -> None:
    """RFC 14: "A duration value of 0. SHALL be interpreted as unlimited or unset"."""
    assert ok(with_system(duration=0.0)).duration_s is None
    assert ok(with_system()).duration_s is None
    assert ok(with_system(duration=1)).duration_s == 1


def test_not_preemptible_when_unset() -> None:
    assert ok(with_system()).preemption.preemptible is None


@pytest.mark.parametrize(
    ("system", "expected"),
    [
        ({"duration": -1}, [("range", "attributes.system.duration")]),
        ({"duration": "1h"}, [("type", "attributes.system.duration")]),
        ({"duration": True}, [("type", "attributes.system.duration")]),
        ({"preemptible-after": -5}, [("range", "attributes.system.preemptible-after")]),
        ({"queue": 3}, [("type", "attributes.system.queue")]),
        ({"bank": ""}, [("range", "attributes.system.bank")]),
        ({"project": ["p"]}, [("type", "attributes.system.project")]),
        ({"cwd": "relative/dir"}, [("range", "attributes.system.cwd")]),
        ({"environment": ["A=1"]}, [("type", "attributes.system.environment")]),
        ({"environment": {"A": 1}}, [("type", "attributes.system.environment.A")]),
        ({"job": {"name": 3}}, [("type", "attributes.system.job.name")]),
        ({"job": "name"}, [("type", "attributes.system.job")]),
        ({"shell": {"options": 3}}, [("type", "attributes.system.shell.options")]),
        ({"files": []}, [("type", "attributes.system.files")]),
        ({"constraints": []}, [("type", "attributes.system.constraints")]),
        ({"dependencies": {}}, [("type", "attributes.system.dependencies")]),
    ],
)
def test_system_attribute_errors(system: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert errors(with_system(**system)) == expected


def test_unknown_system_attributes_warn_and_are_kept() -> None:
    """RFC 14: "unrecognized words SHALL trigger no more than a warning"."""
    r = run(with_system(duration=5, **{"x-gpu-clock": "max"}))
    assert r.ok and r.job is not None
    assert r.job.unknown == {"attributes.system.x-gpu-clock": "max"}
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", "attributes.system.x-gpu-clock")]


def test_user_attributes_are_metadata() -> None:
    doc = {**SIMPLE, "attributes": {"system": {}, "user": {"team": "ml", "n": 3}}}
    assert ok(doc).metadata["user_attributes"] == {"team": "ml", "n": 3}


def test_failed_result_keeps_the_self_given_id() -> None:
    doc = with_system(job={"name": "named"}, duration=-1)
    r = run(doc)
    assert (r.ok, r.id) == (False, "named")


# ---------------------------------------------------------------------------------------------------
# mapping to task groups
# ---------------------------------------------------------------------------------------------------


def test_node_above_slot_groups_the_slots_of_a_node() -> None:
    job = ok(jobspec(node(3, {"type": "socket", "count": 2, "with": [slot(1, core(4))]})))
    [g] = job.tasks
    assert (g.count, g.cpu_cores, g.one_per_node, g.exclusive) == (3, 8, True, False)
    assert job.metadata["flux_slots"]["default"]["slots_per_replica"] == 2
    [socket] = g.structure
    assert (socket.type, socket.count.min, socket.with_[0].type) == ("socket", 2, "slot")


def test_exclusive_nodes() -> None:
    [g] = ok(jobspec(node(2, slot(1, core(1)), exclusive=True))).tasks
    assert g.exclusive is True
    [g] = ok(jobspec(slot(2, node(1, exclusive=False)))).tasks
    assert g.exclusive is False
    [g] = ok(jobspec(slot(2, core(1), exclusive=True))).tasks
    assert (g.exclusive, g.one_per_node) == (False, False)  # cores are the slot's; the node is shared


def test_replica_spanning_nodes() -> None:
    job = ok(jobspec(slot(3, node(2, core(4), {"type": "gpu", "count": 4}))))
    [g] = job.tasks
    assert (g.count, g.nodes_per_replica, g.cpu_cores, g.gpus_per_replica) == (3, 2, 8, 8)
    assert job.total_gpus == 24
    assert job.placement.node_count is None  # fixed: 6 nodes, said by the groups already


def test_node_count_ranges() -> None:
    # slot range x 2 nodes each: 2 x {2, 4, 8} nodes
    job = ok(jobspec(slot({"min": 2, "max": 8, "operator": "*", "operand": 2}, node(2, core(1)))))
    assert job.placement.node_count is not None
    assert job.placement.node_count.values(100) == [4, 8, 16]
    assert job.tasks[0].count_range == CountRange(min=2, max=8, operator="*", operand=2)
    # node range above the slot: the replicas are the nodes
    job = ok(jobspec(node("2-6:2", slot(1, core(1)))))
    assert job.tasks[0].count == 2
    assert job.placement.node_count is not None and job.placement.node_count.values(100) == [2, 4, 6]
    # two ranges on one path: no exact form; the bound is flagged as not exact
    job = ok(jobspec({"type": "rack", "count": "1-2", "with": [node("2-3", slot(1, core(1)))]}))
    assert job.tasks[0].count_range == CountRange(min=2, max=6)
    assert job.metadata["flux_slots"]["default"]["count_exact"] is False


def test_units_and_extra_resources() -> None:
    job = ok(
        jobspec(
            slot(
                2,
                core(1),
                {"type": "memory", "count": 4096, "unit": "MiB"},
                {"type": "memory", "count": 512, "unit": "mb"},
                {"type": "storage", "count": 2, "unit": "TB"},
                {"type": "disk", "count": 100},
                {"type": "ib10g", "count": 1},
                {"type": "socket", "count": 1, "with": [{"type": "hwthread", "count": 2}]},
            )
        )
    )
    [g] = job.tasks
    # placer's GB is 2^30 bytes, and KB/MB/GB/TB are binary as Fluxion reads them (docs/inventory.md, Units):
    # 4096 MiB + 512 MB = 4.5 GB; 2 TB + 100 (GB by default) = 2148 GB.
    assert g.memory_gb == pytest.approx(4096 / 1024 + 512 / 1024)
    assert g.storage_gb == pytest.approx(2 * 1024 + 100)
    assert g.extra == {"ib10g": 1, "hwthread": 2}


def test_topology_scope_and_accelerator() -> None:
    job = ok(jobspec({"type": "rack", "count": 1, "with": [slot(4, node(1))]}))
    assert job.placement.topology_scope == "rack"
    assert job.accelerator is Accelerator.CPU
    job = ok(jobspec({"type": "rack", "count": 2, "with": [slot(4, node(1))]}))
    assert job.placement.topology_scope is None


def test_unslotted_resources_warn() -> None:
    r = run(jobspec(node(1, slot(1, core(1)), {"type": "memory", "count": 8})))
    assert r.ok and r.job is not None
    assert r.job.metadata["flux_unslotted"] == ["resources[0].with[1]"]
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", "resources[0].with[1]")]


def test_resource_ids_are_kept() -> None:
    job = ok(jobspec(slot(1, node(1, id="3"))))
    assert job.metadata["flux_resource_ids"] == {"resources[0].with[0]": "3"}


def test_multiplied_counts_are_bounded() -> None:
    big = 2**30
    doc = jobspec({"type": "cluster", "count": big, "with": [slot(big, core(big))]})
    assert errors(doc) == [("limit", "resources[0].with[0]")]


# ---------------------------------------------------------------------------------------------------
# the repository's fixtures (GPU jobs, constraints, dependencies)
# ---------------------------------------------------------------------------------------------------


def fixture(name: str) -> Any:
    return yaml.safe_load((FLUX_FIXTURES / name).read_text())


def test_fixture_v1_gpu_nodes() -> None:
    job = ok(fixture("v1_gpu_nodes.yaml"))
    assert (job.id, job.queue, job.tenant, job.project, job.duration_s) == (
        "train-resnet",
        "gpu",
        "vision",
        "resnet",
        7200,
    )
    [g] = job.tasks
    assert (g.name, g.count, g.cpu_cores, g.gpus_per_replica, g.exclusive, g.one_per_node) == (
        "trainer",
        2,
        32,
        8,
        True,
        True,
    )
    assert job.total_gpus == 16 and job.accelerator is Accelerator.GPU
    assert job.placement.required == [
        LabelRule(key="h100", operator=AffinityOperator.EXISTS),
        LabelRule(key="drain", operator=AffinityOperator.DOES_NOT_EXIST),
        LabelRule(key="hostname", operator=AffinityOperator.IN, values=["gpu01", "gpu02", "gpu03", "gpu04"]),
    ]
    assert [(d.job, d.condition) for d in job.dependencies] == [("prep", DependencyCondition.SUCCESS)]
    assert job.metadata["user_attributes"] == {"owner": "ada"}


def test_fixture_canonical_gpu_range() -> None:
    r = run(fixture("canonical_gpu_range.yaml"))
    assert r.ok and r.job is not None
    job = r.job
    [g] = job.tasks
    assert (g.count, g.cpu_cores, g.gpus_per_replica, g.exclusive) == (2, 32, 4, True)
    assert g.count_range is not None and g.count_range.values(100) == [2, 4, 8, 16]
    assert job.placement.node_count is not None and job.placement.node_count.values(100) == [2, 4, 8, 16]
    assert g.memory_gb == pytest.approx(256)  # 256 GiB is 256 of placer's GB (2^30 bytes)
    assert g.storage_gb == 1024  # 1 TB, binary as Fluxion reads it
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 8  # per GPU: 4 per node, 2 nodes minimum
    assert job.duration_s is None  # 0. is unlimited
    assert job.preemption.preemptible is True
    assert job.placement.required == [
        AnyOf(
            rules=[
                LabelRule(key="a100", operator=AffinityOperator.EXISTS),
                LabelRule(key="h100", operator=AffinityOperator.EXISTS),
            ]
        )
    ]
    assert [(d.job, d.condition) for d in job.dependencies] == [("f2oLkTLb", DependencyCondition.EXIT)]
    assert job.not_before == datetime(2025, 1, 1, tzinfo=UTC)
    assert job.metadata["flux_dependencies"] == [{"scheme": "singleton", "value": ""}]
    assert job.unknown == {"attributes.system.telemetry": {"sample": 0.1}}
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", "attributes.system.telemetry")]


def test_fixtures_against_the_schemas(specs_dir: Path) -> None:
    """The canonical fixture is valid by the RFC 14 schema; the V1 fixture by the RFC 14 schema, and by the
    RFC 25 schema except for ``exclusive`` on its node, which the RFC 25 *text* allows and its schema does
    not (documented in flux_v1); the bad fixture fails."""
    base = specs_dir / "flux-examples"
    v14 = jsonschema.Draft7Validator(json.loads((base / "spec_14" / "schema.json").read_text()))
    v25 = jsonschema.Draft7Validator(json.loads((base / "spec_25" / "schema.json").read_text()))
    # (dependencies are left out: the spec_14 schema only knows the string/fluid form of RFC 26)
    canonical, version1 = fixture("canonical_gpu_range.yaml"), fixture("v1_gpu_nodes.yaml")
    for doc in (canonical, version1):
        doc["attributes"]["system"].pop("dependencies")
    assert v14.is_valid(canonical)
    assert v14.is_valid(version1)
    assert ["exclusive" in e.message for e in v25.iter_errors(version1)] == [True]
    del version1["resources"][0]["exclusive"]
    assert v25.is_valid(version1)
    assert not v14.is_valid(json.loads((FLUX_FIXTURES / "canonical_bad.json").read_text()))


@pytest.mark.parametrize(
    "doc",
    [
        jobspec(slot(0, core(1))),
        jobspec(slot({"min": 1, "max": 4}, core(1))),
        jobspec(slot(1, core(1), label=3)),
        jobspec(slot(1, core(1, colour="x"))),
        jobspec(slot(1, core(1)), tasks=[task({"per_slot": 0})]),
        jobspec(slot(1, core(1)), system={"duration": -1}),
        v1(slot(0, core(1))),
        v1(slot(1, core(1)), tasks=[task({"per_slot": 0})]),
    ],
)
def test_rejections_agree_with_the_schemas(specs_dir: Path, doc: dict[str, Any]) -> None:
    """Hand-written invalid documents: the schemas beside the RFCs reject them too (so the schema checks in
    test_flux_examples are not vacuous). A version 1 document is refused only when it is neither an RFC 25
    nor an RFC 14 jobspec."""
    base = specs_dir / "flux-examples"
    names = ("spec_25", "spec_14") if doc["version"] == 1 else ("spec_14",)
    for name in names:
        schema = json.loads((base / name / "schema.json").read_text())
        assert not jsonschema.Draft7Validator(schema).is_valid(doc), name
    assert not run(doc).ok


@pytest.mark.parametrize(
    "doc",
    [
        v1(slot(1, {"type": "socket", "count": 1})),
        v1(node(1, slot(1, core(1))), tasks=[task({"per_slot": 2})]),
    ],
)
def test_v1_documents_valid_only_as_canonical_agree_with_the_schemas(
    specs_dir: Path, doc: dict[str, Any]
) -> None:
    """RFC 25's schema refuses them and RFC 14's accepts them: read as canonical, with the RFC 25 rules
    they break as warnings."""
    base = specs_dir / "flux-examples"
    v25 = jsonschema.Draft7Validator(json.loads((base / "spec_25" / "schema.json").read_text()))
    v14 = jsonschema.Draft7Validator(json.loads((base / "spec_14" / "schema.json").read_text()))
    assert not v25.is_valid(doc) and v14.is_valid(doc)
    verdict, broken = v1_breaks(doc)
    assert verdict == "canonical" and broken


def test_through_the_text_pipeline_and_batch_checks() -> None:
    text = (FLUX_FIXTURES / "v1_gpu_nodes.yaml").read_text()
    [r] = read_text(text, source="a.yaml")
    assert r.ok and r.job is not None and r.job.source_format == "flux-rfc25"
    # two jobspecs naming themselves alike are a batch duplicate
    results = read_files([FLUX_FIXTURES / "v1_gpu_nodes.yaml", FLUX_FIXTURES / "v1_gpu_nodes.yaml"])
    assert [(r.ok, [i.code for i in r.errors]) for r in results] == [(False, ["duplicate"])] * 2
