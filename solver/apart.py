"""Jobs of one batch kept apart on a zone or rack (``Placement.anti_affinity_domains``): of each such pair,
at most one is placed by a decision.

Two jobs are a pair when a rule of one on a domain wider than a node matches the other's labels (either
way, as Kubernetes holds an incoming pod to its own terms and to those of the pods already there). Why
one of a pair per decision, and not one per domain: keeping them in different zones inside one decision
needs, in CP-SAT, a variable per job and domain over node classes that may span domains; placing one of
them now is what kube-scheduler does too (one pod at a time), and once it runs its rule — or the other's —
keeps the other out of its domain through the running job's masks (``candidates.anti_affinity_mask``), so
the next decision places the other elsewhere. Greedy and CP-SAT both keep this rule (it is placer's, and
stricter than Kubernetes'); the checker holds decisions to Kubernetes' own rule, the domains
(``checks/affinity.py``). Jobs whose topology spread constraints count each other are such pairs too
(:func:`one_of_each`, :mod:`placer.solver.skew`), for a reason of their own: each placed one then counts
only running jobs.

>>> from types import SimpleNamespace as P
>>> from placer.solver.jobs.model import LabelRule
>>> web = LabelRule(key="app", operator="In", values=["web"])
>>> zone = "topology.kubernetes.io/zone"
>>> plans = [P(labels={"app": "web"}, anti_domains=((zone, web),)), P(labels={"app": "web"}, anti_domains=()),
...          P(labels={"app": "db"}, anti_domains=())]
>>> {p: sorted(q) for p, q in kept_apart(plans, [0, 1, 2]).items()}
{0: [1], 1: [0]}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from placer.solver.rules import holds, rule_keys
from placer.solver.skew import spread_pairs

__all__ = ["kept_apart", "one_of_each"]


def kept_apart(plans: Sequence[Any], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """Per job of ``ids`` (plan indices) in a pair, the jobs it is kept apart from (see the module
    docstring); jobs in no pair are absent. The rules are tested once per distinct labelling on the keys
    they read, so a big batch with few such rules costs a pass over its jobs."""
    ids = list(ids)
    holders = [p for p in ids if plans[p].anti_domains]
    if not holders:
        return {}
    keys = sorted({k for p in holders for _, r in plans[p].anti_domains for k in rule_keys(r)})
    by_labels: dict[tuple[str | None, ...], list[int]] = {}
    for q in ids:
        by_labels.setdefault(tuple(plans[q].labels.get(k) for k in keys), []).append(q)
    out: dict[int, set[int]] = {}
    for p in holders:
        rules = [r for _, r in plans[p].anti_domains]
        for members in by_labels.values():
            if not any(holds(r, plans[members[0]].labels) for r in rules):
                continue
            for q in members:
                if q != p:
                    out.setdefault(p, set()).add(q)
                    out.setdefault(q, set()).add(p)
    return {p: frozenset(qs) for p, qs in out.items()}


def one_of_each(plans: Sequence[Any], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """Per job of ``ids`` in a pair of which a decision places at most one, its partners: the pairs kept
    apart on a zone or rack (:func:`kept_apart`), those whose topology spread constraints count each
    other (:func:`~placer.solver.skew.spread_pairs`), and those that would each start one pod-affinity
    group (``JobPlan.starts``). What both engines keep."""
    ids = list(ids)
    apart, spread, starters = kept_apart(plans, ids), spread_pairs(plans, ids), _starters(plans, ids)
    if not spread and not starters:
        return apart
    keys = apart.keys() | spread.keys() | starters.keys()
    none: frozenset[int] = frozenset()
    return {p: apart.get(p, none) | spread.get(p, none) | starters.get(p, none) for p in keys}


def _starters(plans: Sequence[Any], ids: Iterable[int]) -> dict[int, frozenset[int]]:
    """Jobs that would each start one pod-affinity group (``JobPlan.starts``, no running job to join):
    every two of them are a pair, so that at most one starts it — the others then join it next call."""
    by_group: dict[str, list[int]] = {}
    for p in ids:
        group = getattr(plans[p], "starts", None)
        if group is not None:
            by_group.setdefault(group, []).append(p)
    return {
        p: frozenset(q for q in members if q != p)
        for members in by_group.values()
        if len(members) > 1
        for p in members
    }
