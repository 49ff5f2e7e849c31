"""Phase 4: greedy — job by job in priority order, gang-aware best fit. Milliseconds, always valid.

Why it exists: it is the answer in hand when the deadline comes, the hint CP-SAT starts from, and the
baseline CP-SAT must never be worse than. It applies the same hard constraints (the candidates of
:mod:`placer.solver.candidates`) and the same scoring (:mod:`placer.solver.objective.preferences`) as the
CP-SAT model.

Order (:func:`priority_order`): priority class, numeric priority, submit time, then the most constrained
and the biggest, job id (so the batch's order never matters). For each replica the node is chosen by the
objective's levels (:mod:`placer.solver.objective.score`, ``docs/solver.md``): least eviction cost when it
evicts, highest preference (affinity weights, model and data locality, spot, ``pack``), least growth of
FGD's fragmentation (quantized), lowest price (when nodes are priced), then fit — fewest GPUs left free
(best fit, for shares and when FGD's key is off; whole GPUs under FGD take its ties in node order), NVLink
nodes kept for NVLink work, GPU nodes kept from CPU-only work — then node order. A gang is placed whole
or not at all; a gang confined to a scope (rack, block, zone, NVLink domain) tries the fullest domain that
can hold it first. TPU slices go to the cheapest, then fullest pod that has a free slice of the shape.
Budgets (queue GPU budgets, queue and tenant dollar budgets) are checked on the placement found; a job
over one stays pending.

With a baseline scorer (``Policy.scorer``, :mod:`placer.solver.scorers`) the node of each replica is chosen by
that scorer's key instead (after the eviction cost, when evicting), everything else as above.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from placer.solver.apart import one_of_each
from placer.solver.assignment import Assignment, ReplicaAt, node_count_ok
from placer.solver.budgets import (
    Budgets,
    budget_cost,
    charge_budget,
    cost_left,
    flavor_nodes,
    flavor_off,
    over_flavors,
    within_budget,
    within_throttle,
)
from placer.solver.cancel import cancelled
from placer.solver.candidates import NodeArrays, UnitCandidates, pod_admits
from placer.solver.demand import JobPlan, Unit
from placer.solver.greedy.evictions import place_with_evictions
from placer.solver.greedy.state import State
from placer.solver.greedy.tpu_index import PodHeap
from placer.solver.jobs.flavors import FLAVOR_LEVEL
from placer.solver.jobs.model import AffinityOperator, GpuAffinity, Job, LabelRule, Rule
from placer.solver.objective.cost import Pricing
from placer.solver.objective.fragmentation import Targets
from placer.solver.objective.preferences import beside_rules, beside_weight, running_match
from placer.solver.preempt import Victim
from placer.solver.rules import holds
from placer.solver.scorers import Context as ScorerContext
from placer.solver.scorers import fgd_best, fgd_scores
from placer.solver.snapshot import Snapshot
from placer.solver.tpu_shapes import host_chips, tpu_shapes
from placer.topology.tpu import TpuSlice, slices_in_pod

__all__ = ["NVLINK_WASTE", "greedy", "place_alone", "priority_key", "priority_order"]


def priority_order(plans: list[JobPlan], flexibility: dict[int, int] | None = None) -> list[int]:
    """Plan indices in the order greedy places them: priority class, numeric priority, submit time (first
    come, first served within a priority, as Kueue and Slurm order a queue), then — with ``flexibility``
    (how many nodes a job could ever use) — the most constrained first (a job that only NVLink nodes can
    hold goes before one any node can), then bigger demand and id.

    Why arrival before size: a batch is a window of a stream, and the stream's order is what the next
    batches continue; packing the window biggest-first fights it (the Alibaba fill, batches of 100:
    94.2 % allocated biggest-first, 95.5 % in arrival order, ``docs/fill.md``). Where packing a window
    better pays, CP-SAT finds it from this answer."""
    flex = flexibility or {}
    return [
        p.idx for p in sorted(plans, key=lambda p: priority_key(p.job, p.demand_units, flex.get(p.idx, 0)))
    ]


def priority_key(job: Job, demand: float, flexibility: int = 0) -> tuple[object, ...]:
    """:func:`priority_order`'s sort key of a job of ``demand`` units that could use ``flexibility`` nodes
    (0 when not known yet: the demand phase orders jobs before their candidates exist)."""
    submit = job.submit_time.timestamp() if job.submit_time else 0.0
    return (-job.priority_class.rank, -job.priority, submit, flexibility, -demand, job.id)


def _anti_blocked(state: State, plan: JobPlan, anti_running: np.ndarray) -> np.ndarray:
    """Nodes the job may not use: running jobs matching its anti-affinity, or jobs placed in this batch
    that match it, or whose own anti-affinity matches it."""
    blocked = anti_running.copy()
    for r in plan.anti:
        nodes = _placed_matching(state, r)
        if nodes:
            blocked[sorted(nodes)] = True
    # Placed jobs with anti-affinity, grouped by their rules: each rule set is tested once.
    for anti, on in state.anti_groups.values():
        if any(holds(r, plan.labels) for r in anti):
            blocked[on] = True
    return blocked


def _placed_matching(state: State, rule: Rule) -> set[int]:
    """Nodes where a job this decision placed has labels ``rule`` matches: an ``In`` rule looked up in the
    index of its key, another tested against every placed job's labels."""
    if isinstance(rule, LabelRule) and rule.operator is AffinityOperator.IN:
        return set().union(*(state.label_index.get((rule.key, v), set()) for v in rule.values))
    return {n for n, entries in state.labels_on.items() if any(holds(rule, lab) for lab, _ in entries)}


