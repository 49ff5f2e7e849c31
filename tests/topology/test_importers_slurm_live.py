"""placer against a live Slurm (``tests/topology/live_slurm.py``): what Slurm itself prints, read back.

The arithmetic (module docstring of ``live_slurm``): gpu01 has 8 H100 and jobs holding 2 + 3, so 3 free;
gpu02 8 H100 with 4 held, drained; gpu03 4 A100 all held; gpu04 8 H100, none held, down; cpu01 no GPU,
drained. Usable GPU nodes are therefore gpu01 and gpu02's state says DRAIN (not schedulable), gpu04 is not
ready.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from placer.cli.inputs import cluster_arg
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.topology import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_job_text import show_job_running
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.importers.slurm_topology import parse_slurm_topology
from placer.topology.load import inventory_from_input
from tests.topology.live_slurm import JOBS, TOPOLOGY, LiveSlurm, running, start

#: Free GPUs per node by the module docstring's arithmetic, and which GPU indices are held.
FREE = {"gpu01": 3, "gpu02": 4, "gpu03": 0, "gpu04": 8}
HELD = {"gpu01": 5, "gpu02": 4, "gpu03": 4, "gpu04": 0}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm")), start)


def _free(inv_input: object, source: str) -> dict[str, int]:
    cluster = build_cluster(inventory_from_input(inv_input, source=source))
    return {n.name: len(cluster.free_gpus(n.name)) for n in cluster.nodes if n.gpu_count}


def test_scontrol_show_node_d_gives_what_the_jobs_hold(slurm: LiveSlurm) -> None:
    assert _free(slurm.out["show-node-d"], "show-node-d.txt") == FREE


def test_sinfo_json_gives_the_same_and_is_detected(slurm: LiveSlurm) -> None:
    doc = json.loads(slurm.out["sinfo-json"])
    assert _free(doc, "sinfo.json") == FREE
    assert _free(slurm.out["sinfo-json"], "sinfo.json") == FREE  # as text, detected too


def test_plain_scontrol_show_node_is_refused_where_gpu_usage_is_unknown(slurm: LiveSlurm) -> None:
    # Without gres/gpu accounting Slurm prints no GPU usage here: reading the GPUs as free would offer
    # 16 H100 where 7 are free. Every node running work is named.
    with pytest.raises(TopologyError) as e:
        inventory_from_input(slurm.out["show-node"], source="show-node.txt")
    text = str(e.value)
    assert "GPU usage unknown" in text
    for node, held in HELD.items():
        assert (f"NodeName={node})" in text) == (held > 0), node


def test_states_and_reasons_come_through(slurm: LiveSlurm) -> None:
    inv = inventory_from_input(json.loads(slurm.out["sinfo-json"]), source="sinfo.json")
    nodes = {n.name: n for n in inv.nodes}
    assert nodes["gpu01"].schedulable and nodes["gpu01"].ready
    assert not nodes["gpu02"].schedulable  # drained while its job runs
    assert not nodes["gpu04"].ready  # down
    assert nodes["gpu02"].labels["slurm_reason"] == "drain while job runs"
    assert nodes["gpu04"].labels["slurm_reason"] == "down by hand"
    assert nodes["gpu03"].gpus is not None and nodes["gpu03"].gpus.type == "nvidia-a100"


def _named(slurm: LiveSlurm):  # type: ignore[no-untyped-def]
    """The cluster from ``sinfo --json`` with ``squeue --json``'s running jobs by name."""
    cluster = build_cluster(inventory_from_input(json.loads(slurm.out["sinfo-json"]), source="sinfo.json"))
    jobs = squeue_running(json.loads(slurm.out["squeue-json"]), source="squeue.json")
    return with_slurm_jobs(cluster, jobs)


