"""Phase 4: greedy — job by job in priority order, gang-aware best fit. Milliseconds, always valid.

Why it exists: it is the answer in hand when the deadline comes, the hint CP-SAT starts from, and the
baseline CP-SAT must never be worse than. It applies the same hard constraints (the candidates of
:mod:`placer.solver.candidates`) and the same scoring (:mod:`placer.solver.scoring`) as the CP-SAT model.

Order: priority class, numeric priority, then bigger demand first (big jobs are hardest to fit later),
submit time, job id (so the batch's order never matters). For each replica the node is chosen by, in
turn: highest preference score (level 2), lowest price of the replica there (the cost term: cheaper
capacity — spot, reserved, a cheaper GPU type — wins ties of preference), least free GPUs left after
placing (best fit: keeps whole nodes and NVLink domains whole for big jobs, level 3), no GPUs stranded by
CPU-only work, then node order. A gang is placed whole or not at all; a gang confined to a scope (rack,
block, zone, NVLink domain) tries the fullest domain that can hold it first. TPU slices go to the
cheapest, then fullest pod that has a free slice of the shape. Budgets (queue GPU budgets, queue and
tenant dollar budgets) are checked on the placement found; a job over one stays pending.

With a baseline scorer (``Policy.scorer``, :mod:`placer.solver.scorers`) the node of each replica is chosen by
that scorer's key instead (after the eviction cost, when evicting), everything else as above.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace

import numpy as np
from placer.solver.assignment import Assignment, ReplicaAt
from placer.solver.budgets import Budgets
from placer.solver.candidates import NodeArrays, UnitCandidates, pod_admits
from placer.solver.cost import Pricing
from placer.solver.demand import JobPlan, Unit
from placer.solver.greedy_preemption import place_with_evictions
from placer.solver.jobs.model import AffinityOperator, LabelRule
from placer.solver.preempt import Victim, job_rank
from placer.solver.rules import holds
from placer.solver.scorers import Context as ScorerContext
from placer.solver.snapshot import Snapshot
from placer.solver.structure import Claim, InnerTree, Shape, compile_shape, match, request_text, shaped
from placer.solver.tpu_shapes import host_chips, tpu_shapes
from placer.topology.model import Coord
from placer.topology.tpu import TpuSlice, slices_in_pod


def scope_value(snap: Snapshot, node: int, scope: str) -> str | None:
    """The value of a gang scope for a node (its rack, block, zone, NVLink domain, or name). A composite
    scope ``"nvlink_domain+zone"`` (an NVLink gang that also asked for a zone) is both values, or None
    when the node lacks either: it then holds no multi-node part of such a gang (rule 12)."""
    if "+" in scope:
        parts = [scope_value(snap, node, s) for s in scope.split("+")]
        return None if any(v is None for v in parts) else "+".join(parts)  # type: ignore[arg-type]
    n = snap.nodes[node].node
    return {
        "node": n.name,
        "rack": n.rack,
        "block": n.block,
        "zone": n.zone,
        "nvlink_domain": n.nvlink_domain,
    }.get(scope)


def priority_order(plans: list[JobPlan], flexibility: dict[int, int] | None = None) -> list[int]:
    """Plan indices in the order greedy places them: priority class, numeric priority, then — with
    ``flexibility`` (how many nodes a job could ever use) — the most constrained first (a job that only
    NVLink nodes can hold goes before one any node can), then bigger demand, submit time and id."""
    flex = flexibility or {}

    def key(p: JobPlan) -> tuple[object, ...]:
        submit = p.job.submit_time.timestamp() if p.job.submit_time else 0.0
        return (
            -p.job.priority_class.rank,
            -p.job.priority,
            flex.get(p.idx, 0),
            -p.demand_units,
            submit,
            p.job.id,
        )

    return [p.idx for p in sorted(plans, key=key)]


@dataclass
class State:
    """Greedy's scratch copy of the free amounts, updated as it places."""

    snap: Snapshot
    gpus: np.ndarray
    milli: np.ndarray
    cpu: np.ndarray
    mem: np.ndarray
    storage: np.ndarray
    shm: np.ndarray
    empty: np.ndarray
    closed: np.ndarray
    free_idx: dict[int, list[int]] = field(default_factory=dict)
    milli_idx: dict[int, list[int]] = field(default_factory=dict)
    labels_on: dict[int, list[tuple[dict[str, str], tuple]]] = field(default_factory=dict)
    pod_used: dict[int, set[Coord]] = field(default_factory=dict)
    slice_cache: dict[tuple[int, tuple[int, ...]], list[TpuSlice]] = field(default_factory=dict)
    log: list[tuple[object, ...]] = field(default_factory=list)
    anti_groups: dict[tuple[str, ...], tuple[tuple, list[int]]] = field(default_factory=dict)
    label_index: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    taken: dict[int, int] = field(default_factory=dict)
    running_left: dict[int, int] = field(default_factory=dict)
    #: Running jobs this decision evicts, with their rank: evictions give budget back only to jobs that
    #: outrank the victim (:func:`within_budget`).
    evicted: dict[str, int] = field(default_factory=dict)
    #: GPUs and GPU jobs this decision added per queue (committed placements only).
    queue_use: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: Money units per hour this decision added per queue and per tenant (committed placements only).
    cost_use: dict[str, int] = field(default_factory=dict)
    tenant_cost_use: dict[str, int] = field(default_factory=dict)
    #: Prices of replicas: the cost key of node choice and the dollar budgets (None: no cost term).
    pricing: Pricing | None = None
    #: Per node, a cost to avoid (eviction cost of using it), the first key of node choice when set.
    penalty: np.ndarray | None = None
    #: A baseline scorer choosing nodes instead of placer's keys (None: placer's own).
    scorer: ScorerContext | None = None
    #: Nodes whose amounts changed since the scorer last looked (it keeps per-GPU amounts in step).
    changed: set[int] = field(default_factory=set)
    #: Per node with an inner tree, the replicas with a Flux shape this decision placed there, with their
    #: GPUs: a new one is matched together with them (:mod:`placer.solver.structure`; their cores may move).
    shaped_on: dict[int, list[tuple[Shape, tuple[int, ...]]]] = field(default_factory=dict)
    #: Compiled shapes per (unit structure, tree), keeping both alive so that their ids stay theirs.
    _shapes: dict[tuple[int, int], tuple[object, object, Shape | None]] = field(default_factory=dict)
    #: Per node, the Flux requests (by :meth:`shape_key` and GPUs per replica) known not to fit it as it is
    #: now; forgotten
    #: whenever the node changes, so greedy does not match a full node again and again.
    no_shape: dict[int, set[tuple[str, int]]] = field(default_factory=dict)
    _shape_keys: dict[int, tuple[object, str]] = field(default_factory=dict)

    @staticmethod
    def of(arrays: NodeArrays) -> State:
        return State(
            snap=arrays.snap,
            gpus=arrays.gpus.copy(),
            milli=arrays.milli.copy(),
            cpu=arrays.cpu.copy(),
            mem=arrays.mem.copy(),
            storage=arrays.storage.copy(),
            shm=arrays.shm.copy(),
            empty=arrays.empty.copy(),
            closed=np.zeros(len(arrays.snap.nodes), dtype=bool),
            pod_used={p.idx: set(p.used) for p in arrays.snap.pods},
        )

    def fits(self, unit: Unit) -> np.ndarray:
        need, eps = unit.need, 1e-9
        ok = (self.gpus >= need.gpus) & (self.cpu >= need.cpu - eps) & (self.mem >= need.mem - eps)
        ok &= (self.storage >= need.storage - eps) & (self.shm >= need.shm - eps) & ~self.closed
        if need.milli:
            ok &= self.milli >= need.milli
        if unit.exclusive:
            ok &= self.empty
        return ok

    def fits_node(self, node: int, unit: Unit, *, shape: bool = True) -> bool:
        """:meth:`fits` for one node (no array work), and — unless ``shape`` is False (the caller holds a
        claim for it) — the unit's Flux shape on the node's inner tree as it is now (:meth:`fits_shape`)."""
        need, eps = unit.need, 1e-9
        if self.closed[node] or (unit.exclusive and not self.empty[node]):
            return False
        if self.gpus[node] < need.gpus or (need.milli and self.milli[node] < need.milli):
            return False
        return (
            self.cpu[node] >= need.cpu - eps
            and self.mem[node] >= need.mem - eps
            and self.storage[node] >= need.storage - eps
            and self.shm[node] >= need.shm - eps
            and (not shape or self.fits_shape(node, unit))
        )

    def shape_of(self, node: int, unit: Unit) -> tuple[InnerTree, Shape] | None:
        """The unit's Flux shape on the node's inner tree, when it has one there that names groups
        (sockets...); None when only the node's totals matter (no tree, no shape, GPU shares)."""
        if not shaped(unit.structure, unit.need.milli):
            return None
        tree = self.snap.tree(node)
        if tree is None:
            return None
        key = (id(unit.structure), id(tree))
        hit = self._shapes.get(key)
        if hit is None:
            shape = compile_shape(unit.structure, tree)
            hit = self._shapes[key] = (unit.structure, tree, shape if shape.groups else None)
        return None if hit[2] is None else (tree, hit[2])

    def shape_key(self, unit: Unit) -> str:
        """The unit's Flux request as text: equal requests of different jobs fail on a node alike."""
        hit = self._shape_keys.get(id(unit.structure))
        if hit is None:
            hit = self._shape_keys[id(unit.structure)] = (unit.structure, request_text(unit.structure))
        return hit[1]

    def claim_shape(self, node: int, unit: Unit) -> Claim | None:
        """What one replica of a shaped unit would take on ``node`` now (None: its shape does not fit
        what this decision and running jobs left there). Only for units :meth:`shape_of` gives a shape."""
        sh = self.shape_of(node, unit)
        assert sh is not None
        tree, shape = sh
        key = (self.shape_key(unit), unit.need.gpus)
        if key in self.no_shape.get(node, ()):
            return None
        free = self.free_idx[node] if node in self.free_idx else self.snap.nodes[node].free_gpus
        placed = self.shaped_on.get(node, [])
        found = match(tree, [*(s for s, _ in placed), shape], free, [*(g for _, g in placed), None])
        if found is None or len(found[-1].gpus) > unit.need.gpus:
            self.no_shape.setdefault(node, set()).add(key)
            return None
        return found[-1]

    def fits_shape(self, node: int, unit: Unit) -> bool:
        """Whether the unit's Flux shape (if any) fits the node's inner tree as it is now."""
        return self.shape_of(node, unit) is None or self.claim_shape(node, unit) is not None

    def take(
        self, node: int, unit: Unit, share_gpu: int | None = None, claim: Claim | None = None
    ) -> tuple[tuple[int, ...], int | None]:
        """Take one replica's resources on ``node``; returns (GPU indices, fractional milli or None). A
        fractional share goes to ``share_gpu`` when given, else to the best-fitting GPU. A unit with a
        Flux shape there takes what ``claim`` says (a joint match of several replicas), else what
        :meth:`claim_shape` finds now; its GPUs come from the sockets the match chose, and it is recorded
        in ``shaped_on`` with them. Raises ValueError when the shape does not fit."""
        need = unit.need
        v = self.snap.nodes[node]
        sh = self.shape_of(node, unit)
        if sh is not None and claim is None:
            claim = self.claim_shape(node, unit)
            if claim is None:
                raise ValueError(f"the Flux shape of job {unit.job_id} does not fit node {v.name} now")
        if sh is not None and claim is not None:
            free_now = self.free_idx.get(node, v.free_gpus)
            if len(claim.gpus) > need.gpus or any(g not in free_now for g in claim.gpus):
                raise ValueError(f"GPUs {claim.gpus} for job {unit.job_id} are not free on node {v.name}")
        self._remember(node)
        self.taken[node] = self.taken.get(node, 0) + 1
        free, milli = self.free_idx[node], self.milli_idx[node]
        gpus: tuple[int, ...] = ()
        share = None
        if need.gpus and sh is not None and claim is not None:
            rest = [g for g in free if g not in claim.gpus][: need.gpus - len(claim.gpus)]
            gpus = tuple(sorted([*claim.gpus, *rest]))
            for g in gpus:
                free.remove(g)
                milli[g] = 0
        elif need.gpus:
            gpus = tuple(free[: need.gpus])
            del free[: need.gpus]
            for g in gpus:
                milli[g] = 0
        elif need.milli:
            # Best fit among shareable GPUs: the one with the least free share that still holds it.
            options = [g for g in range(len(milli)) if milli[g] >= need.milli]
            if not options:
                raise ValueError(f"no GPU of node {v.name} has {need.milli} milli free")
            g = min(options, key=lambda i: (milli[i], i)) if share_gpu is None else share_gpu
            if g not in options:
                raise ValueError(f"GPU {g} of node {v.name} has no {need.milli} milli free")
            milli[g] -= need.milli
            if g in free:
                free.remove(g)
            gpus, share = (g,), need.milli
        self.gpus[node] = len(free)
        self.milli[node] = max(milli, default=0)
        self.cpu[node] -= need.cpu
        self.mem[node] -= need.mem
        self.storage[node] -= need.storage
        self.shm[node] -= need.shm
        self.empty[node] = False
        if unit.exclusive:
            self.closed[node] = True
        if sh is not None:
            self.shaped_on.setdefault(node, []).append((sh[1], gpus))
        return gpus, share

    def _remember(self, node: int) -> None:
        """Log a node's amounts before a change (for :meth:`rollback`) and load its GPU lists."""
        v = self.snap.nodes[node]
        known = node in self.free_idx
        self.changed.add(node)
        self.no_shape.pop(node, None)
        self.log.append(
            (
                "node",
                node,
                self.gpus[node],
                self.milli[node],
                self.cpu[node],
                self.mem[node],
                self.storage[node],
                self.shm[node],
                self.empty[node],
                self.closed[node],
                list(self.free_idx[node]) if known else None,
                list(self.milli_idx[node]) if known else None,
                self.taken.get(node, 0),
                self.running_left.get(node, len(v.running)),
                list(self.shaped_on[node]) if node in self.shaped_on else None,
            )
        )
        if not known:
            self.free_idx[node] = list(v.free_gpus)
            self.milli_idx[node] = list(v.milli_free)

    def evict(self, victim: Victim) -> None:
        """Give back everything a running job holds, on every node and pod (gangs are evicted whole)."""
        snap = self.snap
        for r in victim.job.replicas:
            if r.node is not None and r.node in snap.by_name:
                n = snap.by_name[r.node]
                self._remember(n)
                free, milli = self.free_idx[n], self.milli_idx[n]
                for g in r.gpus:
                    milli[g] = min(1000, milli[g] + (r.gpu_milli if r.gpu_milli is not None else 1000))
                    if milli[g] == 1000 and g not in free:
                        free.append(g)
                free.sort()
                self.gpus[n] = len(free)
                self.milli[n] = max(milli, default=0)
                self.cpu[n] += r.cpu_cores
                self.mem[n] += r.memory_gb
                self.storage[n] += r.storage_gb
                self.shm[n] += r.shm_gb
                left = self.running_left.get(n, len(snap.nodes[n].running)) - 1
                self.running_left[n] = left
                self.empty[n] = left <= 0 and not self.taken.get(n, 0)
            elif r.tpu_pod is not None and r.tpu_pod in snap.pod_by_name:
                pidx = snap.pod_by_name[r.tpu_pod]
                chips = {tuple(c) for c in r.tpu_chips}
                self.pod_used[pidx] -= chips
                self.log.append(("podfree", pidx, chips))
                self.slice_cache = {k: s for k, s in self.slice_cache.items() if k[0] != pidx}
        self.evicted[victim.id] = victim.rank
        self.log.append(("evicted", victim.id))

    def note(self, plan: JobPlan, replicas: list[ReplicaAt]) -> None:
        """Record a committed placement for the anti-affinity checks of later jobs."""
        for r in replicas:
            if r.node is not None:
                self.labels_on.setdefault(r.node, []).append((plan.labels, plan.anti))
                for kv in plan.labels.items():
                    self.label_index.setdefault(kv, set()).add(r.node)
                if plan.anti:
                    key = tuple(a.model_dump_json() for a in plan.anti)
                    self.anti_groups.setdefault(key, (plan.anti, []))[1].append(r.node)

    def mark(self) -> int:
        """A point to roll back to (see :meth:`rollback`)."""
        return len(self.log)

    def rollback(self, mark: int) -> None:
        """Undo every change since ``mark``: how a gang that did not fit whole leaves no trace."""
        while len(self.log) > mark:
            entry = self.log.pop()
            kind = entry[0]
            if kind == "node":
                _, n, gpus, milli, cpu, mem, sto, shm, empty, closed, free, shares, taken, left, shaped = (
                    entry
                )
                self.changed.add(n)
                self.no_shape.pop(n, None)
                if shaped is None:
                    self.shaped_on.pop(n, None)
                else:
                    self.shaped_on[n] = shaped
                self.taken[n] = taken
                self.running_left[n] = left
                self.gpus[n], self.milli[n], self.cpu[n], self.mem[n] = gpus, milli, cpu, mem
                self.storage[n], self.shm[n], self.empty[n], self.closed[n] = sto, shm, empty, closed
                if free is None:
                    self.free_idx.pop(n, None)
                    self.milli_idx.pop(n, None)
                else:
                    self.free_idx[n], self.milli_idx[n] = free, shares
            elif kind == "labels":
                self.labels_on[entry[1]].pop()
            elif kind == "pod":
                self.pod_used[entry[1]] -= entry[2]
                self.slice_cache = {k: v for k, v in self.slice_cache.items() if k[0] != entry[1]}
            elif kind == "podfree":
                self.pod_used[entry[1]] |= entry[2]
                self.slice_cache = {k: v for k, v in self.slice_cache.items() if k[0] != entry[1]}
            elif kind == "evicted":
                self.evicted.pop(entry[1], None)

    def commit(self) -> None:
        """Forget the undo log (the changes since the last commit stay)."""
        self.log.clear()


