"""Inventory files: examples import, bad files give TopologyError naming file/item/problem, the schema
file is up to date, and random documents never raise anything else."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from placer.topology import (
    Cluster,
    Inventory,
    TopologyError,
    build_cluster,
    count_free_slices,
    read_inventory,
    summary,
)
from placer.topology.schema import inventory_schema_text

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "clusters"


def _load(name: str) -> Cluster:
    path = EXAMPLES / name
    return build_cluster(read_inventory(path), source=str(path))


def test_h100_training_example() -> None:
    c = _load("h100-training.yaml")
    s = summary(c)
    # 4 racks x 4 DGX = 16 nodes + 8 L4 nodes = 24; GPUs 16*8 = 128 H100, 8*4 = 32 L4
    assert s["nodes"] == 24
    assert s["gpus"] == {"nvidia-h100": 128, "nvidia-l4": 32}
    # held: pretrain-7b 2 nodes x 8 = 16, finetune-small 4 -> 128 - 20 = 108 free; one L4 shared -> 31
    assert s["free_gpus"] == {"nvidia-h100": 108, "nvidia-l4": 31}
    # 16 DGX domains; 8-free ones: 16 - 2 (full) - 1 (dgx-r2-1 half used) = 13
    assert s["nvlink_domains"] == 16
    assert len(c.free_nvlink_domains("nvidia-h100", min_free=8)) == 13
    assert c.node("l4-spot-1").labels["gpu_type"] == "nvidia-l4"  # NVIDIA-L4 canonicalized


def test_gb200_example() -> None:
    c = _load("gb200-nvl72.yaml")
    # 2 racks x 18 trays; domains of 72; moe-train holds 2 trays x 4 = 8 GPUs of rack a -> 64 free there
    assert len(c.nodes) == 36
    assert sorted((d.id, c.domain_free(d.id)) for d in c.nvlink_domains()) == [
        ("nvl72-a", 64),
        ("nvl72-b", 72),
    ]


def test_tpu_fleet_example() -> None:
    c = _load("tpu-v5e-fleet.yaml")
    assert summary(c)["tpu_chips"] == {"v5e": 528}  # 256 + 256 + 16
    assert c.free_tpu_chips("v5e-pod-a") == 248  # 256 - 8
    # pod-b empty: 128 free 2x4 slices (see test_tpu); pod-a: the held 2x4 at origin (0,0) blocks hosts
    # (0,0) and (0,1). 2x4 placements touching either host: orientation 2x4 (hosts (x,y),(x,y+1)) with
    # x=0 and y in {7,0,1} -> 3; orientation 4x2 (hosts (x,y),(x+1,y)) with y in {0,1} and x in {7,0} -> 4.
    # 128 - 7 = 121 in pod-a.  The fixed 4x4 node pool offers no 2x4.
    assert count_free_slices(c, "2x4", pod="v5e-pod-a") == 121
    assert count_free_slices(c, "2x4", pod="v5e-pod-b") == 128
    assert count_free_slices(c, "4x4", pod="v5e-nodepool-4x4") == 1


def test_mixed_example() -> None:
    c = _load("mixed.yaml")
    s = summary(c)
    # 4 cpu + 3 a100 + 1 cordoned + 2 l40s + 1 flux = 11 nodes; the cordoned one is not usable -> 10
    assert (s["nodes"], s["nodes_total"]) == (10, 11)
    assert s["gpus"] == {"nvidia-a100": 32, "nvidia-l40s": 16, "nvidia-t4": 2}
    # free a100: 32 - 8 (cordoned) - 8 (train-a100) = 16
    assert s["free_gpus"]["nvidia-a100"] == 16
    assert c.node("flux-node").labels["ib"] == "true"
    assert c.tpu_pod("v5p-small").wrap == (True, True, True)


def test_examples_round_trip() -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        c = build_cluster(read_inventory(path), source=str(path))
        inv = c.to_inventory()
        assert read_inventory(inv.model_dump_json(), source="again.json") == inv


def test_schema_file_is_up_to_date() -> None:
    committed = (REPO / "docs" / "schemas" / "inventory.schema.json").read_text()
    assert committed == inventory_schema_text(), (
        "regenerate: python -m placer.topology.schema > docs/schemas/..."
    )


def test_examples_validate_against_schema() -> None:
    import jsonschema

    schema = json.loads(inventory_schema_text())
    for path in sorted(EXAMPLES.glob("*.yaml")):
        doc = json.loads(read_inventory(path).model_dump_json())
        jsonschema.validate(doc, schema)


def _problems(text: str, name: str = "cluster.yaml") -> list[str]:
    with pytest.raises(TopologyError) as exc:
        read_inventory(text, source=name)
    return [str(p) for p in exc.value.problems]


def test_pydantic_errors_are_translated() -> None:
    text = """
nodes:
  - name: a
  - name: gpu-7
    memory_gb: lots
    gpus: {type: t4, count: -1}
    colour: blue
tpu_pods:
  - {name: p, type: v5e, shape: [16, 0]}
running:
  - {job: j, replicas: [{gpus: [0]}]}
