"""The sweep file: every problem is an issue naming the sweep field that caused it (also problems found
only once a scenario is merged with a variant, a policy and the overrides); merges replace variant
fields whole and policy fields one by one; the grid's size and order; the committed JSON Schema.

Nothing here simulates: these tests read files and build the grid.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from placer.cli.schema import schema
from placer.scenarios.sweep import SweepError, grid, load_sweep
from tests.conftest import REPO
from tests.scenarios.sweep.conftest import SCENARIO, SWEEP, write

SHIPPED = sorted((REPO / "scenarios" / "library" / "sweeps").glob("*.yaml"))


def _issues(tmp_path: Path, sweep: str, scenario: str = SCENARIO) -> list[tuple[str, str]]:
    with pytest.raises(SweepError) as e:
        load_sweep(write(tmp_path, sweep, scenario))
    return [(i.path, i.code) for i in e.value.issues]


@pytest.mark.parametrize(
    ("change", "path", "code"),
    [
        ({"seed": [1]}, "seed", "unsupported"),
        ({"name": "two words"}, "name", "range"),
        ({"scenarios": []}, "scenarios", "range"),
        ({"scenarios": ["tiny.yaml", "tiny.yaml"]}, "scenarios", "duplicate"),
        ({"scenarios": ["gone.yaml"]}, "scenarios[0]", "required"),
        ({"seeds": []}, "seeds", "range"),
        ({"seeds": [1, "two"]}, "seeds[1]", "type"),
        ({"seeds": {"start": 1, "count": 0}}, "seeds", "range"),
        ({"seeds": {"start": 1}}, "seeds", "required"),
        ({"policies": {"fast": {"engine": "fast"}}}, "policies.fast.engine", "enum"),
        ({"policies": {"x": {"time_limit_s": 0}}}, "policies.x.time_limit_s", "range"),
        ({"policies": {"x": {"enigne": "greedy"}}}, "policies.x.enigne", "unsupported"),
        ({"policies": {"x": {"weights": {"seed": 3}}}}, "policies.x.weights", "conflict"),
        ({"policies": {}}, "policies", "required"),
        ({"variants": {"v": {"policy": {"engine": "cpsat"}}}}, "variants.v.policy", "unsupported"),
        ({"variants": {"v": {"cluster": {"layout": "XL"}}}}, "variants.v.cluster.layout", "enum"),
        (
            {"variants": {"v": {"cluster": {"layout": "S", "file": "c.json"}}}},
            "variants.v.cluster",
            "conflict",
        ),
        ({"overrides": {"horizon": "soon"}}, "overrides.horizon", "type"),
        ({"overrides": {"seed": 3}}, "overrides.seed", "unsupported"),
        (
            {"seeds": {"start": 0, "count": 1000}, "policies": {f"p{i}": {} for i in range(11)}},
            "sweep",
            "limit",
        ),
    ],
)
def test_a_bad_sweep_file_names_the_field(tmp_path: Path, change: dict, path: str, code: str) -> None:
    doc = {"name": "w", "scenarios": ["tiny.yaml"], "seeds": [1], **change}
    assert (path, code) in _issues(tmp_path, json.dumps(doc))


def test_problems_found_in_the_merged_scenario_name_the_sweep_field(tmp_path: Path) -> None:
    # Each piece is valid alone; merged with the scenario they are not: one interval a second for a
    # year is too many intervals (the overrides); a variant's cluster without nodes (the variant).
    sweep = {
        "name": "w",
        "scenarios": ["tiny.yaml"],
        "seeds": [1],
        "variants": {"long": {"horizon": "52w", "interval": "1s"}, "ok": {}},
    }
    issues = _issues(tmp_path, json.dumps(sweep))
    assert [p for p, _ in issues] == ["variants.long"] and issues[0][1] == "limit"
    sweep["overrides"] = {"interval": "1s"}
    sweep["variants"] = {"ok": {"horizon": "30d"}}
    assert _issues(tmp_path, json.dumps(sweep)) == [("overrides", "limit")]


def test_a_bad_scenario_file_is_reported_under_its_index(tmp_path: Path) -> None:
    issues = _issues(tmp_path, SWEEP, SCENARIO.replace("interval: 1m", "intreval: 1m"))
    assert ("scenarios[0].intreval", "unsupported") in issues
    (tmp_path / "twin.yaml").write_text(SCENARIO)  # another file, the same scenario name
    assert ("scenarios[1]", "duplicate") in _issues(
        tmp_path, SWEEP.replace("[tiny.yaml]", "[tiny.yaml, twin.yaml]")
    )


def test_not_a_mapping_and_not_yaml(tmp_path: Path) -> None:
    assert _issues(tmp_path, "- a\n- b\n") == [("sweep", "malformed")]
    assert _issues(tmp_path, "name: [unclosed\n")[0] == ("sweep", "malformed")


def test_merge_replaces_variant_fields_and_merges_policy_fields(tiny_sweep: Path) -> None:
    sweep = load_sweep(tiny_sweep)
    small, big = sweep.merged[(0, "small", "cpsat")], sweep.merged[(0, "big", "no-preemption")]
    assert small.cluster.builders == [{"dgx_h100": {"count": 2}}]  # the scenario's own
    assert big.cluster.builders == [{"dgx_h100": {"count": 3}}]  # replaced by the variant
    # The scenario says greedy, 30 s, plan false; the policy changes only what it names.
    assert (small.policy.engine, small.policy.time_limit_s, small.policy.plan) == ("cpsat", 30, False)
    assert (big.policy.engine, big.policy.preemption, big.policy.plan) == ("greedy", False, False)
    assert (small.horizon, small.interval, big.horizon) == (7200, 300, 7200)  # overrides, last
    assert small.seed == 5 and small.name == "tiny"


def test_the_grid_is_the_cartesian_product_in_the_stated_order(tiny_sweep: Path) -> None:
    sweep = load_sweep(tiny_sweep)
    cells = grid(sweep)
    # scenarios x variants x policies x seeds: the seed varies fastest, the scenario slowest.
    expected = list(
        itertools.product(["tiny"], ["small", "big"], ["greedy", "cpsat", "no-preemption"], [1, 2])
    )
    assert len(cells) == 1 * 2 * 3 * 2
    assert [(c.scenario, c.variant, c.policy, c.seed) for c in cells] == expected
    assert [c.index for c in cells] == list(range(12))
    assert Path(cells[0].base) == tiny_sweep.parent.absolute()
    assert json.loads(json.dumps(cells[0].as_json())) == cells[0].as_json()  # plain data, for any worker


def test_without_variants_or_policies_a_cell_is_the_scenario_as_written(tmp_path: Path) -> None:
    sweep = load_sweep(write(tmp_path, "name: w\nscenarios: [tiny.yaml]\nseeds: {start: 7, count: 3}\n"))
    cells = grid(sweep)
    assert [(c.variant, c.policy, c.seed) for c in cells] == [("base", "scenario", s) for s in (7, 8, 9)]
    assert cells[0].spec["horizon"] == 86400 and cells[0].spec["policy"]["engine"] == "greedy"


def test_committed_sweep_schema_is_up_to_date() -> None:
    committed = (REPO / "docs" / "schemas" / "sweep.schema.json").read_text()
    expected = json.dumps(schema("sweep"), indent=2, sort_keys=True) + "\n"
    assert committed == expected, "regenerate: placer schema sweep > docs/schemas/sweep.schema.json"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_sweeps_load_and_validate_against_the_schema(path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from placer.topology.safe_load import load_yaml

    assert grid(load_sweep(path))
    doc = json.loads(json.dumps(load_yaml(path.read_text()), default=str))
    jsonschema.validate(doc, json.loads((REPO / "docs" / "schemas" / "sweep.schema.json").read_text()))


def test_shipped_sweeps_exist() -> None:
    assert [p.stem for p in SHIPPED] and "h100-policies" in [p.stem for p in SHIPPED]
