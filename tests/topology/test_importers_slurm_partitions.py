"""Slurm's partitions -> who may preempt whom (``topology/importers/slurm_partitions.py``), on
``scontrol show partition`` as Slurm 22.05 prints it (captured from the live test Slurm) and on the
``slurm.conf`` lines the same settings come from."""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.topology import RunningJob
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_partitions import (
    parse_slurm_partitions,
    read_partitions_file,
    tier_of,
    with_partition_rules,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


def test_scontrol_show_partition_as_slurm_prints_it() -> None:
    parts = read_partitions_file(str(REAL / "show-partition-22.05.txt"))
    assert set(parts) == {"gpu", "scavenger"}
    gpu, scav = parts["gpu"], parts["scavenger"]
    # PriorityTier=10 PreemptMode=OFF GraceTime=0 / PriorityTier=1 PreemptMode=REQUEUE GraceTime=1
    assert (gpu.priority_tier, gpu.preempt_mode, gpu.grace_time_s, gpu.preemptible) == (10, "OFF", 0, False)
    assert (scav.priority_tier, scav.preempt_mode, scav.grace_time_s) == (1, "REQUEUE", 1)
    assert scav.preemptible


def test_slurm_conf_lines_with_defaults_and_the_global_mode() -> None:
    conf = """# slurm.conf
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
NodeName=gpu[01-04] CPUs=64 Gres=gpu:h100:8
PartitionName=DEFAULT GraceTime=120 Nodes=gpu[01-04]
PartitionName=prod PriorityTier=5 PreemptMode=off
PartitionName=spot PriorityTier=1
PartitionName=lab PriorityTier=1 PreemptMode=SUSPEND,GANG GraceTime=0
"""
    parts = parse_slurm_partitions(conf, source="slurm.conf")
    assert set(parts) == {"prod", "spot", "lab"}  # DEFAULT is not a partition
    assert (parts["prod"].preempt_mode, parts["prod"].grace_time_s) == ("OFF", 120)
    # spot names no mode: the global PreemptMode (CANCEL) is its mode, as Slurm reads it
    spot, lab = parts["spot"], parts["lab"]
    assert (spot.preempt_mode, spot.preemptible, spot.grace_time_s) == ("CANCEL", True, 120)
    # suspension is not an eviction placer can make: the job keeps its GPUs
    assert (lab.preempt_mode, lab.preemptible, lab.grace_time_s) == ("SUSPEND", False, 0)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("PartitionName=a PriorityTier=high", "PriorityTier 'high' is not a whole number"),
        ("PartitionName=a GraceTime=-5", "GraceTime '-5' is not a whole number"),
        ("PartitionName=a PriorityTier=²", "PriorityTier '²' is not a whole number"),
        ("PartitionName=a MaxNodes=²", "MaxNodes '²' is not a whole number or UNLIMITED"),
        ("PartitionName=a PreemptMode=evict", "PreemptMode 'evict' is not one of"),
        ("PartitionName=a\nPartitionName=a", "the partition is given twice"),
        ("NodeName=x CPUs=4", "no PartitionName= record"),
        ("PartitionName= PriorityTier=1", "PartitionName is empty"),
    ],
)
def test_bad_partitions_are_named(text: str, named: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_partitions(text, source="p.txt")
    assert named in str(e.value)
    assert "p.txt" in str(e.value)


def _running(job: str, partition: str, priority: int) -> RunningJob:
    return RunningJob(
        job=job,
        queue=partition,
        priority=priority,
        labels={"slurm_partition": partition},
        replicas=[{"node": "gpu01", "gpus": [0]}],
    )


def test_running_jobs_take_their_partitions_rules() -> None:
    parts = read_partitions_file(str(REAL / "show-partition-22.05.txt"))
    jobs = [_running("1", "gpu", 4294901759), _running("2", "scavenger", 4294901760)]
    prod, scav = with_partition_rules(jobs, parts, source="squeue.json")
    # The tier decides, not Slurm's priority number (scavenger's job has the larger one)
    assert (prod.priority, prod.preemptible, prod.grace_period_s) == (10, False, 0)
    assert (scav.priority, scav.preemptible, scav.grace_period_s) == (1, True, 1)
    assert scav.labels["slurm_priority"] == "4294901760"
    assert scav.labels["slurm_preempt_mode"] == "REQUEUE"


def test_a_job_in_an_unknown_partition_is_named() -> None:
    parts = read_partitions_file(str(REAL / "show-partition-22.05.txt"))
    with pytest.raises(TopologyError) as e:
        with_partition_rules([_running("7", "debug", 1)], parts, source="squeue.json")
    assert "job 7" in str(e.value)
    assert "'debug'" in str(e.value)
    # A pending job listed in several partitions ranks by the highest tier among them
    assert tier_of("scavenger,gpu", parts, item="job 8") == 10


def test_what_decides_whether_a_partition_starts_a_job() -> None:
    text = (REAL / "show-partition-22.05.txt").read_text()
    gpu = parse_slurm_partitions(text, source="p.txt")["gpu"]
    # As Slurm 22.05 printed them: up, cores not shared (OverSubscribe=NO is not whole nodes), no limits.
    assert (gpu.state, gpu.exclusive, gpu.max_time_min, gpu.max_nodes, gpu.min_nodes) == (
        "UP",
        False,
        None,
        None,
        0,
    )
    changed = (
        text.replace("State=UP", "State=DOWN", 1)
        .replace("MaxTime=UNLIMITED", "MaxTime=1-00:00:00", 1)
        .replace("OverSubscribe=NO", "OverSubscribe=EXCLUSIVE", 1)
        .replace("MaxNodes=UNLIMITED", "MaxNodes=4", 1)
        .replace("MinNodes=0", "MinNodes=2", 1)
    )
    gpu = parse_slurm_partitions(changed, source="p.txt")["gpu"]
    assert (gpu.state, gpu.exclusive, gpu.max_time_min, gpu.max_nodes, gpu.min_nodes) == (
        "DOWN",
        True,
        1440,
        4,
        2,
    )
    assert "PartitionDown" in (gpu.refuses(2, 60) or "")
    up = parse_slurm_partitions(changed.replace("State=DOWN", "State=DRAIN"), source="p.txt")["gpu"]
    assert up.refuses(2, 1440) is None  # DRAIN still starts what is queued; 1440 minutes is MaxTime
    assert "PartitionTimeLimit" in (up.refuses(2, 1441) or "")
    assert "PartitionNodeLimit" in (up.refuses(5, None) or "") and "PartitionNodeLimit" in (
        up.refuses(1, None) or ""
    )


@pytest.mark.parametrize(("key", "value"), [("State", "SLEEPY"), ("MaxTime", "soon"), ("MaxNodes", "many")])
def test_a_start_rule_slurm_would_not_print_is_named(key: str, value: str) -> None:
    with pytest.raises(TopologyError, match=key):
        parse_slurm_partitions(f"PartitionName=gpu {key}={value}\n", source="p.txt")
