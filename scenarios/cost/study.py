"""Run one workload on several cluster designs and compare them: dollars, dollars per useful GPU-hour,
work lost, waits and deadlines met.

Why the same workload and seed on every design: the designs are then compared on identical arrivals
(the workload draws from ``"{seed}:arrivals"`` and ``"{seed}:jobs"`` only), so a difference in the table
is the design's, not the dice's; several seeds show how much of it survives other dice.

A run is the simulator's run of the workload scenario with its ``cluster`` replaced by the design's,
plus the spot reclaims of the design's spot nodes (:mod:`placer.scenarios.cost.reclaims`); the workload
scenario's own policy, prices, failures and reservations apply to every design. Its columns
(``docs/cost-studies.md``):

* ``cost_usd``: the bill (:mod:`placer.scenarios.cost.billing`), with ``cost_reserved_usd``,
  ``cost_on_demand_usd``, ``cost_spot_usd``; ``fleet_cost_usd``: every node all the time at list price
  (the simulator's ``metrics.cost``);
* ``useful_gpu_h`` and ``cost_per_useful_gpu_h`` (the bill over the work kept); ``lost_gpu_h`` with
  ``lost_reclaim_gpu_h`` (runs stopped by a spot reclaim) and ``lost_evicted_gpu_h`` (evictions);
* ``deadlines_due``, ``deadlines_met``, ``deadlines_met_share`` and per priority class
  (:mod:`placer.scenarios.cost.deadlines`); ``wait_p50_s_<class>``, ``wait_p95_s_<class>`` (jobs that
  started);
* ``jobs``, ``done``, ``waiting_at_end``, ``reclaims``, ``utilization``, ``wall_s``.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from placer.scenarios.cost.billing import Billing, bill, reclaimed_seconds
from placer.scenarios.cost.deadlines import Deadline, deadline_counts, judge
from placer.scenarios.cost.design import CAPACITY_CLASSES, Design
from placer.scenarios.cost.reclaims import SpotReclaim, lost_to_reclaims, reclaim_seconds, reclaims_of
from placer.scenarios.inputs import prepare
from placer.scenarios.load import load_scenario, parse_document, read_document, with_overrides
from placer.scenarios.sim import Simulator, metrics
from placer.scenarios.sim.progress import bar
from placer.scenarios.sim.record import SimResult
from placer.scenarios.spec import ScenarioSpec, unique_names
from placer.scenarios.units import Duration

__all__ = [
    "DEFAULT_RECLAIM",
    "PRIORITY_CLASSES",
    "Run",
    "Study",
    "compare",
    "load_study",
    "run_design",
    "runs",
    "table",
]

#: Spot reclaims unless a study says otherwise: a spot node every 12 hours on average, back after 10 minutes.
DEFAULT_RECLAIM = SpotReclaim()
#: Priority classes of the per-class columns, in the simulator's order.
PRIORITY_CLASSES = metrics.CLASS_ORDER


def _key(cls: str) -> str:
    return cls.replace("-", "_")


@dataclass
class Run:
    """One design on one seed: the simulator's tables, the bill, the judged jobs and the reclaims."""

    design: Design
    seed: int
    result: SimResult
    bill: pd.DataFrame
    judged: pd.DataFrame
    reclaims: int
    lost_reclaim_gpu_h: float
    wall_s: float

    def row(self) -> dict[str, Any]:
        """The run's line of the comparison (columns in the module docstring)."""
        r, b = self.result, self.bill
        gh = metrics.gpu_hours(r)
        cost = metrics.cost(r)
        a = r.attempts
        evicted = a[a["outcome"] == "evicted"] if not a.empty else a
        lost = float(r.jobs["lost_gpu_h"].sum()) if not r.jobs.empty else 0.0
        total = float(b["cost_usd"].sum())
        useful = float(gh["useful_gpu_h"] or 0.0)
        row: dict[str, Any] = {
            "design": self.design.name,
            "seed": self.seed,
            "nodes": int(r.meta["nodes"]),
            "gpus": int(r.meta["gpus"]),
        }
        fixed, scaled = b[b["kind"] != "autoscaled"], b[b["kind"] == "autoscaled"]
        for cls in CAPACITY_CLASSES:
            row[f"{_key(cls)}_nodes"] = int((fixed["capacity_class"] == cls).sum())
        row["autoscaled_nodes"] = len(scaled)
        row["autoscaled_node_h"] = float(scaled["billed_h"].sum())
        row["cost_autoscaled_usd"] = float(scaled["cost_usd"].sum())
        row["cost_usd"] = total
        for cls in CAPACITY_CLASSES:
            row[f"cost_{_key(cls)}_usd"] = float(b.loc[b["capacity_class"] == cls, "cost_usd"].sum())
        row |= {
            "fleet_cost_usd": cost["fleet_cost_usd"],
            "useful_gpu_h": useful,
            "cost_per_useful_gpu_h": total / useful if useful else None,
            "utilization": gh["utilization"],
            "lost_gpu_h": lost,
            "lost_reclaim_gpu_h": self.lost_reclaim_gpu_h,
            "lost_evicted_gpu_h": float((evicted["lost_s"] * evicted["units"]).sum()) / 3600.0,
            "reclaims": self.reclaims,
            "jobs": int((~r.jobs["background"]).sum()) if not r.jobs.empty else 0,
            "done": int((r.jobs["state"] == "done").sum()) if not r.jobs.empty else 0,
            "waiting_at_end": int((r.jobs["state"] == "pending").sum()) if not r.jobs.empty else 0,
        }
        counts = deadline_counts(self.judged)
        total_row = counts.loc["total"]
        row |= {
            "deadlines_due": int(total_row["due"]),
            "deadlines_met": int(total_row["met"]),
            "deadlines_met_share": total_row["met_share"],
        }
        for cls in PRIORITY_CLASSES:
            due = int(counts.loc[cls, "due"]) if cls in counts.index else 0
            met = int(counts.loc[cls, "met"]) if cls in counts.index else 0
            row[f"due_{_key(cls)}"] = due
            row[f"met_{_key(cls)}"] = met
            row[f"met_share_{_key(cls)}"] = met / due if due else None
        w = metrics.waits(r.jobs) if not r.jobs.empty else pd.DataFrame()
        for cls in PRIORITY_CLASSES:
            has = cls in w.index
            row[f"wait_p50_s_{_key(cls)}"] = w.loc[cls, "wait_p50_s"] if has else None
            row[f"wait_p95_s_{_key(cls)}"] = w.loc[cls, "wait_p95_s"] if has else None
        row["wall_s"] = self.wall_s
        return row


