"""Phase 6: one CP-SAT model for the whole batch, started from greedy's answer, within the deadline.

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
* ``on[p, n]`` — job ``p`` has a replica on such a node (for anti-affinity between jobs of the batch there;
  exclusive units there have 0/1 ``y`` of their own).

Objective, lexicographic by successive solves: (1) maximize priority-weighted demand placed; then, with
(1) held at the value found, minimize the eviction cost; then (2) maximize preference score and (3)
minimize GPUs left free on the nodes touched (best fit, so whole nodes and NVLink domains stay whole for
big jobs); then, when some unit's options differ in price, with (2) held, minimize the decision's dollars
per hour (the cost term: integer money units per replica, :mod:`placer.solver.objective.cost`) and then (3)
again.

Budgets are constraints: a queue's GPUs (thousandths) and GPU jobs (OJS ML §10.3), and a queue's or
tenant's dollars per hour (money units: each replica variable weighted by what one replica costs in that
class, on that node, or on that TPU slice), running jobs included and evictions giving back.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import numpy as np
from ortools.sat.python import cp_model

from placer.solver.assignment import Assignment, ReplicaAt, node_count_ok
from placer.solver.budgets import Budgets
from placer.solver.candidates import NodeArrays, UnitCandidates, pod_admits
from placer.solver.cpsat.classes import NodeClass, build_classes
from placer.solver.cpsat.patterns import DFS_MAX_TYPES, ItemType, Pattern, fits, patterns_for, shape_claims
from placer.solver.demand import JobPlan, Unit
from placer.solver.greedy.state import State
from placer.solver.objective.cost import Pricing
from placer.solver.policy import Policy
from placer.solver.preempt import Victim, job_rank
from placer.solver.rules import holds
from placer.solver.snapshot import scope_value
from placer.solver.structure import request_text, shaped
from placer.solver.tpu_shapes import host_chips, tpu_shapes
from placer.topology.tpu import slices_in_pod

__all__ = ["DET_SHARE", "MAX_CPU_QUANTUM", "MAX_TYPES", "CpsatResult", "solve"]


@dataclass
class CpsatResult:
    """What the CP-SAT phase hands back to the engine."""

    assignment: Assignment | None
    status: str
    bound: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    variables: int | None = None
    constraints: int | None = None
    classes: int | None = None
    improves_secondary: bool = False
    exact: bool = False
    eviction_cost: float = 0.0
    #: Under ``Policy.reproducible``: False when the wall clock, not the deterministic budget, stopped a
    #: solve (an overloaded machine), so the answer may differ from a run on an idle one.
    deterministic: bool = True


@dataclass
class _NodeUnit:
    p: int
    ui: int
    unit: Unit
    cand: UnitCandidates
    pref: np.ndarray
    type_idx: int = -1
    classes: list[int] = field(default_factory=list)
    direct: list[int] = field(default_factory=list)


@dataclass
class _Seeds:
    """Greedy's answer in the model's terms: per class the packings greedy used (``patterns``, each with
    the ``nodes`` it was used on), the units it put on each node, and hints for ``z`` and ``x``."""

    patterns: dict[int, list[Pattern]] = field(default_factory=dict)
    nodes: dict[tuple[int, Pattern], list[int]] = field(default_factory=dict)
    units: dict[int, set[tuple[int, int]]] = field(default_factory=dict)
    z_hint: dict[tuple[int, Pattern], int] = field(default_factory=dict)
    x_hint: dict[tuple[int, int, int], int] = field(default_factory=dict)
    #: Whether every replica greedy placed on a class node is one the model offers there.
    hint_ok: bool = True

    def misfits(self, classes: list[NodeClass], types: list[ItemType]) -> list[tuple[int, Pattern]]:
        """The packings that do not fit their class on the model's amounts (see ``_Builder.build``)."""
        return [
            (c, pat)
            for c, pats in sorted(self.patterns.items())
            for pat in pats
            if not fits(classes[c], types, dict(pat))
        ]


@dataclass
class _Slice:
    pod: int
    chips: tuple[tuple[int, ...], ...]
    #: Running jobs that must be evicted for this slice (they hold some of its chips or, for a dedicated
    #: slice, of its hosts' chips).
    victims: tuple[str, ...] = ()


class _Deadline(Exception):
    pass


#: Under ``Policy.reproducible`` the solve stages share this fraction of the time limit, counted in
#: CP-SAT's deterministic time (about a second of work each on a typical core) instead of wall seconds.
DET_SHARE = 0.5

#: Above this many distinct per-replica demands (of untagged types), CPU/memory demands are rounded up to
#: merge them.
MAX_TYPES = 120
#: The rounding of demands stops at this many cores (and 64 x ``memory_quantum_gb``), as classes' does.
MAX_CPU_QUANTUM = 64.0


def _up(value: float, quantum: float) -> float:
    """``value`` rounded up to a multiple of ``quantum`` (unchanged when ``quantum`` is 0)."""
    if not quantum or not value:
        return value
    return float(np.ceil(value / quantum - 1e-9) * quantum)


