"""placer against a live Slurm (``tests/topology/live_slurm.py``): what Slurm itself prints, read back.

The arithmetic (module docstring of ``live_slurm``): gpu01 has 8 H100 and jobs holding 2 + 3, so 3 free;
gpu02 8 H100 with 4 held, drained; gpu03 4 A100 all held; gpu04 8 H100, none held, down; cpu01 no GPU,
drained. Usable GPU nodes are therefore gpu01 and gpu02's state says DRAIN (not schedulable), gpu04 is not
ready.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from placer.topology import build_cluster
from placer.topology.errors import TopologyError
from placer.topology.load import inventory_from_input
from tests.topology.live_slurm import LiveSlurm, available, start

#: Free GPUs per node by the module docstring's arithmetic, and which GPU indices are held.
FREE = {"gpu01": 3, "gpu02": 4, "gpu03": 0, "gpu04": 8}
HELD = {"gpu01": 5, "gpu02": 4, "gpu03": 4, "gpu04": 0}


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveSlurm]:
    why = available()
    if why is not None:
        pytest.fail(f"a live Slurm cannot start here: {why}; .ci/run installs it (Debian packages)")
    s = start(Path(tmp_path_factory.mktemp("slurm")))
    try:
        yield s
    finally:
        s.stop()


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
