"""RFC 14 resource ``count`` values, and arithmetic on the count ranges they give.

Why a module of its own: a count has three forms (a positive integer; a string that is an RFC 22 idset or
an RFC 45 range; a ``{min, max, operator, operand}`` dictionary), each with its own rules, and the
reader must multiply counts down the resource tree (``switch: 3 > slot: 1`` is three slots) while
keeping ranges exact where :class:`~placer.solver.jobs.model.CountRange` can say so.

Rules enforced (RFC 14 text, and the spec_14 ``schema.json``):

* integer: positive (``0`` and negatives are ``range``; booleans, non-integral numbers are ``type``);
* dictionary: ``min`` required, a positive integer; ``max``, ``operator``, ``operand`` all present or all
  absent (``required`` for the missing ones); ``max >= min``; ``operator`` one of ``+ * ^`` (``enum``);
  ``operand`` positive, and ``>= 2`` with ``*`` or ``^``; ``min >= 2`` with ``^``; no other keys
  (``malformed``);
* string: an RFC 45 range (same rules as the dictionary) or an RFC 22 idset of positive ids; anything else
  is ``malformed``. The schema's ``oneOf`` rejects strings that are *both* a valid idset and a valid
  range (``"4"``, ``"3-30"``); they mean the same set of counts either way, so they are accepted here.

An idset that is an arithmetic sequence becomes an ordinary ``+`` range; any other idset (RFC 14 use case
1.8, ``"4,9,16,25"``) keeps its ids in :attr:`CountRange.idset`.

>>> issues: list = []
>>> read_count({"min": 2, "max": 16, "operator": "*", "operand": 2}, "count", issues).values(100)
[2, 4, 8, 16]
>>> read_count("4,9,16,25", "count", issues).values(100), issues
([4, 9, 16, 25], [])
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.formats.flux_ids import (
    FluxLimitError,
    FluxSyntaxError,
    expand_idset,
    looks_like_range_string,
    parse_idset,
    parse_range_string,
)
from placer.solver.jobs.model import CountRange

__all__ = [
    "MAX_COUNT",
    "MAX_IDSET_COUNTS",
    "fixed",
    "is_fixed",
    "product",
    "read_count",
    "reject_nulls",
    "relaxed",
    "scale",
    "sum_of",
]

#: Largest count or product of counts accepted (2**53: exact as a float, far beyond any cluster).
MAX_COUNT = 2**53

#: Most ids an idset count that is not an arithmetic sequence may list.
MAX_IDSET_COUNTS = 10_000

_RANGE_KEYS = ("min", "max", "operator", "operand")


def fixed(n: int) -> CountRange:
    """The range of exactly ``n``.

    >>> fixed(4).values(10)
    [4]
    """
    return CountRange(min=n, max=n)


def is_fixed(r: CountRange) -> bool:
    """True when the range admits a single value."""
    return r.max == r.min


def relaxed(lo: int, hi: int | None) -> CountRange:
    """Every integer from ``lo`` to ``hi``: the bound used when a product of ranges has no exact form."""
    return CountRange(min=lo, max=hi)


def reject_nulls(data: Mapping[Any, Any], keys: Iterable[str], path: str, issues: list[Issue]) -> set[str]:
    """A ``null`` where the RFC wants a value is a ``type`` issue, not a missing key (the typed getters
    of :class:`Fields` would read it as absent and let it through).

    >>> issues: list = []
    >>> reject_nulls({"max": None, "min": 1}, ("min", "max"), "count", issues)
    {'max'}
    >>> [(i.code, i.path) for i in issues]
    [('type', 'count.max')]

    Returns the null keys, so the caller does not report them a second time.
    """
    nulls = [key for key in keys if key in data and data[key] is None]
    for key in nulls:
        issues.append(issue("type", join(path, key), "must not be null"))
    return set(nulls)


def _check_range(
    lo: int, hi: int | None, operator: str, operand: int, path: str, issues: list[Issue], keys: dict[str, str]
) -> CountRange | None:
    """Apply the RFC 14 rules shared by the dictionary and the RFC 45 string form."""
    ok = True
    if hi is not None and hi < lo:
        issues.append(issue("range", keys["max"], f"max {hi} must be >= min {lo}"))
        ok = False
    if operator in ("*", "^") and operand < 2:
        issues.append(issue("range", keys["operand"], f"operand must be >= 2 with operator {operator!r}"))
        ok = False
    if operator == "^" and lo < 2:
        issues.append(issue("range", keys["min"], "min must be >= 2 with operator '^'"))
        ok = False
    for name, v in (("min", lo), ("max", hi), ("operand", operand)):
        if v is not None and v > MAX_COUNT:
            issues.append(issue("limit", keys[name], f"{name} {v} exceeds {MAX_COUNT}"))
            ok = False
    if not ok:
        return None
    return CountRange(min=lo, max=hi, operator=operator, operand=operand)


def _from_dict(value: Mapping[str, Any], path: str, issues: list[Issue]) -> CountRange | None:
    start = len(issues)
    f = Fields(value, path, issues)
    for key in value:
        if key not in _RANGE_KEYS:
            f.fail(
                "malformed", str(key), "unknown key in a count range; allowed: min, max, operator, operand"
            )
    if reject_nulls(value, _RANGE_KEYS, path, issues):
        return None
    lo = f.integer("min", required=True, minimum=1)
    present = [k for k in ("max", "operator", "operand") if k in value]
    if present and len(present) < 3:
        for k in ("max", "operator", "operand"):
            if k not in value:
                f.fail("required", k, f"is required when {', '.join(present)} is given (RFC 14: all three)")
    hi = f.integer("max", minimum=1)
    operator = f.choice("operator", ("+", "*", "^"))
    operand = f.integer("operand", minimum=1)
    if len(issues) > start or lo is None:
        return None
    keys = {k: join(path, k) for k in _RANGE_KEYS}
    if not present:
        return _check_range(lo, None, "+", 1, path, issues, keys)
    assert hi is not None and operator is not None and operand is not None
    return _check_range(lo, hi, operator, operand, path, issues, keys)


def _from_idset(text: str, path: str, issues: list[Issue]) -> CountRange | None:
    try:
        ranges = parse_idset(text)
    except FluxSyntaxError as e:
        issues.append(issue("malformed", path, f"not an RFC 22 idset nor an RFC 45 range: {e}"[:300]))
        return None
    if not ranges:
        issues.append(issue("range", path, "an idset count must list at least one count"))
        return None
    if ranges[0][0] < 1:
        issues.append(issue("range", path, "counts must be positive; the idset contains 0"))
        return None
    if ranges[-1][1] > MAX_COUNT:
        issues.append(issue("limit", path, f"count exceeds {MAX_COUNT}"))
        return None
    if len(ranges) == 1:
        lo, hi = ranges[0]
        return CountRange(min=lo, max=hi)
    try:
        ids = expand_idset(ranges, MAX_IDSET_COUNTS)
    except FluxLimitError as e:
        issues.append(issue("limit", path, str(e)))
        return None
    steps = {b - a for a, b in itertools.pairwise(ids)}
    if len(steps) == 1:
        return CountRange(min=ids[0], max=ids[-1], operand=steps.pop())
    return CountRange(min=ids[0], max=ids[-1], idset=tuple(ids))


def _from_string(text: str, path: str, issues: list[Issue]) -> CountRange | None:
    if not looks_like_range_string(text):
        return _from_idset(text, path, issues)
    try:
        lo, hi, operand, operator = parse_range_string(text)
    except FluxSyntaxError as e:
        issues.append(issue("malformed", path, str(e)[:300]))
        return None
    keys = dict.fromkeys(_RANGE_KEYS, path)
    return _check_range(lo, hi, operator, operand, path, issues, keys)


def read_count(value: Any, path: str, issues: list[Issue]) -> CountRange | None:
    """The ``count`` of a resource vertex as a :class:`CountRange`, or None after appending issues.

    >>> issues: list = []
    >>> read_count(0, "resources[0].count", issues), [(i.code, i.path) for i in issues]
    (None, [('range', 'resources[0].count')])
    """
    if isinstance(value, bool):
        issues.append(
            issue("type", path, "must be a positive integer, a string or a range object, got boolean")
        )
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON has one number type: 4.0 is the integer 4
    if isinstance(value, int):
        if value < 1:
            issues.append(issue("range", path, f"must be a positive integer, got {value}"))
            return None
        if value > MAX_COUNT:
            issues.append(issue("limit", path, f"count {value} exceeds {MAX_COUNT}"))
            return None
        return fixed(value)
    if isinstance(value, str):
        return _from_string(value, path, issues)
    if isinstance(value, Mapping):
        return _from_dict(value, path, issues)
    issues.append(
        issue("type", path, f"must be a positive integer, a string or a range object, got {type_name(value)}")
    )
    return None


# ---------------------------------------------------------------------------------------------------
# Arithmetic on ranges (counts multiply down the resource tree)
# ---------------------------------------------------------------------------------------------------


def _last_on_sequence(r: CountRange) -> int | None:
    """Largest value of an additive range's sequence that is <= max (None when unbounded)."""
    if r.max is None:
        return None
    return r.min + (r.max - r.min) // r.operand * r.operand


