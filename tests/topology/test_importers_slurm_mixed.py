"""A Slurm node with several GPU types as one placer node per type (``topology/importers/slurm_mixed.py``):
the split's arithmetic, what runs there, hostlists, topology and the script that applies a decision. The
live test (``test_importers_slurm_live_mixed.py``) reads such a node from a real Slurm."""

from __future__ import annotations

import pytest

from placer.cli.slurm_apply import slurm_script
from placer.solver.checks import check
from placer.solver.decision import Decision, JobPlacement, ReplicaPlacement
from placer.solver.engine import place
from placer.solver.jobs.model import AffinityOperator, GpuDemand, Job, LabelRule, Placement, TaskGroup
from placer.solver.policy import Policy
from placer.topology import build_cluster
from placer.topology.availability import with_availability
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm import parse_slurm
from placer.topology.importers.slurm_jobs import with_slurm_jobs
from placer.topology.importers.slurm_topology import parse_slurm_topology, with_topology_levels
from placer.topology.inventory import ReplicaAllocation, RunningJob

#: 16 cores, 64000 MB; 4 A100 (Slurm's GPUs 0-3) and 2 T4 (4-5); A100 1 and T4 4 in use, 6 CPUs.
MIX = (
    "NodeName=mix01 CPUTot=16 RealMemory=64000 TmpDisk=6000 State=MIXED Partitions=gpu "
    "Gres=gpu:a100:4(S:0),gpu:t4:2(S:0) GresUsed=gpu:a100:1(IDX:1),gpu:t4:1(IDX:4) "
    "CPUAlloc=6 AllocMem=3000"
)
ONE = "NodeName=gpu01 CPUTot=8 RealMemory=8000 State=IDLE Gres=gpu:h100:8"


def _cluster(text: str = MIX):  # type: ignore[no-untyped-def]
    return build_cluster(parse_slurm(text, source="nodes.txt"))


def test_shares_follow_the_gpus_and_add_up_to_the_node() -> None:
    nodes = {n.name: n for n in parse_slurm(MIX, source="nodes.txt").nodes}
    a, t = nodes["mix01:a100"], nodes["mix01:t4"]
    assert (a.gpus.type, a.gpus.count, t.gpus.type, t.gpus.count) == ("nvidia-a100", 4, "nvidia-t4", 2)
    # 16 cores x 4/6 = 10.67 and x 2/6 = 5.33: whole cores 10 and 5, the one left to the larger remainder.
    assert (a.cpu_cores, t.cpu_cores) == (11, 5)
    assert a.memory_gb == pytest.approx(64000 / 1024 * 4 / 6) and t.memory_gb == pytest.approx(
        64000 / 1024 / 3
    )
    assert a.storage_gb + t.storage_gb == pytest.approx(6000 / 1024)
    assert (a.labels["slurm_node"], a.labels["slurm_gres_type"], a.labels["slurm_gpus"]) == (
        "mix01",
        "a100",
        "0,1,2,3",
    )
    assert (t.labels["slurm_gres_type"], t.labels["slurm_gpus"]) == ("t4", "4,5")
    assert a.labels["partition/gpu"] == t.labels["partition/gpu"] == "true"


def test_what_runs_there_is_split_by_gpu_index_and_share() -> None:
    c = _cluster()
    # Slurm's A100 1 is the part's 1, its T4 4 the T4 part's 0.
    assert c.free_gpus("mix01:a100") == (0, 2, 3) and c.free_gpus("mix01:t4") == (1,)
    (alloc,) = c.running_jobs()
    cores = {r.node: r.cpu_cores for r in alloc.replicas}
    assert cores == pytest.approx({"mix01:a100": 6 * 11 / 16, "mix01:t4": 6 * 5 / 16})
    mem = sum(r.memory_gb for r in alloc.replicas)
    assert mem == pytest.approx(3000 / 1024)
    assert {n.name: n.labels["hostname"] for n in c.nodes} == {"mix01:a100": "mix01", "mix01:t4": "mix01"}


