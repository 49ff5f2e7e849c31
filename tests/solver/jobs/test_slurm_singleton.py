"""``sbatch --dependency=singleton``: at most one job of a user's jobs of one name runs at once. Read from
what a live Slurm 22.05 printed (``squeue --json`` and ``sinfo --json`` of one run): job 1 (``x``) runs,
job 2 (``x``, singleton) waits with Slurm's reason ``Dependency`` (``singleton(unfulfilled)``), job 3
(``y``, singleton) ran at once, no other ``y`` running. placer reads the singleton as a group limit
(``singleton/<user>/<name>``, one running) that running jobs count against by their user and name."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.policy import Policy
from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
SQUEUE = json.loads((REAL / "squeue-22.05-singleton.json").read_text())


def _cluster(doc: dict[str, Any]) -> Any:
    inventory = inventory_from_input(
        json.loads((REAL / "sinfo-22.05-singleton.json").read_text()), source="s"
    )
    return with_slurm_jobs(build_cluster(inventory), squeue_running(doc, source="squeue.json"))


def test_the_singleton_is_a_group_limit_not_a_dependency() -> None:
    (r,) = read_text(json.dumps(SQUEUE), source="squeue.json")
    assert r.ok and r.id == "2" and r.job.dependencies == []
    assert [(lim.group, lim.max_running) for lim in r.job.limits] == [("singleton/root/x", 1)]
    running = {rj.job: rj.limit_groups for rj in squeue_running(SQUEUE, source="squeue.json")}
    assert running == {"1": ["singleton/root/x"], "3": ["singleton/root/y"]}


def test_it_waits_while_a_job_of_its_name_runs_and_starts_once_none_does() -> None:
    jobs = [r.job for r in read_text(json.dumps(SQUEUE), source="squeue.json")]
    cluster = _cluster(SQUEUE)
    for engine in ("greedy", "cpsat"):
        d = place(jobs, cluster, Policy(engine=engine, plan=False))
        assert check(d, jobs, cluster) == [], engine
        (p,) = d.pending
        assert p.reasons[0].code == "THROTTLE" and p.reasons[0].details["group"] == "singleton/root/x"
    ended = copy.deepcopy(SQUEUE)
    ended["jobs"] = [j for j in ended["jobs"] if j["job_id"] != 1]  # job 1 (x) has ended
    d = place(jobs, _cluster(ended), Policy(engine="greedy", plan=False))
    assert [p.job for p in d.placements] == ["2"]


def test_of_two_waiting_singletons_of_one_name_one_starts() -> None:
    doc = copy.deepcopy(SQUEUE)
    doc["jobs"] = [j for j in doc["jobs"] if j["job_id"] != 1]
    twin = copy.deepcopy(next(j for j in doc["jobs"] if j["job_id"] == 2))
    twin["job_id"] = 4
    doc["jobs"].append(twin)
    jobs = [r.job for r in read_text(json.dumps(doc), source="squeue.json")]
    cluster = _cluster(doc)
    for engine in ("greedy", "cpsat"):
        d = place(jobs, cluster, Policy(engine=engine, plan=False))
        assert check(d, jobs, cluster) == [], engine
        assert len(d.placements) == 1 and len(d.pending) == 1, engine
