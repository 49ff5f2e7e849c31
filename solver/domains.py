"""Flux levels above the node (RFC 14 ``cluster: 1 > rack: 2 > node: 1 > slot``): which levels a cluster
describes, and whether a unit's count of domains can ever be had.

Why a module of its own: the readers keep such levels on a task group as
:class:`~placer.solver.jobs.model.DomainCount` ("2 racks, the same number of replicas in each"); the
engines need to know which of them the cluster can check. A level is *described* when the inventory
says where each node lies on it: ``rack``, ``block`` and ``zone`` when at least one node carries the
attribute (Flux JGF ``rack`` vertices, Kubernetes topology labels, the inventory's fields), and
``cluster`` always (an inventory is one cluster, so ``cluster: 2`` can never be had). Any other level
(``switch``, ``rack_group``) and a level no node carries are *assumed*: the engines place as if it held,
and the decision says so in the job's ``notes`` — never silently.

On a described level, a node that carries no value for it belongs to no domain of that level and
cannot hold such a unit's replicas (as for gang scopes, rule 12).

A Kueue queue's flavors are a level of their own (:func:`~placer.solver.jobs.flavors.flavor_level`):
Kueue gives a pod set one flavor of each resource group, so its pods lie in one domain of that level,
always described (a node's labels say which flavor it is).

>>> from placer.topology import cluster_of, dgx_h100
>>> from placer.solver.snapshot import Snapshot
>>> from placer.solver.candidates import NodeArrays
>>> arrays = NodeArrays.of(Snapshot.of(cluster_of(dgx_h100(4, nodes_per_rack=2))), set())
>>> described("rack", arrays), described("switch", arrays), described("cluster", arrays)
(True, False, True)
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placer.solver.candidates import NodeArrays, UnitCandidates
from placer.solver.demand import JobPlan, Unit
from placer.solver.jobs.flavors import FLAVOR_LEVEL, level_text

__all__ = ["NODE_LEVELS", "described", "domains_why", "honour_domains"]

#: Levels above the node that nodes carry as an attribute (the gang scopes' attributes).
NODE_LEVELS: frozenset[str] = frozenset({"rack", "block", "zone"})


def described(level: str, arrays: NodeArrays) -> bool:
    """Whether the cluster says where each node lies on ``level`` (module docstring)."""
    if level == "cluster" or level.startswith(FLAVOR_LEVEL):  # a Kueue flavor: the nodes' labels say it
        return True
    return level in NODE_LEVELS and bool((arrays.scope_codes(level) >= 0).any())


def honour_domains(plan: JobPlan, arrays: NodeArrays) -> None:
    """Keep on each unit of ``plan`` the levels the cluster describes; note the others as assumed."""
    for i, u in enumerate(plan.units):
        if not u.domains:
            continue
        keep = tuple((level, n) for level, n in u.domains if described(level, arrays))
        for level, n in u.domains:
            if (level, n) not in keep:
                plan.notes.append(
                    f"task group {u.group!r} asks for {n} {level}(s); the cluster does not say which "
                    f"{level} a node is in, so that level was assumed, not checked"
                )
        if len(keep) != len(u.domains):
            plan.units[i] = replace(u, domains=keep)


def domains_why(unit: Unit, cand: UnitCandidates, arrays: NodeArrays) -> str | None:
    """Why ``unit``'s domains can never be had (on the empty cluster), or None: more clusters than one,
    or fewer domains of a level among the nodes it may use than it asks for (a domain counts when it
    has enough such nodes for its share of replicas that must be on distinct nodes); for Kueue slices, no
    domain of the level whose nodes could hold one slice (their GPUs, or their number for replicas on
    distinct nodes)."""
    if unit.slices is not None:
        return _slices_why(unit, cand, arrays)
    for level, n in unit.domains:
        if level == "cluster":
            if n > 1:
                return f"task group {unit.group!r} asks for {n} clusters; the inventory is one cluster"
            continue
        codes = arrays.scope_codes(level)[cand.static]
        codes = codes[codes >= 0]
        _, sizes = np.unique(codes, return_counts=True)
        per = unit.replicas // n
        enough = int((sizes >= (per if unit.distinct else 1)).sum())
        if enough < n:
            if level.startswith(FLAVOR_LEVEL):
                short = f"has {per} nodes it may use" if unit.distinct else "has a node it may use"
                return (
                    f"task group {unit.group!r} runs its {unit.replicas} pods on the nodes of one "
                    f"{level_text(level)}; no flavor {short}"
                )
            return (
                f"task group {unit.group!r} asks for {n} {level}s with {per} replica(s) each; the nodes "
                f"it may use are in only {enough} {level}(s) that could hold that"
            )
    return None


def _slices_why(unit: Unit, cand: UnitCandidates, arrays: NodeArrays) -> str | None:
    assert unit.slices is not None
    level, size = unit.slices
    codes = arrays.scope_codes(level)
    here = cand.static & (codes >= 0)
    if not here.any():
        return (
            f"task group {unit.group!r} runs in slices of {size}, each inside one {level}; no node it may "
            f"use is in a {level}"
        )
    of = codes[here]
    nodes = np.bincount(of)
    gpus = np.bincount(of, weights=arrays.cap_gpus[here])
    fits = (gpus >= size * unit.need.gpus) & (nodes >= (size if unit.distinct else 1))
    if not fits.any():
        return (
            f"task group {unit.group!r} runs in slices of {size}, each inside one {level}; no {level} it may "
            f"use could ever hold one ({size * unit.need.gpus} GPUs"
            f"{f' on {size} distinct nodes' if unit.distinct else ''})"
        )
    return None
