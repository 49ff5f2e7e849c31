"""Slurm's topology files read as racks, blocks and zones (``topology/importers/slurm_topology.py``).

The live test reads what Slurm 22.05 prints for its own ``topology.conf`` (``scontrol show topology``);
these check each form and each refusal, and that a gang read from a Slurm cluster stays under one leaf
switch once placer knows the switches.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.cli import main
from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.solver.jobs import read_files
from placer.topology.errors import TopologyError
from placer.topology.importers.slurm_topology import parse_slurm_topology, topology_from_document
from placer.topology.load import load_cluster

TREE = """# three levels: leaves, aggregation, core
SwitchName=leaf1 Nodes=n[1-2]
SwitchName=leaf2 Nodes=n[3-4]
SwitchName=leaf3 Nodes=n[5-6]
SwitchName=agg1 Switches=leaf[1-2]
SwitchName=agg2 Switches=leaf3
SwitchName=core Switches=agg[1-2]
"""


def test_a_tree_gives_rack_block_and_zone_from_the_leaf_up() -> None:
    levels = parse_slurm_topology(TREE, source="topology.conf")
    assert levels["n1"] == {"rack": "leaf1", "block": "agg1", "zone": "core"}
    assert levels["n5"] == {"rack": "leaf3", "block": "agg2", "zone": "core"}
    assert sorted(levels) == [f"n{i}" for i in range(1, 7)]


def test_blocks_and_the_yaml_forms() -> None:
    conf = "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\nBlockSizes=4,8\n"
    assert parse_slurm_topology(conf, source="t")["n6"] == {"block": "b2"}
    yaml_tree = [
        {
            "topology": "t1",
            "cluster_default": True,
            "tree": {
                "switches": [
                    {"switch": "top", "children": "s[1-2]"},
                    {"switch": "s1", "nodes": "n[1-2]"},
                    {"switch": "s2", "nodes": "n[3-4]"},
                ]
            },
        },
        {"topology": "t2", "block": {"blocks": [{"block": "x", "nodes": "n[1-4]"}]}},
    ]
    assert topology_from_document(yaml_tree, source="y")["n3"] == {"rack": "s2", "block": "top"}
    assert topology_from_document(yaml_tree[1:], source="y")["n3"] == {"block": "x"}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n", "node n1: on two leaf switches"),
        ("SwitchName=a Switches=nope\n", "names unknown switch 'nope'"),
        ("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "switches form a cycle"),
        ("SwitchName=a Nodes=n[1-\n", "line 1: hostlist"),
        ("SwitchName=a Nodes=n1 Speed=9\n", "line 1: unknown key(s) Speed"),
        ("NodeName=n1\n", "a record starts with SwitchName= or BlockName="),
    ],
)
def test_what_is_wrong_is_named(text: str, words: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm_topology(text, source="topology.conf")
    assert words in str(e.value)


NODES = "\n".join(
    f"NodeName=n{i} CPUTot=64 RealMemory=512000 Gres=gpu:h100:8 State=IDLE Partitions=gpu"
    for i in range(1, 5)
)
# Leaf switches interleave with node order: n1 and n3 share one, n2 and n4 the other. Without the
# topology, node order alone would put a 2-node gang on n1 and n2, across switches.
INTERLEAVED = "SwitchName=even Nodes=n[2,4]\nSwitchName=odd Nodes=n[1,3]\nSwitchName=top Switches=even,odd\n"
GANG = {
    "id": "gang",
    "type": "ml.train",
    "queue": "q",
    "args": [],
    "ext_ml_gpu_count": 16,
    "ext_ml_gpu_type": "nvidia-h100",
    "ext_ml_distributed_strategy": "data_parallel",
}


@pytest.mark.parametrize("engine", ["greedy", "auto"])
def test_a_gang_stays_under_one_leaf_switch(
    engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "nodes.txt").write_text(NODES + "\n")
    (tmp_path / "topology.conf").write_text(INTERLEAVED)
    (tmp_path / "job.json").write_text(json.dumps(GANG))
    argv = ["place", "--cluster", str(tmp_path / "nodes.txt"), "--jobs", str(tmp_path / "job.json"), "--json"]
    assert main([*argv, "--slurm-topology", str(tmp_path / "topology.conf"), "--engine", engine]) == 0
    decision = Decision.model_validate(json.loads(capsys.readouterr().out))
    (placed,) = decision.placements
    nodes = sorted(r.node for r in placed.replicas)
    assert nodes in (["n1", "n3"], ["n2", "n4"]), nodes
    jobs = [r.job for r in read_files([str(tmp_path / "job.json")]) if r.job is not None]
    assert check(decision, jobs, load_cluster(tmp_path / "nodes.txt"), now=decision.now) == []


def test_a_topology_of_another_cluster_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "nodes.txt").write_text(NODES + "\n")
    (tmp_path / "topology.conf").write_text("SwitchName=s Nodes=gpu[01-02]\n")
    (tmp_path / "job.json").write_text(json.dumps(GANG))
    argv = ["place", "--cluster", str(tmp_path / "nodes.txt"), "--jobs", str(tmp_path / "job.json")]
    assert main([*argv, "--slurm-topology", str(tmp_path / "topology.conf")]) == 1
    assert "nodes not in the cluster: gpu01, gpu02" in capsys.readouterr().err
