"""Greedy's scratch state: the free amounts of every node and TPU pod, updated as greedy places, with an
undo log so that a gang that does not fit whole is rolled back (:meth:`State.mark`/:meth:`State.rollback`).

Why its own module: the CP-SAT engine realizes its answer on the same state (so both engines place
replicas by one set of rules), and the baseline scorers read it; none of them needs greedy's algorithm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from placer.solver.assignment import ReplicaAt
from placer.solver.candidates import NodeArrays
from placer.solver.demand import JobPlan, Unit
from placer.solver.greedy.tpu_index import PodHeap
from placer.solver.objective.cost import Pricing
from placer.solver.preempt import Victim
from placer.solver.snapshot import Snapshot
from placer.solver.structure import Claim, InnerTree, Shape, compile_shape, match, request_text, shaped
from placer.topology.model import Coord
from placer.topology.tpu import TpuSlice

if TYPE_CHECKING:  # the baseline scorers read this state; it only holds their context
    from placer.solver.scorers import Context as ScorerContext

__all__ = ["State"]


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
    #: Per pod, per slice shape, the free slices (first-free order); a pod's entry goes when its chips change.
    slice_cache: dict[int, dict[tuple[int, ...], list[TpuSlice]]] = field(default_factory=dict)
    #: Per TPU demand (type, shape or chips, exclusive, spot, rules), the pods it may use and their shapes:
    #: static within a decision, so 5,000 alike jobs on 1,000 pods ask once, not 5 million times.
    #: Per pod, how many times its chips changed, and every change in order (:mod:`~.tpu_index`).
    pod_version: dict[int, int] = field(default_factory=dict)
    pod_changes: list[int] = field(default_factory=list)
    tpu_heaps: dict[tuple[object, ...], PodHeap] = field(default_factory=dict)
    tpu_options: dict[tuple[object, ...], dict[int, tuple[list[tuple[int, ...]], int]]] = field(
        default_factory=dict
    )
    #: The undo log (:meth:`rollback`): each entry a tuple tagged by its first item ("node", "extra",
    #: "pod", ...), the rest what that change overwrote, numpy scalars included.
    log: list[tuple[Any, ...]] = field(default_factory=list)
    anti_groups: dict[tuple[str, ...], tuple[tuple, list[int]]] = field(default_factory=dict)
    label_index: dict[tuple[str, str], set[int]] = field(default_factory=dict)
    taken: dict[int, int] = field(default_factory=dict)
    running_left: dict[int, int] = field(default_factory=dict)
    #: Running jobs this decision evicts, with their rank: evictions give budget back only to jobs that
    #: outrank the victim (:func:`within_budget`).
    evicted: dict[str, int] = field(default_factory=dict)
    #: GPUs and GPU jobs this decision added per queue (committed placements only).
    queue_use: dict[str, tuple[float, int]] = field(default_factory=dict)
    #: Nodes the job being placed may not use beyond ``closed`` (its queue's flavors without GPU quota left
    #: for it: :func:`~placer.solver.budgets.flavor_off`); set for one job at a time, not logged.
    off: np.ndarray | None = None
    #: What this decision added per (queue, resource, flavor) with a per-flavor quota (committed placements
    #: only).
    flavor_use: dict[tuple[str, str, str], float] = field(default_factory=dict)
    #: CPU cores, memory GB and pods this decision added per queue with such a budget (committed placements).
    queue_res_use: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    #: Money units per hour this decision added per queue and per tenant (committed placements only).
    cost_use: dict[str, int] = field(default_factory=dict)
    tenant_cost_use: dict[str, int] = field(default_factory=dict)
    #: Jobs this decision placed per throttle group (``Job.throttle``; committed placements only).
    throttle_use: dict[str, int] = field(default_factory=dict)
    #: GPUs this decision placed per group with a GPU limit (``Job.limits``; committed placements only).
    group_gpu_use: dict[str, float] = field(default_factory=dict)
    #: Licence seats taken by this decision's placements, by licence (``Job.licenses``).
    license_use: dict[str, int] = field(default_factory=dict)
    #: GPUs this decision added per cohort (``config.cohort``; committed placements only).
    cohort_use: dict[str, float] = field(default_factory=dict)
    #: Prices of replicas: the cost key of node choice and the dollar budgets (None: no cost term).
    pricing: Pricing | None = None
    #: ``Policy.preferred_affinity``: what a preferred rule on the jobs beside a replica (affinity or
    #: anti-affinity) weighs is its weight times this (:func:`~placer.solver.objective.preferences.
    #: beside_weight`); 0: not weighed.
    beside_multiplier: int = 1
    #: Per node, a cost to avoid (eviction cost of using it), the first key of node choice when set.
    penalty: np.ndarray | None = None
    #: A baseline scorer choosing nodes instead of placer's keys (None: placer's own).
    scorer: ScorerContext | None = None
    #: placer's own fragmentation key: FGD's measure against the decision's target workload (None: off).
    frag: ScorerContext | None = None
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
    #: Free amount of each extended resource a replica asked for, per node (:meth:`free_extra`, copied
    #: from the arrays on first use: most decisions ask for none).
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    _arrays: NodeArrays | None = field(default=None, repr=False)

    @staticmethod
    def of(arrays: NodeArrays) -> State:
        return State(
            snap=arrays.snap,
            **arrays.free_copies(),
            closed=np.zeros(len(arrays.snap.nodes), dtype=bool),
            pod_used={p.idx: set(p.used) for p in arrays.snap.pods},
            _arrays=arrays,
        )

    def free_extra(self, name: str) -> np.ndarray:
        """The free amount of extended resource ``name`` per node, as this decision left it."""
        free = self.extra.get(name)
        if free is None:
            assert self._arrays is not None  # State.of sets it
            free = self.extra[name] = self._arrays.extra_free(name).copy()
        return free

    def fits(self, unit: Unit) -> np.ndarray:
        need, eps = unit.need, 1e-9
        ok = (self.gpus >= need.gpus) & (self.cpu >= need.cpu - eps) & (self.mem >= need.mem - eps)
        ok &= (self.storage >= need.storage - eps) & (self.shm >= need.shm - eps) & ~self.closed
        if self.off is not None:
            ok &= ~self.off
        if need.milli:
            ok &= self.milli >= need.milli
        for name, amount in need.extra:
            ok &= self.free_extra(name) >= amount - eps
        if unit.exclusive:
            ok &= self.empty
        return ok

    def fits_node(self, node: int, unit: Unit, *, shape: bool = True) -> bool:
        """:meth:`fits` for one node (no array work), and — unless ``shape`` is False (the caller holds a
        claim for it) — the unit's Flux shape on the node's inner tree as it is now (:meth:`fits_shape`)."""
        need, eps = unit.need, 1e-9
        if self.closed[node] or (unit.exclusive and not self.empty[node]):
            return False
        if self.off is not None and self.off[node]:
            return False
        if self.gpus[node] < need.gpus or (need.milli and self.milli[node] < need.milli):
            return False
        return (
            self.cpu[node] >= need.cpu - eps
            and self.mem[node] >= need.mem - eps
            and self.storage[node] >= need.storage - eps
            and self.shm[node] >= need.shm - eps
            and (
                not need.extra
                or all(self.free_extra(name)[node] >= amount - eps for name, amount in need.extra)
            )
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

    def pick(self, node: int, unit: Unit, share_gpu: int | None = None) -> tuple[tuple[int, ...], int | None]:
        """The GPUs and share :meth:`take` gives one replica of ``unit`` (no Flux shape) on ``node`` now,
        changing nothing: what a caller that places one replica and drops the state needs (the express
        lane's :func:`~placer.solver.greedy.core.place_alone`)."""
        assert self.shape_of(node, unit) is None
        v = self.snap.nodes[node]
        need = unit.need
        if not (need.gpus or need.milli):
            return (), None
        free, milli = self.free_idx.get(node, v.free_gpus), self.milli_idx.get(node, v.milli_free)
        return _gpus_for(free, milli, need.gpus, need.milli, share_gpu, v.name)

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
        elif need.gpus or need.milli:
            gpus, share = _gpus_for(free, milli, need.gpus, need.milli, share_gpu, v.name)
            for g in gpus:
                milli[g] = 0 if share is None else milli[g] - share
                if g in free:
                    free.remove(g)
        self.gpus[node] = len(free)
        self.milli[node] = max(milli, default=0)
        self.cpu[node] -= need.cpu
        self.mem[node] -= need.mem
        self.storage[node] -= need.storage
        self.shm[node] -= need.shm
        for name, amount in need.extra:
            self._take_extra(node, name, amount)
        self.empty[node] = False
        if unit.exclusive:
            self.closed[node] = True
        if sh is not None:
            self.shaped_on.setdefault(node, []).append((sh[1], gpus))
        return gpus, share

    def _take_extra(self, node: int, name: str, amount: float) -> None:
        """Take ``amount`` of extended resource ``name`` on ``node`` (negative: give it back), logged."""
        free = self.free_extra(name)
        self.log.append(("extra", node, name, float(free[node])))
        free[node] -= amount

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
                for name, amount in r.extra.items():
                    self._take_extra(n, name, -amount)
                left = self.running_left.get(n, len(snap.nodes[n].running)) - 1
                self.running_left[n] = left
                self.empty[n] = left <= 0 and not self.taken.get(n, 0)
            elif r.tpu_pod is not None and r.tpu_pod in snap.pod_by_name:
                pidx = snap.pod_by_name[r.tpu_pod]
                chips = {tuple(c) for c in r.tpu_chips}
                self.pod_used[pidx] -= chips
                self.log.append(("podfree", pidx, chips))
                self.pod_changed(pidx)
        self.evicted[victim.id] = victim.rank
        self.log.append(("evicted", victim.id))

    def pod_changed(self, pidx: int) -> None:
        """Pod ``pidx``'s used chips changed: its cached slices go, its version moves on."""
        self.slice_cache.pop(pidx, None)
        self.pod_version[pidx] = self.pod_version.get(pidx, 0) + 1
        self.pod_changes.append(pidx)

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

    def close(self, nodes: np.ndarray) -> None:
        """Nothing more of this decision goes on ``nodes`` (a domain an exclusive slice took), logged."""
        self.log.append(("closed", nodes, self.closed[nodes].copy()))
        self.closed[nodes] = True

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
            elif kind == "extra":
                self.extra[entry[2]][entry[1]] = entry[3]
                self.changed.add(entry[1])
            elif kind == "labels":
                self.labels_on[entry[1]].pop()
            elif kind == "pod":
                self.pod_used[entry[1]] -= entry[2]
                self.pod_changed(entry[1])
            elif kind == "podfree":
                self.pod_used[entry[1]] |= entry[2]
                self.pod_changed(entry[1])
            elif kind == "evicted":
                self.evicted.pop(entry[1], None)
            elif kind == "closed":
                self.closed[entry[1]] = entry[2]

    def commit(self) -> None:
        """Forget the undo log (the changes since the last commit stay)."""
        self.log.clear()


def _gpus_for(
    free: Sequence[int], milli: Sequence[int], gpus: int, share: int, share_gpu: int | None, node: str
) -> tuple[tuple[int, ...], int | None]:
    """The GPUs one replica takes of a node whose whole free GPUs are ``free`` (in order) and free milli
    per GPU ``milli``: its ``gpus`` lowest free ones, or for a ``share`` of one GPU, ``share_gpu`` when
    given, else the best fit (the least free milli that still holds it, the lowest index among equal).
    Raises ValueError when the share does not fit there."""
    if gpus:
        return tuple(free[:gpus]), None
    options = [g for g in range(len(milli)) if milli[g] >= share]
    if not options:
        raise ValueError(f"no GPU of node {node} has {share} milli free")
    g = min(options, key=lambda i: (milli[i], i)) if share_gpu is None else share_gpu
    if g not in options:
        raise ValueError(f"GPU {g} of node {node} has no {share} milli free")
    return (g,), share