def _gpus_of(replicas: list[ReplicaAt]) -> float:
    return sum(r.unit.need.gpus + r.unit.need.milli / 1000 for r in replicas if r.node is not None)


def node_count_ok(plan: JobPlan, replicas: list[ReplicaAt]) -> bool:
    """Whether the number of distinct nodes the replicas use is one the job's ``node_count`` allows (Flux
    and SSS node counts; placement rule 11)."""
    rng = plan.job.placement.node_count
    if rng is None:
        return True
    used = len({r.node for r in replicas if r.node is not None})
    return used in rng.values(used)


def within_budget(plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None) -> bool:
    """Whether placing ``replicas`` keeps the job's queue within its GPU budget (OJS ML §10.3) and its
    queue and tenant within their dollar budgets (priced where the replicas are, as the checker will)."""
    if budgets is None or not budgets.active:
        return True
    queue = plan.job.queue
    gpus = _gpus_of(replicas)
    if gpus > 0:
        room_gpus, room_jobs = budgets.room(queue, _evicted_below(plan, state))
        added_gpus, added_jobs = state.queue_use.get(queue or "", (0.0, 0))
        if room_gpus is not None and added_gpus + gpus > room_gpus + 1e-9:
            return False
        if room_jobs is not None and added_jobs + 1 > room_jobs:
            return False
    units = _budget_cost(plan, replicas, state, budgets)
    if not units:
        return True  # not under a dollar budget, or adds nothing to it
    q_left, t_left = _cost_left(plan, state, budgets)
    return (q_left is None or units <= q_left) and (t_left is None or units <= t_left)


