"""PodDisruptionBudgets (``policy/v1``) beside the running pods: how many of a running job's pods an eviction
would take past what their budgets allow.

Why: when kube-scheduler preempts, the first thing it minimises among candidate victims is the number of
PodDisruptionBudget violations (``pickOneNodeForPreemption``): a serving Deployment with ``minAvailable``
is evicted last. placer reads the budgets ``kubectl get pods,pdb -A -o json`` lists with the pods, and gives
each running job the count of violations evicting it would cause; the engines add a large cost per
violation to the eviction (:data:`placer.solver.preempt.DISRUPTION_PENALTY_S`), so they evict within the
budgets whenever they can, and through them only when nothing else makes room — as kube-scheduler does
(a budget never forbids preemption).

A budget's allowance is ``status.disruptionsAllowed`` as the disruption controller wrote it; a budget
without a status (a manifest) counts its pods in the list as healthy: ``minAvailable`` M allows the
matched pods minus M, ``maxUnavailable`` U allows U (a percentage of the matched pods, rounded up, as the
controller rounds both). A job's violations are, per budget, its matched pods beyond the allowance, summed
over budgets; several jobs under one budget are each counted against the whole allowance (a lower bound
of what evicting all of them would violate).

>>> pdb = {"kind": "PodDisruptionBudget", "metadata": {"name": "serve", "namespace": "ml"},
...        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "serve"}}}}
>>> budgets = read_budgets([pdb])
>>> allowed = allowances(budgets, [("ml", {"app": "serve"})] * 3)  # three serve pods run
>>> allowed, violations(budgets, allowed, [("ml", {"app": "serve"})] * 3)  # one job holds all three
([1], 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from placer.topology.importers._common import Problems, child_map, child_str, join_item, short

__all__ = ["KIND", "Budget", "allowance", "allowances", "read_budgets", "violations"]

KIND = "PodDisruptionBudget"
#: A pod as budgets see it: its namespace and labels.
PodKey = tuple[str, dict[str, str]]


@dataclass(frozen=True)
class Budget:
    """One budget: where it applies (namespace, selector) and what it allows (given, or from its spec)."""

    name: str
    namespace: str
    #: ``matchLabels`` and ``matchExpressions`` (key, operator, values); None: the budget selects nothing.
    match_labels: dict[str, str] | None
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...]
    allowed: int | None
    min_available: int | str | None
    max_unavailable: int | str | None

    def selects(self, namespace: str, labels: dict[str, str]) -> bool:
        """Whether the budget covers a pod (``policy/v1``: an empty selector covers every pod of the
        namespace, a missing one none)."""
        if self.match_labels is None or namespace != self.namespace:
            return False
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for key, op, values in self.expressions:
            has = key in labels
            if op == "In" and not (has and labels[key] in values):
                return False
            if op == "NotIn" and has and labels[key] in values:
                return False
            if (op == "Exists" and not has) or (op == "DoesNotExist" and has):
                return False
        return True


def read_budgets(items: Sequence[Any], problems: Problems | None = None, base: str = "items") -> list[Budget]:
    """The budgets among ``items`` (others are skipped); a malformed one is a problem (when ``problems`` is
    given), never read as allowing more than it says."""
    out: list[Budget] = []
    problems = Problems("pdb") if problems is None else problems  # (an empty Problems is falsy)
    for i, raw in enumerate(items):
        if not isinstance(raw, dict) or raw.get("kind") != KIND:
            continue
        meta = child_map(raw, "metadata")
        name = child_str(meta, "name", f"#{i}")
        namespace = child_str(meta, "namespace", "default")
        item = join_item(base, i, f"{namespace}/{name}")
        spec = child_map(raw, "spec")
        selector = spec.get("selector")
        labels: dict[str, str] | None = None
        expressions: list[tuple[str, str, tuple[str, ...]]] = []
        if isinstance(selector, dict):
            ml = selector.get("matchLabels") or {}
            if not isinstance(ml, dict):
                problems.add(item, f"spec.selector.matchLabels must be an object, got {short(ml)}")
                continue
            labels = {str(k): str(v) for k, v in ml.items()}
            for e in selector.get("matchExpressions") or []:
                op = e.get("operator") if isinstance(e, dict) else None
                if op not in ("In", "NotIn", "Exists", "DoesNotExist") or not isinstance(e.get("key"), str):
                    problems.add(
                        item, f"spec.selector.matchExpressions: {short(e)} is not a label requirement"
                    )
                    break
                expressions.append((e["key"], op, tuple(str(v) for v in e.get("values") or ())))
        elif selector is not None:
            problems.add(item, f"spec.selector must be an object, got {short(selector)}")
            continue
        status = child_map(raw, "status")
        allowed = status.get("disruptionsAllowed")
        if allowed is not None and (type(allowed) is not int or allowed < 0):
            problems.add(item, f"status.disruptionsAllowed must be a whole number, got {short(allowed)}")
            continue
        bounds = [spec.get(k) for k in ("minAvailable", "maxUnavailable")]
        if allowed is None and all(b is None for b in bounds):
            problems.add(item, "neither status.disruptionsAllowed nor spec.minAvailable/maxUnavailable")
            continue
        if any(b is not None and not _amount_ok(b) for b in bounds):
            problems.add(item, "spec.minAvailable/maxUnavailable must be a whole number or a percentage")
            continue
        out.append(Budget(name, namespace, labels, tuple(expressions), allowed, bounds[0], bounds[1]))
    return out


def _amount_ok(value: Any) -> bool:
    if type(value) is int:
        return value >= 0
    return isinstance(value, str) and value.endswith("%") and value[:-1].isdigit()


def _scaled(value: int | str, of: int) -> int:
    """An int-or-percentage as the disruption controller scales it (percentages rounded up)."""
    if isinstance(value, int):
        return value
    return math.ceil(of * int(value[:-1]) / 100)


def allowance(budget: Budget, pods: Sequence[PodKey]) -> int:
    """How many pods the budget lets go now: ``status.disruptionsAllowed``, else from its spec with every
    matched pod of ``pods`` (all the running pods read) counted healthy."""
    if budget.allowed is not None:
        return budget.allowed
    matched = sum(1 for ns, labels in pods if budget.selects(ns, labels))
    if budget.min_available is not None:
        return max(0, matched - _scaled(budget.min_available, matched))
    assert budget.max_unavailable is not None
    return max(0, _scaled(budget.max_unavailable, matched))


def allowances(budgets: Sequence[Budget], pods: Sequence[PodKey]) -> list[int]:
    """:func:`allowance` of each budget, in order: computed once for all the jobs that read them."""
    return [allowance(b, pods) for b in budgets]


def violations(budgets: Sequence[Budget], allowed: Sequence[int], job_pods: Sequence[PodKey]) -> int:
    """The budget violations evicting one job (its pods ``job_pods``) would cause: per budget, its matched
    pods beyond the budget's allowance (``allowed``, from :func:`allowances`)."""
    total = 0
    for b, room in zip(budgets, allowed, strict=True):
        mine = sum(1 for ns, labels in job_pods if b.selects(ns, labels))
        total += max(0, mine - room)
    return total
