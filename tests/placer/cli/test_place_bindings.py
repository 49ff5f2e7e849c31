"""``placer place --output bindings``: v1 Binding objects for the placed pending pods (issue
"Kubernetes-native", item 3), validated against the Binding schema kept in
``tests/fixtures/kubernetes/binding.schema.json`` (source noted there)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from placer.cli import main

REPO = Path(__file__).resolve().parents[3]
NODES = str(REPO / "examples" / "importers" / "kubernetes_nodes.json")
PODS = str(REPO / "tests" / "fixtures" / "kubernetes" / "pending_pods.json")
WORKLOADS = str(REPO / "tests" / "fixtures" / "kubernetes" / "workloads.json")
SCHEMA = json.loads((REPO / "tests" / "fixtures" / "kubernetes" / "binding.schema.json").read_text())


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["place", "--cluster", NODES, "--engine", "greedy", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_bindings_are_valid_and_name_the_decided_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _run(capsys, "--jobs", PODS, "--output", "bindings")
    doc = json.loads(out)
    assert rc == 0 and doc["kind"] == "List"
    for item in doc["items"]:
        jsonschema.validate(item, SCHEMA)
    rc, out, _ = _run(capsys, "--jobs", PODS, "--json")
    decision = json.loads(out)
    decided = {p["job"]: p["replicas"][0]["node"] for p in decision["placements"]}
    bound = {
        f"{b['metadata']['namespace']}/{b['metadata']['name']}": b["target"]["name"] for b in doc["items"]
    }
    assert bound == decided and "ml/l4-infer" not in bound  # pending pods get no Binding


def test_workloads_get_no_invented_pod_names(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(capsys, "--jobs", WORKLOADS, "--output", "bindings")
    assert rc == 0 and json.loads(out)["items"] == []
    assert "not a pending pod (kubernetes-workload)" in err


def test_the_schema_can_fail() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {}}, SCHEMA
        )
