"""Slurm ``scontrol show node`` text -> Inventory: records, Gres, states, partitions, allocations."""

from __future__ import annotations

from pathlib import Path

import pytest

from placer.topology.errors import TopologyError
from placer.topology.importers._common import Problems
from placer.topology.importers.slurm import (
    parse_gres,
    parse_memory_mb,
    parse_slurm,
    parse_state,
    split_records,
)
from placer.topology.inventory import Inventory, NodeSpec

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "importers" / "slurm_nodes.txt"


@pytest.fixture(scope="module")
def sample() -> Inventory:
    return parse_slurm(SAMPLE.read_text(), source=str(SAMPLE))


def nodes_of(inv: Inventory) -> dict[str, NodeSpec]:
    return {n.name: n for n in inv.nodes}


def test_sample_counts(sample: Inventory) -> None:
    nodes = nodes_of(sample)
    assert list(nodes) == ["gpu-h100-01", "gpu-h100-02", "gpu-a100-01", "gpu-a100-02", "gpu-t4-01", "cpu-01"]
    by_type: dict[str, int] = {}
    for n in nodes.values():
        if n.gpus:
            by_type[n.gpus.type] = by_type.get(n.gpus.type, 0) + n.gpus.count
    # h100: 2 nodes x 8; a100: 2 x 4; t4: 1 x 2
    assert by_type == {"nvidia-h100": 16, "nvidia-a100": 8, "nvidia-t4": 2}
    h = nodes["gpu-h100-01"]
    # CPUTot 224 = Sockets 2 x CoresPerSocket 56 x ThreadsPerCore 2: Slurm's CPUs are threads, 112 cores;
    # RealMemory 2064384 MB / 1024 = 2016 GB; TmpDisk 3584000 MB / 1024 = 3500 GB
    assert (h.cpu_cores, h.memory_gb, h.storage_gb) == (112, 2016, 3500)
    assert h.labels["slurm_cpus_per_core"] == "2"
    assert nodes["gpu-a100-01"].memory_gb == 1007  # 1031168 / 1024


def test_sample_states(sample: Inventory) -> None:
    nodes = nodes_of(sample)
    ready = {n: s.ready for n, s in nodes.items()}
    schedulable = {n: s.schedulable for n, s in nodes.items()}
    # MIXED: both; IDLE+DRAIN: ready, not schedulable; ALLOCATED: both; DOWN*+DRAIN: neither;
    # IDLE+CLOUD+POWERED_DOWN: not ready (off), schedulable (Slurm powers it up); IDLE: both
    assert ready == {
        "gpu-h100-01": True,
        "gpu-h100-02": True,
        "gpu-a100-01": True,
        "gpu-a100-02": False,
        "gpu-t4-01": False,
        "cpu-01": True,
    }
    assert schedulable == {
        "gpu-h100-01": True,
        "gpu-h100-02": False,
        "gpu-a100-01": True,
        "gpu-a100-02": False,
        "gpu-t4-01": True,
        "cpu-01": True,
    }
    assert nodes["gpu-h100-02"].labels["slurm_state"] == "IDLE+DRAIN"


def test_sample_partitions_and_features(sample: Inventory) -> None:
    nodes = nodes_of(sample)
    h = nodes["gpu-h100-01"]
    assert (h.labels["partition"], h.labels["partitions"]) == ("gpu", "gpu,gpu-long")
    assert h.properties == ["h100", "ib", "nvlink"]
    assert h.labels["arch"] == "x86_64"
    assert nodes["cpu-01"].properties == []  # ActiveFeatures=(null)
    assert nodes["cpu-01"].labels["partitions"] == "cpu,debug"


def test_sample_allocations(sample: Inventory) -> None:
    jobs = {j.job: j for j in sample.running}
    # only the MIXED and ALLOCATED nodes have AllocTRES
    assert sorted(jobs) == ["slurm-alloc-gpu-a100-01", "slurm-alloc-gpu-h100-01"]
    (r,) = jobs["slurm-alloc-gpu-h100-01"].replicas
    # AllocTRES=cpu=64,mem=512G,gres/gpu=4 (64 threads: 32 cores); GresUsed IDX:0-3
    assert (r.node, r.cpu_cores, r.memory_gb, r.gpus) == ("gpu-h100-01", 32, 512, [0, 1, 2, 3])
    (r,) = jobs["slurm-alloc-gpu-a100-01"].replicas
    assert (r.cpu_cores, r.memory_gb, r.gpus) == (64, 900, [0, 1, 2, 3])  # all 128 CPUs: 64 cores
    assert jobs["slurm-alloc-gpu-a100-01"].priority_class == "on-demand"