def _workload(
    workload: ScenarioSpec | str | os.PathLike[str], base: Path | None
) -> tuple[ScenarioSpec, Path | None]:
    if isinstance(workload, ScenarioSpec):
        return workload, base
    path = Path(workload)
    return load_scenario(path), base if base is not None else path.parent


def run_design(
    design: Design,
    workload: ScenarioSpec,
    seed: int,
    *,
    base: Path | None = None,
    deadlines: dict[str, Deadline] | None = None,
    reclaim: SpotReclaim | None = None,
    billing: Billing | None = None,
    verify: bool = False,
) -> Run:
    """Simulate ``workload`` on ``design`` with ``seed`` (spot reclaims added) and price it."""
    spec = workload.model_copy(
        update={
            "cluster": design.cluster_spec(),
            "autoscaling": design.autoscaling,
            "name": f"{workload.name}/{design.name}"[:120],
        }
    )
    inputs = prepare(spec, base, seed=seed)
    reclaims = reclaims_of(reclaim, inputs.cluster, inputs.start, spec.horizon, seed=seed)
    failures = sorted([*inputs.failures, *reclaims], key=lambda f: (f.down, f.node))
    inputs = dataclasses.replace(inputs, failures=failures)
    t0 = time.perf_counter()
    result = Simulator(inputs, verify=verify).run()
    wall = time.perf_counter() - t0
    away = reclaimed_seconds(reclaims, inputs.start, spec.horizon)
    b = bill(
        inputs.cluster,
        inputs.prices,
        result.attempts,
        horizon_s=spec.horizon,
        away=away,
        billing=billing,
        autoscaled=result.nodes,
    )
    jobs = result.jobs.copy()
    jobs["submit_s"] = (
        (pd.to_datetime(jobs["submit"]) - pd.Timestamp(inputs.start)).dt.total_seconds()
        if not jobs.empty
        else pd.Series(dtype=float)
    )
    judged = judge(jobs, deadlines or {}, spec.horizon)
    lost = lost_to_reclaims(result.attempts, reclaim_seconds(reclaims, inputs.start))
    return Run(
        design=design,
        seed=seed,
        result=result,
        bill=b,
        judged=judged,
        reclaims=sum(1 for f in reclaims if (f.down - inputs.start).total_seconds() < spec.horizon),
        lost_reclaim_gpu_h=float(lost.sum()) if not lost.empty else 0.0,
        wall_s=wall,
    )


