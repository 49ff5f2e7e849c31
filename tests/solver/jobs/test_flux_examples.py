"""Every Flux RFC example file, read at test time from ``specs_dir/flux-examples`` (never copied).

Each jobspec's verdict is checked against the ``schema.json`` beside it: every example is accepted. For
``version: 1`` documents the RFC 25 schema decides which rules were applied: RFC 25's (``flux-rfc25``)
when it accepts the document, else RFC 14's (``flux-rfc14``, with the broken RFC 25 rules as warnings;
only ``spec_14/example2.yaml``). Then the values the RFC text states for each use case are asserted:
"Run hostname 20 times on 4 nodes, 5 per node" means 4 replicas and 20 tasks, and so on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from placer.solver.jobs.errors import ISSUE_CODES
from placer.solver.jobs.formats.flux import read
from placer.solver.jobs.formats.flux_dependencies import read_dependencies
from placer.solver.jobs.load import read_file
from placer.solver.jobs.model import (
    Accelerator,
    AffinityOperator,
    CountRange,
    DependencyCondition,
    Job,
    LabelRule,
    ReadResult,
)
from placer.solver.jobs.options import ReadOptions

EXAMPLES = "flux-examples"
SPEC14 = sorted(
    [
        "example1.yaml",
        "example2.yaml",
        *(f"use_case_1.{i}.yaml" for i in range(1, 9)),
        *(f"use_case_2.{i}.yaml" for i in range(1, 10)),
    ]
)
SPEC25 = sorted(["example1.yaml", "use_case_1.1.yaml", *(f"use_case_2.{i}.yaml" for i in range(1, 5))])
SPEC26 = sorted(
    ["example_1.yaml", "example_2.yaml", "example_3_A.yaml", "example_3_B.yaml", "example_3_C.yaml"]
)

#: The only example that says ``version: 1`` but is not an RFC 25 jobspec, and the RFC 25 rules it breaks
#: (warnings: it is read as the RFC 14 canonical jobspec RFC 14 presents it as; see the flux module).
NOT_V1 = {
    ("spec_14", "example2.yaml"): {("unsupported", "resources[0].with[0]"), ("required", "resources[0].with")}
}


def _load(specs_dir: Path, spec: str, name: str) -> Any:
    return yaml.safe_load((specs_dir / EXAMPLES / spec / name).read_text())


def _schema(specs_dir: Path, spec: str) -> jsonschema.protocols.Validator:
    """The schema of ``spec``; spec_14 refers to spec_26's by the relative URI ``file:data/spec_26/...``."""
    base = specs_dir / EXAMPLES
    schema = json.loads((base / spec / "schema.json").read_text())
    deps = json.loads((base / "spec_26" / "schema.json").read_text())
    registry = Registry().with_resource("file:data/spec_26/schema.json", Resource.from_contents(deps))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry)


def _read(doc: Any, name: str) -> ReadResult:
    [r] = read(doc, source=name, options=ReadOptions())
    assert all(i.code in ISSUE_CODES for i in [*r.errors, *r.warnings])
    return r


def _job(specs_dir: Path, spec: str, name: str) -> Job:
    r = _read(_load(specs_dir, spec, name), name)
    assert r.ok, r.errors
    assert r.job is not None
    return r.job


def test_example_file_lists_are_complete(specs_dir: Path) -> None:
    """A new example file in the specs makes this fail until it is looked at."""
    for spec, names in (("spec_14", SPEC14), ("spec_25", SPEC25), ("spec_26", SPEC26)):
        found = sorted(p.name for p in (specs_dir / EXAMPLES / spec).glob("*.yaml"))
        assert found == names, spec


