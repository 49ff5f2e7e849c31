"""Flux's compact string forms: RFC 22 idsets, RFC 29 hostlists and RFC 45 range strings.

Why a module of its own: three Flux RFCs the jobspec leans on (counts may be idsets or range strings,
RFC 31 ``ranks`` are idsets, ``hostlist`` values are hostlists) define small string grammars. Parsing
them here, strictly and with size limits, keeps the jobspec reader free of string fiddling. Every
function raises :class:`FluxSyntaxError` (a ``ValueError``) for text that breaks its grammar and
:class:`FluxLimitError` when the text would expand to more than ``limit`` items; the callers turn these
into ``malformed`` / ``limit`` issues. Nothing here is ever expanded before its size is known, so
``"node[0-999999999999]"`` costs nothing.

Grammars, as the RFCs give them:

* RFC 22 idset: unique non-negative decimal ids in ascending order, no leading zeros, consecutive ids
  MAY be hyphenated (``1-3,5-6,42``), the whole MAY be bracketed (``[1-3]``).
* RFC 29 hostlist: comma-separated expressions ``prefix[idlist]suffix`` (each part optional); an idlist is
  an *ordered* list of ids and ranges, repeats allowed, and leading zeros of its first id set the width
  of all (``[00-2]`` is ``00,01,02``); the empty string is the empty list.
* RFC 45 range: ``min-max:operand:operator`` or ``min+:operand:operator``; ``:operator`` may be omitted for
  ``+``, ``:operand:operator`` for ``+`` with operand 1; optional brackets; no leading zeros.

>>> parse_idset("[1-3,5]")
[(1, 3), (5, 5)]
>>> expand_hostlist("node[1-3,5],login0")
['node1', 'node2', 'node3', 'node5', 'login0']
>>> parse_range_string("[2-16:2:*]")
(2, 16, 2, '*')
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_DIGITS",
    "MAX_EXPANDED",
    "FluxLimitError",
    "FluxSyntaxError",
    "expand_hostlist",
    "expand_idset",
    "idset_size",
    "looks_like_range_string",
    "parse_idset",
    "parse_range_string",
]

#: Longest decimal id accepted (ids beyond 2**63 mean nothing to a scheduler).
MAX_DIGITS = 19

#: Default cap on how many items an idset / hostlist may expand to.
MAX_EXPANDED = 100_000

_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_RANGE = re.compile(
    r"(?P<min>[1-9][0-9]*)(?:(?P<plus>\+)|-(?P<max>[1-9][0-9]*))(?::(?P<operand>[1-9][0-9]*)(?::(?P<op>[+*^]))?)?"
)
_HOST_PART = re.compile(r"[!-~]*")  # printable, non-whitespace ASCII; brackets/commas are rejected apart


class FluxSyntaxError(ValueError):
    """The text breaks the grammar of its RFC."""


class FluxLimitError(ValueError):
    """The text is well-formed but expands to more items than allowed."""


def _unbracket(text: str, what: str) -> str:
    """Strip one optional pair of surrounding brackets; a lone bracket is an error."""
    if text.startswith("[") and text.endswith("]") and len(text) >= 2:
        return text[1:-1]
    if "[" in text or "]" in text:
        raise FluxSyntaxError(f"{what} {text!r}: brackets must surround the whole string")
    return text


def _decimal(token: str, what: str, *, leading_zeros: bool = False) -> int:
    pattern = r"[0-9]+" if leading_zeros else _DECIMAL.pattern
    if not re.fullmatch(pattern, token):
        raise FluxSyntaxError(
            f"{what}: {token!r} is not a decimal id"
            + ("" if leading_zeros else " (no signs, spaces or leading zeros)")
        )
    if len(token) > MAX_DIGITS:
        raise FluxSyntaxError(f"{what}: {token!r} has more than {MAX_DIGITS} digits")
    return int(token)


def parse_idset(text: str) -> list[tuple[int, int]]:
    """RFC 22 idset as ascending, disjoint ``(lo, hi)`` ranges (``""`` and ``"[]"`` are the empty set).

    >>> parse_idset("0,2-4")
    [(0, 0), (2, 4)]
    >>> parse_idset("3,1")
    Traceback (most recent call last):
    ...
    placer.solver.jobs.formats.flux_ids.FluxSyntaxError: idset '3,1': ids must be unique and ascending
    """
    body = _unbracket(text, "idset")
    if body == "":
        return []
    out: list[tuple[int, int]] = []
    last = -1
    for part in body.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = _decimal(a, f"idset {text!r}"), _decimal(b, f"idset {text!r}")
            if hi < lo:
                raise FluxSyntaxError(f"idset {text!r}: range {part!r} runs backwards")
        else:
            lo = hi = _decimal(part, f"idset {text!r}")
        if lo <= last:
            raise FluxSyntaxError(f"idset {text!r}: ids must be unique and ascending")
        out.append((lo, hi))
        last = hi
    return out


def idset_size(ranges: list[tuple[int, int]]) -> int:
    """How many ids the ranges hold, without expanding them.

    >>> idset_size([(1, 3), (10, 10)])
    4
    """
    return sum(hi - lo + 1 for lo, hi in ranges)


def expand_idset(ranges: list[tuple[int, int]], limit: int = MAX_EXPANDED) -> list[int]:
    """All ids of the ranges, ascending; :class:`FluxLimitError` beyond ``limit`` ids.

    >>> expand_idset(parse_idset("1-3,7"))
    [1, 2, 3, 7]
    """
    n = idset_size(ranges)
    if n > limit:
        raise FluxLimitError(f"idset holds {n} ids; at most {limit} are accepted")
    return [i for lo, hi in ranges for i in range(lo, hi + 1)]


def _split_outside_brackets(text: str) -> list[str]:
    """Split at commas that are not inside ``[...]``; unbalanced or nested brackets are errors."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth:
                raise FluxSyntaxError(f"hostlist {text!r}: nested '['")
            depth = 1
        elif ch == "]":
            if not depth:
                raise FluxSyntaxError(f"hostlist {text!r}: ']' without '['")
            depth = 0
        elif ch == "," and not depth:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise FluxSyntaxError(f"hostlist {text!r}: '[' without ']'")
    parts.append(text[start:])
    return parts