def _beside_placed(
    state: State, arrays: NodeArrays, plan: JobPlan, prefs: list[np.ndarray]
) -> list[np.ndarray]:
    """The job's preference scores with its preferred rules on jobs (anti-affinity: less the weight,
    affinity: plus it) on the nodes where a job this decision placed matches the rule and no running job
    does (the running ones are in ``prefs`` already: :func:`~placer.solver.objective.preferences.
    running_beside`), so that each rule counts once per node, as the objective counts it
    (:mod:`placer.solver.objective.score`)."""
    rules = beside_rules(plan.job)
    if not rules or not state.labels_on or not state.beside_multiplier:
        return prefs
    out: np.ndarray | None = None
    for r, sign in rules:
        weight = beside_weight(r, state.beside_multiplier)
        if not weight:
            continue
        hit = np.zeros(len(prefs[0]), dtype=bool)
        hit[sorted(_placed_matching(state, r))] = True
        hit &= ~running_match(r, arrays)
        if hit.any():
            if out is None:
                out = np.zeros(len(prefs[0]), dtype=np.int64)
            out[hit] += sign * weight
    return prefs if out is None else [p + out for p in prefs]


def _beside_own(plan: JobPlan, state: State) -> int:
    """What a replica of the job gains (positive) or loses (negative) beside another of its own replicas:
    the signed weights of its preferred rules on jobs that its own labels match (a job that would rather
    not share a node with its own kind spreads its replicas when it can; one that would rather share
    packs them)."""
    return sum(
        sign * beside_weight(r, state.beside_multiplier)
        for r, sign in beside_rules(plan.job)
        if holds(r, plan.labels)
    )


#: Fragmentation key added for placing work that does not need NVLink on an NVLink node (in GPUs left).
NVLINK_WASTE = 100


def _frag(state: State, arrays: NodeArrays, unit: Unit, nvlink: bool, *, fragmentation: bool) -> np.ndarray:
    """Level-6 key per node (fit): GPUs left free after one replica (best fit); work that does not need
    NVLink avoids NVLink nodes (they are what NVLink jobs can use; keep them whole for big jobs); CPU-only
    work avoids GPU nodes.

    Whole GPUs under the fragmentation key (``fragmentation``: level 4 is on) get no best fit: FGD's
    quantized measure has told the nodes apart, and among its ties the node order packs the same nodes
    consistently, as ``placer-frag`` does; best fit there moved multi-GPU work across nodes FGD called
    equal (the online Alibaba fill, 10 seeds: multigpu40 96.68 -> 96.84, multigpu20 95.74 -> 95.93;
    shares keep best fit: without it gpushare80 fell from 89.28 to 88.91; ``docs/fill.md``)."""
    if unit.need.gpus and fragmentation:
        return np.zeros(len(state.gpus)) if nvlink else NVLINK_WASTE * arrays.nvlink_nodes()
    if unit.need.gpus or unit.need.milli:
        left = state.gpus - unit.need.gpus
        return left if nvlink else left + NVLINK_WASTE * arrays.nvlink_nodes()
    return arrays.cap_gpus * 100