@pytest.mark.parametrize(
    ("spec", "name"), [("spec_14", n) for n in SPEC14] + [("spec_25", n) for n in SPEC25]
)
def test_jobspec_verdict_agrees_with_schemas(specs_dir: Path, spec: str, name: str) -> None:
    doc = _load(specs_dir, spec, name)
    schema_ok = _schema(specs_dir, spec).is_valid(doc)
    r = _read(doc, name)
    assert r.ok == schema_ok, (r.errors, schema_ok)
    assert r.ok, r.errors
    assert r.job is not None and r.job.envelope == doc
    # RFC 25 governs version 1 documents that meet it, wherever they appear; the rest are canonical
    v1 = doc["version"] == 1 and _schema(specs_dir, "spec_25").is_valid(doc)
    assert r.job.source_format == ("flux-rfc25" if v1 else "flux-rfc14")
    not_v1 = {(w.code, w.path) for w in r.warnings if w.message.startswith("not a version 1 jobspec")}
    assert not_v1 == NOT_V1.get((spec, name), set())


def test_spec14_example2_is_valid_canonical_but_not_v1(specs_dir: Path) -> None:
    """spec_14's schema accepts example2 (any version), RFC 25's rejects it (``slot > node`` is none of
    the V1 graphs): RFC 14 presents it as a canonical jobspec, so it is read as one. Values from the file
    and the RFC text "running one task on each of four nodes": a slot of one whole node, 4 times."""
    doc = _load(specs_dir, "spec_14", "example2.yaml")
    assert _schema(specs_dir, "spec_14").is_valid(doc)
    assert not _schema(specs_dir, "spec_25").is_valid(doc)
    r = _read(doc, "example2.yaml")
    assert r.ok and r.job is not None
    job = r.job
    assert (job.id, job.source_format, job.metadata["flux_version"]) == ("example2.yaml#0", "flux-rfc14", 1)
    [g] = job.tasks
    assert (g.name, g.count, g.one_per_node, g.nodes_per_replica) == ("default", 4, True, 1)
    [node] = g.structure
    assert (node.type, node.count.min, node.count.max) == ("node", 1, 1)
    [task] = job.metadata["flux_tasks"]
    assert (task["command"], task["count"], task["total_tasks"]) == (["hostname"], {"per_slot": 1}, 4)
    assert job.duration_s == 3600
    assert job.metadata["cwd"] == "/home/flux"
    assert job.metadata["environment"] == {"HOME": "/home/flux"}
    assert job.accelerator is Accelerator.CPU and job.total_gpus == 0
    # the same graph under a canonical version reads the same, without the RFC 25 warnings
    r2 = _read({**doc, "version": 2}, "example2-v2")
    assert r2.ok and r2.job is not None
    assert (r2.job.tasks[0].count, r2.job.tasks[0].one_per_node) == (4, True)
    assert not r2.warnings


@pytest.mark.parametrize("name", SPEC26)
def test_spec26_dependency_lists(specs_dir: Path, name: str) -> None:
    """spec_26 files are dependency lists, not jobspecs: read through the dependency parser."""
    deps = _load(specs_dir, "spec_26", name)
    assert _schema(specs_dir, "spec_26").is_valid(deps)
    r = read_dependencies(deps, "attributes.system.dependencies")
    assert r.issues == []
    # string/fluid schemes are kept whole as metadata, in order
    assert r.other == deps
    assert r.not_before is None


def test_spec26_example2_waits_for_the_system_job(specs_dir: Path) -> None:
    """RFC 26 example 2: the job runs "after the completion of the system job" hungry-hippo-white-elephant."""
    r = read_dependencies(_load(specs_dir, "spec_26", "example_2.yaml"), "d")
    assert [(d.job, d.condition, d.scheme) for d in r.dependencies] == [
        ("hungry-hippo-white-elephant", DependencyCondition.EXIT, "fluid")
    ]


def test_spec26_fan_out_is_symbolic(specs_dir: Path) -> None:
    """Example 3 (A -> B -> C through string names): no job id is known, so no Dependency, only metadata."""
    b = read_dependencies(_load(specs_dir, "spec_26", "example_3_B.yaml"), "d")
    assert b.dependencies == []
    assert [(o["type"], o["value"]) for o in b.other] == [("in", "A"), ("out", "B")]


# ---------------------------------------------------------------------------------------------------
# RFC 14 use cases: values from the RFC text
# ---------------------------------------------------------------------------------------------------