def _evicted_below(plan: JobPlan, state: State) -> list[str]:
    """The evictions whose budget this job may use: those of jobs it outranks. An eviction is for strictly
    higher-priority work (OJS ML §8), budget room included, so a job never runs on room freed by evicting
    its equals (the CP-SAT model has the same rule per priority level, ``_within_by_rank``)."""
    mine = job_rank(plan.job)
    return [vid for vid, rank in state.evicted.items() if rank < mine]


def _budget_cost(
    plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None
) -> int | None:
    """Money units per hour of ``replicas`` when the job is under a dollar budget, else None."""
    if budgets is None or state.pricing is None or not budgets.costs(plan.job.queue, plan.job.tenant):
        return None
    return state.pricing.replicas(replicas)


def _cost_left(plan: JobPlan, state: State, budgets: Budgets | None) -> tuple[int | None, int | None]:
    """Money units per hour the job's queue and tenant have left now (evictions tried for it included);
    None where there is no dollar budget."""
    if budgets is None:
        return (None, None)
    queue, tenant = plan.job.queue, plan.job.tenant
    q_room, t_room = budgets.cost_room(queue, tenant, _evicted_below(plan, state))
    if q_room is not None:
        q_room -= state.cost_use.get(queue or "", 0)
    if t_room is not None:
        t_room -= state.tenant_cost_use.get(tenant or "", 0)
    return (q_room, t_room)


