"""Spec rules that small inputs written from the specs broke (issue "Spec and peer fidelity"), on both
engines (``solve`` re-checks every decision with the independent checker) and, for placement rules, in the
checker alone: a decision that breaks the rule is caught.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, Placement, TaskGroup
from placer.solver.running import running_job
from placer.topology import cluster_of, pcie_inference
from placer.topology.inventory import ReplicaAllocation
from tests.solver.conftest import NOW, Solve, nodes_of, reason_codes

# -- 8. a running job's required anti-affinity binds incoming jobs (OJS ML §7.3; Kubernetes) ---------------


def _replica(job_id: str) -> Job:
    """A serving replica that forbids co-location with its own type (OJS ML §7.3's example)."""
    rule = LabelRule(key="job_type", operator="In", values=["ml.serve.replica"])  # type: ignore[arg-type]
    return Job(
        id=job_id,
        type="ml.serve.replica",
        tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1))],
        placement=Placement(anti_affinity=[rule]),
    )


def _new_replica(job_id: str) -> Job:
    """A new replica with the same type but no rule of its own: only the running one's rule keeps it off."""
    return Job(id=job_id, type="ml.serve.replica", tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1))])


def _serving(nodes: int):  # type: ignore[no-untyped-def]
    c = cluster_of(pcie_inference(nodes, gpus_per_node=4))
    first = c.nodes[0].name
    rj = running_job(
        _replica("r-0"), [ReplicaAllocation(node=first, gpus=[0], cpu_cores=2)], NOW - timedelta(hours=1)
    )
    return c.with_allocations([rj]), first


def test_a_running_replica_keeps_new_replicas_off_its_node(solve: Solve) -> None:
    c, first = _serving(2)
    d = solve([_new_replica("r-1")], c)
    assert nodes_of(d, "r-1") != [first]
    one, _ = _serving(1)
    d = solve([_new_replica("r-1")], one)
    assert reason_codes(d, "r-1")[0] in ("INSUFFICIENT_CAPACITY", "ANTI_AFFINITY")


def test_the_checker_catches_a_job_placed_beside_a_running_job_that_forbids_it() -> None:
    c, first = _serving(2)
    job = _new_replica("r-1")
    bad = Decision(
        placements=[JobPlacement(job="r-1", replicas=[ReplicaPlacement(node=first, gpus=[1], cpu_cores=2)])]
    )
    assert [v.rule for v in check(bad, [job], c, now=NOW)] == ["anti-affinity"]


# -- 4. unknown is not zero (OJS ML v0.1 §2.1 and §6.1) ------------------------------------------------------

#: ojs-ml-resources-v0.1.0.md §2.1, verbatim: the job asks 200 GB of scratch storage.
SPEC_21_JOB = {
    "type": "ml.train",
    "args": [{"model": "resnet50", "epochs": 100}],
    "meta": {
        "resources": {
            "gpu": {"count": 2, "type": "nvidia-a100", "memory_gb": 40},
            "cpu": {"cores": 8},
            "memory_gb": 64,
            "storage_gb": 200,
        }
    },
}
#: §6.1, verbatim: the FETCH request's worker advertises no storage at all.
SPEC_61_FETCH = {
    "queues": ["ml-training"],
    "count": 1,
    "worker_id": "gpu-worker-01",
    "capabilities": {
        "gpu": {"count": 4, "type": "nvidia-a100", "memory_gb": 80},
        "cpu": {"cores": 32},
        "memory_gb": 256,
    },
}


def test_the_spec_job_matches_the_spec_worker_that_does_not_advertise_storage(solve: Solve) -> None:
    from placer.service.matching import match, worker_cluster
    from placer.solver.jobs import read_object

    (read,) = read_object([{**SPEC_21_JOB, "id": "train"}])
    assert read.ok, read.errors
    cluster = worker_cluster(SPEC_61_FETCH)
    assert cluster.nodes[0].storage_gb is None  # not advertised: unknown, not 0
    d = solve([read], cluster)
    assert [p.job for p in d.placements] == ["train"]
    # FETCH: the worker asks queue ml-training, where the job is enqueued (§2.1 shows the job's meta only).
    (queued,) = read_object([{**SPEC_21_JOB, "id": "train", "queue": "ml-training"}])
    assert [m["job"] for m in match(SPEC_61_FETCH, [queued])["matches"]] == ["train"]


