"""The Decision: what :func:`placer.solver.place` answers, in the JSON shape backends rely on.

Field names of the top level and of each entry below are fixed (backends parse them); more fields may be
added, never renamed. ``placer schema decision`` prints the JSON Schema.

* ``placements``: ``{"job", "replicas": [{"node", "gpus", "tpu_chips", "cpu_cores", "memory_gb", ...}]}``
  — GPU indices on that node; TPU chip coordinates ``[x, y]`` or ``[x, y, z]`` in the pod's mesh.
* ``preemptions``: ``{"job", "for", "grace_period_s", "checkpoint", ...}`` — evictions, each a scheduling
  event and not a failure (OJS ML §14.2: it must not count against ``max_attempts``).
* ``reservations``: capacity held for a job from a planned start time (backfill plans, reservations).
* ``pending``: ``{"job", "reasons": [{"code", "message", "details"}]}`` — every job not placed, and why.
* ``rejected``: ``{"job", "errors"}`` — jobs that broke the specification.
* ``stats``: ``{"engine", "status", "objective", "bound", "gap", "build_s", "solve_s", "wall_s"}``.
* ``now``: the decision time.

>>> d = Decision(preemptions=[Eviction(job="spot-1", for_=["train-1"])])
>>> d.to_json()["preemptions"][0]["for"]
['train-1']
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from placer.topology import RunningJob

__all__ = [
    "Decision",
    "Engine",
    "Eviction",
    "Hold",
    "JobPlacement",
    "PendingJob",
    "Reason",
    "RejectedJob",
    "ReplicaPlacement",
    "Stats",
    "allocations",
    "as_running",
]

Engine = Literal["cpsat", "greedy"]


class _Out(BaseModel):
    # Every field is always written (``to_json`` dumps defaults too), so the published schema of the
    # Decision JSON marks every field required: backends can rely on the names being there.
    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, json_schema_serialization_defaults_required=True
    )


class ReplicaPlacement(_Out):
    """One replica of a placed job: the node (or TPU host) and exactly which devices."""

    node: str
    gpus: list[int] = Field(default_factory=list)
    gpu_milli: int | None = None
    tpu_pod: str | None = None
    tpu_chips: list[list[int]] = Field(default_factory=list)
    cpu_cores: float = 0
    memory_gb: float = 0
    storage_gb: float = 0
    shm_gb: float = 0
    #: Extended resources the replica takes on its node (a Kubernetes extended resource, ``hugepages-*``
    #: in bytes, a Flux resource type, an SSS consumable), by name.
    extra: dict[str, float] = Field(default_factory=dict)
    task_group: str = "default"


class JobPlacement(_Out):
    job: str
    replicas: list[ReplicaPlacement]
    priority_class: str | None = None
    cost_per_hour: float | None = None
    #: What the engine read into the request and the decision should say: a GPU count split across
    #: nodes, a Flux level the cluster does not describe (assumed, not checked).
    notes: list[str] = Field(default_factory=list)


class Eviction(_Out):
    """A running job to preempt so that the jobs in ``for`` can run."""

    job: str
    for_: list[str] = Field(default_factory=list, alias="for")
    grace_period_s: int = 30
    checkpoint: bool = False
    expected_work_lost_gpu_s: float = 0.0
    nodes: list[str] = Field(default_factory=list)
    event: Literal["preemption"] = "preemption"
    counts_as_failure: bool = False


class Hold(_Out):
    """Capacity held for a job: a planned start (conservative backfill) or a reservation."""

    job: str | None = None
    reservation: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    replicas: list[ReplicaPlacement] = Field(default_factory=list)
    kind: Literal["plan", "reservation", "workflow"] = "plan"


class Reason(_Out):
    """Why a job is pending. ``UNSATISFIABLE`` is fixed: the job could not run even on the empty cluster with
    every node up; ``NODES_UNAVAILABLE``: only nodes that are down could run it, and it waits for them."""

    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class PendingJob(_Out):
    job: str
    reasons: list[Reason]
    #: As :attr:`JobPlacement.notes`.
    notes: list[str] = Field(default_factory=list)


class RejectedJob(_Out):
    job: str
    errors: list[dict[str, Any]]


class Stats(_Out):
    engine: Engine = "greedy"
    status: str = "UNKNOWN"
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    wall_s: float = 0.0
    greedy_objective: float | None = None
    bound_source: str | None = None
    #: A bound that came out below the objective of an answer that passed the checks: that bound is wrong
    #: (a bug, never clamped away); it is named here and left out of ``bound`` and ``gap``.
    bound_error: str | None = None
    #: Dollars per hour of the capacity this decision's placements take (``solver/prices.py``).
    cost_per_hour: float | None = None
    #: How CP-SAT's run on its model ended (its own word: ``OPTIMAL`` there is about the model, which may
    #: approximate the problem); null when CP-SAT did not run. ``status`` is the problem's.
    model_status: str | None = None
    model_bound: float | None = None
    model_exact: bool | None = None
    #: When ``model_exact`` is false, what the model approximated (node classes, patterns, rounded
    #: demands, cut candidate lists), so a user knows which constraint the bound and status do not cover.
    model_approximations: list[str] = Field(default_factory=list)
    #: When CP-SAT ran and its answer was weighed against greedy's: each answer's levels of the objective
    #: (``solver/objective/score.py``: placed, eviction, preference, compactness, fragmentation, money,
    #: fit; larger is better on each, compared in that order), so a reader sees on which level the answer
    #: kept won or tied. Absent when greedy alone decided, and dropped when a later step (backfill) changed
    #: the placements they were computed for.
    levels: dict[str, float] | None = None
    greedy_levels: dict[str, float] | None = None
    #: Large-neighbourhood search (big batches): rounds run and rounds whose answer was kept.
    lns_rounds: int | None = None
    lns_accepted: int | None = None
    model_variables: int | None = None
    model_constraints: int | None = None
    node_classes: int | None = None
    seed: int | None = None
    deterministic: bool = False
    #: Phases a wall clock cut short (``candidates``, ``greedy``, ``cpsat``, ``planning``, ``hints``): what
    #: they did depends on the machine's speed and load, so ``deterministic`` is false.
    cut_by: list[str] = Field(default_factory=list)


class Decision(_Out):
    """The whole answer for one batch."""

    placements: list[JobPlacement] = Field(default_factory=list)
    preemptions: list[Eviction] = Field(default_factory=list)
    reservations: list[Hold] = Field(default_factory=list)
    pending: list[PendingJob] = Field(default_factory=list)
    rejected: list[RejectedJob] = Field(default_factory=list)
    stats: Stats = Field(default_factory=Stats)
    #: The decision time (``place(now=...)``, ``--now``): plans and dependencies are relative to it, so
    #: the checker re-checks a recorded decision at its own time.
    now: datetime | None = None
    #: Level-1 weight of each job of the batch (not serialized): lets a later step that withdraws a
    #: placement (backfill) keep ``stats.objective`` the objective of the final decision.
    _weights: dict[str, int] = PrivateAttr(default_factory=dict)
    #: The jobs placed when ``stats.levels`` was computed (not serialized).
    _levels_of: frozenset[str] = PrivateAttr(default_factory=frozenset)
    #: When CP-SAT's answer was chosen over greedy's: greedy's answer as a decision, made on demand (not
    #: serialized; dropped once the call returns). Backfill may withdraw more of one answer than of the
    #: other, and planning then compares them again (:mod:`placer.solver.planning`).
    _greedy_answer: Callable[[], Decision] | None = PrivateAttr(default=None)

    def to_json(self) -> dict[str, Any]:
        """The Decision JSON (aliases applied: ``for`` rather than ``for_``)."""
        return self.model_dump(mode="json", by_alias=True)

    def recount(self) -> None:
        """``stats.objective`` and ``stats.gap`` of the placements as they now are (after a step that
        withdrew some), from the weights the core decision recorded."""
        if not self._weights or self.stats.objective is None:
            return
        if self._levels_of != frozenset(p.job for p in self.placements):
            self.stats.levels = self.stats.greedy_levels = None  # computed for placements no longer all here
        self.stats.objective = float(sum(self._weights.get(p.job, 0) for p in self.placements))
        bound = self.stats.bound
        if bound is not None:
            self.stats.gap = 0.0 if bound == 0 else (bound - self.stats.objective) / bound
            if self.stats.status == "OPTIMAL" and self.stats.objective < bound:
                self.stats.status = "FEASIBLE"  # what was proven optimal is not what is placed now

    def to_frame(self, cluster: Any = None) -> Any:
        """One row per replica placed, as a pandas DataFrame (:mod:`placer.solver.frames`); with the
        ``cluster`` decided on, also each replica's zone, block, rack and NVLink domain."""
        from placer.solver.frames import replica_frame

        return replica_frame(self, cluster)

    def pending_frame(self) -> Any:
        """One row per pending job with its first reason (:mod:`placer.solver.frames`)."""
        from placer.solver.frames import pending_frame

        return pending_frame(self)

    def _repr_html_(self) -> str:
        from placer.solver.frames import decision_html

        return decision_html(self)

    def placement_of(self, job: str) -> JobPlacement | None:
        for p in self.placements:
            if p.job == job:
                return p
        return None