def _choose(
    mask: np.ndarray,
    pref: np.ndarray | None,
    frag: np.ndarray,
    penalty: np.ndarray | None = None,
    cost: np.ndarray | None = None,
    grows: Callable[[np.ndarray], np.ndarray] | None = None,
) -> int | None:
    """The node for one replica, by the objective's levels (``docs/solver.md``): least penalty (eviction
    cost) when set, then highest preference, then least fragmentation growth (``grows``: FGD's measure,
    quantized), then lowest price (when priced), then best fit (not for whole GPUs under FGD:
    :func:`_frag`), then node order."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    # The lexicographic least, one level at a time: each level keeps only the nodes tied at its best
    # value (ascending, so the first left is the lowest index), and the costly levels — FGD's measure —
    # are computed only for the nodes the levels above left tied (a sort of every candidate on every key
    # computed the measure on all of them).
    if penalty is not None:
        idx = _least(idx, penalty[idx])
    if pref is not None:  # None: the same preference on every node
        idx = _least(idx, -pref[idx])
    if grows is not None and idx.size > 1:
        idx = _least(idx, grows(idx))
    if cost is not None:
        idx = _least(idx, cost[idx])
    return int(_least(idx, frag[idx])[0])


def _least(idx: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The entries of ``idx`` whose ``values`` are the least (order kept). A NaN ranks after every number,
    and NaNs tie with each other, as a sort ranks them.

    >>> _least(np.array([4, 7, 9]), np.array([2.0, 1.0, 1.0])).tolist()
    [7, 9]
    >>> _least(np.array([4, 7, 9]), np.array([np.nan, 3.0, np.nan])).tolist()
    [7]
    >>> _least(np.array([4, 7]), np.array([np.nan, np.nan])).tolist()
    [4, 7]
    """
    if idx.size < 2:
        return idx
    best = values.min()
    if best != best:  # NaN
        numbers = ~np.isnan(values)
        if not numbers.any():
            return idx
        best = values[numbers].min()
    return idx[values == best]


#: ``pack`` (MLX §7.1, "pack GPUs onto fewest nodes"): added to the preference of nodes the job already
#: uses, above any preference score (affinity weights are at most 100 per rule).
PACK_BONUS = 1_000_000


def _packed(pref: np.ndarray, used: set[int]) -> np.ndarray:
    """Preferences with the job's own nodes first (a ``pack`` job's next replica joins them)."""
    if not used:
        return pref
    out = pref.copy()
    out[list(used)] += PACK_BONUS
    return out


def _growth(state: State, unit: Unit) -> Callable[[np.ndarray], np.ndarray]:
    """The fragmentation key of ``unit`` per node (lower is better): FGD's increase, quantized as the
    artifact scores it for GPU shares and more coarsely for whole GPUs and CPU-only work, so near-equal
    nodes tie and the next keys (best fit for shares, node order) pack them
    (:func:`~placer.solver.scorers.score_levels`, ``objective/fragmentation.py``)."""
    ctx = state.frag
    assert ctx is not None

    def key(idx: np.ndarray) -> np.ndarray:
        return -fgd_scores(ctx, state, unit, idx)

    return key


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


def _node_keys(
    state: State, arrays: NodeArrays, unit: Unit, nvlink: bool
) -> tuple[np.ndarray | None, Callable[[np.ndarray], np.ndarray] | None, np.ndarray | None]:
    """The keys of :func:`_choose` beyond preference for one replica of ``unit``: price per node (when nodes
    are priced and placer's keys choose), FGD's growth (when its target is set) and fit (None under a
    baseline scorer, which chooses by its own key)."""
    cost = (
        None
        if state.pricing is None or state.scorer is not None or not state.pricing.nodes_priced
        else state.pricing.node_costs(unit.need, unit.exclusive)
    )
    grows = None if state.frag is None else _growth(state, unit)
    frag = (
        None
        if state.scorer is not None
        else _frag(state, arrays, unit, nvlink, fragmentation=grows is not None)
    )
    return cost, grows, frag


def _share_gpu(state: State, node: int, unit: Unit) -> int | None:
    """The GPU of ``node`` a share goes to: the baseline scorer's or FGD's choice; None for best fit."""
    if state.scorer is not None:
        return state.scorer.share_gpu(state, node, unit)
    if state.frag is not None:
        return state.frag.share_gpu(state, node, unit)
    return None