def charge_budget(
    plan: JobPlan, replicas: list[ReplicaAt], state: State, budgets: Budgets | None = None
) -> None:
    """Count a committed placement against its queue's GPU budget and its queue's and tenant's dollar
    budgets."""
    gpus = _gpus_of(replicas)
    if gpus > 0 and plan.job.queue is not None:
        g, j = state.queue_use.get(plan.job.queue, (0.0, 0))
        state.queue_use[plan.job.queue] = (g + gpus, j + 1)
    units = _budget_cost(plan, replicas, state, budgets)
    if units is not None:
        queue, tenant = plan.job.queue or "", plan.job.tenant or ""
        state.cost_use[queue] = state.cost_use.get(queue, 0) + units
        state.tenant_cost_use[tenant] = state.tenant_cost_use.get(tenant, 0) + units


def _anti_blocked(state: State, plan: JobPlan, anti_running: np.ndarray) -> np.ndarray:
    """Nodes the job may not use: running jobs matching its anti-affinity, or jobs placed in this batch
    that match it, or whose own anti-affinity matches it."""
    blocked = anti_running.copy()
    general = [r for r in plan.anti if not (isinstance(r, LabelRule) and r.operator is AffinityOperator.IN)]
    for r in plan.anti:
        if r not in general:
            for value in r.values:  # type: ignore[union-attr]
                nodes = state.label_index.get((r.key, value))  # type: ignore[union-attr]
                if nodes:
                    blocked[list(nodes)] = True
    if general:
        for node, entries in state.labels_on.items():
            if any(holds(r, labels) for labels, _ in entries for r in general):
                blocked[node] = True
    # Placed jobs with anti-affinity, grouped by their rules: each rule set is tested once.
    for anti, nodes in state.anti_groups.values():
        if any(holds(r, plan.labels) for r in anti):
            blocked[nodes] = True
    return blocked


