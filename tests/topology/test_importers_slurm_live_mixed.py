"""A Slurm node with two GPU types, against a live Slurm (``tests/topology/live_slurm.py``,
:func:`start_mixed`): mix01 has 4 cores, 2 A100 (Slurm's GPUs 0-1) and 2 T4 (2-3). Job t holds T4 2 and a
core, job a A100 0 and a core; job w asks both T4 and waits.

placer reads mix01 as two nodes, ``mix01:a100`` and ``mix01:t4`` (``topology/importers/slurm_mixed.py``),
each with its 2 GPUs, half the cores (2) and half the memory; what runs there is split the same way: a
job's GPUs to the part that has them, its cores and memory half and half. So each part has 1 GPU free and
2 - (1 + 1) / 2 = 1 core free, from every form Slurm prints."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
from placer.solver.policy import Policy
from placer.topology import build_cluster
from placer.topology.importers.slurm_job_text import show_job_running
from placer.topology.importers.slurm_jobs import squeue_running, with_slurm_jobs
from placer.topology.load import inventory_from_input
from tests.topology.live_slurm import LiveSlurm, running, start_mixed

PARTS = {"mix01:a100": "nvidia-a100", "mix01:t4": "nvidia-t4"}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    yield from running(Path(tmp_path_factory.mktemp("slurm-mixed")), start_mixed)


def _forms(slurm: LiveSlurm) -> list[tuple[str, object]]:
    return [
        ("show-node-d.txt", slurm.out["show-node-d"]),
        ("sinfo.json", json.loads(slurm.out["sinfo-json"])),
    ]


def test_slurm_itself_numbers_the_gpus_in_gres_conf_order(slurm: LiveSlurm) -> None:
    # What the split rests on, as Slurm prints it: t's T4 is GPU 2, a's A100 GPU 0.
    node = " ".join(slurm.out["show-node-d"].split())
    assert "Gres=gpu:a100:2,gpu:t4:2 " in node and "GresUsed=gpu:a100:1(IDX:0),gpu:t4:1(IDX:2) " in node
    jobs = {
        j["name"]: (j["job_state"], j.get("gres_detail"))
        for j in json.loads(slurm.out["squeue-json"])["jobs"]
    }
    assert jobs == {
        "t": ("RUNNING", ["gpu:t4:1(IDX:2)"]),
        "a": ("RUNNING", ["gpu:a100:1(IDX:0)"]),
        "w": ("PENDING", []),
    }


def test_every_node_form_gives_one_node_per_gpu_type(slurm: LiveSlurm) -> None:
    for source, doc in _forms(slurm):
        cluster = build_cluster(inventory_from_input(doc, source=source))
        nodes = {n.name: n for n in cluster.nodes}
        assert {name: n.gpu_type for name, n in nodes.items()} == PARTS, source
        for name in PARTS:
            assert nodes[name].gpu_count == 2 and nodes[name].cpu_cores == 2, (source, name)
            assert nodes[name].labels["hostname"] == "mix01", (source, name)  # -w mix01 matches both
            assert len(cluster.free_gpus(name)) == 1, (source, name)
            assert cluster.free_cpu(name) == pytest.approx(1.0), (source, name)
        assert cluster.free_gpus("mix01:a100") == (1,) and cluster.free_gpus("mix01:t4") == (1,), source


def test_squeue_json_puts_each_job_on_the_part_of_its_gpus(slurm: LiveSlurm) -> None:
    for source, doc in _forms(slurm):
        cluster = build_cluster(inventory_from_input(doc, source=source))
        named = with_slurm_jobs(
            cluster, squeue_running(json.loads(slurm.out["squeue-json"]), source="squeue.json")
        )
        by_name = {rj.labels["slurm_job_name"]: rj for rj in named.running_jobs()}
        assert set(by_name) == {"t", "a"}, source  # the anonymous allocation is wholly accounted for
        t = {r.node: (r.gpus, r.cpu_cores) for r in by_name["t"].replicas}
        assert t == {"mix01:t4": ([0], 0.5), "mix01:a100": ([], 0.5)}, source  # Slurm's T4 2 is the part's 0
        a = {r.node: r.gpus for r in by_name["a"].replicas}
        assert a == {"mix01:a100": [0], "mix01:t4": []}, source
        # Nothing counted twice, nothing lost: the same free GPUs and cores as the node form alone.
        for name in PARTS:
            assert named.free_gpus(name) == cluster.free_gpus(name), (source, name)
            assert named.free_cpu(name) == pytest.approx(cluster.free_cpu(name)), (source, name)


def test_scontrol_show_job_d_gives_the_same_jobs_on_the_parts(slurm: LiveSlurm) -> None:
    cluster = build_cluster(inventory_from_input(slurm.out["show-node-d"], source="show-node-d.txt"))
    from_json = squeue_running(json.loads(slurm.out["squeue-json"]), source="squeue.json")
    from_text = show_job_running(slurm.out["show-job-d"], source="show-job-d.txt")

    def placed(jobs: list) -> dict[str, list[tuple[str, list[int]]]]:  # type: ignore[type-arg]
        c = with_slurm_jobs(cluster, jobs)
        return {rj.job: sorted((r.node, r.gpus) for r in rj.replicas) for rj in c.running_jobs()}

    assert placed(from_text) == placed(from_json)
    assert len(placed(from_text)) == 2


def test_a_t4_job_goes_to_the_t4_part_and_the_checker_agrees(slurm: LiveSlurm) -> None:
    cluster = build_cluster(inventory_from_input(json.loads(slurm.out["sinfo-json"]), source="sinfo.json"))
    jobs = [Job(id="x", tasks=[TaskGroup(cpu_cores=1, gpu=GpuDemand(count=1, types=["nvidia-t4"]))])]
    for engine in ("greedy", "cpsat"):
        d = place(jobs, cluster, Policy(engine=engine, time_limit_s=5))
        (p,) = d.placements
        assert [(r.node, r.gpus) for r in p.replicas] == [("mix01:t4", [1])], engine  # the one T4 free
        assert check(d, jobs, cluster) == [], engine
    # Two T4 at once do not fit: one is held by job t.
    two = [Job(id="y", tasks=[TaskGroup(cpu_cores=1, gpu=GpuDemand(count=2, types=["nvidia-t4"]))])]
    assert place(two, cluster, Policy(engine="greedy")).placements == []


def test_zz_a_held_untyped_job_runs_on_the_gpu_type_placer_chose(slurm: LiveSlurm, tmp_path: Path) -> None:
    # Last in the module: it changes the live cluster. w goes (it would wait for t forever anyway); a job
    # asking one GPU of any type is submitted held. One A100 and one T4 are free; placer prefers the T4 (the
    # default price catalog's cheaper GPU, level 5 of the objective, the levels above being equal). Left to
    # itself Slurm would take the lowest free index, A100 1: the script must pin the type, not only the node.
    slurm.run("scancel", "-n", "w")
    quiet = ("-o", "/dev/null", "-D", str(tmp_path), "-c", "1", "--wrap", "sleep 600")
    jid = slurm.run("sbatch", "--parsable", "-H", "-J", "h", "--gres=gpu:1", *quiet).strip()
    (tmp_path / "sinfo.json").write_text(slurm.run("sinfo", "--json"))
    (tmp_path / "squeue.json").write_text(slurm.run("squeue", "--json"))
    squeue = str(tmp_path / "squeue.json")
    cmd = [sys.executable, "-m", "placer", "place", "--cluster", str(tmp_path / "sinfo.json"), "--engine"]
    cmd += ["greedy", "--running", squeue, "--jobs", squeue]
    decided = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert decided.returncode == 0, decided.stderr
    (p,) = json.loads(decided.stdout)["placements"]
    assert p["job"] == jid and [r["node"] for r in p["replicas"]] == ["mix01:t4"], p
    script = subprocess.run([*cmd, "--output", "slurm"], capture_output=True, text=True, timeout=120)
    assert script.returncode == 0, script.stderr
    assert "NodeList=mix01 " in script.stdout and "TresPerNode=gres:gpu:t4:1" in script.stdout, script.stdout
    applied = subprocess.run(["sh", "-c", script.stdout], env=slurm.env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    slurm.wait(
        "the applied job running", lambda: jid in slurm.run("squeue", "-h", "-t", "R", "-o", "%i").split()
    )
    shown = " ".join(slurm.run("scontrol", "show", "job", "-d", jid).split())
    assert "NodeList=mix01 " in shown and "GRES=gpu:t4:1(IDX:3)" in shown, shown
