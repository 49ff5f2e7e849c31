"""A partition's QOS (``QOS=`` on the partition's line of ``slurm.conf``): its limits hold every job of the
partition, whatever the job's own QOS (Slurm's resource_limits: "Partition QOS limit" comes first in the
hierarchy), and the partition's running jobs count against them.

The jobs are the ones a live Slurm 22.05 printed (``squeue-22.05-options.json``: job ``a`` runs with 2
H100 in partition ``gpu``; ``excl``, ``resv`` and ``plain-a100`` wait for one GPU each), given QOS
``normal``; the QOS table is the captured ``sacctmgr show qos -P`` (``capped``: ``GrpTRES=gres/gpu=8``,
``small``: ``MaxTRES=gres/gpu=2``), with ``capped``'s limit lowered where a test needs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs import read_text
from placer.solver.jobs.formats.slurm import with_slurm_ranks
from placer.solver.jobs.model import GroupLimit, ReadResult
from placer.solver.policy import Policy
from placer.solver.reservations import load_reservations
from placer.topology import build_cluster
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.importers.slurm_partitions import parse_slurm_partitions
from placer.topology.importers.slurm_qos import (
    SlurmQos,
    parse_slurm_qos,
    with_partition_qos_groups,
    with_preemption_rules,
)
from placer.topology.load import inventory_from_input

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "slurm"
SQUEUE = REAL / "squeue-22.05-options.json"
QOS_TEXT = (REAL / "sacctmgr-show-qos-22.05.txt").read_text()
IDS = {j["name"]: str(j["job_id"]) for j in json.loads(SQUEUE.read_text())["jobs"]}


def _doc(**changes: Any) -> dict[str, Any]:
    """The captured jobs, each of QOS ``normal`` under account ``ml`` (the live run had no accounting), with
    ``changes`` (job name -> fields) applied."""
    doc = json.loads(SQUEUE.read_text())
    for raw in doc["jobs"]:
        raw.update({"qos": "normal", "account": "ml", **changes.get(raw["name"], {})})
    return doc  # type: ignore[no-any-return]


def _qos(text: str = QOS_TEXT) -> dict[str, SlurmQos]:
    return parse_slurm_qos(text, source="qos.txt")


def _pending(doc: dict[str, Any], partitions: str, qos: dict[str, SlurmQos]) -> dict[str, ReadResult]:
    parts = parse_slurm_partitions(partitions, source="partitions.txt")
    read = read_text(json.dumps(doc), source="squeue.json")
    return {r.id: r for r in with_slurm_ranks(read, partitions=parts, qos=None, qos_limits=qos)}


def test_a_partition_qos_gives_the_partitions_jobs_its_limits() -> None:
    read = _pending(_doc(), "PartitionName=gpu Nodes=gpu[01-03] QoS=capped\n", _qos())
    r = read[IDS["plain-a100"]]
    assert r.ok and r.job is not None
    assert r.job.limits == [GroupLimit(group="qos/capped", max_gpus=8)]  # the job's own QOS (normal) has none
    assert r.warnings == []  # read, so not "not read"


def test_a_partition_qos_missing_from_the_table_is_named() -> None:
    read = _pending(_doc(), "PartitionName=gpu Nodes=gpu[01-03] QoS=gone\n", _qos())
    r = read[IDS["plain-a100"]]
    assert r.ok and r.job is not None and r.job.limits == []
    assert [(w.code, "'gone'" in w.message and "not in the QOS table" in w.message) for w in r.warnings] == [
        ("unsupported", True)
    ]


def test_a_readers_warning_is_in_the_decision_where_the_job_is() -> None:
    # place() says what the reader read past on the job's own entry (placed or pending), as a note.
    read = _pending(_doc(), "PartitionName=gpu Nodes=gpu[01-03] QoS=gone\n", _qos())
    inventory = inventory_from_input(json.loads((REAL / "sinfo-22.05-options.json").read_text()), source="s")
    cluster = with_slurm_jobs(build_cluster(inventory), squeue_running(_doc(), source="squeue.json"))
    d = place(list(read.values()), cluster, Policy(engine="greedy", plan=False))
    entries = {p.job: p.notes for p in (*d.placements, *d.pending)}
    for job in (IDS["excl"], IDS["plain-a100"]):
        said = [n for n in entries[job] if n.startswith("warning: ")]
        assert len(said) == 1 and "'gone'" in said[0] and said[0].endswith("[unsupported]"), entries[job]


def test_the_partition_qos_per_job_limit_keeps_the_job_out_of_that_partition() -> None:
    # small lets one job have 2 GPUs (MaxTRES=gres/gpu=2): a 3-GPU job never starts in gpu (Slurm:
    # QOSMaxGRESPerJob); given maint too, it may run only there, and says why.
    doc = _doc(**{"plain-a100": {"tres_per_node": "gres:gpu:a100:3"}})
    parts = "PartitionName=gpu Nodes=gpu[01-03] QoS=small\n"
    r = _pending(doc, parts, _qos())[IDS["plain-a100"]]
    assert not r.ok and [e.code for e in r.errors][-1] == "limit"
    assert "QOSMaxGRESPerJob" in r.errors[-1].message and "partition gpu" in r.errors[-1].message
    doc["jobs"][[j["name"] for j in doc["jobs"]].index("plain-a100")]["partition"] = "maint,gpu"
    r = _pending(doc, "PartitionName=maint Nodes=gpu03\n" + parts, _qos())[IDS["plain-a100"]]
    assert r.ok and r.job is not None and r.job.limits == []
    assert any("runs only in maint" in w.message and "QOSMaxGRESPerJob" in w.message for w in r.warnings)


def test_both_qoses_setting_one_limit_is_said_and_both_are_kept() -> None:
    # Slurm takes GrpTRES from the partition QOS (the job QOS's under OverPartQOS); placer holds the job to
    # both groups, and says so.
    capped = next(line for line in QOS_TEXT.splitlines() if line.startswith("capped|"))
    text = QOS_TEXT + capped.replace("capped|", "part|", 1).replace("gres/gpu=8", "gres/gpu=4") + "\n"
    doc = _doc(**{"plain-a100": {"qos": "capped"}})
    r = _pending(doc, "PartitionName=gpu Nodes=gpu[01-03] QoS=part\n", _qos(text))[IDS["plain-a100"]]
    assert r.ok and r.job is not None
    assert sorted((lim.group, lim.max_gpus) for lim in r.job.limits) == [("qos/capped", 8), ("qos/part", 4)]
    (w,) = r.warnings
    assert "'part'" in w.message and "'capped'" in w.message and "GrpTRES=gres/gpu" in w.message
    # The partition QOS that is the job's own QOS adds its groups once.
    r = _pending(doc, "PartitionName=gpu Nodes=gpu[01-03] QoS=capped\n", _qos(text))[IDS["plain-a100"]]
    assert r.ok and r.job is not None and r.job.limits == [GroupLimit(group="qos/capped", max_gpus=8)]
    assert r.warnings == []


def test_a_job_that_may_start_outside_the_partition_qos_is_told_placer_holds_it_anyway() -> None:
    doc = _doc(**{"plain-a100": {"partition": "gpu,open"}})
    parts = "PartitionName=gpu Nodes=gpu[01-03] QoS=capped\nPartitionName=open Nodes=gpu[01-03]\n"
    r = _pending(doc, parts, _qos())[IDS["plain-a100"]]
    assert r.ok and r.job is not None and r.job.limits == [GroupLimit(group="qos/capped", max_gpus=8)]
    assert any("'open' has no QOS" in w.message for w in r.warnings), r.warnings
    r = _pending(_doc(), parts, _qos())[IDS["plain-a100"]]  # gpu alone: nothing to say
    assert r.ok and r.warnings == []


def test_running_jobs_count_against_their_partitions_qos() -> None:
    parts = parse_slurm_partitions("PartitionName=gpu Nodes=gpu[01-03] QoS=capped\n", source="p.txt")
    [a] = squeue_running(_doc(), source="squeue.json")
    assert a.limit_groups == ["singleton/root/a"]  # root's jobs named a: --dependency=singleton's group
    [counted] = with_partition_qos_groups([a], parts, _qos())
    assert counted.limit_groups == ["singleton/root/a", "qos/capped"]
    [again] = with_partition_qos_groups([counted], parts, _qos())  # a group is not counted twice
    assert again.limit_groups == ["singleton/root/a", "qos/capped"]
    other = parse_slurm_partitions("PartitionName=gpu Nodes=gpu[01-03]\n", source="p.txt")
    assert with_partition_qos_groups([a], other, _qos())[0].limit_groups == ["singleton/root/a"]


def test_on_the_captured_cluster_the_partition_qos_lets_one_more_gpu_start() -> None:
    # capped lowered to 3 GPUs as the partition QOS of gpu: job a holds 2 of them, so of excl and resv
    # (one GPU each, both placed without the limit) one starts and the other waits with THROTTLE naming
    # the partition QOS's group; both engines, and the checker holds each decision to it — the plan of
    # later (--begin 2030) too, which must count the job started now (planning once forgot placements).
    limited = _qos(QOS_TEXT.replace("gres/gpu=8", "gres/gpu=3"))
    parts_text = "PartitionName=gpu Nodes=gpu[01-03] QoS=capped\n"
    parts = parse_slurm_partitions(parts_text, source="p.txt")
    doc = _doc()
    running = with_preemption_rules(
        squeue_running(doc, source="squeue.json"), partitions=parts, qos=None, qos_limits=limited, source="s"
    )
    assert running[0].limit_groups == ["singleton/root/a", "qos/capped"]
    inventory = inventory_from_input(json.loads((REAL / "sinfo-22.05-options.json").read_text()), source="s")
    cluster = with_slurm_jobs(build_cluster(inventory), running)
    reservations = load_reservations(
        (REAL / "show-reservation-22.05.txt").read_text(), source="resv.txt", cluster=cluster
    )
    now = reservations[0].start
    items = list(_pending(doc, parts_text, limited).values())
    jobs = [r.job for r in items if r.ok and r.job is not None]
    refused = [r.id for r in items if not r.ok]
    for engine in ("greedy", "cpsat"):
        d = place(items, cluster, Policy(engine=engine), now=now, reservations=reservations)
        kw = {"now": now, "reservations": reservations, "rejected_ids": refused}
        assert check(d, jobs, cluster, **kw) == [], engine  # type: ignore[arg-type]
        placed = {p.job for p in d.placements}
        assert len(placed & {IDS["excl"], IDS["resv"]}) == 1, (engine, placed)
        throttled = [p for p in d.pending if p.reasons[0].code == "THROTTLE"]
        waiting = ({IDS["excl"], IDS["resv"]} - placed) | {IDS["plain-a100"]}  # plain-a100: no room anyway
        assert sorted(p.job for p in throttled) == sorted(waiting), engine
        details = throttled[0].reasons[0].details
        # Held: job a's 2 GPUs and the one started now (resv starts in its reservation's own phase first,
        # and counts as running by the time the rest is decided).
        held = details["gpus_held"] + details["gpus_started"]
        found_now = (details["group"], details["max_gpus"], held, details["gpus"])
        assert found_now == ("qos/capped", 3, 3, 1), engine
    # A decision made without the tables starts both: the checker, given them, names the group's limit.
    blind_items = read_text(json.dumps(doc), source="squeue.json")
    blind = place(blind_items, cluster, Policy(engine="greedy"), now=now, reservations=reservations)
    assert {IDS["excl"], IDS["resv"]} <= {p.job for p in blind.placements}
    found = check(blind, jobs, cluster, now=now, reservations=reservations, rejected_ids=refused)
    assert found and all(v.rule == "throttle" and "qos/capped" in v.message for v in found)


def test_under_preempt_qos_the_qos_ranks_and_the_partitions_still_rule() -> None:
    # The QOS table given for preemption (--slurm-qos) with the partitions: a job of QOS high ranks by its
    # QOS's level (1; its partition's PriorityTier 7 is not its rank), is held to its partition QOS's
    # limits, and a partition that is DOWN still starts nothing.
    doc = _doc(**{"plain-a100": {"qos": "high"}})
    parts = parse_slurm_partitions(
        "PartitionName=gpu Nodes=gpu[01-03] PriorityTier=7 QoS=capped\nPartitionName=off State=DOWN\n",
        source="partitions.txt",
    )
    read = {
        r.id: r
        for r in with_slurm_ranks(
            read_text(json.dumps(doc), source="squeue.json"), partitions=parts, qos=_qos(), qos_limits=None
        )
    }
    r = read[IDS["plain-a100"]]
    assert r.ok and r.job is not None
    assert r.job.priority == _qos()["high"].level == 1
    assert r.job.limits == [GroupLimit(group="qos/capped", max_gpus=8)]
    doc = _doc(**{"plain-a100": {"partition": "off"}})
    read = {
        r.id: r
        for r in with_slurm_ranks(
            read_text(json.dumps(doc), source="squeue.json"), partitions=parts, qos=_qos(), qos_limits=None
        )
    }
    r = read[IDS["plain-a100"]]
    assert not r.ok and r.errors[-1].code == "limit" and "PartitionDown" in r.errors[-1].message
    # A partition the table lacks is refused as with the tiers.
    doc = _doc(**{"plain-a100": {"partition": "nowhere"}})
    r = {
        x.id: x
        for x in with_slurm_ranks(read_text(json.dumps(doc), source="s"), partitions=parts, qos=_qos())
    }[IDS["plain-a100"]]
    assert not r.ok and r.errors[-1].code == "enum" and r.errors[-1].path.endswith("partition")
