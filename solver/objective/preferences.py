"""Soft preferences and fragmentation, as per-node scores shared by greedy and CP-SAT.

Why one module: "the same constraints and the same scoring" for both engines. Level 2 (preferences) is a
non-negative integer per node and unit: the weights of satisfied preferred affinity rules, model locality
(the node has the job's model loaded, OJS ML §11), data locality (the node's ``data_locality`` label lists
a URI prefix of the job's ``ext_mlx_scheduling_data_locality``), and spot preference (ML extensions §7);
and, beside running jobs, the weights of the preferred rules on jobs that they match (:func:`running_beside`:
anti-affinity less, affinity more; the jobs a decision places together are the objective's and greedy's
to weigh). Level 3 (fragmentation)
is computed by each engine from free GPUs left on the nodes it touches.

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.snapshot import Snapshot
>>> from placer.solver.candidates import NodeArrays
>>> from placer.solver.jobs.model import Job, LabelRule, Placement
>>> from placer.solver.demand import expand
>>> snap = Snapshot.of(cluster_of(dgx_h100(2, zones=["z1"])))
>>> rule = LabelRule(key="zone", operator="In", values=["z1"], weight=40)
>>> job = Job(id="j", placement=Placement(preferred=[rule]))
>>> plan = expand(job, 0, max_node_gpus=8)
>>> preference_scores(plan, plan.units[0], NodeArrays.of(snap, {"zone"}), Policy()).tolist()
[40, 40]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from placer.solver.candidates import NodeArrays, mark_running
from placer.solver.demand import JobPlan, Unit, tolerated
from placer.solver.jobs.model import Job, LabelRule, PriorityClass, SpotPreference
from placer.solver.policy import Policy
from placer.topology.inventory import Taint

__all__ = ["beside_rules", "beside_weight", "preference_scores", "running_beside", "running_match"]

T = TypeVar("T")


def _memo(arrays: NodeArrays, key: object, compute: Callable[[], T]) -> T:
    """``compute()`` once per node arrays (a prepared cluster keeps its arrays, so once per cluster)."""
    cache: dict[object, Any] = arrays._static_cache  # type: ignore[assignment]
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def _model_nodes(arrays: NodeArrays, model_id: str, version: str | None) -> np.ndarray:
    """Indices of nodes with the model (that version, when given) loaded."""
    return _memo(
        arrays,
        ("__model__", model_id, version),
        lambda: np.array(
            [
                v.idx
                for v in arrays.snap.nodes
                if any(
                    m.model_id == model_id and version in (None, m.model_version)
                    for m in v.node.models_loaded
                )
            ],
            dtype=np.int64,
        ),
    )


def preference_scores(plan: JobPlan, unit: Unit, arrays: NodeArrays, policy: Policy) -> np.ndarray:
    """Level-2 score of placing one replica of ``unit`` on each node (int64 array, shared: do not modify);
    cached per distinct combination of the inputs that matter."""
    job = plan.job
    key = (
        "__pref__",
        tuple(r.model_dump_json() for r in unit.preferred),
        job.model.id,
        job.model.version,
        job.placement.data_locality,
        job.placement.spot_preference,
        job.priority_class,
        tuple(t.model_dump_json() for t in unit.tolerations),
    )
    return _memo(arrays, key, lambda: _scores(plan, unit, arrays, policy))


def _scores(plan: JobPlan, unit: Unit, arrays: NodeArrays, policy: Policy) -> np.ndarray:
    snap = arrays.snap
    out = np.zeros(len(snap.nodes), dtype=np.int64)
    if unit.preferred:
        per_group = np.zeros(len(arrays.group_members), dtype=np.int64)
        for r in unit.preferred:
            weight = max(0, r.weight if r.weight is not None else 1)
            if weight:
                per_group[arrays.holding_groups(r)] += weight
        out += per_group[arrays.group] * policy.preferred_affinity
    job = plan.job
    if job.model.id:
        out[_model_nodes(arrays, job.model.id, job.model.version)] += policy.model_locality
    if job.placement.data_locality:
        uri = job.placement.data_locality
        for v in snap.nodes:
            prefixes = v.node.labels.get("data_locality")
            if prefixes and any(uri.startswith(p.strip()) for p in prefixes.split(",") if p.strip()):
                out[v.idx] += policy.data_locality
    # A PreferNoSchedule taint the unit does not tolerate: Kubernetes "tries to avoid" the node.
    if policy.prefer_no_schedule:
        for members, taints in _soft_tainted(arrays):
            if any(not tolerated(t, unit.tolerations) for t in taints):
                out[members] -= policy.prefer_no_schedule
    # Spot-tolerant work (spot_preferred, or a spot job) is steered to cheap spot capacity.
    spot_tolerant = job.placement.spot_preference is SpotPreference.SPOT_PREFERRED
    if spot_tolerant or job.priority_class is PriorityClass.SPOT:
        for members in _spot_groups(arrays):
            out[members] += policy.spot_preference
    return out


def _soft_tainted(arrays: NodeArrays) -> list[tuple[np.ndarray, tuple[Taint, ...]]]:
    """The static groups whose nodes carry ``PreferNoSchedule`` taints, with those taints (most clusters
    have none: then no unit pays a pass over every group)."""

    def compute() -> list[tuple[np.ndarray, tuple[Taint, ...]]]:
        nodes = arrays.snap.nodes
        out = []
        for members in arrays.group_members:
            soft = tuple(t for t in nodes[int(members[0])].node.taints if t.effect == "PreferNoSchedule")
            if soft:
                out.append((members, soft))
        return out

    return _memo(arrays, "__soft_taints__", compute)


def _spot_groups(arrays: NodeArrays) -> list[np.ndarray]:
    """The static groups of spot nodes."""
    nodes = arrays.snap.nodes
    return _memo(
        arrays,
        "__spot_groups__",
        lambda: [m for m in arrays.group_members if nodes[int(m[0])].node.capacity_class == "spot"],
    )


def beside_rules(job: Job) -> list[tuple[LabelRule, int]]:
    """The job's preferred rules on the jobs beside it, each with its sign: -1 for preferred anti-affinity
    (OJS ML §7.3 with §7.2's ``preferred`` list; Kubernetes' preferred ``podAntiAffinity``: rather not
    beside), +1 for preferred affinity to jobs (Kubernetes' preferred ``podAffinity``: rather beside)."""
    placement = job.placement
    avoid = [(r, -1) for r in placement.anti_affinity_preferred]
    return avoid + [(r, 1) for r in placement.affinity_preferred]


def beside_weight(rule: LabelRule, multiplier: int) -> int:
    """What one replica gains or loses (the preference level) on a node beside a job that a preferred rule
    on jobs matches: the rule's weight (1 when it states none) times ``multiplier``
    (``Policy.preferred_affinity``), as a preferred rule on node labels gains.

    >>> beside_weight(LabelRule(key="app", operator="Exists", weight=40), 1)
    40
    """
    return max(0, rule.weight if rule.weight is not None else 1) * multiplier


def running_match(rule: LabelRule, arrays: NodeArrays) -> np.ndarray:
    """Per node, whether a job running there matches ``rule`` (:func:`~placer.solver.candidates.
    mark_running`); cached per rule until what runs where changes."""

    def compute() -> np.ndarray:
        hit = np.zeros(len(arrays.snap.nodes), dtype=bool)
        mark_running(rule, arrays, hit)
        return hit

    return _memo(arrays, ("__beside__", rule.model_dump_json()), compute)


def running_beside(plan: JobPlan, arrays: NodeArrays, policy: Policy) -> np.ndarray | None:
    """Per node, what the job's preferred rules on jobs (:func:`beside_rules`) make of the jobs running
    there: minus the weight of each anti-affinity rule and plus the weight of each affinity rule that one
    of them matches (:func:`running_match`); None when the job has no such rule.

    Why a preference and not a mask: a preferred rule "MUST NOT prevent job dispatch" (OJS ML §7.2); a
    node beside a job to avoid is taken when nothing better is left. Jobs placed by the same decision
    count too, in greedy's node choice and in the objective
    (:func:`~placer.solver.objective.score.beside_placed`), not here.
    """
    rules = beside_rules(plan.job)
    if not rules:
        return None
    out = np.zeros(len(arrays.snap.nodes), dtype=np.int64)
    for r, sign in rules:
        w = beside_weight(r, policy.preferred_affinity)
        if w:
            out[running_match(r, arrays)] += sign * w
    return out