def _place_node_units(
    plan: JobPlan,
    units: list[tuple[Unit, UnitCandidates, np.ndarray]],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
    *,
    count: int | None = None,
    used_by_job: set[int] | None = None,
) -> list[ReplicaAt] | None:
    """Every replica of ``units`` (or ``count`` of the single unit given, its domains already chosen),
    node by node by the usual keys, within ``allowed``; None when one does not fit (the caller rolls
    back). ``used_by_job``: nodes the job already holds (self-anti-affinity), updated."""
    if count is None and any(u.domains or u.slices for u, _, _ in units):
        return _place_by_domains(plan, units, state, arrays, blocked, allowed)
    out: list[ReplicaAt] = []
    used_by_job = set() if used_by_job is None else used_by_job
    self_anti = any(holds(r, plan.labels) for r in plan.anti)
    pack = plan.job.placement.gpu_affinity is GpuAffinity.PACK
    own = 0 if self_anti else _beside_own(plan, state)
    for unit, cand, pref in units:
        used_by_unit: set[int] = set()
        for _ in range(unit.replicas if count is None else count):
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
            claim = None
            cost, grows, frag = _node_keys(state, arrays, unit, plan.nvlink)
            while True:  # only ``mask`` changes between tries (a node whose sockets failed the shape)
                if frag is None:
                    node = _choose_baseline(mask, state, unit)
                else:
                    here = _packed(pref, used_by_job) if pack else pref
                    if own and used_by_job:
                        here = here.copy()
                        here[list(used_by_job)] += own
                    node = _choose(mask, here, frag, state.penalty, cost, grows)
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
            gpus, share = state.take(node, unit, _share_gpu(state, node, unit), claim)
            used_by_unit.add(node)
            used_by_job.add(node)
            out.append(ReplicaAt(unit=unit, node=node, gpus=gpus, milli=share))
    return out


def _place_by_domains(
    plan: JobPlan,
    units: list[tuple[Unit, UnitCandidates, np.ndarray]],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
) -> list[ReplicaAt] | None:
    """Units with Flux levels above the node (:mod:`placer.solver.domains`): a unit asking for ``k``
    domains of its innermost level gets ``replicas / k`` replicas in each of ``k`` distinct domains,
    tried fullest first (best fit, as gang scopes), each domain's share placed whole or not at all; its
    outer levels are then checked on the nodes chosen (a miss: None). Units with Kueue slices go slice by
    slice (:func:`_place_slices`). A pod set that Kueue gives one flavor goes whole into the first flavor,
    in the queue's order, where it fits (:func:`_in_one_flavor`), as Kueue tries them. Units without any
    of these follow, anywhere ``allowed``."""
    out: list[ReplicaAt] = []
    used_by_job: set[int] = set()
    for unit, cand, pref in sorted(units, key=lambda t: not (t[0].domains or t[0].slices)):
        levels = tuple(d for d in unit.domains if not d[0].startswith(FLAVOR_LEVEL))
        if len(levels) < len(unit.domains):
            placed = _in_one_flavor(
                plan, (unit, cand, pref), state, arrays, blocked, allowed, used_by_job, levels
            )
        else:
            placed = _place_unit(
                plan, (unit, cand, pref), state, arrays, blocked, allowed, used_by_job, levels
            )
        if placed is None:
            return None
        out.extend(placed)
    return out


def _in_one_flavor(
    plan: JobPlan,
    item: tuple[Unit, UnitCandidates, np.ndarray],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
    used_by_job: set[int],
    levels: tuple[tuple[str, int], ...],
) -> list[ReplicaAt] | None:
    """A pod set of a Kueue queue that gives it one flavor of each resource group (``OneFlavor``): all of
    it on the nodes of one flavor of each, the flavors tried in the queue's order (Kueue's: the first that
    fits), a failed try rolled back; its other ``levels`` inside that flavor."""
    unit, cand, _ = item
    codes: np.ndarray | None = None
    for level, _k in unit.domains:
        if level.startswith(FLAVOR_LEVEL):
            c = arrays.scope_codes(level)
            # Several resource groups with a choice: one code per combination, in their order.
            codes = (
                c if codes is None else np.where((codes < 0) | (c < 0), -1, codes * (int(c.max()) + 1) + c)
            )
    assert codes is not None
    here = cand.static & (codes >= 0)
    if allowed is not None:
        here &= allowed
    for v in np.unique(codes[here]).tolist():
        mark, held = state.mark(), set(used_by_job)
        placed = _place_unit(plan, item, state, arrays, blocked, here & (codes == v), used_by_job, levels)
        if placed is not None:
            return placed
        state.rollback(mark)
        used_by_job.intersection_update(held)
    return None


