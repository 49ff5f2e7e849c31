"""Reading an input file, where ``-`` means standard input — the one place every reader opens files.

Why one place: ``kubectl get nodes -o json | placer cluster -`` and ``placer validate - < job.json`` are how
operators feed tools, and every command that reads a file (cluster, jobs, queue configs, limits, running
jobs, reservations, prices, decisions, scenarios) should accept it the same way, with the same size cap.

Standard input is read once per process: a second ``-`` in the same command gets the same bytes (a pipe
cannot be read twice).

>>> import io, sys
>>> sys.stdin = io.TextIOWrapper(io.BytesIO(b'{"nodes": []}'))
>>> read_input("-"), read_input("-"), source_name("-")
(b'{"nodes": []}', b'{"nodes": []}', '<stdin>')
>>> sys.stdin = sys.__stdin__; forget_stdin()
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["STDIN", "forget_stdin", "input_size", "read_input", "source_name"]

#: The path that means standard input.
STDIN = "-"

_stdin: bytes | None = None


def read_input(path: str | os.PathLike[str], max_bytes: int | None = None) -> bytes:
    """The bytes of ``path``, or of standard input for ``-``; at most ``max_bytes + 1`` (so a caller can
    tell "too large" without holding a huge file). ``OSError`` when the file cannot be opened."""
    global _stdin
    if str(path) == STDIN:
        if _stdin is None:
            stream = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
            if stream is None:
                raise OSError("standard input is not readable")
            _stdin = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
        return _stdin
    with Path(path).open("rb") as f:
        return f.read() if max_bytes is None else f.read(max_bytes + 1)


def input_size(path: str | os.PathLike[str]) -> int | None:
    """The size of a regular file, without reading it; None for standard input (read it to know)."""
    return None if str(path) == STDIN else Path(path).stat().st_size


def source_name(path: str | os.PathLike[str]) -> str:
    """How errors name the input: the path as given, ``<stdin>`` for ``-``."""
    return "<stdin>" if str(path) == STDIN else str(path)


def forget_stdin() -> None:
    """Drop the cached standard input (tests, and long-lived processes that run several commands)."""
    global _stdin
    _stdin = None
