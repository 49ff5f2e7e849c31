"""What-if simulator benchmark: the library scenarios end to end, two what-ifs, and the simulator's own
overhead on a 1,000-node cluster.

    python benchmarks/sim_bench.py [--quick] [--seed 0]

1. Each scenario of ``scenarios/library`` at its full horizon (``--quick``: at most 6 h): jobs, solver
   calls, wall time split into solver and simulator, GPU allocation / utilization, waits by class,
   evictions, lost GPU-hours, cost per useful GPU-hour. ``philly-day`` needs ``../shared/traces``.
2. What-ifs on ``h100-spot-inference``: preemption off, and time planning off, against the file's policy.
3. Scale: synthetic layout M (1,000 GPU nodes + 64 CPU nodes + a v5e pod) under a steady workload for
   2 h at 5-minute intervals (``--quick``: 1 h), greedy without planning: per-interval cost of the
   simulator (books, fragmentation, samples) beside the solver's.

Every decision is checked by the independent checker (``verify``), so the wall times include it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from placer.scenarios.inputs import prepare
from placer.scenarios.load import load_scenario, load_scenario_text, with_overrides
from placer.scenarios.sim import metrics
from placer.scenarios.sim.loop import Simulator
from placer.scenarios.sim.record import SimResult
from placer.scenarios.units import format_duration

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios" / "library"


def _run(spec, base: Path | None, seed: int) -> tuple[SimResult, float]:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    r = Simulator(prepare(spec, base, seed=seed), verify=True).run()
    return r, time.perf_counter() - t0


def _line(name: str, r: SimResult, wall: float) -> str:
    s = metrics.summary(r)
    w = s["waits"]

    def p95(cls: str) -> str:
        v = w.get(cls, {}).get("wait_p95_s")
        return "-" if v is None else format_duration(v)

    per = s["cost_per_useful_gpu_h"]
    return (
        f"{name:<22} {s['jobs']:>5} {s['decisions']:>5} {wall:>7.1f} {s['solver_s']:>7.1f} "
        f"{wall - s['solver_s']:>6.1f} {100 * (s['allocation'] or 0):>5.1f}% "
        f"{100 * (s['utilization'] or 0):>5.1f}% "
        f"{p95('reserved'):>8} {p95('on-demand'):>8} {p95('spot'):>8} {s['preemptions']:>5} "
        f"{s['lost_gpu_h']:>7.1f} {'-' if per is None else f'${per:.2f}':>7}"
    )


HEADER = (
    f"{'scenario':<22} {'jobs':>5} {'calls':>5} {'wall s':>7} {'solver':>7} {'sim':>6} {'alloc':>6} "
    f"{'util':>6} {'p95 res':>8} {'p95 od':>8} {'p95 spot':>8} {'evict':>5} {'lost h':>7} {'$/useful':>7}"
)


def library(quick: bool, seed: int) -> None:
    print("1. library scenarios (wait p95 by class: reserved, on-demand, spot)")
    print(HEADER)
    for path in sorted(LIBRARY.glob("*.yaml")):
        spec = load_scenario(path)
        if spec.workload.trace is not None and not (path.parent / spec.workload.trace.file).exists():
            print(f"{path.stem:<22} skipped: {spec.workload.trace.file} not found")
            continue
        if quick:
            spec = with_overrides(spec, horizon=min(spec.horizon, 6 * 3600))
        r, wall = _run(spec, path.parent, seed)
        print(_line(path.stem, r, wall))


def what_ifs(quick: bool, seed: int) -> None:
    print("\n2. what-ifs on h100-spot-inference")
    print(HEADER)
    path = LIBRARY / "h100-spot-inference.yaml"
    base = load_scenario(path)
    if quick:
        base = with_overrides(base, horizon="6h")
    for label, changes in (
        ("as in the file", {}),
        ("preemption off", {"preemption": False}),
        ("planning off", {"plan": False}),
    ):
        r, wall = _run(with_overrides(base, **changes), path.parent, seed)
        print(_line(label, r, wall))


SCALE = """
name: scale-m
horizon: {horizon}
interval: 5m
cluster: {{layout: M}}
policy: {{engine: greedy, plan: false, time_limit_s: 5}}
workload:
  synthetic:
    arrivals: {{rate_per_hour: 1500, backlog: 2500}}
    classes:
      - {{name: single, share: 0.5, gpus: 1, duration: {{dist: exponential, mean: 1h, min: 5m}}}}
      - {{name: node, share: 0.3, gpus: {{2: 0.3, 4: 0.3, 8: 0.4}}, interconnect: nvlink,
          gpu_types: [nvidia-h100, nvidia-a100], duration: {{dist: lognormal, median: 2h, sigma: 0.6}},
          priority_class: {{on-demand: 0.7, spot: 0.3}}, checkpoint_interval: 20m}}
      - {{name: gang, share: 0.1, gpus: {{16: 0.6, 32: 0.4}}, strategy: fsdp, gpu_types: [nvidia-h100],
          duration: {{dist: lognormal, median: 4h, sigma: 0.5}}, priority_class: reserved,
          checkpoint_interval: 30m}}
      - {{name: tpu, share: 0.1, tpu: {{topology: {{2x4: 0.6, 4x4: 0.4}}}}, duration: 1h,
          priority_class: spot}}
"""


def scale(quick: bool, seed: int) -> None:
    print("\n3. scale: synthetic layout M (1,064 nodes, 8,000 GPUs), greedy, no planning")
    spec = load_scenario_text(SCALE.format(horizon="1h" if quick else "2h"))
    r, wall = _run(spec, None, seed)
    s = metrics.summary(r)
    n = len(r.intervals)
    print(HEADER)
    print(_line("scale-m", r, wall))
    print(
        f"per interval: {wall / n:.2f} s in all, solver "
        f"{s['solver_s'] / max(1, s['decisions']):.2f} s per call, "
        f"simulator and checker {(wall - s['solver_s']) / n:.2f} s; {n} intervals, peak queue "
        f"{int(r.intervals['pending'].max())} jobs, peak running {int(r.intervals['running'].max())}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    library(args.quick, args.seed)
    what_ifs(args.quick, args.seed)
    scale(args.quick, args.seed)


if __name__ == "__main__":
    main()
