"""Requests a browser could be tricked into sending are refused before any route runs.

Why: ``placer serve`` listens on loopback by default, and loopback is reachable from every web page the
operator opens. Two classic attacks need nothing else: DNS rebinding (a page on ``evil.example`` whose name
now resolves to 127.0.0.1 talks to the service, its ``Host`` header still ``evil.example``) and a
cross-site form (a ``text/plain`` or ``application/x-www-form-urlencoded`` POST needs no CORS preflight).
So every request must name an allowed host (the loopback names and the address the server listens on, plus
``--allow-host`` names), and every request with a body must say it is JSON (``application/json`` or
``application/*+json``): 421 ``misdirected_host`` and 415 ``unsupported_media_type`` otherwise. Bodies in
flight are admitted against a byte budget (``--max-bytes-in-flight``): a request whose declared body would
take the server past it is refused with 503 ``busy`` before a byte is read, and its bytes count until its
answer is sent.

Tenants: with ``placer serve --tokens FILE`` every request but ``/healthz`` needs ``Authorization: Bearer
TOKEN`` (401 ``unauthorized`` otherwise), and the token's tenant owns what it stores: another tenant's
cluster is invisible to it (404, absent from the list), whatever id it guesses. Without tokens every
client is the one tenant; ``placer serve`` warns when it listens beyond loopback like that.

>>> host_of(b"127.0.0.1:8080"), host_of(b"[::1]:80"), host_of(b"Placer.Example.")
('127.0.0.1', '::1', 'placer.example')
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = [
    "LOOPBACK_HOSTS",
    "OPEN_PATHS",
    "GuardMiddleware",
    "host_of",
    "is_json",
    "read_tokens",
    "tenant_of",
]

#: Host names every server accepts.
LOOPBACK_HOSTS: frozenset[str] = frozenset({"127.0.0.1", "localhost", "::1"})

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]


def host_of(header: bytes) -> str:
    """The host name of a ``Host`` header: lower case, without port, brackets or trailing dot."""
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        text = text[1 : text.find("]")] if "]" in text else text[1:]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    return text.rstrip(".")


def is_json(content_type: bytes) -> bool:
    """``application/json`` or ``application/<something>+json``, parameters (``; charset=utf-8``) aside."""
    media = content_type.decode("latin-1").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


#: Paths answered without a token (a load balancer's health check).
OPEN_PATHS: frozenset[str] = frozenset({"/healthz", "/readyz"})


def read_tokens(text: str, source: str = "tokens") -> dict[str, str]:
    r"""Bearer tokens from a tokens file: one ``TENANT TOKEN`` pair per line, ``#`` comments and blank
    lines ignored. Tokens are at least 16 characters and unique; ``ValueError`` naming the line otherwise.

    >>> read_tokens("# team tokens\nteam-a 0123456789abcdef0123\nteam-b fedcba9876543210fedc\n")
    {'0123456789abcdef0123': 'team-a', 'fedcba9876543210fedc': 'team-b'}
    """
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{source}:{n}: expected 'TENANT TOKEN'")
        tenant, token = parts
        if len(token) < 16 or not token.isascii() or not token.isprintable():
            raise ValueError(f"{source}:{n}: a token is at least 16 printable ASCII characters")
        if token in out:
            raise ValueError(f"{source}:{n}: this token is given twice")
        out[token] = tenant
    if not out:
        raise ValueError(f"{source}: no token")
    return out


def tenant_of(header: bytes, tokens: Mapping[str, str]) -> str | None:
    """The tenant an ``Authorization: Bearer TOKEN`` header names, or None. Every token is compared in
    constant time, so the answer's timing does not reveal how much of a token was right."""
    text = header.decode("latin-1").strip()
    if not text.lower().startswith("bearer "):
        return None
    given = text[7:].strip().encode()
    found = None
    for token, tenant in tokens.items():
        if hmac.compare_digest(given, token.encode()):
            found = tenant
    return found


class GuardMiddleware:
    """Pure ASGI middleware: the Host allow-list, the JSON content type and, with ``tokens``, bearer-token
    tenants (module docstring); the tenant goes to ``request.state.tenant`` (None without tokens)."""

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        allowed_hosts: Iterable[str],
        tokens: Mapping[str, str] | None = None,
        max_bytes_in_flight: int | None = None,
    ):
        self.app = app
        self.allowed = frozenset(h.lower().strip("[]").rstrip(".") for h in allowed_hosts) | LOOPBACK_HOSTS
        self.tokens = dict(tokens) if tokens else None
        #: Request bytes the server holds at once (bodies being read or worked on); None: no cap.
        self.max_bytes_in_flight = max_bytes_in_flight
        self.bytes_in_flight = 0

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        host = host_of(headers.get(b"host", b""))
        if host not in self.allowed:
            await _refuse(
                send, 421, "misdirected_host", f"this server does not answer for host {host[:80]!r}"
            )
            return
        has_body = scope["method"] in ("POST", "PUT", "PATCH") and (
            headers.get(b"content-length", b"0") not in (b"0", b"") or b"transfer-encoding" in headers
        )
        if has_body and not is_json(headers.get(b"content-type", b"")):
            await _refuse(
                send,
                415,
                "unsupported_media_type",
                "request bodies must be JSON (Content-Type: application/json)",
            )
            return
        tenant = None
        if self.tokens is not None and scope.get("path") not in OPEN_PATHS:
            tenant = tenant_of(headers.get(b"authorization", b""), self.tokens)
            if tenant is None:
                await _refuse(
                    send, 401, "unauthorized", "send Authorization: Bearer <token> (placer serve --tokens)"
                )
                return
        scope.setdefault("state", {})["tenant"] = tenant
        declared = headers.get(b"content-length", b"0")
        size = int(declared) if declared.isdigit() and len(declared) < 16 else 0
        cap = self.max_bytes_in_flight
        if cap is not None and size and self.bytes_in_flight + size > cap:
            await _refuse(
                send,
                503,
                "busy",
                f"the server holds {self.bytes_in_flight} request bytes already; retry shortly",
            )
            return
        self.bytes_in_flight += size
        try:
            await self.app(scope, receive, send)
        finally:  # held until the answer is sent: the body lives as long as the work on it
            self.bytes_in_flight -= size


async def _refuse(send: Any, status: int, code: str, message: str) -> None:
    from placer.service.errors import PROBLEM_JSON, problem

    body = json.dumps(problem(status, code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
