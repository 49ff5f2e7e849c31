"""``placer fill --nodes NODES.csv --pods PODS.csv [--load 1.3] [--seed 42] [--policy NAME] [--batch N]
[--sampling sample|artifact] [--time-limit S] [--reproducible] [--verify] [--json]``.

The FGD paper's cluster-fill experiment on an Alibaba "openb" node list and pod list: pods are sampled
(with replacement, seeded) until their GPU request is ``--load`` x the cluster's GPU capacity, arrive in
that order, never leave, and are placed as they arrive — by placer's own engines through ``place()``,
as a backend calls it (``auto``, the default: placer's default engine; ``greedy``, ``cpsat``, and
``greedy-fgd``: greedy with the FGD baseline scorer), one arrival per call or ``--batch`` at a time, or one
at a time by a baseline policy or FGD (``fgd``, ``placer-frag``, ...). It prints the share of
GPU capacity allocated at 50/80/90/100/110/120/130 % arrived load, next to an upper bound no placement of
the arrived pods can beat (``scenarios/fill/bound.py``). ``--verify`` re-checks every placement with the
independent checker. Method and results: ``docs/fill.md``.

With ``--json``: one object — ``alloc`` and ``bound`` (percent, keyed by arrived-load percent), ``policy``,
``seed``, ``load``, ``batch``, ``sampling``, ``nodes``, ``gpus``, ``arrivals``, ``failed``, ``wall_s``,
``reproducible``, ``cut_decisions`` (engine decisions a wall clock cut: 0 means the same run on any
machine), ``unallocated`` (where the GPU capacity not allocated at the end sits, percent of capacity:
:mod:`placer.scenarios.fill.stranding`), ``verified`` (null unless ``--verify``) and ``violations``.

Exit 0 on success, 1 when a file is read but is not a valid node or pod list (every problem on stderr,
with file, line and column) or ``--verify`` finds violations, 2 for a usage error or a file that cannot be
opened. numpy, OR-Tools and the fill modules are imported inside :func:`run`.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["fill", "--nodes", "n.csv", "--pods", "p.csv", "--policy", "best-fit", "--json"])
>>> (a.nodes, a.pods, a.load, a.seed, a.policy, a.batch, a.json)
('n.csv', 'p.csv', 1.3, 42, 'best-fit', 1, True)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from placer.cli import numbers

__all__ = ["MAX_PRINTED", "add_parser", "run"]

#: Most problems printed before "... and N more".
MAX_PRINTED = 20


def add_parser(sub: Any) -> None:
    """Register ``placer fill`` on an ``argparse`` subparsers object."""
    p = sub.add_parser("fill", help="the FGD cluster-fill experiment on an openb node list and pod list")
    p.add_argument("--nodes", required=True, metavar="NODES.csv", help="openb node list (sn, cpu_milli, ...)")
    p.add_argument("--pods", required=True, metavar="PODS.csv", help="openb pod list (name, cpu_milli, ...)")
    p.add_argument(
        "--load", type=numbers.load, default=1.3, help="arrive until GPU requests reach LOAD x capacity"
    )
    p.add_argument("--seed", type=numbers.seed, default=42, help="sampling and tie-break seed (default 42)")
    p.add_argument(
        "--policy", default="auto", help="auto (placer's default engine), greedy, cpsat, fgd, a baseline, ..."
    )
    p.add_argument("--batch", type=numbers.count, default=1, help="arrivals per place() call (engines)")
    p.add_argument("--sampling", default="sample", choices=("sample", "artifact"), help="how pods are drawn")
    p.add_argument(
        "--time-limit", type=numbers.seconds, default=2.0, help="seconds per place() call (engines)"
    )
    p.add_argument(
        "--reproducible",
        action="store_true",
        help="engines on deterministic budgets: the same run on any machine (baselines always are)",
    )
    p.add_argument("--verify", action="store_true", help="re-check every placement with placer's checker")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load, fill, bound, report; the exit code says what went wrong (see the module docstring)."""
    from placer.scenarios.fill.policies import POLICIES
    from placer.scenarios.fill.run import ENGINES
    from placer.scenarios.traces.alibaba import read_nodes, read_pods
    from placer.scenarios.traces.table import TraceError

    known = (*POLICIES, *ENGINES)
    usage = None
    if args.policy not in known:
        usage = f"unknown policy {args.policy!r} (known: {', '.join(known)})"
    elif args.batch < 1 or (args.batch != 1 and args.policy not in ENGINES):
        usage = f"--batch must be 1 for {args.policy!r}; batches are for {' and '.join(ENGINES)}"
    elif not 0 < args.load <= 10:
        usage = f"--load must be in (0, 10], got {args.load}"
    elif args.time_limit <= 0:
        usage = "--time-limit must be positive"
    if usage:
        print(f"placer fill: {usage}", file=sys.stderr)
        return 2
    try:
        nodes = read_nodes(args.nodes)
        pods = read_pods(args.pods)
    except OSError as e:
        print(f"placer fill: cannot open {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    except TraceError as e:
        shown = "; ".join(str(p) for p in e.problems[:MAX_PRINTED])
        more = len(e.problems) - MAX_PRINTED + e.more
        print(
            f"placer fill: {shown}" + (f"; ... and {more} more problems" if more > 0 else ""), file=sys.stderr
        )
        return 1
    return _fill(args, nodes, pods)


def _fill(args: argparse.Namespace, nodes: list[Any], pods: list[Any]) -> int:
    from placer.scenarios.fill.bound import bounds_at
    from placer.scenarios.fill.result import LOAD_POINTS
    from placer.scenarios.fill.run import run_fill
    from placer.scenarios.fill.stranding import stranding
    from placer.scenarios.fill.tables import NodeTable, PodTable

    try:
        result = run_fill(
            nodes,
            pods,
            load=args.load,
            seed=args.seed,
            policy=args.policy,
            batch=args.batch,
            sampling=args.sampling,
            time_limit_s=args.time_limit,
            reproducible=args.reproducible,
        )
    except ValueError as e:  # a pod list without GPU pods, a node list without GPUs
        print(f"placer fill: {e}", file=sys.stderr)
        return 1
    node_table, pod_table = NodeTable.of(nodes), PodTable.of(pods)
    points = tuple(x for x in LOAD_POINTS if x <= round(100 * args.load))
    bound = bounds_at(node_table, pod_table, result.order, result.arrived, points)
    left = stranding(result, node_table, pod_table)
    beside = sorted(left.beside.items(), key=lambda kv: -kv[1][1])[:3]
    unallocated: dict[str, Any] = {
        "whole_free": round(left.percent(left.whole_milli), 3),
        "whole_free_starved": round(left.percent(left.whole_starved), 3),
        "partly_used": round(left.percent(left.partial_milli), 3),
        "partly_used_below_smallest_share": round(left.percent(left.below_smallest), 3),
        "beside_share": {str(share): round(left.percent(milli), 3) for share, (_, milli) in beside},
    }
    violations: list[Any] = []
    if args.verify:
        from placer.scenarios.fill.verify import verify

        violations = verify(nodes, pods, result)
    alloc = result.alloc_at(points)
    out = {
        "policy": args.policy,
        "seed": args.seed,
        "load": args.load,
        "batch": args.batch,
        "sampling": args.sampling,
        "nodes": len(nodes),
        "gpus": int(node_table.gpus.sum()),
        "arrivals": len(result.order),
        "failed": result.failed,
        "alloc": {str(x): v for x, v in alloc.items()},
        "bound": {str(x): v for x, v in bound.items()},
        "wall_s": round(result.wall_s, 3),
        "reproducible": args.reproducible,
        "cut_decisions": result.cut,
        "unallocated": unallocated,
        "verified": (not violations) if args.verify else None,
        "violations": [str(v) for v in violations],
    }
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        print(
            f"placer fill: {args.pods} on {args.nodes} ({out['nodes']} nodes, {out['gpus']} GPUs), "
            f"policy {args.policy}, seed {args.seed}, load {args.load}"
        )
        print(f"{out['arrivals']} arrivals, {out['failed']} failed, {out['wall_s']} s")
        if result.cut:
            print(
                f"{result.cut} decisions were cut by a wall clock: another machine may fill differently "
                "(--reproducible runs on deterministic budgets)"
            )
        cells = [str(x) for x in points]
        print(f"{'arrived load %':<16}" + "".join(f"{c:>8}" for c in cells))
        print(f"{'allocated %':<16}" + "".join(f"{_pct(alloc[x]):>8}" for x in points))
        print(f"{'bound %':<16}" + "".join(f"{_pct(bound[x]):>8}" for x in points))
        shares = ", ".join(
            f"{v:.2f} % beside {s}-milli shares" for s, v in unallocated["beside_share"].items()
        )
        print(
            f"unallocated at the end: {unallocated['whole_free']:.2f} % on GPUs nobody uses "
            f"({unallocated['whole_free_starved']:.2f} % on nodes short of CPU or memory for any GPU pod), "
            f"{unallocated['partly_used']:.2f} % on partly used GPUs" + (f" ({shares})" if shares else "")
        )
        if args.verify:
            print("verified: every placement passes placer's checker" if not violations else "VIOLATIONS:")
        for v in violations[:MAX_PRINTED]:
            print(f"  {v}")
    return 1 if violations else 0


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"
