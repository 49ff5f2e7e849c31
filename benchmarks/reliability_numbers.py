"""Reliability figures (issue "Reliability and security"): prints numbers, asserts nothing.

    python benchmarks/reliability_numbers.py                      # 300 random cases, 2000 hostile per target
    python benchmarks/reliability_numbers.py --cases 50 --hostile 200

Runs the evidence suites' own generators directly (not through pytest), for a bounded number of cases,
and prints:

1. property cases (``tests/reliability/test_properties.py``): random clusters and batches decided by both
   engines; decisions checked per engine, checker violations, CP-SAT worse than greedy, nondeterminism,
   empty answers where greedy placed something, and unexpected exceptions;
2. hostile inputs (``tests/reliability/test_hostile_inputs.py``): inputs tried per reader / importer and
   how many escaped as an unexpected exception; then the named attacks (XML entities, YAML bombs, deep
   and 20 MB documents) with their time and peak memory;
2b. hostile numbers as text (``tests/reliability/test_hardening.py``): literals beyond the number rule in
   every reader and the service's write endpoints: refused (naming the field), escaped, accepted;
3. the deadline matrix (``tests/reliability/test_deadline_matrix.py``): wall time per cell and the worst
   overshoot past the time limit (documented bound: 0.5 s).

Hypothesis runs without its example database and without shrinking: the figures are counts, not minimal
failing cases (run the pytest suites for those).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the suites live in tests/, which is not an installed package
    sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from tests.reliability import test_deadline_matrix as deadline  # noqa: E402
from tests.reliability import test_hostile_inputs as hostile  # noqa: E402
from tests.reliability import test_properties as props  # noqa: E402

NO_SHRINK = [Phase.generate]


def _settings(n: int) -> settings:
    return settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=NO_SHRINK,
        suppress_health_check=list(HealthCheck),
    )


def property_cases(n: int) -> None:
    """Section 1: ``n`` random (cluster, batch) cases through :func:`props.examine`."""
    print(f"\n== 1. property cases (random clusters and batches, both engines), {n} requested ==")
    tally: Counter[str] = Counter()
    first: dict[str, str] = {}

    @_settings(n)
    @given(case=props.cases())
    def run(case: Any) -> None:
        cluster, batch, order = case
        tally["cases"] += 1
        tally["jobs"] += len(batch)
        tally["nodes"] += len(cluster.nodes)
        try:
            f = props.examine(cluster, batch, order)
        except Exception as e:  # counted, not raised: the figures must come out
            tally["exceptions"] += 1
            first.setdefault("exception", f"{type(e).__name__}: {e}"[:200])
            return
        tally["decisions greedy"] += 2
        tally["decisions cpsat"] += 2
        for engine in ("greedy", "cpsat"):
            if f.violations[engine]:
                tally[f"violating cases {engine}"] += 1
                first.setdefault(f"violation {engine}", f.violations[engine][0][:200])
        for key, items in (
            ("cpsat worse", f.cpsat_worse),
            ("nondeterministic", f.nondeterministic),
            ("empty answer", f.empty_answer),
        ):
            if items:
                tally[key] += 1
                first.setdefault(key, items[0][:200])

    t0 = time.perf_counter()
    run()
    print(
        f"cases checked:                    {tally['cases']} ({tally['jobs']} jobs, {tally['nodes']} nodes)"
    )
    print(f"decisions checked, greedy:        {tally['decisions greedy']}")
    print(f"decisions checked, cpsat:         {tally['decisions cpsat']}")
    print(f"cases with violations, greedy:    {tally['violating cases greedy']}")
    print(f"cases with violations, cpsat:     {tally['violating cases cpsat']}")
    print(f"cpsat worse than greedy:          {tally['cpsat worse']}")
    print(f"nondeterministic:                 {tally['nondeterministic']}")
    print(f"placed nothing though greedy did: {tally['empty answer']}")
    print(f"unexpected exceptions:            {tally['exceptions']}")
    print(f"seconds:                          {time.perf_counter() - t0:.1f}")
    for key, example in first.items():
        print(f"  first {key}: {example}")


def hostile_inputs(n: int) -> None:
    """Section 2: ``n`` hostile inputs per reader / importer, then the named attacks."""
    print(f"\n== 2. hostile inputs, {n} requested per target ==")
    print(f"{'target':<28}{'tried':>8}{'escaped':>9}{'seconds':>9}")
    total = escaped = 0
    for name in hostile.TARGETS:
        t0 = time.perf_counter()
        tally = hostile.fuzz(name, n, strict=False)
        total += tally.tried
        escaped += len(tally.escaped)
        print(f"{name:<28}{tally.tried:>8}{len(tally.escaped):>9}{time.perf_counter() - t0:>9.1f}")
        for e in tally.escaped[:2]:
            print(f"    {e}")
    print(f"{'all':<28}{total:>8}{escaped:>9}")

    print("\nnamed attacks (refused? seconds, peak MB; interrupted after 10 s):")
    attacks: dict[str, Any] = {
        "xml external entity": lambda: hostile.read_text(hostile.XXE_FILE, fmt="sss"),
        "xml external dtd": lambda: hostile.read_text(hostile.XXE_SSRF, fmt="sss"),
        "xml billion laughs": lambda: hostile.read_text(hostile.BILLION_LAUGHS, fmt="sss"),
        "xml quadratic blowup": lambda: hostile.read_text(hostile.QUADRATIC, fmt="sss"),
    }
    for doc, text in hostile.HOSTILE_DOCUMENTS.items():
        attacks[f"jobs: {doc}"] = lambda text=text: hostile.read_text(text, source="x")
        attacks[f"importers: {doc}"] = lambda text=text: hostile.detect_cluster_format(text, source="x")
    for name, call in attacks.items():
        tracemalloc.start()
        t0 = time.perf_counter()
        try:
            with hostile.interrupted_after(10.0):
                out = call()
            verdict = "refused" if isinstance(out, list) and hostile.refused(out) else "ACCEPTED"
        except hostile.TopologyError:
            verdict = "refused"
        except TimeoutError:
            verdict = "NOT REFUSED IN 10 s"
        except Exception as e:
            verdict = f"ESCAPED {type(e).__name__}"
        seconds = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"  {name:<34}{verdict:<22}{seconds:>7.2f} s{peak:>9.1f} MB")


def _hostile_literals(n: int) -> list[str]:
    """``n`` number literals beyond the one rule (finite, |x| <= 2^53), deterministic."""
    import random

    rng = random.Random(7)
    out: list[str] = []
    while len(out) < n:
        kind = rng.randrange(4)
        if kind == 0:
            out.append(
                ("-" if rng.random() < 0.5 else "") + str(rng.randint(2**53 + 1, 10 ** rng.randint(17, 400)))
            )
        elif kind == 1:
            out.append(f"{rng.choice(['', '-'])}{rng.randint(1, 9)}e{rng.randint(309, 4000)}")
        elif kind == 2:
            out.append(f"{rng.uniform(1, 9):.3f}e{rng.randint(16, 308)}")
        else:
            out.append(str(-(2**53) - rng.randint(1, 10**6)))
    return out


def hostile_numbers(n: int) -> None:
    """Section 2b: hostile numbers as text through every reader and the service's write endpoints."""
    from fastapi.testclient import TestClient

    from placer.service.app import ServiceConfig, create_app
    from tests.reliability import test_hardening as hard

    print(f"\n== 2b. hostile numbers as text (beyond finite and 2^53), {n} per target ==")
    print(f"{'target':<28}{'tried':>8}{'refused':>9}{'named':>7}{'escaped':>9}{'accepted':>10}")
    literals = _hostile_literals(n)

    def jobs_in(source: str) -> Any:  # the reader is chosen by the name's extension
        def run(text: str) -> str:
            [r] = hard.read_text(text, source=source)
            return "" if r.ok else " ".join(f"{e.path} {e.message}" for e in r.errors)

        return run

    def cluster_in(source: str) -> Any:
        def run(text: str) -> str:
            try:
                hard.load_cluster_text(text, source=source)
            except hard.TopologyError as e:
                return str(e)
            return ""

        return run

    jobs, cluster = jobs_in("h.json"), cluster_in("h.json")

    def config(load: Any) -> Any:
        def run(text: str) -> str:
            try:
                load(text)
            except hard.JobValidationError as e:
                return str(e)
            return ""

        return run

    examples = Path(__file__).resolve().parents[1] / "examples"
    flux = (examples / "jobs" / "mpi-job.flux.yaml").read_text()
    sss = (examples / "jobs" / "analysis.sss.xml").read_text()
    slurm = (examples / "importers" / "slurm_nodes.txt").read_text()
    squeue = (
        Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "slurm" / "squeue-22.05.json"
    ).read_text()

    flux_jobs, sss_jobs, slurm_nodes = jobs_in("h.yaml"), jobs_in("h.xml"), cluster_in("h.txt")

    def running(text: str) -> str:
        from placer.topology.importers.slurm_jobs import squeue_running
        from placer.topology.safe_load import UnsafeDocument, load_json

        try:
            squeue_running(load_json(text), source="q.json")
        except (UnsafeDocument, hard.TopologyError) as e:
            return str(e)
        return ""

    targets = [
        ("reader ojs", hard._ojs, jobs, "ext_ml_memory_gb"),
        ("reader flux (YAML)", lambda x: flux.replace("count: 16", f"count: {x}", 1), flux_jobs, "count"),
        (
            "reader sss (XML)",
            lambda x: sss.replace("<Processors>16<", f"<Processors>{x}<"),
            sss_jobs,
            "Processors",
        ),
        (
            "importer slurm text",
            lambda x: slurm.replace("CPUTot=224", f"CPUTot={x}", 1),
            slurm_nodes,
            "CPUTot",
        ),
        (
            "running squeue --json",
            lambda x: squeue.replace('"priority": 4294901759', f'"priority": {x}', 1),
            running,
            "priority",
        ),
        ("importer inventory", hard._inventory, cluster, "cpu_cores"),
        ("importer ojs-workers", hard._workers, cluster, "memory_gb"),
        (
            "queue config",
            hard._queue,
            config(lambda t: hard.load_queue_configs(t, source="q")),
            "max_cost_per_hour",
        ),
        ("prices", hard._prices, config(lambda t: hard.load_prices(t, source="p")), "tenants"),
    ]
    with TestClient(
        create_app(ServiceConfig()), base_url="http://127.0.0.1", raise_server_exceptions=False
    ) as c:
        json_type = {"content-type": "application/json"}

        def endpoint(method: str, path: str) -> Any:
            def run(text: str) -> str:
                r = c.request(method, path, content=text, headers=json_type)
                if r.status_code >= 500:
                    raise RuntimeError(f"{method} {path}: {r.status_code}")
                return r.text if r.status_code >= 400 else ""

            return run

        targets += [
            (
                "PUT /v1/clusters/{id}",
                lambda x: '{"cluster": ' + hard._inventory(x) + "}",
                endpoint("PUT", "/v1/clusters/h"),
                "cpu_cores",
            ),
            (
                "POST /v1/placements",
                lambda x: '{"cluster": ' + hard._inventory(x) + ', "jobs": []}',
                endpoint("POST", "/v1/placements"),
                "cpu_cores",
            ),
            (
                "POST /v1/jobs:validate",
                lambda x: '{"jobs": [' + hard._ojs(x) + "]}",
                endpoint("POST", "/v1/jobs:validate"),
                "ext_ml_memory_gb",
            ),
        ]
        for name, make, call, field in targets:
            refused = named = escaped = accepted = 0
            for lit in literals:
                try:
                    why = call(make(lit))
                except Exception:  # counted, never raised: the figure is how many escaped
                    escaped += 1
                    continue
                if why:
                    refused += 1
                    named += field in why
                else:
                    accepted += 1
            print(f"{name:<28}{len(literals):>8}{refused:>9}{named:>7}{escaped:>9}{accepted:>10}")
        stored = c.get("/v1/clusters").json()
    print(f"clusters stored after {n} hostile PUTs: {len(stored.get('clusters', stored)) if stored else 0}")


