"""Anti-affinity between jobs of one batch, by signature: which jobs may not share a node.

Why signatures: whether two jobs conflict depends only on their labels and their anti-affinity rules (one's
rules matching the other's labels, either way). Jobs with the same labels and rules — a signature — conflict
with the same jobs, and with each other exactly when the signature conflicts with itself. Listing each
job's conflicting jobs was quadratic in time and memory: 4,000 serve jobs beside 4,000 batch jobs made 32
million rule tests (90 s, past any deadline) and sets of 4,000 ids per job. Here the rules are tested per
pair of signatures, and a question about two jobs is a lookup.

>>> from types import SimpleNamespace as P
>>> from placer.solver.jobs.model import LabelRule
>>> serve = [LabelRule(key="app", operator="In", values=["serve"])]
>>> plans = [P(labels={"app": "serve", "job_id": "s1"}, anti=serve),
...          P(labels={"app": "serve", "job_id": "s2"}, anti=serve),
...          P(labels={"app": "batch", "job_id": "b1"}, anti=[])]
>>> c = Conflicts(plans, [0, 1, 2])
>>> c.between(0, 1), c.between(0, 2), c.self_anti, 2 in c, len(c.members)
(True, False, {0, 1}, False, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from placer.solver.jobs.model import AllOf, AnyOf, LabelRule, Not
from placer.solver.rules import holds

__all__ = ["Conflicts"]


def _keys(rule: object) -> Iterable[str]:
    """The label keys a rule reads."""
    if isinstance(rule, LabelRule):
        yield rule.key
    elif isinstance(rule, AllOf | AnyOf):
        for r in rule.rules:
            yield from _keys(r)
    elif isinstance(rule, Not):
        yield from _keys(rule.rule)


class Conflicts:
    """The conflict relation of a batch's jobs (plan indices), kept per signature group."""

    def __init__(self, plans: Sequence[Any], ids: Iterable[int], tick: Callable[[], None] | None = None):
        ids = list(ids)
        # Only the label keys some rule reads tell jobs apart (every job has a label ``job_id`` of its own).
        keys = sorted({k for p in ids for r in plans[p].anti for k in _keys(r)})
        index: dict[tuple[object, ...], int] = {}
        reps: list[int] = []
        #: Signature group of every plan considered.
        self.group_of: dict[int, int] = {}
        #: Plans of each group, ascending.
        self.members: dict[int, list[int]] = {}
        for p in ids:
            plan = plans[p]
            key = (tuple(plan.labels.get(k) for k in keys), repr(plan.anti))
            g = index.get(key)
            if g is None:
                g = index[key] = len(reps)
                reps.append(p)
            self.group_of[p] = g
            self.members.setdefault(g, []).append(p)
        pairs: dict[int, set[int]] = {}
        for g, rep in enumerate(reps):
            rules = plans[rep].anti
            if not rules:
                continue
            if tick is not None:
                tick()
            for h, other in enumerate(reps):
                if any(holds(r, plans[other].labels) for r in rules):
                    pairs.setdefault(g, set()).add(h)
                    pairs.setdefault(h, set()).add(g)
        #: Per group, the groups it conflicts with (itself included when its jobs conflict with each other).
        self.pairs: dict[int, frozenset[int]] = {g: frozenset(v) for g, v in pairs.items()}
        #: Jobs whose rules match their own labels: no two of their replicas share a node.
        self.self_anti: set[int] = {p for p, g in self.group_of.items() if g in self.pairs.get(g, ())}

    def __contains__(self, p: object) -> bool:
        """Whether job ``p`` conflicts with some *other* job of the batch."""
        g = self.group_of.get(p) if isinstance(p, int) else None
        if g is None:
            return False
        return any(len(self.members[h]) > (1 if h == g else 0) for h in self.pairs.get(g, ()))

    def groups_against(self, p: int) -> frozenset[int]:
        """The signature groups job ``p`` conflicts with."""
        return self.pairs.get(self.group_of[p], frozenset())

    def between(self, p: int, q: int) -> bool:
        """Whether two distinct jobs may not share a node."""
        return p != q and self.group_of[q] in self.pairs.get(self.group_of[p], ())

    def among(self, p: int, jobs: Iterable[int]) -> list[int]:
        """The jobs of ``jobs`` (other than ``p``) that ``p`` may not share a node with, ascending."""
        against = self.pairs.get(self.group_of[p], ())
        if not against:
            return []
        return sorted(q for q in jobs if q != p and self.group_of[q] in against)

    def any_in(self, p: int, jobs: Iterable[int]) -> bool:
        """Whether some job of ``jobs`` (other than ``p``) may not share a node with ``p``."""
        against = self.pairs.get(self.group_of[p], ())
        return bool(against) and any(q != p and self.group_of[q] in against for q in jobs)
