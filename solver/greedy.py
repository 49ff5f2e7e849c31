"""Phase 4: greedy — job by job in priority order, gang-aware best fit. Milliseconds, always valid.

Why it exists: it is the answer in hand when the deadline comes, the hint CP-SAT starts from, and the
baseline CP-SAT must never be worse than. It applies the same hard constraints (the candidates of
:mod:`solver.candidates`) and the same scoring (:mod:`solver.scoring`) as the CP-SAT model.

Order: priority class, numeric priority, then bigger demand first (big jobs are hardest to fit later),
submit time, batch position. For each replica the node is chosen by, in turn: highest preference score
(level 2), least free GPUs left after placing (best fit: keeps whole nodes and NVLink domains whole for
big jobs, level 3), no GPUs stranded by CPU-only work, then node order. A gang is placed whole or not at
all; a gang confined to a scope (rack, block, zone, NVLink domain) tries the fullest domain that can hold
it first. TPU slices go to the fullest pod that has a free slice of the shape.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from solver.assignment import Assignment, ReplicaAt
from solver.candidates import NodeArrays, UnitCandidates
from solver.demand import JobPlan, Unit
from solver.rules import holds
from solver.snapshot import Snapshot
from solver.tpu_shapes import tpu_shapes
from topology.model import Coord
from topology.tpu import TpuSlice, slices_in_pod


def scope_value(snap: Snapshot, node: int, scope: str) -> str | None:
    """The value of a gang scope for a node (its rack, block, zone, NVLink domain, or name)."""
    n = snap.nodes[node].node
    return {
        "node": n.name,
        "rack": n.rack,
        "block": n.block,
        "zone": n.zone,
        "nvlink_domain": n.nvlink_domain,
    }.get(scope)


def priority_order(plans: list[JobPlan]) -> list[int]:
    """Plan indices in the order greedy places them."""

    def key(p: JobPlan) -> tuple[object, ...]:
        submit = p.job.submit_time.timestamp() if p.job.submit_time else 0.0
        return (-p.job.priority_class.rank, -p.job.priority, -p.demand_units, submit, p.idx)

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

    def take(self, node: int, unit: Unit) -> tuple[tuple[int, ...], int | None]:
        """Take one replica's resources on ``node``; returns (GPU indices, fractional milli or None)."""
        need = unit.need
        v = self.snap.nodes[node]
        if node not in self.free_idx:
            self.free_idx[node] = list(v.free_gpus)
            self.milli_idx[node] = list(v.milli_free)
        free, milli = self.free_idx[node], self.milli_idx[node]
        gpus: tuple[int, ...] = ()
        share = None
        if need.gpus:
            gpus = tuple(free[: need.gpus])
            del free[: need.gpus]
            for g in gpus:
                milli[g] = 0
        elif need.milli:
            # Best fit among shareable GPUs: the one with the least free share that still holds it.
            options = [g for g in range(len(milli)) if milli[g] >= need.milli]
            g = min(options, key=lambda i: (milli[i], i))
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
        return gpus, share

    def snapshot(self) -> tuple[object, ...]:
        """Everything :meth:`take` changes, to roll back a gang that did not fit whole."""
        return (
            self.gpus.copy(),
            self.milli.copy(),
            self.cpu.copy(),
            self.mem.copy(),
            self.storage.copy(),
            self.shm.copy(),
            self.empty.copy(),
            self.closed.copy(),
            {k: list(v) for k, v in self.free_idx.items()},
            {k: list(v) for k, v in self.milli_idx.items()},
            {k: list(v) for k, v in self.labels_on.items()},
        )

    def restore(self, saved: tuple[object, ...]) -> None:
        (
            self.gpus,
            self.milli,
            self.cpu,
            self.mem,
            self.storage,
            self.shm,
            self.empty,
            self.closed,
            self.free_idx,
            self.milli_idx,
            self.labels_on,
        ) = saved  # type: ignore[assignment]


