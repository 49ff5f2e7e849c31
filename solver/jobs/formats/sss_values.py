"""Lexical parsing of SSS job-object values (XML character content and attribute text).

Why a module of its own: XML carries every value as text, so ``"12"`` must become an integer here and
nowhere else, with the spec's types (§2.2): Integer is ``xsd:integer``, Float is ``xsd:float``, Boolean the
literals ``true``/``false``, DateTime and Duration are 32-bit unsigned seconds. Python's own ``int()`` and
``float()`` are too lenient for that (``float("1_000")`` is 1000.0, ``float("nan")`` is a number), so the
lexical forms are checked with regular expressions first. Each parser returns ``(value, None)`` or
``(None, message)``; the caller turns a message into an :class:`~placer.solver.jobs.errors.Issue` with its
path.

Documented extensions beyond the spec's integer seconds, because producers write them and rejecting
them helps nobody: durations may also be ``[[[D:]H:]M:]S`` (the PBS/Maui walltime form), ISO-8601
``PnDTnHnMnS`` (the ``xsd:duration`` form), or carry a ``units`` attribute (:data:`TIME_UNITS`); times may
also be ISO-8601 ``xsd:dateTime`` (UTC when no offset is given, as the spec's times are GMT).

>>> parse_integer("12"), parse_integer("12.5")[1]
((12, None), "must be an integer (xsd:integer), got '12.5'")
>>> parse_duration("1:30:00"), parse_duration("PT1H"), parse_duration("2", units="hours")
((5400, None), (3600, None), (7200, None))
>>> round(to_gb(2, "GB")[0], 9)
2.0
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from placer.topology.safe_load import MAX_NUMBER

__all__ = [
    "BYTES_PER_GB",
    "BYTE_UNITS",
    "DEFAULT_BYTE_UNIT",
    "MAX_UINT32",
    "TIME_UNITS",
    "Parsed",
    "byte_unit",
    "parse_boolean",
    "parse_datetime",
    "parse_duration",
    "parse_float",
    "parse_integer",
    "to_gb",
]

#: Largest DateTime/Duration: the spec's types are 32-bit unsigned seconds (§2.2).
MAX_UINT32 = 2**32 - 1

_INTEGER = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_COLON_DURATION = re.compile(r"(?:(?:(?:([0-9]+):)?([0-9]+):)?([0-9]+):)?([0-9]+)")
_ISO_DURATION = re.compile(r"P(?:([0-9]+)D)?(?:T(?:([0-9]+)H)?(?:([0-9]+)M)?(?:([0-9]+(?:\.[0-9]+)?)S)?)?")

#: Appendix A "Units of Measure Abbreviations": bytes per unit (binary multiples: KB is 2^10 bytes).
BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 2**10,
    "MB": 2**20,
    "GB": 2**30,
    "TB": 2**40,
    "PB": 2**50,
    "EB": 2**60,
    "ZB": 2**70,
    "YB": 2**80,
    "NB": 2**90,
    "DB": 2**100,
}

#: Appendix A "Definition" column, accepted too (case-insensitive, singular or plural).
_UNIT_WORDS: dict[str, str] = {
    "byte": "B",
    "kilobyte": "KB",
    "megabyte": "MB",
    "gigabyte": "GB",
    "terabyte": "TB",
    "petabyte": "PB",
    "exabyte": "EB",
    "zettabyte": "ZB",
    "yottabyte": "YB",
    "nonabyte": "NB",
    "doggabyte": "DB",
}

#: Default unit of Memory, Disk and Swap when ``units`` is omitted. The spec says only that "a default
#: unit is implied"; its own examples (``<Memory>1024</Memory>``, ``<Memory>512</Memory>``, delivered
#: ``<Memory metric="Max">975</Memory>`` against a 1024 request) are megabytes, as in PBS and Maui.
DEFAULT_BYTE_UNIT = "MB"

#: Bytes in the model's GB: 2^30, placer's one convention (``docs/inventory.md``, *Units*) — SSS's own
#: Appendix A Gigabyte, Kubernetes' ``Gi``, Slurm's and Fluxion's GB; so 256 GB asked here is the 256 GB a
#: node states.
BYTES_PER_GB = 2**30

#: Time units accepted in a ``units`` attribute on WallDuration (an extension: Appendix A has none).
TIME_UNITS: dict[str, int] = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "seconds": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "minutes": 60,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "hours": 3600,
    "d": 86400,
    "day": 86400,
    "days": 86400,
}

Parsed = tuple[object, None] | tuple[None, str]


def _show(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def parse_integer(text: str | None) -> tuple[int, None] | tuple[None, str]:
    """``xsd:integer``: optional sign and decimal digits, surrounding whitespace allowed.

    >>> parse_integer(" -3 ")
    (-3, None)
    """
    t = (text or "").strip()
    if not _INTEGER.fullmatch(t) or len(t) > 40:
        return None, f"must be an integer (xsd:integer), got {_show(t)}"
    if abs(int(t)) > MAX_NUMBER:
        return None, f"is beyond the largest accepted magnitude 2^53 ({MAX_NUMBER}), got {_show(t)}"
    return int(t), None


def parse_float(text: str | None) -> tuple[float, None] | tuple[None, str]:
    """``xsd:float`` restricted to finite decimals (``INF``/``NaN`` make no sense as an amount).

    >>> parse_float("1.89"), parse_float("NaN")[1]
    ((1.89, None), "must be a finite decimal number (xsd:float), got 'NaN'")
    >>> parse_float("1e300")[1]
    "is beyond the largest accepted magnitude 2^53 (9007199254740992), got '1e300'"
    """
    t = (text or "").strip()
    if not _FLOAT.fullmatch(t) or len(t) > 60:
        return None, f"must be a finite decimal number (xsd:float), got {_show(t)}"
    v = float(t)
    if not math.isfinite(v):
        return None, f"must be a finite decimal number (xsd:float), got {_show(t)}"
    if abs(v) > MAX_NUMBER:  # the one rule for every number (topology/safe_load.py)
        return None, f"is beyond the largest accepted magnitude 2^53 ({MAX_NUMBER}), got {_show(t)}"
    return v, None


def parse_boolean(text: str | None) -> tuple[bool, None] | tuple[None, str]:
    """``xsd:boolean``: ``true``/``false``/``1``/``0``; case-insensitive because the spec's own prose
    writes ``"True"`` (§5.1.7 ``dynamic``).

    >>> parse_boolean("True"), parse_boolean("yes")[1]
    ((True, None), "must be true or false (xsd:boolean), got 'yes'")
    """
    t = (text or "").strip().lower()
    if t in ("true", "1"):
        return True, None
    if t in ("false", "0"):
        return False, None
    return None, f"must be true or false (xsd:boolean), got {_show((text or '').strip())}"


def parse_datetime(text: str | None) -> tuple[datetime, None] | tuple[None, str]:
    """DateTime: 32-bit unsigned GMT seconds since the epoch (§2.2), or ISO-8601 (an extension).

    >>> parse_datetime("1051557713")[0].isoformat()
    '2003-04-28T19:21:53+00:00'
    """
    t = (text or "").strip()
    if _INTEGER.fullmatch(t):
        v = int(t)
        if not 0 <= v <= MAX_UINT32:
            return None, f"must be between 0 and {MAX_UINT32} seconds since the epoch, got {v}"
        return datetime.fromtimestamp(v, UTC), None
    try:
        dt = datetime.fromisoformat(t)
    except ValueError:
        return None, f"must be seconds since the epoch (or ISO-8601 date-time), got {_show(t)}"
    return (dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)), None


def parse_duration(text: str | None, *, units: str | None = None) -> tuple[int, None] | tuple[None, str]:
    """Duration in seconds: spec form ``3600``; extensions ``[[[D:]H:]M:]S``, ISO-8601 ``P1DT2H``, and a
    ``units`` attribute (:data:`TIME_UNITS`) multiplying a plain integer.

    >>> parse_duration("1:00:00:00"), parse_duration("90", units="min")
    ((86400, None), (5400, None))
    """
    t = (text or "").strip()
    scale = 1
    if units is not None:
        u = units.strip().lower()
        if u not in TIME_UNITS:
            return None, f"unknown time unit {_show(units)}; use one of {', '.join(sorted(set(TIME_UNITS)))}"
        scale = TIME_UNITS[u]
        if not _INTEGER.fullmatch(t):
            return None, f"with a units attribute the duration must be an integer, got {_show(t)}"
    seconds: float | None = None
    if len(t) <= 40:
        m = _COLON_DURATION.fullmatch(t)
        if m:
            d, h, mi, s = (int(x) if x else 0 for x in m.groups())
            if m.group(1) is None and m.group(2) is None and m.group(3) is None:
                seconds = s * scale
            elif scale != 1:
                return None, "a units attribute only applies to a plain number of seconds"
            else:
                seconds = ((d * 24 + h) * 60 + mi) * 60 + s
        elif t.startswith("P") and scale == 1 and t not in ("P", "PT") and not t.endswith("T"):
            iso = _ISO_DURATION.fullmatch(t)
            if iso:
                d, h, mi = (int(x) if x else 0 for x in iso.groups()[:3])
                seconds = ((d * 24 + h) * 60 + mi) * 60 + float(iso.group(4) or 0)
    if seconds is None:
        return (
            None,
            f"must be a duration in seconds (or [[[D:]H:]M:]S, or ISO-8601 PnDTnHnMnS), got {_show(t)}",
        )
    if seconds > MAX_UINT32:
        return None, f"must be at most {MAX_UINT32} seconds (32-bit unsigned), got {seconds:g}"
    return math.ceil(seconds), None


def byte_unit(units: str | None) -> tuple[str, None] | tuple[None, str]:
    """Canonical Appendix A abbreviation of ``units`` (default :data:`DEFAULT_BYTE_UNIT`).

    >>> byte_unit("kilobytes"), byte_unit("GB"), byte_unit(None)
    (('KB', None), ('GB', None), ('MB', None))
    """
    if units is None:
        return DEFAULT_BYTE_UNIT, None
    u = units.strip()
    if u.upper() in BYTE_UNITS:
        return u.upper(), None
    word = u.lower().removesuffix("s")
    if word in _UNIT_WORDS:
        return _UNIT_WORDS[word], None
    allowed = ", ".join(BYTE_UNITS)
    return None, f"unknown unit {_show(u)}; Appendix A defines {allowed} (or their full names)"


def to_gb(amount: float, units: str | None) -> tuple[float, None] | tuple[None, str]:
    """Convert ``amount`` in ``units`` (Appendix A, binary multiples) to the model's GB (2^30 bytes).

    >>> to_gb(1024, None), to_gb(256, "GB")
    ((1.0, None), (256.0, None))
    """
    unit, err = byte_unit(units)
    if unit is None:
        return None, err or "bad unit"
    gb = amount * BYTE_UNITS[unit] / BYTES_PER_GB
    if not math.isfinite(gb):
        return None, f"{amount:g} {unit} is too large"
    return gb, None
