"""Format detection and file loading into an Inventory (no graph): safe reading, errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.topology.errors import TopologyError
from placer.topology.load import MAX_FILE_BYTES, detect_cluster_format, load_inventory, read_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "importers"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ojs_workers.json", "ojs-workers"),
        ("kubernetes_nodes.json", "kubernetes"),
        ("slurm_nodes.txt", "slurm"),
        ("flux_jgf.json", "jgf"),
    ],
)
def test_detect_samples(name: str, expected: str) -> None:
    assert detect_cluster_format((EXAMPLES / name).read_text()) == expected


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"nodes": [{"name": "a"}]}, "inventory"),
        ({"version": 1, "tpu_pods": []}, "inventory"),
        ("name: lab\nnodes:\n  - name: a\n", "inventory"),
        ({"kind": "NodeList", "apiVersion": "v1", "items": []}, "kubernetes"),
        ({"kind": "Node", "metadata": {"name": "a"}}, "kubernetes"),
        ([{"kind": "Node"}], "kubernetes"),
        ("apiVersion: v1\nkind: List\nitems: []\n", "kubernetes"),  # kubectl -o yaml
        ({"graph": {"nodes": []}}, "jgf"),
        ({"version": 1, "execution": {"R_lite": []}}, "jgf"),
        ({"version": 1, "scheduling": {"graph": {}}}, "jgf"),
        ({"worker_id": "w"}, "ojs-workers"),
        ({"workers": []}, "ojs-workers"),
        ([{"worker_id": "w"}], "ojs-workers"),
        ("\n\n   NodeName=a State=IDLE", "slurm"),
    ],
)
def test_detect_shapes(doc: object, expected: str) -> None:
    assert detect_cluster_format(doc) == expected


@pytest.mark.parametrize(
    "doc", [{"hello": 1}, [], [1, 2], 42, "just words", {"kind": "Deployment", "spec": {}}]
)
def test_detect_unknown(doc: object) -> None:
    with pytest.raises(TopologyError, match=r"c.json: document: cannot tell the cluster format"):
        detect_cluster_format(doc, source="c.json")


def test_detect_pod_list_says_use_pods() -> None:
    with pytest.raises(TopologyError, match="give it with --pods"):
        detect_cluster_format({"kind": "List", "items": [{"kind": "Pod"}]}, source="p.json")


def test_load_each_sample() -> None:
    # counts by hand, as in the per-format tests: 5 OJS machines, 9 Kubernetes nodes, 6 Slurm nodes, 4 Flux
    counts = {
        "ojs_workers.json": 5,
        "kubernetes_nodes.json": 9,
        "slurm_nodes.txt": 6,
        "flux_jgf.json": 4,
    }
    for name, expected in counts.items():
        inv = load_inventory(EXAMPLES / name)
        assert len(inv.nodes) == expected, name
        assert inv.metadata["source"] == str(EXAMPLES / name)


def test_load_kubernetes_with_pods() -> None:
    inv = load_inventory(EXAMPLES / "kubernetes_nodes.json", pods=EXAMPLES / "kubernetes_pods.json")
    # llm-train, inference, debug-shell, tpu-train-slice-0, kube-proxy, best-effort (it holds a pod slot)
    assert len(inv.running) == 6


def test_explicit_format_overrides_detection(tmp_path: Path) -> None:
    f = tmp_path / "nodes.json"
    f.write_text(json.dumps({"worker_id": "w1", "capabilities": {"cpu_cores": 4}}))
    assert load_inventory(f, "ojs-workers").nodes[0].cpu_cores == 4
    with pytest.raises(TopologyError, match="expected a Kubernetes List"):
        load_inventory(f, "kubernetes")


def test_inventory_file(tmp_path: Path) -> None:
    f = tmp_path / "lab.yaml"
    f.write_text("name: lab\nnodes:\n  - name: h100\n    count: 2\n    gpus: {type: nvidia-h100, count: 8}\n")
    inv = load_inventory(f)
    assert inv.name == "lab"
    assert [n.name for n in inv.expanded_nodes()] == ["h100-1", "h100-2"]


def test_bad_inventory_names_file_item(tmp_path: Path) -> None:
    f = tmp_path / "bad.yaml"
    f.write_text("nodes:\n  - name: a\n  - name: gpu-7\n    cpu_cores: -4\n")
    with pytest.raises(TopologyError) as e:
        load_inventory(f)
    text = str(e.value)
    assert str(f) in text and "nodes[1] (gpu-7)" in text and "cpu_cores" in text


def test_pods_only_with_kubernetes() -> None:
    with pytest.raises(TopologyError, match="--pods goes with a Kubernetes node list, not with slurm"):
        load_inventory(EXAMPLES / "slurm_nodes.txt", pods=EXAMPLES / "kubernetes_pods.json")


def test_unknown_format_name() -> None:
    with pytest.raises(TopologyError, match="unknown format 'yaml'"):
        load_inventory(EXAMPLES / "slurm_nodes.txt", "yaml")


def test_missing_file_is_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_inventory(tmp_path / "nope.json")


def test_errors_name_the_file(tmp_path: Path) -> None:
    f = tmp_path / "nodes.txt"
    f.write_text("NodeName=g01 CPUTot=64\n\nNodeName=g02 CPUTot=lots\n")
    with pytest.raises(TopologyError) as e:
        load_inventory(f)
    assert str(e.value) == f"{f}: record 2 (NodeName=g02): CPUTot 'lots' is not a whole number"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe\x00garbage", "not UTF-8 text"),
        (b'{"nodes": [1, 2,]}', "invalid JSON at line 1"),
        (b'{"workers": [{"worker_id": "a", "cpu": NaN}]}', "invalid JSON"),
        (b'{"a": 1, "a": 2}', "duplicate key 'a'"),
        (b"nodes: [unclosed", "invalid YAML"),
        (b"a: !!python/object/apply:os.system ['true']", "invalid YAML"),
        (b"a: &x [1]\n" + b"".join(b"k%d: *x\n" % i for i in range(150)), "more than 100 aliases"),
        (b"[" * 100 + b"]" * 100, "nested deeper than 64"),
    ],
)
def test_unreadable_files(tmp_path: Path, content: bytes, message: str) -> None:
    f = tmp_path / "c.json"
    f.write_bytes(content)
    with pytest.raises(TopologyError) as e:
        load_inventory(f)
    assert str(e.value).startswith(f"{f}: document: ")
    assert message in str(e.value)


def test_size_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import placer.topology.load

    monkeypatch.setattr(placer.topology.load, "MAX_FILE_BYTES", 10)
    f = tmp_path / "big.json"
    f.write_text('{"nodes": []}')  # 13 bytes > 10
    with pytest.raises(TopologyError, match="larger than 10 bytes"):
        read_text(f)
    assert MAX_FILE_BYTES == 256 * 1024 * 1024
