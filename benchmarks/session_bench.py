"""One-arrival decisions through a Session on the openb cluster, and the online fill against FGD.

    python benchmarks/session_bench.py                       # default trace, seed 42
    python benchmarks/session_bench.py --trace gpushare40 --arrivals 300

Prints, on the 1,213-node openb cluster (``../shared/traces/alibaba-gpu-v2023``):

1. the state at 100 % arrived load (FGD's sampled arrivals up to there, each decided and committed by the
   session): running pods, time to get there;
2. ``--arrivals`` one-pod decisions on that state through a :class:`~placer.solver.session.Session` (the
   default engine, no preemption or planning, as the fill runs it), each committed: median, p90 and max
   milliseconds for ``decide`` and for ``commit``; then as many again back to back, checked after the
   run (the checker walks every running pod between two calls and leaves the CPU's caches cold for the
   next: the first figure is what a backend doing other work between calls sees, the second a tight
   loop's); next to ``place()`` from scratch on the same state (a few calls: it is what a backend without
   a session pays), and the floor: ``decide`` of one pod on a 1-node cluster, the cost of a decision
   before any per-node work;
2b. node events: 15 times, a random node goes down (``Session.node_down``), a pod is decided, the node
   comes back up, a pod is decided and committed: median, p90 and max of each, next to a plain decision
   (no decision may use the node while it is down; each is re-checked);
2c. nodes joining and leaving: 10 times, a copy of a random node joins under a new name
   (``Session.add_nodes``), a pod is decided and committed, a random node with pods on it leaves
   (``Session.remove_nodes``: its pods are released), a pod is decided and committed: medians of each
   (``--scenario-l``: the same at scenario L's size instead, and nothing else);
3. a whole online fill (``placer fill --policy auto``, one arrival per call) and the ``fgd`` policy on the
   same arrivals: wall seconds, their ratio, allocation at 100 % and 130 % arrived load, and a fingerprint
   of every arrival's node and GPUs (the first 12 hex digits of a SHA-1): two revisions whose
   fingerprints agree made the same decisions, so a speed change that claims to keep them can be checked
   (``--fill-runs N``: N alternating pairs and the median ratio: the machine is noisy);
4. ``--evictable`` (alone): the default policy — ``auto``, preemption and planning on, as a backend calls
   it — on 256 DGX H100 with 600 spot jobs running: a 1-GPU arrival by ``place()`` from scratch and through
   a session (decided and committed), with the engine and CP-SAT's status.

Every decision of part 2 is re-checked by the independent checker. Prints figures, asserts nothing. The
machine is noisy: compare within one run.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from placer.scenarios.fill.engines import NOW, arrival_jobs
from placer.scenarios.fill.result import FillResult
from placer.scenarios.fill.run import run_fill
from placer.scenarios.traces import openb_dir
from placer.scenarios.traces.alibaba import nodes_to_cluster, read_nodes, read_pods
from placer.solver.checks import check
from placer.solver.engine import place
from placer.solver.policy import Policy
from placer.solver.prices import PriceCatalog
from placer.solver.session import Session
from placer.topology import Inventory


def _ms(xs: list[float]) -> str:
    xs = sorted(xs)
    p90 = xs[int(0.9 * (len(xs) - 1))]
    return (
        f"median {statistics.median(xs) * 1000:.2f} ms, p90 {p90 * 1000:.2f} ms, max {xs[-1] * 1000:.2f} ms"
    )


def _fingerprint(r: FillResult) -> str:
    """Every arrival's node (-1: failed) and GPUs, hashed: equal for equal decisions."""
    return hashlib.sha1(r.node.tobytes() + repr(r.gpus).encode()).hexdigest()[:12]


def _floor(calls: int = 2000) -> list[float]:
    """Seconds per ``Session.decide`` of a 1-GPU pod on one idle DGX: what a decision costs before any
    per-node work (admission, the problem, greedy, the Decision), the part no cache of node state cuts."""
    from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    from placer.topology import cluster_of, dgx_h100

    session = Session(cluster_of(dgx_h100(1)), Policy(preemption=False, plan=False), prices=PriceCatalog())
    base = Job(id="x", tasks=[TaskGroup(gpu=GpuDemand(count=1), cpu_cores=1)])
    out = []
    for k in range(calls):
        job = base.model_copy(update={"id": f"f{k}"})
        t = time.perf_counter()
        session.decide([job], now=NOW)  # never committed: the node stays idle
        out.append(time.perf_counter() - t)
    return out


