"""Whole runs: determinism for a seed, skipping quiet intervals changes nothing, every shipped library
scenario runs, the checker stops a broken decision, and the run's books balance.

Runs are short (a few hours of simulated time on small clusters): long runs are benchmarks
(``benchmarks/sim_bench.py``).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from placer.scenarios.inputs import prepare
from placer.scenarios.load import load_scenario, with_overrides
from placer.scenarios.sim.loop import SimulationError, Simulator
from placer.scenarios.sim.record import SimResult

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios" / "library"
#: Columns that measure the machine, not the simulation.
WALL = ["solver_wall_s"]


def _run(name: str, *, seed: int | None = None, skip: bool = True, **overrides: object) -> SimResult:
    path = LIBRARY / f"{name}.yaml"
    spec = with_overrides(load_scenario(path), **overrides)
    return Simulator(prepare(spec, path.parent, seed=seed), verify=True, skip_unchanged=skip).run()


def _same(a: SimResult, b: SimResult, ignore: tuple[str, ...] = ()) -> None:
    for name, frame in a.tables().items():
        other = b.tables()[name]
        drop = [c for c in (*WALL, *ignore) if c in frame.columns]
        pd.testing.assert_frame_equal(frame.drop(columns=drop), other.drop(columns=drop), obj=name)


def test_same_seed_same_run_other_seed_other_run() -> None:
    # Random failures, a reservation, five job classes: everything that draws from the seed.
    a = _run("mixed-generation", horizon="4h")
    b = _run("mixed-generation", horizon="4h")
    _same(a, b)
    assert a.meta["node_failures"] >= 1 and (a.events["event"] == "fail").any()
    c = _run("mixed-generation", horizon="4h", seed=1)
    assert list(c.jobs["job"]) != list(a.jobs["job"]) or not c.events.equals(a.events)


def test_skipping_quiet_intervals_changes_nothing() -> None:
    # Without skipping, place() runs at every interval; with it, only when something changed. Same run.
    # TPU slices at 30 s intervals: many intervals see no arrival and no end (73 decisions vs 46).
    every = _run("tpu-v5e-fleet", horizon="3h", interval="30s", skip=False)
    quiet = _run("tpu-v5e-fleet", horizon="3h", interval="30s", skip=True)
    assert quiet.meta["decisions"] < every.meta["decisions"]
    _same(every, quiet, ignore=("decided", "engine", "status"))


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*.yaml")), ids=lambda p: p.stem)
def test_library_scenario_runs_a_few_intervals(path: Path, tmp_path: Path) -> None:
    spec = load_scenario(path)
    changes: dict[str, object] = {"horizon": spec.interval * 3}
    if spec.workload.trace is not None:  # a small slice of the trace's format, not the 82k-job file
        trace = tmp_path / "trace.csv"
        trace.write_text(
            "timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-09 00:00:10,300.0,8,2400.0,vc1\n"
            "2017-10-09 00:01:00,900.0,16,14400.0,vc2\n"
            "2017-10-09 00:02:30,120.0,1,120.0,vc1\n"
        )
        changes["workload"] = {
            "trace": {**spec.workload.trace.model_dump(exclude_unset=True), "file": str(trace)}
        }
    spec = with_overrides(spec, **changes)
    result = Simulator(prepare(spec, path.parent), verify=True).run()
    assert len(result.intervals) == 3
    assert result.meta["decisions"] >= 1 and result.meta["verified"] == result.meta["decisions"]
    assert (result.events["event"] == "start").any()


def test_the_books_balance() -> None:
    r = _run("h100-spot-inference", horizon="3h")
    a = r.attempts
    closed = a[a["release_s"].notna()]
    # Every run: held = useful + lost + grace; nothing held for longer than the run existed.
    assert (closed["held_s"] - (closed["useful_s"] + closed["lost_s"] + closed["grace_s"])).abs().max() < 1e-6
    # A finished job's useful seconds add up to its work, across all its runs.
    done = r.jobs[r.jobs["state"] == "done"]
    useful = a.groupby("job")["useful_s"].sum()
    assert ((useful[done["job"]].to_numpy() - done["work_s"].to_numpy()) ** 2).max() < 1e-6
    # GPUs allocated never exceed the usable GPUs, busy never exceed allocated.
    iv = r.intervals
    assert (iv["gpus_allocated"] <= iv["gpus_total"] + 1e-9).all()
    assert (iv["gpus_busy"] <= iv["gpus_allocated"] + 1e-9).all()


def test_a_broken_decision_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from placer.solver.session import Session

    real = Session.decide  # what the simulator decides with

    def broken(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        d = real(*args, **kwargs)  # type: ignore[arg-type]
        for p in d.placements:  # GPU 8 does not exist on an 8-GPU node
            p.replicas[0].gpus = [8]
        return d

    monkeypatch.setattr(Session, "decide", broken)
    with pytest.raises(SimulationError, match="gpu-index"):
        _run("gb200-nvl72-pod", horizon="10m")
