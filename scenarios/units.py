"""Durations and instants as scenario files spell them: ``90``, ``"90s"``, ``"30m"``, ``"4h"``, ``"2d"``,
``"1h30m"``; instants as RFC 3339 or as an offset from the scenario's start.

Why strings with units: a scenario names horizons of days, checkpoint intervals of minutes and grace
periods of seconds side by side; ``horizon: 2d`` is read at a glance where ``172800`` is not. A bare
number is seconds, as everywhere else in placer (``ext_ml_timeout_seconds``, ``grace_period_s``).

>>> parse_duration("1h30m"), parse_duration(45), parse_duration("2.5m")
(5400.0, 45.0, 150.0)
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

__all__ = ["DURATION_JSON", "Duration", "format_duration", "instant", "parse_duration"]

_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])")
_WHOLE = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?[smhdw])+")


def parse_duration(value: Any) -> float:
    """Seconds in ``value``: a non-negative number (seconds) or a string of number-unit parts (``s``,
    ``m``, ``h``, ``d``, ``w``). ``ValueError`` for anything else, with the accepted forms in the message.

    >>> parse_duration("1d2h")
    93600.0
    >>> parse_duration("soon")
    Traceback (most recent call last):
    ...
    ValueError: 'soon' is not a duration: give seconds (90) or number-unit parts (90s, 30m, 4h, 2d, 1h30m)
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"a duration must be a finite, non-negative number of seconds, got {value!r}")
        return float(value)
    if isinstance(value, str):
        text = value.strip().replace(" ", "")
        try:
            return parse_duration(float(text))
        except ValueError:
            pass
        if _WHOLE.fullmatch(text):
            return float(sum(float(n) * _UNIT_S[u] for n, u in _PART.findall(text)))
    raise ValueError(
        f"{value!r} is not a duration: give seconds (90) or number-unit parts (90s, 30m, 4h, 2d, 1h30m)"
    )


#: JSON Schema of a duration as a scenario file may write it.
DURATION_JSON: dict[str, Any] = {
    "anyOf": [
        {"type": "number", "minimum": 0},
        {"type": "string", "pattern": r"^\s*([0-9]+(\.[0-9]+)?\s*[smhdw]?\s*)+$"},
    ],
    "description": "seconds (90), or number-unit parts: 90s, 30m, 4h, 2d, 1w, 1h30m",
}

#: A duration field of a scenario model: validated to seconds (float).
Duration = Annotated[float, BeforeValidator(parse_duration), WithJsonSchema(DURATION_JSON)]


def instant(value: Any, start: datetime) -> datetime:
    """An instant given as a ``datetime`` (or RFC 3339 text with an offset) or as a duration after
    ``start`` — reservations and failures in a scenario are easiest to write relative to its start.

    >>> from datetime import UTC
    >>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
    >>> instant("2h", t0).isoformat(), instant("2026-01-02T00:00:00Z", t0).day
    ('2026-01-01T02:00:00+00:00', 2)
    """
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("an instant needs a time zone (RFC 3339 with an offset, e.g. ...T00:00:00Z)")
        return value
    if isinstance(value, str) and "T" in value:
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an RFC 3339 timestamp") from None
        return instant(when, start)
    return start + timedelta(seconds=parse_duration(value))


def format_duration(seconds: float) -> str:
    """Short human form for summaries: ``3h05m``, ``42s``.

    >>> format_duration(11100), format_duration(42.4), format_duration(90061)
    ('3h05m', '42s', '1d01h01m')
    """
    s = round(seconds)
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}d{h:02d}h{m:02d}m"
    if h:
        return f"{h}h{m:02d}m"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"