def test_a_node_that_declares_too_little_storage_is_still_a_limit(solve: Solve) -> None:
    from placer.solver.jobs import read_object

    (read,) = read_object([{**SPEC_21_JOB, "id": "train"}])
    small = {**SPEC_61_FETCH, "capabilities": {**SPEC_61_FETCH["capabilities"], "storage_gb": 100}}
    from placer.service.matching import worker_cluster

    d = solve([read], worker_cluster(small))
    assert reason_codes(d, "train") == ["UNSATISFIABLE"]


# -- 9. unknown attributes never vanish silently ------------------------------------------------------------


def test_an_unknown_ext_ml_attribute_is_kept_and_named_with_a_guess() -> None:
    from placer.solver.jobs import read_text

    doc = (
        '{"id": "a", "type": "ml.train", "ext_ml_gpu_count": 1, "ext_ml_gpu_cuont": 2, '
        '"ext_ml_node_affinity": {"required": [{"key": "zone", "operator": "In", "values": ["z1"]}]}}'
    )
    (r,) = read_text(doc)
    assert r.ok and r.job is not None
    assert set(r.job.unknown) == {"ext_ml_gpu_cuont", "ext_ml_node_affinity"}  # kept...
    warned = {w.path: w.message for w in r.warnings if w.code == "unknown"}  # ...and named
    assert warned["ext_ml_gpu_cuont"].endswith("did you mean 'ext_ml_gpu_count'?")
    assert warned["ext_ml_node_affinity"].endswith("did you mean 'ext_ml_affinity'?")
    # An alias is not read: its rule is not applied (placer says so instead of guessing).
    assert r.job.placement.required == []


# -- 6. exclusive use is priced as exclusive ----------------------------------------------------------------


def test_a_dedicated_job_pays_the_whole_node_and_its_queue_budget_counts_it(solve: Solve) -> None:
    """A dedicated 2-GPU job holds a whole $98.32/h DGX H100 (catalog on-demand price): it costs $98.32/h,
    not 2/8 of it ($24.58), so a $30/h queue budget keeps it waiting and a $100/h one admits it."""
    from placer.solver.jobs.queues import QueueConfig
    from placer.topology import capacity_pool

    c = cluster_of(capacity_pool(name="od", on_demand=1))
    job = Job(
        id="d",
        queue="train",
        placement=Placement(gpu_affinity="dedicated"),  # type: ignore[arg-type]
        tasks=[TaskGroup(cpu_cores=8, gpu=GpuDemand(count=2))],
    )
    d = solve([job], c)
    assert d.placements[0].cost_per_hour == pytest.approx(98.32)
    assert d.stats.cost_per_hour == pytest.approx(98.32)

    def budget(dollars: float) -> dict[str, QueueConfig]:
        cfg = {"queue": "train", "config": {"ml_limits": {"max_cost_per_hour": dollars}}}
        return {"train": QueueConfig.model_validate(cfg)}

    assert reason_codes(solve([job], c, queues=budget(30.0)), "d") == ["COST_BUDGET"]
    assert [p.job for p in solve([job], c, queues=budget(100.0)).placements] == ["d"]


def test_the_checker_counts_a_dedicated_replica_whole_against_a_dollar_budget() -> None:
    from placer.solver.jobs.queues import QueueConfig
    from placer.topology import capacity_pool

    c = cluster_of(capacity_pool(name="od", on_demand=1))
    job = Job(id="d", queue="train", placement=Placement(gpu_affinity="dedicated"),  # type: ignore[arg-type]
              tasks=[TaskGroup(cpu_cores=8, gpu=GpuDemand(count=2))])  # fmt: skip
    placed = Decision(
        placements=[
            JobPlacement(job="d", replicas=[ReplicaPlacement(node=c.nodes[0].name, gpus=[0, 1], cpu_cores=8)])
        ]
    )
    cfg = {"queue": "train", "config": {"ml_limits": {"max_cost_per_hour": 30.0}}}
    rules = [
        v.rule for v in check(placed, [job], c, now=NOW, queues={"train": QueueConfig.model_validate(cfg)})
    ]
    assert rules == ["cost-budget"]


