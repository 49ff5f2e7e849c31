"""Where a fill run's unallocated GPU capacity sits at 130 % arrived load (``scenarios/fill/stranding.py``).

    python benchmarks/fill_stranding.py                                   # default, multigpu40, gpushare40
    python benchmarks/fill_stranding.py --traces default --policies fgd,auto@1,auto@100 --seeds 42,43,44

Per trace and policy, means over the seeds, in percent of the cluster's GPU capacity: what was allocated,
the milli on whole free GPUs (and the part on nodes with too little CPU or memory left for any GPU pod),
the milli on partly used GPUs (and the part below the smallest share any arrival asked), the partly used
GPUs' free milli beside the three largest shares, and the failed arrivals' commonest shapes. Then, for the
first trace, what the same arrivals give when they are sorted (largest first, over the whole run and within
windows of 100) and placed by ``fgd``: the room an order-aware policy would have, which an online one
does not. Prints figures, asserts nothing; skips with a message where the traces are absent.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter

from placer.scenarios.fill.run import run_fill
from placer.scenarios.fill.sampling import arrivals
from placer.scenarios.fill.stranding import Stranding, stranding
from placer.scenarios.fill.tables import NodeTable, PodTable
from placer.scenarios.traces import openb_dir
from placer.scenarios.traces.alibaba import read_nodes, read_pods


def _policy(name: str) -> tuple[str, int]:
    policy, _, batch = name.partition("@")
    return policy, int(batch or 1)


def _row(label: str, runs: list[Stranding]) -> str:
    def mean(field: str) -> float:
        return statistics.mean(s.percent(getattr(s, field)) for s in runs)

    shares: Counter[int] = Counter()
    for s in runs:
        for share, (_, milli) in s.beside.items():
            shares[share] += milli
    cap = runs[0].capacity_milli * len(runs)
    top = ", ".join(f"{share}: {100.0 * milli / cap:.2f}" for share, milli in shares.most_common(3))
    failed: Counter[tuple[int, int]] = Counter()
    for s in runs:
        failed.update(s.failed)
    common = ", ".join(f"{n}x{m}: {c / len(runs):.0f}" for (n, m), c in failed.most_common(3))
    return (
        f"{label:16} alloc {mean('allocated_milli'):6.2f} | whole free {mean('whole_milli'):5.2f}"
        f" (starved {mean('whole_starved'):4.2f}) | partly used {mean('partial_milli'):5.2f}"
        f" (below smallest share {mean('below_smallest'):4.2f}) | beside {top} | failed {common}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="default,multigpu40,gpushare40")
    ap.add_argument("--policies", default="fgd,placer-frag,auto@1")
    ap.add_argument("--seeds", default="42,43,44")
    ap.add_argument("--no-orders", action="store_true", help="skip the sorted-arrivals comparison")
    args = ap.parse_args()
    root = openb_dir()
    if root is None:
        print("skipped: ../shared/traces/alibaba-gpu-v2023 not found (set PLACER_SHARED)")
        sys.exit(0)
    node_list = read_nodes(root / "openb_node_list_gpu_node.csv")
    nodes = NodeTable.of(node_list)
    seeds = [int(s) for s in args.seeds.split(",")]
    traces = args.traces.split(",")
    for trace in traces:
        pod_list = read_pods(root / f"openb_pod_list_{trace}.csv")
        pods = PodTable.of(pod_list)
        print(f"\n== {trace}: % of GPU capacity at 130 % arrived load, mean of seeds {args.seeds} ==")
        for name in args.policies.split(","):
            policy, batch = _policy(name)
            runs = [
                stranding(
                    run_fill(node_list, pod_list, seed=s, policy=policy, batch=batch, time_limit_s=1.0),
                    nodes,
                    pods,
                )
                for s in seeds
            ]
            print(_row(name, runs), flush=True)
        if args.no_orders or trace != traces[0]:
            continue
        print("-- the same arrivals in another order, placed by fgd --")
        for label, window in (("sorted, all", 0), ("sorted by 100", 100)):
            runs = []
            for s in seeds:
                order = arrivals(pods, capacity_milli=nodes.capacity_milli, load=1.3, seed=s).tolist()
                size = window or len(order)
                ordered: list[int] = []
                for start in range(0, len(order), size):
                    chunk = order[start : start + size]
                    ordered += sorted(chunk, key=lambda i: (-pods.num[i], -pods.milli[i], -pods.cpu[i]))
                runs.append(stranding(run_fill(node_list, pod_list, seed=s, order=ordered), nodes, pods))
            print(_row(label, runs), flush=True)


if __name__ == "__main__":
    main()
