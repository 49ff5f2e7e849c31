"""``placer simulate SCENARIO.yaml [--out DIR] [--seed N] ...``: run a what-if scenario through the
discrete-event simulator and report what happened.

The scenario file names a cluster, a workload, a policy, prices, a scheduling interval and a horizon
(``docs/simulator.md``; ``placer schema scenario``). Every scheduling interval calls
``placer.solver.place()``;
``--verify`` re-checks each decision with the independent checker before it is applied. Options override
the file for quick what-ifs (``--no-preemption``, ``--engine cpsat``, ``--horizon 6h``); ``--engine`` also
takes a baseline scorer (``--engine fgd``, ``docs/simulator.md``) so one scenario runs under each.

Output: a short summary on stdout (or ``--json``: the summary as JSON); with ``--out DIR`` the tables —
``events``, ``jobs``, ``attempts``, ``intervals``, ``reasons`` — as parquet (CSV without pyarrow, or with
``--format csv``) and ``summary.json``; ``--plots`` adds PNG plots (needs matplotlib).

Exit codes: 0 the run completed; 1 the scenario is invalid (each problem printed as ``path: message
[code]``) or a decision broke a placement rule under ``--verify``; 2 a usage error or a scenario file
that cannot be opened.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["simulate", "s.yaml", "--out", "o", "--seed", "3", "--no-plan"])
>>> (a.scenario, a.out, a.seed, a.plan, a.preemption, a.format)
('s.yaml', 'o', 3, False, None, 'auto')
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from placer.cli import numbers
from placer.cli.place import ENGINE_CHOICES

__all__ = ["add_parser", "run"]

_NAME = "placer simulate"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "simulate",
        help="run a what-if scenario (cluster, workload, policy) through the discrete-event simulator",
        description="Simulate a scenario: place() at every scheduling interval; write tables of events, "
        "jobs, runs, intervals and pending reasons.",
    )
    p.add_argument("scenario", metavar="SCENARIO", help="scenario YAML/JSON (docs/simulator.md)")
    p.add_argument("--out", metavar="DIR", help="write the tables and summary.json into DIR")
    p.add_argument(
        "--seed", type=numbers.seed, help="seed of the workload, failures and solver (default: the file's)"
    )
    p.add_argument("--format", choices=("auto", "parquet", "csv"), default="auto", help="table files")
    p.add_argument("--verify", action="store_true", help="check every decision with the independent checker")
    p.add_argument("--plots", action="store_true", help="also write PNG plots into --out (needs matplotlib)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--every-interval",
        action="store_true",
        help="call place() at every interval, even when nothing changed since the last empty decision",
    )
    over = p.add_argument_group("overrides of the scenario file")
    over.add_argument("--horizon", metavar="DURATION", help="e.g. 6h, 2d")
    over.add_argument("--interval", metavar="DURATION", help="scheduling interval, e.g. 30s, 5m")
    over.add_argument("--engine", choices=ENGINE_CHOICES, help="placer's, or a baseline (first-fit ... fgd)")
    over.add_argument("--time-limit", type=numbers.seconds, metavar="S", dest="time_limit_s")
    over.add_argument("--plan", dest="plan", action="store_true", default=None, help="time planning on")
    over.add_argument("--no-plan", dest="plan", action="store_false", help="time planning off")
    over.add_argument("--preemption", dest="preemption", action="store_true", default=None)
    over.add_argument("--no-preemption", dest="preemption", action="store_false", help="never evict")
    p.set_defaults(run=run)


def _fail(code: int, message: str) -> int:
    print(f"{_NAME}: {message}", file=sys.stderr)
    return code


def run(args: argparse.Namespace) -> int:
    from placer.scenarios.inputs import prepare
    from placer.scenarios.load import ScenarioError, load_scenario, with_overrides
    from placer.scenarios.sim.loop import SimulationError, Simulator
    from placer.scenarios.sim.metrics import summary, summary_text
    from placer.scenarios.sim.output import write

    path = Path(args.scenario)
    if args.plots and not args.out:
        return _fail(2, "--plots writes into the --out folder: give --out DIR")
    try:
        spec = load_scenario(path)
        spec = with_overrides(
            spec,
            horizon=args.horizon,
            interval=args.interval,
            engine=args.engine,
            time_limit_s=args.time_limit_s,
            plan=args.plan,
            preemption=args.preemption,
        )
        inputs = prepare(spec, base=path.parent, seed=args.seed)
    except OSError as e:
        return _fail(2, f"cannot open {path}: {e.strerror or e}")
    except ScenarioError as e:
        for issue in e.issues:
            print(f"{_NAME}: {path}: {issue}", file=sys.stderr)
        return 1
    progress = not args.quiet and sys.stderr.isatty()
    try:
        result = Simulator(
            inputs, verify=args.verify, progress=progress, skip_unchanged=not args.every_interval
        ).run()
    except SimulationError as e:
        return _fail(1, str(e))
    s = summary(result)
    if args.out:
        written = write(result, args.out, fmt=args.format, summary=s)
        if args.plots:
            from placer.scenarios.sim import plots

            if plots.available():
                written += plots.save_all(result, args.out)
            else:
                need = "--plots needs matplotlib (pip install 'placer-engine[sim]')"
                print(f"{_NAME}: {need}", file=sys.stderr)
    if args.json:
        print(json.dumps(s, indent=2, sort_keys=True, default=str))
    else:
        print(summary_text(s))
        if args.out:
            print("wrote " + ", ".join(str(p) for p in written))
    return 0
