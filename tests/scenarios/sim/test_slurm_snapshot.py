"""``placer simulate`` from a live Slurm snapshot: the node file (``sinfo --json``), the running jobs by
their Slurm ids (``cluster.slurm_jobs``: ``squeue --json``, with ``running: keep``) and the pending ones
as the workload (``workload.file``: the same ``squeue --json``), optionally Slurm's partitions.

The snapshot is what a live Slurm 22.05 printed (``tests/topology/live_slurm.py``): on gpu01, job a holds 2
H100 until 02:24:36 and b 3 until 03:54:36 (UTC); f (pending, no time limit) asks all 8 H100 of gpu01 and
a core (gpu01 has 2 cores, a and b hold one each). So f can start only when both have ended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scenarios.sim.conftest import simulate_text

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"


def _scenario(tmp_path: Path, extra: str = "", scavenger: bool = False) -> str:
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    if scavenger:
        for j in doc["jobs"]:
            if j["name"] in ("a", "b"):
                j["partition"] = "scavenger"
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    return _snapshot(
        REAL / "sinfo-squeue-pair-22.05.json", tmp_path / "squeue.json", "2026-11-27T01:55:00Z", "3h", extra
    )


def _snapshot(nodes: Path, squeue: Path, start: str, horizon: str, extra: str) -> str:
    """A scenario of a Slurm snapshot: the ``nodes`` file, the running jobs of ``squeue`` kept and its
    pending ones the workload, with ``extra`` cluster lines."""
    return f"""
name: slurm-snapshot
start: {start}
horizon: {horizon}
interval: 5m
policy: {{engine: greedy, plan: false}}
cluster:
  file: {nodes}
  slurm_jobs: {squeue}
  running: keep
{extra}workload:
  file: {squeue}
