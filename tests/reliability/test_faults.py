"""Fault cases: each is a clear error or a documented, tested behaviour (``docs/security.md``, "Faults").

* A node that goes down between two snapshots: the Kubernetes importer marks a node whose ``Ready``
  condition is not ``True`` as not ready; no decision of either engine places work on it; a decision made
  on the older snapshot is caught by the checker when re-checked against the newer one.
* Duplicate job ids: rejected once (one ``rejected`` entry with code ``duplicate``), no copy placed.
* Unknown reservations: rejected with code ``reservation``; an unknown queue is NOT an error (documented:
  no queue limits or defaults apply, the configured upper bounds still do).
* Running allocations that over-commit a node: ``Cluster.with_allocations`` raises ``TopologyError`` naming
  the node.
* Dependency cycles: ``place`` keeps every job of a cycle pending (``DEPENDENCY_UNMET``, never placed);
  ``check_batch`` and ``placer validate`` / ``placer place`` reject them with code ``dependency``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placer.cli import main as placer
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.load import check_batch, read_object
from placer.solver.jobs.model import (
    Dependency,
    GpuDemand,
    Job,
    Placement,
    ReadResult,
    ReservationRef,
    TaskGroup,
)
from placer.solver.jobs.options import ReadOptions
from placer.solver.jobs.queues import load_queue_configs
from placer.solver.policy import Policy
from placer.topology import cluster_of, cpu_nodes, dgx_h100, tpu_pod
from placer.topology.build import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.importers.kubernetes import parse_kubernetes
from tests.solver.conftest import ENGINES, NOW, assert_valid

REPO = Path(__file__).resolve().parents[2]

# -- a node that disappears -------------------------------------------------------------------------------


def k8s_node(name: str, ready: str | None) -> dict[str, Any]:
    """A ``kubectl get nodes -o json`` item: a DGX H100 as GPU Feature Discovery labels it."""
    node: dict[str, Any] = {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
        "status": {"allocatable": {"cpu": "224", "memory": "2048Gi", "nvidia.com/gpu": "8"}},
    }
    if ready is not None:
        node["status"]["conditions"] = [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": ready, "reason": "KubeletNotReady" if ready != "True" else ""},
        ]
    return node


def nodes_list(states: dict[str, str | None]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [k8s_node(n, s) for n, s in states.items()]}


BEFORE = {"gpu-1": "True", "gpu-2": "True", "gpu-3": "True", "gpu-4": "True"}
#: Between snapshot and decision gpu-2 stops reporting (NotReady: status False) and gpu-4's kubelet is lost
#: (status Unknown).
AFTER = {"gpu-1": "True", "gpu-2": "False", "gpu-3": "True", "gpu-4": "Unknown"}
EIGHT_GPU_JOBS = [
    Job(id=f"train-{i}", tasks=[TaskGroup(gpu=GpuDemand(count=8), cpu_cores=16)]) for i in range(4)
]


def test_importer_marks_not_ready_nodes_down() -> None:
    inv = parse_kubernetes(nodes_list(AFTER), source="nodes.json")
    assert {n.name: n.ready for n in inv.nodes} == {
        "gpu-1": True,
        "gpu-2": False,
        "gpu-3": True,
        "gpu-4": False,
    }
    cluster = build_cluster(inv)
    assert [n.name for n in cluster.nodes if n.usable] == ["gpu-1", "gpu-3"]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_work_lands_on_a_node_that_went_down(engine: str) -> None:
    cluster = build_cluster(parse_kubernetes(nodes_list(AFTER), source="nodes.json"))
    decision = place(EIGHT_GPU_JOBS, cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert_valid(decision, EIGHT_GPU_JOBS, cluster)
    used = {r.node for p in decision.placements for r in p.replicas}
    assert used <= {"gpu-1", "gpu-3"}
    # 2 ready nodes x 8 GPUs = 2 jobs of 8 GPUs; the other 2 wait for capacity.
    assert len(decision.placements) == 2 and len(decision.pending) == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_pinned_to_the_down_node_stays_pending(engine: str) -> None:
    cluster = build_cluster(parse_kubernetes(nodes_list(AFTER), source="nodes.json"))
    job = Job(
        id="pinned",
        tasks=[TaskGroup(gpu=GpuDemand(count=1))],
        placement=Placement(node_selector={"hostname": "gpu-2"}),
    )
    decision = place([job], cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert_valid(decision, [job], cluster)
    assert [p.job for p in decision.pending] == ["pinned"]
    # It waits for gpu-2 to come back (a pod pinned to a NotReady node stays Pending): not UNSATISFIABLE,
    # which is fixed and would tell a backend to give up on it.
    assert decision.pending[0].reasons[0].code == "NODES_UNAVAILABLE"
    assert decision.pending[0].reasons[0].details["nodes"] == ["gpu-2"]


def test_a_decision_from_the_old_snapshot_is_caught_on_recheck() -> None:
    # Documented behaviour: placer decides on the snapshot it is given; a backend re-checks a decision
    # against the current snapshot (placer check) before binding, and the checker refuses work on a node
    # that went down in between (placement-rules.md rule 3).
    old = build_cluster(parse_kubernetes(nodes_list(BEFORE), source="before.json"))
    new = build_cluster(parse_kubernetes(nodes_list(AFTER), source="after.json"))
    decision = place(EIGHT_GPU_JOBS, old, Policy(engine="greedy"), now=NOW)
    assert len(decision.placements) == 4  # 4 ready nodes, 4 jobs of 8 GPUs
    assert check(decision, EIGHT_GPU_JOBS, old, now=NOW) == []
    stale = check(decision, EIGHT_GPU_JOBS, new, now=NOW)
    assert {v.node for v in stale} == {"gpu-2", "gpu-4"}


# -- duplicate ids, unknown reservations, unknown queues --------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_duplicate_ids_are_rejected_once_and_never_placed(engine: str) -> None:
    a1 = Job(id="dup", tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    a2 = Job(id="dup", tasks=[TaskGroup(gpu=GpuDemand(count=2))])
    b = Job(id="b", tasks=[TaskGroup(gpu=GpuDemand(count=1))])
    cluster = cluster_of(dgx_h100(2))
    decision = place([a1, b, a2], cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert_valid(decision, [a1, b, a2], cluster)
    assert [(r.job, [e["code"] for e in r.errors]) for r in decision.rejected] == [("dup", ["duplicate"])]
    assert [p.job for p in decision.placements] == ["b"]


def test_duplicate_ids_across_documents_are_rejected_by_the_batch_check() -> None:
    docs = [{"id": "x", "type": "ml.train", "ext_ml_gpu_count": n} for n in (1, 2)]
    results = check_batch([r for d in docs for r in read_object(d, source="inline")])
    assert [(r.id, r.ok, [e.code for e in r.errors]) for r in results] == [
        ("x", False, ["duplicate"]),
        ("x", False, ["duplicate"]),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_unknown_reservation_is_rejected(engine: str) -> None:
    job = Job(id="r", tasks=[TaskGroup(cpu_cores=1)], reservation=ReservationRef(id="no-such-reservation"))
    cluster = cluster_of(cpu_nodes(2))
    decision = place([job], cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert_valid(decision, [job], cluster)
    assert len(decision.rejected) == 1
    err = decision.rejected[0].errors[0]
    assert (decision.rejected[0].job, err["code"], err["path"]) == ("r", "reservation", "reservation.id")
    assert "no-such-reservation" in str(err["message"])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("why", ["reservation", "duplicate"])
def test_a_job_depending_on_a_rejected_job_is_not_placed(engine: str, why: str) -> None:
    # placement-rules.md rule 14: a dependency on a job of this batch is unmet until that job has run. A
    # job the engine rejects (unknown reservation, duplicate id) never runs, so its dependents must wait
    # (DEPENDENCY_UNMET), not start as if the dependency were someone else's finished job.
    if why == "reservation":
        first = [Job(id="a", tasks=[TaskGroup(cpu_cores=1)], reservation=ReservationRef(id="nope"))]
    else:
        first = [Job(id="a", tasks=[TaskGroup(cpu_cores=1)]), Job(id="a", tasks=[TaskGroup(cpu_cores=2)])]
    b = Job(id="b", tasks=[TaskGroup(cpu_cores=1)], dependencies=[Dependency(job="a")])
    cluster = cluster_of(cpu_nodes(2))
    decision = place([*first, b], cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert [p.job for p in decision.placements] == []
    assert [(p.job, p.reasons[0].code) for p in decision.pending] == [("b", "DEPENDENCY_UNMET")]
    assert_valid(decision, [*first, b], cluster)


QUEUES = load_queue_configs({"queue": "gpu-small", "config": {"ml_limits": {"max_gpu_count": 4}}})


def test_unknown_queue_is_accepted_without_queue_limits_but_upper_bounds_hold() -> None:
    # Decision (documented in docs/security.md): placer is not the queue registry, so a queue it has no
    # configuration for is not an error. Such a job gets no ml_defaults and no ml_limits; the global upper
    # bounds of ReadOptions (OJS ML §15.1, default 512 GPUs per job) still apply.
    options = ReadOptions(queues=QUEUES)
    job = {"id": "j", "type": "ml.train", "ext_ml_gpu_count": 8}
    known = read_object({**job, "queue": "gpu-small"}, options=options)
    assert [(r.ok, [e.code for e in r.errors]) for r in known] == [(False, ["limit"])]
    unknown = read_object({**job, "queue": "no-such-queue"}, options=options)
    assert [(r.ok, r.job.queue if r.job else None) for r in unknown] == [(True, "no-such-queue")]
    huge = read_object({**job, "ext_ml_gpu_count": 1000, "queue": "no-such-queue"}, options=options)
    assert [(r.ok, [e.code for e in r.errors]) for r in huge] == [(False, ["limit"])]


# -- over-committed running allocations -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("running", "what"),
    [
        (
            [
                {"job": "a", "replicas": [{"node": "dgx-h100-1", "gpus": [0, 1, 2, 3, 4, 5]}]},
                {"job": "b", "replicas": [{"node": "dgx-h100-1", "gpus": [4, 5, 6, 7]}]},
            ],
            "double-booked",
        ),
        (
            [
                {"job": "a", "replicas": [{"node": "dgx-h100-1", "cpu_cores": 200}]},
                {"job": "b", "replicas": [{"node": "dgx-h100-1", "cpu_cores": 30}]},
            ],
            "cpu over-committed",
        ),
        ([{"job": "a", "replicas": [{"node": "dgx-h100-1", "memory_gb": 4096}]}], "memory over-committed"),
        (
            [
                {"job": "a", "replicas": [{"node": "dgx-h100-1", "gpus": [0], "gpu_milli": 600}]},
                {"job": "b", "replicas": [{"node": "dgx-h100-1", "gpus": [0], "gpu_milli": 500}]},
            ],
            "double-booked",
        ),
        ([{"job": "a", "replicas": [{"node": "dgx-h100-1", "gpus": [8]}]}], "out of range"),
    ],
    ids=["gpus", "cpu", "memory", "gpu-shares", "gpu-index"],
)
def test_overcommitted_running_allocations_raise_naming_the_node(
    running: list[dict[str, Any]], what: str
) -> None:
    cluster = cluster_of(dgx_h100(2))  # 8 GPUs, 224 cores, 2048 GB each
    with pytest.raises(TopologyError) as err:
        cluster.with_allocations(running)
    assert any("'dgx-h100-1'" in p.message and what in p.message for p in err.value.problems), str(err.value)


def test_tpu_chips_held_twice_raise_naming_the_pod() -> None:
    cluster = cluster_of(tpu_pod("v5e", shape=(2, 4)))
    running = [
        {"job": "a", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 0], [0, 1]]}]},
        {"job": "b", "replicas": [{"tpu_pod": "v5e-pod", "tpu_chips": [[0, 1]]}]},
    ]
    with pytest.raises(TopologyError, match="'v5e-pod': chip \\[0, 1\\] double-booked"):
        cluster.with_allocations(running)


# -- dependency cycles ------------------------------------------------------------------------------------


def _cycle() -> list[Job]:
    return [
        Job(id="a", tasks=[TaskGroup(cpu_cores=1)], dependencies=[Dependency(job="b")]),
        Job(id="b", tasks=[TaskGroup(cpu_cores=1)], dependencies=[Dependency(job="a")]),
        Job(id="self", tasks=[TaskGroup(cpu_cores=1)], dependencies=[Dependency(job="self")]),
        Job(id="c", tasks=[TaskGroup(cpu_cores=1)], dependencies=[Dependency(job="a")]),
        Job(id="free", tasks=[TaskGroup(cpu_cores=1)]),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_place_keeps_a_dependency_cycle_pending(engine: str) -> None:
    jobs = _cycle()
    cluster = cluster_of(cpu_nodes(2))
    decision = place(jobs, cluster, Policy(engine=engine, time_limit_s=2), now=NOW)
    assert_valid(decision, jobs, cluster)
    assert [p.job for p in decision.placements] == ["free"]
    assert {(p.job, p.reasons[0].code) for p in decision.pending} == {
        ("a", "DEPENDENCY_UNMET"),
        ("b", "DEPENDENCY_UNMET"),
        ("self", "DEPENDENCY_UNMET"),
        ("c", "DEPENDENCY_UNMET"),
    }


def test_batch_check_rejects_jobs_on_a_cycle_with_code_dependency() -> None:
    results = check_batch([ReadResult(id=j.id, ok=True, job=j) for j in _cycle()])
    rejected = {r.id: [e.code for e in r.errors] for r in results if not r.ok}
    # c waits for a but is not on the cycle: it stays valid (and will wait at placement time).
    assert rejected == {"a": ["dependency"], "b": ["dependency"], "self": ["dependency"]}


FLUX_STEP = """\
version: 1
resources:
  - type: slot
    count: 1
    label: default
    with:
      - type: core
        count: 1
