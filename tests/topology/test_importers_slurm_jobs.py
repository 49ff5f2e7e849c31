"""``squeue --json`` read as named running jobs (``topology/importers/slurm_jobs.py``), offline.

The fixtures are what a live Slurm 22.05 printed in one run (``tests/topology/live_slurm.py``):
``sinfo-squeue-pair-22.05.json`` (nodes) and ``squeue-22.05.json`` (jobs a, b on gpu01 with 2 + 3 H100 and
30 / 120 minute limits, c on gpu02 with 4 H100 and no limit, d on gpu03 with its 4 A100 for 90 minutes,
f pending). The live tests read the same forms straight from Slurm.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from placer.topology import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_jobs import is_squeue_json, squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


def _squeue() -> dict[str, Any]:
    return json.loads((REAL / "squeue-22.05.json").read_text())  # type: ignore[no-any-return]


def _cluster():  # type: ignore[no-untyped-def]
    doc = json.loads((REAL / "sinfo-squeue-pair-22.05.json").read_text())
    return build_cluster(inventory_from_input(doc, source="sinfo.json"))


def test_running_jobs_only_with_their_slurm_ids() -> None:
    doc = _squeue()
    assert is_squeue_json(doc)
    jobs = {rj.labels["slurm_job_name"]: rj for rj in squeue_running(doc, source="squeue.json")}
    assert sorted(jobs) == ["a", "b", "c", "d"]  # f is pending
    assert [jobs[n].job for n in "abcd"] == ["1", "2", "3", "4"]  # submitted in that order
    assert jobs["b"].replicas[0].node == "gpu01" and jobs["b"].replicas[0].gpus == [2, 3, 4]
    assert jobs["a"].queue == "gpu" and jobs["a"].tenant == "root"  # no account: the user
    assert jobs["a"].replicas[0].cpu_cores == 1.0
    assert jobs["a"].replicas[0].memory_gb == pytest.approx(100 / 1024)  # 100 MB


def test_every_allocation_is_explained_and_free_gpus_do_not_change() -> None:
    cluster = _cluster()
    free = {n.name: len(cluster.free_gpus(n.name)) for n in cluster.nodes if n.gpu_count}
    named = with_slurm_jobs(cluster, squeue_running(_squeue(), source="squeue.json"))
    assert sorted(rj.job for rj in named.running_jobs()) == ["1", "2", "3", "4"]
    assert {n.name: len(named.free_gpus(n.name)) for n in named.nodes if n.gpu_count} == free
    assert free == {"gpu01": 3, "gpu02": 4, "gpu03": 0, "gpu04": 8}


def test_a_partial_squeue_leaves_the_rest_anonymous() -> None:
    # squeue for one user or partition lists only some jobs: what they do not explain stays held.
    doc = _squeue()
    doc["jobs"] = [j for j in doc["jobs"] if j["name"] == "a"]
    named = with_slurm_jobs(_cluster(), squeue_running(doc, source="squeue.json"))
    held = {rj.job: rj.replicas[0].gpus for rj in named.running_jobs()}
    assert held["1"] == [0, 1]
    assert held["slurm-alloc-gpu01"] == [2, 3, 4]  # b's GPUs, still held by someone
    assert len(named.free_gpus("gpu01")) == 3


def _bad(mutate: Any) -> str:
    doc = _squeue()
    mutate(doc["jobs"][0])
    with pytest.raises(TopologyError) as e:
        with_slurm_jobs(_cluster(), squeue_running(doc, source="squeue.json"))
    return str(e.value)


def test_bad_jobs_are_named_not_dropped() -> None:
    assert "jobs[0] (job 1): which node holds what is missing" in _bad(lambda j: j.pop("job_resources"))
    assert "gives no GPU indices" in _bad(lambda j: j.update(gres_detail=["gpu:h100:2"]))
    assert "jobs[0]: job_id must be a number" in _bad(lambda j: j.update(job_id="x"))
    unknown = _bad(lambda j: j["job_resources"]["allocated_nodes"][0].update(nodename="nope"))
    assert "(1).replicas[0]: unknown node 'nope'" in unknown
    beyond = _bad(lambda j: j.update(gres_detail=["gpu:h100:1(IDX:9)"]))
    assert "GPU index 9 out of range (the node has 8 GPUs)" in beyond


def test_newer_plugins_numbers_and_states_are_read() -> None:
    # data_parser v0.0.40+ (Slurm 23.11+): numbers as {"set", "infinite", "number"}, states as lists.
    doc = copy.deepcopy(_squeue())
    for j in doc["jobs"]:
        j["job_state"] = [j["job_state"]]
        j["job_id"] = {"set": True, "infinite": False, "number": j["job_id"]}
        limit = j["time_limit"]
        j["time_limit"] = {"set": limit is not None, "infinite": limit is None, "number": limit or 0}
        j["end_time"] = {"set": True, "infinite": False, "number": j["end_time"]}
        j["start_time"] = {"set": True, "infinite": False, "number": j["start_time"]}
    jobs = {rj.job: rj for rj in squeue_running(doc, source="squeue.json")}
    assert sorted(jobs) == ["1", "2", "3", "4"]
    a = jobs["1"]
    assert a.started_at is not None and a.expected_end is not None
    assert (a.expected_end - a.started_at).total_seconds() == 30 * 60
    assert jobs["3"].expected_end is None  # unlimited


@pytest.mark.parametrize("value", [10**400, float("inf"), float("nan"), -(2**60)])
def test_hostile_numbers_are_refused_naming_the_field(value: float) -> None:
    doc = _squeue()
    doc["jobs"][1]["priority"] = value
    with pytest.raises(TopologyError) as e:
        squeue_running(doc, source="squeue.json")
    assert "squeue.json: jobs[1].priority: " in str(e.value)


def test_a_start_time_that_is_no_time_is_named() -> None:
    doc = _squeue()
    doc["jobs"][0]["start_time"] = 2**53
    with pytest.raises(TopologyError) as e:
        squeue_running(doc, source="squeue.json")
    assert "jobs[0] (job 1): start_time 9007199254740992 is not a Unix time" in str(e.value)


def test_placer_place_refuses_a_hostile_squeue_file_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from placer.cli import main

    text = (REAL / "squeue-22.05.json").read_text().replace('"priority": 4294901759', '"priority": 1e400', 1)
    (tmp_path / "squeue.json").write_text(text)
    (tmp_path / "job.json").write_text(
        '{"id": "j", "type": "t", "queue": "q", "args": [], "ext_ml_gpu_count": 1}'
    )
    argv = ["place", "--cluster", str(REAL / "sinfo-squeue-pair-22.05.json"), "--running"]
    assert main([*argv, str(tmp_path / "squeue.json"), "--jobs", str(tmp_path / "job.json")]) == 1
    err = capsys.readouterr().err
    assert "jobs[0].priority" in err and "Traceback" not in err


SHOW_JOB = """JobId=12 JobName=two words
   UserId=ana(1000) GroupId=ana(1000) MCS_label=N/A
   Priority=50 Nice=0 Account=(null) QOS=normal
   JobState=RUNNING Reason=None Dependency=(null)
   RunTime=00:05:00 TimeLimit=1-00:00:00 TimeMin=N/A
   StartTime=2026-01-01T00:00:00 EndTime=2026-01-02T00:00:00 Deadline=N/A
   Partition=gpu AllocNode:Sid=login:1
   NodeList=gpu[01-02]
   TRES=cpu=4,mem=200M,node=2,billing=4,gres/gpu=4
     Nodes=gpu[01-02] CPU_IDs=0-1 Mem=100 GRES=gpu:h100:2(IDX:5-6)
   Command=/bin/sh -c sleep 600
   WorkDir=/home/ana/my dir

