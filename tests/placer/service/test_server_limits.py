"""What a client can hold in ``placer serve``: idle connections, slow bodies, too many connections
(issue "Hardening", item 4). A real server process on loopback, small limits so they are hit quickly."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.placer.service.conftest import Server


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(
        tmp_path_factory.mktemp("guarded"),
        "--header-timeout",
        "1",
        "--body-timeout",
        "1",
        "--max-connections",
        "400",
    ).start()
    yield srv
    srv.stop()


def _port(srv: Server) -> int:
    return int(srv.url.rsplit(":", 1)[1])


def test_idle_connections_are_closed_and_do_not_starve_health_checks(guarded: Server) -> None:
    # 300 connections that never send a request (the attack) plus one that dribbles its headers.
    idle = [socket.create_connection(("127.0.0.1", _port(guarded)), timeout=5) for _ in range(300)]
    slow = socket.create_connection(("127.0.0.1", _port(guarded)), timeout=5)
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
    try:
        t = time.perf_counter()
        with guarded.client() as c:
            assert c.get("/healthz").status_code == 200
        assert time.perf_counter() - t < 2.0
        time.sleep(2.0)  # past the 1 s header deadline: the server has closed them all
        for s in [*idle, slow]:
            s.settimeout(2)
            assert s.recv(1) == b""  # EOF: closed by the server
    finally:
        for s in [*idle, slow]:
            s.close()


def test_a_body_that_does_not_arrive_in_time_is_refused(guarded: Server) -> None:
    s = socket.create_connection(("127.0.0.1", _port(guarded)), timeout=10)
    try:
        s.sendall(
            b"POST /v1/placements HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"jobs": '
        )
        answer = b""
        while b"request_timeout" not in answer and (chunk := s.recv(4096)):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
    finally:
        s.close()
    with httpx.Client(base_url=guarded.url) as c:
        assert c.get("/healthz").status_code == 200


def test_the_server_log_holds_no_traceback(guarded: Server) -> None:
    logs = sorted(Path(guarded.tmp).glob("server-*.log"))
    assert logs and "Traceback" not in logs[-1].read_text()