def _place_unit(
    plan: JobPlan,
    item: tuple[Unit, UnitCandidates, np.ndarray],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
    used_by_job: set[int],
    levels: tuple[tuple[str, int], ...],
) -> list[ReplicaAt] | None:
    """One unit of :func:`_place_by_domains`, its Flux ``levels`` (outermost first) honoured."""
    unit, cand, pref = item
    if unit.slices:
        return _place_slices(plan, unit, cand, pref, state, arrays, blocked, allowed, used_by_job)
    if not levels:
        return _place_node_units(
            plan,
            [item],
            state,
            arrays,
            blocked,
            allowed,
            count=unit.replicas,
            used_by_job=used_by_job,
        )
    level, k = levels[-1]
    per = unit.replicas // k
    codes = arrays.scope_codes(level)
    here = cand.static & (codes >= 0)
    if allowed is not None:
        here &= allowed
    values = np.unique(codes[here])
    free = {int(v): int(state.gpus[here & (codes == v)].sum()) for v in values}
    got: list[ReplicaAt] = []
    for v in sorted(free, key=lambda v: (free[v], v)):
        if len(got) == unit.replicas:
            break
        inside = here & (codes == v)
        if unit.distinct and int(inside.sum()) < per:
            continue
        placed = _in_domain(plan, item, state, arrays, blocked, inside, per, used_by_job)
        if placed is None:
            continue
        got.extend(placed)
    if len(got) < unit.replicas or not _outer_levels_hold(levels[:-1], got, arrays):
        return None
    return got