#: Fragmentation key added for placing work that does not need NVLink on an NVLink node (in GPUs left).
NVLINK_WASTE = 100


def _frag(state: State, arrays: NodeArrays, unit: Unit, nvlink: bool) -> np.ndarray:
    """Level-3 key per node: GPUs left free after one replica (best fit); work that does not need NVLink
    avoids NVLink nodes (they are what NVLink jobs can use; keep them whole for big jobs); CPU-only work
    avoids GPU nodes."""
    if unit.need.gpus or unit.need.milli:
        left = state.gpus - unit.need.gpus
        return left if nvlink else left + NVLINK_WASTE * arrays.nvlink_nodes()
    return arrays.cap_gpus * 100


def _choose(
    mask: np.ndarray,
    pref: np.ndarray,
    frag: np.ndarray,
    penalty: np.ndarray | None = None,
    cost: np.ndarray | None = None,
) -> int | None:
    """The node for one replica: least penalty (eviction cost) when set, then highest preference, then
    lowest price (when priced), then best fit, then node order."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    keys: list[np.ndarray] = [idx, frag[idx]]
    if cost is not None:
        keys.append(cost[idx])
    keys.append(-pref[idx])
    if penalty is not None:
        keys.append(penalty[idx])
    order = np.lexsort(keys)  # the last key is the primary one
    return int(idx[order[0]])


def _choose_baseline(mask: np.ndarray, state: State, unit: Unit) -> int | None:
    """The node for one replica by a baseline scorer: least penalty (eviction cost) when set, then the
    scorer's key, then node order."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    assert state.scorer is not None
    keys: list[np.ndarray] = [idx, state.scorer.key(state, unit, idx)]
    if state.penalty is not None:
        keys.append(state.penalty[idx])
    return int(idx[np.lexsort(keys)[0]])


