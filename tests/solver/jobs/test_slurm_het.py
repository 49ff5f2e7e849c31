"""Slurm heterogeneous jobs (``sbatch ... : ...``): one ``squeue --json`` record per component, read as one
job with a task group per component (``solver/jobs/formats/slurm.py``), placed whole or not at all."""

from __future__ import annotations

import json
from typing import Any

from placer.solver.jobs import read_text
from placer.topology import cluster_of, dgx_h100
from tests.solver.conftest import reason_codes


def _component(job_id: int, offset: int, gpus: int, **extra: Any) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "het_job_id": 6,
        "het_job_offset": offset,
        "het_job_id_set": "6-7",
        "name": "het",
        "job_state": "PENDING",
        "node_count": 1,
        "cpus": 1,
        "tres_per_node": f"gres:gpu:{gpus}",
        "user_name": "ana",
        **extra,
    }


def _read(*records: dict[str, Any]) -> list[Any]:
    doc = {"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "jobs": list(records)}
    return read_text(json.dumps(doc), source="squeue.json")


def test_components_are_one_job_with_a_task_group_each() -> None:
    (r,) = _read(_component(6, 0, 2, required_nodes="dgx-h100-2"), _component(7, 1, 4, time_limit=30))
    assert r.ok and r.id == "6" and r.job is not None
    assert [(t.name, t.count, t.gpu.count) for t in r.job.tasks] == [("0", 1, 2), ("1", 1, 4)]  # type: ignore[union-attr]
    # -w stays with its component; the job's time limit is its longest component's.
    assert [len(t.required) for t in r.job.tasks] == [1, 0] and r.job.placement.required == []
    assert r.job.duration_s == 30 * 60 and r.job.labels["slurm_het_job_id"] == "6"


def test_a_refused_component_refuses_the_whole_job() -> None:
    (r,) = _read(_component(6, 0, 2), _component(7, 1, 4, required_nodes="gpu[1-"))
    assert not r.ok and r.id == "6" and r.job is None
    assert [e.path for e in r.errors] == ["jobs[1].required_nodes"]


def test_both_components_start_or_neither(solve) -> None:  # type: ignore[no-untyped-def]
    # Two DGX (8 GPUs each): 2 + 4 fit, each component on its own node or together; 8 + 10 cannot (10 is
    # more than a node has), and then neither component is placed.
    (fits,) = _read(_component(6, 0, 2), _component(7, 1, 4))
    d = solve([fits], cluster_of(dgx_h100(2)))
    ((placement,),) = [d.placements]
    assert sorted((r.task_group, len(r.gpus)) for r in placement.replicas) == [("0", 2), ("1", 4)]
    (too_big,) = _read(_component(6, 0, 8), _component(7, 1, 10))
    d = solve([too_big], cluster_of(dgx_h100(2)))
    assert d.placements == [] and reason_codes(d, "6")
