"""Kubernetes' runtime caps read as a job's ``duration_s`` (the time it holds its resources at most, as
Slurm's time limit is read), and running pods' as their expected end, so that planning and backfill work
on a Kubernetes cluster as on a Slurm one. Fields from the API reference: a Pod's and a batch/v1 Job's
``spec.activeDeadlineSeconds`` (counted from ``status.startTime``), a Kueue Workload's
``spec.maximumExecutionTimeSeconds`` and Kueue's ``kueue.x-k8s.io/max-exec-time-seconds`` label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from placer.cli import main
from placer.solver.jobs.formats.kubernetes_pods import read_pod
from placer.solver.jobs.formats.kubernetes_workloads import MAX_EXEC_TIME, read_workload
from placer.topology.importers.kubernetes import parse_kubernetes

START = "2025-03-01T12:00:00Z"


def _pod(name: str, gpus: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
            **spec,
        },
    }


def test_a_pods_active_deadline_is_its_duration_and_a_bad_one_is_refused() -> None:
    r = read_pod(_pod("p", 1, activeDeadlineSeconds=3600), "", "p.json")
    assert r.ok and r.job is not None and r.job.duration_s == 3600
    assert read_pod(_pod("p", 1), "", "p.json").job.duration_s is None  # type: ignore[union-attr]
    bad = read_pod(_pod("p", 1, activeDeadlineSeconds=0), "", "p.json")
    assert [(e.code, e.path) for e in bad.errors] == [("range", "spec.activeDeadlineSeconds")]


def _job(**kw: Any) -> dict[str, Any]:
    labels = kw.pop("labels", {})
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "t", "namespace": "ml", "labels": labels},
        "spec": {"parallelism": 2, "template": {"spec": _pod("x", 8)["spec"]}, **kw},
    }


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (_job(activeDeadlineSeconds=7200), 7200),
        (_job(labels={MAX_EXEC_TIME: "3600"}), 3600),
        (_job(activeDeadlineSeconds=7200, labels={MAX_EXEC_TIME: "3600"}), 3600),  # the least of the caps
        (_job(), None),
    ],
)
def test_a_jobs_runtime_is_the_least_of_its_caps(raw: dict[str, Any], want: int | None) -> None:
    [r] = read_workload(raw, "", "j.json")
    assert r.ok and r.job is not None and r.job.duration_s == want


def test_a_workloads_maximum_execution_time_and_a_bad_label() -> None:
    pod_sets = [{"name": "main", "count": 1, "template": {"spec": _pod("x", 1)["spec"]}}]
    wl = {**_job(), "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload"}
    wl["spec"] = {"maximumExecutionTimeSeconds": 1800, "podSets": pod_sets}
    [r] = read_workload(wl, "", "w.json")
    assert r.ok and r.job is not None and r.job.duration_s == 1800
    [bad] = read_workload(_job(labels={MAX_EXEC_TIME: "an hour"}), "", "j.json")
    assert [(e.code, e.path) for e in bad.errors] == [("range", f"metadata.labels.{MAX_EXEC_TIME}")]


def _running(name: str, node: str, **spec: Any) -> dict[str, Any]:
    pod = _pod(name, 8, nodeName=node, **spec)
    pod["status"] = {"phase": "Running", "startTime": START}
    return pod


def _nodes(*names: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}},
                "status": {
                    "allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
            for n in names
        ],
    }


def test_a_running_pods_deadline_is_its_expected_end() -> None:
    pods = {"kind": "List", "items": [_running("a", "n1", activeDeadlineSeconds=3600), _running("b", "n2")]}
    inv = parse_kubernetes(_nodes("n1", "n2"), source="n.json", pods=pods)
    ends = {j.job: j.expected_end for j in inv.running}
    assert ends["ml/a"] is not None and ends["ml/a"].isoformat() == "2025-03-01T13:00:00+00:00"
    assert ends["ml/b"] is None  # no deadline: no known end


def test_a_job_waits_for_the_running_pods_deadline_and_is_planned_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One 8-GPU node, busy with a pod killed at 13:00 at the latest. A pending 8-GPU pod that may run an
    # hour is planned to start at 13:00 — on Kubernetes as on Slurm, where the time limit says the same.
    nodes, pods, jobs = tmp_path / "nodes.json", tmp_path / "pods.json", tmp_path / "jobs.json"
    nodes.write_text(json.dumps(_nodes("n1")))
    pods.write_text(json.dumps({"kind": "List", "items": [_running("a", "n1", activeDeadlineSeconds=3600)]}))
    jobs.write_text(json.dumps(_pod("next", 8, activeDeadlineSeconds=3600)))
    argv = ["place", "--cluster", str(nodes), "--pods", str(pods), "--jobs", str(jobs)]
    assert main([*argv, "--now", "2025-03-01T12:10:00Z", "--engine", "greedy", "--json"]) == 0
    decision = json.loads(capsys.readouterr().out)
    assert [p["job"] for p in decision["pending"]] == ["ml/next"]
    [hold] = [h for h in decision["reservations"] if h["kind"] == "plan"]
    assert hold["start"].startswith("2025-03-01T13:00:00") and "n1" in json.dumps(hold)