def _place_node_units(
    plan: JobPlan,
    units: list[tuple[Unit, UnitCandidates, np.ndarray]],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
) -> list[ReplicaAt] | None:
    out: list[ReplicaAt] = []
    used_by_job: set[int] = set()
    self_anti = any(holds(r, plan.labels) for r in plan.anti)
    for unit, cand, pref in units:
        used_by_unit: set[int] = set()
        for _ in range(unit.replicas):
            mask = cand.static & state.fits(unit) & ~blocked
            if allowed is not None:
                mask &= allowed
            avoid = used_by_job if self_anti else used_by_unit if unit.distinct else set()
            if avoid:
                mask[list(avoid)] = False
            if unit.structure and state.no_shape:
                key = (state.shape_key(unit), unit.need.gpus)
                known_bad = [n for n, keys in state.no_shape.items() if key in keys]
                if known_bad:
                    mask[known_bad] = False
            share_gpu = None
            claim = None
            cost = (
                None
                if state.pricing is None or state.scorer is not None
                else state.pricing.node_costs(unit.need)
            )
            frag = None if state.scorer is not None else _frag(state, arrays, unit, plan.nvlink)
            while True:  # only ``mask`` changes between tries (a node whose sockets failed the shape)
                if frag is None:
                    node = _choose_baseline(mask, state, unit)
                else:
                    node = _choose(mask, pref, frag, state.penalty, cost)
                if node is None:
                    return None
                # The totals fit; a Flux shape must also fit the node's sockets as this decision left them
                # (checked on the chosen node only, and the next best tried if not: few nodes fail it).
                if state.shape_of(node, unit) is None:
                    break
                claim = state.claim_shape(node, unit)
                if claim is not None:
                    break
                mask[node] = False
            if state.scorer is not None:
                share_gpu = state.scorer.share_gpu(state, node, unit)
            gpus, share = state.take(node, unit, share_gpu, claim)
            used_by_unit.add(node)
            used_by_job.add(node)
            out.append(ReplicaAt(unit=unit, node=node, gpus=gpus, milli=share))
    return out


