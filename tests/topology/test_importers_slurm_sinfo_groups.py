"""``sinfo --json`` as Slurm 23.11 and later print it: a ``sinfo`` list of node groups, not a ``nodes`` list
(``topology/importers/slurm_json.py::sinfo_records``).

The fixture ``tests/fixtures/slurm/sinfo-N-24.11-shape.json`` is written in the shape Slurm 24.11's
``sinfo -N --json`` prints (each group's keys and nesting as a Slurm 24.11 site documented them; there is no
Slurm 23.11+ on this machine to capture one live: Debian 12 ships 22.05, whose ``sinfo --json`` the live
tests read). Its figures: gpu01 has 8 H100 with 0-4 in use and is listed once per partition (gpu,
scavenger); gpu02 is drained with nothing in use; mix01 has A100 1 and T4 2 in use."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from placer.topology import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.load import inventory_from_input

FIXTURE = Path(__file__).parent.parent / "fixtures" / "slurm" / "sinfo-N-24.11-shape.json"


def _doc() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def test_each_node_once_with_its_free_gpus_partitions_and_state() -> None:
    inv = inventory_from_input(_doc(), source="sinfo.json")
    c = build_cluster(inv)
    free = {n.name: c.free_gpus(n.name) for n in c.nodes}
    assert free == {"gpu01": (5, 6, 7), "gpu02": tuple(range(8)), "mix01:a100": (0,), "mix01:t4": (1,)}
    nodes = {n.name: n for n in inv.nodes}
    assert nodes["gpu01"].labels["partitions"] == "gpu,scavenger"  # listed twice, read once
    assert nodes["gpu01"].properties == ["ib"]
    assert (nodes["gpu02"].ready, nodes["gpu02"].schedulable) == (True, False)  # IDLE+DRAIN
    assert nodes["gpu02"].labels["slurm_reason"] == "bad fan"
    assert c.free_cpu("gpu01") == 64 - 8 and nodes["gpu01"].memory_gb == pytest.approx(515072 / 1024)


def test_a_group_of_several_nodes_is_refused_naming_it() -> None:
    # Without -N, sinfo groups nodes of one state and shape: the group's allocated CPUs are its nodes' sum,
    # so no node's own figures can be read from it.
    doc = _doc()
    doc["sinfo"][2]["nodes"]["nodes"] = ["gpu02", "gpu03"]
    with pytest.raises(TopologyError) as e:
        inventory_from_input(doc, source="sinfo.json")
    assert "sinfo[2]: a group of 2 nodes (gpu02, gpu03): give `sinfo -N --json`" in str(e.value)


def test_a_node_whose_partitions_disagree_is_refused() -> None:
    doc = _doc()
    doc["sinfo"][1]["cpus"]["allocated"] = 9
    with pytest.raises(TopologyError) as e:
        inventory_from_input(doc, source="sinfo.json")
    assert "sinfo[0] (gpu01): listed again in partition 'scavenger' with other CPUAlloc" in str(e.value)


@pytest.mark.parametrize("bad", [{"nodes": "gpu01"}, {"node": "MIXED"}, {"partition": ["gpu"]}, {"cpus": 7}])
def test_odd_shapes_are_named_never_a_traceback(bad: dict[str, Any]) -> None:
    doc = _doc()
    group = copy.deepcopy(doc["sinfo"][2])
    group.update(bad)
    doc["sinfo"] = [group]
    try:
        inv = inventory_from_input(doc, source="sinfo.json")
    except TopologyError as e:
        assert "sinfo[0]" in str(e)
    else:  # what is not there is not read: the node stands with what the group did say
        assert [n.name for n in inv.nodes] == ["gpu02"]
