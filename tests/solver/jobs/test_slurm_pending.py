"""Pending Slurm jobs from ``squeue --json`` read as placer jobs (``solver/jobs/formats/slurm.py``).

The fixture is what a live Slurm 22.05 printed (``tests/topology/live_slurm.py``): job f (id 5) pending,
``-w gpu01 --gres=gpu:h100:8``, one core, 100 MB per CPU, no time limit, while jobs 1 and 2 hold 2 and 3
of gpu01's 8 H100 for 30 and 120 minutes. Variations of the same object check the other fields.
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.model import AffinityOperator, DependencyCondition
from placer.solver.policy import Policy
from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input
from tests.solver.conftest import NOW

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"


def _doc() -> dict[str, Any]:
    return json.loads((REAL / "squeue-22.05.json").read_text())  # type: ignore[no-any-return]


def _pending(doc: dict[str, Any]) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["job_state"] == "PENDING")


def _read(doc: dict[str, Any]) -> list[Any]:
    return read_text(json.dumps(doc), source="squeue.json")


def test_only_pending_jobs_are_read_with_what_they_ask() -> None:
    [r] = _read(_doc())  # four running jobs are the cluster's (--running), not work to place
    assert r.ok and r.job is not None
    job = r.job
    assert (job.id, job.name, job.queue, job.source_format) == ("5", "f", "gpu", "slurm")
    (g,) = job.tasks
    assert (g.count, g.cpu_cores, g.gpu.count if g.gpu else 0) == (1, 1.0, 8)
    assert g.gpu is not None and g.gpu.types == ["nvidia-h100"]
    assert g.memory_gb == pytest.approx(100 / 1024)  # 100 MB per CPU x 1 CPU
    assert job.duration_s is None  # no time limit
    keys = {(rule.key, rule.operator): rule.values for rule in job.placement.required}
    assert keys[("partition/gpu", AffinityOperator.EXISTS)] == []
    assert keys[("hostname", AffinityOperator.IN)] == ["gpu01"]  # -w gpu01


def test_the_pending_job_is_planned_after_the_slurm_job_it_waits_for() -> None:
    cluster = build_cluster(
        inventory_from_input(json.loads((REAL / "sinfo-squeue-pair-22.05.json").read_text()), source="s")
    )
    cluster = with_slurm_jobs(cluster, squeue_running(_doc(), source="squeue.json"))
    [r] = _read(_doc())
    b = cluster.running_job("2")  # 3 H100 for 120 minutes; a (2 H100) ends first, at 30 minutes
    assert b.started_at is not None and b.expected_end is not None
    now = b.started_at + timedelta(minutes=1)
    decision = place([r.job], cluster, Policy(engine="greedy"), now=now)
    (pending,) = decision.pending
    planned = [x for x in pending.reasons if x.code == "PLANNED_START"]
    # 8 GPUs on gpu01 only: after both 1 and 2 end, i.e. at 2's end (it holds the last 3).
    assert planned and planned[0].details["after"] == ["2"]
    assert planned[0].details["start"] == b.expected_end.isoformat()
    assert check(decision, [r.job], cluster, now=now) == []


def test_nodes_memory_time_features_and_dependencies() -> None:
    doc = _doc()
    job = _pending(doc)
    job.update(
        node_count=2,
        cpus=32,
        memory_per_node=131072,
        memory_per_cpu=None,
        time_limit=90,
        required_nodes="gpu[01-02]",
        excluded_nodes="gpu03",
        features="ib&nvlink",
        dependency="afterok:3(unfulfilled),afterany:4(unfulfilled)",
        partition="gpu,debug",
    )
    [r] = _read(doc)
    assert r.ok and r.job is not None, r.errors
    (g,) = r.job.tasks
    assert (g.count, g.one_per_node, g.cpu_cores, g.memory_gb) == (2, True, 16.0, 128.0)
    assert r.job.duration_s == 90 * 60
    rules = r.job.placement.required
    hosts = {rule.operator: rule.values for rule in rules if getattr(rule, "key", "") == "hostname"}
    assert hosts == {AffinityOperator.IN: ["gpu01", "gpu02"], AffinityOperator.NOT_IN: ["gpu03"]}
    assert {getattr(rule, "key", None) for rule in rules} >= {"ib", "nvlink"}
    assert any(getattr(rule, "kind", "") == "any" or type(rule).__name__ == "AnyOf" for rule in rules)
    deps = [(d.job, d.condition) for d in r.job.dependencies]
    assert deps == [("3", DependencyCondition.SUCCESS), ("4", DependencyCondition.EXIT)]


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"array_job_id": 5, "array_task_string": "1-10%x"}, "jobs[4].array_task_string", "not a number"),
        ({"array_job_id": 5, "array_task_string": "3-1"}, "jobs[4].array_task_string", "an empty range"),
        ({"tres_per_job": "gres:gpu:16"}, "jobs[4].tres_per_job", "--gpus) with --gpus-per-node as well"),
        (
            {"tres_per_node": "", "node_count": 2, "tres_per_job": "gres:gpu:4"},
            "jobs[4].tres_per_job",
            "--gpus) over several nodes",
        ),
        (
            {"tres_per_node": "", "node_count": 2, "tasks": 3, "tres_per_task": "gres:gpu:1"},
            "jobs[4].tres_per_task",
            "or tasks per node (--ntasks-per-node)",
        ),
        ({"tres_per_node": "gres:nic:mlx5:1"}, "jobs[4].tres_per_node", "a typed generic resource"),
        ({"tres_per_job": "gres:nic:2"}, "jobs[4].tres_per_job", "generic resource 'nic' is not read here"),
        ({"features": "[a*2&b]"}, "jobs[4].features", "counts, brackets"),
        ({"dependency": "aftercorr:3"}, "jobs[4].dependency", "is not after"),
        ({"dependency": "afterok:3+30"}, "jobs[4].dependency", "a delay"),
        ({"required_nodes": "gpu[01-"}, "jobs[4].required_nodes", "not a Slurm hostlist"),
    ],
)
def test_what_placer_cannot_represent_is_refused_naming_the_field(
    change: dict[str, Any], path: str, words: str
) -> None:
    doc = copy.deepcopy(_doc())
    _pending(doc).update(change)
    [r] = _read(doc)
    assert not r.ok
    assert any(e.path == path and words in e.message for e in r.errors), r.errors


@pytest.mark.parametrize(
    ("fields", "nodes", "gpus", "types"),
    [  # as a live Slurm 22.05 printed them in squeue --json for the sbatch options named
        (
            {"node_count": 1, "tasks": 1, "tasks_per_node": 0, "tres_per_job": "gres:gpu:h100:3"},
            1,
            3,
            ["nvidia-h100"],
        ),
        ({"node_count": 1, "tasks": 2, "tasks_per_node": 0, "tres_per_task": "gres:gpu:2"}, 1, 4, []),
        ({"node_count": 2, "tasks": 4, "tasks_per_node": 2, "tres_per_task": "gres:gpu:1"}, 2, 2, []),
    ],
    ids=["--gpus=h100:3", "-n 2 --gpus-per-task=2", "-N 2 --ntasks-per-node=2 --gpus-per-task=1"],
)
def test_gpus_per_job_or_task_are_read_where_they_fix_the_gpus_per_node(
    fields: dict[str, Any], nodes: int, gpus: int, types: list[str]
) -> None:
    doc = copy.deepcopy(_doc())
    _pending(doc).update({"tres_per_node": "", "tres_per_job": "", "tres_per_task": "", **fields})
    [r] = _read(doc)
    assert r.ok, r.errors
    (g,) = r.job.tasks
    assert g.count == nodes and g.gpu is not None
    assert (g.gpu.count, g.gpu.types) == (gpus, types)


def test_newer_plugins_numbers_are_read() -> None:
    doc = _doc()
    job = _pending(doc)
    for key in ("job_id", "node_count", "cpus", "memory_per_cpu", "priority", "submit_time"):
        job[key] = {"set": True, "infinite": False, "number": job[key]}
    job["time_limit"] = {"set": True, "infinite": False, "number": 45}
    job["job_state"] = ["PENDING"]
    job["tres_per_node"] = "gres/gpu:h100=8"
    [r] = _read(doc)
    assert r.ok and r.job is not None and r.job.id == "5" and r.job.duration_s == 45 * 60
    assert r.job.tasks[0].gpu is not None and r.job.tasks[0].gpu.count == 8


def test_scontrol_show_job_text_gives_the_same_pending_job_as_squeue_json() -> None:
    # The same job f as Slurm printed it both ways (another run of the live Slurm, so only its submit time
    # differs); placer reads the text as the squeue --json object of the same job.
    text = (REAL / "show-job-pending-22.05.txt").read_text()
    by_text = {r.id: r for r in read_text(text, source="show-job.txt")}
    assert set(by_text) == {"5", "6"} and all(r.ok for r in by_text.values())
    [from_json] = _read(_doc())
    ignore = {"submit_time", "envelope", "metadata", "priority"}
    assert by_text["5"].job.model_dump(exclude=ignore) == from_json.job.model_dump(exclude=ignore)
    # g: sbatch -H -N 2 -p gpu,scavenger --gres=gpu:h100:4 -c 1 --mem-per-cpu=200 -x gpu03 -t 1-02:00:00
    #    -d afterok:1:2
    g = by_text["6"].job
    (tasks,) = g.tasks
    assert (tasks.count, tasks.one_per_node, tasks.cpu_cores) == (2, True, 1.0)
    assert tasks.gpu is not None and (tasks.gpu.count, tasks.gpu.types) == (4, ["nvidia-h100"])
    assert tasks.memory_gb == pytest.approx(200 / 1024)  # 200 MB per CPU x 1 CPU per node
    assert g.duration_s == (24 + 2) * 3600
    assert [(d.job, d.condition) for d in g.dependencies] == [
        ("1", DependencyCondition.SUCCESS),
        ("2", DependencyCondition.SUCCESS),
    ]
    assert g.queue == "gpu"  # the first partition; either may hold it:
    (alternatives, excluded) = g.placement.required
    assert {r.key for r in alternatives.rules} == {"partition/gpu", "partition/scavenger"}
    assert (excluded.key, excluded.operator) == ("hostname", AffinityOperator.NOT_IN)
    assert excluded.values == ["gpu03"]


def test_a_bad_scontrol_show_job_record_is_named() -> None:
    text = (REAL / "show-job-pending-22.05.txt").read_text().replace("MinMemoryCPU=200M", "MinMemoryCPU=lots")
    (bad,) = [r for r in read_text(text, source="show-job.txt") if not r.ok]
    assert "record 2" in str(bad.errors[0]) and "MinMemoryCPU='lots'" in str(bad.errors[0])


def test_switches_are_said_with_a_warning_not_read_past() -> None:
    """``sbatch --switches=1@10:00`` on a live Slurm (topology/tree; the wait capped by ``max_switch_wait``,
    300 s by default) prints ``Switches=1@00:05:00`` in ``scontrol show job``; its squeue --json (22.05)
    prints no switch field, later versions' job info ``required_switches`` and ``maximum_switch_wait_time``.
    Slurm holds a multi-node job for them, placer does not: a warning at the field. One node is under one
    switch whatever it asks: no warning."""
    record = (REAL / "show-job-pending-22.05.txt").read_text().split("\n\n")[1]  # job g: -N 2
    text = record.replace("   Features=", "   Switches=1@00:05:00\n   Features=")
    [g] = read_text(text, source="show-job.txt")
    assert g.ok and [(w.code, w.path) for w in g.warnings] == [("unsupported", "jobs[0].required_switches")]
    assert "up to 300 s for 1 leaf switch" in g.warnings[0].message
    one = record.replace("NumNodes=2", "NumNodes=1").replace(
        "   Features=", "   Switches=1@00:05:00\n   Features="
    )
    assert not read_text(one, source="show-job.txt")[0].warnings
    doc = _doc()
    job = _pending(doc)
    job.update(node_count=2, required_switches=2, maximum_switch_wait_time=300)
    [r] = _read(doc)
    at = f"jobs[{doc['jobs'].index(job)}].required_switches"
    assert [(w.code, w.path) for w in r.warnings] == [("unsupported", at)]


def test_a_generic_resource_per_node_is_counted_against_the_nodes_gres() -> None:
    """``--gres=gpu:1,nic:1`` on Slurm nodes with ``Gres=gpu:h100:8,nic:2`` (``scontrol show node``): each
    node runs two such jobs, as Slurm's select plugin counts the NICs; GPUs alone would fit eight. What
    ``GresUsed`` says is in use is held: one NIC of n2 is taken."""
    from placer.topology.importers.slurm import parse_slurm

    text = "\n".join(
        f"NodeName={n} CPUTot=64 RealMemory=515072 Gres=gpu:h100:8,nic:2 {used} State=IDLE Partitions=gpu"
        for n, used in (("n1", ""), ("n2", "CPUAlloc=1 GresUsed=gpu:h100:0(IDX:N/A),nic:1"))
    )
    cluster = build_cluster(parse_slurm(text, source="nodes.txt"))
    assert cluster.free_extra("n1", "gres/nic") == 2 and cluster.free_extra("n2", "gres/nic") == 1
    doc = _doc()
    pending = _pending(doc)
    jobs = []
    for k in range(4):
        job = {**copy.deepcopy(pending), "job_id": 100 + k, "tres_per_node": "gres:gpu:1,gres:nic:1"}
        job.pop("required_nodes", None)
        jobs.append(job)
    doc["jobs"] = jobs
    results = _read(doc)
    assert all(r.ok and r.job.tasks[0].extra == {"gres/nic": 1.0} for r in results), [
        r.errors for r in results
    ]
    for engine in ("greedy", "cpsat"):
        d = place(results, cluster, Policy(engine=engine, time_limit_s=2.0), now=NOW)
        assert check(d, [r.job for r in results], cluster, now=NOW) == []
        on = sorted(r.node for p in d.placements for r in p.replicas)
        assert on == ["n1", "n1", "n2"] and len(d.pending) == 1, (engine, on)
