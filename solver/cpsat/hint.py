"""CP-SAT, stage 3 — hint: greedy's answer as a complete assignment of the model's variables.

Why: CP-SAT starts from it, so its first solution is never worse than greedy's, and a hint that is a
solution of the model (``hint_ok``) shows the model admits everything greedy did
(``tests/solver/cpsat/test_node_rules_with_evictions.py`` solves a copy with every variable fixed to it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from placer.solver.cpsat.parts import Stage
from placer.solver.snapshot import scope_value

if TYPE_CHECKING:
    from placer.solver.cpsat.parts import NodeUnit, Seeds

__all__ = ["Hinting"]


class Hinting(Stage):
    """The hint stage of :class:`~placer.solver.cpsat.model.Model` (a mixin: it reads the model's
    variables)."""

    def _hint(self, seeds: Seeds, by_plan: dict[int, list[NodeUnit]]) -> None:
        """Set ``hint_values`` and the model's hints from greedy's answer (``seeds``)."""
        b, m, ids = self.b, self.m, self.ids
        classes, patterns, tpu_slices = self.classes, self.patterns, self.tpu_slices
        z_hint, x_hint = seeds.z_hint, seeds.x_hint
        # Hint from greedy.
        self.hint_values: dict[cp_model.IntVar, int] = {}
        placed_hint = set(b.hint.placed)
        for p in ids:
            self.hint_values[self.placed[p]] = int(p in placed_hint)
        for (c, k), v in self.z.items():
            self.hint_values[v] = z_hint.get((c, patterns[c][k]), 0)
        for key, v in self.x.items():
            self.hint_values[v] = x_hint.get(key, 0)
        # A gang's domain: where greedy put it, in classes or on nodes modelled one by one (the latter were
        # missed, so greedy's gangs on such nodes made its hint infeasible).
        hinted_domains: set[tuple[int, str]] = set()
        for (p, _, c), n in x_hint.items():
            scope = self.plans[p].scope
            if n and scope:
                hinted_domains.add((p, str(classes[c].scopes[scope])))
        for (p, _, node), n in b.y_hint.items():
            scope = self.plans[p].scope
            if n and scope:
                hinted_domains.add((p, str(scope_value(b.snap, node, scope))))
        for (p, d), v in self.bvars.items():
            self.hint_values[v] = int(p in placed_hint and (p, d) in hinted_domains)
        # A unit's Flux domains: those greedy's replicas are in.
        used: set[tuple[int, int, str, str | None]] = set()
        for (p, ui, c), n in x_hint.items():
            if n:
                used.update(
                    (p, ui, level, classes[c].scopes[level]) for level, _ in self.plans[p].units[ui].domains
                )
        for (p, ui, node), n in b.y_hint.items():
            if n:
                used.update(
                    (p, ui, level, scope_value(b.snap, node, level))
                    for level, _ in self.plans[p].units[ui].domains
                )
        for domain, v in self.dvars.items():
            self.hint_values[v] = int(domain in used)
        hinted_slices = {
            (p, b.plans[p].units.index(r.unit), r.pod, frozenset(r.chips))
            for p, reps in b.hint.placed.items()
            for r in reps
            if r.pod is not None
        }
        for (p, ui, s_idx), v in self.a.items():
            s = tpu_slices[(p, ui)][s_idx]
            self.hint_values[v] = int((p, ui, s.pod, frozenset(s.chips)) in hinted_slices)
        for key, v in self.y.items():
            self.hint_values[v] = b.y_hint.get(key, 0)
        for vid, v in self.e.items():
            self.hint_values[v] = int(vid in b.hint.evictions)
        for (p, n), v in self.on.items():
            self.hint_values[v] = int(any(b.y_hint.get((p, nu.ui, n), 0) for nu in by_plan[p]))
        # The racks greedy's replicas of a job are in, and how many beyond one (compactness).
        in_rack: set[tuple[int, str | None]] = set()
        for (p, _, c), n in x_hint.items():
            if n:
                in_rack.add((p, classes[c].scopes.get("rack")))
        for (p, _, node), n in b.y_hint.items():
            if n:
                in_rack.add((p, b.snap.nodes[node].node.rack))
        racks_used: dict[int, int] = {}
        for (p, rack), v in self.r.items():
            self.hint_values[v] = int((p, rack) in in_rack)
            racks_used[p] = racks_used.get(p, 0) + self.hint_values[v]
        for p, v in self.s.items():
            self.hint_values[v] = max(0, racks_used.get(p, 0) - self.hint_values[self.placed[p]])
        for v, val in self.hint_values.items():
            m.add_hint(v, val)
        self.hint_ok = seeds.hint_ok