def runs(
    designs: Sequence[Design],
    workload: ScenarioSpec | str | os.PathLike[str],
    *,
    seeds: Iterable[int] = (0,),
    deadlines: dict[str, Deadline | str | dict[str, Any]] | None = None,
    reclaim: SpotReclaim | None = DEFAULT_RECLAIM,
    billing: Billing | None = None,
    horizon: str | float | None = None,
    interval: str | float | None = None,
    base: Path | None = None,
    verify: bool = False,
    progress: bool = False,
) -> list[Run]:
    """Simulate ``workload`` (a scenario or its file; its cluster is replaced) on every design and seed
    (designs in the inner loop), as :class:`Run` objects.

    ``deadlines``: per priority class, a :class:`~placer.scenarios.cost.deadlines.Deadline` (or ``"30m"``,
    ``{"stretch": 2, "slack": "1h"}``); classes without one are not judged. ``reclaim``: the spot
    reclaim rate (None: spot nodes are never reclaimed). ``billing``: how each capacity class is paid.
    ``horizon``, ``interval``: override the workload scenario's (short runs). ``base``: the folder the
    workload's relative paths start from (default: its file's). ``verify``: re-check every decision with
    the independent checker (a violation raises ``SimulationError``).
    """
    names = [d.name for d in designs]
    if len(set(names)) != len(names):
        raise ValueError(f"design names must be unique: {names}")
    unknown = sorted(set(deadlines or {}) - set(PRIORITY_CLASSES))
    if unknown:
        raise ValueError(f"deadlines are per priority class ({', '.join(PRIORITY_CLASSES)}), not {unknown}")
    spec, base = _workload(workload, base)
    spec = with_overrides(spec, horizon=horizon, interval=interval)
    dl = {
        str(k): v if isinstance(v, Deadline) else Deadline.model_validate(v)
        for k, v in (deadlines or {}).items()
    }
    todo = [(s, d) for s in seeds for d in designs]
    out = []
    with bar(len(todo), enabled=progress, desc=spec.name, unit="run") as shown:
        for seed, design in todo:
            out.append(
                run_design(
                    design,
                    spec,
                    seed,
                    base=base,
                    deadlines=dl,
                    reclaim=reclaim,
                    billing=billing,
                    verify=verify,
                )
            )
            shown.update(1)
    return out


