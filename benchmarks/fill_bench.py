"""The FGD cluster-fill experiment on every openb trace present, next to the paper's published figures.

    python benchmarks/fill_bench.py                          # all traces, seeds 42-44, the headline policies
    python benchmarks/fill_bench.py --seeds 42,43,44,45,46,47,48,49,50,51 --policies fgd,placer-frag,auto@100
    python benchmarks/fill_bench.py --policies all --no-engines     # every baseline and FGD (minutes)

Policies are names of ``placer fill --policy``; an engine may carry its batch size after ``@``: ``auto@1``
is placer's default engine with one arrival per ``place()`` call (online, as a backend calls it),
``auto@100`` with batches of 100. The default list is the issue's table: ``fgd`` (here), ``placer-frag``,
``auto@1`` and ``auto@100``, next to the paper's FGD figure and the LP bound at 100 % arrived load.

For each trace (``../shared/traces/alibaba-gpu-v2023/openb_pod_list_*.csv`` on the 1,213-node GPU node
list) and policy: the GPU allocation percent at 50/80/90/100/110/120/130 % arrived load (mean over the
seeds), its standard deviation at 130 %, the paper's figure at 130 % (``fgd-paper-results.csv``, mean over
the artifact's seeds 42-51) where the policy is one of the paper's, and wall seconds per run (the seeds in
turn, every policy for one seed before the next, so that a policy's run sits next to ``fgd``'s: with
``fgd`` among the policies, each other one's time over ``fgd``'s, seed by seed, median, min and max). Then the
upper bound (``scenarios/fill/bound.py``) at 100 % and 130 % arrived load, and a summary per trace. With
``--verify`` every run is re-checked by placer's independent checker (a few seconds more per run).

placer's engines run through ``place()`` in batches of ``--engine-batch`` arrivals with
``--engine-time-limit`` seconds per call. Prints figures, asserts nothing; skips with a message where the
traces are absent. The machine is noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

from placer.scenarios.fill.bound import bounds_at
from placer.scenarios.fill.policies import POLICIES
from placer.scenarios.fill.result import LOAD_POINTS
from placer.scenarios.fill.run import ENGINES, run_fill
from placer.scenarios.fill.tables import NodeTable, PodTable
from placer.scenarios.traces import openb_dir, traces_dir
from placer.scenarios.traces.alibaba import read_nodes, read_pods

#: Our policy name -> the paper's (``sc_policy`` of fgd-paper-results.csv).
PAPER_NAMES = {
    "random": "01-Random",
    "dot-product": "02-DotProd",
    "gpu-clustering": "03-GpuClustering",
    "gpu-packing": "04-GpuPacking",
    "best-fit": "05-BestFit",
    "fgd": "06-FGD",
}


def paper_results() -> dict[tuple[str, str], dict[str, str]]:
    """(workload, sc_policy) -> the row of fgd-paper-results.csv (empty when absent)."""
    path = traces_dir() / "fgd-paper-results.csv"
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {(r["workload"], r["sc_policy"]): r for r in csv.DictReader(f)}


def _cell(v: float | None, width: int = 7) -> str:
    return f"{'-' if v is None else f'{v:.2f}':>{width}}"


def bench_trace(trace: str, args: argparse.Namespace, paper: dict[tuple[str, str], dict[str, str]]) -> dict:
    nodes = read_nodes(openb_dir() / "openb_node_list_gpu_node.csv")
    pods = read_pods(openb_dir() / f"openb_pod_list_{trace}.csv")
    node_table, pod_table = NodeTable.of(nodes), PodTable.of(pods)
    gpus = int(node_table.gpus.sum())
    print(f"\n== {trace}: {len(pods)} pods in the trace, {len(nodes)} nodes, {gpus} GPUs ==")
    head = "".join(f"{x:>7}" for x in LOAD_POINTS)
    print(f"{'policy':<16}{head}  {'std130':>6}  {'paper130':>8}  {'s/run':>6}  {'fails':>5}")
    summary: dict[str, float | None] = {}
    bounds: list[dict[int, float]] = []
    runs: dict[str, list] = {label: [] for label in args.policies}  # type: ignore[type-arg]
    walls: dict[str, list[float]] = {label: [] for label in args.policies}
    for seed in args.seeds:  # seed by seed, every policy in turn: a policy's time next to fgd's, same moment
        for label in args.policies:
            policy, _, size = label.partition("@")
            batch = int(size) if size else args.engine_batch if policy in ENGINES else 1
            t0 = time.perf_counter()
            r = run_fill(
                nodes,
                pods,
                load=args.load,
                seed=seed,
                policy=policy,
                batch=batch,
                time_limit_s=args.engine_time_limit,
                reproducible=args.reproducible,
            )
            walls[label].append(time.perf_counter() - t0)
            if r.cut:
                print(f"  {label} seed {seed}: {r.cut} decisions cut by a wall clock (not reproducible)")
            if args.verify:
                from placer.scenarios.fill.verify import verify

                bad = verify(nodes, pods, r)
                if bad:
                    print(f"  VIOLATIONS in {policy} seed {seed}: {bad[:3]}")
            runs[label].append(r)
        bounds.append(
            bounds_at(
                node_table,
                pod_table,
                runs[args.policies[0]][-1].order,
                runs[args.policies[0]][-1].arrived,
                (100, 130),
            )
        )
    for label in args.policies:
        policy = label.partition("@")[0]
        allocs = [r.alloc_at() for r in runs[label]]
        mean = {x: statistics.fmean(a[x] for a in allocs if a[x] is not None) for x in LOAD_POINTS}
        std = statistics.pstdev(a[130] for a in allocs if a[130] is not None) if len(allocs) > 1 else 0.0
        row = paper.get((f"openb_pod_list_{trace}", PAPER_NAMES.get(policy, "")))
        paper130 = float(row["alloc_at_130"]) if row else None
        summary[label] = mean[130]
        cells = "".join(_cell(mean[x]) for x in LOAD_POINTS)
        fails = statistics.fmean(r.failed for r in runs[label])
        wall = statistics.fmean(walls[label])
        print(f"{label:<16}{cells}  {std:6.2f}  {_cell(paper130, 8)}  {wall:6.2f}  {fails:5.0f}", flush=True)
    if "fgd" in walls:
        for label in args.policies:
            if label != "fgd":
                ratios = [w / f for w, f in zip(walls[label], walls["fgd"], strict=True)]
                print(
                    f"  time {label} / fgd, seed by seed: median {statistics.median(ratios):.2f}x "
                    f"(min {min(ratios):.2f}, max {max(ratios):.2f})"
                )
    b100 = statistics.fmean(b[100] for b in bounds)
    b130 = statistics.fmean(b[130] for b in bounds)
    print(f"{'bound':<16}{'':>21}{b100:7.2f}{'':>14}{b130:7.2f}")
    summary["bound@100"], summary["bound@130"] = b100, b130
    fgd_paper = paper.get((f"openb_pod_list_{trace}", "06-FGD"))
    summary["paper-fgd"] = float(fgd_paper["alloc_at_130"]) if fgd_paper else None
    return summary


def main() -> None:
    known = [p.stem.removeprefix("openb_pod_list_") for p in sorted(openb_dir().glob("openb_pod_list_*.csv"))]
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--traces", default=",".join(known), help="comma-separated (default: all present)")
    parser.add_argument("--seeds", default="42,43,44", help="comma-separated seeds (default 42,43,44)")
    parser.add_argument(
        "--policies",
        default="fgd,placer-frag,auto@1,auto@100",
        help="comma-separated, an engine with @BATCH; 'all': every baseline and engine",
    )
    parser.add_argument("--no-engines", action="store_true", help="leave out placer's engines")
    parser.add_argument("--engine-batch", type=int, default=100, help="arrivals per place() call (100)")
    parser.add_argument("--engine-time-limit", type=float, default=1.0, help="seconds per place() call (1)")
    parser.add_argument(
        "--reproducible",
        action="store_true",
        help="engines on deterministic budgets (the same on any machine)",
    )
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--verify", action="store_true", help="re-check every run with placer's checker")
    args = parser.parse_args()
    if not known:
        print(f"fill_bench: no openb traces at {openb_dir()}; set PLACER_SHARED to the shared/ folder")
        return
    args.seeds = [int(s) for s in args.seeds.split(",")]
    names = ",".join([*POLICIES, *ENGINES]) if args.policies == "all" else args.policies
    args.policies = [p for p in names.split(",") if not (args.no_engines and p.partition("@")[0] in ENGINES)]
    unknown = [
        p for p in args.policies if p.partition("@")[0] not in POLICIES and p.partition("@")[0] not in ENGINES
    ]
    if unknown:
        sys.exit(f"fill_bench: unknown policies {unknown}")
    paper = paper_results()
    print(f"load {args.load}, seeds {args.seeds}; paper figures: {'present' if paper else 'absent'}")
    if any(p.partition("@")[0] in ENGINES for p in args.policies):
        # The engines' modules are imported before any run is timed: a process pays that once (about half a
        # second here), and inside the first run it was counted against the first trace's first seed alone.
        t0 = time.perf_counter()
        import placer.solver.session  # noqa: F401

        print(f"placer's engines imported in {time.perf_counter() - t0:.2f} s (once; in no run's time)")
    table = {t: bench_trace(t, args, paper) for t in args.traces.split(",")}
    cols = list(args.policies)
    print("\n== summary: allocation % at 130 % arrived load (mean over seeds); last columns: vs paper FGD ==")
    print(
        f"{'trace':<12}{'paper FGD':>10}"
        + "".join(f"{c:>12}" for c in cols)
        + f"{'bound@100':>11}"
        + "".join(f"{'Δ ' + c:>14}" for c in cols)
    )
    for trace, s in table.items():
        paper_fgd = s["paper-fgd"]
        deltas = [None if s.get(c) is None or paper_fgd is None else s[c] - paper_fgd for c in cols]
        print(
            f"{trace:<12}{_cell(paper_fgd, 10)}"
            + "".join(_cell(s.get(c), 12) for c in cols)
            + f"{s['bound@100']:11.2f}"
            + "".join(f"{'-' if d is None else f'{d:+.2f}':>14}" for d in deltas)
        )


if __name__ == "__main__":
    main()
