"""Strict, issue-collecting access to attributes of a parsed document.

Why: the specs' attribute tables are strict (``"8"`` is not an integer, ``true`` is not a number, ``"64Gi"``
is not a number), and a reader should report *every* problem of a job at once rather than stop at the
first. :class:`Fields` wraps one mapping, remembers which keys were read (so the rest can be kept as
``unknown``), and appends an :class:`~placer.solver.jobs.errors.Issue` for each bad value instead of raising.

>>> f = Fields({"ext_ml_gpu_count": "8", "x": 1}, path="")
>>> f.integer("ext_ml_gpu_count") is None, [i.code for i in f.issues]
(True, ['type'])
>>> f.unread()
{'x': 1}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from placer.solver.jobs.errors import Issue, issue

__all__ = ["E", "Fields", "join", "type_name"]

E = TypeVar("E", bound=StrEnum)


def join(path: str, key: str | int) -> str:
    """Join a field path: ``join("steps[1]", "queue") == "steps[1].queue"``, ints become ``[i]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def type_name(value: Any) -> str:
    """JSON-ish name of a Python value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


class Fields:
    """Typed getters over one mapping; each returns None (and records an issue) on a bad value."""

    def __init__(self, data: Mapping[str, Any], path: str = "", issues: list[Issue] | None = None):
        self.data = data
        self.path = path
        self.issues: list[Issue] = [] if issues is None else issues
        self.read: set[str] = set()

    # -- bookkeeping -----------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> Any:
        self.read.add(key)
        return self.data.get(key)

    def unread(self, prefix: str | None = None) -> dict[str, Any]:
        """Attributes nobody asked for (optionally only those starting with ``prefix``)."""
        return {
            k: v
            for k, v in self.data.items()
            if k not in self.read and (prefix is None or (isinstance(k, str) and k.startswith(prefix)))
        }

    def fail(self, code: str, key: str | int, message: str) -> None:
        self.issues.append(issue(code, join(self.path, key), message))

    def _get(self, key: str) -> Any:
        self.read.add(key)
        return self.data.get(key)

    # -- typed getters ---------------------------------------------------------------------------
    def string(self, key: str, *, required: bool = False, non_empty: bool = True) -> str | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if not isinstance(v, str):
            self.fail("type", key, f"must be a string, got {type_name(v)}")
            return None
        if non_empty and not v.strip():
            self.fail("range", key, "must not be empty")
            return None
        return v

    def integer(
        self, key: str, *, required: bool = False, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer() and not isinstance(v, bool):
                # JSON has one number type; 4.0 is an integer value, "4" is not.
                v = int(v)
            else:
                self.fail("type", key, f"must be an integer, got {type_name(v)} {v!r}"[:200])
                return None
        return self._bounded(key, v, minimum, maximum)

    def number(
        self,
        key: str,
        *,
        required: bool = False,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
    ) -> float | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            self.fail("type", key, f"must be a number, got {type_name(v)} {v!r}"[:200])
            return None
        if isinstance(v, float) and not math.isfinite(v):
            self.fail("range", key, "must be a finite number")
            return None
        if exclusive_minimum and minimum is not None and v <= minimum:
            self.fail("range", key, f"must be greater than {minimum}, got {v}")
            return None
        return self._bounded(key, v, minimum, maximum)

    def boolean(self, key: str, *, required: bool = False) -> bool | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if not isinstance(v, bool):
            self.fail("type", key, f"must be a boolean, got {type_name(v)} {v!r}"[:200])
            return None
        return v

    def timestamp(self, key: str, *, naive: str = "type") -> datetime | None:
        """An RFC 3339 timestamp, in UTC. One without a UTC offset is refused with code ``naive`` (the
        running-jobs file calls that a ``range`` problem: well-typed, but not an instant).

        >>> f = Fields({"t": "2026-01-01T02:00:00+02:00", "u": "2026-01-01T00:00:00"})
        >>> f.timestamp("t").isoformat(), f.timestamp("u"), [i.code for i in f.issues]
        ('2026-01-01T00:00:00+00:00', None, ['type'])
        """
        text = self.string(key)
        if text is None:
            return None
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            self.fail("type", key, f"must be an RFC 3339 timestamp, got {text!r}"[:200])
            return None
        if value.tzinfo is None:
            self.fail(
                naive,
                key,
                f"must carry a UTC offset (RFC 3339), e.g. 2025-01-01T00:00:00Z, got {text!r}"[:200],
            )
            return None
        return value.astimezone(UTC)

    def enum(self, key: str, enum: type[E], *, required: bool = False) -> E | None:
        v = self.string(key, required=required)
        if v is None:
            return None
        try:
            return enum(v)
        except ValueError:
            allowed = ", ".join(e.value for e in enum)
            self.fail("enum", key, f"must be one of {allowed}; got {v!r}"[:300])
            return None

    def choice(self, key: str, allowed: Iterable[str], *, required: bool = False) -> str | None:
        v = self.string(key, required=required)
        allowed = list(allowed)
        if v is not None and v not in allowed:
            self.fail("enum", key, f"must be one of {', '.join(allowed)}; got {v!r}"[:300])
            return None
        return v

    def mapping(self, key: str, *, required: bool = False) -> Mapping[str, Any] | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if not isinstance(v, Mapping):
            self.fail("type", key, f"must be an object, got {type_name(v)}")
            return None
        return v

    def array(self, key: str, *, required: bool = False) -> list[Any] | None:
        v = self._get(key)
        if v is None:
            if required:
                self.fail("required", key, "is required")
            return None
        if not isinstance(v, list):
            self.fail("type", key, f"must be an array, got {type_name(v)}")
            return None
        return v

    def sub(self, key: str) -> Fields | None:
        """A :class:`Fields` over the object at ``key`` sharing this one's issue list."""
        m = self.mapping(key)
        return None if m is None else Fields(m, join(self.path, key), self.issues)

    def _bounded(self, key: str, v: Any, minimum: Any, maximum: Any) -> Any:
        if minimum is not None and v < minimum:
            self.fail("range", key, f"must be >= {minimum}, got {v}")
            return None
        if maximum is not None and v > maximum:
            self.fail("range", key, f"must be <= {maximum}, got {v}")
            return None
        return v