# -- 3. taints and tolerations (Kubernetes semantics) --------------------------------------------------------


def _tainted(name: str, gpus: int, *taints: tuple[str, str | None, str]) -> object:
    from placer.topology import NodeSpec, Taint

    spec: dict[str, object] = {"name": name, "cpu_cores": 32, "memory_gb": 128}
    if gpus:
        spec["gpus"] = {"type": "nvidia-h100", "count": gpus}
    spec["taints"] = [Taint(key=k, value=v, effect=e) for k, v, e in taints]  # type: ignore[arg-type]
    return NodeSpec.model_validate(spec)


def _cluster_of(*specs: object):  # type: ignore[no-untyped-def]
    from placer.topology import Inventory, build_cluster

    return build_cluster(Inventory(nodes=list(specs)), source="test")  # type: ignore[arg-type]


GPU_TAINT = ("nvidia.com/gpu", None, "NoSchedule")


def test_a_gpu_taint_keeps_cpu_work_off_and_lets_gpu_work_on(solve: Solve) -> None:
    """GKE/EKS taint GPU pools ``nvidia.com/gpu:NoSchedule``; a pod requesting ``nvidia.com/gpu`` tolerates
    it (ExtendedResourceToleration), a CPU-only pod does not."""
    c = _cluster_of(_tainted("gpu", 8, GPU_TAINT))
    cpu_job = Job(id="cpu", tasks=[TaskGroup(cpu_cores=4)])
    gpu_job = Job(id="gpu", tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1))])
    d = solve([cpu_job, gpu_job], c)
    assert [p.job for p in d.placements] == ["gpu"]
    assert reason_codes(d, "cpu") == ["UNSATISFIABLE"]
    assert d.pending[0].reasons[0].details["eliminated"] == {"taint": 1}


def test_a_toleration_opens_a_dedicated_node_and_an_arm_tray(solve: Solve) -> None:
    from placer.solver.jobs.model import Toleration

    c = _cluster_of(
        _tainted("ml", 8, ("dedicated", "ml", "NoSchedule")),
        _tainted("arm", 4, ("kubernetes.io/arch", "arm64", "NoSchedule"), GPU_TAINT),
    )
    plain = Job(id="plain", tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=4))])
    assert reason_codes(solve([plain], c), "plain") == ["UNSATISFIABLE"]
    ml = plain.model_copy(
        update={"id": "ml", "placement": Placement(tolerations=[Toleration(key="dedicated", value="ml")])}
    )
    arm = plain.model_copy(
        update={
            "id": "arm",
            "placement": Placement(tolerations=[Toleration(key="kubernetes.io/arch", operator="Exists")]),
        }
    )
    d = solve([ml, arm], c)
    assert nodes_of(d, "ml") == ["ml"] and nodes_of(d, "arm") == ["arm"]


def test_prefer_no_schedule_is_a_preference_not_a_refusal(solve: Solve) -> None:
    c = _cluster_of(_tainted("soft", 8, ("busy", None, "PreferNoSchedule")), _tainted("plain", 8))
    job = Job(id="j", tasks=[TaskGroup(cpu_cores=2, gpu=GpuDemand(count=1))])
    assert nodes_of(solve([job], c), "j") == ["plain"]
    only_soft = _cluster_of(_tainted("soft", 8, ("busy", None, "PreferNoSchedule")))
    assert nodes_of(solve([job], only_soft), "j") == ["soft"]


def test_ojs_tolerations_are_read_in_kubernetes_syntax() -> None:
    from placer.solver.jobs import read_text

    (r,) = read_text(
        '{"id": "a", "type": "ml.train", "ext_ml_gpu_count": 1, "ext_ml_tolerations": '
        '[{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}, '
        '{"operator": "Exists"}]}'
    )
    assert r.ok and r.job is not None and "ext_ml_tolerations" not in r.job.unknown
    assert [(t.key, t.operator) for t in r.job.placement.tolerations] == [
        ("dedicated", "Equal"),
        (None, "Exists"),
    ]
    (bad,) = read_text('{"id": "b", "ext_ml_tolerations": [{"operator": "Equal"}]}')
    assert not bad.ok and [e.path for e in bad.errors] == ["ext_ml_tolerations[0]"]


