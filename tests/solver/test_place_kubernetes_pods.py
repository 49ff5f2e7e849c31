"""Pending pods of ``kubectl get pods -o json`` placed on a GKE/EKS/AKS node list as kube-scheduler's
filters allow — taints and tolerations (ExtendedResourceToleration for GPU pods), node selectors and
affinity, NotReady and cordoned nodes, pod anti-affinity — on both engines, every decision checked."""

from __future__ import annotations

from pathlib import Path

from placer.solver.jobs import read_file
from placer.topology.load import load_cluster
from tests.solver.conftest import Solve, nodes_of, pending_reason

REPO = Path(__file__).resolve().parents[2]
NODES = REPO / "examples" / "importers" / "kubernetes_nodes.json"
PODS = REPO / "tests" / "fixtures" / "kubernetes" / "pending_pods.json"


def test_pending_pods_land_where_kube_scheduler_would_allow(solve: Solve) -> None:
    results = read_file(PODS)
    d = solve(results, load_cluster(NODES))
    # The CPU pod asks for us-central1-a: the A3 nodes there carry nvidia.com/gpu:NoSchedule (it requests
    # no GPU, so it does not tolerate it), node-2 is NotReady, the TPU pool is tainted: only the CPU pool.
    assert nodes_of(d, "ml/cpu-prep") == ["gke-cpu-pool-5f2a"]
    # The GPU pod tolerates the GPU taint implicitly (ExtendedResourceToleration); node-2 is NotReady.
    assert nodes_of(d, "ml/h100-train") == ["gke-a3-h100-node-1"]
    # Two serve replicas that forbid sharing a host: two different GB200 trays.
    trays = nodes_of(d, "ml/serve-0") + nodes_of(d, "ml/serve-1")
    assert len(set(trays)) == 2 and all(t.startswith("gb200-tray-") for t in trays)
    # The only L4 node is cordoned (and spot-tainted): pending, with the reason.
    assert (pending_reason(d, "ml/l4-infer") or "").startswith("UNSATISFIABLE")
    assert "cordoned" in (pending_reason(d, "ml/l4-infer") or "")
    # The bound pod is not placed again: it is refused, named.
    assert [r.job for r in d.rejected] == ["ml/done-0"]


def test_running_pods_given_with_pods_hold_their_gpus(solve: Solve) -> None:
    # The shipped running pods hold 4 of node-1's 8 H100s (llm-train-0): the 8-GPU pod no longer fits.
    cluster = load_cluster(NODES, pods=REPO / "examples" / "importers" / "kubernetes_pods.json")
    d = solve(read_file(PODS), cluster)
    assert pending_reason(d, "ml/h100-train") is not None