def test_sample_inner_tree(sample: Inventory) -> None:
    h = nodes_of(sample)["gpu-h100-01"]
    # Sockets=2 CoresPerSocket=56: 2 socket vertices, each with a pooled core vertex of size 56;
    # 8 GPUs on (S:0-1): 4 per socket
    assert [v.type for v in h.inner] == ["socket", "socket"]
    for socket in h.inner:
        assert sum(c.size for c in socket.children if c.type == "core") == 56
        assert sum(c.type == "gpu" for c in socket.children) == 4
    assert [c.name for c in h.inner[1].children if c.type == "core"] == ["core56-111"]
    assert h.inner[0].children[0].properties == {"threads": "2"}
    assert [c.name for c in h.inner[1].children if c.type == "gpu"] == ["gpu4", "gpu5", "gpu6", "gpu7"]
    a = nodes_of(sample)["gpu-a100-01"]
    # (S:0): all 4 A100s on socket 0
    assert [sum(c.type == "gpu" for c in s.children) for s in a.inner] == [4, 0]
    t4 = nodes_of(sample)["gpu-t4-01"]
    # no socket list: GPUs hang under the node, beside the single socket
    assert [v.type for v in t4.inner] == ["socket", "gpu", "gpu"]


def test_one_line_format() -> None:
    text = (
        "NodeName=g1 Arch=x86_64 CoresPerSocket=4 CPUAlloc=0 CPUTot=8 Gres=gpu:a100:2 "
        "OS=Linux 5.15.0 #1 SMP Tue RealMemory=64000 Sockets=2 State=IDLE ThreadsPerCore=1 Partitions=a "
        "Reason=Not responding [root@2024]\n"
        "NodeName=g2 CPUTot=4 RealMemory=1024 State=ALLOCATED+DRAIN\n"
    )
    inv = parse_slurm(text, source="o.txt")
    g1, g2 = inv.nodes
    assert (g1.cpu_cores, g1.memory_gb, g1.labels["partition"]) == (8, 62.5, "a")  # 64000 / 1024
    assert g1.gpus is not None and g1.gpus.count == 2
    assert (g2.ready, g2.schedulable) == (True, False)


def test_space_values_run_to_the_next_known_key() -> None:
    records = split_records("NodeName=a OS=Linux 6.1 #1 SMP State=IDLE Reason=x y=z w", Problems("t"))
    ((_, rec),) = records
    assert rec["OS"] == "Linux 6.1 #1 SMP"
    assert rec["State"] == "IDLE"
    assert rec["Reason"] == "x y=z w"  # y is not a Slurm key: still the reason


@pytest.mark.parametrize(
    ("state", "ready", "schedulable"),
    [
        ("IDLE", True, True),
        ("MIXED", True, True),
        ("ALLOCATED", True, True),
        ("COMPLETING", True, True),
        ("DOWN", False, False),
        ("DOWN*", False, False),
        ("IDLE*", False, False),  # not responding
        ("DRAIN", True, False),
        ("IDLE+DRAIN", True, False),
        ("MIXED+DRAIN", True, False),
        ("DRAINING", True, False),
        ("DRAINED", True, False),
        ("DOWN+DRAIN", False, False),
        ("IDLE+NOT_RESPONDING", False, False),
        ("ALLOCATED+NOT_RESPONDING", False, False),
        ("IDLE+MAINTENANCE", True, False),
        ("IDLE+RESERVED", True, True),
        ("IDLE+FAIL", True, False),
        ("IDLE+REBOOT_REQUESTED", True, False),
        ("IDLE+CLOUD+POWERED_DOWN", False, True),
        ("IDLE~", False, True),
        ("IDLE+POWERING_UP", False, True),
        ("UNKNOWN", False, False),
        ("FUTURE", False, False),
        ("idle", True, True),
    ],
)
def test_states(state: str, ready: bool, schedulable: bool) -> None:
    assert parse_state(state) == (ready, schedulable, [])
    (n,) = parse_slurm(f"NodeName=n CPUTot=1 State={state}", source="s").nodes
    assert (n.ready, n.schedulable) == (ready, schedulable)


@pytest.mark.parametrize(
    ("gres", "expected"),
    [
        ("gpu:h100:8(S:0-1)", [("gpu", "h100", 8, (0, 1))]),
        ("gpu:8", [("gpu", None, 8, ())]),
        ("gpu:a100", [("gpu", "a100", 1, ())]),
        ("gpu:a100:4(S:0),gpu:t4:2", [("gpu", "a100", 4, (0,)), ("gpu", "t4", 2, ())]),
        ("gpu:h100:8(S:0,2-3),shard:h100:64", [("gpu", "h100", 8, (0, 2, 3)), ("shard", "h100", 64, ())]),
        ("mps:400K", [("mps", None, 400 * 1024, ())]),
        ("(null)", []),
    ],
)
def test_gres_forms(gres: str, expected: list[tuple[object, ...]]) -> None:
    assert [(g.name, g.type, g.count, g.sockets) for g in parse_gres(gres)] == expected