def test_spec14_example1(specs_dir: Path) -> None:
    """ "4 nodes each of which with 1 task slot consisting of 2 cores each ... a total of 4 tasks"."""
    job = _job(specs_dir, "spec_14", "example1.yaml")
    [g] = job.tasks
    assert (g.name, g.count, g.cpu_cores, g.one_per_node) == ("default", 4, 2, True)
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 4
    assert job.duration_s == 3600
    assert job.metadata["cwd"] == "/home/flux"
    assert job.metadata["environment"] == {"HOME": "/home/flux"}
    assert job.id == "example1.yaml#0"
    assert job.accelerator is Accelerator.CPU


def test_use_case_1_1_four_nodes(specs_dir: Path) -> None:
    job = _job(specs_dir, "spec_14", "use_case_1.1.yaml")
    [g] = job.tasks
    assert (g.count, g.nodes_per_replica, g.one_per_node, g.exclusive) == (4, 1, True, True)
    assert job.metadata["flux_version"] == 999


def test_use_case_1_2_between_3_and_30_nodes(specs_dir: Path) -> None:
    job = _job(specs_dir, "spec_14", "use_case_1.2.yaml")
    [g] = job.tasks
    assert g.count == 3
    assert g.count_range == CountRange(min=3, max=30, operator="+", operand=1)
    assert g.count_range.values(1000) == list(range(3, 31))
    assert job.placement.node_count is not None
    assert job.placement.node_count.values(1000) == list(range(3, 31))


def test_use_case_1_3_sockets_and_cores_per_node(specs_dir: Path) -> None:
    """ "4 nodes with at least 2 sockets each, and 4 cores per socket"; the node says exclusive: false."""
    job = _job(specs_dir, "spec_14", "use_case_1.3.yaml")
    [g] = job.tasks
    assert (g.count, g.cpu_cores, g.exclusive, g.one_per_node) == (4, 2 * 4, False, True)
    [node] = g.structure
    [socket] = node.with_
    [core] = socket.with_
    assert (node.type, node.exclusive, socket.type, core.type) == ("node", False, "socket", "core")
    assert (socket.count.min, socket.count.max, core.count.min, core.count.max) == (2, None, 4, None)


def test_use_case_1_4_exclusive_nodes(specs_dir: Path) -> None:
    """ "Request an exclusive allocation of 4 nodes": the slot default (exclusive) applies to its node."""
    [g] = _job(specs_dir, "spec_14", "use_case_1.4.yaml").tasks
    assert (g.count, g.cpu_cores, g.exclusive) == (4, 8, True)
    assert g.structure[0].exclusive is None  # not written: the default comes from the slot


def test_use_case_1_5_two_slot_kinds(specs_dir: Path) -> None:
    job = _job(specs_dir, "spec_14", "use_case_1.5.yaml")
    ib, bicore = job.tasks
    assert (ib.name, ib.count, ib.memory_gb, ib.extra) == ("ib", 2, 4, {"ib10g": 1})
    assert (bicore.name, bicore.count, bicore.cpu_cores) == ("bicore", 2, 2)
    assert job.duration_s == 14400  # "walltime of 4 hours"
    slots = job.metadata["flux_slots"]
    assert slots["ib"]["within"] == [{"type": "cluster", "count": {"min": 1, "max": 1}}]
    assert slots["bicore"]["within"] == [{"type": "switch", "count": {"min": 1, "max": 1}}]


def test_use_case_1_6_cores_on_two_clusters(specs_dir: Path) -> None:
    """ "30 cores on 2 clusters (total = 60 cores)"."""
    job = _job(specs_dir, "spec_14", "use_case_1.6.yaml")
    [g] = job.tasks
    assert g.count * g.cpu_cores == 60
    assert job.placement.node_count == CountRange(min=2)  # each cluster's slot: at least one node
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 2  # one per node, one node per slot minimum


