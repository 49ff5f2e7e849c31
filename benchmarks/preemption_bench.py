"""Preemption benchmark (issue 5): placer vs a kube-scheduler-style victim picker, side by side.

    python benchmarks/preemption_bench.py [--seed 0] [--time-limit 10] [--bursts 300,600]

Scenario: scenario M's 1,000 GPU nodes, 30 % of GPUs held by preemptible spot jobs (started 1-8 h ago; half
checkpointed in the last 30 min, a fifth checkpoint on preempt), 30 % by non-preemptible on-demand jobs, and
a burst of reserved and on-demand jobs (8-GPU NVLink jobs, 4-GPU jobs, and 16-32-GPU FSDP gangs). Two bursts
by default: 300 jobs, which leave a choice of victims (where lost work can be saved), and 600, which need
more than all the spot capacity (every approach evicts nearly every spot job).
Printed per approach: jobs placed, priority-weighted demand placed (placer's weights), evictions,
GPU-hours of work lost, wall time, and violations found by the independent checker (for the baseline,
evictions made for jobs it then could not place count as violations too: kube evicts before it knows).
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import timedelta

from placer.scenarios.baselines.kube_preemption import kube_preemption
from placer.scenarios.synthetic import NOW, scenario_m
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.jobs.model import GpuDemand, Interconnect, Job, TaskGroup
from placer.solver.policy import Policy
from placer.solver.preempt import lost_gpu_seconds


def build(seed: int, burst: int = 600):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    base = scenario_m(seed).cluster.without_allocations()
    running = []
    n = 0
    for node in base.nodes:
        if node.gpu_count != 8 or not node.usable:
            continue
        free = list(range(8))
        share = 0.75  # about 60 % of GPUs busy, half of them spot
        while free and rng.random() < share:
            size = min(len(free), rng.choice([1, 2, 4, 8]))
            gpus, free = free[:size], free[size:]
            spot = rng.random() < 0.5
            started = NOW - timedelta(hours=rng.uniform(1, 8))
            ckpt = NOW - timedelta(minutes=rng.uniform(0, 30)) if spot and rng.random() < 0.5 else None
            running.append(
                {
                    "job": f"run-{n:05d}",
                    "priority_class": "spot" if spot else "on-demand",
                    "preemptible": spot,
                    "started_at": started,
                    "last_checkpoint_at": ckpt,
                    "checkpoint_on_preempt": spot and rng.random() < 0.2,
                    "grace_period_s": 60,
                    "replicas": [
                        {"node": node.name, "gpus": gpus, "cpu_cores": 8 * size, "memory_gb": 64 * size}
                    ],
                }
            )
            n += 1
    cluster = base.with_allocations(running)
    jobs: list[Job] = []
    for i in range(burst):
        cls = "reserved" if i % 2 == 0 else "on-demand"
        kind = i % 6
        if kind in (0, 1, 2):
            tg = TaskGroup(
                cpu_cores=64, memory_gb=512, gpu=GpuDemand(count=8, interconnect=Interconnect.NVLINK)
            )
            jobs.append(Job(id=f"burst-{i:03d}", priority_class=cls, tasks=[tg]))
        elif kind == 3:
            tg = TaskGroup(cpu_cores=32, memory_gb=256, gpu=GpuDemand(count=4))
            jobs.append(Job(id=f"burst-{i:03d}", priority_class=cls, tasks=[tg]))
        else:
            g = rng.choice([16, 24, 32])
            tg = TaskGroup(cpu_cores=8 * g, memory_gb=64 * g, gpu=GpuDemand(count=g))
            jobs.append(Job(id=f"burst-{i:03d}", priority_class=cls, distributed_strategy="fsdp", tasks=[tg]))
    return cluster, jobs


def report(name: str, decision, jobs, cluster, wall: float) -> None:  # type: ignore[no-untyped-def]
    policy = Policy()
    by_id = {j.id: j for j in jobs}
    weight = sum(
        policy.job_weight(by_id[p.job].priority_class.value, by_id[p.job].priority, by_id[p.job].total_gpus)
        for p in decision.placements
    )
    running = {rj.job: rj for rj in cluster.running_jobs()}
    lost_h = sum(lost_gpu_seconds(running[e.job], NOW) for e in decision.preemptions) / 3600
    violations = check(decision, jobs, cluster, now=NOW)
    print(
        f"{name:>22}  placed {len(decision.placements):4d}/{len(jobs)}  weighted demand {weight:9d}  "
        f"evictions {len(decision.preemptions):4d}  GPU-hours lost {lost_h:8.1f}  wall {wall:6.2f} s  "
        f"violations {len(violations)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--bursts", default="300,600", help="burst sizes, comma-separated")
    args = ap.parse_args()
    for burst in (int(b) for b in args.bursts.split(",")):
        run(args.seed, burst, args.time_limit)


def run(seed: int, burst: int, time_limit: float) -> None:
    cluster, jobs = build(seed, burst)
    held = sum(len(r.gpus) for rj in cluster.running_jobs() for r in rj.replicas)
    spot = sum(
        len(r.gpus) for rj in cluster.running_jobs() if rj.priority_class == "spot" for r in rj.replicas
    )
    total = sum(n.gpu_count for n in cluster.nodes)
    print(
        f"cluster: {total} GPUs, {held / total:.0%} busy, {spot / total:.0%} held by preemptible spot jobs; "
        f"burst of {len(jobs)} reserved/on-demand jobs"
    )
    t = time.perf_counter()
    d = kube_preemption(jobs, cluster, NOW)
    report("kube-style victims", d, jobs, cluster, time.perf_counter() - t)
    for engine in ("greedy", "cpsat"):
        t = time.perf_counter()
        d = place(jobs, cluster, Policy(engine=engine, time_limit_s=time_limit), now=NOW)
        report(f"placer {engine}", d, jobs, cluster, time.perf_counter() - t)


if __name__ == "__main__":
    main()
