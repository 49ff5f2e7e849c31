"""Evaluating label rules (node selector, affinity, anti-affinity) against a label map.

Semantics follow Kubernetes node affinity, which OJS ML §7.2 mirrors: ``In`` needs the label present with
one of the values; ``NotIn`` holds when the label is absent or has none of the values; ``Gt``/``Gte``/
``Lt``/``Lte`` compare numbers, or dotted versions (``"8.0"`` < ``"10.0"``) when both sides are versions,
and fail when the label is absent or not comparable; ``Matches`` is a shell-style glob on the value.

>>> from placer.solver.jobs.model import LabelRule
>>> holds(LabelRule(key="compute_capability", operator="Gte", values=["8.0"]), {"compute_capability": "10.0"})
True
>>> holds(LabelRule(key="zone", operator="NotIn", values=["a"]), {})
True
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from placer.solver.jobs.model import AffinityOperator, AllOf, AnyOf, LabelRule, Not, Rule

__all__ = ["all_hold", "compare", "holds", "job_labels", "rule_keys", "running_label"]

_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*$")


@lru_cache(maxsize=4096)
def _comparable(text: str) -> tuple[int, ...] | float | None:
    try:
        return float(text)
    except ValueError:
        pass
    if _VERSION.match(text):
        return tuple(int(p) for p in text.split("."))
    return None


def compare(left: str, right: str) -> int | None:
    """-1, 0 or 1 comparing two label values as numbers or dotted versions; None when not comparable.

    Versions win over floats when both look like versions with more than one dot-part, so "8.10" > "8.9".
    """
    if _VERSION.match(left) and _VERSION.match(right) and ("." in left or "." in right):
        a = tuple(int(p) for p in left.split("."))
        b = tuple(int(p) for p in right.split("."))
        n = max(len(a), len(b))
        a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
        return (a > b) - (a < b)
    x, y = _comparable(left), _comparable(right)
    if isinstance(x, float) and isinstance(y, float):
        return (x > y) - (x < y)
    return None


def holds(rule: Rule, labels: Mapping[str, str]) -> bool:
    """Whether ``rule`` holds for a node (or job) with ``labels``."""
    if isinstance(rule, LabelRule):
        return _label(rule, labels)
    if isinstance(rule, AllOf):
        return all(holds(r, labels) for r in rule.rules)
    if isinstance(rule, AnyOf):
        return any(holds(r, labels) for r in rule.rules)
    if isinstance(rule, Not):
        return not holds(rule.rule, labels)
    raise TypeError(f"not a rule: {rule!r}")


def _label(rule: LabelRule, labels: Mapping[str, str]) -> bool:
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
        return any(fnmatch.fnmatchcase(value, pattern) for pattern in rule.values)
    c = compare(value, rule.values[0])
    if c is None:
        return False
    return {
        AffinityOperator.GT: c > 0,
        AffinityOperator.GTE: c >= 0,
        AffinityOperator.LT: c < 0,
        AffinityOperator.LTE: c <= 0,
    }[op]


def all_hold(rules: Iterable[Rule], labels: Mapping[str, str]) -> bool:
    return all(holds(r, labels) for r in rules)


def rule_keys(rule: Rule) -> set[str]:
    """Every label key a rule reads (to know which labels matter for grouping nodes)."""
    if isinstance(rule, LabelRule):
        return {rule.key}
    if isinstance(rule, AllOf | AnyOf):
        out: set[str] = set()
        for r in rule.rules:
            out |= rule_keys(r)
        return out
    if isinstance(rule, Not):
        return rule_keys(rule.rule)
    raise TypeError(f"not a rule: {rule!r}")


def job_labels(job: object) -> dict[str, str]:
    """Labels other jobs' anti-affinity rules test against (OJS ML §7.3 uses ``job_type``).

    For a :class:`~placer.solver.jobs.model.Job`: its ``labels`` plus derived ``job_id``, ``job_type``,
    ``queue``,
    ``tenant``, ``priority_class`` and ``model_id``; for a running job (``placer.topology.RunningJob``): its
    ``labels`` plus ``job_id``, ``queue``, ``tenant`` and ``priority_class``. Derived keys win.
    """
    from placer.solver.jobs.model import Job

    out: dict[str, str] = dict(getattr(job, "labels", None) or ())
    if isinstance(job, Job):
        # Spelled out rather than looped: every from-scratch call runs this once per pending job.
        out["job_id"] = job.id
        for key, value in (("job_type", job.type), ("queue", job.queue), ("tenant", job.tenant)):
            if value is not None:
                out[key] = str(value)
        out["priority_class"] = str(job.priority_class)
        if job.model.id is not None:
            out["model_id"] = str(job.model.id)
        return out
    derived = {k: getattr(job, attr, None) for k, attr in _RUNNING_DERIVED.items()}
    out.update({k: str(v) for k, v in derived.items() if v is not None})
    return out


#: A running job's derived label keys (:func:`job_labels`) -> the attribute each is read from.
_RUNNING_DERIVED = {"job_id": "job", "queue": "queue", "tenant": "tenant", "priority_class": "priority_class"}


def running_label(job: object, key: str) -> str | None:
    """``job_labels(job).get(key)`` for a running job, without building the whole map: an index of one key
    over thousands of running jobs reads one value of each.

    >>> from placer.topology import RunningJob
    >>> rj = RunningJob(job="r1", queue="prod", labels={"app": "web", "queue": "mine"},
    ...                 replicas=[{"node": "n1", "gpus": [0]}])
    >>> running_label(rj, "app"), running_label(rj, "queue"), running_label(rj, "team")
    ('web', 'prod', None)
    """
    attr = _RUNNING_DERIVED.get(key)
    if attr is not None:
        value = getattr(job, attr, None)
        if value is not None:
            return str(value)
    return (getattr(job, "labels", None) or {}).get(key)
