"""RFC 26 job dependencies (``attributes.system.dependencies``) as normalized dependencies.

Why a module of its own: RFC 26 has two spellings (the object ``{scheme, value, ...}`` and the URI-like
``scheme:value?key=val&key=val`` of the command line) and schemes with different meanings; only some of
them are something a placer can wait for.

===================================  =========================================================================
RFC 26 entry                         result
===================================  =========================================================================
``after:<jobid>``                    ``Dependency(job, condition=start)``
``afterok:<jobid>``                  ``Dependency(job, condition=success)``
``afternotok:<jobid>``               ``Dependency(job, condition=failure)``
``afterany:<jobid>``                 ``Dependency(job, condition=exit)``
``begin-time:<epoch seconds>``       ``Job.not_before`` (the latest, when several are given)
``fluid`` with type ``in``/``inout`` ``Dependency(job=value, condition=exit, scheme="fluid")`` *and* kept
                                     in metadata: RFC 26 example 2 says such a job runs "after the completion"
                                     of the named job
``fluid`` type ``out``, ``string``   kept in ``Job.metadata["flux_dependencies"]``: symbolic OpenMP-style
                                     names resolved by the submission service across jobs, not by a reader
any other scheme (``singleton``...)  kept in ``Job.metadata["flux_dependencies"]`` (RFC 26: "plan for new
                                     dependency schemes to be added later")
===================================  =========================================================================

Validation (RFC 26 text): the list is non-empty (the key "SHALL NOT be added" when there are none; the
schema has ``minItems: 1``) and has no repeated entry (schema ``uniqueItems``) - ``range`` / ``conflict``;
each entry has string ``scheme`` and ``value`` (``required`` / ``type``; an empty job id or symbolic name
is ``range``, other schemes decide for themselves);
``string`` and ``fluid`` entries also need ``type`` in ``in|out|inout`` and ``scope`` in ``user|global``
(``required`` / ``enum``). Other keys are scheme-defined and kept. ``begin-time`` accepts its value as a
number too (flux-core writes a float there although RFC 26 says string).

The URI examples of RFC 26 ``string:foo?type=out`` and ``fluid:hungry-hippos-white-elephant`` lack the
``type``/``scope`` the same RFC calls REQUIRED for these schemes; they parse, then fail with ``required``
(the RFC says a command-line tool translates them; no default is invented here).

Where the spec_26 ``schema.json`` is stricter than the RFC text: it requires ``type`` and ``scope`` on
*every* entry and forbids other keys, i.e. it only describes the ``string``/``fluid`` schemes; an
``afterok`` entry, valid by the RFC text, fails it. The RFC text wins here.

>>> deps = read_dependencies(["afterok:f2oLkTLb", {"scheme": "begin-time", "value": "0"}], "deps")
>>> [(d.job, d.condition.value) for d in deps.dependencies], deps.not_before.year, deps.issues
([('f2oLkTLb', 'success')], 1970, [])
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import Fields, join, type_name
from placer.solver.jobs.model import Dependency, DependencyCondition

__all__ = [
    "CONDITIONS",
    "OPENMP_SCHEMES",
    "SCOPES",
    "TYPES",
    "DependencyRead",
    "parse_dependency_uri",
    "read_dependencies",
]

#: RFC 26 "simple" job-state schemes and the condition each waits for.
CONDITIONS: dict[str, DependencyCondition] = {
    "after": DependencyCondition.START,
    "afterok": DependencyCondition.SUCCESS,
    "afternotok": DependencyCondition.FAILURE,
    "afterany": DependencyCondition.EXIT,
}

#: The OpenMP-style schemes, which need ``type`` and ``scope``.
OPENMP_SCHEMES: tuple[str, ...] = ("string", "fluid")
TYPES: tuple[str, ...] = ("in", "out", "inout")
SCOPES: tuple[str, ...] = ("user", "global")


@dataclass
class DependencyRead:
    """What a dependency list gave: dependencies to wait for, a start time, entries kept as metadata."""

    dependencies: list[Dependency] = field(default_factory=list)
    not_before: datetime | None = None
    other: list[dict[str, Any]] = field(default_factory=list)
    issues: list[Issue] = field(default_factory=list)


def parse_dependency_uri(text: str) -> dict[str, str]:
    """The object form of RFC 26's ``scheme:value[?key=val[&key=val...]]`` (``;`` also separates).

    Raises ``ValueError`` for text without a scheme, or with a query item that is not ``key=val``.

    >>> parse_dependency_uri("string:foo?type=out&scope=user")
    {'scheme': 'string', 'value': 'foo', 'type': 'out', 'scope': 'user'}
    """
    scheme, sep, rest = text.partition(":")
    if not sep or not scheme:
        raise ValueError(f"{text!r} is not of the form scheme:value")
    value, _, query = rest.partition("?")
    out = {"scheme": scheme, "value": value}
    if query:
        for item in re.split(r"[&;]", query):
            key, eq, val = item.partition("=")
            if not eq or not key:
                raise ValueError(f"query item {item!r} of {text!r} is not key=val")
            if key in out:
                raise ValueError(f"{text!r} gives {key!r} twice")
            out[key] = val
    return out


def _begin_time(value: Any, path: str, issues: list[Issue]) -> datetime | None:
    if isinstance(value, str):
        try:
            ts = float(value)
        except ValueError:
            issues.append(issue("type", path, f"begin-time needs epoch seconds, got {value!r}"[:200]))
            return None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        ts = float(value)
    else:
        issues.append(issue("type", path, f"begin-time needs epoch seconds, got {type_name(value)}"))
        return None
    try:
        if not math.isfinite(ts):
            raise ValueError
        return datetime.fromtimestamp(ts, tz=UTC)
    except (ValueError, OverflowError, OSError):
        issues.append(issue("range", path, f"begin-time {value!r} is not a representable time"[:200]))
        return None


def _entry(raw: Any, path: str, out: DependencyRead) -> dict[str, Any] | None:
    """One entry in object form, or None after an issue."""
    if isinstance(raw, str):
        try:
            return parse_dependency_uri(raw)
        except ValueError as e:
            out.issues.append(issue("malformed", path, str(e)[:300]))
            return None
    if isinstance(raw, Mapping):
        return dict(raw)
    out.issues.append(
        issue("type", path, f"a dependency is an object or a scheme:value string, got {type_name(raw)}")
    )
    return None


def _one(obj: dict[str, Any], path: str, out: DependencyRead) -> None:
    start = len(out.issues)
    f = Fields(obj, path, out.issues)
    scheme = f.string("scheme", required=True)
    if scheme == "begin-time":
        value = f.raw("value")
        if value is None:
            f.fail("required", "value", "is required")
            return
        when = _begin_time(value, join(path, "value"), out.issues)
        if when is not None:
            out.not_before = when if out.not_before is None else max(out.not_before, when)
        return
    # A job id or symbolic name cannot be empty; another scheme's value means what that scheme says.
    value = f.string("value", required=True, non_empty=scheme in CONDITIONS or scheme in OPENMP_SCHEMES)
    kind: str | None = None
    if scheme in OPENMP_SCHEMES:
        kind = f.choice("type", TYPES, required=True)
        f.choice("scope", SCOPES, required=True)
    if len(out.issues) > start or scheme is None or value is None:
        return
    if scheme in CONDITIONS:
        out.dependencies.append(Dependency(job=value, condition=CONDITIONS[scheme], scheme=scheme))
        return
    out.other.append(obj)
    if scheme == "fluid" and kind in ("in", "inout"):
        out.dependencies.append(Dependency(job=value, condition=DependencyCondition.EXIT, scheme="fluid"))


def read_dependencies(value: Any, path: str) -> DependencyRead:
    """Read an RFC 26 dependency list; issues are collected in the result, nothing is raised.

    >>> r = read_dependencies([{"scheme": "string", "value": "foo", "type": "in"}], "d")
    >>> [(i.code, i.path) for i in r.issues]
    [('required', 'd[0].scope')]
    """
    out = DependencyRead()
    if not isinstance(value, list):
        out.issues.append(issue("type", path, f"must be an array of dependencies, got {type_name(value)}"))
        return out
    if not value:
        out.issues.append(issue("range", path, "must list at least one dependency (omit the key for none)"))
        return out
    seen: list[dict[str, Any]] = []
    for i, raw in enumerate(value):
        p = join(path, i)
        obj = _entry(raw, p, out)
        if obj is None:
            continue
        if obj in seen:
            out.issues.append(
                issue("conflict", p, "repeats an earlier dependency (the list has unique items)")
            )
            continue
        seen.append(obj)
        _one(obj, p, out)
    return out
