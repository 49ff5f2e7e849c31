"""Hypothesis: random and malformed documents thrown at every importer; only TopologyError may escape."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.topology.errors import TopologyError
from placer.topology.importers import parse_jgf, parse_kubernetes, parse_ojs_workers, parse_slurm
from placer.topology.inventory import Inventory
from placer.topology.load import detect_cluster_format
from tests.support import containers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "importers"
K8S_NODES = json.loads((EXAMPLES / "kubernetes_nodes.json").read_text())
K8S_PODS = json.loads((EXAMPLES / "kubernetes_pods.json").read_text())
OJS = json.loads((EXAMPLES / "ojs_workers.json").read_text())
JGF = json.loads((EXAMPLES / "flux_jgf.json").read_text())
SLURM = (EXAMPLES / "slurm_nodes.txt").read_text()

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(
        ["8", "-1", "1.5", "12Zi", "2x4", "tpu-v5-lite-podslice", "nvidia-h100", "Node", "True", ""]
    ),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """The base document with 1-4 random places replaced by random values or deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 4))):
        places = containers(doc)
        target = places[draw(st.integers(0, len(places) - 1))]
        if not target:
            continue
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        key = keys[draw(st.integers(0, len(keys) - 1))]
        if draw(st.booleans()) and isinstance(target, dict):
            del target[key]
        else:
            target[key] = draw(json_values)
    return doc


def only_topology_errors(fn: Any, *args: Any, **kwargs: Any) -> None:
    try:
        result = fn(*args, **kwargs)
    except TopologyError as e:
        assert e.problems and all(p.source and p.item and p.message for p in e.problems)
        return
    assert isinstance(result, Inventory | str)


@given(json_values)
def test_random_documents(doc: Any) -> None:
    for fn in (parse_ojs_workers, parse_kubernetes, parse_jgf, parse_slurm):
        only_topology_errors(fn, doc, source="fuzz")
    only_topology_errors(detect_cluster_format, doc)


@given(mutated(K8S_NODES), mutated(K8S_PODS))
def test_mutated_kubernetes(nodes: Any, pods: Any) -> None:
    only_topology_errors(parse_kubernetes, nodes, pods, source="nodes.json", pods_source="pods.json")


@given(mutated(OJS))
def test_mutated_ojs_workers(doc: Any) -> None:
    only_topology_errors(parse_ojs_workers, doc, source="workers.json")


@given(mutated(JGF))
def test_mutated_jgf(doc: Any) -> None:
    only_topology_errors(parse_jgf, doc, source="r.json")


slurm_tokens = st.sampled_from(
    [
        "NodeName=",
        "n1",
        " ",
        "\n",
        "\n\n",
        "=",
        "CPUTot=",
        "Gres=",
        "gpu:",
        "h100",
        ":8",
        "(S:0-1)",
        "(IDX:",
        ")",
        ",",
        "State=",
        "IDLE",
        "+DRAIN",
        "*",
        "AllocTRES=",
        "cpu=4",
        "mem=",
        "G",
        "GresUsed=",
        "Reason=",
        "Sockets=",
        "CoresPerSocket=",
        "99999999999",
        "-1",
        "RealMemory=",
        "Partitions=",
        "a,b",
        "(null)",
    ]
)


@given(st.lists(slurm_tokens, max_size=40).map("".join))
def test_random_slurm_text(text: str) -> None:
    only_topology_errors(parse_slurm, text, source="nodes.txt")
    only_topology_errors(detect_cluster_format, text)


@given(st.data())
def test_mutated_slurm_text(data: st.DataObject) -> None:
    lines = SLURM.splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        cut = data.draw(st.integers(0, len(line)))
        lines[i] = line[:cut] + data.draw(st.text(max_size=10) | slurm_tokens) + line[cut + 1 :]
    only_topology_errors(parse_slurm, "\n".join(lines), source="nodes.txt")


@given(st.text(max_size=200))
def test_random_text_everywhere(text: str) -> None:
    for fn in (parse_ojs_workers, parse_kubernetes, parse_jgf, parse_slurm):
        only_topology_errors(fn, text, source="fuzz.txt")
    only_topology_errors(detect_cluster_format, text)