def test_untyped_gpus_are_unknown_gpu() -> None:
    (n,) = parse_slurm("NodeName=n CPUTot=8 Gres=gpu:8", source="s").nodes
    assert n.gpus is not None and (n.gpus.type, n.gpus.count) == ("unknown-gpu", 8)


def test_pcie_gres_name_keeps_memory_and_form() -> None:
    # "a100_pcie_40gb" is the 40 GB PCIe card, not the catalog's default 80 GB NVLink A100
    (n,) = parse_slurm("NodeName=n CPUTot=8 Gres=gpu:a100_pcie_40gb:2", source="s").nodes
    assert n.gpus is not None
    assert (n.gpus.type, n.gpus.count, n.gpus.memory_gb, n.gpus.interconnect) == (
        "nvidia-a100",
        2,
        40,
        "pcie",
    )


def test_non_gpu_gres_become_labels() -> None:
    (n,) = parse_slurm("NodeName=n CPUTot=8 Gres=gpu:a100:2,nic:2", source="s").nodes
    assert n.labels["gres/nic"] == "2"


def test_memory_units() -> None:
    assert parse_memory_mb("256G") == 256 * 1024
    assert parse_memory_mb("1T") == 1024 * 1024
    assert parse_memory_mb("2048") == 2048
    assert parse_memory_mb("512K") == 0.5


def test_allocation_without_alloctres_uses_cpualloc_and_gresused() -> None:
    text = (
        "NodeName=n CPUTot=16 RealMemory=1024 CPUAlloc=4 AllocMem=512 Gres=gpu:t4:4 "
        "GresUsed=gpu:t4:2(IDX:1,3)"
    )
    (job,) = parse_slurm(text, source="s").running
    (r,) = job.replicas
    # 512 MB = 0.5 GB; the IDX list says GPUs 1 and 3
    assert (job.job, r.cpu_cores, r.memory_gb, r.gpus) == ("slurm-alloc-n", 4, 0.5, [1, 3])


def test_allocation_without_idx_takes_lowest_indices() -> None:
    text = "NodeName=n CPUTot=16 Gres=gpu:t4:4 AllocTRES=cpu=2,gres/gpu:t4=3"
    (job,) = parse_slurm(text, source="s").running
    assert job.replicas[0].gpus == [0, 1, 2]


@pytest.mark.parametrize(
    ("text", "item", "problem"),
    [
        ("NodeName=g01 CPUTot=x", "record 1 (NodeName=g01)", "CPUTot 'x' is not a whole number"),
        (
            "NodeName=a CPUTot=1\n\nNodeName=g02 State=SLEEPY",
            "record 2 (NodeName=g02)",
            "unknown state SLEEPY",
        ),
        ("NodeName=g01 Gres=gpu:h100:8(S:x)", "record 1 (NodeName=g01)", "socket list 'x' is malformed"),
        (
            "NodeName=g01 CPUTot=4 Gres=gpu:a100:4(S:0),gpu:t4:2 CPUAlloc=1 GresUsed=gpu:a100:1,gpu:t4:0",
            "record 1 (NodeName=g01)",
            "GPU usage per type unknown",
        ),
        (
            "NodeName=g01 CPUTot=4 Gres=gpu:t4:2 AllocTRES=gres/gpu=3",
            "record 1 (NodeName=g01)",
            "3 GPUs are allocated but the node has 2",
        ),
        (
            "NodeName=g01 CPUTot=4 AllocTRES=cpu=8",
            "record 1 (NodeName=g01)",
            "8 CPUs are allocated but CPUTot is 4",
        ),
        (
            "NodeName=g01 CPUTot=4 AllocTRES=mem=lots",
            "record 1 (NodeName=g01)",
            "memory 'lots' is not like 256G",
        ),
        ("NodeName=a\nNodeName=a", "record 2 (NodeName=a)", "node 'a' appears twice"),
        ("NodeName=a CPUTot=4 garbage", "line 1", "unexpected text 'garbage'"),
        ("CPUTot=4", "line 1", "CPUTot= before the first NodeName="),
        ("", "document", "no NodeName= records"),
        ("Node g01 not found", "line 1", "unexpected text 'Node'"),
    ],
)
def test_malformed_records_name_file_item_problem(text: str, item: str, problem: str) -> None:
    with pytest.raises(TopologyError) as e:
        parse_slurm(text, source="nodes.txt")
    p = e.value.problems[0]
    assert (p.source, p.item) == ("nodes.txt", item)
    assert problem in p.message


