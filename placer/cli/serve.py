"""``placer serve [--host 127.0.0.1] [--port 8080] [--workers N] [--state FILE] [limits...]``: the HTTP
service (``docs/service.md``): FastAPI on uvicorn, the OpenAPI document at ``/openapi.json``, docs at
``/docs``.

``--workers`` is how many placements are computed at once (solver threads in one process: stateful
clusters live in that process's memory, so the service is one process). ``--state FILE`` keeps stateful
clusters in a SQLite file across restarts. The limit flags bound what one request may ask for.

Exit codes: 0 after a clean shutdown (Ctrl-C, SIGTERM), 2 for a usage error, 1 when the web dependencies
are missing (``pip install 'placer-engine[service]'``) or the state file cannot be opened or replayed.

Why the imports live in :func:`run`: FastAPI and uvicorn are an optional extra, and ``placer --help`` must
not need them.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="placer"); sub = p.add_subparsers()
>>> add_parser(sub)
>>> a = p.parse_args(["serve", "--port", "0", "--workers", "4", "--max-time-limit", "10"])
>>> (a.host, a.port, a.workers, a.state, limits_of(a).max_time_limit_s)
('127.0.0.1', 0, 4, None, 10.0)
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from placer.cli import numbers

__all__ = ["add_parser", "limits_of", "run"]

_NAME = "placer serve"


def _count(text: str) -> int:
    """argparse type for counts: an integer >= 1 (a usage error otherwise)."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1")
    return int(text)


def add_parser(sub: Any) -> None:
    """Register ``placer serve`` on an ``argparse`` subparsers object (limit defaults: ``Limits``, read in
    :func:`run` so that registering stays free of the service's imports)."""
    p = sub.add_parser("serve", help="run the HTTP service (batch placements, validation, FETCH matching)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name clients may use besides loopback and --host (repeatable; DNS-rebinding defence)",
    )
    p.add_argument("--port", type=numbers.port, default=8080, help="port (default: 8080; 0 picks a free one)")
    p.add_argument("--workers", type=_count, default=2, metavar="N", help="placements at once (default: 2)")
    p.add_argument("--state", metavar="FILE", help="SQLite file for stateful clusters (default: memory only)")
    p.add_argument("--max-body-bytes", type=_count, metavar="N", help="default: 32 MiB")
    p.add_argument("--max-jobs", type=_count, metavar="N", help="jobs per request (default: 10000)")
    p.add_argument("--max-nodes", type=_count, metavar="N", help="nodes per cluster (default: 20000)")
    p.add_argument(
        "--max-time-limit", type=numbers.seconds, metavar="S", help="cap on time_limit_s (default: 30)"
    )
    p.add_argument(
        "--max-queued",
        type=int,
        metavar="N",
        help="requests waiting beyond --workers (default: 32)",
    )
    p.add_argument(
        "--body-timeout",
        type=numbers.seconds,
        metavar="S",
        help="seconds to receive a body (default: 30; 408)",
    )
    p.add_argument(
        "--header-timeout",
        type=numbers.seconds,
        default=10.0,
        metavar="S",
        help="seconds a new connection may take to send its request head (default: 10; then closed)",
    )
    p.add_argument(
        "--max-connections",
        type=numbers.count,
        default=256,
        metavar="N",
        help="connections and requests held at once; beyond them requests get 503 (default: 256)",
    )
    p.add_argument(
        "--max-bytes-in-flight",
        type=numbers.count,
        default=256 * 1024 * 1024,
        metavar="N",
        help="request body bytes held at once; a request that would pass it gets 503 (default: 256 MiB)",
    )
    p.add_argument(
        "--tokens",
        metavar="FILE",
        help="bearer tokens, one 'TENANT TOKEN' per line: every request but /healthz must carry one, "
        "and each tenant sees only its own stored clusters (docs/service.md, Tenants)",
    )
    p.add_argument(
        "--limits",
        metavar="FILE",
        help="administrative limits every request's jobs are read under (as placer validate --limits); "
        "clients cannot change them",
    )
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument("--no-access-log", action="store_true", help="do not log one line per request")
    _env_defaults(p)
    p.set_defaults(run=run)