tasks:
  - command: ["true"]
    slot: default
    count:
      per_slot: 1
attributes:
  system:
    duration: 60
    job:
      name: {name}
    dependencies:
      - scheme: afterok
        value: {after}
"""
SSS_STEP = """<?xml version="1.0" encoding="UTF-8"?>
<Job>
  <JobId>{name}</JobId>
  <Requested><Processors>1</Processors><WallDuration>60</WallDuration></Requested>
  <Dependency>{after}</Dependency>
</Job>
"""


def _cycle_files(tmp_path: Path) -> list[str]:
    """step-a (Flux) -> step-b (Flux) -> step-c (SSS) -> step-a: a cycle across two formats."""
    a = tmp_path / "a.flux.yaml"
    a.write_text(FLUX_STEP.format(name="step-a", after="step-b"))
    b = tmp_path / "b.flux.yaml"
    b.write_text(FLUX_STEP.format(name="step-b", after="step-c"))
    c = tmp_path / "c.sss.xml"
    c.write_text(SSS_STEP.format(name="step-c", after="step-a"))
    return [str(a), str(b), str(c)]


def test_placer_validate_rejects_a_cycle_across_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = placer(["validate", *_cycle_files(tmp_path), "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1
    assert {(o["id"], o["ok"], tuple(e["code"] for e in o["errors"])) for o in lines} == {
        ("step-a", False, ("dependency",)),
        ("step-b", False, ("dependency",)),
        ("step-c", False, ("dependency",)),
    }


def test_placer_place_rejects_a_cycle_and_still_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = REPO / "examples" / "clusters" / "h100-training.yaml"
    code = placer(
        [
            "place",
            "--cluster",
            str(cluster),
            "--jobs",
            *_cycle_files(tmp_path),
            "--engine",
            "greedy",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0  # a decision was made: invalid jobs are part of the answer (docs/decision.md)
    assert out["placements"] == []
    assert {r["job"]: [e["code"] for e in r["errors"]] for r in out["rejected"]} == {
        "step-a": ["dependency"],
        "step-b": ["dependency"],
        "step-c": ["dependency"],
    }