def _place_slices(
    plan: JobPlan,
    unit: Unit,
    cand: UnitCandidates,
    pref: np.ndarray,
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    allowed: np.ndarray | None,
    used_by_job: set[int],
) -> list[ReplicaAt] | None:
    """Kueue slices above the node (``unit.slices``): ``size`` replicas at a time, each slice inside one
    domain of the level, placed whole or not at all; the fullest domain with room first (best fit, as
    for domain counts and gang scopes), ties by the domain's name. Several slices may share a domain; a
    node in no domain of the level holds none. None when some slice finds no domain.

    Exclusive slices (``unit.exclusive_domains``, JobSet exclusive placement) take only domains where
    nothing runs or is placed yet, one slice each, and close every node of the domain behind them, so
    nothing else of this decision goes there (greedy's state logs it: a gang that fails leaves no trace)."""
    assert unit.slices is not None
    level, size = unit.slices
    codes = arrays.scope_codes(level)
    here = cand.static & (codes >= 0)
    if allowed is not None:
        here &= allowed
    if unit.exclusive_domains:
        here &= ~np.isin(codes, codes[(~state.empty | state.closed) & (codes >= 0)])
    out: list[ReplicaAt] = []
    for _ in range(unit.replicas // size):
        idx = np.flatnonzero(here)
        if not idx.size:
            return None
        for code in _fullest_first(level, idx, state, arrays).tolist():
            inside = here & (codes == code)
            placed = _in_domain(plan, (unit, cand, pref), state, arrays, blocked, inside, size, used_by_job)
            if placed is None:
                continue
            if unit.distinct:  # the next slices of this unit keep off its nodes, as one call would
                here[[r.node for r in placed if r.node is not None]] = False
            if unit.exclusive_domains:  # the domain is this slice's alone
                state.close(np.flatnonzero(codes == code))
                here &= codes != code
            out.extend(placed)
            break
        else:
            return None
    return out


def _fullest_first(
    scope: str, idx: np.ndarray, state: State, arrays: NodeArrays, least_gpus: int = 0
) -> np.ndarray:
    """The domains of ``scope`` of the nodes ``idx`` (each in one; codes of ``scope_codes``) with at least
    ``least_gpus`` free GPUs, fullest first (best fit), ties by the domain's name. Free GPUs per domain in
    one pass: a gang's domains are hundreds of racks on 10,000 nodes."""
    of = arrays.scope_codes(scope)[idx]
    free = np.bincount(of, weights=state.gpus[idx], minlength=int(of.max()) + 1).astype(np.int64)
    present = np.unique(of)
    present = present[free[present] >= least_gpus]
    return present[np.lexsort((arrays.scope_ranks(scope)[present], free[present]))]


def _in_domain(
    plan: JobPlan,
    unit: tuple[Unit, UnitCandidates, np.ndarray],
    state: State,
    arrays: NodeArrays,
    blocked: np.ndarray,
    inside: np.ndarray,
    count: int,
    used_by_job: set[int],
) -> list[ReplicaAt] | None:
    """``count`` replicas of ``unit`` on the nodes ``inside`` (one domain), whole or not at all: None,
    and greedy's state rolled back, when they do not all fit. ``used_by_job`` gains the nodes taken."""
    mark = state.mark()
    taken = set(used_by_job)
    placed = _place_node_units(plan, [unit], state, arrays, blocked, inside, count=count, used_by_job=taken)
    if placed is None:
        state.rollback(mark)
        return None
    used_by_job |= taken
    return placed


def _outer_levels_hold(
    levels: tuple[tuple[str, int], ...], placed: list[ReplicaAt], arrays: NodeArrays
) -> bool:
    """Whether the replicas lie in exactly the asked number of domains of each outer level, as many in
    each (the innermost level was chosen so)."""
    for level, k in levels:
        codes = arrays.scope_codes(level)
        per: dict[int, int] = {}
        for r in placed:
            assert r.node is not None
            per[int(codes[r.node])] = per.get(int(codes[r.node]), 0) + 1
        if -1 in per or len(per) != k or len(set(per.values())) != 1:
            return False
    return True


def _tpu_options(
    unit: Unit, key: tuple[object, ...], state: State, snap: Snapshot, spot_ok: bool
) -> dict[int, tuple[list[tuple[int, ...]], int]]:
    """The pods ``unit`` may use, its slice shapes in each and the price of one such slice there
    (:attr:`State.tpu_options`, shared by every unit with the same ``key``: TPU demand and rules)."""
    assert unit.tpu is not None
    hit = state.tpu_options.get(key)
    if hit is None:
        hit = {}
        for pv in snap.pods:
            if pod_admits(unit, pv.pod, spot_ok):
                shapes = tpu_shapes(unit.tpu, pv.pod)
                if shapes:
                    price = 0 if state.pricing is None else state.pricing.on_pod(pv.idx, math.prod(shapes[0]))
                    hit[pv.idx] = (shapes, price)
        state.tpu_options[key] = hit
    return hit


def _tpu_key(unit: Unit, spot_ok: bool) -> tuple[object, ...]:
    return (unit.tpu, unit.exclusive, spot_ok, repr(unit.rules))


def _place_tpu_unit(unit: Unit, state: State, snap: Snapshot, spot_ok: bool) -> list[ReplicaAt] | None:
    """Each replica on the cheapest, then fullest, then first-named pod with a free slice of its shape,
    on that pod's first free slice (:mod:`~placer.solver.greedy.tpu_index` finds the pod)."""
    assert unit.tpu is not None
    out: list[ReplicaAt] = []
    key = _tpu_key(unit, spot_ok)
    shapes_of = _tpu_options(unit, key, state, snap, spot_ok)

    def entry(pidx: int) -> tuple[int, int, str, int, int] | None:
        if pidx not in shapes_of:
            return None
        pod = snap.pods[pidx].pod
        free = pod.chips - len(state.pod_used[pidx])
        return (shapes_of[pidx][1], free, pod.name, pidx, state.pod_version.get(pidx, 0))

    heap = state.tpu_heaps.get(key)
    if heap is None:
        entries = [e for e in (entry(pidx) for pidx in shapes_of) if e is not None]
        heap = state.tpu_heaps[key] = PodHeap(entries, cursor=len(state.pod_changes))
    found: dict[int, TpuSlice] = {}

    def fits(pidx: int) -> bool:
        pod = snap.pods[pidx].pod
        used = state.pod_used[pidx]
        shapes = shapes_of[pidx][0]
        if pod.chips - len(used) < math.prod(shapes[0]):
            return False  # every shape of the demand has as many chips: too few are free
        cache = state.slice_cache.setdefault(pidx, {})
        for shape in shapes:
            fitting = cache.get(shape)
            if fitting is None:
                fitting = cache[shape] = slices_in_pod(pod, shape, used)
            if unit.exclusive:  # dedicated: whole hosts nobody else uses
                fitting = [s for s in fitting if not host_chips(pod, s.chips) & used]
            if fitting:
                found[pidx] = fitting[0]
                return True
        return False

    for _ in range(unit.replicas):
        heap.refresh(state.pod_changes, entry)
        found.clear()
        pidx = heap.best(fits, state.pod_version)
        if pidx is None:
            return None
        chips = found[pidx].chips
        taken = set(host_chips(snap.pods[pidx].pod, chips)) if unit.exclusive else set(chips)
        taken -= state.pod_used[pidx]
        state.pod_used[pidx] |= taken
        state.log.append(("pod", pidx, taken))
        state.pod_changed(pidx)
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
    targets: Targets | None = None,
    preferred_affinity: int = 1,
) -> Assignment:
    """Place the plans (those with candidates) in priority order; the rest stay pending. With a
    ``deadline`` (a ``time.perf_counter()`` value), plans not reached by then are listed in
    ``Assignment.skipped``: a valid, smaller answer rather than a missed deadline. ``pricing`` adds the
    cost key to node choice and prices dollar budgets. ``scorer``: ``placer`` (greedy's own keys) or a
    baseline of :mod:`placer.solver.scorers`. ``targets``: the target workload of placer's fragmentation
    key (FGD's measure; None: best fit alone). ``preferred_affinity``: ``Policy.preferred_affinity``, what
    a preferred (anti-)affinity rule's weight is multiplied by (``prefs`` have it already)."""
    snap = arrays.snap
    state = State.of(arrays)
    state.pricing = pricing
    state.beside_multiplier = preferred_affinity
    if scorer != "placer":
        state.scorer = ScorerContext.of(scorer, plans, candidates, arrays)
    elif targets is not None and targets.size:
        state.frag = ScorerContext.of("fgd", plans, candidates, arrays, targets=targets)
    result = Assignment(engine="greedy")
    sequence = order if order is not None else priority_order(plans)
    apart = one_of_each(plans, [i for i in sequence if i in candidates])

    def place_plan(plan: JobPlan) -> list[ReplicaAt] | None:
        i = plan.idx
        unit_prefs = _beside_placed(state, arrays, plan, prefs[i])
        return _place_plan(plan, candidates[i], unit_prefs, anti_running[i], state, arrays, snap, spot_ok[i])

    for k, i in enumerate(sequence):
        # With evictions each job may cost milliseconds: look at the clock every job, not every 16.
        every = 1 if victims else 16
        if (
            deadline is not None
            and k >= 16
            and k % every == 0
            and (time.perf_counter() > deadline or cancelled())
        ):
            result.skipped = set(sequence[k:])
            break
        if i not in candidates:
            continue
        if i in apart and any(q in result.placed for q in apart[i]):
            continue  # kept apart, or counted by spread, with a job placed before it (solver/apart.py)
        plan = plans[i]
        if not within_throttle(plan, state, budgets):
            continue  # its group runs as many as it may: pending, THROTTLE (answer.py)
        state.off = flavor_off(plan, state, budgets)  # flavors of its queue with no GPU quota left for it
        replicas = place_plan(plan)
        needed: list[Victim] = []
        if replicas is None and victims:
            state.rollback(0)
            tried = place_with_evictions(plan, candidates[i], place_plan, state, victims)
            if tried is not None:
                replicas, needed = tried
        if replicas is not None and not node_count_ok(plan, replicas):
            replicas = None
        replicas = _off_full_flavors(plan, replicas, place_plan, state, budgets)
        if replicas is not None and not within_budget(plan, replicas, state, budgets):
            result.over_budget.add(i)
            cost = budget_cost(plan, replicas, state, budgets)
            if cost:
                result.over_budget_cost[i] = (cost, *cost_left(plan, state, budgets))
            replicas = None
        state.off = None
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