def _place_tpu_unit(unit: Unit, state: State, snap: Snapshot, spot_ok: bool) -> list[ReplicaAt] | None:
    assert unit.tpu is not None
    out: list[ReplicaAt] = []
    for _ in range(unit.replicas):
        best: tuple[tuple[int, int, str], TpuSlice] | None = None
        for pv in snap.pods:
            pod = pv.pod
            if not pod_admits(unit, pod, spot_ok):
                continue
            used = state.pod_used[pv.idx]
            free = pod.chips - len(used)
            for shape in tpu_shapes(unit.tpu, pod):
                key = (pv.idx, shape)
                if key not in state.slice_cache:
                    state.slice_cache[key] = slices_in_pod(pod, shape, used)
                fitting = state.slice_cache[key]
                if unit.exclusive:  # dedicated: whole hosts nobody else uses
                    fitting = [s for s in fitting if not host_chips(pod, s.chips) & used]
                if fitting:
                    price = (
                        0 if state.pricing is None else state.pricing.on_pod(pv.idx, len(fitting[0].chips))
                    )
                    if best is None or (price, free, pod.name) < best[0]:
                        best = ((price, free, pod.name), fitting[0])
                    break
        if best is None:
            return None
        sl = best[1]
        pidx = snap.pod_by_name[sl.pod]
        chips = sl.chips
        taken = set(host_chips(snap.pods[pidx].pod, chips)) if unit.exclusive else set(chips)
        taken -= state.pod_used[pidx]
        state.pod_used[pidx] |= taken
        state.log.append(("pod", pidx, taken))
        for key in [k for k in state.slice_cache if k[0] == pidx]:
            del state.slice_cache[key]
        out.append(ReplicaAt(unit=unit, pod=pidx, chips=tuple(chips)))
    return out


def greedy(
    plans: list[JobPlan],
    candidates: dict[int, list[UnitCandidates]],
    prefs: dict[int, list[np.ndarray]],
    anti_running: dict[int, np.ndarray],
    arrays: NodeArrays,
    spot_ok: dict[int, bool],
    order: list[int] | None = None,
    *,
    deadline: float | None = None,
    victims: list[Victim] | None = None,
    budgets: Budgets | None = None,
    pricing: Pricing | None = None,
    scorer: str = "placer",
) -> Assignment:
    """Place the plans (those with candidates) in priority order; the rest stay pending. With a
    ``deadline`` (a ``time.perf_counter()`` value), plans not reached by then are listed in
    ``Assignment.skipped``: a valid, smaller answer rather than a missed deadline. ``pricing`` adds the
    cost key to node choice and prices dollar budgets. ``scorer``: ``placer`` (greedy's own keys) or a
    baseline of :mod:`placer.solver.scorers`."""
    snap = arrays.snap
    state = State.of(arrays)
    state.pricing = pricing
    if scorer != "placer":
        state.scorer = ScorerContext.of(scorer, plans, candidates, arrays)
    result = Assignment(engine="greedy")
    sequence = order if order is not None else priority_order(plans)

    def place_plan(plan: JobPlan) -> list[ReplicaAt] | None:
        i = plan.idx
        return _place_plan(plan, candidates[i], prefs[i], anti_running[i], state, arrays, snap, spot_ok[i])

    for k, i in enumerate(sequence):
        # With evictions each job may cost milliseconds: look at the clock every job, not every 16.
        every = 1 if victims else 16
        if deadline is not None and k >= 16 and k % every == 0 and time.perf_counter() > deadline:
            result.skipped = set(sequence[k:])
            break
        if i not in candidates:
            continue
        plan = plans[i]
        replicas = place_plan(plan)
        needed: list[Victim] = []
        if replicas is None and victims:
            state.rollback(0)
            tried = place_with_evictions(plan, candidates[i], place_plan, state, victims)
            if tried is not None:
                replicas, needed = tried
        if replicas is not None and not node_count_ok(plan, replicas):
            replicas = None
        if replicas is not None and not within_budget(plan, replicas, state, budgets):
            result.over_budget.add(i)
            tried = _budget_cost(plan, replicas, state, budgets)
            if tried:
                result.over_budget_cost[i] = (tried, *_cost_left(plan, state, budgets))
            replicas = None
        if replicas is None:
            state.rollback(0)
            continue
        state.commit()
        state.note(plan, replicas)
        charge_budget(plan, replicas, state, budgets)
        result.placed[i] = replicas
        for v in needed:
            result.evictions.setdefault(v.id, []).append(plan.id)
    return result


