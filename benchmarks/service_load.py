"""Service load test (issue 7): a bounded number of requests from concurrent clients against ``placer serve``
on loopback; prints throughput, p50/p99 latency and errors, and re-checks every decision. Asserts nothing.

    python benchmarks/service_load.py              # about a minute on 2 cores
    python benchmarks/service_load.py --quick      # fewer requests

It starts the server itself (``placer serve --port 0``, in a subprocess, access log off) and stops it.
Scenarios:

* ``example``: the shipped example batch (``examples/clusters/h100-training.yaml`` sent as YAML text, the
  four files of ``examples/jobs``: 10 jobs) in the body of ``POST /v1/placements``;
* ``1k nodes``: scenario M's cluster (``placer.scenarios.synthetic.scenario_m``: 1,064 GPU nodes, 1,418
  running
  jobs, 60 % of GPUs busy; a 0.5 MB inventory) and 100 of its pending jobs as OJS envelopes, sent whole
  with every request (``POST /v1/placements``) and, in stateful mode, stored once
  (``PUT /v1/clusters/m``) and placed by id (``POST /v1/clusters/m/placements``).

Each is run with greedy (milliseconds) and with the default engine (greedy, then CP-SAT within the time
limit). Then hostile clients (:func:`hostile`): idle connections, slowloris heads, a slow body and clients
that send a big placement and hang up, while an ordinary client keeps placing and checking ``/healthz``;
it prints what the server held and answered. Latency is client-side (request sent to answer read);
throughput is requests / wall time of the whole run. Every answered decision goes through the independent
checker (``placer.solver.checks``) afterwards, with the same inputs the body gave; ``violations`` counts
what it finds.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from placer.scenarios.synthetic import scenario_m  # noqa: E402
from placer.service.inputs import inputs_of  # noqa: E402
from placer.solver.checks import check  # noqa: E402
from placer.solver.decision import Decision  # noqa: E402
from placer.solver.jobs.model import Job  # noqa: E402

EXAMPLES = REPO / "examples"
NOW = "2026-01-01T00:00:00Z"


# ---------------------------------------------------------------------------------------------------
# Bodies
# ---------------------------------------------------------------------------------------------------


def example_body() -> dict[str, Any]:
    docs = [
        json.loads(p.read_text()) if p.suffix == ".json" else p.read_text()
        for p in sorted((EXAMPLES / "jobs").iterdir())
    ]
    return {"cluster": (EXAMPLES / "clusters" / "h100-training.yaml").read_text(), "jobs": docs, "now": NOW}


def envelope(job: Job) -> dict[str, Any] | None:
    """An OJS v0.3 envelope for a synthetic single-group GPU/CPU job (None for shapes it cannot say)."""
    if len(job.tasks) != 1 or job.tasks[0].tpu is not None or job.tasks[0].count != 1:
        return None
    g = job.tasks[0]
    out: dict[str, Any] = {
        "id": job.id,
        "type": "ml.train",
        "queue": job.queue or "default",
        "priority": job.priority,
        "ext_ml_priority_class": job.priority_class.value,
        "ext_ml_cpu_cores": g.cpu_cores,
        "ext_ml_memory_gb": g.memory_gb,
    }
    if job.duration_s:
        out["ext_ml_timeout_seconds"] = int(job.duration_s)
    if g.gpu is not None and g.gpu.count and g.gpu.share_milli is None:
        out["ext_ml_gpu_count"] = g.gpu.count
        if g.gpu.types:
            out["ext_ml_gpu_type"] = g.gpu.types[0]
        if g.gpu.count > 8:
            out["ext_ml_distributed_strategy"] = "fsdp"
    else:
        out["ext_ml_accelerator"] = "cpu"
    return out


def thousand_nodes(n_jobs: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Scenario M: the cluster as a placer inventory, ``n_jobs`` of its pending jobs as envelopes."""
    sc = scenario_m(0)
    inventory = sc.cluster.to_inventory().model_dump(mode="json", exclude_defaults=True)
    jobs = [e for e in map(envelope, sc.jobs) if e is not None]
    random.Random(7).shuffle(jobs)
    now = sc.now.isoformat()
    return {"cluster": inventory, "jobs": jobs[:n_jobs], "now": now}, {"jobs": jobs[:n_jobs], "now": now}


# ---------------------------------------------------------------------------------------------------
# Server and clients
# ---------------------------------------------------------------------------------------------------


class Server:
    def __init__(self, workers: int):
        self.log = Path(tempfile.mkstemp(suffix=".log")[1])
        code = "import sys; from placer.cli import main; sys.exit(main())"
        cmd = [sys.executable, "-c", code, "serve", "--port", "0", "--workers", str(workers)]
        cmd.append("--no-access-log")
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"running on (http://127\.0\.0\.1:\d+)", self.log.read_text())
            if m:
                self.url = m.group(1)
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"server did not start: {self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.unlink(missing_ok=True)