def _off_full_flavors(
    plan: JobPlan,
    replicas: list[ReplicaAt] | None,
    place_plan: Callable[[JobPlan], list[ReplicaAt] | None],
    state: State,
    budgets: Budgets | None,
) -> list[ReplicaAt] | None:
    """``replicas``, or, when they take the job's queue over a per-flavor quota, the job placed again off
    every flavor it overfilled (its replicas are chosen one by one, each node checked against what the
    queue has left on the node's flavor before the job, not with its own earlier replicas): so a gang
    that one flavor cannot hold whole goes to a flavor that can, rather than waiting. At most once per
    flavor; what comes out is still checked whole (:func:`within_budget`)."""
    if replicas is None or budgets is None or not budgets.flavor_limits:
        return replicas
    queue = plan.job.queue or ""
    tried: set[tuple[str, str]] = set()
    while replicas is not None and (over := over_flavors(plan, replicas, state, budgets) - tried):
        tried |= over
        state.rollback(0)
        off = flavor_nodes(queue, tried, state, budgets)
        state.off = off if state.off is None else state.off | off
        replicas = place_plan(plan)
    return replicas


def place_alone(
    plan: JobPlan,
    cand: UnitCandidates,
    pref: np.ndarray | None,
    anti_running: np.ndarray,
    arrays: NodeArrays,
    *,
    pricing: Pricing | None = None,
    targets: Targets | None = None,
    fits: np.ndarray | None = None,
) -> ReplicaAt | None:
    """What :func:`greedy` places for a batch of one plain replica — one unit of one replica, no Flux
    shape, no domain or gang scope, not exclusive, no rule on the jobs beside it, no budget, nothing to
    evict — without the loop over jobs and what a batch needs around it: the node by the objective's
    levels (:func:`_choose`, FGD's measure against ``targets``) and its GPUs as :meth:`State.take` gives
    them (:meth:`State.pick`). None when no node fits. ``fits``: where one replica fits now, when the
    caller has it (``arrays.fits(unit.need)``, what greedy's fresh state says); ``pref`` None when the
    unit's preference is the same on every node (the level is skipped). The express lane's
    (``solver/express.py``, whose tests hold its decisions to ``place()``'s)."""
    (unit,) = plan.units
    state = State.of(arrays)
    state.pricing = pricing
    if targets is not None and targets.size:
        state.frag = ScorerContext.of("fgd", [plan], {plan.idx: [cand]}, arrays, targets=targets)
    mask = cand.static & (state.fits(unit) if fits is None else fits) & ~anti_running
    cost, grows, frag = _node_keys(state, arrays, unit, plan.nvlink)
    assert frag is not None  # placer's own keys: no baseline scorer here
    if pref is None and cost is None and state.frag is not None:  # FGD's score, then fit: one pass
        idx = np.flatnonzero(mask)
        node = None if idx.size == 0 else fgd_best(state.frag, state, unit, idx, frag)
    else:
        node = _choose(mask, pref, frag, None, cost, grows)
    if node is None:
        return None
    gpus, share = state.pick(node, unit, _share_gpu(state, node, unit))  # the state is dropped: not taken
    return ReplicaAt(unit=unit, node=node, gpus=gpus, milli=share)


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
        *((state.free_extra(name), amount) for name, amount in need.extra),
    ):
        if amount:  # an unlimited amount (a node stating no pod slots) bounds nothing
            fit = np.minimum(free[nodes] / amount + 1e-9, 1 << 20)
            per = np.minimum(per, np.floor(fit).astype(np.int64))
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
    if plan.scope is not None:
        placed = _place_in_domains(plan, plan.scope, node_units, state, arrays, snap, blocked)
        return None if placed is None else out + placed
    # Flux levels above the node choose their domains (a Kueue flavor does not: compactness holds in it).
    spread = any(not lv.startswith(FLAVOR_LEVEL) for u, _, _ in node_units for lv, _ in u.domains)
    if sum(u.replicas for u, _, _ in node_units) > 1 and state.penalty is None and not spread:
        # A gang that may span nodes: in the smallest described domain that holds it (rack, then block,
        # then zone), as Slurm's topology/tree and Kueue's topology-aware scheduling keep it; split across
        # domains only when none does. Not when placing by evictions: less work thrown away comes first
        # (the objective's level 2), and the eviction order already picks the cheapest nodes.
        for scope in COMPACT_SCOPES:
            placed = _place_in_domains(plan, scope, node_units, state, arrays, snap, blocked, COMPACT_TRIES)
            if placed is not None:
                return out + placed
    placed = _place_node_units(plan, node_units, state, arrays, blocked, None)
    return None if placed is None else out + placed


