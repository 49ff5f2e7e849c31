"""Dollar budgets on the command line: ``placer place --queue-config`` (``ml_limits.max_cost_per_hour``)
and ``--prices`` (``budgets.tenants``), ``placer check --prices`` re-checking the same decision, and the
JSON Schemas ``placer schema prices`` / ``queue-config`` that document both inputs.

H100 on-demand $12.29 per GPU-hour (solver/data/prices.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from placer.cli import check as check_cli
from placer.cli import place as place_cli
from placer.cli.schema import schema

CLUSTER = {
    "name": "t",
    "nodes": [
        {"name": "dgx", "cpu_cores": 224, "memory_gb": 2048, "gpus": {"type": "nvidia-h100", "count": 8}}
    ],
}


def _envelope(job_id: str, gpus: int, queue: str, tenant: str) -> dict[str, object]:
    return {
        "id": job_id,
        "type": "ml.train",
        "queue": queue,
        "args": [],
        "meta": {"tenant": tenant},
        "ext_ml_gpu_count": gpus,
    }


def _files(tmp_path: Path) -> dict[str, str]:
    docs = {
        "cluster.json": CLUSTER,
        # Queue "train" may spend $40/h; tenant "acme" $30/h across its queues.
        "queues.json": [{"queue": "train", "config": {"ml_limits": {"max_cost_per_hour": 40}}}],
        "prices.json": {"budgets": {"tenants": {"acme": 30}}},
        "jobs.json": [
            _envelope("t1", 1, "train", "globex"),
            _envelope("t2", 1, "train", "globex"),
            _envelope("t3", 1, "train", "globex"),
            _envelope("t4", 1, "train", "globex"),
            _envelope("a-big", 2, "serve", "acme"),
            _envelope("a-small", 1, "serve", "acme"),
        ],
    }
    out = {}
    for name, doc in docs.items():
        (tmp_path / name).write_text(json.dumps(doc))
        out[name.split(".")[0]] = str(tmp_path / name)
    return out


def _run(module: object, command: str, *argv: str) -> int:
    parser = argparse.ArgumentParser(prog="placer")
    module.add_parser(parser.add_subparsers())  # type: ignore[attr-defined]
    args = parser.parse_args([command, *argv])
    return int(args.run(args))


def test_place_keeps_over_budget_jobs_pending_and_check_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _files(tmp_path)
    inputs = ["--cluster", f["cluster"], "--jobs", f["jobs"], "--queue-config", f["queues"]]
    rc = _run(place_cli, "place", *inputs, "--prices", f["prices"], "--engine", "greedy", "--json")
    assert rc == 0
    decision = json.loads(capsys.readouterr().out)
    placed = sorted(p["job"] for p in decision["placements"])
    # train: three 1-GPU jobs (36.87 $/h) within $40; acme: the 2-GPU job (24.58) within $30, not both.
    assert placed == ["a-big", "t1", "t2", "t3"]
    codes = {p["job"]: p["reasons"][0]["code"] for p in decision["pending"]}
    assert codes == {"t4": "COST_BUDGET", "a-small": "COST_BUDGET"}
    assert decision["rejected"] == []
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decision))
    checked = [*inputs, "--decision", str(path)]
    assert _run(check_cli, "check", *checked, "--prices", f["prices"]) == 0
    # The same decision against a stricter tenant budget breaks rule 17.
    (tmp_path / "strict.json").write_text(json.dumps({"budgets": {"tenants": {"acme": 20}}}))
    capsys.readouterr()
    assert _run(check_cli, "check", *checked, "--prices", str(tmp_path / "strict.json")) == 1
    assert "[cost-budget] job acme" in capsys.readouterr().out


def test_table_shows_the_dollar_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    argv = [
        "--cluster",
        f["cluster"],
        "--jobs",
        f["jobs"],
        "--queue-config",
        f["queues"],
        "--engine",
        "greedy",
    ]
    assert _run(place_cli, "place", *argv) == 0
    assert "t4: COST_BUDGET: queue 'train' is over its dollar budget" in capsys.readouterr().out


def test_bad_budgets_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _files(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps({"budgets": {"tenants": {"acme": -5}}}))
    argv = ["--cluster", f["cluster"], "--jobs", f["jobs"], "--prices", str(tmp_path / "bad.json")]
    assert _run(place_cli, "place", *argv) == 1
    assert "budgets.tenants.acme" in capsys.readouterr().err
    (tmp_path / "badq.json").write_text(
        json.dumps({"queue": "q", "config": {"ml_limits": {"max_cost_per_hour": "cheap"}}})
    )
    argv = ["--cluster", f["cluster"], "--jobs", f["jobs"], "--queue-config", str(tmp_path / "badq.json")]
    assert _run(place_cli, "place", *argv) == 1


def test_schemas_document_both_budgets() -> None:
    prices = schema("prices")
    assert prices["properties"]["budgets"] == {"$ref": "#/$defs/CostBudgets"}
    tenants = prices["$defs"]["CostBudgets"]["properties"]["tenants"]
    assert tenants["additionalProperties"]["minimum"] == 0
    assert tenants["additionalProperties"]["maximum"] == 1e9  # $/h: summed as integers in CP-SAT
    limits = schema("queue-config")["$defs"]["MlLimits"]["properties"]
    assert {"type": "number", "minimum": 0, "maximum": 1e9} in limits["max_cost_per_hour"]["anyOf"]