def _idlist(body: str, text: str) -> tuple[list[tuple[int, int]], int]:
    """An RFC 29 idlist: ordered ``(lo, hi)`` pieces and the zero-padding width of the first id."""
    if body == "":
        raise FluxSyntaxError(f"hostlist {text!r}: empty brackets")
    pieces: list[tuple[int, int]] = []
    width = 0
    for k, part in enumerate(body.split(",")):
        a, sep, b = part.partition("-")
        lo = _decimal(a, f"hostlist {text!r}", leading_zeros=True)
        hi = _decimal(b, f"hostlist {text!r}", leading_zeros=True) if sep else lo
        if hi < lo:
            raise FluxSyntaxError(f"hostlist {text!r}: range {part!r} runs backwards")
        if k == 0 and len(a) > 1 and a.startswith("0"):
            width = len(a)
        pieces.append((lo, hi))
    return pieces, width


def expand_hostlist(text: str, limit: int = MAX_EXPANDED) -> list[str]:
    """RFC 29 hostlist to its ordered list of hostnames (repeats kept, as the RFC says).

    >>> expand_hostlist("foo[0-2]-eth2")
    ['foo0-eth2', 'foo1-eth2', 'foo2-eth2']
    >>> expand_hostlist("[00-2]")
    ['00', '01', '02']
    """
    plan: list[tuple[str, list[tuple[int, int]], int, str]] = []
    total = 0
    for expr in _split_outside_brackets(text):
        if expr == "":
            continue  # RFC 29: an empty expression is the empty list
        if "[" in expr:
            prefix, rest = expr.split("[", 1)
            body, suffix = rest.split("]", 1)
            if "[" in suffix or "]" in suffix:
                raise FluxSyntaxError(f"hostlist {text!r}: one [idlist] per expression")
            pieces, width = _idlist(body, text)
        else:
            prefix, suffix, pieces, width = expr, "", [], 0
        for part in (prefix, suffix):
            if not _HOST_PART.fullmatch(part):
                raise FluxSyntaxError(f"hostlist {text!r}: host names are printable ASCII without whitespace")
        total += idset_size(pieces) if pieces else 1
        if total > limit:
            raise FluxLimitError(f"hostlist {text[:80]!r} names more than {limit} hosts")
        plan.append((prefix, pieces, width, suffix))
    hosts: list[str] = []
    for prefix, pieces, width, suffix in plan:
        if not pieces:
            hosts.append(prefix)
            continue
        for lo, hi in pieces:
            hosts.extend(f"{prefix}{i:0{width}d}{suffix}" for i in range(lo, hi + 1))
    return hosts


def parse_range_string(text: str) -> tuple[int, int | None, int, str]:
    """RFC 45 range string as ``(min, max, operand, operator)``; ``max`` None for ``min+`` forms.

    Only the grammar is checked here; the RFC 14 rules on operand and min (``*``/``^`` need operand >= 2,
    ``^`` needs min >= 2, max >= min) are the caller's, as for the dictionary form.

    >>> parse_range_string("1-5:2")
    (1, 5, 2, '+')
    >>> parse_range_string("100+")
    (100, None, 1, '+')
    """
    body = _unbracket(text, "range")
    m = _RANGE.fullmatch(body)
    if m is None:
        raise FluxSyntaxError(
            f"range {text!r}: expected min-max[:operand[:operator]] or min+[:operand[:operator]]"
        )
    for key in ("min", "max", "operand"):
        if m.group(key) is not None and len(m.group(key)) > MAX_DIGITS:
            raise FluxSyntaxError(f"range {text!r}: {key} has more than {MAX_DIGITS} digits")
    lo = int(m.group("min"))
    hi = None if m.group("plus") else int(m.group("max"))
    operand = int(m.group("operand")) if m.group("operand") else 1
    return lo, hi, operand, m.group("op") or "+"


def looks_like_range_string(text: str) -> bool:
    """True when ``text`` can only be an RFC 45 range (it has ``+`` or ``:``), not an RFC 22 idset.

    >>> looks_like_range_string("3+"), looks_like_range_string("3-30")
    (True, False)
    """
    return "+" in text or ":" in text
