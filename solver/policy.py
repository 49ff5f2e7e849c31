"""The policy: which engine, how long, and how placements are scored — one object a user can change.

Scoring is lexicographic (see ``docs/solver.md``): first the priority-weighted demand placed, then soft
preferences (preferred affinity, model and data locality, spot preference), then fragmentation. The
CP-SAT engine does this by successive solves; greedy by the order of its sort keys. The weights below
shape each level, they never trade one level against another.

Baseline scorers (``scorer``, :mod:`placer.solver.scorers`) replace greedy's node choice by a textbook rule —
first fit, best fit, Kubernetes' LeastAllocated/MostAllocated, FGD — so that a study can compare placer
with them in one run. They are greedy-only: ``engine: auto`` with a baseline means greedy, ``cpsat`` is
an error.

>>> Policy().job_weight("reserved", 0, 8) > Policy().job_weight("on-demand", 0, 8)
True
>>> Policy(scorer="fgd").engine, engine_fields("best-fit"), engine_fields("cpsat")
('greedy', {'engine': 'greedy', 'scorer': 'best-fit'}, {'engine': 'cpsat'})
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from placer.solver.prices import PriceCatalog

__all__ = ["BASELINES", "ENGINES", "Policy", "Scorer", "TargetShape", "engine_fields"]

#: Greedy's node choice: ``placer`` (its own scoring, the default) or a baseline
#: (:mod:`placer.solver.scorers`).
Scorer = Literal["placer", "first-fit", "best-fit", "least-allocated", "most-allocated", "fgd"]
#: The baseline scorers, in help order.
BASELINES: tuple[str, ...] = get_args(Scorer)[1:]
#: Placer's own engines.
ENGINES: tuple[str, ...] = ("auto", "cpsat", "greedy")


def engine_fields(name: str) -> dict[str, str]:
    """The :class:`Policy` fields an engine name of the command line or a scenario file stands for: a
    baseline scorer's name is greedy with that scorer; ``ValueError`` for an unknown name."""
    if name in BASELINES:
        return {"engine": "greedy", "scorer": name}
    if name in ENGINES:
        return {"engine": name}
    raise ValueError(f"unknown engine {name!r} (known: {', '.join(ENGINES + BASELINES)})")