def test_use_case_1_7_cores_across_switches(specs_dir: Path) -> None:
    """ "3 cores across 3 switches"."""
    job = _job(specs_dir, "spec_14", "use_case_1.7.yaml")
    [g] = job.tasks
    assert (g.count, g.count * g.cpu_cores) == (3, 3)
    assert job.metadata["flux_slots"]["default"]["within"] == [
        {"type": "switch", "count": {"min": 3, "max": 3}}
    ]


def test_use_case_1_8_perfect_squares(specs_dir: Path) -> None:
    """ "between 3 and 30 nodes, but must be a perfect square": the idset 4,9,16,25."""
    [g] = _job(specs_dir, "spec_14", "use_case_1.8.yaml").tasks
    assert g.count == 4
    assert g.count_range is not None
    assert g.count_range.values(1000) == [4, 9, 16, 25]


def test_use_case_2_1_twenty_tasks_on_four_nodes(specs_dir: Path) -> None:
    """ "Run hostname 20 times on 4 nodes, 5 per node": 4 slots each containing 1 node, 5 tasks per slot."""
    job = _job(specs_dir, "spec_14", "use_case_2.1.yaml")
    [g] = job.tasks
    assert (g.count, g.nodes_per_replica, g.one_per_node) == (4, 1, True)
    [task] = job.metadata["flux_tasks"]
    assert (task["count"], task["total_tasks"], task["command"]) == ({"per_slot": 5}, 20, ["hostname"])


def test_use_case_2_2_five_tasks_on_four_nodes(specs_dir: Path) -> None:
    job = _job(specs_dir, "spec_14", "use_case_2.2.yaml")
    assert job.tasks[0].count == 4
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 5


def test_use_case_2_3_cores_per_task(specs_dir: Path) -> None:
    """ "10 copies of myapp, require 2 cores per copy, for a total of 20 cores"."""
    [g] = _job(specs_dir, "spec_14", "use_case_2.3.yaml").tasks
    assert (g.count, g.cpu_cores, g.count * g.cpu_cores, g.one_per_node) == (10, 2, 20, False)


def test_use_case_2_4_two_binaries_one_node(specs_dir: Path) -> None:
    """ "11 tasks, one node, the first 10 tasks each using one core and 4G of RAM ..., the last task using
    6 cores and 24G of RAM"."""
    job = _job(specs_dir, "spec_14", "use_case_2.4.yaml")
    read_db, db = job.tasks
    assert (read_db.name, read_db.count, read_db.cpu_cores, read_db.memory_gb) == ("read-db", 1, 10, 40)
    assert (db.name, db.count, db.cpu_cores, db.memory_gb) == ("db", 1, 6, 24)
    assert job.placement.topology_scope == "node"  # "one node"
    assert sum(t["total_tasks"] for t in job.metadata["flux_tasks"]) == 11
    assert job.metadata["flux_slots"]["read-db"]["slots_per_replica"] == 10


def test_use_case_2_5_memory_per_core(specs_dir: Path) -> None:
    """ "10 copies of app across 10 cores with at least 2GB per core"."""
    [g] = _job(specs_dir, "spec_14", "use_case_2.5.yaml").tasks
    assert (g.count, g.cpu_cores, g.memory_gb) == (10, 1, 2)
    memory = next(r for r in g.structure if r.type == "memory")
    assert (memory.count.min, memory.count.max, memory.unit) == (2, None, "GB")


def test_use_case_2_6_memory_per_node(specs_dir: Path) -> None:
    """ "10 copies of app across 2 nodes with at least 4GB per node"."""
    job = _job(specs_dir, "spec_14", "use_case_2.6.yaml")
    [g] = job.tasks
    assert (g.name, g.count, g.memory_gb, g.one_per_node) == ("4GB-node", 2, 4, True)
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 10


def test_use_case_2_7_environment_override(specs_dir: Path) -> None:
    """ "one with the global environment and one with an overridden environment (unset FOO, BAR=2)"."""
    job = _job(specs_dir, "spec_14", "use_case_2.7.yaml")
    assert job.metadata["environment"] == {"FOO": "/tmp", "BAR": "1"}
    first, second = job.metadata["flux_tasks"]
    assert "attributes" not in first
    assert second["attributes"]["environment"] == {"FOO": None, "BAR": "2"}