"""
    assert _problems(text) == [
        "cluster.yaml: nodes[1] (gpu-7): memory_gb: Input should be a valid number, "
        "unable to parse string as a number (got 'lots')",
        "cluster.yaml: nodes[1] (gpu-7): gpus.count: Input should be greater than or equal to 0 (got -1)",
        "cluster.yaml: nodes[1] (gpu-7): colour: unknown field (not part of the inventory format)",
        "cluster.yaml: tpu_pods[0] (p): every TPU mesh dimension must be >= 1",
        "cluster.yaml: running[0] (j): replicas.0: a replica allocation needs a node or a tpu_pod",
    ]


def test_bad_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(TopologyError) as exc:
        read_inventory(missing)
    assert str(exc.value) == f"{missing}: file: no such file"
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00nodes")
    with pytest.raises(TopologyError, match=r"bin.yaml: file: not UTF-8"):
        read_inventory(binary)
    evil = tmp_path / "evil.yaml"
    evil.write_text("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(TopologyError, match=r"evil.yaml: document: invalid YAML"):
        read_inventory(evil)
    dup = tmp_path / "dup.json"
    dup.write_text('{"nodes": [], "nodes": []}')
    with pytest.raises(TopologyError, match=r"dup.json: document: invalid JSON: duplicate key 'nodes'"):
        read_inventory(str(dup))
    lst = tmp_path / "list.yaml"
    lst.write_text("- a\n- b\n")
    with pytest.raises(
        TopologyError, match=r"list.yaml: document: an inventory is a mapping .* this document is list"
    ):
        read_inventory(lst)
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    with pytest.raises(TopologyError, match="this document is empty"):
        read_inventory(empty)


def test_yaml_alias_bomb_is_refused() -> None:
    bomb = "a: &a [x, x, x]\n" + "".join(
        f"b{i}: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" for i in range(20)
    )
    assert "more than 100 aliases" in _problems(bomb)[0]


def test_deep_nesting_is_refused() -> None:
    assert "nested deeper than 64" in _problems("[" * 100 + "]" * 100, "deep.json")[0]


def test_semantic_errors_name_file_via_build(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("nodes:\n  - {name: gpu, count: 9, gpus: {type: nvidia-h10, count: 8}}\n")
    with pytest.raises(TopologyError) as exc:
        build_cluster(read_inventory(path), source=str(path))
    assert str(exc.value).startswith(f"{path}: nodes[0] (gpu): unknown GPU type 'nvidia-h10'")


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.floats(allow_nan=True), st.text(max_size=8)
)
_docs = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)
_keys = st.sampled_from(
    [
        "name",
        "count",
        "gpus",
        "type",
        "shape",
        "nodes",
        "tpu_pods",
        "running",
        "replicas",
        "node",
        "tpu_pod",
        "tpu_chips",
        "job",
        "memory_gb",
        "cpu_cores",
        "wrap",
        "inner",
    ]
)
_inventoryish = st.fixed_dictionaries(
    {},
    optional={
        "nodes": st.lists(st.dictionaries(_keys, _docs, max_size=5), max_size=3),
        "tpu_pods": st.lists(st.dictionaries(_keys, _docs, max_size=5), max_size=2),
        "running": st.lists(st.dictionaries(_keys, _docs, max_size=4), max_size=2),
        "version": _scalars,
    },
)


@given(st.one_of(_docs, _inventoryish))
def test_random_documents_only_raise_topology_error(doc: object) -> None:
    try:
        text = json.dumps(doc)
    except (ValueError, TypeError):
        return
    for rendered in (text, "x: " + text):
        try:
            inv = read_inventory(rendered, source="fuzz")
        except TopologyError as e:
            assert all(p.source == "fuzz" for p in e.problems)
            continue
        with contextlib.suppress(TopologyError):
            build_cluster(inv, source="fuzz")


@given(st.text(max_size=200))
def test_random_text_only_raises_topology_error(text: str) -> None:
    with contextlib.suppress(TopologyError):
        read_inventory(text + "\n", source="fuzz")


def test_valid_inventory_object_passes() -> None:
    inv = read_inventory('{"name": "x", "nodes": [{"name": "a", "gpus": {"type": "h100", "count": 8}}]}')
    assert isinstance(inv, Inventory) and inv.name == "x"


def test_docs_yaml_examples_build() -> None:
    import re

    from placer.topology import inventory_from_document
    from placer.topology.safe_load import parse_yaml

    text = (REPO / "docs" / "inventory.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    built = 0
    for block in blocks:
        doc = parse_yaml(block, source="docs/inventory.md")
        if "nodes" in doc or "tpu_pods" in doc:
            build_cluster(inventory_from_document(doc, "docs/inventory.md"))
            built += 1
    assert built == 5  # GPU training, NVL72, PCIe inference, CPU/Flux, TPU fleet


def test_impossible_date_in_an_inventory_is_a_topology_error() -> None:
    # Regression (shared loader): a YAML timestamp the date constructor refuses must not escape.
    from placer.topology.errors import TopologyError
    from placer.topology.inventory_file import read_inventory

    with pytest.raises(TopologyError, match="day is out of range"):
        read_inventory("nodes: []\nmetadata: {built: 2001-12-99}\n", source="inv.yaml")
