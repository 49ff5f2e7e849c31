"""Anti-affinity (OJS ML §7.3, placement-rules.md rule 9): rules tested against the labels of *jobs* on a
node — running jobs (``RunningJob.labels``) and jobs placed in the same decision (``Job.labels`` plus the
derived ``job_id``, ``job_type``, ``queue``, ``tenant``, ``priority_class``, ``model_id``).
"""

from __future__ import annotations

from placer.solver.jobs import read_text
from placer.solver.jobs.model import GpuDemand, Job, LabelRule, ModelRef, Placement, TaskGroup
from placer.topology import cluster_of, cpu_nodes, dgx_h100
from tests.solver.conftest import Solve, nodes_of, reason_codes


def avoid(key: str, *values: str) -> Placement:
    return Placement(anti_affinity=[LabelRule(key=key, operator="In", values=list(values))])


def small(job_id: str, **kw: object) -> Job:
    return Job(id=job_id, tasks=[TaskGroup(cpu_cores=4)], **kw)  # type: ignore[arg-type]


def running(job: str, node: str, labels: dict[str, str], **kw: object) -> dict[str, object]:
    return {"job": job, "labels": labels, "replicas": [{"node": node, "cpu_cores": 4}], **kw}


def test_avoids_the_node_of_a_running_job_with_matching_labels(solve: Solve) -> None:
    c = cluster_of(cpu_nodes(2)).with_allocations([running("db", "cpu-1", {"app": "db"})])
    d = solve([small("web", placement=avoid("app", "db"))], c)
    assert nodes_of(d, "web") == ["cpu-2"]


def test_running_job_with_other_labels_does_not_repel(solve: Solve) -> None:
    # Only cpu-1 exists and the running job there is a cache, not a db: the job may join it.
    c = cluster_of(cpu_nodes(1)).with_allocations([running("cache", "cpu", {"app": "cache"})])
    d = solve([small("web", placement=avoid("app", "db"))], c)
    assert nodes_of(d, "web") == ["cpu"]


def test_running_job_derived_queue_label(solve: Solve) -> None:
    # The running job's queue is a derived label (rule 9).
    c = cluster_of(cpu_nodes(2)).with_allocations([running("r", "cpu-2", {}, queue="batch")])
    d = solve([small("w", placement=avoid("queue", "batch"))], c)
    assert nodes_of(d, "w") == ["cpu-1"]


def test_no_node_without_the_repelling_job_is_insufficient_capacity(solve: Solve) -> None:
    c = cluster_of(cpu_nodes(1)).with_allocations([running("db", "cpu", {"app": "db"})])
    d = solve([small("web", placement=avoid("app", "db"))], c)
    assert d.placement_of("web") is None
    assert reason_codes(d, "web") == ["INSUFFICIENT_CAPACITY"]


def test_between_batch_jobs_with_the_same_model(solve: Solve) -> None:
    # OJS §7.3: "replicas of one model on different hosts" — two servers of llama, each avoiding
    # llama (derived model_id), on a cluster of two DGX: one per node.
    def server(job_id: str) -> Job:
        return Job(
            id=job_id,
            model=ModelRef(id="llama-3.1-8b"),
            tasks=[TaskGroup(gpu=GpuDemand(count=1))],
            placement=avoid("model_id", "llama-3.1-8b"),
        )

    d = solve([server("s1"), server("s2")], cluster_of(dgx_h100(2)))
    assert sorted(nodes_of(d, "s1") + nodes_of(d, "s2")) == ["dgx-h100-1", "dgx-h100-2"]
    d = solve([server("s1"), server("s2")], cluster_of(dgx_h100(1)))
    assert len(d.placements) == 1 and len(d.pending) == 1


def test_one_sided_rule_of_a_lower_priority_job(solve: Solve) -> None:
    # "batch" (reserved, placed first) has no rule; "noisy" avoids jobs of type ml.train. On two nodes,
    # noisy must take the other node whatever order the engine uses.
    train = small("train", type="ml.train", priority_class="reserved")
    noisy = small("noisy", placement=avoid("job_type", "ml.train"))
    d = solve([noisy, train], cluster_of(cpu_nodes(2)))
    assert nodes_of(d, "train") != nodes_of(d, "noisy")


def test_one_sided_rule_of_the_higher_priority_job(solve: Solve) -> None:
    # The reserved job carries the rule this time; the other job must not join its node.
    guard = small("guard", priority_class="reserved", placement=avoid("team", "x"))
    other = small("other", labels={"team": "x"})
    d = solve([other, guard], cluster_of(cpu_nodes(2)))
    assert nodes_of(d, "guard") != nodes_of(d, "other")


def test_self_anti_affinity_spreads_replicas(solve: Solve) -> None:
    # The job's own labels match its rule: its 3 replicas go to 3 distinct nodes (OJS §7.3).
    job = Job(
        id="rep",
        labels={"app": "kv"},
        tasks=[TaskGroup(count=3, cpu_cores=2)],
        placement=avoid("app", "kv"),
    )
    d = solve([job], cluster_of(cpu_nodes(3)))
    assert sorted(nodes_of(d, "rep")) == ["cpu-1", "cpu-2", "cpu-3"]


def test_ojs_example_job_anti_affinity(solve: Solve) -> None:
    # examples/jobs/batch.json serve-llama-8b, twice under two ids, on 2 L4-like nodes.
    doc = (
        '[{"id": "%s", "ext_ml_gpu_count": 1, "ext_ml_model_id": "llama-3.1-8b", '
        '"ext_ml_anti_affinity": {"required": [{"key": "model_id", "operator": "In", '
        '"values": ["llama-3.1-8b"]}]}}]'
    )
    rs = read_text(doc % "a") + read_text(doc % "b")
    assert all(r.ok for r in rs)
    d = solve(rs, cluster_of(dgx_h100(2)))
    assert nodes_of(d, "a") != nodes_of(d, "b")
