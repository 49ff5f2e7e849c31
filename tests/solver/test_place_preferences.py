"""Soft preferences (level 2 of the objective) and multi-pair node selectors, on both engines.

OJS ML §4/§11: prefer workers with the model loaded (that version when given); ML extensions §7.2: prefer
workers co-located with the data; OJS ML §7.2: preferred rules weighted 0-100; §7.1: a worker must match
ALL selector pairs.
"""

from __future__ import annotations

from placer.solver.jobs.model import GpuDemand, Job, LabelRule, ModelRef, Placement, TaskGroup
from placer.topology import Inventory, LoadedModel, NodeSpec, build_cluster
from tests.solver.conftest import Solve, nodes_of, pending_reason


def _cluster(*nodes: NodeSpec):  # type: ignore[no-untyped-def]
    return build_cluster(Inventory(nodes=list(nodes)), source="test")


def _l4(name: str, **kw: object) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=16, memory_gb=64, gpus={"type": "nvidia-l4", "count": 1}, **kw)  # type: ignore[arg-type]


def _gpu_job(job_id: str, **kw: object) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(cpu_cores=4, memory_gb=16, gpu=GpuDemand(count=1))], **kw)  # type: ignore[arg-type]


def test_model_locality_prefers_the_node_with_that_model_version(solve: Solve) -> None:
    # Three identical L4 nodes; only "b" has llama v2 loaded, "c" has llama v1.
    c = _cluster(
        _l4("a"),
        _l4("b", models_loaded=[LoadedModel(model_id="llama", model_version="v2")]),
        _l4("c", models_loaded=[LoadedModel(model_id="llama", model_version="v1")]),
    )
    d = solve([_gpu_job("serve", model=ModelRef(id="llama", version="v2"))], c)
    assert nodes_of(d, "serve") == ["b"]
    d = solve([_gpu_job("serve-v1", model=ModelRef(id="llama", version="v1"))], c)
    assert nodes_of(d, "serve-v1") == ["c"]


def test_data_locality_prefers_nodes_listing_a_prefix_of_the_data_uri(solve: Solve) -> None:
    c = _cluster(
        _l4("a", labels={"data_locality": "s3://other/"}),
        _l4("b"),
        _l4("c", labels={"data_locality": "gs://x/, s3://bucket-a/"}),
    )
    job = _gpu_job("train", placement=Placement(data_locality="s3://bucket-a/train/part-0"))
    assert nodes_of(solve([job], c), "train") == ["c"]


def test_preferred_rule_weights_decide_between_zones(solve: Solve) -> None:
    c = _cluster(_l4("in-z1", zone="z1"), _l4("in-z2", zone="z2"))

    def job(w1: int, w2: int) -> Job:
        rules = [
            LabelRule(key="zone", operator="In", values=["z1"], weight=w1),
            LabelRule(key="zone", operator="In", values=["z2"], weight=w2),
        ]
        return _gpu_job(f"j-{w1}-{w2}", placement=Placement(preferred=rules))

    assert nodes_of(solve([job(20, 80)], c), "j-20-80") == ["in-z2"]
    assert nodes_of(solve([job(80, 20)], c), "j-80-20") == ["in-z1"]


def test_node_selector_needs_every_pair(solve: Solve) -> None:
    c = _cluster(
        _l4("a-silver", labels={"team": "a", "tier": "silver"}),
        _l4("b-gold", labels={"team": "b", "tier": "gold"}),
        _l4("a-gold", labels={"team": "a", "tier": "gold"}),
    )
    selector = {"team": "a", "tier": "gold"}
    d = solve([_gpu_job("one", placement=Placement(node_selector=selector))], c)
    assert nodes_of(d, "one") == ["a-gold"]
    # A second such job finds the only matching node full: pending, though two other nodes are free.
    d = solve(
        [
            _gpu_job("one", placement=Placement(node_selector=selector)),
            _gpu_job("two", placement=Placement(node_selector=selector)),
        ],
        c,
    )
    placed = [p.job for p in d.placements]
    assert len(placed) == 1
    other = "two" if placed == ["one"] else "one"
    assert (pending_reason(d, other) or "").startswith(("INSUFFICIENT_CAPACITY", "LOST_TO_HIGHER_PRIORITY"))
