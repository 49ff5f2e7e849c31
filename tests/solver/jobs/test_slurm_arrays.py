"""Pending Slurm job arrays, read one job per task (``solver/jobs/formats/slurm.py``).

The fixtures are what a live Slurm 22.05 printed (``tests/topology/live_slurm.py``'s cluster, where jobs
1-4 run and job f waits for all of gpu01), with two held arrays submitted on top:

* ``squeue-22.05-arrays-held.json`` (and ``show-job-d-22.05-arrays.txt``, ``scontrol show job -d`` of the
  same moment): array 6, ``sbatch -H --array=0-5%2 --gres=gpu:1 -t 10``, and array 7,
  ``sbatch -H --array=1,3,7-9 --gres=gpu:h100:1``. Slurm prints each as one pending record with
  ``array_task_string`` (``0-5%2`` and ``array_max_tasks`` 2; ``1,3,7-9``) and no ``array_task_id``.
* ``squeue-22.05-array-split.json``: array 6 as ``--array=0-5`` (no throttle) after ``scontrol update
  JobId=6_3 NumNodes=1 NodeList=gpu03`` — what placer's ``--output slurm`` does. Slurm split task 3 off
  into its own record (job id 7, ``array_task_id`` 3, ``required_nodes`` gpu03) and the array's record
  now lists ``0-2,4-5``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.formats.slurm import MAX_ARRAY_TASKS, array_tasks
from placer.solver.jobs.model import Placement, Throttle
from placer.solver.policy import Policy
from placer.topology import RunningJob, build_cluster, cluster_of, dgx_h100
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"


def _doc(name: str) -> dict[str, Any]:
    return json.loads((REAL / name).read_text())  # type: ignore[no-any-return]


def _read(doc: dict[str, Any]) -> dict[str, Any]:
    return {r.id: r for r in read_text(json.dumps(doc), source="squeue.json")}


def test_an_array_is_one_job_per_task_named_as_slurm_names_them() -> None:
    read = _read(_doc("squeue-22.05-arrays-held.json"))
    tasks = sorted(k for k in read if k.startswith("7_"))
    assert tasks == ["7_1", "7_3", "7_7", "7_8", "7_9"]  # --array=1,3,7-9
    for tid in tasks:
        r = read[tid]
        assert r.ok and r.job is not None, r.errors
        (g,) = r.job.tasks
        assert g.gpu is not None and (g.count, g.gpu.count, g.gpu.types) == (1, 1, ["nvidia-h100"])
        assert r.job.name == "sweep2" and r.job.queue == "gpu"
        assert r.job.labels["slurm_array_job_id"] == "7"
        assert r.job.labels["slurm_array_task_id"] == tid.split("_")[1]
    assert read["5"].ok  # job f, not an array, read as before


def test_a_throttled_array_gives_each_task_the_arrays_throttle() -> None:
    # Array 6: --array=0-5%2 (array_max_tasks 2): six tasks, each limited with its array to two at once.
    read = _read(_doc("squeue-22.05-arrays-held.json"))
    tasks = sorted(k for k in read if k.startswith("6_"))
    assert tasks == [f"6_{t}" for t in range(6)]
    assert {read[t].job.throttle for t in tasks} == {Throttle(group="6", max_running=2)}
    assert all(read[t].job.throttle is None for t in read if t.startswith("7_"))  # no %N: none


def test_the_throttle_is_read_from_the_task_string_when_array_max_tasks_is_not_printed() -> None:
    doc = _doc("squeue-22.05-arrays-held.json")
    meta = next(j for j in doc["jobs"] if j["job_id"] == 6)
    del meta["array_max_tasks"]
    assert _read(doc)["6_4"].job.throttle == Throttle(group="6", max_running=2)


def test_a_task_slurm_split_off_takes_its_arrays_throttle() -> None:
    # Slurm keeps the throttle on the array's record; the split-off task's own record says 0.
    doc = _doc("squeue-22.05-array-split.json")
    meta = next(j for j in doc["jobs"] if j["job_id"] == 6)
    meta.update(array_task_string="0-2,4-5%2", array_max_tasks=2)
    split = next(j for j in doc["jobs"] if j["job_id"] == 7)
    assert split["array_max_tasks"] == 0
    assert _read(doc)["6_3"].job.throttle == Throttle(group="6", max_running=2)


def test_running_tasks_carry_their_array_as_throttle_group() -> None:
    doc = _doc("squeue-22.05-arrays-held.json")
    running = copy.deepcopy(next(j for j in doc["jobs"] if j["job_state"] == "RUNNING"))
    running.update(job_id=60, array_job_id=6, array_task_id=0)
    doc["jobs"].append(running)
    by_id = {rj.job: rj for rj in squeue_running(doc, source="squeue.json")}
    assert by_id["6_0"].throttle_group == "6"
    assert by_id["1"].throttle_group is None  # not an array task


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
@pytest.mark.parametrize("running_tasks", [0, 1, 2])
def test_the_throttle_lets_n_tasks_run_counting_the_running_ones(engine: str, running_tasks: int) -> None:
    # Array 6 (%2, one GPU each) on two DGX H100: all six fit, two less the running tasks may start.
    doc = _doc("squeue-22.05-arrays-held.json")
    cluster = cluster_of(dgx_h100(2)).with_allocations(
        [
            RunningJob(job=f"6_{10 + k}", throttle_group="6", replicas=[{"node": "dgx-h100-1", "gpus": [k]}])
            for k in range(running_tasks)
        ]
    )
    # The tasks as read, less their partition rule (these nodes are in no Slurm partition).
    jobs = [
        r.job.model_copy(update={"placement": Placement()}) for k, r in _read(doc).items() if k[:2] == "6_"
    ]
    d = place(jobs, cluster, Policy(engine=engine, time_limit_s=3))
    assert len(d.placements) == 2 - running_tasks
    assert not d.stats.status.startswith("CPSAT_REJECTED"), d.stats.status
    waiting = {p.job: p.reasons[0] for p in d.pending}
    assert len(waiting) == 4 + running_tasks
    for reason in waiting.values():
        assert reason.code == "THROTTLE"
        assert reason.details == {
            "group": "6",
            "max_running": 2,
            "running": running_tasks,
            "started": 2 - running_tasks,
        }
    assert check(d, jobs, cluster) == []


def test_a_task_slurm_split_off_keeps_its_name_and_the_rest_follow() -> None:
    read = _read(_doc("squeue-22.05-array-split.json"))
    tasks = sorted(k for k in read if k.startswith("6_"))
    assert tasks == ["6_0", "6_1", "6_2", "6_3", "6_4", "6_5"]  # split-off 6_3 (job 7) and 0-2,4-5
    pinned = {rule.key: rule.values for rule in read["6_3"].job.placement.required if hasattr(rule, "key")}
    assert pinned.get("hostname") == ["gpu03"]  # the NodeList the update gave it
    assert "7" not in read  # job id 7 is task 6_3, not a job of its own


def test_scontrol_show_job_gives_the_same_tasks_as_squeue_json() -> None:
    text = read_text((REAL / "show-job-d-22.05-arrays.txt").read_text(), source="jobs.txt")
    from_text = {r.id: r for r in text}
    from_json = _read(_doc("squeue-22.05-arrays-held.json"))
    assert sorted(from_text) == sorted(from_json)
    assert (
        from_text["6_0"].job.throttle == from_json["6_0"].job.throttle == Throttle(group="6", max_running=2)
    )
    for tid in ("7_1", "7_9"):
        a, b = from_text[tid].job, from_json[tid].job
        assert (a.tasks[0].gpu.count, a.tasks[0].gpu.types) == (b.tasks[0].gpu.count, b.tasks[0].gpu.types)


@pytest.mark.parametrize("engine", ["greedy", "cpsat"])
def test_the_tasks_wait_and_are_planned_as_jobs_and_the_checker_agrees(engine: str) -> None:
    # Every node of the live cluster has 2 cores and every running job takes one; gpu01 has free H100s but
    # no core, gpu03's 4 A100 are job d's (4), gpu02 drains, gpu04 is down. No task of array 6 fits now,
    # which is what Slurm said of 6_3 (Reason=Resources). Each is planned; 6_3, pinned to gpu03 by the
    # update, after job 4 ends there.
    pair = _doc("sinfo-squeue-pair-22.05.json")
    cluster = build_cluster(inventory_from_input(pair, source="s"))
    doc = _doc("squeue-22.05-array-split.json")
    cluster = with_slurm_jobs(cluster, squeue_running(doc, source="squeue.json"))
    jobs = [r.job for k, r in _read(doc).items() if k.startswith("6_")]
    now = cluster.running_job("2").started_at
    d = place(jobs, cluster, Policy(engine=engine, time_limit_s=3), now=now)
    assert d.placements == [] and sorted(p.job for p in d.pending) == sorted(j.id for j in jobs)
    planned = {p.job: next(r for r in p.reasons if r.code == "PLANNED_START") for p in d.pending}
    assert set(planned) == {j.id for j in jobs}
    assert planned["6_3"].details["after"] == ["4"]
    assert check(d, jobs, cluster, now=now) == []


def test_a_dependency_on_an_array_task_is_read() -> None:
    doc = _doc("squeue-22.05-arrays-held.json")
    f = next(j for j in doc["jobs"] if j["job_id"] == 5)
    f["dependency"] = "afterok:7_3(unfulfilled)"
    assert [(d.job, d.condition.value) for d in _read(doc)["5"].job.dependencies] == [("7_3", "success")]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("3-1", "an empty range"),
        ("1-4:0", "an empty range"),
        ("a", "is not a task index"),
        ("1-5%x", "throttle 'x' is not a number"),
        (f"0-{MAX_ARRAY_TASKS}", f"more than {MAX_ARRAY_TASKS:,} tasks"),
    ],
)
def test_a_task_string_placer_cannot_read_is_named(text: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        array_tasks(text)


def test_ranges_steps_lists_and_the_throttle() -> None:
    assert array_tasks("0-15:4") == ([0, 4, 8, 12], 0)
    assert array_tasks("9,1-3,2") == ([1, 2, 3, 9], 0)  # sorted, each once
    assert array_tasks("0-99%8") == (list(range(100)), 8)


def test_a_dependency_on_a_whole_array_waits_for_every_task() -> None:
    # afterok:7 in Slurm waits for all of array 7; read as one dependency per task of it. Before, "7"
    # named no job placer knew, and a dependency on an unknown job counts as met.
    doc = _doc("squeue-22.05-arrays-held.json")
    f = next(j for j in doc["jobs"] if j["job_id"] == 5)
    f["dependency"] = "afterok:7(unfulfilled)"
    read = _read(doc)
    deps = [(d.job, d.condition.value) for d in read["5"].job.dependencies]
    assert deps == [(f"7_{t}", "success") for t in (1, 3, 7, 8, 9)]
    jobs = [r.job for r in read.values() if r.ok]
    pair = _doc("sinfo-squeue-pair-22.05.json")
    cluster = with_slurm_jobs(
        build_cluster(inventory_from_input(pair, source="s")), squeue_running(doc, source="squeue.json")
    )
    d = place(jobs, cluster, Policy(engine="greedy"), now=cluster.running_job("2").started_at)
    (p,) = [p for p in d.pending if p.job == "5"]
    assert p.reasons[0].code == "DEPENDENCY_UNMET" and p.reasons[0].details["job"].startswith("7_")


def test_a_dependency_on_a_refused_array_waits_on_it() -> None:
    doc = _doc("squeue-22.05-arrays-held.json")
    f = next(j for j in doc["jobs"] if j["job_id"] == 5)
    f["dependency"] = "afterany:6(unfulfilled)"
    meta = next(j for j in doc["jobs"] if j["job_id"] == 6)
    meta["array_task_string"] = "0-5%x"  # array 6 is refused: its task string is unreadable
    read = _read(doc)
    assert not read["6"].ok and read["6"].errors[0].path == "jobs[5].array_task_string"
    assert [d.job for d in read["5"].job.dependencies] == ["6"]


@pytest.mark.parametrize(("array_id", "task"), [(-5, 2), (5, 2.5), (0.5, 1)])
def test_an_array_task_with_ids_slurm_never_prints_is_refused(array_id: float, task: float) -> None:
    doc = _doc("squeue-22.05-arrays-held.json")
    f = next(j for j in doc["jobs"] if j["job_id"] == 5)
    f.update(array_job_id=array_id, array_task_id=task)
    (r,) = [r for r in read_text(json.dumps(doc), source="squeue.json") if r.path == "jobs[4]"]
    assert not r.ok and r.errors[0].path == "jobs[4].array_task_id"
