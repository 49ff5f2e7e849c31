"""Extended resources: a Flux resource type beyond cores, GPUs, memory and storage (RFC 14 use case 1.5's
``ib10g``) and an SSS consumable ``Resource`` (§5.1.8, a SHOULD) go only to nodes that advertise that
much, on both engines, through the checker (rule 21). Before, both were read into the task group and then
dropped: use case 1.5 was placed on four nodes without any ``ib10g``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs import read_file, read_text
from placer.topology import InnerVertex, Inventory, NodeSpec, build_cluster
from tests.solver.conftest import NOW, Solve, nodes_of, pending_reason

MATLAB = """<Job><JobId>matlab</JobId><Requested>
  <Processors>2</Processors><Resource name="License" type="MATLAB">1</Resource>
</Requested></Job>"""


def _node(name: str, *inner: InnerVertex, **labels: str) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=8, memory_gb=64, inner=list(inner), labels=labels)


def _core(n: int) -> InnerVertex:
    return InnerVertex(type="core", size=n)


def test_use_case_1_5_goes_to_the_nodes_with_an_ib10g(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.5.yaml")
    # Slot "ib" x 2: a node with 4 GB and an ib10g each; slot "bicore" x 2: a node with 2 cores each. Two of
    # the four nodes have an ib10g vertex: the "ib" replicas can only be those.
    ib = InnerVertex(type="ib10g", size=1)
    mem = InnerVertex(type="memory", size=16)
    nodes = [_node("ib-0", _core(8), mem, ib), _node("plain-0", _core(8), mem)]
    nodes += [_node("ib-1", _core(8), mem, ib), _node("plain-1", _core(8), mem)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    placement = d.placement_of(r.id)
    assert placement is not None
    by_group = {g: sorted(x.node for x in placement.replicas if x.task_group == g) for g in ("ib", "bicore")}
    assert by_group["ib"] == ["ib-0", "ib-1"]
    assert any("1 ib10g per replica" in n for n in placement.notes)


def test_without_any_ib10g_use_case_1_5_is_unsatisfiable_and_says_why(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.5.yaml")
    nodes = [_node(f"plain-{i}", _core(8), InnerVertex(type="memory", size=16)) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    reason = pending_reason(d, r.id) or ""
    assert reason.startswith("UNSATISFIABLE") and "extended resource" in reason


def test_an_sss_license_goes_to_a_node_labelled_with_enough(solve: Solve) -> None:
    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None and r.job.tasks[0].extra == {"License:MATLAB": 1.0}
    # No inner tree here: the label resource.License.MATLAB says how many a node has (0 is none).
    nodes = [_node("none"), _node("zero", **{"resource.License.MATLAB": "0"})]
    nodes.append(_node("two", **{"resource.License.MATLAB": "2"}))
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    assert nodes_of(d, r.id) == ["two"]


@pytest.mark.parametrize(("node", "broken"), [("two", []), ("none", ["extended"]), ("zero", ["extended"])])
def test_the_checker_refuses_a_replica_on_a_node_that_advertises_too_little(
    node: str, broken: list[str]
) -> None:
    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None
    nodes = [_node("none"), _node("zero", **{"resource.License.MATLAB": "0"})]
    nodes.append(_node("two", **{"resource.License.MATLAB": "2"}))
    cluster = build_cluster(Inventory(nodes=nodes), source="t")
    d = Decision(placements=[JobPlacement(job=r.id, replicas=[ReplicaPlacement(node=node, cpu_cores=2)])])
    assert [v.rule for v in check(d, [r.job], cluster, now=NOW)] == broken


def test_a_plan_on_a_node_without_the_resource_is_refused_too() -> None:
    """Plans are placements held for later (rule 18 re-checks them as placements): rule 21 holds there."""
    from placer.solver.decision import Hold

    [r] = read_text(MATLAB, source="job.xml")
    assert r.job is not None
    cluster = build_cluster(Inventory(nodes=[_node("none")]), source="t")
    hold = Hold(job=r.id, start=NOW.replace(hour=13), replicas=[ReplicaPlacement(node="none", cpu_cores=2)])
    d = Decision(
        reservations=[hold], pending=[{"job": r.id, "reasons": [{"code": "PLANNED_START", "message": "m"}]}]
    )
    assert "plan-placement" in [v.rule for v in check(d, [r.job], cluster, now=NOW)]