JobId=13 JobName=waiting
   JobState=PENDING Reason=Resources Dependency=(null)
   Partition=gpu
"""


def test_scontrol_show_job_d_text_is_read_by_the_same_rules() -> None:
    from placer.topology.importers.slurm_job_text import show_job_running

    (rj,) = show_job_running(SHOW_JOB, source="jobs.txt")  # the pending job is not running work
    assert (rj.job, rj.labels["slurm_job_name"], rj.tenant, rj.queue) == ("12", "two words", "ana", "gpu")
    assert [(r.node, r.gpus, r.cpu_cores) for r in rj.replicas] == [
        ("gpu01", [5, 6], 2.0),
        ("gpu02", [5, 6], 2.0),
    ]
    assert rj.started_at is not None and rj.expected_end is not None
    assert (rj.expected_end - rj.started_at).total_seconds() == 24 * 3600  # a 1-day limit


def test_scontrol_show_job_without_details_is_refused() -> None:
    from placer.topology.importers.slurm_job_text import show_job_running

    plain = "\n".join(x for x in SHOW_JOB.splitlines() if not x.strip().startswith("Nodes="))
    with pytest.raises(TopologyError) as e:
        show_job_running(plain, source="jobs.txt")
    assert "(job 12): which node holds what is missing" in str(e.value) and "with -d" in str(e.value)


def test_jobs_that_are_not_a_list_are_an_error_not_a_traceback() -> None:
    # Found by the hostile-input fuzz: squeue_running iterated whatever "jobs" held (a number raised).
    with pytest.raises(TopologyError, match="jobs: must be a list of jobs"):
        squeue_running({"meta": {"Slurm": {}}, "jobs": 1.0}, source="squeue.json")
