"""Scenario files: bad ones give structured errors naming the field (never a traceback), good ones build
the cluster, jobs, failures and reservations they say; the committed JSON Schema is current."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placer.cli.schema import schema
from placer.scenarios.inputs import prepare
from placer.scenarios.load import ScenarioError, load_scenario, load_scenario_text
from placer.solver.jobs.errors import ISSUE_CODES

REPO = Path(__file__).resolve().parents[2]

BASE = """
name: t
horizon: 1h
cluster: {builders: [{dgx_h100: {count: 2}}]}
workload: {jobs: [{id: a, ext_ml_gpu_count: 1, ext_ml_timeout_seconds: 60}]}
"""


def _with(**sections: str) -> str:
    """BASE with top-level sections replaced (or added), given as YAML text."""
    lines = [ln for ln in BASE.strip().splitlines() if ln.split(":")[0] not in sections]
    return "\n".join(lines + [f"{k}: {v}" for k, v in sections.items()]) + "\n"


def _one_class(fields: str) -> str:
    """A synthetic workload of one job class with ``fields`` (YAML flow text)."""
    return "{synthetic: {arrivals: {rate_per_hour: 1}, classes: [{" + fields + "}]}}"


def _issues(text: str) -> list[tuple[str, str]]:
    """(path, code) of every problem, whether found reading the file or building what it names."""
    try:
        prepare(load_scenario_text(text, source="s.yaml"), base=None)
    except ScenarioError as e:
        assert e.issues, "a ScenarioError always says what is wrong"
        assert all(i.code in ISSUE_CODES for i in e.issues)
        return [(i.path, i.code) for i in e.issues]
    raise AssertionError("the scenario was accepted")


@pytest.mark.parametrize(
    ("text", "path", "code"),
    [
        (_with(intreval="30s"), "intreval", "unsupported"),
        (_with(horizon="soon"), "horizon", "type"),
        (_with(horizon="-1h"), "horizon", "type"),
        (_with(interval="1s", horizon="30d"), "scenario", "limit"),
        (_with(start="2026-01-01T00:00:00"), "start", "type"),
        (_with(cluster="{layout: S, file: c.yaml}"), "cluster", "conflict"),
        (_with(cluster="{layout: XL}"), "cluster.layout", "enum"),
        (
            _with(cluster="{layout: {pools: [{shape: dgx-h100, nodes: 0}]}}"),
            "cluster.layout.pools[0].nodes",
            "range",
        ),
        (_with(cluster="{builders: [{dgx_h200: {count: 2}}]}"), "cluster.builders[0]", "enum"),
        (_with(cluster="{builders: [{dgx_h100: {count: two}}]}"), "cluster.builders[0].dgx_h100.n", "type"),
        (
            _with(cluster="{builders: [{dgx_h100: {count: 2, racks: 1}}]}"),
            "cluster.builders[0].dgx_h100.racks",
            "unsupported",
        ),
        (_with(cluster="{file: no/such/cluster.yaml}"), "cluster.file", "required"),
        (_with(workload="{}"), "workload", "conflict"),
        (
            _with(workload="{jobs: [{id: a, ext_ml_gpu_count: eight}]}"),
            "workload.jobs[0].ext_ml_gpu_count",
            "type",
        ),
        (_with(workload="{jobs: [{submit: later, id: a}]}"), "workload.jobs[0].submit", "type"),
        (_with(workload="{trace: {loader: nope, file: x.csv}}"), "workload.trace.loader", "enum"),
        (_with(workload="{trace: {loader: philly, file: no/such.csv}}"), "workload.trace.file", "required"),
        (
            _with(workload="{synthetic: {arrivals: {process: poisson}, classes: [{name: a, duration: 1h}]}}"),
            "workload.synthetic.arrivals",
            "required",
        ),
        (
            _with(workload=_one_class("name: a, duration: 1h, gpus: {1: -1}")),
            "workload.synthetic.classes[0].gpus",
            "range",
        ),
        (
            _with(workload=_one_class("name: a, duration: {dist: lognormal}")),
            "workload.synthetic.classes[0].duration",
            "required",
        ),
        (
            _with(workload=_one_class("name: a, duration: 1h, tpu: {topology: 2x5x}")),
            "workload.synthetic.classes[0].tpu.topology.2x5x",
            "type",
        ),
        (_with(policy="{engine: fast}"), "policy.engine", "enum"),
        (_with(policy="{weights: {bogus: 1}}"), "policy.weights.bogus", "unsupported"),
        (_with(policy="{weights: {seed: 1}}"), "policy.weights", "conflict"),
        (_with(prices="{gpu: {nvidia-h100: {spot: -1}}}"), "prices.gpu.nvidia-h100.spot", "range"),
        (_with(failures="{events: [{node: dgx-9, at: 1h}]}"), "failures.events[0].node", "enum"),
        (_with(failures="{random: {mtbf: 1d, nodes: [tpu-*]}}"), "failures.random.nodes", "enum"),
        (_with(reservations="[{id: r, nodes: [dgx-9]}]"), "reservations[0].nodes[0]", "enum"),
        # a DGX H100 has 8 GPUs: 9 cannot be reserved on one
        (_with(reservations="[{id: r, gpus: {dgx-h100-1: 9}}]"), "reservations[0].gpus.dgx-h100-1", "range"),
        (_with(reservations="[{id: r, nodes: [dgx-h100-1], start: 2h, end: 1h}]"), "reservations[0]", "type"),
    ],
)
def test_bad_scenarios_name_the_field(text: str, path: str, code: str) -> None:
    assert (path, code) in _issues(text)


@pytest.mark.parametrize(
    "text", ["name: [\n", "- a\n- b\n", "!!python/object/apply:os.system ['true']\n", ""]
)
def test_unreadable_documents_are_malformed(text: str) -> None:
    with pytest.raises(ScenarioError) as e:
        load_scenario_text(text)
    assert [(i.path, i.code) for i in e.value.issues] == [("scenario", "malformed")]


def test_several_problems_are_reported_together() -> None:
    found = _issues(_with(horizon="soon", interval="never", seed="x"))
    assert {p for p, _ in found} == {"horizon", "interval", "seed"}


def test_a_good_scenario_builds_what_it_says(tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("gpu: {nvidia-h100: {on-demand: 10.0}}\n")
    text = _with(
        start="2026-03-01T00:00:00Z",
        prices="prices.yaml",
        failures="{events: [{node: dgx-h100-2, at: 30m, for: 10m}]}",
        reservations="[{id: r, gpus: {dgx-h100-1: 4}, start: 10m, timeout: 5m}]",
        policy="{engine: cpsat, time_limit_s: 0.5, weights: {restart_penalty_s: 60}}",
    )
    (tmp_path / "s.yaml").write_text(text)
    inputs = prepare(load_scenario(tmp_path / "s.yaml"), base=tmp_path, seed=7)
    assert inputs.seed == 7 and inputs.policy.seed == 7 and inputs.policy.restart_penalty_s == 60
    assert inputs.policy.engine == "cpsat" and inputs.policy.reproducible
    assert inputs.prices.gpu_hour("nvidia-h100", "on-demand") == 10.0
    [f] = inputs.failures
    assert (f.node, f.down.minute, f.up.minute) == ("dgx-h100-2", 30, 40)
    [r] = inputs.reservations
    assert (r.start.minute, r.timeout_s, r.gpus) == (10, 300, {"dgx-h100-1": 4})
    assert [j.id for j in inputs.jobs] == ["a"] and inputs.jobs[0].submit_time == inputs.start


def test_committed_scenario_schema_is_up_to_date() -> None:
    committed = (REPO / "docs" / "schemas" / "scenario.schema.json").read_text()
    expected = json.dumps(schema("scenario"), indent=2, sort_keys=True) + "\n"
    assert committed == expected, "regenerate: placer schema scenario > docs/schemas/scenario.schema.json"


@pytest.mark.parametrize(
    "path", sorted((REPO / "scenarios" / "library").glob("*.yaml")), ids=lambda p: p.stem
)
def test_library_scenarios_validate_against_the_schema(path: Path) -> None:
    import jsonschema

    from placer.topology.safe_load import load_yaml

    doc = json.loads(json.dumps(load_yaml(path.read_text()), default=str))
    jsonschema.validate(doc, json.loads((REPO / "docs" / "schemas" / "scenario.schema.json").read_text()))