def test_the_checker_knows_who_tolerates_a_taint() -> None:
    c = _cluster_of(_tainted("gpu", 8, GPU_TAINT))
    cpu_job = Job(id="cpu", tasks=[TaskGroup(cpu_cores=4)])
    gpu_job = Job(id="gpu", tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1))])
    on = Decision(
        placements=[
            JobPlacement(job="cpu", replicas=[ReplicaPlacement(node="gpu", cpu_cores=4)]),
            JobPlacement(job="gpu", replicas=[ReplicaPlacement(node="gpu", gpus=[0], cpu_cores=4)]),
        ]
    )
    assert [(v.rule, v.job) for v in check(on, [cpu_job, gpu_job], c, now=NOW)] == [("taint", "cpu")]


# -- 5. one unit convention: the same amount in every format gives the same answer --------------------------


def _memory_jobs(gb: int) -> list[object]:
    """One job asking ``gb`` GB of memory in each format: OJS (``ext_ml_memory_gb``), SSS (``units="GB"``,
    Appendix A: 2^30 bytes) and a Flux jobspec (``unit: GB``)."""
    from placer.solver.jobs import read_text

    ojs = f'{{"id": "ojs", "type": "t", "ext_ml_accelerator": "cpu", "ext_ml_memory_gb": {gb}}}'
    sss = f'<Job><JobId>sss</JobId><Processors>1</Processors><Memory units="GB">{gb}</Memory></Job>'
    flux = (
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: task\n    with:\n"
        f"      - type: core\n        count: 1\n      - type: memory\n        count: {gb}\n        unit: GB\n"
        "tasks:\n  - command: [app]\n    slot: task\n    count: {per_slot: 1}\n"
        "attributes:\n  system:\n    duration: 60\n    job: {name: flux}\n"
    )
    out = [*read_text(ojs), *read_text(sss), *read_text(flux)]
    assert all(r.ok for r in out), [r.errors for r in out]
    return out


def test_256_gb_asked_in_any_format_fits_a_node_of_256_gb_and_257_never_does(solve: Solve) -> None:
    """placer's GB is 2^30 bytes everywhere (docs/inventory.md, *Units*): Kubernetes' ``256Gi``, an
    inventory's ``memory_gb: 256``, and 256 GB asked as an OJS envelope, SSS XML or a Flux jobspec are one
    amount."""
    from placer.topology import cpu_nodes

    c = cluster_of(cpu_nodes(1, memory_gb=256))
    for r in _memory_jobs(256):
        d = solve([r], c)
        assert [p.job for p in d.placements] == [r.id], r.id
    for r in _memory_jobs(257):
        assert reason_codes(solve([r], c), r.id) == ["UNSATISFIABLE"], r.id


def test_kubernetes_gi_is_placer_gb() -> None:
    from placer.topology.load import inventory_from_input

    node = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": "n1", "labels": {}},
                "status": {
                    "allocatable": {"cpu": "8", "memory": "256Gi"},
                    "capacity": {"cpu": "8", "memory": "256Gi"},
                },
            }
        ],
    }
    assert inventory_from_input(node, "kubernetes", source="n.json").nodes[0].memory_gb == 256


# -- 10. the SSS job object's own rules -------------------------------------------------------------------


def test_a_job_group_without_its_id_is_invalid() -> None:
    """Table 1: JobGroupId's appearance is MUST."""
    from placer.solver.jobs import read_text

    job = "<Job><JobId>a</JobId><Processors>1</Processors></Job>"
    doc = f"<JobGroup><JobGroupName>g</JobGroupName>{job}</JobGroup>"
    results = read_text(doc)
    assert results and not any(r.ok for r in results)
    assert any(e.path.endswith("JobGroupId") and e.code == "required" for r in results for e in r.errors)
    with_id = doc.replace("<JobGroupName>", "<JobGroupId>g.1</JobGroupId><JobGroupName>")
    assert all(r.ok for r in read_text(with_id))


