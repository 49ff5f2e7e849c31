"""Exact at scale: every hard instance and rule trap replicated x1, x10, x100 and x1,000 (issue "Exact at
scale"). Prints figures, asserts nothing.

    python benchmarks/scaled_bench.py                      # x1, x10, x100, x1000 (several minutes)
    python benchmarks/scaled_bench.py --copies 1,10,100    # quicker

The optimum of ``k`` copies is ``k`` times the instance's (each uses every free resource or places every
job: :mod:`placer.scenarios.synthetic.replicate`). For each instance and size it prints the optimum and
greedy's and the default engine's (``auto``: greedy, then CP-SAT) weighted demand placed, as a share of
the optimum; the engine's time limit is 2 s (10 s at x1,000). Then wall, build and solve seconds, the
model's size, ``model_exact``, ``status`` and ``gap``, and the independent checker's violations of both
answers. A row fails the target when the engine is more than 1 % below the optimum.
"""

from __future__ import annotations

import argparse
import time

from placer.scenarios.synthetic import hard_instances, weighted_demand
from placer.scenarios.synthetic.replicate import replicate
from placer.scenarios.synthetic.traps import rule_traps
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.policy import Policy


def _row(*cols: object) -> str:
    return "  ".join(f"{c!s:>11}" for c in cols)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", default="1,10,100,1000", help="comma-separated replication factors")
    ap.add_argument("--only", default="", help="comma-separated instance names (default: all)")
    args = ap.parse_args()
    sizes = [int(c) for c in args.copies.split(",")]
    only = {s for s in args.only.split(",") if s}
    instances = [s for s in hard_instances() + rule_traps() if not only or s.name in only]
    print(
        _row(
            "instance",
            "copies",
            "optimum",
            "greedy %",
            "auto %",
            "limit s",
            "wall s",
            "build s",
            "solve s",
            "variables",
            "classes",
            "exact",
            "status",
            "gap",
            "violations",
            "target",
        )
    )
    for base in instances:
        for k in sizes:
            sc = replicate(base, k)
            by_id = {j.id: j for j in sc.jobs}
            limit = 10.0 if k >= 1000 else 2.0
            g = place(sc.jobs, sc.cluster, Policy(engine="greedy", time_limit_s=limit), now=sc.now)
            t0 = time.perf_counter()
            a = place(sc.jobs, sc.cluster, Policy(time_limit_s=limit), now=sc.now)
            wall = time.perf_counter() - t0
            viol = len(check(g, sc.jobs, sc.cluster, now=sc.now)) + len(
                check(a, sc.jobs, sc.cluster, now=sc.now)
            )
            opt = sc.optimal_weighted_demand or 1.0
            got_g = weighted_demand(by_id[p.job] for p in g.placements) / opt
            got_a = weighted_demand(by_id[p.job] for p in a.placements) / opt
            s = a.stats
            print(
                _row(
                    base.name,
                    f"x{k}",
                    f"{opt:g}",
                    f"{got_g:.1%}",
                    f"{got_a:.1%}",
                    limit,
                    f"{wall:.2f}",
                    f"{s.build_s:.2f}",
                    f"{s.solve_s:.2f}",
                    s.model_variables if s.model_variables is not None else "-",
                    s.node_classes if s.node_classes is not None else "-",
                    s.model_exact if s.model_exact is not None else "-",
                    s.status[:11],
                    f"{s.gap:.3f}" if s.gap is not None else "-",
                    viol,
                    "met" if got_a >= 0.99 else "MISSED",
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
