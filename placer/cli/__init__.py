"""The ``placer`` command line: one subcommand per module, imported only when it runs.

Why lazy: ``placer validate`` must start fast (no OR-Tools, networkx or pandas import for reading jobs),
so each subcommand module registers its parser cheaply and imports its heavy dependencies inside ``run``.

Every file argument may be ``-`` for standard input (``kubectl get nodes -o json | placer cluster -``);
``placer --version`` prints the installed version.

Exit codes shared by every subcommand: 0 success, 1 the input was read but is invalid (or, for
``check``, violations were found), 2 usage error or a file that cannot be opened.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["COMMANDS", "build_parser", "main"]

#: Subcommand modules, in help order. Each defines ``add_parser(subparsers)`` and ``run(args) -> int``.
COMMANDS: tuple[str, ...] = (
    "validate",
    "place",
    "check",
    "cluster",
    "schema",
    "simulate",
    "sweep",
    "serve",
    "fill",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placer",
        description="Placement engine for ML/AI jobs on GPU and TPU clusters.",
    )
    parser.add_argument("--version", action="version", version=f"placer {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"placer.cli.{name}")
        except ModuleNotFoundError as e:  # a subcommand under construction must not break the others
            if e.name != f"placer.cli.{name}":
                raise
            continue
        module.add_parser(sub)
    return parser


def _version() -> str:
    from placer import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``placer`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