def test_an_empty_node_properties_element_is_invalid() -> None:
    """§5.1.9: NodeProperties "MUST contain one or more Node Properties"."""
    from placer.solver.jobs import read_text

    (r,) = read_text("<Job><JobId>a</JobId><Processors>1</Processors><NodeProperties></NodeProperties></Job>")
    assert not r.ok and [(e.code, e.path) for e in r.errors] == [("required", "Job[0].NodeProperties")]


# -- SSS Or between node tests and amounts: alternative node shapes (rule 10) ---------------------------

SHAPES_XML = """<Job><JobId>shapes</JobId><Requested>
<NodeProperties group="1"><Feature>a100</Feature></NodeProperties><Processors group="-1">8</Processors>
<NodeProperties conj="Or" group="1"><Feature>h100</Feature></NodeProperties>
<Processors group="-1">4</Processors>
</Requested></Job>"""


def _featured(name: str, feature: str, cores: int) -> object:
    from placer.topology import NodeSpec

    return NodeSpec(name=name, cpu_cores=cores, memory_gb=16, labels={feature: ""})


def test_sss_or_of_node_shapes_is_read_as_alternatives() -> None:
    # "(a node with feature a100 and 8 processors) or (one with h100 and 4)": §8.1 conj="Or" with groups.
    # Refused as unrepresentable before; now the first shape is the job's, the second an alternative.
    from placer.solver.jobs import read_text

    (r,) = read_text(SHAPES_XML)
    assert r.ok and r.job is not None, r.errors
    assert r.job.tasks[0].cpu_cores == 8
    assert r.job.placement.required == [LabelRule(key="a100", operator="Exists")]
    [alt] = r.job.alternatives
    assert alt.tasks[0].cpu_cores == 4 and alt.required == [LabelRule(key="h100", operator="Exists")]


def test_sss_alternative_shapes_run_in_the_one_the_cluster_has(solve: Solve) -> None:
    from placer.solver.jobs import read_text
    from placer.topology import Inventory, build_cluster

    (r,) = read_text(SHAPES_XML)
    # Only h100 nodes of 4 cores: the first shape (8 processors on an a100 node) never fits, the second does.
    h100 = build_cluster(Inventory(nodes=[_featured("h", "h100", 4)]), source="t")
    d = solve([r], h100)
    [p] = d.placements
    assert [(x.node, x.cpu_cores) for x in p.replicas] == [("h", 4)]
    assert any("shape 2 of 2" in n for n in p.notes)
    # With an a100 node of 8 cores too, the first shape (the document's order) is taken.
    both = build_cluster(Inventory(nodes=[_featured("h", "h100", 4), _featured("a", "a100", 8)]), source="t")
    [p] = solve([r], both).placements
    assert [(x.node, x.cpu_cores) for x in p.replicas] == [("a", 8)]


def test_the_checker_accepts_either_shape_and_nothing_else() -> None:
    from placer.solver.jobs import read_text
    from placer.topology import Inventory, build_cluster

    (r,) = read_text(SHAPES_XML)
    assert r.job is not None
    nodes = [_featured("h", "h100", 8), _featured("a", "a100", 8), _featured("o", "other", 8)]
    cluster = build_cluster(Inventory(nodes=nodes), source="t")

    def rules_of(node: str, cores: float) -> list[str]:
        rep = ReplicaPlacement(node=node, cpu_cores=cores)
        d = Decision(placements=[JobPlacement(job="shapes", replicas=[rep])])
        return sorted({v.rule for v in check(d, [r.job], cluster, now=NOW)})  # type: ignore[list-item]

    assert rules_of("a", 8) == [] and rules_of("h", 4) == []
    # 4 processors on the a100 node (the a100 shape asks 8), or any amount on a node with neither
    # feature, is neither shape.
    assert rules_of("a", 4) == ["gang"] and rules_of("o", 8) == ["label-rule"]
