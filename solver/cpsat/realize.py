"""CP-SAT, stage 5 — realize: the model's counts per class and pattern back to nodes, GPU indices and
TPU chips, on greedy's scratch state, so that both engines place replicas by one set of rules.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from ortools.sat.python import cp_model

from placer.solver.assignment import Assignment, ReplicaAt, node_count_ok
from placer.solver.cpsat.parts import NodeUnit, Stage
from placer.solver.cpsat.patterns import Pattern, shape_claims
from placer.solver.greedy.state import State
from placer.solver.preempt import evict_rank, job_rank
from placer.solver.snapshot import scope_value

__all__ = ["Realizing"]


class Realizing(Stage):
    """The realization stage of :class:`~placer.solver.cpsat.model.Model` (a mixin)."""

    def _repair_order(self, nu: NodeUnit, c: int, ordered: list[int]) -> Iterator[int]:
        """Nodes to try for one replica: the class's members, then (repair, for rounded models) any other
        node where the unit may run now, whose gang scope value is the one the model chose and whose price
        is the class's (so that the decision costs what the model counted, budgets included)."""
        yield from ordered
        scope = self.plans[nu.p].scope
        want = self.classes[c].scopes.get(scope) if scope else None
        mask = nu.cand.now & ~self.b.anti[nu.p]
        if self.b.direct:
            # Nodes modelled one by one take what the model chose for them after this (``_finish``); a
            # repair there could take their room or sit beside a job it conflicts with.
            mask[list(self.b.direct)] = False
        if self.b.pricing is not None:
            codes = self.b.pricing.price_codes()
            mask = mask & (codes == codes[self.classes[c].rep])
        members = set(ordered)
        for node in np.flatnonzero(mask):
            n = int(node)
            if n in members:
                continue
            if scope and scope_value(self.b.snap, n, scope) != want:
                continue
            yield n

    def _realize(self, values: dict[cp_model.IntVar, int]) -> Assignment | None:
        """Class counts back to concrete nodes and devices: first exactly as the chosen patterns say;
        if real amounts do not fit that (a rounded model), by first-fit repair within each class."""
        return self._realize_patterns(values) or self._realize_repair(values)

    def _start(self, values: dict[cp_model.IntVar, int]) -> tuple[set[int], State, Assignment]:
        placed = {p for p in self.ids if values[self.placed[p]]}
        out = Assignment(engine="cpsat")
        for p in placed:
            out.placed[p] = []
        state = State.of(self.b.arrays)
        for v in self.b.victims:
            if v.id in self.e and values[self.e[v.id]]:
                state.evict(v)
        return placed, state, out

    def _finish(
        self, values: dict[cp_model.IntVar, int], placed: set[int], out: Assignment, state: State
    ) -> Assignment | None:
        # Nodes modelled one by one: higher-priority units first, then record whom each eviction served.
        for (p, ui, n), v in sorted(
            self.y.items(), key=lambda kv: (-job_rank(self.plans[kv[0][0]].job), kv[0])
        ):
            unit = self.plans[p].units[ui]
            for _ in range(values[v] if p in placed else 0):
                if not state.fits_node(n, unit):
                    return None
                gpus, share = state.take(n, unit)
                out.placed[p].append(ReplicaAt(unit=unit, node=n, gpus=gpus, milli=share))
        on_node: dict[int, set[int]] = {}
        for (p, _, n), v in self.y.items():
            if p in placed and values[v]:
                on_node.setdefault(n, set()).add(p)
        for victim in self.b.victims:
            if victim.id in self.e and values[self.e[victim.id]]:
                served = {
                    p
                    for n in victim.nodes
                    for p in on_node.get(n, ())
                    if evict_rank(self.plans[p].job) > victim.rank
                }
                served |= {p for p, ui, k in self.tpu_needs.get(victim.id, []) if values[self.a[(p, ui, k)]]}
                out.evictions[victim.id] = sorted({self.plans[p].id for p in served if p in placed})
        for (p, ui, s_idx), v in self.a.items():
            if values[v] and p in placed:
                s = self.tpu_slices[(p, ui)][s_idx]
                out.placed[p].append(ReplicaAt(unit=self.plans[p].units[ui], pod=s.pod, chips=s.chips))
        for p in placed:
            if len(out.placed[p]) != self.plans[p].replicas or not node_count_ok(
                self.plans[p], out.placed[p]
            ):
                return None
        return out

    def _realize_patterns(self, values: dict[cp_model.IntVar, int]) -> Assignment | None:
        """Nodes of each class take the chosen patterns (:meth:`_pattern_nodes`); each pattern's slots take
        replicas of their item type, units in order."""
        placed, state, out = self._start(values)
        queue: dict[tuple[int, int], list[tuple[NodeUnit, list[int]]]] = {}
        for nu in self.node_units:
            if nu.p in placed:
                for c in nu.classes:
                    n = values[self.x[(nu.p, nu.ui, c)]]
                    if n:
                        queue.setdefault((c, nu.type_idx), []).append((nu, [n]))
        try:
            for c in sorted(self.patterns):
                for node, pat in self._pattern_nodes(c, values):
                    # Flux shapes first, with the GPUs and sockets one joint match of the pattern's
                    # shaped replicas gives (the pattern was checked with that same match).
                    claims = shape_claims(self.classes[c], self.types, pat)
                    if claims is None:
                        return None
                    order = sorted(pat, key=lambda tk: (tk[0] not in claims, -self.types[tk[0]].milli))
                    for t, cnt in order:
                        for _ in range(cnt):
                            q = queue.get((c, t))
                            while q and q[0][1][0] == 0:
                                q.pop(0)
                            if not q:
                                break
                            nu, left = q[0]
                            left[0] -= 1
                            claim = claims[t].pop(0) if t in claims else None
                            unit = nu.unit
                            if not state.fits_node(node, unit, shape=claim is None):
                                return None
                            gpus, share = state.take(node, unit, claim=claim)
                            out.placed[nu.p].append(ReplicaAt(unit=unit, node=node, gpus=gpus, milli=share))
        except (StopIteration, ValueError):
            return None
        return self._finish(values, placed, out, state)

    def _pattern_nodes(self, c: int, values: dict[cp_model.IntVar, int]) -> list[tuple[int, Pattern]]:
        """The node each chosen pattern of class ``c`` goes to: pinned patterns to the nodes greedy used them
        on, the others to the remaining members in index order (raises StopIteration when too few)."""
        out: list[tuple[int, Pattern]] = []
        pats = self.patterns[c]
        for k, pat in enumerate(pats):
            out += [(n, pat) for n in self.pins.get((c, k), [])[: values[self.z[(c, k)]]]]
        taken = {n for n, _ in out}
        members = (n for n in self.classes[c].members if n not in taken)
        for k, pat in enumerate(pats):
            if (c, k) not in self.pins:
                out += [(next(members), pat) for _ in range(values[self.z[(c, k)]])]
        return out

    def _realize_repair(self, values: dict[cp_model.IntVar, int]) -> Assignment | None:
        """Repair for rounded models.

        Per class, replicas (largest first) go to the first member node where their real amounts fit and
        no per-node rule is broken (distinct replicas, anti-affinity, exclusivity), members ordered as the
        chosen patterns assign them, then the class's unused members. The patterns guarantee GPU packing;
        this step re-checks real CPU/memory (which the model may have rounded)."""
        plans, classes = self.plans, self.classes
        placed, state, out = self._start(values)
        wanted: dict[int, list[NodeUnit]] = {}
        for nu in self.node_units:
            if nu.p not in placed:
                continue
            for c in nu.classes:
                wanted.setdefault(c, []).extend([nu] * values[self.x[(nu.p, nu.ui, c)]])
        on_node: dict[int, set[int]] = {}
        unit_on: dict[int, set[tuple[int, int]]] = {}
        conflicts, self_anti = self.b.conflicts, self.b.self_anti

        def allowed(node: int, nu: NodeUnit) -> bool:
            if not state.fits_node(node, nu.unit):
                return False
            here = on_node.get(node, set())
            if nu.unit.distinct and (nu.p, nu.ui) in unit_on.get(node, set()):
                return False
            if (nu.p in self_anti and nu.p in here) or conflicts.any_in(nu.p, here):
                return False
            if nu.unit.exclusive and here - {nu.p}:
                return False
            return not any(any(u.exclusive for u in plans[q].units) for q in here - {nu.p})

        def put(node: int, nu: NodeUnit) -> None:
            gpus, share = state.take(node, nu.unit)
            on_node.setdefault(node, set()).add(nu.p)
            unit_on.setdefault(node, set()).add((nu.p, nu.ui))
            out.placed[nu.p].append(ReplicaAt(unit=nu.unit, node=node, gpus=gpus, milli=share))

        # Pass 1: every class on its own members; pass 2: what did not fit, anywhere it may run (so that
        # repairs never take a node another class was counting on).
        left: list[tuple[int, NodeUnit]] = []
        orders: dict[int, list[int]] = {}
        try:
            for c in sorted(wanted):
                used = [n for n, _ in self._pattern_nodes(c, values)] if c in self.patterns else []
                taken = set(used)
                orders[c] = used + [n for n in classes[c].members if n not in taken]
                reps = sorted(
                    wanted[c],
                    key=lambda nu: (
                        -nu.unit.need.gpus,
                        -nu.unit.need.milli,
                        -nu.unit.need.cpu,
                        -nu.unit.need.mem,
                        nu.p,
                    ),
                )
                for nu in reps:
                    node = next((n for n in orders[c] if allowed(n, nu)), None)
                    if node is None:
                        left.append((c, nu))
                    else:
                        put(node, nu)
            for c, nu in left:
                node = next((n for n in self._repair_order(nu, c, orders[c]) if allowed(n, nu)), None)
                if node is None:
                    return None  # real amounts do not fit: greedy's answer stands
                put(node, nu)
        except (StopIteration, ValueError):
            return None
        return self._finish(values, placed, out, state)
