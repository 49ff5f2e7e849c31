"""argparse types for every numeric flag: finite, within a documented range, else a usage error (exit 2)
naming the flag's value — never a traceback from deep inside the engine.

Ranges: seconds in (0, :data:`MAX_SECONDS`] (a day: no placement call runs longer); seeds in
[0, 2^31 - 1] (CP-SAT's ``random_seed`` is a 32-bit integer); counts in [1, :data:`MAX_COUNT`] (10^12,
byte counts included); loads (multiples of capacity) in (0, 10].

>>> seconds("2.5"), seed("7"), count("3")
(2.5, 7, 3)
>>> seed("2147483648")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: '2147483648': a seed is an integer from 0 to 2147483647
"""

from __future__ import annotations

import argparse
import math

__all__ = ["MAX_COUNT", "MAX_SECONDS", "MAX_SEED", "count", "load", "port", "seconds", "seed"]

MAX_SECONDS = 86_400.0
MAX_SEED = 2**31 - 1
MAX_COUNT = 10**12


def _number(text: str) -> float:
    try:
        value = float(text) if text.isascii() else math.nan
    except ValueError:
        value = math.nan
    return value


def _integer(text: str, low: int, high: int, what: str) -> int:
    """``text`` as an ASCII integer within [low, high], else a usage error saying ``what`` it must be."""
    t = text.strip()
    ok = t.isascii() and t.lstrip("+-").isdigit() and len(t) <= 14
    if not ok or not low <= int(t) <= high:
        raise argparse.ArgumentTypeError(f"{text!r}: {what}")
    return int(t)


def seconds(text: str) -> float:
    """A time limit: seconds in (0, a day]."""
    value = _number(text)
    if not (0 < value <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(
            f"{text!r}: seconds must be a number above 0 and at most {MAX_SECONDS:g}"
        )
    return value


def seed(text: str) -> int:
    """A random seed: an integer from 0 to 2^31 - 1."""
    return _integer(text, 0, MAX_SEED, f"a seed is an integer from 0 to {MAX_SEED}")


def count(text: str) -> int:
    """A count of things (batch size, bytes, parallel cells): an integer from 1 to 10^12."""
    return _integer(text, 1, MAX_COUNT, f"a count is an integer from 1 to {MAX_COUNT}")


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535."""
    return _integer(text, 0, 65535, "a port is an integer from 0 to 65535")


def load(text: str) -> float:
    """Arrived load as a multiple of capacity: above 0, at most 10."""
    value = _number(text)
    if not (0 < value <= 10):
        raise argparse.ArgumentTypeError(f"{text!r}: a load is a number above 0 and at most 10")
    return value