def _flaps(session: Session, pods: list, order: list, first: int, seed: int) -> None:  # type: ignore[type-arg]
    """Part 2b: a node goes down, a pod arrives, the node comes back, a pod arrives (15 random nodes):
    what a node event costs a session, and the decision after it, next to a plain decision."""
    rng = random.Random(seed)
    names = [n.name for n in session.cluster.nodes]
    times: dict[str, list[float]] = {k: [] for k in ("plain", "down", "after down", "up", "after up")}
    violations = 0

    def timed(what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        out = call(*args, **kwargs)
        times[what].append(time.perf_counter() - t)
        return out

    for k in range(first, first + 15):
        jobs = arrival_jobs(pods, order, [k])
        timed("plain", session.decide, jobs, now=NOW)
        name = rng.choice(names)
        timed("down", session.node_down, name)
        d = timed("after down", session.decide, jobs, now=NOW)
        violations += len(check(d, jobs, session.cluster, now=NOW))
        violations += any(r.node == name for p in d.placements for r in p.replicas)
        timed("up", session.node_up, name)
        d = timed("after up", session.decide, jobs, now=NOW)
        violations += len(check(d, jobs, session.cluster, now=NOW))
        session.commit(d)
    print("\n== 2b. a node down, a pod, the node up, a pod (15 random nodes) ==")
    print(f"plain decide {_ms(times['plain'])}")
    print(f"node_down {_ms(times['down'])}; the decision after it {_ms(times['after down'])}")
    print(
        f"node_up {_ms(times['up'])}; the decision after it {_ms(times['after up'])}; violations {violations}"
    )


def _membership(session: Session, pods: list, order: list, first: int, seed: int) -> None:  # type: ignore[type-arg]
    """Part 2c: a copy of a random node joins under a new name, a pod arrives, a random node with pods on
    it leaves (they are released), a pod arrives (10 times): what an autoscaler's event costs a session
    (``add_nodes`` / ``remove_nodes``), and the decision after it."""
    rng = random.Random(seed + 1)
    times: dict[str, list[float]] = {k: [] for k in ("add", "after add", "remove", "after remove")}
    violations = 0

    def timed(what: str, call: Callable[..., Any], *args: Any) -> Any:
        t = time.perf_counter()
        out = call(*args, **({"now": NOW} if what.startswith("after") else {}))
        times[what].append(time.perf_counter() - t)
        return out

    for i, k in enumerate(range(first, first + 20, 2)):
        spec = rng.choice(session.cluster.to_inventory().nodes)
        timed("add", session.add_nodes, Inventory(nodes=[spec.model_copy(update={"name": f"joined-{i}"})]))
        for what, kk in (("after add", k), ("after remove", k + 1)):
            if what == "after remove":
                busy = [n.name for n in session.cluster.nodes if session.cluster.jobs_on(n.name)]
                timed("remove", session.remove_nodes, rng.choice(busy))
            jobs = arrival_jobs(pods, order, [kk])
            d = timed(what, session.decide, jobs)
            violations += len(check(d, jobs, session.cluster, now=NOW))
            session.commit(d)
    print("\n== 2c. a node joins, a pod, a busy node leaves, a pod (10 times) ==")
    print(f"add_nodes {_ms(times['add'])}; the decision after it {_ms(times['after add'])}")
    print(f"remove_nodes {_ms(times['remove'])}; the decision after it {_ms(times['after remove'])}")
    print(f"checker violations {violations}")


def _scenario_l_membership(rounds: int = 5) -> None:
    """``--scenario-l``: nodes joining and leaving at scenario L's size (10,640 nodes, 13,503 running jobs,
    described node by node as importers write it), each followed by a one-job greedy decision, next to
    a plain decision and ``place()`` from scratch on the same state."""
    from datetime import UTC, datetime

    from placer.scenarios.synthetic.standard import scenario_l
    from placer.topology.build import build_cluster

    now = datetime(2026, 1, 1, tzinfo=UTC)
    sc = scenario_l(0)
    inv = sc.cluster.to_inventory()
    cluster = build_cluster(
        inv.model_copy(update={"nodes": list(Inventory(nodes=inv.nodes).expanded_nodes())})
    )
    policy = Policy(engine="greedy", preemption=False, plan=False, time_limit_s=30)
    session = Session(cluster, policy, learn=False)
    jobs = list(sc.jobs)
    session.decide(jobs[:1], now=now)  # the pieces built
    spec = next(x for x in session.cluster.to_inventory().nodes if x.gpus is not None)
    times: dict[str, list[float]] = {
        k: [] for k in ("plain", "add", "after add", "remove", "after remove", "scratch")
    }

    def timed(what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        t = time.perf_counter()
        call(*args, **kwargs)
        times[what].append(time.perf_counter() - t)

    for i in range(rounds):
        one = [jobs[1 + i]]
        timed("plain", session.decide, one, now=now)
        timed("add", session.add_nodes, Inventory(nodes=[spec.model_copy(update={"name": f"joined-{i}"})]))
        timed("after add", session.decide, one, now=now)
        busy = [n.name for n in session.cluster.nodes if session.cluster.jobs_on(n.name)]
        timed("remove", session.remove_nodes, busy[100 + 37 * i])
        timed("after remove", session.decide, one, now=now)
        timed("scratch", place, one, session.cluster, policy, now=now)
    running = len(session.cluster.running_jobs())
    print(f"== scenario L: {len(session.cluster.nodes):,} nodes, {running:,} running ==")
    for what, xs in times.items():
        print(f"{what:<13} median {statistics.median(xs) * 1000:8.1f} ms")


def _evictable(arrivals: int = 200) -> None:
    """Part 4 (``--evictable``): the default policy (``auto``, preemption and planning on) on 256 DGX H100
    with 600 spot jobs running, which may all be evicted: one 1-GPU arrival by ``place()`` from scratch
    (15 calls, nothing committed) and through a :class:`Session` (``arrivals`` decided and committed), with
    the engine and CP-SAT's status of the last decision, each re-checked."""
    from datetime import UTC, datetime

    from placer.solver.jobs.model import GpuDemand, Job, TaskGroup
    from placer.topology import RunningJob, cluster_of, dgx_h100

    now = datetime(2026, 1, 1, tzinfo=UTC)
    cluster = cluster_of(dgx_h100(256, nodes_per_rack=16))
    names = [n.name for n in cluster.nodes]
    spots = [
        RunningJob(
            job=f"s{i}",
            priority_class="spot",
            replicas=[{"node": names[i % 256], "gpus": [2 * (i // 256), 2 * (i // 256) + 1]}],  # type: ignore[list-item]
        )
        for i in range(600)
    ]
    cluster = cluster.with_allocations(spots)

    def job(k: int) -> Job:
        return Job(id=f"a{k}", tasks=[TaskGroup(cpu_cores=4, gpu=GpuDemand(count=1))])

    print("== 4. the default policy beside evictable work: 256 DGX H100, 600 spot jobs running ==")
    scratch, violations = [], 0
    for k in range(15):
        t = time.perf_counter()
        d = place([job(k)], cluster, Policy(), now=now)
        scratch.append(time.perf_counter() - t)
        violations += len(check(d, [job(k)], cluster, now=now))
    print(f"place() from scratch: {_ms(scratch)}; engine {d.stats.engine}, CP-SAT {d.stats.model_status}")
    session = Session(cluster, Policy())
    decided = []
    for k in range(100, 100 + arrivals):
        t = time.perf_counter()
        d = session.decide([job(k)], now=now)
        decided.append(time.perf_counter() - t)
        violations += len(check(d, [job(k)], session.cluster, now=now))
        session.commit(d)
    last = f"engine {d.stats.engine}, CP-SAT {d.stats.model_status}"
    print(f"Session.decide, each committed: {_ms(decided)}; {last}")
    print(f"evictions {len(d.preemptions)}; checker violations {violations}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="default")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--arrivals", type=int, default=200)
    ap.add_argument("--no-fill", action="store_true", help="skip part 3 (the whole online fill)")
    ap.add_argument(
        "--fill-runs", type=int, default=1, help="part 3 this many times, fgd and auto alternating (median)"
    )
    ap.add_argument(
        "--scenario-l", action="store_true", help="only nodes joining and leaving at scenario L's size"
    )
    ap.add_argument(
        "--evictable", action="store_true", help="only part 4: the default policy beside evictable work"
    )
    args = ap.parse_args()
    if args.scenario_l:
        _scenario_l_membership()
        return
    if args.evictable:
        _evictable()
        return
    nodes_csv = openb_dir() / "openb_node_list_gpu_node.csv"
    if not nodes_csv.is_file():
        print(f"session_bench: no openb traces at {openb_dir()}")
        return
    nodes = read_nodes(nodes_csv)
    pods = read_pods(openb_dir() / f"openb_pod_list_{args.trace}.csv")

    print(f"== 1. {args.trace}: the state at 100 % arrived load, seed {args.seed} ==")
    t = time.perf_counter()
    full = run_fill(nodes, pods, load=1.3, seed=args.seed, policy="fgd")
    k100 = int((full.arrived <= full.capacity_milli).sum())
    policy = Policy(time_limit_s=1.0, preemption=False, plan=False, seed=args.seed)
    session = Session(nodes_to_cluster(nodes), policy, prices=PriceCatalog())
    for k in range(k100):  # the arrivals up to 100 % load, each decided and committed by the session
        session.commit(session.decide(arrival_jobs(pods, full.order, [k]), now=NOW))
    running = len(session.cluster.running_jobs())
    print(f"{running} pods running after {k100} arrivals, built in {time.perf_counter() - t:.1f} s")

    print(f"\n== 2. {args.arrivals} one-pod decisions on that state (engine auto, 1,213 nodes) ==")
    decide_s, commit_s, violations = [], [], 0
    for k in range(k100, min(k100 + args.arrivals, len(full.order))):
        jobs = arrival_jobs(pods, full.order, [k])
        t = time.perf_counter()
        d = session.decide(jobs, now=NOW)
        decide_s.append(time.perf_counter() - t)
        violations += len(check(d, jobs, session.cluster, now=NOW))
        t = time.perf_counter()
        session.commit(d)
        commit_s.append(time.perf_counter() - t)
    print(f"Session.decide, each re-checked before the next: {_ms(decide_s)}")
    print(f"Session.commit: {_ms(commit_s)}")
    first = k100 + args.arrivals + 10
    warm, held = [], []
    for k in range(first, min(first + args.arrivals, len(full.order))):
        jobs = arrival_jobs(pods, full.order, [k])
        t = time.perf_counter()
        d = session.decide(jobs, now=NOW)
        warm.append(time.perf_counter() - t)
        held.append((d, jobs, session.cluster))
        session.commit(d)
    violations += sum(len(check(d, jobs, cluster, now=NOW)) for d, jobs, cluster in held)
    print(f"Session.decide back to back, re-checked after the run: {_ms(warm)}")
    scratch = []
    for k in range(first + args.arrivals, first + args.arrivals + 10):
        t = time.perf_counter()
        place(arrival_jobs(pods, full.order, [k]), session.cluster, policy, now=NOW, prices=PriceCatalog())
        scratch.append(time.perf_counter() - t)
    print(f"place() from scratch, same state: {_ms(scratch)}; checker violations in part 2: {violations}")
    print(f"the floor, one 1-GPU pod on a 1-node cluster (no per-node work): Session.decide {_ms(_floor())}")
    _flaps(session, pods, full.order, first + args.arrivals + 10, args.seed)
    _membership(session, pods, full.order, first + args.arrivals + 25, args.seed)

    if args.no_fill:
        return
    print("\n== 3. the whole online fill: auto (one arrival per place() call) vs fgd, same arrivals ==")
    ratios = []
    for _ in range(args.fill_runs):  # alternating, so that a slow moment of the machine hits both
        t = time.perf_counter()
        fgd = run_fill(nodes, pods, load=1.3, seed=args.seed, policy="fgd")
        fgd_s = time.perf_counter() - t
        t = time.perf_counter()
        auto = run_fill(nodes, pods, load=1.3, seed=args.seed, policy="auto", batch=1, time_limit_s=1.0)
        auto_s = time.perf_counter() - t
        for name, r, s in (("fgd", fgd, fgd_s), ("auto online", auto, auto_s)):
            a = r.alloc_at([100, 130])
            print(
                f"{name:<12} wall {s:7.1f} s   alloc@100 {a[100]:.2f}   alloc@130 {a[130]:.2f}   "
                f"decisions {_fingerprint(r)}"
            )
        ratios.append(auto_s / fgd_s)
        print(f"auto online / fgd wall time: {ratios[-1]:.1f}x")
    if len(ratios) > 1:
        print(f"median of {len(ratios)} runs: {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
