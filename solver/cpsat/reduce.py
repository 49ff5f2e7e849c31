"""CP-SAT, stage 1 — reduce: the batch and the cluster to classes, demand types and packing patterns.

This stage decides the model's size (its algebra is in :mod:`placer.solver.cpsat.model`). It builds the
node classes (:mod:`~placer.solver.cpsat.classes`: nodes interchangeable for the whole batch, with a
count), the item types and patterns per class (:mod:`~placer.solver.cpsat.patterns`), the nodes modelled
one by one (those with eviction candidates), the TPU slices offered, and greedy's answer in those terms
(seeds, for the hint), then hands all of it to :class:`~placer.solver.cpsat.model.Model`. A build that
runs into the deadline raises :class:`~placer.solver.cpsat.parts.Deadline`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from ortools.sat.python import cp_model

from placer.solver.assignment import Assignment
from placer.solver.budgets import Budgets
from placer.solver.candidates import NodeArrays, UnitCandidates, pod_admits
from placer.solver.cpsat.classes import NodeClass, build_classes
from placer.solver.cpsat.conflicts import Conflicts
from placer.solver.cpsat.model import Model
from placer.solver.cpsat.parts import (
    MAX_CPU_QUANTUM,
    MAX_TYPES,
    Deadline,
    NodeUnit,
    Seeds,
    Slice,
    TooBig,
    pref_codes,
    shaped_unit,
    up,
)
from placer.solver.cpsat.patterns import DFS_MAX_TYPES, ItemType, Pattern, patterns_for
from placer.solver.demand import JobPlan, Unit
from placer.solver.objective.cost import Pricing
from placer.solver.objective.preferences import beside_rules
from placer.solver.policy import Policy
from placer.solver.preempt import Victim, evict_rank
from placer.solver.rules import holds
from placer.solver.structure import request_text
from placer.solver.tpu_shapes import host_chips, tpu_shapes
from placer.topology.tpu import slices_in_pod

__all__ = ["Builder"]


class Builder:
    def __init__(
        self,
        plans: list[JobPlan],
        candidates: dict[int, list[UnitCandidates]],
        prefs: dict[int, list[np.ndarray]],
        anti: dict[int, np.ndarray],
        arrays: NodeArrays,
        spot_ok: dict[int, bool],
        hint: Assignment,
        policy: Policy,
        deadline: float,
        victims: list[Victim],
        budgets: Budgets | None = None,
        pricing: Pricing | None = None,
    ):
        self.budgets, self.pricing = budgets, pricing
        self.plans, self.candidates, self.prefs, self.anti = plans, candidates, prefs, anti
        top = max((evict_rank(plans[p].job) for p in candidates), default=None)
        # Only jobs some plan outranks can be evicted; only their nodes are modelled one by one.
        self.victims = [v for v in victims if top is not None and v.rank < top and (v.nodes or v.pods)]
        self.direct: dict[int, list[Victim]] = {}
        for v in self.victims:
            for n in v.nodes:
                self.direct.setdefault(n, []).append(v)
        self.arrays, self.snap, self.spot_ok, self.hint, self.policy = (
            arrays,
            arrays.snap,
            spot_ok,
            hint,
            policy,
        )
        self.deadline = deadline
        self.m = cp_model.CpModel()
        #: Whether the model is the real problem (no rounding, no truncated candidate lists).
        self.exact = True
        #: What made the model inexact, in words (``Stats.model_approximations``), in the order met.
        self.approximations: list[str] = []
        self.y_hint: dict[tuple[int, int, int], int] = {}

    def _approximate(self, what: str) -> None:
        """The model stops being the real problem here: say so, and say where."""
        self.exact = False
        if what not in self.approximations:
            self.approximations.append(what)

    def _tick(self) -> None:
        if time.perf_counter() > self.deadline - 0.05:
            raise Deadline

    # -- building ------------------------------------------------------------------------------------------
    def build(self) -> Model:
        plans, snap = self.plans, self.snap
        ids = sorted(self.candidates)
        node_units: list[NodeUnit] = []
        tpu_units: list[tuple[int, int, Unit]] = []
        for p in ids:
            for ui, (u, cand) in enumerate(zip(plans[p].units, self.candidates[p], strict=True)):
                if u.tpu is None:
                    node_units.append(NodeUnit(p, ui, u, cand, self.prefs[p][ui]))
                else:
                    tpu_units.append((p, ui, u))
        relevant = np.zeros(len(snap.nodes), dtype=bool)
        for nu in node_units:
            relevant |= nu.cand.now
        for n in self.direct:
            relevant[n] = False  # nodes with eviction candidates are modelled one by one
        # Racks, when a job of the batch may span nodes: the model counts the racks it uses beyond one
        # (compactness, ``Model._compactness``), so nodes of different racks must not share a class.
        spans = any(sum(u.replicas for u in plans[p].units if u.tpu is None) > 1 for p in ids) and bool(
            (self.arrays.scope_codes("rack")[relevant] >= 0).any()
        )
        scopes = sorted(
            {scope for p in ids if (scope := plans[p].scope)}
            | {level for nu in node_units for level, _ in nu.unit.domains}
            | {nu.unit.slices[0] for nu in node_units if nu.unit.slices}
            | ({"rack"} if spans else set())
        )
        if _beside_batch(plans, ids):
            self._approximate(
                "preferred (anti-)affinity among the batch's own jobs: weighed by the objective that "
                "chooses between answers and by greedy, not in the model (against running jobs it is)"
            )
        anti_plans = [p for p in ids if self.anti[p].any()]
        classes, class_of, exact_classes = build_classes(
            self.arrays,
            relevant,
            scopes,
            [self.anti[p] for p in anti_plans],
            self.policy,
            self._tick,
            price_codes=None if self.pricing is None else self.pricing.price_codes(),
            shape_codes=self._shape_codes(node_units, relevant),
            pref_codes=pref_codes(node_units),
            extra=tuple(sorted({name for nu in node_units for name, _ in nu.unit.need.extra})),
            flavor_codes=self._flavor_codes(ids),
        )
        if 0 < self.policy.lns_above_size < len(classes) * len(node_units):
            raise TooBig(len(classes))
        if not exact_classes:
            self._approximate("node classes: free amounts rounded to keep the class count bounded")
        self._tick()
        types, _ = self._item_types(ids, node_units)
        self._direct_nodes(node_units)
        self._eligible_classes(node_units, classes, class_of)
        self._tick()

        # Greedy's answer, expressed in classes and patterns: the hint, and patterns that must exist.
        seeds = self._seeds(node_units, class_of)
        # A greedy packing is real on the node greedy used, with greedy's replicas; as a pattern it holds item
        # types, so the model may fill its slots with any replica of those types and give it to any member of
        # the class. That is sound only when it fits the class on the model's amounts; a seed that does not
        # (demands rounded up, a class's capacity its smallest member's) made answers that realization could
        # not turn into nodes (scenario M: REALIZE_FAILED). Such a seed's replicas keep their real amounts
        # (then any replica of its types is at most as big as greedy's), and if it still does not fit, it is
        # pinned: used at most on as many nodes as greedy used it, and realized on those very nodes.
        misfits = seeds.misfits(classes, types)
        if misfits:
            exact = frozenset(u for c, pat in misfits for n in seeds.nodes[(c, pat)] for u in seeds.units[n])
            types, _ = self._item_types(ids, node_units, exact)
            seeds = self._seeds(node_units, class_of)
            misfits = seeds.misfits(classes, types)
            self._tick()
        pinned = {key: seeds.nodes[key] for key in misfits}

        # Patterns per class over the types eligible there.
        eligible_types: dict[int, set[int]] = {}
        for nu in node_units:
            for c in nu.classes:
                eligible_types.setdefault(c, set()).add(nu.type_idx)
        patterns: dict[int, list[Pattern]] = {}
        for c, tset in sorted(eligible_types.items()):
            complete = [True]
            patterns[c] = patterns_for(
                classes[c],
                types,
                sorted(tset),
                seeds.patterns.get(c, []),
                self.policy.max_patterns_per_class,
                complete,
            )
            if classes[c].shares_missed:
                self._approximate("GPU shares: packed first-fit decreasing, missing a packing a node allows")
            limit_hit = len(patterns[c]) >= self.policy.max_patterns_per_class
            if len(tset) > DFS_MAX_TYPES or limit_hit or not complete[0]:
                self._approximate("packing patterns: not every maximal pattern of a node class enumerated")
            self._tick()
        tpu_slices = self._tpu_slices(tpu_units)
        self._tick()
        pins = {(c, patterns[c].index(pat)): nodes for (c, pat), nodes in pinned.items()}
        return Model(self, ids, node_units, tpu_units, classes, types, patterns, tpu_slices, seeds, pins)

    def _seeds(self, node_units: list[NodeUnit], class_of: np.ndarray) -> Seeds:
        """Greedy's answer in the model's terms (with the current item types): the packing of each node it
        used in a class, and the hints for the classes' and the one-by-one nodes' variables."""
        out = Seeds()
        self.y_hint = {}
        key_of = {(nu.p, nu.ui): nu for nu in node_units}
        per_node: dict[int, dict[int, int]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.node is None:
                    continue
                ui = self.plans[p].units.index(r.unit)
                nu = key_of[(p, ui)]
                c = int(class_of[r.node])
                if r.node in nu.direct:
                    key = (p, ui, r.node)
                    self.y_hint[key] = self.y_hint.get(key, 0) + 1
                    continue
                if c < 0 or c not in nu.classes:
                    out.hint_ok = False
                    continue
                counts = per_node.setdefault(r.node, {})
                counts[nu.type_idx] = counts.get(nu.type_idx, 0) + 1
                out.units.setdefault(r.node, set()).add((p, ui))
                out.x_hint[(p, ui, c)] = out.x_hint.get((p, ui, c), 0) + 1
        for n, counts in sorted(per_node.items()):
            c = int(class_of[n])
            pat = tuple(sorted(counts.items()))
            if pat not in out.patterns.setdefault(c, []):
                out.patterns[c].append(pat)
            out.nodes.setdefault((c, pat), []).append(n)
            out.z_hint[(c, pat)] = out.z_hint.get((c, pat), 0) + 1
        return out

    def _flavor_codes(self, ids: list[int]) -> np.ndarray | None:
        """Per node, a code of the flavors it is counted under by the batch's queues with per-flavor quotas
        (None when none has any): a class must lie in one flavor of each such resource for the model to
        count it there."""
        b = self.budgets
        if b is None:
            return None
        kinds = sorted({(q, r) for p in ids for (q, r) in b.flavor_group if q == self.plans[p].job.queue})
        if not kinds:
            return None
        seen: dict[tuple[str | None, ...], int] = {}
        return np.array(
            [
                seen.setdefault(tuple(b.flavor_at(q, v.node.labels, r) for q, r in kinds), len(seen))
                for v in self.snap.nodes
            ],
            dtype=np.int64,
        )

    def _shape_codes(self, node_units: list[NodeUnit], relevant: np.ndarray) -> np.ndarray | None:
        """When some unit has a Flux shape (sockets...): per node, a code equal for nodes with the same
        inner tree and the same GPUs free (-1: no tree), so that a class's nodes match shapes alike and
        patterns can be checked on one of them. None when no unit has a shape."""
        if not any(shaped_unit(nu.unit) for nu in node_units):
            return None
        snap = self.snap
        codes = np.full(len(snap.nodes), -1, dtype=np.int64)
        ids: dict[tuple[object, ...], int] = {}
        for k, n in enumerate(np.flatnonzero(relevant)):
            if k % 1024 == 0:
                self._tick()
            tree = snap.tree(int(n))
            if tree is not None:
                codes[n] = ids.setdefault((tree.signature, snap.nodes[int(n)].free_gpus), len(ids))
        return codes

    def _item_types(
        self, ids: list[int], node_units: list[NodeUnit], exact: frozenset[tuple[int, int]] = frozenset()
    ) -> tuple[list[ItemType], dict]:
        """Item types of the node units (sets ``nu.type_idx``); units in ``exact`` (plan, unit) keep their
        real amounts when the others are rounded up."""
        conflicts = Conflicts(self.plans, ids, self._tick)
        self_anti = conflicts.self_anti
        self.conflicts, self.self_anti = conflicts, self_anti
        units_of: dict[int, list[NodeUnit]] = {}
        for nu in node_units:
            units_of.setdefault(nu.p, []).append(nu)

        shape_keys: dict[int, tuple[object, str | None]] = {}

        def shape_key(unit: Unit) -> str | None:
            # Replicas with different Flux shapes never share an item type (patterns check shapes).
            if not shaped_unit(unit):
                return None
            hit = shape_keys.get(id(unit.structure))
            if hit is None:
                hit = shape_keys[id(unit.structure)] = (unit.structure, request_text(unit.structure))
            return hit[1]

        tags, caps = self._tags(node_units, units_of, shape_key)
        group_tags: dict[int, set[tuple[object, ...]]] = {}

        def tag_of(nu: NodeUnit) -> tuple[object, ...] | None:
            return tags.get((nu.p, nu.ui))

        # Item types follow distinct demands; when jobs ask for many slightly different CPU/memory
        # amounts, demands are rounded *up* (valid, slightly conservative) until types are few. Only untagged
        # types can merge: a tagged type is one unit's own, whatever its amounts, so tagged units are neither
        # counted nor rounded (counting them once drove the quantum to 128 cores and 1 TB on scenario M,
        # where most units are tagged, for no merge at all), and neither are ``exact`` units.
        q_cpu, q_mem = 0.0, 0.0
        distinct = {
            (nu.unit.need, shape_key(nu.unit))
            for nu in node_units
            if tag_of(nu) is None and (nu.p, nu.ui) not in exact
        }

        def n_types(q_cpu: float, q_mem: float) -> int:
            return len(
                {
                    (
                        n.gpus,
                        n.milli,
                        up(n.cpu, q_cpu),
                        up(n.mem, q_mem),
                        up(n.storage, q_mem),
                        up(n.shm, q_mem),
                        n.extra,
                        s,
                    )
                    for n, s in distinct
                }
            )

        while n_types(q_cpu, q_mem) > MAX_TYPES and q_cpu < MAX_CPU_QUANTUM:
            q_cpu = q_cpu * 2 if q_cpu else self.policy.cpu_quantum
            q_mem = q_mem * 2 if q_mem else self.policy.memory_quantum_gb
        if q_cpu:
            self._approximate("item types: CPU and memory demands rounded up to merge types")
        types: list[ItemType] = []
        index: dict[tuple[object, ...], int] = {}
        for nu in node_units:
            tag = tag_of(nu)
            confl: set[tuple[object, ...]] = set()
            if tag is not None:
                # The tags of every unit of every job it conflicts with (its own other units too when it is
                # self-anti-affine: its group is then among those it conflicts with), group by group.
                for h in conflicts.groups_against(nu.p):
                    if h not in group_tags:
                        group_tags[h] = {
                            tags[(q, o.ui)] for q in conflicts.members[h] for o in units_of.get(q, [])
                        }
                    confl |= group_tags[h]
                confl.discard(tag)  # within a group, its cap is the rule (at most one on a node)
            need = nu.unit.need
            qc, qm = (0.0, 0.0) if tag is not None or (nu.p, nu.ui) in exact else (q_cpu, q_mem)
            t = ItemType(
                gpus=need.gpus,
                milli=need.milli,
                cpu=up(need.cpu, qc),
                mem=up(need.mem, qm),
                storage=up(need.storage, qm),
                shm=up(need.shm, qm),
                extra=need.extra,
                tag=tag,
                cap=caps.get(tag) if tag is not None else None,
                exclusive=nu.unit.exclusive,
                conflicts=frozenset(confl),
                shape_key=shape_key(nu.unit),
                structure=nu.unit.structure if shaped_unit(nu.unit) else (),
            )
            if not (t.gpus or t.milli or t.cpu or t.mem or t.storage or t.shm or t.extra) and t.cap is None:
                # A replica that takes nothing: any number fits, so cap it at what the batch could ask.
                t = replace(t, cap=sum(o.unit.replicas for o in node_units))
            key = (t.gpus, t.milli, t.cpu, t.mem, t.storage, t.shm, t.extra, t.tag, t.shape_key)
            if key not in index:
                index[key] = len(types)
                types.append(t)
            nu.type_idx = index[key]
        return types, index

    def _tags(
        self,
        node_units: list[NodeUnit],
        units_of: dict[int, list[NodeUnit]],
        shape_key: Callable[[Unit], str | None],
    ) -> tuple[dict[tuple[int, int], tuple[object, ...]], dict[tuple[object, ...], int]]:
        """Per-node rules as item-type tags: which units a node may not hold together, and per tag the
        most replicas of it one node may hold (its cap). Returns (tag per (plan, unit), cap per tag).

        Units without per-node rules get no tag. Units with them used to get one tag each, so N serve jobs
        that may not share a host made N types, conflicting pairwise: patterns over them were never all
        enumerated and the model approximated (issue "Exact at scale"). Jobs that are interchangeable for
        these rules now share one tag, exactly:

        * **exclusive**, at most one replica per node (one replica, ``distinct`` or self-anti-affine), same
          demand: an exclusive replica is alone on its node, so a cap of 1 says everything;
        * **true twins** (same demand, same labels and anti-affinity rules, and those rules match those
          labels: :mod:`~placer.solver.cpsat.conflicts`): each conflicts with the others and with the same
          jobs outside, so no node holds two of them — a cap of 1;
        * **false twins** (same demand, labels and rules, which do not match their own labels; not
          ``distinct``): they conflict with the same jobs and not with each other, so any number may share
          a node — no cap, the shared conflicts.

        Jobs of several units (task groups) keep a tag per unit, as do the rest.
        """
        conflicts, self_anti = self.conflicts, self.self_anti
        tags: dict[tuple[int, int], tuple[object, ...]] = {}
        caps: dict[tuple[object, ...], int] = {}
        groups: dict[tuple[object, ...], list[NodeUnit]] = {}
        for nu in node_units:
            u, p = nu.unit, nu.p
            if not (u.exclusive or u.distinct or p in conflicts or p in self_anti):
                continue
            one = u.replicas == 1 or u.distinct or p in self_anti
            demand = (u.need, shape_key(u))
            g = conflicts.group_of[p]
            if len(units_of[p]) > 1 or (u.exclusive and not one):
                key: tuple[object, ...] = ("u", p, nu.ui)
            elif u.exclusive:
                key = ("x", demand)
            elif p in self_anti:
                key = ("t", demand, g)  # its group's jobs all conflict with each other and with the same jobs
            elif not u.distinct:
                key = ("f", demand, g)  # its group's jobs conflict with the same jobs, not with each other
            else:
                key = ("u", p, nu.ui)
            groups.setdefault(key, []).append(nu)
        for n, (key, members) in enumerate(sorted(groups.items(), key=lambda kv: (kv[1][0].p, kv[1][0].ui))):
            if key[0] == "u":
                tag: tuple[object, ...] = key
                nu = members[0]
                # An exclusive replica owns its node whole, so a node holds one of them, as greedy and
                # realization place them (without the cap, replicas that ask little shared a node here).
                if nu.unit.distinct or nu.p in self_anti or nu.unit.exclusive:
                    caps[tag] = 1
            else:
                tag = ("g", n)
                if key[0] in ("x", "t"):
                    caps[tag] = 1
            for nu in members:
                tags[(nu.p, nu.ui)] = tag
        return tags, caps

    def _eligible_classes(
        self, node_units: list[NodeUnit], classes: list[NodeClass], class_of: np.ndarray
    ) -> None:
        limit = self.policy.max_classes_per_unit
        hinted: dict[tuple[int, int], set[int]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.node is not None and class_of[r.node] >= 0:
                    ui = self.plans[p].units.index(r.unit)
                    hinted.setdefault((p, ui), set()).add(int(class_of[r.node]))
        # Units with the same nodes open to them have the same classes (a batch of 13,000 alike jobs on
        # 8,000 nodes spent 2.5 s here, class by class in Python).
        seen: dict[bytes, list[int]] = {}
        for k, nu in enumerate(node_units):
            if k % 64 == 0:
                self._tick()
            ok = nu.cand.now & ~self.anti[nu.p]
            key = ok.tobytes()
            cls = seen.get(key)
            if cls is None:
                found = np.unique(class_of[ok])
                cls = seen[key] = [int(c) for c in found if c >= 0]
            cls = list(cls)
            if len(cls) > limit:
                need = nu.unit.need.gpus

                def rank(c: int, nu: NodeUnit = nu, need: int = need) -> tuple[float, ...]:
                    k = classes[c]
                    price = (
                        0
                        if self.pricing is None
                        else self.pricing.on_node(k.rep, nu.unit.need, nu.unit.exclusive)
                    )
                    return (-float(nu.pref[k.rep]), price, k.gpus - need, -k.count, c)

                keep = set(sorted(cls, key=rank)[:limit]) | hinted.get((nu.p, nu.ui), set())
                cls = sorted(keep)
                self._approximate("candidate classes: a unit's classes cut to Policy.max_classes_per_unit")
            nu.classes = cls

    def _direct_nodes(self, node_units: list[NodeUnit]) -> None:
        """For each unit, the nodes with eviction candidates it may use: statically possible, not
        anti-affinity-blocked (by running jobs: evicting them does not lift it, as in greedy), and either
        free enough now or holding victims of lower priority; for an exclusive unit, only nodes whose running
        jobs are all such victims (it needs them all gone). Cheapest evictions first, capped at
        ``Policy.max_classes_per_unit`` (plus the nodes greedy used); vectorized per priority level.

        Exclusive units and units in anti-affinity conflict with other jobs of the batch get per-node
        constraints there (:meth:`_Built._node_rules`); without them greedy's answer, which evicts for such
        jobs, was no solution of the model. Fractional-GPU units stay off these nodes: the nodes' capacity
        rows count whole GPUs, and packing shares onto partly used GPUs would need per-GPU variables."""
        if not self.direct:
            return
        n_nodes = len(self.snap.nodes)
        direct = np.zeros(n_nodes, dtype=bool)
        direct[list(self.direct)] = True
        # Per node, the running jobs (ids): an exclusive unit may go only where all of them are victims.
        running = {n: set(self.snap.nodes[n].running) for n in self.direct}
        hinted: dict[tuple[int, int], set[int]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.node is not None and r.node in self.direct:
                    hinted.setdefault((p, self.plans[p].units.index(r.unit)), set()).add(r.node)
        # Per distinct job priority: the cost of victims below it on each node, and whether any is below.
        below_cost: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        limit = self.policy.max_classes_per_unit
        trees: np.ndarray | None = None
        for k, nu in enumerate(node_units):
            if k % 64 == 0:
                self._tick()
            u = nu.unit
            if u.need.milli:
                continue
            if shaped_unit(u) and trees is None:
                trees = np.zeros(n_nodes, dtype=bool)
                for n in self.direct:
                    trees[n] = self.snap.tree(n) is not None
            mine = evict_rank(self.plans[nu.p].job)
            if mine not in below_cost:
                cost = np.zeros(n_nodes)
                some = np.zeros(n_nodes, dtype=bool)
                below: dict[int, set[str]] = {}
                for v in self.victims:
                    if v.rank < mine:
                        for n in v.nodes:
                            cost[n] += v.cost
                            some[n] = True
                            below.setdefault(n, set()).add(v.id)
                every = np.zeros(n_nodes, dtype=bool)
                for n, ids in below.items():
                    every[n] = running[n] <= ids
                below_cost[mine] = (cost, some, every)
            cost, some, every = below_cost[mine]
            ok = direct & nu.cand.static & ~self.anti[nu.p] & (some | nu.cand.now)
            if u.exclusive:
                ok &= every
            if shaped_unit(u) and trees is not None:
                # Per-node capacity rows know no sockets: Flux shapes stay off inner-tree nodes that are
                # modelled one by one (greedy's own evictions for them are socket-aware).
                ok &= ~trees
            idx = np.flatnonzero(ok)
            if idx.size > limit:
                self._approximate("eviction nodes: a unit's nodes with evictions cut to the cheapest")
                idx = idx[np.argsort(cost[idx], kind="stable")[:limit]]
            nu.direct = sorted(set(idx.tolist()) | hinted.get((nu.p, nu.ui), set()))

    def _tpu_slices(self, tpu_units: list[tuple[int, int, Unit]]) -> dict[tuple[int, int], list[Slice]]:
        """Per TPU unit, the slices it may take: boxes of free chips, and boxes that need chips of running
        jobs it may evict (strictly lower priority; each slice names them, ``a[u, s] <= e[v]``). Eviction-free
        slices first (cheapest, fullest pods), then by eviction cost, ``Policy.max_slices_per_job`` of them,
        plus greedy's own (which may have evicted, so they are a solution of the model only with those
        evictions: they used to be offered as if their chips were free, and CP-SAT's answers then put
        slices on chips running jobs hold)."""
        by_id = {v.id: v for v in self.victims}
        holders: dict[int, dict[tuple[int, ...], Victim]] = {}
        for pv in self.snap.pods:
            held = self.snap.cluster.used_tpu_chips(pv.pod.name)
            holders[pv.idx] = {tuple(c): by_id[j] for c, j in held.items() if j in by_id}

        def needs(
            pod_idx: int, chips: tuple[tuple[int, ...], ...], u: Unit, rank: int
        ) -> tuple[str, ...] | None:
            """The running jobs to evict for ``chips`` (a dedicated slice: its hosts' chips); None when a
            chip is held by a job that may not be evicted for this unit."""
            pv = self.snap.pods[pod_idx]
            owned = host_chips(pv.pod, chips) if u.exclusive else chips
            out: set[str] = set()
            for c in owned:
                if c in pv.used:
                    v = holders[pod_idx].get(tuple(c))
                    if v is None or v.rank >= rank:
                        return None
                    out.add(v.id)
            return tuple(sorted(out))

        out: dict[tuple[int, int], list[Slice]] = {}
        hinted: dict[tuple[int, int], list[tuple[int, tuple[tuple[int, ...], ...]]]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.pod is not None:
                    ui = self.plans[p].units.index(r.unit)
                    hinted.setdefault((p, ui), []).append((r.pod, tuple(r.chips)))
        for p, ui, u in tpu_units:
            assert u.tpu is not None
            rank = evict_rank(self.plans[p].job)
            found: list[tuple[tuple[int, float, int, int, str], Slice]] = []
            for pv in self.snap.pods:
                self._tick()  # slices are enumerated per unit and pod: thousands of boxes on big pods
                pod = pv.pod
                if not pod_admits(u, pod, self.spot_ok[p]):
                    continue
                blocked = pv.used - {c for c, v in holders[pv.idx].items() if v.rank < rank}
                for shape in tpu_shapes(u.tpu, pod):
                    for s in slices_in_pod(pod, shape, blocked):
                        need = needs(pv.idx, tuple(s.chips), u, rank)
                        if need is None:
                            continue  # dedicated: whole hosts nobody else keeps
                        cost = sum(by_id[v].cost for v in need)
                        price = 0 if self.pricing is None else self.pricing.on_pod(pv.idx, len(s.chips))
                        key = (int(bool(need)), cost, price, pv.free_chips, pod.name)
                        found.append((key, Slice(pv.idx, tuple(s.chips), need)))
            found.sort(key=lambda f: f[0])
            chosen = [s for _, s in found[: self.policy.max_slices_per_job]]
            if len(found) > len(chosen):
                self._approximate("TPU slices: a unit's slices cut to Policy.max_slices_per_job")
            have = {(s.pod, frozenset(s.chips)) for s in chosen}
            for pod_idx, chips in hinted.get((p, ui), []):
                need = needs(pod_idx, chips, u, rank)
                if need is not None and (pod_idx, frozenset(chips)) not in have:
                    chosen.append(Slice(pod_idx, chips, need))
            out[(p, ui)] = chosen
        return out


def _beside_batch(plans: list[JobPlan], ids: list[int]) -> bool:
    """Whether a job of the batch has a preferred rule on jobs (:func:`~placer.solver.objective.
    preferences.beside_rules`) that another job of the batch, or its own other replicas, match: the
    model's preference level counts each replica's node on its own, so it cannot see two replicas of the
    batch sharing a node (:func:`~placer.solver.objective.score.beside_placed` does). Jobs are compared by
    their distinct label sets (a big batch has few)."""
    relating = [p for p in ids if beside_rules(plans[p].job)]
    if not relating:
        return False
    by_labels: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for q in ids:
        by_labels.setdefault(tuple(sorted(plans[q].labels.items())), []).append(q)
    for p in relating:
        rules = [r for r, _ in beside_rules(plans[p].job)]
        alone = sum(u.replicas for u in plans[p].units if u.tpu is None) < 2
        for key, members in by_labels.items():
            if alone and members == [p]:
                continue
            if any(holds(r, dict(key)) for r in rules):
                return True
    return False
