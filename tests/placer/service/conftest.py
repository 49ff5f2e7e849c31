"""Fixtures of the service suites: a real ``placer serve`` process, request bodies built from the shipped
examples, and the independent check every returned decision must pass.

Why a subprocess and not FastAPI's TestClient: the suite must see what a client sees — uvicorn's HTTP
parsing, body streaming, the event loop and the solver threads, signals and a restart that loses the
process's memory. The server picks its own free port (``--port 0``) and the fixture reads it from the log.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from placer.service.inputs import inputs_of
from placer.solver.checks import check
from placer.solver.decision import Decision
from placer.topology import Cluster

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"
H100 = EXAMPLES / "clusters" / "h100-training.yaml"
JOB_FILES = sorted((EXAMPLES / "jobs").iterdir())
#: The decision time of the documented example.
NOW = "2026-01-01T00:00:00Z"
#: Decision fields that measure time: they differ between any two runs.
TIMINGS = ("wall_s", "build_s", "solve_s")
#: How long a server may take to start (imports OR-Tools, FastAPI) on a loaded 2-core machine.
START_TIMEOUT_S = 30.0


def without_timings(decision: dict[str, Any]) -> dict[str, Any]:
    """The decision without the fields that measure time."""
    return {**decision, "stats": {k: v for k, v in decision["stats"].items() if k not in TIMINGS}}


def job_documents() -> list[Any]:
    """The shipped example batch as body documents: JSON files parsed, Flux YAML and SSS XML as text."""
    return [json.loads(p.read_text()) if p.suffix == ".json" else p.read_text() for p in JOB_FILES]


def example_body(**extra: Any) -> dict[str, Any]:
    """``POST /v1/placements`` for the shipped example: the inventory YAML as a string, every job file."""
    return {"cluster": H100.read_text(), "jobs": job_documents(), "now": NOW, **extra}


class Server:
    """``placer serve`` in a subprocess on a free loopback port; its log goes to a file in ``tmp``."""

    def __init__(self, tmp: Path, *args: str):
        self.tmp = tmp
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> Server:
        log = self.tmp / f"server-{time.monotonic_ns()}.log"
        code = "import sys; from placer.cli import main; sys.exit(main())"
        cmd = [sys.executable, "-c", code, "serve", "--port", "0", *self.args]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = re.search(r"running on (http://127\.0\.0\.1:\d+)", log.read_text())
            if found:
                self.url = found.group(1)
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"placer serve exited {self.proc.returncode}: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"placer serve did not start in {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM) -> int | None:
        """Stop our process with ``sig`` (SIGKILL: no chance to flush anything) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for a module, with small limits so that every limit can be hit cheaply."""
    srv = Server(
        tmp_path_factory.mktemp("server"),
        "--max-body-bytes",
        "2000000",
        "--max-jobs",
        "60",
        "--max-nodes",
        "2000",
        "--max-time-limit",
        "2",
    ).start()
    yield srv
    srv.stop()


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c


def checked(decision_json: dict[str, Any], body: dict[str, Any], cluster: Cluster | None = None) -> Decision:
    """Fail unless the decision passes the independent checker for the body's inputs (``cluster``: the
    stored cluster a stateful placement ran on; default: the body's own)."""
    decision = Decision.model_validate(decision_json)
    ins = inputs_of(body, cluster)
    violations = check(
        decision,
        ins.valid_jobs,
        ins.cluster,
        reservations=ins.reservations,
        rejected_ids=ins.rejected_ids,
        queues=ins.queues,
        prices=ins.prices,
    )
    assert not violations, [str(v) for v in violations]
    return decision
