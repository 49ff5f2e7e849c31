"""placer against a live Slurm with accounting and ``PreemptType=preempt/qos`` (``live_slurm.start_qos``).

The setup (``live_slurm.QOS``): QOS ``high`` may preempt ``low``, whose jobs are requeued after a 1-second
grace time; ``normal`` preempts nothing. Job ``lo`` (QOS low) holds all 4 A100 of gpu03; job ``hi`` (QOS
high) asks 4 A100 and is held, so Slurm's own scheduler leaves both alone. gpu01, gpu02 and gpu04 have
H100 only and cpu01 no GPU: ``hi`` can run only on gpu03, and only if ``lo`` goes. QOS ``capped`` holds
8 GPUs at most (``GrpTRES=gres/gpu=8``): ``cap1`` runs with 4 H100, ``cap2`` and ``cap3`` (4 H100 each)
are held; placer starts one of them and keeps the other pending, as Slurm does (``QOSGrpGRES``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from placer.topology import build_cluster
from placer.topology.importers.slurm_qos import parse_slurm_qos, read_qos_file
from placer.topology.load import inventory_from_input
from tests.topology.live_slurm import LiveSlurm, available_accounting, running, start_qos


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-qos")), start_qos, available_accounting)


def _ids(slurm: LiveSlurm) -> dict[str, str]:
    return dict(reversed(line.split()) for line in slurm.run("squeue", "-h", "-o", "%i %j").splitlines())


def test_sacctmgrs_qos_table_reads_as_the_captured_one(slurm: LiveSlurm) -> None:
    # tests/fixtures/slurm/sacctmgr-show-qos-22.05.txt is this output; its reading is tested by hand in
    # test_importers_slurm_qos.py (high at level 1 over low; low requeued after 1 s; normal not preempted).
    real = Path(__file__).resolve().parents[1] / "fixtures" / "slurm" / "sacctmgr-show-qos-22.05.txt"
    assert parse_slurm_qos(slurm.out["qos"], source="qos.txt") == read_qos_file(str(real))


def test_with_accounting_plain_show_node_tells_gpu_usage(slurm: LiveSlurm) -> None:
    # AccountingStorageTRES=gres/gpu: plain scontrol show node reports GPUs in AllocTRES, so the plain
    # form reads as the -d form does (gpu03's 4 A100 held by lo, 4 H100 of gpu01 by cap1, 2 of gpu04 by v1).
    free = {}
    for form in ("show-node", "show-node-d"):
        cluster = build_cluster(inventory_from_input(slurm.out[form], source=f"{form}.txt"))
        free[form] = {n.name: len(cluster.free_gpus(n.name)) for n in cluster.nodes if n.gpu_count}
    assert free["show-node"] == free["show-node-d"] == {"gpu01": 4, "gpu02": 8, "gpu03": 0, "gpu04": 6}


def _place(tmp_path: Path, slurm: LiveSlurm, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "nodes.txt").write_text(slurm.out["show-node-d"])
    (tmp_path / "jobs.txt").write_text(slurm.out["show-job-d"])
    (tmp_path / "qos.txt").write_text(slurm.out["qos"])
    jobs = str(tmp_path / "jobs.txt")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "nodes.txt")]
    cmd += ["--running", jobs, "--jobs", jobs, "--engine", "greedy", *extra]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_without_the_qos_table_no_eviction_is_proposed(slurm: LiveSlurm, tmp_path: Path) -> None:
    # squeue/scontrol do not say whether lo may be preempted: placer keeps it, and hi stays pending. Nor
    # do they say that QOS capped holds 8 GPUs at most: both capped jobs are placed beside cap1.
    ids = _ids(slurm)
    d = json.loads(_place(tmp_path, slurm, "--json").stdout)
    assert d["preemptions"] == []
    assert sorted(p["job"] for p in d["placements"]) == sorted(
        [ids["cap2"], ids["cap3"], ids["v2"], ids["s1"]]
    )
    assert [p["job"] for p in d["pending"]] == [ids["hi"]]


def test_with_it_the_capped_qos_gets_one_more_job_not_two(slurm: LiveSlurm, tmp_path: Path) -> None:
    # GrpTRES=gres/gpu=8: cap1 holds 4 H100, so one 4-GPU capped job may start, the other waits with
    # THROTTLE naming the QOS's group; the H100 nodes have room for both.
    ids = _ids(slurm)
    d = json.loads(_place(tmp_path, slurm, "--slurm-qos", str(tmp_path / "qos.txt"), "--json").stdout)
    capped = {ids["cap2"], ids["cap3"]}
    (started,) = [p["job"] for p in d["placements"] if p["job"] in capped]
    (waiting,) = [p for p in d["pending"] if p["job"] in capped]
    assert started == ids["cap2"]  # the same priority: the earlier submitted, as Slurm orders them
    (reason,) = waiting["reasons"]
    assert reason["code"] == "THROTTLE"
    assert reason["details"] == {
        "group": "qos/capped",
        "max_gpus": 8,
        "gpus_held": 4,
        "gpus_started": 4,
        "gpus": 4,
    }


def test_the_table_read_for_its_limits_alone_holds_the_capped_job_and_evicts_nothing(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    # --slurm-qos-limits: the QOS's limits, not its preemption order (a cluster that preempts by partition):
    # cap3 waits as with --slurm-qos, and lo is not evicted for hi.
    ids = _ids(slurm)
    d = json.loads(_place(tmp_path, slurm, "--slurm-qos-limits", str(tmp_path / "qos.txt"), "--json").stdout)
    assert d["preemptions"] == []
    assert sorted(p["job"] for p in d["placements"]) == sorted([ids["cap2"], ids["v2"]])
    # QOS small lets one job have 2 GPUs: s1 (4) is rejected, naming the limit.
    (s1,) = [r for r in d["rejected"] if r["job"] == ids["s1"]]
    assert [e["code"] for e in s1["errors"]] == ["limit"] and "QOSMaxGRESPerJob" in s1["errors"][0]["message"]
    waiting = {p["job"]: [r["code"] for r in p["reasons"]] for p in d["pending"]}
    assert waiting[ids["cap3"]] == ["THROTTLE"] and ids["hi"] in waiting
    both = _place(
        tmp_path,
        slurm,
        "--slurm-qos-limits",
        str(tmp_path / "qos.txt"),
        "--slurm-qos",
        str(tmp_path / "qos.txt"),
    )
    assert both.returncode == 2 and "--slurm-qos holds jobs to the limits too" in both.stderr


def test_the_associations_read_as_the_captured_ones(slurm: LiveSlurm) -> None:
    # tests/fixtures/slurm/sacctmgr-show-assoc-tree-22.05.txt is this output (and -flat- without tree);
    # their reading is tested by hand in test_importers_slurm_assoc.py.
    real = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
    assert slurm.out["assoc"] == (real / "sacctmgr-show-assoc-tree-22.05.txt").read_text()
    assert slurm.out["assoc-flat"] == (real / "sacctmgr-show-assoc-flat-22.05.txt").read_text()


def test_with_the_associations_the_vision_job_waits_for_its_accounts_gpus(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    # Account vision holds 4 GPUs at most; v1 holds 2 there: v2 (4 GPUs) waits with THROTTLE naming the
    # account's group, though gpu02 has 8 H100 free.
    ids = _ids(slurm)
    (tmp_path / "assoc.txt").write_text(slurm.out["assoc"])
    d = json.loads(_place(tmp_path, slurm, "--slurm-assoc", str(tmp_path / "assoc.txt"), "--json").stdout)
    assert ids["v2"] not in {p["job"] for p in d["placements"]}
    (v2,) = [p for p in d["pending"] if p["job"] == ids["v2"]]
    (reason,) = v2["reasons"]
    assert reason["code"] == "THROTTLE"
    assert reason["details"] == {
        "group": "assoc/vision",
        "max_gpus": 4,
        "gpus_held": 2,
        "gpus_started": 0,
        "gpus": 4,
    }
    # placer check holds a decision made without the table (v2 placed) to the account's limit.
    blind = _place(tmp_path, slurm, "--json")
    (tmp_path / "blind.json").write_text(blind.stdout)
    jobs = str(tmp_path / "jobs.txt")
    cmd = [
        sys.executable,
        "-m",
        "placer",
        "check",
        "--cluster",
        str(tmp_path / "nodes.txt"),
        "--running",
        jobs,
    ]
    cmd += ["--jobs", jobs, "--decision", str(tmp_path / "blind.json"), "--json"]
    checked = subprocess.run(
        [*cmd, "--slurm-assoc", str(tmp_path / "assoc.txt")], capture_output=True, text=True
    )
    assert checked.returncode == 1, checked.stderr
    found = json.loads(checked.stdout)
    assert [(v["rule"], v["job"]) for v in found] == [("throttle", ids["v2"])]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0  # without it: valid
    # Without tree, which accounts are under vision is not said: the table is refused, naming it.
    (tmp_path / "flat.txt").write_text(slurm.out["assoc-flat"])
    flat = _place(tmp_path, slurm, "--slurm-assoc", str(tmp_path / "flat.txt"), "--json")
    assert flat.returncode == 1 and "account vision" in flat.stderr and "tree" in flat.stderr


def test_partitions_with_the_qos_table_change_no_rank_and_no_eviction(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    # Under preempt/qos the QOSes rank and decide evictions; this cluster's one partition (UP, no limits,
    # no QOS) given too changes nothing: the same decision as with the QOS table alone.
    (tmp_path / "parts.txt").write_text(slurm.run("scontrol", "show", "partition"))
    now = datetime.now(UTC).isoformat()  # one decision time: work lost by an eviction grows with it
    qos = ("--slurm-qos", str(tmp_path / "qos.txt"), "--json", "--now", now)
    alone = _place(tmp_path, slurm, *qos)
    both = _place(tmp_path, slurm, *qos, "--slurm-partitions", str(tmp_path / "parts.txt"))
    assert alone.returncode == both.returncode == 0, both.stderr
    a, b = json.loads(alone.stdout), json.loads(both.stdout)
    for key in ("placements", "preemptions", "pending", "rejected"):
        assert a[key] == b[key], key


def test_zz_placer_evicts_for_the_high_qos_job_and_slurm_requeues_the_victim(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    ids = _ids(slurm)
    lo, hi = ids["lo"], ids["hi"]
    qos = ("--slurm-qos", str(tmp_path / "qos.txt"))
    decided = _place(tmp_path, slurm, *qos, "--json")
    assert decided.returncode == 0, decided.stderr
    d = json.loads(decided.stdout)
    assert [(e["job"], e["for"], e["grace_period_s"]) for e in d["preemptions"]] == [(lo, [hi], 1)]
    placed = {p["job"]: [r["node"] for r in p["replicas"]] for p in d["placements"]}
    assert placed[hi] == ["gpu03"] and set(placed) == {hi, ids["cap2"], ids["v2"]}
    script = _place(tmp_path, slurm, *qos, "--output", "slurm")
    assert script.returncode == 0, script.stderr
    assert f"scontrol requeuehold {lo}" in script.stdout.splitlines()  # PreemptMode=requeue, as Slurm would
    applied = subprocess.run(["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    slurm.wait("hi running", lambda: slurm.run("squeue", "-h", "-j", hi, "-o", "%T").strip() == "RUNNING")
    assert "NodeList=gpu03 " in slurm.run("scontrol", "show", "job", "-d", hi).replace("\n", " ")
    victim = dict(w.split("=", 1) for w in slurm.run("scontrol", "show", "job", lo).split() if "=" in w)
    assert victim["JobState"] == "PENDING" and "held" in victim["Reason"].lower(), victim
    assert int(victim["Restarts"]) >= 1, victim


def _released_reason(slurm: LiveSlurm, job: str) -> str:
    """``job``'s state and pending reason once Slurm has judged it, released if still held (a scheduling
    pass now, not at the next interval)."""
    if "JobHeldUser" in slurm.run("squeue", "-h", "-j", job, "-o", "%r"):
        slurm.run("scontrol", "release", job)
    slurm.run("scontrol", "reconfigure")

    def reason() -> str:
        return slurm.run("squeue", "-h", "-j", job, "-o", "%T %r").strip()

    slurm.wait(f"{job} judged", lambda: reason() not in ("PENDING JobHeldUser", "PENDING None"))
    return reason()


def test_zzz_slurm_holds_back_the_capped_job_placer_left_pending(slurm: LiveSlurm) -> None:
    # After the script of the test above: cap2 runs where placer put it. Released, cap3 is kept pending by
    # Slurm itself for the same limit placer named (QOSGrpGRES: the QOS's GPUs are all held).
    ids = _ids(slurm)
    cap2, cap3 = ids["cap2"], ids["cap3"]
    slurm.wait("cap2 running", lambda: slurm.run("squeue", "-h", "-j", cap2, "-o", "%T").strip() == "RUNNING")
    assert _released_reason(slurm, cap3) == "PENDING QOSGrpGRES"


def test_zzzz_slurm_holds_back_the_vision_job_placer_left_pending(slurm: LiveSlurm) -> None:
    # Released (the script above may have done it), v2 is kept pending by Slurm for the account's limit.
    assert _released_reason(slurm, _ids(slurm)["v2"]) == "PENDING AssocGrpGRES"


def test_zzzzz_slurm_keeps_the_job_placer_rejected_for_its_qos_per_job_limit_pending(
    slurm: LiveSlurm,
) -> None:
    assert _released_reason(slurm, _ids(slurm)["s1"]) == "PENDING QOSMaxGRESPerJob"
