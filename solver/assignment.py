"""The engines' common answer: for each placed job, where each replica goes, down to devices.

Both greedy and CP-SAT produce an :class:`Assignment`; :func:`placer.solver.engine.place` turns the better one
into a :class:`~placer.solver.decision.Decision`. Keeping one internal shape means one conversion, one
objective evaluation (:func:`objective`), and engines that can hand each other hints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placer.solver.demand import JobPlan, Unit
from placer.topology.model import Coord

__all__ = ["Assignment", "ReplicaAt", "node_count_ok", "objective"]


@dataclass(frozen=True, slots=True)
class ReplicaAt:
    """One replica: on node ``node`` (index into ``Snapshot.nodes``) with GPU indices, or on TPU pod
    ``pod`` (index into ``Snapshot.pods``) with chip coordinates."""

    unit: Unit
    node: int | None = None
    gpus: tuple[int, ...] = ()
    milli: int | None = None
    pod: int | None = None
    chips: tuple[Coord, ...] = ()


@dataclass
class Assignment:
    """Placed jobs (by plan index) and their replicas; anything absent is pending."""

    placed: dict[int, list[ReplicaAt]] = field(default_factory=dict)
    engine: str = "greedy"
    #: Plans the engine did not get to before its deadline (they stay pending, NOT_CONSIDERED).
    skipped: set[int] = field(default_factory=set)
    #: Plans that fit but would take their queue over its GPU budget (pending, QUEUE_BUDGET), or their
    #: queue or tenant over a dollar budget (pending, COST_BUDGET).
    over_budget: set[int] = field(default_factory=set)
    #: For those of them over a dollar budget: what the placement tried cost and what the queue and the
    #: tenant had left at that point, evictions tried for it included (money units per hour; None where
    #: there is no dollar budget) — what the explanation quotes.
    over_budget_cost: dict[int, tuple[int, int | None, int | None]] = field(default_factory=dict)
    #: Running jobs evicted, each with the ids of the jobs it makes room for.
    evictions: dict[str, list[str]] = field(default_factory=dict)

    def placed_weight(self, plans: list[JobPlan]) -> int:
        return sum(plans[i].weight for i in self.placed)


def objective(assignment: Assignment, plans: list[JobPlan]) -> int:
    """Level-1 objective (priority-weighted demand placed): the number engines are compared on."""
    return assignment.placed_weight(plans)


def node_count_ok(plan: JobPlan, replicas: list[ReplicaAt]) -> bool:
    """Whether the number of distinct nodes the replicas use is one the job's ``node_count`` allows (Flux
    and SSS node counts; placement rule 11)."""
    rng = plan.job.placement.node_count
    if rng is None:
        return True
    used = len({r.node for r in replicas if r.node is not None})
    return used in rng.values(used)