"""


def test_the_pending_slurm_job_starts_when_the_slurm_jobs_holding_its_node_end(tmp_path: Path) -> None:
    run = simulate_text(_scenario(tmp_path))
    f = run.job("5")
    # b ends at 03:54:36, 1 h 59 min 36 s after the start: the next interval is 2 h (7,200 s)
    assert f["wait_s"] == pytest.approx(7200)  # submitted at the start
    # The running Slurm jobs are there by their ids: a, b, d end at their time limits; c has none
    states = dict(zip(run.result.jobs["job"], run.result.jobs["state"], strict=True))
    assert states == {"1": "done", "2": "done", "3": "running", "4": "done", "5": "running"}


def test_with_partitions_the_scavenger_jobs_are_evicted_at_once(tmp_path: Path) -> None:
    parts = f"  slurm_partitions: {REAL / 'show-partition-22.05.txt'}\n"
    run = simulate_text(_scenario(tmp_path, parts, scavenger=True))
    # decided at the start; it starts once the victims have had scavenger's GraceTime (1 s)
    assert run.job("5")["wait_s"] == pytest.approx(1)
    (first,) = [d for t, d in run.decisions.items() if t == 0]
    assert sorted(e.job for e in first.preemptions) == ["1", "2"]


def test_a_snapshot_file_that_is_not_slurms_is_named(tmp_path: Path) -> None:
    from placer.scenarios.load import ScenarioError

    text = _scenario(tmp_path)
    (tmp_path / "squeue.json").write_text("[]")
    with pytest.raises(ScenarioError) as e:
        simulate_text(text)
    (issue,) = e.value.issues
    assert (issue.code, issue.path) == ("format", "cluster.slurm_jobs")
    assert "neither squeue --json nor scontrol show job" in issue.message


def test_with_the_qos_table_the_low_qos_jobs_are_evicted_at_once(tmp_path: Path) -> None:
    # The same snapshot under preempt/qos: a and b run in QOS low (high lists it; requeue after 1 s),
    # f waits in QOS high. Slurm without accounting printed QOS=(null): the snapshot is given QOSes.
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        j["qos"] = {"a": "low", "b": "low", "f": "high"}.get(j["name"], "normal")
    text = _scenario(tmp_path, f"  slurm_qos: {REAL / 'sacctmgr-show-qos-22.05.txt'}\n")
    (tmp_path / "squeue.json").write_text(json.dumps(doc))  # _scenario wrote the snapshot as captured
    run = simulate_text(text)
    assert run.job("5")["wait_s"] == pytest.approx(1)  # low's GraceTime
    (first,) = [d for t, d in run.decisions.items() if t == 0]
    assert sorted(e.job for e in first.preemptions) == ["1", "2"]


def test_with_the_qos_table_partitions_decide_no_preemption(tmp_path: Path) -> None:
    # a and b run in partition scavenger (PreemptMode=REQUEUE, a lower tier than f's gpu), which evicts
    # them at once under preempt/partition_prio (above). Under preempt/qos the QOSes decide: all three of
    # QOS normal, nothing is evicted and f waits for b's end, as without tables; the partitions still say
    # where jobs may start (both UP, no partition QOS here).
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        j["qos"] = "normal"
        if j["name"] in ("a", "b"):
            j["partition"] = "scavenger"
    extra = f"  slurm_qos: {REAL / 'sacctmgr-show-qos-22.05.txt'}\n"
    extra += f"  slurm_partitions: {REAL / 'show-partition-22.05.txt'}\n"
    text = _scenario(tmp_path, extra)
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    run = simulate_text(text)
    assert run.job("5")["wait_s"] == pytest.approx(7200)
    assert all(not d.preemptions for d in run.decisions.values())


def test_qos_limits_alone_hold_the_pending_job_while_its_qos_is_full(tmp_path: Path) -> None:
    # c (no time limit) and f run in QOS one, which lets one job run (GrpJobs=1), read for its limits
    # alone (the cluster preempts by partition, or not at all): f never starts, where without the table
    # it starts once a and b end (the first test).
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        j["qos"] = "one" if j["name"] in ("c", "f") else "normal"
    head = "Name|Priority|GraceTime|Preempt|PreemptExemptTime|PreemptMode|Flags|GrpTRES|GrpJobs"
    (tmp_path / "qos.txt").write_text(
        f"{head}\nnormal|0|00:00:00|||cluster|||\none|0|00:00:00|||cluster|||1\n"
    )
    text = _scenario(tmp_path, f"  slurm_qos_limits: {tmp_path / 'qos.txt'}\n")
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    run = simulate_text(text)
    states = dict(zip(run.result.jobs["job"], run.result.jobs["state"], strict=True))
    assert states["5"] == "pending" and states["3"] == "running"
    codes = {r.code for d in run.decisions.values() for p in d.pending if p.job == "5" for r in p.reasons}
    assert codes == {"THROTTLE"}


def test_qos_limits_and_the_qos_table_together_are_a_conflict(tmp_path: Path) -> None:
    from placer.scenarios.load import ScenarioError

    extra = f"  slurm_qos: {REAL / 'sacctmgr-show-qos-22.05.txt'}\n"
    extra += f"  slurm_qos_limits: {REAL / 'sacctmgr-show-qos-22.05.txt'}\n"
    with pytest.raises(ScenarioError) as e:
        simulate_text(_scenario(tmp_path, extra))
    assert "slurm_qos holds jobs to the limits too" in str(e.value)


def test_association_limits_hold_the_pending_job_while_its_account_is_full(tmp_path: Path) -> None:
    # c (no time limit) and f run under account one, which lets one job run (GrpJobs=1): f never starts.
    doc = json.loads((REAL / "squeue-22.05.json").read_text())
    for j in doc["jobs"]:
        j["account"] = "one" if j["name"] in ("c", "f") else "other"
    tree = "\n".join(
        [
            "Cluster|Account|User|Partition|GrpJobs|GrpTRES|MaxJobs",
            "placer|root|||||",
            "placer| one|||1||",
            "placer|  one|root||||",
            "placer| other||||||",
            "placer|  other|root||||",
        ]
    )
    (tmp_path / "assoc.txt").write_text(tree + "\n")
    text = _scenario(tmp_path, f"  slurm_assoc: {tmp_path / 'assoc.txt'}\n")
    (tmp_path / "squeue.json").write_text(json.dumps(doc))
    run = simulate_text(text)
    states = dict(zip(run.result.jobs["job"], run.result.jobs["state"], strict=True))
    assert states["5"] == "pending" and states["3"] == "running"
    reasons = [r for d in run.decisions.values() for p in d.pending if p.job == "5" for r in p.reasons]
    assert {(r.code, r.details["group"]) for r in reasons} == {("THROTTLE", "assoc/one")}


def _licences_scenario(extra: str) -> str:
    """The licences snapshot (``start_licenses``: a runs holding 3 matlab seats with no time limit; p asks
    matlab:2,ansys and waits in Slurm for licences; q asks ansys:2, held) with ``extra`` cluster lines."""
    squeue = REAL / "squeue-22.05-licenses.json"
    return _snapshot(REAL / "sinfo-22.05-licenses.json", squeue, "2026-11-29T03:00:00Z", "1h", extra)


@pytest.mark.parametrize(
    ("extra", "started"),
    [
        (f"  slurm_licenses: {REAL / 'show-licenses-22.05.txt'}\n", {"3"}),  # Slurm's 4 matlab: p waits
        ("", set()),  # no seats without the table: both wait
        ("  licenses: {matlab: 5, ansys: 3}\n", {"2", "3"}),  # 3 + 2 <= 5 matlab, 1 + 2 <= 3 ansys
    ],
)
def test_licences_hold_the_pending_slurm_jobs(extra: str, started: set[str]) -> None:
    run = simulate_text(_licences_scenario(extra))
    states = dict(zip(run.result.jobs["job"], run.result.jobs["state"], strict=True))
    assert {j for j in ("2", "3") if states[j] == "running"} == started
    assert states["1"] == "running"  # a: no time limit


def test_licences_given_twice_are_refused_naming_both() -> None:
    from placer.scenarios.load import ScenarioError

    both = f"  licenses: {{matlab: 5}}\n  slurm_licenses: {REAL / 'show-licenses-22.05.txt'}\n"
    with pytest.raises(ScenarioError) as e:
        simulate_text(_licences_scenario(both))
    assert "licenses or slurm_licenses" in str(e.value)