def scale(r: CountRange, m: int) -> tuple[CountRange, bool]:
    """Every admissible value times the fixed factor ``m``; the flag says whether the result is exact.

    >>> scale(CountRange(min=3, max=30), 2)[0].values(100)[:3]
    [6, 8, 10]
    """
    if m == 1:
        return r, True
    if is_fixed(r):
        return fixed(r.min * m), True
    hi = None if r.max is None else r.max * m
    if r.idset is not None:
        ids = tuple(v * m for v in r.idset)
        return CountRange(min=ids[0], max=ids[-1], idset=ids), True
    if r.operator == "+":
        return CountRange(min=r.min * m, max=hi, operand=r.operand * m), True
    if r.operator == "*":
        return CountRange(min=r.min * m, max=hi, operator="*", operand=r.operand), True
    return relaxed(r.min * m, hi), False


def sum_of(r: CountRange, k: int) -> tuple[CountRange, bool]:
    """The possible sums of ``k`` values each taken from ``r`` (``k`` replicas each asking for ``r`` nodes).

    >>> sum_of(CountRange(min=1), 2)[0].model_dump(exclude_defaults=True)
    {'min': 2}
    """
    if k == 1:
        return r, True
    if r.idset is None and r.operator == "+":
        top = _last_on_sequence(r)
        return CountRange(min=r.min * k, max=None if top is None else top * k, operand=r.operand), True
    return relaxed(r.min * k, None if r.max is None else r.max * k), False


def product(ranges: list[CountRange]) -> tuple[CountRange, bool]:
    """The product of counts along a path of the tree, exact when at most one factor is a true range.

    >>> product([fixed(2), CountRange(min=3, max=30), fixed(1)])[0].model_dump(exclude_defaults=True)
    {'min': 6, 'max': 60, 'operand': 2}
    """
    acc, exact = fixed(1), True
    for r in ranges:
        if is_fixed(r):
            acc, ok = scale(acc, r.min)
        elif is_fixed(acc):
            acc, ok = scale(r, acc.min)
        else:
            hi = None if acc.max is None or r.max is None else acc.max * r.max
            acc, ok = relaxed(acc.min * r.min, hi), False
        exact = exact and ok
    return acc, exact
