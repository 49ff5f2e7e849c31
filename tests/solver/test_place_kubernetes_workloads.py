"""batch/v1 Jobs, JobSets and Kueue Workloads placed as gangs (issue "Kubernetes-native", item 1), with
Kueue's required topology (``kueue.x-k8s.io/podset-required-topology``) kept, on both engines, checked.
Shapes from the Kueue topology-aware-scheduling KEP (Job), jobset's ``examples/simple/paralleljobs.yaml``
(JobSet) and Kueue's Workload API (``spec.podSets``, ``queueName``, ``topologyRequest``)."""

from __future__ import annotations

from pathlib import Path

from placer.solver.jobs import read_file
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import Solve, nodes_of

WORKLOADS = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "kubernetes" / "workloads.json"


def _results() -> dict[str, object]:
    return {r.id: r for r in read_file(WORKLOADS)}


def test_each_workload_is_one_gang_of_its_pod_sets() -> None:
    r = _results()
    job = r["ml/tas-train"].job  # type: ignore[attr-defined]
    assert [(g.name, g.count, g.gpus_per_replica) for g in job.tasks] == [("default", 2, 4)]
    assert job.placement.topology_scope == "rack" and job.queue == "user-queue"
    jobset = r["ml/sleep"].job  # type: ignore[attr-defined]
    # workers: 2 replicated Jobs x parallelism 2 = 4 pods of 2 GPUs; driver: 1 pod without GPUs.
    assert [(g.name, g.count, g.gpus_per_replica) for g in jobset.tasks] == [
        ("workers", 4, 2),
        ("driver", 1, 0),
    ]
    wl = r["ml/job-mpi-pi-3b2c1"].job  # type: ignore[attr-defined]
    assert [(g.name, g.count) for g in wl.tasks] == [("launcher", 1), ("worker", 2)]
    assert (wl.queue, wl.priority, wl.placement.topology_scope) == ("user-queue", 100, "node")
    admitted = r["ml/already-admitted"]
    assert not admitted.ok and admitted.errors[0].path == "items[3].status.admission"  # type: ignore[attr-defined]


def test_workloads_are_placed_whole_and_in_their_domain(solve: Solve) -> None:
    # 4 DGX H100 nodes, 2 per rack; the rack is what gce-topology-subblock names on GKE.
    cluster = cluster_of(dgx_h100(4, nodes_per_rack=2))
    d = solve(list(_results().values()), cluster)
    racks = {n.name: n.rack for n in cluster.nodes}
    tas = nodes_of(d, "ml/tas-train")
    assert len(tas) == 2 and len({racks[n] for n in tas}) == 1
    assert len(nodes_of(d, "ml/sleep")) == 5  # the whole JobSet, or nothing
    workers = [rep.node for p in d.placements if p.job == "ml/job-mpi-pi-3b2c1" for rep in p.replicas]
    assert len(workers) == 3 and len(set(workers)) == 1  # required hostname: one node for the Workload
    assert [r.job for r in d.rejected] == ["ml/already-admitted"]


def test_cpsat_keeps_a_scoped_gang_off_nodes_outside_every_domain() -> None:
    # Found with the fixture above on the shipped node list, where no node names a rack: CP-SAT put the
    # 2-replica rack-scoped Job on two rackless nodes (all of them looked like one domain "None"); the
    # checker caught it and greedy's answer was kept (status CPSAT_REJECTED_BY_CHECKER).
    from placer.solver.engine import place
    from placer.solver.policy import Policy
    from placer.topology.load import load_cluster

    cluster = load_cluster(
        Path(__file__).resolve().parents[2] / "examples" / "importers" / "kubernetes_nodes.json"
    )
    jobs = [r.job for r in read_file(WORKLOADS) if r.ok and r.job is not None]
    d = place(jobs, cluster, Policy(engine="cpsat", time_limit_s=5))
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status
    # A rack-scoped gang of 2 has no rack here: it runs on one node (one node satisfies every scope) or waits.
    tas = d.placement_of("ml/tas-train")
    assert tas is None or len({r.node for r in tas.replicas}) == 1
