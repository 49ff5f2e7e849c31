"""An internal error is answered without dropping the client's keep-alive connection (issue "Hardening",
item 4: "after any 500 the keep-alive connection is reset"). A real uvicorn on loopback, in a thread, with
one extra route that fails as a bug would."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from placer.service.app import ServiceConfig, create_app


@pytest.fixture
def server() -> Iterator[int]:
    app = create_app(ServiceConfig(workers=1))

    @app.get("/test-only/boom")
    async def boom() -> Any:
        raise RuntimeError("injected: an unexpected bug")

    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="critical"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not (srv.started and srv.servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert srv.started, "uvicorn did not start"
    yield srv.servers[0].sockets[0].getsockname()[1]
    srv.should_exit = True
    thread.join(10)


def test_a_500_keeps_the_connection_and_says_what_happened(server: int) -> None:
    c = http.client.HTTPConnection("127.0.0.1", server, timeout=10)
    try:
        c.request("GET", "/test-only/boom")
        r = c.getresponse()
        body = json.loads(r.read())
        assert r.status == 500 and r.getheader("content-type") == "application/problem+json"
        assert body["type"] == "urn:placer:problem:internal" and body["error"]["code"] == "internal"
        assert "injected" not in json.dumps(body)  # no internals leak to the client
        sock = c.sock
        assert sock is not None
        c.request("GET", "/healthz")  # the same connection: http.client would reconnect if it were closed
        r = c.getresponse()
        assert r.status == 200 and json.loads(r.read())["status"] == "ok"
        assert c.sock is sock
    finally:
        c.close()