def as_running(name: str, replicas: list[ReplicaPlacement], **fields: object) -> RunningJob:
    """The capacity ``replicas`` take, as a running job the topology can account (``with_allocations``
    raises on double-booked GPUs or chips and over-committed nodes). Planning, the checker's plan rule,
    reservation phases, the fill and the simulator all turn placements into allocations this one way;
    ``fields`` set the running job's other attributes (``queue``, ``priority_class``, ...; not evictable
    unless ``preemptible`` says so).

    >>> as_running("j", [ReplicaPlacement(node="n1", gpus=[0, 1], cpu_cores=4)]).replicas[0].gpus
    [0, 1]
    """
    return RunningJob.model_validate(
        {"job": name, "preemptible": False, **fields, "replicas": allocations(replicas)}
    )


def allocations(replicas: list[ReplicaPlacement]) -> list[dict[str, object]]:
    """What ``replicas`` take, as the topology's replica allocations (:func:`as_running`'s)."""
    reps: list[dict[str, object]] = []
    for r in replicas:
        if r.tpu_pod is not None:
            reps.append({"tpu_pod": r.tpu_pod, "tpu_chips": r.tpu_chips})
        else:
            reps.append(
                {
                    "node": r.node,
                    "gpus": r.gpus,
                    "gpu_milli": r.gpu_milli,
                    "cpu_cores": r.cpu_cores,
                    "memory_gb": r.memory_gb,
                    "storage_gb": r.storage_gb,
                    "shm_gb": r.shm_gb,
                    "extra": r.extra,
                }
            )
    return reps
