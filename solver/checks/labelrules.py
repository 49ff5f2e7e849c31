"""Label-rule evaluation, written for the checker alone (it shares no code with the solver on purpose).

Semantics are Kubernetes' (OJS ML §7.2 copies them): ``In`` needs the label present with a listed value,
``NotIn`` holds when the label is absent or its value is not listed, ``Exists``/``DoesNotExist`` test the
key only. ``Gt``/``Gte``/``Lt``/``Lte`` need the label present and comparable: both sides plain numbers
compare numerically, else both dotted versions (``"8.0"`` < ``"10.0"``) compare as integer tuples, else
the rule does not hold (a rule that cannot be evaluated must not let a job through). ``Matches`` is
:func:`fnmatch.fnmatchcase` of the value against any pattern. ``AllOf``/``AnyOf``/``Not`` combine.

>>> from placer.solver.jobs.model import LabelRule
>>> rule = LabelRule(key="compute_capability", operator="Gte", values=["8.0"])
>>> satisfied(rule, {"compute_capability": "10.0"}), satisfied(rule, {"compute_capability": "7.5"})
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, Not, Rule

__all__ = ["compare", "describe", "label_rule_holds", "satisfied"]

_NUMBER = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)+$")
_ORDER = {
    AffinityOperator.GT: lambda c: c > 0,
    AffinityOperator.GTE: lambda c: c >= 0,
    AffinityOperator.LT: lambda c: c < 0,
    AffinityOperator.LTE: lambda c: c <= 0,
}


def compare(left: str, right: str) -> int | None:
    """-1, 0 or 1 comparing two label values, or None when they are not comparable.

    >>> compare("80", "40"), compare("8.0", "10.0"), compare("9.0.1", "9.0.0"), compare("h100", "8")
    (1, -1, 1, None)
    """
    a: tuple[int, ...] | float
    b: tuple[int, ...] | float
    if _NUMBER.match(left.strip()) and _NUMBER.match(right.strip()):
        a, b = float(left), float(right)
    elif _VERSION.match(left.strip()) and _VERSION.match(right.strip()):
        a = tuple(int(p) for p in left.strip().split("."))
        b = tuple(int(p) for p in right.strip().split("."))
    else:
        return None
    return (a > b) - (a < b)  # type: ignore[operator]


def label_rule_holds(rule: LabelRule, labels: Mapping[str, str]) -> bool:
    """Whether one label test holds on ``labels``.

    >>> r = LabelRule(key="zone", operator="NotIn", values=["us-east-1a"])
    >>> label_rule_holds(r, {}), label_rule_holds(r, {"zone": "us-east-1a"})
    (True, False)
    """
    op = rule.operator
    value = labels.get(rule.key)
    if op is AffinityOperator.EXISTS:
        return value is not None
    if op is AffinityOperator.DOES_NOT_EXIST:
        return value is None
    if op is AffinityOperator.NOT_IN:
        return value is None or value not in rule.values
    if value is None:
        return False
    if op is AffinityOperator.IN:
        return value in rule.values
    if op is AffinityOperator.MATCHES:
        return any(fnmatchcase(value, pattern) for pattern in rule.values)
    c = compare(value, rule.values[0])
    return c is not None and _ORDER[op](c)


def satisfied(rule: Rule, labels: Mapping[str, str]) -> bool:
    """Whether a (possibly combined) rule holds on ``labels``.

    >>> from placer.solver.jobs.model import AnyOf, Not
    >>> has_b = LabelRule(key="b", operator="Exists")
    >>> r = AnyOf(rules=[LabelRule(key="a", operator="Exists"), Not(rule=has_b)])
    >>> satisfied(r, {"b": "1"}), satisfied(r, {})
    (False, True)
    """
    if isinstance(rule, LabelRule):
        return label_rule_holds(rule, labels)
    if isinstance(rule, AllOf):
        return all(satisfied(r, labels) for r in rule.rules)
    if isinstance(rule, AnyOf):
        return any(satisfied(r, labels) for r in rule.rules)
    if isinstance(rule, Not):
        return not satisfied(rule.rule, labels)
    return False  # pragma: no cover - the Rule union has no other member


def describe(rule: Rule) -> str:
    """A rule in words, for violation messages.

    >>> describe(LabelRule(key="gpu_type", operator="In", values=["nvidia-h100", "nvidia-a100"]))
    'gpu_type In [nvidia-h100, nvidia-a100]'
    """
    if isinstance(rule, LabelRule):
        if rule.operator in (AffinityOperator.EXISTS, AffinityOperator.DOES_NOT_EXIST):
            return f"{rule.key} {rule.operator.value}"
        return f"{rule.key} {rule.operator.value} [{', '.join(rule.values)}]"
    if isinstance(rule, AllOf):
        return "AllOf(" + "; ".join(describe(r) for r in rule.rules) + ")"
    if isinstance(rule, AnyOf):
        return "AnyOf(" + "; ".join(describe(r) for r in rule.rules) + ")"
    return f"Not({describe(rule.rule)})"