class TargetShape(BaseModel):
    """One task shape of a target workload: per replica, CPU cores and whole GPUs or a GPU share."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_cores: float = Field(default=0.0, ge=0, le=1e6)
    gpus: int = Field(default=0, ge=0, le=4096)
    #: Thousandths of one GPU (a share); with ``gpus`` 0 only.
    gpu_milli: int = Field(default=0, ge=0, le=1000)
    weight: float = Field(default=1.0, gt=0, le=1e12)

    @model_validator(mode="after")
    def _one_kind(self) -> TargetShape:
        if self.gpus and self.gpu_milli:
            raise ValueError("a shape has whole GPUs or a GPU share, not both")
        return self


class Policy(BaseModel):
    """Engine choice, limits and scoring weights."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    engine: Literal["auto", "cpsat", "greedy"] = "auto"
    #: Greedy's node choice for each replica: ``placer`` or a baseline scorer (greedy only).
    scorer: Scorer = "placer"
    time_limit_s: float = Field(default=5.0, gt=0)
    seed: int = 0
    workers: int = Field(default=2, ge=1, le=64)
    reproducible: bool = False
    verify: bool = True

    #: Priority-class base weights (OJS ML §8.1/§14.1 order reserved > on-demand > spot).
    class_weight: dict[str, int] = Field(
        default_factory=lambda: {"spot": 1, "on-demand": 10, "reserved": 100}
    )
    #: Numeric priority adds this fraction of the class weight per point (clamped to [-0.9, +9]).
    priority_step: float = 0.01
    #: CPU cores that count as one unit of demand for jobs without accelerators.
    cpu_cores_per_unit: float = 16.0

    #: Level 2 weights (soft preferences), per replica.
    preferred_affinity: int = 1  # times the rule's own weight (0-100)
    model_locality: int = 50
    data_locality: int = 50
    spot_preference: int = 30
    #: Subtracted where a node has a ``PreferNoSchedule`` taint the replica does not tolerate (Kubernetes
    #: "tries to avoid" such nodes: a soft preference, never a refusal).
    prefer_no_schedule: int = 20

    #: Preemption: GPU-seconds charged per GPU (or TPU chip, or 16 cores) of an evicted job on top of the
    #: work it loses, for restarting it (scheduling, image pull, model load). 300 s per GPU by default.
    restart_penalty_s: float = Field(default=300.0, ge=0)
    #: Whether running jobs may be evicted at all.
    preemption: bool = True

    #: Time planning (conservative backfill, ``solver/planning.py``): plan starts for waiting jobs, and
    #: keep lower-priority work off capacity planned for higher-priority work. Planning runs only when the
    #: batch or the running jobs carry times (durations, expected ends, ``not_before``, dependencies), and
    #: for at most ``plan_share`` of the time limit (at most ``plan_max_s``) after the decision now. That
    #: time is kept back from the decision when the limit is at least ``plan_min_limit_s``; under a
    #: shorter limit the decision gets all of it and planning only what is left, within the same cap.
    #: Why 10 % and 1 s: each plan tries up to 64 start times, each a greedy decision on the whole cluster
    #: (~30 ms on 1,000 nodes), so on scenario M planning yields a plan or two per half second while the
    #: greedy decision itself takes 0.3 s; a larger share mostly made the call slower (25 % of the default
    #: 5 s limit: 1.8 s per call for 3 plans instead of 2).
    plan: bool = True
    plan_share: float = Field(default=0.1, ge=0, lt=1)
    plan_max_s: float = Field(default=1.0, ge=0)
    plan_min_limit_s: float = Field(default=2.0, ge=0)

    #: Prices and dollar budgets (:mod:`placer.solver.prices`): what the cost term of the objective minimizes
    #: and
    #: what dollar budgets count; None means the default catalog. It lives on the policy so that every
    #: core decision of one call (reservation phases, planning) prices and budgets alike;
    #: ``place(prices=...)`` sets it.
    prices: PriceCatalog | None = None

    #: Level 3: cost of opening an untouched node for a job that leaves part of it unused, per GPU left.
    fragmentation: int = 1
    #: The target workload fragmentation is measured against (FGD's measure, ``objective/fragmentation``):
    #: shapes a caller expects to arrive, with weights. None: the batch plus the running replicas (what an
    #: online scheduler has seen arrive). ``[]`` switches the fragmentation key off (best fit alone).
    target_workload: list[TargetShape] | None = None

    #: Model-size knobs.
    max_classes_per_unit: int = Field(default=12, ge=1)
    max_patterns_per_class: int = Field(default=16, ge=1)
    max_slices_per_job: int = Field(default=48, ge=1)
    #: When the joint model would be bigger than this — node classes times node units (the replica
    #: groups of the batch that go to nodes) — CP-SAT runs as large-neighbourhood search on greedy's answer
    #: instead (``cpsat/lns.py``): scenario M (~380 classes x 1,000 units, 30,000 variables) builds in most
    #: of 2 s and finds nothing in the rest. A fill batch (~250 x 100) or the traps replicated 1,000 times
    #: (2-3 x 13,000) stay one model. 0: always one model.
    lns_above_size: int = Field(default=60_000, ge=0)
    cpu_quantum: float = Field(default=1.0, gt=0)
    memory_quantum_gb: float = Field(default=8.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _baseline_is_greedy(cls, data: Any) -> Any:
        """A baseline scorer runs in greedy: ``auto`` (the default) then means greedy; ``cpsat`` is refused
        (CP-SAT optimizes placer's own objective, a baseline's node rule has no place in it)."""
        if not isinstance(data, dict) or data.get("scorer") not in BASELINES:
            return data
        engine = data.get("engine", "auto")
        if engine == "auto":
            return {**data, "engine": "greedy"}
        if engine == "cpsat":
            raise ValueError(
                f"scorer {data['scorer']!r} is a greedy baseline: use engine greedy (or auto), not cpsat"
            )
        return data

    @property
    def engine_name(self) -> str:
        """The engine as a scenario or ``--engine`` names it: a baseline scorer's name, else ``engine``."""
        return self.engine if self.scorer == "placer" else self.scorer

    def job_weight(self, priority_class: str, priority: int, demand_units: float) -> int:
        """Integer weight of placing a job: class weight, nudged by numeric priority, times demand.

        Demand is in tenths of a unit (GPUs, TPU chips, or ``cpu_cores_per_unit`` cores) so that a
        half-GPU share still counts.
        """
        base = self.class_weight.get(priority_class, 1)
        nudge = max(-0.9, min(9.0, priority * self.priority_step))
        return max(1, round(base * (1 + nudge) * max(1, round(demand_units * 10))))
