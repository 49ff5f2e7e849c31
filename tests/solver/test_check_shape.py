"""Rule 19 of the independent checker: a Flux job's sockets (with their cores and GPUs) fit the node's
inner tree, together with every other shaped job there (hand-built decisions, valid and forged).

The node of most tests has 2 sockets of 4 cores and 2 GPUs: GPUs 0-1 on socket 0, 2-3 on socket 1 (the
k-th gpu vertex in depth-first order is GPU k), like each node of ``examples/importers/flux_jgf.json``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from placer.solver.checks import check
from placer.solver.jobs.model import CountRange, FluxResource, GpuDemand, Job, TaskGroup
from placer.topology import (
    InnerVertex,
    Inventory,
    NodeGpus,
    NodeSpec,
    ReplicaAllocation,
    RunningJob,
    build_cluster,
)
from placer.topology.load import load_cluster
from tests.solver.check_helpers import decision, place, rep, rules

JGF_SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "importers" / "flux_jgf.json"


def _res(kind: str, n: int, *inside: FluxResource, exclusive: bool | None = None) -> FluxResource:
    return FluxResource(type=kind, count=CountRange(min=n), exclusive=exclusive, with_=list(inside))


def socket_job(job_id: str, sockets: int, cores: int, gpus: int = 0, *, exclusive: bool | None = None) -> Job:
    """One replica of ``sockets`` sockets, each with ``cores`` cores and ``gpus`` GPUs (what the Flux
    reader makes of ``slot 1 > socket N > (core C, gpu G)``): exclusive sockets unless ``exclusive=False``
    (RFC 14's default inside a slot)."""
    inside = [_res("core", cores)] + ([_res("gpu", gpus)] if gpus else [])
    group = TaskGroup(
        name="s",
        cpu_cores=sockets * cores,
        gpu=GpuDemand(count=sockets * gpus) if gpus else None,
        structure=[_res("socket", sockets, *inside, exclusive=exclusive)],
    )
    return Job(id=job_id, tasks=[group])


def two_socket_node(name: str = "n", running: list[RunningJob] | None = None, gpus: int = 2) -> object:
    inner = [
        InnerVertex(
            type="socket", children=[InnerVertex(type="core", size=4)] + [InnerVertex(type="gpu")] * gpus
        )
        for _ in range(2)
    ]
    spec = NodeSpec(
        name=name,
        cpu_cores=8,
        memory_gb=64,
        gpus=NodeGpus(type="nvidia-a100-80gb", count=2 * gpus) if gpus else None,
        inner=inner,
    )
    return build_cluster(Inventory(nodes=[spec], running=running or []), source="t")


def s_rep(node: str, gpus: list[int], cores: float) -> object:
    return rep(node, gpus, cpu_cores=cores, task_group="s")


def test_forged_jgf_decision_two_gpus_of_one_socket_is_rejected() -> None:
    # What placer did before the fix: job a (2 sockets x (2 cores, 1 GPU)) got GPUs 0 and 1, both on
    # socket 0 of node0. Some socket then holds none of a's GPUs: no arrangement gives each socket one.
    cluster = load_cluster(JGF_SAMPLE)
    a, b = socket_job("a", 2, 2, 1), socket_job("b", 1, 4, 2)
    forged = decision(place("a", s_rep("node0", [0, 1], 4)), place("b", s_rep("node0", [2, 3], 4)))
    assert rules(check(forged, [a, b], cluster)) == [("structure", "a", "node0")]
    # One GPU per socket for a, and b on a whole socket of another node: valid.
    good = decision(place("a", s_rep("node0", [0, 2], 4)), place("b", s_rep("node1", [2, 3], 4)))
    assert rules(check(good, [a, b], cluster)) == []


def test_third_socket_job_over_commits_a_socket() -> None:
    # 2 sockets x 4 cores, shared (exclusive: false); jobs asking one socket with 3, 3 and 2 cores. In
    # totals 3 + 3 + 2 = 8 fits the 8 cores (rule 6 says nothing), but the 3-core jobs need different
    # sockets (3 + 3 > 4), leaving 1 core on each: the 2-core job has no socket. Blamed on the last
    # shaped job of the node.
    cluster = two_socket_node(gpus=0)
    a, b, c = (socket_job(j, 1, n, exclusive=False) for j, n in (("a", 3), ("b", 3), ("c", 2)))
    three = decision(
        place("a", s_rep("n", [], 3)), place("b", s_rep("n", [], 3)), place("c", s_rep("n", [], 2))
    )
    assert rules(check(three, [a, b, c], cluster)) == [("structure", "c", "n")]
    two = decision(place("a", s_rep("n", [], 3)), place("b", s_rep("n", [], 3)), pending=("c",))
    assert rules(check(two, [a, b, c], cluster)) == []
    # 3 on one socket, 2 + 2 on the other: 3 <= 4 and 4 <= 4, valid.
    d = socket_job("d", 1, 2, exclusive=False)
    fits = decision(
        place("a", s_rep("n", [], 3)), place("c", s_rep("n", [], 2)), place("d", s_rep("n", [], 2))
    )
    assert rules(check(fits, [a, c, d], cluster)) == []


def test_shape_with_gpus_counts_each_replica_gpus_per_socket() -> None:
    # "1 socket with 2 cores and 2 GPUs": GPUs 2 and 3 are socket 1's (valid); GPUs 1 and 2 are one of
    # each socket (invalid even though both are free and 2 GPUs were asked for).
    cluster = two_socket_node()
    j = socket_job("j", 1, 2, 2)
    assert rules(check(decision(place("j", s_rep("n", [2, 3], 2))), [j], cluster)) == []
    assert rules(check(decision(place("j", s_rep("n", [1, 2], 2))), [j], cluster)) == [
        ("structure", "j", "n")
    ]


def test_running_jobs_hold_gpus_and_total_cores_only() -> None:
    # A running job holds GPUs 0 and 1 and 3 cores (which cores is not said: they count toward the node's
    # total, rule 6). "1 socket with 4 cores and 2 GPUs" on GPUs 2-3 is valid: the running cores may be
    # on socket 0. With 5 running cores, 5 + 4 = 9 > 8 is rule 6's capacity violation, not this rule's.
    held = [RunningJob(job="r", replicas=[ReplicaAllocation(node="n", gpus=[0, 1], cpu_cores=3)])]
    j = socket_job("j", 1, 4, 2)
    assert rules(check(decision(place("j", s_rep("n", [2, 3], 4))), [j], two_socket_node(running=held))) == []
    held5 = [RunningJob(job="r", replicas=[ReplicaAllocation(node="n", gpus=[0, 1], cpu_cores=5)])]
    found = rules(check(decision(place("j", s_rep("n", [2, 3], 4))), [j], two_socket_node(running=held5)))
    assert found == [("capacity", "j", "n")]


def test_a_slots_sockets_are_exclusive_by_default() -> None:
    # RFC 14: a slot's resources are exclusive unless they say otherwise. Jobs of one socket with 3 and 1
    # cores side by side on socket 1 (3 + 1 <= 4 cores) are valid when the sockets are shared, a
    # violation when they own theirs: only a third socket could hold all three.
    cluster = two_socket_node(gpus=0)
    both = decision(
        place("a", s_rep("n", [], 3)), place("b", s_rep("n", [], 1)), place("c", s_rep("n", [], 4))
    )
    shared = [socket_job(j, 1, n, exclusive=False) for j, n in (("a", 3), ("b", 1), ("c", 4))]
    assert rules(check(both, shared, cluster)) == []
    owned = [socket_job(j, 1, n) for j, n in (("a", 3), ("b", 1), ("c", 4))]
    assert rules(check(both, owned, cluster)) == [("structure", "c", "n")]
    # Only a owns its socket: b may not join it, and c's 4 cores fill the other one.
    a_owns = [socket_job("a", 1, 3), *shared[1:]]
    assert rules(check(both, a_owns, cluster)) == [("structure", "c", "n")]
    # Only c owns its socket: a and b share the other one, valid.
    c_owns = [*shared[:2], socket_job("c", 1, 4)]
    assert rules(check(both, c_owns, cluster)) == []


def test_two_slots_of_two_sockets_on_two_sockets_is_rejected() -> None:
    # The Flux reader's "node 1 > slot 2 > socket 2 > core 1": one replica, 2 slots of 2 sockets each.
    # Counts multiply (4 sockets) and each slot's sockets are its own: a 2-socket node cannot hold it,
    # although its 8 cores hold the 4 asked for. A 4-socket node can.
    want = [_res("slot", 2, _res("socket", 2, _res("core", 1)))]
    job = Job(id="j", tasks=[TaskGroup(name="s", cpu_cores=4, structure=want)])
    placed = decision(place("j", s_rep("n", [], 4)))
    assert rules(check(placed, [job], two_socket_node(gpus=0))) == [("structure", "j", "n")]
    sock = InnerVertex(type="socket", children=[InnerVertex(type="core", size=1)])
    four = NodeSpec(name="n", cpu_cores=4, memory_gb=64, inner=[sock] * 4)
    assert rules(check(placed, [job], build_cluster(Inventory(nodes=[four]), source="t"))) == []


def test_nodes_without_an_inner_tree_are_not_this_rules_business() -> None:
    flat = build_cluster(
        Inventory(
            nodes=[
                NodeSpec(name="f", cpu_cores=8, memory_gb=8, gpus=NodeGpus(type="nvidia-a100-80gb", count=4))
            ]
        ),
        source="t",
    )
    a = socket_job("a", 2, 2, 1)
    assert rules(check(decision(place("a", s_rep("f", [0, 1], 4))), [a], flat)) == []


def test_the_rule_shares_no_code_with_the_engine() -> None:
    # The checker may use input types only: it must not import the solver's matcher.
    source = (Path(__file__).resolve().parents[2] / "solver" / "checks" / "shape.py").read_text()
    imported = {
        n.module
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.ImportFrom) and n.module is not None
    }
    assert not {
        m
        for m in imported
        if m.startswith("solver.") and not m.startswith(("placer.solver.checks", "placer.solver.jobs"))
    }