def test_per_type_counts_without_indices_take_each_types_lowest() -> None:
    text = MIX.replace("GresUsed=gpu:a100:1(IDX:1),gpu:t4:1(IDX:4) ", "") + (
        " CfgTRES=cpu=16,mem=64000M,gres/gpu=6"
        " AllocTRES=cpu=6,mem=3000M,gres/gpu=3,gres/gpu:a100=1,gres/gpu:t4=2"
    )
    c = _cluster(text)
    assert c.free_gpus("mix01:a100") == (1, 2, 3) and c.free_gpus("mix01:t4") == ()


@pytest.mark.parametrize(
    ("used", "problem"),
    [
        ("GresUsed=gpu:a100:1,gpu:t4:1", "GPU usage per type unknown"),  # counts, no IDX, no per-type TRES
        ("GresUsed=gpu:a100:1(IDX:4),gpu:t4:1(IDX:5)", "is not among the node's a100 GPUs"),
    ],
)
def test_usage_that_does_not_say_which_type_is_refused_naming_the_node(used: str, problem: str) -> None:
    text = MIX.replace("GresUsed=gpu:a100:1(IDX:1),gpu:t4:1(IDX:4)", used)
    with pytest.raises(TopologyError) as e:
        parse_slurm(text, source="nodes.txt")
    assert "record 1 (NodeName=mix01)" in str(e.value) and problem in str(e.value)


def test_a_type_listed_twice_is_one_part_and_untyped_gpus_are_their_own() -> None:
    text = "NodeName=n1 CPUTot=4 RealMemory=4000 Gres=gpu:a100:1,gpu:t4:2,gpu:a100:1,gpu:1"
    nodes = {n.name: n for n in parse_slurm(text, source="nodes.txt").nodes}
    assert {k: v.labels["slurm_gpus"] for k, v in nodes.items()} == {
        "n1:a100": "0,3",
        "n1:t4": "1,2",
        "n1:gpu": "4",
    }
    assert nodes["n1:gpu"].gpus.type == "unknown-gpu"
    assert sum(n.cpu_cores for n in nodes.values()) == 4
    # A type listed with no GPUs is no part: the node has one type and stays one node.
    (one,) = parse_slurm("NodeName=n2 CPUTot=4 RealMemory=4000 Gres=gpu:a100:2,gpu:t4:0", source="n").nodes
    assert (one.name, one.gpus.type, one.gpus.count, one.cpu_cores) == ("n2", "nvidia-a100", 2, 4)
    (one,) = parse_slurm("NodeName=n3 CPUTot=4 RealMemory=4000 Gres=gpu:t4:0,gpu:a100:2", source="n").nodes
    assert (one.name, one.gpus.type, one.gpus.count) == ("n3", "nvidia-a100", 2)


def _job(jid: str, node: str, gpus: list[int], cores: float) -> RunningJob:
    return RunningJob(
        job=jid,
        labels={"slurm_job_id": jid},
        replicas=[ReplicaAllocation(node=node, gpus=gpus, cpu_cores=cores, memory_gb=3000 / 1024 / 2)],
    )


def test_named_jobs_land_on_the_parts_and_replace_the_anonymous_allocation() -> None:
    c = with_slurm_jobs(_cluster(), [_job("7", "mix01", [1, 4], 4.0), _job("8", "mix01", [], 2.0)])
    jobs = {rj.job: rj for rj in c.running_jobs()}
    assert set(jobs) == {"7", "8"}  # 6 CPUs, both GPUs and 3000 MB accounted: no anonymous rest
    seven = {r.node: (r.gpus, r.cpu_cores) for r in jobs["7"].replicas}
    assert seven == {
        "mix01:a100": ([1], pytest.approx(4 * 11 / 16)),
        "mix01:t4": ([0], pytest.approx(4 * 5 / 16)),
    }
    assert {r.node for r in jobs["8"].replicas} == {"mix01:a100", "mix01:t4"}  # CPU work: both shares
    assert c.free_gpus("mix01:a100") == (0, 2, 3) and c.free_gpus("mix01:t4") == (1,)
    with pytest.raises(TopologyError, match="node 'mix01' has no GPU 9"):
        with_slurm_jobs(_cluster(), [_job("9", "mix01", [9], 1.0)])