def _anti_blocked(state: State, plan: JobPlan, anti_running: np.ndarray) -> np.ndarray:
    """Nodes the job may not use: running jobs matching its anti-affinity, or jobs placed in this batch
    that match it, or whose own anti-affinity matches it."""
    blocked = anti_running.copy()
    for node, entries in state.labels_on.items():
        for labels, anti in entries:
            if any(holds(r, labels) for r in plan.anti) or any(holds(r, plan.labels) for r in anti):
                blocked[node] = True
                break
    return blocked


def _frag(state: State, arrays: NodeArrays, unit: Unit) -> np.ndarray:
    """Level-3 key per node: GPUs left free after one replica (best fit); CPU-only work avoids GPU nodes."""
    if unit.need.gpus or unit.need.milli:
        return state.gpus - unit.need.gpus
    return arrays.cap_gpus * 100


def _choose(mask: np.ndarray, pref: np.ndarray, frag: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    order = np.lexsort((idx, frag[idx], -pref[idx]))
    return int(idx[order[0]])


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
            node = _choose(mask, pref, _frag(state, arrays, unit))
            if node is None:
                return None
            gpus, share = state.take(node, unit)
            used_by_unit.add(node)
            used_by_job.add(node)
            out.append(ReplicaAt(unit=unit, node=node, gpus=gpus, milli=share))
    return out


def _place_tpu_unit(unit: Unit, state: State, snap: Snapshot, spot_ok: bool) -> list[ReplicaAt] | None:
    assert unit.tpu is not None
    out: list[ReplicaAt] = []
    for _ in range(unit.replicas):
        best: tuple[tuple[int, str], TpuSlice] | None = None
        for pv in snap.pods:
            pod = pv.pod
            if not pod.usable or (unit.tpu.type and pod.generation != unit.tpu.type):
                continue
            if not spot_ok and pod.capacity_class == "spot":
                continue
            if unit.rules and not all(holds(r, pod.labels) for r in unit.rules):
                continue
            used = state.pod_used[pv.idx]
            free = pod.chips - len(used)
            for shape in tpu_shapes(unit.tpu, pod):
                key = (pv.idx, shape)
                if key not in state.slice_cache:
                    state.slice_cache[key] = slices_in_pod(pod, shape, used)
                fitting = state.slice_cache[key]
                if fitting and (best is None or (free, pod.name) < best[0]):
                    best = ((free, pod.name), fitting[0])
                    break
        if best is None:
            return None
        sl = best[1]
        pidx = snap.pod_by_name[sl.pod]
        chips = sl.chips
        state.pod_used[pidx] |= set(chips)
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
) -> Assignment:
    """Place the plans (those with candidates) in priority order; the rest stay pending."""
    snap = arrays.snap
    state = State.of(arrays)
    result = Assignment(engine="greedy")
    for i in order if order is not None else priority_order(plans):
        if i not in candidates:
            continue
        plan = plans[i]
        saved = state.snapshot()
        pod_saved = {k: set(v) for k, v in state.pod_used.items()}
        replicas = _place_plan(
            plan, candidates[i], prefs[i], anti_running[i], state, arrays, snap, spot_ok[i]
        )
        if replicas is None:
            state.restore(saved)
            state.pod_used = pod_saved
            state.slice_cache.clear()
            continue
        for r in replicas:
            if r.node is not None:
                state.labels_on.setdefault(r.node, []).append((plan.labels, plan.anti))
        result.placed[i] = replicas
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
    domains: dict[str, list[int]] = {}
    for n in np.flatnonzero(any_static):
        val = scope_value(snap, int(n), plan.scope)
        if val is not None:
            domains.setdefault(val, []).append(int(n))
    need_gpus = sum(u.replicas * u.need.gpus for u, _, _ in node_units)
    ranked = sorted(domains.items(), key=lambda kv: (int(state.gpus[kv[1]].sum()), kv[0]))
    for _, members in ranked:
        if int(state.gpus[members].sum()) < need_gpus:
            continue
        allowed = np.zeros(len(snap.nodes), dtype=bool)
        allowed[members] = True
        saved = state.snapshot()
        placed = _place_node_units(plan, node_units, state, arrays, blocked, allowed)
        if placed is not None:
            return out + placed
        state.restore(saved)
    return None


__all__ = ["State", "greedy", "itertools", "priority_order", "scope_value"]
