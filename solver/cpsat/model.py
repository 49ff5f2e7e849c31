"""CP-SAT, stage 2 — build: one model for the whole batch, started from greedy's answer.

Variables (see ``docs/solver.md`` for the algebra):

* ``placed[p]`` — job ``p`` runs (all replicas or none: gangs are all-or-nothing);
* ``z[c, k]`` — how many nodes of class ``c`` use packing pattern ``k`` (at most the class's count; for a
  greedy packing that fits the class only on the node greedy used, at most that many nodes, and those);
* ``x[u, c]`` — how many replicas of unit ``u`` go to class ``c``; per class and item type, replicas never
  exceed the slots the chosen patterns provide;
* ``b[p, d]`` — gang ``p`` is confined to scope domain ``d`` (rack, block, zone, NVLink domain);
* ``a[u, s]`` — TPU replica of unit ``u`` takes slice ``s``; slices sharing a chip exclude each other;
* ``y[u, n]``, ``e[v]`` — replicas on a node with eviction candidates, modelled one by one; running job ``v``
  evicted (a slice on chips ``v`` holds needs ``e[v]``).
* ``r[p, rack]``, ``s[p]`` — job ``p`` (more than one node replica) has a replica in that rack; the racks it
  uses beyond one (compactness, scored after preferences);
* ``on[p, n]`` — job ``p`` has a replica on such a node (for anti-affinity between jobs of the batch there;
  exclusive units there have 0/1 ``y`` of their own).

Objective, lexicographic by successive solves: (1) maximize priority-weighted demand placed; then, with
(1) held at the value found, minimize the eviction cost; then (2) maximize preference score, then fewer
racks per multi-node job, and (3) minimize GPUs left free on the nodes touched (best fit, so whole nodes
and NVLink domains stay whole for big jobs); then, when some unit's options differ in price, with (2)
and compactness held, minimize the decision's dollars per hour (the cost term: integer money units per
replica, :mod:`placer.solver.objective.cost`) and then (3) again.

Budgets are constraints: a group's jobs and GPUs (``Job.throttle``, ``Job.limits``), a queue's GPUs
(thousandths) and GPU jobs (OJS ML §10.3), and a queue's or tenant's dollars per hour (money units: each
replica variable weighted by what one replica costs in that class, on that node, or on that TPU slice),
running jobs included and evictions giving back (not for groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from placer.solver.apart import one_of_each
from placer.solver.budgets import RESOURCES, flavor_amounts, job_groups
from placer.solver.cpsat.classes import NodeClass
from placer.solver.cpsat.hint import Hinting
from placer.solver.cpsat.parts import Expr, NodeUnit, Seeds, Slice, held_on, need_vec, weighted
from placer.solver.cpsat.patterns import ItemType, Pattern
from placer.solver.cpsat.realize import Realizing
from placer.solver.cpsat.search import Searching
from placer.solver.demand import Unit
from placer.solver.jobs.flavors import FLAVOR_RESOURCES
from placer.solver.preempt import evict_rank
from placer.solver.snapshot import scope_value
from placer.solver.tpu_shapes import host_chips

if TYPE_CHECKING:  # the builder makes the model: a name for the annotation only
    from placer.solver.budgets import Budgets
    from placer.solver.cohorts import CohortTree
    from placer.solver.cpsat.reduce import Builder

__all__ = ["Model"]

#: Gang scopes whose one domain lies inside one rack: compactness has nothing to count for them.
_WITHIN_A_RACK = {"node", "rack", "nvlink_domain"}


class Model(Hinting, Searching, Realizing):
    """The model of one batch: variables, constraints and objective levels (this module); its hint
    (:mod:`~placer.solver.cpsat.hint`), solves (:mod:`~placer.solver.cpsat.search`) and realization
    (:mod:`~placer.solver.cpsat.realize`) are stages of their own."""

    def __init__(
        self,
        b: Builder,
        ids: list[int],
        node_units: list[NodeUnit],
        tpu_units: list[tuple[int, int, Unit]],
        classes: list[NodeClass],
        types: list[ItemType],
        patterns: dict[int, list[Pattern]],
        tpu_slices: dict[tuple[int, int], list[Slice]],
        seeds: Seeds,
        pins: dict[tuple[int, int], list[int]],
    ):
        self.b, self.m, self.plans, self.policy = b, b.m, b.plans, b.policy
        self.ids, self.node_units, self.tpu_units = ids, node_units, tpu_units
        self.classes, self.types, self.patterns, self.tpu_slices = classes, types, patterns, tpu_slices
        #: Patterns (class, index) real only on the nodes greedy used them on: used on those nodes only.
        self.pins = pins
        m = self.m
        self.placed = {p: m.new_bool_var(f"placed[{p}]") for p in ids}
        # Jobs kept apart on a zone or rack, or whose topology spread counts each other: at most one of
        # each pair placed (solver/apart.py).
        for p, others in one_of_each(self.plans, ids).items():
            for q in sorted(others):
                if p < q and q in self.placed:
                    m.add(self.placed[p] + self.placed[q] <= 1)
        self.z: dict[tuple[int, int], cp_model.IntVar] = {}
        for c, pats in patterns.items():
            cnt = classes[c].count
            zs = []
            for k in range(len(pats)):
                v = m.new_int_var(0, len(pins[(c, k)]) if (c, k) in pins else cnt, f"z[{c},{k}]")
                self.z[(c, k)] = v
                zs.append(v)
            m.add(sum(zs) <= cnt)
        self.x: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self.y: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self.y_ub: dict[tuple[int, int, int], int] = {}
        slots: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        for k, nu in enumerate(node_units):
            if k % 256 == 0:
                b._tick()
            xs = []
            for c in nu.classes:
                v = m.new_int_var(0, nu.unit.replicas, f"x[{nu.p},{nu.ui},{c}]")
                self.x[(nu.p, nu.ui, c)] = v
                xs.append(v)
                slots.setdefault((c, nu.type_idx), []).append(v)
            # One replica per node: distinct replicas, self-anti-affinity, and exclusive units (greedy closes
            # a node after one exclusive replica, and realization takes replicas as greedy does).
            one = nu.unit.distinct or nu.p in b.self_anti or nu.unit.exclusive
            cap = 1 if one else nu.unit.replicas
            for n in nu.direct:
                name = f"y[{nu.p},{nu.ui},{n}]"
                v = m.new_bool_var(name) if one else m.new_int_var(0, cap, name)
                self.y[(nu.p, nu.ui, n)] = v
                self.y_ub[(nu.p, nu.ui, n)] = cap
                xs.append(v)
            m.add(sum(xs) == nu.unit.replicas * self.placed[nu.p])
        for (c, t), xs in slots.items():
            supply = [cnt * self.z[(c, k)] for k, pat in enumerate(patterns[c]) for ti, cnt in pat if ti == t]
            m.add(sum(xs) <= sum(supply))
        # Gang scopes.
        self.bvars: dict[tuple[int, str], cp_model.IntVar] = {}
        by_plan: dict[int, list[NodeUnit]] = {}
        for nu in node_units:
            by_plan.setdefault(nu.p, []).append(nu)
        for p, nus in by_plan.items():
            scope = self.plans[p].scope
            if scope is None:
                continue
            snap = b.snap
            # A node without a value of the scope belongs to no domain: it may hold a gang of one replica
            # (one node satisfies every scope) but no part of a bigger one, as greedy and rule 12 say.
            single = sum(nu.unit.replicas for nu in nus) <= 1
            domains = sorted(
                {str(classes[c].scopes[scope]) for nu in nus for c in nu.classes}
                | {str(scope_value(snap, n, scope)) for nu in nus for n in nu.direct}
            )
            bs = {d: m.new_bool_var(f"b[{p},{d}]") for d in domains}
            self.bvars.update({(p, d): v for d, v in bs.items()})
            m.add(sum(bs.values()) == self.placed[p])
            for nu in nus:
                for n in nu.direct:
                    value = scope_value(snap, n, scope)
                    if value is None and not single:
                        m.add(self.y[(p, nu.ui, n)] == 0)
                    m.add(self.y[(p, nu.ui, n)] <= nu.unit.replicas * bs[str(value)])
                for c in nu.classes:
                    value = classes[c].scopes[scope]
                    if value is None and not single:
                        m.add(self.x[(p, nu.ui, c)] == 0)
                    m.add(self.x[(p, nu.ui, c)] <= nu.unit.replicas * bs[str(value)])
        self._domain_counts(node_units)
        self._compactness(by_plan)
        # TPU slices; a slice on chips of running jobs needs their eviction (``_evictions``).
        self.a: dict[tuple[int, int, int], cp_model.IntVar] = {}
        #: Per victim, the slices (plan, unit, slice index) that need its eviction.
        self.tpu_needs: dict[str, list[tuple[int, int, int]]] = {}
        covering: dict[tuple[int, tuple[int, ...]], list[cp_model.IntVar]] = {}
        for p, ui, u in tpu_units:
            vs = []
            for s_idx, s in enumerate(tpu_slices[(p, ui)]):
                v = m.new_bool_var(f"a[{p},{ui},{s_idx}]")
                self.a[(p, ui, s_idx)] = v
                vs.append(v)
                for vid in s.victims:
                    self.tpu_needs.setdefault(vid, []).append((p, ui, s_idx))
                # A dedicated slice owns its hosts whole: it excludes every slice touching them.
                owned = host_chips(b.snap.pods[s.pod].pod, s.chips) if u.exclusive else s.chips
                for chip in owned:
                    covering.setdefault((s.pod, chip), []).append(v)
            m.add(sum(vs) == u.replicas * self.placed[p])
        for vs in covering.values():
            if len(vs) > 1:
                m.add_at_most_one(vs)
        self._evictions(node_units)
        self._money_terms()
        self._budgets()
        self._money_budgets()
        # Objective levels, each a list of (variable, coefficient) so that any answer can be scored.
        self.level1 = sum(self.plans[p].weight * self.placed[p] for p in ids)
        self.l2_terms = [
            (self.x[(nu.p, nu.ui, c)], int(nu.pref[classes[c].rep])) for nu in node_units for c in nu.classes
        ]
        self.l3_terms = [
            (self.z[(c, k_idx)], max(0, classes[c].gpus - sum(types[t].gpus * k for t, k in pat)))
            for c, pats in patterns.items()
            for k_idx, pat in enumerate(pats)
        ]
        self.level2 = weighted(self.l2_terms)
        self.compact = weighted(self.compact_terms)
        self.level3 = weighted(self.l3_terms)
        self.level_money = weighted(self.money_all)
        self.l3_max = sum(cl.count * max(cl.gpus, 1) for cl in classes) + 1
        self._hint(seeds, by_plan)

    def _compactness(self, by_plan: dict[int, list[NodeUnit]]) -> None:
        """The compactness part of level 3 (``docs/solver.md``): per job with more than one node replica,
        ``r[p, rack]`` says it has a replica in that rack (classes are split by rack when such a job is in
        the batch: ``reduce.py``), and ``s[p] >= sum(r) - placed[p]`` counts the racks it uses beyond one,
        as the ``Score`` does. Nodes without a rack take no part (the ``Score`` then counts nothing for
        the job; the model counts the racks it does use). ``compact_max`` bounds the sum."""
        m, classes, snap = self.m, self.classes, self.b.snap
        self.r: dict[tuple[int, str], cp_model.IntVar] = {}
        self.s: dict[int, cp_model.IntVar] = {}
        self.compact_terms: list[tuple[cp_model.IntVar, int]] = []
        self.compact_max = 1
        for p, nus in by_plan.items():
            replicas = sum(nu.unit.replicas for nu in nus)
            scope = self.plans[p].scope
            if replicas < 2 or (scope is not None and _WITHIN_A_RACK & set(scope.split("+"))):
                continue  # one node, or held to one rack or less by its scope (``b`` above)
            uses: list[tuple[cp_model.IntVar, int, str]] = []
            for nu in nus:
                for c in nu.classes:
                    rack = classes[c].scopes.get("rack")
                    if rack is not None:
                        uses.append((self.x[(p, nu.ui, c)], nu.unit.replicas, rack))
                for n in nu.direct:
                    rack = snap.nodes[n].node.rack
                    if rack is not None:
                        uses.append((self.y[(p, nu.ui, n)], nu.unit.replicas, rack))
            racks = sorted({rack for _, _, rack in uses})
            if len(racks) < 2:
                continue
            rv = {rack: m.new_bool_var(f"r[{p},{rack}]") for rack in racks}
            for v, ub, rack in uses:
                m.add(v <= ub * rv[rack])
            extra = m.new_int_var(0, len(racks) - 1, f"s[{p}]")
            m.add(extra >= sum(rv.values()) - self.placed[p])
            self.r.update({(p, rack): v for rack, v in rv.items()})
            self.s[p] = extra
            self.compact_terms.append((extra, 1))
            self.compact_max += len(racks) - 1

    def _evictions(self, node_units: list[NodeUnit]) -> None:
        """Eviction variables and the capacity of nodes modelled one by one.

        On a node with eviction candidates, for every priority level L of the units that may go there, the
        units of priority <= L use at most the free amount plus what victims of priority < L free: capacity a
        victim frees is usable only by strictly higher-priority work. A TPU slice on chips of running jobs
        takes it only if they are evicted (``a[u, s] <= e[v]``; such slices are offered only to units that
        outrank every job holding their chips, and two slices never share a chip). A victim is evicted only
        if such work lands on one of its nodes or takes its chips (gangs: all it holds is freed at once).
        """
        b, m = self.b, self.m
        self.e: dict[str, cp_model.IntVar] = {}
        #: ``on[p, n]``: job ``p`` is on node ``n`` (modelled one by one): anti-affinity (``_node_rules``).
        self.on: dict[tuple[int, int], cp_model.IntVar] = {}
        self.level_cost: Expr = 0
        if not self.y and not self.tpu_needs:
            return
        on_node: dict[int, list[NodeUnit]] = {}
        for nu in node_units:
            for n in nu.direct:
                on_node.setdefault(n, []).append(nu)
        used = {v.id: v for n in on_node for v in b.direct[n]}
        used.update({v.id: v for v in b.victims if v.id in self.tpu_needs})
        self.e = {vid: m.new_bool_var(f"e[{vid}]") for vid in sorted(used)}
        for vid, keys in self.tpu_needs.items():
            for key in keys:
                m.add(self.a[key] <= self.e[vid])
        arrays = b.arrays
        snap = b.snap
        for k, (n, nus) in enumerate(sorted(on_node.items())):
            if k % 32 == 0:
                b._tick()
            extra = tuple(sorted({name for nu in nus for name, _ in nu.unit.need.extra}))
            free = (
                arrays.gpus[n],
                arrays.cpu[n],
                arrays.mem[n],
                arrays.storage[n],
                arrays.shm[n],
                *(arrays.extra_free(name)[n] for name in extra),
            )
            held = {v.id: held_on(v, snap.nodes[n].name, extra) for v in b.direct[n]}
            rows = []
            for nu in nus:
                y = self.y[(nu.p, nu.ui, n)]
                rows.append(
                    (
                        evict_rank(self.plans[nu.p].job),
                        need_vec(nu.unit, extra),
                        y,
                        self.y_ub[(nu.p, nu.ui, n)],
                    )
                )
            # Levels that free the same victims need only their highest row (it contains the others).
            levels = sorted({rk for rk, _, _, _ in rows})
            top_of: dict[frozenset[str], int] = {}
            for level in levels:
                top_of[frozenset(v.id for v in b.direct[n] if v.rank < level)] = level
            for level in sorted(top_of.values()):
                group = [(need, y, ub) for rk, need, y, ub in rows if rk <= level]
                freed = [v for v in b.direct[n] if v.rank < level]
                for r in range(len(free)):
                    if not np.isfinite(free[r]):
                        continue
                    worst = sum(need[r] * ub for need, _, ub in group)
                    if worst <= free[r] + 1e-9:
                        continue  # cannot bind: even every replica there fits the free amount
                    # Fractional cores/GB: thousandths, rounded safely; whole GPUs and extended resources
                    # (counts, or bytes of huge pages) as they are.
                    scale = 1 if r == 0 or r >= 5 else 1000
                    terms = [(y, int(np.ceil(need[r] * scale - 1e-6))) for need, y, _ in group if need[r]]
                    terms += [(self.e[v.id], -int(np.floor(held[v.id][r] * scale + 1e-6))) for v in freed]
                    cap = int(np.floor(float(free[r]) * scale + 1e-6))
                    m.add(
                        cp_model.LinearExpr.weighted_sum([t[0] for t in terms], [t[1] for t in terms]) <= cap
                    )
            # Self-anti-affinity: one replica of such a job per node, over its units.
            for p in {nu.p for nu in nus if nu.p in b.self_anti}:
                m.add(sum(self.y[(nu.p, nu.ui, n)] for nu in nus if nu.p == p) <= 1)
            self._node_rules(n, nus)
        for vid, ev in self.e.items():
            v = used[vid]
            helpers = [
                self.y[(nu.p, nu.ui, n)]
                for n in v.nodes
                for nu in on_node.get(n, [])
                if evict_rank(self.plans[nu.p].job) > v.rank
            ]
            helpers += [self.a[key] for key in self.tpu_needs.get(vid, [])]
            if helpers:
                m.add(ev <= sum(helpers))
            else:
                m.add(ev == 0)
        self.level_cost = sum(round(used[vid].cost) * ev for vid, ev in self.e.items())

    def _node_rules(self, n: int, nus: list[NodeUnit]) -> None:
        """Per-node rules on a node modelled one by one (``nus``: the units offered it), which its capacity
        rows do not express: anti-affinity between jobs of the batch and exclusive units. Without them such
        units could not be offered these nodes, and greedy's answer, which evicts for them, was no solution
        of the model (scenario M: 137 jobs, about 9 % of its objective, beyond the model's reach).

        * ``on[p, n]``: job ``p`` has a replica on ``n`` (only for jobs in a conflict here); a job with
          anti-affinity rules present excludes every job it conflicts with (either job's rules matching the
          other's labels): one enforced constraint per such job and node, not one per pair.
        * An exclusive replica (``y`` is then 0/1) excludes every other replica on the node and needs every
          running job there evicted (``_direct_nodes`` offers it only nodes whose running jobs are all
          victims it outranks).

        Running jobs' anti-affinity is not here: nodes with a running job the unit's rules match are never
        offered it (evicting that job does not lift the rule, as in greedy)."""
        b, m = self.b, self.m
        here = {nu.p for nu in nus}
        rules = sorted(p for p in here if self.plans[p].anti and b.conflicts.any_in(p, here))
        against = {p: b.conflicts.among(p, here) for p in rules}
        involved = set(rules) | {q for p in rules for q in against[p]}
        on: dict[int, cp_model.IntVar] = {}
        for p in sorted(involved):
            w = m.new_bool_var(f"on[{p},{n}]")
            ys = [(self.y[(nu.p, nu.ui, n)], self.y_ub[(nu.p, nu.ui, n)]) for nu in nus if nu.p == p]
            for y, ub in ys:
                m.add(y <= ub * w)
            m.add(sum(y for y, _ in ys) >= w)
            on[p] = self.on[(p, n)] = w
        for p in rules:
            m.add(sum(on[q] for q in against[p]) == 0).only_enforce_if(on[p])
        running = set(b.snap.nodes[n].running)
        for nu in nus:
            if not nu.unit.exclusive:
                continue
            y = self.y[(nu.p, nu.ui, n)]
            rank = evict_rank(self.plans[nu.p].job)
            freed = [v for v in b.direct[n] if v.rank < rank]
            if not running <= {v.id for v in freed}:
                m.add(y == 0)  # a running job that stays (only a hinted node could be offered so)
                continue
            rest = [self.y[(o.p, o.ui, n)] for o in nus if o is not nu]
            if rest:
                m.add(sum(rest) == 0).only_enforce_if(y)
            for v in freed:
                m.add_implication(y, self.e[v.id])

    def _money_terms(self) -> None:
        """Per plan, (variable, money units per hour of one replica there) for every replica variable: a
        class (priced on its representative: a class's nodes cost the same), a node modelled one by one,
        a TPU slice. ``money_varies``: whether any unit's options differ in price (else the cost term
        cannot change anything and its solve is skipped)."""
        self.money: dict[int, list[tuple[cp_model.IntVar, int]]] = {}
        self.money_all: list[tuple[cp_model.IntVar, int]] = []
        self.money_varies = False
        #: An upper bound on the money term (every replica variable at its most expensive option).
        self.money_max = 0
        pricing = self.b.pricing
        if pricing is None:
            return
        for nu in self.node_units:
            terms = [
                (
                    self.x[(nu.p, nu.ui, c)],
                    pricing.on_node(self.classes[c].rep, nu.unit.need, nu.unit.exclusive),
                )
                for c in nu.classes
            ]
            terms += [
                (self.y[(nu.p, nu.ui, n)], pricing.on_node(n, nu.unit.need, nu.unit.exclusive))
                for n in nu.direct
            ]
            self.money.setdefault(nu.p, []).extend(terms)
            self.money_varies |= len({k for _, k in terms}) > 1
            self.money_max += nu.unit.replicas * max((k for _, k in terms), default=0)
        for p, ui, u in self.tpu_units:
            terms = [
                (self.a[(p, ui, s_idx)], pricing.on_pod(s.pod, len(s.chips)))
                for s_idx, s in enumerate(self.tpu_slices[(p, ui)])
            ]
            self.money.setdefault(p, []).extend(terms)
            self.money_varies |= len({k for _, k in terms}) > 1
            self.money_max += u.replicas * max((k for _, k in terms), default=0)
        self.money_all = [t for p in sorted(self.money) for t in self.money[p]]

    def _money_budgets(self) -> None:
        """Dollar budgets: per queue (``max_cost_per_hour``) and per tenant, the money units per hour of the
        replicas placed stay within what running jobs leave, plus what evictions of their jobs give back."""
        budgets = self.b.budgets
        if budgets is None or not budgets.money or not self.money:
            return
        groups: dict[tuple[str, str], list[int]] = {}
        for p in self.ids:
            job = self.plans[p].job
            if job.queue is not None and job.queue in budgets.max_cost:
                groups.setdefault(("queue", job.queue), []).append(p)
            if job.tenant is not None and job.tenant in budgets.tenant_max_cost:
                groups.setdefault(("tenant", job.tenant), []).append(p)
        vrank = {v.id: v.rank for v in self.b.victims}
        for (kind, name), ps in sorted(groups.items()):
            used = [(evict_rank(self.plans[p].job), weighted(self.money[p])) for p in ps if self.money.get(p)]
            if not used:
                continue
            at = 0 if kind == "queue" else 1
            room = budgets.cost_room(*((name, None) if kind == "queue" else (None, name)))[at]
            assert room is not None
            back = [
                (vrank[vid], units * self.e[vid])
                for vid, (q, t, units) in budgets.running_cost.items()
                if vid in self.e
                and (q if kind == "queue" else t) == name
                and units
                and (kind != "queue" or vid not in budgets.no_queue_credit)
            ]
            self._within_by_rank(used, room, back)

    def _budgets(self) -> None:
        """Queue GPU budgets (OJS ML §10.3): a queue's placed GPUs (in thousandths) and GPU jobs stay within
        what its running jobs leave, plus what evictions of its own running jobs give back. Throttles: a
        group's placed jobs stay within what its running jobs leave."""
        budgets = self.b.budgets
        if budgets is None or not budgets.active:
            return
        by_group: dict[str, list[int]] = {}
        by_gpu_group: dict[str, list[int]] = {}
        for p in self.ids:
            for g, most, gpus in job_groups(self.plans[p].job):
                if most is not None and g in budgets.throttle_max:
                    by_group.setdefault(g, []).append(p)
                if gpus is not None and g in budgets.group_gpu_max:
                    by_gpu_group.setdefault(g, []).append(p)
        for name in budgets.license_max:  # a licence's seats: what running jobs hold and what starts
            seats = {
                p: self.plans[p].job.licenses[name] for p in self.ids if name in self.plans[p].job.licenses
            }
            if seats:
                left = budgets.license_max[name] - budgets.license_used.get(name, 0)
                self.m.add(sum(n * self.placed[p] for p, n in seats.items()) <= max(0, left))
        for g, ps in by_group.items():  # a group's job limit: its running jobs and what starts, at most N
            m_room = budgets.throttle_max[g] - budgets.throttle_used.get(g, 0)
            self.m.add(sum(self.placed[p] for p in ps) <= max(0, m_room))
        for g, ps in by_gpu_group.items():  # its GPU limit, in thousandths: running jobs' and what starts
            milli = self._gpu_milli(ps)
            if milli:
                room = budgets.group_gpu_max[g] - budgets.group_gpu_used.get(g, 0.0)
                m_room = max(0, int(np.floor(room * 1000 + 1e-6)))
                self.m.add(sum(m * self.placed[p] for p, m in milli.items()) <= m_room)
        by_queue: dict[str, list[int]] = {}
        for p in self.ids:
            q = self.plans[p].job.queue
            if q is not None and (q in budgets.max_gpus or q in budgets.max_jobs):
                by_queue.setdefault(q, []).append(p)
        for q, ps in by_queue.items():
            milli = self._gpu_milli(ps)
            gpu_ps = list(milli)
            if not gpu_ps:
                continue
            room_gpus, room_jobs = budgets.room(q)
            vrank = {v.id: v.rank for v in self.b.victims}
            back = [
                (vid, budgets.running[vid][1])
                for vid in budgets.credited(self.e)
                if budgets.running.get(vid, ("", 0))[0] == q
            ]
            ranks = {p: evict_rank(self.plans[p].job) for p in gpu_ps}
            if room_gpus is not None:
                self._within_by_rank(
                    [(ranks[p], milli[p] * self.placed[p]) for p in gpu_ps],
                    int(np.floor(room_gpus * 1000 + 1e-6)),
                    [(vrank[vid], round(g * 1000) * self.e[vid]) for vid, g in back],
                )
            if room_jobs is not None:
                self._within_by_rank(
                    [(ranks[p], self.placed[p]) for p in gpu_ps],
                    room_jobs,
                    [(vrank[vid], self.e[vid]) for vid, _ in back],
                )
        self._cohorts(budgets)
        if budgets.cohort_tree is not None:
            self._cohort_tree(budgets)
        if budgets.resources:
            self._resource_budgets(budgets)
        if budgets.res_trees:
            self._resource_trees(budgets)
        if budgets.flavor_limits:
            self._flavor_budgets(budgets)

    def _flavor_budgets(self, budgets: Budgets) -> None:
        """Per-flavor quotas: per queue, resource and flavor, what its units place of the resource on the
        flavor's nodes (thousandths: GPUs and shares exactly, cores and GB rounded up, a pod 1,000) —
        classes by their representative, classes being split by flavor (``reduce.py``), nodes modelled one
        by one by their own — stays within what its running jobs leave there (rounded down), plus what
        evictions of them give back, by rank as for the queue's budget."""
        snap, classes = self.b.snap, self.classes
        used: dict[tuple[str, str, str], list[tuple[int, Expr]]] = {}
        # A tree of cohorts on a flavor: per (resource, flavor), per queue its jobs, what they add, the most.
        trees: dict[tuple[str, str], dict[str, tuple[list[int], Expr, int]]] = {}
        for nu in self.node_units:
            q = self.plans[nu.p].job.queue
            if q is None or not budgets.flavored(q):
                continue
            amounts = [int(np.ceil(a * 1000 - 1e-6)) for a in flavor_amounts(nu.unit.need)]
            rank = evict_rank(self.plans[nu.p].job)
            at = [(classes[c].rep, self.x[(nu.p, nu.ui, c)]) for c in nu.classes]
            at += [(n, self.y[(nu.p, nu.ui, n)]) for n in nu.direct]
            for resource, amount in zip(FLAVOR_RESOURCES, amounts, strict=True):
                if not amount or (q, resource) not in budgets.flavor_group:
                    continue
                for n, var in at:
                    f = budgets.flavor_at(q, snap.nodes[n].node.labels, resource)
                    if f is None:
                        continue
                    used.setdefault((q, resource, f), []).append((rank, amount * var))
                    tree = budgets.flavor_trees.get((resource, f))
                    if tree is not None and q in tree.queues:
                        by_queue = trees.setdefault((resource, f), {})
                        ps, expr, most = by_queue.get(q, ([], 0, 0))
                        by_queue[q] = ([*ps, nu.p], expr + amount * var, most + amount * nu.unit.replicas)
        vrank = {v.id: v.rank for v in self.b.victims}
        cohorts: dict[tuple[str, str, str], list[tuple[int, Expr]]] = {}
        for (q, resource, f), terms in used.items():
            cohort = budgets.flavor_cohort.get(q)
            if (cohort, resource, f) in budgets.cohort_flavor_max:
                cohorts.setdefault((cohort, resource, f), []).extend(terms)  # type: ignore[arg-type]
            if (q, resource, f) not in budgets.flavor_max:
                continue  # its cohort's total on the flavor only
            back = [
                (vrank[vid], int(np.floor(1000 * held + 1e-6)) * self.e[vid])
                for vid, held in budgets.flavor_back(q, resource, f, budgets.credited(self.e)).items()
            ]
            room = int(np.floor(budgets.flavor_room(q, resource, f) * 1000 + 1e-6))
            self._within_by_rank(terms, room, back)
        for (cohort, resource, f), terms in cohorts.items():  # a cohort's total on a flavor, over its queues
            credited = budgets.credited(self.e, cohort=True)
            back = [
                (vrank[vid], int(np.floor(1000 * held + 1e-6)) * self.e[vid])
                for vid, held in budgets.cohort_flavor_back(cohort, resource, f, credited).items()
            ]
            room = int(np.floor(budgets.cohort_flavor_room(cohort, resource, f) * 1000 + 1e-6))
            self._within_by_rank(terms, room, back)
        for (resource, f), placed in trees.items():  # the tree's rules on the flavor (:meth:`_tree_rows`)
            tree = budgets.flavor_trees[(resource, f)]
            held = {q: budgets.flavor_used.get((q, resource, f), 0.0) for q in tree.queues}
            self._tree_rows(tree, held, placed, f"{resource}_{f}")

    def _resource_budgets(self, budgets: Budgets) -> None:
        """Queue resource budgets (``max_total_cpu_cores``, ``max_total_memory_gb``, ``max_total_pods``), and
        a cohort's totals of them over its queues: the placed cores and GB on nodes and the pods (in
        thousandths, rounded up per job so the model never admits more than the budget) stay within what
        running jobs leave, plus what evictions of them give back, by rank as for GPUs. Every job of the
        queue counts, GPU or not."""
        groups: dict[tuple[str, str], list[int]] = {}  # ("queue" | "cohort", name) -> its jobs
        for p in self.ids:
            q = self.plans[p].job.queue
            if q is not None and q in budgets.res_max:
                groups.setdefault(("queue", q), []).append(p)
            if q is not None and q in budgets.res_cohort_of:
                groups.setdefault(("cohort", budgets.res_cohort_of[q]), []).append(p)
        vrank = {v.id: v.rank for v in self.b.victims}
        for (kind, name), ps in groups.items():
            if kind == "queue":
                rooms = budgets.resource_room(name)
                inside = {name}
            else:
                rooms = budgets.cohort_resource_room(name)
                inside = {q for q, c in budgets.res_cohort_of.items() if c == name}
            ranks = {p: evict_rank(self.plans[p].job) for p in ps}
            back = [
                (vid, budgets.running_res[vid])
                for vid in budgets.credited(self.e, cohort=kind == "cohort")
                if budgets.running_res.get(vid, ("",))[0] in inside
            ]
            for at, room in enumerate(rooms):
                if room is None:
                    continue
                amount = {p: self._resource_milli(p, at) for p in ps}
                used = [(ranks[p], amount[p] * self.placed[p]) for p in ps if amount[p] > 0]
                if not used:
                    continue
                if kind == "cohort" and any(k[at] for k in budgets.cohort_res_kept.get(name, {}).values()):
                    jobs = {p: (ranks[p], amount[p]) for p in ps if amount[p]}
                    self._kept_cohort(budgets, name, at, jobs, vrank)
                    continue
                self._within_by_rank(
                    used,
                    int(np.floor(room * 1000 + 1e-6)),
                    [
                        (vrank[vid], int(np.floor(1000 * res[1][at] + 1e-6)) * self.e[vid])
                        for vid, res in back
                    ],
                )

    def _resource_milli(self, p: int, at: int) -> int:
        """Thousandths of resource ``at`` (:data:`~placer.solver.budgets.RESOURCES`: cores and GB on nodes,
        rounded up; pods) that job ``p`` holds when placed."""
        return int(
            np.ceil(
                1000
                * sum(
                    u.replicas * (u.need.cpu, u.need.mem, 1.0)[at]
                    for u in self.plans[p].units
                    if u.tpu is None or at == 2  # a TPU replica is a pod, on no node
                )
                - 1e-6
            )
        )

    def _kept_cohort(
        self, budgets: Budgets, cohort: str, at: int, jobs: dict[int, tuple[int, int]], vrank: dict[str, int]
    ) -> None:
        """A cohort's total of resource ``at`` (:data:`~placer.solver.budgets.RESOURCES`) when some of its
        queues keep part of their quota (Kueue's ``lendingLimit``, ``Budgets.cohort_res_kept``): at every
        priority level ``r`` of the placed ``jobs`` (``p -> (rank, amount in thousandths)``; ``vrank``: the
        victims' ranks), the queues' ``max(held, kept)`` add up to at most the total, where a queue holds
        its running jobs, less the evictions of jobs ranked below ``r``, plus its placed jobs ranked ``r``
        or lower (what :meth:`_within_by_rank` says for a plain total). ``max`` is a variable per queue and
        level, at least each side. Running work alone over the total (quotas lowered) lets nothing more
        start at that level, as :meth:`_within` does."""
        kept = budgets.cohort_res_kept.get(cohort, {})
        members = sorted(q for q, c in budgets.res_cohort_of.items() if c == cohort)
        limit = budgets.cohort_res_max[cohort][at]
        assert limit is not None, "a queue keeps part of a cohort's total only where the cohort has one"
        total = int(np.floor(1000 * limit + 1e-6))
        by_queue: dict[str, list[int]] = {}
        for p in jobs:
            by_queue.setdefault(self.plans[p].job.queue or "", []).append(p)
        victims: dict[str, list[tuple[int, int, cp_model.IntVar]]] = {}
        for vid in budgets.credited(self.e, cohort=True):
            var = self.e[vid]
            held = budgets.running_res.get(vid)
            if held is not None and held[0] in members:
                amount = int(np.floor(1000 * held[1][at] + 1e-6))
                victims.setdefault(held[0], []).append((vrank[vid], amount, var))
        for r in sorted({rank for rank, _ in jobs.values()}):
            parts: list[Expr] = []
            alone = 0  # the sum with nothing placed and nothing evicted at this level
            level_ps = [p for p, (rank, _) in jobs.items() if rank <= r]
            for q in members:
                base = int(np.ceil(1000 * budgets.res_used.get(q, (0.0, 0.0, 0.0))[at] - 1e-6))
                k = int(np.ceil(1000 * kept.get(q, (0.0, 0.0, 0.0))[at] - 1e-6))
                ps = [p for p in by_queue.get(q, []) if jobs[p][0] <= r]
                back = [(a, v) for rank, a, v in victims.get(q, []) if rank < r]
                alone += max(base, k)
                if not ps and not back:
                    parts.append(max(base, k))
                    continue
                top = base + sum(jobs[p][1] for p in ps)
                m = self.m.new_int_var(k, max(k, top), f"kept_{cohort}_{at}_{q}_{r}")
                self.m.add(
                    m >= base + sum(jobs[p][1] * self.placed[p] for p in ps) - sum(a * v for a, v in back)
                )
                parts.append(m)
            if alone <= total:
                self.m.add(sum(parts) <= total)
                continue
            adds = self.m.new_bool_var(f"adds_{cohort}_{at}_{r}")
            self.m.add(sum(parts) <= total).only_enforce_if(adds)
            self.m.add(sum(self.placed[p] for p in level_ps) == 0).only_enforce_if(adds.negated())

    def _cohort_tree(self, budgets: Budgets) -> None:
        """Hierarchical cohorts (:mod:`placer.solver.cohorts`) of GPUs (:meth:`_tree_rows`)."""
        tree = budgets.cohort_tree
        assert tree is not None
        ps = [p for p in self.ids if (self.plans[p].job.queue or "") in tree.queues]
        held = {q: budgets.used_gpus.get(q, 0.0) for q in tree.queues}
        self._tree_rows(tree, held, self._placed_by_queue(self._gpu_milli(ps)), "gpus")

    def _resource_trees(self, budgets: Budgets) -> None:
        """Hierarchical cohorts of cores, GB and pods (:attr:`Budgets.res_trees`, :meth:`_tree_rows`)."""
        for at, tree in budgets.res_trees.items():
            ps = [p for p in self.ids if (self.plans[p].job.queue or "") in tree.queues]
            held = {q: budgets.res_used.get(q, (0.0, 0.0, 0.0))[at] for q in tree.queues}
            amounts = {p: self._resource_milli(p, at) for p in ps}
            placed = self._placed_by_queue({p: a for p, a in amounts.items() if a > 0})
            self._tree_rows(tree, held, placed, RESOURCES[at])

    def _placed_by_queue(self, milli: dict[int, int]) -> dict[str, tuple[list[int], Expr, int]]:
        """Per queue, its jobs of ``milli`` (each job's thousandths when placed), what they add when placed
        and at most."""
        out: dict[str, tuple[list[int], Expr, int]] = {}
        for p, amount in milli.items():
            ps, expr, top = out.get(self.plans[p].job.queue or "", ([], 0, 0))
            out[self.plans[p].job.queue or ""] = ([*ps, p], expr + amount * self.placed[p], top + amount)
        return out

    def _tree_rows(
        self,
        tree: CohortTree,
        held: dict[str, float],
        placed: dict[str, tuple[list[int], Expr, int]],
        what: str,
    ) -> None:
        """A tree's rules on one resource: per queue what it holds (thousandths: running ``held``, plus what
        its jobs of the batch add when placed, ``placed[q]``: the jobs, that sum and its most), per node
        what it uses beyond what it keeps (a variable at least that and at least 0), per cohort the sum of
        its children's, and each cohort's rule on it. Evictions give nothing back here (stricter than the
        rule, never looser); a rule that running work alone breaks (quotas lowered) lets nothing more start
        below it."""
        if not placed:
            return
        broken = set(tree.over(held))
        for c in broken:
            for q in tree.under(c):
                for p in placed.get(q, ([], 0, 0))[0]:
                    self.m.add(self.placed[p] == 0)

        def beyond(expr: Expr, top: int, kept: float, name: str) -> tuple[Expr, int]:
            k = round(kept * 1000)
            if isinstance(expr, int):
                return max(0, expr - k), max(0, top - k)
            e = self.m.new_int_var(0, max(0, top - k), name)
            self.m.add(e >= expr - k)
            return e, max(0, top - k)

        usage: dict[str, tuple[Expr, int]] = {}  # cohort -> (usage, its upper bound)
        for c in tree._bottom_up():
            parts: list[Expr] = []
            top = 0
            for q in tree.child_queues.get(c, []):
                base = round(held[q] * 1000)
                _, added, most = placed.get(q, ([], 0, 0))
                e, t = beyond(base + added, base + most, tree.queue_kept[q], f"tree_{what}_{q}")
                parts.append(e)
                top += t
            for k in tree.child_cohorts.get(c, []):
                e, t = beyond(usage[k][0], usage[k][1], tree.kept[k], f"tree_{what}_{k}")
                parts.append(e)
                top += t
            total: Expr = sum(parts)
            usage[c] = (total, top)
            cap = tree.capacity(c)
            if cap is None or c in broken or isinstance(total, int):
                continue
            counted = (
                total
                if tree.parent[c] is None
                else beyond(total, top, tree.kept[c], f"tree_{what}_{c}_out")[0]
            )
            self.m.add(counted <= int(np.floor(cap * 1000 + 1e-6)))

    def _gpu_milli(self, ps: list[int]) -> dict[int, int]:
        """GPU thousandths each of the jobs ``ps`` holds when placed (node units only), for those with any:
        what a GPU budget counts."""
        milli = {
            p: sum(
                u.replicas * (u.need.gpus * 1000 + u.need.milli) for u in self.plans[p].units if u.tpu is None
            )
            for p in ps
        }
        return {p: m for p, m in milli.items() if m > 0}

    def _cohorts(self, budgets: Budgets) -> None:
        """Cohort budgets: the GPUs (thousandths) placed in a cohort's queues stay within what the
        cohort's running jobs leave, plus what evictions of them give back (by rank, as a queue's)."""
        by_cohort: dict[str, list[int]] = {}
        for p in self.ids:
            c = budgets.cohort_of.get(self.plans[p].job.queue or "")
            if c is not None:
                by_cohort.setdefault(c, []).append(p)
        vrank = {v.id: v.rank for v in self.b.victims}
        for c, ps in by_cohort.items():
            milli = self._gpu_milli(ps)
            gpu_ps = list(milli)
            if not gpu_ps:
                continue
            room = budgets.cohort_max[c] - budgets.cohort_used.get(c, 0.0)
            back = [
                (vid, budgets.running[vid][1])
                for vid in budgets.credited(self.e, cohort=True)
                if budgets.cohort_of.get(budgets.running.get(vid, ("", 0))[0]) == c
            ]
            self._within_by_rank(
                [(evict_rank(self.plans[p].job), milli[p] * self.placed[p]) for p in gpu_ps],
                int(np.floor(room * 1000 + 1e-6)),
                [(vrank[vid], round(g * 1000) * self.e[vid]) for vid, g in back],
            )

    def _within_by_rank(
        self,
        used: Sequence[tuple[int, Expr]],
        room: int,
        back: Sequence[tuple[int, Expr]],
    ) -> None:
        """A budget at every priority level ``r`` of the jobs using it: what jobs of rank <= ``r`` take stays
        within the room plus what evictions of jobs ranked *below* ``r`` give back. Why per level: an
        eviction is allowed only for strictly higher-priority work (OJS ML §8), and budget room is no
        exception; one row would let a spot job use the budget a spot victim freed, so the model would
        evict spot work that some higher-priority job happens to use the node of, only to admit another
        spot job under the budget."""
        for r in sorted({rank for rank, _ in used}):
            self._within(
                sum(x for rank, x in used if rank <= r), room, sum(x for rank, x in back if rank < r)
            )

    def _domain_counts(self, node_units: list[NodeUnit]) -> None:
        """Flux levels above the node (:mod:`placer.solver.domains`): a unit asking for ``k`` domains of a
        level has ``replicas / k`` replicas in each of exactly ``k`` of them, ``d[p, ui, level, v]`` saying
        which; nodes in no domain of the level hold none. Classes are split by these levels, so a class
        lies in one domain (``reduce.py``)."""
        m = self.m
        #: ``(p, ui, level, value)`` -> the unit uses that domain.
        self.dvars: dict[tuple[int, int, str, str], cp_model.IntVar] = {}
        for nu in node_units:
            for level, k in nu.unit.domains:
                per = nu.unit.replicas // k
                uses = []
                for value, counts in self._per_domain(nu, level):
                    d = m.new_bool_var(f"d[{nu.p},{nu.ui},{level},{value}]")
                    self.dvars[(nu.p, nu.ui, level, value)] = d
                    m.add(sum(counts) == per * d)
                    uses.append(d)
                m.add(sum(uses) == k * self.placed[nu.p])
            if nu.unit.slices:
                self._slice_counts(nu, node_units)

    def _slice_counts(self, nu: NodeUnit, node_units: list[NodeUnit]) -> None:
        """Kueue slices above the node (``unit.slices``): each domain of the level holds a multiple of the
        slice size of the unit's replicas (``k[p, ui, level, value]`` slices there), nodes in none of them
        hold none. Classes are split by the level (``reduce.py``), so a class lies in one domain.

        Exclusive slices (``unit.exclusive_domains``, JobSet exclusive placement): ``k`` is 0 or 1, 0 in a
        domain where a running job holds any node (as greedy, such a domain is never taken by eviction),
        and a domain the unit takes holds no replica of any other unit of the batch:
        ``count[other, domain] <= replicas[other] x (1 - k)``."""
        assert nu.unit.slices is not None
        level, size = nu.unit.slices
        exclusive = nu.unit.exclusive_domains
        busy = self._busy_domains(level) if exclusive else set()
        others = [(o, self._counts_by_domain(o, level)) for o in node_units if exclusive and o is not nu]
        for value, counts in self._per_domain(nu, level):
            top = 0 if value in busy else 1 if exclusive else nu.unit.replicas // size
            k = self.m.new_int_var(0, top, f"k[{nu.p},{nu.ui},{level},{value}]")
            self.m.add(sum(counts) == size * k)
            if not exclusive or not top:
                continue
            for other, by_domain in others:
                inside = by_domain.get(value)
                if inside:
                    self.m.add(sum(inside) <= other.unit.replicas * (1 - k))

    def _busy_domains(self, level: str) -> set[str]:
        """The domains of ``level`` where a running job holds some node (an exclusive slice keeps off)."""
        snap = self.b.snap
        return {
            v
            for n in range(len(snap.nodes))
            if snap.nodes[n].running and (v := scope_value(snap, n, level)) is not None
        }

    def _counts_by_domain(self, nu: NodeUnit, level: str) -> dict[str | None, list[cp_model.IntVar]]:
        """The unit's replica counts (its classes' and its nodes' modelled one by one) by their domain of
        ``level`` (None: nodes in no domain of it)."""
        classes, snap = self.classes, self.b.snap
        counts: dict[str | None, list[cp_model.IntVar]] = {}
        for c in nu.classes:
            counts.setdefault(classes[c].scopes[level], []).append(self.x[(nu.p, nu.ui, c)])
        for n in nu.direct:
            counts.setdefault(scope_value(snap, n, level), []).append(self.y[(nu.p, nu.ui, n)])
        return counts

    def _per_domain(self, nu: NodeUnit, level: str) -> list[tuple[str, list[cp_model.IntVar]]]:
        """The unit's replica counts per domain of ``level`` (:meth:`_counts_by_domain`), domains in name
        order; the counts on nodes in no domain of the level are fixed to 0 here."""
        counts = self._counts_by_domain(nu, level)
        for v in counts.pop(None, []):
            self.m.add(v == 0)
        return [(value, counts[value]) for value in sorted(k for k in counts if k is not None)]

    def _within(self, used: Expr, room: int, back: Expr) -> None:
        """``used <= room + back`` (a budget's room left by running jobs, plus what evictions give back);
        when running jobs alone are over it (``room < 0``), adding nothing stays allowed: the model must
        not become infeasible over a budget this decision did not break."""
        if room >= 0:
            self.m.add(used <= room + back)
            return
        adds = self.m.new_bool_var("adds")
        self.m.add(used <= room + back).only_enforce_if(adds)
        self.m.add(used == 0).only_enforce_if(adds.negated())
