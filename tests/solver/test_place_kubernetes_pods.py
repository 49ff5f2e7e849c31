"""Pending pods of ``kubectl get pods -o json`` placed on a GKE/EKS/AKS node list as kube-scheduler's
filters allow — taints and tolerations (ExtendedResourceToleration for GPU pods), node selectors and
affinity, NotReady and cordoned nodes, pod anti-affinity, host ports — on both engines, every decision
checked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.solver.decision import Decision, Eviction, JobPlacement, ReplicaPlacement
from placer.solver.jobs import read_file
from placer.topology.load import load_cluster
from tests.solver.conftest import NOW, Solve, nodes_of, pending_reason
from tests.solver.kube_objects import pod

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


def _port_pod(
    name: str,
    port: int,
    *,
    node: str | None = None,
    protocol: str = "TCP",
    trays: tuple[str, ...] = ("gb200-tray-1", "gb200-tray-2"),
) -> dict[str, object]:
    """A 1-CPU pod holding host port ``port`` that may run on the GB200 ``trays`` only; bound to ``node`` (a
    running pod) when given."""
    spec: dict[str, object] = {
        "containers": [
            {
                "name": "web",
                "image": "registry.example.com/web:1",
                "ports": [{"containerPort": 80, "hostPort": port, "protocol": protocol}],
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            }
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": list(trays),
                                }
                            ]
                        }
                    ]
                }
            }
        },
    }
    if node is not None:
        spec["nodeName"] = node
    phase = "Running" if node is not None else "Pending"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "web"},
        "spec": spec,
        "status": {"phase": phase},
    }


def _pods(tmp_path: Path, name: str, pods: list[dict[str, object]]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": pods}))
    return path


def test_pods_asking_for_one_host_port_never_share_a_node(solve: Solve, tmp_path: Path) -> None:
    # kube-scheduler's NodePorts filter: two pods holding host port 8080/TCP cannot run on one node. Three
    # such pods and two trays: two run, one per tray, the third waits; a pod on 8080/UDP is not in the way.
    pods = [_port_pod(f"web-{i}", 8080) for i in range(3)] + [_port_pod("dns", 8080, protocol="UDP")]
    d = solve(read_file(_pods(tmp_path, "pending.json", pods)), load_cluster(NODES))
    placed = [p.job for p in d.placements if p.job.startswith("web/web-")]
    assert len(placed) == 2 and len({nodes_of(d, j)[0] for j in placed}) == 2
    (waiting,) = {"web/web-0", "web/web-1", "web/web-2"} - set(placed)
    assert pending_reason(d, waiting) is not None
    assert nodes_of(d, "web/dns")[0] in ("gb200-tray-1", "gb200-tray-2")


def test_a_running_pod_s_host_port_keeps_a_pending_one_off_its_node(solve: Solve, tmp_path: Path) -> None:
    # The running pod (read with --pods) holds 8080 on tray 1: the pending pod asking for 8080 goes to
    # tray 2; one asking for 9090 that may only use tray 1 runs there.
    running = _pods(tmp_path, "running.json", [_port_pod("old", 8080, node="gb200-tray-1")])
    cluster = load_cluster(NODES, pods=running)
    (rj,) = [rj for rj in cluster.running_jobs() if rj.job == "web/old"]
    assert "placer.host-port/TCP-8080" in rj.labels
    d = solve(
        read_file(
            _pods(
                tmp_path,
                "pending.json",
                [_port_pod("new", 8080), _port_pod("other", 9090, trays=("gb200-tray-1",))],
            )
        ),
        cluster,
    )
    assert nodes_of(d, "web/new") == ["gb200-tray-2"]
    assert nodes_of(d, "web/other") == ["gb200-tray-1"]


def _web(
    name: str,
    *,
    node: str | None = None,
    anti: list[dict[str, object]] | None = None,
    trays: tuple[str, ...] = ("gb200-tray-1", "gb200-tray-2"),
) -> dict[str, object]:
    """A 1-CPU pod labelled ``app: web`` that may run on the GB200 ``trays`` only (as :func:`_port_pod`,
    no port), with required pod anti-affinity ``anti`` when given."""
    p = _port_pod(name, 0, node=node, trays=trays)
    spec = p["spec"]
    assert isinstance(spec, dict)
    del spec["containers"][0]["ports"]
    p["metadata"] = {"name": name, "namespace": "web", "labels": {"app": "web"}}
    if anti is not None:
        spec["affinity"]["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    return p


ONE_WEB_PER_NODE = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}


def test_a_running_pods_anti_affinity_keeps_a_matching_pod_off_its_node(solve: Solve, tmp_path: Path) -> None:
    # The running pod on tray 1 forbids app=web pods beside it (required, on the hostname). The pending
    # pods say nothing of their own, but kube-scheduler holds them to the running pod's term
    # (InterPodAffinity checks existing pods' anti-affinity): one goes to tray 2, one that may use tray 1
    # only waits.
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[ONE_WEB_PER_NODE])])
    cluster = load_cluster(NODES, pods=running)
    (rj,) = [rj for rj in cluster.running_jobs() if rj.job == "web/old"]
    assert rj.anti_affinity == [{"kind": "label", "key": "app", "operator": "In", "values": ["web"]}]
    pending = [_web("new"), _web("tray1", trays=("gb200-tray-1",))]
    d = solve(read_file(_pods(tmp_path, "pending.json", pending)), cluster)
    assert nodes_of(d, "web/new") == ["gb200-tray-2"]
    assert pending_reason(d, "web/tray1") is not None
    # The same running pod without the term: tray 1 takes the pod that may use it only.
    plain = load_cluster(NODES, pods=_pods(tmp_path, "plain.json", [_web("old", node="gb200-tray-1")]))
    d = solve(read_file(_pods(tmp_path, "pending.json", pending)), plain)
    assert nodes_of(d, "web/tray1") == ["gb200-tray-1"]


def test_a_running_pods_term_with_an_empty_selector_keeps_every_pod_off_its_node(
    solve: Solve, tmp_path: Path
) -> None:
    # kube: an empty labelSelector ({}) selects every pod, so the running pod's required anti-affinity on
    # the hostname keeps every incoming pod off tray 1 (it was read past with a warning, and placer put a pod
    # there). A pending pod that may use tray 1 only waits; one that may use both trays goes to tray 2.
    every = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {}}
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[every])])
    cluster = load_cluster(NODES, pods=running)
    pending = [_web("new"), _web("tray1", trays=("gb200-tray-1",))]
    pending[0]["metadata"]["labels"] = {"app": "other"}  # type: ignore[index]
    d = solve(read_file(_pods(tmp_path, "pending.json", pending)), cluster)
    assert nodes_of(d, "web/new") == ["gb200-tray-2"]
    assert pending_reason(d, "web/tray1") is not None


ONE_WEB_PER_ZONE = {
    "topologyKey": "topology.kubernetes.io/zone",
    "labelSelector": {"matchLabels": {"app": "web"}},
}


def test_a_running_pods_zone_anti_affinity_keeps_matching_pods_out_of_its_zone(
    solve: Solve, tmp_path: Path
) -> None:
    # The running pod on tray 1 (zone us-east-1a, as every GB200 tray) forbids app=web pods in its zone:
    # kube-scheduler keeps an incoming pod out of every node of that zone. A web pod that may use tray 2
    # or the CPU pool node (us-central1-a) goes to the CPU pool; one that may use the trays only waits; a
    # pod of another app takes tray 2.
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[ONE_WEB_PER_ZONE])])
    cluster = load_cluster(NODES, pods=running)
    (rj,) = [rj for rj in cluster.running_jobs() if rj.job == "web/old"]
    assert rj.anti_affinity == []
    assert [(d.key, d.rule["values"]) for d in rj.anti_affinity_domains] == [
        ("topology.kubernetes.io/zone", ["web"])
    ]
    assert "anti_affinity_not_kept" not in cluster.structure.inventory.metadata
    other = _web("db", trays=("gb200-tray-2",))
    other["metadata"]["labels"] = {"app": "db"}  # type: ignore[index]
    pending = [_web("away", trays=("gb200-tray-2", "gke-cpu-pool-5f2a")), _web("trays"), other]
    d = solve(read_file(_pods(tmp_path, "pending.json", pending)), cluster)
    assert nodes_of(d, "web/away") == ["gke-cpu-pool-5f2a"]
    # Both trays it may use are kept off by the term (tray 1 and tray 2: the zone), and the reason says so.
    [waits] = [p for p in d.pending if p.job == "web/trays"]
    assert [(r.code, r.details.get("blocked")) for r in waits.reasons] == [
        ("INSUFFICIENT_CAPACITY", {"anti_affinity": 2})
    ]
    assert nodes_of(d, "web/db") == ["gb200-tray-2"]


def test_required_pod_affinity_joins_the_running_pods_node_or_zone(solve: Solve, tmp_path: Path) -> None:
    # A running app=web pod on tray 1 (zone us-east-1a, as tray 2; the CPU pool is us-central1-a). A pod
    # with required affinity to it on the hostname goes to tray 1 itself, one with affinity on the zone
    # to tray 2 (the CPU pool is another zone), where without the terms both take the CPU pool.
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1")])
    cluster = load_cluster(NODES, pods=running)
    anywhere = ("gb200-tray-1", "gb200-tray-2", "gke-cpu-pool-5f2a")
    free = [_web("host", trays=anywhere), _web("zone", trays=anywhere[1:])]
    d = solve(read_file(_pods(tmp_path, "free.json", free)), cluster)
    assert nodes_of(d, "web/host") == nodes_of(d, "web/zone") == ["gke-cpu-pool-5f2a"]
    for spec, term in zip(free, (ONE_WEB_PER_NODE, ONE_WEB_PER_ZONE), strict=True):
        spec["spec"]["affinity"]["podAffinity"] = {  # type: ignore[index]
            "requiredDuringSchedulingIgnoredDuringExecution": [term]
        }
    d = solve(read_file(_pods(tmp_path, "pending.json", free)), cluster)
    assert nodes_of(d, "web/host") == ["gb200-tray-1"]
    assert nodes_of(d, "web/zone") == ["gb200-tray-2"]


def test_required_pod_affinity_reads_the_pods_own_namespace_unless_the_term_names_others(
    solve: Solve, tmp_path: Path
) -> None:
    # The running app=web pod is in namespace "web". Two pods of namespace "ml" (labelled app=reader, so
    # neither can start a group of its own) with the same hostname term: kube-scheduler matches a term in
    # the pod's own namespace by default, so the first has nothing to join; the second lists "web".
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1")])
    cluster = load_cluster(NODES, pods=running)
    pods = []
    for name, term in (
        ("stranger", ONE_WEB_PER_NODE),
        ("guest", {**ONE_WEB_PER_NODE, "namespaces": ["web"]}),
    ):
        pod = _web(name, trays=("gb200-tray-1", "gb200-tray-2", "gke-cpu-pool-5f2a"))
        pod["metadata"] = {"name": name, "namespace": "ml", "labels": {"app": "reader"}}
        pod["spec"]["affinity"]["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}  # type: ignore[index]
        pods.append(pod)
    d = solve(read_file(_pods(tmp_path, "pending.json", pods)), cluster)
    assert nodes_of(d, "ml/guest") == ["gb200-tray-1"]
    [waits] = [p for p in d.pending if p.job == "ml/stranger"]
    assert [r.code for r in waits.reasons] == ["POD_AFFINITY"]


def test_the_shipped_spread_pods_show_kubes_cordoned_zone_gotcha(solve: Solve) -> None:
    # examples/importers/kubernetes_spread_pods.json: web pods run in us-central1-a and us-east-1a; the
    # third zone, eastus-1, has only the cordoned L4 node. web-c spreads by zone (maxSkew 1) with the
    # default nodeTaintsPolicy (Ignore): eastus-1 counts, with 0 pods, so both other zones are over and
    # its only node is cordoned — it waits, as kube-scheduler keeps it pending. web-d honours taints: the
    # cordoned node's taints leave eastus-1 out, the least is 1, and it runs in either zone.
    spread = REPO / "examples" / "importers" / "kubernetes_spread_pods.json"
    cluster = load_cluster(NODES, pods=spread)
    d = solve(read_file(spread), cluster)
    zone = "topology.kubernetes.io/zone"
    [node] = nodes_of(d, "serve/web-d")
    assert cluster.node(node).labels[zone] in {"us-central1-a", "us-east-1a"}
    [waiting] = [p for p in d.pending if p.job == "serve/web-c"]
    [reason] = waiting.reasons
    assert reason.code == "POD_TOPOLOGY_SPREAD"
    assert reason.details["constraints"][0]["counts"] == {"eastus-1": 0, "us-central1-a": 1, "us-east-1a": 1}


def test_a_do_not_schedule_spread_constraint_sends_the_pod_to_the_emptier_domain(
    solve: Solve, tmp_path: Path
) -> None:
    # Running app=web pods on trays 1 and 2 (both us-east-1a). A pending web pod that may use the trays
    # and the CPU pool (us-central1-a), spread by zone with maxSkew 1: with its node affinity honoured
    # the zones count 2 and 0, so only us-central1-a takes it (2 + 1 - 0 > 1). Spread by hostname: the
    # trays count 1, the CPU pool 0: the CPU pool again.
    running = [_web("a", node="gb200-tray-1"), _web("b", node="gb200-tray-2")]
    cluster = load_cluster(NODES, pods=_pods(tmp_path, "running.json", running))
    anywhere = ("gb200-tray-1", "gb200-tray-2", "gke-cpu-pool-5f2a")
    for key in ("topology.kubernetes.io/zone", "kubernetes.io/hostname"):
        p = _web("new", trays=anywhere)
        p["spec"]["topologySpreadConstraints"] = [  # type: ignore[index]
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ]
        d = solve(read_file(_pods(tmp_path, "pending.json", [p])), cluster)
        assert nodes_of(d, "web/new") == ["gke-cpu-pool-5f2a"], key


def test_the_checker_refuses_a_pod_in_a_zone_a_running_pods_term_forbids(tmp_path: Path) -> None:
    from placer.solver.checks import check

    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[ONE_WEB_PER_ZONE])])
    cluster = load_cluster(NODES, pods=running)
    new = _web("new", trays=("gb200-tray-2", "gke-cpu-pool-5f2a"))
    (job,) = [r.job for r in read_file(_pods(tmp_path, "pending.json", [new]))]
    assert job is not None
    on = lambda node: Decision(  # noqa: E731
        placements=[
            JobPlacement(
                job="web/new",
                replicas=[ReplicaPlacement(node=node, cpu_cores=1, memory_gb=1, extra={"pods": 1})],
            )
        ]
    )
    [v] = check(on("gb200-tray-2"), [job], cluster, now=NOW)
    assert (v.rule, v.node) == ("anti-affinity", "gb200-tray-2") and "us-east-1a" in v.message
    assert check(on("gke-cpu-pool-5f2a"), [job], cluster, now=NOW) == []
    # Evicted, the running pod binds nothing.
    freed = on("gb200-tray-2")
    freed.preemptions = [Eviction(job="web/old", **{"for": ["web/new"]})]
    assert [v.rule for v in check(freed, [job], cluster, now=NOW) if v.rule == "anti-affinity"] == []


def test_a_running_pods_term_it_cannot_read_is_named_not_kept(tmp_path: Path) -> None:
    odd = {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": 7}}}
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[odd])])
    cluster = load_cluster(NODES, pods=running)
    (rj,) = [rj for rj in cluster.running_jobs() if rj.job == "web/old"]
    assert rj.anti_affinity == [] and rj.anti_affinity_domains == []
    assert cluster.structure.inventory.metadata["anti_affinity_not_kept"] == {
        "web/old": ["topology.kubernetes.io/zone"]
    }


def test_placer_place_warns_of_a_running_pods_term_it_cannot_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from placer.cli import main

    odd = {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {"app": 7}}}
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[odd])])
    pending = _pods(tmp_path, "pending.json", [_web("new")])
    argv = [
        "place",
        "--cluster",
        str(NODES),
        "--pods",
        str(running),
        "--jobs",
        str(pending),
        "--engine",
        "greedy",
    ]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "anti-affinity terms placer cannot read are not kept" in err
    assert "web/old (topology.kubernetes.io/zone)" in err


def _gpu_node(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
        },
        "status": {"allocatable": {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}},
    }


def _gpu_pod(
    name: str, priority: int, node: str | None = None, pclass: str | None = None
) -> dict[str, object]:
    extra = {"priorityClassName": pclass} if pclass is not None else {}
    return pod(name, {"limits": {"nvidia.com/gpu": "8"}}, node=node, priority=priority, **extra)


def test_a_running_pod_of_lower_priority_is_preempted_as_kube_scheduler_would(solve: Solve) -> None:
    """kube-scheduler may preempt any running pod for a pending pod of higher priority. A running pod
    read with ``--pods`` is preemptible unless its class is reserved (``system-node-critical``): the
    pending pod of priority 1000 evicts the one of priority 0; one of equal priority waits; nothing
    evicts the critical one."""
    from placer.solver.jobs import read_object
    from placer.topology import build_cluster
    from placer.topology.importers.kubernetes import parse_kubernetes

    def cluster(*running: dict[str, object]):  # type: ignore[no-untyped-def]
        nodes = {"apiVersion": "v1", "kind": "List", "items": [_gpu_node("h100-1")]}
        pods = {"apiVersion": "v1", "kind": "List", "items": list(running)}
        return build_cluster(parse_kubernetes(nodes, pods, source="nodes.json", pods_source="pods.json"))

    def job(pod: dict[str, object]):  # type: ignore[no-untyped-def]
        [r] = read_object(pod, source="pods.json")
        assert r.ok and r.job is not None, r.errors
        return r.job

    busy = cluster(_gpu_pod("batch", 0, node="h100-1"))
    d = solve([job(_gpu_pod("urgent", 1000))], busy)
    assert [e.job for e in d.preemptions] == ["ml/batch"] and nodes_of(d, "ml/urgent") == ["h100-1"]
    same = solve([job(_gpu_pod("peer", 0))], busy)
    assert same.preemptions == [] and pending_reason(same, "ml/peer") is not None
    critical = cluster(_gpu_pod("agent", 2_000_001_000, node="h100-1", pclass="system-node-critical"))
    top = solve([job(_gpu_pod("urgent", 1_000_000_000))], critical)
    assert top.preemptions == []


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_session_keeps_a_zone_term_through_commits_and_starts(engine: str, tmp_path: Path) -> None:
    # A session moves its tables forward node by node; a running pod's zone term binds nodes that did
    # not change. After a commit beside the term's pod, and after a pod with such a term starts on the
    # CPU pool (Session.start), web pods still keep out of both zones.
    from placer.solver.policy import Policy
    from placer.solver.session import Session
    from placer.topology import DomainAntiAffinity, RunningJob

    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-1", anti=[ONE_WEB_PER_ZONE])])
    session = Session(load_cluster(NODES, pods=running), Policy(engine=engine, plan=False))
    other = _web("db", trays=("gb200-tray-2",))
    other["metadata"]["labels"] = {"app": "db"}  # type: ignore[index]
    d = session.decide(read_file(_pods(tmp_path, "db.json", [other])), now=NOW)
    assert nodes_of(d, "web/db") == ["gb200-tray-2"]
    session.commit(d)
    away = read_file(
        _pods(tmp_path, "away.json", [_web("away", trays=("gb200-tray-2", "gke-cpu-pool-5f2a"))])
    )
    d = session.decide(away, now=NOW)
    assert nodes_of(d, "web/away") == ["gke-cpu-pool-5f2a"]
    zone_term = DomainAntiAffinity(key="topology.kubernetes.io/zone", rule=ONE_WEB_PER_ZONE_RULE)
    session.start(
        RunningJob(
            job="web/central",
            labels={"app": "web"},
            anti_affinity_domains=[zone_term],
            replicas=[{"node": "gke-cpu-pool-5f2a", "cpu_cores": 1}],
        )
    )
    d = session.decide(away, now=NOW)
    assert d.placements == [] and pending_reason(d, "web/away") is not None


ONE_WEB_PER_ZONE_RULE = {"kind": "label", "key": "app", "operator": "In", "values": ["web"]}


ZONES = ("gb200-tray-1", "gke-cpu-pool-5f2a")  # us-east-1a and us-central1-a


def test_pending_pods_kept_apart_by_zone_one_per_decision(solve: Solve, tmp_path: Path) -> None:
    # Two web pods, each with a required anti-affinity to app=web on the zone, may use a tray (us-east-1a)
    # and the CPU pool node (us-central1-a). One is placed now (in either zone), the other waits with
    # KEPT_APART naming it; once it runs, the other goes to the other zone.
    pods = [_web(f"w{i}", anti=[ONE_WEB_PER_ZONE], trays=ZONES) for i in (1, 2)]
    cluster = load_cluster(NODES)
    d = solve(read_file(_pods(tmp_path, "pending.json", pods)), cluster)
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status  # the model keeps the pair too
    [placed] = [p.job for p in d.placements]
    [waits] = d.pending
    assert [(r.code, r.details) for r in waits.reasons] == [("KEPT_APART", {"jobs": [placed]})]
    first = nodes_of(d, placed)[0]
    from placer.solver.session import Session

    session = Session(cluster)
    session.commit(
        session.decide(
            read_file(
                _pods(
                    tmp_path, "one.json", [p for p in pods if p["metadata"]["name"] == placed.split("/")[1]]
                )
            ),
            now=NOW,
        )
    )  # type: ignore[index]
    d = session.decide(
        read_file(
            _pods(
                tmp_path, "other.json", [p for p in pods if p["metadata"]["name"] == waits.job.split("/")[1]]
            )
        ),
        now=NOW,
    )  # type: ignore[index]
    [second] = nodes_of(d, waits.job)
    assert {first, second} == set(ZONES)


def test_a_pending_pods_zone_term_keeps_it_out_of_a_running_pods_zone(solve: Solve, tmp_path: Path) -> None:
    # A running web pod on tray 2 (us-east-1a); the pending pod's own term forbids app=web in its zone.
    running = _pods(tmp_path, "running.json", [_web("old", node="gb200-tray-2")])
    cluster = load_cluster(NODES, pods=running)
    d = solve(
        read_file(_pods(tmp_path, "pending.json", [_web("new", anti=[ONE_WEB_PER_ZONE], trays=ZONES)])),
        cluster,
    )
    assert nodes_of(d, "web/new") == ["gke-cpu-pool-5f2a"]
    # Allowed on the trays only, it waits, and says the running pod's zone keeps it out.
    d = solve(read_file(_pods(tmp_path, "trays.json", [_web("new", anti=[ONE_WEB_PER_ZONE])])), cluster)
    [waits] = d.pending
    assert [(r.code, r.details.get("blocked")) for r in waits.reasons] == [
        ("INSUFFICIENT_CAPACITY", {"anti_affinity": 2})
    ]


def test_a_job_whose_replicas_the_zone_term_keeps_apart_is_refused(solve: Solve) -> None:
    from placer.solver.jobs.model import DomainRule, GpuDemand, Job, LabelRule, Placement, TaskGroup
    from placer.topology import cluster_of, dgx_h100

    web = LabelRule(key="app", operator="In", values=["web"])
    job = Job(
        id="pair",
        labels={"app": "web"},
        tasks=[TaskGroup(count=2, gpu=GpuDemand(count=1))],
        placement=Placement(anti_affinity_domains=[DomainRule(key="zone", rule=web)]),
    )
    d = solve([job], cluster_of(dgx_h100(2)))
    [r] = d.rejected
    assert [(e["code"], e["path"]) for e in r.errors] == [("unsupported", "placement.anti_affinity_domains")]
    # One replica, or a rule that does not match its own labels, is kept.
    single = job.model_copy(update={"tasks": [TaskGroup(count=1, gpu=GpuDemand(count=1))]})
    assert [p.job for p in solve([single], cluster_of(dgx_h100(2))).placements] == ["pair"]
    # One replica split into two nodes' parts is two replicas too: refused, not placed in one zone (the
    # place fuzz found both engines putting the parts of a gpu_affinity: spread job in one rack).
    spread = Placement(anti_affinity_domains=job.placement.anti_affinity_domains, gpu_affinity="spread")
    for gpus, placement in ((2, spread), (16, job.placement)):  # parts of one GPU each; of a node's 8
        split = Job(
            id="pair",
            labels={"app": "web"},
            distributed_strategy="fsdp",  # a job that may span nodes
            tasks=[TaskGroup(count=1, gpu=GpuDemand(count=gpus))],
            placement=placement,
        )
        [r] = solve([split], cluster_of(dgx_h100(2))).rejected
        assert [(e["code"], e["path"]) for e in r.errors] == [
            ("unsupported", "placement.anti_affinity_domains")
        ]


def test_the_checker_holds_pending_pods_to_kubernetes_zone_rule(tmp_path: Path) -> None:
    # Kubernetes' own rule: two pods kept apart may run in different zones (placer places one per
    # decision, but a decision with both in different zones is valid), never in one zone.
    from placer.solver.checks import check

    pods = [
        _web(f"w{i}", anti=[ONE_WEB_PER_ZONE], trays=("gb200-tray-1", "gb200-tray-2", "gke-cpu-pool-5f2a"))
        for i in (1, 2)
    ]
    jobs = [r.job for r in read_file(_pods(tmp_path, "pending.json", pods))]
    cluster = load_cluster(NODES)

    def on(*nodes: str) -> Decision:
        return Decision(
            placements=[
                JobPlacement(
                    job=f"web/w{i}",
                    replicas=[ReplicaPlacement(node=n, cpu_cores=1, memory_gb=1, extra={"pods": 1})],
                )
                for i, n in zip((1, 2), nodes, strict=True)
            ]
        )

    assert check(on("gb200-tray-1", "gke-cpu-pool-5f2a"), jobs, cluster, now=NOW) == []  # type: ignore[arg-type]
    bad = check(on("gb200-tray-1", "gb200-tray-2"), jobs, cluster, now=NOW)  # type: ignore[arg-type]
    assert {(v.rule, v.job) for v in bad} == {("anti-affinity", "web/w1"), ("anti-affinity", "web/w2")}
    assert all("us-east-1a" in v.message for v in bad)
