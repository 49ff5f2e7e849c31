"""uvicorn's HTTP/1.1 protocol with a deadline for a request's head: a connection that sends no complete
request line and headers within :attr:`GuardedH11Protocol.header_timeout_s` is closed.

Why: uvicorn times out a connection only after a response (``timeout_keep_alive``); one that never sends
a request — or dribbles its headers (slowloris) — is held forever. 300 such connections made ``/healthz``
time out for over a minute. With this protocol they are closed after a few seconds, and the server's
connection cap (``limit_concurrency``, ``--max-connections``) answers 503 beyond it. A slow *body* is
bounded by :func:`placer.service.limits.read_body`'s deadline.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["GuardedH11Protocol"]


class GuardedH11Protocol(H11Protocol):
    """:class:`H11Protocol` that closes a connection whose request head is late (module docstring)."""

    #: Seconds a new connection may take to send its first complete request head (after a response,
    #: uvicorn's own keep-alive timeout applies).
    header_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = self.loop.call_later(self.header_timeout_s, self._late)

    def _late(self) -> None:
        self._head_timer = None
        if self.cycle is None and not self.transport.is_closing():  # no request has begun
            self.transport.close()

    def handle_events(self) -> None:
        super().handle_events()
        timer = getattr(self, "_head_timer", None)
        if self.cycle is not None and timer is not None:
            timer.cancel()
            self._head_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
        super().connection_lost(exc)


def protocol_with(header_timeout_s: float) -> Any:
    """A subclass of :class:`GuardedH11Protocol` with its own deadline (uvicorn takes a class)."""
    return type("Guarded", (GuardedH11Protocol,), {"header_timeout_s": header_timeout_s})
