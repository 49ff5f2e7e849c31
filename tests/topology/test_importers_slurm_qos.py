"""Slurm's QOS table (``sacctmgr show qos -P``) as placer's one preemption order
(``topology/importers/slurm_qos.py``). The real file is what Slurm 22.05's ``sacctmgr`` printed for the
live test's QOSes (``tests/topology/live_slurm.QOS``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placer.solver.jobs import read_text
from placer.solver.jobs.formats.slurm import with_qos_levels, with_qos_limits
from placer.topology import RunningJob
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_qos import (
    parse_slurm_qos,
    qos_limits,
    read_qos_file,
    with_qos_groups,
    with_qos_rules,
)

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
HEAD = "Name|Priority|GraceTime|Preempt|PreemptExemptTime|PreemptMode|Flags"


def _table(*rows: str, mode: str | None = None) -> dict[str, tuple[int, bool, str, int]]:
    table = parse_slurm_qos("\n".join([HEAD, *rows]) + "\n", source="qos.txt", cluster_mode=mode)
    return {q.name: (q.level, q.preemptible, q.preempt_mode, q.grace_time_s) for q in table.values()}


def test_sacctmgr_as_slurm_prints_it() -> None:
    table = read_qos_file(str(REAL / "sacctmgr-show-qos-22.05.txt"))
    got = {
        q.name: (q.level, q.preemptible, q.preempt_mode, q.grace_time_s, q.priority) for q in table.values()
    }
    assert got == {
        "normal": (0, False, "CLUSTER", 0, 0),
        "low": (0, True, "REQUEUE", 1, 10),
        "high": (1, False, "CLUSTER", 0, 100),
        "capped": (0, False, "CLUSTER", 0, 0),
        "small": (0, False, "CLUSTER", 0, 0),
    }
    # capped's GrpTRES=gres/gpu=8 (live_slurm.CAPPED): its jobs hold 8 GPUs at most, together; small's
    # MaxTRES=gres/gpu=2 (live_slurm.SMALL): one job of it may have 2.
    assert qos_limits(table["capped"], "root", "ml") == [("qos/capped", None, 8)]
    assert (table["small"].job_gpus, qos_limits(table["small"], "root", "ml")) == (2, [])
    assert [qos_limits(table[n], "root", "ml") for n in ("normal", "low", "high")] == [[], [], []]


LIMITS = HEAD + "|GrpTRES|GrpJobs|MaxTRES|MaxTRESPU|MaxJobsPU|MaxTRESPA|MaxJobsPA"


def test_qos_limits_become_groups_per_qos_user_and_account() -> None:
    text = LIMITS + "\ngpu|0|00:00:00|||cluster||cpu=64,gres/gpu=16,mem=500G|10||gres/gpu=4|2|gres/gpu=8|\n"
    (q,) = parse_slurm_qos(text, source="qos.txt").values()
    assert (q.grp_gpus, q.grp_jobs, q.user_gpus, q.user_jobs, q.account_gpus, q.account_jobs) == (
        16,
        10,
        4,
        2,
        8,
        None,
    )
    assert qos_limits(q, "ana", "ml") == [
        ("qos/gpu", 10, 16),
        ("qos/gpu/user/ana", 2, 4),
        ("qos/gpu/account/ml", None, 8),
    ]
    # What placer does not model is named, not dropped: CPU and memory of GrpTRES.
    assert q.unmodelled == ("GrpTRES cpu=64", "GrpTRES mem=500G")


def test_per_job_gpu_limits_are_read_and_a_typed_gpu_limit_is_named_as_not_modelled() -> None:
    text = LIMITS + "\ngpu|0|00:00:00|||cluster||gres/gpu:a100=4||gres/gpu=8||||\n"
    (q,) = parse_slurm_qos(text, source="qos.txt").values()
    assert q.grp_gpus is None and q.job_gpus == 8 and q.unmodelled == ("GrpTRES gres/gpu:a100=4",)


@pytest.mark.parametrize(
    ("cells", "said"),
    [
        ("gres/gpu=many||||||", "GrpTRES gres/gpu='many' is not a whole number"),
        ("|ten|||||", "GrpJobs 'ten' is not a whole number"),
        ("|³|||||", "GrpJobs '³' is not a whole number"),
        ("gres/gpu=²||||||", "GrpTRES gres/gpu='²' is not a whole number"),
        ("gpu16||||||", "is not a TRES list"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_qos_and_column(cells: str, said: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_qos(LIMITS + "\ngpu|0|00:00:00|||cluster||" + cells + "\n", source="qos.txt")
    assert "line 2 (QOS gpu)" in str(e.value) and said in str(e.value)


def test_pending_and_running_jobs_of_a_limited_qos_carry_its_groups() -> None:
    text = LIMITS + "\ngpu|0|00:00:00|||cluster||gres/gpu=16,cpu=8||||||2\n"
    table = parse_slurm_qos(text, source="qos.txt")
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "jobs": [
            {
                "job_id": 9,
                "job_state": "PENDING",
                "qos": "gpu",
                "user_name": "ana",
                "account": "ml",
                "node_count": 1,
                "cpus": 1,
                "memory_per_cpu": 100,  # DefMemPerCPU, as the test Slurm prints it
            }
        ],
    }
    (r,) = with_qos_levels(read_text(json.dumps(doc), source="q.json"), table)
    assert [(lim.group, lim.max_running, lim.max_gpus) for lim in r.job.limits] == [
        ("qos/gpu", None, 16),
        ("qos/gpu/account/ml", 2, None),
    ]
    (w,) = r.warnings
    assert w.code == "unsupported" and "GrpTRES cpu=8" in w.message
    labels = {"slurm_qos": "gpu", "slurm_user": "ana", "slurm_account": "ml"}
    rj = RunningJob(job="7", labels=labels, replicas=[{"node": "n", "gpus": [0]}])
    (ran,) = with_qos_rules([rj], table, source="q.json")
    assert ran.limit_groups == ["qos/gpu", "qos/gpu/account/ml"]


def test_parsable_with_a_trailing_bar_reads_the_same() -> None:
    text = (REAL / "sacctmgr-show-qos-22.05.txt").read_text()
    barred = "".join(line + "|\n" for line in text.splitlines())
    assert parse_slurm_qos(barred, source="q") == parse_slurm_qos(text, source="q")


def test_a_preempted_qos_with_the_clusters_mode_needs_that_mode() -> None:
    rows = ("normal|0|00:00:00|scavenger||cluster|", "scavenger|0|00:02:00|||cluster|")
    with pytest.raises(TopologyError) as e:
        _table(*rows)
    assert "line 3 (QOS scavenger)" in str(e.value) and "--slurm-preempt-mode" in str(e.value)
    assert _table(*rows, mode="REQUEUE")["scavenger"] == (0, True, "REQUEUE", 120)
    assert _table(*rows, mode="CANCEL")["scavenger"] == (0, True, "CANCEL", 120)
    # Suspended jobs keep their GPUs: placer does not count them as preemptible.
    assert _table(*rows, mode="SUSPEND,GANG")["scavenger"][1] is False
    assert _table(*rows, mode="OFF")["scavenger"][1] is False


def test_levels_follow_the_preempt_lists() -> None:
    got = _table(
        "high|100|00:00:00|normal,low||cluster|",
        "normal|50|00:00:00|low||requeue|",
        "low|10|00:00:30|||cancel|",
    )
    assert got == {
        "high": (2, False, "CLUSTER", 0),
        "normal": (1, True, "REQUEUE", 0),
        "low": (0, True, "CANCEL", 30),
    }


@pytest.mark.parametrize(
    ("rows", "named"),
    [
        # Two preemptors at level 1, each of another victim: one order would let each take the other's.
        (
            (
                "interactive|0|0:00|low||cluster|",
                "batch|0|0:00|scavenger||cluster|",
                "low|0|0:00|||requeue|",
                "scavenger|0|0:00|||requeue|",
            ),
            "QOS 'interactive' (level 1) ranks above preemptible QOS 'scavenger'",
        ),
        # Slurm's Preempt is not transitive: high may not take low's jobs because normal may.
        (
            ("high|0|0:00|normal||cluster|", "normal|0|0:00|low||requeue|", "low|0|0:00|||requeue|"),
            "QOS 'high' (level 2) ranks above preemptible QOS 'low'",
        ),
        (("a|0|0:00|a||requeue|",), "the QOS lists itself in Preempt"),
        (("a|0|0:00|b||requeue|", "b|0|0:00|a||requeue|"), "Preempt makes a cycle (a -> b -> a)"),
        (("a|0|0:00|gold||requeue|",), "Preempt names QOS 'gold', which is not in the table"),
        (("a|0|soon|||requeue|",), "GraceTime 'soon' is not [D-]HH:MM:SS"),
        (("a|high|0:00|||requeue|",), "Priority 'high' is not a whole number"),
        # A digit to str.isdigit that int() refuses (the hostile-input fuzz found the traceback).
        (("a|²|0:00|||requeue|",), "Priority '²' is not a whole number"),
        (("a|0|0:00|||sometimes|",), "PreemptMode 'sometimes' is not one of"),
        (("a|0|0:00|||requeue",), "line 2: 6 fields where the header has 7"),
        (("a|0|0:00|||requeue|", "a|0|0:00|||off|"), "line 3 (QOS a): the QOS is given twice"),
        (("|0|0:00|||requeue|",), "Name is empty"),
    ],
)
def test_what_cannot_be_read_or_said_is_named(rows: tuple[str, ...], named: str) -> None:
    with pytest.raises(TopologyError) as e:
        _table(*rows)
    assert named in str(e.value)
    assert "qos.txt" in str(e.value)


@pytest.mark.parametrize(
    ("text", "named"),
    [("", "no QOS"), ("Name|Priority\nnormal|0\n", "the header names no Preempt, PreemptMode column")],
)
def test_a_document_that_is_no_qos_table_is_named(text: str, named: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_qos(text, source="qos.txt")
    assert named in str(e.value)


def _running(job: str, qos: str | None, priority: int) -> RunningJob:
    labels = {"slurm_qos": qos} if qos is not None else {}
    return RunningJob(job=job, priority=priority, labels=labels, replicas=[{"node": "gpu01", "gpus": [0]}])


def test_running_jobs_take_their_qos_rules() -> None:
    table = read_qos_file(str(REAL / "sacctmgr-show-qos-22.05.txt"))
    lo, hi = with_qos_rules(
        [_running("1", "low", 4294901760), _running("2", "high", 7)], table, source="jobs"
    )
    # The level decides, not Slurm's priority number (lo has the larger one)
    assert (lo.priority, lo.preemptible, lo.grace_period_s) == (0, True, 1)
    assert (hi.priority, hi.preemptible, hi.grace_period_s) == (1, False, 0)
    assert lo.labels["slurm_priority"] == "4294901760" and lo.labels["slurm_qos_priority"] == "10"
    assert lo.labels["slurm_preempt_mode"] == "REQUEUE"


def test_a_running_job_of_an_unknown_or_no_qos_is_named() -> None:
    table = read_qos_file(str(REAL / "sacctmgr-show-qos-22.05.txt"))
    with pytest.raises(TopologyError) as e:
        with_qos_rules([_running("7", "gold", 1), _running("8", None, 1)], table, source="jobs.txt")
    assert "job 7: QOS 'gold' is not among the QOSes read" in str(e.value)
    assert "job 8: it names no QOS" in str(e.value)


def test_pending_jobs_rank_by_their_qos_level() -> None:
    table = read_qos_file(str(REAL / "sacctmgr-show-qos-22.05.txt"))
    text = (REAL / "show-job-pending-22.05.txt").read_text()
    plain = [r for r in read_text(text, source="jobs.txt") if r.ok]
    assert [r.ok for r in with_qos_levels(read_text(text, source="jobs.txt"), table)] == [
        False,
        False,
    ]  # (null)
    high = read_text(text.replace("QOS=(null)", "QOS=high"), source="jobs.txt")
    gold = read_text(text.replace("QOS=(null)", "QOS=gold"), source="jobs.txt")
    ranked = [r for r in with_qos_levels(high, table) if r.ok]
    assert len(plain) == len(ranked) == 2
    assert [r.job.priority for r in ranked] == [1, 1]  # type: ignore[union-attr]
    assert [r.job.labels["slurm_priority"] for r in ranked] == [str(r.job.priority) for r in plain]  # type: ignore[union-attr]
    refused = with_qos_levels(gold, table)[0]
    assert not refused.ok and refused.errors[-1].path.endswith(".qos")
    assert "QOS 'gold' is not among the QOSes read" in refused.errors[-1].message


def test_the_mode_flag_alone_is_a_usage_error(tmp_path: Path) -> None:
    nodes = Path(__file__).resolve().parents[2] / "examples" / "importers" / "slurm_nodes.txt"
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(nodes)]
    cmd += ["--jobs", str(REAL / "show-job-pending-22.05.txt")]
    r = subprocess.run([*cmd, "--slurm-preempt-mode", "REQUEUE"], capture_output=True, text=True)
    assert r.returncode == 2 and "--slurm-preempt-mode goes with --slurm-qos" in r.stderr
    bad = tmp_path / "qos.txt"
    bad.write_text(HEAD + "\na|0|0:00|a||requeue|\n")
    r = subprocess.run([*cmd, "--slurm-qos", str(bad)], capture_output=True, text=True)
    assert r.returncode == 1 and "the QOS lists itself in Preempt" in r.stderr  # bad content, as elsewhere


def test_read_for_its_limits_alone_a_table_needs_no_preemption_order() -> None:
    # scavenger may be preempted with the cluster's mode, unknown here, and interactive and batch each
    # preempt their own victim: read for preemption this is refused twice; for limits it is read.
    def row(name: str, preempt: str, mode: str, grp_tres: str = "", max_jobs_pu: str = "") -> str:
        return "|".join(
            [name, "0", "00:00:00", preempt, "", mode, "", grp_tres, "", "", "", max_jobs_pu, "", ""]
        )

    rows = [
        row("interactive", "low", "cluster", grp_tres="gres/gpu=4"),
        row("batch", "scavenger", "cluster", max_jobs_pu="2"),
        row("low", "", "requeue"),
        row("scavenger", "", "cluster"),
    ]
    text = "\n".join([LIMITS, *rows]) + "\n"
    with pytest.raises(TopologyError):
        parse_slurm_qos(text, source="qos.txt")
    table = parse_slurm_qos(text, source="qos.txt", limits_only=True)
    assert {q.name: (q.level, q.preemptible, q.grp_gpus) for q in table.values()} == {
        "interactive": (0, False, 4),
        "batch": (0, False, None),
        "low": (0, False, None),
        "scavenger": (0, False, None),
    }
    assert qos_limits(table["batch"], "ana", "ml") == [("qos/batch/user/ana", 2, None)]


def test_running_jobs_get_their_qos_groups_and_keep_their_rank() -> None:
    table = parse_slurm_qos(
        LIMITS + "\ngpu|0|00:00:00|||cluster||gres/gpu=16||||||\n", source="q", limits_only=True
    )
    labels = {"slurm_qos": "gpu", "slurm_user": "ana", "slurm_account": "ml"}
    rj = RunningJob(job="7", priority=5, labels=labels, replicas=[{"node": "n", "gpus": [0]}])
    (ran,) = with_qos_groups([rj], table, source="q")
    assert ran.limit_groups == ["qos/gpu"] and ran.priority == 5 and ran.preemptible is None
    unknown = rj.model_copy(update={"labels": {**labels, "slurm_qos": "other"}})
    with pytest.raises(TopologyError) as e:
        with_qos_groups([unknown], table, source="q")
    assert "job 7" in str(e.value) and "'other' is not among the QOSes read" in str(e.value)


def test_a_job_asking_more_gpus_than_its_qos_lets_one_job_have_is_rejected() -> None:
    text = LIMITS + "\ngpu|0|00:00:00|||cluster||||gres/gpu=4||||\n"
    table = parse_slurm_qos(text, source="qos.txt", limits_only=True)
    doc = {
        "meta": {"plugin": {"type": "openapi/v0.0.38"}},
        "jobs": [
            {
                "job_id": n,
                "job_state": "PENDING",
                "qos": "gpu",
                "node_count": 1,
                "cpus": 1,
                "tres_per_node": f"gres:gpu:{g}",
            }
            for n, g in ((1, 4), (2, 8))
        ],
    }
    fits, over = with_qos_limits(read_text(json.dumps(doc), source="q.json"), table)
    assert fits.ok
    (e,) = over.errors
    assert (e.code, e.path) == ("limit", "jobs[1].qos") and "QOSMaxGRESPerJob" in e.message