@dataclass
class Run:
    name: str
    latencies: list[float]
    answers: list[dict[str, Any] | None]
    errors: int
    wall: float


def load(url: str, path: str, body: dict[str, Any], requests: int, clients: int, name: str) -> Run:
    """``requests`` POSTs of ``body`` from ``clients`` concurrent clients (one connection each)."""
    payload = json.dumps(body).encode()
    per_client = [requests // clients + (1 if i < requests % clients else 0) for i in range(clients)]

    def client(n: int) -> list[tuple[float, dict[str, Any] | None]]:
        out = []
        with httpx.Client(base_url=url, timeout=120, headers={"content-type": "application/json"}) as c:
            for _ in range(n):
                t = time.perf_counter()
                try:
                    r = c.post(path, content=payload)
                    answer = r.json() if r.status_code == 200 else None
                except httpx.HTTPError:
                    answer = None
                out.append((time.perf_counter() - t, answer))
        return out

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        results = [x for part in pool.map(client, per_client) for x in part]
    wall = time.perf_counter() - t0
    answers = [a for _, a in results]
    return Run(name, [lat for lat, _ in results], answers, sum(a is None for a in answers), wall)


def violations(run: Run, body: dict[str, Any], stored: dict[str, Any] | None = None) -> int:
    """Violations the independent checker finds in every answered decision of a run (``stored``: the
    PUT body of the cluster a stored placement ran on)."""
    cluster = None if stored is None else inputs_of({**stored, "jobs": []}).cluster
    ins = inputs_of(body, cluster)
    return sum(
        len(check(Decision.model_validate(a), ins.valid_jobs, ins.cluster, rejected_ids=ins.rejected_ids))
        for a in run.answers
        if a is not None
    )


def row(run: Run, n_violations: int) -> str:
    lat = sorted(run.latencies)
    p50 = statistics.median(lat)
    p99 = lat[min(len(lat) - 1, round(0.99 * (len(lat) - 1)))]
    walls = [a["stats"]["wall_s"] for a in run.answers if a is not None]
    engines = sorted({a["stats"]["engine"] for a in run.answers if a is not None})
    placed = statistics.mean(len(a["placements"]) for a in run.answers if a is not None) if walls else 0
    return (
        f"{run.name:<38} {len(lat):>5} {run.errors:>6} {len(lat) / run.wall:>8.2f} {p50 * 1000:>8.0f} "
        f"{p99 * 1000:>8.0f} {statistics.mean(walls) * 1000 if walls else 0:>9.0f} {placed:>7.1f} "
        f"{n_violations:>5}  {','.join(engines)}"
    )


# ---------------------------------------------------------------------------------------------------
# Hostile clients
# ---------------------------------------------------------------------------------------------------


def _rss_mb(pid: int) -> float:
    """The server's resident memory (Linux ``/proc``), in MB; 0 where it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def hostile(srv: Server, big: dict[str, Any], example: dict[str, Any], seconds: float) -> None:
    """While ordinary clients place the example batch, hostile ones hold the server: idle connections,
    slowloris headers, a slow body, and clients that send a 1k-node placement and hang up at once. Prints
    what the server held (connections, memory), how ``/healthz`` answered meanwhile, what the ordinary
    clients got, and how many abandoned placements it dropped (``/healthz`` ``cancelled``)."""
    import socket
    import threading

    host, port = "127.0.0.1", int(srv.url.rsplit(":", 1)[1])
    stop = threading.Event()
    held: list[socket.socket] = []
    for _ in range(100):  # idle: connect, send nothing
        held.append(socket.create_connection((host, port), timeout=5))
    slow: list[socket.socket] = []
    for _ in range(20):  # slowloris: a request head that never ends
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        slow.append(s)
    body = socket.create_connection((host, port), timeout=5)  # a 1 MB body, one byte a second
    body.sendall(
        b"POST /v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000000\r\n\r\n{"
    )
    payload = json.dumps({**big, "time_limit_s": 2}).encode()
    head = (
        f"POST /v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()

    def hang_ups() -> int:  # send a whole 1k-node placement, then close without reading the answer
        n = 0
        while not stop.is_set():
            try:
                with socket.create_connection((host, port), timeout=5) as s:
                    s.sendall(head + payload)
                n += 1
            except OSError:
                pass
            time.sleep(0.2)
        return n

    def dribble() -> None:
        while not stop.is_set():
            try:
                body.sendall(b" ")
                for s in slow:
                    s.sendall(b"X-A: b\r\n")
            except OSError:
                return
            time.sleep(1)

    health: list[float] = []
    health_errors = 0
    rss = [_rss_mb(srv.proc.pid)]
    threading.Thread(target=dribble, daemon=True).start()
    with ThreadPoolExecutor(max_workers=1) as pool:
        gone = pool.submit(hang_ups)
        t_end = time.perf_counter() + seconds
        with httpx.Client(base_url=srv.url, timeout=10) as c:
            ok = errs = 0
            while time.perf_counter() < t_end:
                t = time.perf_counter()
                try:
                    assert c.get("/healthz").status_code == 200
                    health.append(time.perf_counter() - t)
                except (httpx.HTTPError, AssertionError):
                    health_errors += 1
                try:
                    r = c.post("/v1/placements", json={**example, "policy": {"engine": "greedy"}})
                    ok += r.status_code == 200
                    errs += r.status_code != 200
                except httpx.HTTPError:
                    errs += 1
                rss.append(_rss_mb(srv.proc.pid))
        stop.set()
        hung_up = gone.result()
    closed = 0
    for s in [*held, *slow, body]:
        try:
            s.settimeout(0.5)
            closed += s.recv(1) == b""
        except OSError:
            pass
        finally:
            s.close()
    time.sleep(3)
    with httpx.Client(base_url=srv.url, timeout=10) as c:
        after = c.get("/healthz").json()
    lat = sorted(health)
    print(
        f"\n== hostile clients for {seconds:.0f} s: 100 idle connections, 20 slowloris, "
        "one 1 MB body at 1 B/s,"
    )
    print("   and clients that send a 1k-node placement (auto, 2 s) and hang up at once ==")
    print(f"ordinary placements (example, greedy): {ok} answered, {errs} errors")
    if lat:
        print(
            f"/healthz: {len(lat)} answered, p50 {1000 * lat[len(lat) // 2]:.1f} ms, "
            f"max {1000 * lat[-1]:.0f} ms, {health_errors} errors"
        )
    print(
        f"hang-ups sent: {hung_up}; dropped before they ran (cancelled): {after.get('cancelled')}; "
        f"busy now: {after['busy']}"
    )
    print(f"hostile connections closed by the server by the end: {closed} of {len(held) + len(slow) + 1}")
    print(f"server memory: {rss[0]:.0f} MB at the start, {max(rss):.0f} MB at most")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer requests")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2, help="placer serve --workers")
    args = ap.parse_args()
    scale = 1 if args.quick else 3
    example = example_body()
    big, big_jobs = thousand_nodes(100)
    sizes = f"example {len(json.dumps(example)) / 1e3:.0f} kB, 1k nodes {len(json.dumps(big)) / 1e3:.0f} kB"
    print(f"placer serve --workers {args.workers}, {args.clients} clients on loopback; bodies: {sizes}")
    srv = Server(args.workers)
    try:
        with httpx.Client(base_url=srv.url, timeout=120) as c:
            t = time.perf_counter()
            put = c.put("/v1/clusters/m", json={"cluster": big["cluster"]})
            put_s = time.perf_counter() - t
            assert put.status_code == 201, put.text
        print(f"PUT /v1/clusters/m (1,064 nodes, 1,418 running jobs): {put_s * 1000:.0f} ms")
        print(
            f"\n{'scenario':<38} {'reqs':>5} {'errors':>6} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} "
            f"{'solve ms':>9} {'placed':>7} {'viol':>5}  engine"
        )
        greedy = {"engine": "greedy"}
        plans = [
            ("example, greedy", "/v1/placements", {**example, "policy": greedy}, 40 * scale, None),
            ("example, auto 1 s", "/v1/placements", {**example, "time_limit_s": 1}, 20 * scale, None),
            ("1k nodes, greedy", "/v1/placements", {**big, "policy": greedy}, 8 * scale, None),
            ("1k nodes, auto 2 s", "/v1/placements", {**big, "time_limit_s": 2}, 4 * scale, None),
            (
                "1k nodes stored, greedy",
                "/v1/clusters/m/placements",
                {**big_jobs, "policy": greedy},
                8 * scale,
                {"cluster": big["cluster"]},
            ),
            (
                "1k nodes stored, auto 2 s",
                "/v1/clusters/m/placements",
                {**big_jobs, "time_limit_s": 2},
                4 * scale,
                {"cluster": big["cluster"]},
            ),
        ]
        for name, path, body, n, stored in plans:
            load(srv.url, path, body, min(2, n), 1, "warm-up")
            run = load(srv.url, path, body, n, args.clients, name)
            print(row(run, violations(run, body, stored)), flush=True)
        hostile(srv, big, example, 15 if args.quick else 30)
        with httpx.Client(base_url=srv.url) as c:
            metrics = c.get("/metrics").text
        counts = re.findall(r"^placer_http_requests_total\{[^}]*\} (\S+)$", metrics, re.M)
        served = sum(float(v) for v in counts)
        print(f"\nthe server's own count (placer_http_requests_total): {served:.0f} requests")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