#: Domains an unscoped multi-replica gang is kept in when one holds it, smallest first.
COMPACT_SCOPES: tuple[str, ...] = ("rack", "block", "zone")
#: Domains tried per level for such a gang (fullest first): a bounded search, not a scan of every rack.
COMPACT_TRIES = 8


def _place_in_domains(
    plan: JobPlan,
    scope: str,
    node_units: list[tuple[Unit, UnitCandidates, np.ndarray]],
    state: State,
    arrays: NodeArrays,
    snap: Snapshot,
    blocked: np.ndarray,
    tries: int | None = None,
) -> list[ReplicaAt] | None:
    """The gang inside one ``scope`` domain: each domain with room for it, fullest first (best fit), up to
    ``tries`` of them; the first that holds the whole gang wins. None when none does (or the cluster does
    not describe that level)."""
    any_static = node_units[0][1].static
    for _, c, _ in node_units[1:]:
        any_static = any_static | c.static
    codes = arrays.scope_codes(scope)
    idx = np.flatnonzero(any_static & (codes >= 0))
    if not idx.size:
        return None
    of = codes[idx]
    need_gpus = sum(u.replicas * u.need.gpus for u, _, _ in node_units)
    ranked = _fullest_first(scope, idx, state, arrays, need_gpus)
    if tries is not None:
        ranked = ranked[:tries]
    for code in ranked.tolist():
        members = idx[of == code]
        allowed = np.zeros(len(snap.nodes), dtype=bool)
        allowed[members] = True
        mark = state.mark()
        placed = _place_node_units(plan, node_units, state, arrays, blocked, allowed)
        if placed is not None:
            return placed
        state.rollback(mark)
    return None
