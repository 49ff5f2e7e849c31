"""CP-SAT, stage 4 — search: the objective's levels, one solve each, every later level holding the ones
above at what was found.

Level 1 (priority-weighted demand placed), then the eviction cost, then preferences with best fit, then —
when some unit's options differ in price — dollars per hour with best fit. Under ``Policy.reproducible``
each solve spends deterministic time, a fixed share of the limit (:data:`~placer.solver.cpsat.parts.
DET_SHARE`), so the answer does not depend on the machine.
"""

from __future__ import annotations

import math
import time
from functools import partial

from ortools.sat.python import cp_model

from placer.solver.cancel import register
from placer.solver.cpsat.parts import DET_SHARE, CpsatResult, Stage, value

__all__ = ["Searching"]


class Searching(Stage):
    """The solve stage of :class:`~placer.solver.cpsat.model.Model` (a mixin)."""

    def _left(self) -> float:
        """What the next solve may spend: wall seconds to the deadline, or, under ``Policy.reproducible``,
        the deterministic budget left (:meth:`_spend`). A reproducible run that finds its budget left but
        the wall clock gone says so (``deterministic`` false) instead of answering differently unnoticed."""
        wall = self.b.deadline - time.perf_counter()
        if self.det_left is None:
            return wall
        if wall <= 0.05 < self.det_left:
            self.deterministic = False
            return wall
        return self.det_left

    def _spend(self, s: cp_model.CpSolver, status: cp_model.CpSolverStatus) -> None:
        """Charge a finished solve to the deterministic budget; note when the wall clock stopped it."""
        if self.det_left is None:
            return
        r = s.response_proto
        self.det_left = max(0.0, self.det_left - r.deterministic_time)
        done = status in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
        if not done and r.deterministic_time < 0.95 * s.parameters.max_deterministic_time:
            self.deterministic = False  # stopped by max_time_in_seconds, the wall-clock safety net

    def _solver(self, seconds: float, *, presolve: bool = True) -> cp_model.CpSolver:
        """A solver for one stage of ``seconds`` (wall seconds, or deterministic ones when reproducible:
        then the wall clock to the deadline is only a safety net, so the same input gives the same answer
        whatever the machine's load, as long as the deadline is not reached)."""
        s = cp_model.CpSolver()
        wall = self.b.deadline - time.perf_counter()
        s.parameters.max_time_in_seconds = max(0.01, wall if self.det_left is not None else seconds)
        if not register(s):  # the call was cancelled: no time for another search
            s.parameters.max_time_in_seconds = 0.001
        if not presolve:
            # Later lexicographic stages re-solve the same model with one more constraint and a full hint;
            # presolving it again is what overruns the time limit on big models, and gains little.
            s.parameters.cp_model_presolve = False
        s.parameters.random_seed = self.policy.seed
        if self.policy.reproducible:
            # One worker and a deterministic-time budget: the same input gives the same answer on any
            # machine load; the wall-clock limit stays as a safety net.
            s.parameters.num_workers = 1
            s.parameters.max_deterministic_time = max(0.01, seconds)
        else:
            s.parameters.num_workers = self.policy.workers
        return s

    def run(self, build_s: float) -> CpsatResult:
        m, proto = self.m, self.m.proto
        t_solve = time.perf_counter()
        # Reproducible runs budget the stages in deterministic time, a fixed share of the time limit
        # (never the wall time left after building, which depends on the machine's load).
        self.det_left = self.policy.time_limit_s * DET_SHARE if self.policy.reproducible else None
        self.deterministic = True
        left = self._left()
        # What the built model is (its size; exact, or what it approximates) holds whatever the search finds.
        result = partial(
            CpsatResult,
            build_s=build_s,
            variables=len(proto.variables),
            constraints=len(proto.constraints),
            classes=len(self.classes),
            exact=self.b.exact,
            approximations=list(self.b.approximations),
        )
        if left <= 0.02 or self.b.deadline - time.perf_counter() <= 0.02:
            return result(None, "NO_TIME")
        m.maximize(self.level1)
        s1 = self._solver(left * 0.7)
        st1 = s1.solve(m)
        self._spend(s1, st1)
        name1 = s1.status_name(st1)
        if st1 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return result(None, name1, solve_s=time.perf_counter() - t_solve)
        v1 = round(s1.objective_value)
        # Level 1 sums whole weights, so its bound is the whole number below CP-SAT's float (with a hair for
        # its LP's noise): one worker on the same model has reported 1519.0 and 1519.0000000000002 in
        # turn, which made a reproducible decision's stats differ between two calls.
        bound = float(math.floor(s1.best_objective_bound + 1e-6))
        values = self._values(s1)
        status = name1
        # Whether every level the model scores was solved to optimality: level 1 (just now), the eviction
        # cost when there are evictions to weigh, and preferences with best fit when there are preferences
        # (a level that did not run for lack of time is not proven).
        proven = st1 == cp_model.OPTIMAL
        m.add(self.level1 >= v1)
        # Eviction cost (work thrown away), minimized under level 1 held at what was found.
        left = self._left()
        if self.e and left > 0.05:
            m.clear_hints()
            for v, val in values.items():
                m.add_hint(v, val)
            m.minimize(self.level_cost)
            sc = self._solver(left * 0.6, presolve=False)
            stc = sc.solve(m)
            self._spend(sc, stc)
            if stc in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = self._values(sc)
                m.add(self.level_cost <= round(sc.objective_value))
                if stc != cp_model.OPTIMAL:
                    status = "FEASIBLE"
            proven &= stc == cp_model.OPTIMAL
        elif self.e:
            proven = False
        # Level 2-3 under the levels above held at what was found.
        left = self._left()
        improves = False
        if left > 0.05:
            m.clear_hints()
            for v, val in values.items():
                m.add_hint(v, val)
            # Preferences, then compactness (racks a job spans beyond one), then best fit.
            secondary = (self.level2 * self.compact_max - self.compact) * self.l3_max - self.level3
            m.maximize(secondary)
            # When the cost term has a solve of its own, this one leaves it half of the time.
            s2 = self._solver(left * 0.5 if self.money_varies else left, presolve=False)
            st2 = s2.solve(m)
            self._spend(s2, st2)
            proven &= st2 == cp_model.OPTIMAL or not self.l2_terms
            if st2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = self._values(s2)
                values = self._cheapest(values)
                greedy = self._secondary(self.hint_values) if self.hint_ok else None
                improves = greedy is None or self._secondary(values) > greedy
        elif self.l2_terms:
            proven = False
        assignment = self._realize(values)
        return result(
            assignment,
            status if assignment is not None else "REALIZE_FAILED",
            bound=bound,
            solve_s=time.perf_counter() - t_solve,
            improves_secondary=improves,
            proven=proven and self.b.exact,
            eviction_cost=sum(v.cost for v in self.b.victims if v.id in self.e and values[self.e[v.id]]),
            deterministic=self.deterministic,
        )

    def _values(self, s: cp_model.CpSolver) -> dict[cp_model.IntVar, int]:
        out = {v: int(s.value(v)) for v in self.placed.values()}
        out.update({v: int(s.value(v)) for v in self.z.values()})
        out.update({v: int(s.value(v)) for v in self.x.values()})
        out.update({v: int(s.value(v)) for v in self.bvars.values()})
        out.update({v: int(s.value(v)) for v in self.a.values()})
        out.update({v: int(s.value(v)) for v in self.y.values()})
        out.update({v: int(s.value(v)) for v in self.e.values()})
        out.update({v: int(s.value(v)) for v in self.on.values()})
        out.update({v: int(s.value(v)) for v in self.r.values()})
        out.update({v: int(s.value(v)) for v in self.s.values()})
        return out

    def _cheapest(self, values: dict[cp_model.IntVar, int]) -> dict[cp_model.IntVar, int]:
        """The cost term: with preferences (level 2) held at what ``values`` reach, minimize the dollars per
        hour of the decision, then fragmentation. Skipped when no unit's options differ in price or no
        time is left (``values`` stand)."""
        left = self._left()
        if not self.money_varies or left <= 0.05:
            return values
        m = self.m
        if self.l2_terms:
            m.add(self.level2 >= value(self.l2_terms, values))
        if self.compact_terms:
            m.add(self.compact <= value(self.compact_terms, values))
        m.clear_hints()
        for v, val in values.items():
            m.add_hint(v, val)
        # Money first, fragmentation second; both fit exactly in a double (CP-SAT reports objectives as
        # doubles) unless the batch is huge, and then money alone is minimized.
        if (self.money_max + 1) * self.l3_max < 2**52:
            m.minimize(self.level_money * self.l3_max + self.level3)
        else:
            m.minimize(self.level_money)
        s = self._solver(left, presolve=False)
        st = s.solve(m)
        self._spend(s, st)
        return self._values(s) if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else values

    def _secondary(self, values: dict[cp_model.IntVar, int]) -> tuple[int, int, int, int]:
        """Levels 2, compactness, cost and 3 of an answer (model values, or greedy's hint), as a tuple that
        is larger for the better answer: more preference, then fewer racks beyond one per job, then fewer
        dollars, then fewer GPUs left free."""
        return (
            value(self.l2_terms, values),
            -value(self.compact_terms, values),
            -value(self.money_all, values),
            -value(self.l3_terms, values),
        )
