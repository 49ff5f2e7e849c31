"""The objective, defined once: one answer's :class:`Score`, compared level by level.

Levels, most important first (``docs/solver.md`` gives the reasons for the order):

1. **placed** — priority-weighted demand placed (a reserved GPU outweighs any number of spot ones);
2. **eviction** — less work thrown away by evictions (GPU-seconds lost plus the restart penalty);
3. **preference** — preferred-affinity weights, model and data locality, spot preference, and the
   weights of preferred rules on the jobs beside a replica (anti-affinity less, affinity more;
   :func:`beside_placed` for the jobs the answer places together); then
   **compactness** — a gang that may span nodes in as few racks as it can (Slurm's topology/tree, Kueue's
   topology-aware scheduling), a ``pack`` job on as few nodes;
4. **fragmentation** — least growth of FGD's expected GPU fragment on the nodes the answer touches,
   against the decision's target workload (:mod:`placer.solver.objective.fragmentation`);
5. **money** — fewest dollars per hour (:mod:`placer.solver.objective.cost`);
6. **fit** — fewest GPUs left free on the nodes touched (best fit: whole nodes stay whole; greedy's node
   choice for whole GPUs under level 4 takes FGD's ties in node order instead, ``docs/solver.md``).

Greedy takes these as its node-choice keys, replica by replica; CP-SAT as its objective levels; and the
engine keeps CP-SAT's answer only when its score is higher than greedy's (:func:`score`), so both are
judged by one yardstick.

>>> Score(placed=10, eviction=0, preference=5, compactness=0, fragmentation=-300.0, money=0, fit=-2) > Score(
...     placed=10, eviction=0, preference=5, compactness=0, fragmentation=-500.0, money=0, fit=0)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from placer.solver.assignment import Assignment, ReplicaAt
from placer.solver.jobs.model import GpuAffinity
from placer.solver.objective.fragmentation import fragmentation
from placer.solver.objective.preferences import beside_rules, beside_weight, running_match
from placer.solver.rules import holds

if TYPE_CHECKING:
    from placer.solver.problem import Problem

__all__ = ["FRAG_DECIMALS", "Score", "beside_placed", "score", "spread_out"]

#: Fragmentation is compared to this many decimals of a milli-GPU (float sums must not decide).
FRAG_DECIMALS = 3


@dataclass(frozen=True, order=True)
class Score:
    """An answer's objective, larger is better on every field, compared in field order."""

    placed: int
    eviction: float
    preference: int
    compactness: int
    fragmentation: float
    money: int
    fit: int


def score(assignment: Assignment, problem: Problem) -> Score:
    """The :class:`Score` of ``assignment`` on ``problem`` (greedy's and CP-SAT's answers alike)."""
    plans, snap = problem.plans, problem.snap
    preference = 0
    money = 0
    touched: dict[int, list[ReplicaAt]] = {}
    for p, replicas in assignment.placed.items():
        prefs = problem.prefs.get(p)
        units = plans[p].units
        for r in replicas:
            if r.node is None:
                continue
            touched.setdefault(r.node, []).append(r)
            if prefs is not None:
                preference += int(prefs[units.index(r.unit)][r.node])
        if problem.pricing is not None:
            money += problem.pricing.replicas(replicas)
    preference += beside_placed(assignment, problem)
    eviction = sum(v.cost for v in problem.victims if v.id in assignment.evictions)
    nodes = sorted(touched)
    width = max((len(snap.nodes[n].milli_free) for n in nodes), default=0)
    before = np.zeros((len(nodes), width), dtype=np.int64)
    cpu_before = np.zeros(len(nodes))
    for k, n in enumerate(nodes):
        v = snap.nodes[n]
        before[k, : len(v.milli_free)] = v.milli_free
        cpu_before[k] = v.free_cpu
    after, cpu_after = before.copy(), cpu_before.copy()
    for k, n in enumerate(nodes):
        for r in touched[n]:
            cpu_after[k] -= r.unit.need.cpu
            for g in r.gpus:
                after[k, g] -= r.milli if r.milli is not None else 1000
    for vid in assignment.evictions:  # evicted work frees what it held on the touched nodes
        rj = snap.cluster.running_job(vid)
        for rep in rj.replicas:
            at = snap.by_name.get(rep.node) if rep.node is not None else None
            if at is None or at not in touched:
                continue
            k = nodes.index(at)
            cpu_after[k] += rep.cpu_cores
            for g in rep.gpus:
                after[k, g] += rep.gpu_milli if rep.gpu_milli is not None else 1000
    grown = 0.0
    if problem.targets is not None and nodes:
        access = problem.targets.access[nodes]
        grown = float(
            (
                fragmentation(cpu_after, after, access, problem.targets)
                - fragmentation(cpu_before, before, access, problem.targets)
            ).sum()
        )
    left = int((after == 1000).sum()) if nodes else 0
    return Score(
        placed=assignment.placed_weight(plans),
        eviction=-round(eviction, 6),
        preference=preference,
        compactness=-spread_out(assignment, problem),
        fragmentation=-round(grown, FRAG_DECIMALS),
        money=-money,
        fit=-left,
    )


def beside_placed(assignment: Assignment, problem: Problem) -> int:
    """What the answer's preferred rules on jobs make of the jobs it places together: per replica of a job
    with such rules (:func:`~placer.solver.objective.preferences.beside_rules`), each rule's weight — lost
    for anti-affinity, gained for affinity — when another job placed on its node, or another replica of
    its own, matches the rule and no running job there does (running ones are in the preference scores
    already), so a rule counts once per replica and node."""
    rules_of = {p: rules for p in assignment.placed if (rules := beside_rules(problem.plans[p].job))}
    if not rules_of or not problem.preferred_affinity:
        return 0
    on: dict[int, list[int]] = {}  # node -> the placed jobs there, once per replica
    for p, replicas in assignment.placed.items():
        for r in replicas:
            if r.node is not None:
                on.setdefault(r.node, []).append(p)
    total = 0
    for p, rules in rules_of.items():
        for r in assignment.placed[p]:
            if r.node is None:
                continue
            here = on[r.node]
            beside = [problem.plans[q].labels for q in here if q != p]
            if here.count(p) > 1:
                beside.append(problem.plans[p].labels)  # another replica of its own
            for rule, sign in rules:
                if running_match(rule, problem.arrays)[r.node]:
                    continue
                if any(holds(rule, labels) for labels in beside):
                    total += sign * beside_weight(rule, problem.preferred_affinity)
    return total


def spread_out(assignment: Assignment, problem: Problem) -> int:
    """How far the answer's gangs are spread beyond the least they need: per job with more than one node
    replica, the racks it uses beyond one (where the cluster describes racks), and for a ``pack`` job the
    nodes beyond one."""
    extra = 0
    for p, replicas in assignment.placed.items():
        nodes = {r.node for r in replicas if r.node is not None}
        if len(nodes) < 2:
            continue
        racks = {problem.snap.nodes[n].node.rack for n in nodes}
        if None not in racks:
            extra += len(racks) - 1
        if problem.plans[p].job.placement.gpu_affinity is GpuAffinity.PACK:
            extra += len(nodes) - 1
    return extra
