"""Time-planning benchmark (issue 5): what conservative backfill costs and what it protects.

    python benchmarks/backfill_bench.py [--sizes s m] [--time-limit 5] [--repeat 3]

On the synthetic scenarios (running jobs end 5 min - 48 h from now, pending jobs carry durations), each
engine decides the batch with planning off (``Policy(plan=False)``: only what starts now) and on. Printed
per run (medians of ``--repeat``): jobs placed now, planned jobs and how far ahead their starts are
(median hours), jobs kept waiting because they would delay a plan (``BACKFILL_WOULD_DELAY``), checker
violations (rule 18 included) and wall time. Compare the rows of one run: the machine is noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time

from placer.scenarios.synthetic import NOW, scenario_m, scenario_s
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.policy import Policy

SCENARIOS = {"s": scenario_s, "m": scenario_m}


def run(size: str, engine: str, plan: bool, limit: float, repeat: int) -> str:
    sc = SCENARIOS[size](0)
    walls, placed, plans, ahead, waits, bad = [], [], [], [], [], 0
    for _ in range(repeat):
        t = time.perf_counter()
        d = place(sc.jobs, sc.cluster, Policy(engine=engine, time_limit_s=limit, plan=plan), now=NOW)
        walls.append(time.perf_counter() - t)
        placed.append(len(d.placements))
        holds = [h for h in d.reservations if h.kind in ("plan", "workflow") and h.start is not None]
        plans.append(len(holds))
        ahead.extend((h.start - NOW).total_seconds() / 3600 for h in holds)  # type: ignore[operator]
        waits.append(sum(1 for p in d.pending if any(r.code == "BACKFILL_WOULD_DELAY" for r in p.reasons)))
        bad = max(bad, len(check(d, sc.jobs, sc.cluster, now=NOW)))
    med_ahead = statistics.median(ahead) if ahead else 0.0
    mode = "on " if plan else "off"
    return (
        f"{size.upper():>2} {engine:>6} plan={mode} placed {statistics.median(placed):6.0f}"
        f"  plans {statistics.median(plans):5.0f} (median {med_ahead:5.1f} h ahead)"
        f"  kept waiting {statistics.median(waits):4.0f}  violations {bad}"
        f"  wall {statistics.median(walls):6.2f} s (limit {limit:g} s)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--sizes", nargs="+", default=["s", "m"], choices=sorted(SCENARIOS))
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for size in args.sizes:
        for engine in ("greedy", "cpsat"):
            for plan in (False, True):
                print(run(size, engine, plan, args.time_limit, args.repeat), flush=True)


if __name__ == "__main__":
    main()