def test_not_text() -> None:
    with pytest.raises(TopologyError, match=r"nodes.txt: document: expected scontrol show node text"):
        parse_slurm({"NodeName": "x"}, source="nodes.txt")


def test_untyped_gres_builds_a_cluster_whose_gpus_match_no_typed_request() -> None:
    # "Gres=gpu:8" names no model: the node has 8 GPUs of type unknown-gpu, placeable by count only.
    from placer.topology import build_cluster, summary

    text = (
        "NodeName=g01 Arch=x86_64 CoresPerSocket=16 CPUTot=32 RealMemory=257000 Sockets=2 "
        "ThreadsPerCore=1 Gres=gpu:8 State=IDLE Partitions=gpu"
    )
    cluster = build_cluster(parse_slurm(text, source="nodes.txt"), source="nodes.txt")
    node = cluster.node("g01")
    assert (node.gpu_type, node.gpu_count, node.gpu_memory_gb) == ("unknown-gpu", 8, None)
    assert summary(cluster)["gpus"] == {"unknown-gpu": 8}


# -- what Slurm 22.05 printed (captured from the live Slurm of test_importers_slurm_live.py) ----------------

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"


def _free_gpus(inv: Inventory) -> dict[str, int]:
    from placer.topology import build_cluster

    cluster = build_cluster(inv)
    return {n.name: len(cluster.free_gpus(n.name)) for n in cluster.nodes if n.gpu_count}


def test_sinfo_json_and_show_node_d_agree_on_gpus_in_use() -> None:
    # The capture: mine (8 H100, jobs of 2 + 3 GPUs), gpu01 (4 of 8 held), gpu02 (1 of 8), gpu03 (4 A100
    # of 4), gpu04 (8, down, none held).
    import json

    from placer.topology.load import inventory_from_input

    d = _free_gpus(parse_slurm((REAL / "show-node-d-22.05.txt").read_text(), source="show-node-d"))
    j = _free_gpus(inventory_from_input(json.loads((REAL / "sinfo-22.05.json").read_text()), source="sinfo"))
    assert d == j
    assert sum(j.values()) == (8 - 5) + (8 - 4) + (8 - 1) + (4 - 4) + 8


def test_plain_show_node_without_gpu_accounting_is_refused() -> None:
    with pytest.raises(TopologyError, match="GPU usage unknown"):
        parse_slurm((REAL / "show-node-22.05.txt").read_text(), source="show-node")


def test_an_idle_node_without_gres_usage_is_read_as_free() -> None:
    # Nothing runs there (no CPUs or memory allocated), so no GPU can be held either.
    text = "NodeName=g1 CPUTot=8 RealMemory=1000 Gres=gpu:h100:8 State=IDLE CPUAlloc=0"
    inv = parse_slurm(text, source="x")
    assert _free_gpus(inv) == {"g1": 8}


def test_gpu_accounting_makes_alloc_tres_authoritative() -> None:
    # CfgTRES lists gres/gpu when it is accounted: AllocTRES then says how many GPUs are held.
    text = (
        "NodeName=g1 CPUTot=8 RealMemory=1000 Gres=gpu:h100:8 State=MIXED CPUAlloc=2 "
        "CfgTRES=cpu=8,mem=1000M,gres/gpu=8 AllocTRES=cpu=2,gres/gpu=3"
    )
    assert _free_gpus(parse_slurm(text, source="x")) == {"g1": 5}


def test_json_node_that_is_not_an_object_is_named() -> None:
    doc = {"meta": {"Slurm": {"release": "22.05.8"}}, "nodes": [{"name": "a", "cpus": 2}, 7]}
    with pytest.raises(TopologyError, match=r"nodes\[1\]"):
        parse_slurm(doc, source="sinfo.json")


def test_a_reason_holding_key_like_words_is_free_text() -> None:
    # An operator's reason may say anything, `Port=` and `State=` included (both forms print it last).
    why = "Reason=moved Port=2 State=bad [ops@t]"
    multi = f"NodeName=g1 CPUTot=8 RealMemory=1000 State=IDLE+DRAIN\n   {why}\n"
    one = f"NodeName=g2 CPUTot=8 RealMemory=1000 State=IDLE+DRAIN {why} Comment=rack 4 swap\n"
    inv = parse_slurm(multi + "\n" + one, source="x")
    assert [n.labels["slurm_reason"] for n in inv.nodes] == ["moved Port=2 State=bad [ops@t]"] * 2
    assert [n.schedulable for n in inv.nodes] == [False, False]
    assert inv.nodes[1].labels["slurm_comment"] == "rack 4 swap"