def test_squeue_json_names_the_running_jobs_with_what_each_holds(slurm: LiveSlurm) -> None:
    # Slurm's own ids, from its plain-text squeue: the pending job f is not running.
    ids = dict(reversed(line.split()) for line in slurm.out["squeue-ids"].splitlines())
    assert sorted(ids) == ["a", "b", "c", "d"]
    cluster = _named(slurm)
    running = {rj.job: rj for rj in cluster.running_jobs()}
    assert sorted(running) == sorted(ids.values())  # every allocation explained: no anonymous one left
    wanted = {name: (node, int(gres.rsplit(":", 1)[1])) for name, node, gres, _ in JOBS}
    for name, jid in ids.items():
        (replica,) = running[jid].replicas
        assert (replica.node, len(replica.gpus)) == wanted[name], name
        assert running[jid].labels["slurm_job_name"] == name
    assert not set(running[ids["a"]].replicas[0].gpus) & set(running[ids["b"]].replicas[0].gpus)
    # Nothing counted twice, nothing lost: the same free GPUs as the node forms alone.
    assert {n.name: len(cluster.free_gpus(n.name)) for n in cluster.nodes if n.gpu_count} == FREE


def test_squeue_json_gives_end_times_from_time_limits(slurm: LiveSlurm) -> None:
    ids = dict(reversed(line.split()) for line in slurm.out["squeue-ids"].splitlines())
    running = {rj.job: rj for rj in _named(slurm).running_jobs()}
    for name, _, _, minutes in JOBS:
        rj = running[ids[name]]
        assert rj.started_at is not None
        if minutes is None:  # unlimited: Slurm's end_time is a placeholder a year ahead, not an end
            assert rj.expected_end is None
        else:
            assert rj.expected_end == rj.started_at + timedelta(minutes=minutes), name


def test_a_planned_start_names_the_slurm_job_it_waits_for(slurm: LiveSlurm) -> None:
    # 5 H100 on one node: gpu01 has 3 free until job a (2 GPUs, 30 minutes) ends; gpu02 is drained and
    # gpu04 down. So the job is planned at a's end, after a, by a's Slurm id.
    ids = dict(reversed(line.split()) for line in slurm.out["squeue-ids"].splitlines())
    cluster = _named(slurm)
    a = cluster.running_job(ids["a"])
    assert a.started_at is not None and a.expected_end is not None
    job = Job(id="big", tasks=[TaskGroup(gpu=GpuDemand(count=5, types=["nvidia-h100"]))])
    now = a.started_at + timedelta(minutes=1)
    decision = place([job], cluster, Policy(engine="greedy"), now=now)
    (pending,) = decision.pending
    (reason,) = [r for r in pending.reasons if r.code == "PLANNED_START"]
    assert reason.details["after"] == [ids["a"]]
    assert reason.details["start"] == a.expected_end.isoformat()
    assert check(decision, [job], cluster, now=now) == []


def test_placer_place_reads_squeue_json_as_running(slurm: LiveSlurm, tmp_path: Path) -> None:
    (tmp_path / "sinfo.json").write_text(slurm.out["sinfo-json"])
    (tmp_path / "squeue.json").write_text(slurm.out["squeue-json"])
    (tmp_path / "job.json").write_text(
        json.dumps(
            {
                "id": "big",
                "type": "train",
                "queue": "gpu",
                "args": [],
                "ext_ml_gpu_count": 5,
                "ext_ml_gpu_type": "nvidia-h100",
            }
        )
    )
    ids = dict(reversed(line.split()) for line in slurm.out["squeue-ids"].splitlines())
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "placer",
            "place",
            "--cluster",
            str(tmp_path / "sinfo.json"),
            "--running",
            str(tmp_path / "squeue.json"),
            "--jobs",
            str(tmp_path / "job.json"),
            "--engine",
            "greedy",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    (pending,) = json.loads(out.stdout)["pending"]
    codes = {r["code"]: r for r in pending["reasons"]}
    assert codes["PLANNED_START"]["details"]["after"] == [ids["a"]]