def solve(
    plans: list[JobPlan],
    candidates: dict[int, list[UnitCandidates]],
    prefs: dict[int, list[np.ndarray]],
    anti: dict[int, np.ndarray],
    arrays: NodeArrays,
    spot_ok: dict[int, bool],
    hint: Assignment,
    policy: Policy,
    *,
    deadline: float,
    victims: list[Victim] | None = None,
    budgets: Budgets | None = None,
    pricing: Pricing | None = None,
) -> CpsatResult:
    """Build and solve the model; ``deadline`` is an absolute ``time.perf_counter()`` value. ``victims``
    are running jobs the model may evict (strictly lower priority only; :mod:`placer.solver.preempt`).
    ``pricing`` brings the cost term and dollar budgets."""
    t0 = time.perf_counter()
    try:
        built = _Builder(
            plans,
            candidates,
            prefs,
            anti,
            arrays,
            spot_ok,
            hint,
            policy,
            deadline,
            victims or [],
            budgets,
            pricing,
        ).build()
    except _Deadline:
        return CpsatResult(None, "BUILD_TIMEOUT", build_s=time.perf_counter() - t0)
    build_s = time.perf_counter() - t0
    return built.run(build_s)


class _Builder:
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
        top = max((job_rank(plans[p].job) for p in candidates), default=None)
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
        self.y_hint: dict[tuple[int, int, int], int] = {}

    def _tick(self) -> None:
        if time.perf_counter() > self.deadline - 0.05:
            raise _Deadline

    # -- building ------------------------------------------------------------------------------------------
    def build(self) -> _Built:
        plans, snap = self.plans, self.snap
        ids = sorted(self.candidates)
        node_units: list[_NodeUnit] = []
        tpu_units: list[tuple[int, int, Unit]] = []
        for p in ids:
            for ui, (u, c) in enumerate(zip(plans[p].units, self.candidates[p], strict=True)):
                if u.tpu is None:
                    node_units.append(_NodeUnit(p, ui, u, c, self.prefs[p][ui]))
                else:
                    tpu_units.append((p, ui, u))
        relevant = np.zeros(len(snap.nodes), dtype=bool)
        for nu in node_units:
            relevant |= nu.cand.now
        for n in self.direct:
            relevant[n] = False  # nodes with eviction candidates are modelled one by one
        scopes = sorted({plans[p].scope for p in ids if plans[p].scope})
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
            pref_codes=_pref_codes(node_units),
        )
        self.exact &= exact_classes
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
            limit_hit = len(patterns[c]) >= self.policy.max_patterns_per_class
            if len(tset) > DFS_MAX_TYPES or limit_hit or not complete[0]:
                self.exact = False  # maximal patterns were not all enumerated
            self._tick()
        tpu_slices = self._tpu_slices(tpu_units)
        self._tick()
        pins = {(c, patterns[c].index(pat)): nodes for (c, pat), nodes in pinned.items()}
        return _Built(self, ids, node_units, tpu_units, classes, types, patterns, tpu_slices, seeds, pins)

    def _seeds(self, node_units: list[_NodeUnit], class_of: np.ndarray) -> _Seeds:
        """Greedy's answer in the model's terms (with the current item types): the packing of each node it
        used in a class, and the hints for the classes' and the one-by-one nodes' variables."""
        out = _Seeds()
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

    def _shape_codes(self, node_units: list[_NodeUnit], relevant: np.ndarray) -> np.ndarray | None:
        """When some unit has a Flux shape (sockets...): per node, a code equal for nodes with the same
        inner tree and the same GPUs free (-1: no tree), so that a class's nodes match shapes alike and
        patterns can be checked on one of them. None when no unit has a shape."""
        if not any(_shaped(nu.unit) for nu in node_units):
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
        self, ids: list[int], node_units: list[_NodeUnit], exact: frozenset[tuple[int, int]] = frozenset()
    ) -> tuple[list[ItemType], dict]:
        """Item types of the node units (sets ``nu.type_idx``); units in ``exact`` (plan, unit) keep their
        real amounts when the others are rounded up."""
        plans = self.plans
        with_anti = [p for p in ids if plans[p].anti]
        conflicts: dict[int, set[int]] = {}
        for p in with_anti:
            for q in ids:
                if q == p:
                    continue
                if any(holds(r, plans[q].labels) for r in plans[p].anti):
                    conflicts.setdefault(p, set()).add(q)
                    conflicts.setdefault(q, set()).add(p)
        self_anti = {p for p in with_anti if any(holds(r, plans[p].labels) for r in plans[p].anti)}
        self.conflicts, self.self_anti = conflicts, self_anti
        units_of: dict[int, list[_NodeUnit]] = {}
        for nu in node_units:
            units_of.setdefault(nu.p, []).append(nu)

        shape_keys: dict[int, tuple[object, str | None]] = {}

        def shape_key(unit: Unit) -> str | None:
            # Replicas with different Flux shapes never share an item type (patterns check shapes).
            if not _shaped(unit):
                return None
            hit = shape_keys.get(id(unit.structure))
            if hit is None:
                hit = shape_keys[id(unit.structure)] = (unit.structure, request_text(unit.structure))
            return hit[1]

        def tag_of(nu: _NodeUnit) -> tuple[object, ...] | None:
            if nu.unit.exclusive or nu.unit.distinct or nu.p in conflicts or nu.p in self_anti:
                return ("u", nu.p, nu.ui)
            return None

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
                        _up(n.cpu, q_cpu),
                        _up(n.mem, q_mem),
                        _up(n.storage, q_mem),
                        _up(n.shm, q_mem),
                        s,
                    )
                    for n, s in distinct
                }
            )

        while n_types(q_cpu, q_mem) > MAX_TYPES and q_cpu < MAX_CPU_QUANTUM:
            q_cpu = q_cpu * 2 if q_cpu else self.policy.cpu_quantum
            q_mem = q_mem * 2 if q_mem else self.policy.memory_quantum_gb
        if q_cpu:
            self.exact = False
        types: list[ItemType] = []
        index: dict[tuple[object, ...], int] = {}
        for nu in node_units:
            tag = tag_of(nu)
            confl: set[tuple[object, ...]] = set()
            if tag is not None:
                for q in conflicts.get(nu.p, ()):
                    confl |= {("u", q, o.ui) for o in units_of.get(q, [])}
                if nu.p in self_anti:
                    confl |= {("u", nu.p, o.ui) for o in units_of[nu.p] if o.ui != nu.ui}
            need = nu.unit.need
            qc, qm = (0.0, 0.0) if tag is not None or (nu.p, nu.ui) in exact else (q_cpu, q_mem)
            t = ItemType(
                gpus=need.gpus,
                milli=need.milli,
                cpu=_up(need.cpu, qc),
                mem=_up(need.mem, qm),
                storage=_up(need.storage, qm),
                shm=_up(need.shm, qm),
                tag=tag,
                cap=1 if tag is not None and (nu.unit.distinct or nu.p in self_anti) else None,
                exclusive=nu.unit.exclusive,
                conflicts=frozenset(confl),
                shape_key=shape_key(nu.unit),
                structure=nu.unit.structure if _shaped(nu.unit) else (),
            )
            if not (t.gpus or t.milli or t.cpu or t.mem or t.storage or t.shm) and t.cap is None:
                # A replica that takes nothing: any number fits, so cap it at what the batch could ask.
                t = replace(t, cap=sum(o.unit.replicas for o in node_units))
            key = (t.gpus, t.milli, t.cpu, t.mem, t.storage, t.shm, t.tag, t.shape_key)
            if key not in index:
                index[key] = len(types)
                types.append(t)
            nu.type_idx = index[key]
        return types, index

    def _eligible_classes(
        self, node_units: list[_NodeUnit], classes: list[NodeClass], class_of: np.ndarray
    ) -> None:
        limit = self.policy.max_classes_per_unit
        hinted: dict[tuple[int, int], set[int]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.node is not None and class_of[r.node] >= 0:
                    ui = self.plans[p].units.index(r.unit)
                    hinted.setdefault((p, ui), set()).add(int(class_of[r.node]))
        for k, nu in enumerate(node_units):
            if k % 64 == 0:
                self._tick()
            ok = nu.cand.now & ~self.anti[nu.p]
            cls = sorted({int(class_of[n]) for n in np.flatnonzero(ok) if class_of[n] >= 0})
            if len(cls) > limit:
                need = nu.unit.need.gpus

                def rank(c: int, nu: _NodeUnit = nu, need: int = need) -> tuple[float, ...]:
                    k = classes[c]
                    price = (
                        0
                        if self.pricing is None
                        else self.pricing.on_node(k.rep, nu.unit.need, nu.unit.exclusive)
                    )
                    return (-float(nu.pref[k.rep]), price, k.gpus - need, -k.count, c)

                keep = set(sorted(cls, key=rank)[:limit]) | hinted.get((nu.p, nu.ui), set())
                cls = sorted(keep)
                self.exact = False
            nu.classes = cls

    def _direct_nodes(self, node_units: list[_NodeUnit]) -> None:
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
            if _shaped(u) and trees is None:
                trees = np.zeros(n_nodes, dtype=bool)
                for n in self.direct:
                    trees[n] = self.snap.tree(n) is not None
            mine = job_rank(self.plans[nu.p].job)
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
            if _shaped(u) and trees is not None:
                # Per-node capacity rows know no sockets: Flux shapes stay off inner-tree nodes that are
                # modelled one by one (greedy's own evictions for them are socket-aware).
                ok &= ~trees
            idx = np.flatnonzero(ok)
            if idx.size > limit:
                self.exact = False
                idx = idx[np.argsort(cost[idx], kind="stable")[:limit]]
            nu.direct = sorted(set(idx.tolist()) | hinted.get((nu.p, nu.ui), set()))

    def _tpu_slices(self, tpu_units: list[tuple[int, int, Unit]]) -> dict[tuple[int, int], list[_Slice]]:
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

        out: dict[tuple[int, int], list[_Slice]] = {}
        hinted: dict[tuple[int, int], list[tuple[int, tuple[tuple[int, ...], ...]]]] = {}
        for p, reps in self.hint.placed.items():
            for r in reps:
                if r.pod is not None:
                    ui = self.plans[p].units.index(r.unit)
                    hinted.setdefault((p, ui), []).append((r.pod, tuple(r.chips)))
        for p, ui, u in tpu_units:
            assert u.tpu is not None
            rank = job_rank(self.plans[p].job)
            found: list[tuple[tuple[int, float, int, int, str], _Slice]] = []
            for pv in self.snap.pods:
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
                        found.append((key, _Slice(pv.idx, tuple(s.chips), need)))
            found.sort(key=lambda f: f[0])
            chosen = [s for _, s in found[: self.policy.max_slices_per_job]]
            if len(found) > len(chosen):
                self.exact = False
            have = {(s.pod, frozenset(s.chips)) for s in chosen}
            for pod_idx, chips in hinted.get((p, ui), []):
                need = needs(pod_idx, chips, u, rank)
                if need is not None and (pod_idx, frozenset(chips)) not in have:
                    chosen.append(_Slice(pod_idx, chips, need))
            out[(p, ui)] = chosen
        return out


class _Built:
    def __init__(
        self,
        b: _Builder,
        ids: list[int],
        node_units: list[_NodeUnit],
        tpu_units: list[tuple[int, int, Unit]],
        classes: list[NodeClass],
        types: list[ItemType],
        patterns: dict[int, list[Pattern]],
        tpu_slices: dict[tuple[int, int], list[_Slice]],
        seeds: _Seeds,
        pins: dict[tuple[int, int], list[int]],
    ):
        self.b, self.m, self.plans, self.policy = b, b.m, b.plans, b.policy
        self.ids, self.node_units, self.tpu_units = ids, node_units, tpu_units
        self.classes, self.types, self.patterns, self.tpu_slices = classes, types, patterns, tpu_slices
        #: Patterns (class, index) real only on the nodes greedy used them on: used on those nodes only.
        self.pins = pins
        z_hint, x_hint = seeds.z_hint, seeds.x_hint
        m = self.m
        self.placed = {p: m.NewBoolVar(f"placed[{p}]") for p in ids}
        self.z: dict[tuple[int, int], cp_model.IntVar] = {}
        for c, pats in patterns.items():
            cnt = classes[c].count
            zs = []
            for k in range(len(pats)):
                v = m.NewIntVar(0, len(pins[(c, k)]) if (c, k) in pins else cnt, f"z[{c},{k}]")
                self.z[(c, k)] = v
                zs.append(v)
            m.Add(sum(zs) <= cnt)
        self.x: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self.y: dict[tuple[int, int, int], cp_model.IntVar] = {}
        self.y_ub: dict[tuple[int, int, int], int] = {}
        slots: dict[tuple[int, int], list[cp_model.IntVar]] = {}
        for k, nu in enumerate(node_units):
            if k % 256 == 0:
                b._tick()
            xs = []
            for c in nu.classes:
                v = m.NewIntVar(0, nu.unit.replicas, f"x[{nu.p},{nu.ui},{c}]")
                self.x[(nu.p, nu.ui, c)] = v
                xs.append(v)
                slots.setdefault((c, nu.type_idx), []).append(v)
            # One replica per node: distinct replicas, self-anti-affinity, and exclusive units (greedy closes
            # a node after one exclusive replica, and realization takes replicas as greedy does).
            one = nu.unit.distinct or nu.p in b.self_anti or nu.unit.exclusive
            cap = 1 if one else nu.unit.replicas
            for n in nu.direct:
                name = f"y[{nu.p},{nu.ui},{n}]"
                v = m.NewBoolVar(name) if one else m.NewIntVar(0, cap, name)
                self.y[(nu.p, nu.ui, n)] = v
                self.y_ub[(nu.p, nu.ui, n)] = cap
                xs.append(v)
            m.Add(sum(xs) == nu.unit.replicas * self.placed[nu.p])
        for (c, t), xs in slots.items():
            supply = [cnt * self.z[(c, k)] for k, pat in enumerate(patterns[c]) for ti, cnt in pat if ti == t]
            m.Add(sum(xs) <= sum(supply))
        # Gang scopes.
        self.bvars: dict[tuple[int, str], cp_model.IntVar] = {}
        by_plan: dict[int, list[_NodeUnit]] = {}
        for nu in node_units:
            by_plan.setdefault(nu.p, []).append(nu)
        for p, nus in by_plan.items():
            scope = self.plans[p].scope
            if scope is None:
                continue
            snap = b.snap
            domains = sorted(
                {str(classes[c].scopes[scope]) for nu in nus for c in nu.classes}
                | {str(scope_value(snap, n, scope)) for nu in nus for n in nu.direct}
            )
            bs = {d: m.NewBoolVar(f"b[{p},{d}]") for d in domains}
            self.bvars.update({(p, d): v for d, v in bs.items()})
            m.Add(sum(bs.values()) == self.placed[p])
            for nu in nus:
                for n in nu.direct:
                    m.Add(self.y[(p, nu.ui, n)] <= nu.unit.replicas * bs[str(scope_value(snap, n, scope))])
                for c in nu.classes:
                    m.Add(self.x[(p, nu.ui, c)] <= nu.unit.replicas * bs[str(classes[c].scopes[scope])])
        # TPU slices; a slice on chips of running jobs needs their eviction (``_evictions``).
        self.a: dict[tuple[int, int, int], cp_model.IntVar] = {}
        #: Per victim, the slices (plan, unit, slice index) that need its eviction.
        self.tpu_needs: dict[str, list[tuple[int, int, int]]] = {}
        covering: dict[tuple[int, tuple[int, ...]], list[cp_model.IntVar]] = {}
        for p, ui, u in tpu_units:
            vs = []
            for s_idx, s in enumerate(tpu_slices[(p, ui)]):
                v = m.NewBoolVar(f"a[{p},{ui},{s_idx}]")
                self.a[(p, ui, s_idx)] = v
                vs.append(v)
                for vid in s.victims:
                    self.tpu_needs.setdefault(vid, []).append((p, ui, s_idx))
                # A dedicated slice owns its hosts whole: it excludes every slice touching them.
                owned = host_chips(b.snap.pods[s.pod].pod, s.chips) if u.exclusive else s.chips
                for chip in owned:
                    covering.setdefault((s.pod, chip), []).append(v)
            m.Add(sum(vs) == u.replicas * self.placed[p])
        for vs in covering.values():
            if len(vs) > 1:
                m.AddAtMostOne(vs)
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
        self.level2 = _weighted(self.l2_terms)
        self.level3 = _weighted(self.l3_terms)
        self.level_money = _weighted(self.money_all)
        self.l3_max = sum(cl.count * max(cl.gpus, 1) for cl in classes) + 1
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
        for v, val in self.hint_values.items():
            m.AddHint(v, val)
        self.hint_ok = seeds.hint_ok

    def _evictions(self, node_units: list[_NodeUnit]) -> None:
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
        self.level_cost: cp_model.LinearExprT = 0
        if not self.y and not self.tpu_needs:
            return
        on_node: dict[int, list[_NodeUnit]] = {}
        for nu in node_units:
            for n in nu.direct:
                on_node.setdefault(n, []).append(nu)
        used = {v.id: v for n in on_node for v in b.direct[n]}
        used.update({v.id: v for v in b.victims if v.id in self.tpu_needs})
        self.e = {vid: m.NewBoolVar(f"e[{vid}]") for vid in sorted(used)}
        for vid, keys in self.tpu_needs.items():
            for key in keys:
                m.Add(self.a[key] <= self.e[vid])
        arrays = b.arrays
        snap = b.snap
        for k, (n, nus) in enumerate(sorted(on_node.items())):
            if k % 32 == 0:
                b._tick()
            free = (arrays.gpus[n], arrays.cpu[n], arrays.mem[n], arrays.storage[n], arrays.shm[n])
            held = {v.id: _held_on(v, snap.nodes[n].name) for v in b.direct[n]}
            rows = []
            for nu in nus:
                y = self.y[(nu.p, nu.ui, n)]
                rows.append(
                    (job_rank(self.plans[nu.p].job), _need_vec(nu.unit), y, self.y_ub[(nu.p, nu.ui, n)])
                )
            # Levels that free the same victims need only their highest row (it contains the others).
            levels = sorted({rk for rk, _, _, _ in rows})
            top_of: dict[frozenset[str], int] = {}
            for level in levels:
                top_of[frozenset(v.id for v in b.direct[n] if v.rank < level)] = level
            for level in sorted(top_of.values()):
                group = [(need, y, ub) for rk, need, y, ub in rows if rk <= level]
                freed = [v for v in b.direct[n] if v.rank < level]
                for r in range(5):
                    if not np.isfinite(free[r]):
                        continue
                    worst = sum(need[r] * ub for need, _, ub in group)
                    if worst <= free[r] + 1e-9:
                        continue  # cannot bind: even every replica there fits the free amount
                    scale = 1 if r == 0 else 1000  # fractional cores/GB: thousandths, rounded safely
                    terms = [(y, int(np.ceil(need[r] * scale - 1e-6))) for need, y, _ in group if need[r]]
                    terms += [(self.e[v.id], -int(np.floor(held[v.id][r] * scale + 1e-6))) for v in freed]
                    cap = int(np.floor(float(free[r]) * scale + 1e-6))
                    m.Add(
                        cp_model.LinearExpr.WeightedSum([t[0] for t in terms], [t[1] for t in terms]) <= cap
                    )
            # Self-anti-affinity: one replica of such a job per node, over its units.
            for p in {nu.p for nu in nus if nu.p in b.self_anti}:
                m.Add(sum(self.y[(nu.p, nu.ui, n)] for nu in nus if nu.p == p) <= 1)
            self._node_rules(n, nus)
        for vid, ev in self.e.items():
            v = used[vid]
            helpers = [
                self.y[(nu.p, nu.ui, n)]
                for n in v.nodes
                for nu in on_node.get(n, [])
                if job_rank(self.plans[nu.p].job) > v.rank
            ]
            helpers += [self.a[key] for key in self.tpu_needs.get(vid, [])]
            if helpers:
                m.Add(ev <= sum(helpers))
            else:
                m.Add(ev == 0)
        self.level_cost = sum(round(used[vid].cost) * ev for vid, ev in self.e.items())

    def _node_rules(self, n: int, nus: list[_NodeUnit]) -> None:
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
        rules = sorted(p for p in here if self.plans[p].anti and b.conflicts.get(p, set()) & here)
        involved = set(rules) | {q for p in rules for q in b.conflicts[p] & here}
        on: dict[int, cp_model.IntVar] = {}
        for p in sorted(involved):
            w = m.NewBoolVar(f"on[{p},{n}]")
            ys = [(self.y[(nu.p, nu.ui, n)], self.y_ub[(nu.p, nu.ui, n)]) for nu in nus if nu.p == p]
            for y, ub in ys:
                m.Add(y <= ub * w)
            m.Add(sum(y for y, _ in ys) >= w)
            on[p] = self.on[(p, n)] = w
        for p in rules:
            m.Add(sum(on[q] for q in sorted(b.conflicts[p] & here)) == 0).OnlyEnforceIf(on[p])
        running = set(b.snap.nodes[n].running)
        for nu in nus:
            if not nu.unit.exclusive:
                continue
            y = self.y[(nu.p, nu.ui, n)]
            rank = job_rank(self.plans[nu.p].job)
            freed = [v for v in b.direct[n] if v.rank < rank]
            if not running <= {v.id for v in freed}:
                m.Add(y == 0)  # a running job that stays (only a hinted node could be offered so)
                continue
            rest = [self.y[(o.p, o.ui, n)] for o in nus if o is not nu]
            if rest:
                m.Add(sum(rest) == 0).OnlyEnforceIf(y)
            for v in freed:
                m.AddImplication(y, self.e[v.id])

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
            used = [(job_rank(self.plans[p].job), _weighted(self.money[p])) for p in ps if self.money.get(p)]
            if not used:
                continue
            at = 0 if kind == "queue" else 1
            room = budgets.cost_room(*((name, None) if kind == "queue" else (None, name)))[at]
            assert room is not None
            back = [
                (vrank[vid], units * self.e[vid])
                for vid, (q, t, units) in budgets.running_cost.items()
                if vid in self.e and (q if kind == "queue" else t) == name and units
            ]
            self._within_by_rank(used, room, back)

    def _budgets(self) -> None:
        """Queue GPU budgets (OJS ML §10.3): a queue's placed GPUs (in thousandths) and GPU jobs stay within
        what its running jobs leave, plus what evictions of its own running jobs give back."""
        budgets = self.b.budgets
        if budgets is None or not budgets.active:
            return
        by_queue: dict[str, list[int]] = {}
        for p in self.ids:
            q = self.plans[p].job.queue
            if q is not None and (q in budgets.max_gpus or q in budgets.max_jobs):
                by_queue.setdefault(q, []).append(p)
        for q, ps in by_queue.items():
            milli = {
                p: sum(
                    u.replicas * (u.need.gpus * 1000 + u.need.milli)
                    for u in self.plans[p].units
                    if u.tpu is None
                )
                for p in ps
            }
            gpu_ps = [p for p in ps if milli[p] > 0]
            if not gpu_ps:
                continue
            room_gpus, room_jobs = budgets.room(q)
            vrank = {v.id: v.rank for v in self.b.victims}
            back = [
                (vid, budgets.running[vid][1]) for vid in self.e if budgets.running.get(vid, ("", 0))[0] == q
            ]
            ranks = {p: job_rank(self.plans[p].job) for p in gpu_ps}
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

    def _within_by_rank(
        self,
        used: list[tuple[int, cp_model.LinearExprT]],
        room: int,
        back: list[tuple[int, cp_model.LinearExprT]],
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

    def _within(self, used: cp_model.LinearExprT, room: int, back: cp_model.LinearExprT) -> None:
        """``used <= room + back`` (a budget's room left by running jobs, plus what evictions give back);
        when running jobs alone are over it (``room < 0``), adding nothing stays allowed: the model must
        not become infeasible over a budget this decision did not break."""
        if room >= 0:
            self.m.Add(used <= room + back)
            return
        adds = self.m.NewBoolVar("adds")
        self.m.Add(used <= room + back).OnlyEnforceIf(adds)
        self.m.Add(used == 0).OnlyEnforceIf(adds.Not())

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

    def _spend(self, s: cp_model.CpSolver, status: int) -> None:
        """Charge a finished solve to the deterministic budget; note when the wall clock stopped it."""
        if self.det_left is None:
            return
        r = s.ResponseProto()
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
        m, proto = self.m, self.m.Proto()
        stats = {
            "variables": len(proto.variables),
            "constraints": len(proto.constraints),
            "classes": len(self.classes),
        }
        t_solve = time.perf_counter()
        # Reproducible runs budget the stages in deterministic time, a fixed share of the time limit
        # (never the wall time left after building, which depends on the machine's load).
        self.det_left = self.policy.time_limit_s * DET_SHARE if self.policy.reproducible else None
        self.deterministic = True
        left = self._left()
        if left <= 0.02 or self.b.deadline - time.perf_counter() <= 0.02:
            return CpsatResult(None, "NO_TIME", build_s=build_s, **stats)
        m.Maximize(self.level1)
        s1 = self._solver(left * 0.7)
        st1 = s1.Solve(m)
        self._spend(s1, st1)
        name1 = s1.StatusName(st1)
        if st1 not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return CpsatResult(None, name1, build_s=build_s, solve_s=time.perf_counter() - t_solve, **stats)
        v1 = round(s1.ObjectiveValue())
        bound = float(s1.BestObjectiveBound())
        values = self._values(s1)
        status = name1
        m.Add(self.level1 >= v1)
        # Eviction cost (work thrown away), minimized under level 1 held at what was found.
        left = self._left()
        if self.e and left > 0.05:
            m.ClearHints()
            for v, val in values.items():
                m.AddHint(v, val)
            m.Minimize(self.level_cost)
            sc = self._solver(left * 0.6, presolve=False)
            stc = sc.Solve(m)
            self._spend(sc, stc)
            if stc in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = self._values(sc)
                m.Add(self.level_cost <= round(sc.ObjectiveValue()))
                if stc != cp_model.OPTIMAL:
                    status = "FEASIBLE"
        # Level 2-3 under the levels above held at what was found.
        left = self._left()
        improves = False
        if left > 0.05:
            m.ClearHints()
            for v, val in values.items():
                m.AddHint(v, val)
            secondary = self.level2 * self.l3_max - self.level3
            m.Maximize(secondary)
            # When the cost term has a solve of its own, this one leaves it half of the time.
            s2 = self._solver(left * 0.5 if self.money_varies else left, presolve=False)
            st2 = s2.Solve(m)
            self._spend(s2, st2)
            if st2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = self._values(s2)
                if st1 != cp_model.OPTIMAL:
                    status = "FEASIBLE"
                values = self._cheapest(values)
                greedy = self._secondary(self.hint_values) if self.hint_ok else None
                improves = greedy is None or self._secondary(values) > greedy
        assignment = self._realize(values)
        return CpsatResult(
            assignment,
            status if assignment is not None else "REALIZE_FAILED",
            bound=bound,
            build_s=build_s,
            solve_s=time.perf_counter() - t_solve,
            improves_secondary=improves,
            exact=self.b.exact,
            eviction_cost=sum(v.cost for v in self.b.victims if v.id in self.e and values[self.e[v.id]]),
            deterministic=self.deterministic,
            **stats,
        )

    def _values(self, s: cp_model.CpSolver) -> dict[cp_model.IntVar, int]:
        out = {v: int(s.Value(v)) for v in self.placed.values()}
        out.update({v: int(s.Value(v)) for v in self.z.values()})
        out.update({v: int(s.Value(v)) for v in self.x.values()})
        out.update({v: int(s.Value(v)) for v in self.bvars.values()})
        out.update({v: int(s.Value(v)) for v in self.a.values()})
        out.update({v: int(s.Value(v)) for v in self.y.values()})
        out.update({v: int(s.Value(v)) for v in self.e.values()})
        out.update({v: int(s.Value(v)) for v in self.on.values()})
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
            m.Add(self.level2 >= _value(self.l2_terms, values))
        m.ClearHints()
        for v, val in values.items():
            m.AddHint(v, val)
        # Money first, fragmentation second; both fit exactly in a double (CP-SAT reports objectives as
        # doubles) unless the batch is huge, and then money alone is minimized.
        if (self.money_max + 1) * self.l3_max < 2**52:
            m.Minimize(self.level_money * self.l3_max + self.level3)
        else:
            m.Minimize(self.level_money)
        s = self._solver(left, presolve=False)
        st = s.Solve(m)
        self._spend(s, st)
        return self._values(s) if st in (cp_model.OPTIMAL, cp_model.FEASIBLE) else values

    def _secondary(self, values: dict[cp_model.IntVar, int]) -> tuple[int, int, int]:
        """Levels 2, cost and 3 of an answer (model values, or greedy's hint), as a tuple that is larger
        for the better answer: more preference, then fewer dollars, then less fragmentation."""
        return (
            _value(self.l2_terms, values),
            -_value(self.money_all, values),
            -_value(self.l3_terms, values),
        )

    def _repair_order(self, nu: _NodeUnit, c: int, ordered: list[int]) -> Iterator[int]:
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
                    if job_rank(self.plans[p].job) > victim.rank
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
        queue: dict[tuple[int, int], list[list[object]]] = {}
        for nu in self.node_units:
            if nu.p in placed:
                for c in nu.classes:
                    n = values[self.x[(nu.p, nu.ui, c)]]
                    if n:
                        queue.setdefault((c, nu.type_idx), []).append([nu, n])
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
                            while q and q[0][1] == 0:
                                q.pop(0)
                            if not q:
                                break
                            nu = q[0][0]
                            q[0][1] -= 1  # type: ignore[operator]
                            claim = claims[t].pop(0) if t in claims else None
                            unit = nu.unit  # type: ignore[attr-defined]
                            if not state.fits_node(node, unit, shape=claim is None):
                                return None
                            gpus, share = state.take(node, unit, claim=claim)
                            out.placed[nu.p].append(
                                ReplicaAt(unit=nu.unit, node=node, gpus=gpus, milli=share)
                            )  # type: ignore[attr-defined]
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
        wanted: dict[int, list[_NodeUnit]] = {}
        for nu in self.node_units:
            if nu.p not in placed:
                continue
            for c in nu.classes:
                wanted.setdefault(c, []).extend([nu] * values[self.x[(nu.p, nu.ui, c)]])
        on_node: dict[int, set[int]] = {}
        unit_on: dict[int, set[tuple[int, int]]] = {}
        conflicts, self_anti = self.b.conflicts, self.b.self_anti

        def allowed(node: int, nu: _NodeUnit) -> bool:
            if not state.fits_node(node, nu.unit):
                return False
            here = on_node.get(node, set())
            if nu.unit.distinct and (nu.p, nu.ui) in unit_on.get(node, set()):
                return False
            if (nu.p in self_anti and nu.p in here) or here & conflicts.get(nu.p, set()):
                return False
            if nu.unit.exclusive and here - {nu.p}:
                return False
            return not any(any(u.exclusive for u in plans[q].units) for q in here - {nu.p})

        def put(node: int, nu: _NodeUnit) -> None:
            gpus, share = state.take(node, nu.unit)
            on_node.setdefault(node, set()).add(nu.p)
            unit_on.setdefault(node, set()).add((nu.p, nu.ui))
            out.placed[nu.p].append(ReplicaAt(unit=nu.unit, node=node, gpus=gpus, milli=share))

        # Pass 1: every class on its own members; pass 2: what did not fit, anywhere it may run (so that
        # repairs never take a node another class was counting on).
        left: list[tuple[int, _NodeUnit]] = []
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


def _pref_codes(node_units: list[_NodeUnit]) -> np.ndarray | None:
    """Per node, a code equal for nodes on which every unit's preference score is the same (None when no
    unit prefers anything): classes split on it, so the preference level is exact in the model."""
    distinct: dict[int, np.ndarray] = {}
    for nu in node_units:
        if nu.pref.any():
            distinct.setdefault(id(nu.pref), nu.pref)
    if not distinct:
        return None
    rows = np.stack(list(distinct.values()), axis=1)
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)


def _shaped(unit: Unit) -> bool:
    return shaped(unit.structure, unit.need.milli)


def _weighted(terms: list[tuple[cp_model.IntVar, int]]) -> cp_model.LinearExprT:
    """``sum(coefficient * variable)`` of ``(variable, coefficient)`` terms (0 when there are none)."""
    if not terms:
        return 0
    return cp_model.LinearExpr.WeightedSum([v for v, _ in terms], [k for _, k in terms])


def _value(terms: list[tuple[cp_model.IntVar, int]], values: dict[cp_model.IntVar, int]) -> int:
    """The value of ``sum(coefficient * variable)`` under ``values`` (absent variables count 0)."""
    return sum(k * values.get(v, 0) for v, k in terms)


def _need_vec(unit: Unit) -> tuple[float, float, float, float, float]:
    n = unit.need
    return (n.gpus, n.cpu, n.mem, n.storage, n.shm)


def _held_on(v: Victim, node: str) -> tuple[float, float, float, float, float]:
    """What a victim holds on one node: whole GPUs (shares count nothing: a shared GPU frees no whole GPU
    unless every share leaves, which this conservative count ignores), cores, GB of memory/storage/shm."""
    out = [0.0, 0.0, 0.0, 0.0, 0.0]
    for r in v.job.replicas:
        if r.node == node:
            out[0] += 0 if r.gpu_milli is not None else len(r.gpus)
            out[1] += r.cpu_cores
            out[2] += r.memory_gb
            out[3] += r.storage_gb
            out[4] += r.shm_gb
    return (out[0], out[1], out[2], out[3], out[4])