def _place_plan(
    plan: JobPlan,
    cands: list[UnitCandidates],
    prefs: list[np.ndarray],
    anti_running: np.ndarray,
    state: State,
    arrays: NodeArrays,
    snap: Snapshot,
    spot_ok: bool,
) -> list[ReplicaAt] | None:
    """Place one plan whole. A unit with a Flux count range gets the largest admissible count that fits
    (RFC 14: "the R that contains the maximum number of the resource that is available"), found by binary
    search over the admissible counts; the plan's unit is then replaced by the resolved one, so CP-SAT and
    the Decision see that count."""
    ranged = [i for i, u in enumerate(plan.units) if u.count_range is not None and u.tpu is None]
    if not ranged:
        return _place_fixed(plan, cands, prefs, anti_running, state, arrays, snap, spot_ok)
    ui = ranged[0]  # one ranged unit per job is what Flux slots produce; others keep their minimum
    unit = plan.units[ui]
    assert unit.count_range is not None
    cap = _replica_cap(unit, cands[ui], state, arrays)
    values = [v for v in unit.count_range.values(max(cap, unit.replicas)) if v >= unit.count_range.min]
    best: tuple[int, list[ReplicaAt]] | None = None
    lo, hi = 0, len(values) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        trial = replace(unit, replicas=values[mid])
        units = list(plan.units)
        units[ui] = trial
        probe = replace(plan, units=units)
        mark = state.mark()
        placed = _place_fixed(probe, cands, prefs, anti_running, state, arrays, snap, spot_ok)
        state.rollback(mark)
        if placed is None:
            hi = mid - 1
        else:
            best = (mid, placed)
            lo = mid + 1
    if best is None:
        return None
    plan.units[ui] = replace(unit, replicas=values[best[0]])
    # Place for real (the probe was rolled back); same state, same answer.
    return _place_fixed(plan, cands, prefs, anti_running, state, arrays, snap, spot_ok)


def _replica_cap(unit: Unit, cand: UnitCandidates, state: State, arrays: NodeArrays) -> int:
    """An upper bound on how many replicas of ``unit`` fit now (per node: the scarcest resource)."""
    nodes = np.flatnonzero(cand.static & state.fits(unit))
    if nodes.size == 0:
        return 0
    if unit.distinct:
        return int(nodes.size)
    need = unit.need
    per = np.full(nodes.size, 1 << 20, dtype=np.int64)
    for free, amount in (
        (state.gpus, need.gpus),
        (state.cpu, need.cpu),
        (state.mem, need.mem),
        (state.storage, need.storage),
        (state.shm, need.shm),
    ):
        if amount:
            per = np.minimum(per, np.floor(free[nodes] / amount + 1e-9).astype(np.int64))
    return int(per.sum())


def _place_fixed(
    plan: JobPlan,
    cands: list[UnitCandidates],
    prefs: list[np.ndarray],
    anti_running: np.ndarray,
    state: State,
    arrays: NodeArrays,
    snap: Snapshot,
    spot_ok: bool,
) -> list[ReplicaAt] | None:
    out: list[ReplicaAt] = []
    node_units = [(u, c, p) for u, c, p in zip(plan.units, cands, prefs, strict=True) if u.tpu is None]
    for u in plan.units:
        if u.tpu is not None:
            placed = _place_tpu_unit(u, state, snap, spot_ok)
            if placed is None:
                return None
            out.extend(placed)
    if not node_units:
        return out
    blocked = _anti_blocked(state, plan, anti_running)
    if plan.scope is None:
        placed = _place_node_units(plan, node_units, state, arrays, blocked, None)
        return None if placed is None else out + placed
    # A scoped gang: try each domain, fullest first (best fit), keep the first that holds the whole gang.
    any_static = np.zeros(len(snap.nodes), dtype=bool)
    for _, c, _ in node_units:
        any_static |= c.static
    codes = arrays.scope_codes(plan.scope)
    idx = np.flatnonzero(any_static & (codes >= 0))
    domains: dict[str, list[int]] = {}
    if idx.size:
        order = np.argsort(codes[idx], kind="stable")
        sorted_idx = idx[order]
        bounds = np.flatnonzero(np.diff(codes[sorted_idx])) + 1
        for group in np.split(sorted_idx, bounds):
            name = scope_value(snap, int(group[0]), plan.scope)
            assert name is not None
            domains[name] = group.tolist()
    need_gpus = sum(u.replicas * u.need.gpus for u, _, _ in node_units)
    ranked = sorted(domains.items(), key=lambda kv: (int(state.gpus[kv[1]].sum()), kv[0]))
    for _, members in ranked:
        if int(state.gpus[members].sum()) < need_gpus:
            continue
        allowed = np.zeros(len(snap.nodes), dtype=bool)
        allowed[members] = True
        mark = state.mark()
        placed = _place_node_units(plan, node_units, state, arrays, blocked, allowed)
        if placed is not None:
            return out + placed
        state.rollback(mark)
    return None


__all__ = ["State", "greedy", "itertools", "priority_order", "scope_value"]