def test_placer_answers_where_the_pending_slurm_job_would_run(slurm: LiveSlurm, tmp_path: Path) -> None:
    # Job f (-w gpu01, 8 H100) waits in Slurm. The same squeue --json gives placer the running jobs and
    # the pending one: f fits gpu01 once a (2 GPUs, 30 min) and b (3 GPUs, 120 min) have ended.
    (tmp_path / "sinfo.json").write_text(slurm.out["sinfo-json"])
    (tmp_path / "squeue.json").write_text(slurm.out["squeue-json"])
    ids = dict(reversed(line.split()) for line in slurm.out["squeue-ids"].splitlines())
    pending_id = next(
        str(j["job_id"]) for j in json.loads(slurm.out["squeue-json"])["jobs"] if j["name"] == "f"
    )
    squeue = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json")]
    out = subprocess.run(
        [*cmd, "--running", squeue, "--jobs", squeue, "--engine", "greedy", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    decision = json.loads(out.stdout)
    assert decision["placements"] == [] and [p["job"] for p in decision["pending"]] == [pending_id]
    reasons = {r["code"]: r for r in decision["pending"][0]["reasons"]}
    assert reasons["PLANNED_START"]["details"]["after"] == [ids["b"]]
    assert reasons["PLANNED_START"]["details"]["nodes"] == ["gpu01"]


def test_scontrol_show_job_d_gives_the_same_running_jobs_as_squeue_json(slurm: LiveSlurm) -> None:
    # Two forms Slurm prints about the same jobs, read by one set of rules: ids, nodes, GPU indices, CPUs,
    # start and end times agree (times: Slurm's local time, read in this machine's zone, which is the
    # controller's here).
    def key(rj):  # type: ignore[no-untyped-def]
        return (
            rj.job,
            [(r.node, r.gpus, r.cpu_cores) for r in rj.replicas],
            rj.started_at,
            rj.expected_end,
            rj.labels.get("slurm_job_name"),
        )

    from_json = squeue_running(json.loads(slurm.out["squeue-json"]), source="squeue.json")
    from_text = show_job_running(slurm.out["show-job-d"], source="show-job.txt")
    assert sorted(map(key, from_text)) == sorted(map(key, from_json))
    assert len(from_text) == len(JOBS)


def test_scontrol_show_job_gives_the_same_pending_job_as_squeue_json(slurm: LiveSlurm) -> None:
    from placer.solver.jobs import read_text

    by_text = read_text(slurm.out["show-job-d"], source="show-job.txt")
    by_json = read_text(slurm.out["squeue-json"], source="squeue.json")
    assert [r.id for r in by_text] == [r.id for r in by_json] == ["5"]  # f, the one pending job
    assert by_text[0].ok and by_json[0].ok
    ignore = {"envelope", "metadata"}
    assert by_text[0].job.model_dump(exclude=ignore) == by_json[0].job.model_dump(exclude=ignore)


def test_slurms_topology_and_placers_reading_of_it_agree(slurm: LiveSlurm, tmp_path: Path) -> None:
    # The fixture's topology.conf, as Slurm itself prints it back (scontrol show topology): each node's
    # leaf switch is its rack, the spine its block, by Slurm's own reading and by placer's.
    from_slurm = parse_slurm_topology(slurm.out["show-topology"], source="scontrol show topology")
    from_file = parse_slurm_topology(TOPOLOGY, source="topology.conf")
    assert from_slurm == from_file
    assert {n: v["rack"] for n, v in from_slurm.items()} == {
        "gpu01": "leaf1",
        "gpu02": "leaf1",
        "gpu03": "leaf2",
        "gpu04": "leaf2",
        "cpu01": "leaf2",
    }
    (tmp_path / "sinfo.json").write_text(slurm.out["sinfo-json"])
    (tmp_path / "topology.txt").write_text(slurm.out["show-topology"])
    cluster = cluster_arg(str(tmp_path / "sinfo.json"), slurm_topology=str(tmp_path / "topology.txt"))
    assert {n.name: (n.rack, n.block) for n in cluster.nodes} == {
        n: (v["rack"], v["block"]) for n, v in from_file.items()
    }


def test_zz_held_jobs_applied_by_placer_start_where_placer_chose(slurm: LiveSlurm, tmp_path: Path) -> None:
    # Last in the module: it changes the live cluster. gpu04 comes back (8 idle H100, 2 cores); three
    # jobs are submitted held (sbatch -H; 10-minute limits, so they end before job f's planned start).
    # Each node has 2 cores and every job takes one: gpu01 has GPUs but no core left, gpu03 a core but no
    # GPU. So h1 (5 H100) and h2 (3 H100) can only share gpu04 and h3 (one core) only gpu03. placer
    # decides from what Slurm prints now; its script pins and releases them; each must start exactly there.
    slurm.run("scontrol", "update", "nodename=gpu04", "state=resume")
    # "idle*" (not responding) until slurmctld hears from its slurmd again, about a second: placer reads
    # a node that is not responding as not ready, as Slurm treats it.
    slurm.wait("gpu04 back", lambda: slurm.run("sinfo", "-h", "-n", "gpu04", "-o", "%t").strip() == "idle")
    quiet = ("-o", "/dev/null", "-D", str(tmp_path), "-t", "10", "--wrap", "sleep 600")
    held = {
        name: slurm.run("sbatch", "--parsable", "-H", "-J", name, *gres, *quiet).strip()
        for name, gres in (("h1", ["--gres=gpu:h100:5"]), ("h2", ["--gres=gpu:h100:3"]), ("h3", ["-c", "1"]))
    }
    (tmp_path / "sinfo.json").write_text(slurm.run("sinfo", "--json"))
    (tmp_path / "squeue.json").write_text(slurm.run("squeue", "--json"))
    squeue = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json"), "--engine"]
    decided = subprocess.run(
        [*cmd, "greedy", "--running", squeue, "--jobs", squeue, "--json"], capture_output=True, text=True
    )
    assert decided.returncode == 0, decided.stderr
    chosen = {
        p["job"]: sorted({r["node"] for r in p["replicas"]}) for p in json.loads(decided.stdout)["placements"]
    }
    assert set(chosen) == set(held.values()), chosen  # all three fit now; f (needs gpu01 whole) waits
    assert chosen == {held["h1"]: ["gpu04"], held["h2"]: ["gpu04"], held["h3"]: ["gpu03"]}
    script = subprocess.run(
        [*cmd, "greedy", "--running", squeue, "--jobs", squeue, "--output", "slurm"],
        capture_output=True,
        text=True,
    )
    assert script.returncode == 0, script.stderr
    applied = subprocess.run(["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    def started() -> bool:
        running = slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()
        return all(jid in running for jid in held.values())

    slurm.wait("the applied jobs running", started)
    for jid, nodes in chosen.items():
        shown = slurm.run("scontrol", "show", "job", "-d", jid)
        node_list = next(w.split("=", 1)[1] for w in shown.split() if w.startswith("NodeList="))
        assert node_list == ",".join(nodes), (jid, node_list, nodes)


def test_zzz_an_eviction_placer_applies_requeues_the_victim_held(slurm: LiveSlurm, tmp_path: Path) -> None:
    # After test_zz (it changes the live cluster again). The held jobs of test_zz end; a scavenger job
    # (PriorityTier 1, PreemptMode=REQUEUE, GraceTime=1) takes all 8 H100 of gpu04. A job held for placer
    # in gpu (tier 10) asks 6 H100: gpu01 has 3 free and no free core, gpu02 is drained, gpu03 has A100,
    # so only gpu04 can hold it, and only if the scavenger job goes. Slurm's own scheduler leaves both
    # alone (u is held). placer, told the partitions, evicts s for u; its script requeues s held and
    # starts u on gpu04.
    earlier = slurm.run("squeue", "-h", "--name=h1,h2,h3", "-o", "%i").split()
    if earlier:
        slurm.run("scancel", *earlier)
    gone = lambda: not slurm.run("squeue", "-h", "--name=h1,h2,h3", "-t", "R,CG").strip()  # noqa: E731
    slurm.wait("test_zz's jobs gone", gone)
    quiet = ("-o", "/dev/null", "-D", str(tmp_path), "-t", "10", "--wrap", "sleep 600")
    run = ("sbatch", "--parsable")
    s = slurm.run(*run, "-J", "s", "-p", "scavenger", "-w", "gpu04", "--gres=gpu:h100:8", *quiet).strip()
    slurm.wait("s running", lambda: slurm.run("squeue", "-h", "-j", s, "-o", "%T").strip() == "RUNNING")
    u = slurm.run(*run, "-H", "-J", "u", "--gres=gpu:h100:6", *quiet).strip()
    (tmp_path / "sinfo.json").write_text(slurm.run("sinfo", "--json"))
    (tmp_path / "squeue.json").write_text(slurm.run("squeue", "--json"))
    (tmp_path / "partitions.txt").write_text(slurm.run("scontrol", "show", "partition"))
    sq = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json")]
    cmd += ["--running", sq, "--jobs", sq, "--engine", "greedy"]
    cmd += ["--slurm-partitions", str(tmp_path / "partitions.txt")]
    decided = subprocess.run([*cmd, "--json"], capture_output=True, text=True)
    assert decided.returncode == 0, decided.stderr
    d = json.loads(decided.stdout)
    assert [(e["job"], e["for"], e["grace_period_s"]) for e in d["preemptions"]] == [(s, [u], 1)]
    assert [(p["job"], [r["node"] for r in p["replicas"]]) for p in d["placements"]] == [(u, ["gpu04"])]
    script = subprocess.run([*cmd, "--output", "slurm"], capture_output=True, text=True)
    assert script.returncode == 0, script.stderr
    assert f"scontrol requeuehold {s}" in script.stdout.splitlines()
    applied = subprocess.run(["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    slurm.wait("u running", lambda: slurm.run("squeue", "-h", "-j", u, "-o", "%T").strip() == "RUNNING")
    shown = slurm.run("scontrol", "show", "job", "-d", u)
    assert "NodeList=gpu04 " in shown.replace("\n", " ")
    # The victim is back in the queue, held (it does not race u), and Slurm counts the restart
    victim = dict(w.split("=", 1) for w in slurm.run("scontrol", "show", "job", s).split() if "=" in w)
    assert victim["JobState"] == "PENDING", victim
    # Slurm 22.05 says "job_requeued_in_held_state"; a held job's priority is 0 (it never starts by itself)
    assert "held" in victim["Reason"].lower() and victim["Priority"] == "0", victim
    assert int(victim["Restarts"]) >= 1, victim


def test_zzzz_gpus_per_job_and_per_task_are_read_from_both_forms(slurm: LiveSlurm, tmp_path: Path) -> None:
    # Held, so Slurm leaves them alone: --gpus on one node, and --gpus-per-task with every task on one.
    from placer.solver.jobs import read_text

    quiet = ("--parsable", "-H", "-o", "/dev/null", "-D", str(tmp_path), "--wrap", "sleep 1")
    pj = slurm.run("sbatch", "-J", "pj", "--gpus=h100:3", *quiet).strip()
    pt = slurm.run("sbatch", "-J", "pt", "-N", "1", "-n", "2", "--gpus-per-task=2", *quiet).strip()
    for text, source in (
        (slurm.run("squeue", "--json"), "squeue.json"),
        (slurm.run("scontrol", "show", "job"), "jobs.txt"),
    ):
        read = {r.id: r for r in read_text(text, source=source)}
        gpus = {jid: (read[jid].job.tasks[0].gpu.count, read[jid].job.tasks[0].gpu.types) for jid in (pj, pt)}
        assert gpus == {pj: (3, ["nvidia-h100"]), pt: (4, [])}, source


def _snapshot_place_args(slurm: LiveSlurm, tmp_path: Path) -> list[str]:
    """``placer place`` (greedy) on what the live Slurm prints now: ``sinfo --json`` as the cluster, one
    ``squeue --json`` as both the running and the pending jobs."""
    (tmp_path / "sinfo.json").write_text(slurm.run("sinfo", "--json"))
    (tmp_path / "squeue.json").write_text(slurm.run("squeue", "--json"))
    squeue = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json"), "--engine"]
    return [*cmd, "greedy", "--running", squeue, "--jobs", squeue]


def test_zzzzz_a_pending_array_is_placed_task_by_task_and_applied(slurm: LiveSlurm, tmp_path: Path) -> None:
    # Last: it clears the live cluster. Every job goes, the drained and downed GPU nodes come back (three
    # H100 nodes of 2 cores each), and two held arrays are submitted: sweep (--array=0-3, 2 H100 and a core
    # per task) and capped (--array=0-3%1: one task at a time). placer reads each as four jobs A_0..A_3,
    # places sweep's four and one of capped's (the other three wait, THROTTLE); its script pins and
    # releases each placed task, which Slurm splits off the array, and each must start exactly where
    # placer put it.
    slurm.run("scancel", "--user=root")
    slurm.wait("an empty queue", lambda: not slurm.run("squeue", "-h").strip())
    for node in ("gpu02", "gpu04"):
        slurm.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)

    seen: list[str] = []

    def idle() -> bool:
        seen[:] = slurm.run("sinfo", "-h", "-N", "-n", "gpu01,gpu02,gpu04", "-o", "%N=%t").split()
        for node, state in (x.split("=", 1) for x in seen):
            if state.startswith(("drain", "drng", "down")):  # a drain set while a job was still ending
                slurm.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        return all(x.endswith("=idle") for x in seen)

    try:
        slurm.wait("the H100 nodes idle", idle, seconds=60)
    except RuntimeError as e:
        raise AssertionError(f"{e}: {seen}") from None
    quiet = (
        "--parsable",
        "-H",
        "-c",
        "1",
        "-t",
        "10",
        "-o",
        "/dev/null",
        "-D",
        str(tmp_path),
        "--wrap",
        "sleep 600",
    )
    sweep = slurm.run("sbatch", "-J", "sweep", "--array=0-3", "--gres=gpu:h100:2", *quiet).strip()
    capped = slurm.run("sbatch", "-J", "capped", "--array=0-3%1", "--gres=gpu:h100:1", *quiet).strip()
    args = _snapshot_place_args(slurm, tmp_path)
    decided = subprocess.run([*args, "--json"], capture_output=True, text=True)
    assert decided.returncode == 0, decided.stderr
    d = json.loads(decided.stdout)
    chosen = {p["job"]: [r["node"] for r in p["replicas"]] for p in d["placements"]}
    one = [t for t in chosen if t.startswith(f"{capped}_")]
    tasks = [f"{sweep}_{k}" for k in range(4)] + one
    assert len(one) == 1 and sorted(chosen) == sorted(tasks), chosen
    per_node = [n for nodes in chosen.values() for n in nodes]
    assert all(per_node.count(n) <= 2 for n in per_node)  # two cores a node, one per task
    waiting = {p["job"]: p["reasons"][0] for p in d["pending"] if p["job"].startswith(f"{capped}_")}
    assert sorted(waiting) == sorted({f"{capped}_{k}" for k in range(4)} - set(one))
    assert {r["code"] for r in waiting.values()} == {"THROTTLE"}
    assert all(r["details"]["max_running"] == 1 for r in waiting.values())
    script = subprocess.run([*args, "--output", "slurm"], capture_output=True, text=True)
    assert script.returncode == 0, script.stderr
    applied = subprocess.run(["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr

    def started() -> bool:
        shown = slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()
        return all(t in shown for t in tasks)

    slurm.wait("the applied tasks running", started)
    for task, nodes in chosen.items():
        shown = slurm.run("scontrol", "show", "job", "-d", task)
        node_list = next(w.split("=", 1)[1] for w in shown.split() if w.startswith("NodeList="))
        assert node_list == ",".join(nodes), (task, node_list, nodes)


def test_zzzzzz_a_heterogeneous_job_is_placed_whole_and_left_held_by_the_script(
    slurm: LiveSlurm, tmp_path: Path
) -> None:
    # Last, after the arrays: the queue is cleared, and a held heterogeneous job is submitted
    # (sbatch ... : ...): component 0 asks 2 H100 on one node, component 1 asks 4 H100. placer reads it as
    # one job of two task groups ("0", "1") and places both or neither. Slurm 22.05 takes no NodeList for a
    # held het job's first component ("Job resizing not supported") and applies an ExcNodeList there to
    # every component, so the script cannot pin them: it says so and leaves the job held.
    slurm.run("scancel", "--user=root")
    slurm.wait("an empty queue", lambda: not slurm.run("squeue", "-h").strip())
    common = ("-o", "/dev/null", "-D", str(tmp_path), "-t", "10", "-N1", "-c1")
    het = (
        slurm.run(
            "sbatch",
            "--parsable",
            "-H",
            "-J",
            "het",
            *common,
            "--gres=gpu:h100:2",
            ":",
            *common,
            "--gres=gpu:h100:4",
            "--wrap",
            "sleep 600",
        )
        .strip()
        .split(";")[0]
    )
    args = _snapshot_place_args(slurm, tmp_path)
    decided = subprocess.run([*args, "--json"], capture_output=True, text=True)
    assert decided.returncode == 0, decided.stderr
    (placement,) = json.loads(decided.stdout)["placements"]
    assert placement["job"] == het
    gpus = {r["task_group"]: len(r["gpus"]) for r in placement["replicas"]}
    assert gpus == {"0": 2, "1": 4}
    script = subprocess.run([*args, "--output", "slurm"], capture_output=True, text=True)
    assert script.returncode == 0, script.stderr
    assert f"scontrol release {het}" not in script.stdout
    assert f"{het}: a heterogeneous job is placed" in script.stderr + script.stdout
    assert slurm.run("squeue", "-h", "-j", het, "-o", "%r").split() == ["JobHeldUser", "JobHeldUser"]
