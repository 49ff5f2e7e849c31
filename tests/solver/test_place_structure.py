"""Flux jobspecs matched against nodes' inner containment trees (RFC 14): "4 nodes, each with 2 sockets of
at least 4 cores" (spec_14 use case 1.3) needs that shape, not just 8 cores."""

from __future__ import annotations

from pathlib import Path

from placer.solver.jobs import ReadResult, read_file, read_object
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
from tests.solver.conftest import NOW, Solve, gpus_of, nodes_of, pending_reason


def _socket(cores: int) -> InnerVertex:
    return InnerVertex(type="socket", children=[InnerVertex(type="core") for _ in range(cores)])


def _node(name: str, *sockets: int) -> NodeSpec:
    return NodeSpec(name=name, cpu_cores=sum(sockets), memory_gb=64, inner=[_socket(c) for c in sockets])


def test_use_case_1_3_needs_two_sockets_of_four_cores(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    # 5 nodes of 2 x 4 cores and 4 nodes of 1 x 8 cores: every node has 8 cores, only the first 5 the shape.
    nodes = [_node(f"two-{i}", 4, 4) for i in range(5)] + [_node(f"one-{i}", 8) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    placed = nodes_of(d, r.id)
    assert len(placed) == 4 and all(n.startswith("two-") for n in placed)


def test_too_few_nodes_of_the_shape_is_unsatisfiable_and_says_why(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    # 3 nodes of the right shape, 4 of one 8-core socket: 4 distinct nodes of the shape can never be had.
    nodes = [_node(f"two-{i}", 4, 4) for i in range(3)] + [_node(f"one-{i}", 8) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    reason = pending_reason(d, r.id) or ""
    assert reason.startswith("UNSATISFIABLE")
    assert "sockets/cores" in reason and "4 nodes" in reason


def test_nodes_without_an_inner_tree_are_judged_by_totals(solve: Solve, specs_dir: Path) -> None:
    [r] = read_file(specs_dir / "flux-examples/spec_14/use_case_1.3.yaml")
    nodes = [NodeSpec(name=f"flat-{i}", cpu_cores=8, memory_gb=64) for i in range(4)]
    d = solve([r], build_cluster(Inventory(nodes=nodes), source="t"))
    assert sorted(nodes_of(d, r.id)) == [f"flat-{i}" for i in range(4)]


# -- Shapes against what is in use: sockets fill up (issue "Solver core", requirements 1 and 6) ----------

JGF_SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "importers" / "flux_jgf.json"


def _socket_job(
    job_id: str, sockets: int, cores: int, gpus: int = 0, *, exclusive: bool | None = None, slots: int = 1
) -> ReadResult:
    """A Flux RFC 25 (version 1) jobspec: ``slots`` slots of ``sockets`` sockets, each with ``cores`` cores
    and ``gpus`` GPUs. The sockets are exclusive unless ``exclusive=False`` (RFC 14: the default for a
    slot's resources)."""
    inside: list[dict[str, object]] = [{"type": "core", "count": cores}]
    if gpus:
        inside.append({"type": "gpu", "count": gpus})
    socket: dict[str, object] = {"type": "socket", "count": sockets, "with": inside}
    if exclusive is not None:
        socket["exclusive"] = exclusive
    spec = {
        "version": 1 if exclusive is None else 999,
        "resources": [{"type": "slot", "count": slots, "label": "s", "with": [socket]}],
        "tasks": [{"command": ["app"], "slot": "s", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 3600}},
    }
    [r] = read_object(spec, source=job_id)
    assert r.ok, r.issues
    return r


def _one_node_job(inside: dict[str, object]) -> ReadResult:
    """A Flux jobspec (version 999: any RFC 14 tree) asking ``node 1 > inside``, whose slot is "s"."""
    spec = {
        "version": 999,
        "resources": [{"type": "node", "count": 1, "with": [inside]}],
        "tasks": [{"command": ["app"], "slot": "s", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 3600}},
    }
    [r] = read_object(spec, source="j")
    assert r.ok, r.issues
    return r


def _gpu_node(name: str, *sockets: tuple[int, int]) -> NodeSpec:
    """A node whose sockets hold (cores, GPUs) each; GPU indices follow the sockets in order."""
    inner = [
        InnerVertex(
            type="socket",
            children=[InnerVertex(type="core", size=c)] + [InnerVertex(type="gpu") for _ in range(g)],
        )
        for c, g in sockets
    ]
    return NodeSpec(
        name=name,
        cpu_cores=sum(c for c, _ in sockets),
        memory_gb=64,
        gpus=NodeGpus(type="nvidia-a100-80gb", count=sum(g for _, g in sockets)),
        inner=inner,
    )


def test_jgf_sample_one_gpu_per_socket_and_no_socket_overcommitted(solve: Solve) -> None:
    # The shipped JGF sample: each of node0-3 has socket0 = cores 0-3 + GPUs 0-1, socket1 = cores 4-7 +
    # GPUs 2-3. Job a asks 2 sockets x (2 cores, 1 GPU): one GPU from each socket, i.e. one of {0, 1}
    # and one of {2, 3}. It leaves 2 cores and 1 GPU on each socket of its node, so job b (1 socket x
    # (4 cores, 2 GPUs)) cannot share that node: it takes a whole socket of another node, GPUs {0, 1} or
    # {2, 3}.
    cluster = load_cluster(JGF_SAMPLE)
    a, b = _socket_job("a", 2, 2, 1), _socket_job("b", 1, 4, 2)
    d = solve([a, b], cluster)
    [(node_a, ga1), (_, ga2)] = gpus_of(d, a.id)
    assert {ga1 // 2, ga2 // 2} == {0, 1}  # GPU g is on socket g // 2
    held_b = gpus_of(d, b.id)
    assert len({n for n, _ in held_b}) == 1 and held_b[0][0] != node_a
    assert sorted(g for _, g in held_b) in ([0, 1], [2, 3])


def test_third_socket_job_does_not_fit_two_sockets_of_four_cores(solve: Solve) -> None:
    # One node, 2 sockets x 4 cores, sockets shared (exclusive: false). "1 socket with 3 cores" twice takes
    # 3 cores of each socket (1 left on each); "1 socket with 2 cores" then fits no socket although 2 cores
    # are free in total. Any two of the three jobs fit (3 + 3, or 3 and 2 on different sockets), all three
    # never do: exactly 2 are placed.
    cluster = build_cluster(Inventory(nodes=[_node("n", 4, 4)]), source="t")
    jobs = [_socket_job(j, 1, c, exclusive=False) for j, c in (("a", 3), ("b", 3), ("c", 2))]
    d = solve(jobs, cluster)
    assert len(d.placements) == 2 and len(d.pending) == 1


def test_socket_jobs_that_fill_both_sockets_exactly_all_fit(solve: Solve) -> None:
    # 2 sockets x 4 cores, shared (exclusive: false), and jobs asking one socket with 4, 3 and 1 cores:
    # socket A takes 4, socket B 3 + 1 = 4. The sockets' capacity is used exactly; nothing may be refused.
    cluster = build_cluster(Inventory(nodes=[_node("n", 4, 4)]), source="t")
    jobs = [_socket_job(j, 1, c, exclusive=False) for j, c in (("a", 4), ("b", 3), ("c", 1))]
    d = solve(jobs, cluster)
    assert sorted(p.job for p in d.placements) == ["a#0", "b#0", "c#0"]


def test_a_slots_socket_is_exclusive_by_default(solve: Solve) -> None:
    # RFC 14 "exclusive": true by default for a slot's resources. The same three jobs without
    # "exclusive: false": socket B, given to the 3-core job, is not shared with the 1-core job although 1
    # core is left there. 2 sockets, 3 jobs that each own one: exactly 2 run.
    cluster = build_cluster(Inventory(nodes=[_node("n", 4, 4)]), source="t")
    jobs = [_socket_job(j, 1, c) for j, c in (("a", 4), ("b", 3), ("c", 1))]
    d = solve(jobs, cluster)
    assert len(d.placements) == 2 and len(d.pending) == 1


def test_two_slots_of_two_sockets_need_four_sockets(solve: Solve) -> None:
    # The issue's case: one node with 2 slots, each of 2 sockets with 1 core. Flux counts multiply down
    # (2 x 2 = 4 sockets) and a slot's sockets are its own: a 2-socket node, with 8 cores for 4, can never
    # hold it (UNSATISFIABLE); a 4-socket node can.
    socket = {"type": "socket", "count": 2, "with": [{"type": "core", "count": 1}]}
    r = _one_node_job({"type": "slot", "count": 2, "label": "s", "with": [socket]})
    assert r.job is not None and r.job.tasks[0].cpu_cores == 4  # 2 slots x 2 sockets x 1 core
    two = build_cluster(Inventory(nodes=[_node("two", 4, 4)]), source="t")
    assert (pending_reason(solve([r], two), r.id) or "").startswith("UNSATISFIABLE")
    four = build_cluster(Inventory(nodes=[_node("two", 4, 4), _node("four", 1, 1, 1, 1)]), source="t")
    assert nodes_of(solve([r], four), r.id) == ["four"]


def test_two_replicas_of_one_job_do_not_share_a_socket(solve: Solve) -> None:
    # "slot 2 > socket 1 > core 1" with no node above: 2 replicas, each one slot with its own socket. On
    # a node of 2 sockets both fit; a second such job finds no free socket there (6 cores are still free).
    # An exclusive socket is not shared with another job's shared one either.
    cluster = build_cluster(Inventory(nodes=[_node("n", 4, 4)]), source="t")
    a, b = _socket_job("a", 1, 1, slots=2), _socket_job("b", 1, 1, slots=2)
    d = solve([a, b], cluster)
    assert [p.job for p in d.placements] == ["a#0"] and len(nodes_of(d, a.id)) == 2
    # Shared sockets (exclusive: false on both): the two jobs' replicas pair up on the two sockets.
    a, b = (_socket_job(j, 1, 1, slots=2, exclusive=False) for j in ("a", "b"))
    d = solve([a, b], cluster)
    assert sorted(p.job for p in d.placements) == ["a#0", "b#0"]


def test_running_gpus_count_per_socket(solve: Solve) -> None:
    # Two nodes of 2 sockets x (4 cores, 2 GPUs); GPUs 0-1 on socket 0, 2-3 on socket 1. On "split" a
    # running job holds GPUs 0 and 2: 2 GPUs are free, but one per socket, so "1 socket with 2 GPUs" cannot
    # go there. On "half" it holds GPUs 0 and 1: socket 1 is whole, the job gets GPUs 2 and 3 there.
    nodes = [_gpu_node("split", (4, 2), (4, 2)), _gpu_node("half", (4, 2), (4, 2))]
    running = [
        RunningJob(job="r1", replicas=[ReplicaAllocation(node="split", gpus=[0, 2], cpu_cores=2)]),
        RunningJob(job="r2", replicas=[ReplicaAllocation(node="half", gpus=[0, 1], cpu_cores=2)]),
    ]
    cluster = build_cluster(Inventory(nodes=nodes, running=running), source="t")
    job = _socket_job("j", 1, 2, 2)
    d = solve([job], cluster)
    assert gpus_of(d, job.id) == [("half", 2), ("half", 3)]
    # With only the "split" node, the job waits.
    only_split = build_cluster(Inventory(nodes=nodes[:1], running=running[:1]), source="t")
    d = solve([job], only_split)
    reason = pending_reason(d, job.id) or ""
    assert reason.startswith("INSUFFICIENT_CAPACITY") and "sockets" in reason


def test_slot_count_inside_a_socket_multiplies_its_cores(solve: Solve) -> None:
    # node > socket 1 > slot 2 > core 2: each node share needs 2 slots x 2 cores = 4 cores inside ONE
    # socket. Sockets of 3 cores can never hold that (6 cores in total would be enough); sockets of 4 can.
    slot = {"type": "slot", "count": 2, "label": "s", "with": [{"type": "core", "count": 2}]}
    r = _one_node_job({"type": "socket", "count": 1, "with": [slot]})
    assert r.job is not None and r.job.tasks[0].cpu_cores == 4
    small = build_cluster(Inventory(nodes=[_node("small", 3, 3)]), source="t")
    assert (pending_reason(solve([r], small), r.id) or "").startswith("UNSATISFIABLE")
    big = build_cluster(Inventory(nodes=[_node("small", 3, 3), _node("big", 4, 4)]), source="t")
    assert nodes_of(solve([r], big), r.id) == ["big"]


def test_eviction_for_a_shape_frees_one_whole_socket(solve: Solve) -> None:
    # 2 sockets x (4 cores, 2 GPUs); spot job r1 holds GPU 0 (socket 0), spot job r2 GPU 2 (socket 1). A
    # reserved job asks 1 socket with 2 cores and 2 GPUs: GPUs 1 and 3 are free but on different sockets,
    # so something must go; evicting either job frees a whole socket, so exactly one is evicted, and the
    # job takes both GPUs of the socket it freed.
    running = [
        RunningJob(
            job=j,
            priority_class="spot",
            preemptible=True,
            started_at=NOW,
            replicas=[ReplicaAllocation(node="n", gpus=[g], cpu_cores=1)],
        )
        for j, g in (("r1", 0), ("r2", 2))
    ]
    cluster = build_cluster(Inventory(nodes=[_gpu_node("n", (4, 2), (4, 2))], running=running), source="t")
    shape = [
        FluxResource(
            type="socket",
            count=CountRange(min=1),
            with_=[
                FluxResource(type="core", count=CountRange(min=2)),
                FluxResource(type="gpu", count=CountRange(min=2)),
            ],
        )
    ]
    job = Job(
        id="j",
        priority_class="reserved",
        tasks=[TaskGroup(name="s", cpu_cores=2, gpu=GpuDemand(count=2), structure=shape)],
    )
    d = solve([job], cluster)
    [evicted] = [e.job for e in d.preemptions]
    freed_socket = {"r1": [0, 1], "r2": [2, 3]}[evicted]
    assert [g for _, g in gpus_of(d, "j")] == freed_socket


def test_cores_of_shapes_already_placed_may_move_to_another_socket(solve: Solve) -> None:
    # Sockets of 4 and 2 cores, shared (exclusive: false). The reserved job x (1 socket with 1 core) is
    # placed first; best fit puts
    # its core on the 2-core socket. Then y asks 2 sockets with 2 cores each: the 2-core socket must give
    # y both its cores, which is possible only with x's core on the 4-core socket (1 + 2 <= 4, 2 <= 2).
    # The decision names no cores, so that arrangement is as valid as the first: both jobs run.
    cluster = build_cluster(Inventory(nodes=[_node("n", 4, 2)]), source="t")
    core = [FluxResource(type="core", count=CountRange(min=1))]
    x = Job(
        id="x",
        priority_class="reserved",
        tasks=[
            TaskGroup(
                name="s",
                cpu_cores=1,
                structure=[FluxResource(type="socket", count=CountRange(min=1), exclusive=False, with_=core)],
            )
        ],
    )
    y = _socket_job("y", 2, 2, exclusive=False)
    d = solve([x, y], cluster)
    assert sorted(p.job for p in d.placements) == ["x", "y#0"]