def _env_defaults(p: argparse.ArgumentParser) -> None:
    """Every flag may also come from the environment: ``PLACER_<FLAG>`` (``PLACER_PORT=9000``,
    ``PLACER_TOKENS=/etc/placer/tokens``, ``PLACER_ALLOW_HOST=a,b``, ``PLACER_NO_ACCESS_LOG=1``); a flag on
    the command line wins. Values go through the flag's own type, so a bad one is a usage error."""
    import os

    for action in p._actions:
        if not action.option_strings or action.dest == "help":
            continue
        value = os.environ.get(f"PLACER_{action.dest.upper()}")
        if value is None:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            action.default = value.strip().lower() in ("1", "true", "yes", "on")
        elif isinstance(action, argparse._AppendAction):
            action.default = [v.strip() for v in value.split(",") if v.strip()]
        else:
            action.default = value  # argparse applies the type to string defaults


def limits_of(args: argparse.Namespace) -> Any:
    """The service's limits: the flags given, the defaults of ``Limits`` for the others.

    >>> ns = argparse.Namespace(max_body_bytes=None, max_jobs=5, max_nodes=None, max_time_limit=None,
    ...                         max_queued=None)
    >>> lim = limits_of(ns)
    >>> lim.max_jobs, lim.max_nodes
    (5, 20000)
    """
    from placer.service.limits import Limits

    flags = {
        "max_body_bytes": args.max_body_bytes,
        "max_jobs": args.max_jobs,
        "max_nodes": args.max_nodes,
        "max_time_limit_s": args.max_time_limit,
        "max_queued": args.max_queued,
        "body_timeout_s": getattr(args, "body_timeout", None),
    }
    read_limits = None
    if getattr(args, "limits", None):
        from placer.solver.jobs.options import load_read_limits_file

        read_limits = load_read_limits_file(args.limits)  # OSError / JobValidationError: run() reports them
    return Limits(**{k: v for k, v in flags.items() if v is not None}, read_limits=read_limits)


def run(args: argparse.Namespace) -> int:
    """Build the app and serve it until interrupted."""
    import sqlite3

    try:
        import uvicorn

        from placer.service.app import ServiceConfig, create_app
        from placer.service.protocol import protocol_with
    except ModuleNotFoundError as e:
        print(
            f"{_NAME}: {e.name} is missing; install the extra: pip install 'placer-engine[service]'",
            file=sys.stderr,
        )
        return 1
    if args.max_queued is not None and args.max_queued < 0:
        print(f"{_NAME}: --max-queued must be >= 0", file=sys.stderr)
        return 2
    from placer.solver.jobs.errors import JobValidationError

    try:
        limits = limits_of(args)
    except OSError as e:
        print(f"{_NAME}: cannot open limits file {args.limits}: {e.strerror or e}", file=sys.stderr)
        return 2
    except JobValidationError as e:
        print(f"{_NAME}: limits file {args.limits} is invalid: {e}", file=sys.stderr)
        return 1
    tokens = None
    if args.tokens:
        from placer.service.guard import read_tokens

        try:
            with open(args.tokens, encoding="utf-8") as f:
                tokens = read_tokens(f.read(), source=args.tokens)
        except OSError as e:
            print(f"{_NAME}: cannot open tokens file {args.tokens}: {e.strerror or e}", file=sys.stderr)
            return 2
        except (ValueError, UnicodeDecodeError) as e:
            print(f"{_NAME}: tokens file {e}", file=sys.stderr)
            return 1
    if tokens is None and args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"{_NAME}: warning: listening on {args.host} without --tokens: anyone who reaches it can "
            "read and change every stored cluster",
            file=sys.stderr,
        )
    try:
        allowed = (args.host, *(args.allow_host or ()))
        app = create_app(
            ServiceConfig(
                limits=limits,
                workers=args.workers,
                state_path=args.state,
                allowed_hosts=allowed,
                tokens=tokens,
                max_bytes_in_flight=args.max_bytes_in_flight,
            )
        )
    except (OSError, RuntimeError, sqlite3.Error) as e:
        print(f"{_NAME}: cannot open the state {args.state}: {e}", file=sys.stderr)
        return 1
    uvicorn.run(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=not args.no_access_log,
        timeout_graceful_shutdown=10,
        http=protocol_with(args.header_timeout),
        limit_concurrency=args.max_connections,
        timeout_keep_alive=5,
    )
    return 0
