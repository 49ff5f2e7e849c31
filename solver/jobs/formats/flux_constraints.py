"""RFC 31 job constraints (``attributes.system.constraints``) as placement rules.

Why a module of its own: RFC 31 is a small JsonLogic-like language (``{"operator": [values]}``, nested)
with edge cases of its own (empty operands, ``^`` negation, hostlists); the solver wants plain
:class:`~placer.solver.jobs.model.LabelRule` trees under ``Placement.required``.

Mapping (node labels are what the topology exposes; Flux properties are labels with value ``"true"``):

===================================  ========================================================================
RFC 31                               rule
===================================  ========================================================================
``{"properties": ["foo"]}``          ``LabelRule(key="foo", operator=Exists)``
``{"properties": ["^bar"]}``         ``LabelRule(key="bar", operator=DoesNotExist)``
``{"properties": ["a", "b"]}``       both rules (ANDed: all listed properties are required)
``{"hostlist": ["n[1-3]", "x"]}``    ``LabelRule(key="hostname", operator=In, values=[n1, n2, n3, x])``
``{"ranks": ["0-3,7"]}``             ``LabelRule(key="rank", operator=In, values=["0", ..., "7"])``
``{"and": [c1, c2]}``                ``AllOf([r1, r2])`` (flattened into ``required`` at the top)
``{"or": [c1, c2]}``                 ``AnyOf([r1, r2])``
``{"not": [c]}`` / ``[c1, c2]``      ``Not(r)`` / ``Not(AllOf([r1, r2]))`` (flux-core negates the AND)
``{}``, ``{"and": []}``,             always match: no rule
``{"or": []}``
``{"not": []}``                      never match: ``Not(AllOf([]))``
===================================  ========================================================================

RFC 31 leaves an operator without values "operator dependent"; here ``properties``, ``hostlist`` and
``ranks`` with an empty list are a ``range`` issue (the RFC allows "report an error"), so a typo never
silently matches every node. A hostlist or idset that is itself empty (``""``) names no node, so it
matches nothing. One object holds exactly one operator (as flux-core's parser requires); two keys in one
object are ``malformed``; an unknown operator is ``enum``.

>>> issues: list = []
>>> rules = read_constraints({"properties": ["ssd", "^slowgpu"]}, "constraints", issues)
>>> [(r.key, r.operator.value) for r in rules]
[('ssd', 'Exists'), ('slowgpu', 'DoesNotExist')]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placer.solver.jobs.errors import Issue, issue
from placer.solver.jobs.fields import join, type_name
from placer.solver.jobs.formats.flux_ids import (
    MAX_EXPANDED,
    FluxLimitError,
    FluxSyntaxError,
    expand_hostlist,
    expand_idset,
    parse_idset,
)
from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, Not, Rule

__all__ = ["NEVER", "OPERATORS", "read_constraints"]

#: The operators RFC 31 says SHALL be supported.
OPERATORS: tuple[str, ...] = ("properties", "hostlist", "ranks", "and", "or", "not")

#: A rule that no node satisfies (RFC 31 ``{"not": []}``).
NEVER: Rule = Not(rule=AllOf(rules=[]))


class _Budget:
    """How many host names / ranks the whole constraint may still expand to."""

    def __init__(self, limit: int):
        self.left = limit


def _strings(values: list[Any], path: str, issues: list[Issue]) -> list[str] | None:
    out: list[str] = []
    ok = True
    for i, v in enumerate(values):
        if not isinstance(v, str):
            issues.append(issue("type", join(path, i), f"must be a string, got {type_name(v)}"))
            ok = False
        else:
            out.append(v)
    return out if ok else None


def _properties(values: list[Any], path: str, issues: list[Issue]) -> Rule | None:
    names = _strings(values, path, issues)
    if names is None:
        return None
    rules: list[Rule] = []
    for i, name in enumerate(names):
        negated = name.startswith("^")
        key = name[1:] if negated else name
        if not key.strip() or key.startswith("^"):
            issues.append(issue("range", join(path, i), f"{name!r} is not a property name"))
            return None
        op = AffinityOperator.DOES_NOT_EXIST if negated else AffinityOperator.EXISTS
        rules.append(LabelRule(key=key, operator=op))
    return rules[0] if len(rules) == 1 else AllOf(rules=rules)


def _in_rule(key: str, values: list[str]) -> Rule:
    seen = list(dict.fromkeys(values))
    return LabelRule(key=key, operator=AffinityOperator.IN, values=seen) if seen else NEVER


def _hostlist(values: list[Any], path: str, issues: list[Issue], budget: _Budget) -> Rule | None:
    lists = _strings(values, path, issues)
    if lists is None:
        return None
    hosts: list[str] = []
    for i, text in enumerate(lists):
        try:
            got = expand_hostlist(text, budget.left)
        except FluxLimitError as e:
            issues.append(issue("limit", join(path, i), str(e)))
            return None
        except FluxSyntaxError as e:
            issues.append(issue("malformed", join(path, i), f"not an RFC 29 hostlist: {e}"[:300]))
            return None
        budget.left -= len(got)
        hosts.extend(got)
    return _in_rule("hostname", hosts)


def _ranks(values: list[Any], path: str, issues: list[Issue], budget: _Budget) -> Rule | None:
    sets = _strings(values, path, issues)
    if sets is None:
        return None
    ranks: list[int] = []
    for i, text in enumerate(sets):
        try:
            got = expand_idset(parse_idset(text), budget.left)
        except FluxLimitError as e:
            issues.append(issue("limit", join(path, i), str(e)))
            return None
        except FluxSyntaxError as e:
            issues.append(issue("malformed", join(path, i), f"not an RFC 22 idset: {e}"[:300]))
            return None
        budget.left -= len(got)
        ranks.extend(got)
    return _in_rule("rank", [str(r) for r in sorted(set(ranks))])


def _children(values: list[Any], path: str, issues: list[Issue], budget: _Budget) -> list[Rule | None] | None:
    """Parse each operand; None (for the whole) when any is bad, else each rule or None (always true)."""
    start = len(issues)
    out = [_parse(v, join(path, i), issues, budget) for i, v in enumerate(values)]
    return None if len(issues) > start else out


def _parse(obj: Any, path: str, issues: list[Issue], budget: _Budget) -> Rule | None:
    """One constraint object; None means "always match" (or that issues were appended)."""
    if not isinstance(obj, Mapping):
        issues.append(issue("type", path, f"a constraint must be an object, got {type_name(obj)}"))
        return None
    if not obj:
        return None
    if len(obj) > 1:
        ops = ", ".join(sorted(str(k) for k in obj))
        issues.append(issue("malformed", path, f"a constraint object holds exactly one operator, got {ops}"))
        return None
    op, values = next(iter(obj.items()))
    vpath = join(path, str(op))
    if op not in OPERATORS:
        issues.append(issue("enum", vpath, f"unknown constraint operator {op!r}; RFC 31 defines {OPERATORS}"))
        return None
    if not isinstance(values, list):
        issues.append(issue("type", vpath, f"the values of {op!r} must be an array, got {type_name(values)}"))
        return None
    if op in ("properties", "hostlist", "ranks"):
        if not values:
            issues.append(issue("range", vpath, f"{op!r} must list at least one value"))
            return None
        if op == "properties":
            return _properties(values, vpath, issues)
        if op == "hostlist":
            return _hostlist(values, vpath, issues, budget)
        return _ranks(values, vpath, issues, budget)
    kids = _children(values, vpath, issues, budget)
    if kids is None:
        return None
    real = [k for k in kids if k is not None]
    if op == "and":
        return None if not real else real[0] if len(real) == 1 else AllOf(rules=real)
    if op == "or":
        if len(real) < len(kids) or not kids:
            return None  # an always-true operand (or none at all) makes the "or" always true
        return real[0] if len(real) == 1 else AnyOf(rules=real)
    inner: Rule = real[0] if len(real) == 1 else AllOf(rules=real)
    return Not(rule=inner)


def read_constraints(value: Any, path: str, issues: list[Issue], *, limit: int = MAX_EXPANDED) -> list[Rule]:
    """RFC 31 constraint object to the rules of ``Placement.required`` (ANDed), appending issues.

    ``limit`` caps the host names and ranks the whole constraint may expand to (a ``limit`` issue beyond).

    >>> issues: list = []
    >>> r = read_constraints({"not": [{"hostlist": ["host[0-1]"]}]}, "c", issues)[0]
    >>> r.kind, r.rule.key, r.rule.values
    ('not', 'hostname', ['host0', 'host1'])
    """
    start = len(issues)
    rule = _parse(value, path, issues, _Budget(limit))
    if rule is None or len(issues) > start:
        return []
    return _flatten(rule)


def _flatten(rule: Rule) -> list[Rule]:
    """``required`` is already an AND: nested ``AllOf`` at the top dissolve into it."""
    if isinstance(rule, AllOf):
        return [r for child in rule.rules for r in _flatten(child)]
    return [rule]