def test_use_case_2_8_dependencies(specs_dir: Path) -> None:
    """Depend on fluid hungry-hippo-white-elephant and on the out-name foo; provide out-name bar."""
    job = _job(specs_dir, "spec_14", "use_case_2.8.yaml")
    assert [(d.job, d.scheme) for d in job.dependencies] == [("hungry-hippo-white-elephant", "fluid")]
    kept = job.metadata["flux_dependencies"]
    assert [(d["scheme"], d["type"], d["value"]) for d in kept] == [
        ("fluid", "in", "hungry-hippo-white-elephant"),
        ("string", "in", "foo"),
        ("string", "out", "bar"),
    ]


def test_use_case_2_9_property_constraint(specs_dir: Path) -> None:
    """ "Require that allocated resources have the amd-mi50 property"."""
    job = _job(specs_dir, "spec_14", "use_case_2.9.yaml")
    assert job.placement.required == [LabelRule(key="amd-mi50", operator=AffinityOperator.EXISTS)]


# ---------------------------------------------------------------------------------------------------
# RFC 25 use cases
# ---------------------------------------------------------------------------------------------------


def test_spec25_example1_and_use_case_1_1(specs_dir: Path) -> None:
    for name, cores in (("example1.yaml", 2), ("use_case_1.1.yaml", 1)):
        job = _job(specs_dir, "spec_25", name)
        [g] = job.tasks
        assert (g.count, g.cpu_cores, g.one_per_node, g.exclusive) == (4, cores, True, False)
        assert job.source_format == "flux-rfc25"


def test_spec25_use_case_2_1_oversubscribed_total(specs_dir: Path) -> None:
    """ "5 copies of hostname across 4 nodes": accepted with a warning on RFC 25's total <= slots rule."""
    r = _read(_load(specs_dir, "spec_25", "use_case_2.1.yaml"), "uc21")
    assert r.ok and r.job is not None
    assert [(w.code, w.path) for w in r.warnings] == [("range", "tasks[0].count.total")]
    assert r.job.tasks[0].count == 4
    assert r.job.metadata["flux_tasks"][0]["total_tasks"] == 5


def test_spec25_use_case_2_2_cores(specs_dir: Path) -> None:
    [g] = _job(specs_dir, "spec_25", "use_case_2.2.yaml").tasks
    assert g.count * g.cpu_cores == 20


def test_spec25_use_case_2_3_gpus(specs_dir: Path) -> None:
    """ "10 copies of myapp, require 2 cores and 1 gpu per copy, for a total of 20 cores and 10 gpus"."""
    job = _job(specs_dir, "spec_25", "use_case_2.3.yaml")
    [g] = job.tasks
    assert (g.count * g.cpu_cores, job.total_gpus, g.gpus_per_replica) == (20, 10, 1)
    assert job.accelerator is Accelerator.GPU


def test_spec25_use_case_2_4_gpus_per_node(specs_dir: Path) -> None:
    """ "16 copies of myapp across 4 nodes, each copy with 1 core and 1 gpu": one replica per node
    grouping that node's 4 slots."""
    job = _job(specs_dir, "spec_25", "use_case_2.4.yaml")
    [g] = job.tasks
    assert (g.count, g.one_per_node, g.cpu_cores, g.gpus_per_replica) == (4, True, 4, 4)
    assert job.total_gpus == 16
    assert job.metadata["flux_tasks"][0]["total_tasks"] == 16
    assert job.metadata["flux_slots"]["default"]["slots"] == 16
    [slot] = g.structure
    assert (slot.type, slot.count.min, slot.label) == ("slot", 4, "default")


def test_example_through_the_load_pipeline(specs_dir: Path) -> None:
    """Detection picks the Flux reader for a YAML file, and the guards pass a valid example."""
    [r] = read_file(specs_dir / EXAMPLES / "spec_25" / "use_case_2.4.yaml")
    assert r.ok and r.job is not None
    assert r.job.total_gpus == 16