def test_hostlists_and_topology_see_the_parts_as_their_node() -> None:
    c = _cluster(MIX + "\n" + ONE)

    def pinned(op: AffinityOperator) -> Job:
        rule = LabelRule(key="hostname", operator=op, values=["mix01"])
        return Job(id="j", tasks=[TaskGroup(gpu=GpuDemand(count=1))], placement=Placement(required=[rule]))

    for engine in ("greedy", "cpsat"):
        for op, where in ((AffinityOperator.IN, "mix01:"), (AffinityOperator.NOT_IN, "gpu01")):
            jobs = [pinned(op)]
            d = place(jobs, c, Policy(engine=engine, time_limit_s=5))
            (p,) = d.placements
            assert p.replicas[0].node.startswith(where), (engine, op, p)
            assert check(d, jobs, c) == []
    inv = parse_slurm(MIX + "\n" + ONE, source="nodes.txt")
    levels = parse_slurm_topology("SwitchName=s1 Nodes=mix01\nSwitchName=s2 Nodes=gpu01\n", source="t.conf")
    racks = {n.name: n.rack for n in with_topology_levels(inv, levels, source="t.conf").nodes}
    assert racks == {"mix01:a100": "s1", "mix01:t4": "s1", "gpu01": "s2"}


PARTS = {"mix01:a100": ("mix01", "a100"), "mix01:t4": ("mix01", "t4"), "mix02:t4": ("mix02", "t4")}


def _on(job: str, *where: tuple[str, list[int]]) -> Decision:
    return Decision(
        placements=[JobPlacement(job=job, replicas=[ReplicaPlacement(node=n, gpus=g) for n, g in where])]
    )


def test_the_script_pins_the_slurm_node_and_the_gpu_type_placer_chose() -> None:
    text, skipped = slurm_script(
        _on("5", ("mix01:t4", [0, 1])), [Job(id="5", source_format="slurm")], set(), (), PARTS
    )
    assert skipped == []
    (line,) = [x for x in text.splitlines() if x.startswith("scontrol")]
    assert line == (
        "scontrol update JobId=5 NumNodes=1 NodeList=mix01 && scontrol update JobId=5 TresPerNode= "
        "&& scontrol update JobId=5 TresPerNode=gres:gpu:t4:2 && scontrol release 5"
    )
    # Two nodes, same type and count per node: one request says it.
    text, skipped = slurm_script(
        _on("6", ("mix01:t4", [0]), ("mix02:t4", [1])), [Job(id="6", source_format="slurm")], set(), (), PARTS
    )
    assert skipped == [] and "NodeList=mix01,mix02 " in text and "TresPerNode=gres:gpu:t4:1" in text
    # CPU work on a part: no GPU type to pin.
    text, skipped = slurm_script(
        _on("7", ("mix01:a100", [])), [Job(id="7", source_format="slurm")], set(), (), PARTS
    )
    assert skipped == [] and "TresPerNode" not in text and "NodeList=mix01 " in text


@pytest.mark.parametrize(
    "where",
    [
        (("mix01:t4", [0]), ("gpu01", [0])),  # a node of one type besides: Slurm would require t4 there too
        (("mix01:a100", [0]), ("mix02:t4", [0])),  # two types
        (("mix01:t4", [0, 1]), ("mix02:t4", [0])),  # two counts per node
    ],
)
def test_what_one_request_per_node_cannot_say_is_not_applied_and_named(where: tuple) -> None:  # type: ignore[type-arg]
    text, skipped = slurm_script(_on("8", *where), [Job(id="8", source_format="slurm")], set(), (), PARTS)
    assert "JobId=8" not in text
    assert len(skipped) == 1 and skipped[0].startswith("8: placed on a node of several GPU types")


def test_a_node_going_down_by_its_slurm_name_takes_all_its_parts() -> None:
    c = with_availability(_cluster(MIX + "\n" + ONE), {"mix01": False})
    assert {n.name: n.usable for n in c.nodes} == {"mix01:a100": False, "mix01:t4": False, "gpu01": True}
    c = with_availability(c, {"mix01": True})
    assert all(n.usable for n in c.nodes)
    with pytest.raises(TopologyError, match="no node or TPU pod 'mix02'"):
        with_availability(c, {"mix02": False})