def table(done: Sequence[Run], *, per_seed: bool = False) -> pd.DataFrame:
    """The comparison: one row per design (means over seeds; shares and dollars per useful GPU-hour
    from the sums) or, with ``per_seed``, one row per design and seed."""
    frame = pd.DataFrame([r.row() for r in done])
    if per_seed or frame.empty:
        return frame.set_index(["design", "seed"]) if not frame.empty else frame
    order = list(dict.fromkeys(frame["design"]))
    numeric = frame.drop(columns=["design", "seed"]).apply(pd.to_numeric, errors="coerce")
    numeric["design"] = frame["design"]
    g = numeric.groupby("design", sort=False)
    out = g.mean()
    sums = g.sum(min_count=1)
    out["seeds"] = g.size()
    fixed = ["nodes", "gpus", *(f"{_key(c)}_nodes" for c in CAPACITY_CLASSES)]
    out[fixed] = out[fixed].round().astype(int)

    def ratio(num: str, den: str) -> pd.Series:
        return sums[num] / sums[den].where(sums[den] > 0)

    out["cost_per_useful_gpu_h"] = ratio("cost_usd", "useful_gpu_h")
    out["deadlines_met_share"] = ratio("deadlines_met", "deadlines_due")
    for cls in PRIORITY_CLASSES:
        out[f"met_share_{_key(cls)}"] = ratio(f"met_{_key(cls)}", f"due_{_key(cls)}")
    return out.reindex(order)


def compare(
    designs: Sequence[Design],
    workload: ScenarioSpec | str | os.PathLike[str],
    *,
    per_seed: bool = False,
    **options: Any,
) -> pd.DataFrame:
    """The cost study in one call: :func:`runs` (``options`` are its keyword arguments: ``seeds``,
    ``deadlines``, ``reclaim``, ``billing``, ``horizon``, ...) and then :func:`table`."""
    return table(runs(designs, workload, **options), per_seed=per_seed)


class Study(BaseModel):
    """A cost study file (``scenarios/library/cost/study.yaml``): the workload scenario (a path relative
    to the study file), the designs, the deadlines, the spot reclaim rate, the billing and the seeds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    workload: str = Field(min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    horizon: Duration | None = None
    deadlines: dict[str, Deadline] = Field(default_factory=dict)
    spot_reclaim: SpotReclaim | None = Field(default_factory=SpotReclaim)
    billing: Billing = Field(default_factory=Billing)
    designs: list[Design] = Field(min_length=1)

    @field_validator("deadlines")
    @classmethod
    def _classes(cls, v: dict[str, Deadline]) -> dict[str, Deadline]:
        bad = sorted(set(v) - set(PRIORITY_CLASSES))
        if bad:
            raise ValueError(f"deadlines are per priority class ({', '.join(PRIORITY_CLASSES)}), not {bad}")
        return v

    @field_validator("designs")
    @classmethod
    def _unique(cls, v: list[Design]) -> list[Design]:
        unique_names([d.name for d in v], "design")
        return v

    def run(
        self,
        base: Path | None,
        *,
        seeds: Iterable[int] | None = None,
        horizon: str | float | None = None,
        interval: str | float | None = None,
        verify: bool = False,
        progress: bool = False,
    ) -> list[Run]:
        """Every design on every seed (``seeds``, ``horizon``, ``interval`` override the study's)."""
        path = Path(self.workload)
        if base is not None and not path.is_absolute():
            path = base / path
        return runs(
            self.designs,
            path,
            seeds=self.seeds if seeds is None else seeds,
            deadlines=dict(self.deadlines),
            reclaim=self.spot_reclaim,
            billing=self.billing,
            horizon=horizon if horizon is not None else self.horizon,
            interval=interval,
            verify=verify,
            progress=progress,
        )


def load_study(path: str | os.PathLike[str]) -> Study:
    """A :class:`Study` from a YAML or JSON file; :class:`~placer.scenarios.load.ScenarioError` naming the
    field for anything wrong (``OSError`` when the file cannot be read)."""
    return parse_document(read_document(path, what="study"), Study, source=str(path), what="study")
