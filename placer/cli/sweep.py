"""``placer sweep SWEEP.yaml [--backend auto|ray|processes] [--address ADDR] [--parallel N] [--out DIR]
[--format auto|parquet|csv] [--json] [--quiet] [--dry-run]``: run a grid of scenarios x variants x
policies x seeds through the simulator in parallel and collect one results table.

The sweep file (``docs/sweep.md``; ``placer schema sweep``) names scenario files, seeds, named policy
overrides and named scenario variants. Every merged scenario is validated before anything runs. Cells run
as Ray tasks — on a local Ray instance of ``--parallel`` CPUs (default: this machine's cores), or on the
existing cluster at ``--address`` — or, without Ray or with ``--backend processes``, on a pool of local
processes. A progress bar counts cells on a terminal (``--quiet``: none).

Output: a compact table on stdout, one line per cell (``--json``: every row as JSON); ``--out DIR``
writes ``results.parquet`` (CSV with ``--format csv`` or without pyarrow) and ``sweep.json``, the resolved
grid. ``--dry-run`` lists the cells without running them.

Exit codes: 0 every cell ran; 1 the sweep file is invalid (each problem printed as ``path: message
[code]``) or a cell failed (its row has the error; the other cells still ran); 2 a usage error, a sweep
file that cannot be opened, ``--backend ray`` without Ray installed, or a Ray cluster that cannot be
reached.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["sweep", "w.yaml", "--backend", "processes", "--parallel", "2"])
>>> (a.sweep, a.backend, a.parallel, a.address, a.out, a.format, a.json)
('w.yaml', 'processes', 2, None, None, 'auto', False)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

__all__ = ["MAX_PRINTED", "add_parser", "run"]

_NAME = "placer sweep"
#: Most problems printed before "... and N more".
MAX_PRINTED = 20


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        help="run a grid of scenarios x variants x policies x seeds in parallel (Ray or local processes)",
        description="Run every cell of a sweep file through the simulator and collect one results table.",
    )
    p.add_argument("sweep", metavar="SWEEP", help="sweep YAML/JSON (docs/sweep.md)")
    p.add_argument(
        "--backend",
        choices=("auto", "ray", "processes"),
        default="auto",
        help="where cells run (auto: ray when installed, else local processes)",
    )
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (ray://host:10001, auto, ...)")
    p.add_argument("--parallel", type=int, metavar="N", help="cells at a time here (default: the cores)")
    p.add_argument("--out", metavar="DIR", help="write results.parquet (or .csv) and sweep.json into DIR")
    p.add_argument("--format", choices=("auto", "parquet", "csv"), default="auto", help="the results file")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="list the cells, run nothing")
    p.set_defaults(run=run)


def _fail(code: int, message: str) -> int:
    print(f"{_NAME}: {message}", file=sys.stderr)
    return code


def _backend(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The backend to use, or a usage error's message."""
    from placer.scenarios.sweep import RAY_EXTRA, ray_installed

    if args.parallel is not None and args.parallel < 1:
        return None, "--parallel must be at least 1"
    if args.address is not None and args.backend == "processes":
        return None, "--address names a Ray cluster: it needs the ray backend"
    if args.backend == "processes":
        return "processes", None
    if ray_installed():
        return "ray", None
    if args.backend == "ray" or args.address is not None:
        return None, f"the ray backend needs Ray: {RAY_EXTRA}"
    return "processes", None


def run(args: argparse.Namespace) -> int:
    from placer.scenarios.sweep import SweepError, cores, grid, load_sweep

    backend, usage = _backend(args)
    if usage:
        return _fail(2, usage)
    try:
        sweep = load_sweep(args.sweep)
    except OSError as e:
        return _fail(2, f"cannot open {args.sweep}: {e.strerror or e}")
    except SweepError as e:
        for issue in e.issues[:MAX_PRINTED]:
            print(f"{_NAME}: {args.sweep}: {issue}", file=sys.stderr)
        if len(e.issues) > MAX_PRINTED:
            print(f"{_NAME}: ... and {len(e.issues) - MAX_PRINTED} more problems", file=sys.stderr)
        return 1
    cells = grid(sweep)
    if args.dry_run:
        if args.json:
            print(json.dumps([c.as_json() for c in cells], indent=2, sort_keys=True))
        else:
            for c in cells:
                print(f"{c.index}\t{c.label()}")
        return 0
    if backend == "processes" and args.backend == "auto":
        from placer.scenarios.sweep import RAY_EXTRA

        print(
            f"{_NAME}: Ray is not installed ({RAY_EXTRA}): running on {args.parallel or cores()} "
            "local processes",
            file=sys.stderr,
        )
    return _run(args, sweep, cells, str(backend))


def _run(args: argparse.Namespace, sweep: Any, cells: list[Any], backend: str) -> int:
    from placer.scenarios.sim.progress import bar
    from placer.scenarios.sweep import frame, grid_doc, records, run_cells, text, write

    started = time.time()
    progress = not args.quiet and sys.stderr.isatty()
    try:
        with bar(len(cells), enabled=progress, desc=sweep.spec.name, unit="cell") as b:
            rows = run_cells(
                cells,
                backend=backend,  # type: ignore[arg-type]
                parallel=args.parallel,
                address=args.address,
                on_row=lambda row: b.update(1),
            )
    except Exception as e:  # the backend itself: Ray cannot start or reach the cluster at --address
        return _fail(2, f"the {backend} backend failed: {type(e).__name__}: {e}")
    wall = time.time() - started
    results = frame(rows)
    failed = int((results["status"] != "ok").sum())
    run_facts = {
        "sweep": sweep.spec.name,
        "description": sweep.spec.description,
        "file": args.sweep,
        "backend": backend,
        "address": args.address,
        "parallel": args.parallel,
        "size": len(cells),
        "failed": failed,
        "wall_s": round(wall, 3),
    }
    written = []
    if args.out:
        try:
            written = write(results, grid_doc(cells, **run_facts), args.out, fmt=args.format)
        except OSError as e:
            return _fail(2, f"cannot write into {args.out}: {e.strerror or e}")
    if args.json:
        print(json.dumps({**run_facts, "rows": records(results)}, indent=2, sort_keys=True))
    else:
        print(f"sweep {sweep.spec.name}: {len(cells)} cells on {backend} in {wall:.1f} s")
        print(text(results))
        if written:
            print("wrote " + ", ".join(str(p) for p in written))
    return 1 if failed else 0
