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
PATCH_SCHEMA = json.loads((REPO / "tests" / "fixtures" / "kubernetes" / "json-patch.schema.json").read_text())


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


def _apply(doc: dict, patch: list[dict]) -> dict:  # type: ignore[type-arg]
    """RFC 6902 test/add/remove on a copy of ``doc`` — written here, apart from placer's code."""
    import copy

    out = copy.deepcopy(doc)
    for op in patch:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        target = out
        for p in parents:
            target = target[int(p)] if isinstance(target, list) else target[p]
        key = int(last) if isinstance(target, list) else last
        if op["op"] == "test":
            assert target[key] == op["value"], op
        elif op["op"] == "add":
            target[key] = op["value"]
        elif op["op"] == "remove":
            del target[key]
        else:
            raise AssertionError(op)
    return out


def test_a_gated_pod_gets_the_patch_that_pins_it_and_lifts_placers_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    pods = json.loads(Path(PODS).read_text())
    train = next(p for p in pods["items"] if p["metadata"]["name"] == "h100-train")
    train["spec"]["schedulingGates"] = [{"name": "placer.io/place"}]  # waits for placer alone
    other = next(p for p in pods["items"] if p["metadata"]["name"] == "cpu-prep")
    other["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "placer.io/place"}]
    (tmp_path / "pods.json").write_text(json.dumps(pods))
    rc, out, err = _run(capsys, "--jobs", str(tmp_path / "pods.json"), "--output", "bindings")
    bound = {b["metadata"]["name"] for b in json.loads(out)["items"]}
    assert rc == 0 and "h100-train" not in bound and "cpu-prep" not in bound  # gated pods cannot be bound
    line = next(x for x in err.splitlines() if "ml/h100-train: gated" in x)
    argv = shlex.split(line.split(" with: ", 1)[1])
    assert argv[:7] == ["kubectl", "patch", "pod", "h100-train", "-n", "ml", "--type=json"]
    jsonschema.validate(json.loads(argv[8]), PATCH_SCHEMA)  # a well-formed RFC 6902 document
    patched = _apply(train, json.loads(argv[8]))
    assert patched["spec"]["nodeSelector"]["kubernetes.io/hostname"] == "gke-a3-h100-node-1"
    assert patched["spec"]["schedulingGates"] == []  # placer's gate lifted
    # cpu-prep also waits for example.com/quota: not placed and no patch, as kube-scheduler would not queue
    # it; once its owner lifts that gate, it is placer's like h100-train.
    assert "ml/cpu-prep" not in err
    rc, out, _ = _run(capsys, "--jobs", str(tmp_path / "pods.json"), "--json")
    [waiting] = [p for p in json.loads(out)["pending"] if p["job"] == "ml/cpu-prep"]
    assert waiting["reasons"][0] == {
        "code": "SCHEDULING_GATED",
        "message": "not schedulable until its scheduling gates are removed: example.com/quota",
        "details": {"gates": ["example.com/quota"]},
    }


def test_the_patch_schema_can_fail() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"op": "add", "path": "/spec/nodeSelector"}], PATCH_SCHEMA)  # add needs a value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"op": "remove", "path": "spec"}], PATCH_SCHEMA)  # not a JSON Pointer