def deadline_matrix() -> None:
    """Section 3: every cell of the deadline matrix once; the worst overshoot past the limit."""
    print("\n== 3. deadline matrix (wall time of place(), documented bound: limit + 0.5 s) ==")
    header = ("limit s", 8), ("engine", 8), ("wall s", 9), ("over s", 9), ("placed", 8), ("violations", 12)
    print(f"{'scenario':<10}" + "".join(f"{h:>{w}}" for h, w in header))
    for size in deadline.SIZES:
        deadline.scenario(size)
    deadline.place(list(deadline.scenario("s").jobs)[:3], deadline.scenario("s").cluster)  # warm imports
    worst = None
    for size, limit, engine in deadline.MATRIX:
        cell = deadline.measure(size, limit, engine)
        if worst is None or cell.overshoot_s > worst.overshoot_s:
            worst = cell
        print(
            f"{size:<10}{limit:>8g}{engine:>8}{cell.wall_s:>9.3f}{cell.overshoot_s:>9.3f}"
            f"{len(cell.decision.placements):>8}{len(cell.violations):>12}"
        )
    assert worst is not None
    print(
        f"worst overshoot: {worst.overshoot_s:.3f} s (scenario {worst.size}, limit {worst.limit:g} s, "
        f"{worst.engine}); documented bound 0.5 s"
    )


def service_under_hostile_clients(seconds: float = 20.0) -> None:
    """Section 4: ``placer serve`` while hostile clients hold it (``benchmarks/service_load.py``'s
    :func:`hostile`): what it held, how ``/healthz`` and an ordinary client fared."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("service_load", Path(__file__).with_name("service_load.py"))
    assert spec is not None and spec.loader is not None
    load = importlib.util.module_from_spec(spec)
    sys.modules["service_load"] = load  # its dataclasses look their module up there
    spec.loader.exec_module(load)
    print("\n== 4. the service under hostile clients ==")
    srv = load.Server(2)
    try:
        big, _ = load.thousand_nodes(100)
        load.hostile(srv, big, load.example_body(), seconds)
    finally:
        srv.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", type=int, default=300, help="random property cases (default 300)")
    parser.add_argument("--hostile", type=int, default=2000, help="hostile inputs per target (default 2000)")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    property_cases(args.cases)
    hostile_inputs(args.hostile)
    hostile_numbers(min(args.hostile, 500))
    deadline_matrix()
    service_under_hostile_clients()
    print(f"\ntotal seconds: {time.perf_counter() - t0:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
