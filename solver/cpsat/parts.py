"""The pieces the CP-SAT stages hand each other: the result, a node unit, greedy's answer in classes
(seeds), a TPU slice offer, the build deadline, the budget constants, and small arithmetic helpers.

Why a module of their own: the stages — :mod:`~placer.solver.cpsat.reduce` (classes, demand types,
patterns), :mod:`~placer.solver.cpsat.model` (variables, constraints, objective levels),
:mod:`~placer.solver.cpsat.hint` (greedy's answer as a hint), :mod:`~placer.solver.cpsat.search` (the
successive solves) and :mod:`~placer.solver.cpsat.realize` (model values back to nodes and devices) —
all read them, and none should import another stage for a data class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from placer.solver.assignment import Assignment
from placer.solver.candidates import UnitCandidates
from placer.solver.cpsat.classes import NodeClass
from placer.solver.cpsat.patterns import ItemType, Pattern, fits
from placer.solver.demand import Unit
from placer.solver.preempt import Victim
from placer.solver.structure import shaped

#: A linear expression of the model's variables, or a constant (an empty sum): what the levels, budget
#: rows and usages are. (OR-Tools' own ``LinearExprT`` also admits numpy integers, whose operators the type
#: checker cannot combine with an expression's.)
Expr = cp_model.LinearExpr | int

if TYPE_CHECKING:
    from placer.solver.cpsat.reduce import Builder
    from placer.solver.demand import JobPlan
    from placer.solver.policy import Policy

__all__ = [
    "DET_SHARE",
    "MAX_CPU_QUANTUM",
    "MAX_TYPES",
    "CpsatResult",
    "Deadline",
    "Expr",
    "NodeUnit",
    "Seeds",
    "Slice",
    "Stage",
    "held_on",
    "need_vec",
    "pref_codes",
    "shaped_unit",
    "up",
    "value",
    "weighted",
]


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
    #: Whether the model is exact (None: no model was built, so nothing is known of it).
    exact: bool | None = None
    #: The model is exact and every level it scores up to preferences was solved to optimality (level 1,
    #: the eviction cost when evictions are weighed, preferences when the batch has any): what the
    #: problem's ``status: OPTIMAL`` needs besides a zero gap.
    proven: bool = False
    #: What made the model inexact (empty when ``exact``).
    approximations: list[str] = field(default_factory=list)
    eviction_cost: float = 0.0
    #: Under ``Policy.reproducible``: False when the wall clock, not the deterministic budget, stopped a
    #: solve (an overloaded machine), so the answer may differ from a run on an idle one.
    deterministic: bool = True


@dataclass
class NodeUnit:
    p: int
    ui: int
    unit: Unit
    cand: UnitCandidates
    pref: np.ndarray
    type_idx: int = -1
    classes: list[int] = field(default_factory=list)
    direct: list[int] = field(default_factory=list)


@dataclass
class Seeds:
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
class Slice:
    pod: int
    chips: tuple[tuple[int, ...], ...]
    #: Running jobs that must be evicted for this slice (they hold some of its chips or, for a dedicated
    #: slice, of its hosts' chips).
    victims: tuple[str, ...] = ()


class Stage:
    """What the stages of one :class:`~placer.solver.cpsat.model.Model` share: its builder, the batch's
    pieces, the variables and the objective levels (set by ``Model.__init__`` and its helpers; the hint's
    and the search's own by theirs). Declarations only, no behaviour: the hint, search and realization
    mixins inherit them so that each reads the model's attributes with their types, and the type checker
    sees a mixin that reads an attribute the model never sets."""

    b: Builder
    m: cp_model.CpModel
    plans: list[JobPlan]
    policy: Policy
    ids: list[int]
    node_units: list[NodeUnit]
    tpu_units: list[tuple[int, int, Unit]]
    classes: list[NodeClass]
    types: list[ItemType]
    patterns: dict[int, list[Pattern]]
    tpu_slices: dict[tuple[int, int], list[Slice]]
    pins: dict[tuple[int, int], list[int]]
    # Variables: placed[p]; z[class, pattern]; x[p, unit, class] and y[p, unit, node] (with y's upper
    # bounds); b[p, domain] of gang scopes; a[p, unit, slice] of TPU slices; e[victim]; on[p, node];
    # r[p, rack] and s[p] of compactness; d[...] of domain counts.
    placed: dict[int, cp_model.IntVar]
    z: dict[tuple[int, int], cp_model.IntVar]
    x: dict[tuple[int, int, int], cp_model.IntVar]
    y: dict[tuple[int, int, int], cp_model.IntVar]
    y_ub: dict[tuple[int, int, int], int]
    bvars: dict[tuple[int, str], cp_model.IntVar]
    a: dict[tuple[int, int, int], cp_model.IntVar]
    tpu_needs: dict[str, list[tuple[int, int, int]]]
    e: dict[str, cp_model.IntVar]
    on: dict[tuple[int, int], cp_model.IntVar]
    r: dict[tuple[int, str], cp_model.IntVar]
    s: dict[int, cp_model.IntVar]
    dvars: dict[tuple[int, int, str, str], cp_model.IntVar]
    # Objective levels and their terms.
    level1: Expr
    level2: Expr
    level3: Expr
    level_cost: Expr
    level_money: Expr
    compact: Expr
    l2_terms: list[tuple[cp_model.IntVar, int]]
    l3_terms: list[tuple[cp_model.IntVar, int]]
    compact_terms: list[tuple[cp_model.IntVar, int]]
    money_all: list[tuple[cp_model.IntVar, int]]
    l3_max: int
    compact_max: int
    money_max: int
    money_varies: bool
    # The hint (``hint.py``) and the search's budget (``search.py``).
    hint_values: dict[cp_model.IntVar, int]
    hint_ok: bool
    det_left: float | None
    deterministic: bool
    #: Model values back to nodes and devices (``realize.py``), which the search calls.
    _realize: Callable[[dict[cp_model.IntVar, int]], Assignment | None]


class Deadline(Exception):
    pass


class TooBig(Exception):
    """The joint model would be bigger (node classes x node units) than ``Policy.lns_above_size``."""

    def __init__(self, classes: int):
        super().__init__(f"{classes} node classes")
        self.classes = classes


#: Under ``Policy.reproducible`` the solve stages share this fraction of the time limit, counted in
#: CP-SAT's deterministic time (about a second of work each on a typical core) instead of wall seconds.
DET_SHARE = 0.5

#: Above this many distinct per-replica demands (of untagged types), CPU/memory demands are rounded up to
#: merge them.
MAX_TYPES = 120
#: The rounding of demands stops at this many cores (and 64 x ``memory_quantum_gb``), as classes' does.
MAX_CPU_QUANTUM = 64.0


def up(value: float, quantum: float) -> float:
    """``value`` rounded up to a multiple of ``quantum`` (unchanged when ``quantum`` is 0)."""
    if not quantum or not value:
        return value
    return float(np.ceil(value / quantum - 1e-9) * quantum)


def pref_codes(node_units: list[NodeUnit]) -> np.ndarray | None:
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


def shaped_unit(unit: Unit) -> bool:
    return shaped(unit.structure, unit.need.milli)


def weighted(terms: list[tuple[cp_model.IntVar, int]]) -> Expr:
    """``sum(coefficient * variable)`` of ``(variable, coefficient)`` terms (0 when there are none)."""
    if not terms:
        return 0
    return cp_model.LinearExpr.weighted_sum([v for v, _ in terms], [k for _, k in terms])


def value(terms: list[tuple[cp_model.IntVar, int]], values: dict[cp_model.IntVar, int]) -> int:
    """The value of ``sum(coefficient * variable)`` under ``values`` (absent variables count 0)."""
    return sum(k * values.get(v, 0) for v, k in terms)


def need_vec(unit: Unit, extra: tuple[str, ...] = ()) -> tuple[float, ...]:
    """What one replica takes on its node: whole GPUs, cores, GB of memory/storage/shm, then the amount of
    each extended resource of ``extra``."""
    n = unit.need
    asked = dict(n.extra)
    return (n.gpus, n.cpu, n.mem, n.storage, n.shm, *(asked.get(name, 0.0) for name in extra))


def held_on(v: Victim, node: str, extra: tuple[str, ...] = ()) -> tuple[float, ...]:
    """What a victim holds on one node: whole GPUs (shares count nothing: a shared GPU frees no whole GPU
    unless every share leaves, which this conservative count ignores), cores, GB of memory/storage/shm,
    then the amount of each extended resource of ``extra``."""
    out = [0.0] * (5 + len(extra))
    for r in v.job.replicas:
        if r.node == node:
            out[0] += 0 if r.gpu_milli is not None else len(r.gpus)
            out[1] += r.cpu_cores
            out[2] += r.memory_gb
            out[3] += r.storage_gb
            out[4] += r.shm_gb
            for k, name in enumerate(extra):
                out[5 + k] += r.extra.get(name, 0.0)
    return tuple(out)
