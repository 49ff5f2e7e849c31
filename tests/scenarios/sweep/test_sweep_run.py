"""Running sweeps: the process pool and a real local Ray (num_cpus=2, started once for this module) give
the same table in grid order; a cell equals an independent simulator run of the same scenario and seed;
a failing cell is an error row and the others still run; ``placer sweep``'s output files and exit codes.

The tiny sweep (``conftest.py``) has 12 cells of a fraction of a second each: the time goes into starting
Ray (~7 s) and the worker processes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import ray

import placer.scenarios.sweep as sweep_api
from placer.cli import main
from placer.scenarios.inputs import prepare
from placer.scenarios.load import load_scenario, with_overrides
from placer.scenarios.sim.loop import Simulator
from placer.scenarios.sim.metrics import summary
from placer.scenarios.sweep import COLUMNS, TIMING, frame, grid, load_sweep, run_cells, run_sweep
from tests.scenarios.sweep.conftest import SWEEP, write

BROKEN = """
name: broken
horizon: 1h
cluster: {file: no-such-inventory.json}
workload: {jobs: []}
"""


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for the module; the sweep uses it (and leaves it running) when it is already up."""
    ray.init(
        address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING"
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def by_processes(tiny_sweep: Path) -> pd.DataFrame:
    return run_sweep(load_sweep(tiny_sweep), backend="processes", parallel=2)


def _stable(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns=list(TIMING))


def test_the_table_has_one_row_per_cell_in_grid_order(by_processes: pd.DataFrame) -> None:
    t = by_processes
    assert list(t.columns) == list(COLUMNS) and len(t) == 12
    assert list(t["cell"]) == list(range(12))
    assert list(zip(t["variant"], t["policy"], t["seed"], strict=True))[:4] == [
        ("small", "greedy", 1),
        ("small", "greedy", 2),
        ("small", "cpsat", 1),
        ("small", "cpsat", 2),
    ]
    assert (t["status"] == "ok").all() and (t["error"] == "").all()
    # No decision ran into its time limit: every number is fixed by the scenario and the seed.
    assert (t["decisions_at_limit"] == 0).all()
    # The axes matter: no preemption never evicts; three nodes cost more per useful GPU-hour than two.
    assert (t.loc[t["policy"] == "no-preemption", "preemptions"] == 0).all()
    assert t.loc[t["policy"] != "no-preemption", "preemptions"].sum() > 0
    assert set(t.loc[t["variant"] == "big", "gpus"]) == {24} and set(
        t.loc[t["variant"] == "small", "gpus"]
    ) == {16}


def test_ray_and_processes_give_the_same_table(
    local_ray: None, tiny_sweep: Path, by_processes: pd.DataFrame
) -> None:
    finished: list[int] = []
    rows = run_cells(grid(load_sweep(tiny_sweep)), backend="ray", on_row=lambda r: finished.append(r["cell"]))
    on_ray = frame(rows)
    assert sorted(finished) == list(range(12))  # every row reported once as it finished
    pd.testing.assert_frame_equal(_stable(on_ray), _stable(by_processes))
    assert ray.is_initialized()  # a Ray the sweep did not start is left running


@pytest.mark.parametrize(("variant", "policy", "seed"), [("small", "cpsat", 1), ("big", "no-preemption", 2)])
def test_a_cell_equals_an_independent_simulator_run(
    tiny_sweep: Path, by_processes: pd.DataFrame, variant: str, policy: str, seed: int
) -> None:
    # Built another way: the scenario file, then the simulate command's overrides.
    changes: dict[str, object] = {"horizon": "2h", "interval": "5m"}
    changes |= {"engine": "cpsat"} if policy == "cpsat" else {"preemption": False}
    if variant == "big":
        changes["cluster"] = {"builders": [{"dgx_h100": {"count": 3}}]}
    spec = with_overrides(load_scenario(tiny_sweep.parent / "tiny.yaml"), **changes)
    s = summary(Simulator(prepare(spec, tiny_sweep.parent, seed=seed), verify=True).run())
    [row] = by_processes[
        (by_processes["variant"] == variant)
        & (by_processes["policy"] == policy)
        & (by_processes["seed"] == seed)
    ].to_dict("records")
    assert row["engine"] == spec.policy.engine and row["horizon_s"] == 7200
    for key in (
        "jobs",
        "preemptions",
        "decisions",
        "gpus",
        "allocation",
        "utilization",
        "lost_gpu_h",
        "cost_usd",
    ):
        assert row[key] == pytest.approx(s[key]), key
    assert (row["done"], row["pending"]) == (s["states"].get("done", 0), s["states"].get("pending", 0))
    for cls, w in s["waits"].items():
        prefix = cls.replace("-", "_")
        assert (row[f"{prefix}_jobs"], row[f"{prefix}_waiting"]) == (w["jobs"], w["waiting"])
        assert row[f"{prefix}_wait_p95_s"] == pytest.approx(w["wait_p95_s"], nan_ok=True)


def _with_broken(folder: Path) -> Path:
    path = write(
        folder,
        SWEEP.replace("[tiny.yaml]", "[tiny.yaml, broken.yaml]").replace("seeds: [1, 2]", "seeds: [1]"),
    )
    (folder / "broken.yaml").write_text(BROKEN)
    return path


def test_a_failing_cell_is_an_error_row_and_the_others_run(tmp_path: Path) -> None:
    t = run_sweep(load_sweep(_with_broken(tmp_path)), backend="processes", parallel=1)
    assert len(t) == 2 * 2 * 3
    # The broken scenario's cluster file is missing: its cells fail — except in the variant that
    # replaces the cluster.
    bad = (t["scenario"] == "broken") & (t["variant"] == "small")
    assert (t.loc[bad, "status"] == "error").all() and t.loc[bad, "allocation"].isna().all()
    assert t.loc[bad, "error"].str.contains("no-such-inventory.json").all()
    assert (t.loc[~bad, "status"] == "ok").all() and t.loc[~bad, "allocation"].notna().all()


# -- placer sweep ----------------------------------------------------------------------------------------


def test_cli_runs_on_ray_and_writes_the_table_and_the_grid(
    local_ray: None, tiny_sweep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(tiny_sweep), "--backend", "ray", "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "12 cells on ray" in text and "12 cells, 12 ran, 0 failed" in text
    table = pd.read_parquet(out / "results.parquet")
    assert len(table) == 12 and list(table.columns) == list(COLUMNS)
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["backend"] == "ray" and doc["size"] == 12 and len(doc["runs"]) == 6 and len(doc["cells"]) == 12
    run = doc["runs"][doc["cells"][5]["run"]]  # cell 5: small, no-preemption, seed 2
    assert (run["variant"], run["policy"], run["spec"]["policy"]["preemption"]) == (
        "small",
        "no-preemption",
        False,
    )


def test_cli_without_ray_falls_back_to_processes_and_a_failed_cell_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sweep_api, "ray_installed", lambda: False)
    path = _with_broken(tmp_path)
    out = tmp_path / "out"
    code = main(["sweep", str(path), "--parallel", "2", "--out", str(out), "--format", "csv", "--json"])
    captured = capsys.readouterr()
    assert code == 1
    assert "Ray is not installed (pip install 'placer-engine[sweep]')" in captured.err
    doc = json.loads(captured.out)
    assert doc["backend"] == "processes" and doc["failed"] == 3 and len(doc["rows"]) == 12
    assert {r["status"] for r in doc["rows"] if r["scenario"] == "broken" and r["variant"] == "small"} == {
        "error"
    }
    assert len(pd.read_csv(out / "results.csv")) == 12


@pytest.mark.parametrize(
    ("argv", "ray_there", "message"),
    [
        (["--backend", "ray"], False, "pip install 'placer-engine[sweep]'"),
        (["--address", "ray://head:10001"], False, "pip install 'placer-engine[sweep]'"),
        (["--backend", "processes", "--address", "auto"], True, "--address"),
        (["--parallel", "0"], True, "--parallel"),
    ],
)
def test_cli_usage_errors_exit_2(
    tiny_sweep: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    ray_there: bool,
    message: str,
) -> None:
    monkeypatch.setattr(sweep_api, "ray_installed", lambda: ray_there)
    assert main(["sweep", str(tiny_sweep), *argv]) == 2
    assert message in capsys.readouterr().err


def test_cli_file_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(tmp_path / "none.yaml")]) == 2
    assert "cannot open" in capsys.readouterr().err
    path = write(tmp_path, SWEEP.replace("engine: cpsat,", "engine: fast,"))
    assert main(["sweep", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"placer sweep: {path}: policies.cpsat.engine: Input should be" in err and "[enum]" in err
    assert "Traceback" not in err


def test_cli_dry_run_lists_the_cells(tiny_sweep: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sweep", str(tiny_sweep), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "0\ttiny/small/greedy/1" and lines[-1] == "11\ttiny/big/no-preemption/2"


AUTOSCALED = """
name: autoscaled
scenarios: [tiny.yaml]
seeds: [3]
variants:
  fixed: {cluster: {builders: [{dgx_h100: {count: 1}}]}}
  autoscaled:
    cluster: {builders: [{dgx_h100: {count: 1}}]}
    autoscaling: {groups: [{name: burst, node: {dgx_h100: {}}, max: 2, provision: 10m}]}
overrides: {horizon: 3h, interval: 5m}
"""


def test_an_autoscaling_variant_adds_the_groups_bill_and_gpu_hours(tmp_path: Path) -> None:
    t = run_sweep(load_sweep(write(tmp_path, AUTOSCALED)), backend="processes", parallel=1)
    fixed, scaled = (t[t["variant"] == v].to_dict("records")[0] for v in ("fixed", "autoscaled"))
    spec = with_overrides(
        load_scenario(tmp_path / "tiny.yaml"),
        horizon="3h",
        interval="5m",
        cluster={"builders": [{"dgx_h100": {"count": 1}}]},
        autoscaling={"groups": [{"name": "burst", "node": {"dgx_h100": {}}, "max": 2, "provision": "10m"}]},
    )
    s = summary(Simulator(prepare(spec, tmp_path, seed=3), verify=True).run())
    # With seed 3, jobs wait for capacity on one DGX within three hours, so the group bills something.
    assert s["autoscaled_cost_usd"] > 0
    assert scaled["autoscaled_cost_usd"] == pytest.approx(s["autoscaled_cost_usd"])
    assert scaled["autoscaled_gpu_h"] == pytest.approx(s["autoscaled_gpu_h"])
    # The fleet: one DGX for 3 h at $98.32 an hour, plus the group's bill; nothing extra without it.
    assert scaled["fleet_cost_usd"] == pytest.approx(3 * 98.32 + s["autoscaled_cost_usd"])
    assert fixed["fleet_cost_usd"] == pytest.approx(3 * 98.32)
    assert pd.isna(fixed["autoscaled_cost_usd"]) and pd.isna(fixed["autoscaled_gpu_h"])
